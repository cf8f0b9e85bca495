package httpapi_test

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sort"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/httpapi"
)

// Who may call an operation.
const (
	opsEndpoint = "ops"    // no credential, not under /api/v1 rules
	publicOp    = "public" // no credential; one sent is ignored
	openRead    = "open"   // no credential; one sent is ignored; the same answer for anyone
	anyKey      = "any"    // any valid key
	mgmtOnly    = "mgmt"   // management keys only
)

// matrixIDs names the resources the operations of the matrix act on.
type matrixIDs struct {
	keyHash, workspace, guardrail, destination, member, code, preset, byok string
	generation                                                             string // a generation of keyHash, with content
	invitation                                                             string // a pending invitation's id
	ssoProvider, mapping                                                   string // an identity provider's id, a group mapping's
}

// matrixOp is one operation of the router with real ids filled in.
type matrixOp struct {
	pattern string // "METHOD /path/{param}", exactly as registered in routes.go
	path    string // the pattern's path with ids filled in
	body    any
	access  string
	byID    bool // names one resource of the organization in its path
	success int  // status for the organization's own management key
	late    int  // order of the destructive operations in the success pass
}

// matrixOps lists every route of routes.go. TestOpenAPIServedCoversRoutes
// checks that this list, routes.go and the OpenAPI document agree.
func matrixOps(ids matrixIDs) []matrixOp {
	op := func(pattern, access string, success int, id string, body any) matrixOp {
		path := strings.SplitN(pattern, " ", 2)[1]
		byID := false
		for i := strings.Index(path, "{"); i >= 0; i = strings.Index(path, "{") {
			j := strings.Index(path, "}")
			value := id
			switch path[i : j+1] {
			case "{version}":
				value = "1" // of the preset named before it
			case "{interval}":
				value = "monthly" // a workspace budget's
			}
			path, byID = path[:i]+value+path[j+1:], true
		}
		return matrixOp{pattern: pattern, path: path, body: body, access: access, byID: byID, success: success}
	}
	late := func(o matrixOp, n int) matrixOp { o.late = n; return o }
	// The generation routes name their generation in ?id= or in the body.
	named := func(o matrixOp, query string) matrixOp { o.path += query; o.byID = true; return o }
	generation := "?id=" + url.QueryEscape(ids.generation)
	// Saving a preset names it by slug in the caller's own workspace:
	// another organization's key saves a preset of its own.
	saves := func(o matrixOp) matrixOp { o.byID = false; return o }
	ok, created := http.StatusOK, http.StatusCreated
	return []matrixOp{
		op("GET /healthz", opsEndpoint, ok, "", nil),
		op("GET /readyz", opsEndpoint, ok, "", nil),
		op("GET /metrics", opsEndpoint, ok, "", nil),
		op("GET /api/v1/openapi.json", opsEndpoint, ok, "", nil),

		op("GET /api/v1/key", anyKey, ok, "", nil),
		op("GET /api/v1/keys", mgmtOnly, ok, "", nil),
		op("POST /api/v1/keys", mgmtOnly, created, "", map[string]any{"name": "matrix key"}),
		op("GET /api/v1/keys/{hash}", mgmtOnly, ok, ids.keyHash, nil),
		op("PATCH /api/v1/keys/{hash}", mgmtOnly, ok, ids.keyHash, map[string]any{"name": "renamed", "limit": 5}),
		late(op("DELETE /api/v1/keys/{hash}", mgmtOnly, ok, ids.keyHash, nil), 3),

		op("POST /api/v1/auth/keys/code", anyKey, ok, "", map[string]any{"callback_url": "https://app.example.com/cb"}),
		op("POST /api/v1/auth/keys", publicOp, ok, "", map[string]any{"code": ids.code}),

		op("GET /api/v1/workspaces", mgmtOnly, ok, "", nil),
		op("POST /api/v1/workspaces", mgmtOnly, created, "", map[string]any{"name": "Matrix", "slug": "matrix"}),
		op("GET /api/v1/workspaces/{id}", mgmtOnly, ok, ids.workspace, nil),
		op("PATCH /api/v1/workspaces/{id}", mgmtOnly, ok, ids.workspace, map[string]any{"name": "Renamed"}),
		late(op("DELETE /api/v1/workspaces/{id}", mgmtOnly, ok, ids.workspace, nil), 4),
		op("GET /api/v1/workspaces/{id}/members", mgmtOnly, ok, ids.workspace, nil),
		op("POST /api/v1/workspaces/{id}/members/add", mgmtOnly, ok, ids.workspace, map[string]any{"user_ids": []string{ids.member}}),
		op("POST /api/v1/workspaces/{id}/members/remove", mgmtOnly, ok, ids.workspace, map[string]any{"user_ids": []string{ids.member}}),
		op("PUT /api/v1/workspaces/{id}/budgets/{interval}", mgmtOnly, ok, ids.workspace, map[string]any{"limit_usd": 5}),
		op("GET /api/v1/workspaces/{id}/budgets/{interval}", mgmtOnly, ok, ids.workspace, nil),
		op("GET /api/v1/workspaces/{id}/budgets", mgmtOnly, ok, ids.workspace, nil),
		op("DELETE /api/v1/workspaces/{id}/budgets/{interval}", mgmtOnly, ok, ids.workspace, nil),

		op("GET /api/v1/credits", mgmtOnly, ok, "", nil),
		op("POST /api/v1/credits/grants", mgmtOnly, created, "", map[string]any{"amount": 10}),

		op("GET /api/v1/guardrails", mgmtOnly, ok, "", nil),
		op("POST /api/v1/guardrails", mgmtOnly, created, "", map[string]any{"name": "matrix guardrail"}),
		op("GET /api/v1/guardrails/{id}", mgmtOnly, ok, ids.guardrail, nil),
		op("PATCH /api/v1/guardrails/{id}", mgmtOnly, ok, ids.guardrail, map[string]any{"description": "changed"}),
		late(op("DELETE /api/v1/guardrails/{id}", mgmtOnly, ok, ids.guardrail, nil), 2),
		op("GET /api/v1/guardrails/{id}/assignments/keys", mgmtOnly, ok, ids.guardrail, nil),
		op("POST /api/v1/guardrails/{id}/assignments/keys", mgmtOnly, ok, ids.guardrail, map[string]any{"key_hashes": []string{ids.keyHash}}),
		op("POST /api/v1/guardrails/{id}/assignments/keys/remove", mgmtOnly, ok, ids.guardrail, map[string]any{"key_hashes": []string{ids.keyHash}}),
		op("GET /api/v1/guardrails/{id}/assignments/members", mgmtOnly, ok, ids.guardrail, nil),
		op("POST /api/v1/guardrails/{id}/assignments/members", mgmtOnly, ok, ids.guardrail, map[string]any{"member_user_ids": []string{ids.member}}),
		op("POST /api/v1/guardrails/{id}/assignments/members/remove", mgmtOnly, ok, ids.guardrail, map[string]any{"member_user_ids": []string{ids.member}}),
		op("GET /api/v1/guardrails/assignments/keys", mgmtOnly, ok, "", nil),
		op("GET /api/v1/guardrails/assignments/members", mgmtOnly, ok, "", nil),

		op("GET /api/v1/observability/destinations", mgmtOnly, ok, "", nil),
		op("POST /api/v1/observability/destinations", mgmtOnly, created, "", map[string]any{
			"name": "matrix hook", "type": "webhook", "config": map[string]any{"url": "https://hooks.example.com/in"}}),
		op("GET /api/v1/observability/destinations/{id}", mgmtOnly, ok, ids.destination, nil),
		op("PATCH /api/v1/observability/destinations/{id}", mgmtOnly, ok, ids.destination, map[string]any{"enabled": false}),
		late(op("DELETE /api/v1/observability/destinations/{id}", mgmtOnly, ok, ids.destination, nil), 1),
		op("POST /api/v1/observability/destinations/{id}/test", mgmtOnly, ok, ids.destination, nil),

		op("GET /api/v1/byok", mgmtOnly, ok, "", nil),
		op("POST /api/v1/byok", mgmtOnly, created, "", map[string]any{"provider": "acme", "key": "sk-matrix-0123456789abcdef"}),
		op("GET /api/v1/byok/{id}", mgmtOnly, ok, ids.byok, nil),
		op("PATCH /api/v1/byok/{id}", mgmtOnly, ok, ids.byok, map[string]any{"disabled": true}),
		late(op("DELETE /api/v1/byok/{id}", mgmtOnly, ok, ids.byok, nil), 1),

		op("GET /api/v1/organization/members", mgmtOnly, ok, "", nil),
		op("POST /api/v1/organization/members", mgmtOnly, created, "", map[string]any{"email": "matrix@example.com"}),
		op("PATCH /api/v1/organization/members/{user_id}", mgmtOnly, ok, ids.member, map[string]any{"role": "org:admin"}),
		late(op("DELETE /api/v1/organization/members/{user_id}", mgmtOnly, ok, ids.member, nil), 5),
		op("POST /api/v1/organization/members/{user_id}/password-reset", mgmtOnly, created, ids.member, nil),
		op("GET /api/v1/organization/invitations", mgmtOnly, ok, "", nil),
		op("POST /api/v1/organization/invitations", mgmtOnly, created, "", map[string]any{"email": "invitee@example.com"}),
		late(op("DELETE /api/v1/organization/invitations/{id}", mgmtOnly, ok, ids.invitation, nil), 1),

		op("GET /api/v1/sso/providers", mgmtOnly, ok, "", nil),
		op("POST /api/v1/sso/providers", mgmtOnly, created, "", map[string]any{
			"name": "Matrix IdP", "issuer_url": "https://idp.example.com", "client_id": "matrix-client"}),
		op("GET /api/v1/sso/providers/{id}", mgmtOnly, ok, ids.ssoProvider, nil),
		op("PATCH /api/v1/sso/providers/{id}", mgmtOnly, ok, ids.ssoProvider, map[string]any{"name": "Renamed IdP"}),
		late(op("DELETE /api/v1/sso/providers/{id}", mgmtOnly, ok, ids.ssoProvider, nil), 1),
		op("GET /api/v1/sso/settings", mgmtOnly, ok, "", nil),
		op("PATCH /api/v1/sso/settings", mgmtOnly, ok, "", map[string]any{"password_sign_in": true}),
		op("GET /api/v1/sso/group-mappings", mgmtOnly, ok, "", nil),
		op("POST /api/v1/sso/group-mappings", mgmtOnly, created, "", map[string]any{"group": "matrix-created", "role": "org:member"}),
		op("GET /api/v1/sso/group-mappings/{id}", mgmtOnly, ok, ids.mapping, nil),
		op("PATCH /api/v1/sso/group-mappings/{id}", mgmtOnly, ok, ids.mapping, map[string]any{"role": "org:admin"}),
		late(op("DELETE /api/v1/sso/group-mappings/{id}", mgmtOnly, ok, ids.mapping, nil), 1),
		op("POST /api/v1/scim/token", mgmtOnly, created, "", nil),
		// The organization's own token: another organization, which has
		// none, gets 404.
		named(op("GET /api/v1/scim/token", mgmtOnly, ok, "", nil), ""),
		late(named(op("DELETE /api/v1/scim/token", mgmtOnly, ok, "", nil), ""), 1),
		op("GET /api/v1/scim/groups", mgmtOnly, ok, "", nil),

		op("GET /api/v1/audit-log", mgmtOnly, ok, "", nil),

		op("GET /api/v1/presets", mgmtOnly, ok, "", nil),
		op("GET /api/v1/presets/{slug}", mgmtOnly, ok, ids.preset, nil),
		op("GET /api/v1/presets/{slug}/versions", mgmtOnly, ok, ids.preset, nil),
		op("GET /api/v1/presets/{slug}/versions/{version}", mgmtOnly, ok, ids.preset, nil),
		saves(op("POST /api/v1/presets/{slug}/chat/completions", mgmtOnly, ok, ids.preset, map[string]any{
			"messages": []any{map[string]any{"role": "system", "content": "Be brief."}}, "temperature": 0.5})),
		saves(op("POST /api/v1/presets/{slug}/messages", mgmtOnly, ok, ids.preset, map[string]any{
			"system": "Be brief.", "max_tokens": 100})),
		saves(op("POST /api/v1/presets/{slug}/responses", mgmtOnly, ok, ids.preset, map[string]any{
			"instructions": "Be brief.", "max_output_tokens": 100})),
		op("GET /api/v1/activity", mgmtOnly, ok, "", nil),
		op("GET /api/v1/analytics/meta", mgmtOnly, ok, "", nil),
		op("POST /api/v1/analytics/query", mgmtOnly, ok, "", map[string]any{"metrics": []string{"request_count"}}),

		// Regular keys only: a management key is refused before anything is read.
		op("POST /api/v1/chat/completions", anyKey, http.StatusForbidden, "", map[string]any{
			"model": "acme/chat", "messages": []map[string]any{{"role": "user", "content": "hi"}}}),
		op("POST /api/v1/responses", anyKey, http.StatusForbidden, "", map[string]any{
			"model": "acme/chat", "input": "hi"}),
		op("POST /api/v1/messages", anyKey, http.StatusForbidden, "", map[string]any{
			"model": "acme/chat", "max_tokens": 10, "messages": []map[string]any{{"role": "user", "content": "hi"}}}),
		op("POST /api/v1/embeddings", anyKey, http.StatusForbidden, "", map[string]any{
			"model": "acme/embed", "input": "hi"}),
		op("GET /api/v1/embeddings/models", openRead, ok, "", nil),
		op("GET /api/v1/models", openRead, ok, "", nil),
		op("GET /api/v1/models/count", openRead, ok, "", nil),
		// A management key cannot call models, so it has no models of its own.
		op("GET /api/v1/models/user", anyKey, http.StatusForbidden, "", nil),
		catalogOp("GET /api/v1/model/{author}/{slug}"),
		catalogOp("GET /api/v1/models/{author}/{slug}/endpoints"),
		op("GET /api/v1/endpoints/zdr", openRead, ok, "", nil),
		op("GET /api/v1/providers", openRead, ok, "", nil),
		// Without ?id= a valid key gets 400 (id is required); generations by
		// id are covered in completions_test.go.
		op("GET /api/v1/generation", anyKey, http.StatusBadRequest, "", nil),
		named(op("GET /api/v1/generation/content", anyKey, ok, "", nil), generation),
		named(op("POST /api/v1/generation/feedback", mgmtOnly, ok, "", map[string]any{
			"generation_id": ids.generation, "category": "other"}), ""),
		named(op("GET /api/v1/generation/feedback", mgmtOnly, ok, "", nil), generation),
	}
}

