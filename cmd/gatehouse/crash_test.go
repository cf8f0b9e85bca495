package main

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	mrand "math/rand/v2"
	"net"
	"net/http"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"gatehouse"
)

// crashEngines runs test on a fresh SQLite database and, when
// GATEHOUSE_TEST_POSTGRES_URL is set, on a fresh PostgreSQL database; vars
// is the environment of the server processes, key their management key.
func crashEngines(t *testing.T, test func(t *testing.T, vars map[string]string, key string)) {
	t.Run("sqlite", func(t *testing.T) {
		b := make([]byte, 32)
		_, _ = rand.Read(b)
		key := gatehouse.ManagementKeyPrefix + hex.EncodeToString(b)
		test(t, map[string]string{
			"GATEHOUSE_DATABASE_URL":             filepath.Join(t.TempDir(), "gatehouse.db"),
			"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": key,
			"GATEHOUSE_RATE_LIMIT_RPS":           "0",
		}, key)
	})
	t.Run("postgres", func(t *testing.T) {
		vars, key := pgInstances(t)
		test(t, vars, key)
	})
}

// tryDo is testServer.do for requests that may fail because the process
// died: it returns the transport error instead of failing the test.
func tryDo(s *testServer, method, path, key string, body any) (int, map[string]any, error) {
	var rd io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return 0, nil, err
		}
		rd = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		return 0, nil, err
	}
	req.Header.Set("Authorization", "Bearer "+key)
	req.Header.Set("Content-Type", "application/json")
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, err
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, nil, err
	}
	var out map[string]any
	_ = json.Unmarshal(raw, &out)
	return resp.StatusCode, out, nil
}

// listIDs pages through a list and returns the values of field of its items.
func (s *testServer) listIDs(t *testing.T, key, path, field string) []string {
	t.Helper()
	var out []string
	for offset := 0; ; offset += 100 {
		status, body := s.do("GET", fmt.Sprintf("%s?limit=100&offset=%d", path, offset), key, nil)
		if status != http.StatusOK {
			t.Fatalf("GET %s: %d %v", path, status, body)
		}
		items, _ := body["data"].([]any)
		for _, it := range items {
			out = append(out, str(it.(map[string]any)[field]))
		}
		if len(items) < 100 {
			return out
		}
	}
}

// bulkOp is one bulk request of the crash workload, over ids no other
// request touches.
type bulkOp struct {
	kind      string // "add members" or "assign keys"
	guardrail string // for "assign keys"
	ids       []string
	acked     bool
}

// crashLoad is what the clients of TestCrashKeepsAcknowledgedWrites saw
// acknowledged, and the bulk requests they sent.
type crashLoad struct {
	s     *testServer
	key   string
	ws    string   // the workspace members are added to
	grds  []string // the guardrails keys are assigned to
	acked atomic.Int64

	mu      sync.Mutex
	keys    map[string]string // hash → name, of acknowledged creations
	members []string          // acknowledged organization members
	bulk    []*bulkOp
	// Per client: the key whose limit it alone PATCHes with increasing
	// values, the last value acknowledged (0: none) and the last sent.
	patchKey          []string
	lastAcked, lastTx []int
}

// TestCrashKeepsAcknowledgedWrites kills the real server with SIGKILL in the
// middle of concurrent writes and restarts it on the same database: every
// write that was acknowledged is there, and no bulk request is half applied.
func TestCrashKeepsAcknowledgedWrites(t *testing.T) {
	crashEngines(t, testCrashKeepsAcknowledgedWrites)
}

func testCrashKeepsAcknowledgedWrites(t *testing.T, vars map[string]string, key string) {
	const clients = 4
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	s, cmd := launchCmd(t, vars)
	s.waitListening()
	l := &crashLoad{s: s, key: key, keys: map[string]string{}, lastAcked: make([]int, clients), lastTx: make([]int, clients)}
	l.setup(t, clients)

	var killed atomic.Bool
	var wg sync.WaitGroup
	for c := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := mrand.New(mrand.NewPCG(seed, uint64(c)))
			for n := 0; !killed.Load(); n++ {
				if !l.step(r, c, n) {
					return // the process is gone
				}
			}
		}()
	}
	// Kill once some writes are acknowledged, after a random moment more.
	deadline := time.Now().Add(waitLimit)
	for l.acked.Load() < 100 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	time.Sleep(time.Duration(mrand.New(mrand.NewPCG(seed, clients)).IntN(300)) * time.Millisecond)
	killed.Store(true)
	sigkill(t, s, cmd)
	wg.Wait()
	t.Logf("killed after %d acknowledged writes, %d bulk requests sent", l.acked.Load(), len(l.bulk))

	l.s = startProcess(t, vars)
	l.check(t)
}

