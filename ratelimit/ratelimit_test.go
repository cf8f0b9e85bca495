package ratelimit

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// t0 is an arbitrary instant; tests move the injected clock relative to it.
var t0 = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// clock is a settable time source. Tests that share it between goroutines
// only read it.
type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func newTestMemory(t testing.TB, cfg Config) (*Memory, *clock) {
	t.Helper()
	c := &clock{t: t0}
	return NewMemory(cfg, c.now), c
}

// step is one Allow call at offset at from t0 and the Result it must give.
// ResetAt is written as an offset from t0 as well; resetAt < 0 means the
// zero time.
type step struct {
	at         time.Duration
	key        string
	allowed    bool
	remaining  int
	retryAfter time.Duration
	resetAt    time.Duration
}

func runSteps(t *testing.T, cfg Config, steps []step) {
	t.Helper()
	m, c := newTestMemory(t, cfg)
	for i, s := range steps {
		c.t = t0.Add(s.at)
		key := s.key
		if key == "" {
			key = "k"
		}
		got, err := m.Allow(context.Background(), key)
		if err != nil {
			t.Fatalf("step %d: Allow: %v", i, err)
		}
		want := Result{
			Allowed:    s.allowed,
			Limit:      cfg.Burst,
			Remaining:  s.remaining,
			RetryAfter: s.retryAfter,
			ResetAt:    t0.Add(s.resetAt),
		}
		if !sameResult(got, want) {
			t.Errorf("step %d (key %q at +%v):\n got %s\nwant %s", i, key, s.at, show(got), show(want))
		}
	}
}

func sameResult(a, b Result) bool {
	return a.Allowed == b.Allowed && a.Limit == b.Limit && a.Remaining == b.Remaining &&
		a.RetryAfter == b.RetryAfter && a.ResetAt.Equal(b.ResetAt)
}

func show(r Result) string {
	reset := "zero"
	if !r.ResetAt.IsZero() {
		reset = "+" + r.ResetAt.Sub(t0).String()
	}
	return "allowed=" + strconv.FormatBool(r.Allowed) + " limit=" + strconv.Itoa(r.Limit) +
		" remaining=" + strconv.Itoa(r.Remaining) + " retryAfter=" + r.RetryAfter.String() +
		" resetAt=" + reset
}

const ms = time.Millisecond

