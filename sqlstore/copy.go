package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// table is a table of a database's schema, as its engine's catalog has it:
// its columns in the schema's order, those of type boolean (into which a
// copy writes SQLite's 0 and 1 as booleans), and the tables its foreign
// keys refer to.
type table struct {
	name                       string
	columns, booleans, parents []string
}

// Copied is how many rows of a table were copied.
type Copied struct {
	Table string
	Rows  int64
}

// ErrNotEmpty is returned by Copy when the target already holds rows.
var ErrNotEmpty = errors.New("the target database already holds data; migrate into an empty database")

// Copy copies every row of every table from one store into another, which
// must be empty (`gatehouse migrate-data`): from one snapshot of the source
// (View) in one write of the target (Update), parents before children so
// that foreign keys hold at every row, in plain SELECTs and INSERTs; then
// it runs the target's Dialect.AfterCopy. The schemas, as the engines'
// catalogs have them (Dialect.Catalog), must have the same tables with the
// same columns; the error names every difference. It returns the tables in
// the order they were copied.
func Copy(ctx context.Context, from, to *Store) ([]Copied, error) {
	return view(ctx, from, func(src *Tx) ([]Copied, error) {
		return update(ctx, to, func(dst *Tx) ([]Copied, error) { return copyAll(ctx, src, dst) })
	})
}

func copyAll(ctx context.Context, src, dst *Tx) ([]Copied, error) {
	from, err := catalog(ctx, src, "source")
	if err != nil {
		return nil, err
	}
	to, err := catalog(ctx, dst, "target")
	if err != nil {
		return nil, err
	}
	if err := compareSchemas(from, to); err != nil {
		return nil, err
	}
	tables, err := parentsFirst(from, to)
	if err != nil {
		return nil, err
	}
	if err := checkEmpty(ctx, dst, tables); err != nil {
		return nil, err
	}
	out := make([]Copied, 0, len(tables))
	for _, t := range tables {
		n, err := copyTable(ctx, src, dst, t)
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.name, err)
		}
		out = append(out, Copied{Table: t.name, Rows: n})
	}
	if stmt := dst.d.AfterCopy(); stmt != "" {
		if _, err := dst.Exec(ctx, stmt); err != nil {
			return nil, fmt.Errorf("make the target continue from the copied rows: %w", err)
		}
	}
	return out, nil
}

// catalog reads the tables of the source or target database with the
// query of its Dialect.
func catalog(ctx context.Context, tx *Tx, side string) (_ []table, err error) {
	defer wrap(&err, "read the schema of the "+side)
	rows, err := tx.Query(ctx, tx.d.Catalog())
	return collect(rows, err, func(s Scanner) (table, error) {
		var name, columns, booleans, parents string
		err := s.Scan(&name, &columns, &booleans, &parents)
		return table{name, splitNames(columns), splitNames(booleans), splitNames(parents)}, err
	})
}

// splitNames splits a list of names separated by commas.
func splitNames(s string) []string {
	return strings.FieldsFunc(s, func(r rune) bool { return r == ',' })
}

// checkEmpty refuses a target that holds any row.
func checkEmpty(ctx context.Context, dst *Tx, tables []table) error {
	for _, t := range tables {
		var full bool
		if err := dst.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+quoteIdent(t.name)+`)`).Scan(&full); err != nil {
			return fmt.Errorf("count the rows of %s in the target: %w", t.name, err)
		}
		if full {
			return fmt.Errorf("%w (table %s has rows)", ErrNotEmpty, t.name)
		}
	}
	return nil
}

// batchValues bounds the values of one INSERT: a few hundred rows, well
// within the parameters a statement may have (SQLite 32,766, PostgreSQL
// 65,535).
var batchValues = 8192 // a variable for the tests