// sigkill kills the process of s with SIGKILL and waits until it is dead.
func sigkill(t *testing.T, s *testServer, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	s.once.Do(func() { // instead of the SIGTERM stop of the cleanup
		select {
		case err := <-s.done:
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
				t.Errorf("process ended with %v, want killed by SIGKILL", err)
			}
		case <-time.After(waitLimit):
			t.Fatal("the process did not die of SIGKILL")
		}
	})
}

// setup creates the workspace, the guardrails and the keys each client
// PATCHes.
func (l *crashLoad) setup(t *testing.T, clients int) {
	status, body := l.s.do("POST", "/api/v1/workspaces", l.key, map[string]any{"name": "Crash", "slug": "crash"})
	if status != http.StatusCreated {
		t.Fatalf("create workspace: %d %v", status, body)
	}
	l.ws = str(body["data"].(map[string]any)["id"])
	for i := range 2 {
		status, body := l.s.do("POST", "/api/v1/guardrails", l.key, map[string]any{"name": fmt.Sprintf("crash-%d", i)})
		if status != http.StatusCreated {
			t.Fatalf("create guardrail: %d %v", status, body)
		}
		l.grds = append(l.grds, str(body["data"].(map[string]any)["id"]))
	}
	for c := range clients {
		status, body := l.s.do("POST", "/api/v1/keys", l.key, map[string]any{"name": fmt.Sprintf("patched-%d", c)})
		if status != http.StatusCreated {
			t.Fatalf("create key: %d %v", status, body)
		}
		l.patchKey = append(l.patchKey, str(body["data"].(map[string]any)["hash"]))
	}
}

// step runs one random operation of client c; it returns false once a
// request fails for want of a server. Statuses other than success are
// errors: nothing in this workload is refused.
func (l *crashLoad) step(r *mrand.Rand, c, n int) bool {
	switch r.IntN(4) {
	case 0:
		_, ok := l.createKey(fmt.Sprintf("crash-%d-%d", c, n))
		return ok
	case 1:
		l.mu.Lock()
		l.lastTx[c] = n + 1
		l.mu.Unlock()
		status, body, err := tryDo(l.s, "PATCH", "/api/v1/keys/"+l.patchKey[c], l.key, map[string]any{"limit": n + 1})
		if err != nil {
			return false
		}
		if status != http.StatusOK {
			l.s.t.Errorf("PATCH limit: %d %v", status, body)
			return true
		}
		l.acked.Add(1)
		l.mu.Lock()
		l.lastAcked[c] = n + 1
		l.mu.Unlock()
		return true
	case 2:
		return l.bulk3(c, n, "add members")
	default:
		return l.bulk3(c, n, "assign keys")
	}
}

// createKey creates a key and records it if acknowledged; ok is false when
// the server is gone.
func (l *crashLoad) createKey(name string) (hash string, ok bool) {
	status, body, err := tryDo(l.s, "POST", "/api/v1/keys", l.key, map[string]any{"name": name})
	if err != nil {
		return "", false
	}
	if status != http.StatusCreated {
		l.s.t.Errorf("create key %s: %d %v", name, status, body)
		return "", true
	}
	hash = str(body["data"].(map[string]any)["hash"])
	l.acked.Add(1)
	l.mu.Lock()
	l.keys[hash] = name
	l.mu.Unlock()
	return hash, true
}

