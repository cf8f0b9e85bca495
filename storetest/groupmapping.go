package storetest

import (
	"testing"

	"gatehouse"
)

// The group mappings (run as part of testSSO): what they give at a
// sign-in, what taking it away takes under the rules of removed members,
// changes applied at once, and what a mapping may name.

// memberWorkspaces returns the ids of the workspaces a member belongs to,
// the default one left out.
func (f *fixture) memberWorkspaces(t *testing.T, userID string) []string {
	t.Helper()
	list, err := f.store.FindMemberWorkspaces(f.ctx, f.org.ID, userID)
	ok(t, err)
	var out []string
	for _, w := range list {
		if !w.IsDefault {
			out = append(out, w.ID)
		}
	}
	return sortedStrings(out...)
}

func (f *fixture) newMapping(t *testing.T, group, role string, workspaces ...string) *gatehouse.GroupMapping {
	t.Helper()
	u := gatehouse.GroupMappingUpdate{Group: gatehouse.Val(group), WorkspaceIDs: gatehouse.Val(workspaces)}
	if role != "" {
		u.Role = gatehouse.Val(role)
	}
	m, err := f.store.CreateGroupMapping(f.ctx, f.org.ID, u)
	ok(t, err)
	return m
}

func (f *fixture) role(t *testing.T, userID string) string {
	t.Helper()
	list, err := f.store.FindMembersByRef(f.ctx, f.org.ID, []string{userID})
	ok(t, err)
	return list[0].Role
}

func testSSOGroupMappings(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID, "example.com")
	research, ops := f.newWorkspace(t, f.org.ID, "research"), f.newWorkspace(t, f.org.ID, "ops")
	a := f.newAuditRun(t, f.org.ID)
	admins, err := f.store.CreateGroupMapping(a.ctx(), f.org.ID, gatehouse.GroupMappingUpdate{Group: gatehouse.Val("gatehouse-admins"),
		Role: gatehouse.Val(gatehouse.RoleAdmin), WorkspaceIDs: gatehouse.Val([]string{ops.ID})})
	ok(t, err)
	a.want("group_mapping.create", "group_mapping", []string{admins.ID}, map[string]any{"group": "gatehouse-admins",
		"role": gatehouse.RoleAdmin, "workspace_ids": []string{ops.ID}})
	f.newMapping(t, "research", "", research.ID)

	s, _, err := f.ssoSignIn(p, "sub-ada", "ada@example.com", true, "research", "gatehouse-admins", "unmapped")
	ok(t, err)
	ada := *s.UserID
	if s.Role != gatehouse.RoleAdmin {
		t.Fatalf("role after sign-in in the admins' group: %q", s.Role)
	}
	wantEqual(t, "workspaces", sortedStrings(research.ID, ops.ID), f.memberWorkspaces(t, ada))
	// An admin's own addition stays whatever the groups say.
	manual := f.newWorkspace(t, f.org.ID, "manual")
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, manual.ID, []string{ada})
	ok(t, err)

	// Out of the admins' group: a member, out of ops; research and the manual workspace stay.
	s, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true, "research")
	ok(t, err)
	if s.Role != gatehouse.RoleMember {
		t.Fatalf("role after leaving the admins' group: %q", s.Role)
	}
	wantEqual(t, "workspaces", sortedStrings(research.ID, manual.ID), f.memberWorkspaces(t, ada))
	// No groups at all.
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true)
	ok(t, err)
	wantEqual(t, "workspaces", sortedStrings(manual.ID), f.memberWorkspaces(t, ada))
	// A membership the groups gave, which an admin then adds, is the
	// admin's: the groups no longer take it.
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true, "research")
	ok(t, err)
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, research.ID, []string{ada})
	ok(t, err)
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true)
	ok(t, err)
	wantEqual(t, "workspaces", sortedStrings(research.ID, manual.ID), f.memberWorkspaces(t, ada))
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, research.ID, []string{ada})
	ok(t, err)
	// A sign-in that reads no groups changes nothing of them.
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true, "research")
	ok(t, err)
	_, _, err = f.store.SignInWithSSO(f.ctx, gatehouse.SSOSignIn{ProviderID: p.ID, Subject: "sub-ada"})
	ok(t, err)
	wantEqual(t, "workspaces", sortedStrings(research.ID, manual.ID), f.memberWorkspaces(t, ada))
}

func testSSOGroupRemoval(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID, "example.com")
	research := f.newWorkspace(t, f.org.ID, "research")
	f.newMapping(t, "research", "", research.ID)
	s, _, err := f.ssoSignIn(p, "sub-ada", "ada@example.com", true, "research")
	ok(t, err)
	ada := *s.UserID
	key := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &ada, WorkspaceID: research.ID})
	elsewhere := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &ada})
	code, err := f.store.CreateAuthCode(f.ctx, f.org.ID, &ada, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb", WorkspaceID: research.ID})
	ok(t, err)
	a := f.newAuditRun(t, f.org.ID)
	_, _, err = f.store.SignInWithSSO(a.anonymous(), gatehouse.SSOSignIn{ProviderID: p.ID, Subject: "sub-ada",
		Email: "ada@example.com", EmailVerified: true, GroupsGiven: true})
	ok(t, err)
	// The key in the workspace is disabled (audited), the code burned, the membership gone.
	got, err := f.store.FindKey(f.ctx, f.org.ID, key.Hash)
	ok(t, err)
	if !got.Disabled {
		t.Fatal("the removed member's key in the workspace is still active")
	}
	got, err = f.store.FindKey(f.ctx, f.org.ID, elsewhere.Hash)
	ok(t, err)
	if got.Disabled {
		t.Fatal("the member's key in another workspace was disabled")
	}
	if _, _, err := f.store.ExchangeAuthCode(f.ctx, gatehouse.AuthCodeExchange{Code: code.ID}); gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN {
		t.Fatalf("the removed member's code still exchanges: %v", err)
	}
	if ws := f.memberWorkspaces(t, ada); len(ws) != 0 {
		t.Fatalf("still in %v", ws)
	}
	ops := []string{}
	for _, e := range a.all()[:3] {
		ops = append(ops, e.Operation)
	}
	wantEqual(t, "audited, newest first", []string{"session.create", "workspace.members.remove", "key.update"}, ops)
}

