package postgres_test

import (
	"context"
	"errors"
	"path"
	"slices"
	"strings"
	"testing"

	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"
	"gatehouse/storetest"

	"github.com/jackc/pgx/v5"
)

// rawConn connects to a test database without the store.
func rawConn(t *testing.T, url string) *pgx.Conn {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close(context.Background()) })
	return conn
}

// TestUpgradeFromPreviousRelease: a database that the previous release
// migrated and filled is brought to the current schema at Open (only the
// newer migrations are applied, and reported), and every row it wrote
// reads back through the current store.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	old, data := storetest.PreviousRelease(t, "postgres", "migration")
	conn := rawConn(t, url)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var released []string
	for _, m := range old {
		if _, err := conn.Exec(ctx, m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := conn.Exec(ctx, `INSERT INTO schema_migrations (name, applied_at) VALUES ($1, 1795168800000)`, m.Name); err != nil {
			t.Fatal(err)
		}
		released = append(released, m.Name)
	}
	if _, err := conn.Exec(ctx, data); err != nil {
		t.Fatalf("the previous release's rows: %v", err)
	}
	// Its reservation held by a process that ran it: the upgrade registers
	// the process among the instances (0055_instances), for the others
	// to charge it once it is gone.
	if _, err := conn.Exec(ctx, `UPDATE reservations SET instance_id = 'instance-of-the-release'`); err != nil {
		t.Fatal(err)
	}

	db, err := postgres.Open(ctx, url, newBox(t), postgres.Options{})
	if err != nil {
		t.Fatalf("Open of the previous release's database: %v", err)
	}
	defer db.Close()
	files := migrationNames(t, "migration")
	var want []string
	for _, f := range files {
		if !slices.Contains(released, path.Join("migration", f)) {
			want = append(want, strings.TrimSuffix(f, ".sql"))
		}
	}
	if len(want) == 0 {
		t.Fatal("no migration is newer than the previous release: the test upgrades nothing")
	}
	if s := db.Schema(); !slices.Equal(s.Applied, want) || s.Version != want[len(want)-1] || s.Migrations != len(files) || s.From != strings.TrimSuffix(path.Base(released[len(released)-1]), ".sql") {
		t.Errorf("Schema() = %+v, want the migrations %v applied", s, want)
	}
	var registered []string
	rows, _ := db.Pool().Query(ctx, `SELECT id FROM instances`)
	if registered, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil || !slices.Equal(registered, []string{"instance-of-the-release"}) {
		t.Errorf("instances after the upgrade: %v, %v; want the one holding a reservation", registered, err)
	}
	clock := storetest.NewClock(storetest.ReleaseTime)
	db.Now = clock.Now
	storetest.CheckUpgraded(t, db)
}

// TestRefuseNewerSchema: a database that records a migration this binary
// does not know (a newer Gatehouse migrated it) is refused with a message
// naming it, and nothing is applied.
func TestRefuseNewerSchema(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	conn := rawConn(t, url)
	if _, err := conn.Exec(ctx, `CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at BIGINT NOT NULL);
		INSERT INTO schema_migrations (name, applied_at) VALUES ('migration/0001_init.sql', 1), ('migration/9999_from_the_future.sql', 2)`); err != nil {
		t.Fatal(err)
	}
	_, err := postgres.Open(ctx, url, newBox(t), postgres.Options{})
	if !errors.Is(err, sqlstore.ErrSchemaNewer) || !strings.Contains(err.Error(), "migration/9999_from_the_future.sql") ||
		!strings.Contains(err.Error(), "newer Gatehouse") {
		t.Fatalf("Open of a database from a newer release: %v, want a refusal naming its migration", err)
	}
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Errorf("schema_migrations after the refusal: %d rows, %v; want it unchanged", n, err)
	}
	var tables int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public' AND tablename <> 'schema_migrations'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the refused database has %d tables, %v; want none created", tables, err)
	}
}

// TestOpenExisting: with Options.Existing, an empty database is refused
// and left empty; a Gatehouse database opens.
func TestOpenExisting(t *testing.T) {
	ctx := context.Background()
	url := pgtest.NewDatabase(t)
	_, err := postgres.Open(ctx, url, newBox(t), postgres.Options{Existing: true})
	if !errors.Is(err, sqlstore.ErrNoSchema) {
		t.Fatalf("Open(Existing) of an empty database: %v, want ErrNoSchema", err)
	}
	var tables int
	if err := rawConn(t, url).QueryRow(ctx, `SELECT count(*) FROM pg_tables WHERE schemaname = 'public'`).Scan(&tables); err != nil || tables != 0 {
		t.Errorf("the refused database has %d tables, %v; want none", tables, err)
	}
	db, err := postgres.Open(ctx, url, newBox(t), postgres.Options{})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = postgres.Open(ctx, url, newBox(t), postgres.Options{Existing: true})
	if err != nil {
		t.Fatalf("Open(Existing) of a Gatehouse database: %v", err)
	}
	db.Close()
}
