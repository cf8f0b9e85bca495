package pgtest_test

import (
	"context"
	"os"
	"testing"

	"gatehouse/postgres/pgtest"

	"github.com/jackc/pgx/v5"
)

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m.Run)) }

// template makes the tables of TestCopiesComeBackEmpty: a parent with an
// identity column, a child referencing it, and a trigger that refuses
// every delete of a parent (so the emptying cannot lean on row triggers).
func template(url string) error {
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		return err
	}
	defer conn.Close(ctx)
	_, err = conn.Exec(ctx, `
		CREATE TABLE schema_migrations (name TEXT PRIMARY KEY);
		INSERT INTO schema_migrations VALUES ('0001');
		CREATE TABLE parents (id BIGINT GENERATED ALWAYS AS IDENTITY PRIMARY KEY, name TEXT NOT NULL);
		CREATE TABLE children (parent_id BIGINT NOT NULL REFERENCES parents (id), name TEXT NOT NULL);
		CREATE FUNCTION refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
		CREATE TRIGGER parents_refuse_delete BEFORE DELETE ON parents FOR EACH ROW EXECUTE FUNCTION refuse();`)
	return err
}

// TestCopiesComeBackEmpty: a copy a test wrote to is emptied for the next
// test (the same database, not a new one: its tables keep their files, so
// they were emptied by DELETE, not TRUNCATE), its identities start again,
// and schema_migrations keeps its rows.
func TestCopiesComeBackEmpty(t *testing.T) {
	ctx := context.Background()
	var firstURL string
	var filenode uint32
	t.Run("writes", func(t *testing.T) {
		firstURL = pgtest.NewDatabaseFrom(t, "pgtest-empty", template)
		conn, err := pgx.Connect(ctx, firstURL)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, `INSERT INTO parents (name) VALUES ('a'), ('b');
			INSERT INTO children SELECT id, 'c' FROM parents`); err != nil {
			t.Fatal(err)
		}
		if err := conn.QueryRow(ctx, `SELECT pg_relation_filenode('parents')`).Scan(&filenode); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("reads", func(t *testing.T) {
		url := pgtest.NewDatabaseFrom(t, "pgtest-empty", template)
		if url != firstURL {
			t.Fatalf("the second test got %s, not the emptied copy %s", url, firstURL)
		}
		conn, err := pgx.Connect(ctx, url)
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close(ctx)
		var parents, children, migrations int
		var node uint32
		if err := conn.QueryRow(ctx, `SELECT (SELECT count(*) FROM parents), (SELECT count(*) FROM children),
			(SELECT count(*) FROM schema_migrations), pg_relation_filenode('parents')`).Scan(&parents, &children, &migrations, &node); err != nil {
			t.Fatal(err)
		}
		if parents != 0 || children != 0 || migrations != 1 {
			t.Errorf("the copy came back with %d parents, %d children and %d migrations; want 0, 0 and 1", parents, children, migrations)
		}
		if node != filenode {
			t.Errorf("parents' file changed (%d, then %d): the copy was truncated, not emptied by DELETE", filenode, node)
		}
		var id int64
		if err := conn.QueryRow(ctx, `INSERT INTO parents (name) VALUES ('again') RETURNING id`).Scan(&id); err != nil {
			t.Fatal(err)
		}
		if id != 1 {
			t.Errorf("the first parent of the emptied copy has id %d, want 1 (identities start again)", id)
		}
	})
}
