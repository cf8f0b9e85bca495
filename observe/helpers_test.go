package observe

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/egress"

	"github.com/prometheus/client_golang/prometheus"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/encoding/protojson"
	"google.golang.org/protobuf/proto"
)

// testKeyHash is the key hash of the test events.
const testKeyHash = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

var (
	genSeq  atomic.Int64
	destSeq atomic.Int64
	t0      = time.Date(2026, 11, 21, 10, 30, 0, 123_000_000, time.UTC)
)

// testEvent returns an event of workspace ws-1 with a fresh generation id.
func testEvent(mods ...func(*gatehouse.TraceEvent)) *gatehouse.TraceEvent {
	finish, user := "stop", "user_1"
	g := &gatehouse.Generation{
		ID: fmt.Sprintf("gen-%d", genSeq.Add(1)), OrganizationID: "org-1", WorkspaceID: "ws-1",
		KeyHash: testKeyHash, Model: "openai/gpt-4o-mini", Provider: "openai",
		PromptTokens: 12, CompletionTokens: 34, Cost: 123_000, FinishReason: &finish, Status: "completed",
		LatencyMS: 250, GenerationMS: 250, CreatedAt: t0.Add(250 * time.Millisecond),
	}
	ev := &gatehouse.TraceEvent{Generation: g, KeyName: "ci key", UserID: &user,
		Input:     []byte(`[{"role":"user","content":"secret prompt"}]`),
		Output:    "secret completion",
		StartedAt: t0, EndedAt: t0.Add(250 * time.Millisecond)}
	for _, m := range mods {
		m(ev)
	}
	return ev
}

func withSession(id string) func(*gatehouse.TraceEvent) {
	return func(ev *gatehouse.TraceEvent) { ev.Generation.SessionID = &id }
}

// testDest returns an enabled destination of workspace ws-1.
func testDest(typ string, values map[string]string, mods ...func(*gatehouse.Destination)) *gatehouse.Destination {
	d := &gatehouse.Destination{ID: fmt.Sprintf("dest-%d", destSeq.Add(1)), OrganizationID: "org-1",
		WorkspaceID: "ws-1", Type: typ, Config: gatehouse.DestinationConfig{Values: values},
		Enabled: true, SamplingRate: 1, Regions: []string{"global"}}
	for _, m := range mods {
		m(d)
	}
	return d
}

// fakeLister stands in for the store's list of a workspace's destinations.
type fakeLister struct {
	mu      sync.Mutex
	dests   map[string][]*gatehouse.Destination // by workspace id
	calls   int
	err     error
	gate    chan struct{}   // when set, calls wait for it to close
	entered chan struct{}   // when set, told of each call
	private map[string]bool // workspaces that do not log I/O
	ioRate  float64         // the workspaces' I/O sampling rate; 0: 1
}

func newLister(dests ...*gatehouse.Destination) *fakeLister {
	return &fakeLister{dests: map[string][]*gatehouse.Destination{"ws-1": dests}}
}

// FindWorkspace returns the workspace of a destination list: one that logs
// I/O at every call, unless its id is in private (or at ioRate when set).
func (f *fakeLister) FindWorkspace(ctx context.Context, orgID, ref string) (*gatehouse.Workspace, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.dests[ref]; !ok {
		return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "workspace not found")
	}
	rate := 1.0
	if f.ioRate > 0 {
		rate = f.ioRate
	}
	return &gatehouse.Workspace{ID: ref, OrganizationID: orgID, IsObservabilityIOLoggingEnabled: !f.private[ref],
		IOLoggingSamplingRate: rate}, nil
}

func (f *fakeLister) FindDestinations(ctx context.Context, orgID, ws string, page gatehouse.Page) ([]*gatehouse.Destination, int, error) {
	f.mu.Lock()
	f.calls++
	list, err, gate, entered := f.dests[ws], f.err, f.gate, f.entered
	f.mu.Unlock()
	if entered != nil {
		select {
		case entered <- struct{}{}:
		default:
		}
	}
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		}
	}
	if err != nil {
		return nil, 0, err
	}
	if page.Limit > gatehouse.MaxPageSize {
		return nil, 0, gatehouse.Errorf(gatehouse.EINVALID, "limit too large")
	}
	lo, hi := min(page.Offset, len(list)), min(page.Offset+page.Limit, len(list))
	return list[lo:hi], len(list), nil
}

func (f *fakeLister) callCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls
}

// hit is a request a receiver got.
type hit struct {
	Method, Path string
	Header       http.Header
	Body         []byte
	At           time.Time
}

