package httpapi_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"gatehouse"
)

// sendWithID sends a request carrying an X-Request-Id header ("" for none).
func (e *testEnv) sendWithID(method, path, key, requestID string, body any) *response {
	e.t.Helper()
	var rd *strings.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = strings.NewReader(string(data))
	} else {
		rd = strings.NewReader("")
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if requestID != "" {
		req.Header.Set("X-Request-Id", requestID)
	}
	return e.send(req)
}

var generatedID = regexp.MustCompile(`^[0-9a-f]{24}$`)

func TestRequestID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// Every answer carries the server's own id, whatever the client sent:
	// a client must not be able to pose as another request in the logs and
	// the audit log (its own id is kept apart, as client_request_id).
	for _, c := range []struct {
		method, path, key string
		body              any
		status            int
	}{
		{"GET", "/healthz", "", nil, 200},
		{"GET", "/readyz", "", nil, 200},
		{"GET", "/metrics", "", nil, 200},
		{"GET", "/api/v1/openapi.json", "", nil, 200},
		{"GET", "/api/v1/key", e.mgmt, nil, 200},
		{"POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "x"}, 201},
		{"POST", "/api/v1/keys", e.mgmt, map[string]any{"name": 1}, 400},
		{"GET", "/api/v1/keys", "", nil, 401},
		{"GET", "/api/v1/keys/" + strings.Repeat("0", 64), e.mgmt, nil, 404},
		{"GET", "/api/v1/nowhere", "", nil, 404},
		{"DELETE", "/api/v1/keys", e.mgmt, nil, 405},
	} {
		id := "Req-" + fmt.Sprint(c.status) + "_a.b"
		res := e.sendWithID(c.method, c.path, c.key, id, c.body).want(t, c.status)
		if got := res.Header.Get("X-Request-Id"); got == id || !generatedID.MatchString(got) {
			t.Errorf("%s %s: X-Request-Id %q, want the server's own id", c.method, c.path, got)
		}
	}
	// Weird, overlong or absent ids get fresh ones too.
	seen := map[string]bool{}
	for _, id := range []string{"", "has space", "semi;colon", "ünïcode", "<script>", strings.Repeat("a", 65), "new\nline"} {
		req := httptest.NewRequest("GET", "/healthz", nil)
		if id != "" {
			req.Header["X-Request-Id"] = []string{id}
		}
		got := e.send(req).want(t, http.StatusOK).Header.Get("X-Request-Id")
		if !generatedID.MatchString(got) || seen[got] {
			t.Errorf("X-Request-Id %q answered with %q, want a fresh id", id, got)
		}
		seen[got] = true
	}
}

// logLine is one request log line.
type logLine struct {
	Msg        string   `json:"msg"`
	Level      string   `json:"level"`
	RequestID  string   `json:"request_id"`
	Method     string   `json:"method"`
	Route      string   `json:"route"`
	Path       string   `json:"path"`
	Status     int      `json:"status"`
	DurationMS *float64 `json:"duration_ms"`
	KeyHash    string   `json:"key_hash"`
	// ClientRequestID is the X-Request-Id the client sent.
	ClientRequestID string `json:"client_request_id"`
	Error           string `json:"error"`
}

// logLines parses the log buffer, one JSON object per line.
func (e *testEnv) logLines(t *testing.T) []logLine {
	t.Helper()
	var out []logLine
	sc := bufio.NewScanner(strings.NewReader(e.logs.String()))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var l logLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, sc.Text())
		}
		out = append(out, l)
	}
	return out
}

func TestRequestLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "logged"})
	e.logs.Reset()
	type want struct {
		method, path, key string
		body              any
		route             string
		status            int
		keyHash           string
	}
	mgmtHash := gatehouse.HashKey(e.mgmt)
	cases := []want{
		{"PATCH", "/api/v1/keys/" + hash, e.mgmt, map[string]any{"name": "renamed"}, "PATCH /api/v1/keys/{hash}", 200, mgmtHash},
		{"GET", "/api/v1/keys/" + hash, e.mgmt, nil, "GET /api/v1/keys/{hash}", 200, mgmtHash},
		{"POST", "/api/v1/keys", e.mgmt, map[string]any{"name": nil}, "POST /api/v1/keys", 400, mgmtHash},
		{"GET", "/api/v1/key", "", nil, "GET /api/v1/key", 401, ""},
		{"GET", "/api/v1/guardrails/assignments/keys", e.mgmt, nil, "GET /api/v1/guardrails/assignments/keys", 200, mgmtHash},
		{"GET", "/api/v1/nowhere", "", nil, "unmatched", 404, ""},
		{"DELETE", "/api/v1/keys", e.mgmt, nil, "unmatched", 405, ""},
		{"GET", "/healthz", "", nil, "GET /healthz", 200, ""},
	}
	serverIDs := make([]string, len(cases))
	for i, c := range cases {
		serverIDs[i] = e.sendWithID(c.method, c.path, c.key, fmt.Sprintf("log-%d", i), c.body).want(t, c.status).Header.Get("X-Request-Id")
	}
	lines := e.logLines(t)
	if len(lines) != len(cases) {
		t.Fatalf("%d log lines for %d requests:\n%s", len(lines), len(cases), e.logs)
	}
	for i, c := range cases {
		l := lines[i]
		if l.Msg != "request" || l.RequestID != serverIDs[i] || l.ClientRequestID != fmt.Sprintf("log-%d", i) || l.Method != c.method || l.Route != c.route ||
			l.Path != c.path || l.Status != c.status || l.DurationMS == nil || *l.DurationMS < 0 || l.KeyHash != c.keyHash {
			t.Errorf("log line %d = %+v, want %s %s route %q status %d", i, l, c.method, c.path, c.route, c.status)
		}
		if l.Level != "INFO" {
			t.Errorf("log line %d: level %s", i, l.Level)
		}
	}
}

