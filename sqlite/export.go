package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"iter"
	"strings"

	"gatehouse/sqlstore"
)

var _ sqlstore.Exporter = (*DB)(nil)

// Export calls fn with a read-only snapshot of the database, for
// sqlstore.Copy: one read transaction, so the rows of every table are of
// the same instant even while a server writes.
func (db *DB) Export(ctx context.Context, fn func(sqlstore.Source) error) error {
	tx, err := db.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return fmt.Errorf("sqlite: export: %w", err)
	}
	defer tx.Rollback()
	return fn(exportTx{tx})
}

// exportTx is a sqlstore.Source on a read transaction.
type exportTx struct{ tx *sql.Tx }

// Tables reads the schema from sqlite_schema, in the order the tables were
// created, with the columns and the foreign keys of each.
func (e exportTx) Tables(ctx context.Context) ([]sqlstore.Table, error) {
	names, err := e.names(ctx, `SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite\_%' ESCAPE '\' AND name <> 'schema_migrations'
		ORDER BY rowid`)
	if err != nil {
		return nil, err
	}
	tables := make([]sqlstore.Table, len(names))
	for i, name := range names {
		t := sqlstore.Table{Name: name}
		if t.Columns, err = e.names(ctx, `SELECT name FROM pragma_table_info(?) ORDER BY cid`, name); err != nil {
			return nil, fmt.Errorf("columns of %s: %w", name, err)
		}
		if t.References, err = e.names(ctx, `SELECT DISTINCT "table" FROM pragma_foreign_key_list(?)`, name); err != nil {
			return nil, fmt.Errorf("foreign keys of %s: %w", name, err)
		}
		tables[i] = t
	}
	return tables, nil
}

// names runs a query of one text column.
func (e exportTx) names(ctx context.Context, query string, args ...any) ([]string, error) {
	rows, err := e.tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, rows.Err()
}

// Rows yields the rows of a table as the driver reads them: int64 for
// integers (booleans included), float64, string, []byte or nil.
func (e exportTx) Rows(ctx context.Context, table string, columns []string) iter.Seq2[[]any, error] {
	quoted := make([]string, len(columns))
	for i, c := range columns {
		quoted[i] = quoteIdent(c)
	}
	query := "SELECT " + strings.Join(quoted, ", ") + " FROM " + quoteIdent(table)
	return func(yield func([]any, error) bool) {
		rows, err := e.tx.QueryContext(ctx, query)
		if err != nil {
			yield(nil, err)
			return
		}
		defer rows.Close()
		for rows.Next() {
			row := make([]any, len(columns))
			ptrs := make([]any, len(columns))
			for i := range row {
				ptrs[i] = &row[i]
			}
			if err := rows.Scan(ptrs...); err != nil {
				yield(nil, err)
				return
			}
			if !yield(row, nil) {
				return
			}
		}
		if err := rows.Err(); err != nil {
			yield(nil, err)
		}
	}
}

// quoteIdent quotes a table or column name for SQL.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}
