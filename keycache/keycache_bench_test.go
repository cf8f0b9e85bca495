package keycache_test

import (
	"context"
	"fmt"
	"testing"

	"gatehouse"
	"gatehouse/keycache"
)

// mapStore answers FindKeyByHash from a map; the benchmarks measure the
// cache in front of it, so the store is never reached once warm.
type mapStore struct {
	gatehouse.Store
	keys map[string]*gatehouse.Key
}

func (s *mapStore) FindKeyByHash(ctx context.Context, hash string) (*gatehouse.Key, error) {
	if k, ok := s.keys[hash]; ok {
		return k, nil
	}
	return nil, gatehouse.NotFound("key", hash)
}

// warmCache returns a cache holding n keys, and their plaintexts.
func warmCache(b *testing.B, n int) (*keycache.Cache, []string) {
	b.Helper()
	store := &mapStore{keys: map[string]*gatehouse.Key{}}
	plaintexts := make([]string, n)
	for i := range plaintexts {
		plaintexts[i] = gatehouse.NewKeySecret(false)
		h := gatehouse.HashKey(plaintexts[i])
		store.keys[h] = &gatehouse.Key{Hash: h, OrganizationID: "org", WorkspaceID: "ws", Name: fmt.Sprint("key ", i)}
	}
	cache := keycache.New(store, keycache.Options{})
	for _, p := range plaintexts {
		if _, err := cache.FindKeyByHash(context.Background(), gatehouse.HashKey(p)); err != nil {
			b.Fatal(err)
		}
	}
	return cache, plaintexts
}

// BenchmarkFindKeyByHashWarm is the lookup alone, on a warm cache.
func BenchmarkFindKeyByHashWarm(b *testing.B) {
	cache, plaintexts := warmCache(b, 10_000)
	hashes := make([]string, len(plaintexts))
	for i, p := range plaintexts {
		hashes[i] = gatehouse.HashKey(p)
	}
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := cache.FindKeyByHash(ctx, hashes[i%len(hashes)]); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAuthenticateCached is the in-process cost of authenticating a
// cached key: hashing the presented plaintext, then the lookup. The target
// is under 1 µs.
func BenchmarkAuthenticateCached(b *testing.B) {
	cache, plaintexts := warmCache(b, 10_000)
	ctx := context.Background()
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, err := cache.FindKeyByHash(ctx, gatehouse.HashKey(plaintexts[i%len(plaintexts)])); err != nil {
			b.Fatal(err)
		}
		i++
	}
}

// BenchmarkAuthenticateCachedParallel is the same from every core at once,
// which shows contention on the cache's locks.
func BenchmarkAuthenticateCachedParallel(b *testing.B) {
	cache, plaintexts := warmCache(b, 10_000)
	ctx := context.Background()
	b.ReportAllocs()
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		i := 0
		for pb.Next() {
			if _, err := cache.FindKeyByHash(ctx, gatehouse.HashKey(plaintexts[i%len(plaintexts)])); err != nil {
				b.Error(err)
				return
			}
			i++
		}
	})
}
