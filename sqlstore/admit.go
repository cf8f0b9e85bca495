package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"gatehouse/meter"
	"maps"
	"slices"
	"sync"
	"time"

	"gatehouse"
)

// Reserve holds a request's worst-case cost against every limit, in the
// database: with BatchReserves, in the batch of the reservations that
// queued meanwhile, else alone. It fills in r.Chain.
func (s *Store) Reserve(ctx context.Context, r *gatehouse.Reservation) (err error) {
	defer wrap(&err, "Reserve")
	if a := s.admitter; a != nil {
		return a.admit(ctx, r)
	}
	errs, err := s.reserveBatch(ctx, []*gatehouse.Reservation{r}, nil)
	if err != nil {
		return err
	}
	return errs[0]
}

// reserveBatch admits reservations in one locking write, and writes
// settles (taken from the ledger's queue, so that on PostgreSQL one
// transaction a cycle locks a hot key's row, not two) before them. Every
// key it touches (the reservations' keys, up their chains, and the
// settles') is locked in hash order, then every budget in order, so
// batches never wait on each other in a cycle. The figures read under
// those locks, after the settles, seed an accountant that admits the
// reservations one after the other, in their order, with the in-memory
// path's checks; the admitted ones are written. It returns each
// reservation's refusal (nil: admitted).
func (s *Store) reserveBatch(ctx context.Context, rs []*gatehouse.Reservation, settles []ledgerOp) ([]error, error) {
	type result struct {
		errs  []error
		holds []*gatehouse.Reservation
	}
	got, err := meterTx(ctx, s, func(tx *Tx) (result, error) {
		errs, holds, err := tx.reserveBatch(ctx, rs, settles)
		return result{errs, holds}, err
	})
	if err != nil {
		return nil, err
	}
	for i, r := range rs {
		r.Returns = nil // given back, whether or not r was admitted
		if got.errs[i] == nil {
			r.Chain = got.holds[i].Chain
		}
	}
	return got.errs, nil
}

