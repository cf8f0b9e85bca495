package httpapi_test

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"gatehouse/httpapi"
)

// tbRecorder records the failures of a check instead of failing the test.
type tbRecorder struct {
	testing.TB
	failures []string
}

func (r *tbRecorder) Errorf(format string, args ...any) {
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}

func (r *tbRecorder) Error(args ...any) { r.failures = append(r.failures, fmt.Sprint(args...)) }

func (r *tbRecorder) Fatalf(format string, args ...any) {
	r.TB.Helper()
	r.TB.Fatalf(format, args...)
}

func validKeyObject() map[string]any {
	return map[string]any{
		"hash":                  strings.Repeat("ab", 32),
		"name":                  "ci",
		"label":                 "ci",
		"disabled":              false,
		"limit":                 10.5,
		"limit_remaining":       10.5,
		"limit_reset":           "monthly",
		"include_byok_in_limit": false,
		"usage":                 0, "usage_daily": 0, "usage_weekly": 0, "usage_monthly": 0,
		"byok_usage": 0, "byok_usage_daily": 0, "byok_usage_weekly": 0, "byok_usage_monthly": 0,
		"created_at":      "2026-11-21T10:30:00.123Z",
		"updated_at":      nil,
		"expires_at":      nil,
		"creator_user_id": "user_1",
		"workspace_id":    "0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b",
		"external_user":   nil,
	}
}

func validCurrentKey() map[string]any {
	return map[string]any{
		"label": "ci", "limit": nil, "limit_remaining": nil, "limit_reset": nil, "include_byok_in_limit": false,
		"usage": 1.25, "usage_daily": 0, "usage_weekly": 0, "usage_monthly": 1.25,
		"byok_usage": 0, "byok_usage_daily": 0, "byok_usage_weekly": 0, "byok_usage_monthly": 0,
		"creator_user_id": nil, "expires_at": "2027-12-31T23:59:59Z",
		"is_management_key": true, "is_provisioning_key": true, "is_free_tier": false,
		"organization_id": "org_1", "workspace_id": nil,
		"allowed_data_regions":      []any{"global", "europe", "us"},
		"free_model_daily_requests": map[string]any{"limit": 1000, "remaining": 1000, "used": 0},
		"rate_limit":                map[string]any{"requests": -1, "interval": "10s", "note": "deprecated"},
	}
}

func validWorkspace() map[string]any {
	return map[string]any{
		"id": "0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b", "name": "Default", "slug": "default", "description": nil,
		"default_text_model": nil, "default_image_model": nil, "default_provider_sort": nil,
		"disabled_server_tools": []any{"openrouter:web_search"}, "io_logging_api_key_ids": nil,
		"io_logging_sampling_rate": 1, "is_data_discount_logging_enabled": false,
		"is_observability_broadcast_enabled": false, "is_observability_io_logging_enabled": false,
		"include_byok_in_budgets": false, "default_guardrail_id": "5b8e1a2c-6a55-5f3e-9d2b-3c4d5e6f7a8b",
		"created_by": nil, "created_at": "2026-11-21T10:30:00Z", "updated_at": nil,
	}
}

func validGuardrail() map[string]any {
	return map[string]any{
		"id": "0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b", "name": "g", "description": nil,
		"workspace_id":   "1b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b",
		"allowed_models": []any{"openai/gpt-4o"}, "allowed_providers": nil, "ignored_models": nil, "ignored_providers": []any{"xai"},
		"limit_usd": 5, "reset_interval": "weekly", "include_byok_in_budgets": false,
		"enforce_zdr": nil, "enforce_zdr_anthropic": true, "enforce_zdr_openai": nil, "enforce_zdr_google": nil,
		"enforce_zdr_xai": nil, "enforce_zdr_other": nil,
		"enable_free_model_publication": nil, "enable_free_model_training": false, "enable_paid_model_training": nil,
		"allowed_data_regions":    []any{"europe"},
		"content_filters":         []any{map[string]any{"pattern": "secret-[0-9]+", "action": "block"}},
		"content_filter_builtins": []any{map[string]any{"slug": "email", "action": "redact", "label": "[EMAIL]"}},
		"created_at":              "2026-11-21T10:30:00Z", "updated_at": "2026-11-21T10:30:00Z",
	}
}

