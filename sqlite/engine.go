package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"gatehouse/sqlstore"

	sqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

// engine runs the store's work on SQLite: reads on the pool of read-only
// connections with prepared statements, writes through the group-committing
// writer. A locking write is a write: there is one writer.
type engine struct{ db *DB }

func (e engine) View(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	ctx, cancel := e.db.boundRead(ctx)
	defer cancel()
	sqlTx, err := e.db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return mapErr(err)
	}
	defer sqlTx.Rollback() // read-only: ending it either way is the same
	return mapErr(fn(boundQuerier{querier{preparedQuerier{cache: e.db.stmts, tx: sqlTx}}, ctx}))
}

// Read runs fn on the read pool without an explicit transaction: one
// statement is its own snapshot, and it saves the BEGIN and COMMIT round
// trips on the hottest reads (a key, a guardrail).
func (e engine) Read(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	ctx, cancel := e.db.boundRead(ctx)
	defer cancel()
	return mapErr(fn(boundQuerier{querier{preparedQuerier{cache: e.db.stmts}}, ctx}))
}

func (e engine) Update(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.writer.do(ctx, false, fn)
}

func (e engine) Lock(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.writer.do(ctx, false, fn)
}

// LockAsync is a write acknowledged once it is in the WAL, fsynced within
// syncInterval (see writer.go).
func (e engine) LockAsync(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.writer.do(ctx, true, fn)
}

// Flush returns once every commit acknowledged before it, LockAsync's
// included, is on disk.
func (e engine) Flush(ctx context.Context) error { return e.db.writer.flush(ctx) }

func (engine) Dialect() sqlstore.Dialect { return dialect{} }

// dialect is SQLite's SQL.
type dialect struct{}

func (dialect) ForUpdate() string { return "" } // one writer: the rows are its alone

// FoldedKeyName is the virtual column lower(name): lower() folds ASCII
// letters only, and names compare as bytes (BINARY).
func (dialect) FoldedKeyName() string { return `name_folded` }

func (dialect) In(column string, values []string) (string, []any) {
	args := make([]any, len(values))
	for i, v := range values {
		args[i] = v
	}
	return column + ` IN (` + strings.TrimSuffix(strings.Repeat("?, ", len(values)), ", ") + `)`, args
}

func (dialect) IsUnique(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && (se.Code() == sqlite3.SQLITE_CONSTRAINT_UNIQUE || se.Code() == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY)
}

func (dialect) IsForeignKey(err error) bool {
	var se *sqlite.Error
	return errors.As(err, &se) && se.Code() == sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY
}

// Catalog reads the tables from sqlite_schema, in the order they were
// created. SQLite keeps booleans as integers: no column is boolean.
// The tables that triggers keep from the others (list counts, the keys'
// anchors and blocks) are left out: the target's triggers fill them.
func (dialect) Catalog() string {
	return `SELECT t.name, (SELECT group_concat(name, ',' ORDER BY cid) FROM pragma_table_info(t.name)), '',
			(SELECT coalesce(group_concat(DISTINCT "table"), '') FROM pragma_foreign_key_list(t.name))
		FROM sqlite_schema t
		WHERE t.type = 'table' AND t.name NOT LIKE 'sqlite\_%' ESCAPE '\' AND t.name NOT IN ('schema_migrations', 'list_counts', 'list_bases', 'list_anchors', 'list_blocks')
		ORDER BY t.rowid`
}

// AfterCopy is nothing: an AUTOINCREMENT column's sequence follows the ids
// inserted into it.
func (dialect) AfterCopy() string { return "" }

func (dialect) BeforeAdmission() string { return "" }

// DeletesInWith is false: SQLite's WITH clauses hold no DELETE.
func (dialect) DeletesInWith() bool { return false }

// sqlRunner is what a querier runs statements on: *sql.Tx, *sql.DB, or a
// preparedQuerier.
type sqlRunner interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// querier adapts database/sql to the store's Querier.
type querier struct{ r sqlRunner }

func (q querier) Exec(ctx context.Context, query string, args ...any) (int64, error) {
	res, err := q.r.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

func (q querier) Query(ctx context.Context, query string, args ...any) (sqlstore.Rows, error) {
	rows, err := q.r.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	return sqlRows{rows}, nil
}

func (q querier) QueryRow(ctx context.Context, query string, args ...any) sqlstore.Row {
	return q.r.QueryRowContext(ctx, query, args...)
}

type sqlRows struct{ *sql.Rows }

func (r sqlRows) Close() { _ = r.Rows.Close() }

// uninterrupted runs the statements of a write operation, prepared through
// the writer's statement cache: cancelling its context does not interrupt
// them (see writer.do); its deadline and values still apply.
type uninterrupted struct{ p preparedQuerier }

func (u uninterrupted) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	return u.p.ExecContext(context.WithoutCancel(ctx), query, args...)
}

func (u uninterrupted) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	return u.p.QueryContext(context.WithoutCancel(ctx), query, args...)
}

func (u uninterrupted) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	return u.p.QueryRowContext(context.WithoutCancel(ctx), query, args...)
}

// boundQuerier runs every statement under the context of its operation
// (bounded by the read timeout), whatever context the store passes: a
// statement past the operation's deadline is interrupted.
type boundQuerier struct {
	q   sqlstore.Querier
	ctx context.Context
}

func (b boundQuerier) Exec(_ context.Context, query string, args ...any) (int64, error) {
	return b.q.Exec(b.ctx, query, args...)
}

func (b boundQuerier) Query(_ context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return b.q.Query(b.ctx, query, args...)
}

func (b boundQuerier) QueryRow(_ context.Context, query string, args ...any) sqlstore.Row {
	return b.q.QueryRow(b.ctx, query, args...)
}
