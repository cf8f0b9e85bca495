package meter

import (
	"context"
	"errors"
	"gatehouse"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// loader is a CounterLoader over fixed counters that counts its loads.
type loader struct {
	keys    map[string]Counters
	budgets map[[2]string]Counters
	loads   atomic.Int64
	err     error
}

func (l *loader) LoadCounters(_ context.Context, hashes []string, budgets []gatehouse.Budget) (map[string]Counters, map[[2]string]Counters, error) {
	l.loads.Add(1)
	if l.err != nil {
		return nil, nil, l.err
	}
	k, b := map[string]Counters{}, map[[2]string]Counters{}
	for _, h := range hashes {
		k[h] = l.keys[h]
	}
	for _, x := range budgets {
		ref := [2]string{x.GuardrailID, x.Subject}
		b[ref] = l.budgets[ref]
	}
	return k, b, nil
}

var accountantNow = time.Date(2028, 2, 23, 12, 0, 0, 0, time.UTC)

func spent(amount gatehouse.Money) Counters {
	return Counters{Usage: gatehouse.Counter{}.Add(accountantNow, amount)}
}

func TestAccountantAdmitsExactly(t *testing.T) {
	ctx := context.Background()
	limit := gatehouse.USD(1)
	key := &gatehouse.Key{Hash: "k", Limit: &limit}
	l := &loader{keys: map[string]Counters{"k": spent(cents(30))}}
	a := NewAccountant(l, func() time.Time { return accountantNow })
	res := func(amount gatehouse.Money) *gatehouse.Reservation {
		return &gatehouse.Reservation{ID: "r", KeyHash: "k", Amount: amount}
	}

	// $0.30 recorded: $0.70 may be held, and not a nano more.
	r1 := res(cents(50))
	if err := a.Admit(ctx, key, nil, r1); err != nil {
		t.Fatal(err)
	}
	if err := a.Admit(ctx, key, nil, res(cents(20)+1)); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("over the limit: %v, want payment_required", err)
	}
	r2 := res(cents(20))
	if err := a.Admit(ctx, key, nil, r2); err != nil {
		t.Fatal(err)
	}
	// Settling $0.10 of the $0.50 frees $0.40; releasing frees all of it.
	a.Settle(r1, cents(10))
	r3 := res(cents(40))
	if err := a.Admit(ctx, key, nil, r3); err != nil {
		t.Fatal(err)
	}
	a.Release(r3)
	a.Settle(r2, cents(20))
	if err := a.Admit(ctx, key, nil, res(cents(40))); err != nil {
		t.Fatalf("$0.40 of $1 remain: %v", err)
	}
	if n := l.loads.Load(); n != 1 {
		t.Errorf("loaded %d times, want once: the accountant keeps its accounts", n)
	}
}

// TestAccountantAllOrNothing: a reservation refused by its budget holds
// nothing against its key, and one refused by its key nothing against its
// budget; the checks run in the database path's order.
func TestAccountantAllOrNothing(t *testing.T) {
	ctx := context.Background()
	keyLimit := gatehouse.USD(1)
	key := &gatehouse.Key{Hash: "k", Limit: &keyLimit}
	budget := gatehouse.Budget{GuardrailID: "g", GuardrailName: "team", Subject: "key:k", Limit: cents(50)}
	a := NewAccountant(&loader{}, func() time.Time { return accountantNow })
	r := &gatehouse.Reservation{ID: "r", KeyHash: "k", Amount: cents(60), Budgets: []gatehouse.Budget{budget}}
	if err := a.Admit(ctx, key, nil, r); gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN {
		t.Fatalf("over the budget: %v, want forbidden", err)
	}
	// The key was not charged the refused hold: $1 still fits it, alone.
	if err := a.Admit(ctx, key, nil, &gatehouse.Reservation{ID: "s", KeyHash: "k", Amount: gatehouse.USD(1)}); err != nil {
		t.Fatalf("the refused reservation held against the key: %v", err)
	}
	// The key is now full: a budget reservation is refused by the key
	// (402, first) and holds nothing against the budget.
	if err := a.Admit(ctx, key, nil, &gatehouse.Reservation{ID: "t", KeyHash: "k", Amount: cents(10), Budgets: []gatehouse.Budget{budget}}); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("key full: %v, want payment_required first", err)
	}
	other := &gatehouse.Key{Hash: "k2"}
	if err := a.Admit(ctx, other, nil, &gatehouse.Reservation{ID: "u", KeyHash: "k2", Amount: cents(50), Budgets: []gatehouse.Budget{budget}}); err != nil {
		t.Fatalf("the budget kept a refused hold: %v", err)
	}
}

