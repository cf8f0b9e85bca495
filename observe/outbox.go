package observe

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"time"

	"gatehouse"
)

// The durable outbox (Options.Outbox). The dispatcher writes each
// delivery to it, held by this instance (Options.Instance) under a lease,
// before the delivery can be attempted, a batch of events in one write;
// a delivery that succeeds, or fails for good, deletes its entry. While
// entries wait here, their lease is renewed; when an instance stops or
// crashes with entries, their lease runs out and the claimer of the next
// instance to look (this one after a restart, or another) takes them and
// delivers them. Nothing is lost but what was not yet written: the events
// of the last moments before a crash that were still in the in-memory
// queue (a few milliseconds' worth: the dispatcher writes as it reads).

// storedEvent is an event as the outbox holds it: what the destination
// receives (privacy mode applied), with the span ids, so that a delivery
// sent again is the same span.
type storedEvent struct {
	Generation gatehouse.Generation
	KeyName    string
	UserID     *string
	Input      json.RawMessage `json:",omitempty"`
	InputText  string          `json:",omitempty"` // when the input is not JSON
	Output     string
	StartedAt  time.Time
	EndedAt    time.Time
	Privacy    bool
	TraceID    string
	SpanID     string
}

func encodeEvent(e *event) ([]byte, error) {
	g := *e.Generation
	g.Content, g.ProviderResponses = nil, nil // not part of what is delivered
	s := storedEvent{Generation: g, KeyName: e.KeyName, UserID: e.UserID, Output: e.Output,
		StartedAt: e.StartedAt, EndedAt: e.EndedAt, Privacy: e.privacy, TraceID: e.ids.trace, SpanID: e.ids.span}
	if json.Valid(e.Input) {
		s.Input = e.Input
	} else {
		s.InputText = string(e.Input)
	}
	return json.Marshal(s)
}

func decodeEvent(b []byte) (*event, error) {
	var s storedEvent
	if err := json.Unmarshal(b, &s); err != nil {
		return nil, err
	}
	in := []byte(s.Input)
	if s.InputText != "" {
		in = []byte(s.InputText)
	}
	g := s.Generation
	ev := &gatehouse.TraceEvent{Generation: &g, KeyName: s.KeyName, UserID: s.UserID, Input: in, Output: s.Output,
		StartedAt: s.StartedAt, EndedAt: s.EndedAt}
	return &event{TraceEvent: ev, privacy: s.Privacy, ids: &spanIDs{trace: s.TraceID, span: s.SpanID}}, nil
}

func newEntryID() string {
	b := make([]byte, 16)
	_, _ = rand.Read(b)
	return "obx-" + hex.EncodeToString(b)
}

// persist writes the deliveries to the outbox before they are queued:
// a delivery whose write failed is still attempted, from memory only.
func (p *Publisher) persist(dls []*delivery) {
	if p.opts.Outbox == nil || len(dls) == 0 {
		return
	}
	entries := make([]gatehouse.OutboxEntry, 0, len(dls))
	keep := make([]*delivery, 0, len(dls))
	for _, dl := range dls {
		b, err := encodeEvent(dl.event)
		if err != nil {
			continue
		}
		dl.entryID = newEntryID()
		entries = append(entries, gatehouse.OutboxEntry{ID: dl.entryID, OrganizationID: dl.dest.OrganizationID,
			WorkspaceID: dl.dest.WorkspaceID, DestinationID: dl.dest.ID, Event: b})
		keep = append(keep, dl)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(p.ctx), p.opts.Timeout)
	defer cancel()
	if err := p.opts.Outbox.AddTraces(ctx, p.opts.Instance, p.now().Add(p.opts.Lease), entries); err != nil {
		p.metrics.outboxErrors.Inc()
		p.logger.Warn("observability: cannot write deliveries to the outbox; they are attempted from memory only",
			"deliveries", len(entries), "error", describe(err))
		for _, dl := range keep {
			dl.entryID = ""
		}
	}
}

// finished records that a delivery is over: its entry is deleted at the
// next flush.
func (p *Publisher) finished(dls ...*delivery) {
	if p.opts.Outbox == nil {
		return
	}
	p.pendingMu.Lock()
	for _, dl := range dls {
		if dl.entryID != "" {
			p.deletes = append(p.deletes, dl.entryID)
		}
	}
	p.pendingMu.Unlock()
}

// retried records a failed attempt of a delivery that will be tried again.
func (p *Publisher) retried(dl *delivery) {
	if p.opts.Outbox == nil || dl.entryID == "" {
		return
	}
	p.pendingMu.Lock()
	p.attemptsOf[dl.entryID] = dl.attempts
	p.pendingMu.Unlock()
}

