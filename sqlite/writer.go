package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"gatehouse/sqlstore"
)

// Group commit. SQLite has one writer, and with synchronous=FULL every
// commit waits for an fsync (a few hundred microseconds here), which would
// cap writes at a few thousand a second. So write operations queue for one
// writer goroutine, which runs the operations waiting at the same moment in
// one transaction, each inside its own SAVEPOINT, and commits them with one
// fsync. Each operation stays all-or-nothing on its own (a failing one rolls
// back to its savepoint and leaves the others be), and none is acknowledged
// before the commit that makes it durable.
//
// Metering writes (the ledger's batches) may ask for less: an asynchronous
// operation is acknowledged once its commit is in the WAL file, which a
// crash of this process cannot undo, and a batch of only such operations
// commits with synchronous=NORMAL, without an fsync. The writer fsyncs the
// WAL within syncInterval of such a commit (and any commit with
// synchronous=FULL does so at once), so a crash of the machine loses at
// most that interval of metering, never a management write.

// maxBatch bounds the operations committed together.
const maxBatch = 64

// syncInterval bounds how long an asynchronous commit waits for its fsync.
const syncInterval = 100 * time.Millisecond

// writeOp is one write operation waiting for the writer.
type writeOp struct {
	ctx  context.Context
	fn   func(q sqlstore.Querier) error
	done chan error
	// async: acknowledged before its fsync (see above).
	async bool
	// flush: no write (fn is nil), acknowledged once every commit before
	// it is on disk (Flush).
	flush bool
}

// writer serializes write operations into group-committed transactions.
type writer struct {
	db     *DB
	ops    chan *writeOp
	stop   chan struct{}
	closed sync.WaitGroup
	once   sync.Once

	// normal: the connection commits with synchronous=NORMAL now.
	normal bool
	// unsynced: an asynchronous commit's frames may not be on disk yet.
	unsynced bool
	fsync    *time.Timer
	fsyncs   atomic.Int64 // WAL fsyncs done by the writer, for tests
}

func newWriter(db *DB) *writer {
	w := &writer{db: db, ops: make(chan *writeOp), stop: make(chan struct{}), fsync: time.NewTimer(time.Hour)}
	w.fsync.Stop()
	w.closed.Add(1)
	go w.loop()
	return w
}

var errStoreClosed = errors.New("sqlite: the store is closed")

// do runs fn as one write operation and returns once it is committed (or
// has failed). Cancelling ctx before the operation starts abandons it; once
// started it runs to the end, because interrupting a statement in SQLite
// would roll back the whole shared transaction.
func (w *writer) do(ctx context.Context, async bool, fn func(q sqlstore.Querier) error) error {
	return w.submit(&writeOp{ctx: ctx, fn: fn, done: make(chan error, 1), async: async})
}

// flush returns once every commit acknowledged before it, asynchronous
// ones included, is on disk: the WAL is fsynced now if it has to be.
func (w *writer) flush(ctx context.Context) error {
	return w.submit(&writeOp{ctx: ctx, done: make(chan error, 1), flush: true})
}

// submit hands op to the writer and waits for its result.
func (w *writer) submit(op *writeOp) error {
	select {
	case w.ops <- op:
	case <-op.ctx.Done():
		return op.ctx.Err()
	case <-w.stop:
		return errStoreClosed
	}
	return <-op.done
}

// close stops the writer after the operations it has taken.
func (w *writer) close() {
	w.once.Do(func() { close(w.stop) })
	w.closed.Wait()
}

func (w *writer) loop() {
	defer w.closed.Done()
	for {
		var batch []*writeOp
		select {
		case op := <-w.ops:
			batch = append(batch, op)
		case <-w.fsync.C:
			w.syncWAL()
			continue
		case <-w.stop:
			w.syncWAL()
			return
		}
	gather:
		for len(batch) < maxBatch {
			select {
			case op := <-w.ops:
				batch = append(batch, op)
			default:
				break gather
			}
		}
		w.commit(batch)
	}
}

// commit runs a batch's writes in one transaction, then its flushes, and
// reports to every operation.
func (w *writer) commit(batch []*writeOp) {
	writes, flushes := make([]*writeOp, 0, len(batch)), 0
	for _, op := range batch {
		if op.flush {
			flushes++
		} else {
			writes = append(writes, op)
		}
	}
	if len(writes) > 0 {
		w.commitWrites(writes)
	}
	if flushes == 0 {
		return
	}
	var err error
	if w.syncWAL(); w.unsynced {
		err = errors.New("sqlite: the WAL could not be fsynced")
	}
	for _, op := range batch {
		if op.flush {
			op.done <- err
		}
	}
}

// commitWrites runs write operations in one transaction and reports to
// each.
func (w *writer) commitWrites(batch []*writeOp) {
	results := make([]error, len(batch))
	async := true
	for _, op := range batch {
		async = async && op.async
	}
	if err := w.setNormal(async); err != nil {
		for _, op := range batch {
			op.done <- mapErr(err)
		}
		return
	}
	sqlTx, err := w.db.write.BeginTx(context.Background(), nil)
	if err != nil {
		for _, op := range batch {
			op.done <- mapErr(err)
		}
		return
	}
	for i, op := range batch {
		if err := op.ctx.Err(); err != nil {
			results[i] = err // the caller gave up before it started
			continue
		}
		results[i] = w.run(sqlTx, op)
	}
	if err := sqlTx.Commit(); err != nil {
		for i := range results {
			if results[i] == nil {
				results[i] = err
			}
		}
	} else {
		w.db.ckpt.written()
		if !async {
			w.unsynced = false // FULL: this commit's fsync covered the frames before it
		} else if !w.unsynced {
			w.unsynced = true
			w.fsync.Reset(syncInterval)
		}
	}
	for i, op := range batch {
		op.done <- mapErr(results[i])
	}
}

// run runs one operation inside its savepoint.
func (w *writer) run(sqlTx *sql.Tx, op *writeOp) (err error) {
	ctx := context.Background()
	u := uninterrupted{preparedQuerier{cache: w.db.wstmts, tx: sqlTx}}
	if _, err := u.ExecContext(ctx, `SAVEPOINT op`); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("sqlite: write operation panicked: %v\n%s", v, debug.Stack())
		}
		if err != nil {
			if _, rerr := u.ExecContext(ctx, `ROLLBACK TO op`); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if _, rerr := u.ExecContext(ctx, `RELEASE op`); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return op.fn(querier{u})
}

// setNormal makes the connection commit with synchronous=NORMAL (or FULL).
// If database/sql ever replaced the connection, the new one starts with
// FULL (the DSN's): at worst an asynchronous batch is fsynced.
func (w *writer) setNormal(normal bool) error {
	if normal == w.normal {
		return nil
	}
	mode := "FULL"
	if normal {
		mode = "NORMAL"
	}
	if _, err := w.db.write.ExecContext(context.Background(), "PRAGMA synchronous="+mode); err != nil {
		return err
	}
	w.normal = normal
	return nil
}

// syncWAL fsyncs the WAL file if an asynchronous commit has not been: the
// frames SQLite wrote through its own descriptor reach the disk through
// ours, since fsync flushes the file, not the descriptor.
func (w *writer) syncWAL() {
	if !w.unsynced {
		return
	}
	f, err := os.Open(w.db.Path + "-wal")
	if err == nil {
		err = f.Sync()
		f.Close()
	}
	if err != nil {
		// The next commit with FULL or the next checkpoint fsyncs it;
		// until then try again.
		w.fsync.Reset(syncInterval)
		return
	}
	w.unsynced = false
	w.fsyncs.Add(1)
}
