package httpapi_test

import (
	"net/http"
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
