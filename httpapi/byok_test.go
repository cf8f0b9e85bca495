package httpapi_test

import (
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/gateway"
	"gatehouse/httpapi"

	"github.com/google/go-cmp/cmp"
)

// operatorKey is the providers' own key in the BYOK tests: what a request
// is sent with when no key of its workspace applies.
const operatorKey = "sk-operator-0123456789abcdef"

// Provider keys of workspaces, each long enough to be masked to its last four.
const (
	byokKeyA = "sk-proj-BYOKA-0123456789abcdef"
	byokKeyB = "sk-proj-BYOKB-fedcba9876543210"
	byokKeyC = "sk-proj-BYOKC-aaaabbbbccccdddd"
)

// newBYOKEnv is a chat environment whose providers have the operator's key.
func newBYOKEnv(t *testing.T, configure func(*fakeUpstream)) *chatEnv {
	t.Helper()
	up := newFakeUpstream(t, configure)
	catalog := testCatalog(t, up.srv.URL, 10*time.Second)
	for _, p := range catalog.Providers {
		p.APIKey = operatorKey
	}
	traces := &traceSink{}
	e := newEnv(t, withDataPlane(httpapi.DataPlane{Catalog: catalog, Upstream: gateway.NewClient(), Traces: traces}))
	ce := &chatEnv{testEnv: e, up: up, traces: traces}
	ce.hash, ce.key = e.createKey(e.mgmt, map[string]any{"name": "chat key"})
	return ce
}

// createBYOK creates a BYOK key through the API and returns its JSON.
func (e *testEnv) createBYOK(mgmt string, body map[string]any) map[string]any {
	e.t.Helper()
	return e.do("POST", "/api/v1/byok", mgmt, body).want(e.t, http.StatusCreated).json(e.t)["data"].(map[string]any)
}

// lastAuth returns the bearer token of the upstream's last request.
func (e *chatEnv) lastAuth() string {
	e.t.Helper()
	auths := e.up.authorizations()
	if len(auths) == 0 {
		e.t.Fatal("the upstream got no request")
	}
	return strings.TrimPrefix(auths[len(auths)-1], "Bearer ")
}

// chatKeyUsed sends a chat completion for model with key and returns the
// provider key the upstream received.
func (e *chatEnv) chatKeyUsed(key, model string) string {
	e.t.Helper()
	e.chat(key, chatBody(model)).want(e.t, http.StatusOK)
	return e.lastAuth()
}

// wantNoSecret fails the test if a provider key shows in the logs, the
// audit log or, in the clear, the database.
func (e *testEnv) wantNoSecret(mgmt string, secrets ...string) {
	e.t.Helper()
	entries, _ := e.auditLog(mgmt, "?limit=100")
	audit := string(e.do("GET", "/api/v1/audit-log?limit=100", mgmt, nil).want(e.t, http.StatusOK).Body)
	if len(entries) == 0 {
		e.t.Error("the audit log is empty: the check would see nothing")
	}
	for where, text := range map[string]string{"logs": e.logs.String(), "audit log": audit, "database": e.snapshot()} {
		for _, s := range secrets {
			if strings.Contains(text, s) {
				e.t.Errorf("the %s hold the provider key %q", where, s)
			}
		}
	}
}

// byokFields are the fields of a BYOK key in the official client's schema.
var byokFields = []string{"allowed_api_key_hashes", "allowed_models", "allowed_user_ids", "created_at", "declared_zdr",
	"disabled", "id", "is_byok_only", "is_fallback", "is_required", "label", "name", "provider", "sort_order", "workspace_id"}

func TestBYOKKeysAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMatrixCatalog(t))
	def := e.workspaceIDOf(e.mgmt, "default")
	team := e.createWorkspace(e.mgmt, "team")
	var bodies []string
	seen := func(r *response) *response { bodies = append(bodies, string(r.Body)); return r }

	res := seen(e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA, "name": "team key"})).
		want(t, http.StatusCreated)
	k := res.json(t)["data"].(map[string]any)
	want := map[string]any{
		"id": k["id"], "workspace_id": def, "provider": "acme", "name": "team key", "label": "********cdef", "disabled": false,
		"allowed_api_key_hashes": nil, "allowed_models": nil, "allowed_user_ids": nil, "declared_zdr": nil,
		"is_byok_only": false, "is_fallback": false, "is_required": false, "sort_order": 0.0,
		"created_at": testStart.Format("2006-01-02T15:04:05.000Z"),
	}
	if diff := cmp.Diff(want, k); diff != "" {
		t.Errorf("created key (-want +got):\n%s", diff)
	}
	fields := slices.Sorted(func(yield func(string) bool) {
		for f := range k {
			if !yield(f) {
				return
			}
		}
	})
	if diff := cmp.Diff(byokFields, fields); diff != "" {
		t.Errorf("fields, against the client's schema (-want +got):\n%s", diff)
	}
	id := k["id"].(string)
	got := seen(e.do("GET", "/api/v1/byok/"+id, e.mgmt, nil)).want(t, http.StatusOK).json(t)["data"]
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("read back (-want +got):\n%s", diff)
	}

	// Lists: the default workspace, another, one provider.
	hash, _ := e.createKey(e.mgmt, map[string]any{"name": "team member key", "workspace_id": team})
	other := e.createBYOK(e.mgmt, map[string]any{"provider": "other", "key": byokKeyB, "workspace_id": "team",
		"allowed_api_key_hashes": []string{hash}, "is_byok_only": true, "declared_zdr": false})
	if other["workspace_id"] != team || other["sort_order"] != 0.0 || other["label"] != "********3210" {
		t.Errorf("key of another workspace: %v", other)
	}
	for query, ids := range map[string][]string{
		"": {id}, "?workspace_id=default": {id}, "?workspace_id=" + def + "&provider=acme": {id},
		"?provider=other": {}, "?workspace_id=team": {other["id"].(string)}, "?workspace_id=" + team + "&provider=acme": {},
		"?limit=1&offset=1": {},
	} {
		items, total := resList(t, seen(e.do("GET", "/api/v1/byok"+query, e.mgmt, nil)).want(t, http.StatusOK))
		if diff := cmp.Diff(ids, resField(items, "id")); diff != "" || (query != "?limit=1&offset=1" && total != len(ids)) {
			t.Errorf("GET /byok%s: total %d (-want +got):\n%s", query, total, diff)
		}
	}
	e.unchanged("refused requests", func() {
		resWantError(t, e.do("GET", "/api/v1/byok?provider=OpenAI", e.mgmt, nil), http.StatusBadRequest, "provider")
		resWantError(t, e.do("GET", "/api/v1/byok?workspace_id=nope", e.mgmt, nil), http.StatusNotFound, "workspace")
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "mistral", "key": byokKeyC}), http.StatusBadRequest, "provider")
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"key": byokKeyC}), http.StatusBadRequest, "provider")
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme"}), http.StatusBadRequest, "key")
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": byokKeyC, "workspace_id": "nope"}),
			http.StatusNotFound, "workspace")
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": byokKeyC,
			"allowed_api_key_hashes": []string{hash}}), http.StatusBadRequest, "allowed_api_key_hashes")
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": byokKeyC,
			"allowed_models": []string{"other/mini"}}), http.StatusBadRequest, "allowed_models[0]")
		resWantError(t, e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"is_byok_only": true, "is_fallback": true}),
			http.StatusBadRequest, "is_byok_only")
		resWantError(t, e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"key": nil}), http.StatusBadRequest, "key")
		resWantError(t, e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"provider": "other"}), http.StatusBadRequest, "provider")
		resWantError(t, e.do("GET", "/api/v1/byok/not-a-uuid", e.mgmt, nil), http.StatusNotFound, "byok key")
	})

	// A rotation: a new label, the key never shown.
	res = seen(e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"key": byokKeyC, "name": nil, "disabled": true})).
		want(t, http.StatusOK)
	k = res.json(t)["data"].(map[string]any)
	if k["label"] != "********dddd" || k["name"] != nil || k["disabled"] != true || k["created_at"] != want["created_at"] {
		t.Errorf("after the rotation: %v", k)
	}
	seen(e.do("DELETE", "/api/v1/byok/"+id, e.mgmt, nil)).want(t, http.StatusOK)
	resWantError(t, seen(e.do("GET", "/api/v1/byok/"+id, e.mgmt, nil)), http.StatusNotFound, "byok key")
	resWantError(t, seen(e.do("DELETE", "/api/v1/byok/"+id, e.mgmt, nil)), http.StatusNotFound, "byok key")
	resWantError(t, seen(e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{})), http.StatusNotFound, "byok key")

	entries, _ := e.auditLog(e.mgmt, "?resource_type=byok_key")
	var ops []string
	for _, en := range entries {
		ops = append(ops, en["operation"].(string))
	}
	if diff := cmp.Diff([]string{"byok_key.delete", "byok_key.update", "byok_key.create", "byok_key.create"}, ops); diff != "" {
		t.Errorf("audit entries (-want +got):\n%s", diff)
	}
	for _, b := range bodies {
		for _, s := range []string{byokKeyA, byokKeyB, byokKeyC} {
			if strings.Contains(b, s) {
				t.Errorf("a response holds the provider key %q: %s", s, b)
			}
		}
	}
	e.wantNoSecret(e.mgmt, byokKeyA, byokKeyB, byokKeyC)
}

