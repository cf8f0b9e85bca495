package storetest

import (
	"slices"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// testUsagePlane checks the metering of the data plane: reservations held
// against key limits and guardrail budgets, their settlement into the usage
// ledger and the period counters, and which guardrails govern a key.
func testUsagePlane(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"KeyLimit", testPlaneKeyLimit},
		{"KeyLimitBYOK", testPlaneKeyLimitBYOK},
		{"ReservationsHold", testPlaneReservationsHold},
		{"Settle", testPlaneSettle},
		{"SettleIsOneTransaction", testPlaneSettleAtomic},
		{"SettleGone", testPlaneSettleGone},
		{"SettleAfterKeyDeleted", testPlaneSettleAfterKeyDeleted},
		{"GuardrailsForKey", testPlaneGuardrailsForKey},
		{"GuardrailsForKeyFollowWrites", testPlaneGuardrailsFollowWrites},
		{"BudgetSubjects", testPlaneBudgetSubjects},
		{"BudgetBYOK", testPlaneBudgetBYOK},
		{"LedgerEqualsCounters", testPlaneLedgerEqualsCounters},
		{"ConcurrentKeyLimit", testPlaneConcurrentKeyLimit},
		{"ConcurrentMemberBudget", testPlaneConcurrentMemberBudget},
		{"ConcurrentKeyLimitBatched", batched(testPlaneConcurrentKeyLimit)},
		{"ConcurrentMemberBudgetBatched", batched(testPlaneConcurrentMemberBudget)},
	})
}

// cents returns n hundredths of a dollar.
func cents(n int64) gatehouse.Money { return gatehouse.Money(n * gatehouse.NanosPerUSD / 100) }

// reserve holds amount for k against budgets, for a minute.
func (f *fixture) reserve(k *gatehouse.Key, amount gatehouse.Money, byok bool, budgets []gatehouse.Budget) (*gatehouse.Reservation, error) {
	r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: amount, BYOK: byok, Budgets: budgets,
		ExpiresAt: f.clock.Now().Add(time.Minute)}
	return r, f.store.Reserve(f.ctx, r)
}

// mustReserve is reserve that fails the test on error.
func (f *fixture) mustReserve(t *testing.T, k *gatehouse.Key, amount gatehouse.Money, byok bool, budgets []gatehouse.Budget) *gatehouse.Reservation {
	t.Helper()
	r, err := f.reserve(k, amount, byok, budgets)
	if err != nil {
		t.Fatalf("Reserve(%s): %v", amount, err)
	}
	return r
}

// generation returns a ledger entry of a request of k.
func generation(k *gatehouse.Key, cost gatehouse.Money, byok bool) *gatehouse.Generation {
	return &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: k.OrganizationID,
		WorkspaceID: k.WorkspaceID, KeyHash: k.Hash, Model: "openai/gpt-4o-mini", Provider: "openai",
		PromptTokens: 10, CompletionTokens: 20, Cost: cost, BYOK: byok, Status: "completed", LatencyMS: 5, GenerationMS: 4}
}

// spend reserves cost for k against the key's budgets and settles it.
func (f *fixture) spend(t *testing.T, k *gatehouse.Key, cost gatehouse.Money, byok bool) *gatehouse.Generation {
	t.Helper()
	r := f.mustReserve(t, k, cost, byok, f.budgets(t, k))
	g := generation(k, cost, byok)
	ok(t, f.store.Settle(f.ctx, r.ID, g))
	return g
}

// budgets returns the budgets that govern k.
func (f *fixture) budgets(t *testing.T, k *gatehouse.Key) []gatehouse.Budget {
	t.Helper()
	gs, err := f.store.GuardrailsForKey(f.ctx, k)
	ok(t, err)
	return gatehouse.Budgets(gs)
}

