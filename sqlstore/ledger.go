package sqlstore

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"sync"
	"time"

	"gatehouse"
)

// Ledger writes metering behind the request path: the holds of
// reservations admitted in memory, and every settle and release, go to the
// database in batches, one locking write for all that queued while the one
// before it was committing (so one transaction every few milliseconds
// under load, not one a request). A hold's writer waits for it (Hold's
// channel) before its answer is delivered, and a whole answer's charge
// (Charge) for its journal or, without one, its write; nothing else
// waits, but Sync waits for everything submitted before it.
type Ledger struct {
	s      *Store
	logger *slog.Logger
	// written hears of the keys each batch charged or released, once it
	// is committed: caches of their rows forget them.
	written func(keyHashes []string)

	mu        sync.Mutex
	queue     []ledgerOp
	waited    int             // ops in queue that someone waits for: holds and unheld settles
	syncing   int             // Sync calls waiting
	lingered  bool            // the queue has waited settleLinger for company
	lingering bool            // a writer is waiting settleLinger for company
	writing   int             // batches in flight
	settling  bool            // a batch in flight ends reservations (settles, releases, charges)
	inflight  map[string]bool // the reservations whose holds are in a batch in flight
	submitted uint64          // ops queued, ever: the next op's seq
	// done is the number of ops, in the order they were queued, all
	// written (or failed): batches end out of order, so those written
	// beyond it wait in ended until the ops before them are.
	done    uint64
	ended   map[uint64]bool
	flushed chan struct{}
	closed  bool
	// lingers says settles wait for company (LingerSettles).
	lingers bool
	wake    chan struct{}
	stopped chan struct{}
	// writers is the number of batches that may be in flight at once
	// (Store.SetLedgerWriters).
	writers int
	// journal, when set, makes the charges of whole answers durable
	// before they are written (UseJournal).
	journal *chargeJournal
}

// ledgerOp is one thing to write: a hold, or a settlement.
type ledgerOp struct {
	hold    *gatehouse.Reservation
	settle  Settlement
	waited  bool               // someone waits for it: a hold, or the settle of an unheld reservation
	patient bool               // a hold that starts no batch while one is in flight (HoldPatiently)
	seq     uint64             // its place in the order ops were queued
	keys    []string           // the keys it touches
	budgets []gatehouse.Budget // the budgets it touches
	result  func(error)
}

// maxLedgerBatch bounds the operations in one transaction, and
// maxLedgerQueue the operations waiting: past it new holds and whole
// answers' charges are refused (the database is not keeping up, or is
// down), so memory stays bounded.
const maxLedgerBatch = 2000

var maxLedgerQueue = 200_000 // a variable for the tests

// NewLedger starts the writer of s's metering ledger. written (may be nil)
// hears of the keys each batch changed.
func (s *Store) NewLedger(logger *slog.Logger, written func(keyHashes []string)) *Ledger {
	l := &Ledger{s: s, logger: logger, written: written, flushed: make(chan struct{}),
		wake: make(chan struct{}, 1), stopped: make(chan struct{}), writers: max(s.ledgerWriters, 1),
		inflight: map[string]bool{}, ended: map[uint64]bool{}}
	s.ledger = l
	var running sync.WaitGroup
	for range l.writers {
		running.Go(l.run)
	}
	go func() { running.Wait(); close(l.stopped) }()
	return l
}

// SetLedgerWriters lets n batches of the metering ledger be written at
// once (default 1), each on a connection of its own: on PostgreSQL, the
// holds that come while a batch commits are written beside it, not after
// it (a request waits for its hold), while the settles keep going one
// batch at a time (they end holds, and charge the same rows). SQLite has
// one writer: more would only wait for it. Call it before NewLedger.
func (s *Store) SetLedgerWriters(n int) { s.ledgerWriters = n }

// LingerSettles makes settles and releases that nobody waits for wait up
// to settleLinger for company: a hold to share their commit (admission in
// memory), or a batch of admissions that takes them into its own
// (BatchReserves). Call it before the ledger is used.
func (l *Ledger) LingerSettles() {
	l.mu.Lock()
	l.lingers = true
	l.mu.Unlock()
}

