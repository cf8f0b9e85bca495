package sqlstore

import (
	"slices"
	"testing"

	"gatehouse"
)

// TestStealLeavesTheWritersBatchAlone: an admission's transaction does not
// take queued settles while the ledger writes a batch, whose holds they
// may end: on PostgreSQL the admission would not see the holds (not yet
// committed), end nothing, and the holds would stay open once written (a
// call charged nothing until its reservation expired, found by
// TestProviderReceivedIsCharged).
func TestStealLeavesTheWritersBatchAlone(t *testing.T) {
	l := &Ledger{queue: []ledgerOp{{settle: Settlement{ReservationID: "r1"}}}}
	l.writing = 1
	if got := l.steal(10); got != nil {
		t.Fatalf("stole %d settles while a batch was being written", len(got))
	}
	l.writing = 0
	if got := l.steal(10); len(got) != 1 {
		t.Fatalf("stole %d settles with the writer idle, want 1", len(got))
	}
	l.queue = []ledgerOp{{hold: nil, waited: true}}
	l.waited = 1
	if got := l.steal(10); got != nil {
		t.Fatalf("stole %d operations while one that someone waits for was queued", len(got))
	}
}

// TestTakeKeepsSettlesBehindTheirHolds: with a second writer, a batch
// taken while another is in flight holds the holds that came meanwhile,
// never a settle or release of a hold still being written (its
// transaction would not see the hold, end nothing, and leave it open),
// and no settle at all while a batch that ends reservations is in flight;
// what it leaves stays in order.
func TestTakeKeepsSettlesBehindTheirHolds(t *testing.T) {
	hold := func(id string) ledgerOp {
		return ledgerOp{hold: &gatehouse.Reservation{ID: id}, waited: true, settle: Settlement{ReservationID: id}}
	}
	settle := func(id string) ledgerOp { return ledgerOp{settle: Settlement{ReservationID: id}} }
	ids := func(ops []ledgerOp) []string {
		var out []string
		for _, op := range ops {
			kind := "settle "
			if op.hold != nil {
				kind = "hold "
			}
			out = append(out, kind+op.settle.ReservationID)
		}
		return out
	}
	l := &Ledger{writers: 2, writing: 1, inflight: map[string]bool{"r1": true}, waited: 1,
		queue: []ledgerOp{settle("r1"), hold("r2"), settle("r0"), settle("r2")}}
	batch, ends := l.take()
	if got, want := ids(batch), []string{"hold r2", "settle r0", "settle r2"}; !slices.Equal(got, want) || !ends {
		t.Errorf("beside a batch of holds: took %v (ends %v), want %v", got, ends, want)
	}
	if got, want := ids(l.queue), []string{"settle r1"}; !slices.Equal(got, want) {
		t.Errorf("left %v, want %v", got, want)
	}
	if l.waited != 0 {
		t.Errorf("waited = %d after the hold was taken, want 0", l.waited)
	}

	l = &Ledger{writers: 2, writing: 1, settling: true, inflight: map[string]bool{}, waited: 1,
		queue: []ledgerOp{settle("r0"), hold("r3"), settle("r4")}}
	batch, ends = l.take()
	if got, want := ids(batch), []string{"hold r3"}; !slices.Equal(got, want) || ends {
		t.Errorf("beside a batch of settles: took %v (ends %v), want only %v", got, ends, want)
	}
	if got, want := ids(l.queue), []string{"settle r0", "settle r4"}; !slices.Equal(got, want) {
		t.Errorf("left %v, want %v in order", got, want)
	}

	l = &Ledger{writers: 2, writing: 2, inflight: map[string]bool{}, queue: []ledgerOp{hold("r5")}}
	if batch, _ := l.take(); batch != nil {
		t.Errorf("took %v with every writer busy", ids(batch))
	}
}

// TestSyncWaitsForEveryOpBeforeIt: batches end out of order (two writers,
// and settles left behind a batch that ends reservations), so Sync waits
// until every op queued before it is written, not until as many ops as
// were queued before it are: a later batch of holds ending first does not
// count for a settle still queued.
func TestSyncWaitsForEveryOpBeforeIt(t *testing.T) {
	l := &Ledger{flushed: make(chan struct{}), ended: map[uint64]bool{}, inflight: map[string]bool{}}
	for _, id := range []string{"r0", "r1"} {
		l.submit(ledgerOp{settle: Settlement{ReservationID: id}})
	}
	target := l.submitted
	l.submit(ledgerOp{hold: &gatehouse.Reservation{ID: "r2"}, waited: true})
	l.submit(ledgerOp{hold: &gatehouse.Reservation{ID: "r3"}, waited: true})
	ops := slices.Clone(l.queue)
	l.finished(ops[2:]) // the holds queued after Sync's target end first
	if l.done >= target {
		t.Fatalf("done = %d with the two settles queued before it unwritten: Sync would return", l.done)
	}
	l.finished(ops[1:2])
	if l.done >= target {
		t.Fatalf("done = %d with the first settle unwritten: Sync would return", l.done)
	}
	l.finished(ops[:1])
	if l.done != 4 || len(l.ended) != 0 {
		t.Fatalf("done = %d, %d ended beyond it, once all four are written: want 4 and none", l.done, len(l.ended))
	}
}

