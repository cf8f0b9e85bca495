package postgres_test

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"os"
	"path"
	"slices"
	"sync"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/storetest"

	"github.com/jackc/pgx/v5"
)

func newBox(t *testing.T) *gatehouse.SecretBox {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func TestMain(m *testing.M) { os.Exit(pgtest.Run(m.Run)) }

// migrated returns a new database with the current schema: a copy of one
// migrated once for the test binary.
func migrated(t *testing.T) string {
	return pgtest.NewDatabaseFrom(t, "migrated", func(url string) error {
		box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
		if err != nil {
			return err
		}
		db, err := postgres.Open(context.Background(), url, box, postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			return err
		}
		return db.Close()
	})
}

func TestStore(t *testing.T) {
	storetest.Run(t, func(t *testing.T, now gatehouse.Clock) gatehouse.Store {
		url := migrated(t)
		db, err := postgres.Open(context.Background(), url, newBox(t), postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		db.Now = now
		t.Cleanup(func() { db.Close() })
		return db
	})
}

func TestStoreSecrets(t *testing.T) {
	storetest.RunSecrets(t, func(t *testing.T) func(*gatehouse.SecretBox) gatehouse.Store {
		url := pgtest.NewDatabase(t)
		return func(box *gatehouse.SecretBox) gatehouse.Store {
			db, err := postgres.Open(context.Background(), url, box, postgres.Options{OpTimeout: 30 * time.Second})
			if err != nil {
				t.Fatalf("Open: %v", err)
			}
			t.Cleanup(func() { db.Close() })
			return db
		}
	})
}

// instances opens n stores on one new database, as n servers would.
func instances(t *testing.T, n int) []*postgres.DB {
	t.Helper()
	url := pgtest.NewDatabase(t)
	out := make([]*postgres.DB, n)
	box := newBox(t)
	for i := range out {
		db, err := postgres.Open(context.Background(), url, box, postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			t.Fatalf("Open: %v", err)
		}
		t.Cleanup(func() { db.Close() })
		out[i] = db
	}
	return out
}

// race runs fn(i) for i in [0, n) in goroutines released at one moment and
// returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			errs[i] = fn(i)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

// TestInstancesConcurrently checks the guarantees that must hold across
// servers sharing one database, which the conformance suite checks only
// within one store.
func TestInstancesConcurrently(t *testing.T) {
	const n = 8
	ctx := context.Background()
	dbs := instances(t, 3)
	store := func(i int) *postgres.DB { return dbs[i%len(dbs)] }
	org, err := dbs[0].CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}

	t.Run("PendingChallenge", func(t *testing.T) {
		sum := sha256.Sum256([]byte(rand.Text() + rand.Text()))
		challenge := base64.RawURLEncoding.EncodeToString(sum[:])
		errs := race(n, func(i int) error {
			_, err := store(i).CreateAuthCode(ctx, org.ID, nil, gatehouse.AuthCodeCreate{
				CallbackURL: "https://app.example.com/callback", CodeChallenge: &challenge})
			return err
		})
		created := 0
		for _, err := range errs {
			switch gatehouse.ErrorCode(err) {
			case "":
				created++
			case gatehouse.ECONFLICT:
			default:
				t.Errorf("CreateAuthCode: %v, want success or %s", err, gatehouse.ECONFLICT)
			}
		}
		if created != 1 {
			t.Errorf("%d codes created with one challenge, want 1", created)
		}
	})

	t.Run("ExchangeOnce", func(t *testing.T) {
		code, err := dbs[0].CreateAuthCode(ctx, org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/callback"})
		if err != nil {
			t.Fatal(err)
		}
		errs := race(n, func(i int) error {
			_, _, err := store(i).ExchangeAuthCode(ctx, gatehouse.AuthCodeExchange{Code: code.ID})
			return err
		})
		wins := 0
		for _, err := range errs {
			switch gatehouse.ErrorCode(err) {
			case "":
				wins++
			case gatehouse.EFORBIDDEN:
			default:
				t.Errorf("ExchangeAuthCode: %v, want success or %s", err, gatehouse.EFORBIDDEN)
			}
		}
		if wins != 1 {
			t.Errorf("%d exchanges of one code succeeded, want 1", wins)
		}
	})

	t.Run("RecordUsage", func(t *testing.T) {
		k, _, err := dbs[0].CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "busy"})
		if err != nil {
			t.Fatal(err)
		}
		const calls = 25
		errs := race(n, func(i int) error {
			for range calls {
				if _, err := store(i).RecordUsage(ctx, k.Hash, 3, false); err != nil {
					return err
				}
			}
			return nil
		})
		for _, err := range errs {
			if err != nil {
				t.Errorf("RecordUsage: %v", err)
			}
		}
		got, err := dbs[0].FindKeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		if want := gatehouse.Money(3 * n * calls); got.Usage.Total != want || got.Usage.Day != want {
			t.Errorf("usage = %+v, want total and day %d", got.Usage, want)
		}
	})

	t.Run("AddMembers", func(t *testing.T) {
		var ids []string
		for i := range 5 {
			m, err := dbs[0].CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: fmt.Sprintf("m%d@example.com", i)})
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, m.ID)
		}
		w, err := dbs[0].CreateWorkspace(ctx, org.ID, gatehouse.WorkspaceUpdate{
			Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
		if err != nil {
			t.Fatal(err)
		}
		added := make([]int, n)
		errs := race(n, func(i int) error {
			var err error
			added[i], _, err = store(i).AddWorkspaceMembers(ctx, org.ID, w.ID, ids)
			return err
		})
		total := 0
		for i, err := range errs {
			if err != nil {
				t.Errorf("AddWorkspaceMembers: %v", err)
			}
			total += added[i]
		}
		if total != len(ids) {
			t.Errorf("%d memberships added in all, want %d", total, len(ids))
		}
		list, count, err := dbs[0].FindWorkspaceMembers(ctx, org.ID, w.ID, gatehouse.Page{Limit: 100})
		if err != nil || count != len(ids) || len(list) != len(ids) {
			t.Errorf("FindWorkspaceMembers = %d rows, total %d, %v; want %d", len(list), count, err, len(ids))
		}
	})
}

// TestMigrateConcurrently starts three instances on one empty database at
// the same moment: the advisory lock lets one migrate while the others wait,
// so all open and every migration is recorded once.
func TestMigrateConcurrently(t *testing.T) {
	url := pgtest.NewDatabase(t)
	ctx := context.Background()
	const n = 3
	start := make(chan struct{})
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			<-start
			db, err := postgres.Open(ctx, url, newBox(t), postgres.Options{})
			if err == nil {
				err = db.Close()
			}
			errs[i] = err
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("Open #%d: %v", i, err)
		}
	}

	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT name FROM schema_migrations ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	applied, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, name := range migrationNames(t, "migration") {
		want = append(want, path.Join("migration", name))
	}
	if !slices.Equal(applied, want) {
		t.Errorf("schema_migrations = %v, want one row per file %v", applied, want)
	}
}

// TestMigrationNamesMatchSQLite checks that both engines have the same
// migration files, so that a schema change is made in both.
func TestMigrationNamesMatchSQLite(t *testing.T) {
	pg, lite := migrationNames(t, "migration"), migrationNames(t, "../sqlite/migration")
	if len(pg) == 0 || !slices.Equal(pg, lite) {
		t.Errorf("postgres/migration has %v, sqlite/migration has %v; want the same files", pg, lite)
	}
}

// migrationNames returns the names of the .sql files in dir, sorted.
func migrationNames(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() && path.Ext(e.Name()) == ".sql" {
			names = append(names, e.Name())
		}
	}
	return names
}
