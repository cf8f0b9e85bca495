package storetest

import (
	"testing"
	"time"

	"gatehouse"
)

// testBudgets checks workspace budgets and organization credits: their
// management (rules, tenancy, audit) and their enforcement, which is the
// metering of every other budget (Reserve and Settle with the budgets of
// BudgetsForKey).
func testBudgets(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"WorkspaceBudgetsSetFindDelete", testWorkspaceBudgetsCRUD},
		{"WorkspaceBudgetsOrder", testWorkspaceBudgetsOrder},
		{"WorkspaceBudgetsInvalid", testWorkspaceBudgetsInvalid},
		{"WorkspaceBudgetsTenancy", testWorkspaceBudgetsTenancy},
		{"WorkspaceBudgetsAudit", testWorkspaceBudgetsAudit},
		{"WorkspaceBudgetsEnforced", testWorkspaceBudgetsEnforced},
		{"WorkspaceBudgetsPeriods", testWorkspaceBudgetsPeriods},
		{"WorkspaceBudgetsCountPastSpend", testWorkspaceBudgetsPastSpend},
		{"WorkspaceBudgetsBYOK", testWorkspaceBudgetsBYOK},
		{"WorkspaceBudgetsGoWithTheirWorkspace", testWorkspaceBudgetsDeletedWorkspace},
		{"GuardrailCountersGoWithTheGuardrail", testGuardrailCountersDeleted},
		{"ConcurrentWorkspaceBudget", testConcurrentWorkspaceBudget},
		{"ConcurrentWorkspaceBudgetBatched", batched(testConcurrentWorkspaceBudget)},
		{"Credits", testCredits},
		{"CreditsInvalid", testCreditsInvalid},
		{"CreditsEnforced", testCreditsEnforced},
		{"CreditsAudit", testCreditsAudit},
		{"ConcurrentCredits", testConcurrentCredits},
		{"ConcurrentCreditsBatched", batched(testConcurrentCredits)},
	})
}

// setBudget sets the workspace's budget of an interval.
func (f *fixture) setBudget(t *testing.T, ref string, every gatehouse.Interval, limit gatehouse.Money) *gatehouse.WorkspaceBudget {
	t.Helper()
	all, err := f.store.SetWorkspaceBudget(f.ctx, f.org.ID, ref, every, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(limit)})
	ok(t, err)
	b := all.Interval(every)
	if b == nil || b.Limit != limit {
		t.Fatalf("SetWorkspaceBudget(%s, %s): budgets %+v", every, limit, all.Budgets)
	}
	return b
}

// allBudgets returns every budget a key's requests hold against, as the
// meter collects them: BudgetsForKey's, then its guardrails'.
func (f *fixture) allBudgets(t *testing.T, k *gatehouse.Key) []gatehouse.Budget {
	t.Helper()
	bs, err := f.store.BudgetsForKey(f.ctx, k)
	ok(t, err)
	return append(append([]gatehouse.Budget{}, bs...), f.budgets(t, k)...)
}

// spendAll reserves cost for k against all its budgets and settles it.
func (f *fixture) spendAll(t *testing.T, k *gatehouse.Key, cost gatehouse.Money, byok bool) {
	t.Helper()
	r := f.mustReserve(t, k, cost, byok, f.allBudgets(t, k))
	ok(t, f.store.Settle(f.ctx, r.ID, generation(k, cost, byok)))
}

// intervals returns the intervals of budgets, in order.
func intervals(bs []*gatehouse.WorkspaceBudget) []string {
	out := []string{}
	for _, b := range bs {
		out = append(out, gatehouse.BudgetIntervalName(b.Interval))
	}
	return out
}

