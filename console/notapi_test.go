package console_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// TestAPICallsOutsideAPI: a program calling the console's address without
// /api/v1 (a client whose base URL is http://HOST:8080/v1, say) gets a JSON
// 404 that says where the API is, never a console page; browsers still
// get the console's pages, for known and unknown paths alike.
func TestAPICallsOutsideAPI(t *testing.T) {
	e := newEnv(t)
	browser := "text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"
	for _, c := range []struct {
		method, path string
		headers      []string
		hint         string // the path the answer points to; "" for a console page
		status       int
	}{
		{"POST", "/v1/chat/completions", []string{"Authorization", "Bearer sk-gh-v1-x", "Content-Type", "application/json"}, "POST /api/v1/chat/completions", 404},
		{"GET", "/v1/models", nil, "GET /api/v1/models", 404},
		{"POST", "/chat/completions", []string{"Content-Type", "application/json; charset=utf-8"}, "POST /api/v1/chat/completions", 404},
		{"GET", "/key", []string{"Authorization", "Bearer " + e.mgmt}, "GET /api/v1/key", 404},
		{"GET", "/models", []string{"Accept", "application/json"}, "GET /api/v1/models", 404},
		{"POST", "/api/chat/completions", nil, "POST /api/v1/chat/completions", 404},
		// A console route called as the API would be: not its form.
		{"POST", "/keys", []string{"Authorization", "Bearer " + e.mgmt, "Content-Type", "application/json"}, "POST /api/v1/keys", 404},
		{"GET", "/keys", []string{"Accept", "application/json"}, "GET /api/v1/keys", 404},
		// Browsers: the console's pages.
		{"GET", "/keys", []string{"Accept", browser}, "", http.StatusSeeOther},
		{"GET", "/no-such-page", []string{"Accept", browser}, "", 404},
		{"GET", "/no-such-page", nil, "", 404},
		{"POST", "/keys", []string{"Content-Type", "application/x-www-form-urlencoded", "Origin", "http://evil.example"}, "", 403},
	} {
		req, err := http.NewRequest(c.method, e.URL+c.path, strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i+1 < len(c.headers); i += 2 {
			req.Header.Set(c.headers[i], c.headers[i+1])
		}
		resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		what := c.method + " " + c.path + " " + strings.Join(c.headers, " ")
		if resp.StatusCode != c.status {
			t.Errorf("%s: status %d, want %d\n%s", what, resp.StatusCode, c.status, body)
			continue
		}
		isJSON := strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json")
		if c.hint == "" {
			if isJSON {
				t.Errorf("%s: a browser got JSON: %s", what, body)
			}
			continue
		}
		var out struct {
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if !isJSON || json.Unmarshal(body, &out) != nil || out.Error.Code != 404 ||
			!strings.Contains(out.Error.Message, "under /api/v1") || !strings.Contains(out.Error.Message, "("+c.hint+")") {
			t.Errorf("%s: %s %s, want a JSON 404 pointing to %s", what, resp.Header.Get("Content-Type"), body, c.hint)
		}
	}
}
