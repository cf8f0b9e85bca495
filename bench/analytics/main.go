// Command analytics times the activity and analytics reads of the store on
// a database seeded with `gatehouse bench-seed --generations N` (see
// bench/analytics.sh, which seeds 10,000,000 calls): each scenario runs
// -runs times, one after another, and the table gives the fastest, median
// and slowest run and how many ledger rows the read summed.
//
//	go run ./bench/analytics -database PATH_OR_URL -manifest big.json [-small small.json] [-runs 5]
//	    [-vacuum] [-before-0010 [-restore]] [-label TEXT] [-out FILE]
//
// -vacuum runs VACUUM ANALYZE on the ledger first (PostgreSQL), as
// autovacuum does after many inserts, so that index-only scans are
// possible. -before-0010 puts the ledger's indexes back as they were
// before migration 0010_activity_indexes.sql, to time the same reads
// without its indexes; with -restore it builds 0010's indexes again
// afterwards (from their definitions in the database's catalog), so that
// the database can be measured again.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/bench/seed"
	"gatehouse/postgres"
	"gatehouse/sqlite"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx", to drop indexes
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", to drop indexes
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "analytics:", err)
		os.Exit(1)
	}
}

// scenario is one timed read.
type scenario struct {
	name string
	read func(ctx context.Context, s gatehouse.Store) (rows int64, err error)
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("analytics", flag.ContinueOnError)
	database := fs.String("database", "", "SQLite path or postgres:// URL of the seeded database")
	manifestFile := fs.String("manifest", "", "bench-seed manifest of the organization with the ledger")
	smallFile := fs.String("small", "", "bench-seed manifest of a small organization in the same database (optional)")
	runs := fs.Int("runs", 5, "runs of each scenario")
	vacuum := fs.Bool("vacuum", false, "VACUUM ANALYZE the ledger first (PostgreSQL)")
	before := fs.Bool("before-0010", false, "put the ledger's indexes back as they were before migration 0010")
	restore := fs.Bool("restore", false, "with -before-0010: build 0010's indexes again after timing")
	label := fs.String("label", "", "a title line for the table")
	out := fs.String("out", "", "also write the table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *database == "" || *manifestFile == "" || *runs < 1 {
		return errors.New("-database and -manifest are required, -runs at least 1")
	}
	big, err := readManifest(*manifestFile)
	if err != nil {
		return err
	}
	var small *seed.Manifest
	if *smallFile != "" {
		if small, err = readManifest(*smallFile); err != nil {
			return err
		}
	}
	ctx := context.Background()
	var prepare, after []string
	if *before {
		prepare = append(prepare, before0010...)
		if *restore {
			defs, err := indexDefinitions(ctx, *database, "generations_daily", "generations_key")
			if err != nil {
				return err
			}
			after = append([]string{`DROP INDEX generations_key`}, defs...)
		}
	}
	if *vacuum && isPostgres(*database) {
		prepare = append(prepare, `VACUUM ANALYZE generations`)
	}
	if err := execAll(ctx, *database, prepare); err != nil {
		return err
	}
	store, err := open(ctx, *database)
	if err != nil {
		return err
	}
	defer store.Close()
	var table strings.Builder
	if *label != "" {
		fmt.Fprintf(&table, "%s\n\n", *label)
	}
	fmt.Fprintf(&table, "| read | ledger rows summed | fastest | median | slowest |\n|---|---:|---:|---:|---:|\n")
	for _, sc := range scenarios(big, small, time.Now()) {
		var times []time.Duration
		var rows int64
		for range *runs {
			start := time.Now()
			n, err := sc.read(ctx, store)
			if err != nil {
				return fmt.Errorf("%s: %w", sc.name, err)
			}
			times, rows = append(times, time.Since(start)), n
		}
		slices.Sort(times)
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s |\n", sc.name, thousands(rows), ms(times[0]), ms(times[len(times)/2]), ms(times[len(times)-1]))
		fmt.Fprintf(os.Stderr, "%s: median %s\n", sc.name, ms(times[len(times)/2]))
	}
	fmt.Fprint(stdout, table.String())
	if *out != "" {
		if err := os.WriteFile(*out, []byte(table.String()), 0o644); err != nil {
			return err
		}
	}
	return execAll(ctx, *database, after)
}

