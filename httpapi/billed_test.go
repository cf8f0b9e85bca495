package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/gateway"
	"gatehouse/provider"
)

// The money rule of a failed call (provider.Billed): once the provider
// received the request, only its own refusal is free. Every other ending
// is charged, so that a key cannot make the operator pay a provider for
// work its usage never shows.

// billedCatalog is the catalog of these tests: acme serves a chat model
// (chat completions, Responses, presets) and an embedding model, with the
// first-byte and whole-call timeouts given.
func billedCatalog(t testing.TB, base string, firstByte, whole time.Duration) *provider.Catalog {
	return billedCatalogOf(t, "openai", base, firstByte, whole)
}

// upstreamTypes are the provider types the money rules are tried on: each
// speaks its own API (fakeUpstream's native).
var upstreamTypes = []string{"openai", "anthropic", "gemini"}

// billedCatalogOf is billedCatalog for a provider of type typ: one of
// another type than openai serves no embeddings.
func billedCatalogOf(t testing.TB, typ, base string, firstByte, whole time.Duration) *provider.Catalog {
	t.Helper()
	if typ != "openai" {
		c, err := provider.NewCatalog([]*provider.Provider{
			{ID: "acme", Type: typ, BaseURL: base, APIKey: "sk-native", Timeout: whole, FirstByteTimeout: firstByte, Models: []*provider.Model{
				{ID: "chat", Name: "Acme Chat", PromptPrice: chatPromptPrice, CompletionPrice: chatCompletionPrice,
					MaxCompletionTokens: chatMaxTokens, ContextLength: 8192}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	c, err := provider.NewCatalog([]*provider.Provider{
		{ID: "acme", BaseURL: base + "/v1", Timeout: whole, FirstByteTimeout: firstByte, Responses: true, Models: []*provider.Model{
			{ID: "chat", Name: "Acme Chat", PromptPrice: chatPromptPrice, CompletionPrice: chatCompletionPrice,
				MaxCompletionTokens: chatMaxTokens, ContextLength: 8192},
			{ID: "embed", Name: "Acme Embed", PromptPrice: embedPromptPrice, ContextLength: 8192,
				ModelInfo: provider.ModelInfo{OutputModalities: []string{"embeddings"}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// billedCall is one model call of these tests: an endpoint, whole or
// streamed.
type billedCall struct {
	name, path string
	body       map[string]any
	stream     bool
}

// billedCallsOf are the calls every ending is tried with, at a provider
// of type typ: chat completions, Responses and a preset, whole and
// streamed, and embeddings (which only the openai type serves).
func billedCallsOf(typ string, withStreams bool) []billedCall {
	if typ != "openai" {
		var calls []billedCall
		for _, c := range billedCallsOf("openai", withStreams) {
			if c.name != "embeddings" {
				calls = append(calls, c)
			}
		}
		return calls
	}
	user := []any{map[string]any{"role": "user", "content": "Say hello"}}
	var calls []billedCall
	for _, stream := range []bool{false, true} {
		if stream && !withStreams {
			continue
		}
		calls = append(calls,
			billedCall{"chat", "/api/v1/chat/completions", map[string]any{"model": "acme/chat", "messages": user, "stream": stream}, stream},
			billedCall{"responses", "/api/v1/responses", map[string]any{"model": "acme/chat", "input": "Say hello", "stream": stream}, stream},
			billedCall{"preset", "/api/v1/chat/completions", map[string]any{"model": "@preset/brief", "messages": user, "stream": stream}, stream},
		)
	}
	return append(calls, billedCall{"embeddings", "/api/v1/embeddings", map[string]any{"model": "acme/embed", "input": "hello"}, false})
}

// messagesCalls are the Messages API's calls every ending is tried with,
// whole and streamed: translated to the provider's type like a chat
// completion.
func messagesCalls(withStreams bool) []billedCall {
	user := []any{map[string]any{"role": "user", "content": "Say hello"}}
	var calls []billedCall
	for _, stream := range []bool{false, true} {
		if stream && !withStreams {
			continue
		}
		calls = append(calls, billedCall{"messages", "/api/v1/messages",
			map[string]any{"model": "acme/chat", "max_tokens": 100, "messages": user, "stream": stream}, stream})
	}
	return calls
}

// TestProviderReceivedIsCharged tries each way a call can fail after the
// provider received it, on every endpoint, whole and streamed: the
// provider stand-in counts the calls it received, and the key's usage
// pays for every one of them (the usage the answer reported when it could
// be read in full, else the reservation). The provider's own refusal, and
// a call that never reached it, charge nothing.
func TestProviderReceivedIsCharged(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name             string
		configure        func(*fakeUpstream)
		firstByte, whole time.Duration
		streams          bool // the ending applies to streams too
		status           int  // of a whole answer
		streamStatus     int
		usage            bool // charged the usage reported (else the reservation)
	}{
		{name: "first byte after the first-byte timeout", configure: func(u *fakeUpstream) { u.delay = 3 * time.Second },
			firstByte: 150 * time.Millisecond, whole: time.Minute, streams: true, status: 408, streamStatus: 408},
		{name: "answer still coming at the timeout", configure: func(u *fakeUpstream) { u.stall = time.Minute },
			firstByte: time.Minute, whole: 300 * time.Millisecond, streams: true, status: 408, streamStatus: 200},
		{name: "answer too large, with its usage", configure: func(u *fakeUpstream) { u.pad = gateway.MaxResponseBytes },
			firstByte: time.Minute, whole: time.Minute, status: 502, usage: true},
		{name: "answer too large, without usage", configure: func(u *fakeUpstream) { u.pad, u.noUsage = gateway.MaxResponseBytes, true },
			firstByte: time.Minute, whole: time.Minute, status: 502},
		{name: "answer not JSON", configure: func(u *fakeUpstream) { u.status, u.errBody, u.errType = 200, "not json", "text/plain" },
			firstByte: time.Minute, whole: time.Minute, streams: true, status: 502, streamStatus: 502},
		{name: "connection cut after the request", configure: func(u *fakeUpstream) { u.cut = true },
			firstByte: time.Minute, whole: time.Minute, streams: true, status: 502, streamStatus: 502},
	} {
		for _, typ := range upstreamTypes {
			t.Run(typ+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				e := newUpstreamEnv(t, func(u *fakeUpstream) {
					u.native = map[string]string{"openai": ""}[typ]
					if typ != "openai" {
						u.native = typ
					}
					c.configure(u)
				}, map[string]any{"limit": 10}, func(base string) *provider.Catalog {
					return billedCatalogOf(t, typ, base, c.firstByte, c.whole)
				}, withHealth(neverOpen()))
				e.savePreset(e.mgmt, "chat/completions", "brief", map[string]any{"model": "acme/chat", "temperature": 0.5,
					"messages": []any{map[string]any{"role": "system", "content": "Be brief."}}}, "")
				calls := append(billedCallsOf(typ, c.streams), messagesCalls(c.streams)...)
				for _, call := range calls {
					want := c.status
					if call.stream {
						want = c.streamStatus
					}
					res := e.postModel(call.path, e.key, call.body, nil)
					if res.Status != want {
						t.Errorf("%s stream %v: status %d, want %d: %.300s", call.name, call.stream, res.Status, want, res.Body)
						continue
					}
					if want == 200 && call.name == "messages" {
						evs := events(t, res.Body)
						if last := evs[len(evs)-1]; last.name != "error" || !strings.Contains(fmt.Sprint(last.data["error"]), "it was charged $") {
							t.Errorf("messages stream: the stream that broke off ends %v", last)
						}
					} else if want >= 400 && call.name == "messages" {
						if got := res.anthropicError(t); !strings.Contains(got.Error.Message, "so it was charged $") {
							t.Errorf("%s stream %v: the error does not say what was charged: %+v", call.name, call.stream, got)
						}
					} else if want >= 400 {
						got := res.apiError(t)
						if got.Metadata["generation_id"] == nil || got.Metadata["cost"] == nil || !strings.Contains(got.Message, "so it was charged $") {
							t.Errorf("%s stream %v: the error does not say what was charged: %+v", call.name, call.stream, got)
						}
					}
				}
				e.wantEveryReceivedCallPaid(len(calls), c.usage)
			})
		}
	}
}

// wantEveryReceivedCallPaid checks that the provider received n calls
// and that the key paid for each: one ledger entry each, none left
// reserved, charged the usage reported (completed) when usage says so,
// else the reservation (partial); and that the key's usage is their sum.
func (e *chatEnv) wantEveryReceivedCallPaid(n int, usage bool) {
	e.t.Helper()
	if got := len(e.up.requests()); got != n {
		e.t.Fatalf("the provider received %d calls, want %d", got, n)
	}
	var statuses []string
	var costs []gatehouse.Money
	held := 1
	// A generous deadline: these tests run many calls in parallel, on a
	// machine that may be busy.
	for deadline := time.Now().Add(30 * time.Second); (len(statuses) < n || held != 0) && time.Now().Before(deadline); {
		e.settled()
		statuses, costs, held = e.ledger(e.hash)
		if len(statuses) < n || held != 0 {
			time.Sleep(20 * time.Millisecond)
		}
	}
	want := "partial"
	if usage {
		want = "completed"
	}
	var sum gatehouse.Money
	for i, s := range statuses {
		if s != want || costs[i] <= 0 {
			e.t.Errorf("ledger entry %d: %s at %s, want %s and paid", i, s, costs[i], want)
		}
		sum += costs[i]
	}
	if len(statuses) != n || held != 0 {
		e.t.Errorf("ledger %v %v, %d reservations open; want %d entries, none open", statuses, costs, held, n)
	}
	if m := e.money(e.hash); m.Usage != sum || sum == 0 {
		e.t.Errorf("key usage %s, want the ledger's %s", m.Usage, sum)
	}
}

// TestProviderReceivedUsageExact: an answer too large to deliver is charged
// exactly what its usage costs, as a delivered one is.
func TestProviderReceivedUsageExact(t *testing.T) {
	t.Parallel()
	e := newUpstreamEnv(t, func(u *fakeUpstream) { u.pad = gateway.MaxResponseBytes + 1 }, nil, func(base string) *provider.Catalog {
		return billedCatalog(t, base, time.Minute, time.Minute)
	})
	got := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusBadGateway).apiError(t)
	if !strings.Contains(got.Message, "larger than the 16 MiB Gatehouse delivers") {
		t.Errorf("message %q", got.Message)
	}
	if m := e.money(e.hash); m.Usage != chatCost(11, 7) {
		t.Errorf("usage %s, want %s", m.Usage, chatCost(11, 7))
	}
	if got.Metadata["cost"] != usdFloat(chatCost(11, 7)) {
		t.Errorf("cost in the error %v, want %s", got.Metadata["cost"], chatCost(11, 7))
	}
}

// TestProviderReceivedClientLeft: a client that leaves does not make the
// call free: a whole answer is awaited and charged its usage, a stream is
// charged what was reserved.
func TestProviderReceivedClientLeft(t *testing.T) {
	t.Parallel()
	for _, typ := range upstreamTypes {
		e := newUpstreamEnv(t, func(u *fakeUpstream) {
			u.delay = 500 * time.Millisecond
			if typ != "openai" {
				u.native = typ
			}
		}, nil, func(base string) *provider.Catalog {
			return billedCatalogOf(t, typ, base, time.Minute, time.Minute)
		})
		for i, stream := range []bool{false, true} {
			data, _ := json.Marshal(chatBody("acme/chat", "stream", stream))
			// The client leaves once the provider has the request (and
			// delays its answer), however long that took.
			ctx, cancel := context.WithCancel(context.Background())
			go func() {
				for len(e.up.requests()) <= i && ctx.Err() == nil {
					time.Sleep(5 * time.Millisecond)
				}
				cancel()
			}()
			req := httptest.NewRequest("POST", "/api/v1/chat/completions", bytes.NewReader(data)).WithContext(ctx)
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.key)
			e.handler.ServeHTTP(httptest.NewRecorder(), req)
			cancel()
		}
		statuses := e.waitLedger(2)
		slices.Sort(statuses)
		if fmt.Sprint(statuses) != "[completed partial]" {
			t.Errorf("%s: ledger %v: want the whole answer charged its usage, the stream its reservation", typ, statuses)
		}
		if got := len(e.up.requests()); got != 2 {
			t.Errorf("%s: the provider received %d calls", typ, got)
		}
	}
}

// waitLedger waits until the key has n ledger entries and no open
// reservation, and returns their statuses.
func (e *chatEnv) waitLedger(n int) []string {
	e.t.Helper()
	var statuses []string
	held := 1
	for deadline := time.Now().Add(10 * time.Second); (len(statuses) < n || held != 0) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		e.settled()
		statuses, _, held = e.ledger(e.hash)
	}
	return statuses
}

// TestProviderRefusalIsFree: the provider's own refusal (an error status,
// which providers do not bill) and a call that never reached it charge
// nothing, on every endpoint.
func TestProviderRefusalIsFree(t *testing.T) {
	t.Parallel()
	for _, typ := range upstreamTypes {
		// Each type's own overloaded answer, and another provider's shape.
		for _, errBody := range []string{`{"error":{"message":"overloaded"}}`, map[string]string{
			"openai":    `{"error":{"message":"overloaded","type":"server_error"}}`,
			"anthropic": `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			"gemini":    `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`}[typ]} {
			e := newUpstreamEnv(t, func(u *fakeUpstream) {
				u.status, u.errBody = 503, errBody
				if typ != "openai" {
					u.native = typ
				}
			}, nil, func(base string) *provider.Catalog { return billedCatalogOf(t, typ, base, time.Minute, time.Minute) }, withHealth(neverOpen()))
			e.savePreset(e.mgmt, "chat/completions", "brief", map[string]any{"model": "acme/chat"}, "")
			calls := billedCallsOf(typ, true)
			for _, call := range calls {
				res := e.postModel(call.path, e.key, call.body, nil)
				if res.Status != 503 {
					t.Errorf("%s: %s stream %v: status %d", typ, call.name, call.stream, res.Status)
					continue
				}
				if got := res.apiError(t); !strings.Contains(strings.ToLower(got.Message), "overloaded") {
					t.Errorf("%s: %s: message %q", typ, call.name, got.Message)
				}
			}
			if got := len(e.up.requests()); got != len(calls) {
				t.Errorf("%s: the provider received %d calls, want %d", typ, got, len(calls))
			}
			e.wantNothingCharged(e.hash)
		}

		gone := httptest.NewServer(http.NotFoundHandler())
		gone.Close()
		e := newUpstreamEnv(t, nil, nil, func(string) *provider.Catalog { return billedCatalogOf(t, typ, gone.URL, time.Minute, time.Minute) }, withHealth(neverOpen()))
		e.savePreset(e.mgmt, "chat/completions", "brief", map[string]any{"model": "acme/chat"}, "")
		for _, call := range billedCallsOf(typ, true) {
			if res := e.postModel(call.path, e.key, call.body, nil); res.Status != 502 {
				t.Errorf("%s unreachable: %s stream %v: status %d", typ, call.name, call.stream, res.Status)
			}
		}
		e.wantNothingCharged(e.hash)
	}
}

// neverOpen is a health record whose circuits never open: the tests that
// fail one endpoint on purpose, again and again, see every failure.
func neverOpen() *provider.Health { return &provider.Health{FailureThreshold: 1 << 30} }
