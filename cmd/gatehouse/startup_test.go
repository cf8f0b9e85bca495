package main

import (
	"context"
	"database/sql"
	"encoding/base64"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlite"
	"gatehouse/storetest"
)

var bannerURL = regexp.MustCompile(`and serves (http://\S+/api/v1)\.`)

// TestFirstStartBanner: the first start's key is printed once the server
// answers: when the banner appears, its URL already serves requests, and
// the key in it works there.
func TestFirstStartBanner(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"--addr", "127.0.0.1:0", "--database", db}, env(nil), &syncBuffer{}, stderr)
	}()
	deadline := time.Now().Add(waitLimit)
	var m []string
	for m == nil {
		if time.Now().After(deadline) {
			t.Fatalf("no banner within %v:\n%s", waitLimit, stderr)
		}
		select {
		case err := <-done:
			t.Fatalf("run returned %v before printing the banner:\n%s", err, stderr)
		default:
		}
		m = bannerURL.FindStringSubmatch(stderr.String())
		if m == nil {
			time.Sleep(time.Millisecond)
		}
	}
	// At once, with no retry: the server must already answer.
	client := &http.Client{Timeout: waitLimit}
	keys := printedKeys(t, stderr.String())
	if len(keys) != 1 {
		t.Fatalf("the banner holds %d keys, want 1:\n%s", len(keys), stderr)
	}
	req, _ := http.NewRequest("GET", m[1]+"/key", nil)
	req.Header.Set("Authorization", "Bearer "+keys[0])
	res, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s/key when the banner appeared: %v", m[1], err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Errorf("GET /key with the printed key = %d, want 200", res.StatusCode)
	}
	for _, want := range []string{"gatehouse mgmt-keys create --org", "gatehouse orgs list"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("the banner does not mention %q:\n%s", want, stderr)
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Errorf("run after cancel: %v", err)
	}
}

