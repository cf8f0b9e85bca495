package keycache_test

import (
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/keycache"

	"github.com/google/go-cmp/cmp"
	"github.com/google/uuid"
)

// newGuardrail creates a guardrail in the store, behind the cache's back.
func (f *fixture) newGuardrail(t *testing.T, org string, c gatehouse.GuardrailCreate) *gatehouse.Guardrail {
	t.Helper()
	if !c.Name.Set {
		c.Name = gatehouse.Val("g-" + uuid.NewString())
	}
	g, err := f.store.Store.CreateGuardrail(f.ctx, org, c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// findGuardrail returns a guardrail of the fixture's organization through
// the cache.
func (f *fixture) findGuardrail(t *testing.T, id string) *gatehouse.Guardrail {
	t.Helper()
	g, err := f.cache.FindGuardrail(f.ctx, f.org, id)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestGuardrailsFromMemory(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	g := f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{})
	for range 3 {
		if got := f.findGuardrail(t, g.ID); got.ID != g.ID {
			t.Fatalf("FindGuardrail returned %s, want %s", got.ID, g.ID)
		}
	}
	if n := f.store.guardrailLookups.Load(); n != 1 {
		t.Errorf("%d lookups reached the store for 3 finds, want 1", n)
	}
}

// TestGuardrailAnswersAsTheStore: another organization's guardrail, an
// unknown id and an id that is no UUID are ENOTFOUND with the store's very
// error, cached or not; unknown ids are not cached.
func TestGuardrailAnswersAsTheStore(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	other, _, _ := f.newOrg(t)
	theirs := f.newGuardrail(t, other, gatehouse.GuardrailCreate{})
	for _, c := range []struct{ name, id string }{
		{"another organization's guardrail", theirs.ID},
		{"an unknown guardrail", uuid.NewString()},
		{"an id that is no UUID", "nope"},
	} {
		_, want := f.store.Store.FindGuardrail(f.ctx, f.org, c.id)
		if gatehouse.ErrorCode(want) != gatehouse.ENOTFOUND {
			t.Fatalf("%s: the store answers %v, want ENOTFOUND", c.name, want)
		}
		for _, state := range []string{"uncached", "cached"} {
			_, got := f.cache.FindGuardrail(f.ctx, f.org, c.id)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("%s, %s: FindGuardrail error differs from the store's (-store +cache):\n%s", c.name, state, diff)
			}
			_, _ = f.cache.FindGuardrail(f.ctx, other, c.id) // caches the one that exists
		}
	}
	if n := f.cache.GuardrailLen(); n != 1 {
		t.Errorf("the cache holds %d guardrails, want the 1 known one", n)
	}
}

func TestGuardrailWritesThroughTheCacheInvalidate(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	g := f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{})
	f.findGuardrail(t, g.ID)
	if _, err := f.cache.UpdateGuardrail(f.ctx, f.org, g.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("renamed")}); err != nil {
		t.Fatal(err)
	}
	if got := f.findGuardrail(t, g.ID).Name; got != "renamed" {
		t.Errorf("name %q after the update, want renamed", got)
	}
	if err := f.cache.DeleteGuardrail(f.ctx, f.org, g.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cache.FindGuardrail(f.ctx, f.org, g.ID); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("deleted guardrail still found: %v", err)
	}
}

// TestGuardrailFeed: with a feed, guardrails are served from memory only
// while it beats, and it invalidates them.
func TestGuardrailFeed(t *testing.T) {
	f := newFixture(t, keycache.Options{Feed: true, MaxStaleness: time.Second})
	clk := f.withClock()
	g := f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{})
	f.findGuardrail(t, g.ID)
	f.findGuardrail(t, g.ID)
	if f.cache.GuardrailLen() != 0 || f.store.guardrailLookups.Load() != 2 {
		t.Fatalf("a cache whose feed never beat answered from memory: len %d, lookups %d",
			f.cache.GuardrailLen(), f.store.guardrailLookups.Load())
	}
	f.cache.Heartbeat()
	f.findGuardrail(t, g.ID)
	f.findGuardrail(t, g.ID)
	if n := f.store.guardrailLookups.Load(); n != 3 {
		t.Fatalf("lookups = %d with a live feed, want 3", n)
	}
	if _, err := f.store.Store.UpdateGuardrail(f.ctx, f.org, g.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("elsewhere")}); err != nil {
		t.Fatal(err)
	}
	f.cache.InvalidateGuardrail(g.ID) // as the feed reports the update
	if got := f.findGuardrail(t, g.ID).Name; got != "elsewhere" {
		t.Errorf("name %q after the feed reported the update, want elsewhere", got)
	}
	clk.advance(time.Second + time.Millisecond)
	f.findGuardrail(t, g.ID)
	if n := f.store.guardrailLookups.Load(); n != 5 {
		t.Errorf("lookups = %d: a silent feed's cache still answered, want 5", n)
	}
	f.cache.Reset()
	if f.cache.GuardrailLen() != 0 {
		t.Error("Reset kept guardrails")
	}
}

// TestGuardrailsBounded: guardrails are held up to a budget of bytes; one
// too large for its share is read from the store each time.
func TestGuardrailsBounded(t *testing.T) {
	f := newFixture(t, keycache.Options{MaxGuardrailBytes: 32 << 10}) // 1 KiB a shard
	for range 100 {
		f.findGuardrail(t, f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{}).ID)
	}
	if n := f.cache.GuardrailLen(); n > 32 || n == 0 {
		t.Errorf("the cache holds %d guardrails, want 1 to 32 (one a shard)", n)
	}
	big := f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
		Description: gatehouse.Val(strings.Repeat("x", 1000))}})
	before := f.store.guardrailLookups.Load()
	f.findGuardrail(t, big.ID)
	f.findGuardrail(t, big.ID)
	if n := f.store.guardrailLookups.Load() - before; n != 2 {
		t.Errorf("a guardrail larger than a shard's budget: %d lookups for 2 finds, want 2", n)
	}
}
