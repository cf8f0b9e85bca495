package storetest

import (
	"errors"
	"fmt"
	"gatehouse/meter"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// testRetention checks the pruning of the append-only logs
// (GATEHOUSE_LEDGER_RETENTION, GATEHOUSE_AUDIT_RETENTION): only what is
// older than the cutoff goes, in every organization, a bounded batch at a
// time; and no counter, limit or budget depends on a pruned row.
func testRetention(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"LedgerOlderThanCutoff", testRetentionLedger},
		{"LedgerBatches", testRetentionLedgerBatches},
		{"AuditOlderThanCutoff", testRetentionAudit},
		{"CountersAndBudgetsSurvive", testRetentionCountersSurvive},
		{"WhileSpending", testRetentionWhileSpending},
		{"BadLimit", testRetentionBadLimit},
	})
}

// pruner returns the store as a LogPruner; every engine is one.
func (f *fixture) pruner(t *testing.T) gatehouse.LogPruner {
	t.Helper()
	p, isPruner := f.store.(gatehouse.LogPruner)
	if !isPruner {
		t.Fatalf("%T is not a gatehouse.LogPruner", f.store)
	}
	return p
}

// generationFound reports whether the ledger still has entry id of org.
func (f *fixture) generationFound(t *testing.T, orgID, id string) bool {
	t.Helper()
	_, err := f.store.FindGeneration(f.ctx, orgID, id)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return false
	}
	ok(t, err)
	return true
}

// testRetentionLedger: entries of two organizations, a day apart; a cutoff
// between two of them deletes exactly the older ones of both, and a second
// prune finds nothing left to delete.
func testRetentionLedger(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	keys := []*gatehouse.Key{f.newKey(t, f.org.ID, gatehouse.KeyCreate{}), f.newKey(t, other.ID, gatehouse.KeyCreate{})}
	start := f.clock.Now()
	var gens [][]*gatehouse.Generation // by day, one per key
	for day := range 5 {
		f.clock.Set(start.Add(time.Duration(day) * 24 * time.Hour))
		var today []*gatehouse.Generation
		for _, k := range keys {
			today = append(today, f.spend(t, k, cents(1), false))
		}
		gens = append(gens, today)
	}
	cutoff := start.Add(2 * 24 * time.Hour) // days 0 and 1 go; day 2, created at the cutoff, stays
	n, err := f.pruner(t).PruneGenerations(f.ctx, cutoff, 1000)
	ok(t, err)
	if n != 4 {
		t.Errorf("PruneGenerations deleted %d entries, want 4 (2 days × 2 organizations)", n)
	}
	for day, today := range gens {
		for i, g := range today {
			if got, want := f.generationFound(t, g.OrganizationID, g.ID), day >= 2; got != want {
				t.Errorf("day %d, organization %d: entry found = %v, want %v", day, i, got, want)
			}
		}
	}
	if n, err := f.pruner(t).PruneGenerations(f.ctx, cutoff, 1000); err != nil || n != 0 {
		t.Errorf("a second prune = %d, %v; want 0, nil", n, err)
	}
}

// testRetentionLedgerBatches: a prune deletes at most its limit, the
// oldest of an organization first; repeated prunes empty the backlog and
// the last one returns fewer than the limit.
func testRetentionLedgerBatches(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	var gens []*gatehouse.Generation
	for range 7 {
		f.clock.Add(time.Minute)
		gens = append(gens, f.spend(t, k, cents(1), false))
	}
	cutoff := f.clock.Now().Add(time.Millisecond) // everything
	var batches []int
	for {
		n, err := f.pruner(t).PruneGenerations(f.ctx, cutoff, 3)
		ok(t, err)
		batches = append(batches, n)
		if n < 3 {
			break
		}
		if len(batches) == 1 {
			for i, g := range gens {
				if got, want := f.generationFound(t, f.org.ID, g.ID), i >= 3; got != want {
					t.Errorf("after the first batch, entry %d found = %v, want %v (the oldest go first)", i, got, want)
				}
			}
		}
	}
	if fmt.Sprint(batches) != "[3 3 1]" {
		t.Errorf("batches deleted %v, want [3 3 1]", batches)
	}
}