// TestLogsHoldNoSecrets runs a session that handles every kind of secret
// and then searches the whole log for them.
func TestLogsHoldNoSecrets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	user := e.addMember(e.mgmt, "ada@example.com")
	hash, k1 := e.createKey(e.mgmt, map[string]any{"name": "one", "creator_user_id": user,
		"external": map[string]any{"user": "partner-1", "api_key": "ext-secret-0123456789abcdefghijklmnop"}})
	_, k2 := e.createKey(e.mgmt, map[string]any{"name": "two"})
	e.do("GET", "/api/v1/key", k1, nil).want(t, http.StatusOK)
	e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"name": "renamed"}).want(t, http.StatusOK)
	e.do("DELETE", "/api/v1/keys/"+gatehouse.HashKey(k2), e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/key", k2, nil).want(t, http.StatusUnauthorized) // a deleted key
	e.do("GET", "/api/v1/keys", k1, nil).want(t, http.StatusForbidden)   // a regular key on a management route
	unknown := "sk-gh-v1-" + strings.Repeat("ab", 32)
	e.do("GET", "/api/v1/key", unknown, nil).want(t, http.StatusUnauthorized)

	verifier, challenge := pkcePair("logs")
	code := e.createCode(k1, map[string]any{"callback_url": "https://app.example.com/cb", "code_challenge": challenge})
	e.do("POST", "/api/v1/auth/keys", "", map[string]any{"code": code.ID, "code_verifier": "W" + verifier[1:]}).want(t, http.StatusForbidden)
	x := e.exchange(map[string]any{"code": code.ID, "code_verifier": verifier})
	e.do("GET", "/api/v1/key", x.Key, nil).want(t, http.StatusOK)
	e.do("POST", "/api/v1/auth/keys", "", map[string]any{"code": code.ID, "code_verifier": verifier}).want(t, http.StatusForbidden)

	var d struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/observability/destinations", e.mgmt, map[string]any{
		"name": "lf", "type": "langfuse",
		"config": map[string]any{"publicKey": "pk-lf-public-0123456789", "secretKey": "sk-lf-SECRET-0123456789abcdef",
			"headers": map[string]any{"X-Auth": "hdr-SECRET-abcdefghijkl"}},
	}).want(t, http.StatusCreated).decode(t, &d)
	e.do("PATCH", "/api/v1/observability/destinations/"+d.Data.ID, e.mgmt, map[string]any{
		"config": map[string]any{"secretKey": "sk-lf-ROTATED-0123456789abcdef"}}).want(t, http.StatusOK)
	e.do("POST", "/api/v1/observability/destinations", e.mgmt, map[string]any{
		"name": "s3", "type": "s3",
		"config": map[string]any{"accessKeyId": "AKIAEXAMPLE", "secretAccessKey": "s3-SECRET-0123456789", "bucketName": "b",
			"unknownKey": "s3-SECRET-in-a-rejected-request"},
	}).want(t, http.StatusBadRequest)
	// An identity provider's client secret, and a SCIM token.
	e.do("POST", "/api/v1/sso/providers", e.mgmt, map[string]any{"name": "Okta", "issuer_url": "https://acme.okta.example",
		"client_id": "c", "client_secret": "oidc-SECRET-0123456789abcdef"}).want(t, http.StatusCreated)
	e.do("POST", "/api/v1/sso/providers", e.mgmt, map[string]any{"name": "Bad", "issuer_url": "ftp://x",
		"client_id": "c", "client_secret": "oidc-SECRET-in-a-rejected-request"}).want(t, http.StatusBadRequest)
	var tok struct {
		Data struct {
			Token string `json:"token"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/scim/token", e.mgmt, nil).want(t, http.StatusCreated).decode(t, &tok)

	logs := e.logs.String()
	if strings.Count(logs, "\n") < 15 {
		t.Fatalf("expected a log line per request, got:\n%s", logs)
	}
	for _, secret := range []string{
		"sk-gh-v1-", "sk-gh-mgmt-v1-", e.mgmt, k1, k2, x.Key, unknown, code.ID, verifier,
		"ext-secret-0123456789", "sk-lf-SECRET", "sk-lf-ROTATED", "hdr-SECRET", "s3-SECRET",
		"oidc-SECRET", "sk-gh-scim-v1-", tok.Data.Token,
	} {
		if strings.Contains(logs, secret) {
			t.Errorf("the logs contain %q:\n%s", secret, logs)
		}
	}
}

func TestMetricsEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("GET", "/api/v1/key", e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/key", e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/keys", "", nil).want(t, http.StatusUnauthorized)
	e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "m"}).want(t, http.StatusCreated)
	e.do("GET", "/api/v1/nowhere", "", nil).want(t, http.StatusNotFound)
	res := e.do("GET", "/metrics", "", nil).want(t, http.StatusOK) // no credential needed
	body := string(res.Body)
	for _, want := range []string{
		"# TYPE gatehouse_http_requests_total counter",
		"# TYPE gatehouse_http_request_duration_seconds histogram",
		`gatehouse_http_requests_total{method="GET",route="GET /api/v1/key",status="200"} 2`,
		`gatehouse_http_requests_total{method="GET",route="GET /api/v1/keys",status="401"} 1`,
		`gatehouse_http_requests_total{method="POST",route="POST /api/v1/keys",status="201"} 1`,
		`gatehouse_http_requests_total{method="GET",route="unmatched",status="404"} 1`,
		`gatehouse_http_request_duration_seconds_count{method="GET",route="GET /api/v1/key",status="200"} 2`,
		`gatehouse_http_request_duration_seconds_bucket{method="GET",route="GET /api/v1/key",status="200",le="+Inf"} 2`,
		`gatehouse_http_request_duration_seconds_count{method="POST",route="POST /api/v1/keys",status="201"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
	if strings.Contains(body, "/api/v1/nowhere") {
		t.Error("/metrics labels an unmatched path by its raw path")
	}
	// The scrape itself is counted by the next scrape.
	body = string(e.do("GET", "/metrics", "", nil).want(t, http.StatusOK).Body)
	if !strings.Contains(body, `gatehouse_http_requests_total{method="GET",route="GET /metrics",status="200"} 1`) {
		t.Error("/metrics does not count itself")
	}
}

func TestHealthEndpoints(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := gatehouse.Build()
	for path, want := range map[string]map[string]any{
		"/healthz": {"status": "ok", "version": b.Version, "revision": nil, "vcs_time": nil, "modified": false, "go_version": runtime.Version()},
		"/readyz":  {"status": "ok"},
	} {
		res := e.do("GET", path, "", nil).want(t, http.StatusOK)
		compareJSONObjects(t, path, res.json(t), want)
		if ct := res.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s: Content-Type %q", path, ct)
		}
	}
	// The same build in the metrics (a test binary has no VCS stamp; a
	// built binary's is checked by cmd/gatehouse TestVersion).
	metrics := string(e.do("GET", "/metrics", "", nil).want(t, http.StatusOK).Body)
	wantLine := fmt.Sprintf(`gatehouse_build_info{goversion=%q,modified="false",revision="",version=%q} 1`, runtime.Version(), b.Version)
	if !strings.Contains(metrics, wantLine) {
		t.Errorf("/metrics lacks %s", wantLine)
	}
	// With the database gone, /readyz is 503 and /healthz still 200. (The
	// harness fails on any 5xx, so this calls the handler directly.)
	e.db.Close()
	for path, status := range map[string]int{"/readyz": http.StatusServiceUnavailable, "/healthz": http.StatusOK} {
		req := httptest.NewRequest("GET", path, nil)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		e.checker.check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
		if rec.Code != status {
			t.Errorf("%s with the database closed: status %d, want %d: %s", path, rec.Code, status, rec.Body)
		}
	}
}

// TestUnavailableLogsItsCause: when the database fails, the client reads
// the store's message and the request's log line also says what the
// database driver said, which the client never reads.
func TestUnavailableLogsItsCause(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.db.Close() // a real store that fails: SQLite's "database is closed", pgxpool's "closed pool"
	e.logs.Reset()
	req := httptest.NewRequest("GET", "/readyz", nil)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req) // not e.send, which fails on any 5xx
	e.checker.check(t, req, rec.Code, rec.Header(), rec.Body.Bytes())
	if rec.Code != http.StatusServiceUnavailable {
		t.Fatalf("status %d, want 503: %s", rec.Code, rec.Body)
	}
	var body struct {
		Error struct {
			Message string `json:"message"`
		} `json:"error"`
	}
	if err := json.Unmarshal(rec.Body.Bytes(), &body); err != nil || body.Error.Message == "" {
		t.Fatalf("body %s: %v", rec.Body, err)
	}
	if strings.Contains(rec.Body.String(), "closed") {
		t.Errorf("the client reads the cause: %s", rec.Body)
	}
	lines := e.logLines(t)
	if len(lines) != 1 {
		t.Fatalf("%d log lines, want 1:\n%s", len(lines), e.logs)
	}
	l := lines[0]
	if l.RequestID != rec.Header().Get("X-Request-Id") || l.Status != http.StatusServiceUnavailable || l.Level != "ERROR" {
		t.Errorf("log line %+v", l)
	}
	if !strings.Contains(l.Error, body.Error.Message) || !strings.Contains(l.Error, "closed") {
		t.Errorf("log line error %q, want the message %q and the driver's cause", l.Error, body.Error.Message)
	}
}

