package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gatehouse"
)

// TestBrowserGuardrails: an admin creates a guardrail that allows only a
// model the gateway does not serve, puts a key under it by the start of
// its hash and a member by email (a key of another workspace is refused,
// by the name typed), sees the gateway refuse the key's completions, lets
// the model through by editing the guardrail, takes the key from under it,
// and deletes it; at 1280 and 375 px.
func TestBrowserGuardrails(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ann := e.member("ann@example.com", gatehouse.RoleMember, "ann's password 1")
	k, plaintext, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "worker"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Other"), Slug: gatehouse.Val("other")}, nil); err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "elsewhere", WorkspaceID: "other"}); err != nil {
		t.Fatal(err)
	}
	b := e.newBrowser(t)
	b.acceptDialogs()
	b.signInWithKey()

	b.visit("/guardrails")
	b.must(b.contains("No guardrail in this workspace yet."), "an empty list: %s", b.text("main"))
	b.fill(map[string]string{"#f-name": "Echo only", "#f-allowed_models": "fake/other\nfake/another", "#f-limit_usd": "1",
		"#f-reset_interval": "weekly"})
	b.submit(`form[method="post"][action="/guardrails"] button`)
	b.must(b.contains("Created.") && b.text("h1") == "Echo only", "after creating: %s", b.text("main"))
	list, _, err := e.store.FindGuardrails(ctx, e.org.ID, "", gatehouse.Page{Limit: 10})
	if err != nil || len(list) != 1 {
		t.Fatalf("guardrails: %v %v", list, err)
	}
	g := list[0]
	if strings.Join(g.AllowedModels, ",") != "fake/other,fake/another" || g.LimitUSD == nil || *g.LimitUSD != gatehouse.USD(1) || g.ResetInterval != gatehouse.Weekly {
		t.Errorf("created %+v", g)
	}

	// Keys by the start of their hash or their name; one of another
	// workspace refuses the whole form, named as typed.
	b.fill(map[string]string{"#f-keys": k.Hash[:12] + "\nelsewhere"})
	b.submit(`form[action$="/keys/assign"] button`)
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text("#e-keys"), "elsewhere") && strings.Contains(b.text("#e-keys"), "not keys of the guardrail's workspace"),
		"a key of another workspace: %s", b.text("main"))
	b.fill(map[string]string{"#f-keys": "nobody's key"})
	b.submit(`form[action$="/keys/assign"] button`)
	b.must(strings.Contains(b.text("#e-keys"), "nobody's key"), "an unknown key: %s", b.text("main"))
	b.fill(map[string]string{"#f-keys": k.Hash[:12]})
	b.submit(`form[action$="/keys/assign"] button`)
	b.must(b.contains("Assigned") && strings.Contains(b.text("#unassign-keys"), "worker"), "after assigning the key: %s", b.text("main"))
	b.fill(map[string]string{"#f-members": "Ann@Example.com"})
	b.submit(`form[action$="/members/assign"] button`)
	b.must(strings.Contains(b.text("#unassign-members"), "ann@example.com"), "after assigning Ann: %s", b.text("main"))
	if as, _, _ := e.store.FindMemberAssignments(ctx, e.org.ID, g.ID, gatehouse.Page{Limit: 10}); len(as) != 1 || as[0].UserID != ann.ID {
		t.Errorf("member assignments %v", as)
	}

	// The gateway holds the key to the guardrail.
	if status := e.chat(plaintext, "hello"); status != http.StatusForbidden {
		t.Errorf("a chat completion of a model the guardrail does not allow: %d, want 403", status)
	}
	b.fill(map[string]string{"#f-allowed_models": "fake/echo"})
	b.submit(`form[action="/guardrails/` + g.ID + `"] button[type="submit"]`)
	b.must(b.contains("Saved.") && strings.Contains(b.text(".grid"), "fake/echo"), "after allowing fake/echo: %s", b.text("main"))
	if status := e.chat(plaintext, "hello"); status != http.StatusOK {
		t.Errorf("a chat completion of the model now allowed: %d", status)
	}
	b.fill(map[string]string{"#f-limit_usd": "2", "#f-reset_interval": "monthly"})
	b.submit(`form[action="/guardrails/` + g.ID + `"] button[type="submit"]`)
	b.must(strings.Contains(b.text(".grid"), "$2.00") && strings.Contains(b.text(".grid"), "resets monthly"), "the budget: %s", b.text(".grid"))
	b.both("guardrail")
	b.wide()

	b.visit("/guardrails/" + g.ID)
	b.tick(`input[name="key"][value="` + k.Hash + `"]`)
	b.submit(`#unassign-keys button`)
	b.must(b.contains("Taken from under the guardrail.") && !b.has("#unassign-keys"), "after unassigning: %s", b.text("main"))
	b.visit("/guardrails")
	b.must(b.contains("Echo only") && b.contains("1 allowed"), "the list: %s", b.text("main"))
	b.both("guardrails")
	b.wide()
	b.visit("/guardrails/" + g.ID)
	b.tick("#f-confirm")
	b.submit(`form[action$="/delete"] button.danger`)
	b.must(strings.HasPrefix(b.path(), "/guardrails?done=deleted") && b.contains("No guardrail in this workspace yet."), "after deleting: %s", b.text("main"))
}
