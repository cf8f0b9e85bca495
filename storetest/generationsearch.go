package storetest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// searchLedger is a ledger for the tests of SearchGenerations: Ana's
// keys kA and kC, kB of nobody, kX of another organization, and their
// calls (gens), three of them in one millisecond.
type searchLedger struct {
	*fixture
	ana, bob       *gatehouse.Member
	kA, kB, kC, kX *gatehouse.Key
	base           time.Time
	calls          []ledgerCall
	gens           []*gatehouse.Generation
	order          []int // of gens, newest first (within a millisecond, the greatest id first)
}

func newSearchLedger(t *testing.T, open Opener) *searchLedger {
	f := newFixture(t, open)
	f.clock.Set(time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC))
	l := &searchLedger{fixture: f, base: time.Date(2028, 2, 1, 12, 0, 0, 0, time.UTC)}
	l.ana, l.bob = f.newMember(t, f.org.ID, "ana@example.com"), f.newMember(t, f.org.ID, "bob@example.com")
	l.kA = f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "a", CreatorUserID: &l.ana.ID})
	l.kB = f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "b"})
	l.kC = f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "c", CreatorUserID: &l.ana.ID})
	l.kX = f.newKey(t, f.newOrg(t, "Other").ID, gatehouse.KeyCreate{Name: "x"})
	base := l.base
	l.calls = []ledgerCall{
		{at: base, key: l.kA, model: "acme/chat"},
		{at: base.Add(time.Hour), key: l.kB, model: "acme/chat"},
		{at: base.Add(2 * time.Hour), key: l.kC, model: "other/mini"},
		{at: base.Add(2 * time.Hour), key: l.kA, model: "other/mini"}, // the same millisecond
		{at: base.Add(2 * time.Hour), key: l.kB, model: "acme/chat"},
		{at: base.Add(3 * time.Hour), key: l.kA, model: "acme/chat"},
		{at: base.Add(time.Hour), key: l.kX, model: "acme/chat"},        // another organization's
		{at: base.Add(-75 * time.Hour), key: l.kB, model: "other/mini"}, // days before the others: a model's calls are read a day at a time
	}
	for _, c := range l.calls {
		c.provider, c.prompt, c.compl, c.cost = "p", 1, 2, cents(1)
		l.gens = append(l.gens, f.record(t, c))
	}
	tied := []int{2, 3, 4}
	slices.SortFunc(tied, func(a, b int) int { return strings.Compare(l.gens[b].ID, l.gens[a].ID) })
	l.order = append(append([]int{5}, tied...), 1, 0, 7)
	return l
}

// ids are the ids of the calls keep keeps, newest first.
func (l *searchLedger) ids(keep func(g *gatehouse.Generation) bool) []string {
	out := []string{}
	for _, i := range l.order {
		if keep(l.gens[i]) {
			out = append(out, l.gens[i].ID)
		}
	}
	return out
}

