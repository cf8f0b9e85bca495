package scim_test

import (
	"bytes"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"gatehouse"
)

// TestOktaSequence replays what Okta sends, as its SCIM 2.0 guide documents
// it ("SCIM 2.0 protocol reference", the user and group operations of
// Okta's provisioning): the existence check, the create (with a password,
// which Gatehouse never keeps), the PUT-based profile updates, the
// deactivation, and Push Groups' creates, renames and membership changes.
func TestOktaSequence(t *testing.T) {
	e := newEnv(t)
	if _, err := e.store.CreateGroupMapping(e.ctx, e.org.ID, gatehouse.GroupMappingUpdate{
		Group: gatehouse.Val("Gatehouse Admins"), Role: gatehouse.Val(gatehouse.RoleAdmin)}); err != nil {
		t.Fatal(err)
	}
	// Determine if the user already exists.
	exists := "/Users?filter=" + url.QueryEscape(`userName eq "test.user@okta.local"`) + "&startIndex=1&count=100"
	a := e.do("GET", exists, "").want(t, "existence check", 200)
	if a.get("totalResults") != 0.0 || a.get("startIndex") != 1.0 {
		t.Fatalf("existence check: %s", a.raw)
	}
	// Create the user.
	a = e.do("POST", "/Users", `{
		"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
		"userName": "test.user@okta.local",
		"name": {"givenName": "Test", "familyName": "User"},
		"emails": [{"primary": true, "value": "test.user@okta.local", "type": "work"}],
		"displayName": "Test User",
		"locale": "en-US",
		"externalId": "00ujl29u0le5T6Aj10h7",
		"groups": [],
		"password": "1mz050nq-a-password-never-kept",
		"active": true
	}`).want(t, "create user", 201)
	id := a.str("id")
	if a.get("password") != nil || a.str("displayName") != "Test User" {
		t.Fatalf("created: %s", a.raw)
	}
	a = e.do("GET", exists, "").want(t, "existence check after create", 200)
	if a.get("totalResults") != 1.0 || a.str("Resources.0.id") != id {
		t.Fatalf("existence check: %s", a.raw)
	}
	// Retrieve a specific user, then update it with PUT.
	e.do("GET", "/Users/"+id, "").want(t, "retrieve user", 200)
	a = e.do("PUT", "/Users/"+id, `{
		"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"],
		"id": "`+id+`",
		"userName": "test.user@okta.local",
		"name": {"givenName": "Another", "middleName": "Excited", "familyName": "User"},
		"emails": [{"primary": true, "value": "test.user@okta.local", "type": "work", "display": "test.user@okta.local"}],
		"active": true,
		"groups": [],
		"meta": {"resourceType": "User"}
	}`).want(t, "update user (PUT)", 200)
	if a.str("name.givenName") != "Another" || a.get("displayName") != nil || a.str("externalId") != "" {
		t.Fatalf("a PUT replaces the user whole: %s", a.raw)
	}
	// Push Groups: create, list, rename, members.
	a = e.do("POST", "/Groups", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Test SCIMv2", "members": []}`).
		want(t, "create group", 201)
	gid := a.str("id")
	a = e.do("GET", "/Groups?startIndex=1&count=100", "").want(t, "list groups", 200)
	if a.get("totalResults") != 1.0 {
		t.Fatalf("groups: %s", a.raw)
	}
	e.do("GET", "/Groups/"+gid, "").want(t, "retrieve group", 200)
	e.do("PATCH", "/Groups/"+gid, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "replace", "value": {"id": "`+gid+`", "displayName": "Gatehouse Admins"}}]
	}`).want(t, "update group name", 204)
	other := e.createUser("second.user@okta.local")
	e.do("PATCH", "/Groups/"+gid, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [
			{"op": "remove", "path": "members[value eq \"`+other+`\"]"},
			{"op": "add", "path": "members", "value": [{"value": "`+id+`", "display": "test.user@okta.local"}]}
		]
	}`).want(t, "update group membership", 204)
	if e.role(id) != gatehouse.RoleAdmin || e.role(other) != gatehouse.RoleMember {
		t.Fatal("the membership did not give the group's role")
	}
	// Okta's older group push replaces the group whole with PUT.
	a = e.do("PUT", "/Groups/"+gid, `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "id": "`+gid+`",
		"displayName": "Gatehouse Admins", "members": [{"value": "`+other+`", "display": "second.user@okta.local"}]}`).
		want(t, "replace group", 200)
	if len(a.get("members").([]any)) != 1 || e.role(id) != gatehouse.RoleMember || e.role(other) != gatehouse.RoleAdmin {
		t.Fatalf("after the PUT: %s", a.raw)
	}
	// Deactivate the user (PATCH), then reactivate it with a PUT.
	session := e.signIn(other)
	a = e.do("PATCH", "/Users/"+other, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "replace", "value": {"active": false}}]}`).want(t, "deactivate", 200)
	if a.get("active") != false {
		t.Fatalf("deactivated: %s", a.raw)
	}
	if _, err := e.store.FindSession(e.ctx, session); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatal("the deactivated member's session lives")
	}
	a = e.do("PUT", "/Users/"+other, `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "second.user@okta.local",
		"emails": [{"primary": true, "value": "second.user@okta.local", "type": "work"}], "active": true}`).want(t, "reactivate (PUT)", 200)
	if a.get("active") != true {
		t.Fatalf("reactivated: %s", a.raw)
	}
	e.do("DELETE", "/Groups/"+gid, "").want(t, "delete group", 204)
	if e.role(other) != gatehouse.RoleMember {
		t.Fatal("the deleted group's role stays")
	}

	// The password is nowhere: not in the database's files, not in the log.
	e.db.Close()
	for _, suffix := range []string{"", "-wal"} {
		raw, err := os.ReadFile(e.path + suffix)
		if err != nil && suffix == "" {
			t.Fatal(err)
		}
		if bytes.Contains(raw, []byte("a-password-never-kept")) {
			t.Errorf("the password Okta sent is in %s", filepath.Base(e.path+suffix))
		}
	}
	if strings.Contains(e.logs.String(), "a-password-never-kept") {
		t.Error("the password Okta sent is in the log")
	}
}

// createUser creates a user through SCIM and returns its id.
func (e *env) createUser(userName string) string {
	e.t.Helper()
	a := e.do("POST", "/Users", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "`+userName+`",
		"emails": [{"primary": true, "value": "`+userName+`", "type": "work"}], "active": true}`).want(e.t, "create "+userName, 201)
	return a.str("id")
}

