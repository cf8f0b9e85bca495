package console_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gatehouse"
)

// TestBrowserWorkspaces: an admin creates a workspace, edits its
// settings, adds members in bulk (a name that is nobody's is refused,
// naming it), tries to remove two members one of whom holds an active key
// there (refused for both, the page naming the member and linking to
// their keys there), disables that key from the link and removes both,
// sets and clears budgets (one out of order refused), is refused the
// deletion while the workspace holds an active key (the page says why and
// links to the keys), then deletes it; at 1280 and 375 px.
func TestBrowserWorkspaces(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ann := e.member("ann@example.com", gatehouse.RoleMember, "ann's password 1")
	bob := e.member("bob@example.com", gatehouse.RoleMember, "bob's password 1")
	b := e.newBrowser(t)
	b.acceptDialogs()
	b.signInWithKey()

	b.visit("/workspaces")
	b.fill(map[string]string{"#f-name": "Team Alpha", "#f-description": "The first team"})
	b.submit(`form[action="/workspaces"] button[type="submit"]`)
	b.must(b.contains("Created."), "no notice after creating: %s", b.text("main"))
	ws, err := e.store.FindWorkspace(ctx, e.org.ID, "team-alpha")
	if err != nil {
		t.Fatalf("the workspace made from the name's slug: %v", err)
	}
	b.must(b.path() == "/workspaces/"+ws.ID+"?done=created", "after creating: %s", b.path())
	workspaceSettings(t, e, b, ws)
	workspaceMembers(t, e, b, ws, ann, bob)
	workspaceBudgetsAndDeletion(t, e, b, ws)
}

// workspaceSettings changes the fields the API's PATCH takes, and sees a
// wrong one refused next to its field. No server tool is offered to turn
// off (the gateway runs none); one turned off through the API is named,
// and a save keeps it.
func workspaceSettings(t *testing.T, e *env, b *browser, ws *gatehouse.Workspace) {
	ctx := context.Background()
	if _, err := e.store.UpdateWorkspace(ctx, e.org.ID, ws.ID, gatehouse.WorkspaceUpdate{DisabledServerTools: gatehouse.Val([]string{"openrouter:web_search"}),
		IsObservabilityBroadcastEnabled: gatehouse.Val(true), IOLoggingAPIKeyIDs: gatehouse.Val([]int64{7, 9})}); err != nil {
		t.Fatal(err)
	}
	b.visit("/workspaces/" + ws.ID)
	b.must(b.count(`input[name="disabled_server_tools"]`) == 0 && !strings.Contains(b.text("main"), "openrouter:bash"),
		"the page offers server tools that do not exist here: %s", b.text("main"))
	b.must(strings.Contains(b.text("#server-tools"), "runs none") && strings.Contains(b.text("#server-tools"), "openrouter:web_search"),
		"the server tools' note: %s", b.text("#server-tools"))
	// Nor switches the gateway does not apply: the broadcast switch and the
	// I/O logging's key ids are named, and kept by a save.
	b.must(b.count(`input[name="is_observability_broadcast_enabled"], input[name="io_logging_api_key_ids"]`) == 0,
		"the page offers settings the gateway does not apply")
	note := b.text("#broadcast")
	b.must(strings.Contains(note, "without I/O logging they carry figures only") && strings.Contains(note, "is_observability_broadcast_enabled") &&
		strings.Contains(note, "io_logging_api_key_ids 7, 9"), "the traces' note: %s", note)
	b.screenshot("workspace-server-tools")
	b.fill(map[string]string{"#f-description": "Alpha's workspace", "#f-default_text_model": "fake/echo",
		"#f-default_provider_sort": "latency", "#f-io_logging_sampling_rate": "0.5"})
	b.tick("#f-include_byok_in_budgets")
	b.submit(`form[action="/workspaces/` + ws.ID + `"] button[type="submit"]`)
	b.must(b.contains("Saved."), "no notice after saving: %s", b.text("main"))
	ws, _ = e.store.FindWorkspace(ctx, e.org.ID, ws.ID)
	if deref(ws.Description) != "Alpha's workspace" || deref(ws.DefaultTextModel) != "fake/echo" || deref(ws.DefaultProviderSort) != "latency" ||
		ws.IOLoggingSamplingRate != 0.5 || !ws.IncludeBYOKInBudgets || strings.Join(ws.DisabledServerTools, ",") != "openrouter:web_search" ||
		!ws.IsObservabilityBroadcastEnabled || fmt.Sprint(ws.IOLoggingAPIKeyIDs) != "[7 9]" {
		t.Errorf("after saving: %+v", ws)
	}
	b.must(b.checked("#f-include_byok_in_budgets") && b.value("#f-default_provider_sort") == "latency", "the form does not show what was saved")
	b.fill(map[string]string{"#f-io_logging_sampling_rate": "2"})
	b.submit(`form[action="/workspaces/` + ws.ID + `"] button[type="submit"]`)
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text("#e-io_logging_sampling_rate"), "between 0.0001 and 1"),
		"a sampling rate of 2: %d %s", b.status(), b.text("main"))
}