// testGenerationSearch checks SearchGenerations: the ledger newest first,
// each filter, cursors that walk every call once (calls of one millisecond
// included), a member's keys only, the organization's calls only, and
// searches that are refused.
func testGenerationSearch(t *testing.T, open Opener) {
	l := newSearchLedger(t, open)
	f, ids, gens, calls, base := l.fixture, l.ids, l.gens, l.calls, l.base
	ana, bob, kA, kB, kC, kX := l.ana, l.bob, l.kA, l.kB, l.kC, l.kX
	all := func(*gatehouse.Generation) bool { return true }
	since, until := base.Add(time.Hour), base.Add(3*time.Hour)
	for _, c := range []struct {
		name string
		s    gatehouse.GenerationSearch
		want []string
	}{
		{"everything", gatehouse.GenerationSearch{}, ids(all)},
		{"a key", gatehouse.GenerationSearch{KeyHash: kA.Hash}, ids(func(g *gatehouse.Generation) bool { return g.KeyHash == kA.Hash })},
		{"another organization's key", gatehouse.GenerationSearch{KeyHash: kX.Hash}, []string{}},
		{"a model", gatehouse.GenerationSearch{Model: "other/mini"}, ids(func(g *gatehouse.Generation) bool { return g.Model == "other/mini" })},
		{"a model in a range", gatehouse.GenerationSearch{Model: "other/mini", Until: &until},
			ids(func(g *gatehouse.Generation) bool { return g.Model == "other/mini" && g.CreatedAt.Before(until) })},
		{"a model since a day", gatehouse.GenerationSearch{Model: "acme/chat", Since: new(base.Add(-24 * time.Hour))},
			ids(func(g *gatehouse.Generation) bool { return g.Model == "acme/chat" })},
		{"a model that made no call", gatehouse.GenerationSearch{Model: "none/such"}, []string{}},
		{"a member's keys", gatehouse.GenerationSearch{CreatorUserID: &ana.ID}, ids(func(g *gatehouse.Generation) bool { return g.KeyHash != kB.Hash })},
		{"a member without keys", gatehouse.GenerationSearch{CreatorUserID: &bob.ID}, []string{}},
		{"a range", gatehouse.GenerationSearch{Since: &since, Until: &until},
			ids(func(g *gatehouse.Generation) bool { return !g.CreatedAt.Before(since) && g.CreatedAt.Before(until) })},
		{"a range by the nanosecond", gatehouse.GenerationSearch{Since: new(since.Add(time.Nanosecond))},
			ids(func(g *gatehouse.Generation) bool { return g.CreatedAt.After(since) })},
		{"all at once", gatehouse.GenerationSearch{KeyHash: kA.Hash, Model: "acme/chat", CreatorUserID: &ana.ID, Until: &until}, []string{gens[0].ID}},
	} {
		for _, size := range []int{1, 2, 10} { // pages that end inside the millisecond of three calls, and one page
			wantEqual(t, fmt.Sprintf("%s, pages of %d", c.name, size), c.want, f.searchLedger(t, c.s, size))
		}
	}
	// The fields of a call are read back whole.
	page, err := f.store.SearchGenerations(f.ctx, f.org.ID, gatehouse.GenerationSearch{Limit: 1})
	ok(t, err)
	if g := page.Generations[0]; g.ID != gens[5].ID || g.KeyHash != kA.Hash || g.Model != "acme/chat" || g.Provider != "p" ||
		g.PromptTokens != 1 || g.CompletionTokens != 2 || g.Cost != cents(1) || !g.CreatedAt.Equal(calls[5].at) || g.WorkspaceID != kA.WorkspaceID {
		t.Errorf("first call %+v, want %+v", g, gens[5])
	}
	// A deleted key's calls stay in the ledger, but are no member's.
	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, kC.Hash))
	wantEqual(t, "after deleting a key", ids(func(g *gatehouse.Generation) bool { return g.KeyHash == kA.Hash }),
		f.searchLedger(t, gatehouse.GenerationSearch{CreatorUserID: &ana.ID}, 2))
	wantEqual(t, "a deleted key's calls", ids(func(g *gatehouse.Generation) bool { return g.KeyHash == kC.Hash }),
		f.searchLedger(t, gatehouse.GenerationSearch{KeyHash: kC.Hash}, 10))

	for _, bad := range []gatehouse.GenerationSearch{
		{KeyHash: "abc"}, {Model: "a\x00b"}, {Model: "\xff"}, {Limit: -1}, {Limit: gatehouse.MaxPageSize + 1}, {Since: &until, Until: &since}, {Since: &since, Until: &since},
	} {
		_, err := f.store.SearchGenerations(f.ctx, f.org.ID, bad)
		wantCode(t, err, gatehouse.EINVALID)
	}
}

// searchLedger follows the cursors of a search, pages of size n, and returns
// the ids of every call it found.
func (f *fixture) searchLedger(t *testing.T, s gatehouse.GenerationSearch, n int) []string {
	t.Helper()
	s.Limit = n
	out := []string{}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("the cursors do not end")
		}
		page, err := f.store.SearchGenerations(f.ctx, f.org.ID, s)
		ok(t, err)
		for _, g := range page.Generations {
			out = append(out, g.ID)
		}
		if page.Next == nil {
			return out
		}
		c, err := gatehouse.ParseGenerationCursor(page.Next.String())
		ok(t, err)
		s.After = c
	}
}
