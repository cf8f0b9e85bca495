package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// auditLog fetches GET /api/v1/audit-log with the query and returns the
// entries and the total.
func (e *testEnv) auditLog(key, query string) ([]map[string]any, int) {
	e.t.Helper()
	return resList(e.t, e.do("GET", "/api/v1/audit-log"+query, key, nil).want(e.t, http.StatusOK))
}

// auditStep is a change made through the API and the entry it must leave.
type auditStep struct {
	at        string
	requestID string
	// clientRequestID is the X-Request-Id the client sent, "" for none.
	clientRequestID string
	op, typ         string
	ids             []string
	details         map[string]any // as JSON decodes it
}

// auditWant checks an entry of the log against the step that made it, as
// the actor with keyHash and userID (nil for none).
func auditWant(t *testing.T, got map[string]any, s auditStep, keyHash string, userID any) {
	t.Helper()
	want := map[string]any{
		"id": got["id"], "at": s.at, "operation": s.op, "resource_type": s.typ, "resource_ids": toAnys(s.ids),
		"details": nil, "result": "success", "request_id": s.requestID, "client_request_id": nil,
		"actor": map[string]any{"key_hash": keyHash, "user_id": userID, "system": nil},
	}
	if s.details != nil {
		want["details"] = s.details
	}
	if s.clientRequestID != "" {
		want["client_request_id"] = s.clientRequestID
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("%s entry (-want +got):\n%s", s.op, diff)
	}
	if id, _ := got["id"].(string); id == "" {
		t.Errorf("%s entry without id", s.op)
	}
}

func toAnys(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// TestAuditLog makes changes through the API and reads them back from the
// audit log: newest first, by the management key, with the request id of
// the response that made each; failed and empty changes leave nothing.
func TestAuditLog(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	mgmtHash := gatehouse.HashKey(e.mgmt)
	_, setup := e.auditLog(e.mgmt, "")
	if setup != 2 { // the organization and its management key, from outside the API
		t.Fatalf("%d entries before any request, want 2", setup)
	}

	var steps []auditStep
	step := func(r *response, op, typ string, ids []string, details map[string]any) {
		t.Helper()
		steps = append(steps, auditStep{at: e.now(), requestID: r.Header.Get("X-Request-Id"), op: op, typ: typ, ids: ids, details: details})
		e.tick()
	}
	e.tick()
	r := e.do("POST", "/api/v1/workspaces", e.mgmt, map[string]any{"name": "Team", "slug": "team"}).want(t, http.StatusCreated)
	ws := resData(t, r)["id"].(string)
	step(r, "workspace.create", "workspace", []string{ws}, nil)
	r = e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "k", "workspace_id": ws}).want(t, http.StatusCreated)
	hash := resData(t, r)["hash"].(string)
	step(r, "key.create", "key", []string{hash}, map[string]any{"workspace_id": ws})
	// A refused request and an empty update change nothing and leave no entry.
	e.unchanged("refused and empty", func() {
		e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": ""}).want(t, http.StatusBadRequest)
		e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{}).want(t, http.StatusOK)
		e.do("POST", "/api/v1/workspaces/team/members/remove", e.mgmt, map[string]any{"user_ids": []string{"user_ghost"}}).want(t, http.StatusOK)
	})
	r = e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"name": "renamed", "disabled": true}).want(t, http.StatusOK)
	step(r, "key.update", "key", []string{hash}, map[string]any{"fields": []any{"name", "disabled"}})
	// The caller's own X-Request-Id is recorded apart from the server's id.
	req := httptest.NewRequest("DELETE", "/api/v1/keys/"+hash, nil)
	req.Header.Set("Authorization", "Bearer "+e.mgmt)
	req.Header.Set("X-Request-Id", "client-req-42")
	r = e.send(req).want(t, http.StatusOK)
	if got := r.Header.Get("X-Request-Id"); got == "client-req-42" {
		t.Fatalf("X-Request-Id = %q: the client's id was adopted as the server's", got)
	}
	step(r, "key.delete", "key", []string{hash}, nil)
	steps[len(steps)-1].clientRequestID = "client-req-42"

	items, total := e.auditLog(e.mgmt, "")
	if total != setup+len(steps) || len(items) != total {
		t.Fatalf("total %d, %d items; want %d", total, len(items), setup+len(steps))
	}
	for i, s := range steps {
		auditWant(t, items[len(steps)-1-i], s, mgmtHash, nil)
	}
	for _, it := range items[len(steps):] {
		if it["actor"] != nil || it["request_id"] != nil {
			t.Errorf("setup entry %v has an actor or request id", it)
		}
	}
	// Both at one instant, so in either order.
	if diff := cmp.Diff([]string{"management_key.create", "organization.create"}, resSorted(resField(items[len(steps):], "operation"))); diff != "" {
		t.Errorf("setup entries (-want +got):\n%s", diff)
	}
	if body := string(e.do("GET", "/api/v1/audit-log", e.mgmt, nil).Body); strings.Contains(body, "sk-gh-") {
		t.Errorf("the audit log holds a plaintext key: %s", body)
	}
}