func testSSOMappingChanges(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID, "example.com")
	research := f.newWorkspace(t, f.org.ID, "research")
	s, _, err := f.ssoSignIn(p, "sub-ada", "ada@example.com", true, "eng")
	ok(t, err)
	ada := *s.UserID
	// A new mapping applies at once to the members its group is known to hold.
	m := f.newMapping(t, "eng", gatehouse.RoleAdmin, research.ID)
	if f.role(t, ada) != gatehouse.RoleAdmin {
		t.Fatal("a new mapping did not apply to its group's member")
	}
	wantEqual(t, "workspaces", []string{research.ID}, f.memberWorkspaces(t, ada))
	// Renaming the mapping's group takes it from the old group's members.
	_, err = f.store.UpdateGroupMapping(f.ctx, f.org.ID, m.ID, gatehouse.GroupMappingUpdate{Group: gatehouse.Val("platform")})
	ok(t, err)
	if f.role(t, ada) != gatehouse.RoleMember || len(f.memberWorkspaces(t, ada)) != 0 {
		t.Fatal("the old group's member kept what the mapping gave")
	}
	_, err = f.store.UpdateGroupMapping(f.ctx, f.org.ID, m.ID, gatehouse.GroupMappingUpdate{Group: gatehouse.Val("eng")})
	ok(t, err)
	if f.role(t, ada) != gatehouse.RoleAdmin {
		t.Fatal("the mapping renamed back did not apply")
	}
	// Deleting it takes it all away; roles are then no longer governed.
	ok(t, f.store.DeleteGroupMapping(f.ctx, f.org.ID, m.ID))
	if len(f.memberWorkspaces(t, ada)) != 0 {
		t.Fatal("a deleted mapping's workspace stays")
	}
	if f.role(t, ada) != gatehouse.RoleAdmin {
		t.Fatal("with no role mapping left, a role changed")
	}
	_, err = f.store.FindGroupMapping(f.ctx, f.org.ID, m.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testSSOMappingValidation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	otherWS, err := f.store.FindWorkspace(f.ctx, other.ID, "")
	ok(t, err)
	theirs := f.newWorkspace(t, other.ID, "theirs")
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	mine := f.newWorkspace(t, f.org.ID, "mine")
	f.newMapping(t, "taken", "", mine.ID)
	a := f.newAuditRun(t, f.org.ID)
	for _, c := range []struct {
		name string
		u    gatehouse.GroupMappingUpdate
		msg  string
	}{
		{"no group", gatehouse.GroupMappingUpdate{Role: gatehouse.Val(gatehouse.RoleAdmin)}, "group: is required"},
		{"nothing given", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("g")}, "a mapping gives a role, workspaces or both"},
		{"bad role", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("g"), Role: gatehouse.Val("admin")}, "role: must be"},
		{"another organization's workspace", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("g"), WorkspaceIDs: gatehouse.Val([]string{theirs.ID})}, "workspace_ids: not workspaces"},
		{"the default workspace", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("g"), WorkspaceIDs: gatehouse.Val([]string{def.ID})}, "workspace_ids: not workspaces"},
		{"another's default", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("g"), WorkspaceIDs: gatehouse.Val([]string{otherWS.ID})}, "workspace_ids: not workspaces"},
		{"a slug", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("g"), WorkspaceIDs: gatehouse.Val([]string{"mine"})}, "workspace_ids[0]:"},
		{"taken group", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("taken"), Role: gatehouse.Val(gatehouse.RoleMember)}, "group: has a mapping already"},
		{"control character", gatehouse.GroupMappingUpdate{Group: gatehouse.Val("a\u202eb"), Role: gatehouse.Val(gatehouse.RoleMember)}, "group:"},
	} {
		_, err := f.store.CreateGroupMapping(a.ctx(), f.org.ID, c.u)
		wantMessage(t, err, gatehouse.EINVALID, c.msg)
		a.wantNone(c.name)
	}
	list, total, err := f.store.FindGroupMappings(f.ctx, other.ID, page(0, 10))
	ok(t, err)
	if total != 0 || len(list) != 0 {
		t.Fatalf("another organization sees %v", list)
	}
	mine2, total, err := f.store.FindGroupMappings(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if total != 1 || mine2[0].Group != "taken" || len(mine2[0].WorkspaceIDs) != 1 {
		t.Fatalf("FindGroupMappings = %v", mine2)
	}
	// Deleting the workspace takes it out of the mapping.
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, mine.ID, false))
	got, err := f.store.FindGroupMapping(f.ctx, f.org.ID, mine2[0].ID)
	ok(t, err)
	if len(got.WorkspaceIDs) != 0 {
		t.Fatalf("a deleted workspace stays in the mapping: %v", got.WorkspaceIDs)
	}
}
