// Package postgres is the scale-out store of Gatehouse: a gatehouse.Store on
// PostgreSQL (pgx/v5 with a pgxpool), for several stateless instances on one
// database. It behaves exactly as the sqlite store does; the storetest suite
// checks that.
package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"gatehouse/sqlstore"
	"io"
	"math/rand/v2"
	"net"
	"strings"
	"time"

	"gatehouse"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

//go:embed migration/*.sql
var migrations embed.FS

// Options tune the store; the zero value takes the defaults.
type Options struct {
	// OpTimeout bounds every store call (all its queries and retries), so
	// that an unreachable database answers EUNAVAILABLE instead of hanging.
	// Default 5s.
	OpTimeout time.Duration
	// Existing refuses a database that Gatehouse never migrated (an empty
	// one, or another application's) instead of creating the schema in
	// it: for the commands that administer a Gatehouse database.
	Existing bool
	// Tracer, when set, hears of every statement and batch the store's
	// connections send (pgx's tracing: OpenTelemetry's, or a test's count
	// of round trips).
	Tracer pgx.QueryTracer
}

// DefaultOpTimeout is the default of Options.OpTimeout.
const DefaultOpTimeout = 5 * time.Second

// DB is a gatehouse.Store on a PostgreSQL database: the shared store over
// this engine, with one override (UpdateKey).
type DB struct {
	*sqlstore.Store

	pool      *pgxpool.Pool
	box       *gatehouse.SecretBox
	opTimeout time.Duration
	schema    sqlstore.Schema
}

// Schema returns the database's schema version, and the migrations that
// Open applied.
func (db *DB) Schema() sqlstore.Schema { return db.schema }

var _ gatehouse.Store = (*DB)(nil)

// DefaultMaxConns is the pool's size unless the URL sets pool_max_conns.
// pgx's default, the number of CPUs but at least 4, starves writes: each
// commit waits for its WAL flush, and more transactions in flight let
// PostgreSQL flush them together (PATCH /keys/{hash} on 2 cores: 2,400/s
// with 4 connections, 2,900/s with 8, 3,300/s with 16).
const DefaultMaxConns = 16

// Open connects to the database at url (a postgres:// URL; pool settings
// such as pool_max_conns and connect_timeout may be given as its query
// parameters) and applies pending migrations, serialized across instances
// by an advisory lock. box encrypts destination secrets at rest.
func Open(ctx context.Context, url string, box *gatehouse.SecretBox, opts Options) (*DB, error) {
	if box == nil {
		return nil, errors.New("postgres: a secret box is required")
	}
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("postgres: parse database URL: %w", redact(err))
	}
	if cfg.ConnConfig.ConnectTimeout == 0 {
		cfg.ConnConfig.ConnectTimeout = 5 * time.Second
	}
	if opts.Tracer != nil {
		cfg.ConnConfig.Tracer = opts.Tracer
	}
	if !strings.Contains(url, "pool_max_conns") {
		cfg.MaxConns = DefaultMaxConns
	}
	db := &DB{box: box, opTimeout: opts.OpTimeout}
	db.Store = sqlstore.New(engine{db}, box)
	db.Store.SetLedgerWriters(ledgerWriters)
	if db.opTimeout <= 0 {
		db.opTimeout = DefaultOpTimeout
	}
	if db.pool, err = pgxpool.NewWithConfig(ctx, cfg); err != nil {
		return nil, fmt.Errorf("postgres: %w", redact(err))
	}
	if db.schema, err = db.migrate(ctx, !opts.Existing); err != nil {
		db.pool.Close()
		return nil, fmt.Errorf("postgres: migrate: %w", redact(err))
	}
	return db, nil
}

// SystemDatabase reports whether url names one of PostgreSQL's own
// databases (postgres, template0, template1), directly or by default (no
// database named: the user's name), and which.
func SystemDatabase(url string) (string, bool) {
	cfg, err := pgconn.ParseConfig(url)
	if err != nil {
		return "", false
	}
	switch cfg.Database {
	case "postgres", "template0", "template1":
		return cfg.Database, true
	}
	return "", false
}

// redact keeps connection errors, which can quote the URL, free of the
// password.
func redact(err error) error {
	var pe *pgconn.ParseConfigError
	if errors.As(err, &pe) {
		return errors.New("invalid database URL")
	}
	return err
}

// ReadConns is the number of connections of the pool, which reads and
// writes share.
func (db *DB) ReadConns() int { return int(db.pool.Config().MaxConns) }

// Close closes the pool.
func (db *DB) Close() error {
	db.pool.Close()
	return nil
}

// Ping reports whether the database answers within the operation timeout.
func (db *DB) Ping(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, db.opTimeout)
	defer cancel()
	if err := db.pool.Ping(ctx); err != nil {
		return unavailable(err)
	}
	return nil
}

// migrationLock is the advisory lock key that serializes migrations of
// instances starting together ("gatehous" in ASCII).
const migrationLock = 0x6761746568_6f7573