// budgetGuardrail creates a guardrail of the default workspace with a budget.
func (f *fixture) budgetGuardrail(t *testing.T, name string, limit gatehouse.Money, every gatehouse.Interval, byok bool) *gatehouse.Guardrail {
	t.Helper()
	return f.newGuardrail(t, f.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val(name), LimitUSD: gatehouse.Val(limit), ResetInterval: gatehouse.Val(every),
		IncludeBYOKInBudgets: gatehouse.Val(byok)}})
}

// configureDefault materializes the default guardrail of a workspace with a budget.
func (f *fixture) configureDefault(t *testing.T, workspaceID string, limit gatehouse.Money, every gatehouse.Interval) *gatehouse.Guardrail {
	t.Helper()
	g, err := f.store.UpdateGuardrail(f.ctx, f.org.ID, gatehouse.DefaultGuardrailID(workspaceID), gatehouse.GuardrailUpdate{
		LimitUSD: gatehouse.Val(limit), ResetInterval: gatehouse.Val(every)})
	ok(t, err)
	return g
}

func (f *fixture) assignKey(t *testing.T, g *gatehouse.Guardrail, k *gatehouse.Key) {
	t.Helper()
	_, err := f.store.AssignKeys(f.ctx, f.org.ID, g.ID, []string{k.Hash}, nil)
	ok(t, err)
}

func (f *fixture) assignMember(t *testing.T, g *gatehouse.Guardrail, m *gatehouse.Member) {
	t.Helper()
	_, err := f.store.AssignMembers(f.ctx, f.org.ID, g.ID, []string{m.ID}, nil)
	ok(t, err)
}

// budgetUsage reads a budget's counters now.
func (f *fixture) budgetUsage(t *testing.T, guardrailID, subject string) (gatehouse.Usage, gatehouse.Usage) {
	t.Helper()
	u, b, err := f.store.BudgetUsage(f.ctx, guardrailID, subject)
	ok(t, err)
	return u, b
}

// wantMeta fails the test unless err carries want under key.
func wantMeta(t *testing.T, err error, key string, want any) {
	t.Helper()
	e, isErr := err.(*gatehouse.Error)
	if !isErr {
		t.Fatalf("error %v is not a *gatehouse.Error", err)
	}
	if got := e.Metadata[key]; got != want {
		t.Errorf("metadata[%s] = %v (%T), want %v (%T)", key, got, got, want, want)
	}
}

func testPlaneKeyLimit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(1)), LimitReset: gatehouse.Daily})
	f.spend(t, k, cents(30), false)
	f.mustReserve(t, k, cents(50), false, nil)
	_, err := f.reserve(k, cents(21), false, nil)
	wantMessage(t, err, gatehouse.EPAYMENT, "Key limit exceeded")
	wantMeta(t, err, "limit_remaining", cents(20))
	wantMeta(t, err, "limit", gatehouse.USD(1))
	wantMeta(t, err, "request_max_cost", cents(21))
	f.mustReserve(t, k, cents(20), false, nil) // exactly what remains
	_, err = f.reserve(k, 1, false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)
	wantMeta(t, err, "limit_remaining", gatehouse.Money(0))
	// A free request needs nothing of the limit.
	f.mustReserve(t, k, 0, false, nil)

	_, err = f.reserve(&gatehouse.Key{Hash: gatehouse.HashKey("unknown")}, 1, false, nil)
	wantCode(t, err, gatehouse.ENOTFOUND)

	// A new day: the daily limit is whole again, but yesterday's holds,
	// never settled, count until they are charged, and expired ones are
	// charged at what they reserved: a crash cannot make spending vanish.
	f.clock.Set(midnight(2028, 2, 24))
	_, err = f.reserve(k, cents(31), false, nil)
	wantMeta(t, err, "limit_remaining", cents(30))
	n, err := f.store.ChargeOpen(f.ctx, f.clock.Now())
	ok(t, err)
	if n != 3 {
		t.Errorf("ChargeOpen charged %d reservations, want 3", n)
	}
	wantUsage(t, "usage", f.readKey(t, k.Hash).Usage.At(f.clock.Now()), cents(100), cents(70), cents(100), cents(100))
	f.mustReserve(t, k, cents(30), false, nil)
}

