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

// TestListBlocks checks the blocks that find a deep page of the keys API
// and of the audit log (migration 0052), on both engines, closed every 7
// rows (CloseListBlocks) now and then, some only up to a horizon. The
// keys: keys made in no order of their time
// (so keys land in blocks kept, and anchors are deleted), ties on the
// time, management keys (in no list), keys disabled and
// enabled, deleted one by one and in bulk, and a workspace deleted with
// its keys. After each step the kept blocks must equal the blocks counted
// again (CheckListBlocks), and every page of the four lists, found by the
// blocks, must be the page found by skipping from the start. The audit
// log likewise: entries made in no order of their time, many of them
// anchors, deleted one by one and the oldest in bulk.
func TestListBlocks(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		testListBlocks(t, openSQLite(t, "blocks.db").Store)
	})
	t.Run("postgres", func(t *testing.T) {
		db, err := postgres.Open(context.Background(), pgtest.NewDatabase(t), box(t), postgres.Options{OpTimeout: 30 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		testListBlocks(t, db.Store)
	})
}

func testListBlocks(t *testing.T, s *sqlstore.Store) {
	ctx := context.Background()
	must := fatalOn(t)
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
			hash := fmt.Sprintf("%064x", rng.Uint64())
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
	closeBlocks := func(horizon int64) int {
		t.Helper()
		placed, err := s.CloseListBlocks(ctx, time.UnixMilli(horizon), 7)
		if err != nil {
			t.Fatal(err)
		}
		return placed
	}
	check := func(step string) {
		t.Helper()
		if err := s.CheckListBlocks(ctx); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		for _, f := range []gatehouse.KeyFilter{{}, {IncludeDisabled: true}, {WorkspaceID: workspaces[0]}, {WorkspaceID: workspaces[0], IncludeDisabled: true}} {
			if f.WorkspaceID != "" && !slices.Contains(workspaces, f.WorkspaceID) {
				continue
			}
			comparePages(t, s, rng, fmt.Sprintf("%s: %+v", step, f), listed(func(p gatehouse.Page) ([]*gatehouse.Key, int, error) {
				g := f
				g.Offset, g.Limit = p.Offset, p.Limit
				keys, err := s.FindKeys(ctx, org.ID, g)
				return keys, 0, err
			}, func(k *gatehouse.Key) string { return k.Hash }), gatehouse.MaxKeysPerList)
		}
	}

	insert(300, 300)
	check("made")
	if placed := closeBlocks(base + 50); placed < 10 {
		t.Fatalf("%d anchors placed among 150 keys of a list and 75 of each workspace's", placed)
	}
	check("closed up to a time")
	closeBlocks(always)
	check("closed")
	must(s.ExecForTest(ctx, `UPDATE list_blocks SET n = n + 1 WHERE list = 'keys' AND scope = ? AND at = -1`, org.ID))
	if err := s.CheckListBlocks(ctx); err == nil {
		t.Fatal("CheckListBlocks finds nothing wrong with a block one key too long")
	}
	must(s.ExecForTest(ctx, `UPDATE list_blocks SET n = n - 1 WHERE list = 'keys' AND scope = ? AND at = -1`, org.ID))
	insert(150, 150) // anchors among the keys before split their blocks
	check("made among")
	closeBlocks(always)
	check("closed again")
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
	closeBlocks(always)
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

	// The audit log, newest first.
	var ids []string
	entries := func(n int) {
		var values []string
		var args []any
		for range n {
			id := fmt.Sprintf("%036x", rng.Uint64())
			ids = append(ids, id)
			values = append(values, "(?, ?, ?, 'key.update', 'key', '[]', 'success')")
			args = append(args, id, org.ID, base+rng.Int64N(100))
		}
		must(s.ExecForTest(ctx, `INSERT INTO audit_log (id, organization_id, at, operation, resource_type, resource_ids, result)
			VALUES `+strings.Join(values, ", "), args...))
	}
	checkLog := func(step string) {
		t.Helper()
		if err := s.CheckListBlocks(ctx); err != nil {
			t.Fatalf("audit log, %s: %v", step, err)
		}
		comparePages(t, s, rng, "audit log, "+step, listed(func(p gatehouse.Page) ([]*gatehouse.AuditEntry, int, error) {
			return s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Page: p})
		}, func(e *gatehouse.AuditEntry) string { return e.ID }), gatehouse.MaxPageSize)
	}
	entries(300)
	checkLog("made")
	closeBlocks(always)
	checkLog("closed")
	entries(150)
	checkLog("made among")
	closeBlocks(always)
	for range 40 {
		entries(1)
	}
	checkLog("made one by one")
	for i, id := range ids {
		if i%5 == 2 {
			must(s.ExecForTest(ctx, `DELETE FROM audit_log WHERE id = ?`, id))
		}
	}
	checkLog("deleted one by one")
	must(s.ExecForTest(ctx, `DELETE FROM audit_log WHERE organization_id = ? AND at < ?`, org.ID, base+30))
	checkLog("the oldest deleted")
	if err := s.ExecForTest(ctx, `UPDATE audit_log SET at = at + 1 WHERE organization_id = ?`, org.ID); err == nil {
		t.Error("an audit entry's time changed: its blocks could not follow")
	}

	// The members, oldest first, made by the store (at one time) and in
	// no order of their time, removed by the store and in bulk.
	var members []string
	people := func(n int) {
		var values []string
		var args []any
		for range n {
			id := fmt.Sprintf("user_%020x", rng.Uint64())
			members = append(members, id)
			values = append(values, "(?, ?, ?, 'org:member', ?)")
			args = append(args, org.ID, id, id+"@example.com", base+rng.Int64N(100))
		}
		must(s.ExecForTest(ctx, `INSERT INTO members (organization_id, id, email, role, created_at) VALUES `+strings.Join(values, ", "), args...))
	}
	checkMembers := func(step string) {
		t.Helper()
		if err := s.CheckListBlocks(ctx); err != nil {
			t.Fatalf("members, %s: %v", step, err)
		}
		comparePages(t, s, rng, "members, "+step, listed(func(p gatehouse.Page) ([]*gatehouse.Member, int, error) {
			return s.FindMembers(ctx, org.ID, p)
		}, func(m *gatehouse.Member) string { return m.ID }), gatehouse.MaxPageSize)
	}
	for i := range 20 {
		m, err := s.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: fmt.Sprintf("person%d@example.com", i)})
		must(err)
		members = append(members, m.ID)
	}
	people(200)
	checkMembers("made")
	closeBlocks(always)
	checkMembers("closed")
	people(100)
	checkMembers("made among")
	for i, id := range members {
		if i%6 == 1 {
			must(s.DeleteMember(ctx, org.ID, id))
		}
	}
	checkMembers("removed one by one")
	closeBlocks(always)
	must(s.ExecForTest(ctx, `DELETE FROM members WHERE organization_id = ? AND created_at % 4 = 1`, org.ID))
	checkMembers("removed in bulk")
	if err := s.ExecForTest(ctx, `UPDATE members SET created_at = created_at + 1 WHERE organization_id = ?`, org.ID); err == nil {
		t.Error("a member's time changed: its blocks could not follow")
	}

	testAssignmentBlocks(t, s, rng, org.ID, workspaces[0], base, closeBlocks)
	testWorkspaceBlocks(t, s, rng, org.ID, base, closeBlocks)
}

