package meter_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/meter"
	"gatehouse/provider"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
	"gatehouse/sqlstore"
)

// meterEnv is a Meter over a real SQLite store with one organization, a
// model of provider acme ($1 and $2 per million prompt and completion
// tokens), and a fixed clock. It records the anomalies and traces the
// meter reports.
type meterEnv struct {
	t        *testing.T
	ctx      context.Context
	store    *sqlite.DB
	org      *gatehouse.Organization
	model    *provider.Model
	provider *provider.Provider
	meter    *meter.Meter

	mu        sync.Mutex
	anomalies []meter.Anomaly
	traces    []*gatehouse.TraceEvent
}

var meterNow = time.Date(2027, 3, 17, 10, 30, 0, 0, time.UTC)

// meterRequest is a client's request body, as the meter receives it.
const meterRequest = `{"model":"acme/chat","messages":[{"role":"user","content":"hi"}]}`

func newMeterEnv(t *testing.T) *meterEnv {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	db, err := sqlite.Open(ctx, sqlitetest.Path(t, "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.Now = func() time.Time { return meterNow }
	org, err := db.CreateOrganization(ctx, "Metered")
	if err != nil {
		t.Fatal(err)
	}
	p := &provider.Provider{ID: "acme", Timeout: 30 * time.Second, Models: []*provider.Model{{
		ID: "chat", PromptPrice: gatehouse.USD(1), CompletionPrice: gatehouse.USD(2), MaxCompletionTokens: 1000}}}
	if _, err := provider.NewCatalog([]*provider.Provider{p}); err != nil {
		t.Fatal(err)
	}
	e := &meterEnv{t: t, ctx: ctx, store: db, org: org, model: p.Models[0], provider: p}
	e.meter = &meter.Meter{Usage: db, Traces: e, Now: db.Now, Anomaly: func(_ context.Context, a meter.Anomaly) {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.anomalies = append(e.anomalies, a)
	}}
	return e
}

// Publish implements gatehouse.TraceSink.
func (e *meterEnv) Publish(ev *gatehouse.TraceEvent) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.traces = append(e.traces, ev)
}

// key creates a key with a limit (nil: none).
func (e *meterEnv) key(limit *gatehouse.Money) *gatehouse.Key {
	e.t.Helper()
	k, _, err := e.store.CreateKey(e.ctx, e.org.ID, gatehouse.KeyCreate{Name: "metered", Limit: limit})
	if err != nil {
		e.t.Fatal(err)
	}
	return k
}

// call is a metered call of k with the client's cap (nil: the model's).
func (e *meterEnv) call(k *gatehouse.Key, maxTokens *int) meter.MeteredCall {
	return meter.MeteredCall{Key: k, Model: e.model, Provider: e.provider, Request: []byte(meterRequest), MaxTokens: maxTokens}
}

// reserve reserves a call and fails the test on error.
func (e *meterEnv) reserve(c meter.MeteredCall) *meter.Metering {
	e.t.Helper()
	m, err := e.meter.Reserve(e.ctx, c)
	if err != nil {
		e.t.Fatalf("Reserve: %v", err)
	}
	return m
}

// recorded returns a settled call's ledger entry and the key's total usage.
func (e *meterEnv) recorded(m *meter.Metering) (*gatehouse.Generation, gatehouse.Money) {
	e.t.Helper()
	g, err := e.store.FindGeneration(e.ctx, e.org.ID, m.Generation.ID)
	if err != nil {
		e.t.Fatalf("FindGeneration: %v", err)
	}
	k, err := e.store.FindKey(e.ctx, e.org.ID, m.Reservation.KeyHash)
	if err != nil {
		e.t.Fatal(err)
	}
	return g, k.Usage.Total
}

// wantGone checks that the reservation was settled or released.
func (e *meterEnv) wantGone(m *meter.Metering) {
	e.t.Helper()
	err := e.store.Settle(e.ctx, m.Reservation.ID, &gatehouse.Generation{ID: gatehouse.NewGenerationID()})
	if gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		e.t.Errorf("settling the reservation again: %v, want ENOTFOUND (gone)", err)
	}
}

