package httpapi_test

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
)

// The bad-input matrix sends every operation of routes.go (the list of
// matrixOps in auth_test.go) a battery of bad requests and checks that each
// is refused with the status API.md gives (400, 404, 413 or 415), with a
// message that names the field at fault, and that the database is exactly as
// it was.
//
// The cases are generated from the operation's description in the OpenAPI
// document (httpapi.OpenAPIDocument): the request body schema gives every
// field with its JSON types, nullability, required-ness, nested objects and
// arrays, and its bounds (minLength, maxLength, minimum, maximum, minItems,
// maxItems, enum, pattern, format); the parameters give the query
// parameters and path ids. What the document cannot give lives in the
// tables below: a valid body for each operation (every case changes one
// thing of it, so each refusal is about that one thing), the config schema
// of the fixture's destination type, and the "at the limit" values that
// must be accepted. All operations share one environment: the refused
// cases run first, in parallel, an operation per subtest, each compared
// with a snapshot of the database taken before; then each operation gets its
// valid body without a Content-Type (accepted as JSON: an API decision) and
// must succeed, which proves that every case changed only what it meant to.

// matrixBodies returns a valid body for each operation that takes one,
// holding every nested object the schema describes, so that every nested
// field gets its cases too.
func matrixBodies(f *matrixFixture, code, verifier string) map[string]map[string]any {
	// Not the fixture code's verifier: a challenge serves one pending code.
	otherVerifier := strings.Repeat("w", 50)
	workspace := map[string]any{
		"name": "Matrix", "slug": "matrix", "description": "described",
		"default_text_model": "openai/gpt-4o", "default_image_model": "openai/dall-e-3",
		"default_provider_sort": "price", "disabled_server_tools": []any{"openrouter:web_search"},
		"io_logging_api_key_ids": []any{1}, "io_logging_sampling_rate": 0.5,
		"is_data_discount_logging_enabled": true, "is_observability_broadcast_enabled": true,
		"is_observability_io_logging_enabled": true, "include_byok_in_budgets": true,
	}
	guardrail := map[string]any{
		"name": "matrix guardrail", "description": "described",
		"allowed_models": []any{"openai/gpt-4o"}, "allowed_providers": []any{"openai"},
		"ignored_models": []any{"meta/llama-3"}, "ignored_providers": []any{"anthropic"},
		"limit_usd": 10, "reset_interval": "monthly", "include_byok_in_budgets": true,
		"enforce_zdr": true, "enforce_zdr_anthropic": true, "enforce_zdr_openai": false,
		"enforce_zdr_google": true, "enforce_zdr_xai": true, "enforce_zdr_other": true,
		"enable_free_model_publication": false, "enable_free_model_training": false,
		"enable_paid_model_training": false, "allowed_data_regions": []any{"europe"},
		"content_filters":         []any{map[string]any{"pattern": "secret-[0-9]+", "action": "redact", "label": "secret"}},
		"content_filter_builtins": []any{map[string]any{"slug": "email", "action": "block", "scan_scope": "user_only"}},
	}
	destination := map[string]any{
		"name": "matrix hook",
		"config": map[string]any{"url": "https://hooks.example.com/matrix", "method": "PUT",
			"headers": map[string]any{"X-Token": "abc"}},
		"enabled": true, "privacy_mode": true, "sampling_rate": 0.5,
		"api_key_hashes": []any{f.ids.keyHash},
		"filter_rules": map[string]any{"enabled": true, "groups": []any{map[string]any{
			"logic": "or", "rules": []any{map[string]any{"field": "model", "operator": "equals", "value": "openai/gpt-4o"}}}}},
		"regions":                   []any{"eu", "us"},
		"broadcast_generation_cost": true, "broadcast_generation_identity": true,
		"broadcast_generation_request_context": true,
	}
	ssoProvider := map[string]any{
		"name": "Okta", "issuer_url": "https://acme.okta.example", "client_id": "matrix-client",
		"client_secret": "a matrix client secret", "scopes": []any{"openid", "email", "groups"},
		"email_claim": "email", "email_verified_claim": "email_verified", "name_claim": "name", "groups_claim": "groups",
		"allowed_domains": []any{"example.com"}, "enabled": true,
	}
	byok := map[string]any{
		"key": "sk-acme-matrix-0123456789abcdef", "name": "matrix byok", "disabled": false,
		"allowed_api_key_hashes": []any{f.ids.keyHash}, "allowed_models": []any{"acme/chat"},
		"allowed_user_ids": []any{f.ids.member}, "declared_zdr": true,
		"is_byok_only": false, "is_fallback": true, "is_required": true,
	}
	return map[string]map[string]any{
		"POST /api/v1/keys": {
			"name": "matrix key", "limit": 10, "limit_reset": "monthly", "include_byok_in_limit": true,
			"expires_at": "2030-01-01T00:00:00Z", "creator_user_id": f.ids.member, "workspace_id": "default",
			"external": map[string]any{"user": "partner-user", "api_key": strings.Repeat("k", 32)},
		},
		"PATCH /api/v1/keys/{hash}": {
			"name": "renamed", "disabled": false, "include_byok_in_limit": true, "limit": 5, "limit_reset": "weekly",
		},
		"POST /api/v1/auth/keys/code": {
			"callback_url": "https://app.example.com/cb", "code_challenge": mxPkceS256(otherVerifier),
			"code_challenge_method": "S256", "limit": 5, "usage_limit_type": "daily",
			"expires_at": "2030-01-01T00:00:00Z", "key_label": "matrix app", "workspace_id": "ws-a",
		},
		"POST /api/v1/auth/keys": {"code": code, "code_verifier": verifier, "code_challenge_method": "S256"},

		"POST /api/v1/workspaces":                        workspace,
		"PATCH /api/v1/workspaces/{id}":                  mxWith(workspace, "slug", "ws-a"),
		"POST /api/v1/workspaces/{id}/members/add":       {"user_ids": []any{f.ids.member}},
		"POST /api/v1/workspaces/{id}/members/remove":    {"user_ids": []any{f.ids.member}},
		"PUT /api/v1/workspaces/{id}/budgets/{interval}": {"limit_usd": 5, "include_byok_in_budgets": true},

		"POST /api/v1/credits/grants": {"amount": 10},

		"POST /api/v1/guardrails":                                 mxWith(guardrail, "workspace_id", "default"),
		"PATCH /api/v1/guardrails/{id}":                           mxWith(guardrail, "name", "matrix guardrail renamed"),
		"POST /api/v1/guardrails/{id}/assignments/keys":           {"key_hashes": []any{f.ids.keyHash}},
		"POST /api/v1/guardrails/{id}/assignments/keys/remove":    {"key_hashes": []any{f.ids.keyHash}},
		"POST /api/v1/guardrails/{id}/assignments/members":        {"member_user_ids": []any{f.ids.member}},
		"POST /api/v1/guardrails/{id}/assignments/members/remove": {"member_user_ids": []any{f.ids.member}},

		"POST /api/v1/observability/destinations":        mxWith(mxWith(destination, "type", "webhook"), "workspace_id", "default"),
		"PATCH /api/v1/observability/destinations/{id}":  destination,
		"DELETE /api/v1/observability/destinations/{id}": {},

		"POST /api/v1/byok":        mxWith(mxWith(byok, "provider", "acme"), "workspace_id", "default"),
		"PATCH /api/v1/byok/{id}":  byok,
		"DELETE /api/v1/byok/{id}": {},
		// The other operations without a body take {} as well.
		"DELETE /api/v1/keys/{hash}":                                 {},
		"DELETE /api/v1/workspaces/{id}":                             {},
		"DELETE /api/v1/workspaces/{id}/budgets/{interval}":          {},
		"DELETE /api/v1/guardrails/{id}":                             {},
		"DELETE /api/v1/organization/members/{user_id}":              {},
		"DELETE /api/v1/organization/invitations/{id}":               {},
		"POST /api/v1/organization/members/{user_id}/password-reset": {},
		"POST /api/v1/analytics/query": {
			"metrics": []any{"request_count", "total_usage"}, "dimensions": []any{"model"}, "granularity": "day",
			"time_range": map[string]any{"start": "2027-03-10T00:00:00Z", "end": "2027-03-17T00:00:00.000Z"},
			"filters":    []any{map[string]any{"field": "model", "operator": "eq", "value": "acme/chat", "include_unset": false}},
			"order_by":   map[string]any{"field": "total_usage", "direction": "desc"}, "limit": 100, "group_limit": 10,
		},

		"POST /api/v1/organization/members": {
			"id": "user_matrix", "email": "matrix@example.com", "first_name": "Mat", "last_name": "Rix", "role": "org:member",
		},
		"PATCH /api/v1/organization/members/{user_id}": {"role": "org:admin"},
		"POST /api/v1/organization/invitations":        {"email": "invitee@example.com", "role": "org:admin"},

		"POST /api/v1/sso/providers":        ssoProvider,
		"PATCH /api/v1/sso/providers/{id}":  mxWith(ssoProvider, "name", "Okta renamed"),
		"DELETE /api/v1/sso/providers/{id}": {},
		"PATCH /api/v1/sso/settings":        {"password_sign_in": true},
		"POST /api/v1/sso/group-mappings": {"group": "matrix-group", "role": "org:admin",
			"workspace_ids": []any{f.ids.workspace}},
		"PATCH /api/v1/sso/group-mappings/{id}": {"group": "matrix-group-renamed", "role": "org:member",
			"workspace_ids": []any{f.ids.workspace}},
		"DELETE /api/v1/sso/group-mappings/{id}": {},
		"POST /api/v1/scim/token":                {},
		"DELETE /api/v1/scim/token":              {},

		"POST /api/v1/generation/feedback": {"generation_id": f.ids.generation, "category": "incorrect_response",
			"comment": "wrong\tanswer\nsee ticket 12"},
		// No model: the matrix's environment serves none (presets_test.go
		// covers models).
		"POST /api/v1/presets/{slug}/chat/completions": {
			"messages":   []any{map[string]any{"role": "system", "content": "Matrix prompt."}, map[string]any{"role": "user", "content": "hi"}},
			"max_tokens": 100, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "min_p": 0.1, "top_a": 0.1,
			"presence_penalty": 0.5, "frequency_penalty": 0.5, "repetition_penalty": 1.1, "seed": 7,
			"stop": []any{"END"}, "logit_bias": map[string]any{"50256": -100}, "logprobs": true, "top_logprobs": 2,
			"response_format": map[string]any{"type": "json_object"},
			"tools": []any{map[string]any{"type": "function", "function": map[string]any{"name": "get_weather",
				"parameters": map[string]any{"type": "object"}}}},
			"tool_choice": "auto", "parallel_tool_calls": false,
			"reasoning":        map[string]any{"effort": "low", "summary": "auto", "max_tokens": 500, "exclude": false, "enabled": true},
			"reasoning_effort": "low", "verbosity": "low", "provider": mxProvider(), "stream": false, "user": "matrix-user",
		},
		"POST /api/v1/presets/{slug}/messages": {
			"max_tokens": 100, "temperature": 0.5, "top_p": 0.9, "top_k": 40,
			"stop_sequences": []any{"END"}, "system": "Matrix prompt.",
			"thinking":    map[string]any{"type": "enabled", "budget_tokens": 1024},
			"tools":       []any{map[string]any{"name": "get_weather", "input_schema": map[string]any{"type": "object"}}},
			"tool_choice": map[string]any{"type": "auto"}, "provider": mxProvider(),
			"output_config": map[string]any{"effort": "high", "format": map[string]any{"type": "json_schema",
				"schema": map[string]any{"type": "object"}}},
			"messages": []any{map[string]any{"role": "user", "content": "hi"}}, "stream": false,
		},
		// Sent with the fixture's regular key: a model call's input is read
		// before anything is reserved, so no refused case reaches a
		// provider or the ledger.
		"POST /api/v1/responses": {
			"model": "acme/chat", "instructions": "Matrix prompt.", "stream": false, "max_output_tokens": 100, "max_tool_calls": 5,
			"input": []any{map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": "hi"}},
				"id": "msg_1", "status": "completed", "phase": nil}},
			"temperature": 0.5, "top_p": 0.9, "top_k": 40, "presence_penalty": 0.1, "frequency_penalty": 0.1, "top_logprobs": 2,
			"tools": []any{map[string]any{"type": "function", "name": "get_weather", "description": "the weather",
				"parameters": map[string]any{"type": "object"}, "strict": true}},
			"tool_choice": map[string]any{"type": "function", "name": "get_weather"}, "parallel_tool_calls": true,
			"text": map[string]any{"format": map[string]any{"type": "text"}}, "reasoning": map[string]any{"effort": "low"},
			"truncation": "auto", "include": []any{"message.output_text.logprobs"}, "metadata": map[string]any{"k": "v"},
			"user": "matrix-user", "safety_identifier": "s", "prompt_cache_key": "c", "session_id": "s-1",
			"service_tier": "auto", "store": false, "background": false, "preset": nil, "provider": mxProvider(),
		},
		"POST /api/v1/presets/{slug}/responses": {
			"max_output_tokens": 100, "temperature": 0.5, "top_p": 0.9, "top_k": 40, "presence_penalty": 0.1,
			"frequency_penalty": 0.1, "top_logprobs": 2, "instructions": "Matrix prompt.",
			"reasoning": map[string]any{"effort": "low", "summary": "auto", "max_tokens": 500, "exclude": false, "enabled": true},
			"text":      map[string]any{"format": map[string]any{"type": "json_object"}, "verbosity": "low"},
			"tools": []any{map[string]any{"type": "function", "name": "get_weather",
				"parameters": map[string]any{"type": "object"}}},
			"tool_choice": "auto", "parallel_tool_calls": true, "provider": mxProvider(),
			"input": "hi", "store": false, "service_tier": nil, "stream": false,
		},
	}
}