func testPlaneKeyLimitBYOK(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(1))})
	// Without include_byok_in_limit, BYOK spending counts neither held nor recorded.
	f.spend(t, k, gatehouse.USD(5), true)
	held := f.mustReserve(t, k, gatehouse.USD(7), true, nil)
	r := f.mustReserve(t, k, gatehouse.USD(1), false, nil)
	ok(t, f.store.Release(f.ctx, r.ID))

	_, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{
		IncludeBYOKInLimit: gatehouse.Val(true), Limit: gatehouse.Val(gatehouse.USD(15))})
	ok(t, err)
	// Now $5 recorded and $7 held count: $3 remain, for BYOK and other requests alike.
	_, err = f.reserve(k, cents(301), false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)
	wantMeta(t, err, "limit_remaining", gatehouse.USD(3))
	_, err = f.reserve(k, cents(301), true, nil)
	wantCode(t, err, gatehouse.EPAYMENT)
	f.mustReserve(t, k, gatehouse.USD(2), true, nil)
	f.mustReserve(t, k, gatehouse.USD(1), false, nil)
	_, err = f.reserve(k, 1, false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)

	// Released holds stop counting; without the flag again, only the $1 held counts.
	ok(t, f.store.Release(f.ctx, held.ID))
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{IncludeBYOKInLimit: gatehouse.Val(false)})
	ok(t, err)
	f.mustReserve(t, k, gatehouse.USD(14), false, nil)
	_, err = f.reserve(k, 1, false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)
	f.mustReserve(t, k, gatehouse.USD(100), true, nil)
}

func testPlaneReservationsHold(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(1))})
	a := f.mustReserve(t, k, cents(60), false, nil)
	_, err := f.reserve(k, cents(60), false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)
	wantMeta(t, err, "limit_remaining", cents(40))

	ok(t, f.store.Release(f.ctx, a.ID)) // released: no longer counts
	b := f.mustReserve(t, k, cents(60), false, nil)
	_, err = f.reserve(k, cents(60), false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)

	// Past its expiry a hold still counts until it is charged; then it is
	// charged at what it reserved, as a partial generation, and its late
	// settle charges nothing more. One not yet expired is left alone.
	f.clock.Set(b.ExpiresAt.Add(time.Millisecond))
	_, err = f.reserve(k, cents(41), false, nil)
	wantMeta(t, err, "limit_remaining", cents(40))
	c := f.mustReserve(t, k, cents(40), false, nil)
	n, err := f.store.ChargeOpen(f.ctx, f.clock.Now())
	ok(t, err)
	if n != 1 {
		t.Errorf("ChargeOpen charged %d reservations, want 1", n)
	}
	lost := generation(k, cents(10), false)
	wantCode(t, f.store.Settle(f.ctx, b.ID, lost), gatehouse.ENOTFOUND)
	_, err = f.store.FindGeneration(f.ctx, f.org.ID, lost.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantUsage(t, "usage", f.readKey(t, k.Hash).Usage.At(f.clock.Now()), cents(60), cents(60), cents(60), cents(60))

	// Settling replaces the hold with the exact cost.
	ok(t, f.store.Settle(f.ctx, c.ID, generation(k, cents(15), false)))
	_, err = f.reserve(k, cents(26), false, nil)
	wantCode(t, err, gatehouse.EPAYMENT)
	wantMeta(t, err, "limit_remaining", cents(25))
	f.mustReserve(t, k, cents(25), false, nil)
	wantUsage(t, "usage", f.readKey(t, k.Hash).Usage.At(f.clock.Now()), cents(75), cents(75), cents(75), cents(75))
}