// TestMeterEstimate: the reservation is the worst case: as many prompt
// tokens as the request has bytes (plus 16), and the completion cap the
// client asked for, else the model's; it holds until the longest call
// could have ended.
func TestMeterEstimate(t *testing.T) {
	e := newMeterEnv(t)
	k := e.key(nil)
	for _, c := range []struct {
		name      string
		requested *int
		wantCap   int
	}{{"client's cap", new(100), 100}, {"model's cap", nil, 1000}} {
		m := e.reserve(e.call(k, c.requested))
		want := gatehouse.Money(int64(len(meterRequest)+16)*1000 + int64(c.wantCap)*2000) // nano-dollars
		if m.MaxTokens != c.wantCap || m.Reservation.Amount != want || meter.Estimate(e.model, len(meterRequest), c.wantCap) != want {
			t.Errorf("%s: cap %d, reserved %s; want %d and %s", c.name, m.MaxTokens, m.Reservation.Amount, c.wantCap, want)
		}
		if want := meterNow.Add(30*time.Second + time.Minute); !m.Reservation.ExpiresAt.Equal(want) {
			t.Errorf("%s: expires at %s, want %s", c.name, m.Reservation.ExpiresAt, want)
		}
		g := m.Generation
		if g.ID == "" || g.KeyHash != k.Hash || g.OrganizationID != e.org.ID || g.WorkspaceID != k.WorkspaceID ||
			g.Model != "acme/chat" || g.Provider != "acme" || m.Reservation.KeyHash != k.Hash {
			t.Errorf("%s: generation %+v", c.name, g)
		}
	}
}

// TestMeterSettlesExactCost: a call whose provider reported usage is
// charged its exact cost, recorded with the provider's ids made storable,
// and traced with the request's messages and the answer.
func TestMeterSettlesExactCost(t *testing.T) {
	e := newMeterEnv(t)
	k := e.key(nil)
	m := e.reserve(e.call(k, new(100)))
	done := provider.Completion{UsageKnown: true, PromptTokens: 11, CompletionTokens: 7,
		UpstreamID: "chatcmpl-\x00up", FinishReason: "stop", Output: "hello"}
	if err := e.meter.Settle(e.ctx, m, done, nil); err != nil {
		t.Fatal(err)
	}
	g, usage := e.recorded(m)
	want := e.model.Cost(11, 7)
	if g.Status != gatehouse.GenerationCompleted || g.Cost != want || usage != want || g.PromptTokens != 11 || g.CompletionTokens != 7 {
		t.Errorf("recorded %s at %s (key usage %s), %d+%d tokens; want completed at %s", g.Status, g.Cost, usage, g.PromptTokens, g.CompletionTokens, want)
	}
	if g.UpstreamID == nil || *g.UpstreamID != "chatcmpl-up" || g.FinishReason == nil || *g.FinishReason != "stop" {
		t.Errorf("upstream id %v, finish reason %v", g.UpstreamID, g.FinishReason)
	}
	e.wantGone(m)
	if len(e.anomalies) != 0 {
		t.Errorf("anomalies %+v", e.anomalies)
	}
	if len(e.traces) != 1 {
		t.Fatalf("%d traces, want 1", len(e.traces))
	}
	tr := e.traces[0]
	var msgs []map[string]string
	if err := json.Unmarshal(tr.Input, &msgs); err != nil || len(msgs) != 1 || msgs[0]["content"] != "hi" {
		t.Errorf("trace input %s: %v", tr.Input, err)
	}
	if tr.Generation.ID != m.Generation.ID || tr.Output != "hello" || tr.KeyName != "metered" || tr.EndedAt.Before(tr.StartedAt) {
		t.Errorf("trace %+v", tr)
	}
}