// TestBYOKGateway: a workspace's key is sent instead of the operator's, and
// what the request costs is counted as BYOK usage; a disabled or deleted
// key is not used.
func TestBYOKGateway(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, nil)
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != operatorKey {
		t.Fatalf("without a BYOK key the upstream got %q, want the operator's key", got)
	}
	cost := chatCost(11, 7)
	if m := e.money(e.hash); m.Usage != cost || m.BYOKUsage != 0 {
		t.Fatalf("usage %s, byok %s; want %s, 0", m.Usage, m.BYOKUsage, cost)
	}
	id := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})["id"].(string)
	res := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK)
	if got := e.lastAuth(); got != byokKeyA {
		t.Fatalf("with the workspace's key the upstream got %q", got)
	}
	if strings.Contains(string(res.Body), byokKeyA) {
		t.Errorf("the answer holds the provider key: %s", res.Body)
	}
	if m := e.money(e.hash); m.Usage != cost || m.BYOKUsage != cost {
		t.Errorf("usage %s, byok %s; want %s, %s: the BYOK request counts as byok_usage only", m.Usage, m.BYOKUsage, cost, cost)
	}
	var gen struct {
		Data map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+res.json(t)["id"].(string), e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	if gen.Data["is_byok"] != true {
		t.Errorf("generation is_byok = %v", gen.Data["is_byok"])
	}
	// A stream goes with it too.
	e.chat(e.key, chatBody("acme/chat", "stream", true)).want(t, http.StatusOK)
	if got := e.lastAuth(); got != byokKeyA {
		t.Errorf("a stream went with %q", got)
	}
	// Another provider's requests keep the operator's key.
	if got := e.chatKeyUsed(e.key, "other/mini"); got != operatorKey {
		t.Errorf("a request to another provider went with %q", got)
	}

	e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"disabled": true}).want(t, http.StatusOK)
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != operatorKey {
		t.Errorf("a disabled BYOK key was used: %q", got)
	}
	e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"disabled": false, "key": byokKeyB}).want(t, http.StatusOK)
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != byokKeyB {
		t.Errorf("after re-enabling and rotating the upstream got %q", got)
	}
	e.do("DELETE", "/api/v1/byok/"+id, e.mgmt, nil).want(t, http.StatusOK)
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != operatorKey {
		t.Errorf("a deleted BYOK key was used: %q", got)
	}
	e.wantNoSecret(e.mgmt, byokKeyA, byokKeyB)
}