// flush writes the deletions, attempts and status counts gathered since
// the last flush.
func (p *Publisher) flush(ctx context.Context) {
	p.pendingMu.Lock()
	deletes, attempts := p.deletes, p.attemptsOf
	p.deletes, p.attemptsOf = nil, map[string]int{}
	p.pendingMu.Unlock()
	counts := p.status.takeDeltas()
	if p.opts.Outbox == nil {
		return
	}
	o := p.opts.Outbox
	for id, n := range attempts {
		if err := o.SetTraceAttempts(ctx, []string{id}, n); err != nil {
			p.metrics.outboxErrors.Inc()
		}
	}
	if err := o.DeleteTraces(ctx, deletes); err != nil {
		p.metrics.outboxErrors.Inc()
		p.logger.Warn("observability: cannot delete delivered entries from the outbox; they may be delivered again",
			"entries", len(deletes), "error", describe(err))
	}
	if err := o.RecordDeliveries(ctx, counts); err != nil {
		p.metrics.outboxErrors.Inc()
		p.logger.Warn("observability: cannot record delivery status", "error", describe(err))
	}
}

// background renews this instance's leases and flushes until every worker
// has returned, and claims the entries whose lease ran out until the
// dispatcher is done (stopClaims).
func (p *Publisher) background() {
	claiming := true
	stopClaims := p.stopClaims
	flushEvery := time.NewTicker(p.opts.FlushInterval)
	defer flushEvery.Stop()
	renewEvery := time.NewTicker(max(p.opts.Lease/3, time.Millisecond))
	defer renewEvery.Stop()
	claimEvery := time.NewTicker(p.opts.ClaimInterval)
	defer claimEvery.Stop()
	ctx := context.WithoutCancel(p.ctx)
	p.claim(ctx)
	for {
		select {
		case <-stopClaims:
			claiming, stopClaims = false, nil
			p.feeders.Done()
		case <-p.done:
			if claiming {
				p.feeders.Done()
			}
			return
		case <-flushEvery.C:
			fctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
			p.flush(fctx)
			cancel()
		case <-renewEvery.C:
			if p.opts.Outbox != nil {
				rctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
				if err := p.opts.Outbox.RenewTraces(rctx, p.opts.Instance, p.now().Add(p.opts.Lease)); err != nil {
					p.metrics.outboxErrors.Inc()
				}
				cancel()
			}
		case <-claimEvery.C:
			if claiming {
				p.claim(ctx)
			}
		}
	}
}

// claimBatch is the most entries one claim takes.
const claimBatch = 256

// claim takes the entries whose lease ran out and queues their deliveries,
// as long as there is room.
func (p *Publisher) claim(ctx context.Context) {
	if p.opts.Outbox == nil {
		return
	}
	for {
		room := p.opts.QueueSize - int(p.lanes.length())
		if room <= 0 {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, p.opts.Timeout)
		now := p.now()
		entries, err := p.opts.Outbox.ClaimTraces(cctx, p.opts.Instance, now, now.Add(p.opts.Lease), min(room, claimBatch))
		cancel()
		if err != nil {
			p.metrics.outboxErrors.Inc()
			p.logger.Warn("observability: cannot claim deliveries from the outbox", "error", describe(err))
			return
		}
		for _, en := range entries {
			p.resume(en)
		}
		if len(entries) < min(room, claimBatch) {
			return
		}
	}
}

// resume queues the delivery of an entry taken from the outbox, to its
// destination as it is now; an entry whose destination is gone, disabled
// or no longer readable is deleted.
func (p *Publisher) resume(en gatehouse.OutboxEntry) {
	gone := &delivery{entryID: en.ID, dest: &gatehouse.Destination{ID: en.DestinationID}}
	ev, err := decodeEvent(en.Event)
	if err != nil {
		p.metrics.deliveries.WithLabelValues("failed").Inc()
		p.finished(gone)
		return
	}
	var dest *gatehouse.Destination
	if ts, _, err := p.targets(en.OrganizationID, en.WorkspaceID); err == nil {
		for _, t := range ts {
			if t.dest.ID == en.DestinationID {
				dest = t.dest
			}
		}
	} else {
		return // the store is down: the lease runs out and the entry is claimed again
	}
	if dest == nil || !dest.Enabled || dest.DeletedAt != nil || dest.SecretsUnreadable || deliverer(dest.Type) == nil {
		p.metrics.deliveries.WithLabelValues("skipped").Inc()
		p.finished(gone)
		return
	}
	dl := &delivery{dest: dest, event: ev, deliver: deliverer(dest.Type), attempts: en.Attempts, entryID: en.ID}
	if !p.lanes.add(dl) {
		p.droppedNew(dl)
	}
}