// testRetentionAudit: audit entries before the cutoff go, in every
// organization; later ones stay and still read back whole.
func testRetentionAudit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	f.clock.Add(time.Hour)
	cutoff := f.clock.Now()
	f.clock.Add(time.Hour)
	recent := []*gatehouse.Key{f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "recent"}), f.newKey(t, other.ID, gatehouse.KeyCreate{Name: "recent"})}
	before := map[string]int{}
	for _, org := range []string{f.org.ID, other.ID} {
		entries, total := f.auditEntries(t, org)
		before[org] = total
		if entries[len(entries)-1].At.After(cutoff) {
			t.Fatalf("organization %s has no entry before the cutoff to prune", org)
		}
	}
	n, err := f.pruner(t).PruneAuditLog(f.ctx, cutoff, 1000)
	ok(t, err)
	deleted := 0
	for i, org := range []string{f.org.ID, other.ID} {
		entries, total := f.auditEntries(t, org)
		deleted += before[org] - total
		if total != 1 || len(entries) != 1 {
			t.Fatalf("organization %d keeps %d entries, want 1 (the key created after the cutoff)", i, total)
		}
		e := entries[0]
		if e.Operation != gatehouse.OpKeyCreate || len(e.ResourceIDs) != 1 || e.ResourceIDs[0] != recent[i].Hash {
			t.Errorf("organization %d keeps %+v, want the creation of key %s", i, e, recent[i].Hash)
		}
	}
	if n != deleted {
		t.Errorf("PruneAuditLog returned %d, but %d entries went", n, deleted)
	}
}

// auditEntries returns an organization's audit entries (newest first) and
// their total.
func (f *fixture) auditEntries(t *testing.T, orgID string) ([]*gatehouse.AuditEntry, int) {
	t.Helper()
	entries, total, err := f.store.FindAuditEntries(f.ctx, orgID, gatehouse.AuditFilter{Page: page(0, gatehouse.MaxPageSize)})
	ok(t, err)
	return entries, total
}

// testRetentionCountersSurvive: a key with a daily limit spending through
// a member budget, another through a key budget, both under the workspace
// default; after the whole ledger is pruned, every counter reads as
// before, the limit and the budgets still refuse what no longer fits and
// admit what does, and the periods still reset at their boundaries.
func testRetentionCountersSurvive(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "m@example.com")
	gM := f.budgetGuardrail(t, "member budget", cents(60), gatehouse.Weekly, false)
	gK := f.budgetGuardrail(t, "key budget", cents(30), gatehouse.Monthly, false)
	f.assignMember(t, gM, m)
	limited := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID, Limit: new(gatehouse.USD(1)), LimitReset: gatehouse.Daily})
	second := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.assignKey(t, gK, second)
	f.configureDefault(t, limited.WorkspaceID, gatehouse.USD(5), gatehouse.Daily)
	for i := range 4 {
		f.clock.Add(time.Minute)
		f.spend(t, limited, cents(15), i%2 == 0) // BYOK spend too: counters of its own
		f.spend(t, second, cents(5), false)
	}
	now := f.clock.Now()
	keysBefore, budgetsBefore := f.counters(t, []*gatehouse.Key{limited, second})

	n, err := f.pruner(t).PruneGenerations(f.ctx, now.Add(time.Millisecond), 1000)
	ok(t, err)
	if n != 8 {
		t.Fatalf("pruned %d entries, want all 8", n)
	}
	keysAfter, budgetsAfter := f.counters(t, []*gatehouse.Key{limited, second})
	if fmt.Sprint(keysAfter) != fmt.Sprint(keysBefore) || fmt.Sprint(budgetsAfter) != fmt.Sprint(budgetsBefore) {
		t.Fatalf("counters changed by pruning the ledger:\nkeys before %v\nkeys after  %v\nbudgets before %v\nbudgets after  %v",
			keysBefore, keysAfter, budgetsBefore, budgetsAfter)
	}
	wantUsage(t, "limited key", f.readKey(t, limited.Hash).Usage.At(now), cents(30), cents(30), cents(30), cents(30))
	wantUsage(t, "limited key BYOK", f.readKey(t, limited.Hash).BYOKUsage.At(now), cents(30), cents(30), cents(30), cents(30))
	u, _ := f.budgetUsage(t, gM.ID, gatehouse.MemberSubject(m.ID))
	wantUsage(t, "member budget", u, cents(30), cents(30), cents(30), cents(30))
	u, _ = f.budgetUsage(t, gK.ID, gatehouse.KeySubject(second.Hash))
	wantUsage(t, "key budget", u, cents(20), cents(20), cents(20), cents(20))

	// The member budget ($0.60 weekly) has $0.30 left: $0.31 is refused by
	// it, though the key's own limit has $0.70 left; $0.30 fits.
	_, err = f.reserve(limited, cents(31), false, f.budgets(t, limited))
	if gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN {
		t.Errorf("reserve $0.31 against $0.30 left of the member budget: %v, want %s", err, gatehouse.EFORBIDDEN)
	}
	r := f.mustReserve(t, limited, cents(30), false, f.budgets(t, limited))
	ok(t, f.store.Settle(f.ctx, r.ID, generation(limited, cents(30), false)))
	// The key has $0.40 left of its daily $1.
	_, err = f.reserve(limited, cents(41), false, nil)
	wantMessage(t, err, gatehouse.EPAYMENT, "Key limit exceeded")
	// The key budget ($0.30 monthly) has $0.10 left.
	_, err = f.reserve(second, cents(11), false, f.budgets(t, second))
	if gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN {
		t.Errorf("reserve $0.11 against $0.10 left of the key budget: %v, want %s", err, gatehouse.EFORBIDDEN)
	}
	f.mustReserve(t, second, cents(10), false, f.budgets(t, second))
	// The next day the key's daily limit has reset, from its counters.
	next := time.Date(now.Year(), now.Month(), now.Day()+1, 0, 0, 0, 0, time.UTC)
	f.clock.Set(next)
	wantUsage(t, "limited key, next day", f.readKey(t, limited.Hash).Usage.At(next), cents(60), 0,
		keepIf(next.Weekday() == time.Monday, 0, cents(60)), keepIf(next.Day() == 1, 0, cents(60)))
	f.mustReserve(t, limited, cents(99), false, nil)
}

