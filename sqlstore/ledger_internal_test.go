package sqlstore

import "testing"

// TestStealLeavesTheWritersBatchAlone: an admission's transaction does not
// take queued settles while the ledger writes a batch, whose holds they
// may end: on PostgreSQL the admission would not see the holds (not yet
// committed), end nothing, and the holds would stay open once written (a
// call charged nothing until its reservation expired, found by
// TestProviderReceivedIsCharged).
func TestStealLeavesTheWritersBatchAlone(t *testing.T) {
	l := &Ledger{queue: []ledgerOp{{settle: Settlement{ReservationID: "r1"}}}}
	l.writing = true
	if got := l.steal(10); got != nil {
		t.Fatalf("stole %d settles while a batch was being written", len(got))
	}
	l.writing = false
	if got := l.steal(10); len(got) != 1 {
		t.Fatalf("stole %d settles with the writer idle, want 1", len(got))
	}
	l.queue = []ledgerOp{{hold: nil, waited: true}}
	l.waited = 1
	if got := l.steal(10); got != nil {
		t.Fatalf("stole %d operations while one that someone waits for was queued", len(got))
	}
}
