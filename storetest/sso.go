package storetest

import (
	"fmt"
	"testing"
	"time"

	"gatehouse"
)

// testSSO checks single sign-on: the providers and their sealed secrets,
// the sign-ins under way, who a verified sign-in lets in, how the members
// may sign in, and what group mappings give and take away.
func testSSO(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"Providers", testSSOProviders},
		{"ProviderTenancy", testSSOProviderTenancy},
		{"Logins", testSSOLogins},
		{"SignInLinksVerifiedEmail", testSSOSignInLinks},
		{"SignInRefusesUnverified", testSSOSignInUnverified},
		{"SignInInvited", testSSOSignInInvited},
		{"SignInAllowedDomain", testSSOSignInDomain},
		{"PasswordSignInOff", testSSOPasswordOff},
		{"GroupMappings", testSSOGroupMappings},
		{"GroupRemovalTakesKeys", testSSOGroupRemoval},
		{"MappingChangesApply", testSSOMappingChanges},
		{"MappingValidation", testSSOMappingValidation},
	})
}

// newProvider adds an enabled provider to the organization.
func (f *fixture) newProvider(t *testing.T, orgID string, domains ...string) *gatehouse.SSOProvider {
	t.Helper()
	u := gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Okta"), IssuerURL: gatehouse.Val("https://acme.okta.example/"),
		ClientID: gatehouse.Val("client-1"), ClientSecret: gatehouse.Val("a client secret of some length")}
	if domains != nil {
		u.AllowedDomains = gatehouse.Val(domains)
	}
	p, err := f.store.CreateSSOProvider(f.ctx, orgID, u)
	ok(t, err)
	return p
}

// ssoSignIn signs someone in through provider p.
func (f *fixture) ssoSignIn(p *gatehouse.SSOProvider, subject, email string, verified bool, groups ...string) (*gatehouse.Session, string, error) {
	return f.store.SignInWithSSO(f.ctx, gatehouse.SSOSignIn{ProviderID: p.ID, Subject: subject, Email: email,
		EmailVerified: verified, Name: "Ada Lovelace", Groups: groups, GroupsGiven: true})
}