// TestFailedStartCreatesNothing: a start that fails (a busy address, a
// bad setting, a database that is not one) creates no database, no key
// file, no organization, and prints no key.
func TestFailedStartCreatesNothing(t *testing.T) {
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer busy.Close()
	taken := busy.Addr().String()
	providers := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(providers, []byte("providers:\n  - id: x\n    base_url: nowhere\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		vars map[string]string
		want []string // in the error
	}{
		{"API address taken", map[string]string{"GATEHOUSE_ADDR": taken}, []string{taken, "--addr"}},
		{"metrics address taken", map[string]string{"GATEHOUSE_METRICS_ADDR": taken}, []string{taken, "GATEHOUSE_METRICS_ADDR"}},
		{"profiler address taken", map[string]string{"GATEHOUSE_PPROF_ADDR": taken}, []string{taken, "GATEHOUSE_PPROF_ADDR"}},
		{"invalid providers file", map[string]string{"GATEHOUSE_PROVIDERS_FILE": providers}, []string{"providers.yaml:3"}},
		{"invalid Redis URL", map[string]string{"GATEHOUSE_REDIS_URL": "http://cache"}, []string{"GATEHOUSE_REDIS_URL"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			db := filepath.Join(dir, "g.db")
			vars := map[string]string{"GATEHOUSE_DATABASE_URL": db, "GATEHOUSE_ADDR": "127.0.0.1:0"}
			for k, v := range tt.vars {
				vars[k] = v
			}
			_, errOut, err := cli(t, vars, "serve")
			if err == nil {
				t.Fatal("serve succeeded")
			}
			for _, want := range tt.want {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not name %q", err, want)
				}
			}
			if keys := printedKeys(t, errOut); len(keys) > 0 {
				t.Errorf("a failed start printed keys %v", keys)
			}
			if entries, _ := os.ReadDir(dir); len(entries) > 0 {
				t.Errorf("a failed start left %v", entryNames(entries))
			}
		})
	}

	// A database that is not one: refused, unchanged, and no key file.
	dir := t.TempDir()
	notes := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(notes, []byte(strings.Repeat("my notes, not a database\n", 20)), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"orgs", "create", "--name", "x"}, {"orgs", "list"},
		{"mgmt-keys", "create", "--org", "x"}, {"rotate-secret-key"}} {
		_, _, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": notes}, args...)
		if err == nil || !strings.Contains(err.Error(), notes) {
			t.Errorf("gatehouse %v on a text file: %v, want an error naming it", args, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 1 {
			t.Errorf("gatehouse %v on a text file left %v", args, entryNames(entries))
		}
	}
}

func entryNames(entries []os.DirEntry) []string {
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	return names
}

// TestUnsupportedDatabaseScheme: a URL of another database is named as
// such by every command, and nothing is created.
func TestUnsupportedDatabaseScheme(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, url := range []string{"mysql://gatehouse:hunter2@db.internal/gatehouse", "sqlite://./gatehouse.db", "redis://127.0.0.1:6379/0"} {
		scheme, _, _ := strings.Cut(url, "://")
		for _, args := range [][]string{{"serve"}, {"orgs", "create", "--name", "x"}, {"orgs", "list"}, {"mgmt-keys", "create", "--org", "x"},
			{"rotate-secret-key"}, {"bench-seed"}} {
			_, _, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": url, "GATEHOUSE_ADDR": "127.0.0.1:0"}, args...)
			if err == nil || !strings.Contains(err.Error(), `unsupported scheme "`+scheme+`"`) || !strings.Contains(err.Error(), "postgres://") {
				t.Errorf("gatehouse %v with %s: %v, want the scheme named as unsupported", args, url, err)
			}
			if err != nil && strings.Contains(err.Error(), "hunter2") {
				t.Errorf("the error shows the URL's password: %v", err)
			}
		}
	}
	if entries, _ := os.ReadDir("."); len(entries) > 0 {
		t.Errorf("commands with unsupported URLs created %v", entryNames(entries))
	}
}

// TestRecoverAccess: with the first key lost, orgs list shows the
// organization and mgmt-keys create makes a key that works; neither
// command creates a database that does not exist. On SQLite, and on
// PostgreSQL when set up (where they need no secret key: they touch no
// secret).
func TestRecoverAccess(t *testing.T) {
	for _, engine := range []string{"sqlite", "postgres"} {
		t.Run(engine, func(t *testing.T) {
			vars := map[string]string{}
			if engine == "postgres" {
				pg, _ := pgInstances(t)
				vars["GATEHOUSE_DATABASE_URL"] = pg["GATEHOUSE_DATABASE_URL"]
				vars["GATEHOUSE_SECRET_KEY"] = pg["GATEHOUSE_SECRET_KEY"]
			} else {
				vars["GATEHOUSE_DATABASE_URL"] = filepath.Join(t.TempDir(), "g.db")
			}
			s := startServer(t, vars, "--addr", "127.0.0.1:0") // its banner is "lost"
			first, _ := logLine(s.stderr.String(), "created the first organization")
			s.stop()

			cliVars := map[string]string{"GATEHOUSE_DATABASE_URL": vars["GATEHOUSE_DATABASE_URL"]} // no secret key
			out, errOut, err := cli(t, cliVars, "orgs", "list")
			if err != nil {
				t.Fatalf("orgs list: %v\n%s", err, errOut)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if len(lines) != 2 || !strings.HasPrefix(lines[0], "ID") || !strings.Contains(lines[1], "Default organization") {
				t.Fatalf("orgs list =\n%s\nwant a header and the first organization", out)
			}
			org := strings.Fields(lines[1])[0]
			if org != first["organization_id"] {
				t.Errorf("orgs list shows %s, the server created %v", org, first["organization_id"])
			}
			key := createMgmtKey(t, cliVars, "--org", org)
			s = startServer(t, vars, "--addr", "127.0.0.1:0")
			if keys := printedKeys(t, s.stderr.String()); len(keys) != 0 {
				t.Errorf("a restart printed keys %v", keys)
			}
			status, body := s.do("GET", "/api/v1/key", key, nil)
			if status != http.StatusOK || body["data"].(map[string]any)["organization_id"] != org {
				t.Errorf("GET /key with the recovered key = %d %v", status, body)
			}
		})
	}
}

// TestCommandsNeedAnExistingDatabase: orgs list, mgmt-keys create and
// rotate-secret-key name a missing database as such and create nothing
// (no database, no key file, no lock file).
func TestCommandsNeedAnExistingDatabase(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "missing.db")
	for _, args := range [][]string{{"orgs", "list"}, {"mgmt-keys", "create", "--org", "5d5d3f7e-93d2-4f5c-9c57-2a3c1b2e4f60"}, {"rotate-secret-key"}} {
		_, _, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": db}, args...)
		if err == nil || !strings.Contains(err.Error(), db) || !strings.Contains(err.Error(), "not exist") {
			t.Errorf("gatehouse %v on a missing database: %v, want it named as missing", args, err)
		}
		if entries, _ := os.ReadDir(dir); len(entries) > 0 {
			t.Errorf("gatehouse %v created %v", args, entryNames(entries))
		}
	}
}

// TestPostgresSystemDatabaseWarning: a URL naming PostgreSQL's own
// database is warned about (and, for a command that needs a Gatehouse
// database, refused before anything is created in it).
func TestPostgresSystemDatabaseWarning(t *testing.T) {
	server := pgtest.ServerURL(t)
	u := strings.Replace(server, "/"+pathOf(server), "/postgres", 1)
	_, errOut, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": u}, "orgs", "list")
	if !strings.Contains(errOut, "system database postgres") || !strings.Contains(errOut, "CREATE DATABASE gatehouse") {
		t.Errorf("orgs list on the postgres database logged:\n%s\nwant a warning naming it", errOut)
	}
	if err != nil && !strings.Contains(err.Error(), "no Gatehouse schema") { // (nil: it already holds one)
		t.Errorf("orgs list on the postgres database: %v, want it refused as holding no Gatehouse schema", err)
	}
	// A database of its own is not warned about.
	pg, _ := pgInstances(t)
	_, errOut, _ = cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": pg["GATEHOUSE_DATABASE_URL"]}, "orgs", "list")
	if strings.Contains(errOut, "system database") {
		t.Errorf("orgs list on a database of its own warned:\n%s", errOut)
	}
}

// pathOf returns the database name in a postgres:// URL.
func pathOf(url string) string {
	rest := url[strings.Index(url, "://")+3:]
	if i := strings.Index(rest, "/"); i >= 0 {
		rest = rest[i+1:]
	} else {
		return ""
	}
	if i := strings.IndexAny(rest, "?#"); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// TestSchemaOnStart: the start logs the schema it created or found, and a
// database that a newer Gatehouse migrated is refused, naming what this
// binary does not know.
func TestSchemaOnStart(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": db}
	s := startServer(t, vars, "--addr", "127.0.0.1:0")
	created, ok := logLine(s.stderr.String(), "database schema created")
	s.stop()
	if !ok || created["version"] == "" || created["migrations"] == nil {
		t.Fatalf("first start: no schema line:\n%s", s.stderr)
	}
	s = startServer(t, vars, "--addr", "127.0.0.1:0")
	line, ok := logLine(s.stderr.String(), "database schema")
	s.stop()
	if !ok || line["version"] != created["version"] {
		t.Fatalf("second start: schema line %v, want version %v", line, created["version"])
	}

	raw, err := sql.Open("sqlite", "file:"+db)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := raw.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES ('migration/9999_newer.sql', 1)`); err != nil {
		t.Fatal(err)
	}
	raw.Close()
	for _, args := range [][]string{{"serve", "--addr", "127.0.0.1:0"}, {"orgs", "list"}} {
		_, _, err := cli(t, vars, args...)
		if err == nil || !strings.Contains(err.Error(), "migration/9999_newer.sql") || !strings.Contains(err.Error(), "newer Gatehouse") {
			t.Errorf("gatehouse %v on a newer database: %v, want a refusal naming its migration", args, err)
		}
	}
}

// TestServeLockNamesHolder: a second server on a SQLite database is
// refused, naming the process that serves it.
func TestServeLockNamesHolder(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": db}, "--addr", "127.0.0.1:0")
	_, _, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": db}, "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "in use by gatehouse serve (pid ") {
		t.Errorf("a second server: %v, want a refusal naming the first", err)
	}
}

// previousReleaseDatabase makes a SQLite database as the previous release
// left it (its migrations and rows), with its key file, and returns the
// number of migrations recorded.
func previousReleaseDatabase(t *testing.T, path string) int {
	t.Helper()
	old, data := storetest.PreviousRelease(t, "sqlite", filepath.Join("..", "..", "sqlite", "migration"))
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=foreign_keys(1)")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE schema_migrations (name TEXT PRIMARY KEY, applied_at INTEGER NOT NULL)`); err != nil {
		t.Fatal(err)
	}
	for _, m := range old {
		if _, err := raw.Exec(m.SQL); err != nil {
			t.Fatalf("%s: %v", m.Name, err)
		}
		if _, err := raw.Exec(`INSERT INTO schema_migrations (name, applied_at) VALUES (?, 1)`, m.Name); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := raw.Exec(data); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path+".key", []byte(base64.StdEncoding.EncodeToString(gatehouse.NewSecretKey())+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return len(old)
}

// migrationsRecorded counts the rows of schema_migrations.
func migrationsRecorded(t *testing.T, path string) int {
	t.Helper()
	raw, err := sql.Open("sqlite", "file:"+path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var n int
	if err := raw.QueryRow(`SELECT count(*) FROM schema_migrations`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestUpgradeBesideTheOldServer: while a server of the previous release
// serves a SQLite database (it holds the serve lock), neither the new
// release's server nor its commands migrate the database under it: both
// refuse, naming it, and the schema stays the old one. Once it stops, the
// new server upgrades the database, says so, and serves its rows.
func TestUpgradeBesideTheOldServer(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	released := previousReleaseDatabase(t, db)
	old, _, err := sqlite.Lock(db, "gatehouse serve") // the previous release, serving
	if err != nil {
		t.Fatal(err)
	}
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": db}
	_, _, err = cli(t, vars, "serve", "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "in use by gatehouse serve (pid ") {
		t.Errorf("the new server beside the old one: %v, want a refusal naming it", err)
	}
	_, _, err = cli(t, vars, "orgs", "list")
	if err == nil || !strings.Contains(err.Error(), "upgrade the server first") || !strings.Contains(err.Error(), "in use by gatehouse serve (pid ") ||
		!strings.Contains(err.Error(), "nothing was changed") {
		t.Errorf("orgs list of the new release beside the old server: %v, want a refusal", err)
	}
	if n := migrationsRecorded(t, db); n != released {
		t.Fatalf("the database records %d migrations after the refusals, want the previous release's %d", n, released)
	}
	old() // the old server stops

	s := startServer(t, vars, "--addr", "127.0.0.1:0")
	line, ok := logLine(s.stderr.String(), "database schema upgraded")
	if !ok || line["from"] != "0009_reservations_vacuum" || line["applied"] == nil {
		t.Errorf("no upgrade line naming what was applied:\n%s", s.stderr)
	}
	status, body := s.do("GET", "/api/v1/key", "sk-gh-mgmt-v1-"+strings.Repeat("0", 63)+"1", nil)
	if status != http.StatusOK || body["data"].(map[string]any)["organization_id"] != "a0000000-0000-4000-8000-000000000001" {
		t.Errorf("the previous release's management key on the upgraded database: %d %v", status, body)
	}
	if keys := printedKeys(t, s.stderr.String()); len(keys) != 0 {
		t.Errorf("the upgraded start printed keys %v", keys)
	}
}
