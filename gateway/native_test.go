package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/internal/standin"
	"gatehouse/provider"
)

// The dialects of provider types anthropic and gemini, on the wire, to
// strict stand-ins of their APIs (internal/standin).

// nativeEnv is a provider of a type served by its stand-in.
type nativeEnv struct {
	p      *provider.Provider
	c      *Client
	usages func() []standin.Usage
}

func newNativeEnv(t *testing.T, typ string) *nativeEnv {
	t.Helper()
	var h http.Handler
	var usages func() []standin.Usage
	switch typ {
	case "anthropic":
		a := &standin.Anthropic{Key: "sk-ant-test"}
		h, usages = a, a.Reported
	case "gemini":
		g := &standin.Gemini{Key: "AIza-test"}
		h, usages = g, g.Reported
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	key := map[string]string{"anthropic": "sk-ant-test", "gemini": "AIza-test"}[typ]
	return &nativeEnv{p: &provider.Provider{ID: typ, Type: typ, BaseURL: srv.URL, APIKey: key, Timeout: 10 * time.Second},
		c: &Client{HTTP: srv.Client()}, usages: usages}
}

// body is a chat request body as Gatehouse checked it.
func body(t testing.TB, s string) map[string]json.RawMessage {
	t.Helper()
	obj, err := jsonobj.Unmarshal([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}

// streamBuf collects a stream.
type streamBuf struct {
	bytes.Buffer
	started bool
}

func (s *streamBuf) Start() { s.started = true }
func (s *streamBuf) Flush() {}

func (e *nativeEnv) complete(t *testing.T, model string, b map[string]json.RawMessage, stream bool) (provider.Completion, *streamBuf, error) {
	t.Helper()
	sw := &streamBuf{}
	capTokens := 200
	_ = json.Unmarshal(b["max_tokens"], &capTokens)
	b["stream"], _ = json.Marshal(stream)
	c, err := e.c.Complete(context.Background(), provider.CompletionCall{Provider: e.p, Model: &provider.Model{ID: model},
		Body: b, MaxTokens: capTokens, Stream: stream, Rewrite: func(map[string]json.RawMessage) {}}, sw)
	return c, sw, err
}

// chunksOf reads the data events of a stream.
func chunksOf(t *testing.T, s string) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s))
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(data), &m); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		out = append(out, m)
	}
	return out
}

func TestNativeTextWholeAndStreamed(t *testing.T) {
	for _, typ := range []string{"anthropic", "gemini"} {
		t.Run(typ, func(t *testing.T) {
			e := newNativeEnv(t, typ)
			b := body(t, `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Say hello now"}],"temperature":0.5,"top_p":0.9,"top_k":5,"stop":["never"],"max_tokens":200,"max_completion_tokens":200}`)
			c, _, err := e.complete(t, "m", b, false)
			if err != nil {
				t.Fatal(err)
			}
			// "Be brief. Say hello now": 5 words; "You said: Say hello now": 5.
			if !c.UsageKnown || c.PromptTokens != 5 || c.CompletionTokens != 5 || c.FinishReason != "stop" || c.Output != "You said: Say hello now" {
				t.Errorf("completion %+v", c)
			}
			if string(c.Final["object"]) != `"chat.completion"` {
				t.Errorf("answer %s", jsonobj.Marshal(c.Final))
			}
			c, sw, err := e.complete(t, "m", b, true)
			if err != nil {
				t.Fatal(err)
			}
			if !sw.started || !c.Done || !c.UsageKnown || c.PromptTokens != 5 || c.CompletionTokens != 5 || c.Output != "You said: Say hello now" || c.FinishReason != "stop" {
				t.Errorf("stream %+v\n%s", c, sw.String())
			}
			for _, ch := range chunksOf(t, sw.String()) {
				if ch["object"] != "chat.completion.chunk" {
					t.Errorf("chunk %v", ch)
				}
			}
			if strings.Contains(sw.String(), "event:") {
				t.Errorf("the stream keeps the provider's event lines:\n%s", sw.String())
			}
			if got := len(e.usages()); got != 2 {
				t.Errorf("%d usages reported", got)
			}
		})
	}
}

