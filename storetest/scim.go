package storetest

import (
	"slices"
	"strings"
	"testing"

	"gatehouse"
)

// testSCIM checks SCIM provisioning: the organization's token, its members
// as users (created, found, changed, deactivated, deleted under the rules
// of removed members) and its groups, which feed the group mappings.
func testSCIM(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"Token", testSCIMToken},
		{"Users", testSCIMUsers},
		{"Deactivation", testSCIMDeactivation},
		{"DeleteUser", testSCIMDeleteUser},
		{"Groups", testSCIMGroups},
		{"Tenancy", testSCIMTenancy},
	})
}

func testSCIMToken(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	tok, secret, err := f.store.CreateSCIMToken(a.ctx(), f.org.ID)
	ok(t, err)
	a.want("scim_token.create", "scim_token", []string{tok.Hash}, nil)
	if !strings.HasPrefix(secret, gatehouse.SCIMTokenPrefix) || len(secret) != len(gatehouse.SCIMTokenPrefix)+64 || tok.Hash != gatehouse.HashKey(secret) {
		t.Fatalf("token %q, hash %s", secret, tok.Hash)
	}
	got, err := f.store.AuthenticateSCIM(f.ctx, secret)
	ok(t, err)
	if got.OrganizationID != f.org.ID {
		t.Fatalf("the token authenticates organization %s", got.OrganizationID)
	}
	stored, err := f.store.FindSCIMToken(f.ctx, f.org.ID)
	ok(t, err)
	if stored.LastUsedAt == nil || !stored.LastUsedAt.Equal(f.clock.Now()) {
		t.Fatalf("last use not recorded: %+v", stored)
	}
	// A new token replaces the old one.
	_, newSecret, err := f.store.CreateSCIMToken(f.ctx, f.org.ID)
	ok(t, err)
	_, err = f.store.AuthenticateSCIM(f.ctx, secret)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.AuthenticateSCIM(f.ctx, newSecret)
	ok(t, err)
	a.sync()
	ok(t, f.store.DeleteSCIMToken(a.ctx(), f.org.ID))
	a.want("scim_token.delete", "scim_token", []string{gatehouse.HashKey(newSecret)}, nil)
	_, err = f.store.AuthenticateSCIM(f.ctx, newSecret)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteSCIMToken(f.ctx, f.org.ID), gatehouse.ENOTFOUND)
}

func scimUser(userName, email string) gatehouse.SCIMUserWrite {
	given, family := "Grace", "Hopper"
	ext := "ext-" + userName
	return gatehouse.SCIMUserWrite{UserName: userName, ExternalID: &ext, GivenName: &given, FamilyName: &family, Email: email, Active: true}
}

