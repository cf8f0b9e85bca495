package observe

import (
	"context"
	"database/sql"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
)

// outboxStore opens a fresh SQLite store with an organization and a
// webhook destination of its default workspace pointing at url.
func outboxStore(t *testing.T, url string) (*sqlite.DB, *gatehouse.Destination) {
	t.Helper()
	ctx := context.Background()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(ctx, sqlitetest.Path(t, "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	u := url
	d, err := db.CreateDestination(ctx, org.ID, gatehouse.DestinationCreate{Type: "webhook",
		DestinationUpdate: gatehouse.DestinationUpdate{Name: gatehouse.Val("hook"), Config: &gatehouse.ConfigPatch{Values: map[string]*string{"url": &u}}}})
	if err != nil {
		t.Fatal(err)
	}
	return db, d
}

// dedupService is a webhook receiver that deduplicates by Idempotency-Key,
// as a service that accepts one does, and counts every arrival; while
// hold is set it answers 503 to every request that arrives. Release ends
// the hold only once no refused request is left anywhere: one a sender
// abandoned (a publisher that gave up on stopping) may still be in the
// server's hands, and must not be counted as a later arrival.
type dedupService struct {
	*httptest.Server
	hold     atomic.Bool
	inflight sync.WaitGroup
	mu       sync.Mutex
	arrivals map[string]int // by generation id, accepted ones
}

func newDedupService(t *testing.T) *dedupService {
	s := &dedupService{arrivals: map[string]int{}}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.inflight.Add(1)
		defer s.inflight.Done()
		held := s.hold.Load() // as the request arrives
		_, _ = io.Copy(io.Discard, r.Body)
		if held {
			http.Error(w, "busy", http.StatusServiceUnavailable)
			return
		}
		s.mu.Lock()
		s.arrivals[r.Header.Get("Idempotency-Key")]++
		s.mu.Unlock()
	}))
	t.Cleanup(s.Close)
	return s
}

// release ends the hold: the connections of the requests refused so far
// are closed, and those still being refused are waited for.
func (s *dedupService) release() {
	s.CloseClientConnections()
	s.inflight.Wait()
	s.hold.Store(false)
}

func (s *dedupService) counts() map[string]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]int{}
	for k, v := range s.arrivals {
		out[k] = v
	}
	return out
}

func outboxOptions(db gatehouse.TraceOutbox, instance string) Options {
	o := fastOptions()
	o.Outbox, o.Instance = db, instance
	o.MaxAttempts, o.Backoff = 1000, 5*time.Millisecond
	o.Lease, o.ClaimInterval, o.FlushInterval = 300*time.Millisecond, 20*time.Millisecond, 10*time.Millisecond
	return o
}

// TestOutboxSurvivesStopAndIsDeliveredOnce: events queued for a
// destination that refuses them stay in the outbox when the instance stops
// without delivering them; two instances started afterwards deliver each
// one exactly once, and the outbox ends empty with the status counted.
func TestOutboxSurvivesStopAndIsDeliveredOnce(t *testing.T) {
	svc := newDedupService(t)
	svc.hold.Store(true)
	db, d := outboxStore(t, svc.URL+"/in")
	ctx := context.Background()

	a := New(db, nil, nil, outboxOptions(db, "instance-a"))
	const n = 40
	var ids []string
	for range n {
		ev := testEvent(func(ev *gatehouse.TraceEvent) {
			ev.Generation.OrganizationID, ev.Generation.WorkspaceID = d.OrganizationID, d.WorkspaceID
		})
		ids = append(ids, ev.Generation.ID)
		a.Publish(ev)
	}
	eventually(t, "every event in the outbox", func() bool {
		c, err := db.CountTraces(ctx)
		return err == nil && c[d.ID] == n
	})
	stop, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
	_ = a.Close(stop) // gives up: the destination still refuses
	cancel()
	if c, _ := db.CountTraces(ctx); c[d.ID] != n {
		t.Fatalf("after the stop the outbox holds %d entries, want %d", c[d.ID], n)
	}

	svc.release()
	b := New(db, nil, nil, outboxOptions(db, "instance-b"))
	c := New(db, nil, nil, outboxOptions(db, "instance-c"))
	eventually(t, "every event delivered", func() bool { return len(svc.counts()) == n })
	eventually(t, "the outbox empty", func() bool {
		c, err := db.CountTraces(ctx)
		return err == nil && c[d.ID] == 0
	})
	time.Sleep(400 * time.Millisecond) // past a lease: nothing comes again
	closeNow(t, b)
	closeNow(t, c)
	got := svc.counts()
	for _, id := range ids {
		if got[id] != 1 {
			t.Errorf("generation %s arrived %d times, want once", id, got[id])
		}
	}
	st, err := db.DeliveryStatuses(ctx, d.OrganizationID, []string{d.ID})
	if err != nil {
		t.Fatal(err)
	}
	if s := st[d.ID]; s.Sent != n || s.LastSuccessAt == nil {
		t.Errorf("status = %+v, want %d sent", s, n)
	}
}