func testWorkspaceBudgetsCRUD(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	all, err := f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "team")
	ok(t, err)
	if all.WorkspaceID != ws.ID || all.IncludeBYOK || len(all.Budgets) != 0 {
		t.Fatalf("a new workspace's budgets: %+v", all)
	}
	created := f.clock.Now()
	lifetime := f.setBudget(t, "team", gatehouse.NoReset, gatehouse.USD(100))
	daily := f.setBudget(t, ws.ID, gatehouse.Daily, gatehouse.USD(5))
	monthly := f.setBudget(t, "team", gatehouse.Monthly, gatehouse.USD(50))
	wantEqual(t, "the daily budget", &gatehouse.WorkspaceBudget{ID: daily.ID, OrganizationID: f.org.ID, WorkspaceID: ws.ID,
		Interval: gatehouse.Daily, Limit: gatehouse.USD(5), CreatedAt: created, UpdatedAt: created}, daily)

	f.clock.Add(time.Minute)
	all, err = f.store.SetWorkspaceBudget(f.ctx, f.org.ID, "team", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{
		LimitUSD: gatehouse.Val(gatehouse.USD(60)), IncludeBYOKInBudgets: new(true)})
	ok(t, err)
	if m := all.Interval(gatehouse.Monthly); m.ID != monthly.ID || m.Limit != gatehouse.USD(60) ||
		!m.CreatedAt.Equal(created) || !m.UpdatedAt.Equal(f.clock.Now()) {
		t.Fatalf("the monthly budget updated: %+v", m)
	}
	if !all.IncludeBYOK {
		t.Fatal("include_byok_in_budgets was not set")
	}
	w, err := f.store.FindWorkspace(f.ctx, f.org.ID, "team")
	ok(t, err)
	if !w.IncludeBYOKInBudgets {
		t.Fatal("include_byok_in_budgets is the workspace's setting: FindWorkspace does not show it")
	}

	all, err = f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, ws.ID)
	ok(t, err)
	wantEqual(t, "intervals, narrowest first", []string{"daily", "monthly", "lifetime"}, intervals(all.Budgets))
	if all.Interval(gatehouse.NoReset).ID != lifetime.ID || all.Interval(gatehouse.Weekly) != nil {
		t.Fatalf("budgets: %+v", all.Budgets)
	}

	// Absent include_byok_in_budgets leaves the setting alone.
	all, err = f.store.SetWorkspaceBudget(f.ctx, f.org.ID, "team", gatehouse.Weekly, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(20))})
	ok(t, err)
	if !all.IncludeBYOK {
		t.Fatal("a set without include_byok_in_budgets changed it")
	}

	had, err := f.store.DeleteWorkspaceBudget(f.ctx, f.org.ID, "team", gatehouse.Daily)
	if err != nil || !had {
		t.Fatalf("DeleteWorkspaceBudget(daily) = %v, %v", had, err)
	}
	had, err = f.store.DeleteWorkspaceBudget(f.ctx, f.org.ID, "team", gatehouse.Daily)
	if err != nil || had {
		t.Fatalf("DeleteWorkspaceBudget(daily) again = %v, %v; want false, nil", had, err)
	}
	all, err = f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "team")
	ok(t, err)
	wantEqual(t, "intervals after the delete", []string{"weekly", "monthly", "lifetime"}, intervals(all.Budgets))

	// The default workspace has budgets of its own, by its slug.
	f.setBudget(t, "default", gatehouse.Daily, gatehouse.USD(1))
	all, err = f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "default")
	ok(t, err)
	wantEqual(t, "the default workspace's intervals", []string{"daily"}, intervals(all.Budgets))
}

func testWorkspaceBudgetsOrder(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.newWorkspace(t, f.org.ID, "team")
	set := func(every gatehouse.Interval, limit gatehouse.Money) error {
		_, err := f.store.SetWorkspaceBudget(f.ctx, f.org.ID, "team", every, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(limit)})
		return err
	}
	f.setBudget(t, "team", gatehouse.Weekly, gatehouse.USD(10))
	for _, c := range []struct {
		every    gatehouse.Interval
		limit    gatehouse.Money
		conflict string
	}{
		{gatehouse.Daily, gatehouse.USD(10), "weekly"},   // equal: not strictly less
		{gatehouse.Daily, gatehouse.USD(11), "weekly"},   // above the weekly
		{gatehouse.Monthly, gatehouse.USD(10), "weekly"}, // equal: not strictly more
		{gatehouse.NoReset, gatehouse.USD(9), "weekly"},
	} {
		err := set(c.every, c.limit)
		wantMessage(t, err, gatehouse.EINVALID, "limit_usd: must be")
		wantMeta(t, err, "conflicting_interval", c.conflict)
	}
	ok(t, set(gatehouse.Daily, gatehouse.USD(9)))
	ok(t, set(gatehouse.NoReset, gatehouse.USD(1000)))
	ok(t, set(gatehouse.Monthly, gatehouse.USD(11)))
	// An update must keep the order too, on both sides.
	wantCode(t, set(gatehouse.Weekly, gatehouse.USD(9)), gatehouse.EINVALID)
	wantCode(t, set(gatehouse.Weekly, gatehouse.USD(11)), gatehouse.EINVALID)
	wantCode(t, set(gatehouse.Monthly, gatehouse.USD(1000)), gatehouse.EINVALID)
	ok(t, set(gatehouse.Weekly, gatehouse.Money(9_000_000_001)))
	all, err := f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "team")
	ok(t, err)
	var limits []gatehouse.Money
	for _, b := range all.Budgets {
		limits = append(limits, b.Limit)
	}
	wantEqual(t, "limits, narrowest first", []gatehouse.Money{gatehouse.USD(9), 9_000_000_001, gatehouse.USD(11), gatehouse.USD(1000)}, limits)
}

func testWorkspaceBudgetsInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.setBudget(t, "default", gatehouse.Daily, gatehouse.USD(1))
	before, err := f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "default")
	ok(t, err)
	for _, c := range []struct {
		name string
		set  gatehouse.WorkspaceBudgetSet
	}{
		{"no limit", gatehouse.WorkspaceBudgetSet{IncludeBYOKInBudgets: new(true)}},
		{"null limit", gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Null[gatehouse.Money](), IncludeBYOKInBudgets: new(true)}},
		{"zero", gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val[gatehouse.Money](0), IncludeBYOKInBudgets: new(true)}},
		{"negative", gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(-gatehouse.USD(1)), IncludeBYOKInBudgets: new(true)}},
	} {
		_, err := f.store.SetWorkspaceBudget(f.ctx, f.org.ID, "default", gatehouse.Monthly, c.set)
		wantMessage(t, err, gatehouse.EINVALID, "limit_usd: ")
	}
	_, err = f.store.SetWorkspaceBudget(f.ctx, f.org.ID, "default", gatehouse.Daily, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val[gatehouse.Money](0)})
	wantCode(t, err, gatehouse.EINVALID)
	after, err := f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "default")
	ok(t, err)
	wantEqual(t, "budgets after refused sets", before, after)
	for _, ref := range []string{"no-such-workspace", "00000000-0000-0000-0000-000000000000", "Not A Slug"} {
		_, err := f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, ref)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.SetWorkspaceBudget(f.ctx, f.org.ID, ref, gatehouse.Daily, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(1))})
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.DeleteWorkspaceBudget(f.ctx, f.org.ID, ref, gatehouse.Daily)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
}

func testWorkspaceBudgetsTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	f.setBudget(t, "team", gatehouse.Daily, gatehouse.USD(1))
	other := f.newOrg(t, "Other")
	for _, ref := range []string{ws.ID, "team"} {
		_, err := f.store.FindWorkspaceBudgets(f.ctx, other.ID, ref)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.SetWorkspaceBudget(f.ctx, other.ID, ref, gatehouse.Daily, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(2))})
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.DeleteWorkspaceBudget(f.ctx, other.ID, ref, gatehouse.Daily)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	// The other organization's default workspace is its own.
	all, err := f.store.FindWorkspaceBudgets(f.ctx, other.ID, "default")
	ok(t, err)
	if len(all.Budgets) != 0 {
		t.Fatalf("the other organization's default workspace has budgets: %+v", all.Budgets)
	}
	all, err = f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, "team")
	ok(t, err)
	if b := all.Interval(gatehouse.Daily); b == nil || b.Limit != gatehouse.USD(1) {
		t.Fatalf("the budget changed: %+v", all.Budgets)
	}
}

