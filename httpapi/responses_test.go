package httpapi_test

import (
	"encoding/json"
	"gatehouse/provider"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// respondBody returns a Responses request body for model with the given
// extra fields.
func respondBody(model string, extra ...any) map[string]any {
	b := map[string]any{"model": model, "input": "Say hello"}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// respond sends a Responses request with key and checks the answer
// against the OpenAPI document.
func (e *chatEnv) respond(key string, body any) *response {
	e.t.Helper()
	return e.postModel("/api/v1/responses", key, body, nil)
}

// respondRaw sends a raw Responses request body.
func (e *chatEnv) respondRaw(key, body string) *response {
	e.t.Helper()
	req := httptest.NewRequest("POST", "/api/v1/responses", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return e.send(req)
}

// responseAnswer is the part of a response object the tests read.
type responseAnswer struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	Status string `json:"status"`
	Output []struct {
		Type    string `json:"type"`
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	} `json:"output"`
	Usage map[string]any `json:"usage"`
}

// usageOf is the usage a response carries when cost was charged for
// input and output tokens of acme/chat (or a model priced as given).
func wantUsage(input, output int64, cost, inputCost gatehouse.Money, byok bool) map[string]any {
	upstream := any(nil)
	if byok {
		upstream = usdFloat(cost)
	}
	return map[string]any{"input_tokens": float64(input), "output_tokens": float64(output), "total_tokens": float64(input + output),
		"input_tokens_details": map[string]any{"cached_tokens": 0.0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0.0},
		"cost": usdFloat(cost), "is_byok": byok, "cost_details": map[string]any{"upstream_inference_cost": upstream,
			"upstream_inference_input_cost": usdFloat(inputCost), "upstream_inference_output_cost": usdFloat(cost - inputCost)}}
}

func TestResponses(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, map[string]any{"limit": 1, "limit_reset": "daily"})
	res := e.postModel("/api/v1/responses", e.key, respondBody("acme/chat", "max_output_tokens", 50, "temperature", 0.2,
		"instructions", "Be brief.", "session_id", "s-1", "user", "end-user-9", "store", false, "service_tier", "auto",
		"provider", map[string]any{"only": []string{"acme"}}),
		map[string]string{"HTTP-Referer": "https://app.example.com/x", "X-Title": "Responses App"}).want(t, http.StatusOK)
	var got responseAnswer
	res.decode(t, &got)
	if !strings.HasPrefix(got.ID, "gen-") || got.Object != "response" || got.Model != "acme/chat" || got.Status != "completed" ||
		len(got.Output) != 1 || got.Output[0].Content[0].Text != "Hello" {
		t.Errorf("answer %s", res.Body)
	}
	// The official client requires these; the provider (like OpenAI) sent none.
	var raw map[string]json.RawMessage
	res.decode(t, &raw)
	for _, k := range []string{"frequency_penalty", "presence_penalty", "completed_at"} {
		if string(raw[k]) != "null" {
			t.Errorf("%s = %s, want null", k, raw[k])
		}
	}
	cost := chatCost(11, 7)
	if diff := cmp.Diff(wantUsage(11, 7, cost, chatCost(11, 0), false), got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}

	reqs := e.up.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	sent := reqs[0]
	for k, want := range map[string]any{"model": "chat", "max_output_tokens": 50.0, "store": false, "stream": false,
		"temperature": 0.2, "instructions": "Be brief.", "service_tier": "auto", "user": "end-user-9", "input": "Say hello"} {
		if sent[k] != want {
			t.Errorf("the provider got %s = %v, want %v", k, sent[k], want)
		}
	}
	for _, k := range []string{"provider", "preset", "background"} {
		if _, ok := sent[k]; ok {
			t.Errorf("the provider got %s: %v", k, sent)
		}
	}

	m := e.money(e.hash)
	if m.Usage != cost || m.UsageDaily != cost || m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1)-cost {
		t.Errorf("money %+v, want %s spent", m, cost)
	}
	if statuses, costs, held := e.ledger(e.hash); len(statuses) != 1 || statuses[0] != "completed" || costs[0] != cost || held != 0 {
		t.Errorf("ledger %v %v, %d reservations", statuses, costs, held)
	}
	var gen struct {
		Data map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+got.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	for k, want := range map[string]any{"model": "acme/chat", "upstream_id": "resp_up", "tokens_prompt": 11.0, "tokens_completion": 7.0,
		"streamed": false, "finish_reason": "stop", "session_id": "s-1", "external_user": "end-user-9",
		"http_referer": "https://app.example.com/x", "app_title": "Responses App", "total_cost": usdFloat(cost)} {
		if gen.Data[k] != want {
			t.Errorf("generation %s = %v, want %v", k, gen.Data[k], want)
		}
	}
	e.traces.mu.Lock()
	defer e.traces.mu.Unlock()
	if len(e.traces.events) != 1 || e.traces.events[0].Output != "Hello" ||
		string(e.traces.events[0].Input) != `[{"content":"Be brief.","role":"system"},{"content":"Say hello","role":"user"}]` {
		t.Errorf("traces %+v", e.traces.events)
	}
}

// TestResponsesProviderWithoutTheAPI: a model whose provider does not say
// responses: true is a 400 naming the problem, and is never sent to its
// chat endpoint instead; neither is an embedding model.
func TestResponsesProviderWithoutTheAPI(t *testing.T) {
	t.Parallel()
	e := newUpstreamEnv(t, nil, nil, func(base string) *provider.Catalog {
		c := testCatalog(t, base, 10*time.Second)
		embed, err := provider.NewCatalog(append(c.Providers, &provider.Provider{ID: "vectors", BaseURL: base + "/v1", Responses: true,
			Models: []*provider.Model{{ID: "embed", PromptPrice: 1, ModelInfo: provider.ModelInfo{OutputModalities: []string{"embeddings"}}}}}))
		if err != nil {
			t.Fatal(err)
		}
		return embed
	})
	for model, want := range map[string]string{
		"other/mini":    `model: "other/mini" is served by provider other, which does not offer the Responses API`,
		"vectors/embed": `model: "vectors/embed" is an embedding model`,
		"acme/nope":     `model: unknown model "acme/nope"`,
	} {
		res := e.respond(e.key, respondBody(model)).want(t, http.StatusBadRequest)
		if msg := res.errorMessage(t); !strings.HasPrefix(msg, want) {
			t.Errorf("%s: %q, want %q", model, msg, want)
		}
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
	e.wantNothingCharged(e.hash)
}

// TestResponsesBounded: what may make a provider spend more without being
// refused (reasoning effort, truncation, max_tool_calls, function tools)
// is bounded by the reservation: the provider is sent the reserved cap
// (reasoning counts in it), and one that bills past it is paid the
// reservation, and counted as an anomaly. Its token details pass through
// (whole numbers only).
func TestResponsesBounded(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) {
		u.completionTokens, u.overbill = 0, 900
		u.tokenDetails = map[string]any{"output_tokens_details": map[string]any{"reasoning_tokens": 800},
			"input_tokens_details": map[string]any{"cached_tokens": 2, "odd": 1.5}}
	}, nil)
	var got responseAnswer
	e.respond(e.key, respondBody("acme/exact", "max_output_tokens", 100, "reasoning", map[string]any{"effort": "high"},
		"truncation", "auto", "max_tool_calls", 3, "parallel_tool_calls", true, "include", []string{"message.output_text.logprobs"},
		"tools", []any{map[string]any{"type": "function", "name": "lookup", "parameters": map[string]any{"type": "object"}}},
		"tool_choice", "auto")).want(t, http.StatusOK).decode(t, &got)
	reserved := gatehouse.Money(gatehouse.NanosPerUSD / 10)
	if m := e.money(e.hash); m.Usage != reserved || got.Usage["cost"] != usdFloat(reserved) {
		t.Errorf("charged %s (answer %v) for 1000 tokens reported against a cap of 100 ($0.10 reserved)", m.Usage, got.Usage["cost"])
	}
	sent := e.up.requests()[0]
	if sent["max_output_tokens"] != 100.0 || sent["store"] != false || sent["truncation"] != "auto" || sent["max_tool_calls"] != 3.0 {
		t.Errorf("the provider got %v", sent)
	}
	metrics := string(e.do("GET", "/metrics", "", nil).Body)
	if !strings.Contains(metrics, `gatehouse_provider_anomalies_total{kind="usage_over_reservation",provider="acme"} 1`) {
		t.Errorf("anomaly not counted:\n%s", grepLines(metrics, "anomalies"))
	}
	if diff := cmp.Diff(map[string]any{"reasoning_tokens": 800.0}, got.Usage["output_tokens_details"]); diff != "" {
		t.Errorf("output_tokens_details (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(map[string]any{"cached_tokens": 2.0}, got.Usage["input_tokens_details"]); diff != "" {
		t.Errorf("input_tokens_details (-want +got):\n%s", diff)
	}
}

// TestResponsesWithoutUsage charges the reservation when the provider
// reports no usage (negative counts are refused alike: see
// TestChatCompletionNegativeUsage; the meter is the same).
func TestResponsesWithoutUsage(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.noUsage = true }, nil)
	var got responseAnswer
	e.respond(e.key, respondBody("acme/exact", "max_output_tokens", 100)).want(t, http.StatusOK).decode(t, &got)
	reserved := gatehouse.Money(gatehouse.NanosPerUSD / 10)
	if got.Usage["cost"] != usdFloat(reserved) || got.Usage["input_tokens"] != 0.0 {
		t.Errorf("usage %v, want the reservation %s charged", got.Usage, reserved)
	}
	if statuses, costs, held := e.ledger(e.hash); len(costs) != 1 || statuses[0] != "partial" || costs[0] != reserved || held != 0 {
		t.Errorf("ledger %v %v, %d held", statuses, costs, held)
	}
}

