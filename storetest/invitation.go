package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

const (
	password      = "correct horse battery"
	otherPassword = "tr0ub4dor & 3 more words"
)

// invite creates an invitation in the fixture's organization.
func (f *fixture) invite(t *testing.T, email, role string) (*gatehouse.Invitation, string) {
	t.Helper()
	v, token, err := f.store.CreateInvitation(f.ctx, f.org.ID, gatehouse.InvitationCreate{Email: email, Role: role})
	ok(t, err)
	return v, token
}

// signUp invites email to org and accepts the invitation with a password.
func (f *fixture) signUp(t *testing.T, orgID, email, role, pw string) *gatehouse.Member {
	t.Helper()
	_, token, err := f.store.CreateInvitation(f.ctx, orgID, gatehouse.InvitationCreate{Email: email, Role: role})
	ok(t, err)
	m, err := f.accounts().AcceptInvitation(f.ctx, token, pw)
	ok(t, err)
	return m
}

// wantNoLink fails the test unless token is no usable link.
func (f *fixture) wantNoLink(t *testing.T, token string) {
	t.Helper()
	v, err := f.store.FindInvitation(f.ctx, token)
	if gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatalf("FindInvitation = %+v, %v; want ENOTFOUND", v, err)
	}
}

// members returns the organization's members by email.
func (f *fixture) membersByEmail(t *testing.T, orgID string) map[string]*gatehouse.Member {
	t.Helper()
	list, _, err := f.store.FindMembers(f.ctx, orgID, page(0, 100))
	ok(t, err)
	out := map[string]*gatehouse.Member{}
	for _, m := range list {
		out[m.Email] = m
	}
	return out
}

