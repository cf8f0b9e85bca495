package keycache

import (
	"hash/maphash"
	"sync"
	"time"
)

// table is a sharded map of cached values by id, bounded by a budget: the
// sum of the values' costs (1 a value, or its size in bytes).
type table[V any] struct {
	seed   maphash.Seed
	cost   func(V) int
	budget int // per shard
	shards [shardCount]shard[V]
}

const shardCount = 32

type shard[V any] struct {
	mu      sync.RWMutex
	entries map[string]entry[V]
	spent   int    // the sum of the entries' costs
	gen     uint64 // bumped by every invalidation, so a read that raced one is not cached
}

// entry is a cached value. read is when the read that fetched it began: the
// value is at least as new as the database was then. changed says that part
// of the value (a key's usage) has changed since: authentication may still
// use it, a read shown to a user may not.
type entry[V any] struct {
	value   V
	read    time.Time
	expires time.Time
	cost    int
	changed bool
}

func newTable[V any](budget int, cost func(V) int) *table[V] {
	t := &table[V]{seed: maphash.MakeSeed(), cost: cost, budget: max(budget/shardCount, 1)}
	for i := range t.shards {
		t.shards[i].entries = map[string]entry[V]{}
	}
	return t
}

func (t *table[V]) shard(id string) *shard[V] {
	return &t.shards[maphash.String(t.seed, id)%shardCount]
}

// get returns the entry of id, if any, and the generation of its shard, to
// be handed back to put.
func (t *table[V]) get(id string) (entry[V], uint64, bool) {
	s := t.shard(id)
	s.mu.RLock()
	e, ok := s.entries[id]
	gen := s.gen
	s.mu.RUnlock()
	return e, gen, ok
}

// put caches v, read at read, unless an invalidation of its shard came
// after get returned gen (the value may then already be old), or v alone
// exceeds the shard's budget. A full shard drops arbitrary entries first.
func (t *table[V]) put(id string, v V, read, expires time.Time, gen uint64) {
	cost := t.cost(v)
	if cost > t.budget {
		return
	}
	s := t.shard(id)
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.gen != gen {
		return
	}
	if old, ok := s.entries[id]; ok {
		s.spent -= old.cost
	}
	if s.spent+cost > t.budget {
		for k, e := range s.entries { // map order is random: evict an arbitrary tenth
			delete(s.entries, k)
			s.spent -= e.cost
			if s.spent+cost <= t.budget*9/10 {
				break
			}
		}
	}
	s.entries[id] = entry[V]{value: v, read: read, expires: expires, cost: cost}
	s.spent += cost
}

// forget drops the entry of id.
func (t *table[V]) forget(id string) {
	s := t.shard(id)
	s.mu.Lock()
	if e, ok := s.entries[id]; ok {
		delete(s.entries, id)
		s.spent -= e.cost
	}
	s.gen++
	s.mu.Unlock()
}

// change marks the entry of id as changed since it was read.
func (t *table[V]) change(id string) {
	s := t.shard(id)
	s.mu.Lock()
	if e, ok := s.entries[id]; ok {
		e.changed = true
		s.entries[id] = e
	}
	s.gen++
	s.mu.Unlock()
}

// forgetIf drops every entry whose value matches.
func (t *table[V]) forgetIf(match func(V) bool) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for k, e := range s.entries {
			if match(e.value) {
				delete(s.entries, k)
				s.spent -= e.cost
			}
		}
		s.gen++
		s.mu.Unlock()
	}
}

// changeIf marks every entry whose value matches as changed.
func (t *table[V]) changeIf(match func(V) bool) {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		for k, e := range s.entries {
			if match(e.value) {
				e.changed = true
				s.entries[k] = e
			}
		}
		s.gen++
		s.mu.Unlock()
	}
}

// reset drops every entry.
func (t *table[V]) reset() {
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.Lock()
		clear(s.entries)
		s.spent = 0
		s.gen++
		s.mu.Unlock()
	}
}

// len returns the number of entries.
func (t *table[V]) len() int {
	n := 0
	for i := range t.shards {
		s := &t.shards[i]
		s.mu.RLock()
		n += len(s.entries)
		s.mu.RUnlock()
	}
	return n
}