// TestMeterChargesTheReservationWithoutUsableUsage: no usage, negative
// counts (which would credit the key) or a stream that broke off are all
// charged what was reserved, as partial.
func TestMeterChargesTheReservationWithoutUsableUsage(t *testing.T) {
	e := newMeterEnv(t)
	for _, c := range []struct {
		name    string
		done    provider.Completion
		callErr error
	}{
		{"no usage", provider.Completion{}, nil},
		{"negative counts", provider.Completion{UsageKnown: true, PromptTokens: -1_000_000, CompletionTokens: 5}, nil},
		{"broke off", provider.Completion{UsageKnown: true, PromptTokens: 11, CompletionTokens: 7}, errors.New("stream broke off")},
	} {
		m := e.reserve(e.call(e.key(nil), new(100)))
		if err := e.meter.Settle(e.ctx, m, c.done, c.callErr); err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
		g, usage := e.recorded(m)
		if g.Status != gatehouse.GenerationPartial || g.Cost != m.Reservation.Amount || usage != m.Reservation.Amount {
			t.Errorf("%s: recorded %s at %s (key usage %s), want partial at the reservation %s", c.name, g.Status, g.Cost, usage, m.Reservation.Amount)
		}
	}
	if len(e.anomalies) != 0 || len(e.traces) != 3 {
		t.Errorf("anomalies %+v, %d traces", e.anomalies, len(e.traces))
	}
}

// TestMeterCapsTheChargeAtTheReservation: a provider reporting more than
// the cap it was sent is charged no more than was reserved, and the
// anomaly is reported with what the provider claimed.
func TestMeterCapsTheChargeAtTheReservation(t *testing.T) {
	e := newMeterEnv(t)
	m := e.reserve(e.call(e.key(nil), new(100)))
	done := provider.Completion{UsageKnown: true, PromptTokens: 11, CompletionTokens: 1000}
	if err := e.meter.Settle(e.ctx, m, done, nil); err != nil {
		t.Fatal(err)
	}
	g, usage := e.recorded(m)
	if g.Status != gatehouse.GenerationCompleted || g.Cost != m.Reservation.Amount || usage != m.Reservation.Amount || g.CompletionTokens != 1000 {
		t.Errorf("recorded %s at %s (key usage %s), want completed at the reservation %s", g.Status, g.Cost, usage, m.Reservation.Amount)
	}
	want := meter.Anomaly{Kind: meter.AnomalyUsageOverReservation, PromptTokens: 11, CompletionTokens: 1000,
		Cost: e.model.Cost(11, 1000), Reserved: m.Reservation.Amount}
	if len(e.anomalies) != 1 {
		t.Fatalf("anomalies %+v, want one", e.anomalies)
	}
	got := e.anomalies[0]
	if got.Generation == nil || got.Generation.ID != m.Generation.ID {
		t.Errorf("anomaly of generation %+v, want %s", got.Generation, m.Generation.ID)
	}
	if got.Generation = nil; got != want {
		t.Errorf("anomaly %+v, want %+v", got, want)
	}
}

// TestMeterReleaseChargesNothing: a released reservation stops counting
// against the key's limit and leaves nothing in the ledger; release and
// settle finish even when the caller's context is cancelled (the client
// left).
func TestMeterReleaseChargesNothing(t *testing.T) {
	e := newMeterEnv(t)
	limit := meter.Estimate(e.model, len(meterRequest), 100)
	k := e.key(&limit)
	m := e.reserve(e.call(k, new(100)))
	if _, err := e.meter.Reserve(e.ctx, e.call(k, new(100))); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("a second call while the first holds the whole limit: %v, want EPAYMENT", err)
	}
	cancelled, cancel := context.WithCancel(e.ctx)
	cancel()
	if err := e.meter.Release(cancelled, m); err != nil {
		t.Fatal(err)
	}
	e.wantGone(m)
	m = e.reserve(e.call(k, new(100))) // the limit is free again
	if err := e.meter.Settle(cancelled, m, provider.Completion{UsageKnown: true, PromptTokens: 1, CompletionTokens: 1}, nil); err != nil {
		t.Fatalf("Settle with the client gone: %v", err)
	}
	if g, usage := e.recorded(m); g.Cost != e.model.Cost(1, 1) || usage != g.Cost {
		t.Errorf("charged %s (key usage %s), want only the settled call", g.Cost, usage)
	}
}

