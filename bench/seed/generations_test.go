package seed

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"io"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlite"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
)

// TestSeedGenerations seeds a ledger large enough that its indexes are
// built after its rows, and reads it back through the store's activity
// and analytics: every call counted once, the indexes of the migrations
// all there again.
func TestSeedGenerations(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "gatehouse.db")
		seedLedger(t, path, "sqlite", "file:"+path, `SELECT name FROM sqlite_schema WHERE type = 'index' AND tbl_name = 'generations' AND sql IS NOT NULL`,
			func(ctx context.Context, box *gatehouse.SecretBox) (gatehouse.Store, error) {
				return sqlite.Open(ctx, path, box)
			})
	})
	t.Run("postgres", func(t *testing.T) {
		url := pgtest.NewDatabase(t)
		seedLedger(t, url, "pgx", url, `SELECT indexname FROM pg_indexes WHERE tablename = 'generations' AND indexname <> 'generations_pkey'`,
			func(ctx context.Context, box *gatehouse.SecretBox) (gatehouse.Store, error) {
				return postgres.Open(ctx, url, box, postgres.Options{OpTimeout: time.Minute})
			})
	})
}

func seedLedger(t *testing.T, url, driver, dsn, indexQuery string, open opener) {
	ctx := context.Background()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	store, err := open(ctx, box)
	if err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	org, err := NewOrganization(ctx, store, "Ledger", gatehouse.ManagementKeyPrefix+hex.EncodeToString(b))
	store.Close()
	if err != nil {
		t.Fatal(err)
	}
	indexesBefore := queryStrings(t, driver, dsn, indexQuery)
	o := Options{Keys: 300, Members: 10, Workspaces: 3, Generations: 120_000, GenerationDays: 10, OrgName: "Ledger"}
	m, err := Fill(ctx, url, org, o, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := queryStrings(t, driver, dsn, indexQuery); !slices.Equal(got, indexesBefore) || len(got) < 3 {
		t.Errorf("indexes of generations after seeding %v, before %v", got, indexesBefore)
	}
	if len(m.HotKeyHashes) != hotKeys || m.Counts["generations"] != o.Generations {
		t.Errorf("manifest: %d hot keys, counts %v", len(m.HotKeyHashes), m.Counts)
	}

	if store, err = open(ctx, box); err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	first, end := gatehouse.ActivityWindow(time.Now())
	rows, err := store.Activity(ctx, org.ID, gatehouse.ActivityFilter{Since: first, Until: end})
	if err != nil {
		t.Fatal(err)
	}
	var requests int64
	var spent gatehouse.Money
	for _, r := range rows {
		requests, spent = requests+r.Requests, spent+r.Usage+r.BYOKUsage
	}
	var total int64
	if err := queryRow(t, driver, dsn, `SELECT SUM(cost) FROM generations`).Scan(&total); err != nil {
		t.Fatal(err)
	}
	if requests != int64(o.Generations) || int64(spent) != total {
		t.Errorf("the activity counts %d calls costing %s, want %d costing %s", requests, spent, o.Generations, gatehouse.Money(total))
	}
	q := &gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}, Filters: []gatehouse.AnalyticsFilter{
		{Field: "api_key_id", Operator: "eq", Values: []string{m.HotKeyHashes[0]}}}, Start: first, End: end}
	if _, err := q.Resolve(time.Now()); err != nil {
		t.Fatal(err)
	}
	res, err := store.QueryAnalytics(ctx, org.ID, q)
	if err != nil {
		t.Fatal(err)
	}
	// Half of the calls come from the hot keys: one of them makes about a
	// fortieth.
	if n := res.Rows[0].Values[0].N; n < int64(o.Generations)/60 || n > int64(o.Generations)/25 {
		t.Errorf("a hot key made %d of %d calls", n, o.Generations)
	}
}

func queryRow(t *testing.T, driver, dsn, query string) *sql.Row {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db.QueryRow(query)
}

func queryStrings(t *testing.T, driver, dsn, query string) []string {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(query)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			t.Fatal(err)
		}
		out = append(out, s)
	}
	slices.Sort(out)
	return out
}
