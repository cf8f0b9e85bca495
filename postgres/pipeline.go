package postgres

import (
	"context"

	"gatehouse/sqlstore"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pipeline is a transaction that sends its statements in as few round
// trips as their answers allow: BEGIN goes with the first statement, the
// writes held back by Later go with the next statement or with COMMIT, and
// nothing at all is sent for a transaction that sent nothing. A statement
// whose answer is read (Exec, Query, QueryRow) still waits for it, so the
// store's code reads every answer where it did; only what it holds back
// arrives later, and its error fails the statement it went with, or the
// commit, and so the transaction.
//
// A ledger batch of one hold and one settle is two round trips this way
// (the hold's insert and the settle's delete; the ledger rows, counters
// and lease with the commit), where BEGIN, six statements and COMMIT took
// seven (bench/README, "PostgreSQL's hot key, pipelined").
type pipeline struct {
	conn *pgxpool.Conn
	ctx  context.Context
	// held are the statements to send with the next one: BEGIN (and its
	// settings) until the first is sent, then Later's writes.
	held []held
	// begun is set once BEGIN has been sent.
	begun bool
	// wrote is set once anything but BEGIN and its settings was held or
	// sent: a transaction that did nothing commits nothing.
	wrote bool
	// implicit says a transaction that read nothing may go without BEGIN
	// and COMMIT: its isolation is READ COMMITTED, which a single
	// statement, or a pipeline of them, has anyway.
	implicit bool
}

type held struct {
	sql  string
	args []any
}

// begin statements of the engine's transactions, each a single statement
// (a pipeline's statements go by the extended protocol, one each).
var (
	beginSnapshot      = []string{"BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY"}
	beginSerializable  = []string{"BEGIN ISOLATION LEVEL SERIALIZABLE"}
	beginReadCommitted = []string{"BEGIN ISOLATION LEVEL READ COMMITTED"}
	// beginAsync is READ COMMITTED with synchronous_commit off: the commit
	// returns before PostgreSQL's WAL reaches the disk.
	beginAsync = []string{"BEGIN ISOLATION LEVEL READ COMMITTED", "SET LOCAL synchronous_commit = off"}
)

func newPipeline(ctx context.Context, conn *pgxpool.Conn, begin []string) *pipeline {
	p := &pipeline{conn: conn, ctx: ctx, implicit: begin[0] == beginReadCommitted[0]}
	for _, q := range begin {
		p.held = append(p.held, held{sql: q})
	}
	return p
}

// Later holds back a write whose only answer is its error.
func (p *pipeline) Later(_ context.Context, query string, args ...any) {
	p.held = append(p.held, held{rebind(query), args})
	p.wrote = true
}

// send sends the held statements and then query, and reads the held ones'
// answers: the results are left at query's.
func (p *pipeline) send(query string, args []any) (pgx.BatchResults, error) {
	b := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(p.held)+1)}
	for _, h := range p.held {
		b.Queue(h.sql, h.args...)
	}
	b.Queue(query, args...)
	n := len(p.held)
	p.held, p.begun, p.wrote = p.held[:0], true, true
	br := p.conn.SendBatch(p.ctx, b)
	for range n {
		if _, err := br.Exec(); err != nil {
			_ = br.Close()
			return nil, err
		}
	}
	return br, nil
}

// exec sends what is held and then query, and returns query's answer.
func (p *pipeline) exec(query string, args []any) (pgconn.CommandTag, error) {
	br, err := p.send(query, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.Exec()
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	return tag, err
}

func (p *pipeline) Exec(_ context.Context, query string, args ...any) (int64, error) {
	tag, err := p.exec(rebind(query), args)
	return tag.RowsAffected(), err
}

func (p *pipeline) Query(_ context.Context, query string, args ...any) (sqlstore.Rows, error) {
	br, err := p.send(rebind(query), args)
	if err != nil {
		return nil, err
	}
	rows, err := br.Query()
	if err != nil {
		_ = br.Close()
		return nil, err
	}
	return &batchRows{Rows: rows, br: br}, nil
}

func (p *pipeline) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	rows, err := p.Query(ctx, query, args...)
	if err != nil {
		return errRow{err}
	}
	return row{batchRow{rows.(*batchRows)}}
}

// commit sends what is held with COMMIT; a transaction that sent and held
// nothing but its BEGIN sends nothing. A READ COMMITTED transaction that
// sent nothing (it only wrote: a batch of the ledger's holds) sends its
// writes without BEGIN and COMMIT: the server runs the statements of a
// pipeline, up to its Sync, as one implicit transaction, which an error
// rolls back whole, and in which SET LOCAL holds (two statements fewer).
func (p *pipeline) commit() error {
	if !p.wrote {
		return nil
	}
	if p.implicit && !p.begun {
		last := p.held[len(p.held)-1]
		p.held = p.held[1 : len(p.held)-1] // without BEGIN
		_, err := p.exec(last.sql, last.args)
		return err
	}
	tag, err := p.exec("COMMIT", nil)
	if err == nil && tag.String() == "ROLLBACK" { // the transaction had failed
		err = pgx.ErrTxCommitRollback
	}
	return err
}

// rollback ends a transaction that failed, if the server has begun it (an
// implicit one has ended with its pipeline). A
// connection left in a transaction (the rollback failed too) is closed by
// the pool when released.
func (p *pipeline) rollback() {
	if !p.begun || p.conn.Conn().PgConn().TxStatus() == 'I' {
		return
	}
	_, _ = p.conn.Exec(context.WithoutCancel(p.ctx), "ROLLBACK")
}

// batchRows are a query's rows at the end of a batch: closing them
// closes the batch.
type batchRows struct {
	pgx.Rows
	br     pgx.BatchResults
	closed bool
	err    error
}

func (r *batchRows) Next() bool {
	if r.Rows.Next() {
		return true
	}
	r.Close()
	return false
}

func (r *batchRows) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.Rows.Close()
	r.err = r.Rows.Err()
	if err := r.br.Close(); r.err == nil {
		r.err = err
	}
}

func (r *batchRows) Err() error {
	if r.closed {
		return r.err
	}
	return r.Rows.Err()
}

// batchRow is QueryRow's row of a batch: the first row of its rows.
type batchRow struct{ rows *batchRows }

func (r batchRow) Scan(dest ...any) error {
	found := r.rows.Next()
	var err error
	if found {
		err = r.rows.Scan(dest...)
	}
	r.rows.Close()
	if err == nil {
		err = r.rows.Err()
	}
	if err == nil && !found {
		err = pgx.ErrNoRows
	}
	return err
}

// errRow is a row whose query failed.
type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

var _ sqlstore.Later = (*pipeline)(nil)
