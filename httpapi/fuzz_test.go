package httpapi_test

import (
	"bytes"
	"encoding/json"
	"mime"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres/pgtest"
)

// The fuzz targets of this file drive the real handler, on one environment
// per target (built before f.Fuzz and reused by every input), and check one
// property for every input: the answer is a 2xx, or a 4xx with the JSON
// error body {"error":{"code":<status>,"message":"..."}}; never a 5xx, and
// never a panic (the server turns a panic into a 500, which fails the input
// too). Every response is also checked against the OpenAPI document.
//
// Run one with, for example:
//
//	go test -run '^$' -fuzz '^FuzzBodies$' -fuzztime 60s ./httpapi/
//
// and on PostgreSQL by setting GATEHOUSE_FUZZ_POSTGRES_URL to a server URL
// (as GATEHOUSE_TEST_POSTGRES_URL takes it). bench/fuzz.sh runs them all.
//
// Seeds live in testdata/fuzz/<target>/ and in the f.Add calls; a plain
// go test replays them.

// fuzzFixture is a test environment holding one resource of each kind, so
// that fuzzed bodies and parameters reach validation and the store.
type fuzzFixture struct {
	e             *testEnv
	keyHash       string // a regular key of the organization
	keyPlain      string
	workspaceID   string // a workspace other than the default one
	guardrailID   string
	destinationID string
	memberID      string
	byokID        string // a BYOK key of provider acme (the matrices' catalog)
}

// fuzzPostgresEnv names a PostgreSQL server URL on which the fuzz targets
// run instead of SQLite. (GATEHOUSE_TEST_POSTGRES_URL would make TestMain
// run each target a second time, on SQLite workers.)
const fuzzPostgresEnv = "GATEHOUSE_FUZZ_POSTGRES_URL"

func newFuzzFixture(f *testing.F) *fuzzFixture {
	f.Helper()
	if url := os.Getenv(fuzzPostgresEnv); url != "" && testEngine == "sqlite" {
		f.Setenv(pgtest.EnvURL, url)
		testEngine = "postgres"
		f.Cleanup(func() { testEngine = "sqlite" })
	}
	e := newEnv(f, withMatrixCatalog(f))
	fx := &fuzzFixture{e: e}
	fx.keyHash, fx.keyPlain = e.createKey(e.mgmt, map[string]any{"name": "fuzz key"})
	// A slug no input guesses, so that fuzzed deletes leave the fixture alone.
	fx.workspaceID = e.createWorkspace(e.mgmt, "fx-"+gatehouse.HashKey(e.mgmt)[:12])
	fx.memberID = e.addMember(e.mgmt, "fuzz@example.com")
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/guardrails", e.mgmt, map[string]any{"name": "fuzz guardrail"}).
		want(f, http.StatusCreated).decode(f, &out)
	fx.guardrailID = out.Data.ID
	e.do("POST", "/api/v1/observability/destinations", e.mgmt, map[string]any{
		"name": "fuzz hook", "type": "webhook", "config": map[string]any{"url": "https://example.com/hook"},
	}).want(f, http.StatusCreated).decode(f, &out)
	fx.destinationID = out.Data.ID
	e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": "sk-fuzz-0123456789abcdef"}).
		want(f, http.StatusCreated).decode(f, &out)
	fx.byokID = out.Data.ID
	return fx
}

// expand replaces the placeholders that seeds use to name the fixture's
// resources: $KEY_HASH, $WORKSPACE, $GUARDRAIL, $DESTINATION, $MEMBER,
// $BYOK, $MGMT (the management key) and $KEY (the regular key).
func (fx *fuzzFixture) expand(s string) string {
	if !strings.Contains(s, "$") {
		return s
	}
	return strings.NewReplacer(
		"$KEY_HASH", fx.keyHash, "$WORKSPACE", fx.workspaceID, "$GUARDRAIL", fx.guardrailID,
		"$DESTINATION", fx.destinationID, "$MEMBER", fx.memberID, "$BYOK", fx.byokID, "$MGMT", fx.e.mgmt, "$KEY", fx.keyPlain,
	).Replace(s)
}

// slowRequest is how long one request may take before its input counts as
// a denial of service. Generous, so that -race on a busy machine passes.
const slowRequest = 5 * time.Second