func testWorkspaceBudgetsAudit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	a := f.newAuditRun(t, f.org.ID)
	all, err := f.store.SetWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(5))})
	ok(t, err)
	id := all.Interval(gatehouse.Monthly).ID
	a.want("workspace_budget.set", "workspace_budget", []string{id},
		map[string]any{"workspace_id": ws.ID, "reset_interval": "monthly", "created": true, "fields": []string{"limit_usd"}})
	_, err = f.store.SetWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{
		LimitUSD: gatehouse.Val(gatehouse.USD(6)), IncludeBYOKInBudgets: new(true)})
	ok(t, err)
	a.want("workspace_budget.set", "workspace_budget", []string{id},
		map[string]any{"workspace_id": ws.ID, "reset_interval": "monthly", "created": false, "fields": []string{"limit_usd", "include_byok_in_budgets"}})
	_, err = f.store.SetWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{
		LimitUSD: gatehouse.Val(gatehouse.USD(6)), IncludeBYOKInBudgets: new(true)})
	ok(t, err)
	a.wantNone("a set that changes nothing")
	_, err = f.store.SetWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Monthly, gatehouse.WorkspaceBudgetSet{
		LimitUSD: gatehouse.Val(gatehouse.USD(6)), IncludeBYOKInBudgets: new(false)})
	ok(t, err)
	a.want("workspace_budget.set", "workspace_budget", []string{id},
		map[string]any{"workspace_id": ws.ID, "reset_interval": "monthly", "created": false, "fields": []string{"include_byok_in_budgets"}})
	_, err = f.store.SetWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Weekly, gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(7))})
	wantCode(t, err, gatehouse.EINVALID)
	a.wantNone("a refused set")
	_, err = f.store.DeleteWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Daily)
	ok(t, err)
	a.wantNone("the delete of a budget that is not there")
	_, err = f.store.DeleteWorkspaceBudget(a.ctx(), f.org.ID, "team", gatehouse.Monthly)
	ok(t, err)
	a.want("workspace_budget.delete", "workspace_budget", []string{id}, map[string]any{"workspace_id": ws.ID, "reset_interval": "monthly"})
}

// testWorkspaceBudgetsEnforced: the keys of a workspace spend against its
// budgets together, broadest first; another workspace's keys do not.
func testWorkspaceBudgetsEnforced(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	outsider := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	daily := f.setBudget(t, "team", gatehouse.Daily, gatehouse.USD(1))
	monthly := f.setBudget(t, "team", gatehouse.Monthly, gatehouse.USD(3))

	bs, err := f.store.BudgetsForKey(f.ctx, k1)
	ok(t, err)
	subject := gatehouse.WorkspaceSubject(ws.ID)
	wantEqual(t, "BudgetsForKey, broadest first", []gatehouse.Budget{
		{GuardrailID: monthly.ID, Subject: subject, Limit: gatehouse.USD(3), Interval: gatehouse.Monthly, Kind: gatehouse.WorkspaceLimit},
		{GuardrailID: daily.ID, Subject: subject, Limit: gatehouse.USD(1), Interval: gatehouse.Daily, Kind: gatehouse.WorkspaceLimit},
	}, bs)
	if bs, err := f.store.BudgetsForKey(f.ctx, outsider); err != nil || len(bs) != 0 {
		t.Fatalf("BudgetsForKey of another workspace's key = %v, %v", bs, err)
	}

	f.spendAll(t, k1, cents(40), false)
	held := f.mustReserve(t, k2, cents(30), false, f.allBudgets(t, k2))
	_, err = f.reserve(k2, cents(31), false, f.allBudgets(t, k2))
	wantMessage(t, err, gatehouse.EFORBIDDEN, "Workspace daily budget of $1 exceeded")
	wantMeta(t, err, "remaining", cents(30))
	wantMeta(t, err, "workspace_id", ws.ID)
	wantMeta(t, err, "budget_id", daily.ID)
	wantMeta(t, err, "reset_interval", "daily")
	wantMeta(t, err, "request_max_cost", cents(31))
	f.spendAll(t, outsider, gatehouse.USD(5), false) // not the workspace's
	u, _ := f.budgetUsage(t, daily.ID, subject)
	wantUsage(t, "the daily budget's counter", u, cents(40), cents(40), cents(40), cents(40))
	u, _ = f.budgetUsage(t, monthly.ID, subject)
	wantUsage(t, "the monthly budget's counter", u, cents(40), cents(40), cents(40), cents(40))

	ok(t, f.store.Release(f.ctx, held.ID))

	// The broadest budget exceeded is the one named.
	for _, k := range []*gatehouse.Key{k1, k2} {
		f.clock.Add(24 * time.Hour)
		f.spendAll(t, k, cents(90), false)
	}
	f.clock.Add(24 * time.Hour)
	f.spendAll(t, k1, cents(70), false) // 2.90 this month
	_, err = f.reserve(k1, cents(20), false, f.allBudgets(t, k1))
	wantMessage(t, err, gatehouse.EFORBIDDEN, "Workspace monthly budget of $3 exceeded")
	wantMeta(t, err, "remaining", cents(10))
}

