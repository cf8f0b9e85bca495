package ratelimit

import (
	"context"
	"hash/maphash"
	"maps"
	"strings"
	"sync"
	"time"
)

// numShards spreads keys over independent locks so that concurrent requests
// for different credentials rarely wait on each other.
const numShards = 32

// sweepMin is the fewest Allow calls a shard sees between sweeps. It keeps
// sweeps rare while a shard is small; once a shard holds more live keys than
// this, the gap grows with it so that sweeping stays amortised O(1) per call.
const sweepMin = 256

// Memory is an in-process Limiter. Its state dies with the process and is not
// shared between instances, which suits a single server or tests; behind a
// load balancer each instance would grant the full budget.
//
// Memory stays bounded when an attacker cycles through keys (client IPs, say):
// an entry whose bucket has refilled carries no information, and each shard
// drops such entries as it goes, without a background goroutine that would
// need stopping. Each of the 32 shards holds at most about twice its live
// keys plus 256, where a key is live for up to Burst/RPS after its last
// allowed request.
type Memory struct {
	cfg    Config
	now    func() time.Time
	seed   maphash.Seed // random per limiter, so that nobody can aim keys at one shard
	shards [numShards]shard
}

// shard is one lock's worth of keys.
type shard struct {
	mu   sync.Mutex
	tats map[string]time.Time // theoretical arrival time per key; see gcra
	ops  int                  // Allow calls since the last sweep
	next int                  // ops at which the next sweep is due
	peak int                  // the most entries since tats was allocated
	_    [64]byte             // keeps neighbouring shards' locks off one cache line
}

// NewMemory returns an in-process GCRA limiter. now is injectable so that
// tests control time; nil means time.Now. It panics if cfg fails Validate,
// because a bad configuration is a programming or start-up error that must
// not degrade silently into admitting or refusing everything. With RPS 0 it
// admits everything and tracks nothing, like Unlimited.
func NewMemory(cfg Config, now func() time.Time) *Memory {
	if err := cfg.Validate(); err != nil {
		panic(err)
	}
	if now == nil {
		now = time.Now
	}
	m := &Memory{cfg: cfg, now: now, seed: maphash.MakeSeed()}
	for i := range m.shards {
		m.shards[i].tats = make(map[string]time.Time)
		m.shards[i].next = sweepMin
	}
	return m
}

// Allow spends one request from key's bucket if one is there. It never
// returns an error and ignores ctx, since it does no I/O; both exist for the
// Limiter contract.
func (m *Memory) Allow(_ context.Context, key string) (Result, error) {
	if m.cfg.RPS == 0 {
		return Result{Allowed: true}, nil
	}
	// Reading the clock outside the lock keeps the critical section short.
	// A goroutine that read the clock earlier but locks later sees more
	// debt than it would have, so the race can only deny, never over-admit.
	now := m.now()
	s := &m.shards[maphash.String(m.seed, key)%numShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	s.ops++
	if s.ops >= s.next {
		s.sweep(now)
	}
	tat, known := s.tats[key]
	newTAT, res := gcra(tat, now, m.cfg)
	if res.Allowed {
		if !known {
			// The caller's string may share memory with a whole request
			// buffer; keep only the key's bytes alive.
			key = strings.Clone(key)
		}
		s.tats[key] = newTAT
		s.peak = max(s.peak, len(s.tats))
	}
	return res, nil
}

// Refund gives one request back to key's bucket (see Refunder). It never
// returns an error.
func (m *Memory) Refund(_ context.Context, key string) error {
	if m.cfg.RPS == 0 {
		return nil
	}
	now := m.now()
	s := &m.shards[maphash.String(m.seed, key)%numShards]
	s.mu.Lock()
	defer s.mu.Unlock()
	tat, known := s.tats[key]
	if !known {
		return nil
	}
	if newTAT, ok := refund(tat, now, m.cfg); ok {
		s.tats[key] = newTAT
	} else {
		delete(s.tats, key)
	}
	return nil
}

// Len reports how many keys are tracked, for tests and metrics. Keys whose
// bucket has refilled are counted until their shard next sweeps.
func (m *Memory) Len() int {
	n := 0
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		n += len(s.tats)
		s.mu.Unlock()
	}
	return n
}

// sweep forgets every key whose bucket is full at now; gcra treats an unknown
// key exactly like a full bucket, so no later decision changes. The caller
// holds s.mu.
func (s *shard) sweep(now time.Time) {
	for k, tat := range s.tats {
		if !tat.After(now) {
			delete(s.tats, k)
		}
	}
	n := len(s.tats)
	// A Go map keeps the memory of its largest size after deletes; rebuild
	// it once most of that is dead so that an attack's peak is given back.
	// maps.Clone is no use here: it may copy the table at its old size.
	if s.peak > sweepMin && s.peak > 4*n {
		fresh := make(map[string]time.Time, n)
		maps.Copy(fresh, s.tats)
		s.tats = fresh
		s.peak = n
	}
	s.ops = 0
	s.next = max(sweepMin, n)
}