func TestMemorySequences(t *testing.T) {
	tests := []struct {
		name  string
		cfg   Config
		steps []step
	}{
		{
			name: "burst then deny",
			cfg:  Config{RPS: 2, Burst: 3}, // T = 500ms, full refill 1.5s
			steps: []step{
				{at: 0, allowed: true, remaining: 2, resetAt: 500 * ms},
				{at: 0, allowed: true, remaining: 1, resetAt: 1000 * ms},
				{at: 0, allowed: true, remaining: 0, resetAt: 1500 * ms},
				{at: 0, allowed: false, remaining: 0, retryAfter: 500 * ms, resetAt: 1500 * ms},
				{at: 0, allowed: false, remaining: 0, retryAfter: 500 * ms, resetAt: 1500 * ms},
			},
		},
		{
			name: "refill at rps 2 gives one more after 500ms",
			cfg:  Config{RPS: 2, Burst: 3},
			steps: []step{
				{at: 0, allowed: true, remaining: 2, resetAt: 500 * ms},
				{at: 0, allowed: true, remaining: 1, resetAt: 1000 * ms},
				{at: 0, allowed: true, remaining: 0, resetAt: 1500 * ms},
				{at: 200 * ms, allowed: false, retryAfter: 300 * ms, resetAt: 1500 * ms},
				{at: 499 * ms, allowed: false, retryAfter: 1 * ms, resetAt: 1500 * ms},
				{at: 500 * ms, allowed: true, remaining: 0, resetAt: 2000 * ms},
				{at: 500 * ms, allowed: false, retryAfter: 500 * ms, resetAt: 2000 * ms},
				// 1.2s of the 1.5s debt repaid, 0.3s left: one whole
				// token plus a part; Remaining rounds down.
				{at: 1700 * ms, allowed: true, remaining: 1, resetAt: 2500 * ms},
				{at: 1700 * ms, allowed: true, remaining: 0, resetAt: 3000 * ms},
				{at: 1700 * ms, allowed: false, retryAfter: 300 * ms, resetAt: 3000 * ms},
				// Full again at ResetAt: the whole burst is back.
				{at: 3000 * ms, allowed: true, remaining: 2, resetAt: 3500 * ms},
				// Long idle never banks more than the burst.
				{at: time.Hour, allowed: true, remaining: 2, resetAt: time.Hour + 500*ms},
			},
		},
		{
			name: "fractional rps 0.5",
			cfg:  Config{RPS: 0.5, Burst: 1}, // one request every 2s
			steps: []step{
				{at: 0, allowed: true, remaining: 0, resetAt: 2 * time.Second},
				{at: 1 * time.Second, allowed: false, retryAfter: time.Second, resetAt: 2 * time.Second},
				{at: 1999 * ms, allowed: false, retryAfter: 1 * ms, resetAt: 2 * time.Second},
				{at: 2 * time.Second, allowed: true, remaining: 0, resetAt: 4 * time.Second},
				{at: 5 * time.Second, allowed: true, remaining: 0, resetAt: 7 * time.Second},
			},
		},
		{
			name: "fractional rps 0.5 with burst 2",
			cfg:  Config{RPS: 0.5, Burst: 2},
			steps: []step{
				{at: 0, allowed: true, remaining: 1, resetAt: 2 * time.Second},
				{at: 0, allowed: true, remaining: 0, resetAt: 4 * time.Second},
				{at: 0, allowed: false, retryAfter: 2 * time.Second, resetAt: 4 * time.Second},
				{at: 3 * time.Second, allowed: true, remaining: 0, resetAt: 6 * time.Second},
			},
		},
		{
			name: "keys are independent",
			cfg:  Config{RPS: 1, Burst: 1},
			steps: []step{
				{at: 0, key: "a", allowed: true, remaining: 0, resetAt: time.Second},
				{at: 0, key: "a", allowed: false, retryAfter: time.Second, resetAt: time.Second},
				{at: 0, key: "b", allowed: true, remaining: 0, resetAt: time.Second},
				{at: 500 * ms, key: "c", allowed: true, remaining: 0, resetAt: 1500 * ms},
				{at: 500 * ms, key: "b", allowed: false, retryAfter: 500 * ms, resetAt: time.Second},
				{at: time.Second, key: "a", allowed: true, remaining: 0, resetAt: 2 * time.Second},
				{at: time.Second, key: "c", allowed: false, retryAfter: 500 * ms, resetAt: 1500 * ms},
			},
		},
		{
			name: "defaults from the spec",
			cfg:  Config{RPS: 50, Burst: 100}, // T = 20ms
			steps: []step{
				{at: 0, allowed: true, remaining: 99, resetAt: 20 * ms},
				{at: 0, allowed: true, remaining: 98, resetAt: 40 * ms},
				{at: 10 * ms, allowed: true, remaining: 97, resetAt: 60 * ms},
			},
		},
		{
			name: "rps 3 rounds the interval to whole nanoseconds",
			cfg:  Config{RPS: 3, Burst: 1}, // T = 333333333ns
			steps: []step{
				{at: 0, allowed: true, remaining: 0, resetAt: 333333333},
				{at: 333333332, allowed: false, retryAfter: 1, resetAt: 333333333},
				{at: 333333333, allowed: true, remaining: 0, resetAt: 666666666},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { runSteps(t, tt.cfg, tt.steps) })
	}
}

// peek returns the stored TAT of key, for tests that check state directly.
func (m *Memory) peek(key string) (time.Time, bool) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		tat, ok := s.tats[key]
		s.mu.Unlock()
		if ok {
			return tat, true
		}
	}
	return time.Time{}, false
}

// sweepAll sweeps every shard at now, as Allow would eventually.
func (m *Memory) sweepAll(now time.Time) {
	for i := range m.shards {
		s := &m.shards[i]
		s.mu.Lock()
		s.sweep(now)
		s.mu.Unlock()
	}
}

func TestMemoryDeniedDoesNotChangeState(t *testing.T) {
	ctx := context.Background()
	cfg := Config{RPS: 2, Burst: 3}
	hammered, c1 := newTestMemory(t, cfg)
	quiet, c2 := newTestMemory(t, cfg)
	for range cfg.Burst {
		hammered.Allow(ctx, "k")
		quiet.Allow(ctx, "k")
	}
	before, _ := hammered.peek("k")
	for i := range 1000 {
		c1.t = t0.Add(time.Duration(i) * 400 * time.Microsecond) // up to +399.6ms
		if r, _ := hammered.Allow(ctx, "k"); r.Allowed {
			t.Fatalf("call %d at %v allowed; the bucket was empty", i, c1.t.Sub(t0))
		}
	}
	if after, _ := hammered.peek("k"); !after.Equal(before) {
		t.Fatalf("denied calls moved TAT from +%v to +%v", before.Sub(t0), after.Sub(t0))
	}
	// Both limiters must now agree exactly, whatever the hammering.
	for _, at := range []time.Duration{500 * ms, 500 * ms, 900 * ms, 1000 * ms, 2600 * ms, 2600 * ms} {
		c1.t, c2.t = t0.Add(at), t0.Add(at)
		a, _ := hammered.Allow(ctx, "k")
		b, _ := quiet.Allow(ctx, "k")
		if !sameResult(a, b) {
			t.Fatalf("at +%v: hammered %s, quiet %s", at, show(a), show(b))
		}
	}
}

