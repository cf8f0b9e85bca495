package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// TestSecurityHeaders: every answer of the console carries the strict
// policy and the other protections, and the session cookie is HttpOnly,
// SameSite=Lax, for the whole site, not Secure over plain HTTP.
func TestSecurityHeaders(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	for _, path := range []string{"/sign-in", "/nothing", "/assets/console.css"} {
		resp := c.get(path)
		for name, want := range map[string]string{
			"Content-Security-Policy": "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
				"object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'",
			"X-Frame-Options": "DENY", "X-Content-Type-Options": "nosniff", "Referrer-Policy": "same-origin",
		} {
			if got := resp.Header.Get(name); got != want {
				t.Errorf("%s: %s = %q, want %q", path, name, got, want)
			}
		}
	}
	if got := c.get("/sign-in").Header.Get("Cache-Control"); got != "no-store" {
		t.Errorf("a page's Cache-Control = %q, want no-store", got)
	}
	resp := c.do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", e.URL)
	c.wantStatus(resp, http.StatusSeeOther)
	cookies := resp.Cookies()
	if len(cookies) != 1 {
		t.Fatalf("cookies set at sign-in: %v", cookies)
	}
	k := cookies[0]
	if k.Name != "gatehouse_session" || !k.HttpOnly || k.SameSite != http.SameSiteLaxMode || k.Path != "/" || k.Secure || k.Value == "" {
		t.Errorf("session cookie %+v: want gatehouse_session, HttpOnly, SameSite=Lax, Path=/, not Secure", k)
	}
	if strings.Contains(e.logs.String(), k.Value) {
		t.Error("the session's token is in the log")
	}
}

// TestSecureCookieBehindProxy: behind a trusted proxy that says https, the
// cookie is Secure with the __Host- prefix, and forms must come from the
// https origin; an untrusted client's X-Forwarded-Proto counts for nothing.
func TestSecureCookieBehindProxy(t *testing.T) {
	e := newEnv(t, withTrustedLoopback)
	c := e.client()
	httpsOrigin := strings.Replace(e.URL, "http://", "https://", 1)
	resp := c.do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", e.URL, "X-Forwarded-Proto", "https")
	c.wantStatus(resp, http.StatusForbidden) // the browser was on https: an http origin is another one
	resp = c.do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", httpsOrigin, "X-Forwarded-Proto", "https")
	c.wantStatus(resp, http.StatusSeeOther)
	k := resp.Cookies()[0]
	if k.Name != "__Host-gatehouse_session" || !k.Secure || !k.HttpOnly || k.Path != "/" {
		t.Errorf("session cookie over https %+v: want __Host-gatehouse_session, Secure, HttpOnly, Path=/", k)
	}

	plain := newEnv(t) // no proxy trusted: the header is anyone's
	pc := plain.client()
	resp = pc.do("POST", "/sign-in/key", url.Values{"key": {plain.mgmt}}, "Origin", plain.URL, "X-Forwarded-Proto", "https")
	pc.wantStatus(resp, http.StatusSeeOther)
	if k := resp.Cookies()[0]; k.Secure || k.Name != "gatehouse_session" {
		t.Errorf("an untrusted X-Forwarded-Proto made the cookie %+v", k)
	}
}

