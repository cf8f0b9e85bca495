package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/gateway"
	"gatehouse/internal/standin"
	"gatehouse/provider"
)

// Providers of types anthropic and gemini, reached through their own APIs
// (the strict stand-ins of internal/standin): every call is charged
// exactly what the usage the provider reported costs at the model's
// prices, cache reads and writes included.

// Prices of the native models, in nano-dollars per million tokens.
const (
	nativePrompt     = 3_000_000_000  // $3
	nativeCompletion = 15_000_000_000 // $15
	nativeRead       = 300_000_000    // $0.30
	nativeWrite      = 3_750_000_000  // $3.75
)

// nativeCatalog is a provider of type typ at base, serving model "chat"
// with cache prices.
func nativeCatalog(t testing.TB, typ, base string) *provider.Catalog {
	t.Helper()
	read, write := gatehouse.Money(nativeRead), gatehouse.Money(nativeWrite)
	c, err := provider.NewCatalog([]*provider.Provider{{ID: "acme", Type: typ, BaseURL: base, APIKey: "sk-native", Timeout: 10 * time.Second,
		Models: []*provider.Model{{ID: "chat", PromptPrice: nativePrompt, CompletionPrice: nativeCompletion, MaxCompletionTokens: 4096,
			ModelInfo: provider.ModelInfo{CacheReadPrice: &read, CacheWritePrice: &write}}}}})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// reportedCost prices a usage as the provider reported it, in its own
// names: Anthropic's input_tokens are the uncached prompt, Gemini's
// promptTokenCount counts its cached tokens; both bill thinking as
// output.
func reportedCost(u standin.Usage) gatehouse.Money {
	var total int64
	if _, ok := u["input_tokens"]; ok {
		total = u["input_tokens"]*nativePrompt + u["cache_read_input_tokens"]*nativeRead +
			u["cache_creation_input_tokens"]*nativeWrite + u["output_tokens"]*nativeCompletion
	} else {
		total = (u["promptTokenCount"]-u["cachedContentTokenCount"])*nativePrompt + u["cachedContentTokenCount"]*nativeRead +
			(u["candidatesTokenCount"]+u["thoughtsTokenCount"])*nativeCompletion
	}
	return gatehouse.Money((total + 999_999) / 1_000_000)
}

// answerCost reads usage.cost of a whole answer, or of a stream's usage
// chunk.
func answerCost(t *testing.T, res *response, stream bool) float64 {
	t.Helper()
	var a struct {
		Usage *struct {
			Cost float64 `json:"cost"`
		} `json:"usage"`
	}
	if !stream {
		res.decode(t, &a)
		if a.Usage == nil {
			t.Fatalf("no usage: %s", res.Body)
		}
		return a.Usage.Cost
	}
	for _, line := range strings.Split(string(res.Body), "\n") {
		data, ok := strings.CutPrefix(line, "data: ")
		if ok && data != "[DONE]" && json.Unmarshal([]byte(data), &a) == nil && a.Usage != nil {
			return a.Usage.Cost
		}
	}
	t.Fatalf("no usage chunk:\n%s", res.Body)
	return 0
}

// TestNativeUpstreamsMeteredExactly: chat completions to an Anthropic and
// a Gemini upstream, whole and streamed, with tools and thinking, each
// charged what its reported usage costs; Anthropic's cache_control writes
// the prompt to its cache and a later call reads it, Gemini's repeated
// prompt is read from its implicit cache, and both are priced at the
// cache prices.
func TestNativeUpstreamsMeteredExactly(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"anthropic", "gemini"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel()
			e := newUpstreamEnv(t, func(u *fakeUpstream) { u.native = typ }, nil, func(base string) *provider.Catalog { return nativeCatalog(t, typ, base) })
			system := map[string]any{"role": "system", "content": "You answer questions about the long shared document below."}
			if typ == "anthropic" {
				system["content"] = []any{map[string]any{"type": "text", "text": "You answer questions about the long shared document below.",
					"cache_control": map[string]any{"type": "ephemeral"}}}
			}
			user := map[string]any{"role": "user", "content": "What does it say?"}
			tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "search",
				"parameters": map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}}}}
			bodies := []map[string]any{
				{"model": "acme/chat", "messages": []any{system, user}},
				{"model": "acme/chat", "messages": []any{system, user}, "stream": true},
				{"model": "acme/chat", "messages": []any{system, user}, "tools": tools},
				{"model": "acme/chat", "messages": []any{system, user}, "stream": true, "tools": tools, "tool_choice": "required"},
				{"model": "acme/chat", "messages": []any{system, user}, "reasoning": map[string]any{"max_tokens": 2048}, "max_tokens": 4000},
				{"model": "acme/chat", "messages": []any{system, user}, "reasoning": map[string]any{"max_tokens": 2048}, "max_tokens": 4000, "stream": true},
			}
			var sum gatehouse.Money
			for i, b := range bodies {
				stream, _ := b["stream"].(bool)
				res := e.chat(e.key, b).want(t, http.StatusOK)
				reported := map[string]func() []standin.Usage{"anthropic": e.up.anthropic.Reported, "gemini": e.up.gemini.Reported}[typ]()
				if len(reported) != i+1 {
					t.Fatalf("call %d: the provider reported %d usages", i, len(reported))
				}
				want := reportedCost(reported[i])
				if got := answerCost(t, res, stream); got != usdFloat(want) {
					t.Errorf("call %d (%v): cost %v, want %v (usage %v)", i, b, got, usdFloat(want), reported[i])
				}
				sum += want
			}
			reported := map[string]func() []standin.Usage{"anthropic": e.up.anthropic.Reported, "gemini": e.up.gemini.Reported}[typ]()
			cacheRead := map[string]string{"anthropic": "cache_read_input_tokens", "gemini": "cachedContentTokenCount"}[typ]
			if reported[0][cacheRead] != 0 || reported[1][cacheRead] == 0 {
				t.Errorf("cache reads %v: want none the first time, some after", reported)
			}
			if typ == "anthropic" && reported[0]["cache_creation_input_tokens"] == 0 {
				t.Errorf("no cache write: %v", reported[0])
			}
			if m := e.money(e.hash); m.Usage != sum {
				t.Errorf("key usage %s, want %s", m.Usage, sum)
			}
		})
	}
}