// TestAccountantChain: a minted key's reservation holds against its parent:
// the parent's limit caps the children together, and a dead parent stops
// them.
func TestAccountantChain(t *testing.T) {
	ctx := context.Background()
	parentLimit := gatehouse.USD(1)
	parent := &gatehouse.Key{Hash: "p", Limit: &parentLimit}
	a := NewAccountant(&loader{}, func() time.Time { return accountantNow })
	admit := func(child string, amount gatehouse.Money) error {
		return a.Admit(ctx, &gatehouse.Key{Hash: child}, []*gatehouse.Key{parent}, &gatehouse.Reservation{ID: child, KeyHash: child, Chain: []string{"p"}, Amount: amount})
	}
	if err := admit("c1", cents(60)); err != nil {
		t.Fatal(err)
	}
	if err := admit("c2", cents(60)); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("second child past the parent's limit: %v, want payment_required", err)
	}
	if err := admit("c2", cents(40)); err != nil {
		t.Fatal(err)
	}
	if err := a.Admit(ctx, &gatehouse.Key{Hash: "c3"}, []*gatehouse.Key{nil}, &gatehouse.Reservation{ID: "c3", KeyHash: "c3", Amount: 1}); gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN {
		t.Fatalf("deleted parent: %v, want forbidden", err)
	}
}

// TestAccountantConcurrent: 50 concurrent reservations of $0.10 against a
// $1 limit: exactly 10 are admitted, however they interleave.
func TestAccountantConcurrent(t *testing.T) {
	ctx := context.Background()
	limit := gatehouse.USD(1)
	key := &gatehouse.Key{Hash: "k", Limit: &limit}
	l := &loader{}
	a := NewAccountant(l, func() time.Time { return accountantNow })
	var admitted atomic.Int64
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			if a.Admit(ctx, key, nil, &gatehouse.Reservation{ID: "r", KeyHash: "k", Amount: cents(10)}) == nil {
				admitted.Add(1)
			}
		})
	}
	wg.Wait()
	if n := admitted.Load(); n != 10 {
		t.Errorf("admitted %d, want exactly 10", n)
	}
}

// TestAccountantLoadFails: a database that cannot be read admits nothing.
func TestAccountantLoadFails(t *testing.T) {
	down := gatehouse.Errorf(gatehouse.EUNAVAILABLE, "database unavailable")
	a := NewAccountant(&loader{err: down}, nil)
	err := a.Admit(context.Background(), &gatehouse.Key{Hash: "k"}, nil, &gatehouse.Reservation{ID: "r", KeyHash: "k", Amount: 1})
	if !errors.Is(err, down) {
		t.Fatalf("Admit: %v, want the load's error", err)
	}
}

// TestAccountantDropsOnlyIdle: accounts with holds or unwritten costs stay
// in memory when the idle ones are dropped.
func TestAccountantDropsOnlyIdle(t *testing.T) {
	ctx := context.Background()
	limit := gatehouse.USD(1)
	l := &loader{}
	a := NewAccountant(l, func() time.Time { return accountantNow })
	busy := &gatehouse.Reservation{ID: "b", KeyHash: "busy", Amount: cents(90)}
	if err := a.Admit(ctx, &gatehouse.Key{Hash: "busy", Limit: &limit}, nil, busy); err != nil {
		t.Fatal(err)
	}
	idle := &gatehouse.Reservation{ID: "i", KeyHash: "idle", Amount: 1}
	if err := a.Admit(ctx, &gatehouse.Key{Hash: "idle"}, nil, idle); err != nil {
		t.Fatal(err)
	}
	a.Release(idle)
	a.Written(idle)
	a.mu.Lock()
	a.dropIdle()
	_, busyKept := a.keys["busy"]
	_, idleKept := a.keys["idle"]
	a.mu.Unlock()
	if !busyKept || idleKept {
		t.Fatalf("after dropIdle: busy kept %v, idle kept %v; want true, false", busyKept, idleKept)
	}
	// The busy account still holds its $0.90.
	if err := a.Admit(ctx, &gatehouse.Key{Hash: "busy", Limit: &limit}, nil, &gatehouse.Reservation{ID: "x", KeyHash: "busy", Amount: cents(11)}); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("busy account lost its hold: %v", err)
	}
}

func cents(n int64) gatehouse.Money { return gatehouse.Money(n * gatehouse.NanosPerUSD / 100) }
