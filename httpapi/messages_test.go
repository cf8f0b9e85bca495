package httpapi_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/provider"
	"gatehouse/ratelimit"
)

// messages sends a Messages API request as Anthropic's SDK does: the key
// in x-api-key, with anthropic-version.
func (e *chatEnv) messages(key string, body any) *response {
	e.t.Helper()
	return e.postModel("/api/v1/messages", "", body, map[string]string{"x-api-key": key, "anthropic-version": "2023-06-01"})
}

// anthropicError is the error of a Messages API answer.
type anthropicError struct {
	Type  string `json:"type"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
	RequestID string `json:"request_id"`
}

func (r *response) anthropicError(t testing.TB) anthropicError {
	t.Helper()
	var b anthropicError
	r.decode(t, &b)
	if b.Type != "error" || b.Error.Type == "" || b.Error.Message == "" || b.RequestID == "" || r.Header.Get("Request-Id") != b.RequestID {
		t.Errorf("not Anthropic's error shape: %s (request-id %q)", r.Body, r.Header.Get("Request-Id"))
	}
	return b
}

// sseEvent is one event of a stream: its event: name and its data.
type sseEvent struct {
	name string
	data map[string]any
}

// events reads an event stream, checking that each event's name is its
// data's type, as Anthropic's streams have it.
func events(t testing.TB, body []byte) []sseEvent {
	t.Helper()
	var out []sseEvent
	var name string
	sc := bufio.NewScanner(bytes.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		switch {
		case strings.HasPrefix(line, "event: "):
			name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			var data map[string]any
			if err := json.Unmarshal([]byte(strings.TrimPrefix(line, "data: ")), &data); err != nil {
				t.Fatalf("data is not a JSON object: %s", line)
			}
			if data["type"] != name {
				t.Errorf("event %q carries data of type %v", name, data["type"])
			}
			out = append(out, sseEvent{name, data})
			name = ""
		case line != "":
			t.Errorf("unexpected line %q", line)
		}
	}
	return out
}

func names(evs []sseEvent) string {
	var n []string
	for _, ev := range evs {
		n = append(n, ev.name)
	}
	return strings.Join(n, " ")
}

func TestMessagesWhole(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, map[string]any{"limit": 1})
	body := map[string]any{"model": "acme/chat", "max_tokens": 50, "temperature": 0.5, "top_k": 5,
		"stop_sequences": []any{"END"}, "metadata": map[string]any{"user_id": "user-7"},
		"system": "Be brief.", "messages": []any{map[string]any{"role": "user", "content": "Say hello"}}}
	var got struct {
		ID           string         `json:"id"`
		Type         string         `json:"type"`
		Role         string         `json:"role"`
		Model        string         `json:"model"`
		Content      []any          `json:"content"`
		StopReason   string         `json:"stop_reason"`
		StopSequence *string        `json:"stop_sequence"`
		Usage        map[string]any `json:"usage"`
	}
	res := e.messages(e.key, body).want(t, http.StatusOK)
	res.decode(t, &got)
	if !strings.HasPrefix(got.ID, "msg_gen-") || got.Type != "message" || got.Role != "assistant" || got.Model != "acme/chat" ||
		got.StopReason != "end_turn" || got.StopSequence != nil {
		t.Errorf("message %s", res.Body)
	}
	if want := []any{map[string]any{"type": "text", "text": "Hello"}}; !jsonEqual(got.Content, want) {
		t.Errorf("content %v", got.Content)
	}
	cost := chatCost(11, 7)
	wantUsage := map[string]any{"input_tokens": 11.0, "output_tokens": 7.0, "cache_read_input_tokens": 0.0,
		"cache_creation_input_tokens": 0.0, "cost": usdFloat(cost)}
	if !jsonEqual(got.Usage, wantUsage) {
		t.Errorf("usage %v, want %v", got.Usage, wantUsage)
	}
	if m := e.money(e.hash); m.Usage != cost {
		t.Errorf("key usage %s, want %s", m.Usage, cost)
	}
	// What the provider was sent: the chat completion of the request.
	sent := e.up.requests()[0]
	want := map[string]any{"model": "chat", "max_tokens": 50.0, "max_completion_tokens": 50.0, "temperature": 0.5,
		"top_k": 5.0, "stop": []any{"END"}, "user": "user-7", "messages": []any{
			map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Say hello"}}}
	if !jsonEqual(sent, want) {
		t.Errorf("the provider was sent %v, want %v", sent, want)
	}
	// The generation, under the message's id and the generation's own.
	for _, id := range []string{got.ID, strings.TrimPrefix(got.ID, "msg_")} {
		var gen struct {
			Data struct {
				ID         string  `json:"id"`
				TotalCost  float64 `json:"total_cost"`
				ExternalID *string `json:"external_user"`
			} `json:"data"`
		}
		e.do("GET", "/api/v1/generation?id="+id, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
		if gen.Data.ID != strings.TrimPrefix(got.ID, "msg_") || gen.Data.TotalCost != usdFloat(cost) {
			t.Errorf("generation %+v", gen.Data)
		}
	}
	// The same key as a bearer token, and in both headers at once.
	e.postModel("/api/v1/messages", e.key, body, nil).want(t, http.StatusOK)
	e.postModel("/api/v1/messages", e.key, body, map[string]string{"x-api-key": e.key}).want(t, http.StatusOK)
}

// jsonEqual compares two values as JSON.
func jsonEqual(a, b any) bool {
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	return bytes.Equal(ja, jb)
}

func TestMessagesStream(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.reasoning = "Thinking." }, nil)
	res := e.messages(e.key, map[string]any{"model": "acme/chat", "max_tokens": 40, "stream": true,
		"thinking": map[string]any{"type": "enabled", "budget_tokens": 20},
		"messages": []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "Say hello"}}}}}).want(t, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		t.Fatalf("Content-Type %q", ct)
	}
	if bytes.Contains(res.Body, []byte("[DONE]")) {
		t.Errorf("chat's [DONE] in Anthropic's stream: %s", res.Body)
	}
	evs := events(t, res.Body)
	wantNames := "message_start ping ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := names(evs); got != wantNames {
		t.Fatalf("events %s\nwant   %s\n%s", got, wantNames, res.Body)
	}
	msg := evs[0].data["message"].(map[string]any)
	if id, _ := msg["id"].(string); !strings.HasPrefix(id, "msg_gen-") || msg["model"] != "acme/chat" || msg["role"] != "assistant" {
		t.Errorf("message_start %v", msg)
	}
	for i, want := range map[int]any{
		3: map[string]any{"type": "thinking", "thinking": "", "signature": ""},
		6: map[string]any{"type": "text", "text": ""},
	} {
		if got := evs[i].data["content_block"]; !jsonEqual(got, want) {
			t.Errorf("block %d starts %v, want %v", i, got, want)
		}
	}
	for i, want := range map[int]any{
		4: map[string]any{"type": "thinking_delta", "thinking": "Thinking."},
		7: map[string]any{"type": "text_delta", "text": "Hel"},
		8: map[string]any{"type": "text_delta", "text": "lo"},
	} {
		if got := evs[i].data["delta"]; !jsonEqual(got, want) {
			t.Errorf("event %d delta %v, want %v", i, got, want)
		}
	}
	if evs[6].data["index"] != 1.0 || evs[9].data["index"] != 1.0 {
		t.Errorf("the text block is not block 1: %v %v", evs[6].data, evs[9].data)
	}
	end := evs[10].data
	wantEnd := map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": "end_turn", "stop_sequence": nil},
		"usage": map[string]any{"input_tokens": 11.0, "output_tokens": 7.0, "cache_read_input_tokens": 0.0, "cache_creation_input_tokens": 0.0,
			"cost": usdFloat(chatCost(11, 7))}}
	if !jsonEqual(end, wantEnd) {
		t.Errorf("message_delta %v, want %v", end, wantEnd)
	}
	if m := e.money(e.hash); m.Usage != chatCost(11, 7) {
		t.Errorf("key usage %s", m.Usage)
	}
	sent := e.up.requests()[0]
	if !jsonEqual(sent["reasoning"], map[string]any{"max_tokens": 20}) || sent["stream"] != true {
		t.Errorf("the provider was sent %v", sent)
	}
}

func TestMessagesTools(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.toolArgs = `{"city":"Paris"}` }, nil)
	schema := map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}
	body := map[string]any{"model": "acme/chat", "max_tokens": 30,
		"tools":       []any{map[string]any{"name": "weather", "description": "The weather", "input_schema": schema}},
		"tool_choice": map[string]any{"type": "any", "disable_parallel_tool_use": true},
		"system":      []any{map[string]any{"type": "text", "text": "Use tools.", "cache_control": map[string]any{"type": "ephemeral"}}},
		"messages": []any{
			map[string]any{"role": "user", "content": "Weather in Oslo?"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Checking."},
				map[string]any{"type": "tool_use", "id": "toolu_1", "name": "weather", "input": map[string]any{"city": "Oslo"}}}},
			map[string]any{"role": "user", "content": []any{
				map[string]any{"type": "tool_result", "tool_use_id": "toolu_1", "content": "snow", "is_error": false},
				map[string]any{"type": "text", "text": "And Paris?"}}},
		}}
	// cache_control asks for an endpoint that prices cache writes: acme/chat does not.
	if got := e.messages(e.key, body).want(t, http.StatusBadRequest).anthropicError(t); got.Error.Type != "invalid_request_error" {
		t.Errorf("error %+v", got)
	}
	body["system"] = "Use tools."
	var got struct {
		Content    []any  `json:"content"`
		StopReason string `json:"stop_reason"`
	}
	e.messages(e.key, body).want(t, http.StatusOK).decode(t, &got)
	want := []any{map[string]any{"type": "tool_use", "id": "call_up", "name": "weather", "input": map[string]any{"city": "Paris"}}}
	if got.StopReason != "tool_use" || !jsonEqual(got.Content, want) {
		t.Errorf("answer %v %v", got.StopReason, got.Content)
	}
	sent := e.up.requests()[len(e.up.requests())-1]
	wantSent := map[string]any{
		"tools":       []any{map[string]any{"type": "function", "function": map[string]any{"name": "weather", "description": "The weather", "parameters": schema}}},
		"tool_choice": "required", "parallel_tool_calls": false,
		"messages": []any{
			map[string]any{"role": "system", "content": "Use tools."},
			map[string]any{"role": "user", "content": "Weather in Oslo?"},
			map[string]any{"role": "assistant", "content": []any{map[string]any{"type": "text", "text": "Checking."}},
				"tool_calls": []any{map[string]any{"id": "toolu_1", "type": "function", "function": map[string]any{"name": "weather", "arguments": `{"city":"Oslo"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "toolu_1", "content": "snow"},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "And Paris?"}}},
		}}
	for k, v := range wantSent {
		if !jsonEqual(sent[k], v) {
			t.Errorf("the provider was sent %s %v, want %v", k, sent[k], v)
		}
	}
	// Streamed: the text, then the call with its arguments in pieces.
	body["stream"] = true
	evs := events(t, e.messages(e.key, body).want(t, http.StatusOK).Body)
	wantNames := "message_start ping ping content_block_start content_block_delta content_block_stop content_block_start content_block_delta content_block_delta content_block_stop message_delta message_stop"
	if got := names(evs); got != wantNames {
		t.Fatalf("events %s\nwant   %s", got, wantNames)
	}
	if want := map[string]any{"type": "tool_use", "id": "call_up", "name": "weather", "input": map[string]any{}}; !jsonEqual(evs[6].data["content_block"], want) {
		t.Errorf("tool_use block %v", evs[6].data["content_block"])
	}
	var args string
	for _, ev := range evs[7:9] {
		d := ev.data["delta"].(map[string]any)
		if d["type"] != "input_json_delta" || ev.data["index"] != 1.0 {
			t.Errorf("delta %v", ev.data)
		}
		args += d["partial_json"].(string)
	}
	if args != `{"city":"Paris"}` || evs[10].data["delta"].(map[string]any)["stop_reason"] != "tool_use" {
		t.Errorf("arguments %q, end %v", args, evs[10].data)
	}
}

