package meter

import (
	"context"
	"gatehouse"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/google/uuid"
)

// Leases admit reservations in memory on an instance that shares its
// database with others (PostgreSQL). The database grants this instance a
// lease: a reservation like any other, admitted with every check against
// the key, the keys it was minted from and its budgets, so that the leases
// of all instances together never exceed a limit. Requests of the same key
// and budgets are then admitted here against the lease's unused part, with
// a few additions under one lock; each still has its hold written (behind,
// by the ledger) before its answer is delivered, naming the lease, which
// already counts it (or, for a whole answer that came while its hold was
// still queued, its charge: Metering.Held). A settle takes the cost off the
// lease as it adds it to the counters; the lease counts the hold at what it
// reserved until that write commits, since an instance that dies leaves its
// open holds to be charged at what they reserved.
//
// A lease admits for LeaseLife, sized from what its group admitted in the
// last LeaseLife; then, or when a request does not fit, its unused part is
// given back (in the same transaction as the next grant) and it is
// dropped once its last hold is settled or released. When a lease cannot
// be granted, the request is admitted in the database alone, exactly as
// without leases: so near a limit every request is checked against the
// exact remainder, but what other instances hold in their leases counts as
// spent until they give it back (within LeaseLife). A lease of an instance
// that is gone is dropped, and its holds charged at what they reserved.
type Leases struct {
	usage  gatehouse.UsageService // admits leases, and requests alone, in the database
	ledger Ledger
	// writes counts the management writes this process committed; a
	// lease granted before the last one is retired before it admits
	// again, so that a change made here (a lower limit, a guardrail)
	// applies at once. nil: none are counted.
	writes func() uint64
	now    gatehouse.Clock

	mu     sync.Mutex
	groups map[string]*leaseGroup
	// admitted are the leases of the reservations admitted against one,
	// by reservation id, until their settle or release is written.
	admitted map[string]*lease
}

// LeaseLife is how long a lease admits requests, and the window its size
// is taken from.
const LeaseLife = time.Second

// leaseMin is the smallest lease, in requests like the one that asks.
const leaseMin = 4

// leaseGroup is the requests that one lease may serve: one key (and so
// one chain), the same budgets, and the same kind of spend (BYOK or not).
type leaseGroup struct {
	active *lease
	// granting is closed once a grant in progress ends; nil: none.
	granting chan struct{}
	// admitted is what the group admitted in the current window, and
	// before in the previous one.
	admitted, before gatehouse.Money
	window           time.Time
}

type lease struct {
	r       *gatehouse.Reservation
	granted gatehouse.Money
	// held is what the lease's open holds reserved, spent what its
	// settled ones cost, returned what was given back.
	held, spent, returned gatehouse.Money
	// busy counts the holds open and the settles not yet written: the
	// lease is dropped once it is retired and busy is zero.
	busy    int
	until   time.Time
	retired bool
	writes  uint64 // the count of writes when it was asked for
}

func (l *lease) free() gatehouse.Money { return l.granted - l.returned - l.held - l.spent }

// NewLeases returns leases granted by the database behind usage, whose
// holds, settles and releases ledger writes. If usage counts the writes
// this process commits (Writes() uint64), a write retires every lease.
func NewLeases(usage gatehouse.UsageService, ledger Ledger, now gatehouse.Clock) *Leases {
	if now == nil {
		now = time.Now
	}
	ls := &Leases{usage: usage, ledger: ledger, now: now, groups: map[string]*leaseGroup{}, admitted: map[string]*lease{}}
	if w, ok := usage.(interface{ Writes() uint64 }); ok {
		ls.writes = w.Writes
	}
	return ls
}

func (ls *Leases) writeCount() uint64 {
	if ls.writes == nil {
		return 0
	}
	return ls.writes()
}

// Admit admits r against a lease of this instance (r.LeaseID and r.Chain
// then say which, and the caller writes r's hold), taking a new lease when
// none has room, or, when none can be granted, admits r in the database
// alone (alone is then true: the database wrote its hold).
func (ls *Leases) Admit(ctx context.Context, r *gatehouse.Reservation) (alone bool, err error) {
	key := groupKey(r)
	for {
		ls.mu.Lock()
		g := ls.groups[key]
		if g == nil {
			g = &leaseGroup{}
			ls.groups[key] = g
		}
		now := ls.now()
		writes := ls.writeCount()
		if l := g.active; l != nil && (!now.Before(l.until) || l.writes != writes) {
			ls.retireLocked(g)
		}
		if l := g.active; l != nil && l.free() >= r.Amount {
			ls.admitLocked(g, l, r, now)
			ls.mu.Unlock()
			return false, nil
		}
		if wait := g.granting; wait != nil {
			ls.mu.Unlock()
			select {
			case <-wait:
				continue
			case <-ctx.Done():
				return false, gatehouse.Errorf(gatehouse.EUNAVAILABLE, "metering: %v", ctx.Err())
			}
		}
		// No room: give back what the lease has left and ask for more.
		var returns []gatehouse.LeaseReturn
		if l := g.active; l != nil {
			if f := l.free(); f > 0 {
				l.returned += f
				returns = append(returns, gatehouse.LeaseReturn{ID: l.r.ID, Amount: f})
			}
			ls.retireLocked(g)
		}
		size := max(leaseMin*r.Amount, 2*g.rate(now))
		done := make(chan struct{})
		g.granting = done
		ls.mu.Unlock()

		lr := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: r.KeyHash, Amount: size, BYOK: r.BYOK, Budgets: r.Budgets,
			// Its holds expire before it does: it counts them until then.
			ExpiresAt: r.ExpiresAt.Add(LeaseLife), Lease: true, Returns: returns}
		err := ls.usage.Reserve(ctx, lr)
		ls.mu.Lock()
		g.granting = nil
		close(done)
		if err == nil {
			g.active = &lease{r: lr, granted: lr.Amount, until: ls.now().Add(LeaseLife), writes: writes}
			ls.mu.Unlock()
			continue // admit against it (others waiting may take it first)
		}
		ls.mu.Unlock()
		if code := gatehouse.ErrorCode(err); code != gatehouse.EPAYMENT && code != gatehouse.EFORBIDDEN {
			return false, err
		}
		// No lease fits: the request alone is admitted against the exact
		// remainder, or refused with its figures.
		return true, reserveInDB(ctx, ls.usage, ls.ledger, r)
	}
}