// TestResponsesProviderFailures pass the provider's error through: its
// refusal charges nothing, an unreadable answer is charged what was
// reserved (see TestProviderReceivedIsCharged; an unreachable provider,
// 502, is the chat path's: TestChatCompletionUnreachable; compat/ provokes
// it here too).
func TestResponsesProviderFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		configure func(*fakeUpstream)
		status    int
		charged   bool
	}{
		{func(u *fakeUpstream) { u.status, u.errBody = 422, `{"error":{"message":"unprocessable"}}` }, 422, false},
		{func(u *fakeUpstream) { u.status, u.errBody, u.errType = 200, `not json`, "text/plain" }, http.StatusBadGateway, true},
	} {
		e := newChatEnv(t, c.configure, nil)
		res := e.respond(e.key, respondBody("acme/chat")).want(t, c.status)
		if got := res.apiError(t); got.Metadata["provider_name"] != "acme" {
			t.Errorf("%d: error %+v", c.status, got)
		}
		if c.charged {
			e.wantEveryReceivedCallPaid(1, false)
		} else {
			e.wantNothingCharged(e.hash)
		}
	}
}

// TestResponsesGuardrails: a guardrail's lists apply as to chat
// completions, before anything is reserved or sent. A model it lets
// through, called without max_output_tokens, is reserved and sent the
// model's cap.
func TestResponsesGuardrails(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	g := e.guardrail(map[string]any{"ignored_models": []string{"acme/chat"}})
	e.assign(g, "keys", e.hash)
	wantBlocked(t, e.respond(e.key, respondBody("acme/chat")), g, "ignored_models")
	e.wantNothingCharged(e.hash)
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
	e.respond(e.key, respondBody("acme/exact")).want(t, http.StatusOK)
	if reqs := e.up.requests(); len(reqs) != 1 || reqs[0]["max_output_tokens"] != 100.0 {
		t.Errorf("the provider got %v, want max_output_tokens 100, acme/exact's cap", reqs)
	}
}