func testSCIMUsers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	old := f.newMember(t, f.org.ID, "Ada@Example.com")
	// A member that exists is a user, named by their email, found case-insensitively.
	list, total, err := f.store.FindSCIMUsers(f.ctx, f.org.ID, gatehouse.SCIMUserFilter{UserName: "ada@example.COM", Count: 10})
	ok(t, err)
	if total != 1 || list[0].ID != old.ID || list[0].UserName != "Ada@Example.com" {
		t.Fatalf("existing member by userName: %d %+v", total, list)
	}
	a := f.newAuditRun(t, f.org.ID)
	u, err := f.store.CreateSCIMUser(a.as(gatehouse.Actor{KeyHash: "scim-token-hash"}), f.org.ID, scimUser("grace@corp.example", ""))
	ok(t, err)
	a.want("member.create", "member", []string{u.ID}, map[string]any{"via": "scim"})
	if u.Email != "grace@corp.example" || u.Role != gatehouse.RoleMember || u.Deactivated || *u.ExternalID != "ext-grace@corp.example" {
		t.Fatalf("created %+v", u)
	}
	for _, c := range []struct {
		name string
		w    gatehouse.SCIMUserWrite
		code string
	}{
		{"a userName that is a member's email", scimUser("ADA@example.com", "other@corp.example"), gatehouse.ECONFLICT},
		{"an email that is a member's", scimUser("someone", "ada@example.com"), gatehouse.ECONFLICT},
		{"a userName taken", scimUser("Grace@corp.example", "g2@corp.example"), gatehouse.ECONFLICT},
		{"no email", scimUser("no-email", ""), gatehouse.EINVALID},
		{"no userName", scimUser("", "x@corp.example"), gatehouse.EINVALID},
	} {
		_, err := f.store.CreateSCIMUser(a.ctx(), f.org.ID, c.w)
		wantCode(t, err, c.code)
		a.wantNone(c.name)
	}
	list, total, err = f.store.FindSCIMUsers(f.ctx, f.org.ID, gatehouse.SCIMUserFilter{ExternalID: "ext-grace@corp.example", Count: 10})
	ok(t, err)
	if total != 1 || list[0].ID != u.ID {
		t.Fatalf("by externalId: %+v", list)
	}
	_, total, err = f.store.FindSCIMUsers(f.ctx, f.org.ID, gatehouse.SCIMUserFilter{StartIndex: 2, Count: 0})
	ok(t, err)
	if total != 2 {
		t.Fatalf("total %d, want 2", total)
	}
	page2, _, err := f.store.FindSCIMUsers(f.ctx, f.org.ID, gatehouse.SCIMUserFilter{StartIndex: 2, Count: 5})
	ok(t, err)
	if len(page2) != 1 || page2[0].ID != u.ID {
		t.Fatalf("startIndex 2: %+v", page2)
	}
	// A change: the closure sees the user as it is and changes it.
	updated, err := f.store.UpdateSCIMUser(a.ctx(), f.org.ID, u.ID, func(w *gatehouse.SCIMUserWrite) error {
		if w.UserName != "grace@corp.example" || !w.Active {
			t.Errorf("the change sees %+v", w)
		}
		family := "Murray Hopper"
		w.FamilyName, w.Email = &family, "grace.hopper@corp.example"
		return nil
	})
	ok(t, err)
	a.want("member.update", "member", []string{u.ID}, map[string]any{"fields": []string{"name.familyName", "emails"}, "via": "scim"})
	if *updated.LastName != "Murray Hopper" || updated.Email != "grace.hopper@corp.example" {
		t.Fatalf("updated %+v", updated)
	}
	// The old member is adopted: a userName of their own from now on.
	adopted, err := f.store.UpdateSCIMUser(f.ctx, f.org.ID, old.ID, func(w *gatehouse.SCIMUserWrite) error {
		w.UserName = "ada.lovelace"
		return nil
	})
	ok(t, err)
	if adopted.UserName != "ada.lovelace" || adopted.Email != "Ada@Example.com" {
		t.Fatalf("adopted %+v", adopted)
	}
	_, err = f.store.UpdateSCIMUser(f.ctx, f.org.ID, u.ID, func(w *gatehouse.SCIMUserWrite) error {
		w.UserName = "Ada.Lovelace"
		return nil
	})
	wantCode(t, err, gatehouse.ECONFLICT)
	_, err = f.store.FindSCIMUser(f.ctx, f.org.ID, "user_nobody")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testSCIMDeactivation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID)
	ws := f.newWorkspace(t, f.org.ID, "research")
	u, err := f.store.CreateSCIMUser(f.ctx, f.org.ID, scimUser("grace@corp.example", ""))
	ok(t, err)
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, ws.ID, []string{u.ID})
	ok(t, err)
	f.setPassword(t, &u.Member, "a long enough password")
	_, token := f.newSession(t, u.ID)
	_, _, err = f.ssoSignIn(p, "sub-grace", "grace@corp.example", true)
	ok(t, err)
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &u.ID})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &u.ID, WorkspaceID: ws.ID})
	code, err := f.store.CreateAuthCode(f.ctx, f.org.ID, &u.ID, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb"})
	ok(t, err)

	a := f.newAuditRun(t, f.org.ID)
	got, err := f.store.UpdateSCIMUser(a.ctx(), f.org.ID, u.ID, func(w *gatehouse.SCIMUserWrite) error { w.Active = false; return nil })
	ok(t, err)
	if !got.Deactivated {
		t.Fatal("not deactivated")
	}
	f.wantNoSession(t, token)
	for _, k := range []*gatehouse.Key{k1, k2} {
		got, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
		if !got.Disabled {
			t.Fatalf("key %s of the deactivated member is active", k.Hash)
		}
	}
	if _, _, err := f.store.ExchangeAuthCode(f.ctx, gatehouse.AuthCodeExchange{Code: code.ID}); gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN {
		t.Fatalf("the deactivated member's code exchanges: %v", err)
	}
	ops := []string{}
	for _, e := range a.all()[:4] {
		ops = append(ops, e.Operation)
	}
	slices.Sort(ops)
	wantEqual(t, "audited", []string{"key.update", "key.update", "member.deactivate", "member.update"}, ops)
	// No way in: a session, a password, single sign-on.
	_, _, err = f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &u.ID})
	wantMessage(t, err, gatehouse.EFORBIDDEN, "your account in this organization is deactivated")
	_, _, err = f.accounts().SignIn(f.ctx, "grace@corp.example", "a long enough password")
	wantCode(t, err, gatehouse.EUNAUTHORIZED)
	_, _, err = f.ssoSignIn(p, "sub-grace", "grace@corp.example", true)
	wantMessage(t, err, gatehouse.EFORBIDDEN, "your account in this organization is deactivated")
	// Still a member, in their workspace: the provider may reactivate them.
	if ws := f.memberWorkspaces(t, u.ID); len(ws) != 1 {
		t.Fatalf("workspaces of the deactivated member: %v", ws)
	}
	_, err = f.store.UpdateSCIMUser(f.ctx, f.org.ID, u.ID, func(w *gatehouse.SCIMUserWrite) error { w.Active = true; return nil })
	ok(t, err)
	_, _, err = f.accounts().SignIn(f.ctx, "grace@corp.example", "a long enough password")
	ok(t, err)
	got2, err := f.store.FindKey(f.ctx, f.org.ID, k1.Hash)
	ok(t, err)
	if !got2.Disabled {
		t.Fatal("reactivation enabled a key again")
	}
}

