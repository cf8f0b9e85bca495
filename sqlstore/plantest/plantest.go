// Package plantest runs every list of the store once, at a depth, and
// returns the statements each ran: the engines' plan tests read their
// plans (SQLite's EXPLAIN QUERY PLAN, PostgreSQL's EXPLAIN) and fail when
// one would read the table for each row its offset skips, or count the
// list's rows from the table. CountAndPageSnapshot checks that an engine's
// view reads a list's count and its page in one snapshot.
package plantest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"
)

// List is one list of the API or the console, and the statements that
// its page ran: its count, if it has one, and its page.
type List struct {
	Name    string
	Queries []sqlstore.LoggedQuery
}

// Lists makes an organization with a workspace besides its default, a
// guardrail, a preset and four keys, runs each list of the store on it
// through log (which s runs on) at offset 100, every page read from the end
// walk names (sqlstore.WalkForward or WalkBackward: the queries of both
// ways, which the store picks between by the page's offset), and returns
// each list's statements that count or page (those naming OFFSET, or
// count(*)). The keys are read from an end of their list and from a mark
// of the keys API (where an earlier page ended).
func Lists(t *testing.T, s *sqlstore.Store, log *sqlstore.QueryLog, walk sqlstore.PageWalk) []List {
	t.Helper()
	ctx := context.Background()
	s.SetPageWalk(walk)
	defer s.SetPageWalk(sqlstore.WalkNearer)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	org, err := s.CreateOrganization(ctx, fmt.Sprint("Plans ", walk))
	must(err)
	ws, err := s.CreateWorkspace(ctx, org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Other"), Slug: gatehouse.Val("other")}, nil)
	must(err)
	g, err := s.CreateGuardrail(ctx, org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val("Plans")}})
	must(err)
	_, _, err = s.SavePreset(ctx, org.ID, "", "plans", gatehouse.PresetDraft{Config: gatehouse.PresetConfig{"model": json.RawMessage(`"m/x"`)}})
	must(err)
	for i := range 3 {
		m, err := s.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: fmt.Sprintf("m%d@example.com", i)})
		must(err)
		_, _, err = s.AddWorkspaceMembers(ctx, org.ID, ws.ID, []string{m.ID})
		must(err)
	}
	for i := range 4 {
		_, _, err := s.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: fmt.Sprint("k", i)})
		must(err)
	}
	_, _, err = s.CreateInvitation(ctx, org.ID, gatehouse.InvitationCreate{Email: "invited@example.com"})
	must(err)
	since := time.UnixMilli(1)
	page := gatehouse.Page{Offset: 100, Limit: 50}
	log.Take()
	var lists []List
	run := func(name string, err error) {
		t.Helper()
		must(err)
		var qs []sqlstore.LoggedQuery
		for _, q := range log.Take() {
			if strings.Contains(q.Query, "OFFSET") || strings.Contains(q.Query, "count(*)") {
				qs = append(qs, q)
			}
		}
		if walk == sqlstore.WalkBackward {
			name += " (read backward)"
		}
		if len(qs) == 0 {
			t.Fatalf("%s: no statement counted or paged", name)
		}
		lists = append(lists, List{name, qs})
	}
	second := func(_ any, err error) error { return err }
	third := func(_ any, _ int, err error) error { return err }
	run("keys", second(s.FindKeys(ctx, org.ID, gatehouse.KeyFilter{Offset: 100})))
	run("keys, all", second(s.FindKeys(ctx, org.ID, gatehouse.KeyFilter{Offset: 100, IncludeDisabled: true})))
	run("keys of a workspace", second(s.FindKeys(ctx, org.ID, gatehouse.KeyFilter{Offset: 100, WorkspaceID: ws.ID})))
	run("keys of a workspace, all", second(s.FindKeys(ctx, org.ID, gatehouse.KeyFilter{Offset: 100, WorkspaceID: ws.ID, IncludeDisabled: true})))
	// Pages that end at offsets 1 and 3 leave marks there; the page at 1
	// is then read from the mark before it (forward) or after it
	// (backward).
	for _, p := range []gatehouse.KeyFilter{{Offset: 0, Limit: 1}, {Offset: 2, Limit: 1}} {
		keys, err := s.FindKeys(ctx, org.ID, p)
		must(err)
		if len(keys) != 1 {
			t.Fatalf("the keys at offset %d: %d, want 1", p.Offset, len(keys))
		}
	}
	log.Take()
	run("keys, from a mark", second(s.FindKeys(ctx, org.ID, gatehouse.KeyFilter{Offset: 1, Limit: 1})))
	if marked := lists[len(lists)-1]; !strings.Contains(marked.Queries[len(marked.Queries)-1].Query, "(created_at, hash)") {
		t.Fatalf("%s: the page was not read from a mark:\n%s", marked.Name, marked.Queries[len(marked.Queries)-1].Query)
	}
	for _, f := range []gatehouse.KeyFilter{{}, {IncludeDisabled: true}, {WorkspaceID: ws.ID}, {WorkspaceID: ws.ID, IncludeDisabled: true}} {
		// A page found by its list's blocks (migration 0052), from a
		// block's anchor: four keys hold no anchor, so the query is made
		// as the store makes it. (The blocks themselves are read whole,
		// each row needed, in list_blocks' primary key.)
		_, page := sqlstore.KeyBlockQueries(org.ID, f.WorkspaceID, f.IncludeDisabled, time.Now().UnixMilli(), "abc001", 1500, 100)
		lists = append(lists, List{Name: fmt.Sprintf("keys from a block's anchor %+v", f), Queries: []sqlstore.LoggedQuery{page}})
	}
	run("members", third(s.FindMembers(ctx, org.ID, page)))
	run("workspaces", third(s.FindWorkspaces(ctx, org.ID, page)))
	run("workspace members", third(s.FindWorkspaceMembers(ctx, org.ID, ws.ID, page)))
	run("guardrails", third(s.FindGuardrails(ctx, org.ID, ws.ID, page)))
	run("key assignments", third(s.FindKeyAssignments(ctx, org.ID, g.ID, page)))
	run("key assignments, all", third(s.FindKeyAssignments(ctx, org.ID, "", page)))
	run("member assignments", third(s.FindMemberAssignments(ctx, org.ID, g.ID, page)))
	run("member assignments, all", third(s.FindMemberAssignments(ctx, org.ID, "", page)))
	run("destinations", third(s.FindDestinations(ctx, org.ID, "", page)))
	run("presets", third(s.FindPresets(ctx, org.ID, "", page)))
	run("preset versions", third(s.FindPresetVersions(ctx, org.ID, "", "plans", page)))
	run("byok keys", third(s.FindBYOKKeys(ctx, org.ID, gatehouse.BYOKKeyFilter{Page: page})))
	run("byok keys of a provider", third(s.FindBYOKKeys(ctx, org.ID, gatehouse.BYOKKeyFilter{Provider: "openai", Page: page})))
	run("invitations", third(s.FindInvitations(ctx, org.ID, page)))
	run("credit grants", third(s.FindCreditGrants(ctx, org.ID, page)))
	run("sso providers", third(s.FindSSOProviders(ctx, org.ID, page)))
	run("group mappings", third(s.FindGroupMappings(ctx, org.ID, page)))
	run("audit log", third(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Page: page})))
	run("audit log, a range", third(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Since: &since, Page: page})))
	run("audit log, an operation", third(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Operation: gatehouse.OpKeyCreate, Page: page})))
	run("audit log, a resource type", third(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{ResourceType: gatehouse.ResourceKey, Page: page})))
	run("audit log, an actor", third(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Actor: "user_x", Page: page})))
	run("scim users", third(s.FindSCIMUsers(ctx, org.ID, gatehouse.SCIMUserFilter{StartIndex: 101, Count: 50})))
	run("scim groups", third(s.FindSCIMGroups(ctx, org.ID, gatehouse.SCIMGroupFilter{StartIndex: 101, Count: 50})))
	return lists
}

