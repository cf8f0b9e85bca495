package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/provider"
)

// Prompt caching asked for on a Messages API tool, or on a tool_use block
// of an assistant message, through POST /api/v1/messages to each type of
// upstream: it reaches Anthropic at the same place, an OpenAI-type
// upstream that prices its cache as the chat form's cache_control, and is
// refused with a 400 naming it by Gemini and by endpoints that do not
// price cache writes, charging nothing.

// messagesCacheCase is where a Messages request asks for caching.
type messagesCacheCase struct {
	name string
	// body is the request, with q its last question (the part that
	// changes from call to call, after the cached prefix).
	body func(q string) map[string]any
	// anthropic and openai return the cache_control the upstream was sent,
	// in its own form; gemini is the field Gatehouse names refusing it.
	anthropic, openai func(sent map[string]any) any
	gemini            string
}

var messagesCacheControl = map[string]any{"type": "ephemeral"}

// at walks a decoded JSON value by keys and indexes (nil when a step is
// missing).
func at(v any, path ...any) any {
	for _, p := range path {
		switch k := p.(type) {
		case string:
			m, _ := v.(map[string]any)
			v = m[k]
		case int:
			l, _ := v.([]any)
			if k >= len(l) {
				return nil
			}
			v = l[k]
		}
	}
	return v
}

func messagesCacheCases() []messagesCacheCase {
	schema := map[string]any{"type": "object", "properties": map[string]any{"q": map[string]any{"type": "string"}}}
	tool := func(cached bool) map[string]any {
		t := map[string]any{"name": "lookup", "description": "Looks things up in the long shared document of the team", "input_schema": schema}
		if cached {
			t["cache_control"] = messagesCacheControl
		}
		return t
	}
	return []messagesCacheCase{
		{
			name: "a tool",
			body: func(q string) map[string]any {
				return map[string]any{"model": "acme/chat", "max_tokens": 100, "tools": []any{tool(true)}, "tool_choice": map[string]any{"type": "none"},
					"messages": []any{map[string]any{"role": "user", "content": q}}}
			},
			anthropic: func(sent map[string]any) any { return at(sent, "tools", 0, "cache_control") },
			openai:    func(sent map[string]any) any { return at(sent, "tools", 0, "cache_control") },
			gemini:    "tools[0].cache_control",
		},
		{
			name: "a tool_use block",
			body: func(q string) map[string]any {
				use := map[string]any{"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": map[string]any{"q": "the weather in Oslo this week"},
					"cache_control": messagesCacheControl}
				return map[string]any{"model": "acme/chat", "max_tokens": 100, "tools": []any{tool(false)}, "tool_choice": map[string]any{"type": "none"},
					"messages": []any{
						map[string]any{"role": "user", "content": "What is the weather in Oslo this week?"},
						map[string]any{"role": "assistant", "content": []any{use}},
						map[string]any{"role": "user", "content": []any{
							map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow all week"},
							map[string]any{"type": "text", "text": q}}}}}
			},
			anthropic: func(sent map[string]any) any { return at(sent, "messages", 1, "content", 0, "cache_control") },
			openai:    func(sent map[string]any) any { return at(sent, "messages", 1, "tool_calls", 0, "cache_control") },
			gemini:    "messages[1].tool_calls[0].cache_control",
		},
	}
}

// messagesUsage is the usage of a Messages answer, whole or streamed
// (message_delta's).
type messagesUsage struct {
	Input, Output, CacheRead, CacheWrite float64
	Cost                                 float64
}

func readMessagesUsage(t *testing.T, res *response, stream bool) messagesUsage {
	t.Helper()
	var u map[string]any
	if stream {
		evs := events(t, res.Body)
		for _, ev := range evs {
			if ev.name == "message_delta" {
				u, _ = ev.data["usage"].(map[string]any)
			}
		}
	} else {
		var a struct {
			Usage map[string]any `json:"usage"`
		}
		res.decode(t, &a)
		u = a.Usage
	}
	if u == nil {
		t.Fatalf("no usage: %s", res.Body)
	}
	n := func(k string) float64 { f, _ := u[k].(float64); return f }
	return messagesUsage{n("input_tokens"), n("output_tokens"), n("cache_read_input_tokens"), n("cache_creation_input_tokens"), n("cost")}
}

