package sso_test

import (
	"context"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
	"gatehouse/sso"
	"gatehouse/sso/ssotest"
)

// The relying party against a real OpenID provider (ssotest: zitadel's OP
// on the loopback) and a real store (SQLite in a temporary directory). The
// browser's part (the provider's login page) is played by an HTTP client
// that keeps cookies; the console's browser tests play it with Chromium.

const redirectURI = "http://127.0.0.1:9/sso/callback" // never reached: the client stops at it

type harness struct {
	t        *testing.T
	ctx      context.Context
	store    *sqlite.DB
	op       *ssotest.Provider
	rp       *sso.RelyingParty
	org      *gatehouse.Organization
	provider *gatehouse.SSOProvider
	now      time.Time
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, ctx: context.Background(), now: time.Now()}
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	h.store, err = sqlite.Open(h.ctx, sqlitetest.Path(t, "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.store.Close() })
	h.op = ssotest.Start(t, []string{redirectURI},
		ssotest.User{ID: "u-ada", Username: "ada", Password: "correct horse", Email: "ada@example.com", EmailVerified: true,
			FirstName: "Ada", LastName: "Lovelace", Groups: []string{"engineering"}},
		ssotest.User{ID: "u-eve", Username: "eve", Password: "battery staple", Email: "eve@example.com", EmailVerified: false})
	// The server's client, with the loopback opened as GATEHOUSE_EGRESS_ALLOW
	// would open it for a provider on the company network.
	h.rp = sso.New(h.store, sso.NewClient(egress.MustParse("127.0.0.0/8,::1/128")), func() time.Time { return h.now })
	if h.org, err = h.store.CreateOrganization(h.ctx, "Acme"); err != nil {
		t.Fatal(err)
	}
	if err := h.rp.CheckIssuer(h.ctx, h.op.Issuer); err != nil {
		t.Fatalf("CheckIssuer: %v", err)
	}
	h.provider, err = h.store.CreateSSOProvider(h.ctx, h.org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Zitadel"),
		IssuerURL: gatehouse.Val(h.op.Issuer), ClientID: gatehouse.Val(h.op.ClientID), ClientSecret: gatehouse.Val(h.op.ClientSecret),
		Scopes: gatehouse.Val([]string{"openid", "email", "profile", "groups"}), AllowedDomains: gatehouse.Val([]string{"example.com"})})
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// login plays the browser: it starts a sign-in, signs in at the provider's
// login page, and returns the state and code the provider sends back.
func (h *harness) login(username, password string) (state, code string) {
	h.t.Helper()
	authURL, state, err := h.rp.Start(h.ctx, h.provider.ID, redirectURI, "/keys")
	if err != nil {
		h.t.Fatalf("Start: %v", err)
	}
	u, _ := url.Parse(authURL)
	q := u.Query()
	if q.Get("state") != state || q.Get("nonce") == "" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" ||
		q.Get("redirect_uri") != redirectURI || q.Get("client_id") != h.op.ClientID {
		h.t.Fatalf("authorization URL %s lacks state, nonce, PKCE or the client", authURL)
	}
	jar, _ := cookiejar.New(nil)
	browser := &http.Client{Jar: jar, CheckRedirect: func(r *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(r.URL.String(), redirectURI) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	page, err := browser.Get(authURL)
	if err != nil {
		h.t.Fatal(err)
	}
	page.Body.Close()
	id := page.Request.URL.Query().Get("authRequestID")
	if page.StatusCode != http.StatusOK || id == "" {
		h.t.Fatalf("the provider's login page: %d at %s", page.StatusCode, page.Request.URL)
	}
	back, err := browser.PostForm(h.op.Issuer+"/login/username", url.Values{"id": {id}, "username": {username}, "password": {password}})
	if err != nil {
		h.t.Fatal(err)
	}
	back.Body.Close()
	loc, err := url.Parse(back.Header.Get("Location"))
	if back.StatusCode != http.StatusFound || err != nil || loc.Query().Get("code") == "" {
		h.t.Fatalf("the provider did not send the browser back with a code: %d %s", back.StatusCode, back.Header.Get("Location"))
	}
	return loc.Query().Get("state"), loc.Query().Get("code")
}

func TestSignIn(t *testing.T) {
	h := newHarness(t)
	state, code := h.login("ada", "correct horse")
	s, token, next, err := h.rp.Finish(h.ctx, state, code, redirectURI)
	if err != nil {
		t.Fatalf("Finish: %v", err)
	}
	if next != "/keys" || token == "" || s.Email != "ada@example.com" || s.Role != gatehouse.RoleMember {
		t.Fatalf("signed in: %+v, next %q", s, next)
	}
	// The email came from the userinfo endpoint (this provider keeps it out
	// of the ID token), the groups from the ID token.
	members, err := h.store.FindMembersByRef(h.ctx, h.org.ID, []string{"ada@example.com"})
	if err != nil || len(members) != 1 || members[0].FirstName == nil || *members[0].FirstName != "Ada Lovelace" {
		t.Fatalf("member made: %+v, %v", members, err)
	}
	w, err := h.store.CreateWorkspace(h.ctx, h.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Eng"), Slug: gatehouse.Val("eng")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := h.store.CreateGroupMapping(h.ctx, h.org.ID, gatehouse.GroupMappingUpdate{Group: gatehouse.Val("engineering"),
		WorkspaceIDs: gatehouse.Val([]string{w.ID})}); err != nil {
		t.Fatal(err)
	}
	list, err := h.store.FindMemberWorkspaces(h.ctx, h.org.ID, *s.UserID)
	if err != nil || len(list) != 2 {
		t.Fatalf("the groups of the sign-in did not reach the mapping: %v, %v", list, err)
	}
	entries, _, err := h.store.FindAuditEntries(h.ctx, h.org.ID, gatehouse.AuditFilter{Operation: gatehouse.OpSessionCreate, Page: gatehouse.Page{Limit: 5}})
	if err != nil || len(entries) != 1 || entries[0].Details["method"] != "oidc" || entries[0].Details["provider_id"] != h.provider.ID {
		t.Fatalf("the sign-in is not audited as an OpenID Connect one: %+v, %v", entries, err)
	}
}

// TestKeyRotation: the provider signs with a new key; the relying party,
// which holds the old one, reads the keys again and lets the sign-in in.
func TestKeyRotation(t *testing.T) {
	h := newHarness(t)
	state, code := h.login("ada", "correct horse")
	if _, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI); err != nil {
		t.Fatal(err)
	}
	old := h.op.KeyID()
	h.op.RotateKey()
	if h.op.KeyID() == old {
		t.Fatal("the key did not change")
	}
	state, code = h.login("ada", "correct horse")
	if _, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI); err != nil {
		t.Fatalf("after a key rotation: %v", err)
	}
}

