package storetest

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// ledgerSums sums the ledger rows that pass keep in the periods of now,
// with period starts computed here rather than by the domain package.
func ledgerSums(gens []*gatehouse.Generation, now time.Time, keep func(*gatehouse.Generation) bool) (usage, byok gatehouse.Usage) {
	now = now.UTC()
	day := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	week := day
	for week.Weekday() != time.Monday {
		week = week.Add(-24 * time.Hour)
	}
	month := time.Date(now.Year(), now.Month(), 1, 0, 0, 0, 0, time.UTC)
	for _, g := range gens {
		if !keep(g) {
			continue
		}
		u := &usage
		if g.BYOK {
			u = &byok
		}
		u.Total += g.Cost
		for _, p := range []struct {
			start time.Time
			sum   *gatehouse.Money
		}{{day, &u.Daily}, {week, &u.Weekly}, {month, &u.Monthly}} {
			if !g.CreatedAt.Before(p.start) {
				*p.sum += g.Cost
			}
		}
	}
	return usage, byok
}

// testPlaneLedgerEqualsCounters records generations at instants around a
// midnight UTC, a Monday and a month's end, and after each checks that the
// key counters and the budget counters equal the sums of the ledger rows.
func testPlaneLedgerEqualsCounters(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.clock.Set(time.Date(2028, 2, 26, 9, 0, 0, 0, time.UTC)) // a Saturday
	m := f.newMember(t, f.org.ID, "m@example.com")
	gM := f.budgetGuardrail(t, "member budget", gatehouse.USD(1000), gatehouse.Weekly, true)
	gK := f.budgetGuardrail(t, "key budget", gatehouse.USD(1000), gatehouse.Monthly, false)
	f.assignMember(t, gM, m)
	keys := []*gatehouse.Key{
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID, Limit: new(gatehouse.USD(1000)), LimitReset: gatehouse.Daily}),
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID}),
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID}),
	}
	f.assignKey(t, gK, keys[2])
	f.configureDefault(t, keys[0].WorkspaceID, gatehouse.USD(1000), gatehouse.Daily)
	// Each budget, with the keys whose spending it counts.
	counted := map[budgetKey][]string{}
	for _, k := range keys {
		for _, b := range f.budgets(t, k) {
			bk := budgetKey{b.GuardrailID, b.Subject}
			counted[bk] = append(counted[bk], k.Hash)
		}
	}
	if len(counted) != 5 { // the member's, k2's own, and the default for each key
		t.Fatalf("budgets: %v", counted)
	}

	var ids []string
	instants := []time.Time{
		time.Date(2028, 2, 26, 10, 0, 0, 0, time.UTC),
		lastMilli(2028, 2, 26), midnight(2028, 2, 27), // midnight, Saturday to Sunday
		time.Date(2028, 2, 27, 18, 30, 0, 0, time.UTC),
		lastMilli(2028, 2, 27), midnight(2028, 2, 28), // Monday
		midnight(2028, 2, 28).Add(time.Millisecond),
		lastMilli(2028, 2, 29), midnight(2028, 3, 1), // leap day ends, a month begins
		time.Date(2028, 3, 1, 7, 0, 0, 0, time.UTC),
	}
	for i, at := range instants {
		f.clock.Set(at)
		for j, k := range keys {
			cost := gatehouse.Money(1_234_567*(i+1) + 7_654_321*j + 1)
			ids = append(ids, f.spend(t, k, cost, (i+j)%3 == 0).ID)
		}
		f.checkLedger(t, ids, keys, counted, at)
	}
	// Later, with no new spending, the periods read 0 as the ledger says.
	f.checkLedger(t, ids, keys, counted, time.Date(2028, 3, 6, 0, 0, 0, 0, time.UTC))
}

// budgetKey names a budget: a guardrail and the subject it counts.
type budgetKey struct{ guardrail, subject string }