// scenarios are the reads timed: the activity as GET /activity asks for
// it, and analytics queries a dashboard makes.
func scenarios(big, small *seed.Manifest, now time.Time) []scenario {
	first, end := gatehouse.ActivityWindow(now)
	yesterday := gatehouse.Daily.Start(now).AddDate(0, 0, -1)
	org := big.OrganizationID
	activity := func(name string, f gatehouse.ActivityFilter) scenario {
		if f.Since.IsZero() {
			f.Since, f.Until = first, end
		}
		return scenario{name, func(ctx context.Context, s gatehouse.Store) (int64, error) {
			rows, err := s.Activity(ctx, org, f)
			var n int64
			for _, r := range rows {
				n += r.Requests
			}
			return n, err
		}}
	}
	query := func(name string, q gatehouse.AnalyticsQuery, orgID string) scenario {
		return scenario{name, func(ctx context.Context, s gatehouse.Store) (int64, error) {
			q := q
			q.Metrics = append([]string{"request_count"}, q.Metrics...)
			if _, err := q.Resolve(now); err != nil {
				return 0, err
			}
			res, err := s.QueryAnalytics(ctx, orgID, &q)
			if err != nil {
				return 0, err
			}
			var n int64
			for _, r := range res.Rows {
				n += r.Values[0].N
			}
			return n, nil
		}}
	}
	ordinary := big.KeyHashes[len(big.KeyHashes)-1]
	out := []scenario{
		activity("GET /activity (31 days)", gatehouse.ActivityFilter{}),
		activity("GET /activity?date=yesterday", gatehouse.ActivityFilter{Since: yesterday, Until: yesterday.AddDate(0, 0, 1)}),
		activity("GET /activity?api_key_hash=(a hot key)", gatehouse.ActivityFilter{KeyHash: big.HotKeyHashes[0]}),
		activity("GET /activity?api_key_hash=(another key)", gatehouse.ActivityFilter{KeyHash: ordinary}),
		activity("GET /activity?group_by=workspace", gatehouse.ActivityFilter{ByWorkspace: true}),
	}
	if len(big.Workspaces) > 0 {
		out = append(out, activity("GET /activity?workspace_id=(not the default)", gatehouse.ActivityFilter{WorkspaceID: big.Workspaces[0].ID}))
	}
	if len(big.MemberIDs) > 0 {
		out = append(out, activity("GET /activity?user_id=(a member)", gatehouse.ActivityFilter{UserID: big.MemberIDs[0]}))
	}
	out = append(out,
		query("spend by model and day, 30 days", gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"},
			Dimensions: []string{"model"}, Granularity: "day", Start: now.AddDate(0, 0, -30), End: now}, org),
		query("top 10 keys by spend, 7 days", gatehouse.AnalyticsQuery{Metrics: []string{"total_usage", "tokens_total"},
			Dimensions: []string{"api_key_id"}, OrderBy: "total_usage", Descending: true, Limit: 10, Start: now.AddDate(0, 0, -7), End: now}, org),
		query("latency by provider and hour, 24 hours", gatehouse.AnalyticsQuery{Metrics: []string{"avg_latency", "avg_throughput"},
			Dimensions: []string{"provider"}, Granularity: "hour", Start: now.Add(-24 * time.Hour), End: now}, org),
		query("spend by month, 366 days (every row)", gatehouse.AnalyticsQuery{Metrics: []string{"total_usage", "byok_usage"},
			Granularity: "month", Start: now.AddDate(0, 0, -366), End: now}, org),
		query("one key by day, 90 days", gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"}, Granularity: "day",
			Filters: []gatehouse.AnalyticsFilter{{Field: "api_key_id", Operator: "eq", Values: []string{big.HotKeyHashes[1]}}},
			Start:   now.AddDate(0, 0, -90), End: now}, org),
	)
	if small != nil {
		smallOrg := small.OrganizationID
		out = append(out,
			scenario{"GET /activity of a small organization", func(ctx context.Context, s gatehouse.Store) (int64, error) {
				rows, err := s.Activity(ctx, smallOrg, gatehouse.ActivityFilter{Since: first, Until: end})
				var n int64
				for _, r := range rows {
					n += r.Requests
				}
				return n, err
			}},
			query("a small organization's spend by model and day, 30 days", gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"},
				Dimensions: []string{"model"}, Granularity: "day", Start: now.AddDate(0, 0, -30), End: now}, smallOrg),
		)
	}
	return out
}

