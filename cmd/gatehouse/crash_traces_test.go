package main

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// TestCrashKeepsQueuedTraces: a server killed with SIGKILL while its
// observability deliveries wait for a destination that does not answer
// delivers every one of them after it starts again, each once.
func TestCrashKeepsQueuedTraces(t *testing.T) {
	crashEngines(t, testCrashKeepsQueuedTraces)
}

func testCrashKeepsQueuedTraces(t *testing.T, vars map[string]string, mgmt string) {
	// The destination: a webhook receiver that keeps each generation once
	// (by Idempotency-Key) and counts every arrival; until released it
	// holds requests without answering.
	release := make(chan struct{})
	var releaseOnce sync.Once
	var mu sync.Mutex
	arrivals, held := map[string]int{}, 0
	svc := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-release:
		default:
			mu.Lock()
			held++
			mu.Unlock()
			select {
			case <-release:
			case <-time.After(waitLimit):
			}
			http.Error(w, "held", http.StatusServiceUnavailable)
			return
		}
		mu.Lock()
		arrivals[r.Header.Get("Idempotency-Key")]++
		mu.Unlock()
	}))
	t.Cleanup(func() { releaseOnce.Do(func() { close(release) }); svc.Close() })

	vars["GATEHOUSE_EGRESS_ALLOW"] = "127.0.0.0/8"
	vars["GATEHOUSE_OBSERVABILITY_LEASE"] = "1s"
	path, model := meterProviders(t, startFakeLLM(t))
	vars["GATEHOUSE_PROVIDERS_FILE"] = path
	s, cmd := launchCmd(t, vars)
	s.waitListening()
	status, body := s.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": "traces"})
	if status != http.StatusCreated {
		t.Fatalf("create key: %d %v", status, body)
	}
	key := str(body["key"])
	status, body = s.do("POST", "/api/v1/observability/destinations", mgmt, map[string]any{
		"name": "hook", "type": "webhook", "config": map[string]any{"url": svc.URL + "/in"}})
	if status != http.StatusCreated {
		t.Fatalf("create destination: %d %v", status, body)
	}

	const n = 30
	var ids []string
	for i := range n {
		b, _ := json.Marshal(map[string]any{"model": model.Slug(), "max_tokens": 5,
			"messages": []any{map[string]any{"role": "user", "content": "trace " + string(rune('a'+i%26))}}})
		req, _ := http.NewRequest("POST", s.url+"/api/v1/chat/completions", bytes.NewReader(b))
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var answer map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&answer)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("chat completion: %d %v", resp.StatusCode, answer)
		}
		ids = append(ids, str(answer["id"]))
	}
	// Deliveries reach the destination, which holds them: the rest wait.
	deadline := time.Now().Add(waitLimit)
	for {
		mu.Lock()
		h := held
		mu.Unlock()
		if h >= 2 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no delivery reached the destination within %v", waitLimit)
		}
		time.Sleep(10 * time.Millisecond)
	}
	time.Sleep(300 * time.Millisecond) // the last events of the batch written, well past their dispatch
	sigkill(t, s, cmd)
	releaseOnce.Do(func() { close(release) })

	s = startProcess(t, vars)
	deadline = time.Now().Add(waitLimit)
	for {
		mu.Lock()
		got := len(arrivals)
		mu.Unlock()
		if got >= n {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d generations arrived after the restart within %v; the server said:\n%s", got, n, waitLimit, s.stderr)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1500 * time.Millisecond) // past a lease: nothing arrives again
	mu.Lock()
	defer mu.Unlock()
	for _, id := range ids {
		if arrivals[id] != 1 {
			t.Errorf("generation %s arrived %d times, want once", id, arrivals[id])
		}
	}
	if len(arrivals) != n {
		t.Errorf("%d generations arrived, want the %d made", len(arrivals), n)
	}
	t.Logf("%d requests held when the server was killed; all %d generations delivered once after the restart", held, n)
}
