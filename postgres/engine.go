package postgres

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"

	"gatehouse/sqlstore"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// engine runs the store's work on PostgreSQL: reads in REPEATABLE READ
// snapshots or on the pool, writes in SERIALIZABLE transactions retried on
// conflict, and the metering writes in READ COMMITTED with row locks.
type engine struct{ db *DB }

func (e engine) View(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.run(ctx, beginSnapshot, fn)
}

// Read runs fn on the pool outside a transaction, each of its statements
// its own snapshot: the hottest reads save the BEGIN and COMMIT round trips.
func (e engine) Read(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	ctx, cancel := e.db.bound(ctx)
	defer cancel()
	return mapErr(fn(querier{e.db.pool, ctx}))
}

func (e engine) Update(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.run(ctx, beginSerializable, fn)
}

// Lock runs fn in READ COMMITTED: the metering transactions lock the rows
// they change (SELECT ... FOR UPDATE), so concurrent requests on one key
// queue on its row instead of failing serialization and retrying.
func (e engine) Lock(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.run(ctx, beginReadCommitted, fn)
}

// LockAsync is Lock with synchronous_commit off: the commit returns before
// PostgreSQL's WAL reaches the disk. A crash of Gatehouse cannot undo it;
// a crash of the database server may lose up to three times its
// wal_writer_delay of such commits.
func (e engine) LockAsync(ctx context.Context, fn func(q sqlstore.Querier) error) error {
	return e.db.run(ctx, beginAsync, fn)
}

func (engine) Dialect() sqlstore.Dialect { return dialect{} }

// dialect is PostgreSQL's SQL.
type dialect struct{}

// ForUpdate locks rows with FOR NO KEY UPDATE: it serializes admissions
// and counter updates of a key as FOR UPDATE would, but not the inserts of
// reservations that refer to the key (their foreign key check takes FOR
// KEY SHARE, which FOR UPDATE would block): another instance's ledger
// writing holds of a hot key no longer waits for this one's commit. A
// delete of the row still waits (it takes FOR UPDATE).
func (dialect) ForUpdate() string { return " FOR NO KEY UPDATE" }

// FoldedKeyName is lower() under the "C" collation, which folds ASCII
// letters only (the database's own collation may fold more) and orders by
// bytes.
func (dialect) FoldedKeyName() string { return `lower(name COLLATE "C")` }

// In passes a list as one array parameter: one statement text whatever
// the list's length.
func (dialect) In(column string, values []string) (string, []any) {
	return column + ` = ANY(?)`, []any{values}
}

func (dialect) IsUnique(err error) bool     { return pgCode(err) == "23505" }
func (dialect) IsForeignKey(err error) bool { return pgCode(err) == "23503" }

// Catalog reads the tables of the current schema, in the order they were
// created, leaving out generated columns: they cannot be written.
// The tables that triggers keep from the others (list counts, the keys'
// anchors and blocks) are left out: the target's triggers fill them.
func (dialect) Catalog() string {
	return `SELECT c.relname::text, a.columns, coalesce(a.booleans, ''), coalesce(k.parents, '') FROM pg_class c
		CROSS JOIN LATERAL (SELECT string_agg(attname::text, ',' ORDER BY attnum) AS columns,
				string_agg(attname::text, ',') FILTER (WHERE atttypid = 'boolean'::regtype) AS booleans
			FROM pg_attribute WHERE attrelid = c.oid AND attnum > 0 AND NOT attisdropped AND attgenerated = '') a
		CROSS JOIN LATERAL (SELECT string_agg(DISTINCT p.relname::text, ',') AS parents
			FROM pg_constraint f JOIN pg_class p ON p.oid = f.confrelid WHERE f.conrelid = c.oid AND f.contype = 'f') k
		WHERE c.relnamespace = current_schema()::regnamespace AND c.relkind IN ('r', 'p') AND c.relname NOT IN ('schema_migrations', 'list_counts', 'list_bases', 'list_anchors', 'list_blocks')
		ORDER BY c.oid`
}

// AfterCopy moves the sequence of every identity (or serial) column past
// the largest value of the column, so that the next row inserted without
// an id does not collide with a copied one.
// BeforeAdmission keeps the planner off bitmap scans while a batch of
// admissions sums what is held against its keys. Every request inserts a
// reservation and deletes it, so until autovacuum passes, a hot key's
// entries in reservations_key are mostly dead: a bitmap scan visits every
// one's heap page each time (22,696 dead entries, 820 pages: 4.6 ms per
// admission, measured after 30 s of 32 clients on one key), where an index
// scan marks them dead on its first pass and skips them after (0.5 ms).
func (dialect) BeforeAdmission() string { return "SET LOCAL enable_bitmapscan = off" }

func (dialect) DeletesInWith() bool { return true }

func (dialect) AfterCopy() string {
	return `DO $$ DECLARE c record; BEGIN
		FOR c IN SELECT table_name, column_name FROM information_schema.columns
			WHERE table_schema = current_schema() AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')
		LOOP
			EXECUTE format('SELECT setval(pg_get_serial_sequence(%L, %L), COALESCE(MAX(%I), 0) + 1, false) FROM %I',
				quote_ident(c.table_name), c.column_name, c.column_name, c.table_name);
		END LOOP;
	END $$`
}

func pgCode(err error) string {
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		return pe.Code
	}
	return ""
}

// pgRunner runs statements: a transaction, or the pool.
type pgRunner interface {
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// querier adapts pgx to the store's Querier, numbering its parameters.
// Its statements run with the operation's context, which the engine bounds
// by the operation timeout: the statements' own are the operation's too,
// unbounded.
type querier struct {
	r   pgRunner
	ctx context.Context
}

func (q querier) Exec(_ context.Context, query string, args ...any) (int64, error) {
	tag, err := q.r.Exec(q.ctx, rebind(query), args...)
	return tag.RowsAffected(), err
}

func (q querier) Query(_ context.Context, query string, args ...any) (sqlstore.Rows, error) {
	return q.r.Query(q.ctx, rebind(query), args...)
}

func (q querier) QueryRow(_ context.Context, query string, args ...any) sqlstore.Row {
	return row{q.r.QueryRow(q.ctx, rebind(query), args...)}
}

// row reports no row as sqlstore.ErrNoRows, as database/sql does.
type row struct{ pgx.Row }

func (r row) Scan(dest ...any) error {
	err := r.Row.Scan(dest...)
	if errors.Is(err, pgx.ErrNoRows) {
		return sqlstore.ErrNoRows
	}
	return err
}

// rebound caches the $n form of each query text: the store's queries are
// a fixed set (lists are one parameter), so it stays small.
var rebound sync.Map

// rebind numbers the ? placeholders of a query: $1, $2, ... The store's
// SQL has no ? anywhere else.
func rebind(query string) string {
	if q, ok := rebound.Load(query); ok {
		return q.(string)
	}
	var b strings.Builder
	n := 0
	for i := 0; i < len(query); i++ {
		if query[i] == '?' {
			n++
			b.WriteByte('$')
			b.WriteString(strconv.Itoa(n))
			continue
		}
		b.WriteByte(query[i])
	}
	out := b.String()
	rebound.Store(query, out)
	return out
}
