package keycache_test

import (
	"testing"
	"time"

	"gatehouse"
	"gatehouse/keycache"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// What a user is shown of a key (FindKey, and FindKeyByHash with
// WithFreshReads) comes from the same entries as authentication, but only
// from those whose usage has not changed since they were read.

// clock is a settable clock for the cache.
type clock struct{ t time.Time }

func (c *clock) now() time.Time          { return c.t }
func (c *clock) advance(d time.Duration) { c.t = c.t.Add(d) }

// withClock gives the fixture's cache a clock of the test's.
func (f *fixture) withClock() *clock {
	c := &clock{t: time.Now()}
	keycache.SetClock(f.cache, c.now)
	return c
}

// shown returns the fixture's key as FindKey answers it.
func (f *fixture) shown(t *testing.T, k *gatehouse.Key) *gatehouse.Key {
	t.Helper()
	got, err := f.cache.FindKey(f.ctx, f.org, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// newOrg creates another organization with a regular and a management key.
func (f *fixture) newOrg(t *testing.T) (org string, regular, mgmt *gatehouse.Key) {
	t.Helper()
	o, err := f.store.CreateOrganization(f.ctx, "other")
	if err != nil {
		t.Fatal(err)
	}
	if regular, _, err = f.store.CreateKey(f.ctx, o.ID, gatehouse.KeyCreate{Name: "k"}); err != nil {
		t.Fatal(err)
	}
	if mgmt, _, err = f.store.CreateManagementKey(f.ctx, o.ID, "m"); err != nil {
		t.Fatal(err)
	}
	return o.ID, regular, mgmt
}

// mint returns a key minted through OAuth from parent.
func (f *fixture) mint(t *testing.T, parent *gatehouse.Key) *gatehouse.Key {
	t.Helper()
	code, err := f.store.CreateAuthCode(f.ctx, parent.OrganizationID, nil, gatehouse.AuthCodeCreate{
		CallbackURL: "https://app.example.com/cb", CreatorKeyHash: parent.Hash})
	if err != nil {
		t.Fatal(err)
	}
	plaintext, _, err := f.store.ExchangeAuthCode(f.ctx, gatehouse.AuthCodeExchange{Code: code.ID})
	if err != nil {
		t.Fatal(err)
	}
	k, err := f.store.Store.FindKeyByHash(f.ctx, gatehouse.HashKey(plaintext))
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// spend reserves and settles amount for k through the cache, as metering does.
func (f *fixture) spend(t *testing.T, k *gatehouse.Key, amount gatehouse.Money) {
	t.Helper()
	r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: amount, ExpiresAt: time.Now().Add(time.Minute)}
	if err := f.cache.Reserve(f.ctx, r); err != nil {
		t.Fatal(err)
	}
	g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: k.OrganizationID, WorkspaceID: k.WorkspaceID,
		KeyHash: k.Hash, Model: "fake/echo", Provider: "fake", Cost: amount, Status: gatehouse.GenerationCompleted}
	if err := f.cache.Settle(f.ctx, r.ID, g); err != nil {
		t.Fatal(err)
	}
}

func TestFindKeyFromMemory(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	for range 3 {
		if got := f.shown(t, f.key); got.Hash != f.key.Hash {
			t.Fatalf("FindKey returned key %s, want %s", got.Hash, f.key.Hash)
		}
	}
	f.find(t, f.ctx) // authentication shares the entry
	if n := f.store.lookups.Load(); n != 1 {
		t.Errorf("%d lookups reached the store for 4 reads, want 1", n)
	}
}

// TestFindKeyAnswersAsTheStore: a key of another organization, a management
// key and an unknown key are ENOTFOUND with the store's very error, whether
// or not the key is cached; unknown keys are not cached.
func TestFindKeyAnswersAsTheStore(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	_, otherRegular, otherMgmt := f.newOrg(t)
	mgmt, _, err := f.store.CreateManagementKey(f.ctx, f.org, "m")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, hash string }{
		{"another organization's key", otherRegular.Hash},
		{"another organization's management key", otherMgmt.Hash},
		{"a management key of the organization", mgmt.Hash},
		{"an unknown key", gatehouse.HashKey("nope")},
	} {
		_, want := f.store.Store.FindKey(f.ctx, f.org, c.hash)
		if gatehouse.ErrorCode(want) != gatehouse.ENOTFOUND {
			t.Fatalf("%s: the store answers %v, want ENOTFOUND", c.name, want)
		}
		for _, state := range []string{"uncached", "cached"} {
			_, got := f.cache.FindKey(f.ctx, f.org, c.hash)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s, %s: FindKey error differs from the store's (-store +cache):\n%s", c.name, state, diff)
			}
			_, _ = f.cache.FindKeyByHash(f.ctx, c.hash) // authentication caches the known ones
		}
	}
	if n := f.cache.Len(); n != 3 {
		t.Errorf("the cache holds %d keys, want the 3 known ones (no unknown key)", n)
	}
}