// Hold writes a reservation admitted in memory; the channel receives nil
// once it is durable, or the error that kept it from being written.
func (l *Ledger) Hold(r *gatehouse.Reservation) <-chan error {
	return l.hold(r, false)
}

// HoldPatiently is Hold for a hold that its caller may take back (Unhold):
// it goes at once when no batch is being written, else with the next
// batch, but starts none of its own beside the one in flight. While the
// database is busy, the answer it was reserved for may come before it is
// written, and then it never is.
func (l *Ledger) HoldPatiently(r *gatehouse.Reservation) <-chan error {
	return l.hold(r, true)
}

func (l *Ledger) hold(r *gatehouse.Reservation, patient bool) <-chan error {
	ch := make(chan error, 1)
	op := opOf(r, func(err error) { ch <- err })
	op.hold, op.waited, op.patient = r, true, patient
	l.submit(op)
	return ch
}

// opOf returns the operation on r's reservation, with the keys and budgets
// it touches.
func opOf(r *gatehouse.Reservation, result func(error)) ledgerOp {
	return ledgerOp{settle: Settlement{ReservationID: r.ID}, keys: append([]string{r.KeyHash}, r.Chain...),
		budgets: r.Budgets, result: result}
}

// Settle charges a held reservation as g, behind; result (may be nil)
// hears once it is written. (An unheld one is Charge's.)
func (l *Ledger) Settle(r *gatehouse.Reservation, g *gatehouse.Generation, result func(error)) {
	op := opOf(r, result)
	op.settle.Generation = g
	l.submit(op)
}

// Charge settles a reservation that has no hold (a whole answer's: see
// meter.Meter.Settle) as g, and returns once the charge survives a
// crash of this process: appended to the journal (UseJournal), else
// written to the database. written (may be nil) hears once it is in the
// database. An error means it may not survive: the answer must not be
// delivered (the charge is still written if it can be: a call served and
// not delivered is paid for, never the reverse).
func (l *Ledger) Charge(ctx context.Context, r *gatehouse.Reservation, g *gatehouse.Generation, written func(error)) error {
	l.mu.Lock()
	j, full := l.journal, len(l.queue) >= maxLedgerQueue
	l.mu.Unlock()
	if j == nil {
		return l.chargeAndWait(ctx, r, g, written)
	}
	if full {
		// The database is not keeping up, or is down: past the bound,
		// answers are refused rather than queued without end (as holds
		// are; the accountant keeps the cost, erring on the side of the
		// limit).
		if written != nil {
			written(errLedgerFull)
		}
		return errLedgerFull
	}
	seg, err := j.append(entryOf(r, g))
	op := opOf(r, func(werr error) {
		if err == nil && werr == nil {
			j.done(seg)
		}
		if written != nil {
			written(werr)
		}
	})
	op.settle.Generation, op.settle.Unheld = g, r
	l.submit(op)
	return err
}

// chargeAndWait writes a charge and waits until it is in the database.
func (l *Ledger) chargeAndWait(ctx context.Context, r *gatehouse.Reservation, g *gatehouse.Generation, written func(error)) error {
	result := make(chan error, 1)
	op := opOf(r, func(err error) {
		if written != nil {
			written(err)
		}
		result <- err
	})
	op.settle.Generation, op.settle.Unheld, op.waited = g, r, true
	l.submit(op)
	select {
	case err := <-result:
		if err != nil {
			return gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "the database did not record the request's charge; retry shortly")
		}
		return nil
	case <-ctx.Done():
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the database did not record the request's charge in time; retry shortly")
	}
}

// Release drops a reservation, behind; result (may be nil) hears once it
// is written.
func (l *Ledger) Release(r *gatehouse.Reservation, result func(error)) {
	l.submit(opOf(r, result))
}

var (
	errLedgerClosed = gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the server is shutting down")
	errLedgerFull   = gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the database is not keeping up with metering; retry shortly")
)

