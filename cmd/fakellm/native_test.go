package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// TestNativeAPIs: fakellm speaks Anthropic's Messages API and the Gemini
// API too, strictly (a missing header is refused).
func TestNativeAPIs(t *testing.T) {
	srv, logs := start(t)
	for _, c := range []struct {
		path, header, body, want string
	}{
		{"/v1/messages", "x-api-key", `{"model":"claude","max_tokens":20,"messages":[{"role":"user","content":"hello there"}]}`, "You said: hello there"},
		{"/v1beta/models/gemini-x:generateContent", "x-goog-api-key", `{"contents":[{"role":"user","parts":[{"text":"hello there"}]}]}`, "You said: hello there"},
	} {
		req, _ := http.NewRequest("POST", srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("anthropic-version", "2023-06-01")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode/100 != 4 {
			t.Errorf("%s without %s: status %d", c.path, c.header, resp.StatusCode)
		}
		req, _ = http.NewRequest("POST", srv.URL+c.path, strings.NewReader(c.body))
		req.Header.Set("anthropic-version", "2023-06-01")
		req.Header.Set(c.header, "any-key")
		resp, err = http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		var v any
		err = json.NewDecoder(resp.Body).Decode(&v)
		resp.Body.Close()
		if b, _ := json.Marshal(v); err != nil || resp.StatusCode != 200 || !strings.Contains(string(b), c.want) {
			t.Errorf("%s: %d %s", c.path, resp.StatusCode, b)
		}
	}
	if !strings.Contains(logs.String(), "POST /v1/messages") || !strings.Contains(logs.String(), "POST /v1beta/models/gemini-x:generateContent") {
		t.Errorf("log:\n%s", logs)
	}
}
