package httpapi_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/httpapi"
	"gatehouse/keycache"
	"gatehouse/meter"
	"gatehouse/observe"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/provider"
	"gatehouse/ratelimit"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
	"gatehouse/sqlstore"
	"os"
	"sync"

	_ "github.com/jackc/pgx/v5/stdlib" // the "pgx" database/sql driver, for snapshots
	"github.com/prometheus/client_golang/prometheus"
)

// testEngine is the store the HTTP tests run on. TestMain runs the whole
// suite on SQLite, then again on PostgreSQL when GATEHOUSE_TEST_POSTGRES_URL
// is set.
var testEngine = "sqlite"

func TestMain(m *testing.M) {
	os.Exit(pgtest.Run(func() int {
		code := m.Run()
		if code == 0 && os.Getenv(pgtest.EnvURL) != "" {
			testEngine = "postgres"
			fmt.Println("=== the HTTP tests again, on PostgreSQL")
			code = m.Run()
		}
		return code
	}))
}

// testEnv is a Gatehouse handler on a fresh database (of testEngine) behind
// the key cache, as the server runs it, with one organization ("A") and its
// management key. Every response it sees is validated against the OpenAPI
// document.
type testEnv struct {
	t       testing.TB
	handler http.Handler
	db      gatehouse.Store
	clock   *clock
	checker *openAPIChecker
	logs    *logBuffer
	snap    *snapshotter // shared with the copies subtests make
	// metering is the ledger written behind the request path, when the
	// environment serves models; reads of the database wait for it.
	metering *sqlstore.Ledger
	// journal is the path of the metering's charge journal (SQLite), or "".
	journal string

	org  *gatehouse.Organization
	mgmt string // plaintext management key of org
	// retriesBusy: the caller sends a 503 that says when to retry (a write
	// that kept conflicting on PostgreSQL, which changed nothing) again, as
	// a client would, so send does not fail the test on it.
	retriesBusy bool
}

type envOptions struct {
	limiter ratelimit.Limiter
	data    httpapi.DataPlane
	// noJournal: on SQLite, whole answers wait for their charges' commits
	// (GATEHOUSE_METERING_COMMIT=sync) instead of a charge journal.
	noJournal bool
	// health, when set, is the router's record of the endpoints.
	health *provider.Health
	// publisher: traces go to a real trace publisher over the env's
	// store (in memory, no outbox), whose egress policy opens egressOpen.
	publisher  bool
	egressOpen string
}

// withPublisher delivers traces with a real trace publisher, which may
// reach the addresses of open (a GATEHOUSE_EGRESS_ALLOW value, "" for
// none of the blocked ranges).
func withPublisher(open string) envOption {
	return func(o *envOptions) { o.publisher, o.egressOpen = true, open }
}

// withHealth routes with h's record of the endpoints (its circuit breaker
// settings), instead of a fresh one with the defaults.
func withHealth(h *provider.Health) envOption {
	return func(o *envOptions) { o.health = h }
}

// withoutJournal makes whole answers on SQLite wait for the commits of
// their charges, as with GATEHOUSE_METERING_COMMIT=sync.
func withoutJournal() envOption {
	return func(o *envOptions) { o.noJournal = true }
}

// envOption configures newEnv.
type envOption func(*envOptions)

// withDataPlane serves the OpenAI-compatible endpoints with dp.
func withDataPlane(dp httpapi.DataPlane) envOption {
	return func(o *envOptions) { o.data = dp }
}

// withLimiter replaces the default (unlimited) rate limiter.
func withLimiter(l ratelimit.Limiter) envOption {
	return func(o *envOptions) { o.limiter = l }
}

// testStart is the instant every test environment starts at: a Wednesday.
var testStart = time.Date(2027, 3, 17, 10, 30, 0, 0, time.UTC)