// TestAuditLogActorOfRegularKey checks that a change made with a regular
// key (an OAuth code) names that key and its user.
func TestAuditLogActorOfRegularKey(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	member := e.addMember(e.mgmt, "ada@example.com")
	hash, regular := e.createKey(e.mgmt, map[string]any{"name": "ada's", "creator_user_id": member})
	e.tick()
	r := e.do("POST", "/api/v1/auth/keys/code", regular, map[string]any{"callback_url": "https://app.example.com/cb"}).want(t, http.StatusOK)
	code := resData(t, r)
	items, _ := e.auditLog(e.mgmt, "?actor="+member)
	if len(items) != 1 {
		t.Fatalf("entries of %s: %v", member, items)
	}
	auditWant(t, items[0], auditStep{
		at: e.now(), requestID: r.Header.Get("X-Request-Id"), op: "auth_code.create", typ: "auth_code",
		ids:     []string{gatehouse.HashKey(code["id"].(string))},
		details: map[string]any{"app_id": code["app_id"], "workspace_id": items[0]["details"].(map[string]any)["workspace_id"]},
	}, hash, member)
	if strings.Contains(string(e.do("GET", "/api/v1/audit-log", e.mgmt, nil).Body), code["id"].(string)) {
		t.Error("the audit log holds an authorization code")
	}
	// Only management keys read the log.
	resWantError(t, e.do("GET", "/api/v1/audit-log", regular, nil), http.StatusForbidden, "management keys")
}

// TestAuditLogActorOfCodeExchange: the key an application gets for its
// code (POST /auth/keys, no credential) is credited to the application's
// key exchange, not to the command line.
func TestAuditLogActorOfCodeExchange(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	code := e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example.com/cb"})
	e.tick()
	out := e.exchange(map[string]any{"code": code.ID})
	items, _ := e.auditLog(e.mgmt, "?operation=auth_code.exchange")
	if len(items) != 1 {
		t.Fatalf("exchange entries: %v", items)
	}
	want := map[string]any{"key_hash": nil, "user_id": nil, "system": "key_exchange"}
	if diff := cmp.Diff(want, items[0]["actor"]); diff != "" {
		t.Errorf("the exchange's actor (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]any{gatehouse.HashKey(out.Key)}, items[0]["resource_ids"]); diff != "" {
		t.Errorf("the exchange's key (-want +got):\n%s", diff)
	}
}

// TestAuditLogFilters checks the query parameters and their errors.
func TestAuditLogFilters(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	start := e.clock.Now()
	ids := []string{}
	for _, slug := range []string{"one", "two", "three"} {
		e.tick()
		ids = append(ids, e.createWorkspace(e.mgmt, slug))
	}
	e.tick()
	member := e.addMember(e.mgmt, "m@example.com")
	at := func(i int) string { return url.QueryEscape(wireTime(start.Add(time.Duration(i) * time.Second))) }

	for _, c := range []struct {
		query string
		want  []string // resource_ids[0] of each entry, newest first
		total int
	}{
		{"?resource_type=workspace", []string{ids[2], ids[1], ids[0]}, 3},
		{"?resource_type=member", []string{member}, 1},
		{"?operation=workspace.create", []string{ids[2], ids[1], ids[0]}, 3},
		{"?operation=member.create&resource_type=member", []string{member}, 1},
		{"?operation=workspace.update", []string{}, 0},
		{"?resource_id=" + ids[1], []string{ids[1]}, 1},
		{"?resource_id=" + url.QueryEscape("%"), []string{}, 0},
		{"?actor=" + gatehouse.HashKey(e.mgmt) + "&resource_type=workspace", []string{ids[2], ids[1], ids[0]}, 3},
		{"?actor=user_nobody", []string{}, 0},
		{"?since=" + at(2) + "&until=" + at(4), []string{ids[2], ids[1]}, 2},
		{"?since=" + url.QueryEscape(start.Add(2*time.Second).Add(time.Millisecond).Format(time.RFC3339Nano)), []string{member, ids[2]}, 2},
		{"?until=" + at(1), nil, 2}, // the organization and its management key, in one instant
		{"?resource_type=workspace&limit=1&offset=1", []string{ids[1]}, 3},
	} {
		items, total := e.auditLog(e.mgmt, c.query)
		got := []string{}
		for _, it := range items {
			got = append(got, resStrings(t, it["resource_ids"])[0])
		}
		if c.want == nil {
			c.want = got // any order within one instant
		}
		if diff := cmp.Diff(c.want, got); diff != "" || total != c.total {
			t.Errorf("%s (total %d, want %d) (-want +got):\n%s", c.query, total, c.total, diff)
		}
	}

	e.unchanged("bad parameters", func() {
		for _, c := range []struct{ query, field string }{
			{"?since=yesterday", "since"},
			{"?since=2027-03-17", "since"},
			{"?until=2027-03-17T10:30:00", "until"},
			{"?limit=0", "limit"},
			{"?limit=101", "limit"},
			{"?offset=-1", "offset"},
		} {
			er := resWantError(t, e.do("GET", "/api/v1/audit-log"+c.query, e.mgmt, nil), http.StatusBadRequest, c.field+":")
			if er.Metadata["field"] != c.field {
				t.Errorf("%s: metadata %v", c.query, er.Metadata)
			}
		}
	})
}

// TestAuditLogTenancy checks that an organization sees none of another's
// entries, whatever it asks for.
func TestAuditLogTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orgB, mgmtB := e.newOrg("Org B")
	ws := e.createWorkspace(e.mgmt, "alpha")
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "alpha key"})
	for _, q := range []string{"", "?resource_id=" + ws, "?resource_id=" + hash, "?actor=" + gatehouse.HashKey(e.mgmt),
		"?resource_type=workspace", "?resource_type=key"} {
		items, total := e.auditLog(mgmtB, q)
		want := 0
		if q == "" {
			want = 2 // its own organization and management key
		}
		if total != want || len(items) != want {
			t.Errorf("org B %q: total %d, %v", q, total, items)
		}
		for _, it := range items {
			if ids := resStrings(t, it["resource_ids"]); ids[0] != orgB.ID && ids[0] != gatehouse.HashKey(mgmtB) {
				t.Errorf("org B sees %v", it)
			}
		}
	}
	if _, total := e.auditLog(e.mgmt, ""); total != 4 {
		t.Errorf("org A total %d, want 4", total)
	}
}