// TestNativeToolCalls: tools and tool_choice reach the provider, its call
// comes back as tool_calls (whole and as deltas), and the result goes
// back to it in the next turn.
func TestNativeToolCalls(t *testing.T) {
	tools := `"tools":[{"type":"function","function":{"name":"lookup","description":"Looks up","parameters":{"type":"object","properties":{"query":{"type":"string"}},"required":["query"]}}}],"tool_choice":"required"`
	for _, typ := range []string{"anthropic", "gemini"} {
		t.Run(typ, func(t *testing.T) {
			e := newNativeEnv(t, typ)
			b := body(t, `{"model":"m","messages":[{"role":"user","content":"weather"}],`+tools+`,"max_tokens":200}`)
			c, _, err := e.complete(t, "m", b, false)
			if err != nil {
				t.Fatal(err)
			}
			var choices []struct {
				Message struct {
					Content   *string        `json:"content"`
					ToolCalls []chatToolCall `json:"tool_calls"`
				} `json:"message"`
			}
			_ = json.Unmarshal(c.Final["choices"], &choices)
			if c.FinishReason != "tool_calls" || len(choices) != 1 || len(choices[0].Message.ToolCalls) != 1 {
				t.Fatalf("answer %s", jsonobj.Marshal(c.Final))
			}
			call := choices[0].Message.ToolCalls[0]
			if call.Function.Name != "lookup" || call.Function.Arguments != `{"query":"weather"}` || call.ID == "" {
				t.Errorf("tool call %+v", call)
			}
			// The stream's deltas add up to the same call.
			_, sw, err := e.complete(t, "m", b, true)
			if err != nil {
				t.Fatal(err)
			}
			var args strings.Builder
			name := ""
			for _, ch := range chunksOf(t, sw.String()) {
				cs, _ := ch["choices"].([]any)
				for _, c := range cs {
					d, _ := c.(map[string]any)["delta"].(map[string]any)
					tcs, _ := d["tool_calls"].([]any)
					for _, tc := range tcs {
						f := tc.(map[string]any)["function"].(map[string]any)
						if n, _ := f["name"].(string); n != "" {
							name = n
						}
						a, _ := f["arguments"].(string)
						args.WriteString(a)
					}
				}
			}
			if name != "lookup" || args.String() != `{"query":"weather"}` {
				t.Errorf("streamed call %q %q\n%s", name, args.String(), sw.String())
			}
			// The result goes back.
			idJSON, _ := json.Marshal(call.ID)
			b = body(t, `{"model":"m","messages":[{"role":"user","content":"weather"},{"role":"assistant","content":null,"tool_calls":[{"id":`+string(idJSON)+`,"type":"function","function":{"name":"lookup","arguments":"{\"query\":\"weather\"}"}}]},{"role":"tool","tool_call_id":`+string(idJSON)+`,"content":"sunny"}],`+tools+`,"max_tokens":200}`)
			b["tool_choice"] = json.RawMessage(`"auto"`)
			c, _, err = e.complete(t, "m", b, false)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(c.Output, "The tool said:") || !strings.Contains(c.Output, "sunny") || c.FinishReason != "stop" {
				t.Errorf("after the result: %+v", c)
			}
		})
	}
}

// TestNativeThinking: reasoning asks for thinking; the thinking comes back
// as reasoning, counted in the completion.
func TestNativeThinking(t *testing.T) {
	for _, typ := range []string{"anthropic", "gemini"} {
		t.Run(typ, func(t *testing.T) {
			e := newNativeEnv(t, typ)
			b := body(t, `{"model":"m","messages":[{"role":"user","content":"Say hello"}],"reasoning":{"max_tokens":1500},"max_tokens":2000}`)
			for _, stream := range []bool{false, true} {
				c, sw, err := e.complete(t, "m", b, stream)
				if err != nil {
					t.Fatal(err)
				}
				// "Let me think about: Say hello" 6 words, "You said: Say hello" 4.
				if c.Reasoning != "Let me think about: Say hello" || c.CompletionTokens != 10 || c.Output != "You said: Say hello" {
					t.Errorf("stream %v: %+v\n%s", stream, c, sw.String())
				}
			}
		})
	}
	// Anthropic requires 1024 thinking tokens at least, below max_tokens.
	for _, s := range []string{
		`{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning":{"max_tokens":500},"max_tokens":2000}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning":{"effort":"high"},"max_tokens":1000}`,
		`{"model":"m","messages":[{"role":"user","content":"x"}],"reasoning":{"effort":"high","exclude":true},"max_tokens":10000}`,
	} {
		if _, err := (anthropic{}).request("/chat/completions", &provider.Model{ID: "m"}, []byte(s)); !isInvalid(err) {
			t.Errorf("%s: %v, want a 400", s, err)
		}
	}
}

