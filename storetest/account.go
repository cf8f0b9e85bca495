package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// testAccounts checks the console's accounts: sessions, invitation and
// reset links, passwords and roles, through the store and through
// gatehouse.Accounts over it.
func testAccounts(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"MemberSession", testAccountMemberSession},
		{"SessionIdleEnd", testAccountSessionIdleEnd},
		{"SessionAbsoluteEnd", testAccountSessionAbsoluteEnd},
		{"SessionTouchOncePerInterval", testAccountSessionTouch},
		{"SessionEndsWithMember", testAccountSessionEndsWithMember},
		{"KeySession", testAccountKeySession},
		{"SignOut", testAccountSignOut},
		{"Invitation", testAccountInvitation},
		{"InvitationExpires", testAccountInvitationExpires},
		{"InvitationOfMember", testAccountInvitationOfMember},
		{"InvitationReplaced", testAccountInvitationReplaced},
		{"InvitationRevoked", testAccountInvitationRevoked},
		{"ResetPassword", testAccountResetPassword},
		{"SignIn", testAccountSignIn},
		{"SignInSeveralOrganizations", testAccountSignInSeveralOrganizations},
		{"SignInWithKey", testAccountSignInWithKey},
		{"RecordSignIn", testAccountRecordSignIn},
		{"MemberRole", testAccountMemberRole},
		{"Tenancy", testAccountTenancy},
		{"Races", testAccountRaces},
	})
}

// accounts returns the sign-in policy over the fixture's store and clock.
func (f *fixture) accounts() *gatehouse.Accounts { return gatehouse.NewAccounts(f.store, f.clock.Now) }

// newSession opens a session of a member of the fixture's organization.
func (f *fixture) newSession(t *testing.T, userID string) (*gatehouse.Session, string) {
	t.Helper()
	s, token, err := f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &userID})
	ok(t, err)
	return s, token
}

// wantSession fails the test unless token reads as the session want.
func (f *fixture) wantSession(t *testing.T, token string, want *gatehouse.Session) {
	t.Helper()
	got, err := f.store.FindSession(f.ctx, token)
	ok(t, err)
	wantEqual(t, "FindSession", want, got)
}

// wantNoSession fails the test unless token has no live session.
func (f *fixture) wantNoSession(t *testing.T, token string) {
	t.Helper()
	s, err := f.store.FindSession(f.ctx, token)
	if gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatalf("FindSession = %+v, %v; want ENOTFOUND", s, err)
	}
}

// checkToken fails the test unless token is 32 bytes in base64url.
func checkToken(t *testing.T, what, token string) {
	t.Helper()
	if len(token) != 43 || strings.Trim(token, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_") != "" {
		t.Fatalf("%s token %q: want 43 characters of base64url", what, token)
	}
}