// TestMeterReserveRefuses: the guardrails' model rules and the key's limit
// are checked before anything is reserved.
func TestMeterReserveRefuses(t *testing.T) {
	e := newMeterEnv(t)
	tiny := gatehouse.Money(1)
	if _, err := e.meter.Reserve(e.ctx, e.call(e.key(&tiny), nil)); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Errorf("over the key's limit: %v, want EPAYMENT", err)
	}
	k := e.key(nil)
	g, err := e.store.CreateGuardrail(e.ctx, e.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("others only"), AllowedModels: gatehouse.Val([]string{"other/model"})}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.AssignKeys(e.ctx, e.org.ID, g.ID, []string{k.Hash}, nil); err != nil {
		t.Fatal(err)
	}
	_, err = e.meter.Reserve(e.ctx, e.call(k, nil))
	var ge *gatehouse.Error
	if !errors.As(err, &ge) || ge.Code != gatehouse.EFORBIDDEN || ge.Metadata["rule"] != "allowed_models" {
		t.Errorf("a model the key's guardrail does not allow: %v, want EFORBIDDEN by allowed_models", err)
	}
	if len(e.traces) != 0 {
		t.Errorf("%d traces of refused calls", len(e.traces))
	}
}

// gatedLedger is a real ledger whose settles and releases wait until open
// is called: the moment between a call's end and the write of its settle,
// when a crash leaves its hold open, to be charged at what it reserved.
type gatedLedger struct {
	*sqlstore.Ledger
	mu   sync.Mutex
	held []func()
}

func (g *gatedLedger) Settle(r *gatehouse.Reservation, gen *gatehouse.Generation, result func(error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, func() { g.Ledger.Settle(r, gen, result) })
}

func (g *gatedLedger) Release(r *gatehouse.Reservation, result func(error)) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.held = append(g.held, func() { g.Ledger.Release(r, result) })
}

// open submits what waited, and waits until it is written.
func (g *gatedLedger) open(t *testing.T) {
	t.Helper()
	g.mu.Lock()
	held := g.held
	g.held = nil
	g.mu.Unlock()
	for _, submit := range held {
		submit()
	}
	if err := g.Ledger.Sync(context.Background()); err != nil {
		t.Fatal(err)
	}
}

// gate gives e's meter a ledger whose settles and releases wait for open,
// and admission in memory: with the accountant, or (leases) with leases
// of the database's grant, as instances that share it do.
func (e *meterEnv) gate(leases bool) *gatedLedger {
	e.t.Helper()
	l := e.store.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	e.t.Cleanup(func() { l.Close(context.Background()) })
	g := &gatedLedger{Ledger: l}
	e.meter.Ledger = g
	if leases {
		e.meter.Leases = meter.NewLeases(e.store, g, nil)
	} else {
		e.meter.Accounts = meter.NewAccountant(e.store, e.store.Now)
	}
	return g
}