// testWorkspaceBlocks checks the blocks of an organization's workspaces,
// credit grants, SSO providers, group mappings and SCIM groups, and of a
// workspace's guardrails, members and presets (migration 0054),
// as testListBlocks checks the others: rows made in no order of their
// time, in bulk and by the store, moved (a preset updated moves to the
// list's start), deleted one by one and in bulk, and with their workspace.
func testWorkspaceBlocks(t *testing.T, s *sqlstore.Store, rng *rand.Rand, orgID string, base int64, closeBlocks func(int64) int) {
	ctx := context.Background()
	must := fatalOn(t)
	ids := func(n int) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = fmt.Sprintf("%08x-%04x-4%03x-8%03x-%012x", rng.Uint32(), rng.IntN(1<<16), rng.IntN(1<<12), rng.IntN(1<<12), rng.Int64N(1<<48))
		}
		return out
	}
	at := func() int64 { return base + rng.Int64N(100) }
	bulk := func(table, columns string, n int, row func(id string) []any) {
		var values []string
		var args []any
		for _, id := range ids(n) {
			r := row(id)
			values = append(values, "("+strings.TrimSuffix(strings.Repeat("?, ", len(r)), ", ")+")")
			args = append(args, r...)
		}
		must(s.ExecForTest(ctx, `INSERT INTO `+table+` (`+columns+`) VALUES `+strings.Join(values, ", "), args...))
	}
	var workspaceID string // the workspace whose lists are read
	type list struct {
		name string
		read func(gatehouse.Page) ([]string, error)
	}
	lists := []list{
		{"workspaces", listed(func(p gatehouse.Page) ([]*gatehouse.Workspace, int, error) {
			return s.FindWorkspaces(ctx, orgID, p)
		}, func(w *gatehouse.Workspace) string { return w.ID })},
		{"guardrails", listed(func(p gatehouse.Page) ([]*gatehouse.Guardrail, int, error) {
			return s.FindGuardrails(ctx, orgID, workspaceID, p)
		}, func(g *gatehouse.Guardrail) string { return g.ID })},
		{"workspace members", listed(func(p gatehouse.Page) ([]*gatehouse.WorkspaceMember, int, error) {
			return s.FindWorkspaceMembers(ctx, orgID, workspaceID, p)
		}, func(m *gatehouse.WorkspaceMember) string { return m.ID })},
		{"presets", listed(func(p gatehouse.Page) ([]*gatehouse.Preset, int, error) {
			return s.FindPresets(ctx, orgID, workspaceID, p)
		}, func(p *gatehouse.Preset) string { return p.ID })},
		{"credit grants", listed(func(p gatehouse.Page) ([]*gatehouse.CreditGrant, int, error) {
			return s.FindCreditGrants(ctx, orgID, p)
		}, func(g *gatehouse.CreditGrant) string { return g.ID })},
		{"sso providers", listed(func(p gatehouse.Page) ([]*gatehouse.SSOProvider, int, error) {
			return s.FindSSOProviders(ctx, orgID, p)
		}, func(p *gatehouse.SSOProvider) string { return p.ID })},
		{"group mappings", listed(func(p gatehouse.Page) ([]*gatehouse.GroupMapping, int, error) {
			return s.FindGroupMappings(ctx, orgID, p)
		}, func(m *gatehouse.GroupMapping) string { return m.ID })},
		{"scim groups", listed(func(p gatehouse.Page) ([]*gatehouse.SCIMGroup, int, error) {
			return s.FindSCIMGroups(ctx, orgID, gatehouse.SCIMGroupFilter{StartIndex: p.Offset + 1, Count: p.Limit, WithoutMembers: true})
		}, func(g *gatehouse.SCIMGroup) string { return g.ID })},
		{"invitations", listed(func(p gatehouse.Page) ([]*gatehouse.Invitation, int, error) {
			return s.FindInvitations(ctx, orgID, p)
		}, func(v *gatehouse.Invitation) string { return v.ID })},
	}
	check := func(step string) {
		t.Helper()
		if err := s.CheckListBlocks(ctx); err != nil {
			t.Fatalf("workspaces' lists, %s: %v", step, err)
		}
		for _, l := range lists {
			comparePages(t, s, rng, l.name+", "+step, l.read, gatehouse.MaxPageSize)
		}
		// The usable links, found by the unused ones' blocks less the
		// expired, are those the links' own times say.
		want, err := s.StringsForTest(ctx, `SELECT id FROM invitations WHERE organization_id = ? AND used_at IS NULL AND expires_at > ?
			ORDER BY created_at DESC, id DESC`, orgID, time.Now().UnixMilli())
		must(err)
		for _, mode := range []sqlstore.PageWalk{sqlstore.WalkNearer, sqlstore.WalkBlocks} {
			s.SetPageWalk(mode)
			var got []string
			for offset := 0; ; offset += 7 {
				found, total, err := s.FindInvitations(ctx, orgID, gatehouse.Page{Offset: offset, Limit: 7})
				must(err)
				if total != len(want) {
					t.Fatalf("invitations, %s: total_count %d, want %d usable links", step, total, len(want))
				}
				if len(found) == 0 {
					break
				}
				for _, v := range found {
					got = append(got, v.ID)
				}
			}
			s.SetPageWalk(sqlstore.WalkNearer)
			if !slices.Equal(got, want) {
				t.Fatalf("invitations, %s: the usable links read %d at a time are\n%v, want\n%v", step, 7, got, want)
			}
		}
	}

	w, err := s.CreateWorkspace(ctx, orgID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("lists"), Slug: gatehouse.Val("lists")}, nil)
	must(err)
	workspaceID = w.ID
	members, _, err := s.FindMembers(ctx, orgID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	must(err)
	var people []string
	for _, m := range members {
		people = append(people, m.ID)
	}
	fill := func() {
		bulk("workspaces", "id, organization_id, name, slug, default_guardrail_id, created_at", 40, func(id string) []any {
			return []any{id, orgID, "w" + id, "w" + id, "g" + id, at()}
		})
		bulk("guardrails", "id, organization_id, workspace_id, name, created_at", 40, func(id string) []any {
			return []any{id, orgID, workspaceID, "g" + id, at()}
		})
		bulk("presets", "id, organization_id, workspace_id, slug, name, status, latest_version, latest_version_id, created_at, updated_at",
			40, func(id string) []any {
				return []any{id, orgID, workspaceID, "p" + id, "p" + id, "active", 1, id, base, at()}
			})
		bulk("credit_grants", "id, organization_id, amount_nanos, total_nanos, created_at", 30, func(id string) []any {
			return []any{id, orgID, 1, 1, at()}
		})
		bulk("sso_providers", "id, organization_id, name, issuer_url, client_id, scopes, email_claim, email_verified_claim, name_claim, enabled, created_at, updated_at",
			30, func(id string) []any {
				return []any{id, orgID, "p" + id, "https://idp.example.com", "c", `["openid"]`, "email", "email_verified", "name", false, at(), base}
			})
		bulk("group_mappings", "id, organization_id, group_name, created_at, updated_at", 30, func(id string) []any {
			return []any{id, orgID, "g" + id, at(), base}
		})
		bulk("scim_groups", "id, organization_id, display_name, created_at, updated_at", 30, func(id string) []any {
			return []any{id, orgID, "g" + id, at(), base}
		})
		// Links made over the last two weeks (a link lasts one), some of
		// them used: the unused made more than a week ago have expired.
		now := time.Now().UnixMilli()
		bulk("invitations", "id, organization_id, email, role, created_at, expires_at, used_at", 60, func(id string) []any {
			made := now - rng.Int64N(2*gatehouse.InvitationTTL.Milliseconds())
			var used any
			if rng.IntN(5) == 0 {
				used = made + 1
			}
			return []any{id, orgID, id + "@example.com", "org:member", made, made + gatehouse.InvitationTTL.Milliseconds(), used}
		})
	}
	fill()
	var joined []string
	for _, m := range people[:40] {
		if rng.IntN(2) == 0 {
			joined = append(joined, m)
		}
	}
	_, _, err = s.AddWorkspaceMembers(ctx, orgID, workspaceID, joined)
	must(err)
	check("made")
	closeBlocks(always)
	check("closed")
	fill()
	i := 0
	bulk("workspace_members", "id, organization_id, workspace_id, user_id, created_at", 30, func(id string) []any {
		for slices.Contains(joined, people[i]) {
			i++
		}
		i++
		return []any{id, orgID, workspaceID, people[i-1], at()}
	})
	check("made among")
	must(s.ExecForTest(ctx, `UPDATE presets SET updated_at = updated_at + 1000 WHERE workspace_id = ? AND created_at % 3 = 0`, workspaceID))
	must(s.ExecForTest(ctx, `UPDATE presets SET updated_at = ? WHERE id IN (SELECT id FROM presets WHERE workspace_id = ? ORDER BY id LIMIT 5)`,
		base+50, workspaceID))
	check("presets updated")
	closeBlocks(always)
	_, err = s.RemoveWorkspaceMembers(ctx, orgID, workspaceID, everyNth(people[:70], 3, 1))
	must(err)
	for _, table := range []string{"guardrails", "presets", "workspace_members"} {
		must(s.ExecForTest(ctx, `DELETE FROM `+table+` WHERE workspace_id = ? AND created_at % 5 = 2`, workspaceID))
	}
	must(s.ExecForTest(ctx, `DELETE FROM workspaces WHERE organization_id = ? AND created_at % 5 = 3 AND NOT is_default AND id <> ?`, orgID, workspaceID))
	for _, table := range []string{"credit_grants", "sso_providers", "group_mappings", "scim_groups", "invitations"} {
		must(s.ExecForTest(ctx, `DELETE FROM `+table+` WHERE organization_id = ? AND created_at % 4 = 1`, orgID))
	}
	must(s.ExecForTest(ctx, `UPDATE invitations SET used_at = created_at + 2 WHERE organization_id = ? AND created_at % 4 = 2`, orgID))
	check("links used")
	check("deleted in bulk")
	closeBlocks(always)
	found, _, err := s.FindWorkspaces(ctx, orgID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	must(err)
	for _, w := range found[len(found)/3:] {
		if strings.HasPrefix(w.Slug, "w") && rng.IntN(3) == 0 { // one made in bulk: no keys
			must(s.DeleteWorkspace(ctx, orgID, w.ID, false))
		}
	}
	check("workspaces deleted by the store")
	must(s.DeleteWorkspace(ctx, orgID, workspaceID, false))
	workspaceID = found[0].ID
	check("the workspace deleted")
}

// testAssignmentBlocks checks the blocks of the guardrails' assignments
// (migration 0054) as testListBlocks checks the others: the key and member
// assignments of an organization and of each guardrail, made in no order
// of their time, in bulk and by the store, moved to another guardrail
// (which rewrites the assignment's guardrail, time and id), removed by the
// store and in bulk, and with their key, their member or their guardrail
// deleted.
func testAssignmentBlocks(t *testing.T, s *sqlstore.Store, rng *rand.Rand, orgID, workspaceID string, base int64, closeBlocks func(int64) int) {
	ctx := context.Background()
	must := fatalOn(t)
	var guardrails []string
	for i := range 3 {
		g, err := s.CreateGuardrail(ctx, orgID, gatehouse.GuardrailCreate{WorkspaceID: workspaceID,
			GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val(fmt.Sprint("blocks ", i))}})
		must(err)
		guardrails = append(guardrails, g.ID)
	}
	keys, err := s.FindKeys(ctx, orgID, gatehouse.KeyFilter{WorkspaceID: workspaceID, IncludeDisabled: true, Limit: gatehouse.MaxKeysPerList})
	must(err)
	var hashes []string
	for _, k := range keys {
		hashes = append(hashes, k.Hash)
	}
	members, _, err := s.FindMembers(ctx, orgID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	must(err)
	var people []string
	for _, m := range members {
		people = append(people, m.ID)
	}
	if len(hashes) < 60 || len(people) < 60 {
		t.Fatalf("%d keys and %d members to assign, want 60 of each", len(hashes), len(people))
	}
	// assign writes assignments of subjects (of column) to guardrails in
	// turn, in one statement, at times among those before.
	assign := func(table, column string, subjects []string) {
		var values []string
		var args []any
		for i, subject := range subjects {
			values = append(values, "(?, ?, ?, ?, ?)")
			args = append(args, fmt.Sprintf("%036x", rng.Uint64()), orgID, guardrails[i%len(guardrails)], subject, base+rng.Int64N(100))
		}
		must(s.ExecForTest(ctx, `INSERT INTO `+table+` (id, organization_id, guardrail_id, `+column+`, created_at) VALUES `+
			strings.Join(values, ", "), args...))
	}
	type list struct {
		name string
		read func(guardrailID string) func(gatehouse.Page) ([]string, error)
	}
	lists := []list{
		{"key assignments", func(guardrailID string) func(gatehouse.Page) ([]string, error) {
			return listed(func(p gatehouse.Page) ([]*gatehouse.KeyAssignment, int, error) {
				return s.FindKeyAssignments(ctx, orgID, guardrailID, p)
			}, func(a *gatehouse.KeyAssignment) string { return a.ID })
		}},
		{"member assignments", func(guardrailID string) func(gatehouse.Page) ([]string, error) {
			return listed(func(p gatehouse.Page) ([]*gatehouse.MemberAssignment, int, error) {
				return s.FindMemberAssignments(ctx, orgID, guardrailID, p)
			}, func(a *gatehouse.MemberAssignment) string { return a.ID })
		}},
	}
	check := func(step string) {
		t.Helper()
		if err := s.CheckListBlocks(ctx); err != nil {
			t.Fatalf("assignments, %s: %v", step, err)
		}
		for _, l := range lists {
			for _, g := range append([]string{""}, guardrails...) {
				comparePages(t, s, rng, fmt.Sprintf("%s of %q, %s", l.name, g, step), l.read(g), gatehouse.MaxPageSize)
			}
		}
	}

	assign("key_assignments", "key_hash", hashes[:len(hashes)/2])
	assign("member_assignments", "user_id", people[:len(people)/2])
	check("made")
	closeBlocks(always)
	check("closed")
	// The store assigns the rest (now: after every block) and moves some
	// of those made in bulk (from the middle of the lists) to another
	// guardrail.
	by := "user_blocks"
	for i, g := range guardrails {
		_, err := s.AssignKeys(ctx, orgID, g, everyNth(hashes[len(hashes)/2:], len(guardrails), i), &by)
		must(err)
		_, err = s.AssignMembers(ctx, orgID, g, everyNth(people[len(people)/2:], len(guardrails), i), &by)
		must(err)
	}
	check("assigned by the store")
	closeBlocks(always)
	check("closed again")
	for i, g := range guardrails {
		_, err := s.AssignKeys(ctx, orgID, g, everyNth(hashes[:len(hashes)/2], 5, i), &by)
		must(err)
		_, err = s.AssignMembers(ctx, orgID, g, everyNth(people[:len(people)/2], 5, i), &by)
		must(err)
	}
	check("moved to another guardrail")
	closeBlocks(always)
	_, err = s.UnassignKeys(ctx, orgID, guardrails[0], everyNth(hashes, 3, 1))
	must(err)
	_, err = s.UnassignMembers(ctx, orgID, guardrails[1], everyNth(people, 3, 2))
	must(err)
	check("unassigned by the store")
	must(s.ExecForTest(ctx, `DELETE FROM key_assignments WHERE organization_id = ? AND created_at % 4 = 1`, orgID))
	must(s.ExecForTest(ctx, `DELETE FROM member_assignments WHERE organization_id = ? AND created_at % 4 = 2`, orgID))
	check("unassigned in bulk")
	for _, h := range everyNth(hashes, 7, 3) {
		must(s.DeleteKey(ctx, orgID, h))
	}
	for _, m := range everyNth(people, 7, 4) {
		must(s.DeleteMember(ctx, orgID, m))
	}
	check("keys and members deleted")
	closeBlocks(always)
	must(s.DeleteGuardrail(ctx, orgID, guardrails[2]))
	guardrails = guardrails[:2]
	check("a guardrail deleted")
	if err := s.ExecForTest(ctx, `UPDATE key_assignments SET organization_id = 'elsewhere' WHERE organization_id = ?`, orgID); err == nil {
		t.Error("a key assignment moved to another organization: its blocks could not follow")
	}
}

// everyNth returns every nth string of ss, from the ith.
func everyNth(ss []string, n, i int) []string {
	var out []string
	for ; i < len(ss); i += n {
		out = append(out, ss[i])
	}
	return out
}

// always is a horizon of CloseListBlocks after every row.
const always = 1 << 50

// fatalOn returns a check that ends t on an error.
func fatalOn(t *testing.T) func(error) {
	return func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
}

// comparePages reads a whole list (read, on s) a page of most rows after
// the other from its start (WalkForward), then pages of 1 to 12 rows at
// offsets from 0 to past its end by its blocks (WalkBlocks): each must be
// the list's rows at its offset.
func comparePages(t *testing.T, s *sqlstore.Store, rng *rand.Rand, name string, read func(gatehouse.Page) ([]string, error), most int) {
	t.Helper()
	page := func(mode sqlstore.PageWalk, offset, limit int) []string {
		t.Helper()
		s.SetPageWalk(mode)
		defer s.SetPageWalk(sqlstore.WalkNearer)
		out, err := read(gatehouse.Page{Offset: offset, Limit: limit})
		if err != nil {
			t.Fatalf("%s: at %d: %v", name, offset, err)
		}
		return out
	}
	var all []string
	for next := page(sqlstore.WalkForward, 0, most); len(next) > 0; next = page(sqlstore.WalkForward, len(all), most) {
		all = append(all, next...)
	}
	for offset := 0; offset <= len(all)+1; offset += 1 + rng.IntN(9) {
		limit := 1 + rng.IntN(12)
		want := all[min(offset, len(all)):min(offset+limit, len(all))]
		if got := page(sqlstore.WalkBlocks, offset, limit); !slices.Equal(got, want) {
			t.Fatalf("%s: the page of %d at %d by the blocks is\n%v, want\n%v", name, limit, offset, got, want)
		}
	}
}

// listed reads a list's page (find) as comparePages does: its rows' names
// (id).
func listed[T any](find func(gatehouse.Page) ([]T, int, error), id func(T) string) func(gatehouse.Page) ([]string, error) {
	return func(p gatehouse.Page) ([]string, error) {
		found, _, err := find(p)
		out := make([]string, 0, len(found))
		for _, x := range found {
			out = append(out, id(x))
		}
		return out, err
	}
}