func newEnv(t testing.TB, opts ...envOption) *testEnv {
	t.Helper()
	o := envOptions{limiter: ratelimit.Unlimited{}}
	for _, opt := range opts {
		opt(&o)
	}
	clock := &clock{t: testStart}
	db, snap := openTestStore(t, clock)
	logs := &logBuffer{}
	logger := slog.New(slog.NewJSONHandler(logs, nil))
	var metering *sqlstore.Ledger
	journal := ""
	if o.health != nil {
		o.data.Router = &provider.Router{Catalog: o.data.Catalog, Health: o.health}
	}
	if o.data.Upstream != nil {
		if testEngine == "sqlite" && !o.noJournal {
			journal = filepath.Join(t.TempDir(), "charges")
		}
		metering, o.data.Accounts, o.data.Leases = startMetering(t, db, clock, logger, journal)
		o.data.Ledger = metering
	}
	if o.publisher {
		policy := &egress.Policy{}
		if o.egressOpen != "" {
			policy = egress.MustParse(o.egressOpen)
		}
		pub := observe.New(db, nil, logger, observe.Options{Egress: policy, Timeout: 5 * time.Second})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = pub.Close(ctx)
		})
		o.data.Traces = pub
	}
	e := &testEnv{
		t: t, db: db, clock: clock, logs: logs,
		handler: httpapi.NewHandler(db, o.limiter, logger, prometheus.NewRegistry(), clock.Now, o.data),
		checker: newOpenAPIChecker(t),
		snap:    snap, metering: metering, journal: journal,
	}
	t.Cleanup(e.snap.close) // before db.Close: cleanups run last first
	e.org, e.mgmt = e.newOrg("Org A")
	return e
}

// openTestStore opens a fresh store of testEngine whose clock is c, wrapped
// in the key cache, and a snapshotter for its database.
func openTestStore(t testing.TB, c *clock) (gatehouse.Store, *snapshotter) {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	switch testEngine {
	case "postgres":
		// A copy of a database migrated once: it costs what an empty one
		// does, and migrating each as much again.
		url := pgtest.NewDatabaseFrom(t, "migrated", func(url string) error {
			db, err := postgres.Open(ctx, url, box, postgres.Options{OpTimeout: 30 * time.Second})
			if err != nil {
				return err
			}
			return db.Close()
		})
		db, err := postgres.Open(ctx, url, box, postgres.Options{OpTimeout: 30 * time.Second}) // generous: tests run on loaded machines
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.Now = c.Now
		return keycache.New(db, keycache.Options{}), &snapshotter{driver: "pgx", dsn: url}
	default:
		path := sqlitetest.Path(t, "gatehouse.db")
		db, err := sqlite.Open(ctx, path, box)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		db.Now = c.Now
		return keycache.New(db, keycache.Options{}), &snapshotter{driver: "sqlite", dsn: "file:" + path + "?mode=ro"}
	}
}

// startMetering meters as the server does: a ledger written behind the
// request path and, on SQLite (one process serves it), admission in
// memory. The ledger is closed (what is queued written) before the store.
func startMetering(t testing.TB, db gatehouse.Store, c *clock, logger *slog.Logger, journal string) (*sqlstore.Ledger, *meter.Accountant, *meter.Leases) {
	store := db.(*keycache.Cache).Store.(interface {
		meter.CounterLoader
		NewLedger(*slog.Logger, func([]string)) *sqlstore.Ledger
	})
	cache := db.(*keycache.Cache)
	ledger := store.NewLedger(logger, func(hashes []string) {
		for _, h := range hashes {
			cache.UsageChanged(h)
		}
	})
	t.Cleanup(func() {
		if err := ledger.Close(context.Background()); err != nil {
			t.Error(err)
		}
	})
	ledger.LingerSettles()
	if testEngine == "postgres" {
		stop := db.(*keycache.Cache).Store.(interface{ BatchReserves() func() }).BatchReserves()
		t.Cleanup(stop)
		leases := meter.NewLeases(db.(*keycache.Cache).Store, ledger, c.Now)
		t.Cleanup(leases.Close) // before the ledger closes: cleanups run last first
		return ledger, nil, leases
	}
	if journal != "" { // as gatehouse serve runs on SQLite
		if _, err := ledger.UseJournal(context.Background(), journal); err != nil {
			t.Fatal(err)
		}
	}
	return ledger, meter.NewAccountant(store, c.Now), nil
}

// journalHas reports whether the charge journal holds the charge of the
// generation id.
func (e *testEnv) journalHas(id string) bool {
	e.t.Helper()
	files, err := sqlstore.JournalFiles(e.journal)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, f := range files {
		if data, err := os.ReadFile(f); err == nil && bytes.Contains(data, []byte(`"`+id+`"`)) {
			return true
		}
	}
	return false
}

// newOrg creates an organization with a management key.
func (e *testEnv) newOrg(name string) (*gatehouse.Organization, string) {
	e.t.Helper()
	ctx := context.Background()
	org, err := e.db.CreateOrganization(ctx, name)
	if err != nil {
		e.t.Fatal(err)
	}
	_, key, err := e.db.CreateManagementKey(ctx, org.ID, "mgmt")
	if err != nil {
		e.t.Fatal(err)
	}
	return org, key
}