// mxProvider returns provider preferences that set every field to a value
// Gatehouse honours.
func mxProvider() map[string]any {
	return map[string]any{"allow_fallbacks": false, "data_collection": "allow", "enforce_distillable_text": false,
		"ignore": []any{"xai"}, "max_price": map[string]any{"prompt": 10, "completion": 20, "request": 1, "image": 1, "audio": 1},
		"only": []any{"acme"}, "order": []any{"acme"}, "preferred_max_latency": 5, "preferred_min_throughput": 10,
		"quantizations": []any{}, "require_parameters": true, "sort": "price", "zdr": false}
}

// matrixAccepted lists, per operation, bodies at the limits that must be
// accepted (sent after the refused cases, as they change the database).
func matrixAccepted(base map[string]map[string]any) map[string][]map[string]any {
	// Names differ from operation to operation: guardrail names are unique
	// in a workspace, and every valid request goes to one environment.
	long := func(c string, n int) string { return strings.Repeat(c, n) }
	filter := func(pattern string) []any {
		return []any{map[string]any{"pattern": pattern, "action": "flag"}}
	}
	ws := base["POST /api/v1/workspaces"]
	return map[string][]map[string]any{
		"POST /api/v1/keys":         {{"name": long("k", 200)}, {"name": "zero", "limit": 0}, {"name": "max", "limit": 1e9}},
		"PATCH /api/v1/keys/{hash}": {{"name": long("r", 200)}, {"limit": 0}, {"limit": nil, "limit_reset": nil}},
		"POST /api/v1/auth/keys/code": {
			{"callback_url": "http://localhost:8080/cb", "key_label": long("l", 100)},
			{"callback_url": "http://127.0.0.1/cb", "limit": nil, "expires_at": nil},
		},
		"POST /api/v1/workspaces": {
			mxWith(mxWith(ws, "name", long("w", 100)), "slug", long("s", 50)),
			mxWith(mxWith(mxWith(ws, "slug", "at-limits"), "description", long("d", 500)), "io_logging_sampling_rate", 0.0001),
		},
		"PATCH /api/v1/workspaces/{id}": {{"name": long("v", 100)}, {"io_logging_sampling_rate": 1, "description": nil}},
		"POST /api/v1/guardrails": {
			{"name": long("g", 200), "description": long("d", 1000)},
			{"name": "long pattern", "content_filters": filter(long("a", 100_000))},
		},
		"PATCH /api/v1/guardrails/{id}": {
			{"name": long("h", 200)},
			{"content_filters": filter(long("b", 100_000))},
			{"allowed_models": nil, "content_filters": nil, "limit_usd": nil, "reset_interval": nil},
		},
		"PATCH /api/v1/observability/destinations/{id}": {{"sampling_rate": 0.0001}, {"sampling_rate": 1, "filter_rules": nil}},
		"POST /api/v1/generation/feedback": {
			mxWith(base["POST /api/v1/generation/feedback"], "comment", long("c", 4000)),
			{"generation_id": base["POST /api/v1/generation/feedback"]["generation_id"], "category": "api_error", "comment": ""},
		},
		"POST /api/v1/presets/{slug}/chat/completions": {
			{"max_tokens": 10_000_000, "temperature": 2, "top_p": 0, "stop": mxFillItems([]any{"s"}, 16), "top_logprobs": 20},
			{"messages": nil, "tools": mxFillItems(base["POST /api/v1/presets/{slug}/chat/completions"]["tools"].([]any), 128)},
			{}, // a preset of nothing: a version with an empty config
		},
		"POST /api/v1/presets/{slug}/messages":  {{"max_tokens": 1, "stop_sequences": mxFillItems([]any{"s"}, 16), "thinking": map[string]any{"type": "disabled"}}},
		"POST /api/v1/presets/{slug}/responses": {{"max_output_tokens": 10_000_000, "instructions": nil, "tool_choice": nil}},
	}
}

