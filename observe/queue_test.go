package observe

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"

	"github.com/prometheus/client_golang/prometheus"
)

// statuses answers the n-th request with codes[n-1], then 200.
func statuses(codes ...int) func(int, http.ResponseWriter, *http.Request) {
	return func(n int, w http.ResponseWriter, _ *http.Request) {
		if n <= len(codes) {
			w.WriteHeader(codes[n-1])
		}
	}
}

func TestRetries(t *testing.T) {
	for _, tc := range []struct {
		codes    []int
		attempts int
		result   string
	}{
		{[]int{503, 502}, 3, "delivered"},
		{[]int{429}, 2, "delivered"},
		{[]int{408}, 2, "delivered"},
		{[]int{500, 500, 500}, 3, "failed"},
		{[]int{400}, 1, "failed"},
		{[]int{401}, 1, "failed"},
		{[]int{404}, 1, "failed"},
		{[]int{302}, 1, "failed"},
	} {
		t.Run(fmt.Sprint(tc.codes), func(t *testing.T) {
			rc := newReceiver(t, statuses(tc.codes...))
			opts := fastOptions()
			opts.Backoff = 20 * time.Millisecond
			p, reg := start(t, newLister(testDest("webhook", map[string]string{"url": rc.URL})), opts)
			p.Publish(testEvent())
			closeNow(t, p)
			hits := rc.got()
			if len(hits) != tc.attempts {
				t.Fatalf("got %d attempts, want %d", len(hits), tc.attempts)
			}
			// Backoff doubles, with jitter between half and all of it.
			for i := 1; i < len(hits); i++ {
				if gap, least := hits[i].At.Sub(hits[i-1].At), opts.Backoff<<(i-1)/2; gap < least {
					t.Errorf("attempt %d came %v after the previous, want at least %v", i+1, gap, least)
				}
			}
			if got := metric(t, reg, "gatehouse_observability_delivery_attempts_total"); got != float64(tc.attempts) {
				t.Errorf("attempts metric = %v", got)
			}
			if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", tc.result); got != 1 {
				t.Errorf("%s = %v, want 1", tc.result, got)
			}
		})
	}
}

func TestRetryAfterHeader(t *testing.T) {
	for v, want := range map[string]time.Duration{"": 0, "2": 2 * time.Second, "0": 0, "-1": 0, "soon": 0, "86400": maxRetryAfter} {
		if got := retryAfter(v); got != want {
			t.Errorf("retryAfter(%q) = %v, want %v", v, got, want)
		}
	}
}

// closedPort returns the address of a port nothing listens on.
func closedPort(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// syncBuffer is a log destination safe for concurrent writes.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestDeadAndSlowDestinationsDelayNothing(t *testing.T) {
	const events = 3
	fast := newReceiver(t, nil)
	slow := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	dead := "http://" + closedPort(t)
	l := newLister(
		testDest("otel-collector", map[string]string{"endpoint": slow.URL}),
		testDest("langfuse", map[string]string{"baseUrl": dead + "/?token=SECRET", "publicKey": "pk", "secretKey": "sk-SECRET"}),
		testDest("webhook", map[string]string{"url": fast.URL}, func(d *gatehouse.Destination) {
			d.Config.Headers = map[string]string{"Authorization": "Bearer hdr-SECRET"}
		}),
	)
	logs := &syncBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	reg := prometheus.NewRegistry()
	opts := Options{Workers: 4, MaxAttempts: 2, Backoff: time.Millisecond, Timeout: 400 * time.Millisecond, Egress: loopback}
	p := New(l, reg, logger, opts)
	t.Cleanup(func() { _ = p.Close(context.Background()) })

	began := time.Now()
	for range events {
		p.Publish(testEvent())
	}
	if d := time.Since(began); d > 5*time.Millisecond {
		t.Errorf("%d Publish calls took %v", events, d)
	}
	fast.wait(t, events)
	if d := time.Since(began); d >= opts.Timeout {
		t.Errorf("the fast destination had its events after %v, not before the slow one's timeout", d)
	}
	// The slow and the dead destination fail every event, after two
	// attempts each; the fast one takes one attempt. An attempt sends what
	// its destination's lane holds: one event, or several that waited.
	waitMetric(t, reg, 2*events, "gatehouse_observability_deliveries_total", "result", "failed")
	if got := metric(t, reg, "gatehouse_observability_delivery_attempts_total"); got < 5 || got > 5*events {
		t.Errorf("attempts = %v, want from 5 (every event in one batch a destination) to %d (one each)", got, 5*events)
	}
	closeNow(t, p)
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != events {
		t.Errorf("delivered = %v", got)
	}
	out := logs.String()
	if !strings.Contains(out, "delivery failed") {
		t.Errorf("failures not logged:\n%s", out)
	}
	for _, secret := range []string{"SECRET", "secret prompt", "secret completion"} {
		if strings.Contains(out, secret) {
			t.Errorf("the log holds %q:\n%s", secret, out)
		}
	}
}