// TestMessagesCacheControlAnthropic: the stand-in of Anthropic's API is
// sent the cache_control where the client put it; the first call writes
// the prompt up to it to the cache, the second (streamed) reads it; each
// is charged what the usage it reported costs at the model's prices, cache
// writes at cache_write_price and reads at cache_read_price.
func TestMessagesCacheControlAnthropic(t *testing.T) {
	t.Parallel()
	for _, c := range messagesCacheCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newUpstreamEnv(t, func(u *fakeUpstream) { u.native = "anthropic" }, nil,
				func(base string) *provider.Catalog { return nativeCatalog(t, "anthropic", base) })
			var sum gatehouse.Money
			for i, q := range []string{"first question", "and a second question"} {
				b := c.body(q)
				stream := i == 1
				b["stream"] = stream
				res := e.messages(e.key, b).want(t, http.StatusOK)
				got := readMessagesUsage(t, res, stream)
				reported := e.up.anthropic.Reported()
				if len(reported) != i+1 {
					t.Fatalf("call %d: the stand-in reported %d usages", i, len(reported))
				}
				r := reported[i]
				want := reportedCost(r)
				sum += want
				if got.Cost != usdFloat(want) || got.Input != float64(r["input_tokens"]) || got.CacheRead != float64(r["cache_read_input_tokens"]) ||
					got.CacheWrite != float64(r["cache_creation_input_tokens"]) || got.Output != float64(r["output_tokens"]) {
					t.Errorf("call %d: usage %+v, want the stand-in's %v at cost %v", i, got, r, usdFloat(want))
				}
				if cc := c.anthropic(e.up.requests()[i]); !jsonEqual(cc, messagesCacheControl) {
					t.Errorf("call %d: the stand-in was sent cache_control %v at the place asked: %v", i, cc, e.up.requests()[i])
				}
			}
			reported := e.up.anthropic.Reported()
			if w := reported[0]["cache_creation_input_tokens"]; w == 0 || reported[0]["cache_read_input_tokens"] != 0 ||
				reported[1]["cache_read_input_tokens"] != w || reported[1]["cache_creation_input_tokens"] != 0 {
				t.Errorf("the stand-in reported %v: want a cache write, then a read of it", reported)
			}
			if m := e.money(e.hash); m.Usage != sum {
				t.Errorf("key usage %s, want %s", m.Usage, sum)
			}
		})
	}
}

