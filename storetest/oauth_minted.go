package storetest

import (
	"slices"
	"testing"
	"time"

	"gatehouse"
)

// Keys minted through OAuth from a regular key's code spend their parent's
// power: what they spend counts against every key of their chain, whose
// limits, state and guardrail budgets all hold.

// mintedKey exchanges a fresh code of the regular key k for a new key.
func (f *fixture) mintedKey(t *testing.T, k *gatehouse.Key, limit *gatehouse.Money) *gatehouse.Key {
	t.Helper()
	minted := f.exchangedKey(t, f.creatorCode(t, k, gatehouse.AuthCodeCreate{Limit: limit}))
	if minted.ParentKeyHash == nil || *minted.ParentKeyHash != k.Hash {
		t.Fatalf("minted key's parent = %v, want %s", minted.ParentKeyHash, k.Hash)
	}
	return minted
}

// testOAuthMintedSpendCountsAgainstCreator: two keys minted from a $1 key
// each get $1, but together they cannot spend more than the $1: their
// spend and reservations count against the creator, whose usage shows it.
func testOAuthMintedSpendCountsAgainstCreator(t *testing.T, open Opener) {
	f := newFixture(t, open)
	creator := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "creator", Limit: new(cents(100))})
	a, b := f.mintedKey(t, creator, nil), f.mintedKey(t, creator, nil)
	if *a.Limit != cents(100) || *b.Limit != cents(100) {
		t.Fatalf("minted limits %s and %s, want $1 each", *a.Limit, *b.Limit)
	}
	held := f.mustReserve(t, a, cents(60), false, f.budgets(t, a))
	_, err := f.reserve(b, cents(50), false, f.budgets(t, b))
	wantCode(t, err, gatehouse.EPAYMENT) // a's reservation holds against the creator
	ok(t, f.store.Settle(f.ctx, held.ID, generation(a, cents(60), false)))
	_, err = f.reserve(b, cents(41), false, f.budgets(t, b))
	wantCode(t, err, gatehouse.EPAYMENT)
	f.spend(t, b, cents(40), false)
	wantUsage(t, "creator", f.readKey(t, creator.Hash).Usage.At(f.clock.Now()), cents(100), cents(100), cents(100), cents(100))
	wantUsage(t, "a", f.readKey(t, a.Hash).Usage.At(f.clock.Now()), cents(60), cents(60), cents(60), cents(60))
	wantUsage(t, "b", f.readKey(t, b.Hash).Usage.At(f.clock.Now()), cents(40), cents(40), cents(40), cents(40))
	// The creator itself has nothing left either.
	_, err = f.reserve(creator, cents(1), false, f.budgets(t, creator))
	wantCode(t, err, gatehouse.EPAYMENT)
}

// testOAuthMintedChain: a key minted from a minted key spends against the
// whole chain; chains nest at most gatehouse.MaxMintDepth deep.
func testOAuthMintedChain(t *testing.T, open Opener) {
	f := newFixture(t, open)
	root := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "root", Limit: new(cents(100))})
	chain := []*gatehouse.Key{root}
	for range gatehouse.MaxMintDepth {
		chain = append(chain, f.mintedKey(t, chain[len(chain)-1], nil))
	}
	leaf := chain[len(chain)-1]
	_, err := f.store.CreateAuthCode(f.ctx, f.org.ID, nil, gatehouse.AuthCodeCreate{
		CallbackURL: "https://app.example.com/cb", CreatorKeyHash: leaf.Hash})
	wantCode(t, err, gatehouse.EFORBIDDEN)
	f.spend(t, leaf, cents(30), false)
	for i, k := range chain {
		if got := f.readKey(t, k.Hash).Usage.Total; got != cents(30) {
			t.Errorf("chain[%d] total usage %s, want $0.30", i, got)
		}
	}
	// The root's spend leaves the leaf less, though the leaf spent nothing more.
	f.spend(t, root, cents(60), false)
	_, err = f.reserve(leaf, cents(11), false, f.budgets(t, leaf))
	wantCode(t, err, gatehouse.EPAYMENT)
	f.mustReserve(t, leaf, cents(10), false, f.budgets(t, leaf))
}

