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

// TestBrowserAdminPages: the workspaces, guardrails, destinations and
// audit log are admins' pages: a member's menu does not offer them, each
// page is a 403 for her by URL, and every change she posts to them is a
// 403 that changes nothing. Her keys page filtered by a workspace she does
// not belong to is a 404, and filtered by another member shows her own
// keys still.
func TestBrowserAdminPages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.member("ada@example.com", "", adaPassword)
	bob := e.member("bob@example.com", "", adaPassword)
	ws, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Secret team"), Slug: gatehouse.Val("secret")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.AddWorkspaceMembers(ctx, e.org.ID, ws.ID, []string{bob.ID}); err != nil {
		t.Fatal(err)
	}
	g, err := e.store.CreateGuardrail(ctx, e.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val("Strict")}})
	if err != nil {
		t.Fatal(err)
	}
	d, err := e.store.CreateDestination(ctx, e.org.ID, gatehouse.DestinationCreate{Type: "webhook", DestinationUpdate: gatehouse.DestinationUpdate{
		Name: gatehouse.Val("Hook"), Config: &gatehouse.ConfigPatch{Values: map[string]*string{"url": new("https://hooks.example.com/x")}}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "bob-secret", CreatorUserID: &bob.ID, WorkspaceID: ws.ID}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ada-own", CreatorUserID: &ada.ID}); err != nil {
		t.Fatal(err)
	}

	b := e.newBrowser(t)
	b.signIn("ada@example.com", adaPassword)
	menu := b.text("nav .menu")
	for _, label := range []string{"Workspaces", "Guardrails", "Destinations", "Audit log", "Members"} {
		b.must(!strings.Contains(menu, label), "a member's menu offers %s: %s", label, menu)
	}
	b.must(strings.Contains(menu, "Activity"), "a member's menu lacks the activity: %s", menu)
	pages := []string{"/workspaces", "/workspaces/" + ws.ID, "/guardrails", "/guardrails/" + g.ID, "/destinations",
		"/destinations/new?type=webhook", "/destinations/" + d.ID, "/audit", "/audit?operation=key.create"}
	for _, p := range pages {
		b.visit(p)
		b.must(b.status() == http.StatusForbidden && b.contains("Only the organization's admins"), "%s for a member: %d %s", p, b.status(), b.text("main"))
		b.must(!b.contains("Secret team") && !b.contains("Strict") && !b.contains("Hook"), "%s shows the admins' things: %s", p, b.text("main"))
	}
	b.screenshot("admin-page-for-a-member")
	b.visit("/keys?workspace=" + ws.ID)
	b.must(b.status() == http.StatusNotFound && !b.contains("Secret team"), "another workspace's keys for a member: %d %s", b.status(), b.text("main"))
	b.visit("/keys?member=" + bob.ID)
	b.must(b.contains("ada-own") && !b.contains("bob-secret"), "another member's keys for a member: %s", b.text("main"))

	// The server refuses whatever the page would not offer.
	c := e.client()
	c.wantStatus(c.do("POST", "/sign-in", url.Values{"email": {"ada@example.com"}, "password": {adaPassword}}, "Origin", e.URL), http.StatusSeeOther)
	c.get("/keys")
	for _, p := range []string{"/workspaces", "/workspaces/" + ws.ID, "/workspaces/" + ws.ID + "/delete", "/workspaces/" + ws.ID + "/budgets",
		"/workspaces/" + ws.ID + "/budgets/daily/delete", "/workspaces/" + ws.ID + "/members/add", "/workspaces/" + ws.ID + "/members/remove",
		"/guardrails", "/guardrails/" + g.ID, "/guardrails/" + g.ID + "/delete", "/guardrails/" + g.ID + "/keys/assign",
		"/guardrails/" + g.ID + "/keys/unassign", "/guardrails/" + g.ID + "/members/assign", "/guardrails/" + g.ID + "/members/unassign",
		"/destinations", "/destinations/" + d.ID, "/destinations/" + d.ID + "/delete"} {
		resp := c.post(p, url.Values{"name": {"mine"}, "slug": {"mine"}, "confirm": {"yes"}, "members": {"ada@example.com"},
			"user": {bob.ID}, "interval": {"daily"}, "limit_usd": {"1"}, "type": {"webhook"}, "config.url": {"https://evil.example.com"},
			"sampling_rate": {"1"}, "keys": {"ada-own"}})
		if resp.StatusCode != http.StatusForbidden {
			t.Errorf("a member's POST %s: %d, want 403", p, resp.StatusCode)
		}
	}
	if w, err := e.store.FindWorkspace(ctx, e.org.ID, ws.ID); err != nil || w.Name != "Secret team" {
		t.Errorf("the workspace after a member's attempts: %+v %v", w, err)
	}
	if members, total, _ := e.store.FindWorkspaceMembers(ctx, e.org.ID, ws.ID, gatehouse.Page{Limit: 10}); total != 1 || members[0].UserID != bob.ID {
		t.Errorf("the workspace's members after a member's attempts: %v", members)
	}
	if got, err := e.store.FindGuardrail(ctx, e.org.ID, g.ID); err != nil || got.Name != "Strict" {
		t.Errorf("the guardrail after a member's attempts: %+v %v", got, err)
	}
	if got, err := e.store.FindDestination(ctx, e.org.ID, d.ID); err != nil || deref(got.Name) != "Hook" || got.Config.Values["url"] != "https://hooks.example.com/x" {
		t.Errorf("the destination after a member's attempts: %+v %v", got, err)
	}
	if all, _, _ := e.store.FindWorkspaces(ctx, e.org.ID, gatehouse.Page{Limit: 10}); len(all) != 2 {
		t.Errorf("%d workspaces after a member's attempts", len(all))
	}
}

