package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/httpapi"
	"gatehouse/sso"
	"gatehouse/sso/ssotest"
)

// TestSSOProviders: a provider's secret is shown masked and never sent
// back; a masked secret sent back is refused; the issuer is read before a
// provider is saved (a real OpenID provider on the loopback); password
// sign-in stays on until single sign-on works.
func TestSSOProviders(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	op := ssotest.Start(t, []string{httpapi.DefaultPublicURL + gatehouse.RedirectPath})
	e.handler.(*httpapi.Server).SetIssuerChecker(sso.New(e.db, sso.NewClient(egress.MustParse("127.0.0.0/8,::1/128")), nil)) // the provider is on the loopback

	const secret = "the client secret of the matrix"
	res := e.do("POST", "/api/v1/sso/providers", e.mgmt, map[string]any{"name": "Zitadel", "issuer_url": op.Issuer,
		"client_id": op.ClientID, "client_secret": secret, "groups_claim": "groups"}).want(t, http.StatusCreated).json(t)
	p := res["data"].(map[string]any)
	if p["client_secret"] != "********"+secret[len(secret)-4:] || p["redirect_uri"] != httpapi.DefaultPublicURL+"/sso/callback" ||
		p["email_verified_claim"] != "email_verified" || p["enabled"] != true {
		t.Fatalf("created provider: %v", p)
	}
	id := p["id"].(string)
	for _, path := range []string{"/api/v1/sso/providers", "/api/v1/sso/providers/" + id, "/api/v1/audit-log"} {
		if body := e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK).Body; strings.Contains(string(body), secret) {
			t.Errorf("GET %s shows the client secret", path)
		}
	}
	// The masked value sent back would become the secret: refused.
	msg := e.do("PATCH", "/api/v1/sso/providers/"+id, e.mgmt, map[string]any{"client_secret": p["client_secret"]}).
		want(t, http.StatusBadRequest).errorMessage(t)
	if !strings.HasPrefix(msg, "client_secret: is the masked secret") {
		t.Errorf("masked secret sent back: %q", msg)
	}
	// An issuer that does not answer as one is refused, naming the field.
	for _, issuer := range []string{op.Issuer + "/elsewhere", "http://127.0.0.1:9"} {
		msg := e.do("PATCH", "/api/v1/sso/providers/"+id, e.mgmt, map[string]any{"issuer_url": issuer}).
			want(t, http.StatusBadRequest).errorMessage(t)
		if !strings.HasPrefix(msg, "issuer_url: the provider's discovery document") {
			t.Errorf("issuer %s: %q", issuer, msg)
		}
	}
	// Password sign-in stays on while the provider has signed nobody in.
	msg = e.do("PATCH", "/api/v1/sso/settings", e.mgmt, map[string]any{"password_sign_in": false}).
		want(t, http.StatusBadRequest).errorMessage(t)
	if !strings.HasPrefix(msg, "password_sign_in: can be turned off only once single sign-on works") {
		t.Errorf("password sign-in turned off too early: %q", msg)
	}
	s := e.do("GET", "/api/v1/sso/settings", e.mgmt, nil).want(t, http.StatusOK).json(t)["data"].(map[string]any)
	if s["password_sign_in"] != true || s["updated_at"] != nil {
		t.Errorf("settings: %v", s)
	}
	// Another organization sees nothing of it.
	_, other := e.newOrg("Org B")
	e.do("GET", "/api/v1/sso/providers/"+id, other, nil).want(t, http.StatusNotFound)
	if list := e.do("GET", "/api/v1/sso/providers", other, nil).want(t, http.StatusOK).json(t); list["total_count"] != 0.0 {
		t.Errorf("another organization lists %v", list)
	}
	e.do("DELETE", "/api/v1/sso/providers/"+id, e.mgmt, nil).want(t, http.StatusOK)
}

