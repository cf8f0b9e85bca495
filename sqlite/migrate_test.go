package sqlite_test

import (
	"context"
	"database/sql"
	"fmt"
	"path/filepath"
	"sync"
	"testing"

	"gatehouse"
	"gatehouse/sqlite"
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