// matrixSchemaOverrides replaces the schemas of nested objects whose shape
// the document gives only per destination type: the fixture's destination
// is a webhook. On update, config merges key by key, so nothing in it is
// required.
func matrixSchemaOverrides(doc *openapi3.T, pattern string) map[string]*openapi3.Schema {
	// In config, null removes a key (the type's default applies); only a
	// required key cannot be null on create.
	webhook := *doc.Components.Schemas["WebhookDestinationConfig"].Value
	webhook.Properties = openapi3.Schemas{}
	for name, ref := range doc.Components.Schemas["WebhookDestinationConfig"].Value.Properties {
		ps := *ref.Value
		if !mxContains(webhook.Required, name) {
			types := openapi3.Types(append(ps.Type.Slice(), "null"))
			ps.Type = &types
		}
		webhook.Properties[name] = &openapi3.SchemaRef{Value: &ps}
	}
	merged := webhook
	merged.Required = nil
	return map[string]map[string]*openapi3.Schema{
		"POST /api/v1/observability/destinations":       {"config": &webhook},
		"PATCH /api/v1/observability/destinations/{id}": {"config": &merged},
	}[pattern]
}

// matrixNullIsAbsent lists the fields the schema calls non-nullable whose
// null the API deliberately reads as absent, so null is no bad input there.
// None at the moment; kept so that such a decision is written down here.
var matrixNullIsAbsent = map[string]bool{}