func isInvalid(err error) bool {
	var ge *gatehouse.Error
	return errors.As(err, &ge) && ge.Code == gatehouse.EINVALID
}

// TestNativeCacheUsage: the provider's cache reads and writes reach
// metering: Anthropic's cache_control passes to its blocks, a second call
// reads what the first wrote; Gemini's implicit cache reads are its
// cachedContentTokenCount.
func TestNativeCacheUsage(t *testing.T) {
	e := newNativeEnv(t, "anthropic")
	b := body(t, `{"model":"m","messages":[{"role":"system","content":[{"type":"text","text":"a long shared document of seven words","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"Say hello"}],"max_tokens":200}`)
	first, _, err := e.complete(t, "m", b, false)
	if err != nil {
		t.Fatal(err)
	}
	second, sw, err := e.complete(t, "m", b, true)
	if err != nil {
		t.Fatal(err)
	}
	if first.PromptTokens != 9 || first.CacheWriteTokens != 7 || first.CacheReadTokens != 0 {
		t.Errorf("first %+v", first)
	}
	if second.PromptTokens != 9 || second.CacheReadTokens != 7 || second.CacheWriteTokens != 0 {
		t.Errorf("second %+v\n%s", second, sw.String())
	}
	u := e.usages()
	if u[1]["cache_read_input_tokens"] != 7 || u[1]["input_tokens"] != 2 {
		t.Errorf("the stand-in reported %v", u)
	}

	g := newNativeEnv(t, "gemini")
	b = body(t, `{"model":"m","messages":[{"role":"system","content":"a long shared document of seven words"},{"role":"user","content":"Say hello"}],"max_tokens":200}`)
	if _, _, err := g.complete(t, "m", b, false); err != nil {
		t.Fatal(err)
	}
	c, _, err := g.complete(t, "m", b, false)
	if err != nil || c.PromptTokens != 9 || c.CacheReadTokens != 9 {
		t.Errorf("gemini, again: %+v %v", c, err)
	}
	b["messages"] = json.RawMessage(`[{"role":"system","content":[{"type":"text","text":"doc","cache_control":{"type":"ephemeral"}}]},{"role":"user","content":"x"}]`)
	if _, _, err := g.complete(t, "m", b, false); !isInvalid(err) {
		t.Errorf("gemini with cache_control: %v, want a 400", err)
	}
}

