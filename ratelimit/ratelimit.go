// Package ratelimit throttles requests per credential (key hash) or per client
// IP with token-bucket semantics: a steady rate in requests per second plus a
// burst that may be spent at once.
//
// Callers depend only on the Limiter interface so that the in-process Memory
// limiter can be swapped for one whose state lives in a shared store (Redis,
// run as an atomic Lua script) when several server instances must enforce one
// budget. Both run the same arithmetic, gcra, so their answers agree given
// the same clock (up to the resolution the store keeps time in).
//
// The HTTP layer turns a Result into headers as follows, and only when Limit
// is above 0 (Limit 0 means no limit applies):
//
//	X-RateLimit-Limit      Limit
//	X-RateLimit-Remaining  Remaining
//	X-RateLimit-Reset      ResetAt in Unix epoch milliseconds, rounded up
//	Retry-After            RetryAfter in whole seconds, rounded up, at least 1 (429 only)
package ratelimit

import (
	"context"
	"fmt"
	"math"
	"time"
)

// maxRPS keeps the emission interval at or above one nanosecond, the
// resolution of the arithmetic; above it every request would look free.
const maxRPS = 1e9

// maxSpan bounds the time a drained bucket takes to refill, because that span
// is held in a time.Duration (about 292 years).
const maxSpan = time.Duration(math.MaxInt64)

// Result is the outcome of one Allow call. It carries everything the HTTP
// layer needs for its 429 answer and X-RateLimit headers, so that no caller
// has to know how the limiter keeps its state.
type Result struct {
	// Allowed reports whether the request may proceed; a denied request
	// consumed nothing.
	Allowed bool
	// Limit is the burst, the most requests the bucket holds. It is 0 when
	// no limit applies (Unlimited, or RPS 0), and then no header is due.
	Limit int
	// Remaining counts the requests that could be made right now after this
	// one, rounded down; 0 when denied.
	Remaining int
	// RetryAfter is 0 when allowed; else how long until one request fits.
	// It is exact; rounding to whole seconds is the HTTP layer's job.
	RetryAfter time.Duration
	// ResetAt is when the bucket will be full again if no further request is
	// allowed. It is the zero time when no limit applies.
	ResetAt time.Time
}

// Limiter decides whether a request identified by key may proceed. Callers
// hold this interface rather than a concrete type so that storage can move
// out of process without changing them.
//
// An error means no decision could be made (a shared store being down, or ctx
// ending first); the Result is then the zero value, and the caller chooses
// whether to fail open or closed. Memory and Unlimited never return one.
type Limiter interface {
	Allow(ctx context.Context, key string) (Result, error)
}

// Refunder is a Limiter that can give back a request it allowed: for
// budgets that count only some outcomes (the console's sign-ins count
// failures), a request takes its token before it runs, so that concurrent
// requests never spend more than the bucket holds, and gives it back when
// it turns out not to count.
type Refunder interface {
	Limiter
	// Refund gives one request back to key's bucket, never filling it past
	// full. Refunding a key that holds nothing is no error and changes
	// nothing. An error means the refund was not made (the token stays
	// spent, which errs towards refusing).
	Refund(ctx context.Context, key string) error
}

// Config of a limiter. Token-bucket terms are used because they are what
// operators reason about, although the implementation is GCRA. The API spec's
// defaults (RPS 50, Burst 100) are applied by whoever reads configuration,
// not here, so that a zero Config is never mistaken for a deliberate one.
type Config struct {
	// RPS is the refill rate in requests per second; fractions are allowed
	// (0.5 is one request every two seconds). 0 turns limiting off.
	RPS float64
	// Burst is how many requests a full bucket admits at once, and the
	// X-RateLimit-Limit header.
	Burst int
}

// Validate rejects settings that the arithmetic cannot honour, so that a bad
// configuration fails at start-up rather than by admitting or refusing
// everything at run time. Burst is not checked when RPS is 0, since it is
// then unused.
func (c Config) Validate() error {
	switch {
	case math.IsNaN(c.RPS) || math.IsInf(c.RPS, 0) || c.RPS < 0:
		return fmt.Errorf("ratelimit: RPS is %v; it must be a finite number of requests per second, at least 0 (0 turns limiting off)", c.RPS)
	case c.RPS == 0:
		return nil
	case c.RPS > maxRPS:
		return fmt.Errorf("ratelimit: RPS is %v; it must be at most %g", c.RPS, float64(maxRPS))
	case c.Burst < 1:
		return fmt.Errorf("ratelimit: Burst is %d; it must be at least 1 when RPS is above 0", c.Burst)
	}
	// The float test guards the conversion in interval; the integer one
	// catches rounding at the edge.
	if float64(c.Burst)*float64(time.Second)/c.RPS >= float64(maxSpan) ||
		time.Duration(c.Burst) > maxSpan/c.interval() {
		return fmt.Errorf("ratelimit: Burst %d at RPS %v is too slow to refill; Burst/RPS must be under %.0f years",
			c.Burst, c.RPS, maxSpan.Hours()/24/365)
	}
	return nil
}

