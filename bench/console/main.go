// Command console times the server-side render of the web console's pages
// on a database seeded with `gatehouse bench-seed --keys 1000000` (see
// bench/console.sh): each page is served by the real handlers (the API's,
// with the console mounted on it, over the key cache, as cmd/gatehouse
// wires them) into a recorder, -runs times after one warm-up, as an admin
// (a session of the management key) and as a member who created keys; the
// table gives the first render (which reads the ledger's past days, as the
// first render of a UTC day does) and the fastest, median and slowest of
// the others.
//
//	go run ./bench/console -database PATH_OR_URL -manifest m.json [-runs 20] [-out FILE]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/bench/seed"
	"gatehouse/console"
	"gatehouse/httpapi"
	"gatehouse/keycache"
	"gatehouse/postgres"
	"gatehouse/ratelimit"
	"gatehouse/sqlite"

	"github.com/prometheus/client_golang/prometheus"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "console:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("console", flag.ContinueOnError)
	database := fs.String("database", "", "SQLite path or postgres:// URL of the seeded database")
	manifestFile := fs.String("manifest", "", "bench-seed manifest of the organization")
	runs := fs.Int("runs", 20, "timed renders of each page")
	out := fs.String("out", "", "also write the table to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *database == "" || *manifestFile == "" {
		return errors.New("-database and -manifest are required")
	}
	m, err := readManifest(*manifestFile)
	if err != nil {
		return err
	}
	ctx := context.Background()
	db, err := open(ctx, *database)
	if err != nil {
		return err
	}
	defer db.Close()
	b, err := newBench(ctx, db, m)
	if err != nil {
		return err
	}
	var table strings.Builder
	fmt.Fprintf(&table, "| page | who | first | fastest | median | slowest |\n|---|---|---:|---:|---:|---:|\n")
	for _, p := range b.pages() {
		times, err := b.time(p, *runs)
		if err != nil {
			return fmt.Errorf("%s %s: %w", p.who, p.path, err)
		}
		first := times[0]
		times = times[1:]
		slices.Sort(times)
		fmt.Fprintf(&table, "| %s | %s | %s | %s | %s | %s |\n", p.name, p.who, ms(first), ms(times[0]), ms(times[len(times)/2]), ms(times[len(times)-1]))
	}
	fmt.Fprint(stdout, table.String())
	if *out != "" {
		return os.WriteFile(*out, []byte(table.String()), 0o644)
	}
	return nil
}

func ms(d time.Duration) string { return fmt.Sprintf("%.1f ms", float64(d.Microseconds())/1000) }

// bench is the handler and the sessions of the pages.
type bench struct {
	handler http.Handler
	// admin and member are the cookies of the sessions.
	admin, member *http.Cookie
	m             *seed.Manifest
	// adminKey is a key of the organization; memberKey, one the member
	// created; cursor, where a page in the middle of the list starts.
	adminKey, memberKey, cursor, hashPrefix string
	// destination is a destination of the default workspace; day, a UTC
	// day of the ledger (YYYY-MM-DD).
	destination, day string
}

// newBench builds the handler as cmd/gatehouse does and opens the sessions.
func newBench(ctx context.Context, db gatehouse.Store, m *seed.Manifest) (*bench, error) {
	store := keycache.New(db, keycache.Options{})
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	api := httpapi.NewHandler(store, ratelimit.Unlimited{}, logger, prometheus.NewRegistry(), time.Now, httpapi.DataPlane{})
	accounts := gatehouse.NewAccounts(store, time.Now)
	web := console.New(store, accounts, console.NoSignInLimits, logger, time.Now, console.Options{})
	web.Routes(api.Handle)
	api.HandleNotFound(web.NotFound())
	b := &bench{handler: api, m: m, adminKey: m.KeyHashes[0], hashPrefix: m.KeyHashes[1][:8]}
	_, token, err := accounts.SignInWithKey(ctx, m.ManagementKey)
	if err != nil {
		return nil, fmt.Errorf("admin session: %w", err)
	}
	b.admin = &http.Cookie{Name: "gatehouse_session", Value: token}
	member, keys, err := memberWithKeys(ctx, store, m)
	if err != nil {
		return nil, err
	}
	b.memberKey = keys.Keys[0].Hash
	_, token, err = store.CreateSession(ctx, gatehouse.SessionCreate{OrganizationID: m.OrganizationID, UserID: &member})
	if err != nil {
		return nil, fmt.Errorf("member session: %w", err)
	}
	b.member = &http.Cookie{Name: "gatehouse_session", Value: token}
	middle, err := store.FindKey(ctx, m.OrganizationID, m.KeyHashes[2])
	if err != nil {
		return nil, err
	}
	b.cursor = (&gatehouse.KeySearch{}).CursorAfter(middle).String()
	b.day = time.Now().UTC().AddDate(0, 0, -10).Format("2006-01-02")
	if b.destination, err = destination(ctx, store, m); err != nil {
		return nil, err
	}
	return b, nil
}

// destination returns a destination of the default workspace, made the
// first time (bench-seed makes none).
func destination(ctx context.Context, store gatehouse.Store, m *seed.Manifest) (string, error) {
	list, _, err := store.FindDestinations(ctx, m.OrganizationID, "", gatehouse.Page{Limit: 1})
	if err != nil {
		return "", err
	}
	if len(list) > 0 {
		return list[0].ID, nil
	}
	url, secret := "https://hooks.example.com/bench", "Bearer bench-0123456789abcdef"
	d, err := store.CreateDestination(ctx, m.OrganizationID, gatehouse.DestinationCreate{Type: "webhook",
		DestinationUpdate: gatehouse.DestinationUpdate{Name: gatehouse.Val("Bench hook"),
			Config: &gatehouse.ConfigPatch{Values: map[string]*string{"url": &url}, Headers: map[string]string{"Authorization": secret}, HeadersSet: true}}})
	if err != nil {
		return "", fmt.Errorf("destination: %w", err)
	}
	return d.ID, nil
}

