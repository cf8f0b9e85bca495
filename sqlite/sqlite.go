// Package sqlite is the embedded store of Gatehouse: a gatehouse.Store on
// one SQLite file (modernc.org/sqlite, no cgo) in WAL mode, with one writer
// connection and a pool of readers.
package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"gatehouse/sqlstore"
	"net/url"
	"os"
	"runtime"
	"strings"
	"time"

	"gatehouse"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:embed migration/*.sql
var migrations embed.FS

// DB is a gatehouse.Store on a SQLite database file: the shared store over
// this engine.
type DB struct {
	*sqlstore.Store
	Path string

	write  *sql.DB // one connection: SQLite has one writer at a time
	read   *sql.DB // a pool of read-only connections
	box    *gatehouse.SecretBox
	writer *writer    // group-commits write operations on write
	stmts  *stmtCache // prepared statements of the read pool
	// wstmts are the writer's: prepared on its one connection between
	// transactions (a miss runs unprepared and is prepared after the commit).
	wstmts *stmtCache
	ckpt   *checkpointer
	schema sqlstore.Schema
	// readTimeout bounds each read (SetReadTimeout).
	readTimeout time.Duration
}

// SetReadTimeout bounds each read operation (all its statements): one that
// runs longer is interrupted (sqlite3_interrupt, through its context) and
// answered 503, so that no read holds a connection of the read pool longer.
// A long read (sqlstore.LongRead: the analytics) with a deadline of its own
// is bounded by that deadline instead. 0 (the default of Open, for the
// commands that read a whole database) bounds nothing. Call it before
// serving.
func (db *DB) SetReadTimeout(d time.Duration) { db.readTimeout = d }

// ReadConns is the number of connections of the read pool.
func (db *DB) ReadConns() int { return readConns() }

func readConns() int { return max(4, runtime.GOMAXPROCS(0)*2) }

// boundRead bounds a read by the read timeout, as PostgreSQL's bound does.
func (db *DB) boundRead(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok && sqlstore.IsLongRead(ctx) {
		return context.WithCancel(ctx)
	}
	if db.readTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, db.readTimeout)
}

// Schema returns the database's schema version, and the migrations that
// Open applied.
func (db *DB) Schema() sqlstore.Schema { return db.schema }

var _ gatehouse.Store = (*DB)(nil)

// createPrivate creates a missing database file readable by its owner
// only, and reports whether it did. SQLite gives the -wal and -shm files
// the database file's mode, so they are private too; an existing file
// keeps the mode its owner chose.
func createPrivate(path string) (bool, error) {
	if path == ":memory:" || strings.HasPrefix(path, "file:") {
		return false, nil
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return true, f.Close()
}

// Open opens (creating if needed) the database at path and applies pending
// migrations. box encrypts destination secrets at rest. When it fails, a
// file it created is removed.
func Open(ctx context.Context, path string, box *gatehouse.SecretBox) (*DB, error) {
	return open(ctx, path, box, true)
}

// OpenExisting opens a database that Gatehouse made, and applies pending
// migrations: it creates nothing, and refuses a path where there is no
// file, or a database that Gatehouse never migrated (before changing it).
func OpenExisting(ctx context.Context, path string, box *gatehouse.SecretBox) (*DB, error) {
	return open(ctx, path, box, false)
}

func open(ctx context.Context, path string, box *gatehouse.SecretBox, create bool) (_ *DB, err error) {
	if path == "" {
		return nil, errors.New("sqlite: empty database path")
	}
	if box == nil {
		return nil, errors.New("sqlite: a secret box is required")
	}
	if create {
		created, err := createPrivate(path)
		if err != nil {
			return nil, fmt.Errorf("sqlite: %s: %w", path, err)
		}
		if created {
			defer func() {
				if err != nil { // nothing is left of a failed start on a new file
					for _, f := range []string{path, path + "-wal", path + "-shm"} {
						os.Remove(f)
					}
				}
			}()
		}
	} else if _, err := os.Stat(path); err != nil {
		return nil, fmt.Errorf("sqlite: %w", err)
	}
	db := &DB{Path: path, box: box}
	if db.write, err = sql.Open("sqlite", dsn(path, false)); err != nil {
		return nil, err
	}
	db.write.SetMaxOpenConns(1)
	db.write.SetConnMaxIdleTime(0)
	if !create { // before WAL mode, which is written into the file
		if _, err := sqlstore.Migrate(ctx, readOnlyMigrator{migrator{db.write}}, migrations, false); err != nil && !errors.Is(err, errWouldMigrate) {
			db.write.Close()
			return nil, fmt.Errorf("sqlite: %s: %w", path, err)
		}
	}
	if err := db.enableWAL(ctx); err != nil {
		db.write.Close()
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	if db.read, err = sql.Open("sqlite", dsn(path, true)); err != nil {
		db.write.Close()
		return nil, err
	}
	db.read.SetMaxOpenConns(readConns())
	db.read.SetMaxIdleConns(readConns())
	if db.schema, err = sqlstore.Migrate(ctx, migrator{db.write}, migrations, create); err != nil {
		db.read.Close()
		db.write.Close()
		return nil, fmt.Errorf("sqlite: migrate %s: %w", path, err)
	}
	ckptConn, err := sql.Open("sqlite", dsn(path, false))
	if err != nil {
		db.read.Close()
		db.write.Close()
		return nil, err
	}
	ckptConn.SetMaxOpenConns(1)
	db.ckpt = newCheckpointer(ckptConn)
	db.stmts = newStmtCache(db.read)
	db.wstmts = newStmtCache(db.write)
	db.writer = newWriter(db)
	db.Store = sqlstore.New(engine{db}, box)
	return db, nil
}

// PendingMigrations returns the migrations that opening a database that
// Gatehouse migrated would apply (an upgrade), in order; none where there
// is no file, or no Gatehouse schema. It reads only.
func PendingMigrations(ctx context.Context, path string) ([]string, error) {
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	conn, err := sql.Open("sqlite", dsn(path, true))
	if err != nil {
		return nil, err
	}
	defer conn.Close()
	applied, exists, err := migrator{conn}.Applied(ctx)
	if err != nil {
		return nil, fmt.Errorf("sqlite: %s: %w", path, err)
	}
	if !exists {
		return nil, nil
	}
	return sqlstore.Pending(migrations, applied)
}

// readOnlyMigrator checks a database as Migrate does, and stops short of
// applying anything: OpenExisting's check of a file before it switches it
// to WAL mode.
type readOnlyMigrator struct{ migrator }

var errWouldMigrate = errors.New("sqlite: stopped before migrating")

func (readOnlyMigrator) Apply(ctx context.Context, name, body string) (bool, error) {
	return false, errWouldMigrate
}

// dsn returns the connection string: foreign keys on, a busy timeout for
// other processes (the CLI) writing the same file, full fsync at commit, and
// BEGIN IMMEDIATE for write transactions so that two writers never deadlock
// upgrading a read lock. WAL mode, so that readers never block the writer,
// is set once by enableWAL.
func dsn(path string, readOnly bool) string {
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(5000)")
	q.Add("_pragma", "foreign_keys(1)")
	q.Add("_pragma", "synchronous(FULL)")
	if readOnly {
		q.Add("_pragma", "query_only(1)")
		// A reader's page cache of 256 KiB instead of SQLite's 2 MiB: the
		// pages it would keep are in the OS's cache anyway, and SQLite
		// keeps what it grew to. Measured on the read scenarios of
		// bench/run.sh: the server's resident memory after them 66 MiB
		// with 2 MiB, 51 MiB with 256 KiB, reads as fast.
		q.Add("_pragma", "cache_size(-256)")
		// Pages read through a memory map of the file (its first GiB)
		// rather than a read(2) and a copy each: a list's page skips its
		// offset along an index, and walking a million entries of one
		// took half the CPU time this way (the sqlite3 shell, an index of
		// 1M keys' hashes: 53 ms of user and system time instead of
		// 100 ms). The mapped pages are the OS's page cache, shared and
		// reclaimable, not the process's memory.
		q.Add("_pragma", "mmap_size(1073741824)")
	} else {
		q.Set("_txlock", "immediate")
		// Checkpoints run apart from commits (see checkpoint.go).
		q.Add("_pragma", "wal_autocheckpoint(0)")
		// Each operation of a group commit runs in a savepoint, whose
		// sub-journal (the pages it changed, as they were) would spill to
		// a temporary file past 64 KiB, as a ledger batch does: a write(2)
		// a page, 3.5% of the server's CPU at 32 clients of chat
		// completions. In memory it is a copy; it lives for one batch.
		q.Add("_pragma", "temp_store(MEMORY)")
	}
	return "file:" + path + "?" + q.Encode()
}

// enableWAL switches the file to WAL mode, which is then stored in the file.
// The switch fails with SQLITE_BUSY, regardless of the busy timeout, while
// another process is opening the same new file, so it is retried.
func (db *DB) enableWAL(ctx context.Context) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		var mode string
		err := db.write.QueryRowContext(ctx, "PRAGMA journal_mode=WAL").Scan(&mode)
		if err == nil {
			if mode != "wal" {
				return fmt.Errorf("journal_mode is %q, want wal", mode)
			}
			return nil
		}
		if gatehouse.ErrorCode(mapErr(err)) != gatehouse.EUNAVAILABLE || time.Now().After(deadline) {
			return fmt.Errorf("enable WAL: %w", err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// Close closes the database.
func (db *DB) Close() error {
	db.writer.close()
	return errors.Join(db.ckpt.close(), db.stmts.close(), db.wstmts.close(), db.read.Close(), db.write.Close())
}

// Ping reports whether the database answers a query.
func (db *DB) Ping(ctx context.Context) error {
	var one int
	if err := db.read.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "database unavailable")
	}
	return nil
}

// migrator applies migrations on the writer connection.
type migrator struct{ db *sql.DB }

func (m migrator) Applied(ctx context.Context) ([]string, bool, error) {
	var n int
	if err := m.db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).Scan(&n); err != nil || n == 0 {
		return nil, false, err
	}
	rows, err := m.db.QueryContext(ctx, `SELECT name FROM schema_migrations`)
	if err != nil {
		return nil, true, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			return nil, true, err
		}
		names = append(names, n)
	}
	return names, true, rows.Err()
}

func (m migrator) Apply(ctx context.Context, name, body string) (bool, error) {
	tx, err := m.db.BeginTx(ctx, nil) // BEGIN IMMEDIATE: one process migrates at a time
	if err != nil {
		return false, err
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, sqlstore.CreateSchemaMigrations); err != nil {
		return false, err
	}
	var n int
	if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM schema_migrations WHERE name = ?`, name).Scan(&n); err != nil {
		return false, err
	}
	if n > 0 {
		return false, nil
	}
	if _, err := tx.ExecContext(ctx, body); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES (?, ?)`, name, time.Now().UnixMilli()); err != nil {
		return false, err
	}
	return true, tx.Commit()
}

// mapErr turns driver errors that are not the caller's fault but have a
// meaning (the database is busy or gone) into domain errors, which keep the
// driver's error as their cause for the log. Others pass through unchanged
// and render as internal errors.
func mapErr(err error) error {
	var se *sqlite.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &se) && (se.Code()&0xff == sqlite3.SQLITE_BUSY || se.Code()&0xff == sqlite3.SQLITE_LOCKED):
		return gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "the database is busy; retry shortly")
	case gatehouse.ErrorCode(err) != gatehouse.EINTERNAL:
		return err // a domain error
	case errors.Is(err, context.DeadlineExceeded), errors.As(err, &se) && se.Code()&0xff == sqlite3.SQLITE_INTERRUPT:
		return gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "the database did not answer in time (GATEHOUSE_DB_TIMEOUT); retry shortly")
	}
	return err
}
