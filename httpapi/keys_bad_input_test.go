package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// inputCase is one bad request body and what the answer must say.
type inputCase struct {
	name        string
	body        string // sent verbatim
	contentType string // default application/json
	status      int    // default 400
	message     string // substring of error.message
}

// checkInputCases sends every case to method path and checks that each gets
// its status and a message naming the problem, and that together they
// change nothing. (One snapshot around the table keeps the suite fast; a
// failing request that wrote anything shows up as a changed database.)
func (e *testEnv) checkInputCases(t *testing.T, method, path, key string, cases []inputCase) {
	t.Helper()
	e.unchanged(method+" "+path+" with bad input", func() {
		for _, c := range cases {
			ct := c.contentType
			if ct == "" {
				ct = "application/json"
			}
			want := c.status
			if want == 0 {
				want = http.StatusBadRequest
			}
			res := e.sendRawBody(method, path, key, ct, c.body)
			if res.Status != want {
				t.Errorf("%s: status %d, want %d; body %s", c.name, res.Status, want, truncateBody(res.Body))
				continue
			}
			if msg := res.errorMessage(t); !strings.Contains(msg, c.message) {
				t.Errorf("%s: message %q does not contain %q", c.name, msg, c.message)
			}
		}
	})
}

// bigBody is a JSON object of more than 1 MiB whose one field is field.
func bigBody(field string) string {
	return `{"` + field + `": "` + strings.Repeat("a", 1<<20+10) + `"}`
}

func TestKeysBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "target", "limit": 1})
	long := strings.Repeat("n", 201)
	t.Run("create", func(t *testing.T) {
		e.checkInputCases(t, "POST", "/api/v1/keys", e.mgmt, []inputCase{
			{name: "malformed JSON", body: `{"name": `, message: "malformed JSON"},
			{name: "malformed JSON token", body: `{"name": nope}`, message: "malformed JSON"},
			{name: "empty body", body: ``, message: "request body is required"},
			{name: "not an object", body: `["name"]`, message: "JSON object"},
			{name: "trailing data", body: `{"name": "a"} {"name": "b"}`, message: "nothing after it"},
			{name: "trailing garbage", body: `{"name": "a"}x`, message: "nothing after it"},
			{name: "duplicate key", body: `{"name": "a", "name": "b"}`, message: "name: appears more than once"},
			{name: "unknown field", body: `{"name": "a", "colour": "red"}`, message: "colour: unknown field"},
			{name: "unknown nested field", body: `{"name": "a", "external": {"user": "u", "extra": 1}}`, message: "external.extra: unknown field"},
			{name: "duplicate nested key", body: `{"name": "a", "external": {"user": "u", "user": "v"}}`, message: "external.user: appears more than once"},
			{name: "missing name", body: `{}`, message: "name"},
			{name: "blank name", body: `{"name": "   "}`, message: "name"},
			{name: "null name", body: `{"name": null}`, message: "name: must not be null"},
			{name: "name too long", body: `{"name": "` + long + `"}`, message: "name: must be at most 200"},
			{name: "name a number", body: `{"name": 5}`, message: "name: must be a string"},
			{name: "limit a string", body: `{"name": "a", "limit": "5"}`, message: "limit"},
			{name: "limit negative", body: `{"name": "a", "limit": -1}`, message: "limit: must not be negative"},
			{name: "limit 1e12", body: `{"name": "a", "limit": 1e12}`, message: "limit"},
			{name: "limit_reset unknown", body: `{"name": "a", "limit_reset": "hourly"}`, message: "limit_reset"},
			{name: "limit_reset a number", body: `{"name": "a", "limit_reset": 1}`, message: "limit_reset"},
			{name: "include_byok_in_limit a string", body: `{"name": "a", "include_byok_in_limit": "yes"}`, message: "include_byok_in_limit"},
			{name: "include_byok_in_limit null", body: `{"name": "a", "include_byok_in_limit": null}`, message: "include_byok_in_limit: must not be null"},
			{name: "expires_at date only", body: `{"name": "a", "expires_at": "2027-12-31"}`, message: "expires_at"},
			{name: "expires_at without zone", body: `{"name": "a", "expires_at": "2027-12-31T23:59:59"}`, message: "expires_at"},
			{name: "expires_at a number", body: `{"name": "a", "expires_at": 1893456000}`, message: "expires_at"},
			{name: "expires_at past", body: `{"name": "a", "expires_at": "2001-01-01T00:00:00Z"}`, message: "expires_at"},
			{name: "creator_user_id a number", body: `{"name": "a", "creator_user_id": 7}`, message: "creator_user_id"},
			{name: "creator_user_id empty", body: `{"name": "a", "creator_user_id": ""}`, message: "creator_user_id"},
			{name: "workspace_id a number", body: `{"name": "a", "workspace_id": 7}`, message: "workspace_id"},
			{name: "workspace_id null", body: `{"name": "a", "workspace_id": null}`, message: "workspace_id"},
			{name: "external a string", body: `{"name": "a", "external": "u"}`, message: "external"},
			{name: "external without user", body: `{"name": "a", "external": {}}`, message: "external.user"},
			{name: "external.user a number", body: `{"name": "a", "external": {"user": 1}}`, message: "external.user"},
			{name: "external.api_key too short", body: `{"name": "a", "external": {"user": "u", "api_key": "short"}}`, message: "external.api_key"},
			{name: "oversized body", body: bigBody("name"), status: 413, message: "at most"},
			{name: "text/plain", body: `{"name": "a"}`, contentType: "text/plain", status: 415, message: "Content-Type"},
			{name: "form", body: `name=a`, contentType: "application/x-www-form-urlencoded", status: 415, message: "Content-Type"},
		})
	})
	t.Run("update", func(t *testing.T) {
		e.checkInputCases(t, "PATCH", "/api/v1/keys/"+hash, e.mgmt, []inputCase{
			{name: "malformed JSON", body: `{"limit": 1`, message: "malformed JSON"},
			{name: "empty body", body: ``, message: "request body is required"},
			{name: "not an object", body: `"limit"`, message: "JSON object"},
			{name: "null body", body: `null`, message: "JSON object"},
			{name: "trailing data", body: `{} {}`, message: "nothing after it"},
			{name: "duplicate key", body: `{"limit": 1, "limit": 2}`, message: "limit: appears more than once"},
			{name: "unknown field", body: `{"label": "x"}`, message: "label: unknown field"},
			{name: "read-only field", body: `{"hash": "x"}`, message: "hash: unknown field"},
			{name: "name null", body: `{"name": null}`, message: "name: must not be null"},
			{name: "disabled null", body: `{"disabled": null}`, message: "disabled: must not be null"},
			{name: "name blank", body: `{"name": ""}`, message: "name"},
			{name: "name too long", body: `{"name": "` + long + `"}`, message: "name: must be at most 200"},
			{name: "name a bool", body: `{"name": true}`, message: "name"},
			{name: "disabled a string", body: `{"disabled": "true"}`, message: "disabled"},
			{name: "include_byok_in_limit a number", body: `{"include_byok_in_limit": 1}`, message: "include_byok_in_limit"},
			{name: "limit negative", body: `{"limit": -0.01}`, message: "limit: must not be negative"},
			{name: "limit 1e12", body: `{"limit": 1e12}`, message: "limit"},
			{name: "limit an object", body: `{"limit": {}}`, message: "limit"},
			{name: "limit_reset unknown", body: `{"limit_reset": "yearly"}`, message: "limit_reset"},
			{name: "limit_reset empty", body: `{"limit_reset": ""}`, message: "limit_reset"},
			{name: "one bad field spoils all", body: `{"name": "fine", "limit": -5}`, message: "limit"},
			{name: "oversized body", body: bigBody("name"), status: 413, message: "at most"},
			{name: "text/plain", body: `{"name": "a"}`, contentType: "text/plain", status: 415, message: "Content-Type"},
		})
	})
	t.Run("malformed ids", func(t *testing.T) {
		for _, id := range []string{"abc", strings.Repeat("z", 64), strings.ToUpper(hash), hash + "ff"} {
			e.checkInputCases(t, "PATCH", "/api/v1/keys/"+id, e.mgmt, []inputCase{
				{name: "PATCH " + id, body: `{"name": "x"}`, status: 404, message: "key not found"},
			})
		}
	})
}