func TestMemoryRPSZeroAllowsAndTracksNothing(t *testing.T) {
	m, _ := newTestMemory(t, Config{RPS: 0})
	for i := range 1000 {
		r, err := m.Allow(context.Background(), "k"+strconv.Itoa(i%3))
		if err != nil || !r.Allowed || r.Limit != 0 {
			t.Fatalf("call %d: %s, %v; want allowed with Limit 0", i, show(r), err)
		}
	}
	if n := m.Len(); n != 0 {
		t.Fatalf("Len = %d, want 0", n)
	}
}

func TestUnlimitedAlwaysAllows(t *testing.T) {
	var l Limiter = Unlimited{}
	ctx, cancel := context.WithCancel(context.Background())
	cancel() // not even a dead context stops it
	for i := range 1000 {
		r, err := l.Allow(ctx, "k")
		if err != nil || !sameResult(r, Result{Allowed: true}) {
			t.Fatalf("call %d: %s, %v; want allowed with Limit 0", i, show(r), err)
		}
	}
}

func TestConfigValidate(t *testing.T) {
	tests := []struct {
		cfg     Config
		wantErr string // substring; "" means valid
	}{
		{Config{RPS: 0, Burst: 0}, ""},
		{Config{RPS: 0, Burst: -5}, ""}, // Burst is unused when off
		{Config{RPS: 50, Burst: 100}, ""},
		{Config{RPS: 0.5, Burst: 1}, ""},
		{Config{RPS: 1e9, Burst: 1}, ""},
		{Config{RPS: 1, Burst: math.MaxInt32}, ""},
		{Config{RPS: -1, Burst: 1}, "RPS is -1; it must be a finite number"},
		{Config{RPS: math.NaN(), Burst: 1}, "RPS is NaN"},
		{Config{RPS: math.Inf(1), Burst: 1}, "RPS is +Inf"},
		{Config{RPS: math.Inf(-1), Burst: 1}, "RPS is -Inf"},
		{Config{RPS: 2e9, Burst: 1}, "RPS is 2e+09; it must be at most 1e+09"},
		{Config{RPS: 1, Burst: 0}, "Burst is 0; it must be at least 1 when RPS is above 0"},
		{Config{RPS: 1, Burst: -1}, "Burst is -1"},
		{Config{RPS: 1e-12, Burst: 1}, "Burst/RPS must be under 292 years"},
		{Config{RPS: 1e-300, Burst: 100}, "Burst/RPS must be under"},
		{Config{RPS: 1, Burst: math.MaxInt}, "Burst/RPS must be under"},
	}
	for _, tt := range tests {
		err := tt.cfg.Validate()
		switch {
		case tt.wantErr == "" && err != nil:
			t.Errorf("%+v: unexpected error %v", tt.cfg, err)
		case tt.wantErr != "" && err == nil:
			t.Errorf("%+v: no error, want one containing %q", tt.cfg, tt.wantErr)
		case tt.wantErr != "" && !strings.Contains(err.Error(), tt.wantErr):
			t.Errorf("%+v: error %q does not contain %q", tt.cfg, err, tt.wantErr)
		}
	}
}

func TestNewMemoryPanicsOnInvalidConfig(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Fatal("NewMemory accepted Burst 0 with RPS 1")
		}
	}()
	NewMemory(Config{RPS: 1, Burst: 0}, nil)
}

func TestNewMemoryNilClockUsesTimeNow(t *testing.T) {
	m := NewMemory(Config{RPS: 1, Burst: 1}, nil)
	before := time.Now()
	r, _ := m.Allow(context.Background(), "k")
	if !r.Allowed || r.ResetAt.Before(before.Add(time.Second)) {
		t.Fatalf("got %+v; want allowed with ResetAt a second after now", r)
	}
}