func testAccountMemberSession(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	a := f.newAuditRun(t, f.org.ID)
	s, token, err := f.store.CreateSession(a.anonymous(), gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &m.ID})
	ok(t, err)
	a.actor = &gatehouse.Actor{UserID: &m.ID} // a sign-in is the member's own act
	a.want("session.create", "session", []string{s.ID}, map[string]any{"method": "password"})
	checkToken(t, "session", token)
	checkToken(t, "CSRF", s.CSRFToken)
	now := f.clock.Now()
	want := &gatehouse.Session{ID: gatehouse.AccountTokenID(token), OrganizationID: f.org.ID, UserID: &m.ID,
		Email: "ada@example.com", Role: gatehouse.RoleMember, CSRFToken: s.CSRFToken,
		CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(gatehouse.SessionLifetime)}
	wantEqual(t, "CreateSession", want, s)
	f.wantSession(t, token, want)
	if s.ID == token || s.CSRFToken == token {
		t.Fatal("the session's id or CSRF token is its token")
	}
	if u := s.Actor().UserID; u == nil || *u != m.ID || s.Actor().KeyHash != "" || s.IsAdmin() {
		t.Errorf("Actor = %+v, IsAdmin = %v", s.Actor(), s.IsAdmin())
	}

	// What is not a session's token; another member's session is theirs.
	for _, bad := range []string{"", s.ID, s.CSRFToken, token + "x", strings.ToUpper(token)} {
		f.wantNoSession(t, bad)
	}
	other := f.newMember(t, f.org.ID, "grace@example.com")
	_, token2 := f.newSession(t, other.ID)
	if s2, err := f.store.FindSession(f.ctx, token2); err != nil || *s2.UserID != other.ID || s2.CSRFToken == s.CSRFToken {
		t.Fatalf("second session = %+v, %v", s2, err)
	}

	// A shorter lifetime; refused creations.
	short, _, err := f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &m.ID, Lifetime: time.Hour})
	ok(t, err)
	if !short.ExpiresAt.Equal(now.Add(time.Hour)) {
		t.Errorf("ExpiresAt with a lifetime of an hour = %v", short.ExpiresAt)
	}
	key := gatehouse.HashKey("x")
	a.sync()
	for _, c := range []struct {
		name   string
		create gatehouse.SessionCreate
		code   string
	}{
		{"neither member nor key", gatehouse.SessionCreate{OrganizationID: f.org.ID}, gatehouse.EINVALID},
		{"both member and key", gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &m.ID, KeyHash: &key}, gatehouse.EINVALID},
		{"longer than the lifetime", gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &m.ID, Lifetime: gatehouse.SessionLifetime + time.Second}, gatehouse.EINVALID},
		{"negative lifetime", gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &m.ID, Lifetime: -time.Second}, gatehouse.EINVALID},
		{"unknown member", gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: strp("user_ghost")}, gatehouse.ENOTFOUND},
		{"unknown key", gatehouse.SessionCreate{OrganizationID: f.org.ID, KeyHash: &key}, gatehouse.ENOTFOUND},
	} {
		_, _, err := f.store.CreateSession(a.ctx(), c.create)
		if gatehouse.ErrorCode(err) != c.code {
			t.Errorf("%s: %v, want %s", c.name, err, c.code)
		}
		a.wantNone(c.name)
	}
}

func testAccountSessionIdleEnd(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	s, token := f.newSession(t, m.ID)
	f.clock.Add(gatehouse.SessionIdleTimeout - time.Millisecond)
	f.wantSession(t, token, s)
	ok(t, f.store.TouchSession(f.ctx, s.ID))
	s.LastSeenAt = f.clock.Now()
	if !s.IdleAt().Equal(f.clock.Now().Add(gatehouse.SessionIdleTimeout)) {
		t.Errorf("IdleAt = %v", s.IdleAt())
	}
	f.clock.Add(gatehouse.SessionIdleTimeout - time.Millisecond)
	f.wantSession(t, token, s)
	f.clock.Add(time.Millisecond)
	f.wantNoSession(t, token)
	// Activity recorded too late revives nothing.
	ok(t, f.store.TouchSession(f.ctx, s.ID))
	f.wantNoSession(t, token)
}

func testAccountSessionAbsoluteEnd(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	s, token := f.newSession(t, m.ID)
	end := s.ExpiresAt
	for f.clock.Now().Add(gatehouse.SessionIdleTimeout / 2).Before(end) {
		f.clock.Add(gatehouse.SessionIdleTimeout / 2)
		ok(t, f.store.TouchSession(f.ctx, s.ID))
	}
	f.clock.Set(end.Add(-time.Millisecond))
	got, err := f.store.FindSession(f.ctx, token)
	ok(t, err)
	if !got.IdleAt().Equal(end) {
		t.Errorf("IdleAt near the end = %v, want the absolute end %v", got.IdleAt(), end)
	}
	f.clock.Set(end)
	f.wantNoSession(t, token)
	ok(t, f.store.TouchSession(f.ctx, s.ID))
	f.wantNoSession(t, token)
}