// bulk3 makes three fresh ids (organization members or keys), then sends
// one bulk request over exactly those ids.
func (l *crashLoad) bulk3(c, n int, kind string) bool {
	op := &bulkOp{kind: kind}
	for i := range 3 {
		name := fmt.Sprintf("bulk-%d-%d-%d", c, n, i)
		if kind == "assign keys" {
			hash, ok := l.createKey(name)
			if !ok || hash == "" {
				return ok
			}
			op.ids = append(op.ids, hash)
			continue
		}
		status, body, err := tryDo(l.s, "POST", "/api/v1/organization/members", l.key, map[string]any{"email": name + "@example.com"})
		if err != nil {
			return false
		}
		if status != http.StatusCreated {
			l.s.t.Errorf("add organization member: %d %v", status, body)
			return true
		}
		id := str(body["data"].(map[string]any)["id"])
		l.acked.Add(1)
		l.mu.Lock()
		l.members = append(l.members, id)
		l.mu.Unlock()
		op.ids = append(op.ids, id)
	}
	path, body := "/api/v1/workspaces/"+l.ws+"/members/add", map[string]any{"user_ids": op.ids}
	if kind == "assign keys" {
		op.guardrail = l.grds[n%len(l.grds)]
		path, body = "/api/v1/guardrails/"+op.guardrail+"/assignments/keys", map[string]any{"key_hashes": op.ids}
	}
	l.mu.Lock()
	l.bulk = append(l.bulk, op) // sent, whatever comes of it
	l.mu.Unlock()
	status, out, err := tryDo(l.s, "POST", path, l.key, body)
	if err != nil {
		return false
	}
	if status != http.StatusOK {
		l.s.t.Errorf("%s: %d %v", kind, status, out)
		return true
	}
	l.acked.Add(1)
	l.mu.Lock()
	op.acked = true
	l.mu.Unlock()
	return true
}

// check compares the restarted server's state with what was acknowledged.
func (l *crashLoad) check(t *testing.T) {
	for hash, name := range l.keys {
		status, body := l.s.do("GET", "/api/v1/keys/"+hash, l.key, nil)
		if status != http.StatusOK {
			t.Errorf("acknowledged key %s (%s) lost: %d %v", name, hash, status, body)
		} else if got := str(body["data"].(map[string]any)["name"]); got != name {
			t.Errorf("key %s is named %q, want %q", hash, got, name)
		}
	}
	for c, hash := range l.patchKey {
		_, body := l.s.do("GET", "/api/v1/keys/"+hash, l.key, nil)
		limit, _ := body["data"].(map[string]any)["limit"].(float64) // null reads 0: never patched
		if int(limit) != l.lastAcked[c] && int(limit) != l.lastTx[c] {
			t.Errorf("client %d's key has limit %v; its last acknowledged PATCH set %d, its last sent %d",
				c, limit, l.lastAcked[c], l.lastTx[c])
		}
	}
	orgMembers := l.s.listIDs(t, l.key, "/api/v1/organization/members", "id")
	for _, id := range l.members {
		if !slices.Contains(orgMembers, id) {
			t.Errorf("acknowledged organization member %s lost", id)
		}
	}
	wsMembers := l.s.listIDs(t, l.key, "/api/v1/workspaces/"+l.ws+"/members", "user_id")
	assigned := map[string]string{} // key hash → guardrail
	for _, g := range l.grds {
		for _, h := range l.s.listIDs(t, l.key, "/api/v1/guardrails/"+g+"/assignments/keys", "key_hash") {
			assigned[h] = g
		}
	}
	applied := map[bool]int{}
	for _, op := range l.bulk {
		n := 0
		for _, id := range op.ids {
			if op.kind == "add members" && slices.Contains(wsMembers, id) ||
				op.kind == "assign keys" && assigned[id] == op.guardrail {
				n++
			} else if op.kind == "assign keys" && assigned[id] != "" {
				t.Errorf("key %s is assigned to %s, a guardrail no request named for it", id, assigned[id])
			}
		}
		switch {
		case n != 0 && n != len(op.ids):
			t.Errorf("%s %v (acknowledged %v): %d of %d applied: a half-applied bulk request", op.kind, op.ids, op.acked, n, len(op.ids))
		case op.acked && n == 0:
			t.Errorf("acknowledged %s %v lost", op.kind, op.ids)
		}
		applied[n != 0]++
	}
	t.Logf("after restart: %d keys, %d members, %d bulk requests applied whole, %d not applied (unacknowledged)",
		len(l.keys), len(l.members), applied[true], applied[false])
}