// copyTable reads every row of a table from src and writes it into dst, in
// INSERTs of many rows, turning integers into booleans for t.booleans.
func copyTable(ctx context.Context, src, dst *Tx, t table) (int64, error) {
	width := len(t.columns)
	names := make([]string, width)
	for i, c := range t.columns {
		names[i] = quoteIdent(c)
	}
	columns := strings.Join(names, ", ")
	rows, err := src.Query(ctx, `SELECT `+columns+` FROM `+quoteIdent(t.name))
	if err != nil {
		return 0, err
	}
	defer rows.Close()
	var copied int64
	batch := make([]any, 0, max(1, batchValues/width)*width)
	values, dest := make([]any, width), make([]any, width)
	for i := range values {
		dest[i] = &values[i]
	}
	for {
		more := rows.Next()
		if more {
			if err := rows.Scan(dest...); err != nil {
				return 0, err
			}
			for i, v := range values {
				if n, ok := v.(int64); ok && slices.Contains(t.booleans, t.columns[i]) {
					values[i] = n != 0
				}
			}
			batch = append(batch, values...)
		}
		if n := len(batch) / width; n > 0 && (!more || len(batch) == cap(batch)) {
			row := "(" + placeholders(width) + ")"
			if _, err := dst.Exec(ctx, `INSERT INTO `+quoteIdent(t.name)+` (`+columns+`) VALUES `+strings.Repeat(row+", ", n-1)+row, batch...); err != nil {
				return 0, err
			}
			copied, batch = copied+int64(n), batch[:0]
		}
		if !more {
			return copied, rows.Err()
		}
	}
}

// quoteIdent quotes a table or column name, as both engines read it.
func quoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// compareSchemas reports every table and column that one schema has and
// the other lacks. The order of the columns does not matter: rows are
// copied by column name.
func compareSchemas(from, to []table) error {
	var diffs []string
	missing := func(a, b []string, in, notIn string) {
		for _, x := range a {
			if t, _, _ := strings.Cut(x, ":"); !slices.Contains(b, x) && (t == x || slices.Contains(b, t)) {
				diffs = append(diffs, fmt.Sprintf("%s is in the %s database but not in the %s", x, in, notIn))
			}
		}
	}
	a, b := inventory(from), inventory(to)
	missing(a, b, "source", "target")
	missing(b, a, "target", "source")
	if len(diffs) > 0 {
		return fmt.Errorf("the schemas of the two databases differ (is one of them from another version of Gatehouse?):\n  %s",
			strings.Join(diffs, "\n  "))
	}
	return nil
}

// inventory lists "table t" and "table t: column c" for every table and
// column of a schema.
func inventory(tables []table) []string {
	var out []string
	for _, t := range tables {
		out = append(out, "table "+t.name)
		for _, c := range t.columns {
			out = append(out, "table "+t.name+": column "+c)
		}
	}
	return out
}

// parentsFirst orders the tables of from so that every table comes after
// the tables its foreign keys refer to, in either schema (the target's
// keys are the ones checked as rows go in), each with the target's
// booleans. Tables otherwise keep the source's order. A table referring to
// itself is a cycle too: its rows go in batches in the source's order,
// which need not put a row's parent first.
func parentsFirst(from, to []table) ([]table, error) {
	source, target := byName(from), byName(to)
	done := make(map[string]bool, len(from))
	out := make([]table, 0, len(from))
	var visit func(t table, path []string) error
	visit = func(t table, path []string) error {
		if done[t.name] {
			return nil
		}
		if at := slices.Index(path, t.name); at >= 0 {
			return fmt.Errorf("the foreign keys of tables %s form a cycle: no order of tables can copy them",
				strings.Join(append(path[at:], t.name), " → "))
		}
		for _, parent := range slices.Concat(t.parents, target[t.name].parents) {
			if p, ok := source[parent]; ok {
				if err := visit(p, append(path, t.name)); err != nil {
					return err
				}
			}
		}
		done[t.name] = true
		t.booleans = target[t.name].booleans
		out = append(out, t)
		return nil
	}
	for _, t := range from {
		if err := visit(t, nil); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func byName(tables []table) map[string]table {
	m := make(map[string]table, len(tables))
	for _, t := range tables {
		m[t.name] = t
	}
	return m
}