// workspaceMembers adds Ann and Bob in bulk (emails in any case and ids,
// one line or several; a name that is nobody's refuses the whole form),
// tries to remove both while Ann holds an active key there (refused, the
// page naming her and linking to her keys there), disables the key from
// that link, and removes both.
func workspaceMembers(t *testing.T, e *env, b *browser, ws *gatehouse.Workspace, ann, bob *gatehouse.Member) {
	ctx := context.Background()
	b.visit("/workspaces/" + ws.ID)
	b.fill(map[string]string{"#f-members": "ANN@example.com\nnobody@example.com"})
	b.submit(`form[action$="/members/add"] button`)
	b.must(strings.Contains(b.text("#e-members"), "nobody@example.com"), "the unknown email is not named: %s", b.text("main"))
	b.fill(map[string]string{"#f-members": "ANN@example.com, " + bob.ID})
	b.submit(`form[action$="/members/add"] button`)
	b.must(b.contains("The members are added.") && b.contains("ann@example.com") && b.contains("bob@example.com"), "after adding: %s", b.text("main"))

	// Ann holds an active key in the workspace: removing Ann and Bob is
	// refused for both, and the page says who, why, and where the keys are.
	k, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ann's alpha key", CreatorUserID: &ann.ID, WorkspaceID: ws.ID})
	if err != nil {
		t.Fatal(err)
	}
	b.tick(`input[name="user"][value="` + ann.ID + `"]`)
	b.tick(`input[name="user"][value="` + bob.ID + `"]`)
	b.submit(`#remove-members button`)
	b.must(b.status() == http.StatusBadRequest && b.contains("Nobody was removed.") && strings.Contains(b.text(".blocked"), "ann@example.com") &&
		!strings.Contains(b.text(".blocked"), "bob@example.com"), "the refusal: %s", b.text("main"))
	b.must(b.contains("active keys in this workspace"), "the refusal does not say why: %s", b.text("main"))
	b.screenshot("workspace-members-blocked")
	if n := b.count(`#remove-members input[name="user"]`); n != 2 {
		t.Errorf("%d members after the refused removal, want 2", n)
	}
	b.submit(`.blocked a`)
	b.must(strings.Contains(b.path(), "workspace="+ws.ID) && strings.Contains(b.path(), "member="+ann.ID), "the link to Ann's keys: %s", b.path())
	b.must(b.contains("ann's alpha key") && b.contains("Team Alpha") && b.contains("ann@example.com"), "Ann's keys there: %s", b.text("main"))
	b.submit(`a[href="/keys/` + k.Hash + `"]`)
	b.submit(`form[action="/keys/` + k.Hash + `/disable"] button`)
	b.visit("/workspaces/" + ws.ID)
	b.tick(`input[name="user"][value="` + ann.ID + `"]`)
	b.tick(`input[name="user"][value="` + bob.ID + `"]`)
	b.submit(`#remove-members button`)
	b.must(b.contains("The members are removed.") && !b.has(`#remove-members`), "after removing: %s", b.text("main"))
}

// workspaceBudgetsAndDeletion sets a budget, is refused one out of order,
// clears it; is refused the deletion while an active key is there (the
// page says why), then deletes the workspace.
func workspaceBudgetsAndDeletion(t *testing.T, e *env, b *browser, ws *gatehouse.Workspace) {
	ctx := context.Background()
	b.fill(map[string]string{"#f-interval": "daily", "#f-limit_usd": "5"})
	b.submit(`form[action$="/budgets"] button`)
	b.must(b.contains("The budget is set.") && b.contains("$5.00"), "after setting a budget: %s", b.text("#budgets ~ *"))
	b.fill(map[string]string{"#f-interval": "weekly", "#f-limit_usd": "1"})
	b.submit(`form[action$="/budgets"] button`)
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text("#e-limit_usd"), "greater than the workspace's daily budget"), "a weekly budget below the daily one: %s", b.text("main"))
	b.submit(`form[action$="/budgets/daily/delete"] button`)
	b.must(b.contains("The budget is cleared.") && b.contains("No budget"), "after clearing: %s", b.text("main"))

	// Deletion: refused while an active key is there, with the reason.
	if _, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "alpha live", WorkspaceID: ws.ID}); err != nil {
		t.Fatal(err)
	}
	b.submit(`form[action$="/delete"] button.danger`)
	b.must(b.status() == http.StatusBadRequest && b.has("#e-confirm"), "deleting without the box ticked: %s", b.text("main"))
	b.tick("#f-confirm")
	b.submit(`form[action$="/delete"] button.danger`)
	b.must(b.status() == http.StatusBadRequest && b.contains("still holds 1 active key"), "deleting with an active key: %s", b.text("main"))
	b.both("workspace")
	b.wide()
	b.visit("/keys?workspace=" + ws.ID)
	b.must(b.contains("alpha live") && b.contains("ann's alpha key"), "the workspace's keys: %s", b.text("main"))
	live, err := e.store.SearchKeys(ctx, e.org.ID, gatehouse.KeySearch{NamePrefix: "alpha live"})
	if err != nil || len(live.Keys) != 1 {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateKey(ctx, e.org.ID, live.Keys[0].Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	b.visit("/workspaces/" + ws.ID)
	b.tick("#f-confirm")
	b.submit(`form[action$="/delete"] button.danger`)
	b.must(b.path() == "/workspaces?done=deleted" && !b.contains("Team Alpha"), "after deleting: %s %s", b.path(), b.text("main"))
	b.both("workspaces")
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}