// TestMeterHoldCountsUntilItsSettleIsWritten: admitting in memory, a
// streamed call's hold counts at what it reserved until its settle is
// written, not from the moment the call ends: a crash before the write
// leaves the hold open, and the next start charges it at what it
// reserved, so a call admitted against the difference would take the key
// past its limit. Once the settle is written, the limit has room again.
// (A settle counted at once failed this: the second call was admitted,
// and the crash charged both reservations, over the limit.)
func TestMeterHoldCountsUntilItsSettleIsWritten(t *testing.T) {
	for _, crash := range []bool{true, false} {
		e := newMeterEnv(t)
		g := e.gate(false)
		reserved := meter.Estimate(e.model, len(meterRequest), 100)
		limit := reserved + reserved/2
		k := e.key(&limit)
		call := e.call(k, new(100))
		call.Stream = true // a streamed answer has a hold; a whole one's charge is journalled first
		first := e.reserve(call)
		if err := first.Held(e.ctx); err != nil {
			t.Fatal(err)
		}
		if err := e.meter.Settle(e.ctx, first, provider.Completion{UsageKnown: true, PromptTokens: 1, CompletionTokens: 1}, nil); err != nil {
			t.Fatal(err)
		}
		if _, err := e.meter.Reserve(e.ctx, call); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
			t.Fatalf("a second call while the first one's settle is unwritten: %v, want EPAYMENT (its hold still reserves %s of %s)", err, reserved, limit)
		}
		if crash {
			// The process dies here: the next start charges the open hold.
			if _, err := e.store.ChargeOpen(e.ctx, time.Time{}); err != nil {
				t.Fatal(err)
			}
			if got, err := e.store.FindKey(e.ctx, e.org.ID, k.Hash); err != nil || got.Usage.Total > limit {
				t.Fatalf("after the crash: usage %v of a limit of %s (%v)", got.Usage.Total, limit, err)
			}
			continue
		}
		g.open(t)
		second := e.reserve(call)
		if err := second.Held(e.ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// TestMeterLeaseCoversWhatACrashCharges: admitting against a lease, a
// call's hold leaves the lease only once its settle is written: the
// lease's amount in the database is what the holds under it are charged,
// at what they reserved, when its instance dies first. (A lease that
// counted the settle at once admitted a fifth call against what it freed,
// and the crash charged five reservations on a limit of four.)
func TestMeterLeaseCoversWhatACrashCharges(t *testing.T) {
	e := newMeterEnv(t)
	e.gate(true)
	reserved := meter.Estimate(e.model, len(meterRequest), 100)
	limit := 4 * reserved // the first lease: four calls' worth, the whole limit
	k := e.key(&limit)
	var calls []*meter.Metering
	call := e.call(k, new(100))
	call.Stream = true // its hold is written at once; a whole answer's may be taken back (TestMeterWholeAnswerTakesBackItsQueuedHold)
	for range 4 {
		m := e.reserve(call)
		if err := m.Held(e.ctx); err != nil {
			t.Fatal(err)
		}
		calls = append(calls, m)
	}
	if calls[0].Reservation.LeaseID == "" {
		t.Fatal("the first call was not admitted against a lease")
	}
	if err := e.meter.Settle(e.ctx, calls[0], provider.Completion{UsageKnown: true, PromptTokens: 1, CompletionTokens: 1}, nil); err != nil {
		t.Fatal(err)
	}
	small := e.call(k, new(50)) // fits what the first call's settle frees, once written
	if _, err := e.meter.Reserve(e.ctx, small); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("a call while the first one's settle is unwritten: %v, want EPAYMENT", err)
	}
	if _, err := e.store.ChargeOpen(e.ctx, time.Time{}); err != nil { // the instance died
		t.Fatal(err)
	}
	if got, err := e.store.FindKey(e.ctx, e.org.ID, k.Hash); err != nil || got.Usage.Total > limit {
		t.Fatalf("after the crash: usage %v of a limit of %s (%v)", got.Usage.Total, limit, err)
	}
}

// busyLedger is a real ledger that is always busy for patient holds: each
// waits, as behind a batch in flight, until flush writes it, and may be
// taken back (Unhold) meanwhile.
type busyLedger struct {
	*sqlstore.Ledger
	mu      sync.Mutex
	pending map[*gatehouse.Reservation]chan error
}

func (b *busyLedger) HoldPatiently(r *gatehouse.Reservation) <-chan error {
	b.mu.Lock()
	defer b.mu.Unlock()
	ch := make(chan error, 1)
	b.pending[r] = ch
	return ch
}

func (b *busyLedger) Unhold(r *gatehouse.Reservation) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	_, ok := b.pending[r]
	delete(b.pending, r)
	return ok
}

