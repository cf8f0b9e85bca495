package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gatehouse"
	"gatehouse/sso/ssotest"
)

// TestSSOCallbackRefusals: the console's end of a sign-in refuses a state
// that this browser did not start (another browser's, none, a made-up
// one), a state used already, and says what the provider's error was; none
// opens a session. A start through an unknown provider is a 404, and
// members' pages of single sign-on are admins' only.
func TestSSOCallbackRefusals(t *testing.T) {
	e := newEnv(t)
	op := ssotest.Start(t, []string{e.URL + gatehouse.RedirectPath},
		ssotest.User{ID: "u-ada", Username: "ada", Password: "pw", Email: "ada@example.com", EmailVerified: true})
	p, err := e.store.CreateSSOProvider(context.Background(), e.org.ID, gatehouse.SSOProviderUpdate{Name: gatehouse.Val("Zitadel"),
		IssuerURL: gatehouse.Val(op.Issuer), ClientID: gatehouse.Val(op.ClientID), ClientSecret: gatehouse.Val(op.ClientSecret),
		AllowedDomains: gatehouse.Val([]string{"example.com"})})
	if err != nil {
		t.Fatal(err)
	}
	victim, attacker := e.client(), e.client()
	res := attacker.get("/sso/start/" + p.ID + "?next=/keys")
	loc, _ := url.Parse(res.Header.Get("Location"))
	if res.StatusCode != http.StatusSeeOther || !strings.HasPrefix(loc.String(), op.Issuer) || loc.Query().Get("state") == "" {
		t.Fatalf("start: %d to %s", res.StatusCode, loc)
	}
	state := loc.Query().Get("state")
	for _, c := range []struct {
		name, query string
		who         *client
		msg         string
	}{
		{"another browser's state", "?state=" + url.QueryEscape(state) + "&code=x", victim, "did not start in this browser"},
		// Each answer of the callback forgets the sign-in's cookie: the
		// provider's error first, while the attacker's browser holds it.
		{"the provider's error", "?state=" + url.QueryEscape(state) + "&error=access_denied&error_description=the+user+said+no", attacker,
			"did not sign you in (access_denied: the user said no)"},
		{"no state", "?code=x", attacker, "did not start in this browser"},
		{"a made-up state", "?state=" + gatehouse.NewSSOState() + "&code=x", attacker, "did not start in this browser"},
	} {
		res := c.who.get(gatehouse.RedirectPath + c.query)
		if res.StatusCode != http.StatusUnauthorized || !strings.Contains(c.who.page, c.msg) {
			t.Errorf("%s: %d, page lacks %q", c.name, res.StatusCode, c.msg)
		}
		if c.who.cookie(t, "gatehouse_session") != "" {
			t.Errorf("%s: a session cookie was set", c.name)
		}
	}
	// The provider's error used the state up: it serves no more.
	if _, err := e.store.TakeSSOLogin(context.Background(), state); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("the state of a refused sign-in is still usable: %v", err)
	}
	if res := attacker.get("/sso/start/" + gatehouse.NewSSOState()); res.StatusCode != http.StatusNotFound {
		t.Errorf("an unknown provider's start: %d", res.StatusCode)
	}
	if res := attacker.get("/sso/start/not-an-id?next=https://evil.example"); res.StatusCode != http.StatusNotFound {
		t.Errorf("a malformed provider id: %d", res.StatusCode)
	}
	// A member opens none of the admins' pages.
	e.member("grace@example.com", gatehouse.RoleMember, "a long enough password")
	grace := e.client()
	grace.get("/sign-in")
	grace.post("/sign-in", url.Values{"email": {"grace@example.com"}, "password": {"a long enough password"}, "next": {"/"}})
	for _, path := range []string{"/sso", "/sso/providers/" + p.ID} {
		if res := grace.get(path); res.StatusCode != http.StatusForbidden {
			t.Errorf("a member opens %s: %d", path, res.StatusCode)
		}
	}
}

// cookie returns the value of the client's cookie of the console.
func (c *client) cookie(t testing.TB, name string) string {
	u, _ := url.Parse(c.e.URL)
	for _, ck := range c.http.Jar.Cookies(u) {
		if ck.Name == name {
			return ck.Value
		}
	}
	return ""
}