// badCase is one request that must be refused.
type badCase struct {
	name   string
	path   string  // "" for the operation's path
	body   *string // nil for none
	ct     string  // Content-Type; "" means application/json when there is a body
	status int
	field  string // the message must name this field, when not ""
	substr string // the message must contain this, when not ""
}

// mxNoContentType asks for a request without a Content-Type header.
const mxNoContentType = "-"

func mxRaw(s string) *string { return &s }

func TestBadInputMatrix(t *testing.T) {
	t.Parallel()
	doc := newOpenAPIChecker(t).doc
	// One environment for every operation: the refused requests change
	// nothing, so they run in parallel on it; the valid ones run after them,
	// in one pass ordered as TestAuthenticationMatrix orders it.
	e := newEnv(t, withMatrixCatalog(t), withPublisher(""))
	f := e.matrixFixture()
	verifier := strings.Repeat("v", 43) + "-matrix._~"
	code := e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example.com/cb",
		"code_challenge": mxPkceS256(verifier), "code_challenge_method": "S256"}).ID
	bodies := matrixBodies(f, code, verifier)

	var mu sync.Mutex
	counts := map[string]int{}
	t.Run("refused", func(t *testing.T) {
		for _, o := range matrixOps(f.ids) {
			method, path, _ := strings.Cut(o.pattern, " ")
			item := doc.Paths.Find(path)
			if item == nil || item.GetOperation(method) == nil {
				t.Errorf("%s: not in the OpenAPI document", o.pattern)
				continue
			}
			op := item.GetOperation(method)
			params := append(append(openapi3.Parameters{}, item.Parameters...), op.Parameters...)
			if op.RequestBody == nil && !mxHasParams(params, "query") && !mxHasParams(params, "path") {
				continue // nothing to get wrong but the credential (TestAuthenticationMatrix)
			}
			key, dataPlane := e.mgmt, o.success == http.StatusForbidden
			if dataPlane && bodies[o.pattern] == nil {
				continue // refuses the management key the cases are sent with (completions_test.go covers its input)
			} else if dataPlane {
				key = f.regular // a model call: its cases go with a regular key
			}
			t.Run(o.pattern, func(t *testing.T) {
				t.Parallel()
				e := e.sub(t)
				cases := matrixCases(t, doc, o, op, params, f, bodies[o.pattern], dataPlane)
				e.runBadCases(t, key, method, o.path, cases)
				mu.Lock()
				counts[o.pattern] = len(cases)
				mu.Unlock()
			})
		}
	})
	total := 0
	for _, n := range mxSortedKeys(counts) {
		t.Logf("%5d cases  %s", counts[n], n)
		total += counts[n]
	}
	t.Logf("%5d cases in all, on %d operations", total, len(counts))

	// Then every operation accepts its valid body (sent without a
	// Content-Type, which means JSON), and the bodies at the limits.
	t.Run("accepted", func(t *testing.T) {
		e := e.sub(t)
		ids := f.ids
		ids.member = e.addMember(e.mgmt, "keyless@example.com") // removable: no key
		ops := matrixOps(ids)
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].late < ops[j].late })
		accepted := matrixAccepted(bodies)
		for _, o := range ops {
			method, _, _ := strings.Cut(o.pattern, " ")
			var valid []any
			if base, ok := bodies[o.pattern]; ok {
				valid = append(valid, base)
				for _, b := range accepted[o.pattern] {
					valid = append(valid, b)
				}
			} else {
				valid = append(valid, nil)
			}
			for i, body := range valid {
				ct := ""
				if i == 0 {
					ct = mxNoContentType
				}
				if res := e.sendCase(method, o.path, body, ct); res.Status != o.success {
					t.Errorf("%s with %s: status %d, want %d: %s", o.pattern, mxTruncate(mxMustJSON(body), 200),
						res.Status, o.success, truncateBody(res.Body))
				}
			}
		}
	})
}

// matrixCases generates the refused cases of an operation: o with the
// fixture's ids, base its valid body (nil when it takes none).
// dataPlane is true for a model call, whose bodies may be 10 MiB.
func matrixCases(t *testing.T, doc *openapi3.T, o matrixOp, op *openapi3.Operation, params openapi3.Parameters,
	f *matrixFixture, base map[string]any, dataPlane bool) []badCase {
	_, path, _ := strings.Cut(o.pattern, " ")
	var cases []badCase
	if op.RequestBody != nil {
		if base == nil {
			t.Fatalf("%s takes a body: add a valid one to matrixBodies", o.pattern)
		}
		schema := op.RequestBody.Value.Content.Get("application/json").Schema.Value
		cases = append(cases, mxBodyLevelCases(base, !op.RequestBody.Value.Required, dataPlane)...)
		g := &caseGen{base: base, overrides: matrixSchemaOverrides(doc, o.pattern), pattern: o.pattern}
		g.object(schema, nil, base)
		cases = append(cases, g.cases...)
	}
	cases = append(cases, mxQueryCases(params, o.path, base)...)
	return append(cases, mxPathIDCases(params, path, f, base)...)
}

