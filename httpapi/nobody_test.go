package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestBodilessOperationsRefuseBodies checks the operations that take no body
// (deletes, the password reset): no body or an empty JSON object is
// accepted, and any other body is refused before the operation runs, so a
// malformed request deletes nothing.
func TestBodilessOperationsRefuseBodies(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, nil)
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "doomed"})
	e.createWorkspace(e.mgmt, "doomed")
	e.setBudget("doomed", "daily", map[string]any{"limit_usd": 1})
	guardrail := e.createGuardrail(e.mgmt, map[string]any{"name": "doomed"})["id"].(string)
	destination := e.createDestination(e.mgmt, map[string]any{"name": "hook", "type": "webhook",
		"config": map[string]any{"url": "https://example.com/a"}})["id"].(string)
	byok := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})["id"].(string)
	member := e.addMember(e.mgmt, "doomed@example.com")
	invitation := e.invite(e.mgmt, "invited@example.com", "").ID

	ops := []struct {
		method, path string
		status       int // of the accepted request
	}{
		{"DELETE", "/api/v1/keys/" + hash, http.StatusOK},
		{"DELETE", "/api/v1/workspaces/doomed/budgets/daily", http.StatusOK},
		{"DELETE", "/api/v1/workspaces/doomed", http.StatusOK},
		{"DELETE", "/api/v1/guardrails/" + guardrail, http.StatusOK},
		{"DELETE", "/api/v1/observability/destinations/" + destination, http.StatusOK},
		{"DELETE", "/api/v1/byok/" + byok, http.StatusOK},
		{"POST", "/api/v1/organization/members/" + member + "/password-reset", http.StatusCreated},
		{"DELETE", "/api/v1/organization/members/" + member, http.StatusOK},
		{"DELETE", "/api/v1/organization/invitations/" + invitation, http.StatusOK},
	}
	bad := []struct {
		name, ct, body string
		status         int
		substr         string
	}{
		{"garbage", "application/json", "garbage", http.StatusBadRequest, "malformed JSON"},
		{"truncated", "application/json", `{"a":`, http.StatusBadRequest, ""},
		{"unknown field", "application/json", `{"confirm_default_workspace_deletion": true}`, http.StatusBadRequest, "confirm_default_workspace_deletion"},
		{"array", "application/json", `[]`, http.StatusBadRequest, "JSON object"},
		{"null", "application/json", `null`, http.StatusBadRequest, "JSON object"},
		{"trailing", "application/json", `{} {}`, http.StatusBadRequest, ""},
		{"text", "text/plain", `{}`, http.StatusUnsupportedMediaType, "Content-Type"},
	}
	for i, op := range ops {
		for _, b := range bad {
			e.unchanged(op.path+" "+b.name, func() {
				resWantError(t, e.sendRawBody(op.method, op.path, e.mgmt, b.ct, b.body), b.status, b.substr)
			})
		}
		// Alternately an empty object and no body at all: both accepted.
		body, ct := "{}", "application/json"
		if i%2 == 1 {
			body, ct = "", ""
		}
		e.sendRawBody(op.method, op.path, e.mgmt, ct, body).want(t, op.status)
	}
}

// TestNonCanonicalPathIsNotFound: a path with an empty, . or .. segment is
// a JSON 404, not ServeMux's redirect to the cleaned path (which a client
// following it would replay, a DELETE included, on another route), and
// changes nothing.
func TestNonCanonicalPathIsNotFound(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "kept"})
	for _, p := range []string{
		"/api/v1/workspaces/../keys/" + hash,
		"/api/v1/keys/./" + hash,
		"/api/v1//keys/" + hash,
		"/api/v1/keys/" + hash + "/..",
		"/api/v1/keys/%2e%2e/keys/" + hash,
	} {
		e.unchanged(p, func() {
			req := httptest.NewRequest("DELETE", "/", nil)
			req.URL.Path, req.URL.RawPath = p, ""
			if strings.Contains(p, "%") {
				req = httptest.NewRequest("DELETE", p, nil)
			}
			req.Header.Set("Authorization", "Bearer "+e.mgmt)
			res := e.send(req)
			resWantError(t, res, http.StatusNotFound, "no such route")
			if loc := res.Header.Get("Location"); loc != "" {
				t.Errorf("%s: Location %q", p, loc)
			}
		})
	}
	e.do("GET", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusOK)
}

// TestContentTypeCharset: a JSON body is read as UTF-8, so a Content-Type
// naming another charset is a 415 (it would be read other than sent), on
// management and model calls alike; utf-8 in any case is accepted.
func TestContentTypeCharset(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, key := e.createKey(e.mgmt, map[string]any{"name": "caller"})
	for _, cs := range []string{"utf-16", "latin1", "iso-8859-1"} {
		ct := "application/json; charset=" + cs
		e.unchanged(ct, func() {
			resWantError(t, e.sendRawBody("POST", "/api/v1/keys", e.mgmt, ct, `{"name":"k"}`), http.StatusUnsupportedMediaType, "charset")
			resWantError(t, e.sendRawBody("POST", "/api/v1/chat/completions", key, ct, `{"model":"a/b","messages":[]}`),
				http.StatusUnsupportedMediaType, "charset")
		})
	}
	for _, cs := range []string{"utf-8", "UTF-8", "utf8"} {
		e.sendRawBody("POST", "/api/v1/keys", e.mgmt, "application/json; charset="+cs, `{"name":"k"}`).want(t, http.StatusCreated)
	}
}

// TestWorkspaceDefaultModelText: a workspace's default models are shown
// like names, so a control or bidirectional character, or a blank slug,
// is a 400 naming the field.
func TestWorkspaceDefaultModelText(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, field := range []string{"default_text_model", "default_image_model"} {
		for _, v := range []string{"a\u0007b", "a\u202eb", "   ", "a\u0085b"} {
			e.unchanged(field, func() {
				res := e.do("PATCH", "/api/v1/workspaces/default", e.mgmt, map[string]any{field: v})
				resWantError(t, res, http.StatusBadRequest, field)
			})
		}
		e.do("PATCH", "/api/v1/workspaces/default", e.mgmt, map[string]any{field: "openai/gpt-4o"}).want(t, http.StatusOK)
	}
}

// TestRepeatedQueryParameters: a query parameter given twice is a 400
// naming it on the activity, generation and audit-log reads as on the
// lists, and an audit-log window that ends before it starts is a 400.
func TestRepeatedQueryParameters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, c := range []struct{ path, field string }{
		{"/api/v1/activity?group_by=model&group_by=workspace", "group_by"},
		{"/api/v1/activity?api_key_hash=a&api_key_hash=b", "api_key_hash"},
		{"/api/v1/generation?id=gen-a&id=gen-b", "id"},
		{"/api/v1/audit-log?since=2026-01-01T00:00:00Z&since=2026-02-01T00:00:00Z", "since"},
		{"/api/v1/audit-log?actor=a&actor=b", "actor"},
		{"/api/v1/audit-log?since=2026-12-01T00:00:00Z&until=2026-01-01T00:00:00Z", "since"},
	} {
		resWantError(t, e.do("GET", c.path, e.mgmt, nil), http.StatusBadRequest, c.field)
	}
}
