package console_test

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// TestBrowserAuditLog: an admin signed in with a password makes changes
// in the console (a workspace, a guardrail, a destination), a management
// key makes some through the API, and the audit log finds each by
// operation, resource type, actor (an email, or a key hash) and day, the
// console's changes with the admin as actor and the API's with the key;
// it pages through 55 keys' creations, and refuses a wrong date next to
// its field; at 1280 and 375 px.
func TestBrowserAuditLog(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	admin := e.member("ada@example.com", gatehouse.RoleAdmin, "ada's password 12")
	b := e.newBrowser(t)
	b.signIn("ada@example.com", "ada's password 12")

	b.visit("/workspaces")
	b.fill(map[string]string{"#f-name": "Audit Team"})
	b.submit(`form[action="/workspaces"] button[type="submit"]`)
	ws, err := e.store.FindWorkspace(ctx, e.org.ID, "audit-team")
	if err != nil {
		t.Fatal(err)
	}
	b.visit("/guardrails?workspace=" + ws.ID)
	b.fill(map[string]string{"#f-name": "Careful"})
	b.submit(`form[method="post"][action="/guardrails"] button`)
	b.visit("/destinations/new?type=posthog&workspace=" + ws.ID)
	b.fill(map[string]string{"#f-name": "Product", `[name="config.apiKey"]`: "phc_secret_0123456789abcdef"})
	b.submit(`form[action="/destinations"] button[type="submit"]`)
	b.must(b.contains("Created."), "the destination: %s", b.text("main"))
	for i := range 55 {
		if status := e.api("POST", "/keys", e.mgmt, map[string]any{"name": fmt.Sprintf("batch-%02d", i)}, nil); status != http.StatusCreated {
			t.Fatalf("POST /keys: %d", status)
		}
	}

	filter := func(v url.Values) {
		t.Helper()
		b.visit("/audit?" + v.Encode())
		b.must(b.status() == http.StatusOK, "%v: status %d", v, b.status())
	}
	filter(url.Values{"operation": {"workspace.create"}})
	b.must(b.count("tbody tr") == 1 && strings.Contains(b.text("tbody"), "ada@example.com (console)") &&
		b.has(`tbody a[href="/workspaces/`+ws.ID+`"]`), "workspace.create: %s", b.text("main"))
	filter(url.Values{"resource_type": {"destination"}})
	b.must(b.count("tbody tr") == 1 && strings.Contains(b.text("tbody"), "destination.create") &&
		strings.Contains(b.text("tbody"), "ada@example.com"), "destinations: %s", b.text("main"))
	b.must(!strings.Contains(b.html(), "phc_secret"), "a secret in the audit log")
	filter(url.Values{"actor": {"ADA@example.com"}})
	for _, op := range []string{"session.create", "workspace.create", "guardrail.create", "destination.create"} {
		b.must(strings.Contains(b.text("tbody"), op), "Ada's changes lack %s: %s", op, b.text("tbody"))
	}
	b.must(!strings.Contains(b.text("tbody"), "key.create"), "Ada's changes hold the key's: %s", b.text("tbody"))
	b.must(b.value("#f-actor") == "ADA@example.com", "the filter is not shown back")
	filter(url.Values{"actor": {admin.ID}, "operation": {"guardrail.create"}})
	b.must(b.count("tbody tr") == 1, "by user id: %s", b.text("main"))

	// The API's changes, by the management key: 55, in pages of 50.
	today := e.clock.Now().UTC().Format("2006-01-02")
	filter(url.Values{"actor": {gatehouse.HashKey(e.mgmt)}, "operation": {"key.create"}, "since": {today}, "until": {today}})
	b.must(b.count("tbody tr") == 50 && b.has(`a[rel="next"]`), "the keys' creations: %d rows", b.count("tbody tr"))
	b.must(strings.Contains(b.text("tbody tr"), "management key “first”") && strings.Contains(b.text("tbody tr"), "workspace_id: "),
		"the actor and details: %s", b.text("tbody tr"))
	b.both("audit")
	b.wide()
	b.submit(`a[rel="next"]`)
	b.must(b.count("tbody tr") == 5 && b.has(`nav.pager a[href^="/audit?"]`) && !b.has(`a[rel="next"]`), "the second page: %d rows", b.count("tbody tr"))
	b.must(strings.Contains(b.text("tbody"), "batch-00") || b.has(`a[href^="/keys/"]`), "the oldest keys: %s", b.text("tbody"))

	tomorrow := e.clock.Now().UTC().Add(24 * time.Hour).Format("2006-01-02")
	filter(url.Values{"since": {tomorrow}})
	b.must(b.contains("No change matches."), "since tomorrow: %s", b.text("main"))
	b.visit("/audit?since=yesterday")
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text("#e-since"), "must be a date"), "a wrong date: %s", b.text("main"))
	b.visit("/audit?actor=nobody@example.com")
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text("#e-actor"), "no member"), "an unknown email: %s", b.text("main"))
}