func mxHasParams(params openapi3.Parameters, in string) bool {
	for _, p := range params {
		if p.Value.In == in {
			return true
		}
	}
	return false
}

// runBadCases sends every case and checks its status, its message, and
// that the database did not change: one snapshot before, compared after
// each case.
func (e *testEnv) runBadCases(t *testing.T, key, method, path string, cases []badCase) {
	t.Helper()
	before, print := e.snapshot(), e.fingerprint()
	for _, c := range cases {
		p := path
		if c.path != "" {
			p = c.path
		}
		var body any
		if c.body != nil {
			body = *c.body
		}
		res := e.sendCaseWith(key, method, p, body, c.ct)
		if res.Status != c.status {
			t.Errorf("%s: status %d, want %d; body %s", c.name, res.Status, c.status, truncateBody(res.Body))
		} else {
			msg := res.errorMessage(t)
			if c.field != "" && !mxMentionsField(msg, c.field) {
				t.Errorf("%s: message %q does not name %s", c.name, msg, c.field)
			}
			if c.substr != "" && !strings.Contains(msg, c.substr) {
				t.Errorf("%s: message %q does not contain %q", c.name, msg, c.substr)
			}
		}
		if now := e.fingerprint(); now != print {
			print = now
			if after := e.snapshot(); after != before {
				t.Errorf("%s changed the database:\nbefore:\n%s\nafter:\n%s", c.name, before, after)
				before = after
			}
		}
	}
}

// sendCase sends a request with the management key. body is nil (none), a
// string (verbatim) or a value (as JSON); ct is the Content-Type: "" for
// application/json when there is a body, mxNoContentType for none.
func (e *testEnv) sendCase(method, path string, body any, ct string) *response {
	e.t.Helper()
	return e.sendCaseWith(e.mgmt, method, path, body, ct)
}

// sendCaseWith is sendCase with another key.
func (e *testEnv) sendCaseWith(key, method, path string, body any, ct string) *response {
	e.t.Helper()
	var text string
	switch b := body.(type) {
	case nil:
	case string:
		text = b
	default:
		text = mxMustJSON(b)
	}
	req := httptest.NewRequest(method, path, strings.NewReader(text))
	switch {
	case ct == mxNoContentType:
	case ct != "":
		req.Header.Set("Content-Type", ct)
	case body != nil:
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+key)
	return e.send(req)
}

// mxMentionsField reports whether msg names field, written as a.b[0].c,
// a.b.0.c or a.b.c.
func mxMentionsField(msg, field string) bool {
	dotted := mxIndexRE.ReplaceAllString(field, ".$1")
	bare := mxIndexRE.ReplaceAllString(field, "")
	return strings.Contains(msg, field) || strings.Contains(msg, dotted) || strings.Contains(msg, bare)
}

var mxIndexRE = regexp.MustCompile(`\[(\d+)\]`)

// mxBodyLevelCases are the cases about the body as a whole. optional is true
// when the operation accepts no body at all; dataPlane when it is a model
// call, whose bodies may be 10 MiB.
func mxBodyLevelCases(base map[string]any, optional, dataPlane bool) []badCase {
	valid := mxMustJSON(base)
	// With a known key, the syntax is the first fault. (With none, the
	// unknown key is.)
	k, syntax := "a", ""
	if len(base) > 0 {
		k, syntax = mxSortedKeys(base)[0], "malformed JSON"
	}
	huge := `{"pad": "` + strings.Repeat("a", 10<<20) + `"}`
	bad := func(name, body, substr string) badCase {
		return badCase{name: name, body: mxRaw(body), status: 400, substr: substr}
	}
	cases := []badCase{
		bad("truncated", valid[:len(valid)-1], "JSON"),
		bad("value missing", `{"`+k+`":}`, syntax),
		bad("lone bracket", `[`, "JSON"),
		bad("lone brace", `{`, "malformed JSON"),
		bad("nul", `nul`, "malformed JSON"),
		bad("no colon", `{"`+k+`" 1}`, syntax),
		bad("single quotes", `{'a': 1}`, "malformed JSON"),
		bad("trailing comma", `{"`+k+`": `+mxMustJSON(base[k])+`,}`, syntax),
		bad("array", `[]`, "JSON object"),
		bad("string", `"x"`, "JSON object"),
		bad("number", `1`, "JSON object"),
		bad("null", `null`, "JSON object"),
		bad("true", `true`, "JSON object"),
		bad("trailing object", valid+` {}`, "nothing after it"),
		bad("trailing garbage", valid+`x`, "nothing after it"),
		bad("trailing array", valid+`[]`, "nothing after it"),
		bad("BOM prefix", "\xef\xbb\xbf"+valid, "malformed JSON"),
		{name: "10 MiB body", body: mxRaw(huge), status: 413, substr: "at most"},
		{name: "1 MiB + 1 byte body", body: mxRaw(`{"pad": "` + strings.Repeat("a", 1<<20-10) + `"}`), status: 413, substr: "at most"},
		{name: "10 MiB body as text/plain", body: mxRaw(huge), ct: "text/plain", status: 415, substr: "Content-Type"},
		// A missing Content-Type is JSON: the body is still checked.
		{name: "no Content-Type, unknown field", body: mxRaw(mxMustJSON(mxWith(base, "matrix_unknown", 1))),
			ct: mxNoContentType, status: 400, field: "matrix_unknown", substr: "unknown field"},
	}
	if dataPlane { // under 10 MiB, the pad is an unknown field
		cases[len(cases)-3] = badCase{name: "1 MiB + 1 byte body", body: cases[len(cases)-3].body, status: 400, field: "pad"}
	}
	if !optional {
		cases = append(cases, bad("empty body", ``, "request body is required"), bad("blank body", " \n\t", "request body is required"))
	}
	if len(base) > 0 {
		cases = append(cases, badCase{name: "duplicate key " + k, body: mxRaw(`{"` + k + `": ` + mxMustJSON(base[k]) + `, ` + valid[1:]),
			status: 400, field: k, substr: "more than once"})
	}
	for _, ct := range []string{"text/plain", "application/x-www-form-urlencoded", "garbage", ";;", "application/xml"} {
		cases = append(cases, badCase{name: "Content-Type " + ct, body: mxRaw(valid), ct: ct, status: 415, substr: "Content-Type"})
	}
	return cases
}