func TestGCRAClockFarBackwards(t *testing.T) {
	cfg := Config{RPS: 1, Burst: 5}
	// A TAT centuries ahead makes base-now saturate; nothing may overflow
	// into an admission.
	for _, ahead := range []time.Duration{time.Hour, math.MaxInt64} {
		tat := t0.Add(ahead).Add(ahead)
		newTAT, r := gcra(tat, t0, cfg)
		if r.Allowed || r.RetryAfter <= 0 || !newTAT.Equal(tat) {
			t.Errorf("ahead %v: got %s, newTAT changed %v; want denied with positive RetryAfter", ahead, show(r), !newTAT.Equal(tat))
		}
	}
}

func TestMemorySweepDropsIdleKeys(t *testing.T) {
	ctx := context.Background()
	m, c := newTestMemory(t, Config{RPS: 1, Burst: 2}) // full again 1-2s after use
	for i := range 1000 {
		m.Allow(ctx, "k"+strconv.Itoa(i))
	}
	m.Allow(ctx, "busy")
	m.Allow(ctx, "busy") // TAT +2s
	if n := m.Len(); n != 1001 {
		t.Fatalf("Len = %d, want 1001", n)
	}
	m.sweepAll(t0.Add(999 * ms))
	if n := m.Len(); n != 1001 {
		t.Fatalf("after a sweep before any bucket refilled: Len = %d, want 1001", n)
	}
	m.sweepAll(t0.Add(time.Second)) // the 1000 single-use keys are full now
	if n := m.Len(); n != 1 {
		t.Fatalf("after sweeping at +1s: Len = %d, want 1", n)
	}
	c.t = t0.Add(time.Second)
	if r, _ := m.Allow(ctx, "k7"); r.Remaining != 1 {
		t.Fatalf("a forgotten key must start full: %s", show(r))
	}
	m.sweepAll(t0.Add(2 * time.Second))
	if n := m.Len(); n != 0 {
		t.Fatalf("after sweeping at +2s: Len = %d, want 0", n)
	}
}

func TestMemorySweepIsInvisible(t *testing.T) {
	// Sweeping after every call must not change a single decision.
	ctx := context.Background()
	cfg := Config{RPS: 3, Burst: 4}
	plain, c1 := newTestMemory(t, cfg)
	swept, c2 := newTestMemory(t, cfg)
	rng := rand.New(rand.NewPCG(1, 2))
	now := t0
	for i := range 20000 {
		now = now.Add(time.Duration(rng.IntN(int(400 * ms))))
		c1.t, c2.t = now, now
		key := "k" + strconv.Itoa(rng.IntN(5))
		a, _ := plain.Allow(ctx, key)
		b, _ := swept.Allow(ctx, key)
		swept.sweepAll(now)
		if !sameResult(a, b) {
			t.Fatalf("call %d: unswept %s, swept %s", i, show(a), show(b))
		}
	}
}

func TestMemoryBoundedUnderKeyCycling(t *testing.T) {
	// An attacker sends one request from each of many addresses, 1ms apart.
	// With T = 20ms each key is live for 20ms, so about 20 are live at any
	// moment; everything else must be swept without being asked.
	ctx := context.Background()
	m, c := newTestMemory(t, Config{RPS: 50, Burst: 1})
	const live = 21
	bound := numShards*sweepMin + 2*live
	for i := range 200_000 {
		c.t = t0.Add(time.Duration(i) * ms)
		m.Allow(ctx, "ip"+strconv.Itoa(i))
		if i%1000 == 999 {
			if n := m.Len(); n > bound {
				t.Fatalf("after %d keys: Len = %d, want at most %d", i+1, n, bound)
			}
		}
	}
}

func TestMemoryMapRebuiltAfterPeak(t *testing.T) {
	// A shard whose map grew during a burst of keys must allocate a fresh,
	// small map once those keys are swept, since Go maps never shrink.
	ctx := context.Background()
	m, c := newTestMemory(t, Config{RPS: 1, Burst: 1})
	for i := range 100_000 { // all at t0: all live, nothing sweepable
		m.Allow(ctx, strconv.Itoa(i))
	}
	c.t = t0.Add(time.Hour)
	m.sweepAll(c.t)
	for i := range m.shards {
		if s := &m.shards[i]; s.peak != 0 || len(s.tats) != 0 {
			t.Fatalf("shard %d: peak %d, len %d after sweeping everything", i, s.peak, len(s.tats))
		}
	}
}