func testAccountSessionTouch(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	s, token := f.newSession(t, m.ID)
	accounts := f.accounts()
	start := f.clock.Now()
	for _, c := range []struct {
		after    time.Duration // since the start
		lastSeen time.Duration // since the start, as stored after the call
	}{
		{30 * time.Second, 0},
		{gatehouse.SessionTouchInterval - time.Millisecond, 0},
		{gatehouse.SessionTouchInterval, gatehouse.SessionTouchInterval},
		{gatehouse.SessionTouchInterval + 59*time.Second, gatehouse.SessionTouchInterval},
		{3 * gatehouse.SessionTouchInterval, 3 * gatehouse.SessionTouchInterval},
	} {
		f.clock.Set(start.Add(c.after))
		got, err := accounts.Session(f.ctx, token)
		ok(t, err)
		stored, err := f.store.FindSession(f.ctx, token)
		ok(t, err)
		if want := start.Add(c.lastSeen); !got.LastSeenAt.Equal(want) || !stored.LastSeenAt.Equal(want) {
			t.Errorf("after %v: Session's LastSeenAt %v, stored %v; want %v", c.after, got.LastSeenAt, stored.LastSeenAt, want)
		}
	}
	// TouchSession itself writes at most once an interval.
	f.clock.Add(time.Second)
	ok(t, f.store.TouchSession(f.ctx, s.ID))
	if got, _ := f.store.FindSession(f.ctx, token); !got.LastSeenAt.Equal(start.Add(3 * gatehouse.SessionTouchInterval)) {
		t.Errorf("TouchSession a second after the last: LastSeenAt %v", got.LastSeenAt)
	}
	ok(t, f.store.TouchSession(f.ctx, gatehouse.AccountTokenID("gone")))
	_, err := accounts.Session(f.ctx, "gone")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testAccountSessionEndsWithMember(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	stays := f.newMember(t, f.org.ID, "grace@example.com")
	_, token := f.newSession(t, m.ID)
	s2, token2 := f.newSession(t, stays.ID)
	ok(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID))
	f.wantNoSession(t, token)
	f.wantSession(t, token2, s2)
	// A new member with the same id and email is not the one signed in.
	_, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{ID: m.ID, Email: m.Email})
	ok(t, err)
	f.wantNoSession(t, token)
}

func testAccountKeySession(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k, _, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "admin")
	ok(t, err)
	a := f.newAuditRun(t, f.org.ID)
	s, token, err := f.store.CreateSession(a.anonymous(), gatehouse.SessionCreate{OrganizationID: f.org.ID, KeyHash: &k.Hash})
	ok(t, err)
	a.actor = &gatehouse.Actor{KeyHash: k.Hash}
	a.want("session.create", "session", []string{s.ID}, map[string]any{"method": "management_key"})
	now := f.clock.Now()
	want := &gatehouse.Session{ID: gatehouse.AccountTokenID(token), OrganizationID: f.org.ID, KeyHash: &k.Hash,
		Role: gatehouse.RoleAdmin, CSRFToken: s.CSRFToken, CreatedAt: now, LastSeenAt: now, ExpiresAt: now.Add(gatehouse.SessionLifetime)}
	wantEqual(t, "CreateSession", want, s)
	f.wantSession(t, token, want)
	if s.Actor() != (gatehouse.Actor{KeyHash: k.Hash}) || !s.IsAdmin() {
		t.Errorf("Actor = %+v, IsAdmin = %v", s.Actor(), s.IsAdmin())
	}

	// Only an active management key of the organization opens one.
	regular := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	other := f.newOrg(t, "Other")
	otherKey, _, err := f.store.CreateManagementKey(f.ctx, other.ID, "")
	ok(t, err)
	for _, hash := range []string{regular.Hash, otherKey.Hash} {
		_, _, err := f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: f.org.ID, KeyHash: &hash})
		wantCode(t, err, gatehouse.ENOTFOUND)
	}

	// Disabling the key ends its sessions for good; deleting it too.
	a.sync()
	_, err = f.store.SetManagementKeyDisabled(a.ctx(), f.org.ID, k.Hash, true)
	ok(t, err)
	a.want("management_key.update", "management_key", []string{k.Hash}, map[string]any{"fields": []string{"disabled"}, "disabled": true})
	f.wantNoSession(t, token)
	_, _, err = f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: f.org.ID, KeyHash: &k.Hash})
	wantCode(t, err, gatehouse.ENOTFOUND)
	got, err := f.store.SetManagementKeyDisabled(a.ctx(), f.org.ID, k.Hash, false)
	ok(t, err)
	a.want("management_key.update", "management_key", []string{k.Hash}, map[string]any{"fields": []string{"disabled"}, "disabled": false})
	if got.Disabled {
		t.Error("SetManagementKeyDisabled(false) left the key disabled")
	}
	f.wantNoSession(t, token)
	_, token, err = f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: f.org.ID, KeyHash: &k.Hash})
	ok(t, err)
	a.sync()
	ok(t, f.store.DeleteManagementKey(a.ctx(), f.org.ID, k.Hash))
	a.want("management_key.delete", "management_key", []string{k.Hash}, nil)
	f.wantNoSession(t, token)
	if _, err := f.store.FindKeyByHash(f.ctx, k.Hash); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("FindKeyByHash of a deleted management key: %v", err)
	}

	// Neither call touches a regular key, another organization's or an
	// unknown one.
	for _, hash := range []string{regular.Hash, otherKey.Hash, k.Hash} {
		_, err := f.store.SetManagementKeyDisabled(a.ctx(), f.org.ID, hash, true)
		wantCode(t, err, gatehouse.ENOTFOUND)
		wantCode(t, f.store.DeleteManagementKey(a.ctx(), f.org.ID, hash), gatehouse.ENOTFOUND)
		a.wantNone("a refused change of a management key")
	}
}

