package main

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestDueHasNoDrift(t *testing.T) {
	start := time.Unix(1000, 0)
	if got := due(start, 3, 3_000_000); !got.Equal(start.Add(1_000_000 * time.Second)) {
		t.Fatalf("request 3e6 at 3/s due %v after start", got.Sub(start))
	}
	if got := due(start, 1e4, 1); got.Sub(start) != 100*time.Microsecond {
		t.Fatalf("second request at 10k/s due %v after the first", got.Sub(start))
	}
}

// TestOpenLoopMeasuresFromDueTime runs an open loop at 100/s against a
// server that takes 50 ms and serves one request at a time: it can keep up
// with only 20/s, so requests queue and their latencies, measured from when
// they were due, must grow far beyond 50 ms (to about 2 s by the end). A closed loop would report
// 50 ms (coordinated omission).
func TestOpenLoopMeasuresFromDueTime(t *testing.T) {
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		time.Sleep(50 * time.Millisecond)
		mu.Unlock()
	}))
	defer srv.Close()
	src := &source{specs: []spec{{Method: "GET", Path: srv.URL}}, header: http.Header{}}
	res, err := run(context.Background(), newClient(64, 10*time.Second), src,
		config{Concurrency: 64, Rate: 100, Duration: 500 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.Mode != "open" || res.Requests < 45 || res.Requests > 51 {
		t.Fatalf("open loop at 100/s for 0.5s measured %d requests (%s)", res.Requests, res.Mode)
	}
	if res.Latency.P99 < 1000 {
		t.Fatalf("p99 = %.1f ms: the queueing behind a 20/s server is not in the latencies", res.Latency.P99)
	}
}

// TestOpenLoopKeepsItsRate checks that a fast server sees the scheduled
// number of requests.
func TestOpenLoopKeepsItsRate(t *testing.T) {
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { n.Add(1) }))
	defer srv.Close()
	src := &source{specs: []spec{{Method: "GET", Path: srv.URL}}, header: http.Header{}}
	res, err := run(context.Background(), newClient(8, time.Second), src,
		config{Concurrency: 8, Rate: 500, Warmup: 200 * time.Millisecond, Duration: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK < 480 || res.OK > 501 || res.Errors != 0 {
		t.Fatalf("500/s for 1s after warm-up: ok %d, errors %d", res.OK, res.Errors)
	}
	if got := n.Load(); got < 570 || got > 601 {
		t.Fatalf("server saw %d requests, want about 600 (warm-up included)", got)
	}
	if res.Latency.P50 > 20 {
		t.Fatalf("p50 %.1f ms against an instant server", res.Latency.P50)
	}
}

// TestClosedLoopTemplatesAndStatuses checks the request templating, the
// rotation through a requests file, -once, and the counting of statuses.
func TestClosedLoopTemplatesAndStatuses(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		mu.Lock()
		seen[r.Method+" "+r.URL.Path+" "+string(body)]++
		mu.Unlock()
		if r.Header.Get("X-Test") != "yes" || r.Header.Get("Content-Type") != "application/json" && len(body) > 0 {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(r.URL.Path, "/missing") {
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	defer srv.Close()
	dir := t.TempDir()
	reqs := filepath.Join(dir, "requests.jsonl")
	lines := `{"method": "POST", "path": "/a/{{.N}}", "body": {"n": {{.N}}}}
{"method": "PATCH", "path": "/b", "body": {"name": "x"}}
{"path": "/missing"}
`
	if err := os.WriteFile(reqs, []byte(lines), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err := newSource(sourceOptions{url: srv.URL, method: "GET", requestsFile: reqs, headers: []string{"X-Test: yes"}, once: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := run(context.Background(), newClient(2, time.Second), src, config{Concurrency: 2, Duration: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !res.Exhausted || res.Requests != 3 || res.OK != 2 || res.Status["404"] != 1 || res.Seconds >= 5 {
		b, _ := json.Marshal(res)
		t.Fatalf("result %s", b)
	}
	for _, want := range []string{`POST /a/0 {"n": 0}`, `PATCH /b {"name": "x"}`, `GET /missing `} {
		if seen[want] != 1 {
			t.Errorf("server saw %v, want %q once", seen, want)
		}
	}

	// Rotation: paths from a file, the body templated.
	paths := filepath.Join(dir, "paths")
	if err := os.WriteFile(paths, []byte("/p/1\n/p/2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	src, err = newSource(sourceOptions{url: srv.URL, method: "PUT", body: `{"seq": {{.N}}}`, pathsFile: paths, headers: []string{"X-Test: yes"}})
	if err != nil {
		t.Fatal(err)
	}
	res, err = run(context.Background(), newClient(4, time.Second), src, config{Concurrency: 4, Duration: 300 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if res.OK < 10 || res.Errors != 0 || res.RPS <= 0 || res.Latency.P50 <= 0 {
		t.Fatalf("rotation run: %+v", res)
	}
	mu.Lock()
	defer mu.Unlock()
	if seen[`PUT /p/1 {"seq": 0}`] != 1 || seen[`PUT /p/2 {"seq": 1}`] != 1 || seen[`PUT /p/1 {"seq": 2}`] != 1 {
		t.Errorf("requests 0..2 of the rotation not as expected: %v", seen)
	}
}

func TestRecordAndWait(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusCreated)
		io.WriteString(w, `{"ok":true}`)
	}))
	defer srv.Close()
	file := filepath.Join(t.TempDir(), "body")
	var out strings.Builder
	if err := mainErr(context.Background(), []string{"-url", srv.URL, "-method", "POST", "-record", file}, &out); err != nil {
		t.Fatal(err)
	}
	body, _ := os.ReadFile(file)
	if string(body) != `{"ok":true}` || !strings.Contains(out.String(), `"status":201`) || !strings.Contains(out.String(), `"content_type":"application/json"`) {
		t.Fatalf("recorded %q, printed %q", body, out.String())
	}
	out.Reset()
	if err := mainErr(context.Background(), []string{"-url", srv.URL, "-wait", "-timeout", "2s"}, &out); err == nil || out.Len() != 0 {
		t.Fatalf("-wait on a 201 server: err %v, out %q", err, out.String())
	}
}