func testSSOProviders(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	p, err := f.store.CreateSSOProvider(a.ctx(), f.org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Okta"),
		IssuerURL: gatehouse.Val("https://acme.okta.example/"), ClientID: gatehouse.Val("client-1"),
		ClientSecret: gatehouse.Val("a client secret of some length"), Scopes: gatehouse.Val([]string{"groups", "email"})})
	ok(t, err)
	a.want("sso_provider.create", "sso_provider", []string{p.ID}, map[string]any{"fields": []string{"name", "issuer_url", "client_id", "client_secret", "scopes"}})
	want := &gatehouse.SSOProvider{ID: p.ID, OrganizationID: f.org.ID, Name: "Okta", IssuerURL: "https://acme.okta.example/",
		ClientID: "client-1", ClientSecretLabel: "********ngth", Scopes: []string{"openid", "groups", "email"},
		EmailClaim: "email", EmailVerifiedClaim: "email_verified", NameClaim: "name", GroupsClaim: "groups",
		Enabled: true, CreatedAt: f.clock.Now(), UpdatedAt: f.clock.Now()}
	wantEqual(t, "created provider", want, p)
	got, err := f.store.FindSSOProvider(f.ctx, f.org.ID, p.ID)
	ok(t, err)
	wantEqual(t, "FindSSOProvider (no secret)", want, got)
	signIn, err := f.store.FindSSOProviderForSignIn(f.ctx, p.ID)
	ok(t, err)
	if string(signIn.ClientSecret) != "a client secret of some length" {
		t.Fatalf("FindSSOProviderForSignIn: the secret does not open")
	}

	// The secret is replaced, then removed (a public client); groups are no longer read.
	u, err := f.store.UpdateSSOProvider(a.ctx(), f.org.ID, p.ID, gatehouse.SSOProviderUpdate{
		ClientSecret: gatehouse.Val("another secret, longer still"), GroupsClaim: gatehouse.Null[string]()})
	ok(t, err)
	a.want("sso_provider.update", "sso_provider", []string{p.ID}, map[string]any{"fields": []string{"client_secret", "groups_claim"}})
	if u.ClientSecretLabel != "********till" || u.GroupsClaim != "" {
		t.Fatalf("updated provider: label %q, groups claim %q", u.ClientSecretLabel, u.GroupsClaim)
	}
	signIn, err = f.store.FindSSOProviderForSignIn(f.ctx, p.ID)
	ok(t, err)
	if string(signIn.ClientSecret) != "another secret, longer still" {
		t.Fatal("the new secret does not open")
	}
	_, err = f.store.UpdateSSOProvider(f.ctx, f.org.ID, p.ID, gatehouse.SSOProviderUpdate{ClientSecret: gatehouse.Null[string]()})
	ok(t, err)
	signIn, err = f.store.FindSSOProviderForSignIn(f.ctx, p.ID)
	ok(t, err)
	if signIn.ClientSecret != "" || signIn.ClientSecretLabel != "" {
		t.Fatal("a public client still has a secret")
	}

	// Bad input changes nothing.
	a.sync()
	for _, c := range []struct {
		name string
		u    gatehouse.SSOProviderUpdate
		msg  string
	}{
		{"http issuer", gatehouse.SSOProviderUpdate{IssuerURL: gatehouse.Val("http://idp.example.com")}, "issuer_url:"},
		{"issuer with query", gatehouse.SSOProviderUpdate{IssuerURL: gatehouse.Val("https://idp.example.com/?a=b")}, "issuer_url:"},
		{"claim with space", gatehouse.SSOProviderUpdate{EmailClaim: gatehouse.Val("e mail")}, "email_claim:"},
		{"null name", gatehouse.SSOProviderUpdate{Name: gatehouse.Null[string]()}, "name:"},
		{"bad domain", gatehouse.SSOProviderUpdate{AllowedDomains: gatehouse.Val([]string{"acme"})}, "allowed_domains[0]:"},
		{"ip as domain", gatehouse.SSOProviderUpdate{AllowedDomains: gatehouse.Val([]string{"10.0.0.1"})}, "allowed_domains[0]:"},
	} {
		_, err := f.store.UpdateSSOProvider(a.ctx(), f.org.ID, p.ID, c.u)
		wantMessage(t, err, gatehouse.EINVALID, c.msg)
		a.wantNone(c.name)
	}

	list, total, err := f.store.FindSSOProviders(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != p.ID {
		t.Fatalf("FindSSOProviders = %d, %v", total, list)
	}
	// A disabled provider signs nobody in, and is not on the sign-in page.
	_, err = f.store.UpdateSSOProvider(f.ctx, f.org.ID, p.ID, gatehouse.SSOProviderUpdate{Enabled: gatehouse.Val(false)})
	ok(t, err)
	_, err = f.store.FindSSOProviderForSignIn(f.ctx, p.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	buttons, err := f.store.FindSignInProviders(f.ctx)
	ok(t, err)
	if len(buttons) != 0 {
		t.Fatalf("a disabled provider is on the sign-in page: %v", buttons)
	}
	a.sync()
	ok(t, f.store.DeleteSSOProvider(a.ctx(), f.org.ID, p.ID))
	a.want("sso_provider.delete", "sso_provider", []string{p.ID}, nil)
	_, err = f.store.FindSSOProvider(f.ctx, f.org.ID, p.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testSSOProviderTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.clock.Add(time.Second) // the fixture's organization is the first
	other := f.newOrg(t, "Other")
	theirs := f.newProvider(t, other.ID)
	_, err := f.store.FindSSOProvider(f.ctx, f.org.ID, theirs.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.UpdateSSOProvider(f.ctx, f.org.ID, theirs.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("mine")})
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteSSOProvider(f.ctx, f.org.ID, theirs.ID), gatehouse.ENOTFOUND)
	_, err = f.store.FindSSOProvider(f.ctx, f.org.ID, "not-a-uuid")
	wantCode(t, err, gatehouse.ENOTFOUND)
	list, total, err := f.store.FindSSOProviders(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if total != 0 || len(list) != 0 {
		t.Fatalf("another organization's provider is listed: %v", list)
	}
	// The sign-in page shows the first organization's providers only: no
	// other organization's admin can put a button there.
	mine := f.newProvider(t, f.org.ID)
	buttons, err := f.store.FindSignInProviders(f.ctx)
	ok(t, err)
	if len(buttons) != 1 || buttons[0].ID != mine.ID {
		t.Fatalf("FindSignInProviders = %v, want the first organization's one provider", buttons)
	}
	ok(t, f.store.DeleteSSOProvider(f.ctx, f.org.ID, mine.ID))
	// Another organization's member is not matched by email.
	f.newMember(t, f.org.ID, "ada@example.com")
	_, _, err = f.ssoSignIn(theirs, "sub-1", "ada@example.com", true)
	wantCode(t, err, gatehouse.EFORBIDDEN)
	for range gatehouse.MaxSSOProviders - 1 {
		f.newProvider(t, other.ID)
	}
	_, err = f.store.CreateSSOProvider(f.ctx, other.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("one more"),
		IssuerURL: gatehouse.Val("https://idp.example.com"), ClientID: gatehouse.Val("c")})
	wantMessage(t, err, gatehouse.EINVALID, "an organization has at most")
}

func testSSOLogins(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID)
	state, nonce := gatehouse.NewSSOState(), gatehouse.NewSSOState()
	ok(t, f.store.CreateSSOLogin(f.ctx, state, gatehouse.SSOLogin{ProviderID: p.ID, NonceHash: gatehouse.HashNonce(nonce),
		Verifier: "a verifier that is long enough to be one of PKCE", Next: "/keys"}))
	l, err := f.store.TakeSSOLogin(f.ctx, state)
	ok(t, err)
	if l.ProviderID != p.ID || l.NonceHash != gatehouse.HashNonce(nonce) || l.Next != "/keys" ||
		l.Verifier != "a verifier that is long enough to be one of PKCE" || !l.ExpiresAt.Equal(f.clock.Now().Add(gatehouse.SSOLoginTTL)) {
		t.Fatalf("TakeSSOLogin = %+v", l)
	}
	_, err = f.store.TakeSSOLogin(f.ctx, state)
	wantCode(t, err, gatehouse.ENOTFOUND) // a state serves once

	late := gatehouse.NewSSOState()
	ok(t, f.store.CreateSSOLogin(f.ctx, late, gatehouse.SSOLogin{ProviderID: p.ID, NonceHash: gatehouse.HashNonce(nonce), Verifier: "v", Next: "/"}))
	f.clock.Add(gatehouse.SSOLoginTTL)
	_, err = f.store.TakeSSOLogin(f.ctx, late)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.TakeSSOLogin(f.ctx, gatehouse.NewSSOState())
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.CreateSSOLogin(f.ctx, "short", gatehouse.SSOLogin{ProviderID: p.ID, NonceHash: gatehouse.HashNonce(nonce), Verifier: "v"}), gatehouse.EINVALID)
}