func validDestination() map[string]any {
	return map[string]any{
		"id":           "0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b",
		"workspace_id": "1b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b",
		"name":         "hook",
		"type":         "webhook",
		"config": map[string]any{
			"url": "https://example.com/hook", "method": "POST",
			"headers": map[string]any{"Authorization": "Bear...1234"},
		},
		"enabled": true, "privacy_mode": false, "sampling_rate": 1,
		"api_key_hashes": nil,
		"filter_rules": map[string]any{"enabled": true, "groups": []any{map[string]any{
			"logic": "and", "rules": []any{map[string]any{"field": "model", "operator": "equals", "value": "openai/gpt-4o"}},
		}}},
		"delivery": map[string]any{"sent": 3, "failed": 1, "dropped": 0, "last_success_at": "2026-12-05T10:00:00.000Z",
			"last_error_at": "2026-12-05T09:00:00.000Z", "last_error": "the service answered 503"},
		"regions":                   []any{"global"},
		"broadcast_generation_cost": false, "broadcast_generation_identity": false,
		"broadcast_generation_request_context": false,
		"created_at":                           "2026-11-21T10:30:00Z",
		"updated_at":                           "2026-11-21T10:30:00Z",
	}
}

// with returns a copy of m with key set to value.
func with(m map[string]any, key string, value any) map[string]any {
	out := maps.Clone(m)
	out[key] = value
	return out
}

// without returns a copy of m without key.
func without(m map[string]any, key string) map[string]any {
	out := maps.Clone(m)
	delete(out, key)
	return out
}