// TestNativeUsageExact: an answer too large to deliver is charged exactly
// what its reported usage costs, as for OpenAI-compatible providers.
func TestNativeUsageExact(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"anthropic", "gemini"} {
		e := newUpstreamEnv(t, func(u *fakeUpstream) { u.native, u.pad = typ, gateway.MaxResponseBytes+1 }, nil,
			func(base string) *provider.Catalog { return nativeCatalog(t, typ, base) })
		got := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusBadGateway).apiError(t)
		reported := map[string]func() []standin.Usage{"anthropic": e.up.anthropic.Reported, "gemini": e.up.gemini.Reported}[typ]()
		if len(reported) != 1 {
			t.Fatalf("%s: %d usages", typ, len(reported))
		}
		if m := e.money(e.hash); m.Usage != reportedCost(reported[0]) || got.Metadata["cost"] != usdFloat(reportedCost(reported[0])) {
			t.Errorf("%s: usage %s, error %v; want %s", typ, m.Usage, got.Metadata["cost"], reportedCost(reported[0]))
		}
	}
}

// TestNativeFallback: an overloaded Anthropic (529) and a rate-limited
// Gemini (429) fall back to the next model, charging nothing for their
// refusal.
func TestNativeFallback(t *testing.T) {
	t.Parallel()
	anthropicSrv := newFakeUpstream(t, func(u *fakeUpstream) { u.native = "anthropic" })
	geminiSrv := newFakeUpstream(t, func(u *fakeUpstream) { u.native = "gemini" })
	e := newUpstreamEnv(t, nil, nil, func(string) *provider.Catalog {
		c, err := provider.NewCatalog([]*provider.Provider{
			{ID: "claude", Type: "anthropic", BaseURL: anthropicSrv.srv.URL, APIKey: "k", Timeout: 10 * time.Second, Models: []*provider.Model{
				{ID: "overloaded", PromptPrice: nativePrompt, CompletionPrice: nativeCompletion, MaxCompletionTokens: 100}}},
			{ID: "google", Type: "gemini", BaseURL: geminiSrv.srv.URL, APIKey: "k", Timeout: 10 * time.Second, Models: []*provider.Model{
				{ID: "rate-limited", PromptPrice: nativePrompt, CompletionPrice: nativeCompletion, MaxCompletionTokens: 100},
				{ID: "chat", PromptPrice: nativePrompt, CompletionPrice: nativeCompletion, MaxCompletionTokens: 100}}},
		})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}, withHealth(neverOpen()))
	var answer struct {
		Model   string `json:"model"`
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
	}
	e.chat(e.key, map[string]any{"models": []any{"claude/overloaded", "google/rate-limited", "google/chat"},
		"messages": []any{map[string]any{"role": "user", "content": "Say hello"}}}).want(t, http.StatusOK).decode(t, &answer)
	if answer.Model != "google/chat" || answer.Choices[0].Message.Content != "You said: Say hello" {
		t.Errorf("answer %+v", answer)
	}
	reported := geminiSrv.gemini.Reported()
	if m := e.money(e.hash); len(reported) != 1 || m.Usage != reportedCost(reported[0]) {
		t.Errorf("usage %s, reported %v", m.Usage, reported)
	}
}

