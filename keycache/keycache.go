// Package keycache keeps the reads of keys and guardrails by id off the
// database: it wraps a gatehouse.Store and answers FindKeyByHash (for
// authentication, and for the current key with WithFreshReads), FindKey,
// FindGuardrail and FindGuardrails (see lists.go) from memory.
//
// Staleness is bounded. Writes made through the wrapper invalidate at once:
// key and guardrail updates and deletions, usage recorded by Settle and
// RecordUsage (on the key and every key it was minted from), and a
// workspace's deletion, whose cascade takes keys and guardrails with it.
// Writes made elsewhere (another instance on the same PostgreSQL database)
// are bounded by MaxStaleness (1 s by default), in one of two ways:
//
//   - Authentication and guardrails: a change feed (postgres.DB.WatchChanges)
//     reports every change to what authentication reads of a key, and every
//     guardrail update or deletion, in the milliseconds a notification
//     takes; it also proves it is alive every few hundred milliseconds with
//     Heartbeat. When the last proof is older than MaxStaleness the cache is
//     bypassed.
//   - What a user is shown of a key (FindKey, and FindKeyByHash with
//     WithFreshReads): its usage changes with every metered request, which
//     the database does not announce, since a notification per request would
//     cost PostgreSQL much of its CPU (see the trigger in
//     postgres/migration/0001_init.sql). With a feed, such a read is served
//     only from an entry whose read began at most MaxStaleness ago, whatever
//     the feed says.
//
// A TTL bounds how long any entry lives regardless. Expiry needs no
// invalidation: callers check ExpiresAt against the clock on every request.
// The values returned are shared: callers must not modify them.
package keycache

import (
	"context"
	"sync/atomic"
	"time"

	"gatehouse"
)

// Cache is a gatehouse.Store whose reads of keys and guardrails by id are
// served from memory.
type Cache struct {
	gatehouse.Store
	ttl        time.Duration
	now        func() time.Time
	keys       *table[*gatehouse.Key]
	guardrails *table[*gatehouse.Guardrail]
	pages      *table[*page] // of guardrails, see lists.go
	// With a feed, entries are trusted by authentication and guardrail
	// reads only while the feed's last heartbeat (unix nanos) is at most
	// maxStale old, and by what a user is shown of a key only when read at
	// most maxStale ago.
	feed      bool
	maxStale  time.Duration
	heartbeat atomic.Int64
}

// DefaultTTL is how long an entry lives by default: on SQLite, where no
// change feed runs, how long a change made by another process (the
// command line) takes to reach a server.
const DefaultTTL = 10 * time.Second

// Options tune a Cache.
type Options struct {
	// TTL bounds the life of an entry (default DefaultTTL).
	TTL time.Duration
	// MaxEntries bounds the number of keys held (default 100,000).
	MaxEntries int
	// MaxGuardrailBytes bounds the memory held by guardrails, and again
	// by pages of guardrails, as estimated from their contents (default 16
	// MiB each). A guardrail or page of more than a thirty-second of it is
	// not cached.
	MaxGuardrailBytes int
	// Feed says that other writers exist and a change feed reports their
	// changes (calling Invalidate, InvalidateGuardrail, Reset and
	// Heartbeat); without it every write is assumed to go through this
	// wrapper, as with SQLite.
	Feed bool
	// MaxStaleness is how old the feed's last heartbeat, and with a feed
	// the read behind what a user is shown of a key, may be for the cache
	// to answer (default 1s).
	MaxStaleness time.Duration
}

// New wraps store.
func New(store gatehouse.Store, opts Options) *Cache {
	if opts.TTL <= 0 {
		opts.TTL = DefaultTTL
	}
	if opts.MaxEntries <= 0 {
		opts.MaxEntries = 100_000
	}
	if opts.MaxGuardrailBytes <= 0 {
		opts.MaxGuardrailBytes = 16 << 20
	}
	if opts.MaxStaleness <= 0 {
		opts.MaxStaleness = time.Second
	}
	return &Cache{
		Store: store, ttl: opts.TTL, now: time.Now,
		keys:       newTable(opts.MaxEntries, func(*gatehouse.Key) int { return 1 }),
		guardrails: newTable(opts.MaxGuardrailBytes, guardrailSize),
		pages:      newTable(opts.MaxGuardrailBytes, pageCost),
		feed:       opts.Feed, maxStale: opts.MaxStaleness,
	}
}

