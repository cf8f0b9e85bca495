package sqlstore_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
	"gatehouse/sqlstore"

	"github.com/google/go-cmp/cmp"
)

// TestCopy copies a SQLite database into an empty one, a few rows to an
// INSERT, and finds every row of every table in the copy, which continues
// from the copied ids; a second copy into it is refused.
func TestCopy(t *testing.T) {
	ctx := context.Background()
	smallBatches(t)
	src, dst := openSQLite(t, "source.db"), openSQLite(t, "target.db")
	org := fill(t, src)
	copied, err := sqlstore.Copy(ctx, src.Store, dst.Store)
	if err != nil {
		t.Fatal(err)
	}
	rows := dump(t, src.Path)
	var order []string
	for _, c := range copied {
		order = append(order, c.Table)
		if c.Rows != int64(len(rows[c.Table])) {
			t.Errorf("copied %d rows of %s, the source has %d", c.Rows, c.Table, len(rows[c.Table]))
		}
	}
	if len(rows["organizations"]) <= 7 || len(rows["api_keys"]) == 0 || len(rows["oauth_apps"]) == 0 {
		t.Errorf("the source has too few rows for the test: %d organizations, %d keys, %d apps",
			len(rows["organizations"]), len(rows["api_keys"]), len(rows["oauth_apps"]))
	}
	if i, j := slices.Index(order, "organizations"), slices.Index(order, "api_keys"); i < 0 || j < i {
		t.Errorf("tables copied in the order %v, want organizations before api_keys", order)
	}
	if diff := cmp.Diff(rows, dump(t, dst.Path)); diff != "" {
		t.Errorf("the copy differs from the source (-source +copy):\n%s", diff)
	}
	newApp(t, dst, org)

	_, err = sqlstore.Copy(ctx, src.Store, dst.Store)
	if !errors.Is(err, sqlstore.ErrNotEmpty) || !strings.Contains(err.Error(), "has rows") {
		t.Errorf("a copy into a database with rows = %v, want ErrNotEmpty naming a table", err)
	}
}

// TestCopyThroughPostgres copies a SQLite database into PostgreSQL and back
// into another SQLite database, and finds the same rows: booleans come back
// as the integers they were. The PostgreSQL copy continues from the copied
// ids.
func TestCopyThroughPostgres(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	smallBatches(t)
	src, back := openSQLite(t, "source.db"), openSQLite(t, "back.db")
	org := fill(t, src)
	pg, err := postgres.Open(ctx, url, box(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if _, err := sqlstore.Copy(ctx, src.Store, pg.Store); err != nil {
		t.Fatalf("copy into PostgreSQL: %v", err)
	}
	if _, err := sqlstore.Copy(ctx, pg.Store, back.Store); err != nil {
		t.Fatalf("copy from PostgreSQL: %v", err)
	}
	if diff := cmp.Diff(dump(t, src.Path), dump(t, back.Path)); diff != "" {
		t.Errorf("the copy of the copy differs from the source (-source +copy):\n%s", diff)
	}
	newApp(t, pg, org)
}

func box(t testing.TB) *gatehouse.SecretBox {
	t.Helper()
	b, err := gatehouse.NewSecretBox(make([]byte, 32))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func openSQLite(t testing.TB, name string) *sqlite.DB {
	t.Helper()
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t, name), box(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// fill writes rows with booleans and an identity column, and more
// organizations than fit one INSERT (see smallBatches); it returns an
// organization.
func fill(t *testing.T, db *sqlite.DB) string {
	t.Helper()
	ctx := context.Background()
	var org *gatehouse.Organization
	for i := range 16 {
		o, err := db.CreateOrganization(ctx, fmt.Sprint("org ", i))
		if err != nil {
			t.Fatal(err)
		}
		org = o
	}
	k, _, err := db.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.UpdateKey(ctx, org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	g, err := db.CreateGuardrail(ctx, org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("g"), EnforceZDR: gatehouse.Val(true)}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.AssignKeys(ctx, org.ID, g.ID, []string{k.Hash}, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateAuthCode(ctx, org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://one.example.com/cb"}); err != nil {
		t.Fatal(err)
	}
	return org.ID
}

// smallBatches copies seven organizations to an INSERT until the test ends.
func smallBatches(t *testing.T) {
	n := *sqlstore.BatchValues
	*sqlstore.BatchValues = 7 * 3
	t.Cleanup(func() { *sqlstore.BatchValues = n })
}

// newApp creates an OAuth app, whose id comes from a sequence.
func newApp(t *testing.T, s gatehouse.Store, org string) {
	t.Helper()
	if _, err := s.CreateAuthCode(context.Background(), org, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://two.example.com/cb"}); err != nil {
		t.Errorf("a new OAuth app in the copy: %v", err)
	}
}

// dump returns the rows of every table of a SQLite file, printed and
// sorted, but for SQLite's own tables and schema_migrations (and of
// list_counts and list_blocks, the sizes they keep).
func dump(t *testing.T, path string) map[string][]string {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tables, err := db.Query(`SELECT name FROM sqlite_schema
		WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'`)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for tables.Next() {
		var name string
		if err := tables.Scan(&name); err != nil {
			t.Fatal(err)
		}
		names = append(names, name)
	}
	tables.Close()
	out := map[string][]string{}
	for _, name := range names {
		query := `SELECT * FROM ` + name
		if name == "list_counts" {
			// The counts (however spread over blocks), not the versions
			// of the keys' lists: the copy's own inserts grew those. A
			// count of 0 is no count (a list emptied in the source, never
			// filled in the copy).
			query = `SELECT list, scope, SUM(n) FROM list_counts WHERE list <> 'key_list_version' GROUP BY list, scope HAVING SUM(n) <> 0`
		}
		if name == "list_blocks" {
			// The blocks' sizes (however spread over parts); an empty
			// block is no block, as a count of 0.
			query = `SELECT list, scope, at, id, SUM(n) FROM list_blocks GROUP BY list, scope, at, id HAVING SUM(n) <> 0`
		}
		rows, err := db.Query(query)
		if err != nil {
			t.Fatal(err)
		}
		columns, _ := rows.Columns()
		for rows.Next() {
			values := make([]any, len(columns))
			dest := make([]any, len(columns))
			for i := range values {
				dest[i] = &values[i]
			}
			if err := rows.Scan(dest...); err != nil {
				t.Fatal(err)
			}
			out[name] = append(out[name], fmt.Sprintf("%#v", values))
		}
		if err := rows.Err(); err != nil {
			t.Fatal(err)
		}
		rows.Close()
		slices.Sort(out[name])
	}
	return out
}
