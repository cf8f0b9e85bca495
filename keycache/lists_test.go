package keycache_test

import (
	"testing"
	"time"

	"gatehouse"
	"gatehouse/keycache"
)

var firstPage = gatehouse.Page{Limit: 100}

// list returns the names on a page of a workspace's guardrails through the
// cache, and their total.
func (f *fixture) list(t *testing.T, org, ref string) ([]string, int) {
	t.Helper()
	gs, total, err := f.cache.FindGuardrails(f.ctx, org, ref, firstPage)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range gs {
		names = append(names, g.Name)
	}
	return names, total
}

func TestGuardrailPagesFromMemory(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	for _, name := range []string{"a", "b"} {
		f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val(name)}})
	}
	for range 3 {
		if names, total := f.list(t, f.org, ""); len(names) != 2 || total != 2 {
			t.Fatalf("listed %v of %d, want a and b of 2", names, total)
		}
	}
	f.cache.FindGuardrails(f.ctx, f.org, "", gatehouse.Page{Limit: 1}) // another page
	if n := f.store.pageLookups.Load(); n != 2 {
		t.Errorf("%d lists reached the store for 4 reads of 2 pages, want 2", n)
	}
	other, _, _ := f.newOrg(t)
	if names, total := f.list(t, other, ""); len(names) != 0 || total != 0 {
		t.Errorf("another organization's default workspace lists %v of %d, want none", names, total)
	}
	for range 2 {
		if _, _, err := f.cache.FindGuardrails(f.ctx, f.org, "nope", firstPage); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
			t.Fatalf("unknown workspace: err = %v, want ENOTFOUND", err)
		}
	}
	if n := f.store.pageLookups.Load(); n != 5 {
		t.Errorf("%d lists reached the store, want 5: errors are not cached", n)
	}
}

// TestGuardrailPagesFollowWrites: every write through the cache that
// changes what a list shows is shown at once.
func TestGuardrailPagesFollowWrites(t *testing.T) {
	f := newFixture(t, keycache.Options{})
	w, err := f.cache.CreateWorkspace(f.ctx, f.org, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := func(step, ref string, names ...string) {
		t.Helper()
		got, total := f.list(t, f.org, ref)
		if len(got) != len(names) || total != len(names) {
			t.Fatalf("%s: listed %v of %d, want %v", step, got, total, names)
		}
		for i := range names {
			if got[i] != names[i] {
				t.Fatalf("%s: listed %v, want %v", step, got, names)
			}
		}
	}
	want("empty", "team")
	g, err := f.cache.CreateGuardrail(f.ctx, f.org, gatehouse.GuardrailCreate{WorkspaceID: "team",
		GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val("a")}})
	if err != nil {
		t.Fatal(err)
	}
	want("created", "team", "a")
	if _, err := f.cache.UpdateGuardrail(f.ctx, f.org, g.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("b")}); err != nil {
		t.Fatal(err)
	}
	want("renamed", "team", "b")
	def := gatehouse.DefaultGuardrailID(w.ID)
	if _, err := f.cache.UpdateGuardrail(f.ctx, f.org, def, gatehouse.GuardrailUpdate{Description: gatehouse.Val("set")}); err != nil {
		t.Fatal(err)
	}
	want("default guardrail materialized", "team", "b", gatehouse.DefaultGuardrailName(w.ID))
	if err := f.cache.DeleteGuardrail(f.ctx, f.org, g.ID); err != nil {
		t.Fatal(err)
	}
	want("deleted", "team", gatehouse.DefaultGuardrailName(w.ID))
	if _, err := f.cache.UpdateWorkspace(f.ctx, f.org, "team", gatehouse.WorkspaceUpdate{Slug: gatehouse.Val("crew")}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.cache.FindGuardrails(f.ctx, f.org, "team", firstPage); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatalf("old slug after the rename: err = %v, want ENOTFOUND", err)
	}
	want("by the new slug", "crew", gatehouse.DefaultGuardrailName(w.ID))
	if err := f.cache.DeleteWorkspace(f.ctx, f.org, "crew", false); err != nil {
		t.Fatal(err)
	}
	if _, _, err := f.cache.FindGuardrails(f.ctx, f.org, w.ID, firstPage); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatalf("deleted workspace: err = %v, want ENOTFOUND", err)
	}
}

// TestGuardrailPagesWithAFeed: with other writers, whose insertions are not
// announced, a page is served only if read at most MaxStaleness ago.
func TestGuardrailPagesWithAFeed(t *testing.T) {
	f := newFixture(t, keycache.Options{Feed: true, MaxStaleness: time.Second})
	clk := f.withClock()
	f.list(t, f.org, "")
	clk.advance(time.Second)
	f.list(t, f.org, "") // the feed has never beaten: read-age alone decides
	if n := f.store.pageLookups.Load(); n != 1 {
		t.Fatalf("%d lists reached the store, want 1", n)
	}
	f.newGuardrail(t, f.org, gatehouse.GuardrailCreate{}) // by another instance
	clk.advance(time.Millisecond)
	if _, total := f.list(t, f.org, ""); total != 1 {
		t.Errorf("a page read longer than MaxStaleness ago still answers: total %d, want 1", total)
	}
}
