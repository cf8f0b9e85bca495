package seed

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5"
	_ "modernc.org/sqlite" // the driver of the bulk connection to a SQLite file

	"gatehouse/sqlstore"
)

// bulkWriter writes seeded rows fast.
type bulkWriter interface {
	// insert writes the rows of t and returns how many; progress is called
	// now and then with the count so far.
	insert(ctx context.Context, t table, progress func(done int)) (int, error)
	// finish makes the rows durable and the database ready to serve.
	finish(ctx context.Context) error
	// dropIndexes drops the indexes of a table but those of its
	// constraints, and returns their definitions.
	dropIndexes(ctx context.Context, table string) ([]index, error)
	// exec runs a statement.
	exec(ctx context.Context, statement string) error
	close()
}

// index is an index (or a trigger: kind) and the statement that creates
// it.
type index struct{ kind, name, definition string }

// dropAll drops, with exec, the indexes that rows lists, and returns them.
func dropAll(ctx context.Context, rows func() ([]index, error), exec func(ctx context.Context, statement string) error) ([]index, error) {
	indexes, err := rows()
	if err != nil {
		return nil, err
	}
	for _, ix := range indexes {
		kind := ix.kind
		if kind == "" {
			kind = "INDEX"
		}
		if err := exec(ctx, `DROP `+kind+` `+ix.name); err != nil {
			return nil, err
		}
	}
	return indexes, nil
}

const progressEvery = 250_000

// openBulk opens the database for bulk writing.
func openBulk(ctx context.Context, databaseURL string) (bulkWriter, error) {
	if strings.HasPrefix(databaseURL, "postgres://") || strings.HasPrefix(databaseURL, "postgresql://") {
		conn, err := pgx.Connect(ctx, databaseURL)
		if err != nil {
			return nil, fmt.Errorf("connect to %s: %w", redact(databaseURL), err)
		}
		return &pgBulk{conn: conn}, nil
	}
	// One connection, no fsync until the end and no foreign key checks:
	// the rows are consistent by construction, and the seed test checks
	// them with PRAGMA foreign_key_check.
	q := url.Values{}
	q.Add("_pragma", "busy_timeout(10000)")
	q.Add("_pragma", "foreign_keys(0)")
	q.Add("_pragma", "synchronous(OFF)")
	q.Add("_pragma", "cache_size(-262144)") // 256 MiB
	db, err := sql.Open("sqlite", "file:"+databaseURL+"?"+q.Encode())
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	return &sqliteBulk{db: db}, nil
}

// sqliteBulk writes multi-row INSERTs, many rows to a statement and many
// statements to a transaction.
type sqliteBulk struct{ db *sql.DB }

const (
	sqliteMaxVars  = 32766 // SQLITE_MAX_VARIABLE_NUMBER
	sqliteTxRows   = 200_000
	sqliteStmtRows = 500
)

func (b *sqliteBulk) insert(ctx context.Context, t table, progress func(int)) (int, error) {
	perStmt := min(sqliteStmtRows, sqliteMaxVars/len(t.cols))
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	full, err := tx.PrepareContext(ctx, insertSQL(t, perStmt))
	if err != nil {
		return 0, err
	}
	args := make([]any, 0, perStmt*len(t.cols))
	row := make([]any, len(t.cols))
	done, inTx := 0, 0
	flush := func(stmt *sql.Stmt, rows int) error {
		if _, err := stmt.ExecContext(ctx, args...); err != nil {
			return err
		}
		args, done, inTx = args[:0], done+rows, inTx+rows
		if done%progressEvery < rows {
			progress(done)
		}
		if inTx < sqliteTxRows {
			return nil
		}
		// A new transaction keeps the WAL from growing without bound.
		if err := tx.Commit(); err != nil {
			return err
		}
		if tx, err = b.db.BeginTx(ctx, nil); err != nil {
			return err
		}
		full, err = tx.PrepareContext(ctx, insertSQL(t, perStmt))
		inTx = 0
		return err
	}
	for i := range t.n {
		if !t.row(i, row) {
			continue
		}
		args = append(args, row...)
		if len(args) == cap(args) {
			if err := flush(full, perStmt); err != nil {
				return done, err
			}
		}
	}
	if rest := len(args) / len(t.cols); rest > 0 {
		last, err := tx.PrepareContext(ctx, insertSQL(t, rest))
		if err != nil {
			return done, err
		}
		if err := flush(last, rest); err != nil {
			return done, err
		}
	}
	return done, tx.Commit()
}

