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
