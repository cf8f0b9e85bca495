package postgres

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"

	"github.com/jackc/pgx/v5/pgconn"
)

// TestMapErrKeepsTheDriverError: the domain errors mapErr makes keep what
// PostgreSQL (or the network) said as their cause, for the log, while the
// client reads only the store's message.
func TestMapErrKeepsTheDriverError(t *testing.T) {
	for _, c := range []struct {
		name  string
		cause error
		code  string
	}{
		{"admin shutdown", &pgconn.PgError{Severity: "FATAL", Code: "57P01", Message: "terminating connection due to administrator command"}, gatehouse.EUNAVAILABLE},
		{"too many connections", &pgconn.PgError{Severity: "FATAL", Code: "53300", Message: "sorry, too many clients already"}, gatehouse.EUNAVAILABLE},
		{"NUL in text", &pgconn.PgError{Severity: "ERROR", Code: "22P05", Message: "unsupported Unicode escape sequence"}, gatehouse.EINVALID},
		{"timeout", context.DeadlineExceeded, gatehouse.EUNAVAILABLE},
		{"conflicts after every attempt", &pgconn.PgError{Severity: "ERROR", Code: "40001", Message: "could not serialize access due to concurrent update"}, gatehouse.EUNAVAILABLE},
		{"a deadlock after every attempt", &pgconn.PgError{Severity: "ERROR", Code: "40P01", Message: "deadlock detected"}, gatehouse.EUNAVAILABLE},
	} {
		err := mapErr(c.cause)
		if got := gatehouse.ErrorCode(err); got != c.code {
			t.Errorf("%s: code %q, want %q", c.name, got, c.code)
		}
		if !errors.Is(err, c.cause) {
			t.Errorf("%s: %v does not wrap its cause", c.name, err)
		}
		if !strings.Contains(err.Error(), c.cause.Error()) {
			t.Errorf("%s: Error() = %q, want the driver's words for the log", c.name, err.Error())
		}
		if msg := gatehouse.ErrorMessage(err); strings.Contains(msg, c.cause.Error()) {
			t.Errorf("%s: the client reads the cause: %q", c.name, msg)
		}
	}
	var ge *gatehouse.Error
	if err := mapErr(&pgconn.PgError{Code: "40001"}); !errors.As(err, &ge) || ge.Metadata["retry_after_seconds"] != 1 {
		t.Errorf("mapErr(40001) = %#v, want a 503 that says to retry after 1 s (Retry-After)", err)
	}
	var pe *pgconn.PgError
	if !errors.As(mapErr(&pgconn.PgError{Code: "57P01"}), &pe) || pe.Code != "57P01" {
		t.Error("errors.As does not find the *pgconn.PgError through the domain error")
	}
	// Domain errors and errors without a meaning pass through as they are.
	domain := gatehouse.NotFound("key", "k")
	if err := mapErr(domain); err != error(domain) {
		t.Errorf("mapErr(%v) = %v, want it unchanged", domain, err)
	}
	unique := &pgconn.PgError{Code: "23505"}
	if err := mapErr(unique); err != error(unique) {
		t.Errorf("mapErr(%v) = %v, want it unchanged", unique, err)
	}
}

// TestLockAsyncCommitsAsynchronously: the metering writes run with
// synchronous_commit off, every other write with the server's setting.
func TestLockAsyncCommitsAsynchronously(t *testing.T) {
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := Open(ctx, pgtest.NewDatabase(t), box, Options{OpTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	e := engine{db}
	for _, c := range []struct {
		name string
		way  func(context.Context, func(sqlstore.Querier) error) error
		want string
	}{{"LockAsync", e.LockAsync, "off"}, {"Lock", e.Lock, "on"}, {"Update", e.Update, "on"}} {
		var got string
		if err := c.way(ctx, func(q sqlstore.Querier) error {
			return q.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&got)
		}); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if got != c.want {
			t.Errorf("%s: synchronous_commit = %s, want %s", c.name, got, c.want)
		}
	}
}