func testAccountInvitation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	admin := f.newMember(t, f.org.ID, "admin@example.com")
	a := f.newAuditRun(t, f.org.ID)
	adminActor := gatehouse.Actor{KeyHash: gatehouse.HashKey("console"), UserID: &admin.ID}
	v, token, err := f.store.CreateInvitation(a.as(adminActor), f.org.ID, gatehouse.InvitationCreate{Email: " ada@example.com "})
	ok(t, err)
	a.want("invitation.create", "invitation", []string{v.ID}, map[string]any{"role": gatehouse.RoleMember, "replaced": 0})
	checkToken(t, "invitation", token)
	now := f.clock.Now()
	want := &gatehouse.Invitation{ID: gatehouse.AccountTokenID(token), OrganizationID: f.org.ID, Email: "ada@example.com",
		Role: gatehouse.RoleMember, CreatedBy: &admin.ID, CreatedAt: now, ExpiresAt: now.Add(gatehouse.InvitationTTL)}
	wantEqual(t, "CreateInvitation", want, v)
	got, err := f.store.FindInvitation(f.ctx, token)
	ok(t, err)
	wantEqual(t, "FindInvitation", want, got)
	list, total, err := f.store.FindInvitations(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	wantEqual(t, "FindInvitations", []*gatehouse.Invitation{want}, list)
	if total != 1 {
		t.Errorf("FindInvitations total %d", total)
	}
	f.wantNoLink(t, v.ID) // the id is no token

	// A password the policy refuses changes nothing.
	accounts := f.accounts()
	for _, pw := range []string{"", "short", strings.Repeat("x", gatehouse.MinPasswordLength-1), strings.Repeat(" ", 20),
		strings.Repeat("x", gatehouse.MaxPasswordLength+1), "valid length\xffpassword"} {
		_, err := accounts.AcceptInvitation(a.anonymous(), token, pw)
		wantMessage(t, err, gatehouse.EINVALID, "password: ")
		a.wantNone("AcceptInvitation with a bad password")
	}
	_, err = accounts.AcceptInvitation(a.anonymous(), "unknown", password)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.AcceptInvitation(a.anonymous(), token, "not a hash")
	wantCode(t, err, gatehouse.EINVALID)
	a.wantNone("AcceptInvitation of nothing")

	// Accepted: the member exists, with the password; the link is used up.
	m, err := accounts.AcceptInvitation(a.anonymous(), token, password)
	ok(t, err)
	if !strings.HasPrefix(m.ID, "user_") || m.Email != "ada@example.com" || m.Role != gatehouse.RoleMember || !m.HasPassword || !m.CreatedAt.Equal(f.clock.Now()) {
		t.Fatalf("AcceptInvitation = %+v", m)
	}
	a.actor = &gatehouse.Actor{UserID: &m.ID}
	a.entries++ // member.create, then:
	a.want("invitation.accept", "invitation", []string{v.ID}, map[string]any{"user_id": m.ID})
	if e := a.all()[1]; e.Operation != "member.create" || e.ResourceIDs[0] != m.ID || e.ActorUserID == nil || *e.ActorUserID != m.ID || e.ActorKeyHash != nil {
		t.Errorf("entry before the acceptance: %+v", e)
	}
	wantEqual(t, "the new member", m, f.membersByEmail(t, f.org.ID)["ada@example.com"])
	_, err = accounts.AcceptInvitation(a.anonymous(), token, otherPassword)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.AcceptInvitation(a.anonymous(), token, gatehouse.HashPassword(otherPassword))
	wantCode(t, err, gatehouse.ENOTFOUND)
	a.wantNone("a second use of a link")
	f.wantNoLink(t, token)
	if _, total, _ := f.store.FindInvitations(f.ctx, f.org.ID, page(0, 10)); total != 0 {
		t.Errorf("FindInvitations lists %d after the acceptance", total)
	}
	if _, _, err := accounts.SignIn(f.ctx, "ada@example.com", password); err != nil {
		t.Errorf("SignIn with the accepted password: %v", err)
	}
	a.sync()

	// Refused invitations.
	for _, c := range []struct {
		create gatehouse.InvitationCreate
		code   string
		prefix string
	}{
		{gatehouse.InvitationCreate{}, gatehouse.EINVALID, "email: "},
		{gatehouse.InvitationCreate{Email: "Ada <ada@example.com>"}, gatehouse.EINVALID, "email: "},
		{gatehouse.InvitationCreate{Email: "x@example.com", Role: "admin"}, gatehouse.EINVALID, "role: "},
		{gatehouse.InvitationCreate{Email: "ADA@example.com"}, gatehouse.EINVALID, "email: ada@example.com is a member who has a password"},
	} {
		_, _, err := f.store.CreateInvitation(a.ctx(), f.org.ID, c.create)
		wantMessage(t, err, c.code, c.prefix)
		a.wantNone("a refused invitation")
	}
	_, _, err = f.store.CreateInvitation(a.ctx(), "00000000-0000-4000-8000-000000000000", gatehouse.InvitationCreate{Email: "x@example.com"})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testAccountInvitationExpires(t *testing.T, open Opener) {
	f := newFixture(t, open)
	v, token := f.invite(t, "ada@example.com", gatehouse.RoleAdmin)
	f.clock.Add(gatehouse.InvitationTTL - time.Millisecond)
	if _, err := f.store.FindInvitation(f.ctx, token); err != nil {
		t.Fatalf("FindInvitation just before the end: %v", err)
	}
	f.clock.Add(time.Millisecond)
	f.wantNoLink(t, token)
	_, err := f.accounts().AcceptInvitation(f.ctx, token, password)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.AcceptInvitation(f.ctx, token, gatehouse.HashPassword(password))
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteInvitation(f.ctx, f.org.ID, v.ID), gatehouse.ENOTFOUND)
	if _, total, _ := f.store.FindInvitations(f.ctx, f.org.ID, page(0, 10)); total != 0 {
		t.Errorf("FindInvitations lists %d expired links", total)
	}
	if _, found := f.membersByEmail(t, f.org.ID)["ada@example.com"]; found {
		t.Error("an expired invitation made a member")
	}
}

