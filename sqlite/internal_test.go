package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"gatehouse/sqlstore"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// openTestDB opens a store on a fresh database file of the test's, with a
// fresh secret box, closed when the test ends.
func openTestDB(t *testing.T) (*DB, *gatehouse.SecretBox) {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := Open(context.Background(), filepath.Join(t.TempDir(), "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, box
}

// TestStmtCacheNoPoolDeadlock holds every read connection in a transaction
// whose queries miss the statement cache, while reads outside transactions
// prepare theirs: preparing must never wait for a connection while holding
// one, or the pool deadlocks.
func TestStmtCacheNoPoolDeadlock(t *testing.T) {
	db, _ := openTestDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	const workers = 32
	var wg sync.WaitGroup
	errs := make(chan error, workers*2)
	for w := range workers {
		wg.Go(func() {
			errs <- (engine{db}).View(ctx, func(q sqlstore.Querier) error {
				for i := range 10 {
					var n int
					if err := q.QueryRow(ctx, fmt.Sprintf("SELECT %d + ?", w*100+i), 1).Scan(&n); err != nil {
						return err
					}
					if n != w*100+i+1 {
						return fmt.Errorf("got %d", n)
					}
				}
				return nil
			})
		})
		wg.Go(func() {
			errs <- (engine{db}).Read(ctx, func(q sqlstore.Querier) error {
				var n int
				return q.QueryRow(ctx, fmt.Sprintf("SELECT %d + ?", 10000+w), 1).Scan(&n)
			})
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	// What the transactions missed was prepared in the background; the
	// cache never holds more than its bound.
	deadline := time.Now().Add(5 * time.Second)
	for db.stmts.lookup("SELECT 0 + ?") == nil && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if db.stmts.lookup("SELECT 0 + ?") == nil {
		t.Error("a statement a transaction missed was never prepared")
	}
	db.stmts.mu.RLock()
	n := len(db.stmts.stmts)
	db.stmts.mu.RUnlock()
	if n > maxStmts {
		t.Errorf("%d statements cached, bound %d", n, maxStmts)
	}
}

// TestCheckpointsInBackground: commits never checkpoint themselves, yet
// what they write reaches the database file shortly after, while the store
// is open, and the log does not keep growing under steady writes.
func TestCheckpointsInBackground(t *testing.T) {
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	db, err := Open(context.Background(), path, box)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	marker := fmt.Sprintf("checkpointed-%x", gatehouse.NewSecretKey()[:8])
	if _, err := db.CreateOrganization(ctx, marker); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(marker)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a commit never reached the database file while the store was open")
		}
		time.Sleep(20 * time.Millisecond)
	}
	var sizes []int64
	for round := range 4 {
		for i := range 200 {
			if _, err := db.CreateOrganization(ctx, fmt.Sprintf("org %d-%d", round, i)); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(2 * checkpointDelay)
		st, err := os.Stat(path + "-wal")
		if err != nil {
			t.Fatal(err)
		}
		sizes = append(sizes, st.Size())
	}
	// Once checkpointed, the log is written again from its start: its size
	// stays that of a round of writes, or two when a loaded machine delays
	// a checkpoint past a round (the file keeps its largest size); without
	// checkpoints it would hold all four rounds.
	if sizes[3] > 3*sizes[0] {
		t.Errorf("the log grows: %v bytes after each round", sizes)
	}
}

// TestBusyKeepsTheDriverError: a write refused because another connection
// holds the write lock is EUNAVAILABLE for the client, and keeps SQLite's
// own error as its cause for the log.
func TestBusyKeepsTheDriverError(t *testing.T) {
	path := filepath.Join(t.TempDir(), "busy.db")
	holder, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	ctx := context.Background()
	conn, err := holder.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, `CREATE TABLE t (x INTEGER)`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(ctx, `BEGIN IMMEDIATE`); err != nil {
		t.Fatal(err)
	}
	defer conn.ExecContext(ctx, `ROLLBACK`)
	other, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, driverErr := other.ExecContext(ctx, `INSERT INTO t VALUES (1)`)

	err = mapErr(driverErr)
	if gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE {
		t.Fatalf("mapErr(%v) = %v, want EUNAVAILABLE", driverErr, err)
	}
	var se *sqlite.Error
	if !errors.As(err, &se) || se.Code()&0xff != sqlite3.SQLITE_BUSY {
		t.Errorf("mapErr(%v) = %v: the SQLite error is not its cause", driverErr, err)
	}
	if !strings.Contains(err.Error(), driverErr.Error()) {
		t.Errorf("Error() = %q, want SQLite's words %q for the log", err.Error(), driverErr.Error())
	}
	if msg := gatehouse.ErrorMessage(err); msg != "the database is busy; retry shortly" {
		t.Errorf("the client reads %q", msg)
	}
}

// TestAsyncWritesFsyncedBehind: a batch of asynchronous (metering) writes
// commits with synchronous=NORMAL and the writer fsyncs the WAL within
// syncInterval; a management write commits with FULL again.
func TestAsyncWritesFsyncedBehind(t *testing.T) {
	db, _ := openTestDB(t)
	ctx := context.Background()
	e := engine{db}
	mode := func(q sqlstore.Querier) int {
		var m int
		// pragma_synchronous is evaluated when run; a prepared PRAGMA
		// synchronous keeps the value it was compiled with.
		if err := q.QueryRow(ctx, `SELECT synchronous FROM pragma_synchronous`).Scan(&m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	const normal, full = 1, 2
	write := func(way func(context.Context, func(sqlstore.Querier) error) error, want int) {
		t.Helper()
		if err := way(ctx, func(q sqlstore.Querier) error {
			if got := mode(q); got != want {
				t.Errorf("synchronous = %d inside the write, want %d", got, want)
			}
			_, err := q.Exec(ctx, `CREATE TABLE IF NOT EXISTS t (x INTEGER); INSERT INTO t VALUES (1)`)
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	before := db.writer.fsyncs.Load()
	write(e.LockAsync, normal)
	if db.writer.fsyncs.Load() != before {
		t.Fatal("the asynchronous write was fsynced before it was acknowledged")
	}
	deadline := time.Now().Add(5 * time.Second)
	for db.writer.fsyncs.Load() == before {
		if time.Now().After(deadline) {
			t.Fatalf("the WAL was not fsynced %v after an asynchronous write", 5*time.Second)
		}
		time.Sleep(5 * time.Millisecond)
	}
	write(e.Update, full)
	write(e.LockAsync, normal)
	write(e.Lock, full) // FULL: fsyncs what the asynchronous write left
	n := db.writer.fsyncs.Load()
	time.Sleep(3 * syncInterval)
	if got := db.writer.fsyncs.Load(); got != n {
		t.Errorf("the writer fsynced the WAL again (%d times) after a FULL commit covered it", got-n)
	}
	// Flush fsyncs at once what asynchronous writes left, and nothing when
	// nothing is left.
	write(e.LockAsync, normal)
	if err := e.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	if got := db.writer.fsyncs.Load(); got != n+1 {
		t.Errorf("Flush after an asynchronous write: %d fsyncs, want 1", got-n)
	}
	if err := e.Flush(ctx); err != nil || db.writer.fsyncs.Load() != n+1 {
		t.Errorf("Flush with nothing unsynced: %v, %d fsyncs, want none", err, db.writer.fsyncs.Load()-n-1)
	}
}