// testWorkspaceBudgetsPeriods: a daily budget resets at midnight UTC, a
// weekly one on Monday at midnight UTC, a monthly one on the first, a
// lifetime one never.
func testWorkspaceBudgetsPeriods(t *testing.T, open Opener) {
	for _, c := range []struct {
		every         gatehouse.Interval
		before, after time.Time
	}{
		{gatehouse.Daily, lastMilli(2028, 2, 23), midnight(2028, 2, 24)},
		{gatehouse.Weekly, lastMilli(2028, 2, 27), midnight(2028, 2, 28)}, // Sunday, then Monday
		{gatehouse.Monthly, lastMilli(2028, 2, 29), midnight(2028, 3, 1)},
		{gatehouse.NoReset, lastMilli(2028, 2, 29), midnight(2028, 3, 1)},
	} {
		t.Run(gatehouse.BudgetIntervalName(c.every), func(t *testing.T) {
			f := newFixture(t, open)
			f.clock.Set(c.before.Add(-time.Hour))
			k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
			f.setBudget(t, "default", c.every, gatehouse.USD(1))
			f.spendAll(t, k, gatehouse.USD(1), false)
			f.clock.Set(c.before)
			_, err := f.reserve(k, 1, false, f.allBudgets(t, k))
			wantCode(t, err, gatehouse.EFORBIDDEN)
			f.clock.Set(c.after)
			_, err = f.reserve(k, gatehouse.USD(1), false, f.allBudgets(t, k))
			if c.every == gatehouse.NoReset {
				wantCode(t, err, gatehouse.EFORBIDDEN)
			} else {
				ok(t, err)
			}
		})
	}
}

// testWorkspaceBudgetsPastSpend: a new budget counts what the workspace
// spent in its current period before it was set; a deleted one's count goes
// with it, and a new one counts again from the ledger.
func testWorkspaceBudgetsPastSpend(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	other := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.clock.Set(time.Date(2028, 2, 22, 12, 0, 0, 0, time.UTC)) // Tuesday
	f.spendAll(t, k, cents(300), false)
	f.spendAll(t, k, cents(7), true)
	f.clock.Set(time.Date(2028, 2, 23, 12, 0, 0, 0, time.UTC)) // Wednesday
	f.spendAll(t, k, cents(50), false)
	f.spendAll(t, other, gatehouse.USD(100), false)
	daily := f.setBudget(t, "team", gatehouse.Daily, gatehouse.USD(1))
	weekly := f.setBudget(t, "team", gatehouse.Weekly, gatehouse.USD(4))
	lifetime := f.setBudget(t, "team", gatehouse.NoReset, gatehouse.USD(10))
	subject := gatehouse.WorkspaceSubject(ws.ID)
	u, b := f.budgetUsage(t, daily.ID, subject)
	if u.Daily != cents(50) || b.Daily != 0 {
		t.Fatalf("a new daily budget counts %s (BYOK %s) of today's spend, want 0.5 (0)", u.Daily, b.Daily)
	}
	u, b = f.budgetUsage(t, weekly.ID, subject)
	if u.Weekly != cents(350) || b.Weekly != cents(7) {
		t.Fatalf("a new weekly budget counts %s (BYOK %s) of this week's spend, want 3.5 (0.07)", u.Weekly, b.Weekly)
	}
	u, _ = f.budgetUsage(t, lifetime.ID, subject)
	if u.Total != cents(350) {
		t.Fatalf("a new lifetime budget counts %s, want 3.5", u.Total)
	}
	_, err := f.reserve(k, cents(51), false, f.allBudgets(t, k))
	wantMessage(t, err, gatehouse.EFORBIDDEN, "Workspace weekly budget")
	held := f.mustReserve(t, k, cents(50), false, f.allBudgets(t, k))
	ok(t, f.store.Release(f.ctx, held.ID))

	_, err = f.store.DeleteWorkspaceBudget(f.ctx, f.org.ID, "team", gatehouse.Weekly)
	ok(t, err)
	if u, b := f.budgetUsage(t, weekly.ID, subject); u != (gatehouse.Usage{}) || b != (gatehouse.Usage{}) {
		t.Fatalf("a deleted budget's counter remains: %+v %+v", u, b)
	}
	f.spendAll(t, k, cents(10), false)
	again := f.setBudget(t, "team", gatehouse.Weekly, gatehouse.USD(5))
	if again.ID == weekly.ID {
		t.Fatal("a budget set again has the deleted one's id")
	}
	u, _ = f.budgetUsage(t, again.ID, subject)
	if u.Weekly != cents(360) {
		t.Fatalf("the weekly budget set again counts %s, want 3.6", u.Weekly)
	}
}