// counters reads the counters of keys and of every budget that governs
// them, rendered for comparison.
func (f *fixture) counters(t *testing.T, keys []*gatehouse.Key) (map[string]string, map[string]string) {
	t.Helper()
	var hashes []string
	var budgets []gatehouse.Budget
	for _, k := range keys {
		hashes = append(hashes, k.Hash)
		budgets = append(budgets, f.budgets(t, k)...)
	}
	loader, isLoader := f.store.(meter.CounterLoader)
	if !isLoader {
		t.Fatalf("%T is not a meter.CounterLoader", f.store)
	}
	k, b, err := loader.LoadCounters(f.ctx, hashes, budgets)
	ok(t, err)
	now := f.clock.Now()
	keysOut, budgetsOut := map[string]string{}, map[string]string{}
	for h, c := range k {
		keysOut[h] = usageString(c.Usage.At(now)) + " byok " + usageString(c.BYOK.At(now))
	}
	for id, c := range b {
		budgetsOut[id[0]+" "+id[1]] = usageString(c.Usage.At(now)) + " byok " + usageString(c.BYOK.At(now))
	}
	if len(keysOut) != len(keys) || len(budgetsOut) < 3 {
		t.Fatalf("read %d keys' and %d budgets' counters, want %d keys and at least 3 budgets", len(keysOut), len(budgetsOut), len(keys))
	}
	return keysOut, budgetsOut
}

// testRetentionWhileSpending: pruning the whole ledger over and over while
// requests are reserved and settled neither fails a request nor loses a
// cent of the counters.
func testRetentionWhileSpending(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(100)), LimitReset: gatehouse.Daily})
	const spenders, each = 4, 15
	stop := make(chan struct{})
	var pruned sync.WaitGroup
	var pruneErr error
	deleted, pruner := 0, f.pruner(t)
	pruned.Go(func() {
		for {
			select {
			case <-stop:
				return
			default:
			}
			n, err := pruner.PruneGenerations(f.ctx, f.clock.Now().Add(time.Hour), 5)
			deleted += n
			if err != nil {
				pruneErr = err
				return
			}
		}
	})
	errs := race(spenders, func(int) error {
		for range each {
			r, err := f.reserve(k, cents(2), false, nil)
			if err != nil {
				return err
			}
			if err := f.store.Settle(f.ctx, r.ID, generation(k, cents(1), false)); err != nil {
				return err
			}
		}
		return nil
	})
	close(stop)
	pruned.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("spending while pruning: %v", err)
	}
	ok(t, pruneErr)
	n, err := f.pruner(t).PruneGenerations(f.ctx, f.clock.Now().Add(time.Hour), 1000)
	ok(t, err)
	if deleted+n != spenders*each {
		t.Errorf("pruned %d entries in all, want the %d written", deleted+n, spenders*each)
	}
	want := cents(spenders * each)
	wantUsage(t, "usage", f.readKey(t, k.Hash).Usage.At(f.clock.Now()), want, want, want, want)
}

// testRetentionBadLimit: a limit that is not positive is refused.
func testRetentionBadLimit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	if _, err := f.pruner(t).PruneGenerations(f.ctx, f.clock.Now(), 0); err == nil {
		t.Errorf("PruneGenerations with limit 0 succeeded")
	}
	if _, err := f.pruner(t).PruneAuditLog(f.ctx, f.clock.Now(), -1); err == nil {
		t.Errorf("PruneAuditLog with limit -1 succeeded")
	}
}