// TestMessagesCachePricing: cache_control on a system block and a tool
// result reaches the provider on text parts; the usage's cache reads and
// writes are charged at their prices and shown as Anthropic shows them.
func TestMessagesCachePricing(t *testing.T) {
	t.Parallel()
	read, write := gatehouse.USD(1), gatehouse.USD(30)
	e := newUpstreamEnv(t, func(u *fakeUpstream) {
		u.promptTokens, u.completionTokens = 100, 10
		u.tokenDetails = map[string]any{"prompt_tokens_details": map[string]any{"cached_tokens": 60, "cache_write_tokens": 30}}
	}, nil, func(base string) *provider.Catalog {
		c, err := provider.NewCatalog([]*provider.Provider{{ID: "acme", BaseURL: base + "/v1", Timeout: 10 * time.Second,
			Models: []*provider.Model{{ID: "cached", PromptPrice: gatehouse.USD(10), CompletionPrice: gatehouse.USD(20),
				MaxCompletionTokens: 100, ModelInfo: provider.ModelInfo{CacheReadPrice: &read, CacheWritePrice: &write}}}}})
		if err != nil {
			t.Fatal(err)
		}
		return c
	})
	cc := map[string]any{"type": "ephemeral", "ttl": "1h"}
	var got struct {
		Usage map[string]any `json:"usage"`
	}
	e.messages(e.key, map[string]any{"model": "acme/cached", "max_tokens": 10,
		"system": []any{map[string]any{"type": "text", "text": "a long document", "cache_control": cc}},
		"messages": []any{map[string]any{"role": "user", "content": []any{
			map[string]any{"type": "tool_result", "tool_use_id": "t1", "content": []any{map[string]any{"type": "text", "text": "result"}}, "cache_control": cc}}}},
	}).want(t, http.StatusOK).decode(t, &got)
	want := gatehouse.Money((10*10 + 60*1 + 30*30 + 10*20) * 1000)
	wantUsage := map[string]any{"input_tokens": 10.0, "output_tokens": 10.0, "cache_read_input_tokens": 60.0,
		"cache_creation_input_tokens": 30.0, "cost": usdFloat(want)}
	if !jsonEqual(got.Usage, wantUsage) {
		t.Errorf("usage %v, want %v", got.Usage, wantUsage)
	}
	if m := e.money(e.hash); m.Usage != want {
		t.Errorf("key usage %s, want %s", m.Usage, want)
	}
	msgs := e.up.requests()[0]["messages"].([]any)
	part := map[string]any{"type": "text", "text": "a long document", "cache_control": cc}
	if !jsonEqual(msgs[0], map[string]any{"role": "system", "content": []any{part}}) ||
		!jsonEqual(msgs[1].(map[string]any)["content"], []any{map[string]any{"type": "text", "text": "result", "cache_control": cc}}) {
		t.Errorf("the provider was sent %v", msgs)
	}
}

