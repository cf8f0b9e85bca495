package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestNoModelsConfigured: on a server started without a providers file, a
// model call says that no models are configured and how to configure
// some, rather than that the model is unknown.
func TestNoModelsConfigured(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, key := e.createKey(e.mgmt, map[string]any{"name": "k"})
	for _, c := range []struct{ path, body string }{
		{"/api/v1/chat/completions", `{"model":"openai/gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`},
		{"/api/v1/responses", `{"model":"openai/gpt-4o-mini","input":"hi"}`},
		{"/api/v1/embeddings", `{"model":"openai/text-embedding-3-small","input":"hi"}`},
	} {
		msg := e.do("POST", c.path, key, c.body).want(t, http.StatusBadRequest).errorMessage(t)
		if !strings.Contains(msg, "no models are configured") || !strings.Contains(msg, "GATEHOUSE_PROVIDERS_FILE") {
			t.Errorf("%s: %q", c.path, msg)
		}
	}
}
