package sqlstore_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/postgres"
	"gatehouse/postgres/pgtest"
	"gatehouse/sqlstore"
)

// TestKeyBlocks checks the blocks that find a deep page of the keys API
// (migration 0052), on both engines: keys made in no order of their time
// (so anchors land inside blocks and split them), many of them anchors (a
// hash ending in 000-003: one in 12 here, one in 1,024 in use), ties on
// the time, management keys (anchors of no list), keys disabled and
// enabled, deleted one by one and in bulk, and a workspace deleted with
// its keys. After each step the kept blocks must equal the blocks counted
// again (CheckKeyBlocks), and every page of the four lists, found by the
// blocks, must be the page found by skipping from the start.
func TestKeyBlocks(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testKeyBlocks(t, openSQLite(t, "blocks.db").Store)
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), box(t), postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testKeyBlocks(t, db.Store)
	})
}

func testKeyBlocks(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	org, err := s.CreateOrganization(ctx, "Blocks")
	must(err)
	var workspaces []string
	for _, name := range []string{"one", "two"} {
		w, err := s.CreateWorkspace(ctx, org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val(name), Slug: gatehouse.Val(name)}, nil)
		must(err)
		workspaces = append(workspaces, w.ID)
	}
	rng := rand.New(rand.NewPCG(30, 52))
	base := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC).UnixMilli()
	var hashes []string
	made := 0
	// insert1 makes n keys in one statement, at times among those of the
	// keys before them (a hundred milliseconds, most of which several keys
	// share).
	insert1 := func(n int) {
		var values []string
		var args []any
		for _, i := range rng.Perm(n) {
			i += made
			suffix := fmt.Sprintf("%03x", 4+rng.IntN(4092))
			if rng.IntN(12) == 0 {
				suffix = fmt.Sprintf("%03x", rng.IntN(4))
			}
			hash := fmt.Sprintf("%061x", rng.Uint64()) + suffix
			management := i%50 == 7
			var workspace any = workspaces[i%2]
			if management {
				workspace = nil
			}
			values = append(values, "(?, ?, ?, ?, ?, ?, ?)")
			args = append(args, hash, org.ID, workspace, management, fmt.Sprint("key ", i), i%9 == 4, base+rng.Int64N(100))
			if !management {
				hashes = append(hashes, hash)
			}
		}
		made += n
		must(s.ExecForTest(ctx, `INSERT INTO api_keys (hash, organization_id, workspace_id, management, name, disabled, created_at)
			VALUES `+strings.Join(values, ", "), args...))
	}
	// insert makes n keys in statements of at most batch keys.
	insert := func(n, batch int) {
		for ; n > batch; n -= batch {
			insert1(batch)
		}
		insert1(n)
	}
	check := func(step string) {
		t.Helper()
		if err := s.CheckKeyBlocks(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for _, f := range []gatehouse.KeyFilter{{}, {IncludeDisabled: true}, {WorkspaceID: workspaces[0]}, {WorkspaceID: workspaces[0], IncludeDisabled: true}} {
			if f.WorkspaceID != "" && !slices.Contains(workspaces, f.WorkspaceID) {
				continue
			}
			page := func(mode sqlstore.PageWalk, offset, limit int) []string {
				t.Helper()
				s.SetPageWalk(mode)
				defer s.SetPageWalk(sqlstore.WalkNearer)
				g := f
				g.Offset, g.Limit = offset, limit
				keys, err := s.FindKeys(ctx, org.ID, g)
				if err != nil {
					t.Fatalf("%s: %+v at %d: %v", step, f, offset, err)
				}
				var out []string
				for _, k := range keys {
					out = append(out, k.Hash)
				}
				return out
			}
			var all []string
			for next := page(sqlstore.WalkForward, 0, gatehouse.MaxKeysPerList); len(next) > 0; next = page(sqlstore.WalkForward, len(all), gatehouse.MaxKeysPerList) {
				all = append(all, next...)
			}
			for offset := 0; offset <= len(all)+1; offset += 1 + rng.IntN(9) {
				limit := 1 + rng.IntN(12)
				want := all[min(offset, len(all)):min(offset+limit, len(all))]
				if got := page(sqlstore.WalkBlocks, offset, limit); !slices.Equal(got, want) {
					t.Fatalf("%s: %+v: the page of %d at %d by the blocks is\n%v, want\n%v", step, f, limit, offset, got, want)
				}
			}
		}
	}

	insert(300, 300)
	check("made")
	must(s.ExecForTest(ctx, `UPDATE list_blocks SET n = n + 1 WHERE list = 'keys' AND scope = ? AND at = -1`, org.ID))
	if err := s.CheckKeyBlocks(ctx); err == nil {
		t.Fatal("CheckKeyBlocks finds nothing wrong with a block one key too long")
	}
	must(s.ExecForTest(ctx, `UPDATE list_blocks SET n = n - 1 WHERE list = 'keys' AND scope = ? AND at = -1`, org.ID))
	insert(150, 150) // anchors among the keys before split their blocks
	check("made among")
	insert(40, 1)
	check("made one by one")
	for i, h := range hashes {
		if i%4 == 1 {
			_, err := s.UpdateKey(ctx, org.ID, h, gatehouse.KeyUpdate{Disabled: gatehouse.Val(i%8 == 1)})
			must(err)
		}
	}
	check("disabled and enabled")
	for i, h := range hashes {
		if i%5 == 2 {
			must(s.DeleteKey(ctx, org.ID, h))
		}
	}
	check("deleted one by one")
	must(s.ExecForTest(ctx, `DELETE FROM api_keys WHERE organization_id = ? AND created_at % 3 = 0`, org.ID))
	check("deleted in bulk")
	must(s.ExecForTest(ctx, `UPDATE api_keys SET disabled = TRUE WHERE workspace_id = ?`, workspaces[1]))
	check("disabled in bulk")
	must(s.DeleteWorkspace(ctx, org.ID, workspaces[1], false))
	workspaces = workspaces[:1]
	check("a workspace deleted")

	if err := s.ExecForTest(ctx, `UPDATE api_keys SET created_at = created_at + 1 WHERE organization_id = ?`, org.ID); err == nil {
		t.Error("a key's creation time changed: its blocks could not follow")
	}
	check("a move refused")
}