// TestRefusals: every token a relying party must refuse is refused, with a
// message that says why, and opens no session.
func TestRefusals(t *testing.T) {
	for _, c := range []struct {
		name string
		bad  ssotest.Misbehave
		msg  string
	}{
		{"wrongly signed", ssotest.Misbehave{ForgeSignature: true}, "the ID token's signature does not verify"},
		{"wrong audience", ssotest.Misbehave{Audience: []string{"another-client"}}, "issued for another client"},
		{"wrong nonce", ssotest.Misbehave{Nonce: "a nonce this sign-in never sent"}, "the ID token's nonce is not the one this sign-in sent"},
		{"expired", ssotest.Misbehave{Lifetime: -time.Minute}, "the ID token has expired"},
		{"second audience without azp", ssotest.Misbehave{Audience: []string{"", "another-client"}}, "issued for another client"},
	} {
		t.Run(c.name, func(t *testing.T) {
			h := newHarness(t)
			if c.name == "second audience without azp" {
				c.bad.Audience[0] = h.op.ClientID
				c.msg = "the ID token was issued to another client (azp)"
			}
			h.op.Misbehave(c.bad)
			state, code := h.login("ada", "correct horse")
			_, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI)
			h.wantRefused(err, c.msg)
		})
	}
	t.Run("expired by the relying party's clock", func(t *testing.T) {
		h := newHarness(t)
		state, code := h.login("ada", "correct horse")
		h.now = h.now.Add(2 * time.Hour)
		_, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI)
		h.wantRefused(err, "the ID token has expired")
	})
	t.Run("replayed state", func(t *testing.T) {
		h := newHarness(t)
		state, code := h.login("ada", "correct horse")
		if _, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI); err != nil {
			t.Fatal(err)
		}
		_, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI)
		if gatehouse.ErrorCode(err) != gatehouse.EUNAUTHORIZED || !strings.Contains(gatehouse.ErrorMessage(err), "used already") {
			t.Fatalf("a replayed state: %v", err)
		}
	})
	t.Run("unknown state", func(t *testing.T) {
		h := newHarness(t)
		_, code := h.login("ada", "correct horse")
		_, _, _, err := h.rp.Finish(h.ctx, gatehouse.NewSSOState(), code, redirectURI)
		h.wantRefused(err, "")
	})
	t.Run("code replayed under a new state", func(t *testing.T) {
		h := newHarness(t)
		state, code := h.login("ada", "correct horse")
		if _, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI); err != nil {
			t.Fatal(err)
		}
		state2, _ := h.login("ada", "correct horse")
		_, _, _, err := h.rp.Finish(h.ctx, state2, code, redirectURI) // the provider's codes serve once too
		h.wantRefused(err, "the code could not be exchanged")
	})
	t.Run("unverified email", func(t *testing.T) {
		h := newHarness(t)
		state, code := h.login("eve", "battery staple")
		_, _, _, err := h.rp.Finish(h.ctx, state, code, redirectURI)
		if gatehouse.ErrorCode(err) != gatehouse.EFORBIDDEN || !strings.Contains(gatehouse.ErrorMessage(err), "did not verify your email") {
			t.Fatalf("an unverified email: %v", err)
		}
	})
}

