package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/netip"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"
)

// Helpers shared by the tests of this package: a goroutine-safe buffer, an
// environment from a map, a server started through run on port 0, and the
// CLI run to completion.

// syncBuffer is an io.Writer that the server goroutine writes while the test reads.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env returns a getenv over vars; nothing of the process environment leaks in.
func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

// testServer is one run of `gatehouse serve` in a goroutine.
type testServer struct {
	t      *testing.T
	addr   string // host:port
	url    string // http://host:port
	stderr *syncBuffer
	cancel context.CancelFunc
	done   chan error
	client *http.Client
	once   sync.Once
}

const waitLimit = 10 * time.Second

// startServer runs `gatehouse args...` and waits for its "listening" log line.
// The server is stopped (and must stop cleanly) at the end of the test.
func startServer(t *testing.T, vars map[string]string, args ...string) *testServer {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &testServer{
		t: t, stderr: &syncBuffer{}, cancel: cancel, done: make(chan error, 1),
		client: &http.Client{Timeout: waitLimit, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	go func() { s.done <- run(ctx, args, env(vars), io.Discard, s.stderr) }()
	deadline := time.Now().Add(waitLimit)
	for s.addr == "" {
		select {
		case err := <-s.done:
			cancel()
			t.Fatalf("run returned before listening: %v\nstderr:\n%s", err, s.stderr)
		default:
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("no listening log line within %v\nstderr:\n%s", waitLimit, s.stderr)
		}
		if line, ok := logLine(s.stderr.String(), "listening"); ok {
			s.addr, _ = line["addr"].(string)
			if s.addr == "" {
				t.Fatalf("listening log line without addr: %v", line)
			}
			break
		}
		time.Sleep(5 * time.Millisecond)
	}
	s.url = "http://" + s.addr
	t.Cleanup(func() { s.stop() })
	return s
}

// stop cancels the server's context and requires run to return nil within the grace period.
func (s *testServer) stop() {
	s.t.Helper()
	s.once.Do(func() {
		s.cancel()
		select {
		case err := <-s.done:
			if err != nil {
				s.t.Errorf("run after cancel = %v, want nil\nstderr:\n%s", err, s.stderr)
			}
		case <-time.After(waitLimit):
			s.t.Errorf("run did not return within %v of cancel", waitLimit)
		}
	})
}

// do sends a request with an optional bearer key and JSON body and decodes a JSON answer.
func (s *testServer) do(method, path, key string, body any) (int, map[string]any) {
	s.t.Helper()
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	// Errorf, not Fatalf, below: do is also called from other goroutines.
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Errorf("%s %s: %v", method, path, err)
		return 0, nil
	}
	var out map[string]any
	if strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		if err := json.Unmarshal(raw, &out); err != nil {
			s.t.Errorf("%s %s: bad JSON %q: %v", method, path, raw, err)
		}
	}
	return resp.StatusCode, out
}

// get fetches path and returns the status and the raw body.
func (s *testServer) get(path string) (int, string) {
	s.t.Helper()
	resp, err := s.client.Get(s.url + path)
	if err != nil {
		s.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(raw)
}

// logLine returns the first JSON log line with this msg.
func logLine(output, msg string) (map[string]any, bool) {
	sc := bufio.NewScanner(strings.NewReader(output))
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var m map[string]any
		if json.Unmarshal([]byte(line), &m) == nil && m["msg"] == msg {
			return m, true
		}
	}
	return nil, false
}

var mgmtKeyRE = regexp.MustCompile(`sk-gh-mgmt-v1-[0-9a-f]{64}`)

// printedKeys returns every management key in output outside JSON log lines,
// and fails the test if one appears inside a log line.
func printedKeys(t *testing.T, output string) []string {
	t.Helper()
	var keys []string
	for _, line := range strings.Split(output, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "{") {
			if strings.Contains(line, "sk-gh-mgmt-v1-") {
				t.Errorf("a management key appears in a log line: %s", line)
			}
			continue
		}
		keys = append(keys, mgmtKeyRE.FindAllString(line, -1)...)
	}
	return keys
}

// cli runs a command to completion and returns its stdout, stderr and error.
func cli(t *testing.T, vars map[string]string, args ...string) (string, string, error) {
	t.Helper()
	out, errOut, err := runCommand(vars, args...)
	if errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("gatehouse %s did not finish within %v", strings.Join(args, " "), waitLimit)
	}
	return out, errOut, err
}

// runCommand runs a command with a deadline; safe to call from any goroutine.
func runCommand(vars map[string]string, args ...string) (string, string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	var stdout, stderr syncBuffer
	err := run(ctx, args, env(vars), &stdout, &stderr)
	if err == nil && ctx.Err() != nil {
		err = ctx.Err()
	}
	return stdout.String(), stderr.String(), err
}