// TestTakeLeavesPatientHoldsForTheNextBatch: a patient hold (a whole
// answer's, which may be taken back when its answer comes first) starts no
// batch beside one in flight; it goes with the next batch taken, with
// anything that does start one, when Sync waits, when the ledger closes,
// and at once when no batch is in flight.
func TestTakeLeavesPatientHoldsForTheNextBatch(t *testing.T) {
	patient := func(id string) ledgerOp {
		return ledgerOp{hold: &gatehouse.Reservation{ID: id}, waited: true, patient: true, settle: Settlement{ReservationID: id}}
	}
	busy := func() *Ledger {
		return &Ledger{writers: 2, writing: 1, inflight: map[string]bool{}, waited: 2, queue: []ledgerOp{patient("p1"), patient("p2")}}
	}
	l := busy()
	if batch, _ := l.take(); batch != nil {
		t.Fatalf("took %d patient holds beside a batch in flight, want none", len(batch))
	}
	if len(l.queue) != 2 || l.waited != 2 || l.writing != 1 {
		t.Fatalf("after taking nothing: %d queued, waited %d, writing %d; want 2, 2, 1", len(l.queue), l.waited, l.writing)
	}

	for _, c := range []struct {
		name string
		set  func(l *Ledger)
	}{
		{"no batch in flight", func(l *Ledger) { l.writing = 0 }},
		{"a settle starts a batch", func(l *Ledger) { l.queue = append(l.queue, ledgerOp{settle: Settlement{ReservationID: "r0"}}) }},
		{"a hold that is not patient starts a batch", func(l *Ledger) {
			l.queue = append(l.queue, ledgerOp{hold: &gatehouse.Reservation{ID: "h0"}, waited: true})
			l.waited++
		}},
		{"Sync waits", func(l *Ledger) { l.syncing = 1 }},
		{"the ledger closes", func(l *Ledger) { l.closed = true }},
	} {
		l := busy()
		c.set(l)
		batch, _ := l.take()
		if len(batch) < 2 || batch[0].hold == nil || batch[0].hold.ID != "p1" || batch[1].hold.ID != "p2" {
			t.Errorf("%s: took %d ops, want the two patient holds first", c.name, len(batch))
		}
		if len(l.queue) != 0 || l.waited != 0 {
			t.Errorf("%s: left %d queued, waited %d; want none", c.name, len(l.queue), l.waited)
		}
	}

	// A settle that cannot be taken (a batch that ends reservations is in
	// flight) starts nothing, so the patient holds still wait.
	l = busy()
	l.settling = true
	l.queue = append(l.queue, ledgerOp{settle: Settlement{ReservationID: "r0"}})
	if batch, _ := l.take(); batch != nil {
		t.Errorf("took %d ops beside a batch of settles with only patient holds and a settle queued, want none", len(batch))
	}
}

// TestUnholdTakesBackAQueuedHold: a hold still queued is taken back (never
// written) and counts as done, so Sync does not wait for it; one that a
// batch took is not, and its writer waits for it as usual.
func TestUnholdTakesBackAQueuedHold(t *testing.T) {
	l := &Ledger{flushed: make(chan struct{}), ended: map[uint64]bool{}, inflight: map[string]bool{}, writers: 1}
	r1, r2 := &gatehouse.Reservation{ID: "r1"}, &gatehouse.Reservation{ID: "r2"}
	l.submit(ledgerOp{settle: Settlement{ReservationID: "r0"}})
	held1 := l.HoldPatiently(r1)
	l.HoldPatiently(r2)
	if !l.Unhold(r1) {
		t.Fatal("a queued hold was not taken back")
	}
	if l.Unhold(r1) {
		t.Fatal("a hold was taken back twice")
	}
	if len(l.queue) != 2 || l.queue[0].hold != nil || l.queue[1].hold != r2 || l.waited != 1 {
		t.Fatalf("left %d queued (waited %d), want the settle and r2's hold (waited 1)", len(l.queue), l.waited)
	}
	batch, _ := l.take()
	if len(batch) != 2 {
		t.Fatalf("took %d ops, want 2", len(batch))
	}
	if l.Unhold(r2) {
		t.Fatal("a hold in a batch in flight was taken back")
	}
	l.landed(batch, true)
	if l.done != 3 || len(l.ended) != 0 {
		t.Fatalf("done = %d (%d ended beyond it) once the batch is written, want 3: Sync would wait for the hold taken back", l.done, len(l.ended))
	}
	select {
	case err := <-held1:
		t.Fatalf("the hold taken back reported %v: it is never written", err)
	default:
	}
}
