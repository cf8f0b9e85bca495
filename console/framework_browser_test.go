package console_test

import (
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// TestBrowserSignInWithKey: a fresh install's operator opens the console,
// is sent to the sign-in page, signs in with the management key, lands on
// the overview, and signs out.
func TestBrowserSignInWithKey(t *testing.T) {
	e := newEnv(t)
	b := e.newBrowser(t)
	b.visit("/keys")
	b.must(strings.HasPrefix(b.path(), "/sign-in?next=%2Fkeys"), "not sent to the sign-in page: %s", b.path())
	b.screenshot("sign-in")
	b.signInWithKey()
	b.must(b.path() == "/keys", "after signing in: %s, want /keys", b.path())
	b.visit("/")
	b.must(b.text("h1") == "Overview", "overview's title: %q", b.text("h1"))
	b.run(chromedp.WaitVisible(chromedp.CSS(`canvas[data-drawn="true"]`)))
	b.screenshot("overview-empty")
	b.submit(`form[action="/sign-out"] button`)
	b.must(strings.HasPrefix(b.path(), "/sign-in"), "after signing out: %s", b.path())
	b.must(strings.Contains(b.text("main"), "You are signed out."), "no notice of the sign-out")
	b.visit("/")
	b.must(strings.HasPrefix(b.path(), "/sign-in"), "the session still works after signing out: %s", b.path())
}
