package postgres

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// roundTrips counts what the store's connections send: each batch, and
// each statement sent alone (a rollback, a read on the pool), is one round
// trip to the server.
type roundTrips struct{ n, statements atomic.Int64 }

func (c *roundTrips) TraceQueryStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceQueryStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *roundTrips) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	c.n.Add(1)
	return ctx
}
func (c *roundTrips) TraceBatchQuery(context.Context, *pgx.Conn, pgx.TraceBatchQueryData) {
	c.statements.Add(1)
}
func (c *roundTrips) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// counted opens a database whose round trips are counted.
func counted(t *testing.T) (*DB, *roundTrips) {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	trips := &roundTrips{}
	db, err := Open(context.Background(), pgtest.NewDatabase(t), box, Options{OpTimeout: 30 * time.Second, Tracer: trips})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, trips
}

// trips returns the round trips fn takes.
func (c *roundTrips) of(t *testing.T, fn func() error) int64 {
	t.Helper()
	before := c.n.Load()
	if err := fn(); err != nil {
		t.Fatal(err)
	}
	return c.n.Load() - before
}

// TestPipelineRoundTrips: a transaction sends BEGIN with its first
// statement and its held writes with the next statement or COMMIT, so a
// settle (BEGIN, ending the hold, the ledger row, the key's counters,
// COMMIT: five round trips one at a time) takes two, and a transaction
// that sent nothing sends nothing.
func TestPipelineRoundTrips(t *testing.T) {
	db, trips := counted(t)
	ctx := context.Background()
	org, err := db.CreateOrganization(ctx, "Piped")
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := db.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	// reserved returns a reservation held in the database and the
	// generation that settles it.
	reserved := func() (*gatehouse.Reservation, *gatehouse.Generation) {
		r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 5_000, ExpiresAt: time.Now().Add(time.Minute)}
		if err := db.Reserve(ctx, r); err != nil {
			t.Fatal(err)
		}
		return r, &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: org.ID, KeyHash: k.Hash,
			Model: "acme/chat", Provider: "acme", Status: gatehouse.GenerationCompleted, Cost: 3_000}
	}
	// The statements are prepared on first use: one more round trip each.
	first, firstGen := reserved()
	if err := db.Settle(ctx, first.ID, firstGen); err != nil {
		t.Fatal(err)
	}
	r, g := reserved()
	if n := trips.of(t, func() error { return db.Settle(ctx, r.ID, g) }); n != 2 {
		t.Errorf("a settle took %d round trips, want 2", n)
	}
	if n := count(t, db, `SELECT usage_total FROM api_keys WHERE hash = $1`, k.Hash); n != 6_000 {
		t.Errorf("the key's usage is %d after two settles of 3,000, want 6,000: a held write was lost", n)
	}
	if n := count(t, db, `SELECT count(*) FROM generations WHERE id = $1`, g.ID); n != 1 {
		t.Errorf("the settle's ledger rows: %d, want 1", n)
	}

	e := engine{db}
	if n := trips.of(t, func() error {
		return e.Update(ctx, func(sqlstore.Querier) error { return nil })
	}); n != 0 {
		t.Errorf("a transaction that did nothing took %d round trips, want 0", n)
	}
	mustExec(t, db, pipedTable)
	if n := trips.of(t, func() error {
		return e.LockAsync(ctx, func(q sqlstore.Querier) error {
			later(q, `INSERT INTO piped VALUES (1)`)
			later(q, `INSERT INTO piped VALUES (2)`)
			return nil
		})
	}); n != 1 {
		t.Errorf("a transaction of held writes took %d round trips, want 1", n)
	}
	if n := count(t, db, `SELECT count(*) FROM piped`); n != 2 {
		t.Errorf("%d rows committed by held writes, want 2", n)
	}
}

// TestPipelineHeldWriteFails: a held write that fails fails the statement
// it goes with, or the commit, and the whole transaction is rolled back,
// what was sent before it included; the connection goes back to the pool
// clean.
func TestPipelineHeldWriteFails(t *testing.T) {
	db, e := piped(t)
	ctx := context.Background()
	mustExec(t, db, `INSERT INTO piped VALUES (0)`)
	for _, c := range []struct {
		name string
		fn   func(q sqlstore.Querier) error
	}{
		{"at the commit", func(q sqlstore.Querier) error {
			if _, err := q.Exec(ctx, `INSERT INTO piped VALUES (1)`); err != nil {
				return err
			}
			later(q, `INSERT INTO piped VALUES (0)`) // a duplicate
			return nil
		}},
		{"at the next statement", func(q sqlstore.Querier) error {
			if _, err := q.Exec(ctx, `INSERT INTO piped VALUES (1)`); err != nil {
				return err
			}
			later(q, `INSERT INTO piped VALUES (0)`)
			var n int
			return q.QueryRow(ctx, `SELECT count(*) FROM piped`).Scan(&n)
		}},
		{"with only held writes", func(q sqlstore.Querier) error {
			later(q, `INSERT INTO piped VALUES (1)`)
			later(q, `INSERT INTO piped VALUES (0)`)
			return nil
		}},
		{"first in the transaction", func(q sqlstore.Querier) error {
			later(q, `INSERT INTO piped VALUES (0)`)
			_, err := q.Exec(ctx, `INSERT INTO piped VALUES (1)`)
			return err
		}},
	} {
		for _, way := range []func(context.Context, func(sqlstore.Querier) error) error{e.LockAsync, e.Update} {
			err := way(ctx, c.fn)
			if !(dialect{}).IsUnique(err) {
				t.Errorf("%s: error %v, want the held insert's unique violation", c.name, err)
			}
			if n := count(t, db, `SELECT count(*) FROM piped`); n != 1 {
				t.Errorf("%s: %d rows, want 1: the failed transaction was not rolled back", c.name, n)
			}
		}
	}
	// Every connection is idle and usable: the next transactions on all
	// of them commit.
	for i := range 2 * int(db.pool.Config().MaxConns) {
		if err := e.Lock(ctx, func(q sqlstore.Querier) error {
			_, err := q.Exec(ctx, `INSERT INTO piped VALUES (?)`, 100+i)
			return err
		}); err != nil {
			t.Fatalf("a transaction after the failures: %v", err)
		}
	}
}