func testAccountInvitationOfMember(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{Email: "Ada@Example.com", Role: gatehouse.RoleAdmin})
	ok(t, err)
	_, _, err = f.store.CreateInvitation(f.ctx, f.org.ID, gatehouse.InvitationCreate{Email: "ada@example.com", Role: gatehouse.RoleMember})
	wantMessage(t, err, gatehouse.EINVALID, "role: Ada@Example.com is a member whose role is org:admin")
	v, token := f.invite(t, "ada@EXAMPLE.com", "")
	if v.UserID == nil || *v.UserID != m.ID || v.Email != m.Email || v.Role != gatehouse.RoleAdmin {
		t.Fatalf("invitation of a member = %+v", v)
	}
	got, err := f.accounts().AcceptInvitation(f.ctx, token, password)
	ok(t, err)
	m.HasPassword = true
	wantEqual(t, "the invited member", m, got)
	if n := len(f.membersByEmail(t, f.org.ID)); n != 1 {
		t.Errorf("%d members, want 1", n)
	}

	// A member added by the API after the invitation was made gets the
	// password.
	_, token = f.invite(t, "grace@example.com", "")
	grace := f.newMember(t, f.org.ID, "grace@example.com")
	got, err = f.accounts().AcceptInvitation(f.ctx, token, password)
	ok(t, err)
	if got.ID != grace.ID || !got.HasPassword {
		t.Errorf("AcceptInvitation for a member added since = %+v, want %s", got, grace.ID)
	}
}

func testAccountInvitationReplaced(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, first := f.invite(t, "ada@example.com", "")
	_, other := f.invite(t, "grace@example.com", "")
	a := f.newAuditRun(t, f.org.ID)
	v, second, err := f.store.CreateInvitation(a.ctx(), f.org.ID, gatehouse.InvitationCreate{Email: "ADA@example.com", Role: gatehouse.RoleAdmin})
	ok(t, err)
	a.want("invitation.create", "invitation", []string{v.ID}, map[string]any{"role": gatehouse.RoleAdmin, "replaced": 1})
	f.wantNoLink(t, first)
	if _, err := f.store.FindInvitation(f.ctx, other); err != nil {
		t.Errorf("another email's link: %v", err)
	}
	m, err := f.accounts().AcceptInvitation(f.ctx, second, password)
	ok(t, err)
	if m.Email != "ADA@example.com" || m.Role != gatehouse.RoleAdmin {
		t.Errorf("member of the second invitation = %+v", m)
	}
}

func testAccountInvitationRevoked(t *testing.T, open Opener) {
	f := newFixture(t, open)
	v, token := f.invite(t, "ada@example.com", "")
	a := f.newAuditRun(t, f.org.ID)
	ok(t, f.store.DeleteInvitation(a.ctx(), f.org.ID, v.ID))
	a.want("invitation.delete", "invitation", []string{v.ID}, nil)
	f.wantNoLink(t, token)
	_, err := f.accounts().AcceptInvitation(f.ctx, token, password)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteInvitation(a.ctx(), f.org.ID, v.ID), gatehouse.ENOTFOUND)
	a.wantNone("a second revocation")

	// Pages, newest first.
	var ids []string
	for _, email := range []string{"a@example.com", "b@example.com", "c@example.com"} {
		f.clock.Add(time.Second)
		v, _ := f.invite(t, email, "")
		ids = append([]string{v.ID}, ids...)
	}
	list, total, err := f.store.FindInvitations(f.ctx, f.org.ID, page(1, 1))
	ok(t, err)
	if total != 3 || len(list) != 1 || list[0].ID != ids[1] {
		t.Errorf("FindInvitations(1, 1) = %d, %+v; want %s of 3", total, list, ids[1])
	}
}

