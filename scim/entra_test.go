package scim_test

import (
	"fmt"
	"net/url"
	"slices"
	"testing"

	"gatehouse"
)

// TestEntraIDSequence replays what the Microsoft Entra provisioning service
// sends, as Microsoft documents it ("Tutorial: Develop and plan
// provisioning for a SCIM endpoint", the request examples of its user and
// group operations, and "Known issues and resolutions with SCIM 2.0
// protocol compliance", the requests it sends without the
// aadOptscim062020 flag): the same bodies, with the ids this server made.
func TestEntraIDSequence(t *testing.T) {
	e := newEnv(t)
	research, err := e.store.CreateWorkspace(e.ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	// Entra ID names groups by their object id in the groups claim, and
	// sends that id as the group's externalId.
	const objectID = "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159"
	for _, m := range []gatehouse.GroupMappingUpdate{
		{Group: gatehouse.Val(objectID), Role: gatehouse.Val(gatehouse.RoleAdmin), WorkspaceIDs: gatehouse.Val([]string{research.ID})},
	} {
		if _, err := e.store.CreateGroupMapping(e.ctx, e.org.ID, m); err != nil {
			t.Fatal(err)
		}
	}

	// Get User by query, zero results, before a create.
	q := "/Users?filter=" + url.QueryEscape(`userName eq "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1"`)
	a := e.do("GET", q, "").want(t, "query before create", 200)
	if a.get("totalResults") != 0.0 || len(a.get("Resources").([]any)) != 0 {
		t.Fatalf("query before create: %s", a.raw)
	}
	// Create User.
	a = e.do("POST", "/Users", `{
		"schemas": ["urn:ietf:params:scim:schemas:core:2.0:User", "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User"],
		"externalId": "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef",
		"userName": "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1",
		"active": true,
		"emails": [{"primary": true, "type": "work", "value": "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com"}],
		"meta": {"resourceType": "User"},
		"name": {"formatted": "givenName familyName", "familyName": "familyName", "givenName": "givenName"},
		"roles": []
	}`).want(t, "create user", 201)
	id := a.str("id")
	if a.str("userName") != "Test_User_ab6490ee-1e48-479e-a20b-2d77186b5dd1" || a.get("active") != true ||
		a.str("emails.0.value") != "Test_User_fd0ea19b-0777-472c-9f96-4f70d2226f2e@testuser.com" ||
		a.str("externalId") != "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef" || a.str("name.familyName") != "familyName" ||
		a.str("meta.resourceType") != "User" || a.header.Get("Location") != "https://gatehouse.example.com/scim/v2/Users/"+a.str("id") {
		t.Fatalf("created user: %s", a.raw)
	}
	// Get User, and Get User by query.
	e.do("GET", "/Users/"+id, "").want(t, "get user", 200)
	a = e.do("GET", q, "").want(t, "query after create", 200)
	if a.get("totalResults") != 1.0 || a.str("Resources.0.id") != id {
		t.Fatalf("query after create: %s", a.raw)
	}
	a = e.do("GET", "/Users?filter="+url.QueryEscape(`externalId eq "0a21f0f2-8d2a-4f8e-bf98-7363c4aed4ef"`), "").want(t, "query by externalId", 200)
	if a.get("totalResults") != 1.0 {
		t.Fatalf("query by externalId: %s", a.raw)
	}
	// Update User [Multi-valued properties], then [Single-valued properties].
	a = e.do("PATCH", "/Users/"+id, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [
			{"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "updatedEmail@microsoft.com"},
			{"op": "Replace", "path": "name.familyName", "value": "updatedFamilyName"}
		]
	}`).want(t, "update user's multi-valued properties", 200)
	if a.str("emails.0.value") != "updatedEmail@microsoft.com" || a.str("name.familyName") != "updatedFamilyName" || a.str("name.givenName") != "givenName" {
		t.Fatalf("updated user: %s", a.raw)
	}
	a = e.do("PATCH", "/Users/"+id, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Replace", "path": "userName", "value": "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com"}]
	}`).want(t, "update user's single-valued property", 200)
	if a.str("userName") != "5b50642d-79fc-4410-9e90-4c077cdd1a59@testuser.com" {
		t.Fatalf("renamed user: %s", a.raw)
	}
	// Replacing several attributes: as one operation with the flag, as
	// several without it.
	a = e.do("PATCH", "/Users/"+id, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "replace", "value": {
			"displayName": "Pvlo",
			"emails[type eq \"work\"].value": "TestBcwqnm@test.microsoft.com",
			"name.givenName": "Gtfd",
			"name.familyName": "Pkqf",
			"externalId": "Eqpj",
			"urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber": "Eqpj"
		}}]
	}`).want(t, "replace several attributes in one operation", 200)
	if a.str("displayName") != "Pvlo" || a.str("emails.0.value") != "TestBcwqnm@test.microsoft.com" ||
		a.str("name.givenName") != "Gtfd" || a.str("externalId") != "Eqpj" {
		t.Fatalf("after the flag's replace: %s", a.raw)
	}
	e.do("PATCH", "/Users/"+id, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [
			{"op": "Replace", "path": "displayName", "value": "Pvlo2"},
			{"op": "Replace", "path": "emails[type eq \"work\"].value", "value": "TestBcwqnm@test.microsoft.com"},
			{"op": "Replace", "path": "name.givenName", "value": "Gtfd"},
			{"op": "Replace", "path": "name.familyName", "value": "Pkqf"},
			{"op": "Replace", "path": "externalId", "value": "Eqpj"},
			{"op": "Replace", "path": "urn:ietf:params:scim:schemas:extension:enterprise:2.0:User:employeeNumber", "value": "Eqpj"}
		]
	}`).want(t, "replace several attributes, one operation each", 200)

	// Create Group, with the schema URI Entra ID adds.
	a = e.do("POST", "/Groups", `{
		"schemas": ["urn:ietf:params:scim:schemas:core:2.0:Group", "http://schemas.microsoft.com/2006/11/ResourceManagement/ADSCIM/2.0/Group"],
		"externalId": "`+objectID+`",
		"displayName": "displayName",
		"meta": {"resourceType": "Group"}
	}`).want(t, "create group", 201)
	gid := a.str("id")
	// Get Group, and Get Group by displayName, without members.
	a = e.do("GET", "/Groups/"+gid+"?excludedAttributes=members", "").want(t, "get group", 200)
	if a.str("displayName") != "displayName" || a.get("members") != nil {
		t.Fatalf("group without members: %s", a.raw)
	}
	a = e.do("GET", "/Groups?excludedAttributes=members&filter="+url.QueryEscape(`displayName eq "displayName"`), "").want(t, "group by displayName", 200)
	if a.get("totalResults") != 1.0 || a.str("Resources.0.id") != gid || a.get("Resources.0.members") != nil {
		t.Fatalf("group by displayName: %s", a.raw)
	}
	// Update Group [Add Members]: the mapping of the group's object id
	// makes the member an admin with the research workspace.
	e.do("PATCH", "/Groups/"+gid, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Add", "path": "members", "value": [{"$ref": null, "value": "`+id+`"}]}]
	}`).want(t, "add members", 204)
	if e.role(id) != gatehouse.RoleAdmin {
		t.Fatal("the group's mapping did not make its member an admin")
	}
	// Entra ID's check of a membership.
	a = e.do("GET", "/Groups?excludedAttributes=members&filter="+url.QueryEscape(fmt.Sprintf(`id eq "%s" and members[value eq "%s"]`, gid, id)), "").
		want(t, "membership check", 200)
	if a.get("totalResults") != 1.0 || a.get("Resources.0.members") != nil {
		t.Fatalf("membership check: %s", a.raw)
	}
	a = e.do("GET", "/Users/"+id, "")
	if a.str("groups.0.value") != gid {
		t.Fatalf("the user does not show the group: %s", a.raw)
	}
	// Update Group [Non-member attributes].
	e.do("PATCH", "/Groups/"+gid, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Replace", "path": "displayName", "value": "1879db59-3bdf-4490-ad68-ab880a269474updatedDisplayName"}]
	}`).want(t, "rename group", 204)
	// The member makes a key in the workspace the group gave.
	key, _, err := e.store.CreateKey(e.ctx, e.org.ID, gatehouse.KeyCreate{Name: "k", CreatorUserID: &id, WorkspaceID: research.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Update Group [Remove Members], as Entra ID sends it without the flag:
	// the members to remove are in the value.
	e.do("PATCH", "/Groups/"+gid, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Remove", "path": "members", "value": [{"$ref": null, "value": "`+id+`"}]}]
	}`).want(t, "remove members", 204)
	if e.role(id) != gatehouse.RoleMember {
		t.Fatal("out of the group, still an admin")
	}
	if k, _ := e.store.FindKey(e.ctx, e.org.ID, key.Hash); k == nil || !k.Disabled {
		t.Fatal("out of the workspace, the member's key there is still active")
	}
	// Back in, then out with the flag's form of a removal.
	e.do("PATCH", "/Groups/"+gid, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Add", "path": "members", "value": [{"value": "`+id+`"}]}]}`).want(t, "add again", 204)
	e.do("PATCH", "/Groups/"+gid, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Remove", "path": "members[value eq \"`+id+`\"]"}]}`).want(t, "remove by filter", 204)
	if e.role(id) != gatehouse.RoleMember {
		t.Fatal("removed by filter, still an admin")
	}

	// Disable User, as Entra ID sends it without the flag ("False", a
	// string), and as it sends it with the flag.
	session := e.signIn(id)
	a = e.do("PATCH", "/Users/"+id, `{
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Replace", "path": "active", "value": "False"}]
	}`).want(t, "disable user (string)", 200)
	if a.get("active") != false {
		t.Fatalf("not disabled: %s", a.raw)
	}
	if _, err := e.store.FindSession(e.ctx, session); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatalf("the disabled member's session lives: %v", err)
	}
	e.do("PATCH", "/Users/"+id, `{"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"],
		"Operations": [{"op": "Replace", "path": "active", "value": "True"}]}`).want(t, "enable user (string)", 200)
	a = e.do("PATCH", "/Users/"+id, `{
		"Operations": [{"op": "Replace", "path": "active", "value": false}],
		"schemas": ["urn:ietf:params:scim:api:messages:2.0:PatchOp"]
	}`).want(t, "disable user (boolean)", 200)
	if a.get("active") != false {
		t.Fatalf("not disabled: %s", a.raw)
	}
	// Delete User, Delete Group.
	e.do("DELETE", "/Users/"+id, "").want(t, "delete user", 204)
	e.do("GET", "/Users/"+id, "").want(t, "get deleted user", 404)
	e.do("DELETE", "/Groups/"+gid, "").want(t, "delete group", 204)
	e.do("GET", "/Groups/"+gid, "").want(t, "get deleted group", 404)

	ops := e.auditOps()
	for _, want := range []string{"member.create", "member.update", "scim_group.create", "scim_group.update", "workspace.members.add",
		"workspace.members.remove", "key.update", "member.deactivate", "member.reactivate", "member.delete", "scim_group.delete"} {
		if !slices.Contains(ops, want) {
			t.Errorf("no %s in the audit log: %v", want, ops)
		}
	}
}

// signIn opens a console session of a member, as a sign-in would.
func (e *env) signIn(userID string) string {
	e.t.Helper()
	_, token, err := e.store.CreateSession(e.ctx, gatehouse.SessionCreate{OrganizationID: e.org.ID, UserID: &userID})
	if err != nil {
		e.t.Fatal(err)
	}
	return token
}
