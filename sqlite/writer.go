package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"runtime/debug"
	"sync"

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

// maxBatch bounds the operations committed together.
const maxBatch = 64

// writeOp is one write operation waiting for the writer.
type writeOp struct {
	ctx  context.Context
	fn   func(q sqlstore.Querier) error
	done chan error
}

// writer serializes write operations into group-committed transactions.
type writer struct {
	db     *DB
	ops    chan *writeOp
	stop   chan struct{}
	closed sync.WaitGroup
	once   sync.Once
}

func newWriter(db *DB) *writer {
	w := &writer{db: db, ops: make(chan *writeOp), stop: make(chan struct{})}
	w.closed.Add(1)
	go w.loop()
	return w
}

var errStoreClosed = errors.New("sqlite: the store is closed")

// do runs fn as one write operation and returns once it is committed (or
// has failed). Cancelling ctx before the operation starts abandons it; once
// started it runs to the end, because interrupting a statement in SQLite
// would roll back the whole shared transaction.
func (w *writer) do(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case w.ops <- op:
	case <-ctx.Done():
		return ctx.Err()
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
		case <-w.stop:
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

// commit runs a batch in one transaction and reports to every operation.
func (w *writer) commit(batch []*writeOp) {
	results := make([]error, len(batch))
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
	}
	for i, op := range batch {
		op.done <- mapErr(results[i])
	}
}

// run runs one operation inside its savepoint.
func (w *writer) run(sqlTx *sql.Tx, op *writeOp) (err error) {
	ctx := context.Background()
	if _, err := sqlTx.ExecContext(ctx, `SAVEPOINT op`); err != nil {
		return err
	}
	defer func() {
		if v := recover(); v != nil {
			err = fmt.Errorf("sqlite: write operation panicked: %v\n%s", v, debug.Stack())
		}
		if err != nil {
			if _, rerr := sqlTx.ExecContext(ctx, `ROLLBACK TO op`); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
		if _, rerr := sqlTx.ExecContext(ctx, `RELEASE op`); rerr != nil && err == nil {
			err = rerr
		}
	}()
	return op.fn(querier{uninterrupted{sqlTx}})
}