// TestResponsesBYOK sends the call with the workspace's own key for the
// provider, and counts it as BYOK usage.
func TestResponsesBYOK(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})
	res := e.respond(e.key, respondBody("acme/chat")).want(t, http.StatusOK)
	if auth := e.lastAuth(); auth != byokKeyA {
		t.Fatalf("the provider got %q, want the workspace's key", auth)
	}
	if strings.Contains(string(res.Body), byokKeyA) {
		t.Errorf("the answer holds the provider key: %s", res.Body)
	}
	var got responseAnswer
	res.decode(t, &got)
	cost := chatCost(11, 7)
	if diff := cmp.Diff(wantUsage(11, 7, cost, chatCost(11, 0), true), got.Usage); diff != "" {
		t.Errorf("usage (-want +got):\n%s", diff)
	}
	if m := e.money(e.hash); m.Usage != 0 || m.BYOKUsage != cost {
		t.Errorf("usage %s, byok %s; want 0, %s", m.Usage, m.BYOKUsage, cost)
	}
}

// TestResponsesContent keeps, where the workspace logs I/O, the
// instructions and input as the call's messages, and its text and
// reasoning as its output.
func TestResponsesContent(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.reasoning = "Thinking it over." }, nil)
	e.logIO("default", true)
	input := []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "input_text", "text": "Say hello"}}},
		map[string]any{"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
		map[string]any{"type": "function_call_output", "call_id": "c1", "output": "found"}}
	var got responseAnswer
	e.respond(e.key, respondBody("acme/chat", "instructions", "Be brief.", "input", input)).want(t, http.StatusOK).decode(t, &got)
	var c struct {
		Data struct {
			Input  struct{ Messages []any }
			Output struct{ Completion, Reasoning *string }
		}
	}
	e.contentOf(e.key, got.ID).want(t, http.StatusOK).decode(t, &c)
	wantJSON(t, "input.messages", append([]any{map[string]any{"role": "system", "content": "Be brief."}}, input...), c.Data.Input.Messages)
	if c.Data.Output.Completion == nil || *c.Data.Output.Completion != "Hello" ||
		c.Data.Output.Reasoning == nil || *c.Data.Output.Reasoning != "Thinking it over." {
		t.Errorf("output %+v", c.Data.Output)
	}
}