// memberWithKeys returns the first sampled member who created keys, with
// a page of them.
func memberWithKeys(ctx context.Context, store gatehouse.Store, m *seed.Manifest) (string, *gatehouse.KeyPage, error) {
	for _, id := range m.MemberIDs {
		page, err := store.SearchKeys(ctx, m.OrganizationID, gatehouse.KeySearch{CreatorUserID: &id, Limit: 1})
		if err != nil {
			return "", nil, err
		}
		if len(page.Keys) > 0 {
			return id, page, nil
		}
	}
	return "", nil, errors.New("no sampled member created keys (seed with --members)")
}

// page is one timed request.
type page struct {
	name, who, path string
}

func (b *bench) pages() []page {
	callback := "/auth?callback_url=https%3A%2F%2Fapp.example.com%2Fcb&code_challenge=" + strings.Repeat("c", 43) + "&code_challenge_method=S256"
	var out []page
	for _, who := range []string{"admin", "member"} {
		key := b.adminKey
		if who == "member" {
			key = b.memberKey
		}
		out = append(out,
			page{"overview", who, "/"},
			page{"keys, first page", who, "/keys"},
			page{"keys, a page in the middle", who, "/keys?after=" + b.cursor},
			page{"keys, search by name (bench-key-5…)", who, "/keys?q=bench-key-5"},
			page{"keys, search by hash prefix", who, "/keys?q=" + b.hashPrefix},
			page{"a key", who, "/keys/" + key},
			page{"authorization page", who, callback},
		)
		if who == "admin" {
			out = append(out, page{"members", who, "/members"}, page{"members, a later page", who, "/members?offset=500"})
			out = append(out, b.adminPages()...)
		}
		out = append(out,
			page{"activity", who, "/activity"},
			page{"activity, a common model", who, "/activity?model=openai/gpt-4o-mini"},
			page{"activity, a rare model", who, "/activity?model=local/phi4"},
			page{"activity, a day", who, "/activity?since=" + b.day + "&until=" + b.day},
		)
	}
	return append(out, page{"sign-in page", "nobody", "/sign-in"})
}

// adminPages are the pages of workspaces, guardrails, destinations, the
// audit log and the whole organization's activity.
func (b *bench) adminPages() []page {
	out := []page{
		{"workspaces", "admin", "/workspaces"},
		{"guardrails of the default workspace", "admin", "/guardrails"},
		{"destinations", "admin", "/destinations"},
		{"a destination", "admin", "/destinations/" + b.destination},
		{"a new destination's form (S3)", "admin", "/destinations/new?type=s3"},
		{"audit log", "admin", "/audit"},
		{"audit log, a rare operation", "admin", "/audit?operation=workspace.update"},
		{"audit log, an actor", "admin", "/audit?actor=" + gatehouse.HashKey(b.m.ManagementKey)},
		{"audit log, a day", "admin", "/audit?since=" + b.day + "&until=" + b.day},
		{"activity, a quiet key", "admin", "/activity?key=" + b.m.KeyHashes[5][:12]},
		{"activity, a model that made no call", "admin", "/activity?model=none/such"},
	}
	if len(b.m.Workspaces) > 0 {
		out = append(out, page{"a workspace (its members, budgets)", "admin", "/workspaces/" + b.m.Workspaces[0].ID})
	}
	if len(b.m.GuardrailIDs) > 0 {
		out = append(out, page{"a guardrail", "admin", "/guardrails/" + b.m.GuardrailIDs[0]})
	}
	if len(b.m.HotKeyHashes) > 0 {
		out = append(out, page{"activity, a busy key", "admin", "/activity?key=" + b.m.HotKeyHashes[0][:12]})
	}
	return out
}

// time renders a page runs+1 times, and returns the times: the first
// (which fills the cache of past days, as the first render of a day does)
// then the others. A render that does not answer 200 is an error.
func (b *bench) time(p page, runs int) ([]time.Duration, error) {
	var times []time.Duration
	for range runs + 1 {
		req := httptest.NewRequest("GET", p.path, nil)
		switch p.who {
		case "admin":
			req.AddCookie(b.admin)
		case "member":
			req.AddCookie(b.member)
		}
		rec := httptest.NewRecorder()
		start := time.Now()
		b.handler.ServeHTTP(rec, req)
		times = append(times, time.Since(start))
		if rec.Code != http.StatusOK {
			return nil, fmt.Errorf("status %d: %.300s", rec.Code, rec.Body.String())
		}
	}
	return times, nil
}

func readManifest(path string) (*seed.Manifest, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var m seed.Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if len(m.KeyHashes) < 3 || len(m.MemberIDs) == 0 {
		return nil, fmt.Errorf("%s: too few samples (seed with --keys and --members)", path)
	}
	return &m, nil
}

// open opens the store; nothing is sealed, so its secret box is a throwaway.
func open(ctx context.Context, database string) (gatehouse.Store, error) {
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(database, "postgres://") || strings.HasPrefix(database, "postgresql://") {
		return postgres.Open(ctx, database, box, postgres.Options{OpTimeout: time.Minute})
	}
	return sqlite.Open(ctx, database, box)
}
