package postgres

import (
	"context"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
)

// TestLongReadKeepsItsDeadline: an analytics read, marked as long, is
// bounded by its caller's deadline, not by the operation timeout that
// bounds every other operation (and bounds it too when the caller sets
// none).
func TestLongReadKeepsItsDeadline(t *testing.T) {
	url := pgtest.NewDatabase(t)
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), url, box, Options{OpTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	org, err := db.CreateOrganization(context.Background(), "Acme")
	if err != nil {
		t.Fatal(err)
	}
	db.opTimeout = time.Nanosecond // every operation runs out of time at once
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	now := time.Now()
	if _, err := db.Activity(ctx, org.ID, gatehouse.ActivityFilter{Since: now.AddDate(0, 0, -1), Until: now}); err != nil {
		t.Errorf("Activity with a deadline of a minute: %v", err)
	}
	q := &gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}}
	if _, err := q.Resolve(now); err != nil {
		t.Fatal(err)
	}
	if _, err := db.QueryAnalytics(ctx, org.ID, q); err != nil {
		t.Errorf("QueryAnalytics with a deadline of a minute: %v", err)
	}
	if _, err := db.QueryAnalytics(context.Background(), org.ID, q); gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE {
		t.Errorf("QueryAnalytics without a deadline: %v, want the operation timeout's 503", err)
	}
	if _, err := db.FindOrganization(ctx, org.ID); gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE {
		t.Errorf("another read: %v, want the operation timeout's 503", err)
	}
}
