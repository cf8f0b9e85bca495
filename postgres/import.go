package postgres

import (
	"context"
	"fmt"
	"iter"

	"gatehouse/sqlstore"

	"github.com/jackc/pgx/v5"
)

var _ sqlstore.Importer = (*DB)(nil)

// Import calls fn with one SERIALIZABLE transaction, for sqlstore.Copy,
// and commits it if fn returns nil, once every identity sequence is past
// the largest id copied. Serializable, so that an instance writing the
// same tables meanwhile makes the commit fail rather than mix its rows
// with the copy. No operation timeout: a copy takes as long as it takes.
func (db *DB) Import(ctx context.Context, fn func(sqlstore.Target) error) error {
	tx, err := db.pool.BeginTx(ctx, pgx.TxOptions{IsoLevel: pgx.Serializable})
	if err != nil {
		return fmt.Errorf("postgres: import: %w", err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	target := &importTx{tx: tx}
	if err := fn(target); err != nil {
		return err
	}
	if err := target.continueIdentities(ctx); err != nil {
		return fmt.Errorf("postgres: import: move identity sequences past the copied ids: %w", err)
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("postgres: import: commit: %w", err)
	}
	return nil
}

// importTx is a sqlstore.Target on a transaction. It reads the schema from
// the catalog once.
type importTx struct {
	tx     pgx.Tx
	tables []sqlstore.Table
	// boolean holds the boolean columns of each table.
	boolean map[string]map[string]bool
}

// Tables reads the tables of the current schema with their columns (the
// generated ones left out: they cannot be written) and foreign keys.
func (t *importTx) Tables(ctx context.Context) ([]sqlstore.Table, error) {
	if t.tables != nil {
		return t.tables, nil
	}
	tables, boolean, err := t.columns(ctx)
	if err != nil {
		return nil, err
	}
	if err := t.addReferences(ctx, tables); err != nil {
		return nil, err
	}
	t.tables, t.boolean = tables, boolean
	return tables, nil
}

// columns returns the tables with their columns, and which are boolean.
func (t *importTx) columns(ctx context.Context) ([]sqlstore.Table, map[string]map[string]bool, error) {
	rows, err := t.tx.Query(ctx, `SELECT c.table_name::text, c.column_name::text, c.data_type = 'boolean'
		FROM information_schema.columns c JOIN information_schema.tables t USING (table_schema, table_name)
		WHERE c.table_schema = current_schema() AND t.table_type = 'BASE TABLE'
			AND c.table_name <> 'schema_migrations' AND c.is_generated = 'NEVER'
		ORDER BY c.table_name, c.ordinal_position`)
	if err != nil {
		return nil, nil, err
	}
	var tables []sqlstore.Table
	boolean := map[string]map[string]bool{}
	var table, column string
	var isBool bool
	_, err = pgx.ForEachRow(rows, []any{&table, &column, &isBool}, func() error {
		if len(tables) == 0 || tables[len(tables)-1].Name != table {
			tables = append(tables, sqlstore.Table{Name: table})
			boolean[table] = map[string]bool{}
		}
		tables[len(tables)-1].Columns = append(tables[len(tables)-1].Columns, column)
		boolean[table][column] = isBool
		return nil
	})
	return tables, boolean, err
}

// addReferences sets the tables each table's foreign keys refer to.
func (t *importTx) addReferences(ctx context.Context, tables []sqlstore.Table) error {
	rows, err := t.tx.Query(ctx, `SELECT DISTINCT child.relname::text, parent.relname::text
		FROM pg_constraint k
		JOIN pg_class child ON child.oid = k.conrelid
		JOIN pg_class parent ON parent.oid = k.confrelid
		WHERE k.contype = 'f' AND child.relnamespace = current_schema()::regnamespace`)
	if err != nil {
		return err
	}
	index := map[string]int{}
	for i, tb := range tables {
		index[tb.Name] = i
	}
	var child, parent string
	_, err = pgx.ForEachRow(rows, []any{&child, &parent}, func() error {
		if i, ok := index[child]; ok {
			tables[i].References = append(tables[i].References, parent)
		}
		return nil
	})
	return err
}

// Empty reports whether a table holds no row.
func (t *importTx) Empty(ctx context.Context, table string) (bool, error) {
	var exists bool
	err := t.tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+pgx.Identifier{table}.Sanitize()+`)`).Scan(&exists)
	return !exists, err
}

// Insert writes the rows with COPY, turning the integers that SQLite keeps
// for booleans into booleans.
func (t *importTx) Insert(ctx context.Context, table string, columns []string, rows iter.Seq2[[]any, error]) (int64, error) {
	if _, err := t.Tables(ctx); err != nil {
		return 0, err
	}
	boolean := make([]bool, len(columns))
	for i, c := range columns {
		boolean[i] = t.boolean[table][c]
	}
	next, stop := iter.Pull2(rows)
	defer stop()
	src := pgx.CopyFromFunc(func() ([]any, error) {
		row, err, ok := next()
		if !ok || err != nil {
			return nil, err
		}
		for i, v := range row {
			if n, isInt := v.(int64); isInt && boolean[i] {
				row[i] = n != 0
			}
		}
		return row, nil
	})
	return t.tx.CopyFrom(ctx, pgx.Identifier{table}, columns, src)
}

// continueIdentities moves the sequence of every identity (or serial)
// column past the largest value of the column, so that the next row
// inserted without an id does not collide with a copied one.
func (t *importTx) continueIdentities(ctx context.Context) error {
	rows, err := t.tx.Query(ctx, `SELECT table_name::text, column_name::text FROM information_schema.columns
		WHERE table_schema = current_schema() AND (is_identity = 'YES' OR column_default LIKE 'nextval(%')`)
	if err != nil {
		return err
	}
	var identities [][2]string
	var table, column string
	if _, err := pgx.ForEachRow(rows, []any{&table, &column}, func() error {
		identities = append(identities, [2]string{table, column})
		return nil
	}); err != nil {
		return err
	}
	for _, c := range identities {
		table, column := pgx.Identifier{c[0]}.Sanitize(), pgx.Identifier{c[1]}.Sanitize()
		if _, err := t.tx.Exec(ctx, `SELECT setval(pg_get_serial_sequence($1, $2), COALESCE(MAX(`+column+`), 0) + 1, false) FROM `+table,
			table, c[1]); err != nil {
			return fmt.Errorf("%s.%s: %w", c[0], c[1], err)
		}
	}
	return nil
}
