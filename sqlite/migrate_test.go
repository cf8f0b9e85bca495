package sqlite_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/sqlstore"
	"gatehouse/storetest"
)

// migrationFiles returns the names of the embedded migrations, as recorded.
func migrationFiles(t *testing.T) []string {
	t.Helper()
	names, err := filepath.Glob(filepath.Join("migration", "*.sql"))
	if err != nil || len(names) == 0 {
		t.Fatalf("no migrations found: %v", err)
	}
	for i, n := range names {
		names[i] = filepath.ToSlash(n)
	}
	return names
}

// appliedMigrations returns how many times each migration was recorded.
func appliedMigrations(t *testing.T, path string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name, count(*) FROM schema_migrations GROUP BY name`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string]int{}
	for rows.Next() {
		var name string
		var n int
		if err := rows.Scan(&name, &n); err != nil {
			t.Fatal(err)
		}
		out[name] = n
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// checkMigratedOnce fails unless every migration file is recorded once and
// nothing else is.
func checkMigratedOnce(t *testing.T, path string) {
	t.Helper()
	files := migrationFiles(t)
	applied := appliedMigrations(t, path)
	if len(applied) != len(files) {
		t.Errorf("schema_migrations has %d names %v, want the %d files %v", len(applied), applied, len(files), files)
	}
	for _, f := range files {
		if applied[f] != 1 && applied[filepath.Base(f)] != 1 {
			t.Errorf("migration %s recorded %d times, want once (%v)", f, applied[f], applied)
		}
	}
}

func newBox(t *testing.T) *gatehouse.SecretBox {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func TestMigrateOnce(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	box := newBox(t)
	db, err := sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	checkMigratedOnce(t, path)

	// Opening again applies nothing and keeps the data.
	db, err = sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.FindOrganization(ctx, org.ID); err != nil {
		t.Errorf("FindOrganization after reopening: %v", err)
	}
	checkMigratedOnce(t, path)
	if err := db.Ping(ctx); err != nil {
		t.Errorf("Ping: %v", err)
	}
}

// Two processes starting together on a fresh file both open it, and the
// migrations run once.
func TestMigrateConcurrentOpen(t *testing.T) {
	ctx := context.Background()
	box := newBox(t)
	for round := range 20 {
		path := filepath.Join(t.TempDir(), fmt.Sprintf("gatehouse-%d.db", round))
		const openers = 4
		var wg sync.WaitGroup
		dbs := make([]*sqlite.DB, openers)
		errs := make([]error, openers)
		start := make(chan struct{})
		for i := range openers {
			wg.Go(func() {
				<-start
				dbs[i], errs[i] = sqlite.Open(ctx, path, box)
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			if err != nil {
				t.Errorf("round %d: Open %d: %v", round, i, err)
			}
		}
		for _, db := range dbs {
			if db == nil {
				continue
			}
			if _, err := db.CreateOrganization(ctx, "Acme"); err != nil {
				t.Errorf("round %d: CreateOrganization: %v", round, err)
			}
			db.Close()
		}
		checkMigratedOnce(t, path)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	if _, err := sqlite.Open(ctx, "", newBox(t)); err == nil {
		t.Error("Open with an empty path succeeded")
	}
	if _, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "x.db"), nil); err == nil {
		t.Error("Open without a secret box succeeded")
	}
}

// TestUpgradeFromPreviousRelease: a database that the previous release
// migrated and filled is brought to the current schema at Open (only the
// newer migrations are applied, and reported), and every row it wrote
// reads back through the current store.
func TestUpgradeFromPreviousRelease(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	old, data := storetest.PreviousRelease(t, "sqlite", "migration")
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var released []string
	for _, m := range old {
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := raw.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, 1795168800000)`, m.Name); err != nil {
			t.Fatal(err)
		}
		released = append(released, m.Name)
	}
	if _, err := raw.Exec(data); err != nil {
		t.Fatalf("the previous release's rows: %v", err)
	}
	raw.Close()

	db, err := sqlite.Open(ctx, path, newBox(t))
	if err != nil {
		t.Fatalf("Open of the previous release's database: %v", err)
	}
	defer db.Close()
	var want []string
	for _, f := range migrationFiles(t) {
		if !slices.Contains(released, f) {
			want = append(want, strings.TrimSuffix(filepath.Base(f), ".sql"))
		}
	}
	if len(want) == 0 {
		t.Fatal("no migration is newer than the previous release: the test upgrades nothing")
	}
	if s := db.Schema(); !slices.Equal(s.Applied, want) || s.Version != want[len(want)-1] || s.Migrations != len(migrationFiles(t)) || s.From != strings.TrimSuffix(filepath.Base(released[len(released)-1]), ".sql") {
		t.Errorf("Schema() = %+v, want the migrations %v applied", s, want)
	}
	checkMigratedOnce(t, path)
	clock := storetest.NewClock(storetest.ReleaseTime)
	db.Now = clock.Now
	storetest.CheckUpgraded(t, db)
}

// TestRefuseNewerSchema: a database that records a migration this binary
// does not know (a newer Gatehouse migrated it) is refused with a message
// naming it, and nothing is applied.
func TestRefuseNewerSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL);
		INSERT INTO schema_migrations (name, applied_at) VALUES ('migration/0001_init.sql', 1), ('migration/9999_from_the_future.sql', 2)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	_, err = sqlite.Open(ctx, path, newBox(t))
	if !errors.Is(err, sqlstore.ErrSchemaNewer) || !strings.Contains(err.Error(), "migration/9999_from_the_future.sql") ||
		!strings.Contains(err.Error(), "newer Gatehouse") {
		t.Fatalf("Open of a database from a newer release: %v, want a refusal naming its migration", err)
	}
	if applied := appliedMigrations(t, path); len(applied) != 2 {
		t.Errorf("schema_migrations after the refusal = %v, want it unchanged", applied)
	}
}

