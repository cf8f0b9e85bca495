package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"

	"github.com/jackc/pgx/v5"
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

// TestConcurrentCountsDoNotConflict: two SERIALIZABLE transactions, on two
// connections, that each make a key and an audit entry of one
// organization at once both commit. Each writes the kept counts of the
// keys' lists and of the audit log (migrations 0030, 0031, 0051) in its
// own connection's part (0053). With a part chosen at random among 16, as
// before, the six counts each writes met the other's almost always, and one
// of the two failed (retried in the store): about one retry for each key
// made by 32 clients at once.
func TestConcurrentCountsDoNotConflict(t *testing.T) {
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	db, err := Open(ctx, url, box, Options{OpTimeout: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	org, err := db.CreateOrganization(ctx, "Counts")
	if err != nil {
		t.Fatal(err)
	}
	ws, err := db.FindWorkspace(ctx, org.ID, "")
	if err != nil {
		t.Fatal(err)
	}
	// Two connections of parts of their own (pids 64 apart share one).
	var conns []*pgx.Conn
	parts := map[int]bool{}
	for len(conns) < 2 {
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var part int
		if err := conn.QueryRow(ctx, `SELECT gatehouse_part()`).Scan(&part); err != nil {
			t.Fatal(err)
		}
		// A write that waits for the other's row would wait for ever:
		// the other commits only after it.
		if _, err := conn.Exec(ctx, `SET lock_timeout = '2s'`); err != nil {
			t.Fatal(err)
		}
		if !parts[part] {
			parts[part] = true
			conns = append(conns, conn)
		}
	}
	for round := range 20 {
		var txs []pgx.Tx
		for i, conn := range conns {
			tx, err := conn.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx)
			hash := fmt.Sprintf("%064x", round*2+i)
			if _, err := tx.Exec(ctx, `INSERT INTO api_keys (hash, organization_id, workspace_id, management, name, disabled, created_at)
				VALUES ($1, $2, $3, FALSE, 'k', FALSE, $4)`, hash, org.ID, ws.ID, time.Now().UnixMilli()); err != nil {
				t.Fatalf("round %d: transaction %d of 2 making a key at once: %v", round, i+1, err)
			}
			if _, err := tx.Exec(ctx, `INSERT INTO audit_log (id, organization_id, at, operation, resource_type, resource_ids, result)
				VALUES ($1, $2, $3, 'key.create', 'key', '[]', 'success')`, fmt.Sprint("entry-", round*2+i), org.ID, time.Now().UnixMilli()); err != nil {
				t.Fatal(err)
			}
			txs = append(txs, tx)
		}
		for i, tx := range txs {
			if err := tx.Commit(ctx); err != nil {
				t.Fatalf("round %d: transaction %d of 2 making a key at once: %v", round, i+1, err)
			}
		}
	}
	if err := db.CheckListBlocks(ctx); err != nil {
		t.Fatal(err)
	}
}