func testWorkspaceBudgetsBYOK(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.setBudget(t, "default", gatehouse.Daily, gatehouse.USD(1))
	f.spendAll(t, k, gatehouse.USD(5), true) // BYOK spend does not count
	f.mustReserve(t, k, gatehouse.USD(1), false, f.allBudgets(t, k))
	_, err := f.reserve(k, cents(1), false, f.allBudgets(t, k))
	wantCode(t, err, gatehouse.EFORBIDDEN)
	f.mustReserve(t, k, gatehouse.USD(9), true, f.allBudgets(t, k))

	_, err = f.store.SetWorkspaceBudget(f.ctx, f.org.ID, "default", gatehouse.Daily, gatehouse.WorkspaceBudgetSet{
		LimitUSD: gatehouse.Val(gatehouse.USD(20)), IncludeBYOKInBudgets: new(true)})
	ok(t, err)
	bs, err := f.store.BudgetsForKey(f.ctx, k)
	ok(t, err)
	if len(bs) != 1 || !bs[0].IncludeBYOK {
		t.Fatalf("BudgetsForKey after include_byok_in_budgets: %+v", bs)
	}
	// 5 spent and 9 held (BYOK) and 1 held: 15 of 20.
	f.mustReserve(t, k, gatehouse.USD(5), true, f.allBudgets(t, k))
	_, err = f.reserve(k, 1, true, f.allBudgets(t, k))
	wantCode(t, err, gatehouse.EFORBIDDEN)
}

// testWorkspaceBudgetsDeletedWorkspace: deleting a workspace deletes its
// budgets and their counters.
func testWorkspaceBudgetsDeletedWorkspace(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	b := f.setBudget(t, "team", gatehouse.Daily, gatehouse.USD(1))
	f.spendAll(t, k, cents(10), false)
	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, k.Hash))
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, "team", false))
	_, err := f.store.FindWorkspaceBudgets(f.ctx, f.org.ID, ws.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	if u, _ := f.budgetUsage(t, b.ID, gatehouse.WorkspaceSubject(ws.ID)); u != (gatehouse.Usage{}) {
		t.Fatalf("the deleted workspace's budget still counts %+v", u)
	}
}

// testGuardrailCountersDeleted: a guardrail's counters go with it (they
// used to by a foreign key, now by a trigger), so that a workspace's
// default guardrail configured again does not count the spend of the one
// deleted.
func testGuardrailCountersDeleted(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	g := f.configureDefault(t, def.ID, gatehouse.USD(1), gatehouse.Daily)
	f.spend(t, k, cents(80), false)
	held := f.mustReserve(t, k, cents(10), false, f.budgets(t, k))
	ok(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, g.ID))
	if u, _ := f.budgetUsage(t, g.ID, gatehouse.KeySubject(k.Hash)); u != (gatehouse.Usage{}) {
		t.Fatalf("the deleted guardrail still counts %+v", u)
	}
	// What was held against it settles without counting for it.
	ok(t, f.store.Settle(f.ctx, held.ID, generation(k, cents(10), false)))
	g = f.configureDefault(t, def.ID, gatehouse.USD(1), gatehouse.Daily)
	if u, _ := f.budgetUsage(t, g.ID, gatehouse.KeySubject(k.Hash)); u != (gatehouse.Usage{}) {
		t.Fatalf("the default guardrail configured again counts %+v", u)
	}
	f.mustReserve(t, k, gatehouse.USD(1), false, f.budgets(t, k))
}

// testConcurrentWorkspaceBudget: 50 requests of $0.10 at once, through two
// keys of a workspace, against its $1.00 daily budget: exactly 10 pass.
func testConcurrentWorkspaceBudget(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	keys := []*gatehouse.Key{
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID}),
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID}),
	}
	b := f.setBudget(t, "team", gatehouse.Daily, gatehouse.USD(1))
	budgets := [][]gatehouse.Budget{f.allBudgets(t, keys[0]), f.allBudgets(t, keys[1])}
	errs := race(50, func(i int) error {
		k := keys[i%2]
		r, err := f.reserve(k, cents(10), false, budgets[i%2])
		if err != nil {
			return err
		}
		return f.store.Settle(f.ctx, r.ID, generation(k, cents(10), false))
	})
	wantRaceOutcome(t, errs, 10, gatehouse.EFORBIDDEN)
	u, _ := f.budgetUsage(t, b.ID, gatehouse.WorkspaceSubject(ws.ID))
	wantUsage(t, "workspace budget", u, gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))
}