// serve runs req through the handler and checks the fuzzing property. A
// redirect is allowed only when redirectOK says the path is not canonical
// (http.ServeMux answers 301 to those, before any handler runs).
func (fx *fuzzFixture) serve(t *testing.T, req *http.Request) *httptest.ResponseRecorder {
	t.Helper()
	fx.e.logs.Reset() // keep only this request's log lines, for the failure message
	rec := httptest.NewRecorder()
	start := time.Now()
	fx.e.handler.ServeHTTP(rec, req)
	if d := time.Since(start); d > slowRequest {
		t.Errorf("%s %.200q: took %v, a denial of service", req.Method, req.URL.String(), d)
	}
	status, body := rec.Code, rec.Body.Bytes()
	switch {
	case status >= 500:
		t.Fatalf("%s %q: status %d: %s\nlogs:\n%s", req.Method, req.URL.String(), status, truncateBody(body), fx.e.logs)
	case status >= 400:
		checkErrorBody(t, req, status, rec.Header(), body)
	case status >= 300 && nonCanonical(req.URL):
		if rec.Header().Get("Location") == "" {
			t.Fatalf("%s %q: redirect %d without Location", req.Method, req.URL.String(), status)
		}
		return rec
	case status < 200 || status >= 300:
		t.Fatalf("%s %q: status %d: %s", req.Method, req.URL.String(), status, truncateBody(body))
	}
	fx.e.checker.check(t, req, status, rec.Header(), body)
	return rec
}

// nonCanonical reports whether http.ServeMux redirects requests for u to a
// cleaned path (one with "." or ".." segments, or "//").
func nonCanonical(u *url.URL) bool {
	p := u.EscapedPath()
	if p == "" || p[0] != '/' {
		p = "/" + p
	}
	clean := path.Clean(p)
	if strings.HasSuffix(p, "/") && clean != "/" {
		clean += "/"
	}
	return clean != p
}

