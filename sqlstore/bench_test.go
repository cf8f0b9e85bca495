package sqlstore_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
)

// BenchmarkReads measures the hottest store reads on each engine (the
// database on the same machine): a key by hash (every authenticated
// request), a guardrail, and a page of 100 guardrails. Each op's allocations
// tell the row mapping's cost apart from the database's.
func BenchmarkReads(b *testing.B) {
	ctx := context.Background()
	stores := map[string]gatehouse.Store{"sqlite": openSQLite(b, "bench.db")}
	if os.Getenv("GATEHOUSE_TEST_POSTGRES_URL") != "" {
		db, err := postgres.Open(ctx, pgtest.NewDatabase(b), box(b), postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { db.Close() })
		stores["postgres"] = db
	}
	for _, engine := range []string{"sqlite", "postgres"} {
		s := stores[engine]
		if s == nil {
			continue
		}
		org, hashes, guardrails := seedReads(b, s)
		b.Run(engine+"/FindKeyByHash", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.FindKeyByHash(ctx, hashes[i%len(hashes)]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(engine+"/FindGuardrail", func(b *testing.B) {
			b.ReportAllocs()
			for i := 0; b.Loop(); i++ {
				if _, err := s.FindGuardrail(ctx, org, guardrails[i%len(guardrails)]); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(engine+"/FindGuardrails100", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if list, _, err := s.FindGuardrails(ctx, org, "", gatehouse.Page{Limit: 100}); err != nil || len(list) != 100 {
					b.Fatal(len(list), err)
				}
			}
		})
	}
}

// seedReads makes an organization with 100 keys and 100 guardrails (with
// lists, a budget and flags, like real ones).
func seedReads(b *testing.B, s gatehouse.Store) (org string, hashes, guardrails []string) {
	ctx := context.Background()
	o, err := s.CreateOrganization(ctx, "Bench")
	if err != nil {
		b.Fatal(err)
	}
	limit := gatehouse.USD(10)
	for i := range 100 {
		k, _, err := s.CreateKey(ctx, o.ID, gatehouse.KeyCreate{Name: fmt.Sprintf("key %d", i), Limit: &limit, LimitReset: gatehouse.Monthly})
		if err != nil {
			b.Fatal(err)
		}
		g, err := s.CreateGuardrail(ctx, o.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
			Name: gatehouse.Val(fmt.Sprintf("guardrail %d", i)), AllowedModels: gatehouse.Val([]string{"openai/gpt-4o-mini", "anthropic/claude"}),
			IgnoredProviders: gatehouse.Val([]string{"xai"}), LimitUSD: gatehouse.Val(limit), ResetInterval: gatehouse.Val(gatehouse.Daily),
			EnforceZDR: gatehouse.Val(true)}})
		if err != nil {
			b.Fatal(err)
		}
		hashes, guardrails = append(hashes, k.Hash), append(guardrails, g.ID)
	}
	return o.ID, hashes, guardrails
}
