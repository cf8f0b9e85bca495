package standin

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

func post(t *testing.T, h http.Handler, path string, headers map[string]string, body string) (int, string) {
	t.Helper()
	req := httptest.NewRequest("POST", path, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	b, _ := io.ReadAll(rec.Body)
	return rec.Code, string(b)
}

// TestAnthropicStrict: the stand-in refuses what the Messages API refuses,
// in its words and shape.
func TestAnthropicStrict(t *testing.T) {
	a := &Anthropic{Key: "k"}
	h := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	ok := `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}]}`
	for _, c := range []struct {
		headers map[string]string
		body    string
		status  int
		want    string
	}{
		{map[string]string{"anthropic-version": "2023-06-01"}, ok, 401, "x-api-key header is required"},
		{map[string]string{"x-api-key": "other", "anthropic-version": "2023-06-01"}, ok, 401, "invalid x-api-key"},
		{map[string]string{"x-api-key": "k"}, ok, 400, "anthropic-version: header is required"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"}],"max_completion_tokens":5}`, 400, "max_completion_tokens: Extra inputs are not permitted"},
		{h, `{"model":"m","max_tokens":"10","messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens: Input should be a valid integer"},
		{h, `{"model":"m","messages":[{"role":"user","content":"hi"}]}`, 400, "max_tokens: Field required"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"hi","extra":1}]}]}`, 400, "messages.0.content.0.extra: Extra inputs are not permitted"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}]}`, 400, "messages.0.content.0.type: Input tag 'image_url'"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"system","content":"hi"}]}`, 400, "messages.0.role: Input should be 'user' or 'assistant'"},
		{h, `{"model":"m","max_tokens":10,"temperature":1.5,"messages":[{"role":"user","content":"hi"}]}`, 400, "temperature: Input should be between 0 and 1"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":""}]}]}`, 400, "text content blocks must be non-empty"},
		{h, `{"model":"m","max_tokens":1000,"thinking":{"type":"enabled","budget_tokens":1024},"messages":[{"role":"user","content":"hi"}]}`, 400, "`max_tokens` must be greater than `thinking.budget_tokens`"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t1","content":"x"}]}]}`, 400, "unexpected `tool_use_id`"},
		{h, `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hi"},{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"s","cache_control":{"type":"ephemeral"}}]}]}`, 400, "messages.1.content.0.cache_control: Extra inputs are not permitted"},
		{h, `{"model":"m","max_tokens":10,"tools":[` + strings.Repeat(`{"name":"f","input_schema":{},"cache_control":{"type":"ephemeral"}},`, 4) + `{"name":"g","input_schema":{}}],"messages":[{"role":"user","content":[{"type":"text","text":"hi","cache_control":{"type":"ephemeral"}}]}]}`, 400, "A maximum of 4 blocks with cache_control may be provided. Found 5."},
		{h, ok, 200, `"type":"message"`},
	} {
		status, body := post(t, a, "/v1/messages", c.headers, c.body)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d %q", c.body, status, body, c.status, c.want)
		}
		if status >= 400 && !strings.Contains(body, `{"error":{"message":`) && !strings.Contains(body, `"type":"error"`) {
			t.Errorf("%s: error shape %s", c.body, body)
		}
	}
}

// TestAnthropicToolCache: the tools come first in the prompt; a tool's
// cache_control writes the tools up to it to the cache, and the next call
// with the same tools reads them.
func TestAnthropicToolCache(t *testing.T) {
	a := &Anthropic{}
	h := map[string]string{"x-api-key": "k", "anthropic-version": "2023-06-01"}
	body := `{"model":"m","max_tokens":10,"tools":[{"name":"lookup","description":"Looks things up","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"tool_choice":{"type":"none"},"messages":[{"role":"user","content":"%s"}]}`
	for _, q := range []string{"first question", "second question here"} {
		if status, res := post(t, a, "/v1/messages", h, strings.Replace(body, "%s", q, 1)); status != 200 {
			t.Fatalf("%d %s", status, res)
		}
	}
	// "lookup Looks things up {...}": 5 words; the questions 2 and 3.
	u := a.Reported()
	if want := (Usage{"input_tokens": 2, "cache_creation_input_tokens": 5, "cache_read_input_tokens": 0, "output_tokens": 4}); !equalUsage(u[0], want) {
		t.Errorf("first %v, want %v", u[0], want)
	}
	if want := (Usage{"input_tokens": 3, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 5, "output_tokens": 5}); !equalUsage(u[1], want) {
		t.Errorf("second %v, want %v", u[1], want)
	}
}

func equalUsage(a, b Usage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// TestGeminiStrict: the stand-in refuses what the Gemini API refuses, and
// takes a field under either of its names.
func TestGeminiStrict(t *testing.T) {
	g := &Gemini{Key: "k"}
	h := map[string]string{"x-goog-api-key": "k"}
	path := "/v1beta/models/gemini-test:generateContent"
	for _, c := range []struct {
		headers map[string]string
		path    string
		body    string
		status  int
		want    string
	}{
		{nil, path, `{"contents":[{"parts":[{"text":"hi"}]}]}`, 403, "PERMISSION_DENIED"},
		{map[string]string{"x-goog-api-key": "no"}, path, `{"contents":[{"parts":[{"text":"hi"}]}]}`, 400, "API key not valid"},
		{h, path, `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxTokens":5}}`, 400, `Unknown name \"maxTokens\" at 'generation_config': Cannot find field.`},
		{h, path, `{"contents":[{"parts":[{"text":"hi"}]}],"generationConfig":{"maxOutputTokens":"five"}}`, 400, "Invalid value at 'generation_config.max_output_tokens' (TYPE_INT32)"},
		{h, path, `{"messages":[]}`, 400, `Unknown name \"messages\": Cannot find field.`},
		{h, path, `{}`, 400, "contents is not specified"},
		{h, path, `{"contents":[{"role":"assistant","parts":[{"text":"hi"}]}]}`, 400, "Please use a valid role: user, model."},
		{h, path, `{"contents":[{"parts":[{"text":"hi","functionCall":{"name":"f"}}]}]}`, 400, "oneof field 'data'"},
		{h, "/v1beta/models/x:predict", `{}`, 404, "NOT_FOUND"},
		{h, path, `{"contents":[{"parts":[{"text":"hi"}]}],"generation_config":{"max_output_tokens":5}}`, 200, `"finishReason":"STOP"`},
	} {
		status, body := post(t, g, c.path, c.headers, c.body)
		if status != c.status || !strings.Contains(body, c.want) {
			t.Errorf("%s: %d %s, want %d %q", c.body, status, body, c.status, c.want)
		}
	}
}