// caseGen generates the field cases of a body from its schema: each case is
// the base body with one field changed.
type caseGen struct {
	base      map[string]any
	overrides map[string]*openapi3.Schema // by field path
	pattern   string                      // the operation
	cases     []badCase
}

// mxJsonKinds are the JSON types a field can be given, with a value of each.
var mxJsonKinds = []struct {
	kind  string
	value any
}{
	{"string", "matrix"}, {"number", 7}, {"boolean", true}, {"array", []any{}}, {"object", map[string]any{}},
}

// object generates the cases of the object at path (nil for the body) whose
// valid value in the base body is value.
func (g *caseGen) object(s *openapi3.Schema, path []any, value map[string]any) {
	field := mxFieldName(path)
	if s.AdditionalProperties.Has != nil && !*s.AdditionalProperties.Has {
		g.add("unknown field", mxExtend(path, "matrix_unknown"), "matrix", "unknown")
		if path != nil && len(value) > 0 {
			k := mxSortedKeys(value)[0]
			dup := `{"` + k + `": ` + mxMustJSON(value[k]) + `, ` + mxMustJSON(value)[1:]
			g.addRaw("duplicate key", mxExtend(path, k), dup, path, "more than once")
		}
	}
	if ap := s.AdditionalProperties.Schema; ap != nil && path != nil {
		for _, k := range mxJsonKinds {
			if !mxAccepts(mxSchemaTypes(ap.Value), k.kind) {
				body := mxClone(g.base)
				mxSetAt(body, path, mxWith(value, "Matrix-Entry", k.value))
				g.cases = append(g.cases, badCase{name: fmt.Sprintf("%s: an entry %s", field, mxArticle(k.kind)),
					body: mxRaw(mxMustJSON(body)), status: 400, field: field})
			}
		}
	}
	for _, name := range mxSortedKeys(s.Properties) {
		ps := s.Properties[name].Value
		fp := mxExtend(path, name)
		if o := g.overrides[mxFieldName(fp)]; o != nil {
			ps = o
		}
		required := false
		for _, r := range s.Required {
			required = required || r == name
		}
		v, present := value[name]
		g.property(ps, fp, v, present, required)
	}
}

// property generates the cases of one property.
func (g *caseGen) property(s *openapi3.Schema, path []any, value any, present, required bool) {
	types := mxSchemaTypes(s)
	if len(types) == 0 {
		return
	}
	for _, k := range mxJsonKinds {
		if !mxAccepts(types, k.kind) {
			g.add(mxArticle(k.kind), path, k.value, "")
		}
	}
	if !mxContains(types, "null") && !matrixNullIsAbsent[g.pattern+" "+mxFieldName(path)] {
		g.add("null", path, nil, "")
	}
	if required {
		g.del("missing", path)
	}
	g.bounds(s, path, func(v any) any { return v })
	if obj := mxObjectSchema(s); obj != nil {
		if m, ok := value.(map[string]any); ok && present {
			g.object(obj, path, m)
		}
	}
	if mxContains(types, "array") && s.Items != nil {
		g.array(s, path, value)
	}
}

// array generates the cases of an array property and of its items.
func (g *caseGen) array(s *openapi3.Schema, path []any, value any) {
	items, _ := value.([]any)
	if s.MinItems > 0 {
		g.add(fmt.Sprintf("%d items", s.MinItems-1), path, mxFillItems(items, int(s.MinItems)-1), "")
	}
	if s.MaxItems != nil {
		g.add(fmt.Sprintf("%d items", *s.MaxItems+1), path, mxFillItems(items, int(*s.MaxItems)+1), "")
	}
	is := s.Items.Value
	it := mxSchemaTypes(is)
	if len(it) == 0 {
		return
	}
	for _, k := range mxJsonKinds {
		if !mxAccepts(it, k.kind) {
			g.add("an item "+mxArticle(k.kind), path, []any{k.value}, "")
		}
	}
	if !mxContains(it, "null") {
		g.add("an item null", path, []any{nil}, "")
	}
	if obj := mxObjectSchema(is); obj != nil {
		if len(items) > 0 {
			if m, ok := items[0].(map[string]any); ok {
				g.object(obj, mxExtend(path, 0), m)
			}
		}
		return
	}
	g.bounds(is, path, func(v any) any { return []any{v} })
}

