package console_test

import (
	"context"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

var keyLink = regexp.MustCompile(`<a href="/keys/([0-9a-f]{64})">`)
var nextLink = regexp.MustCompile(`<a href="([^"]+)" rel="next">`)

// keysSeen pages through /keys (with a query) by its Next links and
// returns the hashes of the keys listed, in order, and the pages visited.
func (c *client) keysSeen(query string) (hashes []string, pages int) {
	c.t.Helper()
	path := "/keys"
	if query != "" {
		path += "?" + url.Values{"q": {query}}.Encode()
	}
	for ; path != ""; pages++ {
		c.wantStatus(c.get(path), http.StatusOK)
		for _, m := range keyLink.FindAllStringSubmatch(c.page, -1) {
			hashes = append(hashes, m[1])
		}
		path = ""
		if m := nextLink.FindStringSubmatch(c.page); m != nil {
			path = html.UnescapeString(m[1])
		}
	}
	return hashes, pages
}

// TestKeysPages: the list pages through every key once, newest first, 50
// a page, by its Next links; a search by name pages the same way, and a
// key's plaintext or hash prefix finds it.
func TestKeysPages(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	var plaintexts []string
	for i := range 120 {
		name := fmt.Sprintf("svc-%03d", i)
		if i%2 == 1 {
			name = fmt.Sprintf("job-%03d", i)
		}
		_, p, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: name})
		if err != nil {
			t.Fatal(err)
		}
		plaintexts = append(plaintexts, p)
		e.clock.Add(time.Millisecond)
	}
	c := e.client()
	c.signInWithKey()
	hashes, pages := c.keysSeen("")
	if len(hashes) != 120 || pages != 3 {
		t.Fatalf("the list showed %d keys in %d pages, want 120 in 3", len(hashes), pages)
	}
	for i, h := range hashes {
		if want := gatehouse.HashKey(plaintexts[119-i]); h != want {
			t.Fatalf("key %d of the list is %s, want %s (newest first)", i, h, want)
		}
	}
	jobs, pages := c.keysSeen("JOB-")
	if len(jobs) != 60 || pages != 2 {
		t.Errorf("search JOB- showed %d keys in %d pages, want 60 in 2", len(jobs), pages)
	}
	for _, q := range []string{plaintexts[7], gatehouse.HashKey(plaintexts[7])[:10]} {
		found, _ := c.keysSeen(q)
		if len(found) == 0 || found[0] != gatehouse.HashKey(plaintexts[7]) {
			t.Errorf("search %.16s… found %v", q, found)
		}
	}
	resp := c.get("/keys?after=not-a-cursor")
	c.wantStatus(resp, http.StatusBadRequest)
	if !strings.Contains(c.page, "start again from the first page") {
		t.Errorf("a bad cursor's page:\n%s", c.page)
	}
}

// TestKeyFormErrors: a create or an edit that the domain refuses shows the
// form again, the typed values kept, the domain's message next to the
// field, and changes nothing.
func TestKeyFormErrors(t *testing.T) {
	e := newEnv(t)
	c := e.client()
	c.signInWithKey()
	for _, tc := range []struct {
		form  url.Values
		field string
		says  string
	}{
		{url.Values{"name": {""}}, "name", "is required"},
		{url.Values{"name": {"n"}, "limit": {"-3"}}, "limit", "must not be negative"},
		{url.Values{"name": {"n"}, "limit": {"12abc"}}, "limit", "must be an amount of US dollars"},
		{url.Values{"name": {"n"}, "limit_reset": {"yearly"}}, "limit_reset", "must be never, daily, weekly or monthly"},
		{url.Values{"name": {"n"}, "expires_at": {"2001-01-01"}}, "expires_at", "must be in the future"},
		{url.Values{"name": {"n"}, "workspace": {"nowhere"}}, "workspace", "is not a workspace you may use"},
		{url.Values{"name": {strings.Repeat("n", 201)}}, "name", "must be at most 200 characters"},
	} {
		c.get("/keys")
		resp := c.post("/keys", tc.form)
		c.wantStatus(resp, http.StatusBadRequest)
		if !regexp.MustCompile(`id="e-` + tc.field + `">[^<]*` + regexp.QuoteMeta(tc.says)).MatchString(c.page) {
			t.Errorf("%v: no %q next to %s", tc.form, tc.says, tc.field)
		}
		if !strings.Contains(c.page, `aria-invalid="true"`) {
			t.Errorf("%v: the field is not marked invalid", tc.form)
		}
	}
	page, err := e.store.SearchKeys(context.Background(), e.org.ID, gatehouse.KeySearch{})
	if err != nil || len(page.Keys) != 0 {
		t.Fatalf("refused forms made keys: %v %v", page, err)
	}
	k, _, err := e.store.CreateKey(context.Background(), e.org.ID, gatehouse.KeyCreate{Name: "kept"})
	if err != nil {
		t.Fatal(err)
	}
	c.get("/keys/" + k.Hash)
	resp := c.post("/keys/"+k.Hash, url.Values{"name": {"renamed"}, "limit": {"x"}})
	c.wantStatus(resp, http.StatusBadRequest)
	if !strings.Contains(c.page, `value="renamed"`) {
		t.Error("the typed name is not kept")
	}
	if after, _ := e.store.FindKey(context.Background(), e.org.ID, k.Hash); after.Name != "kept" {
		t.Errorf("a refused edit renamed the key to %q", after.Name)
	}
}

// TestRemovedMemberCannotReviveKey: a member removed from a workspace keeps
// the power to disable or delete their key there, but cannot enable it or
// change its terms (an expiry pushed forward revives an expired key), as
// they could not create it there; nothing changes when refused.
func TestRemovedMemberCannotReviveKey(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ann := e.member("ann@example.com", gatehouse.RoleMember, "ann's password 12")
	ws, err := e.store.CreateWorkspace(ctx, e.org.ID, gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := e.store.AddWorkspaceMembers(ctx, e.org.ID, ws.ID, []string{ann.ID}); err != nil {
		t.Fatal(err)
	}
	k, _, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ann's", WorkspaceID: ws.ID, CreatorUserID: &ann.ID})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.UpdateKey(ctx, e.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.store.RemoveWorkspaceMembers(ctx, e.org.ID, ws.ID, []string{ann.ID}); err != nil {
		t.Fatal(err)
	}

	c := e.client()
	if resp := c.do("POST", "/sign-in", url.Values{"email": {"ann@example.com"}, "password": {"ann's password 12"}}, "Origin", e.URL); resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("sign in: %d\n%s", resp.StatusCode, c.page)
	}
	c.wantStatus(c.get("/keys/"+k.Hash), http.StatusOK)
	c.wantStatus(c.post("/keys/"+k.Hash+"/enable", url.Values{}), http.StatusForbidden)
	c.wantStatus(c.get("/keys/"+k.Hash), http.StatusOK)
	c.wantStatus(c.post("/keys/"+k.Hash, url.Values{"name": {"renamed"}, "limit": {""}, "limit_reset": {""}, "expires_at": {"2030-12-31"}}), http.StatusForbidden)
	got, err := e.store.FindKey(ctx, e.org.ID, k.Hash)
	if err != nil || !got.Disabled || got.Name != "ann's" || got.ExpiresAt != nil {
		t.Fatalf("after the refusals: %+v, %v; want it disabled and unchanged", got, err)
	}
	c.wantStatus(c.get("/keys/"+k.Hash), http.StatusOK)
	c.wantStatus(c.post("/keys/"+k.Hash+"/delete", url.Values{"confirm": {"yes"}}), http.StatusSeeOther)
}
