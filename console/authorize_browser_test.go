package console_test

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

// callbackServer is an application's callback on the loopback: it
// remembers the query of the last request of /cb.
type callbackServer struct {
	URL   string
	mu    sync.Mutex
	query url.Values
}

func newCallbackServer(t *testing.T) *callbackServer {
	cb := &callbackServer{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/cb" {
			http.NotFound(w, r) // the browser's /favicon.ico
			return
		}
		cb.mu.Lock()
		cb.query = r.URL.Query()
		cb.mu.Unlock()
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte("<!doctype html><title>app</title><main>back in the application</main>"))
	}))
	t.Cleanup(srv.Close)
	cb.URL = srv.URL + "/cb?state=kept"
	return cb
}

func (cb *callbackServer) last() url.Values {
	cb.mu.Lock()
	defer cb.mu.Unlock()
	return cb.query
}

// pkce returns a verifier and its S256 challenge.
func pkce(seed string) (verifier, challenge string) {
	verifier = base64.RawURLEncoding.EncodeToString([]byte(seed + strings.Repeat("-verifier", 6)))
	sum := sha256.Sum256([]byte(verifier))
	return verifier, base64.RawURLEncoding.EncodeToString(sum[:])
}

// authURL is the authorization page's URL as the official client's
// createAuthorizationUrl builds it for the base URL <server>/api/v1.
func (e *env) authURL(callback, challenge string, limit string) string {
	q := url.Values{"callback_url": {callback}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}}
	if limit != "" {
		q.Set("limit", limit)
	}
	return e.URL + "/auth?" + q.Encode()
}

// TestBrowserAuthorize: an application sends a member to the
// authorization page; she signs in, comes back to it, sees the
// application's origin, chooses the key's name, limit and one of her
// workspaces, and approves; the browser lands on the callback with a code
// that the application exchanges, with its PKCE verifier, for a key that
// works, on her terms. Denying sends error=access_denied instead.
func TestBrowserAuthorize(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	grace := e.member("grace@example.com", "", adaPassword)
	research, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Secret"), Slug: gatehouse.Val("secret")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.AddWorkspaceMembers(ctx, e.org.ID, research.ID, []string{grace.ID}); err != nil {
		t.Fatal(err)
	}
	cb := newCallbackServer(t)
	verifier, challenge := pkce("first")

	b := e.newBrowser(t)
	b.run(chromedp.Navigate(e.authURL(cb.URL, challenge, "5")), chromedp.WaitReady(chromedp.CSS("main")))
	b.must(strings.HasPrefix(b.path(), "/sign-in?next="), "not asked to sign in first: %s", b.path())
	b.signIn("grace@example.com", adaPassword)
	b.must(strings.HasPrefix(b.path(), "/auth?"), "not back on the authorization page: %s", b.path())
	b.must(b.text(".app") == strings.TrimSuffix(cb.URL, "/cb?state=kept"), "the application shown: %q", b.text(".app"))
	b.must(get(b, chromedp.Value(chromedp.CSS("#f-limit"))) == "5", "the limit the application asked for is not offered")
	options := get(b, chromedp.Evaluate[[]string](`[...document.querySelectorAll("#f-workspace option")].map(o => o.textContent)`))
	b.must(strings.Join(options, ",") == "Default,Research", "workspaces offered to the member: %v", options)
	b.screenshot("authorize")
	b.fill(map[string]string{"#f-key_label": "My app", "#f-limit": "2", "#f-workspace": research.ID})
	b.submit(`button[value="approve"]`)

	q := cb.last()
	b.must(q.Get("code") != "" && q.Get("state") == "kept", "the callback got %v", q)
	var minted struct {
		Key    string  `json:"key"`
		UserID *string `json:"user_id"`
	}
	if status := e.api("POST", "/auth/keys", "", map[string]any{"code": q.Get("code"), "code_verifier": verifier, "code_challenge_method": "S256"}, &minted); status != http.StatusOK {
		t.Fatalf("exchange: %d", status)
	}
	k, err := e.store.FindKey(ctx, e.org.ID, gatehouse.HashKey(minted.Key))
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "My app" || k.Limit == nil || *k.Limit != gatehouse.USD(2) || k.WorkspaceID != research.ID ||
		k.CreatorUserID == nil || *k.CreatorUserID != grace.ID || minted.UserID == nil || *minted.UserID != grace.ID {
		t.Errorf("minted key %+v (user %v): want My app, $2, in Research, grace's", k, minted.UserID)
	}
	if status := e.chat(minted.Key, "hello from the application"); status != http.StatusOK {
		t.Errorf("a completion with the minted key: %d", status)
	}
	// The code is used up.
	if status := e.api("POST", "/auth/keys", "", map[string]any{"code": q.Get("code"), "code_verifier": verifier, "code_challenge_method": "S256"}, nil); status != http.StatusForbidden {
		t.Errorf("a second exchange: %d, want 403", status)
	}

	_, challenge2 := pkce("second")
	b.run(chromedp.Navigate(e.authURL(cb.URL, challenge2, "")), chromedp.WaitReady(chromedp.CSS("main")))
	b.submit(`button[value="deny"]`)
	if q := cb.last(); q.Get("error") != "access_denied" || q.Get("code") != "" {
		t.Errorf("a denial's callback got %v", q)
	}
}