func testPlaneSettle(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(5)), LimitReset: gatehouse.Weekly})
	own := f.budgetGuardrail(t, "own", gatehouse.USD(3), gatehouse.Weekly, false)
	f.assignKey(t, own, k)
	def := f.configureDefault(t, k.WorkspaceID, gatehouse.USD(4), gatehouse.Monthly)
	budgets := f.budgets(t, k)
	if len(budgets) != 2 {
		t.Fatalf("budgets = %+v, want the key's and the default guardrail's", budgets)
	}
	r := f.mustReserve(t, k, gatehouse.USD(1), false, budgets)
	g := generation(k, gatehouse.Money(250_000_001), false)
	g.UpstreamID, g.FinishReason, g.SessionID = new("chatcmpl-1"), new("stop"), new("session-1")
	g.ExternalUser, g.Streamed, g.Status = new("end-user"), true, "partial"
	ok(t, f.store.Settle(f.ctx, r.ID, g))
	if !g.CreatedAt.Equal(f.clock.Now()) {
		t.Errorf("CreatedAt = %v, want the transaction's time %v", g.CreatedAt, f.clock.Now())
	}
	found, err := f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	wantEqual(t, "FindGeneration", g, found)

	cost := g.Cost
	now := f.clock.Now()
	key := f.readKey(t, k.Hash)
	wantUsage(t, "key usage", key.Usage.At(now), cost, cost, cost, cost)
	wantUsage(t, "key byok", key.BYOKUsage.At(now), 0, 0, 0, 0)
	if rem := key.LimitRemaining(now); rem == nil || *rem != gatehouse.USD(5)-cost {
		t.Errorf("LimitRemaining = %v, want %s", rem, gatehouse.USD(5)-cost)
	}
	for _, id := range []string{own.ID, def.ID} {
		u, b := f.budgetUsage(t, id, gatehouse.KeySubject(k.Hash))
		wantUsage(t, "budget "+id, u, cost, cost, cost, cost)
		wantUsage(t, "budget byok "+id, b, 0, 0, 0, 0)
	}
	u, _ := f.budgetUsage(t, own.ID, gatehouse.MemberSubject("nobody"))
	wantUsage(t, "another subject", u, 0, 0, 0, 0)

	// The ledger belongs to the organization.
	other := f.newOrg(t, "Other")
	_, err = f.store.FindGeneration(f.ctx, other.ID, g.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindGeneration(f.ctx, f.org.ID, "gen-unknown")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

// testPlaneSettleAtomic makes a Settle fail at the ledger insert (a
// duplicate generation id) and checks that neither the counters nor the
// reservation changed: one transaction.
func testPlaneSettleAtomic(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Limit: new(gatehouse.USD(1))})
	gr := f.budgetGuardrail(t, "own", gatehouse.USD(1), gatehouse.Daily, false)
	f.assignKey(t, gr, k)
	first := f.spend(t, k, cents(10), false)
	r := f.mustReserve(t, k, cents(50), false, f.budgets(t, k))
	dup := generation(k, cents(50), false)
	dup.ID = first.ID
	if err := f.store.Settle(f.ctx, r.ID, dup); err == nil {
		t.Fatal("Settle with a duplicate generation id succeeded")
	}
	now := f.clock.Now()
	wantUsage(t, "key usage", f.readKey(t, k.Hash).Usage.At(now), cents(10), cents(10), cents(10), cents(10))
	u, _ := f.budgetUsage(t, gr.ID, gatehouse.KeySubject(k.Hash))
	wantUsage(t, "budget usage", u, cents(10), cents(10), cents(10), cents(10))
	// The reservation still holds, and settles normally.
	_, err := f.reserve(k, cents(41), false, nil)
	wantMeta(t, err, "limit_remaining", cents(40))
	ok(t, f.store.Settle(f.ctx, r.ID, generation(k, cents(50), false)))
	wantUsage(t, "key usage", f.readKey(t, k.Hash).Usage.At(now), cents(60), cents(60), cents(60), cents(60))
}

