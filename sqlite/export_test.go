package sqlite_test

import (
	"context"
	"path/filepath"
	"slices"
	"testing"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/sqlstore"
)

// TestExport reads the schema and the rows of a snapshot: the tables with
// their columns and foreign keys, none of SQLite's own nor
// schema_migrations, and rows as of the snapshot's start even while the
// store writes.
func TestExport(t *testing.T) {
	ctx := context.Background()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	before, err := db.CreateOrganization(ctx, "Before")
	if err != nil {
		t.Fatal(err)
	}
	err = db.Export(ctx, func(src sqlstore.Source) error {
		tables, err := src.Tables(ctx)
		if err != nil {
			return err
		}
		checkExportedTables(t, tables)
		if _, err := db.CreateOrganization(ctx, "During"); err != nil {
			return err
		}
		var got [][]any
		for row, err := range src.Rows(ctx, "organizations", []string{"name", "id"}) {
			if err != nil {
				return err
			}
			got = append(got, row)
		}
		if want := [][]any{{"Before", before.ID}}; !slices.EqualFunc(got, want, slices.Equal) {
			t.Errorf("organizations in the snapshot = %v, want %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("Export: %v", err)
	}
}

func checkExportedTables(t *testing.T, tables []sqlstore.Table) {
	t.Helper()
	byName := map[string]sqlstore.Table{}
	for _, tb := range tables {
		byName[tb.Name] = tb
	}
	for _, internal := range []string{"schema_migrations", "sqlite_sequence"} {
		if _, ok := byName[internal]; ok {
			t.Errorf("Tables lists %s", internal)
		}
	}
	if got, want := byName["organizations"].Columns, []string{"id", "name", "created_at"}; !slices.Equal(got, want) {
		t.Errorf("columns of organizations = %v, want %v", got, want)
	}
	refs := slices.Sorted(slices.Values(byName["auth_codes"].References))
	if want := []string{"oauth_apps", "organizations", "workspaces"}; !slices.Equal(refs, want) {
		t.Errorf("auth_codes refers to %v, want %v", refs, want)
	}
	if len(tables) < 16 {
		t.Errorf("Tables lists %d tables, want every one of the schema (16 or more)", len(tables))
	}
}
