package storetest

import (
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

func testWorkspaceDefaultMembers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	list, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, "", page(0, 50))
	ok(t, err)
	if total != 0 || len(list) != 0 {
		t.Errorf("members of an empty organization's default workspace: %d %v", total, list)
	}
	var members []*gatehouse.Member
	for i, role := range []string{gatehouse.RoleMember, gatehouse.RoleAdmin, ""} {
		f.clock.Add(time.Millisecond)
		m, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{Email: fmt.Sprintf("m%d@example.com", i), Role: role})
		ok(t, err)
		members = append(members, m)
	}
	for _, ref := range []string{"", def.ID, def.Slug} {
		list, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, ref, page(0, 50))
		ok(t, err)
		if total != 3 || len(list) != 3 {
			t.Fatalf("FindWorkspaceMembers(%q) = %d %v", ref, total, list)
		}
		for i, wm := range list {
			m := members[i]
			if wm.UserID != m.ID || wm.Email != m.Email || wm.WorkspaceID != def.ID || wm.ID == "" || !wm.CreatedAt.Equal(m.CreatedAt) ||
				wm.Role != gatehouse.WorkspaceRole(m.Role) || wm.ID != gatehouse.ImplicitMembershipID(def.ID, m.ID) {
				t.Errorf("member %d = %+v, for %s", i, wm, memberString(m))
			}
		}
		if list[1].Role != "admin" || list[0].Role != "member" {
			t.Errorf("roles %s, %s", list[0].Role, list[1].Role)
		}
	}
	// Adding to the default workspace is a no-op that reports the memberships.
	added, data, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, "", []string{members[2].ID, members[0].ID})
	ok(t, err)
	if added != 0 || len(data) != 2 || !sameIDs(membershipUserIDs(data), []string{members[0].ID, members[2].ID}) {
		t.Errorf("AddWorkspaceMembers(default) = %d %v", added, data)
	}
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, def.ID, []string{"user_nobody"})
	wantCode(t, err, gatehouse.EINVALID)
	// Removing from it is refused.
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, "", []string{members[0].ID})
	wantCode(t, err, gatehouse.EINVALID)
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, def.Slug, []string{members[0].ID})
	wantCode(t, err, gatehouse.EINVALID)
	_, total, err = f.store.FindWorkspaceMembers(f.ctx, f.org.ID, "", page(0, 50))
	ok(t, err)
	if total != 3 {
		t.Errorf("%d default members after refused removal, want 3", total)
	}
}

func testWorkspaceAddMembers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	admin, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{Email: "admin@example.com", Role: gatehouse.RoleAdmin})
	ok(t, err)
	m1 := f.newMember(t, f.org.ID, "m1@example.com")
	m2 := f.newMember(t, f.org.ID, "m2@example.com")

	f.clock.Add(time.Second)
	added, data, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{admin.ID, m1.ID, admin.ID})
	ok(t, err)
	if added != 2 || len(data) != 2 || !sameIDs(membershipUserIDs(data), []string{admin.ID, m1.ID}) {
		t.Errorf("AddWorkspaceMembers = %d %v", added, data)
	}
	for _, wm := range data {
		if wm.ID == "" || wm.WorkspaceID != w.ID || !wm.CreatedAt.Equal(f.clock.Now()) ||
			wm.Role != map[string]string{admin.ID: "admin", m1.ID: "member"}[wm.UserID] ||
			wm.Email != map[string]string{admin.ID: admin.Email, m1.ID: m1.Email}[wm.UserID] {
			t.Errorf("membership %+v", wm)
		}
	}
	first := map[string]string{}
	for _, wm := range data {
		first[wm.UserID] = wm.ID
	}

	// Re-adding counts only the new ones and keeps the old memberships.
	f.clock.Add(time.Second)
	added, data, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, "team-a", []string{m1.ID, m2.ID})
	ok(t, err)
	if added != 1 || len(data) != 2 || !sameIDs(membershipUserIDs(data), []string{m1.ID, m2.ID}) {
		t.Errorf("second AddWorkspaceMembers = %d %v", added, data)
	}
	for _, wm := range data {
		if wm.UserID == m1.ID && wm.ID != first[m1.ID] {
			t.Errorf("re-adding changed the membership id of %s", m1.ID)
		}
	}
	added, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m2.ID, admin.ID, m1.ID})
	ok(t, err)
	if added != 0 {
		t.Errorf("adding members again counted %d", added)
	}
	list, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
	ok(t, err)
	if total != 3 || len(list) != 3 || !sameIDs(membershipUserIDs(list), []string{admin.ID, m1.ID, m2.ID}) {
		t.Errorf("FindWorkspaceMembers = %d %v", total, list)
	}
	// Ordered by creation: the two of the first call, then m2.
	if list[2].UserID != m2.ID || list[2].Email != m2.Email {
		t.Errorf("FindWorkspaceMembers order: %v", membershipUserIDs(list))
	}
}

func testWorkspaceAddMembersInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	m := f.newMember(t, f.org.ID, "m@example.com")
	stranger := f.newMember(t, f.newOrg(t, "Other").ID, "s@example.com")

	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID, "user_nope", stranger.ID, "user_nope"})
	wantCode(t, err, gatehouse.EINVALID)
	if ids, want := metaIDs(t, err, "user_ids"), sortedIDs("user_nope", stranger.ID); !sameIDs(ids, want) {
		t.Errorf("metadata user_ids = %v, want %v", ids, want)
	}
	many := make([]string, gatehouse.MaxBulkIDs)
	for i := range many {
		many[i] = fmt.Sprintf("user_unknown_%03d", i)
	}
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, many) // 100 is allowed, but unknown
	wantCode(t, err, gatehouse.EINVALID)
	if ids := metaIDs(t, err, "user_ids"); len(ids) != gatehouse.MaxBulkIDs {
		t.Errorf("metadata lists %d unknown ids, want %d", len(ids), gatehouse.MaxBulkIDs)
	}
	for _, ids := range [][]string{nil, {}, append(many, m.ID), {m.ID, ""}, {" "}} {
		_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, ids)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("AddWorkspaceMembers(%d ids) = %v, want %s", len(ids), err, gatehouse.EINVALID)
		}
	}
	// Nothing was added by any of it.
	_, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
	ok(t, err)
	if total != 0 {
		t.Errorf("%d members after failed adds, want 0", total)
	}
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, "no-such-team", []string{m.ID})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testWorkspaceRemoveMembers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	other := f.newWorkspace(t, f.org.ID, "team-b")
	holder := f.newMember(t, f.org.ID, "holder@example.com")
	free := f.newMember(t, f.org.ID, "free@example.com")
	expiring := f.newMember(t, f.org.ID, "expiring@example.com")
	elsewhere := f.newMember(t, f.org.ID, "elsewhere@example.com")
	outsider := f.newMember(t, f.org.ID, "outsider@example.com") // not in the workspace
	all := []string{holder.ID, free.ID, expiring.ID, elsewhere.ID}
	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, all)
	ok(t, err)
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, other.ID, []string{elsewhere.ID})
	ok(t, err)

	key := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: w.ID, CreatorUserID: &holder.ID})
	in1h := f.clock.Now().Add(time.Hour)
	f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: w.ID, CreatorUserID: &expiring.ID, ExpiresAt: &in1h})
	f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: other.ID, CreatorUserID: &elsewhere.ID}) // another workspace
	f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: w.ID})                                   // nobody's

	members := func() []string {
		t.Helper()
		list, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
		ok(t, err)
		if total != len(list) {
			t.Errorf("total %d for %d members", total, len(list))
		}
		return sortedIDs(membershipUserIDs(list)...)
	}

	// All or nothing: the blocked ids are named and nobody is removed.
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{free.ID, holder.ID, expiring.ID, outsider.ID})
	wantCode(t, err, gatehouse.EINVALID)
	if ids, want := metaIDs(t, err, "user_ids"), sortedIDs(holder.ID, expiring.ID); !sameIDs(ids, want) {
		t.Errorf("metadata user_ids = %v, want %v", ids, want)
	}
	if got := members(); !sameIDs(got, sortedIDs(all...)) {
		t.Errorf("members after refused removal = %v", got)
	}

	// Unblocked ones go; non-members are skipped; duplicates count once.
	n, err := f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, "team-a", []string{free.ID, outsider.ID, free.ID, elsewhere.ID, "user_nobody"})
	ok(t, err)
	if n != 2 {
		t.Errorf("removed_count = %d, want 2", n)
	}
	if got := members(); !sameIDs(got, sortedIDs(holder.ID, expiring.ID)) {
		t.Errorf("members = %v", got)
	}
	// Other workspaces keep their members.
	_, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, other.ID, page(0, 50))
	ok(t, err)
	if total != 1 {
		t.Errorf("team-b has %d members, want 1", total)
	}
	n, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{free.ID, outsider.ID})
	ok(t, err)
	if n != 0 {
		t.Errorf("removing non-members counted %d", n)
	}

	// A disabled key no longer blocks.
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{holder.ID})
	wantCode(t, err, gatehouse.EINVALID)
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, key.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	n, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{holder.ID})
	ok(t, err)
	if n != 1 {
		t.Errorf("removed_count = %d, want 1", n)
	}

	// Nor does an expired one.
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{expiring.ID})
	wantCode(t, err, gatehouse.EINVALID)
	f.clock.Set(in1h)
	n, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{expiring.ID})
	ok(t, err)
	if n != 1 {
		t.Errorf("removed_count = %d, want 1", n)
	}
	if got := members(); len(got) != 0 {
		t.Errorf("members left: %v", got)
	}
	// They are still organization members.
	_, total, err = f.store.FindMembers(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 5 {
		t.Errorf("%d organization members, want 5", total)
	}
}

func testWorkspaceRemoveMembersInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	m := f.newMember(t, f.org.ID, "m@example.com")
	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID})
	ok(t, err)
	many := make([]string, gatehouse.MaxBulkIDs+1)
	for i := range many {
		many[i] = fmt.Sprintf("user_%03d", i)
	}
	for _, ids := range [][]string{nil, {}, many, {m.ID, ""}, {""}} {
		_, err := f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, ids)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("RemoveWorkspaceMembers(%d ids) = %v, want %s", len(ids), err, gatehouse.EINVALID)
		}
	}
	n, err := f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, w.ID, many[:gatehouse.MaxBulkIDs]) // 100 non-members
	ok(t, err)
	if n != 0 {
		t.Errorf("removed_count = %d, want 0", n)
	}
	_, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
	ok(t, err)
	if total != 1 {
		t.Errorf("%d members after failed removals, want 1", total)
	}
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, "no-such-team", []string{m.ID})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testWorkspaceMembersPagination(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	var ids []string
	for i := range 5 {
		f.clock.Add(time.Millisecond)
		ids = append(ids, f.newMember(t, f.org.ID, fmt.Sprintf("m%d@example.com", i)).ID)
	}
	// Added in three calls at three instants, two at once in one of them.
	for _, batch := range [][]string{{ids[3]}, {ids[0], ids[4]}, {ids[1], ids[2]}} {
		f.clock.Add(time.Millisecond)
		_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, batch)
		ok(t, err)
	}
	for _, ref := range []string{w.ID, ""} {
		var got []string
		var created []time.Time
		for off := 0; off < 6; off += 2 {
			list, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, ref, page(off, 2))
			ok(t, err)
			if total != 5 {
				t.Errorf("%q offset %d: total %d, want 5", ref, off, total)
			}
			if want := min(2, 5-off); len(list) != want {
				t.Errorf("%q offset %d: %d members, want %d", ref, off, len(list), want)
			}
			for _, wm := range list {
				got = append(got, wm.UserID)
				created = append(created, wm.CreatedAt)
			}
		}
		if !sameIDs(sortedIDs(got...), sortedIDs(ids...)) {
			t.Errorf("%q: pages hold %v, want each of %v once", ref, got, ids)
		}
		if !sort.SliceIsSorted(created, func(i, j int) bool { return created[i].Before(created[j]) }) {
			t.Errorf("%q: pages not in creation order: %v", ref, created)
		}
		if ref == "" && strings.Join(got, ",") != strings.Join(ids, ",") {
			t.Errorf("default workspace: %v, want the organization's order %v", got, ids)
		}
		if ref != "" && got[0] != ids[3] {
			t.Errorf("team-a: first member %s, want the one added first (%s)", got[0], ids[3])
		}
	}
	list, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(5, 10))
	ok(t, err)
	if total != 5 || len(list) != 0 {
		t.Errorf("past the end: %d %v", total, list)
	}
	_, _, err = f.store.FindWorkspaceMembers(f.ctx, f.org.ID, "no-such-team", page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func membershipUserIDs(ms []*gatehouse.WorkspaceMember) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, m.UserID)
	}
	return out
}

// sortedIDs returns the ids sorted, without repeats.
func sortedIDs(ids ...string) []string {
	out := append([]string{}, ids...)
	sort.Strings(out)
	n := 0
	for i, id := range out {
		if i == 0 || id != out[n-1] {
			out[n] = id
			n++
		}
	}
	return out[:n]
}

// sameIDs reports whether a and b hold the same ids, in any order.
func sameIDs(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	return strings.Join(sortedIDs(a...), ",") == strings.Join(sortedIDs(b...), ",")
}

func testMemberWorkspaces(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ada, bob := f.newMember(t, f.org.ID, "ada@example.com"), f.newMember(t, f.org.ID, "bob@example.com")
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	var ws []*gatehouse.Workspace
	for _, slug := range []string{"alpha", "beta", "gamma"} {
		f.clock.Add(time.Millisecond)
		ws = append(ws, f.newWorkspace(t, f.org.ID, slug))
	}
	for _, w := range []*gatehouse.Workspace{ws[2], ws[0]} {
		_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{ada.ID})
		ok(t, err)
	}
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, f.org.ID, ws[1].ID, []string{bob.ID})
	ok(t, err)
	slugs := func(userID string) []string {
		t.Helper()
		list, err := f.store.FindMemberWorkspaces(f.ctx, f.org.ID, userID)
		ok(t, err)
		var out []string
		for _, w := range list {
			out = append(out, w.Slug)
		}
		return out
	}
	wantEqual(t, "ada's workspaces, oldest first", []string{def.Slug, "alpha", "gamma"}, slugs(ada.ID))
	wantEqual(t, "bob's workspaces", []string{def.Slug, "beta"}, slugs(bob.ID))
	_, err = f.store.RemoveWorkspaceMembers(f.ctx, f.org.ID, ws[0].ID, []string{ada.ID})
	ok(t, err)
	wantEqual(t, "ada's workspaces after her removal from alpha", []string{def.Slug, "gamma"}, slugs(ada.ID))
	other := f.newOrg(t, "Other")
	_, err = f.store.FindMemberWorkspaces(f.ctx, other.ID, ada.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindMemberWorkspaces(f.ctx, f.org.ID, "user_nobody")
	wantCode(t, err, gatehouse.ENOTFOUND)
}