// bounds generates the values just outside the bounds of a scalar schema;
// wrap puts such a value where the field goes (itself, or in an array).
func (g *caseGen) bounds(s *openapi3.Schema, path []any, wrap func(any) any) {
	types := mxSchemaTypes(s)
	if mxContains(types, "string") {
		if s.MinLength > 0 {
			g.add(fmt.Sprintf("%d characters", s.MinLength-1), path, wrap(strings.Repeat("a", int(s.MinLength)-1)), "")
		}
		if s.MaxLength != nil {
			g.add(fmt.Sprintf("%d characters", *s.MaxLength+1), path, wrap(strings.Repeat("a", int(*s.MaxLength)+1)), "")
		}
		if len(s.Enum) > 0 {
			g.add("not in the enum", path, wrap("matrix-bogus"), "")
			g.add("an enum value in upper case", path, wrap(strings.ToUpper(fmt.Sprint(s.Enum[0]))+"X"), "")
		}
		if s.Pattern != "" {
			g.add("not matching the pattern", path, wrap(strings.Repeat("!", max(int(s.MinLength), 1))), "")
		}
		switch s.Format {
		case "date-time":
			for _, v := range []string{"2030-01-01", "2030-01-01T00:00:00", "2030-01-01 00:00:00Z", "tomorrow", ""} {
				g.add("date-time "+strconv.Quote(v), path, wrap(v), "")
			}
		case "uri":
			for _, v := range []string{"not a url", "/relative/path", "ftp://example.com/x", ""} {
				g.add("uri "+strconv.Quote(v), path, wrap(v), "")
			}
		}
	}
	if mxContains(types, "number") || mxContains(types, "integer") {
		if s.Min != nil {
			g.add("below the minimum", path, wrap(*s.Min-1), "")
			if *s.Min > 0 {
				g.add("zero", path, wrap(0), "")
			}
		}
		if s.Max != nil {
			g.add("above the maximum", path, wrap(*s.Max+1), "")
		} else if s.Min != nil && *s.Min == 0 && !mxContains(types, "integer") {
			// An amount of money: at most a billion dollars.
			g.add("1e12", path, wrap(1e12), "")
			g.add("-1e12", path, wrap(-1e12), "")
		}
	}
}

// add adds the case of the base body with the field at path set to value.
func (g *caseGen) add(what string, path []any, value any, substr string) {
	body := mxClone(g.base)
	mxSetAt(body, path, value)
	g.cases = append(g.cases, badCase{name: mxFieldName(path) + ": " + what, body: mxRaw(mxMustJSON(body)),
		status: 400, field: mxFieldName(path), substr: substr})
}

// addRaw adds the case of the base body with the JSON text rawValue at at;
// the message must name field.
func (g *caseGen) addRaw(what string, field []any, rawValue string, at []any, substr string) {
	const mark = "\x00matrix-raw\x00"
	body := mxClone(g.base)
	mxSetAt(body, at, mark)
	text := strings.Replace(mxMustJSON(body), mxMustJSON(mark), rawValue, 1)
	g.cases = append(g.cases, badCase{name: mxFieldName(field) + ": " + what, body: mxRaw(text),
		status: 400, field: mxFieldName(field), substr: substr})
}

// del adds the case of the base body without the field at path.
func (g *caseGen) del(what string, path []any) {
	body := mxClone(g.base)
	parent := mxGetAt(body, path[:len(path)-1]).(map[string]any)
	delete(parent, path[len(path)-1].(string))
	g.cases = append(g.cases, badCase{name: mxFieldName(path) + ": " + what, body: mxRaw(mxMustJSON(body)),
		status: 400, field: mxFieldName(path)})
}

// mxQueryCases are bad values of the documented query parameters.
func mxQueryCases(params openapi3.Parameters, path string, body map[string]any) []badCase {
	var cases []badCase
	for _, p := range params {
		if p.Value.In != "query" {
			continue
		}
		name, s := p.Value.Name, p.Value.Schema.Value
		q := func(v string, status int, substr string) {
			// The case's value replaces the one of the operation's path (the
			// generation routes name theirs in ?id=), next to the others.
			base, query, _ := strings.Cut(path, "?")
			values, _ := url.ParseQuery(query)
			values.Set(name, v)
			c := badCase{name: fmt.Sprintf("?%s=%q", name, mxTruncate(v, 20)), path: base + "?" + values.Encode(),
				status: status, substr: substr}
			if status == 400 {
				c.field = name
			}
			if body != nil { // the valid body, so that the case is about the parameter
				c.body = mxRaw(mxMustJSON(body))
			}
			cases = append(cases, c)
		}
		switch types := mxSchemaTypes(s); {
		case mxContains(types, "integer"):
			for _, v := range []string{"x", "1.5", "1e3", "99999999999999999999999"} {
				q(v, 400, "")
			}
			if s.Min != nil {
				q(strconv.Itoa(int(*s.Min)-1), 400, "")
			}
			if s.Max != nil {
				q(strconv.Itoa(int(*s.Max)+1), 400, "")
			} else {
				q(strconv.Itoa(1<<40), 400, "")
			}
		case mxContains(types, "boolean"):
			for _, v := range []string{"maybe", "yes", "2"} {
				q(v, 400, "")
			}
		case mxContains(types, "string"):
			// Text that no stored value can equal: 400.
			for _, v := range []string{"a\x00b", "\xff"} {
				q(v, 400, "")
			}
			for _, v := range s.Enum {
				q(strings.ToUpper(fmt.Sprint(v))+"X", 400, "")
			}
			if s.Format == "date-time" {
				for _, v := range []string{"2030-01-01", "2030-01-01T00:00:00", "tomorrow", "1893456000"} {
					q(v, 400, "")
				}
			}
			if name == "workspace_id" { // a reference to nothing: 404
				for _, v := range []string{"no-such-workspace", strings.Repeat("w", 5000),
					"00000000-0000-0000-0000-000000000000", "Default", "{00000000-0000-0000-0000-000000000000}"} {
					q(v, 404, "not found")
				}
			}
		}
	}
	return cases
}

