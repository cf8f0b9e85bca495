package main

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"sync"
	"syscall"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"

	"github.com/jackc/pgx/v5"
)

// builtCommand is a command of this module, built once per test run so
// that tests can start it as a real process.
type builtCommand struct {
	once sync.Once
	path string
	err  error
}

var gatehouseCommand, fakellmCommand builtCommand

// gatehouseBinary builds the gatehouse command.
func gatehouseBinary(t *testing.T) string { return gatehouseCommand.build(t, "gatehouse", ".") }

// fakellmBinary builds cmd/fakellm, the stand-in model server.
func fakellmBinary(t *testing.T) string { return fakellmCommand.build(t, "fakellm", "../fakellm") }

// build builds the package at dir (relative to this one) as name, the
// first time it is asked.
func (b *builtCommand) build(t *testing.T, name, dir string) string {
	t.Helper()
	b.once.Do(func() {
		tmp, err := os.MkdirTemp("", name+"-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(tmp, name)
		out, err := exec.Command("go", "build", "-o", b.path, dir).CombinedOutput()
		if err != nil {
			b.err = fmt.Errorf("go build %s: %v\n%s", dir, err, out)
		}
	})
	if b.err != nil {
		t.Fatal(b.err)
	}
	return b.path
}

// startProcess starts `gatehouse serve` as a separate process with only
// vars as its environment (plus PATH and HOME), waits until it listens, and
// stops it with SIGTERM when the test ends.
func startProcess(t *testing.T, vars map[string]string) *testServer {
	t.Helper()
	s := launchProcess(t, vars)
	s.waitListening()
	return s
}

// launchProcess starts the process without waiting for it to listen.
func launchProcess(t *testing.T, vars map[string]string) *testServer {
	t.Helper()
	s, _ := launchCmd(t, vars)
	return s
}

// launchCmd is launchProcess that also returns the process's command, for
// tests that signal or kill it themselves.
func launchCmd(t *testing.T, vars map[string]string) (*testServer, *exec.Cmd) {
	t.Helper()
	cmd := exec.Command(gatehouseBinary(t), "serve", "--addr", "127.0.0.1:0")
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME")}
	for k, v := range vars {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	s := &testServer{
		t: t, stderr: &syncBuffer{}, done: make(chan error, 1),
		client: &http.Client{Timeout: waitLimit, Transport: &http.Transport{DisableKeepAlives: true}},
	}
	cmd.Stderr = s.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s.cancel = func() { _ = cmd.Process.Signal(syscall.SIGTERM) }
	go func() { s.done <- cmd.Wait() }()
	t.Cleanup(func() { s.stop() })
	return s, cmd
}

// waitListening waits for the process's "listening" log line.
func (s *testServer) waitListening() {
	s.t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		if line, ok := logLine(s.stderr.String(), "listening"); ok {
			s.addr, _ = line["addr"].(string)
			break
		}
		if time.Now().After(deadline) {
			s.t.Fatalf("no listening log line within %v\nstderr:\n%s", waitLimit, s.stderr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.url = "http://" + s.addr
}

// pgInstances returns the environment of server instances sharing a fresh
// PostgreSQL database (skipping without GATEHOUSE_TEST_POSTGRES_URL), and
// the bootstrap management key they share.
func pgInstances(t *testing.T) (map[string]string, string) {
	t.Helper()
	url := pgtest.NewDatabase(t)
	secret := make([]byte, 32)
	_, _ = rand.Read(secret)
	mgmt := make([]byte, 32)
	_, _ = rand.Read(mgmt)
	key := gatehouse.ManagementKeyPrefix + hex.EncodeToString(mgmt)
	return map[string]string{
		"GATEHOUSE_DATABASE_URL":             url,
		"GATEHOUSE_SECRET_KEY":               base64.StdEncoding.EncodeToString(secret),
		"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": key,
		"GATEHOUSE_RATE_LIMIT_RPS":           "0",
		"GATEHOUSE_DB_TIMEOUT":               "30s", // generous: tests run on loaded machines
	}, key
}

// startInstances starts n processes on one database at the same moment.
func startInstances(t *testing.T, vars map[string]string, n int) []*testServer {
	t.Helper()
	out := make([]*testServer, n)
	for i := range out {
		out[i] = launchProcess(t, vars)
	}
	for _, s := range out {
		s.waitListening()
	}
	return out
}

// sqlCount runs a counting query on the database at url.
func sqlCount(t *testing.T, url, query string, args ...any) int {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	var n int
	if err := conn.QueryRow(context.Background(), query, args...).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// TestInstancesStartTogether: three instances started at the same moment on
// an empty database migrate it once and bootstrap one organization.
func TestInstancesStartTogether(t *testing.T) {
	vars, key := pgInstances(t)
	servers := startInstances(t, vars, 3)
	orgs := map[string]bool{}
	for _, s := range servers {
		status, body := s.do("GET", "/api/v1/key", key, nil)
		if status != http.StatusOK {
			t.Fatalf("GET /key: %d %v\n%s", status, body, s.stderr)
		}
		orgs[str(body["data"].(map[string]any)["organization_id"])] = true
	}
	url := vars["GATEHOUSE_DATABASE_URL"]
	if len(orgs) != 1 || sqlCount(t, url, `SELECT count(*) FROM organizations`) != 1 {
		t.Errorf("instances see organizations %v; the database holds %d; want one", orgs,
			sqlCount(t, url, `SELECT count(*) FROM organizations`))
	}
	if n := sqlCount(t, url, `SELECT count(*) FROM api_keys WHERE management`); n != 1 {
		t.Errorf("%d management keys, want the one bootstrap key", n)
	}
	files, err := filepath.Glob("../../postgres/migration/*.sql")
	if err != nil || len(files) == 0 {
		t.Fatalf("migration files: %v, %v", files, err)
	}
	if n := sqlCount(t, url, `SELECT count(*) FROM schema_migrations`); n != len(files) {
		t.Errorf("schema_migrations has %d rows, want one per migration file (%d): migrations ran more than once", n, len(files))
	}
}

// TestInstancesShareState runs the cross-instance guarantees on two server
// processes on one PostgreSQL database.
func TestInstancesShareState(t *testing.T) {
	vars, mgmt := pgInstances(t)
	servers := startInstances(t, vars, 2)
	a, b := servers[0], servers[1]
	url := vars["GATEHOUSE_DATABASE_URL"]

	t.Run("created on A, readable on B at once", func(t *testing.T) {
		status, body := a.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": "from A"})
		if status != http.StatusCreated {
			t.Fatalf("create on A: %d %v", status, body)
		}
		hash := str(body["data"].(map[string]any)["hash"])
		if status, body := b.do("GET", "/api/v1/keys/"+hash, mgmt, nil); status != http.StatusOK {
			t.Fatalf("get on B right after: %d %v", status, body)
		}
	})

	t.Run("disabled on A, refused by B within 1s", func(t *testing.T) {
		_, body := a.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": "to disable"})
		hash, key := str(body["data"].(map[string]any)["hash"]), str(body["key"])
		for range 3 { // B authenticates it, so B's cache holds it
			if status, _ := b.do("GET", "/api/v1/key", key, nil); status != http.StatusOK {
				t.Fatalf("B refused the key before it was disabled: %d", status)
			}
		}
		if status, body := a.do("PATCH", "/api/v1/keys/"+hash, mgmt, map[string]any{"disabled": true}); status != http.StatusOK {
			t.Fatalf("disable on A: %d %v", status, body)
		}
		disabledAt := time.Now()
		for {
			status, _ := b.do("GET", "/api/v1/key", key, nil)
			if status == http.StatusUnauthorized {
				t.Logf("B refused the key %v after A disabled it", time.Since(disabledAt))
				break
			}
			if time.Since(disabledAt) > time.Second {
				t.Fatalf("B still accepts the key %v after A disabled it (status %d)", time.Since(disabledAt), status)
			}
			time.Sleep(5 * time.Millisecond)
		}
	})

	t.Run("a code exchanged concurrently on A and B yields one key", func(t *testing.T) {
		for round := range 5 {
			status, body := a.do("POST", "/api/v1/auth/keys/code", mgmt, map[string]any{"callback_url": "https://app.example.com/cb"})
			if status != http.StatusOK {
				t.Fatalf("create code: %d %v", status, body)
			}
			code := str(body["data"].(map[string]any)["id"])
			before := sqlCount(t, url, `SELECT count(*) FROM api_keys`)
			var wg sync.WaitGroup
			statuses := make([]int, 6)
			for i := range statuses {
				s := servers[i%2]
				wg.Add(1)
				go func() {
					defer wg.Done()
					statuses[i], _ = s.do("POST", "/api/v1/auth/keys", "", map[string]any{"code": code})
				}()
			}
			wg.Wait()
			sort.Ints(statuses)
			if statuses[0] != http.StatusOK || statuses[1] != http.StatusForbidden || statuses[5] != http.StatusForbidden {
				t.Errorf("round %d: statuses %v, want one 200 and five 403", round, statuses)
			}
			if n := sqlCount(t, url, `SELECT count(*) FROM api_keys`) - before; n != 1 {
				t.Errorf("round %d: %d keys created, want 1", round, n)
			}
		}
	})

	t.Run("concurrent bulk assigns on A and B leave one guardrail per key", func(t *testing.T) {
		var hashes []string
		for i := range 40 {
			_, body := a.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": fmt.Sprintf("k%d", i)})
			hashes = append(hashes, str(body["data"].(map[string]any)["hash"]))
		}
		var guardrails []string
		for _, name := range []string{"g-a", "g-b"} {
			status, body := a.do("POST", "/api/v1/guardrails", mgmt, map[string]any{"name": name})
			if status != http.StatusCreated {
				t.Fatalf("create guardrail: %d %v", status, body)
			}
			guardrails = append(guardrails, str(body["data"].(map[string]any)["id"]))
		}
		var wg sync.WaitGroup
		for i := range 8 {
			s, g := servers[i%2], guardrails[i%2]
			wg.Add(1)
			go func() {
				defer wg.Done()
				if status, body := s.do("POST", "/api/v1/guardrails/"+g+"/assignments/keys", mgmt, map[string]any{"key_hashes": hashes}); status != http.StatusOK {
					t.Errorf("assign: %d %v", status, body)
				}
			}()
		}
		wg.Wait()
		if n := sqlCount(t, url, `SELECT count(*) FROM (SELECT key_hash FROM key_assignments GROUP BY key_hash HAVING count(*) > 1) d`); n != 0 {
			t.Errorf("%d keys hold more than one guardrail", n)
		}
		total := 0
		for _, g := range guardrails {
			_, body := b.do("GET", "/api/v1/guardrails/"+g+"/assignments/keys?limit=100", mgmt, nil)
			total += int(body["total_count"].(float64))
		}
		if total != len(hashes) {
			t.Errorf("assignments listed across both guardrails: %d, want %d (each key exactly once)", total, len(hashes))
		}
	})

	t.Run("concurrent bulk add and remove leave no duplicate membership", func(t *testing.T) {
		var users []string
		for i := range 30 {
			status, body := a.do("POST", "/api/v1/organization/members", mgmt, map[string]any{"email": fmt.Sprintf("u%d@example.com", i)})
			if status != http.StatusCreated {
				t.Fatalf("add member: %d %v", status, body)
			}
			users = append(users, str(body["data"].(map[string]any)["id"]))
		}
		if status, body := a.do("POST", "/api/v1/workspaces", mgmt, map[string]any{"name": "Team", "slug": "team"}); status != http.StatusCreated {
			t.Fatalf("create workspace: %d %v", status, body)
		}
		var wg sync.WaitGroup
		for i := range 12 {
			s := servers[i%2]
			op := "add"
			if i%3 == 2 {
				op = "remove"
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				if status, body := s.do("POST", "/api/v1/workspaces/team/members/"+op, mgmt, map[string]any{"user_ids": users}); status != http.StatusOK {
					t.Errorf("%s: %d %v", op, status, body)
				}
			}()
		}
		wg.Wait()
		if n := sqlCount(t, url, `SELECT count(*) FROM (SELECT workspace_id, user_id FROM workspace_members GROUP BY 1, 2 HAVING count(*) > 1) d`); n != 0 {
			t.Errorf("%d duplicate memberships", n)
		}
		rows := sqlCount(t, url, `SELECT count(*) FROM workspace_members`)
		_, body := b.do("GET", "/api/v1/workspaces/team/members?limit=100", mgmt, nil)
		if listed := int(body["total_count"].(float64)); listed != rows {
			t.Errorf("members listed %d, rows %d", listed, rows)
		}
	})
}