// matrixModel is the model of matrixCatalog that the matrix's catalog
// operations name.
const matrixAuthor, matrixSlug = "acme", "chat"

// catalogOp is a read of one model of the catalog: open to anyone, and
// the same for every organization.
func catalogOp(pattern string) matrixOp {
	path := strings.NewReplacer("{author}", matrixAuthor, "{slug}", matrixSlug).Replace(strings.SplitN(pattern, " ", 2)[1])
	return matrixOp{pattern: pattern, path: path, access: openRead, success: http.StatusOK}
}

// withMatrixCatalog serves the models of the tests (testCatalog), without
// an upstream: the matrices never call one.
func withMatrixCatalog(t testing.TB) envOption {
	return withDataPlane(httpapi.DataPlane{Catalog: testCatalog(t, "http://127.0.0.1:9", time.Second)})
}

// doAuthorization sends a request with the raw Authorization header value
// ("" for none).
func (e *testEnv) doAuthorization(method, path, authorization string, body any) *response {
	e.t.Helper()
	var rd io.Reader
	if body != nil {
		data, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req := httptest.NewRequest(method, path, rd)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return e.send(req)
}

// matrixFixture is organization A with one resource of every kind, and the
// credentials the matrix tries.
type matrixFixture struct {
	ids                          matrixIDs
	regular                      string // a valid regular key of A
	disabled, expiring, deleted  string // rejected regular keys of A (expiring once the clock moves)
	defaultWorkspace, expiryTime string
}

func (e *testEnv) matrixFixture() *matrixFixture {
	e.t.Helper()
	f := &matrixFixture{}
	f.ids.member = e.addMember(e.mgmt, "member@example.com")
	f.ids.workspace = e.createWorkspace(e.mgmt, "ws-a")
	f.defaultWorkspace = e.workspaceIDOf(e.mgmt, "default")
	f.ids.keyHash, f.regular = e.createKey(e.mgmt, map[string]any{"name": "regular", "creator_user_id": f.ids.member})
	var g, d, b struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/guardrails", e.mgmt, map[string]any{"name": "g"}).want(e.t, http.StatusCreated).decode(e.t, &g)
	f.ids.guardrail = g.Data.ID
	e.do("POST", "/api/v1/observability/destinations", e.mgmt, map[string]any{
		"name": "hook", "type": "webhook", "config": map[string]any{"url": "https://hooks.example.com/a"},
	}).want(e.t, http.StatusCreated).decode(e.t, &d)
	f.ids.destination = d.Data.ID
	e.do("POST", "/api/v1/byok", e.mgmt, map[string]any{"provider": "acme", "key": "sk-acme-fixture-0123456789"}).
		want(e.t, http.StatusCreated).decode(e.t, &b)
	f.ids.byok = b.Data.ID
	f.ids.code = "ghc_not-a-code"
	var inv struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/organization/invitations", e.mgmt, map[string]any{"email": "invited@example.com"}).
		want(e.t, http.StatusCreated).decode(e.t, &inv)
	f.ids.invitation = inv.Data.ID
	var sp, gm struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/sso/providers", e.mgmt, map[string]any{"name": "Okta", "issuer_url": "https://acme.okta.example",
		"client_id": "gatehouse", "client_secret": "a client secret of some length"}).want(e.t, http.StatusCreated).decode(e.t, &sp)
	f.ids.ssoProvider = sp.Data.ID
	e.do("POST", "/api/v1/sso/group-mappings", e.mgmt, map[string]any{"group": "matrix-admins", "role": "org:admin",
		"workspace_ids": []string{f.ids.workspace}}).want(e.t, http.StatusCreated).decode(e.t, &gm)
	f.ids.mapping = gm.Data.ID
	e.do("PATCH", "/api/v1/workspaces/default", e.mgmt, map[string]any{"is_observability_io_logging_enabled": true}).
		want(e.t, http.StatusOK)
	f.ids.generation = e.storeGeneration(f.ids.keyHash)
	f.ids.preset = "matrix-preset"
	e.do("POST", "/api/v1/presets/matrix-preset/chat/completions", e.mgmt, map[string]any{
		"messages": []any{map[string]any{"role": "system", "content": "You are the matrix."}}, "top_p": 0.9}).
		want(e.t, http.StatusOK)

	var hash string
	hash, f.disabled = e.createKey(e.mgmt, map[string]any{"name": "disabled"})
	e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"disabled": true}).want(e.t, http.StatusOK)
	expiry := testStart.Add(time.Hour)
	f.expiryTime = expiry.Format(time.RFC3339)
	_, f.expiring = e.createKey(e.mgmt, map[string]any{"name": "expiring", "expires_at": f.expiryTime})
	hash, f.deleted = e.createKey(e.mgmt, map[string]any{"name": "deleted"})
	e.do("DELETE", "/api/v1/keys/"+hash, e.mgmt, nil).want(e.t, http.StatusOK)
	e.clock.Set(expiry) // the expiring key is now expired
	return f
}

