package observe

import (
	"context"
	"strings"
	"sync"
	"time"

	"gatehouse"
)

// statusBook keeps how deliveries to each destination went: the totals
// of this process, and what was added since the last flush to the
// outbox's status table.
type statusBook struct {
	mu     sync.Mutex
	totals map[string]*gatehouse.DeliveryStatus
	deltas map[string]*gatehouse.DeliveryCount
}

func newStatusBook() *statusBook {
	return &statusBook{totals: map[string]*gatehouse.DeliveryStatus{}, deltas: map[string]*gatehouse.DeliveryCount{}}
}

// record counts an outcome for a destination.
func (b *statusBook) record(d *gatehouse.Destination, sent, failedN, dropped int64, o outcome, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	c := b.deltas[d.ID]
	if c == nil {
		c = &gatehouse.DeliveryCount{DestinationID: d.ID, OrganizationID: d.OrganizationID, WorkspaceID: d.WorkspaceID}
		b.deltas[d.ID] = c
	}
	t := b.totals[d.ID]
	if t == nil {
		t = &gatehouse.DeliveryStatus{}
		b.totals[d.ID] = t
	}
	for _, st := range []*gatehouse.DeliveryStatus{&c.DeliveryStatus, t} {
		st.Sent += sent
		st.Failed += failedN
		st.Dropped += dropped
		switch {
		case sent > 0:
			at := now
			st.LastSuccessAt = &at
		case failedN > 0:
			at := now
			st.LastErrorAt = &at
			st.LastError = redact(d, o.summary())
		}
	}
}

// takeDeltas returns the counts added since the last call.
func (b *statusBook) takeDeltas() []gatehouse.DeliveryCount {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]gatehouse.DeliveryCount, 0, len(b.deltas))
	for _, c := range b.deltas {
		out = append(out, *c)
	}
	clear(b.deltas)
	return out
}

// redact takes the destination's secrets (its secret values and header
// values) out of a text from its service, which may echo them back.
func redact(d *gatehouse.Destination, s string) string {
	for k, v := range d.Config.Values {
		if gatehouse.IsSecretConfigKey(k) && len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "********")
		}
	}
	for _, v := range d.Config.Headers {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "********")
		}
	}
	return s
}

// Status returns how deliveries to destinations of the organization have
// gone: over every instance from the outbox's status table (within
// FlushInterval), or, without an outbox, on this instance since it
// started. A destination that never delivered has a zero status.
func (p *Publisher) DeliveryStatuses(ctx context.Context, orgID string, ids []string) (map[string]gatehouse.DeliveryStatus, error) {
	if p.opts.Outbox != nil {
		return p.opts.Outbox.DeliveryStatuses(ctx, orgID, ids)
	}
	p.status.mu.Lock()
	defer p.status.mu.Unlock()
	out := map[string]gatehouse.DeliveryStatus{}
	for _, id := range ids {
		if t := p.status.totals[id]; t != nil {
			out[id] = *t
		}
	}
	return out, nil
}

// localStatus is this instance's status of a destination.
func (p *Publisher) localStatus(id string) gatehouse.DeliveryStatus {
	p.status.mu.Lock()
	defer p.status.mu.Unlock()
	if t := p.status.totals[id]; t != nil {
		return *t
	}
	return gatehouse.DeliveryStatus{}
}

var _ gatehouse.DeliveryMonitor = (*Publisher)(nil)

// TestDestination sends a test event to d at once (enabled or not, its
// filters and sampling aside), one attempt, and reports the answer. The
// event is a generation of model gatehouse/test that cost nothing, with a
// one-line prompt and completion (none in privacy mode).
func (p *Publisher) TestDestination(ctx context.Context, d *gatehouse.Destination) (*gatehouse.DeliveryTest, error) {
	if d.SecretsUnreadable {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "the secrets of destination %s cannot be opened with the server's secret key: send them again, then test", d.ID)
	}
	deliver := deliverer(d.Type)
	if deliver == nil {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "destination type %s does not deliver", d.Type)
	}
	now := p.now().UTC()
	finish := "stop"
	g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: d.OrganizationID, WorkspaceID: d.WorkspaceID,
		KeyHash: "test", Model: "gatehouse/test", Provider: "gatehouse", PromptTokens: 1, CompletionTokens: 1,
		FinishReason: &finish, Status: gatehouse.GenerationCompleted, CreatedAt: now}
	ev := &gatehouse.TraceEvent{Generation: g, KeyName: "Gatehouse test event",
		Input:  []byte(`[{"role":"user","content":"A test event from Gatehouse."}]`),
		Output: "It arrived.", StartedAt: now, EndedAt: now}
	ctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
	defer cancel()
	start := time.Now()
	o := deliver(ctx, p.sender, d, []*event{view(ev, d.PrivacyMode, newSpanIDs())})
	t := &gatehouse.DeliveryTest{Delivered: o.ok(), Status: o.status, Answer: redact(d, o.answer),
		LatencyMS: time.Since(start).Milliseconds(), EventID: g.ID}
	if !o.ok() {
		t.Error = redact(d, o.summary())
	}
	return t, nil
}
