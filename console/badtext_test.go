package console_test

import (
	"context"
	"net/http"
	"net/url"
	"testing"

	"gatehouse"
)

// TestBadText: text that no column holds (a NUL, bytes that are not
// UTF-8), which no browser sends and PostgreSQL would fail a query on, is
// a 400 wherever the console takes text: the forms of the new pages (the
// whole form refused, nothing changed) and the filters of the lists.
func TestBadText(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ws, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := e.client()
	c.signInWithKey()
	for _, bad := range []string{"a\x00b", "\xff"} {
		for path, form := range map[string]url.Values{
			"/workspaces":                           {"name": {bad}},
			"/workspaces/" + ws.ID:                  {"name": {"Team"}, "description": {bad}},
			"/workspaces/" + ws.ID + "/members/add": {"members": {bad}},
			"/guardrails":                           {"name": {"G"}, "allowed_models": {bad}},
			"/destinations":                         {"type": {"webhook"}, "name": {bad}, "config.url": {"https://hooks.example.com"}},
		} {
			form.Set("csrf", "")
			c.get("/")
			resp := c.post(path, form)
			if resp.StatusCode != http.StatusBadRequest {
				t.Errorf("POST %s with %q: %d, want 400", path, bad, resp.StatusCode)
			}
		}
		for _, path := range []string{"/activity?model=", "/activity?key=", "/audit?actor=", "/audit?resource_type=", "/audit?operation=",
			"/keys?q=", "/keys?member="} {
			resp := c.get(path + url.QueryEscape(bad))
			if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusNotFound {
				t.Errorf("GET %s%q: %d, want 400 or 404", path, bad, resp.StatusCode)
			}
		}
	}
	if w, err := e.store.FindWorkspace(ctx, e.org.ID, ws.ID); err != nil || w.Description != nil {
		t.Errorf("the workspace after the refused forms: %+v %v", w, err)
	}
	if all, _, _ := e.store.FindWorkspaces(ctx, e.org.ID, gatehouse.Page{Limit: 10}); len(all) != 2 {
		t.Errorf("%d workspaces after the refused forms, want 2", len(all))
	}
}