// interval is the emission interval, the time one request's token takes to
// come back. It is rounded to whole nanoseconds once, so that all later
// arithmetic is exact integer arithmetic and a Lua port can reproduce it.
func (c Config) interval() time.Duration {
	return time.Duration(math.Round(float64(time.Second) / c.RPS))
}

// gcra decides one request under the generic cell rate algorithm. It is pure
// arithmetic with no state of its own, so that the in-process limiter and a
// shared-store one (a Redis Lua script does the same sums) agree exactly.
//
// GCRA is a token bucket stored as a single timestamp, the theoretical arrival
// time (TAT): the instant at which the bucket would be full again if no more
// requests were allowed. With the emission interval T = 1/RPS and the span
// S = Burst*T (how long a drained bucket takes to refill):
//
//   - tat is the key's stored TAT; the zero time means the key is unknown. A
//     TAT at or before now means a full bucket, which is why such entries can
//     be forgotten without changing any later decision.
//   - Let base = max(tat, now) and wait = base + T - now, the debt the bucket
//     would carry after admitting this request. The request is allowed iff
//     wait <= S; that is, iff at least one whole token is in the bucket.
//   - Allowed: newTAT = base + T. Remaining = floor((S - wait) / T), the
//     whole tokens left; RetryAfter = 0; ResetAt = newTAT.
//   - Denied: newTAT = tat, unchanged, so a denied request consumes nothing
//     and a client hammering a closed bucket does not push its reopening
//     further away. Remaining = 0; RetryAfter = wait - S, the exact time until
//     wait shrinks to S; ResetAt = base.
//
// Worked example, RPS 2 and Burst 3 (T = 500ms, S = 1.5s), fresh key at t:
// three requests at t are allowed with Remaining 2, 1, 0 and ResetAt t+0.5s,
// t+1s, t+1.5s; a fourth at t is denied with RetryAfter 500ms and ResetAt
// t+1.5s; at t+500ms one more is allowed.
//
// All sums are on time.Duration nanoseconds, so there is no floating-point
// drift. cfg must have passed Validate with RPS above 0, which keeps S within
// a time.Duration; the comparison is written as (base-now) against S-T so
// that nothing overflows even if the clock steps far backwards. Then wait
// grows and requests are denied until the clock catches up: a clock fault
// never admits requests in excess.
//
// A Lua port keeps TAT in one key as integer microseconds from Redis TIME
// (Lua numbers are doubles, exact only to 2^53, so epoch nanoseconds would
// lose precision), writes newTAT only when allowed, and sets the key to
// expire at newTAT, which is the store's equivalent of forgetting full
// buckets. It computes T in microseconds, so its results may differ from
// these by under a microsecond per interval.
func gcra(tat, now time.Time, cfg Config) (newTAT time.Time, res Result) {
	t := cfg.interval()
	room := time.Duration(cfg.Burst-1) * t // S - T: the most debt base may carry
	base := tat
	if base.Before(now) {
		base = now
	}
	debt := base.Sub(now) // >= 0; saturates rather than overflows
	res.Limit = cfg.Burst
	if debt > room {
		res.RetryAfter = debt - room // = wait - S
		res.ResetAt = base
		return tat, res
	}
	newTAT = base.Add(t)
	res.Allowed = true
	res.Remaining = int((room - debt) / t) // = floor((S - wait) / T)
	res.ResetAt = newTAT
	return newTAT, res
}

// refund is gcra's inverse for one allowed request: the TAT moves back one
// emission interval, and a TAT that reaches now means a full bucket (ok
// false: forget the key).
func refund(tat, now time.Time, cfg Config) (newTAT time.Time, ok bool) {
	newTAT = tat.Add(-cfg.interval())
	return newTAT, newTAT.After(now)
}

// Unlimited is a Limiter that always allows (used when RPS is 0), so that the
// HTTP layer needs no special case for limiting being switched off.
type Unlimited struct{}

// Allow admits every request and reports Limit 0, telling the HTTP layer to
// omit the rate-limit headers.
func (Unlimited) Allow(context.Context, string) (Result, error) {
	return Result{Allowed: true}, nil
}

// Refund has nothing to give back.
func (Unlimited) Refund(context.Context, string) error { return nil }

var (
	_ Refunder = Unlimited{}
	_ Refunder = (*Memory)(nil)
)
