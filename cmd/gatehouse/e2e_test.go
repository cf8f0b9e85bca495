package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"gatehouse"
)

// TestEndToEnd: first start prints one management key; the API, health,
// readiness and metrics answer; cancel shuts down cleanly; a restart on the
// same database prints nothing and the old key still works.
func TestEndToEnd(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	s := startServer(t, nil, "serve", "--addr", "127.0.0.1:0", "--database", db)

	keys := printedKeys(t, s.stderr.String())
	if len(keys) != 1 {
		t.Fatalf("first start printed %d management keys, want exactly 1\nstderr:\n%s", len(keys), s.stderr)
	}
	key := keys[0]
	if strings.Count(s.stderr.String(), key) != 1 {
		t.Errorf("the key appears %d times in stderr, want once", strings.Count(s.stderr.String(), key))
	}
	if !strings.Contains(s.stderr.String(), "shown only this once") {
		t.Errorf("first-start message does not say the key is shown once:\n%s", s.stderr)
	}

	status, body := s.do("GET", "/api/v1/key", key, nil)
	data, _ := body["data"].(map[string]any)
	if status != http.StatusOK || data["is_management_key"] != true {
		t.Fatalf("GET /key = %d %v, want 200 with a management key", status, body)
	}
	orgID := data["organization_id"]
	status, body = s.do("POST", "/api/v1/keys", key, map[string]any{"name": "first"})
	if status != http.StatusCreated || !strings.HasPrefix(str(body["key"]), "sk-gh-v1-") {
		t.Fatalf("POST /keys = %d %v, want 201 with a key", status, body)
	}
	apiKey := str(body["key"])
	if status, body := s.do("GET", "/api/v1/key", "", nil); status != http.StatusUnauthorized {
		t.Errorf("GET /key without a key = %d %v, want 401", status, body)
	}
	if status, body := s.do("GET", "/api/v1/workspaces/default", key, nil); status != http.StatusOK {
		t.Errorf("GET /workspaces/default = %d %v: the first organization has no default workspace", status, body)
	}
	// SCIM is mounted, behind the organization's own token.
	status, body = s.do("POST", "/api/v1/scim/token", key, nil)
	scimData, _ := body["data"].(map[string]any)
	if status != http.StatusCreated || !strings.HasPrefix(str(scimData["token"]), "sk-gh-scim-v1-") {
		t.Fatalf("POST /scim/token = %d %v", status, body)
	}
	if status, _ := s.do("GET", "/scim/v2/Users", str(scimData["token"]), nil); status != http.StatusOK {
		t.Errorf("GET /scim/v2/Users with the token = %d, want 200", status)
	}
	if status, _ := s.do("GET", "/scim/v2/Users", key, nil); status != http.StatusUnauthorized {
		t.Errorf("GET /scim/v2/Users with a management key = %d, want 401", status)
	}
	for path, want := range map[string]string{
		"/healthz":             `"ok"`,
		"/readyz":              `"ok"`,
		"/metrics":             "go_goroutines",
		"/api/v1/openapi.json": `"openapi"`,
	} {
		status, raw := s.get(path)
		if status != http.StatusOK || !strings.Contains(raw, want) {
			t.Errorf("GET %s = %d, body without %q:\n%.300s", path, status, want, raw)
		}
	}
	s.stop()
	if _, ok := logLine(s.stderr.String(), "stopped"); !ok {
		t.Errorf("no stopped log line after shutdown:\n%s", s.stderr)
	}
	// Plaintext keys are never logged, not even after serving requests.
	printedKeys(t, s.stderr.String())
	if strings.Contains(s.stderr.String(), apiKey) {
		t.Errorf("the API key created over HTTP appears in stderr")
	}
	if _, err := net.DialTimeout("tcp", s.addr, time.Second); err == nil {
		t.Errorf("%s still accepts connections after run returned", s.addr)
	}

	s2 := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	if keys := printedKeys(t, s2.stderr.String()); len(keys) != 0 {
		t.Errorf("restart printed keys %v, want none", keys)
	}
	if strings.Contains(s2.stderr.String(), "shown only this once") {
		t.Errorf("restart printed the first-start message:\n%s", s2.stderr)
	}
	status, body = s2.do("GET", "/api/v1/key", key, nil)
	data, _ = body["data"].(map[string]any)
	if status != http.StatusOK || data["organization_id"] != orgID {
		t.Errorf("GET /key after restart = %d %v, want 200 in organization %v", status, body, orgID)
	}
	if status, body := s2.do("GET", "/api/v1/key", apiKey, nil); status != http.StatusOK {
		t.Errorf("GET /key with the API key after restart = %d %v", status, body)
	}
	s2.stop()
	if n := countRows(t, db, `SELECT count(*) FROM organizations`); n != 1 {
		t.Errorf("%d organizations after restart, want 1", n)
	}
}