func testAccountSignOut(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	other := f.newMember(t, f.org.ID, "grace@example.com")
	s1, token1 := f.newSession(t, m.ID)
	_, token2 := f.newSession(t, m.ID)
	_, token3 := f.newSession(t, m.ID)
	s4, token4 := f.newSession(t, other.ID)
	a := f.newAuditRun(t, f.org.ID)

	ok(t, f.store.DeleteSession(a.as(s1.Actor()), s1.ID))
	a.want("session.delete", "session", []string{s1.ID}, nil)
	f.wantNoSession(t, token1)
	ok(t, f.store.DeleteSession(a.ctx(), s1.ID)) // gone already: nothing to do
	a.wantNone("DeleteSession of an ended session")

	ok(t, f.store.DeleteSessions(a.as(s1.Actor()), f.org.ID, m.ID))
	a.want("sessions.delete", "member", []string{m.ID}, map[string]any{"sessions": 2})
	f.wantNoSession(t, token2)
	f.wantNoSession(t, token3)
	f.wantSession(t, token4, s4)
	wantCode(t, f.store.DeleteSessions(a.ctx(), f.org.ID, "user_ghost"), gatehouse.ENOTFOUND)
	a.wantNone("DeleteSessions of an unknown member")
}

func testAccountTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	theirs := f.newMember(t, other.ID, "eve@example.com")
	_, err := f.store.UpdateMemberRole(f.ctx, other.ID, theirs.ID, gatehouse.RoleAdmin)
	ok(t, err)
	s, token, err := f.store.CreateSession(f.ctx, gatehouse.SessionCreate{OrganizationID: other.ID, UserID: &theirs.ID})
	ok(t, err)
	link, linkToken, err := f.store.CreateInvitation(f.ctx, other.ID, gatehouse.InvitationCreate{Email: "new@example.com"})
	ok(t, err)
	a := f.newAuditRun(t, f.org.ID)

	// The first organization reaches none of the other's member, sessions
	// or links.
	_, _, err = f.store.CreateSession(a.ctx(), gatehouse.SessionCreate{OrganizationID: f.org.ID, UserID: &theirs.ID})
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteSessions(a.ctx(), f.org.ID, theirs.ID), gatehouse.ENOTFOUND)
	_, _, err = f.store.ResetPassword(a.ctx(), f.org.ID, theirs.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.UpdateMemberRole(a.ctx(), f.org.ID, theirs.ID, gatehouse.RoleMember)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteInvitation(a.ctx(), f.org.ID, link.ID), gatehouse.ENOTFOUND)
	list, total, err := f.store.FindInvitations(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if total != 0 || len(list) != 0 {
		t.Errorf("FindInvitations of the first organization: %d, %d", total, len(list))
	}
	a.wantNone("changes across organizations")
	f.wantSession(t, token, s)
	if got, err := f.store.FindInvitation(f.ctx, linkToken); err != nil || got.ID != link.ID {
		t.Errorf("FindInvitation of the other's link: %+v, %v", got, err)
	}
	if m, _, err := f.store.FindMembers(f.ctx, other.ID, page(0, 10)); err != nil || m[0].Role != gatehouse.RoleAdmin {
		t.Errorf("the other's member after the refused changes: %+v, %v", m, err)
	}
}

