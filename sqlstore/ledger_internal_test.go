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