func testSSOSignInLinks(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID)
	m := f.newMember(t, f.org.ID, "Ada@Example.com")
	a := f.newAuditRun(t, f.org.ID)
	s, token, err := f.store.SignInWithSSO(a.anonymous(), gatehouse.SSOSignIn{ProviderID: p.ID, Subject: "sub-ada",
		Email: "ada@example.com", EmailVerified: true, GroupsGiven: false})
	ok(t, err)
	a.actor = &gatehouse.Actor{UserID: &m.ID}
	a.want("session.create", "session", []string{s.ID}, map[string]any{"method": "oidc", "provider_id": p.ID, "member": "matched"})
	if s.UserID == nil || *s.UserID != m.ID || s.OrganizationID != f.org.ID {
		t.Fatalf("session of %+v, want member %s", s, m.ID)
	}
	f.wantSession(t, token, s)
	// Linked: the next sign-in goes by the subject, whatever the email says.
	s2, _, err := f.ssoSignIn(p, "sub-ada", "changed@elsewhere.example", false)
	ok(t, err)
	if *s2.UserID != m.ID {
		t.Fatalf("second sign-in as %s, want %s", *s2.UserID, m.ID)
	}
	got, err := f.store.FindSSOProvider(f.ctx, f.org.ID, p.ID)
	ok(t, err)
	if got.LastSignInAt == nil || !got.LastSignInAt.Equal(f.clock.Now()) {
		t.Fatalf("last sign-in of the provider: %v", got.LastSignInAt)
	}
	// A disabled provider signs nobody in.
	_, err = f.store.UpdateSSOProvider(f.ctx, f.org.ID, p.ID, gatehouse.SSOProviderUpdate{Enabled: gatehouse.Val(false)})
	ok(t, err)
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true)
	wantCode(t, err, gatehouse.ENOTFOUND)
	// A provider that names too many groups is refused, not cut short.
	_, err = f.store.UpdateSSOProvider(f.ctx, f.org.ID, p.ID, gatehouse.SSOProviderUpdate{Enabled: gatehouse.Val(true)})
	ok(t, err)
	many := make([]string, gatehouse.MaxGroupsPerSignIn+1)
	for i := range many {
		many[i] = fmt.Sprintf("group-%d", i)
	}
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true, many...)
	wantMessage(t, err, gatehouse.EINVALID, "the provider named")
}