// TestBrowserRemovedMemberKey: a member removed from a workspace sees her
// disabled key there with a notice that she may disable or delete it only:
// no edit form, no Enable button; posting the enable form anyway is a 403
// that says why, and the key stays disabled.
func TestBrowserRemovedMemberKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ada := e.member("ada@example.com", "", adaPassword)
	ws, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.AddWorkspaceMembers(ctx, e.org.ID, ws.ID, []string{ada.ID}); err != nil {
		t.Fatal(err)
	}
	k, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ada-research", CreatorUserID: &ada.ID, WorkspaceID: ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateKey(ctx, e.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RemoveWorkspaceMembers(ctx, e.org.ID, ws.ID, []string{ada.ID}); err != nil {
		t.Fatal(err)
	}
	b := e.newBrowser(t)
	b.signIn("ada@example.com", adaPassword)
	b.visit("/keys/" + k.Hash)
	b.must(b.contains("ada-research") && b.contains("You no longer belong to this key's workspace"), "her key's page: %s", b.text("main"))
	b.must(!b.has(`form[action="/keys/`+k.Hash+`/enable"]`) && !b.has(`form[action="/keys/`+k.Hash+`"]`),
		"the page offers to enable or change the key")
	b.must(b.has(`form[action="/keys/`+k.Hash+`/delete"]`), "the page does not offer to delete the key")
	b.screenshot("removed-member-key")
	// The form the page no longer shows, posted anyway.
	b.run(chromedp.Evaluate[chromedp.Void](`(() => { const f = document.createElement("form"); f.method = "post";
		f.action = "/keys/`+k.Hash+`/enable"; const c = document.querySelector('input[name="csrf"]').cloneNode();
		f.appendChild(c); document.body.appendChild(f); document.body.dataset.page = "old"; f.submit(); })()`),
		chromedp.WaitReady(chromedp.CSS(`body:not([data-page="old"]) main`)))
	b.must(b.status() == http.StatusForbidden && b.contains("You no longer belong to this key's workspace"),
		"enabling a key of a workspace she left: %d %s", b.status(), b.text("main"))
	if got, err := e.store.FindKey(ctx, e.org.ID, k.Hash); err != nil || !got.Disabled {
		t.Fatalf("the key after the refusal: %+v, %v", got, err)
	}
}