func testCredits(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	c, err := f.store.FindCredits(f.ctx, f.org.ID)
	ok(t, err)
	if c.Total != nil || c.Usage != 0 || c.TotalShown() != gatehouse.UnlimitedCredits {
		t.Fatalf("a new organization's credits: %+v", c)
	}
	// Without credits, the usage is the ledger's, BYOK excepted.
	f.spendAll(t, k, cents(120), false)
	f.spendAll(t, k, cents(500), true)
	c, err = f.store.FindCredits(f.ctx, f.org.ID)
	ok(t, err)
	if c.Total != nil || c.Usage != cents(120) {
		t.Fatalf("credits after spending: %+v", c)
	}

	f.clock.Add(time.Minute)
	g1, err := f.store.GrantCredits(f.ctx, f.org.ID, gatehouse.USD(10))
	ok(t, err)
	wantEqual(t, "the first grant", &gatehouse.CreditGrant{ID: g1.ID, OrganizationID: f.org.ID, Amount: gatehouse.USD(10),
		Total: gatehouse.USD(10), CreatedAt: f.clock.Now()}, g1)
	f.clock.Add(time.Minute)
	g2, err := f.store.GrantCredits(f.ctx, f.org.ID, -gatehouse.USD(4))
	ok(t, err)
	if g2.Total != gatehouse.USD(6) {
		t.Fatalf("after taking 4 back: %+v", g2)
	}
	c, err = f.store.FindCredits(f.ctx, f.org.ID)
	ok(t, err)
	if c.Total == nil || *c.Total != gatehouse.USD(6) || c.Usage != cents(120) {
		t.Fatalf("credits after the grants: %+v (usage counts what was spent before the first grant)", c)
	}
	f.spendAll(t, k, cents(30), false)
	f.spendAll(t, k, cents(30), true)
	c, err = f.store.FindCredits(f.ctx, f.org.ID)
	ok(t, err)
	if c.Usage != cents(150) {
		t.Fatalf("credits' usage %s, want 1.5", c.Usage)
	}
	grants, total, err := f.store.FindCreditGrants(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if total != 2 || len(grants) != 2 || grants[0].ID != g2.ID || grants[1].ID != g1.ID {
		t.Fatalf("FindCreditGrants: %d %+v, want the two grants newest first", total, grants)
	}

	other := f.newOrg(t, "Other")
	c, err = f.store.FindCredits(f.ctx, other.ID)
	ok(t, err)
	if c.Total != nil || c.Usage != 0 {
		t.Fatalf("another organization's credits: %+v", c)
	}
	if _, n, err := f.store.FindCreditGrants(f.ctx, other.ID, page(0, 10)); err != nil || n != 0 {
		t.Fatalf("another organization's grants: %d, %v", n, err)
	}
	_, err = f.store.FindCredits(f.ctx, "00000000-0000-0000-0000-000000000000")
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.GrantCredits(f.ctx, "00000000-0000-0000-0000-000000000000", gatehouse.USD(1))
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testCreditsInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.store.GrantCredits(f.ctx, f.org.ID, -gatehouse.USD(1))
	wantMessage(t, err, gatehouse.EINVALID, "amount: would take the organization's credits below zero")
	_, err = f.store.GrantCredits(f.ctx, f.org.ID, 0)
	wantMessage(t, err, gatehouse.EINVALID, "amount: must not be 0")
	_, err = f.store.GrantCredits(f.ctx, f.org.ID, gatehouse.MaxMoney)
	ok(t, err)
	_, err = f.store.GrantCredits(f.ctx, f.org.ID, 1)
	wantMessage(t, err, gatehouse.EINVALID, "amount: would take the organization's credits to")
	_, err = f.store.GrantCredits(f.ctx, f.org.ID, -gatehouse.MaxMoney-1)
	wantCode(t, err, gatehouse.EINVALID)
	c, err := f.store.FindCredits(f.ctx, f.org.ID)
	ok(t, err)
	if *c.Total != gatehouse.MaxMoney {
		t.Fatalf("credits after refused grants: %s", *c.Total)
	}
	if _, n, err := f.store.FindCreditGrants(f.ctx, f.org.ID, page(0, 10)); err != nil || n != 1 {
		t.Fatalf("grants after refused ones: %d, %v", n, err)
	}
}

// testCreditsEnforced: once granted, credits hold against every request of
// the organization, from every workspace, with no reset; BYOK requests do
// not spend them.
func testCreditsEnforced(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	f.spendAll(t, k1, cents(25), false)
	_, err := f.store.GrantCredits(f.ctx, f.org.ID, gatehouse.USD(1))
	ok(t, err)
	bs, err := f.store.BudgetsForKey(f.ctx, k2)
	ok(t, err)
	if len(bs) != 1 || bs[0].Kind != gatehouse.OrganizationCredits || bs[0].Limit != gatehouse.USD(1) ||
		bs[0].Interval != gatehouse.NoReset || bs[0].Subject != gatehouse.OrganizationSubject(f.org.ID) || bs[0].IncludeBYOK {
		t.Fatalf("BudgetsForKey with credits: %+v", bs)
	}
	f.spendAll(t, k2, cents(50), false)
	f.mustReserve(t, k1, cents(20), false, f.allBudgets(t, k1))
	_, err = f.reserve(k2, cents(6), false, f.allBudgets(t, k2))
	wantMessage(t, err, gatehouse.EPAYMENT, "Insufficient credits")
	wantMeta(t, err, "request_max_cost", cents(6))
	if e := err.(*gatehouse.Error); len(e.Metadata) != 1 {
		t.Errorf("the refusal shows the organization's figures to the key's holder: %v", e.Metadata)
	}
	f.mustReserve(t, k2, gatehouse.USD(3), true, f.allBudgets(t, k2)) // BYOK
	f.mustReserve(t, k2, cents(5), false, f.allBudgets(t, k2))
	f.clock.Add(45 * 24 * time.Hour) // credits never reset
	_, err = f.reserve(k1, 1, false, f.allBudgets(t, k1))
	wantCode(t, err, gatehouse.EPAYMENT)
	// A grant makes room at once.
	_, err = f.store.GrantCredits(f.ctx, f.org.ID, cents(50))
	ok(t, err)
	f.mustReserve(t, k1, cents(50), false, f.allBudgets(t, k1))
	_, err = f.reserve(k1, 1, false, f.allBudgets(t, k1))
	wantCode(t, err, gatehouse.EPAYMENT)
	u, _ := f.budgetUsage(t, bs[0].GuardrailID, gatehouse.OrganizationSubject(f.org.ID))
	if u.Total != cents(75) {
		t.Fatalf("the credits' counter: %s, want 0.75", u.Total)
	}
}

func testCreditsAudit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	g, err := f.store.GrantCredits(a.ctx(), f.org.ID, gatehouse.USD(5))
	ok(t, err)
	a.want("credits.grant", "credit_grant", []string{g.ID}, map[string]any{"first": true})
	_, err = f.store.GrantCredits(a.ctx(), f.org.ID, -gatehouse.USD(6))
	wantCode(t, err, gatehouse.EINVALID)
	a.wantNone("a refused grant")
	g, err = f.store.GrantCredits(a.anonymous(), f.org.ID, gatehouse.USD(1)) // from the command line
	ok(t, err)
	a.want("credits.grant", "credit_grant", []string{g.ID}, map[string]any{"first": false})
}

// testConcurrentCredits: 50 requests of $0.10 at once, through keys of two
// workspaces, against $1.00 of credits: exactly 10 pass.
func testConcurrentCredits(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team")
	keys := []*gatehouse.Key{
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{}),
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID}),
	}
	_, err := f.store.GrantCredits(f.ctx, f.org.ID, gatehouse.USD(1))
	ok(t, err)
	budgets := [][]gatehouse.Budget{f.allBudgets(t, keys[0]), f.allBudgets(t, keys[1])}
	errs := race(50, func(i int) error {
		k := keys[i%2]
		r, err := f.reserve(k, cents(10), false, budgets[i%2])
		if err != nil {
			return err
		}
		return f.store.Settle(f.ctx, r.ID, generation(k, cents(10), false))
	})
	wantRaceOutcome(t, errs, 10, gatehouse.EPAYMENT)
	c, err := f.store.FindCredits(f.ctx, f.org.ID)
	ok(t, err)
	if c.Usage != gatehouse.USD(1) {
		t.Fatalf("credits' usage %s, want exactly 1", c.Usage)
	}
}