// CountAndPageSnapshot checks that view (an engine's View, on the database
// s writes to) reads in one snapshot: a list's count and its page are read
// apart (the page from the end the count puts it nearer), and a write
// between them must not move the page. It reads an organization's kept
// count of members and its members' rows, writes a member from another
// connection, and reads both again in the same view: all must be as before.
func CountAndPageSnapshot(t *testing.T, s *sqlstore.Store, view func(context.Context, func(sqlstore.Querier) error) error) {
	t.Helper()
	ctx := context.Background()
	org, err := s.CreateOrganization(ctx, "Snapshot")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: "first@example.com"}); err != nil {
		t.Fatal(err)
	}
	read := func(q sqlstore.Querier) (kept, rows int, err error) {
		if err := q.QueryRow(ctx, `SELECT COALESCE(SUM(n), 0) FROM list_counts WHERE list = 'members' AND scope = ?`, org.ID).Scan(&kept); err != nil {
			return 0, 0, err
		}
		err = q.QueryRow(ctx, `SELECT count(*) FROM members WHERE organization_id = ?`, org.ID).Scan(&rows)
		return kept, rows, err
	}
	err = view(ctx, func(q sqlstore.Querier) error {
		kept, rows, err := read(q)
		if err != nil {
			return err
		}
		if kept != 1 || rows != 1 {
			return fmt.Errorf("before the write: a kept count of %d and %d rows, want 1 and 1", kept, rows)
		}
		if _, err := s.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: "second@example.com"}); err != nil {
			return err
		}
		kept, rows, err = read(q)
		if err != nil {
			return err
		}
		if kept != 1 || rows != 1 {
			return fmt.Errorf("a write committed meanwhile shows in the view: a kept count of %d and %d rows, want 1 and 1", kept, rows)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, total, err := s.FindMembers(ctx, org.ID, gatehouse.Page{Limit: 1}); err != nil || total != 2 {
		t.Fatalf("after the view: %d members (%v), want 2", total, err)
	}
}