// TestUsageChangesReachShownReads: usage recorded through the cache is shown
// at once; authentication goes on using its entry, which it reads no usage
// from.
func TestUsageChangesReachShownReads(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	f.shown(t, f.key)
	if _, err := f.cache.RecordUsage(f.ctx, f.key.Hash, gatehouse.USD(1), false); err != nil {
		t.Fatal(err)
	}
	f.find(t, f.ctx)
	if n := f.store.lookups.Load(); n != 1 {
		t.Errorf("authentication read the store again after a usage change (%d lookups, want 1)", n)
	}
	for _, read := range []func() *gatehouse.Key{
		func() *gatehouse.Key { return f.shown(t, f.key) },
		func() *gatehouse.Key { return f.find(t, gatehouse.WithFreshReads(f.ctx)) },
	} {
		if got := read().Usage.Total; got != gatehouse.USD(1) {
			t.Errorf("usage shown %s after recording $1, want $1", got)
		}
	}
	if n := f.store.lookups.Load(); n != 2 {
		t.Errorf("%d lookups, want 2: one read again after the change, then served from memory", n)
	}
}

// TestSettleChangesTheChain: a settle through the cache changes the usage
// of the key and of every key it was minted from, cached or not.
func TestSettleChangesTheChain(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	chain := []*gatehouse.Key{f.key}
	for range 2 {
		chain = append(chain, f.mint(t, chain[len(chain)-1]))
	}
	for _, k := range chain {
		f.shown(t, k)
	}
	leaf := chain[2]
	f.spend(t, leaf, gatehouse.USD(1))
	f.cache.Invalidate(leaf.Hash)     // the settle must find the chain in the store
	f.cache.Invalidate(chain[1].Hash) // from the middle too
	f.spend(t, leaf, gatehouse.USD(2))
	for i, k := range chain {
		if got := f.shown(t, k).Usage.Total; got != gatehouse.USD(3) {
			t.Errorf("chain[%d] shows usage %s after $3 was spent by the leaf, want $3", i, got)
		}
	}
}

// TestUsageChangedFromOutside: a writer of usage that bypasses the cache
// (a batcher of settles) calls UsageChanged after its write.
func TestUsageChangedFromOutside(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	f.shown(t, f.key)
	if _, err := f.store.Store.RecordUsage(f.ctx, f.key.Hash, gatehouse.USD(1), false); err != nil {
		t.Fatal(err)
	}
	if got := f.shown(t, f.key).Usage.Total; got != 0 {
		t.Fatalf("a write that bypassed the cache was seen at once (usage %s): the test shows nothing", got)
	}
	f.cache.UsageChanged(f.key.Hash)
	if got := f.shown(t, f.key).Usage.Total; got != gatehouse.USD(1) {
		t.Errorf("usage shown %s after UsageChanged, want $1", got)
	}
	if _, err := f.store.Store.RecordUsage(f.ctx, f.key.Hash, gatehouse.USD(1), false); err != nil {
		t.Fatal(err)
	}
	f.cache.Invalidate(f.key.Hash)
	if got := f.shown(t, f.key).Usage.Total; got != gatehouse.USD(2) {
		t.Errorf("usage shown %s after Invalidate, want $2", got)
	}
}