func (ls *Leases) admitLocked(g *leaseGroup, l *lease, r *gatehouse.Reservation, now time.Time) {
	l.held += r.Amount
	l.busy++
	r.LeaseID, r.Chain = l.r.ID, l.r.Chain
	ls.admitted[r.ID] = l
	g.rate(now)
	g.admitted += r.Amount
}

// rate returns what the group admitted in the last full window, moving
// the window on.
func (g *leaseGroup) rate(now time.Time) gatehouse.Money {
	switch {
	case now.Sub(g.window) >= 2*LeaseLife:
		g.window, g.admitted, g.before = now, 0, 0
	case now.Sub(g.window) >= LeaseLife:
		g.window, g.before, g.admitted = now, g.admitted, 0
	}
	return max(g.before, g.admitted)
}

// retireLocked stops the group's lease from admitting; it is dropped once
// nothing of it is open.
func (ls *Leases) retireLocked(g *leaseGroup) {
	l := g.active
	g.active = nil
	l.retired = true
	ls.dropIfIdle(l)
}

func (ls *Leases) dropIfIdle(l *lease) {
	if l.retired && l.busy == 0 {
		l.busy = -1 // dropped: never again
		ls.ledger.Release(l.r, nil)
	}
}

// Written records that the ledger wrote r's settle at cost, or its
// release (cost nil), or failed to (err). Only then does r's hold leave
// its lease (replaced by its cost): until the write commits, a crash
// leaves the hold open, to be charged at what it reserved, and the lease
// must cover that. A hold whose write failed stays in the lease (and, once
// the lease is dropped, counts on its own in the database). The lease may
// be dropped once retired and idle.
func (ls *Leases) Written(r *gatehouse.Reservation, cost *gatehouse.Money, err error) {
	ls.update(r, func(l *lease) {
		if err == nil {
			l.held -= r.Amount
			if cost != nil {
				l.spent += *cost
			}
		}
		l.busy--
		ls.dropIfIdle(l)
		delete(ls.admitted, r.ID)
	})
}

// update runs fn on r's lease, if r was admitted against one.
func (ls *Leases) update(r *gatehouse.Reservation, fn func(l *lease)) {
	if r.LeaseID == "" {
		return
	}
	ls.mu.Lock()
	defer ls.mu.Unlock()
	if l := ls.admitted[r.ID]; l != nil {
		fn(l)
	}
}

// Retire retires the leases whose life is over, giving back their unused
// part when they are dropped; serve calls it every LeaseLife/2, so that an
// idle instance keeps no slice of a limit that others could use.
func (ls *Leases) Retire() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.now()
	for key, g := range ls.groups {
		if l := g.active; l != nil && !now.Before(l.until) {
			ls.retireLocked(g)
		}
		if g.active == nil && g.granting == nil && now.Sub(g.window) >= 2*LeaseLife {
			delete(ls.groups, key)
		}
	}
}

// Close retires every lease, so that the ledger, closed next, drops those
// with nothing open (any other is dropped by the instance that sees this
// one gone).
func (ls *Leases) Close() {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	for _, g := range ls.groups {
		if g.active != nil {
			ls.retireLocked(g)
		}
	}
}

// groupKey names the group of requests a lease can serve.
func groupKey(r *gatehouse.Reservation) string {
	var b strings.Builder
	b.WriteString(r.KeyHash)
	if r.BYOK {
		b.WriteString("|byok")
	}
	bs := slices.Clone(r.Budgets)
	slices.SortFunc(bs, func(x, y gatehouse.Budget) int {
		if c := strings.Compare(x.GuardrailID, y.GuardrailID); c != 0 {
			return c
		}
		return strings.Compare(x.Subject, y.Subject)
	})
	for _, x := range bs {
		b.WriteString("|")
		b.WriteString(x.GuardrailID)
		b.WriteString(":")
		b.WriteString(x.Subject)
	}
	return b.String()
}
