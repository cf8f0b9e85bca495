package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestDisplayTextRefusesControls: every name, label and description the API
// stores refuses control characters and bidirectional overrides with a 400
// that names the field, and changes nothing.
func TestDisplayTextRefusesControls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMatrixCatalog(t))
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "plain"})
	byok := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": "sk-display-0123456789"})["id"].(string)
	for _, bad := range []string{"evil\u202egnp.exe", "bell\x07", "esc\x1b[2J", "c1\u0085", "iso\u2066late"} {
		for _, c := range []struct {
			method, path, field string
			body                map[string]any
		}{
			{"POST", "/api/v1/keys", "name", map[string]any{"name": bad}},
			{"PATCH", "/api/v1/keys/" + hash, "name", map[string]any{"name": bad}},
			{"POST", "/api/v1/keys", "external.user", map[string]any{"name": "k", "external": map[string]any{"user": bad}}},
			{"POST", "/api/v1/workspaces", "name", map[string]any{"name": bad, "slug": "ws-x"}},
			{"POST", "/api/v1/workspaces", "description", map[string]any{"name": "w", "slug": "ws-y", "description": bad}},
			{"POST", "/api/v1/guardrails", "name", map[string]any{"name": bad}},
			{"POST", "/api/v1/guardrails", "description", map[string]any{"name": "g", "description": bad}},
			{"POST", "/api/v1/guardrails", "label", map[string]any{"name": "g2", "content_filters": []any{map[string]any{"pattern": "x", "action": "flag", "label": bad}}}},
			{"POST", "/api/v1/observability/destinations", "name", map[string]any{"name": bad, "type": "webhook", "config": map[string]any{"url": "https://hooks.example/x"}}},
			{"POST", "/api/v1/byok", "name", map[string]any{"provider": "acme", "key": "sk-display-0123456789", "name": bad}},
			{"PATCH", "/api/v1/byok/" + byok, "name", map[string]any{"name": bad}},
			{"POST", "/api/v1/organization/members", "first_name", map[string]any{"email": "a@example.com", "first_name": bad}},
			{"POST", "/api/v1/auth/keys/code", "key_label", map[string]any{"callback_url": "https://app.example/cb", "key_label": bad}},
		} {
			e.unchanged(c.method+" "+c.path+" "+c.field, func() {
				res := e.do(c.method, c.path, e.mgmt, c.body)
				if res.Status != http.StatusBadRequest || !strings.Contains(res.errorMessage(t), c.field) {
					t.Errorf("%s %s with %s=%q: %d %s; want 400 naming %s", c.method, c.path, c.field, bad, res.Status, res.Body, c.field)
				}
			})
		}
	}
	// Descriptions may span lines.
	e.do("POST", "/api/v1/workspaces", e.mgmt, map[string]any{"name": "w", "slug": "multi", "description": "line one\nline two\ttabbed"}).want(t, http.StatusCreated)
}