func testSSOSignInUnverified(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID, "example.com")
	f.newMember(t, f.org.ID, "ada@example.com")
	ok(t, func() error {
		_, _, err := f.store.CreateInvitation(f.ctx, f.org.ID, gatehouse.InvitationCreate{Email: "grace@example.com"})
		return err
	}())
	a := f.newAuditRun(t, f.org.ID)
	for _, email := range []string{"ada@example.com", "grace@example.com", "new@example.com"} {
		_, _, err := f.store.SignInWithSSO(a.anonymous(), gatehouse.SSOSignIn{ProviderID: p.ID, Subject: "sub-" + email, Email: email})
		wantMessage(t, err, gatehouse.EFORBIDDEN, "the identity provider did not verify your email")
		a.wantNone("an unverified sign-in of " + email)
	}
	_, _, err := f.store.SignInWithSSO(a.anonymous(), gatehouse.SSOSignIn{ProviderID: p.ID, Subject: "sub-x"})
	wantMessage(t, err, gatehouse.EFORBIDDEN, "the identity provider gave no email")
	_, _, err = f.store.SignInWithSSO(a.anonymous(), gatehouse.SSOSignIn{ProviderID: p.ID, Email: "ada@example.com", EmailVerified: true})
	wantCode(t, err, gatehouse.EINVALID) // no subject
	a.wantNone("refused sign-ins")
	members, total, err := f.store.FindMembers(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if total != 1 || members[0].Email != "ada@example.com" {
		t.Fatalf("members after unverified sign-ins: %v", members)
	}
}

func testSSOSignInInvited(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID) // no domain allowed
	v, _, err := f.store.CreateInvitation(f.ctx, f.org.ID, gatehouse.InvitationCreate{Email: "grace@example.com", Role: gatehouse.RoleAdmin})
	ok(t, err)
	s, _, err := f.ssoSignIn(p, "sub-grace", "GRACE@example.com", true)
	ok(t, err)
	if s.Role != gatehouse.RoleAdmin || s.Email != "grace@example.com" {
		t.Fatalf("invited member signed in as %q %q, want the invitation's email and role", s.Email, s.Role)
	}
	if _, err := f.store.FindInvitation(f.ctx, v.ID); err == nil {
		t.Fatal("the invitation is still usable")
	}
	list, _, err := f.store.FindInvitations(f.ctx, f.org.ID, page(0, 10))
	ok(t, err)
	if len(list) != 0 {
		t.Fatalf("invitations left: %v", list)
	}
	// Nobody else gets in: no member, no invitation, no allowed domain.
	_, _, err = f.ssoSignIn(p, "sub-eve", "eve@example.com", true)
	wantMessage(t, err, gatehouse.EFORBIDDEN, "you are not a member of this organization")
}

func testSSOSignInDomain(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p := f.newProvider(t, f.org.ID, "Example.com")
	if p.AllowedDomains[0] != "example.com" {
		t.Fatalf("allowed domains %v, want them in lower case", p.AllowedDomains)
	}
	s, _, err := f.ssoSignIn(p, "sub-new", "new@EXAMPLE.com", true)
	ok(t, err)
	if s.Role != gatehouse.RoleMember {
		t.Fatalf("a member made at first sign-in is %q", s.Role)
	}
	members, err := f.store.FindMembersByRef(f.ctx, f.org.ID, []string{"new@example.com"})
	ok(t, err)
	if len(members) != 1 || members[0].FirstName == nil || *members[0].FirstName != "Ada Lovelace" {
		t.Fatalf("member made: %+v", members)
	}
	for _, email := range []string{"x@sub.example.com", "x@example.com.evil.test", "x@evil.test"} {
		_, _, err = f.ssoSignIn(p, "sub-"+email, email, true)
		wantCode(t, err, gatehouse.EFORBIDDEN)
	}
}