// TestBYOKIncludeInLimit: a BYOK request counts against the key's limit
// only when include_byok_in_limit says so.
func TestBYOKIncludeInLimit(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, nil)
	// acme/exact reserves $0.10 (100 completion tokens at $1000 per million).
	excluded, excludedKey := e.createKey(e.mgmt, map[string]any{"name": "excluded", "limit": 0.05})
	included, includedKey := e.createKey(e.mgmt, map[string]any{"name": "included", "limit": 0.05, "include_byok_in_limit": true})
	e.chat(excludedKey, chatBody("acme/exact")).want(t, http.StatusPaymentRequired)
	e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})
	if got := e.chatKeyUsed(excludedKey, "acme/exact"); got != byokKeyA {
		t.Fatalf("upstream got %q", got)
	}
	cost := gatehouse.USD(1000) * 7 / 1_000_000
	m := e.money(excluded)
	if m.Usage != 0 || m.BYOKUsage != cost || m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1)/20 {
		t.Errorf("excluded key: usage %s, byok %s, remaining %v; want 0, %s, 0.05", m.Usage, m.BYOKUsage, m.LimitRemaining, cost)
	}
	res := e.chat(includedKey, chatBody("acme/exact")).want(t, http.StatusPaymentRequired)
	if strings.Contains(string(res.Body), byokKeyA) {
		t.Errorf("the refusal holds the provider key: %s", res.Body)
	}
	e.wantNothingCharged(included)
	// Within its limit, the included key's BYOK spend lowers what remains.
	e.do("PATCH", "/api/v1/keys/"+included, e.mgmt, map[string]any{"limit": 1}).want(t, http.StatusOK)
	e.chatKeyUsed(includedKey, "acme/exact")
	if m := e.money(included); m.BYOKUsage != cost || m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1)-cost {
		t.Errorf("included key: byok %s, remaining %v; want %s, %s", m.BYOKUsage, m.LimitRemaining, cost, gatehouse.USD(1)-cost)
	}
}

// TestBYOKTenancy: a workspace's key serves its own workspace only: never
// another workspace's requests, nor another organization's, nor an API key,
// model or member its allowlists leave out.
func TestBYOKTenancy(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, nil)
	e.createWorkspace(e.mgmt, "team")
	_, teamKey := e.createKey(e.mgmt, map[string]any{"name": "team", "workspace_id": "team"})
	_, mgmtB := e.newOrg("Org B")
	_, keyB := e.createKey(mgmtB, map[string]any{"name": "b"})
	idA := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})["id"].(string)

	for name, key := range map[string]string{"another workspace's key": teamKey, "another organization's key": keyB} {
		if got := e.chatKeyUsed(key, "acme/chat"); got != operatorKey {
			t.Errorf("%s was sent with %q", name, got)
		}
	}
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != byokKeyA {
		t.Errorf("the workspace's own key: %q", got)
	}
	// Organization B's keys: its own, and A's are untouchable.
	idB := e.createBYOK(mgmtB, map[string]any{"provider": "acme", "key": byokKeyB})["id"].(string)
	if got := e.chatKeyUsed(keyB, "acme/chat"); got != byokKeyB {
		t.Errorf("B's key went with %q", got)
	}
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != byokKeyA {
		t.Errorf("A's key went with %q", got)
	}
	memberB := e.addMember(mgmtB, "bee@example.com")
	e.unchanged("B on A's key", func() {
		for _, r := range []*response{
			e.do("GET", "/api/v1/byok/"+idA, mgmtB, nil),
			e.do("PATCH", "/api/v1/byok/"+idA, mgmtB, map[string]any{"key": byokKeyC}),
			e.do("PATCH", "/api/v1/byok/"+idA, mgmtB, map[string]any{"disabled": true}),
			e.do("DELETE", "/api/v1/byok/"+idA, mgmtB, nil),
			e.do("GET", "/api/v1/byok?workspace_id="+e.workspaceIDOf(e.mgmt, "default"), mgmtB, nil),
			e.do("GET", "/api/v1/byok?workspace_id=team", mgmtB, nil),
			e.do("POST", "/api/v1/byok", mgmtB, map[string]any{"provider": "acme", "key": byokKeyC, "workspace_id": "team"}),
		} {
			if r.Status != http.StatusNotFound {
				t.Errorf("org B: status %d, want 404: %s", r.Status, r.Body)
			}
		}
		items, _ := resList(t, e.do("GET", "/api/v1/byok", mgmtB, nil).want(t, http.StatusOK))
		if diff := cmp.Diff([]string{idB}, resField(items, "id")); diff != "" {
			t.Errorf("B's list (-want +got):\n%s", diff)
		}
		// A key can be allowlisted only by a key and member of its own.
		hashB := gatehouse.HashKey(keyB)
		resWantError(t, e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": byokKeyC,
			"allowed_api_key_hashes": []string{hashB}}), http.StatusBadRequest, "allowed_api_key_hashes")
		resWantError(t, e.do("PATCH", "/api/v1/byok/"+idA, e.mgmt, map[string]any{"allowed_user_ids": []string{memberB}}),
			http.StatusBadRequest, "allowed_user_ids")
	})

	// The allowlists.
	member := e.addMember(e.mgmt, "ada@example.com")
	memberHash, memberKey := e.createKey(e.mgmt, map[string]any{"name": "ada's", "creator_user_id": member})
	e.do("PATCH", "/api/v1/byok/"+idA, e.mgmt, map[string]any{"allowed_api_key_hashes": []string{memberHash}}).want(t, http.StatusOK)
	for key, want := range map[string]string{e.key: operatorKey, memberKey: byokKeyA} {
		if got := e.chatKeyUsed(key, "acme/chat"); got != want {
			t.Errorf("allowed_api_key_hashes: a key went with %q, want %q", got, want)
		}
	}
	e.do("PATCH", "/api/v1/byok/"+idA, e.mgmt, map[string]any{"allowed_api_key_hashes": nil, "allowed_user_ids": []string{member}}).
		want(t, http.StatusOK)
	for key, want := range map[string]string{e.key: operatorKey, memberKey: byokKeyA} {
		if got := e.chatKeyUsed(key, "acme/chat"); got != want {
			t.Errorf("allowed_user_ids: a key went with %q, want %q", got, want)
		}
	}
	e.do("PATCH", "/api/v1/byok/"+idA, e.mgmt, map[string]any{"allowed_user_ids": nil, "allowed_models": []string{"acme/exact"}}).
		want(t, http.StatusOK)
	for model, want := range map[string]string{"acme/chat": operatorKey, "acme/exact": byokKeyA} {
		if got := e.chatKeyUsed(e.key, model); got != want {
			t.Errorf("allowed_models: %s went with %q, want %q", model, got, want)
		}
	}
	e.wantNoSecret(e.mgmt, byokKeyA, byokKeyB, byokKeyC)
}