func TestUnknownRouteAndMethod(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "k"})
	for _, path := range []string{"/nope", "/api/v1/nope", "/api/v2/keys", "/api/v1/keys/" + hash + "/extra", "/api/v1/"} {
		res := e.do("GET", path, e.mgmt, nil).want(t, http.StatusNotFound)
		body := res.json(t)["error"].(map[string]any)
		if body["code"] != 404.0 || body["message"] == "" {
			t.Errorf("GET %s: body %s", path, res.Body)
		}
	}
	for _, c := range []struct{ method, path, allow string }{
		{"DELETE", "/api/v1/keys", "GET, HEAD, POST"},
		{"PUT", "/api/v1/keys/" + hash, "GET, HEAD, PATCH, DELETE"},
		{"POST", "/api/v1/key", "GET, HEAD"},
		{"GET", "/api/v1/auth/keys", "POST"},
		{"POST", "/healthz", "GET, HEAD"},
		{"DELETE", "/api/v1/guardrails/assignments/keys", "GET, HEAD"},
		{"PATCH", "/api/v1/organization/members", "GET, HEAD, POST"},
	} {
		e.unchanged(c.method+" "+c.path, func() {
			res := e.do(c.method, c.path, e.mgmt, nil).want(t, http.StatusMethodNotAllowed)
			if got := res.Header.Get("Allow"); got != c.allow {
				t.Errorf("%s %s: Allow %q, want %q", c.method, c.path, got, c.allow)
			}
			if ct := res.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("%s %s: Content-Type %q", c.method, c.path, ct)
			}
			if body := res.json(t)["error"].(map[string]any); body["code"] != 405.0 || body["message"] == "" {
				t.Errorf("%s %s: body %s", c.method, c.path, res.Body)
			}
		})
	}
}

