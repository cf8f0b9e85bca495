package httpapi_test

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/httpapi"
	"gatehouse/keycache"
	"gatehouse/ratelimit"
	"gatehouse/sqlite"

	"github.com/prometheus/client_golang/prometheus"
)

// discard is a ResponseWriter that keeps nothing but a fresh header map per
// response, as net/http gives each.
type discard struct{ h http.Header }

func (w *discard) Header() http.Header         { return w.h }
func (w *discard) Write(p []byte) (int, error) { return len(p), nil }
func (w *discard) WriteHeader(int)             {}

// BenchmarkServeReads is the handler's own cost of the reads served from
// the cache (a warm one, on SQLite), with the production JSON request log
// (to io.Discard) and metrics: everything but net/http's connection work.
func BenchmarkServeReads(b *testing.B) {
	ctx := context.Background()
	box, _ := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	db, err := sqlite.Open(ctx, filepath.Join(b.TempDir(), "g.db"), box)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { db.Close() })
	store := keycache.New(db, keycache.Options{})
	org, err := store.CreateOrganization(ctx, "org")
	if err != nil {
		b.Fatal(err)
	}
	_, mgmt, err := store.CreateManagementKey(ctx, org.ID, "mgmt")
	if err != nil {
		b.Fatal(err)
	}
	k, regular, err := store.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "k", Limit: new(gatehouse.USD(25)), LimitReset: gatehouse.Monthly})
	if err != nil {
		b.Fatal(err)
	}
	var g *gatehouse.Guardrail
	for i := range 100 {
		if g, err = store.CreateGuardrail(ctx, org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{
			Name: gatehouse.Val("g" + string(rune('a'+i%26)) + string(rune('a'+i/26))), AllowedProviders: gatehouse.Val([]string{"openai", "anthropic"}),
			LimitUSD: gatehouse.Val(gatehouse.USD(50)), ResetInterval: gatehouse.Val(gatehouse.Monthly)}}); err != nil {
			b.Fatal(err)
		}
	}
	logger := slog.New(slog.NewJSONHandler(io.Discard, nil))
	h := httpapi.NewHandler(store, ratelimit.Unlimited{}, logger, prometheus.NewRegistry(), time.Now, httpapi.DataPlane{})
	for _, c := range []struct{ name, path, key string }{
		{"get-key", "/api/v1/key", regular},
		{"get-key-by-hash", "/api/v1/keys/" + k.Hash, mgmt},
		{"get-guardrail", "/api/v1/guardrails/" + g.ID, mgmt},
		{"list-guardrails", "/api/v1/guardrails?limit=100", mgmt},
	} {
		b.Run(c.name, func(b *testing.B) {
			r := httptest.NewRequest("GET", c.path, nil)
			r.Header.Set("Authorization", "Bearer "+c.key)
			r.RemoteAddr = "127.0.0.1:5000"
			w := &discard{}
			b.ReportAllocs()
			for b.Loop() {
				w.h = http.Header{}
				h.ServeHTTP(w, r)
			}
		})
	}
}