// TestGracefulShutdown: after cancel the listener closes at once, so new
// connections are refused, while a request already in its handler is still
// answered (and its write kept); run returns nil only after that.
func TestGracefulShutdown(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	vars := map[string]string{"GATEHOUSE_SHUTDOWN_TIMEOUT": "20s"}
	s := startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]

	// An in-flight request: with "Expect: 100-continue" the server answers
	// "100 Continue" only once the handler reads the body, so after reading
	// it we know the handler is running and waiting for the rest.
	body := `{"name":"in flight"}`
	conn, err := net.DialTimeout("tcp", s.addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(waitLimit))
	_, err = io.WriteString(conn, "POST /api/v1/keys HTTP/1.1\r\nHost: gatehouse\r\n"+
		"Authorization: Bearer "+key+"\r\nContent-Type: application/json\r\n"+
		"Expect: 100-continue\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "HTTP/1.1 100") {
		t.Fatalf("waiting for 100 Continue: %q %v", line, err)
	}
	if line, err := br.ReadString('\n'); err != nil || line != "\r\n" {
		t.Fatalf("after 100 Continue: %q %v", line, err)
	}

	s.cancel()
	deadline := time.Now().Add(waitLimit)
	for {
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if err != nil {
			break // refused: the listener is closed
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatalf("new connections still accepted %v after cancel", waitLimit)
		}
		time.Sleep(5 * time.Millisecond)
	}
	select {
	case err := <-s.done:
		t.Fatalf("run returned (%v) while a request was in flight", err)
	default:
	}

	if _, err := io.WriteString(conn, body); err != nil {
		t.Fatal(err)
	}
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("in-flight request: %v", err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusCreated || !strings.Contains(string(raw), "sk-gh-v1-") {
		t.Errorf("in-flight POST /keys = %d %s, want 201", resp.StatusCode, raw)
	}
	select {
	case err := <-s.done:
		if err != nil {
			t.Errorf("run = %v, want nil", err)
		}
	case <-time.After(waitLimit):
		t.Fatalf("run did not return after the in-flight request finished")
	}
	s.once.Do(func() {}) // already stopped
	if _, ok := logLine(s.stderr.String(), "stopped"); !ok {
		t.Errorf("no stopped log line:\n%s", s.stderr)
	}

	// The key created by the in-flight request was kept.
	s = startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
	status, list := s.do("GET", "/api/v1/keys", key, nil)
	if data, _ := list["data"].([]any); status != http.StatusOK || len(data) != 1 {
		t.Errorf("GET /keys after restart = %d %v, want the in-flight key", status, list)
	}
}