// routePattern matches the registrations in routes.go, such as
// m.HandleFunc("GET "+v1+"/keys/{hash}", ...) and m.Handle("GET /metrics", ...).
var routePattern = regexp.MustCompile(`m\.Handle(?:Func)?\("([A-Z]+) ("\+v1\+")?([^"]*)"`)

// TestOpenAPIServedCoversRoutes keeps the router, the served document and
// the authentication matrix from drifting apart: all three must list the
// same operations.
func TestOpenAPIServedCoversRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	res := e.do("GET", "/api/v1/openapi.json", "", nil).want(t, http.StatusOK)
	if ct := res.Header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("Content-Type %q", ct)
	}
	var doc struct {
		OpenAPI string                                `json:"openapi"`
		Paths   map[string]map[string]json.RawMessage `json:"paths"`
	}
	res.decode(t, &doc)
	if !strings.HasPrefix(doc.OpenAPI, "3.1") {
		t.Errorf("openapi %q", doc.OpenAPI)
	}
	var documented []string
	for path, item := range doc.Paths {
		for method := range item {
			switch method {
			case "get", "put", "post", "delete", "patch", "head", "options", "trace":
				documented = append(documented, strings.ToUpper(method)+" "+path)
			}
		}
	}

	src, err := os.ReadFile("routes.go")
	if err != nil {
		t.Fatal(err)
	}
	var registered []string
	for _, m := range routePattern.FindAllStringSubmatch(string(src), -1) {
		path := m[3]
		if m[2] != "" {
			path = "/api/v1" + path
		}
		registered = append(registered, m[1]+" "+path)
	}
	if len(registered) < 40 {
		t.Fatalf("found only %d routes in routes.go: %v", len(registered), registered)
	}

	var exercised []string
	for _, o := range matrixOps(matrixIDs{}) {
		exercised = append(exercised, o.pattern)
	}
	for _, s := range [][]string{documented, registered, exercised} {
		slices.Sort(s)
	}
	diff := func(aName string, a []string, bName string, b []string) {
		for _, x := range a {
			if !slices.Contains(b, x) {
				t.Errorf("%s is in %s but not in %s", x, aName, bName)
			}
		}
	}
	diff("routes.go", registered, "the OpenAPI document", documented)
	diff("the OpenAPI document", documented, "routes.go", registered)
	diff("routes.go", registered, "the authentication matrix", exercised)
	diff("the authentication matrix", exercised, "routes.go", registered)
	if len(slices.Compact(slices.Clone(registered))) != len(registered) {
		t.Errorf("routes.go registers a route twice: %v", registered)
	}
}
