package console_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/chromedp/chromedp"
)

// TestBrowserActivity: after real chat completions through the gateway
// (metered by the ledger, against the fake provider) with an admin's key
// and a member's, the activity lists every call newest first to the
// admin, and only the member's own to the member; it filters by key (its
// name or hash prefix), by model and by day, and pages by cursor; a
// member naming another's key finds nothing; at 1280 and 375 px.
func TestBrowserActivity(t *testing.T) {
	e := newEnv(t)
	ctx := context.Background()
	ann := e.member("ann@example.com", gatehouse.RoleMember, "ann's password 1")
	ops, opsKey, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ops"})
	if err != nil {
		t.Fatal(err)
	}
	annKey, annPlain, err := e.store.CreateKey(ctx, e.org.ID, gatehouse.KeyCreate{Name: "ann-laptop", CreatorUserID: &ann.ID})
	if err != nil {
		t.Fatal(err)
	}
	// Yesterday: one call of ops. Today: two of ops, one of them with
	// fake/echo-pro, and three of Ann's.
	now := e.clock.Now()
	e.clock.Add(-24 * time.Hour)
	for _, c := range []struct{ key, model, prompt string }{
		{opsKey, "fake/echo", "yesterday's call"},
		{opsKey, "fake/echo", "a call of ops"}, {opsKey, "fake/echo-pro", "a pro call of ops"},
		{annPlain, "fake/echo", "ann one"}, {annPlain, "fake/echo-mini", "ann two"}, {annPlain, "fake/echo", "ann three"},
	} {
		if status := e.chatWith(c.key, c.model, c.prompt); status != http.StatusOK {
			t.Fatalf("chat %q: %d", c.prompt, status)
		}
		if c.prompt == "yesterday's call" {
			e.clock.Set(now)
		}
		e.clock.Add(time.Second)
	}
	e.clock.Set(now)

	b := e.newBrowser(t)
	b.signInWithKey()
	b.visit("/activity")
	b.must(b.count("tbody tr") == 6, "the admin sees %d calls, want 6: %s", b.count("tbody tr"), b.text("main"))
	first := b.text("tbody tr")
	b.must(strings.Contains(first, "ann-laptop") && strings.Contains(first, "fake/echo"), "the newest call: %s", first)
	// The calls, made within a second, have ids that start alike: the
	// column shows their ends, each a call's, and the whole id on hover.
	ids := get(b, chromedp.Evaluate[[][2]string](`[...document.querySelectorAll('td.gen-id')].map(td => [td.textContent.trim(), td.title])`))
	shown := map[string]bool{}
	for _, id := range ids {
		_, err := e.store.FindGeneration(ctx, e.org.ID, id[1])
		b.must(err == nil && strings.HasSuffix(id[1], strings.TrimPrefix(id[0], "…")) && !shown[id[0]],
			"the id column shows %q for %q (%v); shown before: %v", id[0], id[1], err, shown)
		shown[id[0]] = true
	}
	b.must(len(shown) == 6, "the id column: %v", ids)
	b.both("activity")
	b.wide()
	filter := func(v url.Values) {
		t.Helper()
		b.visit("/activity?" + v.Encode())
	}
	filter(url.Values{"key": {ops.Hash[:10]}})
	b.must(b.count("tbody tr") == 3 && b.keysShown() == "ops" && strings.Contains(b.text("h2#calls"), "ops"),
		"ops's calls by hash prefix: %s", b.text("main"))
	filter(url.Values{"key": {"ann-laptop"}, "model": {"fake/echo"}})
	b.must(b.count("tbody tr") == 2, "Ann's fake/echo calls: %s", b.text("tbody"))
	filter(url.Values{"model": {"fake/echo-pro"}})
	b.must(b.count("tbody tr") == 1 && strings.Contains(b.text("tbody"), "$"), "the pro call: %s", b.text("tbody"))
	yesterday := now.Add(-24 * time.Hour).UTC().Format("2006-01-02")
	filter(url.Values{"since": {yesterday}, "until": {yesterday}})
	b.must(b.count("tbody tr") == 1 && b.keysShown() == "ops", "yesterday: %s", b.text("main"))
	filter(url.Values{"key": {"no such key"}})
	b.must(b.status() == http.StatusBadRequest && strings.Contains(b.text("#e-key"), "no key of yours"), "an unknown key: %s", b.text("main"))
	filter(url.Values{"since": {"2026-13-01"}})
	b.must(b.status() == http.StatusBadRequest && b.has("#e-since"), "a wrong date: %s", b.text("main"))

	// Pages: the ledger's own, by cursor.
	page, err := e.store.SearchGenerations(ctx, e.org.ID, gatehouse.GenerationSearch{Limit: 4})
	if err != nil || page.Next == nil {
		t.Fatalf("a page of 4: %v %v", page, err)
	}
	b.visit("/activity?after=" + url.QueryEscape(page.Next.String()))
	b.must(b.count("tbody tr") == 2 && b.has(`nav.pager a[href="/activity"]`), "the last page: %s", b.text("main"))
	b.visit("/activity?after=garbage")
	b.must(b.status() == http.StatusBadRequest, "a wrong cursor: %d", b.status())

	// Ann sees her calls only, whatever she asks.
	m := e.newBrowser(t)
	m.signIn("ann@example.com", "ann's password 1")
	m.visit("/activity")
	m.must(m.count("tbody tr") == 3 && m.keysShown() == "ann-laptop" && strings.Contains(m.text("h2#calls"), "your keys"),
		"Ann's activity: %s", m.text("main"))
	m.visit("/activity?key=" + ops.Hash[:12])
	m.must(m.status() == http.StatusBadRequest && m.count("tbody tr") == 0, "Ann filtering by another's key: %s", m.text("main"))
	m.visit("/activity?model=fake/echo-pro")
	m.must(m.contains("No call matches."), "Ann sees the pro call of ops: %s", m.text("main"))
	m.visit("/activity?key=" + annKey.Hash[:12])
	m.must(m.count("tbody tr") == 3, "Ann's key: %s", m.text("main"))
}

// keysShown are the names in the key column of the activity shown, each
// once, in order of appearance, joined by commas.
func (b *browser) keysShown() string {
	b.t.Helper()
	return get(b, chromedp.Evaluate[string](`[...new Set([...document.querySelectorAll('td[data-label="Key"]')].map(td => td.textContent.trim()))].join(",")`))
}