func testSCIMDeleteUser(t *testing.T, open Opener) {
	f := newFixture(t, open)
	u, err := f.store.CreateSCIMUser(f.ctx, f.org.ID, scimUser("grace@corp.example", ""))
	ok(t, err)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &u.ID})
	// The management API refuses while the key is active; SCIM disables it first.
	wantCode(t, f.store.DeleteMember(f.ctx, f.org.ID, u.ID), gatehouse.EINVALID)
	a := f.newAuditRun(t, f.org.ID)
	ok(t, f.store.DeleteSCIMUser(a.ctx(), f.org.ID, u.ID))
	ops := []string{}
	for _, e := range a.all()[:2] {
		ops = append(ops, e.Operation)
	}
	wantEqual(t, "audited, newest first", []string{"member.delete", "key.update"}, ops)
	_, err = f.store.FindSCIMUser(f.ctx, f.org.ID, u.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	got, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	ok(t, err)
	if !got.Disabled {
		t.Fatal("the deleted member's key is active")
	}
	wantCode(t, f.store.DeleteSCIMUser(f.ctx, f.org.ID, u.ID), gatehouse.ENOTFOUND)
}

func testSCIMGroups(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "research")
	grace, err := f.store.CreateSCIMUser(f.ctx, f.org.ID, scimUser("grace@corp.example", ""))
	ok(t, err)
	alan, err := f.store.CreateSCIMUser(f.ctx, f.org.ID, scimUser("alan@corp.example", ""))
	ok(t, err)
	f.newMapping(t, "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159", gatehouse.RoleAdmin) // Entra names groups by object id
	f.newMapping(t, "Research", "", ws.ID)
	a := f.newAuditRun(t, f.org.ID)
	ext := "8aa1a0c0-c4c3-4bc0-b4a5-2ef676900159"
	admins, err := f.store.CreateSCIMGroup(a.ctx(), f.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "Gatehouse Admins", ExternalID: &ext, MemberIDs: []string{grace.ID}})
	ok(t, err)
	if f.role(t, grace.ID) != gatehouse.RoleAdmin || f.role(t, alan.ID) != gatehouse.RoleMember {
		t.Fatal("a group's mapping by externalId did not apply")
	}
	research, err := f.store.CreateSCIMGroup(f.ctx, f.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "Research"})
	ok(t, err)
	_, err = f.store.UpdateSCIMGroup(f.ctx, f.org.ID, research.ID, func(w *gatehouse.SCIMGroupWrite) error {
		w.MemberIDs = append(w.MemberIDs, grace.ID, alan.ID)
		return nil
	})
	ok(t, err)
	wantEqual(t, "alan's workspaces", []string{ws.ID}, f.memberWorkspaces(t, alan.ID))
	got, err := f.store.FindSCIMGroup(f.ctx, f.org.ID, research.ID, false)
	ok(t, err)
	if len(got.Members) != 2 {
		t.Fatalf("members %v", got.Members)
	}
	user, err := f.store.FindSCIMUser(f.ctx, f.org.ID, grace.ID)
	ok(t, err)
	wantEqual(t, "grace's groups", []gatehouse.SCIMGroupRef{{ID: admins.ID, DisplayName: "Gatehouse Admins"}, {ID: research.ID, DisplayName: "Research"}}, user.Groups)

	// Removed from the group: out of the workspace, with the key made there.
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &alan.ID, WorkspaceID: ws.ID})
	_, err = f.store.UpdateSCIMGroup(f.ctx, f.org.ID, research.ID, func(w *gatehouse.SCIMGroupWrite) error {
		w.MemberIDs = slices.DeleteFunc(w.MemberIDs, func(id string) bool { return id == alan.ID })
		return nil
	})
	ok(t, err)
	if len(f.memberWorkspaces(t, alan.ID)) != 0 {
		t.Fatal("alan is still in the workspace")
	}
	key, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
	ok(t, err)
	if !key.Disabled {
		t.Fatal("alan's key in the workspace is active")
	}
	// A rename the mapping does not follow takes what the name gave.
	_, err = f.store.UpdateSCIMGroup(f.ctx, f.org.ID, research.ID, func(w *gatehouse.SCIMGroupWrite) error { w.DisplayName = "R&D"; return nil })
	ok(t, err)
	if len(f.memberWorkspaces(t, grace.ID)) != 0 {
		t.Fatal("a renamed group still gives the old name's workspace")
	}
	for _, c := range []struct {
		name string
		w    gatehouse.SCIMGroupWrite
		code string
	}{
		{"a name taken", gatehouse.SCIMGroupWrite{DisplayName: "Gatehouse Admins"}, gatehouse.ECONFLICT},
		{"an unknown member", gatehouse.SCIMGroupWrite{DisplayName: "X", MemberIDs: []string{"user_nobody"}}, gatehouse.EINVALID},
		{"no name", gatehouse.SCIMGroupWrite{}, gatehouse.EINVALID},
	} {
		_, err := f.store.CreateSCIMGroup(a.ctx(), f.org.ID, c.w)
		wantCode(t, err, c.code)
	}
	// Deleted: its members lose what it gave.
	ok(t, f.store.DeleteSCIMGroup(f.ctx, f.org.ID, admins.ID))
	if f.role(t, grace.ID) != gatehouse.RoleMember {
		t.Fatal("a deleted group's role stays")
	}
	groups, total, err := f.store.FindSCIMGroups(f.ctx, f.org.ID, gatehouse.SCIMGroupFilter{DisplayName: "R&D", Count: 10, WithoutMembers: true})
	ok(t, err)
	if total != 1 || groups[0].ID != research.ID || len(groups[0].Members) != 0 {
		t.Fatalf("by displayName, without members: %+v", groups)
	}
}

func testSCIMTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	theirUser, err := f.store.CreateSCIMUser(f.ctx, other.ID, scimUser("eve@other.example", ""))
	ok(t, err)
	theirGroup, err := f.store.CreateSCIMGroup(f.ctx, other.ID, gatehouse.SCIMGroupWrite{DisplayName: "Theirs", MemberIDs: []string{theirUser.ID}})
	ok(t, err)
	_, err = f.store.FindSCIMUser(f.ctx, f.org.ID, theirUser.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.UpdateSCIMUser(f.ctx, f.org.ID, theirUser.ID, func(*gatehouse.SCIMUserWrite) error { return nil })
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteSCIMUser(f.ctx, f.org.ID, theirUser.ID), gatehouse.ENOTFOUND)
	_, err = f.store.FindSCIMGroup(f.ctx, f.org.ID, theirGroup.ID, false)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteSCIMGroup(f.ctx, f.org.ID, theirGroup.ID), gatehouse.ENOTFOUND)
	_, err = f.store.CreateSCIMGroup(f.ctx, f.org.ID, gatehouse.SCIMGroupWrite{DisplayName: "Mine", MemberIDs: []string{theirUser.ID}})
	wantCode(t, err, gatehouse.EINVALID)
	users, total, err := f.store.FindSCIMUsers(f.ctx, f.org.ID, gatehouse.SCIMUserFilter{Count: 10})
	ok(t, err)
	groups, gtotal, err2 := f.store.FindSCIMGroups(f.ctx, f.org.ID, gatehouse.SCIMGroupFilter{Count: 10})
	ok(t, err2)
	if total != 0 || len(users) != 0 || gtotal != 0 || len(groups) != 0 {
		t.Fatalf("another organization's users or groups are seen: %v %v", users, groups)
	}
	// The same userName may be in both organizations.
	_, err = f.store.CreateSCIMUser(f.ctx, f.org.ID, scimUser("eve@other.example", ""))
	ok(t, err)
}