// TestMessagesBadInput: what cannot be translated or priced is refused in
// Anthropic's shape, naming the field, and nothing is sent or charged.
func TestMessagesBadInput(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	user := []any{map[string]any{"role": "user", "content": "hi"}}
	base := func(extra ...any) map[string]any {
		b := map[string]any{"model": "acme/chat", "max_tokens": 10, "messages": user}
		for i := 0; i+1 < len(extra); i += 2 {
			b[extra[i].(string)] = extra[i+1]
		}
		return b
	}
	image := map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}
	for _, c := range []struct {
		name string
		body any
		want string
	}{
		{"unknown field", base("frequency_penalty", 1), "frequency_penalty: unknown field"},
		{"misspelt field", base("Max_Tokens", 10), "Max_Tokens: unknown field"},
		{"max_tokens missing", map[string]any{"model": "acme/chat", "messages": user}, "max_tokens: is required"},
		{"max_tokens zero", base("max_tokens", 0), "max_tokens: must be an integer from 1"},
		{"temperature above Anthropic's range", base("temperature", 1.5), "temperature: must be between 0 and 1"},
		{"messages empty", base("messages", []any{}), "messages: must be a non-empty array"},
		{"a system role in messages", base("messages", []any{map[string]any{"role": "system", "content": "x"}}), "messages[0].role: must be user or assistant"},
		{"an image", base("messages", []any{map[string]any{"role": "user", "content": []any{image}}}), `messages[0].content[0].type: "image" blocks are not accepted`},
		{"an unknown block field", base("messages", []any{map[string]any{"role": "user", "content": []any{map[string]any{"type": "text", "text": "x", "colour": "red"}}}}), "messages[0].content[0].colour: unknown field"},
		{"a server tool", base("tools", []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}), `tools[0].type: "web_search_20250305" tools are not supported`},
		{"a tool without input_schema", base("tools", []any{map[string]any{"name": "weather"}}), "tools[0].input_schema: is required"},
		{"a refused field", base("service_tier", "priority"), "service_tier: is not supported"},
		{"a bad tool_choice", base("tool_choice", map[string]any{"type": "sometimes"}), "tool_choice.type: must be auto, any, none or tool"},
		{"a bad thinking budget", base("thinking", map[string]any{"type": "enabled", "budget_tokens": 0}), "thinking.budget_tokens"},
		{"metadata beyond user_id", base("metadata", map[string]any{"session": "x"}), "metadata.session: unknown field"},
		{"a key twice", json.RawMessage(`{"model":"acme/chat","max_tokens":10,"max_tokens":20,"messages":[{"role":"user","content":"hi"}]}`), "max_tokens"},
	} {
		res := e.messages(e.key, c.body).want(t, http.StatusBadRequest)
		got := res.anthropicError(t)
		if got.Error.Type != "invalid_request_error" || !strings.Contains(got.Error.Message, c.want) {
			t.Errorf("%s: %+v, want a message with %q", c.name, got.Error, c.want)
		}
	}
	res := e.postModel("/api/v1/messages", "", base(), map[string]string{"x-api-key": e.key, "anthropic-beta": "files-api-2025-04-14"})
	if got := res.want(t, http.StatusBadRequest).anthropicError(t); !strings.Contains(got.Error.Message, "anthropic-beta") {
		t.Errorf("anthropic-beta: %+v", got.Error)
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider received %d calls", n)
	}
	e.wantNothingCharged(e.hash)
}