// TestShutdownTimeout: a client that never finishes its request cannot hold
// the server beyond the grace period; run then reports the shutdown error.
func TestShutdownTimeout(t *testing.T) {
	s := startServer(t, map[string]string{"GATEHOUSE_SHUTDOWN_TIMEOUT": "200ms"},
		"--addr", "127.0.0.1:0", "--database", filepath.Join(t.TempDir(), "g.db"))
	conn, err := net.DialTimeout("tcp", s.addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "GET /healthz HTTP/1.1\r\n")
	start := time.Now()
	s.cancel()
	select {
	case err := <-s.done:
		if err == nil || !strings.Contains(err.Error(), "GATEHOUSE_SHUTDOWN_TIMEOUT") {
			t.Errorf("run = %v, want an error naming GATEHOUSE_SHUTDOWN_TIMEOUT", err)
		}
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("run returned %v after cancel with a 200ms grace period", d)
		}
	case <-time.After(waitLimit):
		t.Fatalf("run did not return within %v despite a 200ms grace period", waitLimit)
	}
	s.once.Do(func() {})
	// The straggler's connection was closed, not left to the process exit.
	conn.SetReadDeadline(time.Now().Add(3 * time.Second)) // below the server's 10 s header timeout
	if n, err := conn.Read(make([]byte, 1)); !errors.Is(err, io.EOF) && !errors.Is(err, syscall.ECONNRESET) {
		t.Errorf("read on the straggler's connection after run returned = %d, %v; want it closed", n, err)
	}
}

func TestBootstrapKey(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	key := gatehouse.ManagementKeyPrefix + strings.Repeat("0123456789abcdef", 4)
	vars := map[string]string{
		"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": key,
		"GATEHOUSE_DATABASE_URL":             db,
		"GATEHOUSE_ADDR":                     "127.0.0.1:0",
	}
	for i := range 2 {
		s := startServer(t, vars)
		if strings.Contains(s.stderr.String(), key) {
			t.Errorf("start %d: the bootstrap key was printed", i)
		}
		if keys := printedKeys(t, s.stderr.String()); len(keys) != 0 {
			t.Errorf("start %d: printed keys %v, want none", i, keys)
		}
		status, body := s.do("GET", "/api/v1/key", key, nil)
		data, _ := body["data"].(map[string]any)
		if status != http.StatusOK || data["is_management_key"] != true {
			t.Errorf("start %d: GET /key with the bootstrap key = %d %v", i, status, body)
		}
		if status, body := s.do("POST", "/api/v1/keys", key, map[string]any{"name": "k"}); status != http.StatusCreated {
			t.Errorf("start %d: POST /keys = %d %v", i, status, body)
		}
		s.stop()
		if n := countRows(t, db, `SELECT count(*) FROM api_keys WHERE management = 1`); n != 1 {
			t.Errorf("start %d: %d management keys, want exactly 1", i, n)
		}
		if n := countRows(t, db, `SELECT count(*) FROM organizations`); n != 1 {
			t.Errorf("start %d: %d organizations, want 1", i, n)
		}
	}
}

// TestBootstrapKeyOnExistingDatabase: the key is added to the first
// organization of a database that already has one (and its printed key).
func TestBootstrapKeyOnExistingDatabase(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	first := printedKeys(t, s.stderr.String())
	if len(first) != 1 {
		t.Fatalf("first start printed %v", first)
	}
	s.stop()

	key := gatehouse.ManagementKeyPrefix + strings.Repeat("f", 40)
	s = startServer(t, map[string]string{"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": key}, "--addr", "127.0.0.1:0", "--database", db)
	_, b1 := s.do("GET", "/api/v1/key", first[0], nil)
	status, b2 := s.do("GET", "/api/v1/key", key, nil)
	org1, _ := b1["data"].(map[string]any)
	org2, _ := b2["data"].(map[string]any)
	if status != http.StatusOK || org1["organization_id"] != org2["organization_id"] {
		t.Errorf("bootstrap key on an existing database = %d %v, want 200 in the organization of %v", status, b2, b1)
	}
	s.stop()
	if n := countRows(t, db, `SELECT count(*) FROM api_keys WHERE management = 1`); n != 2 {
		t.Errorf("%d management keys, want 2", n)
	}
}