// TestSchemaReportsApplied: a new database reports every migration as
// applied by Open; the next Open applies none.
func TestSchemaReportsApplied(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "gatehouse.db")
	box := newBox(t)
	files := migrationFiles(t)
	for round, wantApplied := range []int{len(files), 0} {
		db, err := sqlite.Open(ctx, path, box)
		if err != nil {
			t.Fatal(err)
		}
		s := db.Schema()
		db.Close()
		wantFrom := ""
		if round > 0 {
			wantFrom = s.Version
		}
		if len(s.Applied) != wantApplied || s.Migrations != len(files) || s.From != wantFrom ||
			s.Version != strings.TrimSuffix(filepath.Base(files[len(files)-1]), ".sql") {
			t.Errorf("open %d: Schema() = %+v, want %d applied of %d", round, s, wantApplied, len(files))
		}
	}
}

// TestOpenExisting: OpenExisting opens a Gatehouse database, and creates
// or changes nothing when the path holds none: no file, an empty file, a
// file that is not a database, another application's database.
func TestOpenExisting(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	box := newBox(t)

	missing := filepath.Join(dir, "missing.db")
	if _, err := sqlite.OpenExisting(ctx, missing, box); err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenExisting of a missing file: %v, want not exist", err)
	}
	if _, err := os.Stat(missing); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("OpenExisting created %s", missing)
	}

	other := filepath.Join(dir, "other.db")
	raw, err := sql.Open("sqlite", "file:"+other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`CREATE TABLE notes (body TEXT); INSERT INTO notes VALUES ('mine')`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	text := filepath.Join(dir, "notes.txt")
	empty := filepath.Join(dir, "empty.db")
	if err := os.WriteFile(text, []byte("not a database at all, but long enough to have a header of sorts....................................................."), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{other, text, empty} {
		before, _ := os.ReadFile(path)
		if db, err := sqlite.OpenExisting(ctx, path, box); err == nil {
			db.Close()
			t.Errorf("OpenExisting(%s) succeeded", filepath.Base(path))
		}
		after, _ := os.ReadFile(path)
		if !slices.Equal(before, after) {
			t.Errorf("OpenExisting(%s) changed the file", filepath.Base(path))
		}
		for _, suffix := range []string{"-wal", "-shm"} {
			if _, err := os.Stat(path + suffix); err == nil {
				t.Errorf("OpenExisting(%s) left %s", filepath.Base(path), filepath.Base(path)+suffix)
			}
		}
	}
	if _, err := sqlite.OpenExisting(ctx, other, box); !errors.Is(err, sqlstore.ErrNoSchema) {
		t.Errorf("OpenExisting of another application's database: %v, want ErrNoSchema", err)
	}

	// Open leaves a file it did not create where it was, even when it fails.
	if db, err := sqlite.Open(ctx, text, box); err == nil {
		db.Close()
		t.Error("Open of a text file succeeded")
	}
	if _, err := os.Stat(text); err != nil {
		t.Errorf("Open removed a file it did not create: %v", err)
	}

	path := filepath.Join(dir, "gatehouse.db")
	db, err := sqlite.Open(ctx, path, box)
	if err != nil {
		t.Fatal(err)
	}
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	db, err = sqlite.OpenExisting(ctx, path, box)
	if err != nil {
		t.Fatalf("OpenExisting of a Gatehouse database: %v", err)
	}
	defer db.Close()
	if _, err := db.FindOrganization(ctx, org.ID); err != nil {
		t.Errorf("FindOrganization after OpenExisting: %v", err)
	}
}

// TestPendingMigrations: what opening a database would apply, read
// without changing it: none for a missing file or another application's
// database, the newer migrations for the previous release's, none once
// migrated.
func TestPendingMigrations(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	if got, err := sqlite.PendingMigrations(ctx, filepath.Join(dir, "missing.db")); err != nil || got != nil {
		t.Errorf("PendingMigrations of a missing file = %v, %v", got, err)
	}
	path := filepath.Join(dir, "gatehouse.db")
	old, _ := storetest.PreviousRelease(t, "sqlite", "migration")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := sqlite.PendingMigrations(ctx, path); err != nil || got != nil { // empty: no Gatehouse schema
		t.Errorf("PendingMigrations of an empty file = %v, %v", got, err)
	}
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	var released []string
	for _, m := range old {
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatal(err)
		}
		if _, err := raw.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, 1)`, m.Name); err != nil {
			t.Fatal(err)
		}
		released = append(released, m.Name)
	}
	raw.Close()
	var want []string
	for _, f := range migrationFiles(t) {
		if !slices.Contains(released, f) {
			want = append(want, strings.TrimSuffix(filepath.Base(f), ".sql"))
		}
	}
	before := appliedMigrations(t, path)
	if got, err := sqlite.PendingMigrations(ctx, path); err != nil || !slices.Equal(got, want) {
		t.Errorf("PendingMigrations of the previous release's database = %v, %v; want %v", got, err, want)
	}
	if after := appliedMigrations(t, path); len(after) != len(before) {
		t.Errorf("PendingMigrations changed schema_migrations: %d rows, was %d", len(after), len(before))
	}
	db, err := sqlite.Open(ctx, path, newBox(t))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if got, err := sqlite.PendingMigrations(ctx, path); err != nil || len(got) != 0 {
		t.Errorf("PendingMigrations once migrated = %v, %v; want none", got, err)
	}
}
