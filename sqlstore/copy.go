// Package sqlstore holds what the SQL engines of Gatehouse share, apart
// from the SQL itself. For now that is copying a whole database from one
// engine to another (`gatehouse migrate-data`): Copy works over the small
// interfaces below, which the sqlite package (a source) and the postgres
// package (a target) implement. The engines import this package; it imports
// neither of them.
package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"slices"
	"strings"
)

// Table is a table of a database's schema, as its engine describes it.
type Table struct {
	Name string
	// Columns are the names of the table's columns, in the schema's order.
	Columns []string
	// References names the tables that the table's foreign keys refer to.
	References []string
}

// Source is a consistent, read-only snapshot of the database copied from.
type Source interface {
	// Tables lists the tables that hold data: every table of the schema
	// except the engine's internal ones and schema_migrations, which each
	// database keeps for itself.
	Tables(ctx context.Context) ([]Table, error)
	// Rows yields every row of a table, values in the order of columns,
	// each row a new slice that the consumer may keep. An error ends the
	// sequence.
	Rows(ctx context.Context, table string, columns []string) iter.Seq2[[]any, error]
}

// Target is one transaction on the database copied into.
type Target interface {
	// Tables lists the tables that hold data, as Source.Tables does.
	Tables(ctx context.Context) ([]Table, error)
	// Empty reports whether a table holds no row.
	Empty(ctx context.Context, table string) (bool, error)
	// Insert writes rows into a table and returns how many it wrote. The
	// values come as a Source yields them; the target converts them to
	// its column types (SQLite's 0 and 1 into booleans, for one).
	Insert(ctx context.Context, table string, columns []string, rows iter.Seq2[[]any, error]) (int64, error)
}

// Exporter is a database whose rows can be copied elsewhere.
type Exporter interface {
	// Export calls fn with a read-only snapshot of the database.
	Export(ctx context.Context, fn func(Source) error) error
}

// Importer is a database that rows can be copied into.
type Importer interface {
	// Import calls fn with one transaction and commits it if fn returns
	// nil, after making the database ready to continue from the copied
	// rows (identity sequences moved past the copied ids).
	Import(ctx context.Context, fn func(Target) error) error
}

// Copied is how many rows of a table were copied.
type Copied struct {
	Table string
	Rows  int64
}

// ErrNotEmpty is returned by Copy when the target already holds rows.
var ErrNotEmpty = errors.New("the target database already holds data; migrate into an empty database")

// Copy copies every row of every table from one database into another,
// which must be empty, in one transaction of the target, parents before
// children so that foreign keys hold at every row. The two schemas must
// have the same tables with the same columns; the error names every
// difference. It returns the tables in the order they were copied.
func Copy(ctx context.Context, from Exporter, to Importer) ([]Copied, error) {
	var copied []Copied
	err := from.Export(ctx, func(src Source) error {
		return to.Import(ctx, func(dst Target) error {
			var err error
			copied, err = copyAll(ctx, src, dst)
			return err
		})
	})
	if err != nil {
		return nil, err
	}
	return copied, nil
}

func copyAll(ctx context.Context, src Source, dst Target) ([]Copied, error) {
	tables, err := plan(ctx, src, dst)
	if err != nil {
		return nil, err
	}
	if err := checkEmpty(ctx, dst, tables); err != nil {
		return nil, err
	}
	out := make([]Copied, 0, len(tables))
	for _, t := range tables {
		n, err := dst.Insert(ctx, t.Name, t.Columns, src.Rows(ctx, t.Name, t.Columns))
		if err != nil {
			return nil, fmt.Errorf("copy %s: %w", t.Name, err)
		}
		out = append(out, Copied{Table: t.Name, Rows: n})
	}
	return out, nil
}

// plan reads both schemas, checks that they agree, and returns the
// source's tables in the order to copy them.
func plan(ctx context.Context, src Source, dst Target) ([]Table, error) {
	from, err := src.Tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the schema of the source: %w", err)
	}
	to, err := dst.Tables(ctx)
	if err != nil {
		return nil, fmt.Errorf("read the schema of the target: %w", err)
	}
	if err := compareSchemas(from, to); err != nil {
		return nil, err
	}
	return parentsFirst(from, to)
}

// checkEmpty refuses a target that holds any row.
func checkEmpty(ctx context.Context, dst Target, tables []Table) error {
	for _, t := range tables {
		empty, err := dst.Empty(ctx, t.Name)
		if err != nil {
			return fmt.Errorf("count the rows of %s in the target: %w", t.Name, err)
		}
		if !empty {
			return fmt.Errorf("%w (table %s has rows)", ErrNotEmpty, t.Name)
		}
	}
	return nil
}

// compareSchemas reports every table and column that one schema has and
// the other lacks. The order of the columns does not matter: rows are
// copied by column name.
func compareSchemas(from, to []Table) error {
	var diffs []string
	missing := func(what, in, notIn string) {
		diffs = append(diffs, fmt.Sprintf("%s is in the %s database but not in the %s", what, in, notIn))
	}
	fromByName, toByName := byName(from), byName(to)
	for _, t := range from {
		other, ok := toByName[t.Name]
		if !ok {
			missing("table "+t.Name, "source", "target")
			continue
		}
		for _, c := range t.Columns {
			if !slices.Contains(other.Columns, c) {
				missing("table "+t.Name+": column "+c, "source", "target")
			}
		}
		for _, c := range other.Columns {
			if !slices.Contains(t.Columns, c) {
				missing("table "+t.Name+": column "+c, "target", "source")
			}
		}
	}
	for _, t := range to {
		if _, ok := fromByName[t.Name]; !ok {
			missing("table "+t.Name, "target", "source")
		}
	}
	if len(diffs) > 0 {
		return fmt.Errorf("the schemas of the two databases differ (is one of them from another version of Gatehouse?):\n  %s",
			strings.Join(diffs, "\n  "))
	}
	return nil
}

func byName(tables []Table) map[string]Table {
	m := make(map[string]Table, len(tables))
	for _, t := range tables {
		m[t.Name] = t
	}
	return m
}

// parentsFirst orders the tables of from so that every table comes after
// the tables its foreign keys refer to, in either schema (the target's
// keys are the ones checked as rows go in). Tables otherwise keep the
// source's order. A table referring to itself is left as it is: its rows
// go in one statement.
func parentsFirst(from, to []Table) ([]Table, error) {
	toByName := byName(to)
	const (
		unseen = iota
		visiting
		done
	)
	state := make(map[string]int, len(from))
	fromByName := byName(from)
	out := make([]Table, 0, len(from))
	var visit func(t Table, path []string) error
	visit = func(t Table, path []string) error {
		switch state[t.Name] {
		case done:
			return nil
		case visiting:
			cycle := append(path[slices.Index(path, t.Name):], t.Name)
			return fmt.Errorf("the foreign keys of tables %s form a cycle: no order of tables can copy them", strings.Join(cycle, " → "))
		}
		state[t.Name] = visiting
		for _, ref := range slices.Concat(t.References, toByName[t.Name].References) {
			parent, ok := fromByName[ref]
			if !ok || ref == t.Name {
				continue
			}
			if err := visit(parent, append(path, t.Name)); err != nil {
				return err
			}
		}
		state[t.Name] = done
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