// TestBootstrapKeyTakenByAnotherOrganization: a value that exists as a key of
// another organization is an error naming the variable.
func TestBootstrapKeyTakenByAnotherOrganization(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	createOrg(t, nil, "--name", "First", "--database", db)
	second := createOrg(t, nil, "--name", "Second", "--database", db)
	key := createMgmtKey(t, nil, "--org", second, "--database", db)
	_, errOut, err := cli(t, map[string]string{"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": key, "GATEHOUSE_DATABASE_URL": db}, "--addr", "127.0.0.1:0")
	if err == nil || !strings.Contains(err.Error(), "GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY") {
		t.Errorf("bootstrap key of another organization: err = %v, want one naming the variable", err)
	}
	if _, ok := logLine(errOut, "listening"); ok {
		t.Errorf("listened despite the bad bootstrap key")
	}
}

// TestSecretKeyFile: without GATEHOUSE_SECRET_KEY a key file beside the
// database is created (0600) and reused, so secrets survive a restart.
func TestSecretKeyFile(t *testing.T) {
	db := filepath.Join(t.TempDir(), "g.db")
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]
	fi, err := os.Stat(db + ".key")
	if err != nil {
		t.Fatalf("no secret key file: %v", err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Errorf("secret key file mode = %v, want 0600", perm)
	}
	before, _ := os.ReadFile(db + ".key")
	id, masked := s.createDestination(t, key)
	s.stop()

	s = startServer(t, nil, "--addr", "127.0.0.1:0", "--database", db)
	if after, _ := os.ReadFile(db + ".key"); string(after) != string(before) {
		t.Errorf("secret key file changed on restart")
	}
	s.checkDestination(t, key, id, masked)
	s.stop()

	// The file holds the key: giving the same key through the environment
	// reads the same secrets.
	s = startServer(t, map[string]string{"GATEHOUSE_SECRET_KEY": strings.TrimSpace(string(before))},
		"--addr", "127.0.0.1:0", "--database", db)
	s.checkDestination(t, key, id, masked)

	// The CLI, too, uses (and does not replace) the key file.
	createOrg(t, nil, "--name", "Other", "--database", db)
	if after, _ := os.ReadFile(db + ".key"); string(after) != string(before) {
		t.Errorf("secret key file changed by the CLI")
	}
}

// TestSecretKeyFromEnv: GATEHOUSE_SECRET_KEY (base64 or hex) is used instead of a file.
func TestSecretKeyFromEnv(t *testing.T) {
	raw := make([]byte, gatehouse.SecretKeySize)
	rand.Read(raw)
	for name, value := range map[string]string{
		"base64": base64.StdEncoding.EncodeToString(raw),
		"hex":    hex.EncodeToString(raw),
	} {
		t.Run(name, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "g.db")
			vars := map[string]string{"GATEHOUSE_SECRET_KEY": value}
			s := startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
			key := printedKeys(t, s.stderr.String())[0]
			id, masked := s.createDestination(t, key)
			s.stop()
			if fileExists(db + ".key") {
				t.Errorf("a key file was created although GATEHOUSE_SECRET_KEY is set")
			}
			s = startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
			s.checkDestination(t, key, id, masked)
		})
	}
}

// TestSecretKeyFileSetting: GATEHOUSE_SECRET_KEY_FILE names the file to create and use.
func TestSecretKeyFileSetting(t *testing.T) {
	dir := t.TempDir()
	db, keyFile := filepath.Join(dir, "g.db"), filepath.Join(dir, "secret.key")
	vars := map[string]string{"GATEHOUSE_SECRET_KEY_FILE": keyFile}
	s := startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
	key := printedKeys(t, s.stderr.String())[0]
	id, masked := s.createDestination(t, key)
	s.stop()
	if !fileExists(keyFile) || fileExists(db+".key") {
		t.Fatalf("key file at %s: %v, at the default place: %v", keyFile, fileExists(keyFile), fileExists(db+".key"))
	}
	s = startServer(t, vars, "--addr", "127.0.0.1:0", "--database", db)
	s.checkDestination(t, key, id, masked)
}