// insertSQL returns an INSERT of rows rows of t.
func insertSQL(t table, rows int) string {
	one := "(" + strings.TrimSuffix(strings.Repeat("?, ", len(t.cols)), ", ") + ")"
	return "INSERT INTO " + t.name + " (" + strings.Join(t.cols, ", ") + ") VALUES " +
		strings.TrimSuffix(strings.Repeat(one+", ", rows), ", ")
}

// recountLists counts again the lists whose counts triggers keep (every
// list of list_bases: migrations 0031, 0051 and 0054), whose triggers
// dropIndexes dropped while their tables were filled (a fresh
// organization's key_list_version needs no change: no page of it was
// read).
const recountLists = `DELETE FROM list_counts WHERE list <> 'key_list_version';
INSERT INTO list_counts SELECT list, scope, 0, count(*) FROM list_rows WHERE list IN (SELECT list FROM list_bases) GROUP BY list, scope;`

func (b *sqliteBulk) finish(ctx context.Context) error {
	if _, err := b.db.ExecContext(ctx, recountLists); err != nil {
		return err
	}
	// The anchors and blocks of the long lists (migration 0052), which the
	// triggers would have kept no better: they place no anchors.
	if _, err := b.db.ExecContext(ctx, sqlstore.RebuildListBlocks); err != nil {
		return err
	}
	_, err := b.db.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)")
	return err
}

func (b *sqliteBulk) close() { b.db.Close() }

func (b *sqliteBulk) exec(ctx context.Context, statement string) error {
	_, err := b.db.ExecContext(ctx, statement)
	return err
}

// dropIndexes drops the indexes that have a definition of their own (not
// those SQLite makes for a table's constraints), and the table's triggers:
// each runs once a row (migrations 0030 and 0031 keep versions and counts),
// which finish makes good for the whole table (recountLists).
func (b *sqliteBulk) dropIndexes(ctx context.Context, table string) ([]index, error) {
	return dropAll(ctx, func() ([]index, error) {
		rows, err := b.db.QueryContext(ctx, `SELECT upper(type), name, sql FROM sqlite_schema
			WHERE type IN ('index', 'trigger') AND tbl_name = ? AND sql IS NOT NULL ORDER BY type, name`, table)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		var out []index
		for rows.Next() {
			var ix index
			if err := rows.Scan(&ix.kind, &ix.name, &ix.definition); err != nil {
				return nil, err
			}
			out = append(out, ix)
		}
		return out, rows.Err()
	}, b.exec)
}

// pgBulk writes with COPY, one table at a time.
type pgBulk struct{ conn *pgx.Conn }

func (b *pgBulk) insert(ctx context.Context, t table, progress func(int)) (int, error) {
	row := make([]any, len(t.cols))
	i, done := 0, 0
	src := pgx.CopyFromFunc(func() ([]any, error) {
		for ; i < t.n; i++ {
			if t.row(i, row) {
				i++
				if done++; done%progressEvery == 0 {
					progress(done)
				}
				return row, nil
			}
		}
		return nil, nil
	})
	n, err := b.conn.CopyFrom(ctx, pgx.Identifier{t.name}, t.cols, src)
	return int(n), err
}

// finish gathers the planner's statistics, as autovacuum would soon after
// such inserts, so that the benchmarks run on the plans of a settled
// database.
// finish vacuums what it wrote, as autovacuum would soon: the visibility
// map then tells the index-only scans of the lists (migration 0030) that
// they need not read the table for the rows they skip; and analyzes it.
func (b *pgBulk) finish(ctx context.Context) error {
	// The anchors and blocks of the long lists (migration 0052), which the
	// triggers would have kept no better: they place no anchors.
	if _, err := b.conn.Exec(ctx, sqlstore.RebuildListBlocks); err != nil {
		return err
	}
	_, err := b.conn.Exec(ctx, "VACUUM ANALYZE")
	return err
}

func (b *pgBulk) close() { b.conn.Close(context.Background()) }

func (b *pgBulk) exec(ctx context.Context, statement string) error {
	_, err := b.conn.Exec(ctx, statement)
	return err
}

// dropIndexes drops the indexes that no constraint owns.
func (b *pgBulk) dropIndexes(ctx context.Context, table string) ([]index, error) {
	return dropAll(ctx, func() ([]index, error) {
		rows, err := b.conn.Query(ctx, `SELECT indexname, indexdef FROM pg_indexes
			WHERE schemaname = current_schema() AND tablename = $1
				AND indexname NOT IN (SELECT conname FROM pg_constraint WHERE conrelid = $1::regclass)
			ORDER BY indexname`, table)
		if err != nil {
			return nil, err
		}
		return pgx.CollectRows(rows, func(r pgx.CollectableRow) (index, error) {
			var ix index
			return ix, r.Scan(&ix.name, &ix.definition)
		})
	}, b.exec)
}

// redact hides the password of a database URL.
func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}