func testPlaneSettleGone(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	gr := f.budgetGuardrail(t, "own", gatehouse.USD(1), gatehouse.Daily, false)
	f.assignKey(t, gr, k)
	f.spend(t, k, cents(5), false)
	released := f.mustReserve(t, k, cents(10), false, f.budgets(t, k))
	ok(t, f.store.Release(f.ctx, released.ID))
	settled := f.mustReserve(t, k, cents(10), false, f.budgets(t, k))
	ok(t, f.store.Settle(f.ctx, settled.ID, generation(k, cents(10), false)))
	for _, id := range []string{uuid.NewString(), released.ID, settled.ID} {
		g := generation(k, cents(20), false)
		wantCode(t, f.store.Settle(f.ctx, id, g), gatehouse.ENOTFOUND)
		_, err := f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	now := f.clock.Now()
	wantUsage(t, "key usage", f.readKey(t, k.Hash).Usage.At(now), cents(15), cents(15), cents(15), cents(15))
	u, _ := f.budgetUsage(t, gr.ID, gatehouse.KeySubject(k.Hash))
	wantUsage(t, "budget usage", u, cents(15), cents(15), cents(15), cents(15))
}

// testPlaneSettleAfterKeyDeleted: a call still running when its key is
// deleted (a stream, say) is charged when it settles: its ledger entry is
// written, and its cost reaches the key it was minted from, its guardrail
// budget and its workspace's budget; only the deleted key's own counters,
// gone with it, are not charged. Settling it again charges nothing.
func testPlaneSettleAfterKeyDeleted(t *testing.T, open Opener) {
	f := newFixture(t, open)
	parent := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "parent", Limit: new(cents(100))})
	minted := f.mintedKey(t, parent, nil)
	gr := f.budgetGuardrail(t, "own", gatehouse.USD(1), gatehouse.Daily, false)
	f.assignKey(t, gr, minted)
	ws := f.setBudget(t, minted.WorkspaceID, gatehouse.Monthly, gatehouse.USD(1))
	r := f.mustReserve(t, minted, cents(50), false, f.allBudgets(t, minted))
	ok(t, f.deleteKey(minted))
	g := generation(minted, cents(30), false)
	ok(t, f.store.Settle(f.ctx, r.ID, g))
	stored, err := f.store.FindGeneration(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	if stored.Cost != cents(30) || stored.KeyHash != minted.Hash {
		t.Errorf("ledger entry %+v, want $0.30 of the deleted key", stored)
	}
	now := f.clock.Now()
	wantUsage(t, "parent usage", f.readKey(t, parent.Hash).Usage.At(now), cents(30), cents(30), cents(30), cents(30))
	u, _ := f.budgetUsage(t, gr.ID, gatehouse.KeySubject(minted.Hash))
	wantUsage(t, "guardrail budget usage", u, cents(30), cents(30), cents(30), cents(30))
	u, _ = f.budgetUsage(t, ws.ID, gatehouse.WorkspaceSubject(minted.WorkspaceID))
	wantUsage(t, "workspace budget usage", u, cents(30), cents(30), cents(30), cents(30))
	wantCode(t, f.store.Settle(f.ctx, r.ID, generation(minted, cents(30), false)), gatehouse.ENOTFOUND)
	// What the parent may still spend counts the charge.
	_, err = f.reserve(parent, cents(71), false, f.budgets(t, parent))
	wantMeta(t, err, "limit_remaining", cents(70))
}

// applied renders the guardrails of a key as "name subject" lines.
func (f *fixture) applied(t *testing.T, k *gatehouse.Key) []string {
	t.Helper()
	gs, err := f.store.GuardrailsForKey(f.ctx, k)
	ok(t, err)
	var out []string
	for _, a := range gs {
		out = append(out, a.Guardrail.Name+" "+a.Subject)
	}
	return out
}

