package ratelimit

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"
)

// gcraScript runs gcra's decision atomically in Redis, on Redis's clock, so
// that every instance shares one bucket per key and clock skew between
// instances does not matter. Times are integer microseconds (Lua numbers
// are doubles, exact to 2^53). It stores the new TAT only when the request
// is allowed, with an expiry at that TAT: a full bucket carries no state.
//
// KEYS[1] the bucket; ARGV[1] the emission interval T; ARGV[2] S - T.
// Returns {allowed (0/1), base = max(tat, now), now}.
var gcraScript = redis.NewScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local interval = tonumber(ARGV[1])
local room = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
local base = tat
if base < now then base = now end
if base - now > room then
  return {0, base, now}
end
local newtat = base + interval
redis.call('SET', KEYS[1], newtat, 'PX', math.ceil((newtat - now) / 1000) + 1)
return {1, base, now}
`)

// refundScript gives one request back (see refund): the TAT moves back one
// interval; a TAT that reaches now is a full bucket, and the key goes.
//
// KEYS[1] the bucket; ARGV[1] the emission interval T.
var refundScript = redis.NewScript(`
local tat = tonumber(redis.call('GET', KEYS[1]) or '0')
if tat == 0 then return 0 end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])
local newtat = tat - tonumber(ARGV[1])
if newtat <= now then
  redis.call('DEL', KEYS[1])
else
  redis.call('SET', KEYS[1], newtat, 'PX', math.ceil((newtat - now) / 1000) + 1)
end
return 1
`)

// Redis is a Limiter whose buckets live in Redis, shared by every instance.
// When Redis cannot answer, it falls back to a per-process limiter and
// reports the failure through onFallback, so that requests keep being
// served; after a failure it leaves Redis alone for a second rather than
// making every request wait for a dead server.
type Redis struct {
	client     redis.Scripter
	cfg        Config
	prefix     string
	fallback   Limiter
	onFallback func(error)
	timeout    time.Duration
	downUntil  atomic.Int64 // unix nanos until which Redis is skipped
}

// NewRedis returns a limiter on client with the given config. Keys are
// stored under prefix; fallback answers while Redis is unreachable, and
// onFallback (which may be nil) hears of each failure.
func NewRedis(client redis.Scripter, cfg Config, prefix string, fallback Limiter, onFallback func(error)) *Redis {
	if onFallback == nil {
		onFallback = func(error) {}
	}
	return &Redis{client: client, cfg: cfg, prefix: prefix, fallback: fallback, onFallback: onFallback,
		timeout: 250 * time.Millisecond}
}

// Allow takes one request from the key's shared bucket.
func (r *Redis) Allow(ctx context.Context, key string) (Result, error) {
	if r.cfg.RPS == 0 {
		return Result{Allowed: true}, nil
	}
	if time.Now().UnixNano() < r.downUntil.Load() {
		return r.fallback.Allow(ctx, key)
	}
	res, err := r.allow(ctx, key)
	if err != nil {
		r.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		r.onFallback(err)
		return r.fallback.Allow(ctx, key)
	}
	return res, nil
}

// Refund gives one request back to the key's shared bucket (see
// Refunder); while Redis is down, to the fallback's, where the request was
// taken. A fallback that cannot refund keeps the token spent.
func (r *Redis) Refund(ctx context.Context, key string) error {
	if r.cfg.RPS == 0 {
		return nil
	}
	if time.Now().UnixNano() < r.downUntil.Load() {
		return r.refundFallback(ctx, key)
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	if err := refundScript.Run(ctx, r.client, []string{r.prefix + key}, r.micros()).Err(); err != nil {
		r.downUntil.Store(time.Now().Add(time.Second).UnixNano())
		r.onFallback(err)
		return r.refundFallback(ctx, key)
	}
	return nil
}

func (r *Redis) refundFallback(ctx context.Context, key string) error {
	if f, ok := r.fallback.(Refunder); ok {
		return f.Refund(ctx, key)
	}
	return nil
}

// micros is the emission interval in whole microseconds, at least one.
func (r *Redis) micros() int64 {
	return max(r.cfg.interval().Microseconds(), 1)
}

func (r *Redis) allow(ctx context.Context, key string) (Result, error) {
	// Not the request's context: a client that hangs up must not make the
	// call fail and put the limiter in its per-process fallback (which
	// would give every key a second burst on every instance). Only Redis
	// failing within the timeout does.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), r.timeout)
	defer cancel()
	t := r.micros()
	room := int64(r.cfg.Burst-1) * t
	v, err := gcraScript.Run(ctx, r.client, []string{r.prefix + key}, t, room).Int64Slice()
	if err != nil {
		return Result{}, err
	}
	if len(v) != 3 {
		return Result{}, fmt.Errorf("ratelimit: unexpected script reply %v", v)
	}
	return resultOf(v[0] == 1, v[1], v[2], t, room, r.cfg.Burst), nil
}

// resultOf derives a Result from the script's decision, in microseconds, by
// gcra's formulas.
func resultOf(allowed bool, base, now, t, room int64, burst int) Result {
	res := Result{Allowed: allowed, Limit: burst}
	debt := base - now
	if !allowed {
		res.RetryAfter = time.Duration(debt-room) * time.Microsecond
		res.ResetAt = time.UnixMicro(base)
		return res
	}
	res.Remaining = int((room - debt) / t)
	res.ResetAt = time.UnixMicro(base + t)
	return res
}

var _ Refunder = (*Redis)(nil)