// TestBYOKReservedToWorkspaceKeys: is_byok_only and is_required refuse a
// request that none of the workspace's keys may serve, before anything is
// sent or reserved.
func TestBYOKReservedToWorkspaceKeys(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, nil)
	otherHash, otherKey := e.createKey(e.mgmt, map[string]any{"name": "other"})
	id := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA, "is_byok_only": true,
		"allowed_api_key_hashes": []string{otherHash}})["id"].(string)
	calls := len(e.up.requests())
	res := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusForbidden)
	er := res.apiError(t)
	if er.Metadata["rule"] != "is_byok_only" || er.Metadata["byok_key_id"] != id || er.Metadata["provider"] != "acme" ||
		!strings.Contains(er.Message, "BYOK key") || strings.Contains(string(res.Body), byokKeyA) {
		t.Errorf("refusal: %s", res.Body)
	}
	if len(e.up.requests()) != calls {
		t.Error("a refused request reached the upstream")
	}
	e.wantNothingCharged(e.hash)
	if got := e.chatKeyUsed(otherKey, "acme/chat"); got != byokKeyA {
		t.Errorf("the allowlisted key went with %q", got)
	}
	if got := e.chatKeyUsed(e.key, "other/mini"); got != operatorKey {
		t.Errorf("another provider: %q", got)
	}

	// is_required: for the models of the key only.
	e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"is_byok_only": false, "is_required": true,
		"allowed_models": []string{"acme/exact"}}).want(t, http.StatusOK)
	if got := e.chatKeyUsed(e.key, "acme/chat"); got != operatorKey {
		t.Errorf("a model the key does not cover went with %q", got)
	}
	res = e.chat(e.key, chatBody("acme/exact")).want(t, http.StatusForbidden)
	if er := res.apiError(t); er.Metadata["rule"] != "is_required" {
		t.Errorf("is_required refusal: %s", res.Body)
	}
	// A disabled key reserves nothing.
	e.do("PATCH", "/api/v1/byok/"+id, e.mgmt, map[string]any{"disabled": true}).want(t, http.StatusOK)
	if got := e.chatKeyUsed(e.key, "acme/exact"); got != operatorKey {
		t.Errorf("with the key disabled: %q", got)
	}
}