// lastLine returns the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// TestDatabaseFromEnvAndFlag: GATEHOUSE_DATABASE_URL is used when --database is
// absent, and --database wins over it.
func TestDatabaseFromEnvAndFlag(t *testing.T) {
	dir := t.TempDir()
	envDB, flagDB := filepath.Join(dir, "env.db"), filepath.Join(dir, "flag.db")
	vars := map[string]string{"GATEHOUSE_DATABASE_URL": envDB}

	org := createOrg(t, vars, "--name", "In env db")
	createMgmtKey(t, nil, "--org", org, "--database", envDB) // the org is in env.db

	// With --database the env value is ignored: flag.db does not exist
	// (and is not created), so the org of env.db is not found there.
	_, _, err := cli(t, vars, "mgmt-keys", "create", "--org", org, "--database", flagDB)
	if err == nil || !strings.Contains(err.Error(), flagDB) || !strings.Contains(err.Error(), "does not exist") || fileExists(flagDB) {
		t.Errorf("mgmt-keys create on a missing flag.db: err = %v, want it named as missing (and not created)", err)
	}
	flagOrg := createOrg(t, vars, "--name", "In flag db", "--database", flagDB)
	_, _, err = cli(t, vars, "mgmt-keys", "create", "--org", org, "--database", flagDB)
	if err == nil || !strings.Contains(err.Error(), "organization") || !strings.Contains(err.Error(), "not found") {
		t.Errorf("mgmt-keys create on flag.db for an org of env.db: err = %v, want organization not found", err)
	}
	createMgmtKey(t, nil, "--org", flagOrg, "--database", flagDB)
	if _, _, err := cli(t, vars, "mgmt-keys", "create", "--org", flagOrg); err == nil {
		t.Errorf("mgmt-keys create on env.db for an org of flag.db succeeded")
	}

	// serve: the env selects the database and the address when no flag is given.
	s := startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": envDB, "GATEHOUSE_ADDR": "127.0.0.1:0"})
	line, _ := logLine(s.stderr.String(), "database opened")
	if line["path"] != envDB {
		t.Errorf("database opened log line = %v, want path %s", line, envDB)
	}
	s.stop()
	s = startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": envDB, "GATEHOUSE_ADDR": "127.0.0.1:1"},
		"serve", "--database", flagDB, "--addr", "127.0.0.1:0")
	line, _ = logLine(s.stderr.String(), "database opened")
	if line["path"] != flagDB {
		t.Errorf("database opened log line = %v, want path %s", line, flagDB)
	}
}

// TestInvalidConfig: bad settings fail before the server listens or the
// database is touched, with an error naming the setting.
func TestInvalidConfig(t *testing.T) {
	tests := []struct {
		name, value string
		want        string
	}{
		{"GATEHOUSE_RATE_LIMIT_RPS", "abc", "GATEHOUSE_RATE_LIMIT_RPS"},
		{"GATEHOUSE_RATE_LIMIT_RPS", "-1", "GATEHOUSE_RATE_LIMIT_RPS"},
		{"GATEHOUSE_RATE_LIMIT_BURST", "many", "GATEHOUSE_RATE_LIMIT_BURST"},
		{"GATEHOUSE_LOG_FORMAT", "xml", "GATEHOUSE_LOG_FORMAT"},
		{"GATEHOUSE_LOG_LEVEL", "loud", "GATEHOUSE_LOG_LEVEL"},
		{"GATEHOUSE_METERING_COMMIT", "later", "GATEHOUSE_METERING_COMMIT"},
		{"GATEHOUSE_SHUTDOWN_TIMEOUT", "soon", "GATEHOUSE_SHUTDOWN_TIMEOUT"},
		{"GATEHOUSE_SHUTDOWN_TIMEOUT", "-1s", "GATEHOUSE_SHUTDOWN_TIMEOUT"},
		{"GATEHOUSE_CONTENT_RETENTION", "a month", "GATEHOUSE_CONTENT_RETENTION"},
		{"GATEHOUSE_CONTENT_RETENTION", "-1d", "GATEHOUSE_CONTENT_RETENTION"},
		{"GATEHOUSE_CONTENT_RETENTION", "-5m", "GATEHOUSE_CONTENT_RETENTION"},
		{"GATEHOUSE_ANALYTICS_TIMEOUT", "long", "GATEHOUSE_ANALYTICS_TIMEOUT"},
		{"GATEHOUSE_ANALYTICS_TIMEOUT", "0s", "GATEHOUSE_ANALYTICS_TIMEOUT"},
		{"GATEHOUSE_TRUSTED_PROXIES", "10.0.0.0/33", "GATEHOUSE_TRUSTED_PROXIES"},
		{"GATEHOUSE_TRUSTED_PROXIES", "proxy.internal", "GATEHOUSE_TRUSTED_PROXIES"},
		{"GATEHOUSE_EGRESS_ALLOW", "10.0.0.0/40", "GATEHOUSE_EGRESS_ALLOW"},
		{"GATEHOUSE_SECRET_KEY", "short", "GATEHOUSE_SECRET_KEY"},
		{"GATEHOUSE_SECRET_KEY", strings.Repeat("ab", 16), "GATEHOUSE_SECRET_KEY"}, // 16 bytes of hex
		{"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY", "sk-gh-v1-" + strings.Repeat("a", 64), "GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY"},
		{"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY", "sk-gh-mgmt-v1-short", "GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY"},
	}
	for _, tt := range tests {
		t.Run(tt.name+"="+tt.value, func(t *testing.T) {
			db := filepath.Join(t.TempDir(), "g.db")
			vars := map[string]string{tt.name: tt.value, "GATEHOUSE_ADDR": "127.0.0.1:0", "GATEHOUSE_DATABASE_URL": db}
			commands := [][]string{{"serve"}, {"orgs", "create", "--name", "x"}}
			if tt.name == "GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY" {
				commands = commands[:1] // only the server reads it
			}
			for _, args := range commands {
				_, errOut, err := cli(t, vars, args...)
				if err == nil {
					t.Fatalf("gatehouse %v with %s=%q succeeded", args, tt.name, tt.value)
				}
				if !strings.Contains(err.Error(), tt.want) {
					t.Errorf("gatehouse %v: error %q does not name %s", args, err, tt.want)
				}
				if _, ok := logLine(errOut, "listening"); ok {
					t.Errorf("gatehouse %v listened despite %s=%q", args, tt.name, tt.value)
				}
				if fileExists(db) || fileExists(db+".key") {
					t.Errorf("gatehouse %v touched the database despite %s=%q", args, tt.name, tt.value)
				}
			}
		})
	}
}