func (l *Ledger) submit(op ledgerOp) {
	l.mu.Lock()
	var refused error
	switch {
	case l.closed:
		refused = errLedgerClosed
	case (op.hold != nil || op.waited && op.settle.Unheld != nil) && len(l.queue) >= maxLedgerQueue:
		refused = errLedgerFull
	default:
		op.seq = l.submitted
		l.queue = append(l.queue, op)
		l.submitted++
		if op.waited {
			l.waited++
		}
	}
	l.mu.Unlock()
	if refused != nil {
		if op.result != nil {
			op.result(refused)
		}
		return
	}
	l.poke()
}

// Sync waits until everything submitted before it is written (or has
// failed), for at most maxSyncWait.
func (l *Ledger) Sync(ctx context.Context) error {
	l.mu.Lock()
	target := l.submitted
	if l.done >= target { // nothing pending: the common case of a read
		l.mu.Unlock()
		return nil
	}
	l.syncing++
	l.mu.Unlock()
	defer func() { l.mu.Lock(); l.syncing--; l.mu.Unlock() }()
	l.poke() // a lingering writer stops lingering
	timer := time.NewTimer(maxSyncWait)
	defer timer.Stop()
	for {
		l.mu.Lock()
		if l.done >= target {
			l.mu.Unlock()
			return nil
		}
		ch := l.flushed
		l.mu.Unlock()
		select {
		case <-ch:
		case <-ctx.Done():
			return ctx.Err()
		case <-timer.C:
			return errSyncSlow
		}
	}
}

// maxSyncWait bounds Sync: past it, the database is too slow, and a read
// goes ahead with what it has.
const maxSyncWait = 2 * time.Second

var errSyncSlow = gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the metering ledger is behind")

// Close writes what is queued and stops the writer; ctx bounds the wait.
func (l *Ledger) Close(ctx context.Context) error {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
	l.poke()
	select {
	case <-l.stopped:
	case <-ctx.Done():
		return errors.New("metering ledger: operations still queued at exit were not written")
	}
	l.mu.Lock()
	j := l.journal
	l.journal = nil // closed once
	l.mu.Unlock()
	if j != nil {
		return j.close()
	}
	return nil
}

// settleLinger is how long settles and releases that nobody waits for wait
// for company before they are written: with few clients, a settle then
// shares the commit of the next request's hold instead of making that
// hold wait for a commit of its own.
const settleLinger = 2 * time.Millisecond

// steal takes up to max queued settles and releases (none while a hold
// or an unheld settle is queued: those that someone waits for go first)
// for a transaction that writes them with its own work; it must then call
// settled. None is taken while the writer has a batch in flight: a settle
// may end a hold of that batch, which a concurrent transaction (on
// PostgreSQL) would not yet see, ending nothing, and leave the hold open
// once it commits.
func (l *Ledger) steal(max int) []ledgerOp {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.waited > 0 || l.writing > 0 {
		return nil
	}
	n := min(len(l.queue), max)
	batch := l.queue[:n:n]
	l.queue = l.queue[n:]
	return batch
}

// settled reports the end of stolen operations: written (err nil), or
// put back at the front of the queue for the ledger to write.
func (l *Ledger) settled(batch []ledgerOp, err error) {
	if len(batch) == 0 {
		return
	}
	if err != nil {
		l.mu.Lock()
		l.queue = append(batch, l.queue...)
		l.mu.Unlock()
		l.poke()
		return
	}
	l.report(batch, nil)
	l.finished(batch)
}

