// Package keycache keeps authentication off the database on the hot path:
// it wraps a gatehouse.Store and answers FindKeyByHash from memory.
//
// Staleness is bounded. Writes made through the wrapper invalidate at once.
// Writes made elsewhere (another instance on the same PostgreSQL database)
// arrive as invalidations from a change feed (postgres.DB.WatchKeys), which
// also proves it is alive every few hundred milliseconds with Heartbeat.
// When the last proof is older than MaxStaleness the cache is bypassed, so
// a change made anywhere is seen everywhere within MaxStaleness (1 s by
// default), and in practice within the milliseconds a notification takes.
// A TTL bounds how long any entry lives regardless. Expiry needs no
// invalidation: callers check ExpiresAt against the clock on every request.
package keycache

import (
	"context"
	"hash/maphash"
	"sync"
	"sync/atomic"
	"time"

	"gatehouse"
)

// Cache is a gatehouse.Store whose FindKeyByHash is served from memory.
type Cache struct {
	gatehouse.Store
	ttl    time.Duration
	now    func() time.Time
	seed   maphash.Seed
	shards [shardCount]shard
	max    int
	// With a feed, entries are trusted only while the feed's last
	// heartbeat (unix nanos) is at most maxStale old.
	feed      bool
	maxStale  time.Duration
	heartbeat atomic.Int64
}

const shardCount = 32

type shard struct {
	mu      sync.RWMutex
	entries map[string]entry
	gen     uint64 // bumped by every invalidation, so a read that raced one is not cached
}

type entry struct {
	key     *gatehouse.Key
	expires time.Time
}

// Options tune a Cache.
type Options struct {
	// TTL bounds the life of an entry (default 10s).
	TTL time.Duration
	// MaxEntries bounds the memory used (default 100,000 keys).
	MaxEntries int
	// Feed says that other writers exist and a change feed reports their
	// changes (calling Invalidate, Reset and Heartbeat); without it every
	// write is assumed to go through this wrapper, as with SQLite.
	Feed bool
	// MaxStaleness is how old the feed's last heartbeat may be for the
	// cache to answer (default 1s).
	MaxStaleness time.Duration
}

// New wraps store.
func New(store gatehouse.Store, opts Options) *Cache {
	if opts.TTL <= 0 {
		opts.TTL = 10 * time.Second
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.MaxStaleness <= 0 {
		opts.MaxStaleness = time.Second
	}
	c := &Cache{Store: store, ttl: opts.TTL, now: time.Now, seed: maphash.MakeSeed(), max: opts.MaxEntries,
		feed: opts.Feed, maxStale: opts.MaxStaleness}
	for i := range c.shards {
		c.shards[i].entries = map[string]entry{}
	}
	return c
}

// trusted reports whether cached entries may be used at now.
func (c *Cache) trusted(now time.Time) bool {
	return !c.feed || now.UnixNano()-c.heartbeat.Load() <= int64(c.maxStale)
}

// Heartbeat records that the change feed is connected and has delivered
// every change up to now.
func (c *Cache) Heartbeat() { c.heartbeat.Store(c.now().UnixNano()) }

func (c *Cache) shard(hash string) *shard {
	return &c.shards[maphash.String(c.seed, hash)%shardCount]
}

// FindKeyByHash returns the key from memory when it is there and fresh,
// else from the store (caching it). Unknown keys are not cached, so that
// requests with made-up keys cannot fill the cache.
func (c *Cache) FindKeyByHash(ctx context.Context, hash string) (*gatehouse.Key, error) {
	now := c.now()
	if !c.trusted(now) || gatehouse.FreshReads(ctx) {
		return c.Store.FindKeyByHash(ctx, hash)
	}
	s := c.shard(hash)
	s.mu.RLock()
	e, ok := s.entries[hash]
	gen := s.gen
	s.mu.RUnlock()
	if ok && now.Before(e.expires) {
		return e.key, nil
	}
	k, err := c.Store.FindKeyByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return k, nil // invalidated while we read: this copy may already be old
	}
	if len(s.entries) >= c.max/shardCount {
		for h := range s.entries { // map order is random: evict an arbitrary tenth
			delete(s.entries, h)
			if len(s.entries) < c.max/shardCount*9/10 {
				break
			}
		}
	}
	s.entries[hash] = entry{key: k, expires: now.Add(c.ttl)}
	return k, nil
}

// Invalidate forgets one key; the change feed calls it for every key that
// changed anywhere.
func (c *Cache) Invalidate(hash string) {
	s := c.shard(hash)
	s.mu.Lock()
	delete(s.entries, hash)
	s.gen++
	s.mu.Unlock()
}

// Reset forgets every entry: the change feed calls it when it
// (re)connects, since changes made while it was away were not reported.
func (c *Cache) Reset() {
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.Lock()
		clear(s.entries)
		s.gen++
		s.mu.Unlock()
	}
}

// Len returns the number of cached keys.
func (c *Cache) Len() int {
	n := 0
	for i := range c.shards {
		s := &c.shards[i]
		s.mu.RLock()
		n += len(s.entries)
		s.mu.RUnlock()
	}
	return n
}

// UpdateKey updates through the store and forgets the cached copy.
func (c *Cache) UpdateKey(ctx context.Context, orgID, hash string, u gatehouse.KeyUpdate) (*gatehouse.Key, error) {
	defer c.Invalidate(hash)
	return c.Store.UpdateKey(ctx, orgID, hash, u)
}

// DeleteKey deletes through the store and forgets the cached copy.
func (c *Cache) DeleteKey(ctx context.Context, orgID, hash string) error {
	defer c.Invalidate(hash)
	return c.Store.DeleteKey(ctx, orgID, hash)
}

// RecordUsage records through the store and forgets the cached copy, whose
// usage figures it changed.
func (c *Cache) RecordUsage(ctx context.Context, hash string, amount gatehouse.Money, byok bool) (*gatehouse.Key, error) {
	defer c.Invalidate(hash)
	return c.Store.RecordUsage(ctx, hash, amount, byok)
}

var _ gatehouse.Store = (*Cache)(nil)