// TestBYOKFallbackAndRefusal: when the provider refuses a key (401, 402,
// 403, 429), the workspace's next key is tried, fallbacks last; when none
// is left the refusal reaches the client with the key redacted, and nothing
// is charged.
func TestBYOKFallbackAndRefusal(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, func(u *fakeUpstream) {
		u.refuse = map[string]int{byokKeyA: http.StatusUnauthorized, byokKeyC: http.StatusTooManyRequests}
	})
	fallback := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyB, "is_fallback": true})["id"].(string)
	refused := e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})["id"].(string)
	before := len(e.up.authorizations())
	res := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK)
	if diff := cmp.Diff([]string{"Bearer " + byokKeyA, "Bearer " + byokKeyB}, e.up.authorizations()[before:]); diff != "" {
		t.Errorf("keys tried (-want +got):\n%s", diff)
	}
	if m := e.money(e.hash); m.BYOKUsage != chatCost(11, 7) || m.Usage != 0 {
		t.Errorf("usage %s, byok %s: one completion, as BYOK", m.Usage, m.BYOKUsage)
	}
	if !strings.Contains(e.logs.String(), refused) {
		t.Errorf("the log does not name the refused key %s", refused)
	}
	if strings.Contains(string(res.Body), byokKeyA) || strings.Contains(string(res.Body), byokKeyB) {
		t.Errorf("the answer holds a provider key: %s", res.Body)
	}

	// Rate limited: the next one.
	e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyC})
	e.do("DELETE", "/api/v1/byok/"+refused, e.mgmt, nil).want(t, http.StatusOK)
	before = len(e.up.authorizations())
	e.chat(e.key, chatBody("acme/chat", "stream", true)).want(t, http.StatusOK)
	if diff := cmp.Diff([]string{"Bearer " + byokKeyC, "Bearer " + byokKeyB}, e.up.authorizations()[before:]); diff != "" {
		t.Errorf("keys tried (-want +got):\n%s", diff)
	}

	// No key left: the provider's refusal, its status without its text
	// (which may quote the workspace's key in any form), and nothing
	// charged.
	e.do("DELETE", "/api/v1/byok/"+fallback, e.mgmt, nil).want(t, http.StatusOK)
	hash, key := e.createKey(e.mgmt, map[string]any{"name": "refused"})
	res = e.chat(key, chatBody("acme/chat")).want(t, http.StatusTooManyRequests)
	if got := res.apiError(t); got.Message != "the provider acme answered 429; its message is not shown, as it may quote the key it was sent" || got.Metadata["raw"] != nil {
		t.Errorf("the provider's refusal: %s", res.Body)
	}
	e.wantNothingCharged(hash)
	e.wantNoSecret(e.mgmt, byokKeyA, byokKeyB, byokKeyC)
}

// TestBYOKOperatorKeyRedacted: a provider's error answer that quotes the
// operator's own key does not give it away either.
func TestBYOKOperatorKeyRedacted(t *testing.T) {
	t.Parallel()
	e := newBYOKEnv(t, func(u *fakeUpstream) { u.refuse = map[string]int{operatorKey: http.StatusUnauthorized} })
	res := e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusUnauthorized)
	if body := string(res.Body); strings.Contains(body, operatorKey) || !strings.Contains(body, "[redacted]") {
		t.Errorf("answer: %s", body)
	}
	if strings.Contains(e.logs.String(), operatorKey) {
		t.Error("the log holds the operator's key")
	}
	// With the workspace's key the request goes through, and the
	// operator's key is not sent at all.
	e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})
	before := len(e.up.authorizations())
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK)
	if diff := cmp.Diff([]string{"Bearer " + byokKeyA}, e.up.authorizations()[before:]); diff != "" {
		t.Errorf("keys tried (-want +got):\n%s", diff)
	}
}