// busy gives e's meter a busy ledger and leases of the database's grant.
func (e *meterEnv) busy() *busyLedger {
	e.t.Helper()
	l := e.store.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	e.t.Cleanup(func() { l.Close(context.Background()) })
	b := &busyLedger{Ledger: l, pending: map[*gatehouse.Reservation]chan error{}}
	e.meter.Ledger = b
	e.meter.Leases = meter.NewLeases(e.store, b, nil)
	return b
}

// TestMeterWholeAnswerTakesBackItsQueuedHold: admitting against a lease,
// a whole answer that comes while its hold is still queued takes the hold
// back (Held), and Settle returns once its charge is written: the key's
// usage has it, no hold of it is open, and its lease has room again for
// what the charge freed (four calls' worth of limit: three more calls and
// a small one fit). A crash before the charge is written charges nothing:
// the answer was not delivered. A call taken back and then released gives
// its room back to the lease.
func TestMeterWholeAnswerTakesBackItsQueuedHold(t *testing.T) {
	usage := provider.Completion{UsageKnown: true, PromptTokens: 1, CompletionTokens: 1}
	setup := func() (*meterEnv, *busyLedger, *gatehouse.Key, gatehouse.Money) {
		e := newMeterEnv(t)
		b := e.busy()
		reserved := meter.Estimate(e.model, len(meterRequest), 100)
		limit := 4 * reserved // the first lease: four calls' worth, the whole limit
		return e, b, e.key(&limit), reserved
	}
	taken := func(e *meterEnv, b *busyLedger, c meter.MeteredCall) *meter.Metering {
		t.Helper()
		m := e.reserve(c)
		if m.Reservation.LeaseID == "" {
			t.Fatal("the call was not admitted against a lease")
		}
		if err := m.Held(e.ctx); err != nil {
			t.Fatal(err)
		}
		if !m.Reservation.Unheld || len(b.pending) != 0 {
			t.Fatalf("Held with the hold queued: unheld %v, %d holds still queued; want it taken back", m.Reservation.Unheld, len(b.pending))
		}
		return m
	}

	e, b, k, reserved := setup()
	m := taken(e, b, e.call(k, new(100)))
	if err := e.meter.Settle(e.ctx, m, usage, nil); err != nil {
		t.Fatal(err)
	}
	g, total := e.recorded(m)
	if cost := e.model.Cost(1, 1); g.Cost != cost || total != cost {
		t.Fatalf("once Settle returned: generation cost %s, key usage %s; want %s written", g.Cost, total, cost)
	}
	for range 3 {
		if m := e.reserve(e.call(k, new(100))); m.Reservation.LeaseID == "" {
			t.Fatal("a call that fits the lease was admitted alone")
		}
	}
	if _, err := e.meter.Reserve(e.ctx, e.call(k, new(50))); err != nil {
		t.Fatalf("a small call in what the charge freed: %v (the lease still counts the call at what it reserved, %s)", err, reserved)
	}
	if n, err := e.store.ChargeOpen(e.ctx, time.Time{}); err != nil || n != 0 {
		t.Fatalf("a crash charged %d holds (%v), want none: the others' holds are queued, the first one's never written", n, err)
	}

	e, b, k, _ = setup()
	taken(e, b, e.call(k, new(100)))
	if n, err := e.store.ChargeOpen(e.ctx, time.Time{}); err != nil || n != 0 {
		t.Fatalf("a crash before the charge was written charged %d holds (%v), want none", n, err)
	}
	if got, err := e.store.FindKey(e.ctx, e.org.ID, k.Hash); err != nil || got.Usage.Total != 0 {
		t.Fatalf("after the crash: usage %v (%v), want nothing: the answer was never delivered", got.Usage.Total, err)
	}

	e, b, k, _ = setup()
	m = taken(e, b, e.call(k, new(100)))
	if err := e.meter.Release(e.ctx, m); err != nil {
		t.Fatal(err)
	}
	for range 4 {
		if m := e.reserve(e.call(k, new(100))); m.Reservation.LeaseID == "" {
			t.Fatal("a call that fits the lease once the released one left it was admitted alone")
		}
	}
}