// TestMessagesRefusals: the refusals of credentials, limits and the
// provider, each in Anthropic's shape with its error type.
func TestMessagesRefusals(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.refuse = map[string]int{} }, nil)
	body := map[string]any{"model": "acme/chat", "max_tokens": 10, "messages": []any{map[string]any{"role": "user", "content": "hi"}}}
	_, other := e.createKey(e.mgmt, map[string]any{"name": "other"})
	_, poor := e.createKey(e.mgmt, map[string]any{"name": "poor", "limit": 0.000001})
	for _, c := range []struct {
		name    string
		headers map[string]string
		status  int
		kind    string
	}{
		{"no credential", nil, 401, "authentication_error"},
		{"an unknown key", map[string]string{"x-api-key": "sk-gh-v1-" + strings.Repeat("0", 64)}, 401, "authentication_error"},
		{"two different keys", map[string]string{"x-api-key": e.key, "Authorization": "Bearer " + other}, 401, "authentication_error"},
		{"the other way round", map[string]string{"x-api-key": other, "Authorization": "Bearer " + e.key}, 401, "authentication_error"},
		{"a key and another scheme", map[string]string{"x-api-key": e.key, "Authorization": "Basic " + e.key}, 401, "authentication_error"},
		{"a management key", map[string]string{"x-api-key": e.mgmt}, 403, "permission_error"},
		{"a limit too small", map[string]string{"x-api-key": poor}, 402, "billing_error"},
	} {
		res := e.postModel("/api/v1/messages", "", body, c.headers)
		if res.Status != c.status {
			t.Errorf("%s: status %d, want %d: %s", c.name, res.Status, c.status, res.Body)
			continue
		}
		if got := res.anthropicError(t); got.Error.Type != c.kind {
			t.Errorf("%s: error type %q, want %q", c.name, got.Error.Type, c.kind)
		}
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider received %d calls", n)
	}
	e.wantNothingCharged(e.hash)

	// The provider's refusal passes through with its status: free.
	down := newChatEnv(t, func(u *fakeUpstream) { u.status, u.errBody = 503, `{"error":{"message":"overloaded"}}` }, nil)
	if got := down.messages(down.key, body).want(t, http.StatusServiceUnavailable).anthropicError(t); got.Error.Type != "overloaded_error" {
		t.Errorf("provider 503: %+v", got)
	}
	down.wantNothingCharged(down.hash)

	// Gatehouse's rate limit.
	limited := newUpstreamEnv(t, nil, nil, func(base string) *provider.Catalog { return testCatalog(t, base, 10*time.Second) },
		withLimiter(ratelimit.NewMemory(ratelimit.Config{RPS: 0.001, Burst: 1}, time.Now)))
	limited.messages(limited.key, body).want(t, http.StatusOK)
	res := limited.messages(limited.key, body).want(t, http.StatusTooManyRequests)
	if got := res.anthropicError(t); got.Error.Type != "rate_limit_error" || res.Header.Get("Retry-After") == "" {
		t.Errorf("rate limited: %+v", got)
	}
}

