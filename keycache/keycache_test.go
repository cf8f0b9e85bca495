package keycache_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/keycache"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
)

// counting counts the lookups that reach the real store underneath.
type counting struct {
	gatehouse.Store
	lookups          atomic.Int64 // of keys
	guardrailLookups atomic.Int64
	pageLookups      atomic.Int64 // of guardrail lists
}

func (c *counting) FindGuardrails(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) ([]*gatehouse.Guardrail, int, error) {
	c.pageLookups.Add(1)
	return c.Store.FindGuardrails(ctx, orgID, workspaceRef, page)
}

func (c *counting) FindKeyByHash(ctx context.Context, hash string) (*gatehouse.Key, error) {
	c.lookups.Add(1)
	return c.Store.FindKeyByHash(ctx, hash)
}

func (c *counting) FindKey(ctx context.Context, orgID, hash string) (*gatehouse.Key, error) {
	c.lookups.Add(1)
	return c.Store.FindKey(ctx, orgID, hash)
}

func (c *counting) FindGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	c.guardrailLookups.Add(1)
	return c.Store.FindGuardrail(ctx, orgID, id)
}

type fixture struct {
	ctx   context.Context
	store *counting
	cache *keycache.Cache
	org   string
	key   *gatehouse.Key
}

func newFixture(t *testing.T, opts keycache.Options) *fixture {
	t.Helper()
	box, _ := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t, "db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	f := &fixture{ctx: context.Background(), store: &counting{Store: db}}
	f.cache = keycache.New(f.store, opts)
	org, err := db.CreateOrganization(f.ctx, "org")
	if err != nil {
		t.Fatal(err)
	}
	f.org = org.ID
	if f.key, _, err = db.CreateKey(f.ctx, org.ID, gatehouse.KeyCreate{Name: "k"}); err != nil {
		t.Fatal(err)
	}
	return f
}

func (f *fixture) find(t *testing.T, ctx context.Context) *gatehouse.Key {
	t.Helper()
	k, err := f.cache.FindKeyByHash(ctx, f.key.Hash)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func TestCachesLookups(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	for range 5 {
		f.find(t, f.ctx)
	}
	f.find(t, gatehouse.WithFreshReads(f.ctx)) // nothing has changed since the read
	if n := f.store.lookups.Load(); n != 1 {
		t.Errorf("%d lookups reached the store for 6 finds, want 1", n)
	}
}

func TestUnknownKeysAreNotCached(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	for range 3 {
		if _, err := f.cache.FindKeyByHash(f.ctx, gatehouse.HashKey("nope")); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
			t.Fatalf("err = %v, want ENOTFOUND", err)
		}
	}
	if f.cache.Len() != 0 || f.store.lookups.Load() != 3 {
		t.Errorf("unknown key cached: len %d, lookups %d", f.cache.Len(), f.store.lookups.Load())
	}
}

func TestWritesThroughTheCacheInvalidate(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	f.find(t, f.ctx)
	if _, err := f.cache.UpdateKey(f.ctx, f.org, f.key.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	if !f.find(t, f.ctx).Disabled {
		t.Error("the cache still answers with the key as it was before it was disabled")
	}
	if err := f.cache.DeleteKey(f.ctx, f.org, f.key.Hash); err != nil {
		t.Fatal(err)
	}
	if _, err := f.cache.FindKeyByHash(f.ctx, f.key.Hash); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("deleted key still found: %v", err)
	}
}

func TestFeedHeartbeat(t *testing.T) {
	f := newFixture(t, keycache.Options{Feed: true, MaxStaleness: time.Hour})
	f.find(t, f.ctx)
	f.find(t, f.ctx)
	if f.cache.Len() != 0 || f.store.lookups.Load() != 2 {
		t.Fatalf("a cache whose feed never beat answered from memory: len %d, lookups %d", f.cache.Len(), f.store.lookups.Load())
	}
	f.cache.Heartbeat()
	f.find(t, f.ctx)
	f.find(t, f.ctx)
	if n := f.store.lookups.Load(); n != 3 {
		t.Fatalf("lookups = %d with a live feed, want 3", n)
	}
	f.cache.Invalidate(f.key.Hash)
	f.find(t, f.ctx)
	if n := f.store.lookups.Load(); n != 4 {
		t.Errorf("lookups = %d after an invalidation, want 4", n)
	}
	f.cache.Reset()
	if f.cache.Len() != 0 {
		t.Error("Reset kept entries")
	}
}

func TestFeedSilenceBypassesCache(t *testing.T) {
	f := newFixture(t, keycache.Options{Feed: true, MaxStaleness: 20 * time.Millisecond})
	f.cache.Heartbeat()
	f.find(t, f.ctx)
	time.Sleep(30 * time.Millisecond) // the feed falls silent for longer than MaxStaleness
	f.find(t, f.ctx)
	if n := f.store.lookups.Load(); n != 2 {
		t.Errorf("lookups = %d: a silent feed's cache still answered", n)
	}
}

func TestBounded(t *testing.T) {
	f := newFixture(t, keycache.Options{MaxEntries: 64})
	for i := range 300 {
		k, _, err := f.store.Store.CreateKey(f.ctx, f.org, gatehouse.KeyCreate{Name: "k"})
		if err != nil {
			t.Fatal(i, err)
		}
		if _, err := f.cache.FindKeyByHash(f.ctx, k.Hash); err != nil {
			t.Fatal(err)
		}
	}
	if n := f.cache.Len(); n > 64 {
		t.Errorf("cache holds %d keys, want at most 64", n)
	}
}

func TestConcurrentInvalidationWins(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if _, err := f.cache.FindKeyByHash(f.ctx, f.key.Hash); err != nil {
					t.Error(err)
					return
				}
			}
		}()
	}
	if _, err := f.cache.UpdateKey(f.ctx, f.org, f.key.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	if !f.find(t, f.ctx).Disabled {
		t.Error("a lookup racing the update left the old key in the cache")
	}
}