// testOAuthMintedDiesWithCreator: a minted key cannot spend once the key
// it was minted from is disabled, expired or deleted (EFORBIDDEN).
func testOAuthMintedDiesWithCreator(t *testing.T, open Opener) {
	for _, c := range []struct {
		name string
		kill func(f *fixture, k *gatehouse.Key) error
	}{
		{"disabled", (*fixture).disableKey},
		{"deleted", (*fixture).deleteKey},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := newFixture(t, open)
			creator := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "creator"})
			minted := f.mintedKey(t, creator, nil)
			grandchild := f.mintedKey(t, minted, nil)
			f.spend(t, grandchild, cents(1), false)
			ok(t, c.kill(f, creator))
			for _, k := range []*gatehouse.Key{minted, grandchild} {
				_, err := f.reserve(k, cents(1), false, f.budgets(t, k))
				wantCode(t, err, gatehouse.EFORBIDDEN)
				// Nor can it mint a key, which could not spend either.
				_, err = f.store.CreateAuthCode(f.ctx, f.org.ID, nil, gatehouse.AuthCodeCreate{
					CallbackURL: "https://app.example.com/cb", CreatorKeyHash: k.Hash})
				wantMessage(t, err, gatehouse.EFORBIDDEN, "this key was minted through OAuth from a key that is now disabled, expired or deleted")
			}
		})
	}
	t.Run("expired", func(t *testing.T) {
		f := newFixture(t, open)
		expires := f.clock.Now().Add(time.Hour)
		creator := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "creator", ExpiresAt: &expires})
		minted := f.mintedKey(t, creator, nil)
		f.clock.Set(expires.Add(-time.Second))
		f.mustReserve(t, minted, cents(1), false, f.budgets(t, minted))
		// The minted key expires no later than its creator, so it cannot
		// spend past the creator's expiry.
		if minted.ExpiresAt == nil || minted.ExpiresAt.After(expires) {
			t.Fatalf("minted key expires %v, after its creator's %v", minted.ExpiresAt, expires)
		}
	})
}

// testOAuthMintedSharesCreatorBudgets: a guardrail budget that counts per
// key counts what the keys minted from that key spend, and the creator's
// guardrails (lists too) keep governing them.
func testOAuthMintedSharesCreatorBudgets(t *testing.T, open Opener) {
	f := newFixture(t, open)
	creator := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "creator"})
	g := f.budgetGuardrail(t, "one dollar a day", cents(100), gatehouse.Daily, false)
	f.assignKey(t, g, creator)
	a, b := f.mintedKey(t, creator, nil), f.mintedKey(t, creator, nil)
	f.spend(t, a, cents(70), false)
	_, err := f.reserve(b, cents(31), false, f.budgets(t, b))
	wantCode(t, err, gatehouse.EFORBIDDEN)
	f.spend(t, b, cents(30), false)
	u, _ := f.budgetUsage(t, g.ID, gatehouse.KeySubject(creator.Hash))
	if u.Daily != cents(100) {
		t.Errorf("creator's budget spend %s, want $1", u.Daily)
	}
	// A guardrail assigned to the creator later governs its minted keys too.
	lists := f.newGuardrail(t, f.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("only mini"), AllowedModels: gatehouse.Val([]string{"openai/gpt-4o-mini"})}})
	f.assignKey(t, lists, creator)
	applied := f.mustGuardrails(t, a)
	if !slices.ContainsFunc(applied, func(x gatehouse.AppliedGuardrail) bool {
		return x.Guardrail.ID == lists.ID && x.Subject == gatehouse.KeySubject(creator.Hash)
	}) {
		t.Errorf("the minted key's guardrails %v lack the creator's new one", f.applied(t, a))
	}
	wantCode(t, gatehouse.CheckModel(applied, "openai/gpt-4o", "openai"), gatehouse.EFORBIDDEN)
}
