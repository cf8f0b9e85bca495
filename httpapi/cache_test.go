package httpapi_test

import (
	"net/http"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/meter"
	"gatehouse/provider"
)

// TestCachePricing: a model that prices its cache takes cache_control;
// its worst case counts every prompt token written to the cache at the
// cache write price; the answer is charged its cache reads and writes at
// their prices, as the provider reported them (prompt_tokens_details),
// and the generation shows the cached tokens. Implicit caching (cache
// reads without cache_control) is priced from the usage alike.
func TestCachePricing(t *testing.T) {
	t.Parallel()
	read, write := gatehouse.USD(1), gatehouse.USD(30) // per million: prompt $10, reads $1, writes $30, completion $20
	var model *provider.Model
	e := newUpstreamEnv(t, func(u *fakeUpstream) {
		u.promptTokens, u.completionTokens = 100, 10
		u.tokenDetails = map[string]any{"prompt_tokens_details": map[string]any{"cached_tokens": 60, "cache_write_tokens": 30}}
	}, nil, func(base string) *provider.Catalog {
		model = &provider.Model{ID: "cached", PromptPrice: gatehouse.USD(10), CompletionPrice: gatehouse.USD(20),
			MaxCompletionTokens: 100, ModelInfo: provider.ModelInfo{CacheReadPrice: &read, CacheWritePrice: &write}}
		c, err := provider.NewCatalog([]*provider.Provider{{ID: "acme", BaseURL: base + "/v1", Timeout: 10 * time.Second,
			Models: []*provider.Model{model}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
	part := []any{map[string]any{"type": "text", "text": "a long document", "cache_control": map[string]any{"type": "ephemeral"}}}
	body := map[string]any{"model": "acme/cached", "messages": []any{map[string]any{"role": "user", "content": part}}}
	var answer struct {
		ID    string `json:"id"`
		Usage struct {
			Cost               float64        `json:"cost"`
			PromptTokensDetail map[string]any `json:"prompt_tokens_details"`
		} `json:"usage"`
	}
	e.chat(e.key, body).want(t, http.StatusOK).decode(t, &answer)
	// 10 uncached at $10, 60 reads at $1, 30 writes at $30, 10 completion at $20 (per million).
	want := gatehouse.Money((10*10 + 60*1 + 30*30 + 10*20) * 1000)
	if answer.Usage.Cost != usdFloat(want) {
		t.Errorf("cost %v, want %v", answer.Usage.Cost, usdFloat(want))
	}
	if answer.Usage.PromptTokensDetail["cached_tokens"] != 60.0 || answer.Usage.PromptTokensDetail["cache_write_tokens"] != 30.0 {
		t.Errorf("prompt_tokens_details %v", answer.Usage.PromptTokensDetail)
	}
	if m := e.money(e.hash); m.Usage != want {
		t.Errorf("usage %s, want %s", m.Usage, want)
	}
	var gen struct {
		Data struct {
			NativeTokensCached int64 `json:"native_tokens_cached"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+answer.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	if gen.Data.NativeTokensCached != 60 {
		t.Errorf("native_tokens_cached %d", gen.Data.NativeTokensCached)
	}
	// The worst case of a caching request prices the prompt at the write
	// price; without cache_control, at the prompt price.
	if got, plain := meter.EstimateCaching(model, 1000, 100), meter.Estimate(model, 1000, 100); got != model.UsageCost(provider.Usage{Prompt: 1016, CacheWrite: 1016, Completion: 100}) || got <= plain {
		t.Errorf("EstimateCaching %s, Estimate %s", got, plain)
	}
}

// TestCacheCountsReadExactly: cache counts that are not whole numbers, or
// that exceed the prompt's, make the usage unknown (charged the
// reservation), never cheaper.
func TestCacheCountsReadExactly(t *testing.T) {
	t.Parallel()
	for _, details := range []map[string]any{
		{"cached_tokens": 12},      // more than the 11 prompt tokens
		{"cached_tokens": "3"},     // a string
		{"cache_write_tokens": -1}, // negative
		{"cached_tokens": 1.5},     // a fraction
	} {
		e := newChatEnv(t, func(u *fakeUpstream) {
			u.tokenDetails = map[string]any{"prompt_tokens_details": details}
		}, nil)
		e.chat(e.key, chatBody("acme/exact", "max_tokens", 100)).want(t, http.StatusOK)
		if statuses, costs, _ := e.ledger(e.hash); len(statuses) != 1 || statuses[0] != "partial" || costs[0] != 100_000_000 {
			t.Errorf("%v: ledger %v %v, want the reservation charged", details, statuses, costs)
		}
	}
}