// response is a recorded response.
type response struct {
	Status int
	Header http.Header
	Body   []byte
}

// do sends a request with the key as bearer token ("" for none). body is
// nil (no body), a string (sent verbatim) or a value (sent as JSON). The
// response is checked against the OpenAPI document.
func (e *testEnv) do(method, path, key string, body any) *response {
	e.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	return e.send(req)
}

// send serves a prepared request and checks the response.
func (e *testEnv) send(req *http.Request) *response {
	e.t.Helper()
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	res := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	e.checker.check(e.t, req, res.Status, res.Header, res.Body)
	if res.Status >= 500 && !(e.retriesBusy && res.Status == http.StatusServiceUnavailable && res.Header.Get("Retry-After") != "") {
		e.t.Errorf("%s %s: status %d: %s\nlogs:\n%s", req.Method, req.URL, res.Status, res.Body, e.logs)
	}
	return res
}

// want fails the test unless the response has the status; it returns the
// response for chaining.
func (r *response) want(t testing.TB, status int) *response {
	t.Helper()
	if r.Status != status {
		t.Fatalf("status %d, want %d; body: %s", r.Status, status, r.Body)
	}
	return r
}

// decode decodes the JSON body into v.
func (r *response) decode(t testing.TB, v any) {
	t.Helper()
	if err := json.Unmarshal(r.Body, v); err != nil {
		t.Fatalf("decode %s: %v", r.Body, err)
	}
}

// json returns the body as a generic JSON object.
func (r *response) json(t testing.TB) map[string]any {
	t.Helper()
	var m map[string]any
	r.decode(t, &m)
	return m
}

// errorMessage returns error.message of an error body.
func (r *response) errorMessage(t testing.TB) string {
	t.Helper()
	var body struct {
		Error struct {
			Code    int            `json:"code"`
			Message string         `json:"message"`
			Meta    map[string]any `json:"metadata"`
		} `json:"error"`
	}
	r.decode(t, &body)
	return body.Error.Message
}

// snapshot returns every row of every table of the database, sorted, so
// that tests can show an operation changed nothing. It reads in one read
// transaction over the environment's cached read-only connection.
func (e *testEnv) snapshot() string {
	e.t.Helper()
	e.settled()
	s := e.snapshots()
	tx, err := s.db.BeginTx(context.Background(), &sql.TxOptions{ReadOnly: true})
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback()
	var out strings.Builder
	for i, table := range s.tables {
		lines, err := rowLines(tx.Stmt(s.stmts[i]).Query())
		if err != nil {
			e.t.Fatal(err)
		}
		sort.Strings(lines)
		fmt.Fprintf(&out, "== %s (%d)\n%s\n", table, len(lines), strings.Join(lines, "\n"))
	}
	return out.String()
}

// fingerprint is the database's content in one statement: cheaper than
// snapshot (one round trip), for telling whether anything changed around
// each of many requests; snapshot then shows what did.
func (e *testEnv) fingerprint() string {
	e.t.Helper()
	e.settled()
	fp, err := e.snapshots().fingerprint()
	if err != nil {
		e.t.Fatal(err)
	}
	return fp
}

// readDB returns the environment's connection to its database, for reads
// (with $1-style placeholders, which both engines accept).
func (e *testEnv) readDB() *sql.DB {
	e.t.Helper()
	e.settled()
	return e.snapshots().db
}

// exec runs a statement on the environment's database ($1-style
// placeholders, which both engines accept) through a write connection of
// its own, as the snapshotter opens its read one. It goes around the API
// and the key cache: it is for states the API cannot make, such as a
// deleted organization.
func (e *testEnv) exec(query string, args ...any) {
	e.t.Helper()
	dsn := e.snap.dsn
	if e.snap.driver == "sqlite" {
		// The file the read-only DSN names, with the store's pragmas:
		// cascades need foreign_keys, and the store's writer may hold the lock.
		dsn = strings.TrimSuffix(dsn, "?mode=ro") + "?_pragma=foreign_keys(1)&_pragma=busy_timeout(10000)"
	}
	db, err := sql.Open(e.snap.driver, dsn)
	if err != nil {
		e.t.Fatalf("exec: %v", err)
	}
	defer db.Close()
	if _, err := db.Exec(query, args...); err != nil {
		e.t.Fatalf("exec %s: %v", query, err)
	}
}

