package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

// TestBrowserNarrowAccountLink: at 375 px the link to the account page
// (who is signed in, and the way to sign out everywhere) stays in the
// header, inside the screen, for a member with a long email and for a
// management key's session, and it leads to the account page.
func TestBrowserNarrowAccountLink(t *testing.T) {
	e := newEnv(t)
	e.member("grace.hopper.long-address@example.com", "", adaPassword)
	for _, who := range []string{"member", "key"} {
		b := e.newBrowser(t)
		b.narrow()
		if who == "member" {
			b.signIn("grace.hopper.long-address@example.com", adaPassword)
		} else {
			b.signInWithKey()
		}
		for _, path := range []string{"/", "/keys", "/activity"} {
			b.visit(path)
			box := get(b, chromedp.Evaluate[[]float64](`(() => { const r = document.querySelector('header .who a.email').getBoundingClientRect(); return [r.left, r.right, r.width, r.height, window.innerWidth]; })()`))
			b.must(box[2] > 40 && box[3] > 10 && box[0] >= 0 && box[1] <= box[4], "%s, %s: the account link's box %v in a screen %v wide", who, path, box, box[4])
			b.must(!b.overflows(), "%s, %s: wider than 375 px", who, path)
		}
		b.screenshot("narrow-header-" + who)
		b.run(chromedp.Click(chromedp.CSS("header .who a.email")), chromedp.WaitReady(chromedp.CSS("main")))
		b.must(b.path() == "/account", "%s: the account link led to %s", who, b.path())
	}
}

// TestBrowserEmptyOverview: a member who spent nothing sees both charts of
// the overview say so.
func TestBrowserEmptyOverview(t *testing.T) {
	e := newEnv(t)
	e.member("new@example.com", "", adaPassword)
	b := e.newBrowser(t)
	b.signIn("new@example.com", adaPassword)
	b.run(chromedp.WaitVisible(chromedp.CSS(`canvas[data-chart="chart-models"][data-drawn="true"]`)))
	for _, section := range []string{"by-key", "by-model"} {
		text := b.text(`section[aria-labelledby="` + section + `"]`)
		b.must(strings.Contains(text, "Nothing was spent in the last 30 days."), "the chart %s of a member without spend says: %s", section, text)
	}
	b.screenshot("overview-empty")
}

// TestBrowserSignInForApplication: the sign-in page that an application's
// authorization page (/auth) leads to says that this application is asking
// to connect, and goes on to it; the plain sign-in page, and one for a
// malformed request, say nothing of the kind.
func TestBrowserSignInForApplication(t *testing.T) {
	e := newEnv(t)
	e.member("ada@example.com", gatehouse.RoleAdmin, adaPassword)
	b := e.newBrowser(t)
	b.visit("/sign-in")
	b.must(!b.has("#asking"), "the plain sign-in page speaks of an application")
	b.visit("/sign-in?next=" + url.QueryEscape("/auth?callback_url=ftp://evil.example/cb"))
	b.must(!b.has("#asking"), "a malformed request's sign-in speaks of an application: %s", b.text("main"))

	b.visit("/auth?callback_url=" + url.QueryEscape("https://app.example.com/callback") + "&limit=5")
	b.must(strings.HasPrefix(b.path(), "/sign-in?next="), "an application's page without a session led to %s", b.path())
	b.must(strings.Contains(b.text("#asking"), "An application is asking to connect") && b.text("section.asking .app") == "https://app.example.com",
		"the sign-in page for an application: %s", b.text("main"))
	b.screenshot("signin-for-application")
	b.narrow()
	b.must(!b.overflows(), "the sign-in page for an application is wider than 375 px")
	b.screenshot("signin-for-application-375")
	b.signIn("ada@example.com", "not the password")
	b.must(b.status() == 401 && b.has("#asking"), "a wrong password forgets the application: %d %s", b.status(), b.text("main"))
	b.signIn("ada@example.com", adaPassword)
	b.must(strings.HasPrefix(b.path(), "/auth?callback_url=") && strings.Contains(b.text("main"), "https://app.example.com"),
		"after signing in: %s %s", b.path(), b.text("main"))
}

// TestBrowserAuditSystemActors: the audit log names what acted when no
// key and no member did: the server's first start (its key), an
// application's key exchange, and a visitor's refused sign-in (marked
// failure, with the address), never "the command line".
func TestBrowserAuditSystemActors(t *testing.T) {
	e := newEnv(t, withSignInLimit)
	ctx := context.Background()
	e.member("ada@example.com", gatehouse.RoleAdmin, adaPassword)
	if _, err := e.store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "Acme", Key: gatehouse.NewKeySecret(true),
		KeyName: "Bootstrap management key", Always: true}); err != nil {
		t.Fatal(err)
	}
	var code struct{ Data struct{ ID string } }
	if status := e.api("POST", "/auth/keys/code", e.mgmt, map[string]any{"callback_url": "https://app.example.com/cb"}, &code); status != http.StatusOK {
		t.Fatalf("POST /auth/keys/code: %d", status)
	}
	if status := e.api("POST", "/auth/keys", "", map[string]any{"code": code.Data.ID}, nil); status != http.StatusOK {
		t.Fatalf("POST /auth/keys: %d", status)
	}
	if status := e.clientFrom("127.0.0.7").signIn("ada@example.com", "a wrong password"); status != http.StatusUnauthorized {
		t.Fatalf("a wrong password: %d", status)
	}
	e.waitAudit(func(entries []*gatehouse.AuditEntry) bool {
		return count(entries, gatehouse.OpSessionCreate, gatehouse.AuditResultFailure) == 1
	})
	b := e.newBrowser(t)
	b.signIn("ada@example.com", adaPassword)
	for _, c := range []struct{ op, want string }{
		{"management_key.create", "the server's first start"},
		{"auth_code.exchange", "an application's key exchange"},
		{"session.create", "a visitor (not signed in)"}, // last: its entry is looked at below
	} {
		op, want := c.op, c.want
		b.visit("/audit?operation=" + op)
		// (the env's own first key was made with the store, as the
		// command line makes one)
		b.must(strings.Contains(b.text("tbody"), want) && (op == "management_key.create" || !strings.Contains(b.text("tbody"), "the command line")),
			"%s: %s", op, b.text("tbody"))
	}
	b.must(strings.Contains(b.text("tbody"), "failure") && strings.Contains(b.text("tbody"), "address: 127.0.0.7"),
		"the refused sign-in: %s", b.text("tbody"))
	b.screenshot("audit-system-actors")
}
