package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// testKeySearch checks SearchKeys: the console's pages through the keys.
func testKeySearch(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"ListNewestFirst", testKeySearchList},
		{"Creator", testKeySearchCreator},
		{"Workspace", testKeySearchWorkspace},
		{"NamePrefix", testKeySearchName},
		{"HashPrefix", testKeySearchHash},
		{"Invalid", testKeySearchInvalid},
	})
}

// searchAll pages through a search with pages of size, and returns the
// names of the keys in the order seen.
func (f *fixture) searchAll(t *testing.T, orgID string, s gatehouse.KeySearch, size int) []string {
	t.Helper()
	var names []string
	s.Limit = size
	for pages := 0; ; pages++ {
		if pages > 100 {
			t.Fatal("SearchKeys never ends")
		}
		page, err := f.store.SearchKeys(f.ctx, orgID, s)
		ok(t, err)
		if len(page.Keys) > size {
			t.Fatalf("a page of %d keys, asked for %d", len(page.Keys), size)
		}
		for _, k := range page.Keys {
			names = append(names, k.Name)
		}
		if page.Next == nil {
			return names
		}
		// The cursor goes through a URL and back.
		c, err := gatehouse.ParseKeyCursor(page.Next.String())
		ok(t, err)
		s.After = c
	}
}

func testKeySearchList(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	f.newKey(t, other.ID, gatehouse.KeyCreate{Name: "theirs"})
	_, _, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "mgmt")
	ok(t, err)
	var want []string
	for i := range 7 {
		if i%3 == 0 {
			f.clock.Add(time.Millisecond) // some keys share their creation instant: the hash orders them
		}
		k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "key " + string(rune('a'+i))})
		if i == 2 {
			_, err := f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
			ok(t, err)
		}
		want = append(want, k.Name)
	}
	// Newest first; within an instant, the largest hash first.
	all, err := f.store.SearchKeys(f.ctx, f.org.ID, gatehouse.KeySearch{})
	ok(t, err)
	if all.Next != nil || len(all.Keys) != len(want) {
		t.Fatalf("one page of everything: %d keys, next %v; want %d, none", len(all.Keys), all.Next, len(want))
	}
	if !slices.IsSortedFunc(all.Keys, func(a, b *gatehouse.Key) int {
		if c := b.CreatedAt.Compare(a.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(b.Hash, a.Hash)
	}) {
		t.Error("the keys are not newest first, then by hash descending")
	}
	var order []string
	for _, k := range all.Keys {
		order = append(order, k.Name)
	}
	for _, size := range []int{1, 2, 3, 7, 100} {
		wantEqual(t, "pages of "+string(rune('0'+size)), order, f.searchAll(t, f.org.ID, gatehouse.KeySearch{}, size))
	}
	slices.Sort(order)
	wantEqual(t, "every regular key of the organization, disabled ones too", want, order)
}

func testKeySearchCreator(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ada, bob := f.newMember(t, f.org.ID, "ada@example.com"), f.newMember(t, f.org.ID, "bob@example.com")
	for i, m := range []*gatehouse.Member{ada, bob, ada, nil, ada} {
		f.clock.Add(time.Millisecond)
		c := gatehouse.KeyCreate{Name: "k" + string(rune('0'+i))}
		if m != nil {
			c.CreatorUserID = &m.ID
		}
		f.newKey(t, f.org.ID, c)
	}
	wantEqual(t, "ada's keys", []string{"k4", "k2", "k0"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{CreatorUserID: &ada.ID}, 2))
	wantEqual(t, "bob's keys named k", []string{"k1"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{CreatorUserID: &bob.ID, NamePrefix: "K"}, 2))
	wantEqual(t, "a stranger's keys", []string(nil), f.searchAll(t, f.org.ID, gatehouse.KeySearch{CreatorUserID: strp("user_nobody")}, 2))
}

// testKeySearchWorkspace: a workspace's keys, newest first, alone or with
// a creator or a name prefix; another organization's workspace holds none
// of the organization's keys.
func testKeySearchWorkspace(t *testing.T, open Opener) {
	f := newFixture(t, open)
	team := f.newWorkspace(t, f.org.ID, "team")
	ada := f.newMember(t, f.org.ID, "ada@example.com")
	for i, c := range []gatehouse.KeyCreate{
		{WorkspaceID: "team", CreatorUserID: &ada.ID}, {}, {WorkspaceID: "team"}, {CreatorUserID: &ada.ID}, {WorkspaceID: "team", CreatorUserID: &ada.ID},
	} {
		f.clock.Add(time.Millisecond)
		c.Name = "k" + string(rune('0'+i))
		f.newKey(t, f.org.ID, c)
	}
	other := f.newOrg(t, "Other")
	theirs := f.newWorkspace(t, other.ID, "theirs")
	f.newKey(t, other.ID, gatehouse.KeyCreate{Name: "k9", WorkspaceID: "theirs"})
	wantEqual(t, "team's keys", []string{"k4", "k2", "k0"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{WorkspaceID: team.ID}, 2))
	wantEqual(t, "ada's keys in team", []string{"k4", "k0"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{WorkspaceID: team.ID, CreatorUserID: &ada.ID}, 1))
	wantEqual(t, "team's keys named K", []string{"k0", "k2", "k4"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{WorkspaceID: team.ID, NamePrefix: "K"}, 2))
	wantEqual(t, "another organization's workspace", []string(nil), f.searchAll(t, f.org.ID, gatehouse.KeySearch{WorkspaceID: theirs.ID}, 2))
}