func (tx *Tx) reserveBatch(ctx context.Context, rs []*gatehouse.Reservation, settles []ledgerOp) ([]error, []*gatehouse.Reservation, error) {
	if q := tx.d.BeforeAdmission(); q != "" {
		if err := tx.later(ctx, q); err != nil {
			return nil, nil, err
		}
	}
	chains, err := tx.chains(ctx, rs)
	if err != nil {
		return nil, nil, err
	}
	hashes := slices.Sorted(maps.Keys(chains.all))
	lockHashes := maps.Clone(chains.all)
	var budgets []gatehouse.Budget
	for _, r := range rs {
		budgets = append(budgets, r.Budgets...)
	}
	admitBudgets := len(budgets)
	var settlements []Settlement
	for _, op := range settles {
		settlements = append(settlements, op.settle)
		for _, h := range op.keys {
			lockHashes[h] = true
		}
		budgets = append(budgets, op.budgets...)
	}
	cond, args := tx.in("hash", slices.Sorted(maps.Keys(lockHashes)))
	rows, err := tx.Query(ctx, `SELECT hash FROM api_keys WHERE `+cond+` ORDER BY hash`+tx.d.ForUpdate(), args...)
	if _, err := collect(rows, err, scanString); err != nil {
		return nil, nil, err
	}
	inAdmission := map[[2]string]bool{}
	for _, b := range budgets[:admitBudgets] {
		inAdmission[[2]string{b.GuardrailID, b.Subject}] = true
	}
	budgets = sortedBudgets(budgets)
	budgets = slices.CompactFunc(budgets, func(a, b gatehouse.Budget) bool {
		return a.GuardrailID == b.GuardrailID && a.Subject == b.Subject
	})
	created := map[[2]string]bool{}
	live := map[string]string{}
	for _, b := range budgets {
		made, exists, err := tx.lockBudgetRow(ctx, b)
		if err != nil {
			return nil, nil, err
		}
		if made {
			created[[2]string{b.GuardrailID, b.Subject}] = true
		}
		if exists {
			live[b.GuardrailID] = b.GuardrailID
		}
	}
	if len(settlements) > 0 {
		if _, err := tx.settle(ctx, settlements); err != nil {
			return nil, nil, err
		}
	}
	if len(rs) == 0 {
		return nil, nil, nil
	}
	// Unused parts of leases go back before anything is admitted, whether
	// or not what asked for it is: giving back is always safe.
	for _, r := range rs {
		for _, ret := range r.Returns {
			if err := tx.shrinkLease(ctx, ret.ID, ret.Amount); err != nil {
				return nil, nil, err
			}
		}
	}
	cond, args = tx.in("hash", hashes)
	rows, err = tx.Query(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE `+cond, args...)
	locked, err := collect(rows, err, scanKey)
	if err != nil {
		return nil, nil, err
	}
	keys := make(map[string]*gatehouse.Key, len(locked))
	for _, k := range locked {
		keys[k.Hash] = k
	}
	held, err := tx.heldByKeys(ctx, hashes)
	if err != nil {
		return nil, nil, err
	}
	acct := meter.NewAccountant(nil, func() time.Time { return tx.now })
	for _, k := range locked {
		acct.Seed(k.Hash, "", "", meter.Counters{Usage: k.Usage, BYOK: k.BYOKUsage}, held[k.Hash])
	}
	for _, b := range budgets {
		if !inAdmission[[2]string{b.GuardrailID, b.Subject}] {
			continue
		}
		f, err := tx.budgetFigures(ctx, b)
		if err != nil {
			return nil, nil, err
		}
		acct.Seed("", b.GuardrailID, b.Subject, f.counters, f.held)
	}
	errs := make([]error, len(rs))
	holds := make([]*gatehouse.Reservation, len(rs))
	var admitted []*gatehouse.Reservation
	for i, r := range rs {
		k := keys[r.KeyHash]
		if k == nil {
			errs[i] = gatehouse.NotFound("key", r.KeyHash)
			continue
		}
		var chain []*gatehouse.Key
		for _, h := range chains.of[r.KeyHash] {
			chain = append(chain, keys[h]) // nil: deleted, which ends the chain
			if keys[h] == nil {
				break
			}
		}
		h := *r
		h.Chain = nil
		for _, a := range chain {
			if a != nil {
				h.Chain = append(h.Chain, a.Hash)
			}
		}
		if errs[i] = acct.Admit(ctx, k, chain, &h); errs[i] == nil {
			holds[i] = &h
			admitted = append(admitted, &h)
			for _, b := range h.Budgets {
				delete(created, [2]string{b.GuardrailID, b.Subject}) // held against: it stays
			}
		}
	}
	if len(admitted) > 0 {
		orgs := make(map[string]string, len(keys))
		for h, k := range keys {
			orgs[h] = k.OrganizationID
		}
		if err := tx.writeHolds(ctx, admitted, orgs, live); err != nil {
			return nil, nil, err
		}
	}
	// A refusal changes nothing: a counter row made for budgets that
	// nothing holds against or was charged to goes again.
	for _, op := range settles {
		for _, b := range op.budgets {
			delete(created, [2]string{b.GuardrailID, b.Subject})
		}
	}
	for b := range created {
		if _, err := tx.Exec(ctx, `DELETE FROM guardrail_usage WHERE guardrail_id = ? AND subject = ?`, b[0], b[1]); err != nil {
			return nil, nil, err
		}
	}
	return errs, holds, nil
}

// keyChains are the keys of a batch of reservations and the chains of
// keys they were minted from.
type keyChains struct {
	all map[string]bool     // every key of the batch, and up its chains
	of  map[string][]string // a key's chain, parent first
}

// chains finds the chains of a batch's keys. parent_key_hash never
// changes, so it is read without locks, before everything is locked in
// one order.
func (tx *Tx) chains(ctx context.Context, rs []*gatehouse.Reservation) (keyChains, error) {
	c := keyChains{all: map[string]bool{}, of: map[string][]string{}}
	parents := map[string]string{}
	next := []string{}
	for _, r := range rs {
		if !c.all[r.KeyHash] {
			c.all[r.KeyHash] = true
			next = append(next, r.KeyHash)
		}
	}
	for depth := 0; len(next) > 0 && depth <= gatehouse.MaxMintDepth; depth++ {
		cond, args := tx.in("hash", next)
		rows, err := tx.Query(ctx, `SELECT hash, parent_key_hash FROM api_keys WHERE `+cond+` AND parent_key_hash IS NOT NULL`, args...)
		pairs, err := collect(rows, err, scanPair)
		if err != nil {
			return c, err
		}
		next = next[:0]
		for _, p := range pairs {
			parents[p[0]] = p[1]
			if !c.all[p[1]] {
				c.all[p[1]] = true
				next = append(next, p[1])
			}
		}
	}
	for _, r := range rs {
		if _, done := c.of[r.KeyHash]; done {
			continue // another reservation of the same key
		}
		c.of[r.KeyHash] = nil
		h := r.KeyHash
		for len(c.of[r.KeyHash]) < gatehouse.MaxMintDepth {
			p, ok := parents[h]
			if !ok {
				break
			}
			c.of[r.KeyHash] = append(c.of[r.KeyHash], p)
			h = p
		}
	}
	return c, nil
}

// unleased selects the reservations r that count on their own: all but the
// holds of a lease, which counts them while it exists. (A hold whose
// settle failed to be written outlives its lease: then it counts again.)
const unleased = `(r.lease_id IS NULL OR NOT EXISTS (SELECT 1 FROM reservations l WHERE l.id = r.lease_id))`

// heldByKeys sums the open reservations that hold against each key: its
// own and, through reservation_holds, those of the keys minted from it.
func (tx *Tx) heldByKeys(ctx context.Context, hashes []string) (map[string]gatehouse.Reserved, error) {
	cond1, args := tx.in("key_hash", hashes)
	cond2, args := tx.in("h.key_hash", hashes, args...)
	rows, err := tx.Query(ctx, `SELECT key_hash, COALESCE(SUM(amount), 0), COALESCE(SUM(CASE WHEN byok THEN amount ELSE 0 END), 0) FROM (
		SELECT key_hash, amount, byok FROM reservations r WHERE `+cond1+` AND `+unleased+`
		UNION ALL
		SELECT h.key_hash, r.amount, r.byok FROM reservation_holds h JOIN reservations r ON r.id = h.reservation_id
		WHERE `+cond2+` AND `+unleased+`) held GROUP BY key_hash`, args...)
	type sum struct {
		hash string
		r    gatehouse.Reserved
	}
	sums, err := collect(rows, err, func(s Scanner) (sum, error) {
		var x sum
		return x, s.Scan(&x.hash, &x.r.All, &x.r.BYOK)
	})
	out := make(map[string]gatehouse.Reserved, len(sums))
	for _, x := range sums {
		out[x.hash] = x.r
	}
	return out, err
}

// budgetFigures are a budget's counters and what is held against it.
type budgetFigures struct {
	counters meter.Counters
	held     gatehouse.Reserved
}

// lockBudgetRow makes sure a budget's counter row exists (unless its
// guardrail, workspace budget or credits were deleted meanwhile: then it
// is no budget) and locks it; made says this transaction made it.
func (tx *Tx) lockBudgetRow(ctx context.Context, b gatehouse.Budget) (made, exists bool, err error) {
	n, err := tx.Exec(ctx, `INSERT INTO guardrail_usage (guardrail_id, subject)
		SELECT ?, ? WHERE EXISTS (SELECT 1 FROM budgets WHERE id = ?) ON CONFLICT DO NOTHING`,
		b.GuardrailID, b.Subject, b.GuardrailID)
	if err != nil {
		return false, false, err
	}
	var one int
	err = tx.QueryRow(ctx, `SELECT 1 FROM guardrail_usage WHERE guardrail_id = ? AND subject = ?`+tx.d.ForUpdate(),
		b.GuardrailID, b.Subject).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return false, false, nil
	}
	return n > 0, err == nil, err
}

// budgetFigures reads a locked budget's counters (zero for a deleted
// guardrail's) and its open reservations.
func (tx *Tx) budgetFigures(ctx context.Context, b gatehouse.Budget) (budgetFigures, error) {
	var f budgetFigures
	u, byok, err := scanCounters(tx.QueryRow(ctx, `SELECT `+counterColumns+` FROM guardrail_usage
		WHERE guardrail_id = ? AND subject = ?`, b.GuardrailID, b.Subject))
	if err != nil && !errors.Is(err, ErrNoRows) {
		return f, err
	}
	f.counters = meter.Counters{Usage: u, BYOK: byok}
	err = tx.QueryRow(ctx, `SELECT COALESCE(SUM(r.amount), 0), COALESCE(SUM(CASE WHEN r.byok THEN r.amount ELSE 0 END), 0)
		FROM reservation_budgets rb JOIN reservations r ON r.id = rb.reservation_id
		WHERE rb.guardrail_id = ? AND rb.subject = ? AND `+unleased,
		b.GuardrailID, b.Subject).Scan(&f.held.All, &f.held.BYOK)
	return f, err
}

// sortedBudgets orders budgets by guardrail and subject: the lock order.
func sortedBudgets(in []gatehouse.Budget) []gatehouse.Budget {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b gatehouse.Budget) int {
		return cmp.Or(cmp.Compare(a.GuardrailID, b.GuardrailID), cmp.Compare(a.Subject, b.Subject))
	})
	return out
}

// admitter batches the reservations of concurrent requests: each waits
// while the batch before it commits, then all that queued meanwhile are
// admitted in one transaction, so that a hot key's row is locked once a
// batch, not once a request.
type admitter struct {
	s     *Store
	mu    sync.Mutex
	queue []admission
	wake  chan struct{}
	stop  chan struct{}
	done  chan struct{}
}

type admission struct {
	r      *gatehouse.Reservation
	result chan error
}

// maxAdmitBatch bounds the reservations of one batch.
const maxAdmitBatch = 256

// BatchReserves makes Reserve queue its reservation for the next batch;
// the returned function stops batching once no request is waiting.
func (s *Store) BatchReserves() (stop func()) {
	a := &admitter{s: s, wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	s.admitter = a
	go a.run()
	return func() {
		close(a.stop)
		<-a.done
	}
}

func (a *admitter) admit(ctx context.Context, r *gatehouse.Reservation) error {
	result := make(chan error, 1)
	a.mu.Lock()
	a.queue = append(a.queue, admission{r, result})
	a.mu.Unlock()
	select {
	case a.wake <- struct{}{}:
	default:
	}
	// Waited for even if ctx ends (a batch is bounded in time): a hold
	// admitted for a request that left is released, never left to be
	// charged.
	err := <-result
	if err == nil && ctx.Err() != nil {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		_ = a.s.settleOne(rctx, Settlement{ReservationID: r.ID})
		return gatehouse.WrapError(ctx.Err(), gatehouse.EUNAVAILABLE, "the request ended while its reservation was admitted")
	}
	return err
}

func (a *admitter) run() {
	defer close(a.done)
	for {
		a.mu.Lock()
		n := min(len(a.queue), maxAdmitBatch)
		batch := a.queue[:n:n]
		a.queue = a.queue[n:]
		a.mu.Unlock()
		if n == 0 {
			select {
			case <-a.wake:
				continue
			case <-a.stop:
				return
			}
		}
		rs := make([]*gatehouse.Reservation, n)
		for i, x := range batch {
			rs[i] = x.r
		}
		var settles []ledgerOp
		if a.s.ledger != nil {
			settles = a.s.ledger.steal(maxLedgerBatch)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		errs, err := a.s.reserveBatch(ctx, rs, settles)
		if len(settles) > 0 {
			// Failed settles go back to the ledger, which writes them on
			// its own (one by one if it must): a bad one must not keep
			// the admissions from being written.
			a.s.ledger.settled(settles, err)
			if err != nil {
				errs, err = a.s.reserveBatch(ctx, rs, nil)
			}
		}
		cancel()
		for i, x := range batch {
			if err != nil {
				x.result <- err
			} else {
				x.result <- errs[i]
			}
		}
	}
}