// TestSIGTERMDrainsAndRefuses sends SIGTERM to the real server while
// requests are in their handlers: they complete with 2xx, new connections
// are refused, and the process exits 0 within the grace period.
func TestSIGTERMDrainsAndRefuses(t *testing.T) {
	crashEngines(t, testSIGTERMDrainsAndRefuses)
}

// inFlight is a request whose handler is running, waiting for its body.
type inFlight struct {
	conn net.Conn
	br   *bufio.Reader
	body string
}

func testSIGTERMDrainsAndRefuses(t *testing.T, vars map[string]string, key string) {
	const grace = 5 * time.Second
	vars["GATEHOUSE_SHUTDOWN_TIMEOUT"] = grace.String()
	s, cmd := launchCmd(t, vars)
	s.waitListening()
	var reqs []*inFlight
	for i := range 3 {
		reqs = append(reqs, startInFlight(t, s.addr, key, fmt.Sprintf(`{"name":"drain-%d"}`, i)))
	}

	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	sent := time.Now()
	for { // new connections are refused once the listener is closed
		c, err := net.DialTimeout("tcp", s.addr, time.Second)
		if errors.Is(err, syscall.ECONNREFUSED) {
			break
		}
		if err == nil { // accepted before the listener closed
			c.Close()
		} // else reset: it was in the backlog when the listener closed
		if time.Since(sent) > grace {
			t.Fatalf("new connections still accepted %v after SIGTERM", grace)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if status, _, err := tryDo(s, "GET", "/api/v1/key", key, nil); err == nil {
		t.Errorf("a new request after SIGTERM was answered %d", status)
	}
	select {
	case err := <-s.done:
		t.Fatalf("the process exited (%v) while requests were in flight", err)
	default:
	}

	for i, r := range reqs {
		if _, err := io.WriteString(r.conn, r.body); err != nil {
			t.Fatalf("request %d: finishing the body: %v", i, err)
		}
		resp, err := http.ReadResponse(r.br, nil)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode/100 != 2 || !strings.Contains(string(raw), "sk-gh-v1-") {
			t.Errorf("in-flight request %d = %d %s, want 201 with a key", i, resp.StatusCode, raw)
		}
	}
	s.once.Do(func() {
		select {
		case err := <-s.done:
			if err != nil {
				t.Errorf("process exited with %v after SIGTERM, want status 0\nstderr:\n%s", err, s.stderr)
			}
			if d := time.Since(sent); d > grace {
				t.Errorf("process exited %v after SIGTERM, beyond the grace period of %v", d, grace)
			}
		case <-time.After(grace + waitLimit):
			t.Fatalf("process still running %v after SIGTERM", grace+waitLimit)
		}
	})
	if _, ok := logLine(s.stderr.String(), "stopped"); !ok {
		t.Errorf("no stopped log line:\n%s", s.stderr)
	}

	s = startProcess(t, vars) // the drained requests' keys were kept
	names := s.listIDs(t, key, "/api/v1/keys", "name")
	for i := range reqs {
		if name := "drain-" + strconv.Itoa(i); !slices.Contains(names, name) {
			t.Errorf("key %s, created by a drained request, is missing after restart (keys: %v)", name, names)
		}
	}
}

// startInFlight sends the headers of a POST /keys with "Expect:
// 100-continue" and returns once the server answers "100 Continue", which
// it does only when the handler starts reading the body: the request is
// then in its handler, waiting for the body.
func startInFlight(t *testing.T, addr, key, body string) *inFlight {
	t.Helper()
	conn, err := net.DialTimeout("tcp", addr, waitLimit)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	_ = conn.SetDeadline(time.Now().Add(2 * waitLimit))
	_, err = io.WriteString(conn, "POST /api/v1/keys HTTP/1.1\r\nHost: gatehouse\r\nConnection: close\r\n"+
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
	return &inFlight{conn: conn, br: br, body: body}
}