func TestPublishNeverBlocks(t *testing.T) {
	l := newLister()
	l.gate = make(chan struct{}) // the store hangs
	p, reg := start(t, l, Options{QueueSize: 10, Egress: loopback})
	const n = 10000
	began := time.Now()
	for range n {
		p.Publish(testEvent())
	}
	if d := time.Since(began); d > 500*time.Millisecond {
		t.Errorf("%d Publish calls took %v", n, d)
	}
	queued := metric(t, reg, "gatehouse_observability_events_total", "result", "queued")
	dropped := metric(t, reg, "gatehouse_observability_events_total", "result", "dropped")
	if queued+dropped != n || queued > 11 {
		t.Errorf("queued %v, dropped %v of %d with a queue of 10", queued, dropped, n)
	}
	close(l.gate)
}

func TestEventQueueOverflow(t *testing.T) {
	rc := newReceiver(t, nil)
	l := newLister(testDest("webhook", map[string]string{"url": rc.URL}))
	l.gate, l.entered = make(chan struct{}), make(chan struct{}, 1)
	opts := fastOptions()
	opts.QueueSize, opts.MaxPendingPerDestination = 2, 100
	p, reg := start(t, l, opts)
	p.Publish(testEvent())
	<-l.entered // the dispatcher holds the first event, waiting for the store
	for range 10 {
		p.Publish(testEvent())
	}
	if got := metric(t, reg, "gatehouse_observability_queue_length", "queue", "events"); got != 2 {
		t.Errorf("events queue length = %v, want 2", got)
	}
	close(l.gate)
	closeNow(t, p)
	if got := metric(t, reg, "gatehouse_observability_events_total", "result", "queued"); got != 3 {
		t.Errorf("queued = %v, want 3", got)
	}
	if got := metric(t, reg, "gatehouse_observability_events_total", "result", "dropped"); got != 8 {
		t.Errorf("dropped = %v, want 8", got)
	}
	if n := len(rc.got()); n != 3 {
		t.Errorf("received %d, want 3", n)
	}
}

func TestDestinationBacklogOverflow(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release
		}
	})
	opts := fastOptions()
	opts.Workers, opts.MaxInFlightPerDestination, opts.MaxPendingPerDestination = 2, 1, 2
	p, reg := start(t, newLister(testDest("webhook", map[string]string{"url": rc.URL})), opts)
	p.Publish(testEvent())
	rc.wait(t, 1) // in flight, held
	for range 5 {
		p.Publish(testEvent())
	}
	waitMetric(t, reg, 3, "gatehouse_observability_deliveries_total", "result", "dropped")
	if got := metric(t, reg, "gatehouse_observability_queue_length", "queue", "deliveries"); got != 2 {
		t.Errorf("deliveries queue length = %v, want 2", got)
	}
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d requests in flight to one destination, want 1", n)
	}
	close(release)
	closeNow(t, p)
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != 3 {
		t.Errorf("delivered = %v, want 3", got)
	}
}

func TestMetrics(t *testing.T) {
	rc := newReceiver(t, statuses(500))
	p, reg := start(t, newLister(
		testDest("webhook", map[string]string{"url": rc.URL}),
		testDest("webhook", map[string]string{"url": rc.URL}, func(d *gatehouse.Destination) { d.APIKeyHashes = []string{} }),
		testDest("webhook", map[string]string{"url": "ftp://x.example/hook"}), // fails before an attempt
	), fastOptions())
	p.Publish(testEvent())
	closeNow(t, p)
	p.Publish(testEvent()) // after Close: dropped
	for _, m := range []struct {
		name   string
		labels []string
		want   float64
	}{
		{"gatehouse_observability_events_total", []string{"result", "queued"}, 1},
		{"gatehouse_observability_events_total", []string{"result", "dropped"}, 1},
		{"gatehouse_observability_deliveries_total", []string{"result", "delivered"}, 1},
		{"gatehouse_observability_deliveries_total", []string{"result", "filtered"}, 1},
		{"gatehouse_observability_deliveries_total", []string{"result", "failed"}, 1},
		{"gatehouse_observability_delivery_attempts_total", nil, 2},
		{"gatehouse_observability_queue_length", []string{"queue", "events"}, 0},
		{"gatehouse_observability_queue_length", []string{"queue", "deliveries"}, 0},
		{"gatehouse_observability_lookup_errors_total", nil, 0},
	} {
		if got := metric(t, reg, m.name, m.labels...); got != m.want {
			t.Errorf("%s%v = %v, want %v", m.name, m.labels, got, m.want)
		}
	}
	// /metrics is public: no label may tell one destination, tenant or
	// destination type from another.
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if n := lp.GetName(); n != "result" && n != "queue" {
					t.Errorf("%s has label %s=%q", mf.GetName(), n, lp.GetValue())
				}
			}
		}
	}
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
	}
	for _, n := range []string{"gatehouse_observability_events_total", "gatehouse_observability_deliveries_total",
		"gatehouse_observability_delivery_attempts_total", "gatehouse_observability_queue_length",
		"gatehouse_observability_lookup_errors_total"} {
		if !names[n] {
			t.Errorf("metric %s not registered", n)
		}
	}
}

