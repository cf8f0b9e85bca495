package ratelimit

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// redisClient connects to GATEHOUSE_TEST_REDIS_URL or skips the test.
func redisClient(t *testing.T) *redis.Client {
	t.Helper()
	u := os.Getenv("GATEHOUSE_TEST_REDIS_URL")
	if u == "" {
		t.Skip("GATEHOUSE_TEST_REDIS_URL is not set: skipping the Redis tests (set it to e.g. redis://127.0.0.1:6379/0)")
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	c := redis.NewClient(opts)
	t.Cleanup(func() { c.Close() })
	if err := c.Ping(context.Background()).Err(); err != nil {
		t.Fatalf("redis: %v", err)
	}
	return c
}

// testPrefix returns a key prefix of its own for one test, so runs never
// collide; the test's keys are deleted when it ends.
func testPrefix(t *testing.T, client *redis.Client) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	prefix := "gatehouse-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		ctx := context.Background()
		keys, err := client.Keys(ctx, prefix+"*").Result()
		if err == nil && len(keys) > 0 {
			client.Del(ctx, keys...)
		}
	})
	return prefix
}

func TestRedisSharedBucket(t *testing.T) {
	client := redisClient(t)
	cfg := Config{RPS: 0.001, Burst: 3} // one token per 1000 s: nothing refills during the test
	prefix := testPrefix(t, client)
	// Two limiters on one Redis stand for two server instances.
	a := NewRedis(client, cfg, prefix, NewMemory(cfg, nil), func(err error) { t.Errorf("unexpected fallback: %v", err) })
	b := NewRedis(client, cfg, prefix, NewMemory(cfg, nil), func(err error) { t.Errorf("unexpected fallback: %v", err) })
	ctx := context.Background()
	wantRemaining := []int{2, 1, 0}
	for i, l := range []*Redis{a, b, a} {
		res, err := l.Allow(ctx, "k")
		if err != nil || !res.Allowed || res.Remaining != wantRemaining[i] || res.Limit != 3 {
			t.Fatalf("request %d: %+v, %v; want allowed with %d remaining", i, res, err, wantRemaining[i])
		}
	}
	res, err := b.Allow(ctx, "k")
	if err != nil || res.Allowed {
		t.Fatalf("4th request across instances: %+v, %v; want denied", res, err)
	}
	if res.RetryAfter < 990*time.Second || res.RetryAfter > 1000*time.Second {
		t.Errorf("RetryAfter = %v, want about 1000s", res.RetryAfter)
	}
	if until := time.Until(res.ResetAt); until < 2990*time.Second || until > 3001*time.Second {
		t.Errorf("ResetAt in %v, want about 3000s", until)
	}
	// Another key has its own bucket.
	if res, _ := a.Allow(ctx, "other"); !res.Allowed {
		t.Errorf("another key was denied: %+v", res)
	}
}

func TestRedisRefills(t *testing.T) {
	client := redisClient(t)
	cfg := Config{RPS: 20, Burst: 1} // one token every 50 ms
	l := NewRedis(client, cfg, testPrefix(t, client), NewMemory(cfg, nil), nil)
	ctx := context.Background()
	if res, _ := l.Allow(ctx, "k"); !res.Allowed {
		t.Fatal("first request denied")
	}
	res, _ := l.Allow(ctx, "k")
	if res.Allowed {
		t.Fatal("second request within 50ms allowed")
	}
	time.Sleep(res.RetryAfter + 5*time.Millisecond)
	if res, _ := l.Allow(ctx, "k"); !res.Allowed {
		t.Fatalf("request after RetryAfter denied: %+v", res)
	}
}

func TestRedisConcurrentNeverExceedsBurst(t *testing.T) {
	client := redisClient(t)
	cfg := Config{RPS: 0.001, Burst: 10}
	prefix := testPrefix(t, client)
	var allowed atomic.Int64
	var wg sync.WaitGroup
	for i := 0; i < 4; i++ { // four "instances"
		l := NewRedis(client, cfg, prefix, NewMemory(cfg, nil), func(err error) { t.Errorf("fallback: %v", err) })
		for j := 0; j < 10; j++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				if res, err := l.Allow(context.Background(), "k"); err == nil && res.Allowed {
					allowed.Add(1)
				}
			}()
		}
	}
	wg.Wait()
	if got := allowed.Load(); got != 10 {
		t.Errorf("allowed %d of 40 concurrent requests across 4 instances, want exactly the burst, 10", got)
	}
}

