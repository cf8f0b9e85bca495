package sqlite

import (
	"context"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"
)

// TestReadTimeoutInterrupts: a read that runs past the read timeout is
// interrupted where it is (its connection free again at once) and answered
// 503, in a transaction (View) or not (Read); a long read with a deadline
// of its own runs to that deadline instead.
func TestReadTimeoutInterrupts(t *testing.T) {
	db, _ := openTestDB(t)
	db.SetReadTimeout(50 * time.Millisecond)
	const endless = `WITH RECURSIVE c(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM c WHERE i < 4000000000) SELECT count(*) FROM c`
	e := engine{db}
	for name, way := range map[string]func(context.Context, func(sqlstore.Querier) error) error{"View": e.View, "Read": e.Read} {
		start := time.Now()
		err := way(context.Background(), func(q sqlstore.Querier) error {
			var n int64
			return q.QueryRow(context.Background(), endless).Scan(&n)
		})
		if took := time.Since(start); gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE || took > 2*time.Second {
			t.Errorf("%s: %v after %s, want the read timeout's 503 within about 50ms", name, err, took)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := e.View(sqlstore.LongRead(ctx), func(q sqlstore.Querier) error {
		var n int64
		return q.QueryRow(ctx, endless).Scan(&n)
	})
	if took := time.Since(start); err == nil || took < 250*time.Millisecond || took > 3*time.Second {
		t.Errorf("a long read with a deadline of 300ms: %v after %s", err, took)
	}
	// The connections are free: an ordinary read answers.
	if _, _, err := db.FindOrganizations(context.Background(), gatehouse.Page{Limit: 10}); err != nil {
		t.Fatal(err)
	}
}