// BlockLists makes an organization whose every list that has blocks
// (migrations 0052, 0054) holds two rows or more, closes their blocks a
// row each (every row an anchor), and reads each list's page at offset 1
// by its blocks (sqlstore.WalkBlocks), through log: the page must be read
// from its block's anchor. It returns each list's statements, as Lists
// does. (The keys' block pages are Lists' own: KeyBlockQueries.)
func BlockLists(t *testing.T, s *sqlstore.Store, log *sqlstore.QueryLog) []List {
	t.Helper()
	ctx := context.Background()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	org, err := s.CreateOrganization(ctx, "Plans by blocks")
	must(err)
	ws, err := s.CreateWorkspace(ctx, org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Other"), Slug: gatehouse.Val("other")}, nil)
	must(err)
	var g *gatehouse.Guardrail
	for _, name := range []string{"Plans", "Blocks"} {
		g, err = s.CreateGuardrail(ctx, org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val(name)}})
		must(err)
	}
	var members, hashes []string
	for i := range 3 {
		_, _, err := s.SavePreset(ctx, org.ID, "", fmt.Sprint("plans-", i), gatehouse.PresetDraft{Config: gatehouse.PresetConfig{"model": json.RawMessage(`"m/x"`)}})
		must(err)
		m, err := s.CreateMember(ctx, org.ID, gatehouse.MemberCreate{Email: fmt.Sprintf("m%d@example.com", i)})
		must(err)
		members = append(members, m.ID)
		k, _, err := s.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: fmt.Sprint("k", i)})
		must(err)
		hashes = append(hashes, k.Hash)
		_, err = s.GrantCredits(ctx, org.ID, gatehouse.USD(1))
		must(err)
		_, err = s.CreateGroupMapping(ctx, org.ID, gatehouse.GroupMappingUpdate{Group: gatehouse.Val(fmt.Sprint("group-", i)),
			Role: gatehouse.Val("org:member")})
		must(err)
		_, err = s.CreateSCIMGroup(ctx, org.ID, gatehouse.SCIMGroupWrite{DisplayName: fmt.Sprint("Group ", i)})
		must(err)
		_, _, err = s.CreateInvitation(ctx, org.ID, gatehouse.InvitationCreate{Email: fmt.Sprintf("invited%d@example.com", i)})
		must(err)
	}
	_, _, err = s.AddWorkspaceMembers(ctx, org.ID, ws.ID, members)
	must(err)
	_, err = s.AssignKeys(ctx, org.ID, g.ID, hashes, nil)
	must(err)
	_, err = s.AssignMembers(ctx, org.ID, g.ID, members, nil)
	must(err)
	if _, err := s.CloseListBlocks(ctx, time.Now().Add(time.Hour), 1); err != nil {
		t.Fatal(err)
	}
	s.SetPageWalk(sqlstore.WalkBlocks)
	defer s.SetPageWalk(sqlstore.WalkNearer)
	page := gatehouse.Page{Offset: 1, Limit: 1}
	log.Take()
	var lists []List
	run := func(name string, _ any, _ int, err error) {
		t.Helper()
		must(err)
		var qs []sqlstore.LoggedQuery
		for _, q := range log.Take() {
			if strings.Contains(q.Query, "OFFSET") {
				qs = append(qs, q)
			}
		}
		if len(qs) == 0 || !strings.Contains(qs[len(qs)-1].Query, ") >= (?, ?)") {
			t.Fatalf("%s by its blocks: the page was not read from an anchor: %v", name, qs)
		}
		lists = append(lists, List{name + " by its blocks", qs})
	}
	wrap := func(name string) func(any, int, error) {
		return func(items any, n int, err error) { run(name, items, n, err) }
	}
	wrap("members")(s.FindMembers(ctx, org.ID, page))
	wrap("workspaces")(s.FindWorkspaces(ctx, org.ID, page))
	wrap("workspace members")(s.FindWorkspaceMembers(ctx, org.ID, ws.ID, page))
	wrap("guardrails")(s.FindGuardrails(ctx, org.ID, "", page))
	wrap("presets")(s.FindPresets(ctx, org.ID, "", page))
	wrap("key assignments")(s.FindKeyAssignments(ctx, org.ID, g.ID, page))
	wrap("key assignments, all")(s.FindKeyAssignments(ctx, org.ID, "", page))
	wrap("member assignments")(s.FindMemberAssignments(ctx, org.ID, g.ID, page))
	wrap("member assignments, all")(s.FindMemberAssignments(ctx, org.ID, "", page))
	wrap("audit log")(s.FindAuditEntries(ctx, org.ID, gatehouse.AuditFilter{Page: page}))
	wrap("credit grants")(s.FindCreditGrants(ctx, org.ID, page))
	wrap("group mappings")(s.FindGroupMappings(ctx, org.ID, page))
	wrap("scim groups")(s.FindSCIMGroups(ctx, org.ID, gatehouse.SCIMGroupFilter{StartIndex: 2, Count: 1}))
	wrap("invitations")(s.FindInvitations(ctx, org.ID, page))
	return lists
}