// wantRefused fails the test unless err refuses the sign-in (EUNAUTHORIZED,
// its message holding msg) and nobody became a member or signed in.
func (h *harness) wantRefused(err error, msg string) {
	h.t.Helper()
	if gatehouse.ErrorCode(err) != gatehouse.EUNAUTHORIZED || !strings.Contains(gatehouse.ErrorMessage(err), msg) {
		h.t.Fatalf("got %v, want a refusal saying %q", err, msg)
	}
	entries, _, err := h.store.FindAuditEntries(h.ctx, h.org.ID, gatehouse.AuditFilter{Operation: gatehouse.OpSessionCreate, Page: gatehouse.Page{Limit: 5}})
	if err != nil || len(entries) > 1 {
		h.t.Fatalf("a refused sign-in opened a session: %v, %v", entries, err)
	}
}

func TestCheckIssuer(t *testing.T) {
	h := newHarness(t)
	for _, issuer := range []string{h.op.Issuer + "/elsewhere", "http://127.0.0.1:9", h.op.Issuer + "/"} {
		err := h.rp.CheckIssuer(h.ctx, issuer)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID || !strings.HasPrefix(gatehouse.ErrorMessage(err), "issuer_url: ") {
			t.Errorf("CheckIssuer(%s) = %v, want EINVALID naming issuer_url", issuer, err)
		}
	}
}

// TestEgressPolicy: the relying party's requests follow the egress policy.
// An organization's admin names the issuer; without the policy opening it,
// one on the loopback (where this provider is) or at a cloud's metadata
// address is refused before any request, with an error that names the
// policy, and a sign-in through a provider saved before cannot start.
func TestEgressPolicy(t *testing.T) {
	h := newHarness(t)
	closed := sso.New(h.store, sso.NewClient(&egress.Policy{}), nil)
	for _, issuer := range []string{h.op.Issuer, "http://169.254.169.254/latest/meta-data", "http://[::1]:9/x", "http://10.0.0.1:9"} {
		err := closed.CheckIssuer(h.ctx, issuer)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID || !strings.Contains(gatehouse.ErrorMessage(err), "egress blocked") {
			t.Errorf("CheckIssuer(%s) under the default policy = %v, want EINVALID naming the egress policy", issuer, err)
		}
	}
	// A relying party made without a client (the console's default) is
	// under the default policy too.
	if err := sso.New(h.store, nil, nil).CheckIssuer(h.ctx, h.op.Issuer); !strings.Contains(gatehouse.ErrorMessage(err), "egress blocked") {
		t.Errorf("CheckIssuer through a relying party without a client = %v, want the egress policy's refusal", err)
	}
	if _, _, err := closed.Start(h.ctx, h.provider.ID, redirectURI, "/keys"); gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE {
		t.Errorf("Start through a provider on the loopback under the default policy = %v, want EUNAVAILABLE", err)
	}
}