// TestAuthorizeRefusals: the authorization page never sends a browser to
// a callback the OAuth rules refuse, and a member cannot put the key in a
// workspace she does not belong to, whatever the form says.
func TestAuthorizeRefusals(t *testing.T) {
	e := newEnv(t)
	e.member("grace@example.com", "", adaPassword)
	secret, err := e.store.CreateWorkspace(context.Background(), e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Secret"), Slug: gatehouse.Val("secret")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.wantStatus(c.do("POST", "/sign-in", url.Values{"email": {"grace@example.com"}, "password": {adaPassword}}, "Origin", e.URL), http.StatusSeeOther)
	_, challenge := pkce("refusals")
	for _, callback := range []string{"http://evil.example/cb", "javascript:alert(1)", "ftp://127.0.0.1/cb", ""} {
		resp := c.get(strings.TrimPrefix(e.authURL(callback, challenge, ""), e.URL))
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("callback %q: %d, Location %q; want 400 and no redirect", callback, resp.StatusCode, resp.Header.Get("Location"))
		}
		resp = c.post("/auth", url.Values{"callback_url": {callback}, "code_challenge": {challenge}, "code_challenge_method": {"S256"}, "decision": {"deny"}})
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" {
			t.Errorf("denial to callback %q: %d, Location %q; want 400 and no redirect", callback, resp.StatusCode, resp.Header.Get("Location"))
		}
	}
	cb := newCallbackServer(t)
	c.wantStatus(c.get(strings.TrimPrefix(e.authURL(cb.URL, challenge, ""), e.URL)), http.StatusOK)
	if csp := c.get(strings.TrimPrefix(e.authURL(cb.URL, challenge, ""), e.URL)).Header.Get("Content-Security-Policy"); !strings.Contains(csp, "form-action 'self' "+strings.TrimSuffix(cb.URL, "/cb?state=kept")+";") {
		t.Errorf("the page's forms may not lead to the application: %s", csp)
	}
	resp := c.post("/auth", url.Values{"callback_url": {cb.URL}, "code_challenge": {challenge}, "code_challenge_method": {"S256"},
		"decision": {"approve"}, "key_label": {"sneaky"}, "workspace": {secret.ID}})
	c.wantStatus(resp, http.StatusBadRequest)
	if !strings.Contains(c.page, "is not a workspace you may use") {
		t.Errorf("the refusal does not say why:\n%s", c.page)
	}
	if cb.last() != nil {
		t.Errorf("the application was called: %v", cb.last())
	}
}