// testAccountRecordSignIn: a refused sign-in is written into the audit log
// of each organization where the email is a member with a password (its
// case and spaces aside), by the visitor; an unknown email, or a member
// without a password, writes nothing; a bad event writes nothing.
func testAccountRecordSignIn(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other, err := f.store.CreateOrganization(f.ctx, "Other")
	ok(t, err)
	ada := f.memberWithPassword(t, f.org.ID, "ada@example.com", "correct horse battery")
	adaThere := f.memberWithPassword(t, other.ID, "ada@example.com", "another horse battery")
	f.newMember(t, f.org.ID, "nopass@example.com")
	here, there := f.newAuditRun(t, f.org.ID), f.newAuditRun(t, other.ID)
	visitor := gatehouse.Actor{System: gatehouse.ActorVisitor}

	ok(t, f.store.RecordSignIn(here.anonymous(), gatehouse.SignInEvent{Email: " ADA@example.com ", Result: gatehouse.AuditResultThrottled, Address: "192.0.2.1"}))
	there.reqID = here.reqID
	for _, c := range []struct {
		a  *auditRun
		id string
	}{{here, ada.ID}, {there, adaThere.ID}} {
		c.a.actor = &visitor
		c.a.wantResult("session.create", gatehouse.AuditResultThrottled, "member", []string{c.id}, map[string]any{"method": "password", "address": "192.0.2.1"})
	}

	ok(t, f.store.RecordSignIn(here.anonymous(), gatehouse.SignInEvent{Email: "ada@example.com", Result: gatehouse.AuditResultFailure, Address: "2001:db8::1",
		Lockouts: []gatehouse.SignInLockout{{Scope: gatehouse.SignInLockoutAddress, RetryAfter: 19500 * time.Millisecond}, {Scope: gatehouse.SignInLockoutAccount, RetryAfter: time.Minute}}}))
	for _, c := range []struct {
		a  *auditRun
		id string
	}{{here, ada.ID}, {there, adaThere.ID}} {
		list := c.a.all()
		if len(list) != c.a.entries+3 {
			t.Fatalf("a failure with two lock-outs left %d entries, want 3", len(list)-c.a.entries)
		}
		c.a.entries += 3
		got := []string{}
		for _, e := range list[:3] {
			if e.ActorSystem == nil || *e.ActorSystem != gatehouse.ActorVisitor || e.ResourceIDs[0] != c.id || e.Details["address"] != "2001:db8::1" {
				t.Errorf("%s entry: %+v", e.Operation, e)
			}
			got = append(got, fmt.Sprint(e.Operation, " ", e.Result, " ", e.Details["scope"], " ", e.Details["retry_after_seconds"]))
		}
		slices.Sort(got)
		wantEqual(t, "a failure's entries", []string{"session.create failure <nil> <nil>", "session.lockout success account 60", "session.lockout success address 20"}, got)
	}

	// Nothing for an unknown email, nor for a member without a password.
	for _, email := range []string{"nobody@example.com", "nopass@example.com", ""} {
		ok(t, f.store.RecordSignIn(here.anonymous(), gatehouse.SignInEvent{Email: email, Result: gatehouse.AuditResultFailure, Address: "192.0.2.1"}))
		here.wantNone(email)
	}
	// Events that are not one change nothing.
	for _, bad := range []gatehouse.SignInEvent{
		{Email: "ada@example.com", Result: gatehouse.AuditResultSuccess},
		{Email: "ada@example.com", Result: gatehouse.AuditResultThrottled, Lockouts: []gatehouse.SignInLockout{{Scope: gatehouse.SignInLockoutAddress}}},
		{Email: "ada@example.com", Result: gatehouse.AuditResultFailure, Lockouts: []gatehouse.SignInLockout{{Scope: "everyone"}}},
		{Email: "ada@example.com\x00", Result: gatehouse.AuditResultFailure},
	} {
		wantCode(t, f.store.RecordSignIn(here.anonymous(), bad), gatehouse.EINVALID)
		here.wantNone(fmt.Sprintf("%+v", bad))
	}
	there.wantNone("the events refused")
}

// memberWithPassword makes a member of org with a password, as accepting
// an invitation does.
func (f *fixture) memberWithPassword(t *testing.T, orgID, email, password string) *gatehouse.Member {
	t.Helper()
	_, token, err := f.store.CreateInvitation(f.ctx, orgID, gatehouse.InvitationCreate{Email: email})
	ok(t, err)
	m, err := f.store.AcceptInvitation(f.ctx, token, gatehouse.HashPassword(password))
	ok(t, err)
	return m
}