func readManifest(path string) (*seed.Manifest, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m seed.Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(m.HotKeyHashes) < 2 || len(m.KeyHashes) == 0 {
		return nil, fmt.Errorf("%s: no ledger (seed with --generations)", path)
	}
	return &m, nil
}

func isPostgres(url string) bool {
	return strings.HasPrefix(url, "postgres://") || strings.HasPrefix(url, "postgresql://")
}

// open opens the store; nothing is sealed, so its secret box is a throwaway.
func open(ctx context.Context, database string) (gatehouse.Store, error) {
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		return nil, err
	}
	if isPostgres(database) {
		return postgres.Open(ctx, database, box, postgres.Options{OpTimeout: 10 * time.Minute})
	}
	return sqlite.Open(ctx, database, box)
}

// before0010 are the statements that undo migration 0010's indexes.
var before0010 = []string{
	`DROP INDEX generations_daily`,
	`DROP INDEX generations_key`,
	`CREATE INDEX generations_key ON generations (key_hash, created_at)`,
}

// connect opens a connection of its own to the database.
func connect(database string) (*sql.DB, error) {
	driver, dsn := "sqlite", "file:"+database
	if isPostgres(database) {
		driver, dsn = "pgx", database
	}
	return sql.Open(driver, dsn)
}

// indexDefinitions returns the statements that create the named indexes,
// from the database's catalog.
func indexDefinitions(ctx context.Context, database string, names ...string) ([]string, error) {
	db, err := connect(database)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	query := `SELECT sql FROM sqlite_schema WHERE type = 'index' AND name = $1`
	if isPostgres(database) {
		query = `SELECT indexdef FROM pg_indexes WHERE schemaname = current_schema() AND indexname = $1`
	}
	var defs []string
	for _, n := range names {
		var def string
		if err := db.QueryRowContext(ctx, query, n).Scan(&def); err != nil {
			return nil, fmt.Errorf("the definition of index %s: %w", n, err)
		}
		defs = append(defs, def)
	}
	return defs, nil
}

// execAll runs statements on a connection of its own, saying how long
// each took.
func execAll(ctx context.Context, database string, statements []string) error {
	if len(statements) == 0 {
		return nil
	}
	db, err := connect(database)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, st := range statements {
		start := time.Now()
		if _, err := db.ExecContext(ctx, st); err != nil {
			return fmt.Errorf("%s: %w", st, err)
		}
		fmt.Fprintf(os.Stderr, "%s: %s\n", st, time.Since(start).Round(10*time.Millisecond))
	}
	return nil
}

func ms(d time.Duration) string {
	return fmt.Sprintf("%s ms", strings.TrimSuffix(strings.TrimRight(fmt.Sprintf("%.1f", float64(d.Microseconds())/1000), "0"), "."))
}

// thousands writes n with comma separators.
func thousands(n int64) string {
	s := fmt.Sprint(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return cmp.Or(b.String(), "0")
}