// TestPipelineReads: a query's rows read at the end of a batch, a row
// that is not there, and statements after them on the same transaction.
func TestPipelineReads(t *testing.T) {
	db, e := piped(t)
	ctx := context.Background()
	err := e.Lock(ctx, func(q sqlstore.Querier) error {
		later(q, `INSERT INTO piped SELECT generate_series(1, 5)`)
		rows, err := q.Query(ctx, `SELECT id FROM piped ORDER BY id`)
		if err != nil {
			return err
		}
		var ids []int
		for rows.Next() {
			var id int
			if err := rows.Scan(&id); err != nil {
				return err
			}
			ids = append(ids, id)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
		if len(ids) != 5 || ids[4] != 5 {
			t.Errorf("rows %v, want 1 to 5", ids)
		}
		// Rows closed before they are all read.
		rows, err = q.Query(ctx, `SELECT id FROM piped ORDER BY id`)
		if err != nil {
			return err
		}
		rows.Next()
		rows.Close()
		var id int
		if err := q.QueryRow(ctx, `SELECT id FROM piped WHERE id = ?`, 42).Scan(&id); !errors.Is(err, sqlstore.ErrNoRows) {
			t.Errorf("a missing row: %v, want ErrNoRows", err)
		}
		if err := q.QueryRow(ctx, `SELECT id FROM piped WHERE id = ?`, 3).Scan(&id); err != nil || id != 3 {
			t.Errorf("row 3: %d, %v", id, err)
		}
		n, err := q.Exec(ctx, `DELETE FROM piped WHERE id > ?`, 3)
		if err != nil || n != 2 {
			t.Errorf("delete: %d rows, %v; want 2", n, err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := count(t, db, `SELECT count(*) FROM piped`); n != 3 {
		t.Errorf("%d rows committed, want 3", n)
	}
}

// pipedTable is the table the pipeline's tests write.
const pipedTable = `CREATE TABLE piped (id int PRIMARY KEY)`

// piped opens a database with the table piped, and its engine.
func piped(t *testing.T) (*DB, engine) {
	t.Helper()
	db, _ := counted(t)
	mustExec(t, db, pipedTable)
	return db, engine{db}
}

func mustExec(t *testing.T, db *DB, query string) {
	t.Helper()
	if _, err := db.pool.Exec(context.Background(), query); err != nil {
		t.Fatal(err)
	}
}

// later holds a write back on q, a pipeline.
func later(q sqlstore.Querier, query string, args ...any) {
	q.(sqlstore.Later).Later(context.Background(), query, args...)
}

func count(t *testing.T, db *DB, query string, args ...any) int {
	t.Helper()
	var n int
	if err := db.pool.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestPipelineImplicitTransaction: a READ COMMITTED transaction that only
// wrote sends its writes without BEGIN and COMMIT, as one implicit
// transaction, in which LockAsync's SET LOCAL still holds (and nothing of
// it is left on the connection); a SERIALIZABLE one keeps its BEGIN.
func TestPipelineImplicitTransaction(t *testing.T) {
	db, trips := counted(t)
	ctx := context.Background()
	e := engine{db}
	mustExec(t, db, `CREATE TABLE settings (way text, sync text, iso text)`)
	for _, c := range []struct {
		name       string
		way        func(context.Context, func(sqlstore.Querier) error) error
		sync, iso  string
		statements int64
	}{
		{"LockAsync", e.LockAsync, "off", "read committed", 2},
		{"Lock", e.Lock, "on", "read committed", 1},
		{"Update", e.Update, "on", "serializable", 3},
	} {
		before := trips.statements.Load()
		if n := trips.of(t, func() error {
			return c.way(ctx, func(q sqlstore.Querier) error {
				later(q, `INSERT INTO settings VALUES (?, current_setting('synchronous_commit'), current_setting('transaction_isolation'))`, c.name)
				return nil
			})
		}); n != 1 {
			t.Errorf("%s: %d round trips, want 1", c.name, n)
		}
		if n := trips.statements.Load() - before; n != c.statements {
			t.Errorf("%s: %d statements, want %d", c.name, n, c.statements)
		}
		var sync, iso string
		if err := db.pool.QueryRow(ctx, `SELECT sync, iso FROM settings WHERE way = $1`, c.name).Scan(&sync, &iso); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		if sync != c.sync || iso != c.iso {
			t.Errorf("%s: written with synchronous_commit %s, %s; want %s, %s", c.name, sync, iso, c.sync, c.iso)
		}
	}
	var after string
	if err := db.pool.QueryRow(ctx, `SHOW synchronous_commit`).Scan(&after); err != nil || after != "on" {
		t.Errorf("synchronous_commit on the pool after: %s, %v; want on", after, err)
	}
}