const headerSecret = "Bearer webhook-secret-0123456789"

// createDestination creates a webhook destination with a secret header and
// returns its id and the masked header value.
func (s *testServer) createDestination(t *testing.T, key string) (string, string) {
	t.Helper()
	status, body := s.do("POST", "/api/v1/observability/destinations", key, map[string]any{
		"name": "hook",
		"type": "webhook",
		"config": map[string]any{
			"url":     "https://example.com/hook",
			"headers": map[string]string{"Authorization": headerSecret},
		},
	})
	if status != http.StatusCreated {
		t.Fatalf("POST /observability/destinations = %d %v", status, body)
	}
	data, _ := body["data"].(map[string]any)
	masked := destinationHeader(data)
	if masked != "********" || strings.Contains(masked, "webhook-secret") {
		t.Fatalf("created destination header = %q, want it masked whole", masked)
	}
	return str(data["id"]), masked
}

// checkDestination requires the destination to be readable with its secret intact.
func (s *testServer) checkDestination(t *testing.T, key, id, masked string) {
	t.Helper()
	status, body := s.do("GET", "/api/v1/observability/destinations/"+id, key, nil)
	data, _ := body["data"].(map[string]any)
	if status != http.StatusOK || destinationHeader(data) != masked {
		t.Errorf("GET destination after restart = %d %v, want 200 with header %q", status, body, masked)
	}
	status, body = s.do("GET", "/api/v1/observability/destinations", key, nil)
	if status != http.StatusOK {
		t.Errorf("GET destinations after restart = %d %v", status, body)
	}
}

func destinationHeader(data map[string]any) string {
	cfg, _ := data["config"].(map[string]any)
	headers, _ := cfg["headers"].(map[string]any)
	return str(headers["Authorization"])
}

func str(v any) string {
	s, _ := v.(string)
	return s
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return !errors.Is(err, os.ErrNotExist)
}

// countRows runs a count query on the SQLite file (the driver is registered
// by gatehouse/sqlite, which this command imports).
func countRows(t *testing.T, path, query string) int {
	t.Helper()
	db, err := sql.Open("sqlite", path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var n int
	if err := db.QueryRowContext(ctx, query).Scan(&n); err != nil {
		t.Fatalf("%s: %v", query, err)
	}
	return n
}

// TestFirstStartMessageAsREADME: what the first start prints is what the
// README's Quick start shows, word for word, but for the address and what
// the README elides (each word ending in "…" stands for any word).
func TestFirstStartMessageAsREADME(t *testing.T) {
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)prints\nthe key once to stderr:\n\n```\n(.*?)\n```").FindSubmatch(readme)
	if m == nil {
		t.Fatal("the README's Quick start shows no first-start message")
	}
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", filepath.Join(t.TempDir(), "gatehouse.db"))
	waitFor(t, "the first-start message", func() bool { return strings.Contains(s.stderr.String(), "(A lost key") })
	shown := strings.ReplaceAll(string(m[1]), "127.0.0.1:8080", s.addr)
	var pattern strings.Builder
	for _, word := range regexp.MustCompile(`\S*…|[^…\s]+|\s+`).FindAllString(shown, -1) {
		if strings.HasSuffix(word, "…") {
			pattern.WriteString(`[^\s)]+`)
		} else {
			pattern.WriteString(regexp.QuoteMeta(word))
		}
	}
	if !regexp.MustCompile(pattern.String()).MatchString(s.stderr.String()) {
		t.Errorf("the first start printed:\n%s\nthe README shows:\n%s", s.stderr.String(), m[1])
	}
}