func testPlaneGuardrailsForKey(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m1, m2 := f.newMember(t, f.org.ID, "m1@example.com"), f.newMember(t, f.org.ID, "m2@example.com")
	gKey := f.newGuardrail(t, f.org.ID, guardrail("key guardrail"))
	gMember := f.newGuardrail(t, f.org.ID, guardrail("member guardrail"))
	f.assignMember(t, gMember, m1)
	kNone := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	kPlain := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m2.ID})
	kOwn := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m1.ID})
	f.assignKey(t, gKey, kOwn)
	kMember := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m1.ID})
	ws := f.newWorkspace(t, f.org.ID, "elsewhere")
	kElsewhere := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	key, member := gatehouse.KeySubject, gatehouse.MemberSubject
	check := func(what string, k *gatehouse.Key, want ...string) {
		t.Helper()
		if got := f.applied(t, k); !slices.Equal(got, want) {
			t.Errorf("%s: guardrails %q, want %q", what, got, want)
		}
	}
	check("no guardrail", kNone)
	check("creator without guardrail", kPlain)
	check("own guardrail, not the creator's", kOwn, "key guardrail "+key(kOwn.Hash))
	check("creator's guardrail", kMember, "member guardrail "+member(m1.ID))

	def := f.configureDefault(t, kNone.WorkspaceID, gatehouse.USD(10), gatehouse.Monthly)
	check("default only", kNone, def.Name+" "+key(kNone.Hash))
	check("own and default", kOwn, "key guardrail "+key(kOwn.Hash), def.Name+" "+key(kOwn.Hash))
	check("creator's and default", kMember, "member guardrail "+member(m1.ID), def.Name+" "+key(kMember.Hash))
	check("another workspace's default does not apply", kElsewhere)

	// The default guardrail assigned directly applies once.
	f.assignKey(t, def, kPlain)
	check("assigned the default", kPlain, def.Name+" "+key(kPlain.Hash))
	f.assignMember(t, def, m2)
	kM2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m2.ID})
	check("creator assigned the default", kM2, def.Name+" "+member(m2.ID))
	check("own default beats the creator's", kPlain, def.Name+" "+key(kPlain.Hash))
	if b := gatehouse.Budgets(f.mustGuardrails(t, kM2)); len(b) != 1 || b[0].Subject != member(m2.ID) || b[0].Limit != gatehouse.USD(10) {
		t.Errorf("budgets of kM2 = %+v", b)
	}
}

func (f *fixture) mustGuardrails(t *testing.T, k *gatehouse.Key) []gatehouse.AppliedGuardrail {
	t.Helper()
	gs, err := f.store.GuardrailsForKey(f.ctx, k)
	ok(t, err)
	return gs
}

func testPlaneBudgetSubjects(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "m@example.com")
	gM := f.budgetGuardrail(t, "member budget", gatehouse.USD(1), gatehouse.Daily, false)
	gK := f.budgetGuardrail(t, "key budget", gatehouse.USD(1), gatehouse.Daily, false)
	f.assignMember(t, gM, m)
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID})
	k3 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID})
	k4 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID})
	f.assignKey(t, gK, k3)
	f.assignKey(t, gK, k4)

	// Two keys of one member share the member's budget.
	f.spend(t, k1, cents(60), false)
	_, err := f.reserve(k2, cents(50), false, f.budgets(t, k2))
	wantMessage(t, err, gatehouse.EFORBIDDEN, "Request blocked")
	wantMeta(t, err, "guardrail_id", gM.ID)
	wantMeta(t, err, "rule", "limit_usd")
	wantMeta(t, err, "remaining", cents(40))
	f.spend(t, k2, cents(40), false)
	u, _ := f.budgetUsage(t, gM.ID, gatehouse.MemberSubject(m.ID))
	wantUsage(t, "member budget", u, gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))

	// Keys assigned a guardrail each have a budget of their own.
	f.spend(t, k3, gatehouse.USD(1), false)
	f.spend(t, k4, gatehouse.USD(1), false)
	_, err = f.reserve(k3, 1, false, f.budgets(t, k3))
	wantCode(t, err, gatehouse.EFORBIDDEN)
	wantMeta(t, err, "guardrail_id", gK.ID)
	u, _ = f.budgetUsage(t, gK.ID, gatehouse.KeySubject(k3.Hash))
	wantUsage(t, "k3 budget", u, gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))
	u, _ = f.budgetUsage(t, gM.ID, gatehouse.MemberSubject(m.ID))
	wantUsage(t, "member budget untouched by k3", u, gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))

	// The next day the daily budgets are whole again.
	f.clock.Set(midnight(2028, 2, 24))
	f.spend(t, k2, gatehouse.USD(1), false)
	f.spend(t, k3, gatehouse.USD(1), false)
	u, _ = f.budgetUsage(t, gM.ID, gatehouse.MemberSubject(m.ID))
	wantUsage(t, "member budget next day", u, gatehouse.USD(2), gatehouse.USD(1), gatehouse.USD(2), gatehouse.USD(2))
}

