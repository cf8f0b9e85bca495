package console_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

// TestBrowserMemberIsolation: a member sees only her own keys and usage;
// another member's key is in neither her list nor her search, and its
// page, fetched by URL, is a 404 (as is any change to it); an admin sees
// both.
func TestBrowserMemberIsolation(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.member("ada@example.com", "", adaPassword)
	bob := e.member("bob@example.com", "", adaPassword)
	adaKey, adaPlain, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ada-laptop", CreatorUserID: &ada.ID})
	if err != nil {
		t.Fatal(err)
	}
	bobKey, bobPlain, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "bob-server", CreatorUserID: &bob.ID})
	if err != nil {
		t.Fatal(err)
	}
	e.chat(adaPlain, "ada's words")
	e.chat(bobPlain, "bob's rather longer words, to cost more")

	b := e.newBrowser(t)
	b.signIn("ada@example.com", adaPassword)
	b.visit("/keys")
	list := b.text("main")
	b.must(strings.Contains(list, "ada-laptop") && !strings.Contains(list, "bob-server"), "ada's list:\n%s", list)
	b.visit("/keys?q=" + bobKey.Hash[:12])
	b.must(!strings.Contains(b.text("main"), "bob-server"), "ada finds bob's key by its hash")
	b.visit("/keys?q=bob")
	b.must(!strings.Contains(b.text("main"), "bob-server"), "ada finds bob's key by its name")
	b.visit("/keys/" + bobKey.Hash)
	b.must(b.status() == http.StatusNotFound, "bob's key page for ada: %d", b.status())
	b.must(!strings.Contains(b.text("main"), "bob-server"), "the 404 names the key")
	b.visit("/")
	legend := get(b, chromedp.Evaluate[string](`document.getElementById("chart-keys").textContent`))
	b.must(strings.Contains(legend, "ada-laptop") && !strings.Contains(legend, "bob-server") && !strings.Contains(legend, bobKey.Hash[:8]),
		"ada's overview chart: %s", legend)

	// The server refuses whatever the page would not offer.
	c := e.client()
	c.wantStatus(c.do("POST", "/sign-in", url.Values{"email": {"ada@example.com"}, "password": {adaPassword}}, "Origin", e.URL), http.StatusSeeOther)
	c.get("/keys")
	for _, path := range []string{"/keys/" + bobKey.Hash, "/keys/" + bobKey.Hash + "/disable", "/keys/" + bobKey.Hash + "/delete"} {
		resp := c.post(path, url.Values{"name": {"mine now"}, "confirm": {"yes"}})
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("ada's POST %s: %d, want 404", path, resp.StatusCode)
		}
	}
	after, err := e.store.FindKey(ctx, e.org.ID, bobKey.Hash)
	if err != nil || after.Name != "bob-server" || after.Disabled {
		t.Errorf("bob's key after ada's attempts: %+v, %v", after, err)
	}

	admin := e.newBrowser(t)
	admin.signInWithKey()
	admin.visit("/keys")
	all := admin.text("main")
	admin.must(strings.Contains(all, "ada-laptop") && strings.Contains(all, "bob-server"), "the admin's list:\n%s", all)
	admin.visit("/keys/" + adaKey.Hash)
	admin.must(admin.status() == http.StatusOK, "ada's key for the admin: %d", admin.status())
}

// TestBrowserCSRF: a page of another origin that posts a form to the
// console, with the victim's cookie and even with her CSRF token, changes
// nothing; neither does the console's own form stripped of its token.
func TestBrowserCSRF(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser(t)
	b.signInWithKey()
	b.visit("/keys")
	token := get(b, chromedp.Value(chromedp.CSS(`#create-key input[name="csrf"]`)))
	// Another origin on the same site (another port of 127.0.0.1): the
	// browser sends the SameSite=Lax cookie, so only the origin check
	// stands between it and the console.
	evil := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		w.Write([]byte(`<!doctype html><main><form id="f" method="post" action="` + e.URL + `/keys">
			<input name="csrf" value="` + token + `"><input name="name" value="forged"><button>go</button></form></main>`))
	}))
	defer evil.Close()
	b.run(chromedp.Navigate(evil.URL), chromedp.WaitReady(chromedp.CSS("main")))
	b.submit("#f button")
	b.must(b.status() == http.StatusForbidden, "a form from another origin: %d", b.status())
	b.screenshot("csrf-refused")

	b.visit("/keys")
	b.run(chromedp.Evaluate[chromedp.Void](`document.querySelector('#create-key input[name="csrf"]').remove()`))
	b.fill(map[string]string{"#f-name": "no token"})
	b.submit(`#create-key button[type="submit"]`)
	b.must(b.status() == http.StatusForbidden, "a form without its token: %d", b.status())

	page, err := e.store.SearchKeys(context.Background(), e.org.ID, gatehouse.KeySearch{})
	if err != nil || len(page.Keys) != 0 {
		t.Errorf("forged forms made keys: %d, %v", len(page.Keys), err)
	}
}

// TestBrowserSessionExpiry: once a session has been idle for longer than
// the idle timeout, the next page asks to sign in again, and comes back.
func TestBrowserSessionExpiry(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser(t)
	b.signInWithKey()
	b.visit("/keys")
	e.clock.Add(gatehouse.SessionIdleTimeout + time.Minute)
	b.visit("/keys?q=x")
	b.must(b.path() == "/sign-in?next=%2Fkeys%3Fq%3Dx", "an idle session's page: %s", b.path())
	b.signInWithKey()
	b.must(b.path() == "/keys?q=x", "back after signing in again: %s", b.path())
}

// TestBrowserSignOutEverywhere: a member signed in on two browsers signs
// out everywhere from one; the other's session is over too.
func TestBrowserSignOutEverywhere(t *testing.T) {
	e := newEnv(t)
	e.member("ada@example.com", "", adaPassword)
	laptop, phone := e.newBrowser(t), e.newBrowser(t)
	laptop.signIn("ada@example.com", adaPassword)
	phone.signIn("ada@example.com", adaPassword)
	laptop.submit(`a[href="/account"]`)
	laptop.must(strings.Contains(laptop.text("main"), "ada@example.com"), "the account page does not name her")
	laptop.screenshot("account")
	laptop.submit(`form[action="/sign-out/everywhere"] button`)
	laptop.must(strings.Contains(laptop.text("main"), "signed out everywhere"), "no notice: %s", laptop.path())
	phone.visit("/keys")
	phone.must(strings.HasPrefix(phone.path(), "/sign-in"), "the other browser is still signed in: %s", phone.path())
}
