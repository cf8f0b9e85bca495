package console_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

const adaPassword = "correct horse battery staple"

// TestBrowserKeys: an admin creates a key and reads its plaintext once
// (it works, and is nowhere to be seen again), changes its limit, sees
// both changes in the audit log with herself as the actor, disables the
// key (it stops working) and deletes it.
func TestBrowserKeys(t *testing.T) {
	e := newEnv(t)
	ada := e.member("ada@example.com", gatehouse.RoleAdmin, adaPassword)
	b := e.newBrowser(t)
	b.signIn("ada@example.com", adaPassword)
	b.visit("/keys")
	b.fill(map[string]string{"#f-name": "ci", "#f-limit": "5", "#f-limit_reset": "daily"})
	b.submit(`#create-key button[type="submit"]`)
	plaintext := b.text("#new-key")
	b.must(strings.HasPrefix(plaintext, gatehouse.KeyPrefix), "no plaintext shown: %q", plaintext)
	b.run(chromedp.WaitVisible(chromedp.CSS(`button[data-copy="new-key"]`)))
	b.screenshot("key-created")

	k, err := e.store.FindKey(context.Background(), e.org.ID, gatehouse.HashKey(plaintext))
	if err != nil {
		t.Fatal(err)
	}
	if k.Name != "ci" || k.Limit == nil || *k.Limit != gatehouse.USD(5) || k.LimitReset != gatehouse.Daily ||
		k.CreatorUserID == nil || *k.CreatorUserID != ada.ID {
		t.Errorf("created key %+v: want ci, $5 daily, created by ada", k)
	}
	if status := e.chat(plaintext, "hello from the console"); status != http.StatusOK {
		t.Fatalf("a chat completion with the new key: %d", status)
	}

	b.visit("/keys")
	html := get(b, chromedp.OuterHTML(chromedp.CSS("html")))
	b.must(!strings.Contains(html, plaintext) && !strings.Contains(html, gatehouse.KeyPrefix), "the plaintext is shown again")
	b.submit(`a[href="/keys/` + k.Hash + `"]`)
	b.must(b.text("h1") == "ci active", "key page title %q", b.text("h1"))
	b.fill(map[string]string{"#f-limit": "7.50"})
	b.submit(`form[action="/keys/` + k.Hash + `"] button[type="submit"]`)
	b.must(b.text("p.notice") == "Saved.", "no notice after saving: %q", b.location())
	b.must(strings.Contains(b.text("main"), "$7.50 limit"), "the new limit is not shown")
	b.run(chromedp.WaitVisible(chromedp.CSS(`canvas[data-drawn="true"]`)))
	b.screenshot("key")

	var log struct {
		Data []struct {
			Operation string
			Actor     *struct {
				KeyHash *string `json:"key_hash"`
				UserID  *string `json:"user_id"`
			}
			Details map[string]any
		}
	}
	e.api("GET", "/audit-log?resource_type=key&resource_id="+k.Hash, e.mgmt, nil, &log)
	if len(log.Data) != 2 || log.Data[0].Operation != "key.update" || log.Data[1].Operation != "key.create" {
		t.Fatalf("audit log of the key: %+v", log.Data)
	}
	for _, entry := range log.Data {
		if a := entry.Actor; a == nil || a.KeyHash != nil || a.UserID == nil || *a.UserID != ada.ID {
			t.Errorf("%s: actor %+v, want ada (%s) without a key", entry.Operation, a, ada.ID)
		}
	}
	if fields, _ := log.Data[0].Details["fields"].([]any); len(fields) != 1 || fields[0] != "limit" {
		t.Errorf("the update's fields: %v, want [limit] (the form sends every field, only the changed ones count)", log.Data[0].Details)
	}

	b.submit(`form[action="/keys/` + k.Hash + `/disable"] button`)
	b.must(strings.Contains(b.text("h1"), "disabled"), "not shown disabled: %q", b.text("h1"))
	if status := e.chat(plaintext, "still there?"); status != http.StatusUnauthorized {
		t.Errorf("a disabled key's completion: %d, want 401", status)
	}
	b.run(chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`)) // the page's own confirmation dialog
	b.submit(`form[action="/keys/` + k.Hash + `/delete"] button`)          // the box not ticked
	b.must(strings.Contains(b.text("#e-confirm"), "Tick the box"), "a delete without confirmation is not refused")
	b.run(chromedp.Click(chromedp.CSS("#f-confirm")), chromedp.Evaluate[chromedp.Void](`window.confirm = () => true`))
	b.submit(`form[action="/keys/` + k.Hash + `/delete"] button`)
	b.must(b.path() == "/keys?done=deleted", "after deleting: %s", b.path())
	if _, err := e.store.FindKey(context.Background(), e.org.ID, k.Hash); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Errorf("the deleted key: %v", err)
	}
}