func TestListenError(t *testing.T) {
	s := startServer(t, map[string]string{"GATEHOUSE_DATABASE_URL": filepath.Join(t.TempDir(), "a.db")}, "--addr", "127.0.0.1:0")
	_, _, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": filepath.Join(t.TempDir(), "b.db")}, "--addr", s.addr)
	if err == nil || !strings.Contains(err.Error(), s.addr) || !strings.Contains(err.Error(), "--addr") {
		t.Errorf("serve on a busy address: err = %v, want one naming the address and --addr", err)
	}
}

func TestTrustedProxiesSetting(t *testing.T) {
	c := DefaultConfig()
	env := map[string]string{"GATEHOUSE_TRUSTED_PROXIES": "10.0.0.0/8, 192.0.2.1,fd00::/8"}
	if err := c.fromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	want := []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("192.0.2.1/32"), netip.MustParsePrefix("fd00::/8")}
	if !slices.Equal(c.TrustedProxies, want) {
		t.Errorf("trusted proxies %v, want %v", c.TrustedProxies, want)
	}
}

func TestAnalyticsTimeoutSetting(t *testing.T) {
	c := DefaultConfig()
	if c.AnalyticsTimeout != 30*time.Second {
		t.Errorf("default analytics timeout %s, want 30s", c.AnalyticsTimeout)
	}
	env := map[string]string{"GATEHOUSE_ANALYTICS_TIMEOUT": "45s"}
	if err := c.fromEnv(func(k string) string { return env[k] }); err != nil {
		t.Fatal(err)
	}
	if c.AnalyticsTimeout != 45*time.Second {
		t.Errorf("analytics timeout %s, want 45s", c.AnalyticsTimeout)
	}
}

// TestMetricsAddr: with GATEHOUSE_METRICS_ADDR, /metrics moves to its own
// listener and the API's listener answers 404 for it.
func TestMetricsAddr(t *testing.T) {
	db := filepath.Join(t.TempDir(), "gatehouse.db")
	s := startServer(t, map[string]string{"GATEHOUSE_METRICS_ADDR": "127.0.0.1:0"}, "serve", "--addr", "127.0.0.1:0", "--database", db)
	if status, body := s.get("/metrics"); status != http.StatusNotFound || !strings.Contains(body, "GATEHOUSE_METRICS_ADDR") {
		t.Errorf("API listener GET /metrics = %d %s, want 404", status, body)
	}
	line, ok := logLine(s.stderr.String(), "metrics listening")
	if !ok {
		t.Fatalf("no metrics listening line:\n%s", s.stderr)
	}
	res, err := s.client.Get("http://" + line["addr"].(string) + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	body, _ := io.ReadAll(res.Body)
	if res.StatusCode != http.StatusOK || !strings.Contains(string(body), "gatehouse_http_requests_total") {
		t.Errorf("metrics listener GET /metrics = %d, want 200 with the metrics", res.StatusCode)
	}
}