// TestShownReadsWithAFeed: with other writers, whose usage changes are not
// announced, a key is shown from an entry read at most MaxStaleness ago,
// whether or not the feed is live; authentication keeps its entry while
// the feed is live.
func TestShownReadsWithAFeed(t *testing.T) {
	f := newFixture(t, keycache.Options{Feed: true, MaxStaleness: time.Second})
	clk := f.withClock()
	f.cache.Heartbeat()
	f.shown(t, f.key)
	clk.advance(time.Second)
	f.shown(t, f.key) // read a second ago: still shown from memory
	f.cache.Heartbeat()
	f.find(t, f.ctx)
	if n := f.store.lookups.Load(); n != 1 {
		t.Fatalf("%d lookups, want 1", n)
	}
	clk.advance(time.Millisecond)
	f.shown(t, f.key) // read longer ago than MaxStaleness: read again
	if n := f.store.lookups.Load(); n != 2 {
		t.Fatalf("%d lookups after the entry aged past MaxStaleness, want 2", n)
	}
	clk.advance(500 * time.Millisecond)
	f.shown(t, f.key)
	if n := f.store.lookups.Load(); n != 2 {
		t.Errorf("%d lookups: an entry read 0.5 s ago was not shown while the feed is silent, want 2", n)
	}
	clk.advance(501 * time.Millisecond)
	f.find(t, f.ctx)
	if n := f.store.lookups.Load(); n != 3 {
		t.Errorf("%d lookups: authentication used the cache of a silent feed, want 3", n)
	}
}

// TestDeleteWorkspaceForgetsItsKeys: a workspace's deletion takes its keys
// and guardrails with it; the cache forgets them.
func TestDeleteWorkspaceForgetsItsKeys(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	w, err := f.store.CreateWorkspace(f.ctx, f.org, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := f.store.CreateKey(f.ctx, f.org, gatehouse.KeyCreate{Name: "k", WorkspaceID: w.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.store.UpdateKey(f.ctx, f.org, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	g := f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{WorkspaceID: w.ID})
	f.shown(t, k)
	f.findGuardrail(t, g.ID)
	if err := f.cache.DeleteWorkspace(f.ctx, f.org, "team", false); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cache.FindKey(f.ctx, f.org, k.Hash); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("key of the deleted workspace: err = %v, want ENOTFOUND", err)
	}
	if _, err := f.cache.FindGuardrail(f.ctx, f.org, g.ID); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("guardrail of the deleted workspace: err = %v, want ENOTFOUND", err)
	}
}

// TestSettleWithASilentFeed: the chain of a settled key comes from cached
// entries however old (a key's parent never changes), so a settle costs no
// read while the feed is silent.
func TestSettleWithASilentFeed(t *testing.T) {
	f := newFixture(t, keycache.Options{Feed: true, MaxStaleness: time.Second})
	clk := f.withClock()
	f.cache.Heartbeat()
	minted := f.mint(t, f.key)
	f.shown(t, f.key)
	f.shown(t, minted)
	clk.advance(2 * time.Second) // the feed falls silent
	before := f.store.lookups.Load()
	f.spend(t, minted, gatehouse.USD(1))
	if n := f.store.lookups.Load() - before; n != 0 {
		t.Errorf("the settle read %d keys from the store, want 0", n)
	}
	for _, k := range []*gatehouse.Key{f.key, minted} {
		if got := f.shown(t, k).Usage.Total; got != gatehouse.USD(1) {
			t.Errorf("key %s shows usage %s, want $1", k.Name, got)
		}
	}
}
