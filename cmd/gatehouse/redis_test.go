package main

import (
	"context"
	"net"
	"net/http"
	"os"
	"strings"
	"testing"

	"gatehouse"

	"github.com/redis/go-redis/v9"
)

// redisURL returns GATEHOUSE_TEST_REDIS_URL or skips the test.
func redisURL(t *testing.T) string {
	t.Helper()
	u := os.Getenv("GATEHOUSE_TEST_REDIS_URL")
	if u == "" {
		t.Skip("GATEHOUSE_TEST_REDIS_URL is not set: skipping the Redis tests (set it to e.g. redis://127.0.0.1:6379/0)")
	}
	return u
}

// TestRateLimitSharedAcrossInstances: two processes with one Redis enforce
// one bucket per key between them.
func TestRateLimitSharedAcrossInstances(t *testing.T) {
	vars, mgmt := pgInstances(t)
	vars["GATEHOUSE_REDIS_URL"] = redisURL(t)
	vars["GATEHOUSE_RATE_LIMIT_RPS"] = "0.01" // nothing refills during the test
	vars["GATEHOUSE_RATE_LIMIT_BURST"] = "4"
	servers := startInstances(t, vars, 2)
	t.Cleanup(func() { deleteBuckets(t, vars["GATEHOUSE_REDIS_URL"], mgmt) })
	var statuses []int
	for i := range 6 {
		status, _ := servers[i%2].do("GET", "/api/v1/key", mgmt, nil)
		statuses = append(statuses, status)
	}
	want := []int{200, 200, 200, 200, 429, 429}
	for i := range want {
		if statuses[i] != want[i] {
			t.Fatalf("statuses across the two instances: %v, want %v (one bucket of 4 shared)", statuses, want)
		}
	}
}

// testMgmtKey is a bootstrap management key for tests that need a known one.
const testMgmtKey = "sk-gh-mgmt-v1-0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// hashOf returns the hash of a plaintext key.
func hashOf(key string) string { return gatehouse.HashKey(key) }

// deleteBuckets removes the rate-limit buckets a test left in Redis.
func deleteBuckets(t *testing.T, url, key string) {
	opts, err := redis.ParseURL(url)
	if err != nil {
		t.Error(err)
		return
	}
	c := redis.NewClient(opts)
	defer c.Close()
	ctx := context.Background()
	keys, _ := c.Keys(ctx, "gatehouse:ratelimit:key:"+hashOf(key)).Result()
	ips, _ := c.Keys(ctx, "gatehouse:ratelimit:ip:*").Result()
	if all := append(keys, ips...); len(all) > 0 {
		c.Del(ctx, all...)
	}
}

// TestRedisDownDegrades: with Redis unreachable, requests keep being served
// under per-process limits, with a logged warning and a metric.
func TestRedisDownDegrades(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nothing listens there now
	dir := t.TempDir()
	s := startServer(t, map[string]string{
		"GATEHOUSE_DATABASE_URL":             dir + "/g.db",
		"GATEHOUSE_REDIS_URL":                "redis://" + addr + "/0",
		"GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY": testMgmtKey,
		"GATEHOUSE_RATE_LIMIT_BURST":         "3",
		"GATEHOUSE_RATE_LIMIT_RPS":           "0.01",
	}, "--addr", "127.0.0.1:0")
	var statuses []int
	for range 4 {
		status, _ := s.do("GET", "/api/v1/key", testMgmtKey, nil)
		statuses = append(statuses, status)
	}
	if statuses[0] != 200 || statuses[2] != 200 || statuses[3] != http.StatusTooManyRequests {
		t.Errorf("statuses with Redis down: %v, want 200 200 200 429 from the per-process fallback", statuses)
	}
	if !strings.Contains(s.stderr.String(), "redis unavailable") {
		t.Errorf("no warning logged:\n%s", s.stderr)
	}
	_, metrics := s.get("/metrics")
	if !strings.Contains(metrics, "gatehouse_ratelimit_redis_fallbacks_total") ||
		strings.Contains(metrics, "gatehouse_ratelimit_redis_fallbacks_total 0\n") {
		t.Errorf("fallback metric missing or zero")
	}
}
