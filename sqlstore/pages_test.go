package sqlstore_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"
)

// TestPagesFromBothEnds reads every page of lists whose rows tie on their
// first sort terms (every row made at one instant), on both engines, at
// totals of 0, 1, the page's size, one more and several pages: each page
// read from the nearer end (as served), from the start and from the end
// must be exactly the rows of the list at its offset, and the pages at
// offsets 0, limit, 2×limit… tile the list: no row missed or repeated. An
// offset past the end gives an empty page. The lists: members (a count
// kept by triggers), guardrails (counted), the audit log (newest first,
// kept), and the keys API's four lists (kept counts, migration 0051, and
// the walk-on marks), also after keys are disabled, enabled and deleted.
func TestPagesFromBothEnds(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testPagesFromBothEnds(t, openSQLite(t, "pages.db").Store)
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), box(t), postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testPagesFromBothEnds(t, db.Store)
	})
}

const tiePage = 3

func testPagesFromBothEnds(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	at := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	s.Now = func() time.Time { return at } // every row ties on its time
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []int{0, 1, tiePage, tiePage + 1, 3*tiePage + 2} {
		org, err := s.CreateOrganization(ctx, fmt.Sprint("Pages ", n))
		must(err)
		ws, err := s.CreateWorkspace(ctx, org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Other"), Slug: gatehouse.Val("other")}, nil)
		must(err)
		_, _, err = s.CreateManagementKey(ctx, org.ID, "management") // in no list of the keys API
		must(err)
		var keys []*gatehouse.Key
		for i := range n {
			_, err := s.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: fmt.Sprintf("m%d@example.com", i)})
			must(err)
			_, err = s.CreateGuardrail(ctx, org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val(fmt.Sprint("g", i))}})
			must(err)
			workspace := ""
			if i%2 == 1 {
				workspace = ws.ID
			}
			k, _, err := s.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: fmt.Sprint("k", i), WorkspaceID: workspace})
			must(err)
			keys = append(keys, k)
		}
		for i, k := range keys {
			if i%3 == 2 {
				_, err := s.UpdateKey(ctx, org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
				must(err)
			}
		}
		name := func(list string) string { return fmt.Sprintf("%d rows: %s", n, list) }
		checkPages(t, s, name("members"), n, func(p gatehouse.Page) ([]string, int, error) {
			return ids(s.FindMembers(ctx, org.ID, p))
		})
		checkPages(t, s, name("guardrails"), n, func(p gatehouse.Page) ([]string, int, error) {
			return ids(s.FindGuardrails(ctx, org.ID, "", p))
		})
		checkPages(t, s, name("audit log"), -1, func(p gatehouse.Page) ([]string, int, error) {
			return ids(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Page: p}))
		})
		checkKeyLists := func(when string) {
			t.Helper()
			for _, f := range []gatehouse.KeyFilter{{}, {IncludeDisabled: true}, {WorkspaceID: ws.ID}, {WorkspaceID: ws.ID, IncludeDisabled: true}} {
				list := fmt.Sprintf("keys %+v %s", f, when)
				checkPages(t, s, name(list), -1, func(p gatehouse.Page) ([]string, int, error) {
					f := f
					f.Offset, f.Limit = p.Offset, p.Limit
					keys, err := s.FindKeys(ctx, org.ID, f)
					hashes := make([]string, len(keys))
					for i, k := range keys {
						hashes[i] = k.Hash
					}
					return hashes, -1, err
				})
			}
		}
		checkKeyLists("")
		if n > 1 { // the lists change: the counts follow, the marks are forgotten
			_, err := s.UpdateKey(ctx, org.ID, keys[n-1].Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
			must(err)
			_, err = s.UpdateKey(ctx, org.ID, keys[2].Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(false)})
			must(err)
			must(s.DeleteKey(ctx, org.ID, keys[1].Hash))
			must(s.DeleteKey(ctx, org.ID, keys[0].Hash))
			checkKeyLists("after changes")
		}
	}
}

// ids returns the ids of a page of rows, and the list's total.
func ids[T interface{ comparable }](rows []T, total int, err error) ([]string, int, error) {
	out := make([]string, len(rows))
	for i, r := range rows {
		switch r := any(r).(type) {
		case *gatehouse.Member:
			out[i] = r.ID
		case *gatehouse.Guardrail:
			out[i] = r.ID
		case *gatehouse.AuditEntry:
			out[i] = r.ID
		default:
			panic(fmt.Sprintf("ids of %T", r))
		}
	}
	return out, total, err
}

// checkPages reads every page of a list (its rows' ids, and its total or
// -1 when the list gives none) of want rows (-1: as many as one page of
// them all holds) from both ends and from the nearer, and fails unless
// each is the list's rows at its offset.
func checkPages(t *testing.T, s *sqlstore.Store, name string, want int, page func(gatehouse.Page) ([]string, int, error)) {
	t.Helper()
	read := func(walk sqlstore.PageWalk, p gatehouse.Page) ([]string, int) {
		t.Helper()
		s.SetPageWalk(walk)
		defer s.SetPageWalk(sqlstore.WalkNearer)
		rows, total, err := page(p)
		if err != nil {
			t.Fatalf("%s at %+v: %v", name, p, err)
		}
		return rows, total
	}
	// The whole list, read as before (forward, one page).
	all, total := read(sqlstore.WalkForward, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if want >= 0 && len(all) != want {
		t.Fatalf("%s: %d rows, want %d", name, len(all), want)
	}
	if len(all) >= gatehouse.MaxPageSize {
		t.Fatalf("%s: %d rows do not fit the test's page", name, len(all))
	}
	if total != -1 && total != len(all) {
		t.Errorf("%s: total %d, but %d rows", name, total, len(all))
	}
	if len(slices.Compact(slices.Sorted(slices.Values(all)))) != len(all) {
		t.Fatalf("%s: a row repeated in %v", name, all)
	}
	n := len(all)
	// Offsets forward then backward: the keys API's marks are left by
	// the pages before (ending before the page, then after it).
	var offsets []int
	for o := 0; o <= n+2; o++ {
		offsets = append(offsets, o)
	}
	for o := n + 2; o >= 0; o-- {
		offsets = append(offsets, o)
	}
	for _, o := range offsets {
		p := gatehouse.Page{Offset: o, Limit: tiePage}
		wantRows := all[min(o, n):min(o+tiePage, n)]
		for _, walk := range []sqlstore.PageWalk{sqlstore.WalkNearer, sqlstore.WalkForward, sqlstore.WalkBackward} {
			got, gotTotal := read(walk, p)
			if !slices.Equal(got, wantRows) {
				t.Errorf("%s: walk %d at offset %d of %d: %v, want %v", name, walk, o, n, got, wantRows)
			}
			if gotTotal != total {
				t.Errorf("%s: walk %d at offset %d: total %d, want %d", name, walk, o, gotTotal, total)
			}
		}
	}
	// The pages at offsets 0, limit, 2×limit… as served tile the list.
	var tiled []string
	for o := 0; o < n+tiePage; o += tiePage {
		got, _ := read(sqlstore.WalkNearer, gatehouse.Page{Offset: o, Limit: tiePage})
		tiled = append(tiled, got...)
	}
	if !slices.Equal(tiled, all) {
		t.Errorf("%s: the pages tile the list as %v, want %v", name, tiled, all)
	}
}