// settled waits until the metering written behind the request path is in
// the database.
func (e *testEnv) settled() {
	e.t.Helper()
	if e.metering == nil {
		return
	}
	if err := e.metering.Sync(context.Background()); err != nil {
		e.t.Fatal(err)
	}
}

// snapshots returns the snapshotter, opened.
func (e *testEnv) snapshots() *snapshotter {
	e.t.Helper()
	if err := e.snap.open(); err != nil {
		e.t.Fatalf("snapshot connection: %v", err)
	}
	return e.snap
}

// snapshotter holds one read-only connection to a test database and a
// prepared statement per table, so that snapshots are cheap enough to take
// around every refused request. It is opened on first use and shared by the
// copies of a testEnv that subtests make.
type snapshotter struct {
	driver string // a database/sql driver: "sqlite" or "pgx"
	dsn    string
	once   sync.Once
	err    error
	db     *sql.DB
	tables []string
	stmts  []*sql.Stmt
	// whole reads every table in one statement, each as one text value:
	// what fingerprint compares.
	whole *sql.Stmt
	// version reads SQLite's data_version, which changes on this
	// connection when any other commits a change to the database: while
	// it stays, the last fingerprint (of version last) still holds.
	version *sql.Stmt
	mu      sync.Mutex
	last    int64
	lastFP  *string
}

// fingerprint reads the database's content in one statement, unless
// (SQLite) nothing was committed since the last read.
func (s *snapshotter) fingerprint() (string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var before, after int64
	if s.version != nil {
		if err := s.version.QueryRow().Scan(&before); err != nil {
			return "", err
		}
		if s.lastFP != nil && before == s.last {
			return *s.lastFP, nil
		}
	}
	lines, err := rowLines(s.whole.Query())
	if err != nil {
		return "", err
	}
	fp := strings.Join(lines, "\n")
	s.lastFP = nil
	if s.version != nil {
		// Kept only if nothing was committed while it was read.
		if err := s.version.QueryRow().Scan(&after); err != nil {
			return "", err
		}
		if after == before {
			s.last, s.lastFP = before, &fp
		}
	}
	return fp, nil
}

// open opens the connection and prepares the statements, once.
func (s *snapshotter) open() error {
	s.once.Do(func() { s.err = s.prepare() })
	return s.err
}

// prepare opens the connection and prepares a statement per table.
func (s *snapshotter) prepare() error {
	db, err := sql.Open(s.driver, s.dsn)
	if err != nil {
		return err
	}
	db.SetMaxOpenConns(1) // one connection, so the prepared statements stay valid
	s.db = db
	if s.tables, err = tableNames(db, s.driver); err != nil {
		return err
	}
	var whole []string
	for _, table := range s.tables {
		stmt, err := db.Prepare(`SELECT * FROM "` + table + `"`)
		if err != nil {
			return err
		}
		s.stmts = append(s.stmts, stmt)
		text, err := tableText(db, s.driver, table)
		if err != nil {
			return err
		}
		whole = append(whole, "("+text+")")
	}
	if s.whole, err = db.Prepare(`SELECT ` + strings.Join(whole, ", ")); err != nil {
		return err
	}
	if s.driver == "sqlite" {
		s.version, err = db.Prepare(`PRAGMA data_version`)
	}
	return err
}

// tableText returns a query of one table's rows as one text value, each
// row's values quoted, in order: equal texts, equal tables.
func tableText(db *sql.DB, driver, table string) (string, error) {
	if driver == "pgx" {
		return `SELECT COALESCE(string_agg(t::text, E'\n' ORDER BY t::text), '') FROM "` + table + `" t`, nil
	}
	rows, err := db.Query(`SELECT name FROM pragma_table_info(?)`, table)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			return "", err
		}
		cols = append(cols, `quote("`+c+`")`)
	}
	if err := rows.Err(); err != nil {
		return "", err
	}
	return `SELECT COALESCE(group_concat(x, char(10)), '') FROM (SELECT ` + strings.Join(cols, ` || ',' || `) +
		` AS x FROM "` + table + `" ORDER BY x)`, nil
}

// tableNames returns the names of the tables of a database, sorted.
func tableNames(db *sql.DB, driver string) ([]string, error) {
	q := `SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' ORDER BY name`
	if driver == "pgx" {
		q = `SELECT table_name FROM information_schema.tables WHERE table_schema = 'public' ORDER BY table_name`
	}
	rows, err := db.Query(q)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		if err := rows.Scan(&name); err != nil {
			return nil, err
		}
		names = append(names, name)
	}
	return names, rows.Err()
}

