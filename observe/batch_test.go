package observe

import (
	"net/http"
	"sync"
	"testing"

	"gatehouse"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// responseIDs returns the gen_ai.response.id of every span of an OTLP
// export: the generation ids it carries.
func responseIDs(t *testing.T, body []byte) []string {
	t.Helper()
	var pb coltracepb.ExportTraceServiceRequest
	if err := proto.Unmarshal(body, &pb); err != nil {
		t.Fatalf("OTLP body is not an ExportTraceServiceRequest: %v", err)
	}
	var ids []string
	for _, rs := range pb.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				for _, a := range sp.Attributes {
					if a.Key == "gen_ai.response.id" {
						ids = append(ids, a.Value.GetStringValue())
					}
				}
			}
		}
	}
	return ids
}

// TestBatches: the events that wait for a busy destination go to it
// together, in one request (an OTLP export of several spans), each once.
func TestBatches(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	rc := newReceiver(t, func(n int, _ http.ResponseWriter, _ *http.Request) {
		if n == 1 {
			<-release // the first export is slow: the others wait behind it
		}
	})
	opts := fastOptions()
	opts.Workers, opts.MaxInFlightPerDestination = 2, 1
	p, reg := start(t, newLister(testDest("otel-collector", map[string]string{"endpoint": rc.URL})), opts)
	const n = 50
	want := map[string]bool{}
	for i := range n {
		ev := testEvent()
		want[ev.Generation.ID] = true
		p.Publish(ev)
		if i == 0 {
			rc.wait(t, 1) // the first is in flight
		}
	}
	eventually(t, "the other events queued", func() bool { return p.lanes.length() == n-1 })
	once.Do(func() { close(release) })
	rc.wait(t, 2)
	closeNow(t, p)

	hits := rc.got()
	seen := map[string]int{}
	for _, h := range hits {
		for _, id := range responseIDs(t, h.Body) {
			seen[id]++
		}
	}
	for id := range want {
		if seen[id] != 1 {
			t.Errorf("event %s sent %d times, want once", id, seen[id])
		}
	}
	if len(hits) != 2 || len(responseIDs(t, hits[1].Body)) != n-1 {
		t.Errorf("%d requests; want 2: the first event, then the %d that waited in one export", len(hits), n-1)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != n {
		t.Errorf("delivered = %v, want %d", got, n)
	}
}

// TestBatchOneByOne: a webhook batch is a request an event; when one fails,
// those before it are delivered and not sent again, and those after it,
// never sent, do not spend an attempt: with one attempt each, the refused
// event fails and every other one is delivered.
func TestBatchOneByOne(t *testing.T) {
	release := make(chan struct{})
	rc := newReceiver(t, func(n int, w http.ResponseWriter, _ *http.Request) {
		switch n {
		case 1:
			<-release
		case 4: // the third event of the batch that waited
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	})
	opts := fastOptions()
	opts.Workers, opts.MaxInFlightPerDestination, opts.MaxAttempts = 2, 1, 1
	p, reg := start(t, newLister(testDest("webhook", map[string]string{"url": rc.URL})), opts)
	const n = 10
	var order []string
	for i := range n {
		ev := testEvent()
		order = append(order, ev.Generation.ID)
		p.Publish(ev)
		if i == 0 {
			rc.wait(t, 1)
		}
	}
	eventually(t, "the other events queued", func() bool { return p.lanes.length() == n-1 })
	close(release)
	rc.wait(t, n)
	closeNow(t, p)

	sent := map[string]int{}
	for _, h := range rc.got() {
		sent[h.Header.Get("Idempotency-Key")]++
	}
	for i, id := range order {
		if sent[id] != 1 {
			t.Errorf("event %d sent %d times, want once", i, sent[id])
		}
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "delivered"); got != n-1 {
		t.Errorf("delivered = %v, want %d", got, n-1)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "failed"); got != 1 {
		t.Errorf("failed = %v, want 1 (the refused event)", got)
	}
}

// TestBatchOfOneConfiguration: deliveries made before and after a change
// of their destination's configuration never share a request.
func TestBatchOfOneConfiguration(t *testing.T) {
	s := newScheduler(100, 1, func(*delivery) {})
	before := testDest("webhook", map[string]string{"url": "http://127.0.0.1:1/a"})
	after := *before // the same destination, read again after a change
	after.Config.Values = map[string]string{"url": "http://127.0.0.1:1/b"}
	for _, d := range []*gatehouse.Destination{before, before, &after, &after, &after} {
		if !s.add(&delivery{dest: d}) {
			t.Fatal("add refused")
		}
	}
	first, _ := s.next(maxBatch)
	s.complete(first, nil, 0)
	second, _ := s.next(maxBatch)
	if len(first) != 2 || first[0].dest != before || len(second) != 3 || second[0].dest != &after {
		t.Errorf("batches of %d and %d deliveries; want 2 of the old configuration, then 3 of the new", len(first), len(second))
	}
}