// TestOutboxDropIsCountedAndAudited: a destination's full queue drops
// events; the drop is in its status and in the audit log, and nothing of
// the dropped events stays in the outbox.
func TestOutboxDropIsCountedAndAudited(t *testing.T) {
	svc := newDedupService(t)
	svc.hold.Store(true)
	db, d := outboxStore(t, svc.URL+"/in")
	ctx := context.Background()
	o := outboxOptions(db, "instance-a")
	o.MaxPendingPerDestination = 3
	p := New(db, nil, nil, o)
	for range 20 {
		p.Publish(testEvent(func(ev *gatehouse.TraceEvent) {
			ev.Generation.OrganizationID, ev.Generation.WorkspaceID = d.OrganizationID, d.WorkspaceID
		}))
	}
	var st gatehouse.DeliveryStatus
	eventually(t, "drops recorded", func() bool {
		m, err := db.DeliveryStatuses(ctx, d.OrganizationID, []string{d.ID})
		st = m[d.ID]
		return err == nil && st.Dropped > 0
	})
	svc.hold.Store(false)
	closeNow(t, p)
	m, _ := db.DeliveryStatuses(ctx, d.OrganizationID, []string{d.ID})
	st = m[d.ID]
	if st.Sent+st.Dropped != 20 || st.Dropped < 10 {
		t.Errorf("status %+v: want 20 events sent or dropped, most dropped", st)
	}
	if c, _ := db.CountTraces(ctx); c[d.ID] != 0 {
		t.Errorf("the outbox still holds %d entries", c[d.ID])
	}
	entries, _, err := db.FindAuditEntries(ctx, d.OrganizationID, gatehouse.AuditFilter{Operation: gatehouse.OpDestinationDrop,
		Page: gatehouse.Page{Limit: 100}})
	if err != nil {
		t.Fatal(err)
	}
	var audited float64
	for _, e := range entries {
		if e.ActorSystem == nil || *e.ActorSystem != gatehouse.ActorObservability {
			t.Errorf("audit entry actor %v, want the observability system", e.ActorSystem)
		}
		n, _ := e.Details["dropped"].(float64)
		audited += n
	}
	if len(entries) == 0 || int64(audited) != st.Dropped {
		t.Errorf("audit entries %d counting %v drops, want %d", len(entries), audited, st.Dropped)
	}
}

// TestOutboxSealsEvents: an event waiting in the outbox may carry a prompt
// and its completion; the database holds it sealed, and a claim reads it
// back as it was.
func TestOutboxSealsEvents(t *testing.T) {
	ctx := context.Background()
	db, d := outboxStore(t, "http://127.0.0.1:1/hook")
	event := []byte(`{"Input":[{"role":"user","content":"secret prompt"}],"Output":"secret completion"}`)
	now := time.Now()
	if err := db.AddTraces(ctx, "a", now.Add(-time.Second), []gatehouse.OutboxEntry{{ID: "obx-1", OrganizationID: d.OrganizationID,
		WorkspaceID: d.WorkspaceID, DestinationID: d.ID, Event: event}}); err != nil {
		t.Fatal(err)
	}
	raw, err := sql.Open("sqlite", "file:"+db.Path+"?mode=ro")
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	var stored string
	if err := raw.QueryRowContext(ctx, `SELECT event FROM observe_outbox WHERE id = 'obx-1'`).Scan(&stored); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(stored, "secret") || !strings.HasPrefix(stored, "v1:") {
		t.Errorf("the outbox holds %q: want it sealed", stored)
	}
	got, err := db.ClaimTraces(ctx, "b", now, now.Add(time.Minute), 10)
	if err != nil || len(got) != 1 || string(got[0].Event) != string(event) {
		t.Fatalf("claimed %v, %v; want the event as written", got, err)
	}
}