// checkErrorBody fails t unless an error response is the API's JSON error:
// Content-Type application/json and {"error":{"code":status,"message":"..."}}
// with code an integer.
func checkErrorBody(t *testing.T, req *http.Request, status int, h http.Header, body []byte) {
	t.Helper()
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		t.Fatalf("%s %q: status %d with Content-Type %q: %s", req.Method, req.URL.String(), status, h.Get("Content-Type"), truncateBody(body))
	}
	var e struct {
		Error *struct {
			Code    *int    `json:"code"`
			Message *string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Code == nil || e.Error.Message == nil {
		t.Fatalf("%s %q: status %d: not a JSON error body (%v): %s", req.Method, req.URL.String(), status, err, truncateBody(body))
	}
	if *e.Error.Code != status || *e.Error.Message == "" {
		t.Fatalf("%s %q: status %d: error code %d, message %q", req.Method, req.URL.String(), status, *e.Error.Code, *e.Error.Message)
	}
}

// bodyOp is one operation that decodes a request body. path may hold
// placeholders (see expand). key is the credential: "$MGMT" or "$KEY".
type bodyOp struct {
	method, path, key string
	seed              string // a body the operation accepts (or at least decodes)
}

// bodyOps are the operations of FuzzBodies, one per body type. The index of
// an operation is part of the seeds in testdata/fuzz/FuzzBodies: only ever
// append to this list.
var bodyOps = []bodyOp{
	0:  {"POST", "/keys", "$MGMT", `{"name":"k","limit":1.5,"limit_reset":"daily","include_byok_in_limit":true,"expires_at":"2030-01-01T00:00:00.000Z","workspace_id":"$WORKSPACE","external":{"user":"u1"}}`},
	1:  {"PATCH", "/keys/$KEY_HASH", "$MGMT", `{"name":"renamed","disabled":false,"limit":null,"limit_reset":null,"include_byok_in_limit":false}`},
	2:  {"POST", "/auth/keys/code", "$MGMT", `{"callback_url":"https://example.com/cb","code_challenge":"E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM","code_challenge_method":"S256","limit":2,"usage_limit_type":"weekly","key_label":"app","workspace_id":"$WORKSPACE"}`},
	3:  {"POST", "/auth/keys", "", `{"code":"no-such-code","code_verifier":"dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk","code_challenge_method":"S256"}`},
	4:  {"POST", "/workspaces", "$MGMT", `{"name":"W","slug":"w-1","description":"d","default_text_model":"openai/gpt-4o","disabled_server_tools":["web"],"io_logging_api_key_ids":[1],"io_logging_sampling_rate":0.5}`},
	5:  {"PATCH", "/workspaces/$WORKSPACE", "$MGMT", `{"description":null,"is_data_discount_logging_enabled":true,"include_byok_in_budgets":false}`},
	6:  {"POST", "/workspaces/$WORKSPACE/members/add", "$MGMT", `{"user_ids":["$MEMBER"]}`},
	7:  {"POST", "/workspaces/$WORKSPACE/members/remove", "$MGMT", `{"user_ids":["$MEMBER"]}`},
	8:  {"POST", "/guardrails", "$MGMT", `{"name":"g","description":"d","workspace_id":"$WORKSPACE","allowed_models":["openai/gpt-4o"],"limit_usd":10,"reset_interval":"monthly","enforce_zdr":true,"allowed_data_regions":["europe"],"content_filters":[{"pattern":"a+b","action":"redact","label":"ab"}],"content_filter_builtins":[{"slug":"email","action":"block","scan_scope":"all_messages"}]}`},
	9:  {"PATCH", "/guardrails/$GUARDRAIL", "$MGMT", `{"description":null,"limit_usd":null,"reset_interval":null,"ignored_providers":["openai"]}`},
	10: {"POST", "/guardrails/$GUARDRAIL/assignments/keys", "$MGMT", `{"key_hashes":["$KEY_HASH"]}`},
	11: {"POST", "/guardrails/$GUARDRAIL/assignments/keys/remove", "$MGMT", `{"key_hashes":["$KEY_HASH"]}`},
	12: {"POST", "/guardrails/$GUARDRAIL/assignments/members", "$MGMT", `{"member_user_ids":["$MEMBER"]}`},
	13: {"POST", "/guardrails/$GUARDRAIL/assignments/members/remove", "$MGMT", `{"member_user_ids":["$MEMBER"]}`},
	14: {"POST", "/observability/destinations", "$MGMT", `{"name":"hook","type":"webhook","config":{"url":"https://example.com/x","headers":{"X-A":"b"}},"sampling_rate":0.5,"api_key_hashes":["$KEY_HASH"],"filter_rules":{"groups":[{"logic":"and","rules":[{"field":"model","operator":"equals","value":"openai/gpt-4o"}]}]},"workspace_id":"$WORKSPACE"}`},
	15: {"PATCH", "/observability/destinations/$DESTINATION", "$MGMT", `{"name":null,"enabled":false,"config":{"method":"PUT"},"regions":null}`},
	// A destination that does not exist: the optional body is decoded
	// before the lookup, and the fixture destination stays.
	16: {"DELETE", "/observability/destinations/00000000-0000-4000-8000-000000000000", "$MGMT", `{}`},
	17: {"POST", "/organization/members", "$MGMT", `{"id":"user_fuzz","email":"a@example.com","first_name":"A","last_name":null,"role":"org:member"}`},
	18: {"POST", "/auth/keys/code", "$KEY", `{"callback_url":"http://localhost:3000/cb"}`},
	19: {"POST", "/presets/fuzz-bot/chat/completions", "$MGMT", `{"messages":[{"role":"system","content":"Be brief."}],"temperature":0.5,"max_tokens":10,"stop":["x"],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"auto","response_format":{"type":"json_object"},"reasoning":{"effort":"low"},"provider":{"only":["acme"],"max_price":{"prompt":1}}}`},
	20: {"POST", "/presets/fuzz-bot/messages", "$MGMT", `{"system":[{"type":"text","text":"Be kind."}],"max_tokens":10,"stop_sequences":["x"],"thinking":{"type":"enabled","budget_tokens":100},"tools":[{"name":"f","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"f"},"output_config":{"effort":"max"}}`},
	21: {"POST", "/presets/fuzz-bot/responses", "$MGMT", `{"instructions":"Be kind.","max_output_tokens":10,"text":{"format":{"type":"json_schema","name":"o","schema":{}},"verbosity":"low"},"tools":[{"type":"function","name":"f","parameters":null}],"tool_choice":{"type":"function","name":"f"},"reasoning":{"summary":"auto"}}`},
	22: {"POST", "/byok", "$MGMT", `{"provider":"acme","key":"sk-fuzz-seed-0123456789","name":"n","workspace_id":"$WORKSPACE","allowed_api_key_hashes":null,"allowed_models":["acme/chat"],"allowed_user_ids":["$MEMBER"],"declared_zdr":true,"is_fallback":true}`},
	23: {"PATCH", "/byok/$BYOK", "$MGMT", `{"key":"sk-fuzz-rotated-0123456789","name":null,"disabled":false,"is_required":true,"allowed_models":null}`},
	// A BYOK key that does not exist: the optional body is decoded first.
	24: {"DELETE", "/byok/00000000-0000-4000-8000-000000000000", "$MGMT", `{}`},
}

// FuzzBodies sends any body, with any Content-Type, to each operation that
// decodes one: op selects the operation (modulo the number of operations).
func FuzzBodies(f *testing.F) {
	fx := newFuzzFixture(f)
	for i, op := range bodyOps {
		f.Add(uint8(i), []byte(op.seed), "application/json")
		f.Add(uint8(i), []byte(`{"a":1}`), "application/json; charset=utf-8")
		f.Add(uint8(i), []byte(op.seed), "text/plain")
		f.Add(uint8(i), []byte(""), "")
	}
	deep := strings.Repeat("[", 10000) + strings.Repeat("]", 10000)
	f.Add(uint8(0), []byte(`{"name":`+deep+`}`), "application/json")
	f.Add(uint8(8), []byte(`{"name":"g","content_filters":`+deep+`}`), "application/json")
	f.Add(uint8(14), []byte(`{"type":"webhook","config":{"url":`+deep+`}}`), "application/json")
	f.Add(uint8(0), []byte(`{"name":"k","limit":0.`+strings.Repeat("1", 100000)+`}`), "application/json")
	for op, b := range map[uint8]string{0: `{"name":"a\u0000b"}`, 1: `{"name":"\u0000"}`, 2: `{"callback_url":"https://example.com/\u0000"}`,
		3: `{"code":"\u0000"}`, 4: `{"name":"a\u0000","slug":"x"}`, 6: `{"user_ids":["\u0000"]}`, 7: `{"user_ids":["\u0000"]}`, 8: `{"name":"\u0000"}`,
		10: `{"key_hashes":["\u0000"]}`, 12: `{"member_user_ids":["\u0000"]}`, 14: `{"name":"\u0000","type":"webhook","config":{"url":"https://example.com/x"}}`,
		17: `{"email":"a\u0000@example.com"}`, 18: `{"callback_url":"http://localhost/","workspace_id":"\u0000"}`,
		19: `{"provider":"acme","key":"sk-\u0000"}`, 20: `{"name":"\u0000"}`} {
		f.Add(op, []byte(b), "application/json")
	}
	f.Fuzz(func(t *testing.T, op uint8, body []byte, contentType string) {
		o := bodyOps[int(op)%len(bodyOps)]
		req := httptest.NewRequest(o.method, "/api/v1"+fx.expand(o.path), bytes.NewReader(fx.expandBody(body)))
		if contentType != "" {
			req.Header.Set("Content-Type", contentType)
		}
		if o.key != "" {
			req.Header.Set("Authorization", "Bearer "+fx.expand(o.key))
		}
		fx.serve(t, req)
	})
}

// expandBody is expand for a body, which may be large: bytes without a
// placeholder are passed through.
func (fx *fuzzFixture) expandBody(b []byte) []byte {
	if !bytes.Contains(b, []byte("$")) {
		return b
	}
	return []byte(fx.expand(string(b)))
}

// queryRoutes are the routes of FuzzQuery, which reads query parameters
// (offset, limit, include_disabled, workspace_id,
// confirm_default_workspace_deletion). Only ever append.
var queryRoutes = []struct{ method, path string }{
	0:  {"GET", "/keys"},
	1:  {"GET", "/workspaces"},
	2:  {"GET", "/workspaces/$WORKSPACE/members"},
	3:  {"GET", "/guardrails"},
	4:  {"GET", "/guardrails/$GUARDRAIL/assignments/keys"},
	5:  {"GET", "/guardrails/$GUARDRAIL/assignments/members"},
	6:  {"GET", "/guardrails/assignments/keys"},
	7:  {"GET", "/guardrails/assignments/members"},
	8:  {"GET", "/observability/destinations"},
	9:  {"GET", "/organization/members"},
	10: {"DELETE", "/workspaces/no-such-workspace"}, // parses confirm_default_workspace_deletion, then 404
	11: {"GET", "/key"},
	12: {"GET", "/audit-log"},
	13: {"GET", "/presets"},
	14: {"GET", "/presets/no-such-bot/versions"},
	15: {"GET", "/byok"},
}

// FuzzQuery sends any raw query string to each list route.
func FuzzQuery(f *testing.F) {
	fx := newFuzzFixture(f)
	for i := range queryRoutes {
		for _, q := range []string{"", "offset=0&limit=1", "offset=-1", "limit=0", "limit=101", "offset=2147483649",
			"limit=1e2", "include_disabled=true&workspace_id=$WORKSPACE", "workspace_id=%00", "workspace_id=%FF",
			"since=2027-01-01T00:00:00Z&until=2028-01-01T00:00:00.5%2B01:00", "actor=%00&resource_type=key&resource_id=%FF", "confirm_default_workspace_deletion=yes",
			"provider=acme&workspace_id=$WORKSPACE", "provider=%00", "provider=Bad"} {
			f.Add(uint8(i), q)
		}
	}
	f.Fuzz(func(t *testing.T, op uint8, query string) {
		r := queryRoutes[int(op)%len(queryRoutes)]
		req := httptest.NewRequest(r.method, "/api/v1"+fx.expand(r.path), nil)
		req.URL.RawQuery = fx.expand(query) // any bytes: URL.Query parses leniently
		req.Header.Set("Authorization", "Bearer "+fx.e.mgmt)
		fx.serve(t, req)
	})
}

// pathRoutes are the routes of FuzzPathIDs; "{}" marks the id segment.
// Bodies are ones the operation accepts, so that the path is what decides.
// Only ever append.
var pathRoutes = []struct{ method, path, body string }{
	0:  {"GET", "/keys/{}", ""},
	1:  {"PATCH", "/keys/{}", `{"name":"x"}`},
	2:  {"DELETE", "/keys/{}", ""},
	3:  {"GET", "/workspaces/{}", ""},
	4:  {"PATCH", "/workspaces/{}", `{"description":"x"}`},
	5:  {"DELETE", "/workspaces/{}", ""},
	6:  {"GET", "/workspaces/{}/members", ""},
	7:  {"POST", "/workspaces/{}/members/add", `{"user_ids":["user_x"]}`},
	8:  {"POST", "/workspaces/{}/members/remove", `{"user_ids":["user_x"]}`},
	9:  {"GET", "/guardrails/{}", ""},
	10: {"PATCH", "/guardrails/{}", `{"description":"x"}`},
	11: {"DELETE", "/guardrails/{}", ""},
	12: {"GET", "/guardrails/{}/assignments/keys", ""},
	13: {"POST", "/guardrails/{}/assignments/keys", `{"key_hashes":[]}`},
	14: {"POST", "/guardrails/{}/assignments/keys/remove", `{"key_hashes":[]}`},
	15: {"GET", "/guardrails/{}/assignments/members", ""},
	16: {"POST", "/guardrails/{}/assignments/members", `{"member_user_ids":[]}`},
	17: {"POST", "/guardrails/{}/assignments/members/remove", `{"member_user_ids":[]}`},
	18: {"GET", "/observability/destinations/{}", ""},
	19: {"PATCH", "/observability/destinations/{}", `{"enabled":true}`},
	20: {"DELETE", "/observability/destinations/{}", ""},
	21: {"DELETE", "/organization/members/{}", ""},
	22: {"GET", "/presets/{}", ""},
	23: {"GET", "/presets/{}/versions", ""},
	24: {"GET", "/presets/no-such-bot/versions/{}", ""},
	25: {"POST", "/presets/{}/chat/completions", `{"temperature":0.5}`},
	26: {"POST", "/presets/{}/messages", `{"max_tokens":5}`},
	27: {"POST", "/presets/{}/responses", `{"instructions":"x"}`},
	28: {"GET", "/byok/{}", ""},
	29: {"PATCH", "/byok/{}", `{"disabled":false}`},
	30: {"DELETE", "/byok/{}", ""},
}

// FuzzPathIDs puts any string in the id segment of each route that has one.
// mode selects how it enters the URL: 0 escaped with url.PathEscape (one
// segment, any bytes); 1 raw, as a client would write it on the request
// line (inputs that are not a valid request URI are skipped, since the
// server refuses them before any handler); 2 straight into URL.Path, bytes
// no real request line could carry included.
func FuzzPathIDs(f *testing.F) {
	fx := newFuzzFixture(f)
	ids := []string{"", "x", "default", "00000000-0000-4000-8000-000000000000", "{00000000-0000-4000-8000-000000000000}",
		"urn:uuid:00000000-0000-4000-8000-000000000000", "00000000000040008000000000000000",
		strings.Repeat("a", 64), strings.Repeat("A", 64), "sk-gh-v1-" + strings.Repeat("0", 64),
		"..", ".", "a/b", "%2F", "%", "%zz", "a b", "\x00", "\xff\xfe", "é", "user_fuzz", strings.Repeat("x", 5000)}
	for i := range pathRoutes {
		for _, id := range ids {
			f.Add(uint8(i), uint8(i%3), id)
		}
	}
	f.Fuzz(func(t *testing.T, op, mode uint8, id string) {
		r := pathRoutes[int(op)%len(pathRoutes)]
		prefix, suffix, _ := strings.Cut("/api/v1"+r.path, "{}")
		var body *strings.Reader
		if r.body != "" {
			body = strings.NewReader(r.body)
		}
		var req *http.Request
		switch mode % 3 {
		case 0:
			req = newRequest(r.method, prefix+url.PathEscape(id)+suffix, body)
		case 1:
			u, err := url.ParseRequestURI(prefix + id + suffix)
			if err != nil || u.RawQuery != "" || u.Fragment != "" || u.Host != "" {
				t.Skip("not a request URI for this route")
			}
			req = newRequest(r.method, "/", body)
			req.URL = u
		default:
			req = newRequest(r.method, "/", body)
			req.URL = &url.URL{Path: prefix + id + suffix}
		}
		if r.body != "" {
			req.Header.Set("Content-Type", "application/json")
		}
		req.Header.Set("Authorization", "Bearer "+fx.e.mgmt)
		fx.serve(t, req)
	})
}

// newRequest is httptest.NewRequest with a body that may be a nil
// *strings.Reader.
func newRequest(method, target string, body *strings.Reader) *http.Request {
	if body == nil {
		return httptest.NewRequest(method, target, nil)
	}
	return httptest.NewRequest(method, target, body)
}

// FuzzBearer sends any Authorization header to GET /key: the answer is 200
// or the JSON 401 (or 429), never anything else. $MGMT and $KEY in the input
// stand for the fixture's valid keys, so that the accepting path is reached.
func FuzzBearer(f *testing.F) {
	fx := newFuzzFixture(f)
	for _, h := range []string{"", "Bearer $MGMT", "Bearer $KEY", "bearer $KEY", "BEARER $KEY", "Bearer  $KEY",
		"Bearer $KEY ", "Bearer\t$KEY", "Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer sk-gh-v1-" + strings.Repeat("0", 64),
		"Bearer " + strings.Repeat("x", 513), "Bearer a b", "Bearer \x00", "Bearer \xff", "Bearer é", "Bearer\u00a0$KEY",
		"Bearer $KEY\x00", "Bearer sk-gh-v1-\n", "Bearer " + strings.Repeat("k", 1<<16)} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest("GET", "/api/v1/key", nil)
		req.Header["Authorization"] = []string{fx.expand(header)}
		rec := fx.serve(t, req)
		switch rec.Code {
		case http.StatusOK, http.StatusUnauthorized, http.StatusTooManyRequests:
		default:
			t.Fatalf("Authorization %q: status %d: %s", header, rec.Code, truncateBody(rec.Body.Bytes()))
		}
	})
}