// TestSCIMTokenAndGroups: the SCIM token is shown once, and its hash
// afterwards; the groups SCIM pushed list in OpenRouter's shape, filtered
// by display name, and only to their organization.
func TestSCIMTokenAndGroups(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.do("GET", "/api/v1/scim/token", e.mgmt, nil).want(t, http.StatusNotFound)
	made := e.do("POST", "/api/v1/scim/token", e.mgmt, nil).want(t, http.StatusCreated).json(t)["data"].(map[string]any)
	token := made["token"].(string)
	if !strings.HasPrefix(token, gatehouse.SCIMTokenPrefix) || made["hash"] != gatehouse.HashKey(token) ||
		made["url"] != httpapi.DefaultPublicURL+"/scim/v2" {
		t.Fatalf("new token: %v", made)
	}
	got := e.do("GET", "/api/v1/scim/token", e.mgmt, nil).want(t, http.StatusOK)
	if strings.Contains(string(got.Body), token) || strings.Contains(string(e.do("GET", "/api/v1/audit-log", e.mgmt, nil).Body), token) {
		t.Fatal("the token is shown again")
	}
	if _, err := e.db.CreateSCIMGroup(context.Background(), e.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "Engineering"}); err != nil {
		t.Fatal(err)
	}
	ext := "00g1"
	if _, err := e.db.CreateSCIMGroup(context.Background(), e.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "Finance", ExternalID: &ext}); err != nil {
		t.Fatal(err)
	}
	list := e.do("GET", "/api/v1/scim/groups?display_name=Finance", e.mgmt, nil).want(t, http.StatusOK).json(t)
	data := list["data"].([]any)
	if list["total_count"] != 1.0 || data[0].(map[string]any)["external_id"] != ext || data[0].(map[string]any)["organization_id"] != e.org.ID {
		t.Fatalf("groups by display name: %v", list)
	}
	_, other := e.newOrg("Org B")
	if list := e.do("GET", "/api/v1/scim/groups", other, nil).want(t, http.StatusOK).json(t); list["total_count"] != 0.0 {
		t.Errorf("another organization lists %v", list)
	}
	e.do("DELETE", "/api/v1/scim/token", e.mgmt, nil).want(t, http.StatusOK)
	e.do("DELETE", "/api/v1/scim/token", e.mgmt, nil).want(t, http.StatusNotFound)
}

// TestGroupMappings: a mapping's workspaces must be the organization's
// and not its default one; a change applies at once to the members the
// group is known to hold.
func TestGroupMappings(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ws := e.createWorkspace(e.mgmt, "research")
	def := e.workspaceIDOf(e.mgmt, "default")
	msg := e.do("POST", "/api/v1/sso/group-mappings", e.mgmt, map[string]any{"group": "eng", "workspace_ids": []string{def}}).
		want(t, http.StatusBadRequest).errorMessage(t)
	if !strings.HasPrefix(msg, "workspace_ids: not workspaces of the organization, or the default workspace") {
		t.Errorf("the default workspace: %q", msg)
	}
	user, err := e.db.CreateSCIMUser(context.Background(), e.org.ID, gatehouse.SCIMUserWrite{UserName: "ada@example.com", Active: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.CreateSCIMGroup(context.Background(), e.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "eng", MemberIDs: []string{user.ID}}); err != nil {
		t.Fatal(err)
	}
	m := e.do("POST", "/api/v1/sso/group-mappings", e.mgmt, map[string]any{"group": "eng", "role": "org:admin", "workspace_ids": []string{ws}}).
		want(t, http.StatusCreated).json(t)["data"].(map[string]any)
	members := e.do("GET", "/api/v1/workspaces/research/members", e.mgmt, nil).want(t, http.StatusOK).json(t)
	if members["total_count"] != 1.0 {
		t.Fatalf("the mapping did not add the group's member: %v", members)
	}
	e.do("DELETE", "/api/v1/sso/group-mappings/"+m["id"].(string), e.mgmt, nil).want(t, http.StatusOK)
	members = e.do("GET", "/api/v1/workspaces/research/members", e.mgmt, nil).want(t, http.StatusOK).json(t)
	if members["total_count"] != 0.0 {
		t.Fatalf("the deleted mapping's member stays: %v", members)
	}
	entries, _ := e.auditLog(e.mgmt, "?operation=group_mapping.delete")
	if len(entries) != 1 {
		t.Fatalf("the deletion is not audited: %v", entries)
	}
}
