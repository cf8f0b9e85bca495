package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// writeProviders writes a providers file for an upstream at baseURL.
func writeProviders(t *testing.T, dir, baseURL string) string {
	t.Helper()
	path := filepath.Join(dir, "providers.yaml")
	content := "providers:\n" +
		"  - id: fake\n" +
		"    base_url: " + baseURL + "\n" +
		"    api_key_env: FAKE_API_KEY\n" +
		"    models:\n" +
		"      - id: echo\n" +
		"        name: Echo\n" +
		"        prompt_price: 1\n" +
		"        completion_price: 2\n"
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestProvidersFileInvalid: the server refuses to start, naming the line,
// before it touches the database.
func TestProvidersFileInvalid(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "providers.yaml")
	bad := "providers:\n  - id: fake\n    base_url: localhost:8090\n    models:\n      - {id: echo, prompt_price: 1, completion_price: 2}\n"
	if err := os.WriteFile(path, []byte(bad), 0o600); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(dir, "g.db")
	for _, vars := range []map[string]string{
		{"GATEHOUSE_PROVIDERS_FILE": path, "GATEHOUSE_DATABASE_URL": db, "GATEHOUSE_ADDR": "127.0.0.1:0"},
		{"GATEHOUSE_PROVIDERS_FILE": filepath.Join(dir, "missing.yaml"), "GATEHOUSE_DATABASE_URL": db, "GATEHOUSE_ADDR": "127.0.0.1:0"},
	} {
		_, errOut, err := cli(t, vars, "serve")
		if err == nil {
			t.Fatalf("serve with %s succeeded", vars["GATEHOUSE_PROVIDERS_FILE"])
		}
		if !strings.Contains(err.Error(), "GATEHOUSE_PROVIDERS_FILE") {
			t.Errorf("error %q does not name GATEHOUSE_PROVIDERS_FILE", err)
		}
		if _, ok := logLine(errOut, "listening"); ok {
			t.Errorf("listened despite an invalid providers file")
		}
		if fileExists(db) {
			t.Errorf("touched the database despite an invalid providers file")
		}
	}
	_, _, err := cli(t, map[string]string{"GATEHOUSE_DATABASE_URL": db}, "serve", "--addr", "127.0.0.1:0", "--providers", path)
	if err == nil || !strings.Contains(err.Error(), path+":3:15: base_url: must be an absolute http or https URL") {
		t.Errorf("serve --providers with a bad base_url: err = %v, want one naming line 3, column 15 and base_url", err)
	}
}

// TestProvidersFileServesModels: the models of the file are listed, and a
// completion through them reaches the upstream with the provider's key and
// is metered.
func TestProvidersFileServesModels(t *testing.T) {
	var gotAuth string
	upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gotAuth = r.Header.Get("Authorization")
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"echo",` +
			`"choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],` +
			`"usage":{"prompt_tokens":1000,"completion_tokens":500,"total_tokens":1500}}`))
	}))
	defer upstream.Close()
	dir := t.TempDir()
	const upstreamKey = "upstream-secret-key-42"
	vars := map[string]string{"GATEHOUSE_PROVIDERS_FILE": writeProviders(t, dir, upstream.URL+"/v1"), "FAKE_API_KEY": upstreamKey}
	s := startServer(t, vars, "--addr", "127.0.0.1:0", "--database", filepath.Join(dir, "g.db"))
	if line, ok := logLine(s.stderr.String(), "providers loaded"); !ok || line["providers"] != 1.0 || line["models"] != 1.0 {
		t.Errorf("providers loaded log line = %v", line)
	}

	status, body := s.do("GET", "/api/v1/models", "", nil)
	data, _ := body["data"].([]any)
	if status != http.StatusOK || len(data) != 1 || data[0].(map[string]any)["id"] != "fake/echo" {
		t.Fatalf("GET /models = %d %v, want fake/echo", status, body)
	}

	mgmt := printedKeys(t, s.stderr.String())[0]
	status, body = s.do("POST", "/api/v1/keys", mgmt, map[string]any{"name": "app", "limit": 1})
	if status != http.StatusCreated {
		t.Fatalf("POST /keys = %d %v", status, body)
	}
	key, hash := str(body["key"]), str(body["data"].(map[string]any)["hash"])
	status, body = s.do("POST", "/api/v1/chat/completions", key, map[string]any{
		"model": "fake/echo", "messages": []any{map[string]any{"role": "user", "content": "hello"}}})
	if status != http.StatusOK || !strings.HasPrefix(str(body["id"]), "gen-") || body["model"] != "fake/echo" {
		t.Fatalf("POST /chat/completions = %d %v", status, body)
	}
	if gotAuth != "Bearer "+upstreamKey {
		t.Errorf("upstream saw Authorization %q, want the provider's key", gotAuth)
	}
	// 1000 prompt tokens at $1/M and 500 completion tokens at $2/M: $0.002.
	status, body = s.do("GET", "/api/v1/keys/"+hash, mgmt, nil)
	if k, _ := body["data"].(map[string]any); status != http.StatusOK || k["usage"] != 0.002 || k["limit_remaining"] != 0.998 {
		t.Errorf("GET /keys/{hash} = %d %v, want usage 0.002 and limit_remaining 0.998", status, body)
	}
	if strings.Contains(s.stderr.String(), upstreamKey) {
		t.Errorf("the provider's key appears in the log")
	}
}