func testAccountResetPassword(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.signUp(t, f.org.ID, "ada@example.com", gatehouse.RoleAdmin, password)
	accounts := f.accounts()
	_, token1, err := accounts.SignIn(f.ctx, "ada@example.com", password)
	ok(t, err)
	_, token2 := f.newSession(t, m.ID)
	bystander := f.newMember(t, f.org.ID, "grace@example.com")
	s3, token3 := f.newSession(t, bystander.ID)

	a := f.newAuditRun(t, f.org.ID)
	v, first, err := f.store.ResetPassword(a.ctx(), f.org.ID, m.ID)
	ok(t, err)
	a.want("member.password_reset", "member", []string{m.ID}, map[string]any{"invitation_id": v.ID, "sessions": 2})
	now := f.clock.Now()
	want := &gatehouse.Invitation{ID: gatehouse.AccountTokenID(first), OrganizationID: f.org.ID, Email: m.Email, Role: gatehouse.RoleAdmin,
		UserID: &m.ID, CreatedBy: auditActor.UserID, CreatedAt: now, ExpiresAt: now.Add(gatehouse.InvitationTTL)}
	wantEqual(t, "ResetPassword", want, v)
	f.wantNoSession(t, token1)
	f.wantNoSession(t, token2)
	f.wantSession(t, token3, s3)
	if f.membersByEmail(t, f.org.ID)[m.Email].HasPassword {
		t.Error("the member still has a password")
	}
	_, _, err = accounts.SignIn(f.ctx, m.Email, password)
	wantCode(t, err, gatehouse.EUNAUTHORIZED)

	// A second reset replaces the first link.
	_, token, err := f.store.ResetPassword(f.ctx, f.org.ID, m.ID)
	ok(t, err)
	f.wantNoLink(t, first)
	got, err := accounts.AcceptInvitation(f.ctx, token, otherPassword)
	ok(t, err)
	if got.ID != m.ID || got.Role != gatehouse.RoleAdmin || !got.HasPassword {
		t.Errorf("AcceptInvitation of a reset = %+v", got)
	}
	if _, _, err := accounts.SignIn(f.ctx, m.Email, otherPassword); err != nil {
		t.Errorf("SignIn with the new password: %v", err)
	}
	_, _, err = accounts.SignIn(f.ctx, m.Email, password)
	wantCode(t, err, gatehouse.EUNAUTHORIZED)

	// A removed member's link goes with them.
	_, token, err = f.store.ResetPassword(f.ctx, f.org.ID, bystander.ID)
	ok(t, err)
	ok(t, f.store.DeleteMember(f.ctx, f.org.ID, bystander.ID))
	f.wantNoLink(t, token)
	a.sync()
	_, _, err = f.store.ResetPassword(a.ctx(), f.org.ID, bystander.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	a.wantNone("ResetPassword of a removed member")
}

func testAccountSignIn(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.signUp(t, f.org.ID, "Ada@Example.com", "", password)
	f.invite(t, "invited@example.com", "") // not accepted: no password
	accounts := f.accounts()
	s, token, err := accounts.SignIn(f.ctx, "  ada@EXAMPLE.com ", password)
	ok(t, err)
	if s.UserID == nil || *s.UserID != m.ID || s.OrganizationID != f.org.ID || s.Email != m.Email || s.Role != gatehouse.RoleMember {
		t.Errorf("SignIn = %+v", s)
	}
	f.wantSession(t, token, s)
	for _, c := range []struct{ email, password string }{
		{"ada@example.com", otherPassword},
		{"ada@example.com", strings.ToUpper(password)},
		{"ada@example.com", ""},
		{"nobody@example.com", password},
		{"invited@example.com", ""},
		{"invited@example.com", password},
		{"", password},
		{strings.Repeat("a", 300) + "@example.com", password},
		{"ada@example.com", strings.Repeat("p", 5000)},
	} {
		_, _, err := accounts.SignIn(f.ctx, c.email, c.password)
		wantMessage(t, err, gatehouse.EUNAUTHORIZED, "the email or the password is wrong")
	}
	if a, b := gatehouse.SignInBucket(" Ada@Example.com"), gatehouse.SignInBucket("ada@example.com"); a != b || strings.Contains(a, "ada") {
		t.Errorf("SignInBucket = %q and %q: want one name that shows no email", a, b)
	}
}

func testAccountSignInSeveralOrganizations(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.clock.Add(time.Second)
	newer := f.newOrg(t, "Newer")
	inNewer := f.signUp(t, newer.ID, "ada@example.com", "", otherPassword)
	inOldest := f.signUp(t, f.org.ID, "ada@example.com", "", password)
	accounts := f.accounts()
	for _, c := range []struct {
		password    string
		org, member string
	}{{password, f.org.ID, inOldest.ID}, {otherPassword, newer.ID, inNewer.ID}} {
		s, _, err := accounts.SignIn(f.ctx, "ada@example.com", c.password)
		ok(t, err)
		if s.OrganizationID != c.org || *s.UserID != c.member {
			t.Errorf("SignIn signed in to %s as %s, want %s as %s", s.OrganizationID, *s.UserID, c.org, c.member)
		}
	}
	creds, err := f.store.FindCredentials(f.ctx, "ADA@example.com")
	ok(t, err)
	if len(creds) != 2 || creds[0].OrganizationID != f.org.ID || creds[1].OrganizationID != newer.ID ||
		!strings.HasPrefix(creds[0].PasswordHash, "$argon2id$v=19$") {
		t.Errorf("FindCredentials = %+v", creds)
	}
}

func testAccountSignInWithKey(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k, plaintext, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "first start")
	ok(t, err)
	accounts := f.accounts()
	s, token, err := accounts.SignInWithKey(f.ctx, plaintext)
	ok(t, err)
	if s.KeyHash == nil || *s.KeyHash != k.Hash || s.UserID != nil || s.OrganizationID != f.org.ID || !s.IsAdmin() {
		t.Errorf("SignInWithKey = %+v", s)
	}
	f.wantSession(t, token, s)
	_, regular, err := f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: "regular"})
	ok(t, err)
	_, _, err = accounts.SignInWithKey(f.ctx, regular)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	_, _, err = accounts.SignInWithKey(f.ctx, gatehouse.NewKeySecret(true))
	wantCode(t, err, gatehouse.EUNAUTHORIZED)
	_, _, err = accounts.SignInWithKey(f.ctx, "")
	wantMessage(t, err, gatehouse.EINVALID, "key: ")
	_, err = f.store.SetManagementKeyDisabled(f.ctx, f.org.ID, k.Hash, true)
	ok(t, err)
	_, _, err = accounts.SignInWithKey(f.ctx, plaintext)
	wantCode(t, err, gatehouse.EUNAUTHORIZED)
	f.wantNoSession(t, token)
}