// TestNativeErrors: the provider's error keeps its status and message in
// OpenAI's shape; overloaded and rate-limited answers fall back as any 429
// or 5xx; the stand-in's refusals of a bad request reach the client.
func TestNativeErrors(t *testing.T) {
	for _, c := range []struct {
		typ, model string
		status     int
		message    string
	}{
		{"anthropic", "overloaded", 529, "Overloaded"},
		{"anthropic", "rate-limited", 429, "rate limit"},
		{"gemini", "overloaded", 503, "overloaded"},
		{"gemini", "rate-limited", 429, "quota"},
	} {
		e := newNativeEnv(t, c.typ)
		_, _, err := e.complete(t, c.model, body(t, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":10}`), false)
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.ProviderStatus != c.status || !strings.Contains(ue.Message, c.message) {
			t.Errorf("%s %s: %v", c.typ, c.model, err)
			continue
		}
		var shape struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if json.Unmarshal(ue.Raw, &shape) != nil || shape.Error.Message == "" {
			t.Errorf("%s: raw %s", c.typ, ue.Raw)
		}
	}
	// A wrong key is refused, and the refusal does not quote it.
	for _, typ := range []string{"anthropic", "gemini"} {
		e := newNativeEnv(t, typ)
		e.p.APIKey = "wrong-key-123"
		_, _, err := e.complete(t, "m", body(t, `{"model":"m","messages":[{"role":"user","content":"x"}],"max_tokens":10}`), false)
		var ue *provider.UpstreamError
		if !errors.As(err, &ue) || ue.ProviderStatus/100 != 4 || strings.Contains(ue.Message, "wrong-key-123") {
			t.Errorf("%s with a wrong key: %v", typ, err)
		}
	}
	// A stream that fails midway ends with an error event and no usage.
	for _, typ := range []string{"anthropic", "gemini"} {
		e := newNativeEnv(t, typ)
		c, sw, err := e.complete(t, "fails-midstream", body(t, `{"model":"m","messages":[{"role":"user","content":"Say hello"}],"max_tokens":10}`), true)
		if err != nil || c.UsageKnown || c.Done || !strings.Contains(sw.String(), `"error"`) {
			t.Errorf("%s midstream: %+v %v\n%s", typ, c, err, sw.String())
		}
	}
}

// TestNativeRefusals: what a type cannot honour is a 400 naming it,
// before anything is sent.
func TestNativeRefusals(t *testing.T) {
	for _, c := range []struct {
		d     dialect
		body  string
		field string
	}{
		{anthropic{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"response_format":{"type":"json_object"}}`, "response_format"},
		{anthropic{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"logprobs":true}`, "logprobs"},
		{anthropic{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"n":2}`, "n"},
		{anthropic{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"frobnicate":1}`, "frobnicate"},
		{anthropic{}, `{"messages":[{"role":"function","content":"x"}],"max_tokens":5}`, "messages[0].role"},
		{anthropic{}, `{"messages":[{"role":"user","content":[{"type":"text","text":"x","cache_control":{"type":"ephemeral","ttl":"1h"}}]}],"max_tokens":5}`, "messages[0].content[0].cache_control.ttl"},
		{anthropic{}, `{"messages":[{"role":"assistant","content":"x","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"[1]"}}]}],"max_tokens":5}`, "messages[0].tool_calls[0].function.arguments"},
		{anthropic{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"tools":[{"type":"function","function":{"name":"f"},"cache_control":{"type":"ephemeral","ttl":"1h"}}]}`, "tools[0].cache_control.ttl"},
		{anthropic{}, `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"},"cache_control":{"type":"ephemeral","ttl":"1h"}}]}],"max_tokens":5}`, "messages[1].tool_calls[0].cache_control.ttl"},
		{gemini{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"logprobs":true}`, "logprobs"},
		{gemini{}, `{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"tools":[{"type":"function","function":{"name":"f"},"cache_control":{"type":"ephemeral"}}]}`, "tools[0].cache_control"},
		{gemini{}, `{"messages":[{"role":"user","content":"x"},{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"},"cache_control":{"type":"ephemeral"}}]}],"max_tokens":5}`, "messages[1].tool_calls[0].cache_control"},
		{gemini{}, `{"messages":[{"role":"tool","tool_call_id":"nope","content":"x"}],"max_tokens":5}`, "messages[0].tool_call_id"},
		{gemini{}, `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}],"max_tokens":5}`, "messages[0].content[0].image_url.url"},
	} {
		_, err := c.d.request("/chat/completions", &provider.Model{ID: "m"}, []byte(c.body))
		var ge *gatehouse.Error
		if !errors.As(err, &ge) || ge.Code != gatehouse.EINVALID || !strings.Contains(ge.Error(), c.field) {
			t.Errorf("%T %s: %v, want a 400 naming %s", c.d, c.body, err, c.field)
		}
	}
	for _, d := range []dialect{anthropic{}, gemini{}} {
		if _, err := d.request("/embeddings", &provider.Model{ID: "m"}, []byte(`{}`)); !isInvalid(err) {
			t.Errorf("%T /embeddings: %v", d, err)
		}
	}
}

// TestNativeToolCacheControl: cache_control on a tool and on an assistant
// message's tool call reaches Anthropic on the tool and on the tool_use
// block; the stand-in writes the prompt up to the tool call to its cache,
// and reads it the next time.
func TestNativeToolCacheControl(t *testing.T) {
	req := `{"model":"x","messages":[{"role":"user","content":"weather"},{"role":"assistant","content":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"lookup","arguments":"{\"query\":\"weather\"}"},"cache_control":{"type":"ephemeral"}}]},{"role":"tool","tool_call_id":"toolu_1","content":"sunny"}],"max_tokens":50,"tools":[{"type":"function","function":{"name":"lookup","parameters":{"type":"object"}},"cache_control":{"type":"ephemeral","ttl":"5m"}}]}`
	out, err := (anthropic{}).request("/chat/completions", &provider.Model{ID: "claude"}, []byte(req))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude","max_tokens":50,"messages":[{"role":"user","content":[{"type":"text","text":"weather"}]},{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"lookup","input":{"query":"weather"},"cache_control":{"type":"ephemeral"}}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"sunny"}]}]}],"tools":[{"name":"lookup","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral","ttl":"5m"}}]}`
	if string(out) != want {
		t.Errorf("anthropic:\n%s\nwant\n%s", out, want)
	}
	e := newNativeEnv(t, "anthropic")
	b := body(t, req)
	first, _, err := e.complete(t, "m", b, false)
	if err != nil {
		t.Fatal(err)
	}
	second, _, err := e.complete(t, "m", b, true)
	if err != nil {
		t.Fatal(err)
	}
	u := e.usages()
	if u[0]["cache_creation_input_tokens"] == 0 || u[0]["cache_read_input_tokens"] != 0 || u[1]["cache_read_input_tokens"] != u[0]["cache_creation_input_tokens"] {
		t.Errorf("the stand-in reported %v: want a write, then a read of it", u)
	}
	if first.CacheWriteTokens != u[0]["cache_creation_input_tokens"] || second.CacheReadTokens != u[1]["cache_read_input_tokens"] {
		t.Errorf("metered %+v, %+v; the stand-in reported %v", first, second, u)
	}
}

// TestNativeRequestShapes: the translated requests, read back.
func TestNativeRequestShapes(t *testing.T) {
	req := `{"model":"x","messages":[{"role":"system","content":"S"},{"role":"user","content":[{"type":"text","text":"look","cache_control":{"type":"ephemeral","ttl":"5m"}},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]},{"role":"assistant","content":"ok","reasoning_details":[{"type":"reasoning.text","text":"hm","signature":"sig","format":"anthropic-claude-v1","index":0}]},{"role":"user","content":"again"}],"max_tokens":50,"stop":"END","user":"u1","parallel_tool_calls":false,"tools":[{"type":"function","function":{"name":"f"}}],"tool_choice":{"type":"function","function":{"name":"f"}},"seed":3}`
	out, err := (anthropic{}).request("/chat/completions", &provider.Model{ID: "claude"}, []byte(req))
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"claude","max_tokens":50,"system":[{"type":"text","text":"S"}],"messages":[{"role":"user","content":[{"type":"text","text":"look","cache_control":{"type":"ephemeral","ttl":"5m"}},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AAAA"}}]},{"role":"assistant","content":[{"type":"thinking","thinking":"hm","signature":"sig"},{"type":"text","text":"ok"}]},{"role":"user","content":[{"type":"text","text":"again"}]}],"stop_sequences":["END"],"tools":[{"name":"f","input_schema":{"type":"object","properties":{}}}],"tool_choice":{"type":"tool","name":"f","disable_parallel_tool_use":true},"metadata":{"user_id":"u1"}}`
	if string(out) != want {
		t.Errorf("anthropic:\n%s\nwant\n%s", out, want)
	}
	out, err = (gemini{}).request("/chat/completions", &provider.Model{ID: "gem"}, []byte(`{"model":"x","messages":[{"role":"system","content":"S"},{"role":"user","content":"hi"}],"max_tokens":50,"temperature":0.2,"seed":3,"response_format":{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"}}},"reasoning":{"effort":"low","exclude":true},"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none"}`))
	if err != nil {
		t.Fatal(err)
	}
	want = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}],"systemInstruction":{"parts":[{"text":"S"}]},"tools":[{"functionDeclarations":[{"name":"f","parametersJsonSchema":{"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}},"generationConfig":{"maxOutputTokens":50,"temperature":0.2,"seed":3,"responseMimeType":"application/json","responseJsonSchema":{"type":"object"},"thinkingConfig":{"thinkingBudget":10}}}`
	if string(out) != want {
		t.Errorf("gemini:\n%s\nwant\n%s", out, want)
	}
}

// TestNativeUsageReadExactly: a provider usage that does not read (a
// count as a string, a fraction, negative) is usage not known, charged the
// reservation, never cheaper.
func TestNativeUsageReadExactly(t *testing.T) {
	for _, u := range []string{
		`{"input_tokens":"5","output_tokens":3}`,
		`{"input_tokens":5.5,"output_tokens":3}`,
		`{"input_tokens":5,"output_tokens":3,"cache_read_input_tokens":-1}`,
		`{"input_tokens":5,"output_tokens":3,"cache_read_input_tokens":"2"}`,
		`{"output_tokens":3}`,
	} {
		if anthropicUsage(json.RawMessage(u)) != nil {
			t.Errorf("anthropic %s read", u)
		}
	}
	if got := anthropicUsage(json.RawMessage(`{"input_tokens":5,"output_tokens":3,"cache_read_input_tokens":null,"cache_creation_input_tokens":4}`)); got == nil || got.PromptTokens != 9 || got.PromptTokensDetails.CacheWriteTokens != 4 {
		t.Errorf("anthropic usage %+v", got)
	}
	for _, u := range []string{
		`{"promptTokenCount":"5","candidatesTokenCount":3}`,
		`{"promptTokenCount":5,"candidatesTokenCount":3.0}`,
		`{"candidatesTokenCount":3}`,
	} {
		if geminiUsage(json.RawMessage(u)) != nil {
			t.Errorf("gemini %s read", u)
		}
	}
	if got := geminiUsage(json.RawMessage(`{"promptTokenCount":10,"candidatesTokenCount":3,"thoughtsTokenCount":4,"cachedContentTokenCount":6,"toolUsePromptTokenCount":2}`)); got == nil ||
		got.PromptTokens != 12 || got.CompletionTokens != 7 || got.PromptTokensDetails.CachedTokens != 6 || got.CompletionTokensDetails.ReasoningTokens != 4 {
		t.Errorf("gemini usage %+v", got)
	}
}

// TestNativeResponses: the Responses API to a provider of another type:
// the request becomes a chat completion, the answer a response object,
// and a stream the Responses API's events, with the usage metering reads.
func TestNativeResponses(t *testing.T) {
	for _, typ := range []string{"anthropic", "gemini"} {
		t.Run(typ, func(t *testing.T) {
			e := newNativeEnv(t, typ)
			respond := func(b map[string]json.RawMessage, stream bool) (provider.Completion, *streamBuf) {
				t.Helper()
				sw := &streamBuf{}
				c, err := e.c.Respond(context.Background(), provider.CompletionCall{Provider: e.p, Model: &provider.Model{ID: "m"},
					Body: b, MaxTokens: 200, Stream: stream, Rewrite: func(map[string]json.RawMessage) {}}, sw)
				if err != nil {
					t.Fatal(err)
				}
				return c, sw
			}
			b := body(t, `{"model":"m","instructions":"Be brief.","input":"Say hello now"}`)
			c, _ := respond(b, false)
			if !c.UsageKnown || c.PromptTokens != 5 || c.CompletionTokens != 5 || c.Output != "You said: Say hello now" || c.FinishReason != "stop" {
				t.Errorf("whole: %+v", c)
			}
			if string(c.Final["object"]) != `"response"` || string(c.Final["status"]) != `"completed"` {
				t.Errorf("response %s", jsonobj.Marshal(c.Final))
			}
			c, sw := respond(b, true)
			if !c.UsageKnown || c.PromptTokens != 5 || c.CompletionTokens != 5 || c.Output != "You said: Say hello now" || c.Final == nil {
				t.Errorf("stream: %+v\n%s", c, sw.String())
			}
			for _, ev := range []string{"event: response.created", "event: response.output_item.added", "event: response.output_text.delta", "event: response.output_item.done"} {
				if !strings.Contains(sw.String(), ev) {
					t.Errorf("stream without %s:\n%s", ev, sw.String())
				}
			}
			// Function calls, and their outputs in the next request.
			tools := `"tools":[{"type":"function","name":"lookup","parameters":{"type":"object","properties":{"query":{"type":"string"}}}}]`
			b = body(t, `{"model":"m","input":[{"role":"user","content":[{"type":"input_text","text":"weather"}]}],`+tools+`,"tool_choice":"required"}`)
			for _, stream := range []bool{false, true} {
				c, sw := respond(b, stream)
				if c.FinishReason != "tool_calls" || !c.UsageKnown {
					t.Errorf("stream %v: %+v\n%s", stream, c, sw.String())
				}
				var output []map[string]any
				var resp map[string]json.RawMessage = c.Final
				if stream {
					_ = json.Unmarshal(c.Final["response"], &resp)
				}
				_ = json.Unmarshal(resp["output"], &output)
				if len(output) != 1 || output[0]["type"] != "function_call" || output[0]["name"] != "lookup" || output[0]["arguments"] != `{"query":"weather"}` {
					t.Errorf("stream %v: output %v", stream, output)
				}
			}
			b = body(t, `{"model":"m","input":[{"role":"user","content":"weather"},{"type":"function_call","call_id":"call_1","name":"lookup","arguments":"{\"query\":\"weather\"}"},{"type":"function_call_output","call_id":"call_1","output":"sunny"}],`+tools+`}`)
			if typ == "anthropic" {
				b["input"] = json.RawMessage(`[{"role":"user","content":"weather"},{"type":"function_call","call_id":"toolu_1","name":"lookup","arguments":"{\"query\":\"weather\"}"},{"type":"function_call_output","call_id":"toolu_1","output":"sunny"}]`)
			}
			c, _ = respond(b, false)
			if !strings.Contains(c.Output, "sunny") {
				t.Errorf("after the output: %+v", c)
			}
		})
	}
}