// poke wakes the writer, if it is not awake already.
func (l *Ledger) poke() {
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// finished counts a batch's operations as done, and wakes the Sync calls.
func (l *Ledger) finished(batch []ledgerOp) {
	l.mu.Lock()
	l.endLocked(batch...)
	l.mu.Unlock()
}

// endLocked counts ops as done, and wakes the Sync calls. Call it with
// l.mu held.
func (l *Ledger) endLocked(ops ...ledgerOp) {
	for _, op := range ops {
		l.ended[op.seq] = true
	}
	for l.ended[l.done] {
		delete(l.ended, l.done)
		l.done++
	}
	close(l.flushed)
	l.flushed = make(chan struct{})
}

// Unhold takes r's hold back if it is still queued (no batch has taken
// it), and reports whether it did: the hold is then never written, and
// Hold's channel never receives. The caller must then charge r as a
// reservation without a hold (Charge), and wait for that, before the
// answer it reserved for is delivered. So a whole answer that comes back
// while the database is busy costs one write, its charge, in place of
// three: its hold, the hold's end, and the charge.
func (l *Ledger) Unhold(r *gatehouse.Reservation) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	// A hold taken back is one that came recently: search from the end.
	for i := len(l.queue) - 1; i >= 0; i-- {
		if op := l.queue[i]; op.hold == r {
			l.queue = slices.Delete(l.queue, i, i+1)
			l.waited--
			l.endLocked(op)
			return true
		}
	}
	return false
}

// run is a writer: it writes batches of the queue until the ledger is
// closed and nothing is left.
func (l *Ledger) run() {
	for {
		l.mu.Lock()
		unhurried := l.waited == 0 && l.syncing == 0 && !l.closed
		if l.lingers && l.writing == 0 && len(l.queue) > 0 && unhurried && !l.lingered {
			l.lingered, l.lingering = true, true
			l.mu.Unlock()
			l.linger()
			l.mu.Lock()
			l.lingering = false
			l.mu.Unlock()
			continue
		}
		if l.lingering && unhurried { // another writer waits for company: so does this one
			l.mu.Unlock()
			<-l.wake
			continue
		}
		l.lingered = false
		batch, ends := l.take()
		closed, left, idle := l.closed, len(l.queue), l.writing == 0
		l.mu.Unlock()
		if len(batch) == 0 {
			if closed && left == 0 && idle {
				l.poke() // another writer may be waiting: it ends too
				return
			}
			<-l.wake
			continue
		}
		if left > 0 {
			l.poke() // what is left may make a batch of another writer's
		}
		l.write(batch)
		l.landed(batch, ends)
		l.poke() // settles of the holds just written may go now
	}
}

// landed ends a batch that take put in flight, written (or failed).
func (l *Ledger) landed(batch []ledgerOp, ends bool) {
	l.mu.Lock()
	l.writing--
	if ends {
		l.settling = false
	}
	for _, op := range batch {
		if op.hold != nil {
			delete(l.inflight, op.hold.ID)
		}
	}
	l.mu.Unlock()
	l.finished(batch)
}

// take takes the next batch off the queue, in order: up to maxLedgerBatch
// operations. While a batch that ends reservations is in flight, only
// holds are taken (the settles wait for it: they would queue on the rows
// it charges, and the holds beside them); and a settle or release of a
// hold in a batch in flight is never taken (its transaction would not see
// the hold yet, end nothing, and leave the hold open once it commits).
// Patient holds start no batch beside one in flight (unless Sync waits or
// the ledger is closing): they go with the next batch taken. The batch is
// then in flight until landed; ends says it ends reservations. Call it
// with l.mu held.
func (l *Ledger) take() (batch []ledgerOp, ends bool) {
	if len(l.queue) == 0 || l.writing >= l.writers {
		return nil, false
	}
	if l.writing > 0 && l.syncing == 0 && !l.closed && !slices.ContainsFunc(l.queue, l.urgent) {
		return nil, false // only patient holds: they wait for the batch in flight
	}
	left := l.queue[:0:0]
	for i, op := range l.queue {
		if len(batch) == maxLedgerBatch {
			left = append(left, l.queue[i:]...)
			break
		}
		settle := op.hold == nil
		if settle && l.settleWaits(op) {
			left = append(left, op)
			continue
		}
		batch = append(batch, op)
		ends = ends || settle
		if op.waited {
			l.waited--
		}
	}
	l.queue = left
	if len(batch) > 0 {
		l.writing++
		l.settling = l.settling || ends
		for _, op := range batch {
			if op.hold != nil {
				l.inflight[op.hold.ID] = true
			}
		}
	}
	return batch, ends
}