func TestRedisUnreachableFallsBack(t *testing.T) {
	// A port nothing listens on: Redis is down.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	client := redis.NewClient(&redis.Options{Addr: addr, DialTimeout: 100 * time.Millisecond, MaxRetries: -1})
	defer client.Close()
	cfg := Config{RPS: 0.001, Burst: 2}
	var failures atomic.Int64
	l := NewRedis(client, cfg, "x:", NewMemory(cfg, nil), func(err error) {
		if err == nil || errors.Is(err, context.Canceled) {
			t.Errorf("fallback reported %v", err)
		}
		failures.Add(1)
	})
	ctx := context.Background()
	start := time.Now()
	for i, want := range []bool{true, true, false} {
		res, err := l.Allow(ctx, "k")
		if err != nil || res.Allowed != want {
			t.Fatalf("request %d: %+v, %v; want allowed=%v from the in-process fallback", i, res, err, want)
		}
	}
	if failures.Load() != 1 {
		t.Errorf("reported %d failures, want 1 (Redis is skipped for a second after a failure)", failures.Load())
	}
	if d := time.Since(start); d > 2*time.Second {
		t.Errorf("falling back took %v; requests must not wait on a dead Redis", d)
	}
}

// TestRedisClientGoneKeepsShared: a request whose client has hung up (its
// context canceled) is still counted in the shared bucket, and does not
// put the limiter in its per-process fallback, which would give every key
// a second burst on every instance.
func TestRedisClientGoneKeepsShared(t *testing.T) {
	client := redisClient(t)
	cfg := Config{RPS: 0.001, Burst: 2}
	prefix := testPrefix(t, client)
	l := NewRedis(client, cfg, prefix, NewMemory(cfg, nil), func(err error) { t.Errorf("fallback on a client gone: %v", err) })
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	if res, err := l.Allow(gone, "k"); err != nil || !res.Allowed || res.Remaining != 1 {
		t.Fatalf("a request of a client gone: %+v, %v; want it counted in Redis", res, err)
	}
	ctx := context.Background()
	if res, _ := l.Allow(ctx, "k"); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("the next request: %+v, want the shared bucket's last token", res)
	}
	if res, _ := l.Allow(ctx, "k"); res.Allowed {
		t.Fatalf("a third request was allowed: %+v (a per-process fallback would)", res)
	}
}

// TestRedisRefund: a refund gives one request back to the shared bucket,
// seen by every instance, and never fills it past full.
func TestRedisRefund(t *testing.T) {
	client := redisClient(t)
	cfg := Config{RPS: 0.001, Burst: 2}
	prefix := testPrefix(t, client)
	a := NewRedis(client, cfg, prefix, NewMemory(cfg, nil), func(err error) { t.Errorf("fallback: %v", err) })
	b := NewRedis(client, cfg, prefix, NewMemory(cfg, nil), func(err error) { t.Errorf("fallback: %v", err) })
	ctx := context.Background()
	a.Allow(ctx, "k")
	a.Allow(ctx, "k")
	if res, _ := b.Allow(ctx, "k"); res.Allowed {
		t.Fatal("a third request of a burst of 2 was allowed")
	}
	if err := a.Refund(ctx, "k"); err != nil {
		t.Fatal(err)
	}
	if res, _ := b.Allow(ctx, "k"); !res.Allowed || res.Remaining != 0 {
		t.Fatalf("after a refund on another instance: %+v, want the one token back", res)
	}
	for range 5 {
		if err := b.Refund(ctx, "k"); err != nil {
			t.Fatal(err)
		}
	}
	if n, _ := client.Exists(ctx, prefix+"k").Result(); n != 0 {
		t.Error("a bucket refunded to full is still stored")
	}
	for i, want := range []bool{true, true, false} {
		if res, _ := a.Allow(ctx, "k"); res.Allowed != want {
			t.Fatalf("request %d after refunds past full: %+v, want allowed=%v", i, res, want)
		}
	}
	if err := a.Refund(ctx, "never"); err != nil {
		t.Fatal(err)
	}
	if n, _ := client.Exists(ctx, prefix+"never").Result(); n != 0 {
		t.Error("a refund of an unknown key stored it")
	}
}