// TestNativeResponsesAPI: the Responses API reaches a provider of
// another type, translated, whole and streamed, each call charged what
// its reported usage costs; a parameter the type cannot honour is a 400
// naming it, and nothing is charged for it.
func TestNativeResponsesAPI(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"anthropic", "gemini"} {
		e := newUpstreamEnv(t, func(u *fakeUpstream) { u.native = typ }, nil, func(base string) *provider.Catalog { return nativeCatalog(t, typ, base) })
		var sum gatehouse.Money
		for i, stream := range []bool{false, true} {
			res := e.postModel("/api/v1/responses", e.key, map[string]any{"model": "acme/chat", "instructions": "Be brief.", "input": "Say hello", "stream": stream}, nil).want(t, http.StatusOK)
			reported := map[string]func() []standin.Usage{"anthropic": e.up.anthropic.Reported, "gemini": e.up.gemini.Reported}[typ]()
			want := reportedCost(reported[i])
			var cost float64
			if !stream {
				var r struct {
					Object string `json:"object"`
					Output []struct {
						Content []struct {
							Text string `json:"text"`
						} `json:"content"`
					} `json:"output"`
					Usage struct {
						Cost float64 `json:"cost"`
					} `json:"usage"`
				}
				res.decode(t, &r)
				if r.Object != "response" || len(r.Output) != 1 || r.Output[0].Content[0].Text != "You said: Say hello" {
					t.Errorf("%s: response %s", typ, res.Body)
				}
				cost = r.Usage.Cost
			} else {
				for _, line := range strings.Split(string(res.Body), "\n") {
					var ev struct {
						Type     string `json:"type"`
						Response struct {
							Usage struct {
								Cost float64 `json:"cost"`
							} `json:"usage"`
						} `json:"response"`
					}
					if data, ok := strings.CutPrefix(line, "data: "); ok && json.Unmarshal([]byte(data), &ev) == nil && ev.Type == "response.completed" {
						cost = ev.Response.Usage.Cost
					}
				}
			}
			if cost != usdFloat(want) {
				t.Errorf("%s stream %v: cost %v, want %v\n%s", typ, stream, cost, usdFloat(want), res.Body)
			}
			sum += want
		}
		if m := e.money(e.hash); m.Usage != sum {
			t.Errorf("%s: key usage %s, want %s", typ, m.Usage, sum)
		}
		msg := e.chat(e.key, chatBody("acme/chat", "logprobs", true)).want(t, http.StatusBadRequest).errorMessage(t)
		if !strings.Contains(msg, "logprobs") {
			t.Errorf("%s logprobs: %q", typ, msg)
		}
		if n := len(e.up.requests()); n != 2 {
			t.Errorf("%s: the provider received %d calls", typ, n)
		}
	}
}