func testAccountMemberRole(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ada := f.newMember(t, f.org.ID, "ada@example.com")
	grace := f.newMember(t, f.org.ID, "grace@example.com")
	s, token := f.newSession(t, ada.ID)
	a := f.newAuditRun(t, f.org.ID)

	m, err := f.store.UpdateMemberRole(a.ctx(), f.org.ID, ada.ID, gatehouse.RoleAdmin)
	ok(t, err)
	a.want("member.update", "member", []string{ada.ID}, map[string]any{"fields": []string{"role"}, "role": gatehouse.RoleAdmin})
	ada.Role = gatehouse.RoleAdmin
	wantEqual(t, "UpdateMemberRole", ada, m)
	s.Role = gatehouse.RoleAdmin // at once, in the session too
	f.wantSession(t, token, s)
	_, err = f.store.UpdateMemberRole(a.ctx(), f.org.ID, ada.ID, gatehouse.RoleAdmin)
	ok(t, err)
	a.wantNone("UpdateMemberRole to the same role")

	// The last admin stays one.
	_, err = f.store.UpdateMemberRole(a.ctx(), f.org.ID, ada.ID, gatehouse.RoleMember)
	wantMessage(t, err, gatehouse.EINVALID, "role: ada@example.com is the organization's last admin")
	a.wantNone("demoting the last admin")
	_, err = f.store.UpdateMemberRole(a.ctx(), f.org.ID, grace.ID, gatehouse.RoleAdmin)
	ok(t, err)
	a.want("member.update", "member", []string{grace.ID}, map[string]any{"fields": []string{"role"}, "role": gatehouse.RoleAdmin})
	_, err = f.store.UpdateMemberRole(a.ctx(), f.org.ID, ada.ID, gatehouse.RoleMember)
	ok(t, err)
	a.want("member.update", "member", []string{ada.ID}, map[string]any{"fields": []string{"role"}, "role": gatehouse.RoleMember})
	_, err = f.store.UpdateMemberRole(a.ctx(), f.org.ID, grace.ID, gatehouse.RoleMember)
	wantCode(t, err, gatehouse.EINVALID)

	for _, c := range []struct{ user, role, code string }{
		{ada.ID, "admin", gatehouse.EINVALID},
		{ada.ID, "", gatehouse.EINVALID},
		{"user_ghost", gatehouse.RoleAdmin, gatehouse.ENOTFOUND},
	} {
		_, err := f.store.UpdateMemberRole(a.ctx(), f.org.ID, c.user, c.role)
		wantCode(t, err, c.code)
	}
	a.wantNone("refused role changes")
}

