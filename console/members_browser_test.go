package console_test

import (
	"context"
	"strings"
	"testing"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

// TestBrowserInvitation: an admin (signed in with the management key)
// invites someone; the link, shown once, opens in another browser, which
// sets a password and is signed in at once; signed out, the new member
// signs in with the email and the password, and is a member (no Members
// page). The admin then resets the password: the member's session ends,
// the old password no longer works, and the new link sets a new one.
func TestBrowserInvitation(t *testing.T) {
	e := newEnv(t)
	admin := e.newBrowser(t)
	admin.signInWithKey()
	admin.visit("/members")
	admin.fill(map[string]string{"#f-email": "grace@example.com"})
	admin.submit(`form[action="/members/invite"] button`)
	link := admin.text("#new-link")
	admin.must(strings.HasPrefix(link, e.URL+"/invite/"), "no link shown: %q", link)
	admin.screenshot("members-invited")

	grace := e.newBrowser(t)
	grace.run(chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("main")))
	grace.must(strings.Contains(grace.text("main"), "grace@example.com"), "the link's page does not name the email")
	grace.fill(map[string]string{"#f-password": "too short", "#f-password_again": "too short"})
	grace.submit(`main form button[type="submit"]`)
	grace.must(grace.text("#e-password") != "", "a short password is not refused next to its field")
	focused := get(grace, chromedp.Evaluate[string](`document.activeElement.id + " " + document.activeElement.getAttribute("aria-describedby")`))
	grace.must(focused == "f-password e-password", "the field in error does not have the focus, described by its error: %q", focused)
	grace.screenshot("invitation-refused")
	grace.fill(map[string]string{"#f-password": "a long enough secret", "#f-password_again": "a long enough secret"})
	grace.submit(`main form button[type="submit"]`)
	grace.must(grace.path() == "/", "after setting the password: %s, want the overview", grace.path())
	grace.must(strings.Contains(grace.text(".who"), "grace@example.com · member"), "signed in as %q", grace.text(".who"))
	grace.must(!strings.Contains(grace.text(".menu"), "Members"), "a member sees the Members page in the menu")
	grace.visit("/members")
	grace.must(grace.status() == 403, "a member opens the members page: %d", grace.status())

	grace.submit(`form[action="/sign-out"] button`)
	grace.signIn("grace@example.com", "a wrong password!")
	grace.must(strings.Contains(grace.text("p.alert"), "The email or the password is wrong."), "a wrong password is not refused")
	grace.signIn("grace@example.com", "a long enough secret")
	grace.must(grace.path() == "/", "after signing in: %s", grace.path())

	// The link was used up.
	grace.run(chromedp.Navigate(link), chromedp.WaitReady(chromedp.CSS("main")))
	grace.must(grace.status() == 404, "a used link still opens: %d", grace.status())

	admin.visit("/members")
	admin.run(chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`))
	admin.submit(`form[action$="/reset"] button`)
	reset := admin.text("#new-link")
	grace.visit("/keys")
	grace.must(strings.HasPrefix(grace.path(), "/sign-in"), "the reset left the member's session: %s", grace.path())
	grace.signIn("grace@example.com", "a long enough secret")
	grace.must(strings.HasPrefix(grace.path(), "/sign-in"), "the old password works after a reset")
	grace.run(chromedp.Navigate(reset), chromedp.WaitReady(chromedp.CSS("main")))
	grace.fill(map[string]string{"#f-password": "another long secret", "#f-password_again": "another long secret"})
	grace.submit(`main form button[type="submit"]`)
	grace.must(grace.path() == "/", "after the reset link: %s", grace.path())

	if !strings.Contains(e.logs.String(), `"path":"/invite/[redacted]"`) {
		t.Error("the request log does not show the link's requests, redacted")
	}
	for _, l := range []string{link, reset} {
		if token := l[strings.LastIndex(l, "/")+1:]; strings.Contains(e.logs.String(), token) {
			t.Errorf("a link's token is in the log")
		}
	}
	members, _, err := e.store.FindMembers(context.Background(), e.org.ID, gatehouse.Page{Limit: 10})
	if err != nil || len(members) != 1 || members[0].Email != "grace@example.com" || members[0].Role != gatehouse.RoleMember {
		t.Errorf("members after the invitation: %v, %v", members, err)
	}
}