func TestMemoryConcurrentSameInstant(t *testing.T) {
	// Many goroutines on few keys at one frozen instant: each key admits
	// exactly its burst, never more. Run with -race.
	ctx := context.Background()
	cfg := Config{RPS: 1, Burst: 10}
	m, _ := newTestMemory(t, cfg)
	keys := []string{"a", "b", "c", "d"}
	allowed := make([]atomic.Int64, len(keys))
	var wg sync.WaitGroup
	for g := range 64 {
		wg.Go(func() {
			for i := range 200 {
				k := (g + i) % len(keys)
				r, err := m.Allow(ctx, keys[k])
				if err != nil {
					t.Error(err)
					return
				}
				if r.Allowed {
					allowed[k].Add(1)
				}
			}
		})
	}
	wg.Wait()
	for k := range keys {
		if n := allowed[k].Load(); n != int64(cfg.Burst) {
			t.Errorf("key %q: %d allowed at one instant, want exactly the burst %d", keys[k], n, cfg.Burst)
		}
	}
}

func TestMemoryConcurrentAdvancingClock(t *testing.T) {
	// With time moving, a key admits at most its burst plus what the rate
	// earned over the elapsed time.
	ctx := context.Background()
	cfg := Config{RPS: 100, Burst: 5} // T = 10ms
	var tick atomic.Int64
	now := func() time.Time { return t0.Add(time.Duration(tick.Add(1)) * 100 * time.Microsecond) }
	m := NewMemory(cfg, now)
	keys := []string{"a", "b", "c"}
	allowed := make([]atomic.Int64, len(keys))
	var wg sync.WaitGroup
	for g := range 32 {
		wg.Go(func() {
			for i := range 500 {
				k := (g + i) % len(keys)
				if r, _ := m.Allow(ctx, keys[k]); r.Allowed {
					allowed[k].Add(1)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Duration(tick.Load()) * 100 * time.Microsecond
	limit := int64(cfg.Burst) + int64(elapsed/(10*ms)) + 1
	for k := range keys {
		if n := allowed[k].Load(); n > limit {
			t.Errorf("key %q: %d allowed over %v, want at most %d", keys[k], n, elapsed, limit)
		}
	}
}

func BenchmarkMemoryAllow(b *testing.B) {
	ctx := context.Background()
	m := NewMemory(Config{RPS: 50, Burst: 100}, nil)
	for b.Loop() {
		m.Allow(ctx, "2f1c6a0b9e8d7c6b5a4f3e2d1c0b9a88")
	}
}

func BenchmarkMemoryAllowParallel(b *testing.B) {
	ctx := context.Background()
	m := NewMemory(Config{RPS: 50, Burst: 100}, nil)
	keys := make([]string, 10_000)
	for i := range keys {
		keys[i] = "key-" + strconv.Itoa(i)
	}
	var start atomic.Uint64
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := start.Add(7919)
		for pb.Next() {
			m.Allow(ctx, keys[i%uint64(len(keys))])
			i++
		}
	})
}

// TestMemoryRefund: a refund gives back exactly one allowed request,
// never fills a bucket past full, and a key refunded to full is forgotten.
func TestMemoryRefund(t *testing.T) {
	ctx := context.Background()
	cfg := Config{RPS: 2, Burst: 3} // T = 500ms
	m, c := newTestMemory(t, cfg)
	for range 3 {
		m.Allow(ctx, "k")
	}
	if r, _ := m.Allow(ctx, "k"); r.Allowed {
		t.Fatal("a fourth request of a burst of 3 was allowed")
	}
	m.Refund(ctx, "k")
	if r, _ := m.Allow(ctx, "k"); !r.Allowed || r.Remaining != 0 {
		t.Fatalf("after a refund: %s; want the one token given back, and no more", show(r))
	}
	if r, _ := m.Allow(ctx, "k"); r.Allowed {
		t.Fatal("a refund gave back more than one request")
	}
	// Refunds past full change nothing: the burst stays the burst.
	for range 10 {
		m.Refund(ctx, "k")
	}
	if _, known := m.peek("k"); known {
		t.Error("a bucket refunded to full is still stored")
	}
	for i, want := range []bool{true, true, true, false} {
		if r, _ := m.Allow(ctx, "k"); r.Allowed != want {
			t.Fatalf("request %d after refunds past full: %s, want allowed=%v", i, show(r), want)
		}
	}
	// Refunding a key never seen is nothing.
	m.Refund(ctx, "unknown")
	if _, known := m.peek("unknown"); known {
		t.Error("a refund of an unknown key stored it")
	}
	// A refund after time passed moves the TAT back one interval from
	// where it is, never before now.
	c.t = t0.Add(1200 * ms) // TAT +1500ms: 300ms of debt
	m.Refund(ctx, "k")
	if _, known := m.peek("k"); known {
		t.Error("a refund of less than one interval of debt left the key stored")
	}
}