// TestMessagesCacheControlOpenAI: an OpenAI-type upstream whose model
// prices its cache is sent the cache_control in the chat form (on the
// tool, on the tool call), and the cache reads and writes it reports are
// charged at their prices; a model that does not price cache writes is
// refused, naming cache_control, sent and charged nothing.
func TestMessagesCacheControlOpenAI(t *testing.T) {
	t.Parallel()
	read, write := gatehouse.USD(1), gatehouse.USD(30)
	for _, c := range messagesCacheCases() {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newUpstreamEnv(t, func(u *fakeUpstream) {
				u.promptTokens, u.completionTokens = 100, 10
				u.tokenDetails = map[string]any{"prompt_tokens_details": map[string]any{"cached_tokens": 60, "cache_write_tokens": 30}}
			}, nil, func(base string) *provider.Catalog {
				c, err := provider.NewCatalog([]*provider.Provider{{ID: "acme", BaseURL: base + "/v1", Timeout: 10 * time.Second,
					Models: []*provider.Model{
						{ID: "chat", PromptPrice: gatehouse.USD(10), CompletionPrice: gatehouse.USD(20), MaxCompletionTokens: 100,
							ModelInfo: provider.ModelInfo{CacheReadPrice: &read, CacheWritePrice: &write}},
						{ID: "uncached", PromptPrice: gatehouse.USD(10), CompletionPrice: gatehouse.USD(20), MaxCompletionTokens: 100}}}})
				if err != nil {
					t.Fatal(err)
				}
				return c
			})
			got := readMessagesUsage(t, e.messages(e.key, c.body("a question")).want(t, http.StatusOK), false)
			// 10 uncached at $10, 60 reads at $1, 30 writes at $30, 10 completion at $20 (per million).
			want := gatehouse.Money((10*10 + 60*1 + 30*30 + 10*20) * 1000)
			if got != (messagesUsage{Input: 10, Output: 10, CacheRead: 60, CacheWrite: 30, Cost: usdFloat(want)}) {
				t.Errorf("usage %+v, want cost %v", got, usdFloat(want))
			}
			if m := e.money(e.hash); m.Usage != want {
				t.Errorf("key usage %s, want %s", m.Usage, want)
			}
			if cc := c.openai(e.up.requests()[0]); !jsonEqual(cc, messagesCacheControl) {
				t.Errorf("the upstream was sent cache_control %v: %v", cc, e.up.requests()[0])
			}
			b := c.body("a question")
			b["model"] = "acme/uncached"
			res := e.messages(e.key, b).want(t, http.StatusBadRequest).anthropicError(t)
			if !strings.Contains(res.Error.Message, "cache_control: provider acme's endpoint of acme/uncached does not take prompt caching") {
				t.Errorf("error %+v", res)
			}
			if n := len(e.up.requests()); n != 1 {
				t.Errorf("the upstream got %d requests, want the first alone", n)
			}
			if m := e.money(e.hash); m.Usage != want {
				t.Errorf("key usage %s after the refusal, want %s", m.Usage, want)
			}
		})
	}
}