func testSSOPasswordOff(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	f.setPassword(t, m, "a long enough password")
	settings, err := f.store.FindSignInSettings(f.ctx, f.org.ID)
	ok(t, err)
	if !settings.PasswordSignIn || settings.UpdatedAt != nil {
		t.Fatalf("default settings %+v", settings)
	}
	off := gatehouse.SignInSettingsUpdate{PasswordSignIn: gatehouse.Val(false)}
	_, err = f.store.UpdateSignInSettings(f.ctx, f.org.ID, off)
	wantMessage(t, err, gatehouse.EINVALID, "password_sign_in: can be turned off only once single sign-on works")
	p := f.newProvider(t, f.org.ID)
	_, err = f.store.UpdateSignInSettings(f.ctx, f.org.ID, off)
	wantCode(t, err, gatehouse.EINVALID) // configured, never used
	_, _, err = f.ssoSignIn(p, "sub-ada", "ada@example.com", true)
	ok(t, err)
	a := f.newAuditRun(t, f.org.ID)
	settings, err = f.store.UpdateSignInSettings(a.ctx(), f.org.ID, off)
	ok(t, err)
	a.want("sign_in_settings.update", "sign_in_settings", []string{f.org.ID}, map[string]any{"password_sign_in": false})
	if settings.PasswordSignIn {
		t.Fatal("password sign-in still on")
	}
	_, _, err = f.accounts().SignIn(f.ctx, "ada@example.com", "a long enough password")
	wantCode(t, err, gatehouse.EUNAUTHORIZED)
	// The last working provider stays while passwords are off.
	_, err = f.store.UpdateSSOProvider(f.ctx, f.org.ID, p.ID, gatehouse.SSOProviderUpdate{Enabled: gatehouse.Val(false)})
	wantMessage(t, err, gatehouse.EINVALID, "password sign-in is off")
	wantMessage(t, f.store.DeleteSSOProvider(f.ctx, f.org.ID, p.ID), gatehouse.EINVALID, "password sign-in is off")
	// Another organization's members still sign in with their password.
	other := f.newOrg(t, "Other")
	om, err := f.store.CreateMember(f.ctx, other.ID, gatehouse.MemberCreate{Email: "ada@example.com"})
	ok(t, err)
	f.setPasswordIn(t, other.ID, om, "another long password")
	s, _, err := f.accounts().SignIn(f.ctx, "ada@example.com", "another long password")
	ok(t, err)
	if s.OrganizationID != other.ID {
		t.Fatalf("signed in to %s", s.OrganizationID)
	}
	// An invitation cannot set a password any more.
	_, tok, err := f.store.ResetPassword(f.ctx, f.org.ID, m.ID)
	ok(t, err)
	_, err = f.accounts().AcceptInvitation(f.ctx, tok, "yet another long password")
	wantMessage(t, err, gatehouse.EINVALID, "your organization signs in with single sign-on")
	_, err = f.store.UpdateSignInSettings(f.ctx, f.org.ID, gatehouse.SignInSettingsUpdate{PasswordSignIn: gatehouse.Val(true)})
	ok(t, err)
	ok(t, f.store.DeleteSSOProvider(f.ctx, f.org.ID, p.ID))
}

// setPassword sets a member's password of the fixture's organization
// through an invitation link, as the console does.
func (f *fixture) setPassword(t *testing.T, m *gatehouse.Member, password string) {
	t.Helper()
	f.setPasswordIn(t, f.org.ID, m, password)
}

func (f *fixture) setPasswordIn(t *testing.T, orgID string, m *gatehouse.Member, password string) {
	t.Helper()
	_, token, err := f.store.CreateInvitation(f.ctx, orgID, gatehouse.InvitationCreate{Email: m.Email})
	ok(t, err)
	_, err = f.accounts().AcceptInvitation(f.ctx, token, password)
	ok(t, err)
}