// deletedOrganizationKeys makes an organization with a management key and a
// regular key, then deletes the organization in the database (the API has
// no operation for it), and returns the two keys. The keys have never
// authenticated, so the key cache cannot hold them; the deletion cascades
// to them.
func (e *testEnv) deletedOrganizationKeys() (mgmt, regular string) {
	e.t.Helper()
	org, mgmt := e.newOrg("Org Gone")
	_, regular, err := e.db.CreateKey(context.Background(), org.ID, gatehouse.KeyCreate{Name: "gone"})
	if err != nil {
		e.t.Fatal(err)
	}
	e.exec(`DELETE FROM organizations WHERE id = $1`, org.ID)
	var keys int
	if err := e.readDB().QueryRow(`SELECT COUNT(*) FROM api_keys WHERE organization_id = $1`, org.ID).Scan(&keys); err != nil {
		e.t.Fatal(err)
	}
	if keys != 0 {
		e.t.Fatalf("deleting the organization left %d of its keys", keys)
	}
	return mgmt, regular
}

// TestAuthenticationMatrix tries every route with every kind of rejected
// credential, a regular key, and a management key of another organization.
func TestAuthenticationMatrix(t *testing.T) {
	t.Parallel()
	e := newEnv(t, withMatrixCatalog(t), withPublisher(""))
	f := e.matrixFixture()
	ops := matrixOps(f.ids)
	goneMgmt, goneRegular := e.deletedOrganizationKeys()

	t.Run("rejected credentials", func(t *testing.T) {
		// One snapshot around the whole pass: any call that wrote shows up.
		e.unchanged("rejected credentials", func() {
			for _, c := range []struct{ name, authorization string }{
				{"no header", ""},
				{"wrong scheme", "Basic x"},
				{"empty token", "Bearer "},
				{"unknown key", "Bearer " + gatehouse.NewKeySecret(false)},
				{"disabled key", "Bearer " + f.disabled},
				{"expired key", "Bearer " + f.expiring},
				{"deleted key", "Bearer " + f.deleted},
				{"management key of a deleted organization", "Bearer " + goneMgmt},
				{"regular key of a deleted organization", "Bearer " + goneRegular},
				{"unknown management key", "Bearer " + gatehouse.NewKeySecret(true)},
				{"lower-case scheme, unknown key", "bearer " + gatehouse.NewKeySecret(false)},
				{"no space after the scheme", "Bearer" + f.regular},
				{"two tokens", "Bearer " + f.regular + " " + f.regular},
				{"token too long", "Bearer " + strings.Repeat("k", 600)},
				{"scheme only", "Bearer"},
			} {
				for _, o := range ops {
					method := strings.Fields(o.pattern)[0]
					res := e.doAuthorization(method, o.path, c.authorization, o.body)
					switch o.access {
					case opsEndpoint, openRead:
						if res.Status != http.StatusOK {
							t.Errorf("%s: %s: status %d", c.name, o.pattern, res.Status)
						}
					case publicOp: // the credential is ignored; the code is unknown
						if res.Status != http.StatusForbidden {
							t.Errorf("%s: %s: status %d, want 403: %s", c.name, o.pattern, res.Status, res.Body)
						}
					default:
						if res.Status != http.StatusUnauthorized {
							t.Errorf("%s: %s: status %d, want 401: %s", c.name, o.pattern, res.Status, res.Body)
						} else if res.errorMessage(t) == "" {
							t.Errorf("%s: %s: empty message", c.name, o.pattern)
						}
					}
				}
			}
		})
	})

	t.Run("regular key", func(t *testing.T) {
		e.unchanged("regular key on management operations", func() {
			for _, o := range ops {
				if o.access != mgmtOnly {
					continue
				}
				method := strings.Fields(o.pattern)[0]
				res := e.do(method, o.path, f.regular, o.body)
				if res.Status != http.StatusForbidden {
					t.Errorf("%s: status %d, want 403: %s", o.pattern, res.Status, res.Body)
				} else if msg := res.errorMessage(t); msg != "only management keys can perform this operation" {
					t.Errorf("%s: message %q", o.pattern, msg)
				}
			}
			e.do("GET", "/api/v1/key", f.regular, nil).want(t, http.StatusOK)
		})
		e.do("POST", "/api/v1/auth/keys/code", f.regular, map[string]any{"callback_url": "https://app.example.com/cb"}).
			want(t, http.StatusOK)
	})

	t.Run("other organization", func(t *testing.T) {
		orgB, mgmtB := e.newOrg("Org B")
		e.addMember(mgmtB, "bee@example.com")
		e.createKey(mgmtB, map[string]any{"name": "b key"})
		e.unchanged("org B on org A's resources", func() {
			for _, o := range ops {
				if !o.byID {
					continue
				}
				method := strings.Fields(o.pattern)[0]
				if res := e.do(method, o.path, mgmtB, o.body); res.Status != http.StatusNotFound {
					t.Errorf("%s as org B: status %d, want 404: %s", o.pattern, res.Status, res.Body)
				}
			}
			for _, path := range []string{
				"/api/v1/workspaces/ws-a", "/api/v1/workspaces/ws-a/members",
				"/api/v1/keys?workspace_id=" + f.ids.workspace, "/api/v1/keys?workspace_id=ws-a",
				"/api/v1/guardrails?workspace_id=" + f.ids.workspace,
				"/api/v1/observability/destinations?workspace_id=" + f.ids.workspace,
				"/api/v1/guardrails?workspace_id=" + f.defaultWorkspace,
				"/api/v1/byok?workspace_id=" + f.defaultWorkspace, "/api/v1/byok?workspace_id=ws-a",
			} {
				if res := e.do("GET", path, mgmtB, nil); res.Status != http.StatusNotFound {
					t.Errorf("GET %s as org B: status %d, want 404: %s", path, res.Status, res.Body)
				}
			}
			// B's lists hold none of A's rows.
			secrets := []string{e.org.ID, f.ids.keyHash, f.ids.workspace, f.defaultWorkspace, f.ids.guardrail,
				f.ids.destination, f.ids.byok, f.ids.member, "member@example.com", "ws-a", gatehouse.HashKey(e.mgmt), f.ids.preset,
				f.ids.invitation, "invited@example.com"}
			for _, o := range ops {
				if o.byID || o.access != mgmtOnly || !strings.HasPrefix(o.pattern, "GET ") {
					continue
				}
				res := e.do("GET", o.path+"?include_disabled=true", mgmtB, nil).want(t, http.StatusOK)
				for _, s := range secrets {
					if strings.Contains(string(res.Body), s) {
						t.Errorf("%s as org B shows %s of org A: %s", o.pattern, s, res.Body)
					}
				}
			}
			res := e.do("GET", "/api/v1/key", mgmtB, nil).want(t, http.StatusOK)
			if org := res.json(t)["data"].(map[string]any)["organization_id"]; org != orgB.ID {
				t.Errorf("GET /key as B: organization_id %v", org)
			}
		})
	})

	// Last, the same ids work for A's management key, so every 401, 403 and
	// 404 above was about the credential, not a wrong id.
	t.Run("own management key", func(t *testing.T) {
		code := e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example.com/cb"})
		ids := f.ids
		ids.code = code.ID
		ops := matrixOps(ids)
		sort.SliceStable(ops, func(i, j int) bool { return ops[i].late < ops[j].late })
		for _, o := range ops {
			method := strings.Fields(o.pattern)[0]
			if res := e.do(method, o.path, e.mgmt, o.body); res.Status != o.success {
				t.Errorf("%s: status %d, want %d: %s", o.pattern, res.Status, o.success, res.Body)
			}
		}
	})
}