// close closes the connection if it was opened, and keeps it from opening later.
func (s *snapshotter) close() {
	s.once.Do(func() { s.err = errors.New("snapshotter closed") })
	if s.db != nil {
		s.db.Close()
	}
}

// rowLines reads every row of a query as one line of its columns, each
// rendered by sqlValue, and closes the rows.
func rowLines(rows *sql.Rows, err error) ([]string, error) {
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		line := make([]string, len(cols))
		for i, v := range vals {
			line[i] = sqlValue(v)
		}
		out = append(out, strings.Join(line, " "))
	}
	return out, rows.Err()
}

// sqlValue renders a column value so that no two values look alike: text
// quoted, a blob as x"..." (its bytes readable, so that a stored plaintext
// shows), NULL bare, numbers and times as they print.
func sqlValue(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case string:
		return strconv.Quote(v)
	case []byte:
		return "x" + strconv.Quote(string(v))
	default:
		return fmt.Sprint(v)
	}
}

// unchanged runs fn and fails the test if the database differs afterwards.
func (e *testEnv) unchanged(name string, fn func()) {
	e.t.Helper()
	before := e.snapshot()
	fn()
	if after := e.snapshot(); after != before {
		e.t.Errorf("%s changed the database:\nbefore:\n%s\nafter:\n%s", name, before, after)
	}
}

// TestSnapshot checks that a snapshot is stable over an unchanged database
// and sees a row added and a row changed.
func TestSnapshot(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	before := e.snapshot()
	if e.snapshot() != before {
		t.Fatal("two snapshots of an unchanged database differ")
	}
	e.createWorkspace(e.mgmt, "changed")
	if e.snapshot() == before {
		t.Fatal("a new workspace does not change the snapshot")
	}
	before = e.snapshot()
	e.do("PATCH", "/api/v1/workspaces/changed", e.mgmt, map[string]any{"description": "x"}).want(t, http.StatusOK)
	if e.snapshot() == before {
		t.Fatal("an update does not change the snapshot")
	}
}

// createKey creates a regular key through the API and returns its hash and
// plaintext.
func (e *testEnv) createKey(mgmt string, body map[string]any) (hash, plaintext string) {
	e.t.Helper()
	var out struct {
		Data struct {
			Hash string `json:"hash"`
		} `json:"data"`
		Key string `json:"key"`
	}
	e.do("POST", "/api/v1/keys", mgmt, body).want(e.t, http.StatusCreated).decode(e.t, &out)
	return out.Data.Hash, out.Key
}

// addMember adds an organization member through the API and returns its id.
func (e *testEnv) addMember(mgmt, email string) string {
	e.t.Helper()
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/organization/members", mgmt, map[string]any{"email": email}).
		want(e.t, http.StatusCreated).decode(e.t, &out)
	return out.Data.ID
}

// createWorkspace creates a workspace through the API and returns its id.
func (e *testEnv) createWorkspace(mgmt, slug string) string {
	e.t.Helper()
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/workspaces", mgmt, map[string]any{"name": "WS " + slug, "slug": slug}).
		want(e.t, http.StatusCreated).decode(e.t, &out)
	return out.Data.ID
}

// clock is a settable clock.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

// logBuffer collects the server's log lines; requests of concurrent tests
// write it while a failing check reads it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func (b *logBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}

// TestFingerprintSeesEveryCommit: the fingerprint that tells whether a
// refused request changed anything reads the database again after every
// commit (on SQLite it skips the read while data_version stays): a write
// through the API, a write from another connection, and one that puts a
// value back as it was are all seen; with no commit it is the same.
func TestFingerprintSeesEveryCommit(t *testing.T) {
	e := newEnv(t)
	first := e.fingerprint()
	if again := e.fingerprint(); again != first {
		t.Fatal("the fingerprint changed with no commit")
	}
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "seen"})
	afterCreate := e.fingerprint()
	if afterCreate == first {
		t.Fatal("a key created through the API left the fingerprint as it was")
	}
	e.exec(`UPDATE api_keys SET name = 'renamed' WHERE hash = $1`, hash)
	renamed := e.fingerprint()
	if renamed == afterCreate {
		t.Fatal("a key renamed from another connection left the fingerprint as it was")
	}
	e.exec(`UPDATE api_keys SET name = 'seen' WHERE hash = $1`, hash)
	if back := e.fingerprint(); back != afterCreate {
		t.Fatal("the key's name put back does not give the fingerprint before the rename")
	}
}