// receiver is a real HTTP server that records what it receives.
type receiver struct {
	*httptest.Server
	mu   sync.Mutex
	hits []hit
}

// newReceiver starts a receiver; respond (optional) answers the n-th
// request (from 1), else 200.
func newReceiver(t *testing.T, respond func(n int, w http.ResponseWriter, r *http.Request)) *receiver {
	rc := &receiver{}
	rc.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		rc.mu.Lock()
		rc.hits = append(rc.hits, hit{r.Method, r.URL.Path, r.Header.Clone(), body, time.Now()})
		n := len(rc.hits)
		rc.mu.Unlock()
		if respond != nil {
			respond(n, w, r)
		}
	}))
	t.Cleanup(rc.Close)
	return rc
}

func (rc *receiver) got() []hit {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.hits)
}

// wait polls until the receiver has n requests, and returns them.
func (rc *receiver) wait(t *testing.T, n int) []hit {
	t.Helper()
	eventually(t, fmt.Sprintf("%d requests received", n), func() bool { return len(rc.got()) >= n })
	return rc.got()
}

// paths lists the paths of the requests received.
func (rc *receiver) paths() []string {
	var ps []string
	for _, h := range rc.got() {
		ps = append(ps, h.Path)
	}
	slices.Sort(ps)
	return ps
}

// eventually polls cond until it holds, for at most 5 seconds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for: %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

// loopback opens the test receivers' addresses, which the egress policy
// blocks by default.
var loopback = egress.MustParse("127.0.0.0/8,::1/128")

// fastOptions are options with short delays for tests.
func fastOptions() Options {
	return Options{Workers: 4, MaxAttempts: 3, Backoff: time.Millisecond, Timeout: 2 * time.Second, CacheTTL: time.Minute, Egress: loopback}
}

// start returns a Publisher on a fresh registry, closed at the end of the
// test (before the receivers made earlier).
func start(t *testing.T, l DestinationLister, opts Options) (*Publisher, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	p := New(l, reg, nil, opts)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = p.Close(ctx)
	})
	return p, reg
}

// closeNow closes p, draining for up to 5 seconds.
func closeNow(t *testing.T, p *Publisher) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := p.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// metric returns the value of a counter or gauge with exactly these labels.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			var got []string
			for _, lp := range m.GetLabel() {
				got = append(got, lp.GetName(), lp.GetValue())
			}
			if !slices.Equal(got, labels) {
				continue
			}
			if c := m.GetCounter(); c != nil {
				return c.GetValue()
			}
			return m.GetGauge().GetValue()
		}
	}
	return 0
}

// waitMetric polls until a metric has the value.
func waitMetric(t *testing.T, reg *prometheus.Registry, want float64, name string, labels ...string) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s%v = %v", name, labels, want), func() bool { return metric(t, reg, name, labels...) == want })
}

// spanOf decodes an OTLP protobuf body and returns it in the OTLP/JSON
// mapping (ids in hex, 64-bit integers as strings, the kind a number), and
// its one span and its attributes, generically.
func spanOf(t *testing.T, body []byte) (req map[string]any, span map[string]any, attrs map[string]map[string]any) {
	t.Helper()
	var pb coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &pb); err != nil {
		t.Fatalf("OTLP body is not an ExportTraceServiceRequest: %v", err)
	}
	js, err := protojson.MarshalOptions{UseEnumNumbers: true}.Marshal(&pb)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(js, &req); err != nil {
		t.Fatal(err)
	}
	rs := req["resourceSpans"].([]any)[0].(map[string]any)
	ss := rs["scopeSpans"].([]any)[0].(map[string]any)
	spans := ss["spans"].([]any)
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	span = spans[0].(map[string]any)
	sp := pb.ResourceSpans[0].ScopeSpans[0].Spans[0]
	span["traceId"], span["spanId"] = hex.EncodeToString(sp.TraceId), hex.EncodeToString(sp.SpanId)
	attrs = map[string]map[string]any{}
	for _, a := range span["attributes"].([]any) {
		kv := a.(map[string]any)
		attrs[kv["key"].(string)] = kv["value"].(map[string]any)
	}
	return req, span, attrs
}

// settleGoroutines waits until no more goroutines run than baseline.
func settleGoroutines(t *testing.T, baseline int) {
	t.Helper()
	eventually(t, fmt.Sprintf("goroutines back to %d", baseline), func() bool { return runtime.NumGoroutine() <= baseline })
}