// TestMessagesPreset: a preset (one saved from a Messages body) applies to
// a Messages request as to a chat completion: its model, system prompt and
// settings, the request's own fields winning.
func TestMessagesPreset(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.savePreset(e.mgmt, "messages", "brief", map[string]any{"model": "acme/chat", "system": "Be brief.",
		"temperature": 0.5, "top_k": 3, "max_tokens": 100}, "")
	var got struct {
		Model string `json:"model"`
	}
	e.messages(e.key, map[string]any{"model": "@preset/brief", "max_tokens": 20, "top_k": 7,
		"messages": []any{map[string]any{"role": "user", "content": "Say hello"}}}).want(t, http.StatusOK).decode(t, &got)
	sent := e.up.requests()[0]
	want := map[string]any{"model": "chat", "max_tokens": 20.0, "max_completion_tokens": 20.0, "temperature": 0.5, "top_k": 7.0,
		"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Say hello"}}}
	if got.Model != "acme/chat" || !jsonEqual(sent, want) {
		t.Errorf("model %q; the provider was sent %v, want %v", got.Model, sent, want)
	}
}

// TestMessagesGuardrails: the key's guardrails govern a Messages call as
// a chat completion: their model list refuses it (permission_error), and
// nothing reaches the provider.
func TestMessagesGuardrails(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.configureDefault(map[string]any{"allowed_models": []any{"acme/chat"}})
	refused := e.messages(e.key, map[string]any{"model": "acme/exact", "max_tokens": 10,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}).want(t, http.StatusForbidden).anthropicError(t)
	if refused.Error.Type != "permission_error" || !strings.HasPrefix(refused.Error.Message, "Request blocked: ") {
		t.Errorf("refused %+v", refused.Error)
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider received %d calls", n)
	}
	e.messages(e.key, map[string]any{"model": "acme/chat", "max_tokens": 10,
		"messages": []any{map[string]any{"role": "user", "content": "hi"}}}).want(t, http.StatusOK)
}