// TestMessagesCacheControlGemini: the Gemini API takes no cache_control
// (it caches implicitly): a request that asks for it is refused with a
// 400 naming the field, nothing is sent and nothing charged; and the
// refusals, a client's doing, leave the endpoint healthy: the next call
// is served (they once counted as its failures, and opened its circuit).
func TestMessagesCacheControlGemini(t *testing.T) {
	t.Parallel()
	e := newUpstreamEnv(t, func(u *fakeUpstream) { u.native = "gemini" }, nil,
		func(base string) *provider.Catalog { return nativeCatalog(t, "gemini", base) })
	for _, c := range messagesCacheCases() {
		for _, stream := range []bool{false, true} {
			b := c.body("a question")
			b["stream"] = stream
			res := e.messages(e.key, b).want(t, http.StatusBadRequest).anthropicError(t)
			if res.Error.Type != "invalid_request_error" || !strings.HasPrefix(res.Error.Message, c.gemini+": is not supported by the Gemini API") {
				t.Errorf("%s (stream %v): error %+v, want one naming %s", c.name, stream, res, c.gemini)
			}
		}
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if m := e.money(e.hash); m.Usage != 0 {
		t.Errorf("key usage %s, want nothing", m.Usage)
	}
	if statuses, _, _ := e.ledger(e.hash); len(statuses) != 0 {
		t.Errorf("generations %v, want none", statuses)
	}
	b := messagesCacheCases()[0].body("a question")
	delete(b["tools"].([]any)[0].(map[string]any), "cache_control")
	got := readMessagesUsage(t, e.messages(e.key, b).want(t, http.StatusOK), false)
	reported := e.up.gemini.Reported()
	if len(reported) != 1 || got.Cost != usdFloat(reportedCost(reported[0])) || e.money(e.hash).Usage != reportedCost(reported[0]) {
		t.Errorf("after the refusals: usage %+v, the stand-in reported %v", got, reported)
	}
}

// TestMessagesThinkingCacheControl: Anthropic's API takes no cache_control
// on a thinking or redacted_thinking block: it is refused naming the
// field, not dropped, and nothing is sent or charged.
func TestMessagesThinkingCacheControl(t *testing.T) {
	t.Parallel()
	e := newUpstreamEnv(t, func(u *fakeUpstream) { u.native = "anthropic" }, nil,
		func(base string) *provider.Catalog { return nativeCatalog(t, "anthropic", base) })
	for _, block := range []map[string]any{
		{"type": "thinking", "thinking": "The user greets me.", "signature": "sig", "cache_control": messagesCacheControl},
		{"type": "redacted_thinking", "data": "enc", "cache_control": messagesCacheControl},
	} {
		body := map[string]any{"model": "acme/chat", "max_tokens": 100, "messages": []any{
			map[string]any{"role": "user", "content": "hello"},
			map[string]any{"role": "assistant", "content": []any{block, map[string]any{"type": "text", "text": "Hello!"}}},
			map[string]any{"role": "user", "content": "again"}}}
		res := e.messages(e.key, body).want(t, http.StatusBadRequest).anthropicError(t)
		want := "messages[1].content[0].cache_control: is not accepted on " + block["type"].(string) + " blocks"
		if !strings.HasPrefix(res.Error.Message, want) || !strings.Contains(res.Error.Message, "thinking blocks cannot carry cache_control, and are cached as part of the prompt before a later block's cache_control") {
			t.Errorf("error %+v, want %q", res, want)
		}
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if m := e.money(e.hash); m.Usage != 0 {
		t.Errorf("key usage %s, want nothing", m.Usage)
	}
}

// TestChatToolCacheControlChecked: on the chat path, a tool's and a tool
// call's cache_control are checked as a part's is, and ask for an
// endpoint that prices cache writes, as a part's does; nothing is sent or
// charged when they are refused.
func TestChatToolCacheControlChecked(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	tool := func(cc any) []any {
		return []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}, "cache_control": cc}}
	}
	calls := func(key string, cc any) []any {
		return []any{map[string]any{"role": "user", "content": "hi"},
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function",
				"function": map[string]any{"name": "f", "arguments": "{}"}, key: cc}}},
			map[string]any{"role": "tool", "tool_call_id": "c1", "content": "ok"}}
	}
	for _, c := range []struct {
		name string
		body map[string]any
		want string
	}{
		{"a tool's, to an endpoint without cache prices", map[string]any{"model": "acme/chat", "messages": calls("x", nil)[:1], "tools": tool(messagesCacheControl)},
			"cache_control: provider acme's endpoint of acme/chat does not take prompt caching"},
		{"a tool call's, to an endpoint without cache prices", map[string]any{"model": "acme/chat", "messages": calls("cache_control", messagesCacheControl)},
			"cache_control: provider acme's endpoint of acme/chat does not take prompt caching"},
		{"a tool's of another type", map[string]any{"model": "acme/chat", "messages": calls("x", nil)[:1], "tools": tool(map[string]any{"type": "persistent"})},
			"tools[0].cache_control.type: must be ephemeral"},
		{"a tool call's with an unknown member", map[string]any{"model": "acme/chat", "messages": calls("cache_control", map[string]any{"type": "ephemeral", "scope": "org"})},
			"messages[1].tool_calls[0].cache_control.scope: unknown field"},
		{"a tool call's misspelt", map[string]any{"model": "acme/chat", "messages": calls("Cache_Control", messagesCacheControl)},
			`messages[1].tool_calls[0].Cache_Control: is not a field; field names are case-sensitive: did you mean "cache_control"?`},
		{"a tool call's ttl", map[string]any{"model": "acme/chat", "messages": calls("cache_control", map[string]any{"type": "ephemeral", "ttl": "1d"})},
			"messages[1].tool_calls[0].cache_control.ttl: must be 5m or 1h"},
	} {
		got := e.chat(e.key, c.body).want(t, http.StatusBadRequest).apiError(t)
		if !strings.HasPrefix(got.Message, c.want) {
			t.Errorf("%s: %q, want %q", c.name, got.Message, c.want)
		}
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the upstream got %d requests", n)
	}
	if m := e.money(e.hash); m.Usage != 0 {
		t.Errorf("key usage %s, want nothing", m.Usage)
	}
}