// mxPathIDCases replace each path id with values that cannot name a resource.
// body is sent with each, when the operation takes one.
func mxPathIDCases(params openapi3.Parameters, pattern string, f *matrixFixture, body map[string]any) []badCase {
	presets := strings.Contains(pattern, "/presets/")
	var cases []badCase
	realID := func(name string) string {
		switch {
		case presets && name == "slug":
			return f.ids.preset
		case presets && name == "version":
			return "1"
		case name == "author":
			return matrixAuthor
		case name == "slug":
			return matrixSlug
		case name == "interval":
			return "monthly"
		case strings.Contains(pattern, "/workspaces/"):
			return f.ids.workspace
		case strings.Contains(pattern, "/destinations/"):
			return f.ids.destination
		case strings.Contains(pattern, "/invitations/"):
			return f.ids.invitation
		case strings.Contains(pattern, "/sso/providers/"):
			return f.ids.ssoProvider
		case strings.Contains(pattern, "/group-mappings/"):
			return f.ids.mapping
		}
		return map[string]string{"hash": f.ids.keyHash, "id": f.ids.guardrail, "user_id": f.ids.member}[name]
	}
	for _, p := range params {
		if p.Value.In != "path" {
			continue
		}
		real := realID(p.Value.Name)
		bad := []string{
			"not-a-uuid", strings.Repeat("z", 64), strings.Repeat("a", 5000), real + "0", real[1:],
			"{" + real + "}", "urn:uuid:" + real, "%00", "%ff%fe", "%2F", "%E2%80%AE", "null",
		}
		switch {
		case presets && p.Value.Name == "slug": // what cannot be a slug: a valid one names a preset to create
			bad = []string{"Not_A_Slug", strings.Repeat("z", 65), strings.Repeat("a", 5000), "-" + real, real + "-",
				"two--hyphens", "UPPER", "{" + real + "}", "%00", "%ff%fe", "%2F", "%E2%80%AE", "a.b", "sp%20ace"}
		case presets && p.Value.Name == "version":
			bad = []string{"0", "-1", "x", "1.5", "01", "+1", "99999999999", "2", "%00", "%ff%fe", "%2F", "%E2%80%AE", "null"}
		}
		// The other ids of the path (a model's author and slug, a preset's
		// slug) are real, so that the case is about this one.
		others := pattern
		for _, q := range params {
			if q.Value.In == "path" && q.Value.Name != p.Value.Name {
				others = strings.Replace(others, "{"+q.Value.Name+"}", realID(q.Value.Name), 1)
			}
		}
		for _, id := range bad {
			// 404 either way: "... not found", or "no such route" when
			// the id holds an escaped slash. A budget's interval is no
			// id but one of four words: anything else that reaches the
			// route is a 400 naming it.
			c := badCase{name: "path id " + mxTruncate(id, 20), path: strings.Replace(others, "{"+p.Value.Name+"}", id, 1),
				status: 404}
			if p.Value.Name == "interval" && id != "%2F" {
				c.status, c.field = 400, "interval"
			}
			if body != nil {
				c.body = mxRaw(mxMustJSON(body))
			}
			cases = append(cases, c)
		}
	}
	return cases
}

// mxSchemaTypes returns the JSON types a schema allows, through oneOf/anyOf.
func mxSchemaTypes(s *openapi3.Schema) []string {
	types := s.Type.Slice()
	for _, r := range append(append(openapi3.SchemaRefs{}, s.OneOf...), s.AnyOf...) {
		types = append(types, mxSchemaTypes(r.Value)...)
	}
	return types
}

// mxObjectSchema returns the object schema of s (s itself or one of its
// oneOf branches), or nil.
func mxObjectSchema(s *openapi3.Schema) *openapi3.Schema {
	if s.Type.Includes("object") {
		return s
	}
	for _, r := range s.OneOf {
		if o := mxObjectSchema(r.Value); o != nil {
			return o
		}
	}
	return nil
}

// mxAccepts reports whether a value of JSON kind fits types.
func mxAccepts(types []string, kind string) bool {
	return mxContains(types, kind) || kind == "number" && mxContains(types, "integer")
}

func mxContains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

// mxArticle names a JSON kind with its article: "an array".
func mxArticle(kind string) string {
	if strings.IndexByte("aeiou", kind[0]) >= 0 {
		return "an " + kind
	}
	return "a " + kind
}

// mxExtend returns a new path: path then p.
func mxExtend(path []any, p any) []any {
	return append(append([]any{}, path...), p)
}

// mxFieldName writes a path as a.b[0].c.
func mxFieldName(path []any) string {
	var b strings.Builder
	for _, p := range path {
		switch p := p.(type) {
		case int:
			fmt.Fprintf(&b, "[%d]", p)
		default:
			if b.Len() > 0 {
				b.WriteByte('.')
			}
			b.WriteString(p.(string))
		}
	}
	return b.String()
}

func mxGetAt(v any, path []any) any {
	for _, p := range path {
		switch p := p.(type) {
		case int:
			v = v.([]any)[p]
		default:
			v = v.(map[string]any)[p.(string)]
		}
	}
	return v
}

func mxSetAt(root map[string]any, path []any, value any) {
	parent := mxGetAt(root, path[:len(path)-1])
	switch p := path[len(path)-1].(type) {
	case int:
		parent.([]any)[p] = value
	default:
		parent.(map[string]any)[p.(string)] = value
	}
}

// mxFillItems returns n items: distinct strings made from the first item (or
// from "item") when it is a string, since bulk lists count repeated ids
// once; otherwise the first item repeated.
func mxFillItems(items []any, n int) []any {
	out := make([]any, n)
	for i := range out {
		prefix := "item"
		if len(items) > 0 {
			s, ok := items[0].(string)
			if !ok {
				out[i] = items[0]
				continue
			}
			prefix = s
		}
		out[i] = fmt.Sprintf("%s-%03d", prefix, i)
	}
	return out
}

// mxWith returns a copy of m with k set to v.
func mxWith(m map[string]any, k string, v any) map[string]any {
	c := mxClone(m)
	c[k] = v
	return c
}

// mxClone deep-copies a JSON object.
func mxClone(m map[string]any) map[string]any {
	var c map[string]any
	if err := json.Unmarshal([]byte(mxMustJSON(m)), &c); err != nil {
		panic(err)
	}
	if c == nil {
		c = map[string]any{}
	}
	return c
}

func mxMustJSON(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(data)
}

func mxSortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

func mxTruncate(s string, n int) string {
	if len(s) > n {
		return s[:n] + "..."
	}
	return s
}

// mxPkceS256 returns the S256 code challenge of a verifier.
func mxPkceS256(verifier string) string {
	sum := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