// checkLedger compares the counters of keys and budgets with the ledger
// rows ids, read back from the store, at the instant now.
func (f *fixture) checkLedger(t *testing.T, ids []string, keys []*gatehouse.Key, counted map[budgetKey][]string, now time.Time) {
	t.Helper()
	f.clock.Set(now)
	var gens []*gatehouse.Generation
	for _, id := range ids {
		g, err := f.store.FindGeneration(f.ctx, f.org.ID, id)
		ok(t, err)
		gens = append(gens, g)
	}
	at := now.Format(time.RFC3339Nano)
	for i, k := range keys {
		u, b := ledgerSums(gens, now, func(g *gatehouse.Generation) bool { return g.KeyHash == k.Hash })
		found := f.readKey(t, k.Hash)
		wantUsage(t, fmt.Sprintf("%s key %d usage", at, i), found.Usage.At(now), u.Total, u.Daily, u.Weekly, u.Monthly)
		wantUsage(t, fmt.Sprintf("%s key %d byok", at, i), found.BYOKUsage.At(now), b.Total, b.Daily, b.Weekly, b.Monthly)
	}
	for bk, hashes := range counted {
		u, b := ledgerSums(gens, now, func(g *gatehouse.Generation) bool { return slices.Contains(hashes, g.KeyHash) })
		gotU, gotB := f.budgetUsage(t, bk.guardrail, bk.subject)
		wantUsage(t, fmt.Sprintf("%s budget %s usage", at, bk.subject), gotU, u.Total, u.Daily, u.Weekly, u.Monthly)
		wantUsage(t, fmt.Sprintf("%s budget %s byok", at, bk.subject), gotB, b.Total, b.Daily, b.Weekly, b.Monthly)
	}
}

// race runs n calls of fn at once and returns their errors.
func race(n int, fn func(i int) error) []error {
	errs := make([]error, n)
	var start, wg sync.WaitGroup
	start.Add(1)
	for i := range n {
		wg.Go(func() {
			start.Wait()
			errs[i] = fn(i)
		})
	}
	start.Done()
	wg.Wait()
	return errs
}

// wantRaceOutcome checks that exactly succeed calls succeeded and that the
// others failed with code.
func wantRaceOutcome(t *testing.T, errs []error, succeed int, code string) {
	t.Helper()
	n := 0
	for _, err := range errs {
		switch {
		case err == nil:
			n++
		case gatehouse.ErrorCode(err) != code:
			t.Errorf("error %v, want code %s", err, code)
		}
	}
	if n != succeed {
		t.Errorf("%d of %d succeeded, want exactly %d", n, len(errs), succeed)
	}
}

// testPlaneConcurrentKeyLimit: 50 requests of $0.10 at once against a
// $1.00 limit; each reserves then settles its exact cost.
func testPlaneConcurrentKeyLimit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(1)), LimitReset: gatehouse.Daily})
	errs := race(50, func(int) error {
		r, err := f.reserve(k, cents(10), false, nil)
		if err != nil {
			return err
		}
		return f.store.Settle(f.ctx, r.ID, generation(k, cents(10), false))
	})
	wantRaceOutcome(t, errs, 10, gatehouse.EPAYMENT)
	now := f.clock.Now()
	wantUsage(t, "usage", f.readKey(t, k.Hash).Usage.At(now), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))
}

// testPlaneConcurrentMemberBudget: the same against a member's $1.00
// budget, spent through two keys at once.
func testPlaneConcurrentMemberBudget(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "m@example.com")
	g := f.budgetGuardrail(t, "member budget", gatehouse.USD(1), gatehouse.Daily, false)
	f.assignMember(t, g, m)
	keys := []*gatehouse.Key{
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID}),
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID}),
	}
	budgets := [][]gatehouse.Budget{f.budgets(t, keys[0]), f.budgets(t, keys[1])}
	errs := race(50, func(i int) error {
		k := keys[i%2]
		r, err := f.reserve(k, cents(10), false, budgets[i%2])
		if err != nil {
			return err
		}
		return f.store.Settle(f.ctx, r.ID, generation(k, cents(10), false))
	})
	wantRaceOutcome(t, errs, 10, gatehouse.EFORBIDDEN)
	now := f.clock.Now()
	u, _ := f.budgetUsage(t, g.ID, gatehouse.MemberSubject(m.ID))
	wantUsage(t, "member budget", u, gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))
	spent := f.readKey(t, keys[0].Hash).Usage.At(now).Daily + f.readKey(t, keys[1].Hash).Usage.At(now).Daily
	if spent != gatehouse.USD(1) {
		t.Errorf("the two keys spent %s, want 1", spent)
	}
}

// batched runs a test with the store admitting concurrent reservations in
// batches (what serving on PostgreSQL does), when it can.
func batched(test func(t *testing.T, open Opener)) func(t *testing.T, open Opener) {
	return func(t *testing.T, open Opener) {
		test(t, func(t *testing.T, now gatehouse.Clock) gatehouse.Store {
			s := open(t, now)
			b, ok := s.(interface{ BatchReserves() (stop func()) })
			if !ok {
				t.Skip("the store does not batch reservations")
			}
			t.Cleanup(b.BatchReserves())
			return s
		})
	}
}