func testPlaneBudgetBYOK(t *testing.T, open Opener) {
	f := newFixture(t, open)
	gEx := f.budgetGuardrail(t, "without byok", gatehouse.USD(1), gatehouse.Weekly, false)
	gIn := f.budgetGuardrail(t, "with byok", gatehouse.USD(1), gatehouse.Weekly, true)
	kEx, kIn := f.newKey(t, f.org.ID, gatehouse.KeyCreate{}), f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	f.assignKey(t, gEx, kEx)
	f.assignKey(t, gIn, kIn)

	f.spend(t, kEx, gatehouse.USD(5), true)
	f.mustReserve(t, kEx, gatehouse.USD(9), true, f.budgets(t, kEx))
	f.spend(t, kEx, gatehouse.USD(1), false)
	u, b := f.budgetUsage(t, gEx.ID, gatehouse.KeySubject(kEx.Hash))
	wantUsage(t, "usage", u, gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1), gatehouse.USD(1))
	wantUsage(t, "byok", b, gatehouse.USD(5), gatehouse.USD(5), gatehouse.USD(5), gatehouse.USD(5))

	f.spend(t, kIn, cents(60), true)
	_, err := f.reserve(kIn, cents(50), true, f.budgets(t, kIn))
	wantCode(t, err, gatehouse.EFORBIDDEN)
	wantMeta(t, err, "remaining", cents(40))
	_, err = f.reserve(kIn, cents(50), false, f.budgets(t, kIn))
	wantCode(t, err, gatehouse.EFORBIDDEN)
	f.mustReserve(t, kIn, cents(30), true, f.budgets(t, kIn))
	_, err = f.reserve(kIn, cents(11), false, f.budgets(t, kIn))
	wantMeta(t, err, "remaining", cents(10))
}

// testPlaneGuardrailsFollowWrites: the guardrails that govern a key, asked
// on every request (and remembered between writes), follow every change:
// an assignment, a guardrail's new budget, its deletion.
func testPlaneGuardrailsFollowWrites(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	if b := f.budgets(t, k); len(b) != 0 {
		t.Fatalf("budgets before any assignment: %v", b)
	}
	g := f.budgetGuardrail(t, "team", gatehouse.USD(1), gatehouse.Daily, false)
	f.assignKey(t, g, k)
	if b := f.budgets(t, k); len(b) != 1 || b[0].Limit != gatehouse.USD(1) {
		t.Fatalf("budgets after the assignment: %v", b)
	}
	_, err := f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{LimitUSD: gatehouse.Val(gatehouse.USD(2))})
	ok(t, err)
	if b := f.budgets(t, k); len(b) != 1 || b[0].Limit != gatehouse.USD(2) {
		t.Fatalf("budgets after the limit changed: %v", b)
	}
	ok(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, g.ID))
	if b := f.budgets(t, k); len(b) != 0 {
		t.Fatalf("budgets after the guardrail was deleted: %v", b)
	}
}