func testKeySearchName(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, name := range []string{"Prod-2", "prod-1", "PRODUCTION", "staging", "pro", "pr", "Prod-1", "Éclair", "éclair", "prod\U0001F600", "prod-zz"} {
		f.clock.Add(time.Millisecond)
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: name})
	}
	other := f.newOrg(t, "Other")
	f.newKey(t, other.ID, gatehouse.KeyCreate{Name: "prod-other"})
	// Folded names in byte order, whatever the case of the prefix; the
	// two keys named prod-1 in either case by hash, which is not known
	// here: compare them as a set.
	got := f.searchAll(t, f.org.ID, gatehouse.KeySearch{NamePrefix: "pRo"}, 2)
	if len(got) != 7 {
		t.Fatalf("search pRo found %q, want the 7 keys whose name starts with pro in any case", got)
	}
	slices.Sort(got[1:3])
	wantEqual(t, "search pRo", []string{"pro", "Prod-1", "prod-1", "Prod-2", "prod-zz", "PRODUCTION", "prod\U0001F600"}, got)
	wantEqual(t, "pages of one", got, func() []string {
		g := f.searchAll(t, f.org.ID, gatehouse.KeySearch{NamePrefix: "PRO"}, 1)
		slices.Sort(g[1:3])
		return g
	}())
	// Letters beyond ASCII match only as typed, in both databases.
	wantEqual(t, "search é", []string{"éclair"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{NamePrefix: "é"}, 10))
	wantEqual(t, "search É", []string{"Éclair"}, f.searchAll(t, f.org.ID, gatehouse.KeySearch{NamePrefix: "É"}, 10))
	wantEqual(t, "search nothing", []string(nil), f.searchAll(t, f.org.ID, gatehouse.KeySearch{NamePrefix: "zzz"}, 10))
	// A prefix with the characters of SQL patterns means them literally.
	wantEqual(t, "search pro%", []string(nil), f.searchAll(t, f.org.ID, gatehouse.KeySearch{NamePrefix: "pro%"}, 10))
}

func testKeySearchHash(t *testing.T, open Opener) {
	f := newFixture(t, open)
	k, plaintext, err := f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: "wanted"})
	ok(t, err)
	for range 5 {
		f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "other"})
	}
	for _, q := range []string{plaintext, k.Hash, k.Hash[:gatehouse.MinHashPrefix], strings.ToUpper(k.Hash[:10])} {
		s := gatehouse.ParseKeyQuery(q)
		if s.HashPrefix == "" {
			t.Fatalf("ParseKeyQuery(%q) = %+v, want a hash search", q, s)
		}
		got := f.searchAll(t, f.org.ID, s, 1)
		if !slices.Contains(got, "wanted") {
			t.Errorf("hash search %q found %q", q, got)
		}
	}
	other := f.newOrg(t, "Other")
	wantEqual(t, "another organization's key by hash", []string(nil), f.searchAll(t, other.ID, gatehouse.KeySearch{HashPrefix: k.Hash}, 10))
	all := f.searchAll(t, f.org.ID, gatehouse.KeySearch{HashPrefix: "000000"}, 10)
	for _, n := range all {
		if n == "wanted" && !strings.HasPrefix(k.Hash, "000000") {
			t.Errorf("hash search 000000 found the key %s", k.Hash)
		}
	}
}

func testKeySearchInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, s := range []gatehouse.KeySearch{
		{Limit: -1}, {Limit: gatehouse.MaxKeysPerList + 1},
		{HashPrefix: "abc"}, {HashPrefix: "ABCDEF12"}, {HashPrefix: "xyzxyzxyz"},
		{NamePrefix: strings.Repeat("n", 4*gatehouse.MaxNameLength+1)},
		{NamePrefix: "a\x00b"}, {NamePrefix: "\xff"}, // no name holds them (PostgreSQL would fail the query)
	} {
		_, err := f.store.SearchKeys(f.ctx, f.org.ID, s)
		wantCode(t, err, gatehouse.EINVALID)
	}
}