// TestAuthentication: no token, a bad one, an API key or a replaced token
// is a 401 with SCIM's error body; one organization's token sees nothing
// of another's.
func TestAuthentication(t *testing.T) {
	e := newEnv(t)
	mine := e.createUser("ada@acme.example")
	_, mgmt, err := e.store.CreateManagementKey(e.ctx, e.org.ID, "mgmt")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct{ name, token string }{
		{"no token", ""}, {"a made-up token", gatehouse.SCIMTokenPrefix + strings.Repeat("0", 64)}, {"a management key", mgmt},
	} {
		a := e.doWith(c.token, "GET", "/Users", "").want(t, c.name, 401)
		if a.header.Get("WWW-Authenticate") == "" || a.str("status") != "401" {
			t.Errorf("%s: %s", c.name, a.raw)
		}
	}
	// Another organization's token.
	other, otherToken := e.newOrg("Other")
	a := e.doWith(otherToken, "GET", "/Users", "").want(t, "the other organization's users", 200)
	if a.get("totalResults") != 0.0 {
		t.Fatalf("the other organization sees %s", a.raw)
	}
	e.doWith(otherToken, "GET", "/Users/"+mine, "").want(t, "another's user", 404)
	e.doWith(otherToken, "PATCH", "/Users/"+mine, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "replace", "path": "active", "value": false}]}`).want(t, "deactivate another's user", 404)
	e.doWith(otherToken, "DELETE", "/Users/"+mine, "").want(t, "delete another's user", 404)
	gid := e.do("POST", "/Groups", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Mine"}`).want(t, "create group", 201).str("id")
	e.doWith(otherToken, "GET", "/Groups/"+gid, "").want(t, "another's group", 404)
	e.doWith(otherToken, "POST", "/Groups", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "Theirs",
		"members": [{"value": "`+mine+`"}]}`).want(t, "a group of another's user", 400)
	if m, err := e.store.FindSCIMUser(e.ctx, e.org.ID, mine); err != nil || m.Deactivated {
		t.Fatalf("the other organization changed a user: %+v, %v", m, err)
	}
	// A replaced token no longer works.
	if _, _, err := e.store.CreateSCIMToken(e.ctx, other.ID); err != nil {
		t.Fatal(err)
	}
	e.doWith(otherToken, "GET", "/Users", "").want(t, "a replaced token", 401)
	// Every write is the token's, in the audit log.
	entries, _, err := e.store.FindAuditEntries(e.ctx, e.org.ID, gatehouse.AuditFilter{Operation: gatehouse.OpSCIMGroupCreate, Page: gatehouse.Page{Limit: 5}})
	if err != nil || len(entries) != 1 || entries[0].ActorKeyHash == nil || *entries[0].ActorKeyHash != gatehouse.HashKey(e.token) {
		t.Fatalf("the group's creation is not the token's: %+v, %v", entries, err)
	}
}

// TestBadInput: what a provider gets wrong is a 400 (or 409) saying what,
// and changes nothing.
func TestBadInput(t *testing.T) {
	e := newEnv(t)
	id := e.createUser("ada@acme.example")
	plain := e.do("POST", "/Users", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "grace",
		"emails": [{"value": "grace@acme.example"}]}`).want(t, "create grace", 201).str("id")
	before := e.auditOps()
	for _, c := range []struct {
		name, method, path, body string
		status                   int
	}{
		{"not JSON", "POST", "/Users", `{"schemas": [`, 400},
		{"no schemas", "POST", "/Users", `{"userName": "x@acme.example"}`, 400},
		{"no userName", "POST", "/Users", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "emails": [{"value": "x@acme.example"}]}`, 400},
		{"no email", "POST", "/Users", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "no-email"}`, 400},
		{"a taken userName", "POST", "/Users", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User"], "userName": "ADA@acme.example"}`, 409},
		{"active not a boolean", "PATCH", "/Users/" + id, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
			"Operations": [{"op": "replace", "path": "active", "value": "perhaps"}]}`, 400},
		{"no operations", "PATCH", "/Users/" + id, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"], "Operations": []}`, 400},
		{"removing the only email", "PATCH", "/Users/" + plain, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
			"Operations": [{"op": "remove", "path": "emails"}]}`, 400},
		{"an unknown path", "PATCH", "/Users/" + id, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
			"Operations": [{"op": "replace", "path": "nosuch", "value": 1}]}`, 400},
		{"an unknown member", "POST", "/Groups", `{"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group"], "displayName": "G",
			"members": [{"value": "user_nobody"}]}`, 400},
		{"a bad filter", "GET", "/Users?filter=" + url.QueryEscape(`userName eq`), "", 400},
		{"an unknown user", "PATCH", "/Users/user_nobody", `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
			"Operations": [{"op": "replace", "path": "active", "value": false}]}`, 404},
	} {
		e.do(c.method, c.path, c.body).want(t, c.name, c.status)
	}
	if after := e.auditOps(); len(after) != len(before) {
		t.Fatalf("refused requests changed something: %v", after[len(before):])
	}
	// A filter the store cannot answer alone is still answered.
	a := e.do("GET", "/Users?filter="+url.QueryEscape(`userName sw "ada" and active eq true`), "").want(t, "a filter read through", 200)
	if a.get("totalResults") != 1.0 || a.str("Resources.0.id") != id {
		t.Fatalf("userName sw: %s", a.raw)
	}
	e.do("GET", "/ServiceProviderConfig", "").want(t, "service provider config", 200)
	e.do("GET", "/Schemas", "").want(t, "schemas", 200)
	e.do("GET", "/ResourceTypes", "").want(t, "resource types", 200)
}

// TestDeactivationReachesTheKeyCache: a deactivated member's key, cached
// by the key cache that authentication reads, is refused at once.
func TestDeactivationReachesTheKeyCache(t *testing.T) {
	e := newEnv(t)
	id := e.createUser("ada@acme.example")
	k, _, err := e.store.CreateKey(e.ctx, e.org.ID, gatehouse.KeyCreate{Name: "k", CreatorUserID: &id})
	if err != nil {
		t.Fatal(err)
	}
	if got, err := e.store.FindKeyByHash(e.ctx, k.Hash); err != nil || got.Disabled { // cached now
		t.Fatalf("the key before: %+v, %v", got, err)
	}
	e.do("PATCH", "/Users/"+id, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "replace", "path": "active", "value": false}]}`).want(t, "deactivate", 200)
	if got, err := e.store.FindKeyByHash(e.ctx, k.Hash); err != nil || !got.Disabled {
		t.Fatalf("the deactivated member's key still authenticates: %+v, %v", got, err)
	}
}