// testAccountRaces tries the races an attacker (or an unlucky admin) can
// start: one link used by several requests at once sets one password and
// makes one member; two admins demoted at once leave one admin.
func testAccountRaces(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, token := f.invite(t, "ada@example.com", gatehouse.RoleAdmin)
	hashes := make([]string, 6)
	for i := range hashes {
		hashes[i] = gatehouse.HashPassword(fmt.Sprintf("password number %d", i))
	}
	var wg sync.WaitGroup
	errs := make([]error, len(hashes))
	for i, h := range hashes {
		wg.Go(func() { _, errs[i] = f.store.AcceptInvitation(f.ctx, token, h) })
	}
	wg.Wait()
	won := -1
	for i, err := range errs {
		switch {
		case err == nil && won < 0:
			won = i
		case err == nil:
			t.Fatalf("the link was used twice: by %d and %d", won, i)
		case gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND:
			t.Fatalf("a concurrent use: %v, want ENOTFOUND", err)
		}
	}
	if won < 0 {
		t.Fatal("no use of the link succeeded")
	}
	creds, err := f.store.FindCredentials(f.ctx, "ada@example.com")
	ok(t, err)
	if len(creds) != 1 || creds[0].PasswordHash != hashes[won] {
		t.Fatalf("credentials after the race: %+v, want the winner's hash", creds)
	}

	grace := f.newMember(t, f.org.ID, "grace@example.com")
	_, err = f.store.UpdateMemberRole(f.ctx, f.org.ID, grace.ID, gatehouse.RoleAdmin)
	ok(t, err)
	for _, id := range []string{creds[0].UserID, grace.ID} {
		wg.Go(func() {
			if _, err := f.store.UpdateMemberRole(f.ctx, f.org.ID, id, gatehouse.RoleMember); err != nil && gatehouse.ErrorCode(err) != gatehouse.EINVALID {
				t.Errorf("a concurrent demotion: %v", err)
			}
		})
	}
	wg.Wait()
	admins := 0
	for _, m := range f.membersByEmail(t, f.org.ID) {
		if m.Role == gatehouse.RoleAdmin {
			admins++
		}
	}
	if admins != 1 {
		t.Errorf("%d admins after two concurrent demotions, want 1", admins)
	}
}