// TestCSRF: a state change without the session's token, with another's,
// from another origin, or with no origin at all, is refused with 403 and
// changes nothing; with the token from the console's origin (told by
// Origin, or by Referer when a browser sends no Origin) it goes through.
func TestCSRF(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signInWithKey()
	token := c.csrf()
	other := e.client()
	other.signInWithKey()
	for _, tc := range []struct {
		name    string
		form    url.Values
		headers []string
	}{
		{"no token", url.Values{"name": {"a"}}, []string{"Origin", e.URL}},
		{"a wrong token", url.Values{"name": {"a"}, "csrf": {"x" + token}}, []string{"Origin", e.URL}},
		{"another session's token", url.Values{"name": {"a"}, "csrf": {other.csrf()}}, []string{"Origin", e.URL}},
		{"another origin", url.Values{"name": {"a"}, "csrf": {token}}, []string{"Origin", "http://evil.example"}},
		{"another port", url.Values{"name": {"a"}, "csrf": {token}}, []string{"Origin", e.URL + "1"}},
		{"a null origin", url.Values{"name": {"a"}, "csrf": {token}}, []string{"Origin", "null"}},
		{"another origin's referer", url.Values{"name": {"a"}, "csrf": {token}}, []string{"Referer", "http://evil.example/page"}},
		{"no origin nor referer", url.Values{"name": {"a"}, "csrf": {token}}, nil},
	} {
		resp := c.do("POST", "/keys", tc.form, tc.headers...)
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("%s: status %d, want 403", tc.name, resp.StatusCode)
		}
	}
	page, err := e.store.SearchKeys(context.Background(), e.org.ID, gatehouse.KeySearch{})
	if err != nil || len(page.Keys) != 0 {
		t.Fatalf("refused forms created keys: %d, %v", len(page.Keys), err)
	}
	resp := c.do("POST", "/keys", url.Values{"name": {"made"}, "csrf": {token}}, "Referer", e.URL+"/keys")
	c.wantStatus(resp, http.StatusCreated)
	resp = c.do("POST", "/keys", url.Values{"name": {"made too"}}, "Origin", e.URL, "X-CSRF-Token", token)
	c.wantStatus(resp, http.StatusCreated)
	// Signing in is a state change too: another origin cannot sign a
	// browser in to its own account (login CSRF).
	resp = e.client().do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", "http://evil.example")
	if resp.StatusCode != http.StatusForbidden || len(resp.Cookies()) != 0 {
		t.Errorf("a sign-in from another origin: %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
}

// TestSessionExpiry: a session idle for longer than the idle timeout is
// over (the next page asks to sign in again, a form is refused), and so is
// one past its absolute lifetime however active.
func TestSessionExpiry(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signInWithKey()
	token := c.csrf()
	e.clock.Add(gatehouse.SessionIdleTimeout + time.Minute)
	resp := c.get("/keys")
	c.wantStatus(resp, http.StatusSeeOther)
	if loc := resp.Header.Get("Location"); loc != "/sign-in?next=%2Fkeys" {
		t.Errorf("an idle session's page goes to %q", loc)
	}
	resp = c.post("/keys", url.Values{"name": {"late"}, "csrf": {token}})
	c.wantStatus(resp, http.StatusUnauthorized)

	c = e.client()
	c.signInWithKey()
	for elapsed := time.Duration(0); elapsed < gatehouse.SessionLifetime; elapsed += 6 * time.Hour {
		e.clock.Add(6 * time.Hour)
		c.get("/") // active all along
	}
	resp = c.get("/keys")
	c.wantStatus(resp, http.StatusSeeOther)
}

// TestSignInRateLimit: ten wrong passwords for an account, then the next
// attempt, even with the right one, answers 429 with when to try again;
// and so do too many attempts from one address on many accounts.
func TestSignInRateLimit(t *testing.T) {
	e := newEnv(t, withSignInLimit)
	e.member("ada@example.com", "", "correct horse battery")
	c := e.client()
	for i := range 10 { // the burst of console.SignInLimit
		resp := c.do("POST", "/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"wrong password " + string(rune('a'+i))}}, "Origin", e.URL)
		c.wantStatus(resp, http.StatusUnauthorized)
	}
	resp := c.do("POST", "/sign-in", url.Values{"email": {"ada@example.com"}, "password": {"correct horse battery"}}, "Origin", e.URL)
	c.wantStatus(resp, http.StatusTooManyRequests)
	if resp.Header.Get("Retry-After") == "" || !strings.Contains(c.page, "Try again in") {
		t.Errorf("a 429 without when to retry: Retry-After %q\n%s", resp.Header.Get("Retry-After"), c.page)
	}
	if len(resp.Cookies()) != 0 {
		t.Error("a limited sign-in set a cookie")
	}
}

// TestSignInNext: the page a sign-in returns to is a path of the console,
// never another site.
func TestSignInNext(t *testing.T) {
	e := newEnv(t)
	for next, want := range map[string]string{
		"/keys?q=a": "/keys?q=a", "//evil.example/x": "/", "https://evil.example": "/", "/\\evil.example": "/", "": "/",
	} {
		resp := e.client().do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}, "next": {next}}, "Origin", e.URL)
		if got := resp.Header.Get("Location"); got != want {
			t.Errorf("next %q: redirected to %q, want %q", next, got, want)
		}
	}
}

// TestFormTooLarge: a form above the console's bound is refused with 413
// before its token is even looked at, and changes nothing.
func TestFormTooLarge(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signInWithKey()
	resp := c.post("/keys", url.Values{"name": {strings.Repeat("n", 70<<10)}})
	c.wantStatus(resp, http.StatusRequestEntityTooLarge)
	resp = c.do("POST", "/sign-in", url.Values{"email": {strings.Repeat("e", 70<<10)}}, "Origin", e.URL)
	c.wantStatus(resp, http.StatusRequestEntityTooLarge)
}