// migrate applies the pending migrations, holding the advisory lock
// throughout, so that instances starting together migrate once.
func (db *DB) migrate(ctx context.Context, create bool) (sqlstore.Schema, error) {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return sqlstore.Schema{}, err
	}
	defer conn.Release()
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1)`, int64(migrationLock)); err != nil {
		return sqlstore.Schema{}, err
	}
	defer conn.Exec(context.WithoutCancel(ctx), `SELECT pg_advisory_unlock($1)`, int64(migrationLock))
	return sqlstore.Migrate(ctx, migrator{conn.Conn()}, migrations, create)
}

// migrator applies migrations on one connection.
type migrator struct{ conn *pgx.Conn }

func (m migrator) Applied(ctx context.Context) ([]string, bool, error) {
	var exists bool
	if err := m.conn.QueryRow(ctx, `SELECT to_regclass('schema_migrations') IS NOT NULL`).Scan(&exists); err != nil || !exists {
		return nil, false, err
	}
	rows, err := m.conn.Query(ctx, `SELECT name FROM schema_migrations`)
	if err != nil {
		return nil, true, err
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	return names, true, err
}

func (m migrator) Apply(ctx context.Context, name, body string) (applied bool, err error) {
	err = pgx.BeginFunc(ctx, m.conn, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, sqlstore.CreateSchemaMigrations); err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM schema_migrations WHERE name = $1`, name).Scan(&n); err != nil {
			return err
		}
		if n > 0 {
			return nil
		}
		if _, err := tx.Exec(ctx, body); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ($1, $2)`, name, time.Now().UnixMilli())
		applied = err == nil
		return err
	})
	return applied && err == nil, err
}

// ledgerWriters is how many batches of the metering ledger an instance
// writes at once: the holds that come while one commits go beside it
// (two instances on one hot key, bench/README "PostgreSQL's hot key, two
// ledger writers").
const ledgerWriters = 2

// maxAttempts bounds the retries of a transaction that keeps conflicting.
const maxAttempts = 12

// retryBackoff is the wait before attempt+1: full jitter over a window that
// doubles from 2 ms up to 200 ms. A window that grew only linearly let a
// dozen transactions that conflict with each other (on a loaded machine,
// each taking longer than the whole window) retry in lockstep until all
// twelve attempts were spent; the doubling spreads them out, and the
// operation's timeout still bounds the total.
func retryBackoff(attempt int) time.Duration {
	window := min(2*time.Millisecond<<min(attempt-1, 7), 200*time.Millisecond)
	return time.Duration(rand.Int64N(int64(window)))
}

// bound bounds an operation by the operation timeout, except a long read
// (sqlstore.LongRead, such as an analytics query over millions of ledger
// entries) that has a deadline of its own: that deadline bounds it.
func (db *DB) bound(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok && sqlstore.IsLongRead(ctx) {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, db.opTimeout)
}

// run runs fn in a transaction begun by begin's statements, retried while
// it conflicts with another.
func (db *DB) run(ctx context.Context, begin []string, fn func(q sqlstore.Querier) error) error {
	ctx, cancel := db.bound(ctx)
	defer cancel()
	for attempt := 1; ; attempt++ {
		err := db.attempt(ctx, begin, fn)
		if !retryable(err) || attempt == maxAttempts {
			return mapErr(err)
		}
		backoff := retryBackoff(attempt)
		select {
		case <-ctx.Done():
			return mapErr(ctx.Err())
		case <-time.After(backoff):
		}
	}
}

func (db *DB) attempt(ctx context.Context, begin []string, fn func(q sqlstore.Querier) error) error {
	conn, err := db.pool.Acquire(ctx)
	if err != nil {
		return err
	}
	defer conn.Release()
	p := newPipeline(ctx, conn, begin)
	if err := fn(p); err != nil {
		p.rollback()
		return err
	}
	if err := p.commit(); err != nil {
		p.rollback()
		return err
	}
	return nil
}

// retryable reports whether a transaction failed only because it raced
// another one, so that running it again may succeed.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40001" || pe.Code == "40P01")
}

// mapErr turns errors that mean "the database cannot be reached" into
// EUNAVAILABLE, and text PostgreSQL cannot store into EINVALID, keeping the
// driver's error as the cause for the log; domain errors and others pass
// through (the latter render as internal errors).
func mapErr(err error) error {
	if err == nil || gatehouse.ErrorCode(err) != gatehouse.EINTERNAL {
		return err
	}
	var pe *pgconn.PgError
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case retryable(err):
		// Still conflicting after every attempt: many writes to the same
		// rows at once (32 clients making keys in one organization meet
		// this a few times a minute), which a later try gets through.
		return gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "the database is busy with writes that conflict with this one; retry shortly").
			WithMetadata("retry_after_seconds", 1)
	case errors.As(err, &pe):
		if pe.Code == "22021" || pe.Code == "22P05" { // invalid UTF-8 or NUL in text: the HTTP layer refuses them first
			return gatehouse.WrapError(err, gatehouse.EINVALID, "text must be valid UTF-8 without NUL characters")
		}
		if pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03" || pe.Code[:2] == "08" || pe.Code == "53300" {
			return unavailable(err) // admin shutdown, cannot connect now, connection exceptions, too many connections
		}
		return err
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &ce), errors.As(err, &ne),
		pgconn.Timeout(err), errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), errors.Is(err, net.ErrClosed),
		errors.Is(err, context.Canceled):
		return unavailable(err)
	}
	return err
}

// unavailable is the error of a database that cannot serve now; cause is
// what the driver said.
func unavailable(cause error) error {
	return gatehouse.WrapError(cause, gatehouse.EUNAVAILABLE, "the database is unavailable; retry shortly")
}