func TestCloseDrains(t *testing.T) {
	baseline := runtime.NumGoroutine()
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		time.Sleep(2 * time.Millisecond)
		if n%5 == 0 {
			w.WriteHeader(503) // some need a retry
		}
	})
	opts := fastOptions()
	opts.Workers = 1
	p := New(newLister(testDest("webhook", map[string]string{"url": rc.URL})), prometheus.NewRegistry(), nil, opts)
	const n = 30
	for range n {
		p.Publish(testEvent())
	}
	closeNow(t, p)
	ids := map[string]bool{}
	for _, h := range rc.got() {
		ids[h.Header.Get("Idempotency-Key")] = true
	}
	if len(ids) != n {
		t.Errorf("%d events delivered by Close, want %d", len(ids), n)
	}
	rc.Close()
	settleGoroutines(t, baseline)
}

func TestCloseGivesUp(t *testing.T) {
	baseline := runtime.NumGoroutine()
	rc := newReceiver(t, func(_ int, _ http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	reg := prometheus.NewRegistry()
	opts := fastOptions()
	opts.Timeout = time.Minute
	p := New(newLister(testDest("webhook", map[string]string{"url": rc.URL})), reg, nil, opts)
	for range 3 {
		p.Publish(testEvent())
	}
	rc.wait(t, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	began := time.Now()
	if err := p.Close(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("Close = %v, want the context's error", err)
	}
	if d := time.Since(began); d > 2*time.Second {
		t.Errorf("Close took %v", d)
	}
	failed := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "failed")
	dropped := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "dropped")
	if failed+dropped != 3 {
		t.Errorf("failed %v + dropped %v, want 3 abandoned deliveries", failed, dropped)
	}
	rc.Close()
	settleGoroutines(t, baseline)
}

func TestCacheAndPagination(t *testing.T) {
	rc := newReceiver(t, nil)
	var dests []*gatehouse.Destination
	for i := range 150 {
		dests = append(dests, testDest("webhook", map[string]string{"url": fmt.Sprintf("%s/d/%d", rc.URL, i)}))
	}
	l := newLister(dests...)
	opts := fastOptions()
	opts.CacheTTL = time.Minute
	p, reg := start(t, l, opts)
	var mu sync.Mutex
	now := t0
	p.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }

	p.Publish(testEvent())
	rc.wait(t, 150)
	if got := l.callCount(); got != 2 {
		t.Errorf("store calls for 150 destinations = %d, want 2 pages", got)
	}
	p.Publish(testEvent())
	rc.wait(t, 300)
	if got := l.callCount(); got != 2 {
		t.Errorf("store calls within the TTL = %d, want 2 (cached)", got)
	}
	// After the TTL the list is read again; when that fails, the stale
	// list serves.
	advance(2 * time.Minute)
	l.mu.Lock()
	l.err = gatehouse.Errorf(gatehouse.EUNAVAILABLE, "database down")
	l.mu.Unlock()
	p.Publish(testEvent())
	rc.wait(t, 450)
	if got := l.callCount(); got != 3 {
		t.Errorf("store calls after the TTL = %d, want 3", got)
	}
	// An unknown workspace with a failing store: the event is lost, counted.
	p.Publish(testEvent(func(ev *gatehouse.TraceEvent) { ev.Generation.WorkspaceID = "ws-2" }))
	waitMetric(t, reg, 1, "gatehouse_observability_lookup_errors_total")
	closeNow(t, p)
}