func TestOpenAPICheckerCatchesDrift(t *testing.T) {
	c := newOpenAPIChecker(t)
	jsonHeader := http.Header{"Content-Type": {"application/json; charset=utf-8"}}
	rateHeader := http.Header{
		"Content-Type": {"application/json"}, "Retry-After": {"1"},
		"X-Ratelimit-Limit": {"100"}, "X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1"},
	}
	key := validKeyObject()
	dest := validDestination()
	s3 := with(dest, "type", "s3")
	notFound := map[string]any{"error": map[string]any{"code": 404, "message": "key not found", "metadata": map[string]any{"id": "x"}}}
	tests := []struct {
		name   string
		method string
		path   string
		status int
		header http.Header
		body   any
		ok     bool
	}{
		{"valid key", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": key}, true},
		{"valid create", "POST", "/api/v1/keys", 201, jsonHeader, map[string]any{"data": key, "key": "sk-gh-v1-x"}, true},
		{"create answered 200", "POST", "/api/v1/keys", 200, jsonHeader, map[string]any{"data": key, "key": "sk-gh-v1-x"}, false},
		{"key missing label", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": without(key, "label")}, false},
		{"key with extra field", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": with(key, "secret", "x")}, false},
		{"key limit as string", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": with(key, "limit", "10")}, false},
		{"key null limit", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": with(key, "limit", nil)}, true},
		{"key bad limit_reset", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": with(key, "limit_reset", "yearly")}, false},
		{"key null name", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": with(key, "name", nil)}, false},
		{"key bad timestamp", "GET", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"data": with(key, "created_at", "yesterday")}, false},
		{"list keys with total_count", "GET", "/api/v1/keys", 200, jsonHeader, map[string]any{"data": []any{key}, "total_count": 1}, false},
		{"valid error", "GET", "/api/v1/keys/abc", 404, jsonHeader, notFound, true},
		{"error code as string", "GET", "/api/v1/keys/abc", 404, jsonHeader,
			map[string]any{"error": map[string]any{"code": "404", "message": "key not found"}}, false},
		{"error without message", "GET", "/api/v1/keys/abc", 404, jsonHeader, map[string]any{"error": map[string]any{"code": 404}}, false},
		{"error code differs from status", "GET", "/api/v1/keys/abc", 404, jsonHeader,
			map[string]any{"error": map[string]any{"code": 400, "message": "key not found"}}, false},
		{"unknown route code differs", "GET", "/api/v1/nope", 404, jsonHeader,
			map[string]any{"error": map[string]any{"code": 500, "message": "not found"}}, false},
		{"error with extra top-level field", "GET", "/api/v1/keys/abc", 404, jsonHeader,
			map[string]any{"error": map[string]any{"code": 404, "message": "x"}, "detail": "x"}, false},
		{"undocumented status", "GET", "/api/v1/keys/abc", 409, jsonHeader, notFound, false},
		{"error without content type", "GET", "/api/v1/keys/abc", 404, http.Header{}, notFound, false},
		{"delete", "DELETE", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"deleted": true}, true},
		{"delete false", "DELETE", "/api/v1/keys/abc", 200, jsonHeader, map[string]any{"deleted": false}, false},
		{"delete empty body", "DELETE", "/api/v1/keys/abc", 200, jsonHeader, nil, false},
		{"unknown route 404", "GET", "/api/v1/nope", 404, jsonHeader, notFound, true},
		{"unknown route 200", "GET", "/api/v1/nope", 200, jsonHeader, map[string]any{}, false},
		{"unknown route plain 404", "GET", "/api/v1/nope", 404, http.Header{"Content-Type": {"text/plain"}}, "404 page not found", false},
		{"wrong method 405", "PUT", "/api/v1/keys", 405, jsonHeader,
			map[string]any{"error": map[string]any{"code": 405, "message": "method not allowed"}}, true},
		{"429 with headers", "GET", "/api/v1/key", 429, rateHeader,
			map[string]any{"error": map[string]any{"code": 429, "message": "rate limited"}}, true},
		{"429 without Retry-After", "GET", "/api/v1/key", 429, jsonHeader,
			map[string]any{"error": map[string]any{"code": 429, "message": "rate limited"}}, false},
		{"valid destination", "GET", "/api/v1/observability/destinations/x", 200, jsonHeader, map[string]any{"data": dest}, true},
		{"destination without regions", "GET", "/api/v1/observability/destinations/x", 200, jsonHeader,
			map[string]any{"data": without(dest, "regions")}, false},
		{"destination config of another type", "GET", "/api/v1/observability/destinations/x", 200, jsonHeader,
			map[string]any{"data": s3}, false},
		{"destination config key unknown", "GET", "/api/v1/observability/destinations/x", 200, jsonHeader,
			map[string]any{"data": with(dest, "config", map[string]any{"url": "https://e.com", "bogus": "x"})}, false},
		{"destination null filter_rules", "GET", "/api/v1/observability/destinations/x", 200, jsonHeader,
			map[string]any{"data": with(dest, "filter_rules", nil)}, true},
		{"list destinations", "GET", "/api/v1/observability/destinations", 200, jsonHeader,
			map[string]any{"data": []any{dest}, "total_count": 1}, true},
		{"list destinations without total_count", "GET", "/api/v1/observability/destinations", 200, jsonHeader,
			map[string]any{"data": []any{dest}}, false},
		{"assignment route not captured", "GET", "/api/v1/guardrails/assignments/keys", 200, jsonHeader,
			map[string]any{"data": []any{}, "total_count": 0}, true},
		{"current key", "GET", "/api/v1/key", 200, jsonHeader, map[string]any{"data": validCurrentKey()}, true},
		{"current key without rate_limit", "GET", "/api/v1/key", 200, jsonHeader,
			map[string]any{"data": without(validCurrentKey(), "rate_limit")}, false},
		{"workspace", "GET", "/api/v1/workspaces/default", 200, jsonHeader, map[string]any{"data": validWorkspace()}, true},
		{"workspace bad sampling rate", "GET", "/api/v1/workspaces/default", 200, jsonHeader,
			map[string]any{"data": with(validWorkspace(), "io_logging_sampling_rate", 2)}, false},
		{"guardrail", "GET", "/api/v1/guardrails/0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b", 200, jsonHeader,
			map[string]any{"data": validGuardrail()}, true},
		{"guardrail builtin without label", "GET", "/api/v1/guardrails/x", 200, jsonHeader,
			map[string]any{"data": with(validGuardrail(), "content_filter_builtins", []any{map[string]any{"slug": "email", "action": "redact"}})}, false},
		{"guardrail empty regions", "GET", "/api/v1/guardrails/x", 200, jsonHeader,
			map[string]any{"data": with(validGuardrail(), "allowed_data_regions", []any{})}, false},
		{"bulk add members", "POST", "/api/v1/workspaces/default/members/add", 200, jsonHeader, map[string]any{
			"added_count": 1, "data": []any{map[string]any{"id": "0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b",
				"workspace_id": "1b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b", "user_id": "user_1", "role": "admin",
				"created_at": "2026-11-21T10:30:00Z"}}}, true},
		{"add organization member", "POST", "/api/v1/organization/members", 201, jsonHeader, map[string]any{"data": map[string]any{
			"id": "user_1", "email": "a@example.com", "first_name": nil, "last_name": "B", "role": "org:member"}}, true},
		{"organization member bad role", "GET", "/api/v1/organization/members", 200, jsonHeader, map[string]any{"data": []any{map[string]any{
			"id": "user_1", "email": "a@example.com", "first_name": nil, "last_name": nil, "role": "admin"}}, "total_count": 1}, false},
		{"member assignments", "GET", "/api/v1/guardrails/assignments/members", 200, jsonHeader, map[string]any{"data": []any{map[string]any{
			"id": "0b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b", "guardrail_id": "1b8e1a2c-6a55-4f3e-9d2b-3c4d5e6f7a8b",
			"user_id": "user_1", "organization_id": "org_1", "assigned_by": nil, "created_at": "2026-11-21T10:30:00Z"}}, "total_count": 1}, true},
		{"assign keys", "POST", "/api/v1/guardrails/x/assignments/keys", 200, jsonHeader, map[string]any{"assigned_count": 2}, true},
		{"auth code", "POST", "/api/v1/auth/keys/code", 200, jsonHeader, map[string]any{"data": map[string]any{
			"id": "abc", "app_id": 7, "created_at": "2026-11-21T10:30:00Z"}}, true},
		{"auth code app_id float", "POST", "/api/v1/auth/keys/code", 200, jsonHeader, map[string]any{"data": map[string]any{
			"id": "abc", "app_id": 7.5, "created_at": "2026-11-21T10:30:00Z"}}, false},
		{"exchange", "POST", "/api/v1/auth/keys", 200, jsonHeader, map[string]any{"key": "sk-gh-v1-x", "user_id": nil}, true},
		{"healthz", "GET", "/healthz", 200, jsonHeader, map[string]any{"status": "ok", "version": "v1.2.0",
			"revision": "2e38a6d1c0de", "vcs_time": "2026-11-25T03:48:00Z", "modified": false, "go_version": "go1.26.0"}, true},
		{"healthz outside a checkout", "GET", "/healthz", 200, jsonHeader, map[string]any{"status": "ok", "version": "(devel)",
			"revision": nil, "vcs_time": nil, "modified": false, "go_version": "go1.26.0"}, true},
		{"healthz without its build", "GET", "/healthz", 200, jsonHeader, map[string]any{"status": "ok"}, false},
		{"readyz down", "GET", "/readyz", 503, jsonHeader,
			map[string]any{"error": map[string]any{"code": 503, "message": "database unreachable"}}, true},
		{"openapi document", "GET", "/api/v1/openapi.json", 200, jsonHeader, json.RawMessage(httpapi.OpenAPIDocument()), true},
		{"HEAD of a GET route", "HEAD", "/healthz", 200, jsonHeader, nil, true},
		{"metrics", "GET", "/metrics", 200, http.Header{"Content-Type": {"text/plain; version=0.0.4; charset=utf-8"}}, "up 1\n", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body []byte
			switch b := tt.body.(type) {
			case nil:
			case string:
				body = []byte(b)
			default:
				var err error
				if body, err = json.Marshal(b); err != nil {
					t.Fatal(err)
				}
			}
			rec := &tbRecorder{TB: t}
			req := httptest.NewRequest(tt.method, tt.path, nil)
			c.check(rec, req, tt.status, tt.header, body)
			if tt.ok && len(rec.failures) > 0 {
				t.Errorf("checker rejected a correct response: %s", strings.Join(rec.failures, "\n"))
			}
			if !tt.ok && len(rec.failures) == 0 {
				t.Errorf("checker accepted a drifted response (status %s): %s", strconv.Itoa(tt.status), body)
			}
		})
	}
}