// settleWaits reports whether take leaves the settle or release op for a
// later batch: one that ends reservations is in flight, or the hold it
// ends is. Call it with l.mu held.
func (l *Ledger) settleWaits(op ledgerOp) bool {
	return l.settling || op.settle.Unheld == nil && l.inflight[op.settle.ReservationID]
}

// urgent reports whether op would start a batch of its own beside one in
// flight: it is not a patient hold, and take would take it. Call it with
// l.mu held.
func (l *Ledger) urgent(op ledgerOp) bool {
	if op.hold != nil {
		return !op.patient
	}
	return !l.settleWaits(op)
}

// write writes a batch in one transaction, retrying while the database is
// unavailable. A batch that fails otherwise is written one operation at a
// time, so that one bad operation fails alone.
func (l *Ledger) write(batch []ledgerOp) {
	err := l.retry(func(ctx context.Context) error { return l.writeBatch(ctx, batch) })
	if err != nil && len(batch) > 1 {
		l.logger.Warn("metering ledger: a batch failed; writing its operations one by one", "ops", len(batch), "error", err.Error())
		for _, op := range batch {
			l.write([]ledgerOp{op})
		}
		return
	}
	if err != nil {
		l.logger.Error("metering ledger: an operation could not be written", "reservation_id", opID(batch[0]), "error", err.Error())
	}
	l.report(batch, err)
}

// report tells a written batch's operations, and the caches of its keys.
func (l *Ledger) report(batch []ledgerOp, err error) {
	var keys []string
	for _, op := range batch {
		keys = append(keys, op.keys...)
		if op.result != nil {
			op.result(err)
		}
	}
	if err == nil && l.written != nil {
		l.written(keys)
	}
}

func opID(op ledgerOp) string {
	if op.hold != nil {
		return op.hold.ID
	}
	return op.settle.ReservationID
}

// retry runs fn until it succeeds, fails with anything but unavailability,
// or the ledger is closed and the database has been unavailable for a
// minute.
func (l *Ledger) retry(fn func(ctx context.Context) error) error {
	backoff := 10 * time.Millisecond
	start := time.Now()
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := fn(ctx)
		cancel()
		if err == nil || gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE {
			return err
		}
		l.mu.Lock()
		closed := l.closed
		l.mu.Unlock()
		if closed && time.Since(start) > time.Minute {
			return err
		}
		l.logger.Warn("metering ledger: database unavailable; retrying", "error", err.Error(), "backoff", backoff.String())
		time.Sleep(backoff)
		backoff = min(backoff*2, time.Second)
	}
}

// linger waits settleLinger, or less if a hold or an unheld settle comes
// (someone waits for it), Sync is called, or the ledger is closed.
func (l *Ledger) linger() {
	timer := time.NewTimer(settleLinger)
	defer timer.Stop()
	for {
		l.mu.Lock()
		urgent := l.waited > 0 || l.syncing > 0 || l.closed
		l.mu.Unlock()
		if urgent {
			return
		}
		select {
		case <-l.wake:
		case <-timer.C:
			return
		}
	}
}

// writeBatch writes the holds of a batch, then its settlements, in one
// locking write.
func (l *Ledger) writeBatch(ctx context.Context, batch []ledgerOp) error {
	var holds []*gatehouse.Reservation
	var settlements []Settlement
	for _, op := range batch {
		if op.hold != nil {
			holds = append(holds, op.hold)
		} else {
			settlements = append(settlements, op.settle)
		}
	}
	_, err := meterTx(ctx, l.s, func(tx *Tx) (none, error) {
		if len(holds) > 0 {
			if err := tx.insertHolds(ctx, holds); err != nil {
				return none{}, err
			}
		}
		if len(settlements) > 0 {
			if _, err := tx.settle(ctx, settlements); err != nil {
				return none{}, err
			}
		}
		return none{}, nil
	})
	return err
}