// live reports whether the feed, if any, vouches for the entries at now.
func (c *Cache) live(now time.Time) bool {
	return !c.feed || now.UnixNano()-c.heartbeat.Load() <= int64(c.maxStale)
}

// Heartbeat records that the change feed is connected and has delivered
// every change up to now.
func (c *Cache) Heartbeat() { c.heartbeat.Store(c.now().UnixNano()) }

// FindKeyByHash returns the key from memory when it is there and fresh,
// else from the store (caching it). With WithFreshReads it answers as
// FindKey does: with the key as a user may be shown it. Unknown keys are
// not cached, so that requests with made-up keys cannot fill the cache.
func (c *Cache) FindKeyByHash(ctx context.Context, hash string) (*gatehouse.Key, error) {
	return c.key(ctx, hash, gatehouse.FreshReads(ctx))
}

// FindKey returns a regular key of the organization, from memory when an
// entry is fresh enough to be shown (see the package comment). ENOTFOUND,
// as the store answers, for a key of another organization or a management
// key.
func (c *Cache) FindKey(ctx context.Context, orgID, hash string) (*gatehouse.Key, error) {
	k, err := c.key(ctx, hash, true)
	if err != nil {
		return nil, err
	}
	if k.OrganizationID != orgID || k.Management {
		return nil, gatehouse.NotFound("key", hash)
	}
	return k, nil
}

// key returns any key by hash. shown asks for what a user is shown: an
// entry whose usage has not changed since it was read and, with a feed,
// read at most maxStale ago; authentication takes any entry within its
// TTL while the feed is live.
func (c *Cache) key(ctx context.Context, hash string, shown bool) (*gatehouse.Key, error) {
	now := c.now()
	if !shown && !c.live(now) {
		return c.Store.FindKeyByHash(ctx, hash)
	}
	e, gen, ok := c.keys.get(hash)
	if ok && now.Before(e.expires) && (!shown || !e.changed && (!c.feed || now.Sub(e.read) <= c.maxStale)) {
		return e.value, nil
	}
	k, err := c.Store.FindKeyByHash(ctx, hash)
	if err != nil {
		return nil, err
	}
	c.keys.put(hash, k, now, now.Add(c.ttl), gen)
	return k, nil
}

// FindGuardrail returns a guardrail of the organization from memory when
// it is there and fresh, else from the store (caching it). ENOTFOUND, as
// the store answers, for a guardrail of another organization.
func (c *Cache) FindGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	now := c.now()
	if !c.live(now) {
		return c.Store.FindGuardrail(ctx, orgID, id)
	}
	e, gen, ok := c.guardrails.get(id)
	if ok && now.Before(e.expires) {
		if e.value.OrganizationID != orgID {
			return nil, gatehouse.NotFound("guardrail", id)
		}
		return e.value, nil
	}
	g, err := c.Store.FindGuardrail(ctx, orgID, id)
	if err != nil {
		return nil, err
	}
	c.guardrails.put(id, g, now, now.Add(c.ttl), gen)
	return g, nil
}

// Invalidate forgets one key. The change feed calls it for every key that
// changed anywhere; a writer of keys that bypasses this wrapper calls it
// after each write it commits.
func (c *Cache) Invalidate(hash string) { c.keys.forget(hash) }

// UsageChanged records that a key's usage changed: authentication may go
// on using the cached key (it reads no usage), what a user is shown of it
// is read again. A writer of usage that bypasses this wrapper (Settle and
// RecordUsage call it themselves) calls it after each write it commits.
func (c *Cache) UsageChanged(hash string) { c.keys.change(hash) }

// InvalidateGuardrail forgets one guardrail; the change feed calls it for
// every guardrail that changed anywhere.
func (c *Cache) InvalidateGuardrail(id string) { c.guardrails.forget(id) }

// Reset forgets every entry: the change feed calls it when it
// (re)connects, since changes made while it was away were not reported.
func (c *Cache) Reset() {
	c.keys.reset()
	c.guardrails.reset()
	c.pages.reset()
}

// Len returns the number of cached keys.
func (c *Cache) Len() int { return c.keys.len() }

// GuardrailLen returns the number of cached guardrails.
func (c *Cache) GuardrailLen() int { return c.guardrails.len() }

var _ gatehouse.Store = (*Cache)(nil)
