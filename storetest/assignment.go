package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// keyAssignments returns the key hashes assigned to a guardrail ("" = all),
// sorted.
func (f *fixture) keyAssignments(t *testing.T, guardrailID string) []string {
	t.Helper()
	list, total, err := f.store.FindKeyAssignments(f.ctx, f.org.ID, guardrailID, page(0, 100))
	return assignedIDs(t, "FindKeyAssignments", list, total, err, func(a *gatehouse.KeyAssignment) string { return a.KeyHash })
}

// memberAssignments returns the user ids assigned to a guardrail ("" =
// all), sorted.
func (f *fixture) memberAssignments(t *testing.T, guardrailID string) []string {
	t.Helper()
	list, total, err := f.store.FindMemberAssignments(f.ctx, f.org.ID, guardrailID, page(0, 100))
	return assignedIDs(t, "FindMemberAssignments", list, total, err, func(a *gatehouse.MemberAssignment) string { return a.UserID })
}

// assignedIDs returns the id of every assignment of a listing, sorted; it
// fails the test on an error or on a total that is not the number of rows.
func assignedIDs[A any](t *testing.T, what string, list []A, total int, err error, id func(A) string) []string {
	t.Helper()
	ok(t, err)
	if total != len(list) {
		t.Fatalf("%s: total %d for %d rows", what, total, len(list))
	}
	out := []string{}
	for _, a := range list {
		out = append(out, id(a))
	}
	slices.Sort(out)
	return out
}

func testAssignKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newGuardrail(t, f.org.ID, guardrail("A"))
	b := f.newGuardrail(t, f.org.ID, guardrail("B"))
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "one"})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "two"})
	by := "user_admin"

	n, err := f.store.AssignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash, k2.Hash, k1.Hash}, &by)
	wantCount(t, "AssignKeys(A, k1 k2 k1)", n, err, 2)
	n, err = f.store.AssignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash}, nil)
	wantCount(t, "AssignKeys(A, k1) again", n, err, 0)

	list, total, err := f.store.FindKeyAssignments(f.ctx, f.org.ID, a.ID, page(0, 10))
	ok(t, err)
	if total != 2 || len(list) != 2 {
		t.Fatalf("A has %d key assignments (total %d), want 2", len(list), total)
	}
	names := map[string]string{k1.Hash: "one", k2.Hash: "two"}
	for _, as := range list {
		if as.GuardrailID != a.ID || as.KeyName != names[as.KeyHash] || as.AssignedBy == nil || *as.AssignedBy != by ||
			!as.CreatedAt.Equal(f.clock.Now()) || as.ID == "" {
			t.Fatalf("assignment = %+v", as)
		}
	}

	f.clock.Add(time.Minute)
	n, err = f.store.AssignKeys(f.ctx, f.org.ID, b.ID, []string{k1.Hash}, nil)
	wantCount(t, "AssignKeys(B, k1)", n, err, 1)
	if got, want := f.keyAssignments(t, a.ID), []string{k2.Hash}; !slices.Equal(got, want) {
		t.Fatalf("A's keys after the move = %v, want %v", got, want)
	}
	if got, want := f.keyAssignments(t, b.ID), []string{k1.Hash}; !slices.Equal(got, want) {
		t.Fatalf("B's keys after the move = %v, want %v", got, want)
	}
	if got, want := f.keyAssignments(t, ""), sortedStrings(k1.Hash, k2.Hash); !slices.Equal(got, want) {
		t.Fatalf("all key assignments = %v, want %v (one per key)", got, want)
	}
	moved, _, _ := f.store.FindKeyAssignments(f.ctx, f.org.ID, b.ID, page(0, 10))
	if moved[0].AssignedBy != nil || !moved[0].CreatedAt.Equal(f.clock.Now()) {
		t.Fatalf("moved assignment = %+v, want a new one", moved[0])
	}

	// Keys of a non-default workspace go to that workspace's guardrails;
	// disabled keys can be assigned too.
	ws := f.newWorkspace(t, f.org.ID, "team")
	c := guardrail("T")
	c.WorkspaceID = ws.ID
	tg := f.newGuardrail(t, f.org.ID, c)
	k3 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k3.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	n, err = f.store.AssignKeys(f.ctx, f.org.ID, tg.ID, []string{k3.Hash}, nil)
	wantCount(t, "AssignKeys(T, k3)", n, err, 1)
}

func testAssignKeysRejected(t *testing.T, open Opener) {
	f := newFixture(t, open)
	g := f.newGuardrail(t, f.org.ID, guardrail("G"))
	good := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	ws := f.newWorkspace(t, f.org.ID, "team")
	elsewhere := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID})
	other := f.newOrg(t, "Other")
	foreign := f.newKey(t, other.ID, gatehouse.KeyCreate{})
	mgmt, _, err := f.store.CreateManagementKey(f.ctx, f.org.ID, "admin")
	ok(t, err)
	unknown := gatehouse.HashKey("no such key")

	for _, tc := range []struct {
		name string
		bad  []string
	}{
		{"other workspace", []string{elsewhere.Hash}},
		{"other organization", []string{foreign.Hash}},
		{"management key", []string{mgmt.Hash}},
		{"unknown", []string{unknown}},
		{"several", []string{unknown, foreign.Hash, elsewhere.Hash}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.store.AssignKeys(f.ctx, f.org.ID, g.ID, append([]string{good.Hash}, tc.bad...), nil)
			wantMessage(t, err, gatehouse.EINVALID, "key_hashes: ")
			wantMetadata(t, err, "key_hashes", tc.bad)
			if got := f.keyAssignments(t, ""); len(got) != 0 {
				t.Fatalf("assignments after a rejected call: %v, want none", got)
			}
		})
	}

	many := make([]string, gatehouse.MaxBulkIDs+1)
	for i := range many {
		many[i] = gatehouse.HashKey(string(rune('a' + i)))
	}
	for _, tc := range []struct {
		name   string
		hashes []string
		prefix string
	}{
		{"none", nil, "key_hashes: must list at least one key hash"},
		{"empty", []string{}, "key_hashes: must list at least one key hash"},
		{"too many", many, "key_hashes: "},
		{"not a hash", []string{good.Hash, "sk-gh-v1-abc"}, "key_hashes[1]: "},
		{"upper case", []string{strings.ToUpper(good.Hash)}, "key_hashes[0]: "},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.store.AssignKeys(f.ctx, f.org.ID, g.ID, tc.hashes, nil)
			wantMessage(t, err, gatehouse.EINVALID, tc.prefix)
			_, err = f.store.UnassignKeys(f.ctx, f.org.ID, g.ID, tc.hashes)
			wantMessage(t, err, gatehouse.EINVALID, tc.prefix)
		})
	}
	n, err := f.store.AssignKeys(f.ctx, f.org.ID, g.ID, many[:gatehouse.MaxBulkIDs-1:gatehouse.MaxBulkIDs-1], nil)
	wantCode(t, err, gatehouse.EINVALID) // 99 unknown keys: within the bound, but not keys
	if n != 0 || len(f.keyAssignments(t, "")) != 0 {
		t.Fatalf("rejected call assigned keys")
	}
}

func testUnassignKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newGuardrail(t, f.org.ID, guardrail("A"))
	b := f.newGuardrail(t, f.org.ID, guardrail("B"))
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	k3 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	n, err := f.store.AssignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash, k2.Hash}, nil)
	wantCount(t, "AssignKeys(A)", n, err, 2)
	n, err = f.store.AssignKeys(f.ctx, f.org.ID, b.ID, []string{k3.Hash}, nil)
	wantCount(t, "AssignKeys(B)", n, err, 1)

	// k3 is on B, the unknown hash on nothing, k1 counted once.
	n, err = f.store.UnassignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash, k3.Hash, gatehouse.HashKey("nope"), k1.Hash})
	wantCount(t, "UnassignKeys(A, k1 k3 unknown k1)", n, err, 1)
	if got, want := f.keyAssignments(t, a.ID), []string{k2.Hash}; !slices.Equal(got, want) {
		t.Fatalf("A's keys = %v, want %v", got, want)
	}
	if got, want := f.keyAssignments(t, b.ID), []string{k3.Hash}; !slices.Equal(got, want) {
		t.Fatalf("B's keys = %v, want %v", got, want)
	}
	n, err = f.store.UnassignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash})
	wantCount(t, "UnassignKeys(A, k1) again", n, err, 0)
	n, err = f.store.AssignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash}, nil)
	wantCount(t, "AssignKeys(A, k1) after unassigning", n, err, 1)
}

func testAssignMembers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newGuardrail(t, f.org.ID, guardrail("A"))
	b := f.newGuardrail(t, f.org.ID, guardrail("B"))
	ada := f.newMember(t, f.org.ID, "ada@example.com")
	bob := f.newMember(t, f.org.ID, "bob@example.com")
	other := f.newOrg(t, "Other")
	eve := f.newMember(t, other.ID, "eve@example.com")
	by := "user_admin"

	n, err := f.store.AssignMembers(f.ctx, f.org.ID, a.ID, []string{ada.ID, bob.ID, ada.ID}, &by)
	wantCount(t, "AssignMembers(A, ada bob ada)", n, err, 2)
	n, err = f.store.AssignMembers(f.ctx, f.org.ID, a.ID, []string{bob.ID}, nil)
	wantCount(t, "AssignMembers(A, bob) again", n, err, 0)
	list, total, err := f.store.FindMemberAssignments(f.ctx, f.org.ID, a.ID, page(0, 10))
	ok(t, err)
	if total != 2 || len(list) != 2 {
		t.Fatalf("A has %d member assignments (total %d), want 2", len(list), total)
	}
	for _, as := range list {
		if as.GuardrailID != a.ID || as.OrganizationID != f.org.ID || as.AssignedBy == nil || *as.AssignedBy != by ||
			!as.CreatedAt.Equal(f.clock.Now()) || as.ID == "" {
			t.Fatalf("assignment = %+v", as)
		}
	}

	n, err = f.store.AssignMembers(f.ctx, f.org.ID, b.ID, []string{ada.ID}, nil)
	wantCount(t, "AssignMembers(B, ada)", n, err, 1)
	if got, want := f.memberAssignments(t, a.ID), []string{bob.ID}; !slices.Equal(got, want) {
		t.Fatalf("A's members after the move = %v, want %v", got, want)
	}
	if got, want := f.memberAssignments(t, ""), sortedStrings(ada.ID, bob.ID); !slices.Equal(got, want) {
		t.Fatalf("all member assignments = %v, want %v", got, want)
	}

	for _, bad := range [][]string{{eve.ID}, {"user_nobody"}, {"user_nobody", eve.ID}} {
		n, err = f.store.AssignMembers(f.ctx, f.org.ID, b.ID, append([]string{bob.ID}, bad...), nil)
		wantMessage(t, err, gatehouse.EINVALID, "member_user_ids: ")
		wantMetadata(t, err, "member_user_ids", bad)
		if got, want := f.memberAssignments(t, b.ID), []string{ada.ID}; n != 0 || !slices.Equal(got, want) {
			t.Fatalf("B's members after a rejected call = %v, want %v", got, want)
		}
	}
	for _, ids := range [][]string{nil, {}, {""}, {"has space"}, make([]string, gatehouse.MaxBulkIDs+1)} {
		_, err = f.store.AssignMembers(f.ctx, f.org.ID, b.ID, ids, nil)
		wantMessage(t, err, gatehouse.EINVALID, "member_user_ids")
		_, err = f.store.UnassignMembers(f.ctx, f.org.ID, b.ID, ids)
		wantMessage(t, err, gatehouse.EINVALID, "member_user_ids")
	}

	n, err = f.store.UnassignMembers(f.ctx, f.org.ID, a.ID, []string{ada.ID, bob.ID, "user_nobody", bob.ID})
	wantCount(t, "UnassignMembers(A, ada bob nobody bob)", n, err, 1) // ada is on B
	n, err = f.store.UnassignMembers(f.ctx, f.org.ID, a.ID, []string{bob.ID})
	wantCount(t, "UnassignMembers(A, bob) again", n, err, 0)
	if got, want := f.memberAssignments(t, ""), []string{ada.ID}; !slices.Equal(got, want) {
		t.Fatalf("all member assignments = %v, want %v", got, want)
	}
}

func testAssignmentPagination(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newGuardrail(t, f.org.ID, guardrail("A"))
	b := f.newGuardrail(t, f.org.ID, guardrail("B"))
	var want []string // key hashes in assignment order
	for i := range 5 {
		k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
		g := a
		if i%2 == 1 {
			g = b
		}
		f.clock.Add(time.Second)
		_, err := f.store.AssignKeys(f.ctx, f.org.ID, g.ID, []string{k.Hash}, nil)
		ok(t, err)
		want = append(want, k.Hash)
	}
	var got []string
	for offset := 0; offset < 6; offset += 2 {
		list, total, err := f.store.FindKeyAssignments(f.ctx, f.org.ID, "", page(offset, 2))
		ok(t, err)
		if total != 5 {
			t.Fatalf("total = %d, want 5", total)
		}
		for _, as := range list {
			got = append(got, as.KeyHash)
		}
	}
	wantEqual(t, "organization-wide assignments in page order", want, got)
	list, total, err := f.store.FindKeyAssignments(f.ctx, f.org.ID, b.ID, page(1, 1))
	ok(t, err)
	if total != 2 || len(list) != 1 || list[0].KeyHash != want[3] {
		t.Fatalf("B's second assignment: %d rows, total %d", len(list), total)
	}
}

func testGuardrailCascades(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newGuardrail(t, f.org.ID, guardrail("A"))
	b := f.newGuardrail(t, f.org.ID, guardrail("B"))
	k1 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	k2 := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	ada := f.newMember(t, f.org.ID, "ada@example.com")
	bob := f.newMember(t, f.org.ID, "bob@example.com")
	_, err := f.store.AssignKeys(f.ctx, f.org.ID, a.ID, []string{k1.Hash}, nil)
	ok(t, err)
	_, err = f.store.AssignKeys(f.ctx, f.org.ID, b.ID, []string{k2.Hash}, nil)
	ok(t, err)
	_, err = f.store.AssignMembers(f.ctx, f.org.ID, a.ID, []string{ada.ID}, nil)
	ok(t, err)
	_, err = f.store.AssignMembers(f.ctx, f.org.ID, b.ID, []string{bob.ID}, nil)
	ok(t, err)

	ok(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, a.ID))
	if got, want := f.keyAssignments(t, ""), []string{k2.Hash}; !slices.Equal(got, want) {
		t.Fatalf("key assignments after deleting A = %v, want %v", got, want)
	}
	if got, want := f.memberAssignments(t, ""), []string{bob.ID}; !slices.Equal(got, want) {
		t.Fatalf("member assignments after deleting A = %v, want %v", got, want)
	}

	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, k2.Hash))
	if got := f.keyAssignments(t, ""); len(got) != 0 {
		t.Fatalf("key assignments after deleting the key = %v, want none", got)
	}
	ok(t, f.store.DeleteMember(f.ctx, f.org.ID, bob.ID))
	if got := f.memberAssignments(t, ""); len(got) != 0 {
		t.Fatalf("member assignments after deleting the member = %v, want none", got)
	}

	// Deleting a workspace removes its guardrails, default one included.
	ws := f.newWorkspace(t, f.org.ID, "team")
	c := guardrail("T")
	c.WorkspaceID = ws.ID
	tg := f.newGuardrail(t, f.org.ID, c)
	def := gatehouse.DefaultGuardrailID(ws.ID)
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, def, gatehouse.GuardrailUpdate{})
	ok(t, err)
	_, err = f.store.AssignMembers(f.ctx, f.org.ID, tg.ID, []string{ada.ID}, nil)
	ok(t, err)
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, ws.ID, false))
	for _, id := range []string{tg.ID, def} {
		_, err = f.store.FindGuardrail(f.ctx, f.org.ID, id)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, def, gatehouse.GuardrailUpdate{})
	wantCode(t, err, gatehouse.ENOTFOUND)
	if got := f.memberAssignments(t, ""); len(got) != 0 {
		t.Fatalf("member assignments after deleting the workspace = %v, want none", got)
	}
	_, _, err = f.store.FindGuardrails(f.ctx, f.org.ID, ws.ID, page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
	if _, total, _ := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(0, 10)); total != 1 {
		t.Fatalf("default workspace guardrails = %d, want 1 (B)", total)
	}
}

func testGuardrailTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	mine := f.newGuardrail(t, f.org.ID, guardrail("mine"))
	other := f.newOrg(t, "Other")
	theirs := f.newGuardrail(t, other.ID, guardrail("theirs"))
	theirKey := f.newKey(t, other.ID, gatehouse.KeyCreate{})
	theirMember := f.newMember(t, other.ID, "eve@example.com")
	ok1, err := f.store.AssignKeys(f.ctx, other.ID, theirs.ID, []string{theirKey.Hash}, nil)
	if err != nil || ok1 != 1 {
		t.Fatalf("AssignKeys in the other organization = %d, %v", ok1, err)
	}
	_, err = f.store.AssignMembers(f.ctx, other.ID, theirs.ID, []string{theirMember.ID}, nil)
	ok(t, err)

	hash := []string{gatehouse.HashKey("x")}
	for _, id := range []string{theirs.ID, "not-a-uuid", "", uuid.NewString(), mine.ID + "0"} {
		_, err := f.store.FindGuardrail(f.ctx, f.org.ID, id)
		wantMessage(t, err, gatehouse.ENOTFOUND, "guardrail not found")
		_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, id, gatehouse.GuardrailUpdate{Description: gatehouse.Val("x")})
		wantCode(t, err, gatehouse.ENOTFOUND)
		wantCode(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, id), gatehouse.ENOTFOUND)
		if id == "" {
			continue // "" lists the whole organization
		}
		_, _, err = f.store.FindKeyAssignments(f.ctx, f.org.ID, id, page(0, 10))
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, _, err = f.store.FindMemberAssignments(f.ctx, f.org.ID, id, page(0, 10))
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.AssignKeys(f.ctx, f.org.ID, id, hash, nil)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.UnassignKeys(f.ctx, f.org.ID, id, hash)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.AssignMembers(f.ctx, f.org.ID, id, []string{"user_x"}, nil)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.UnassignMembers(f.ctx, f.org.ID, id, []string{"user_x"})
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	got, err := f.store.FindGuardrail(f.ctx, other.ID, theirs.ID)
	ok(t, err)
	if got.Description != nil {
		t.Fatalf("another organization changed the guardrail")
	}

	list, total, err := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(0, 100))
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != mine.ID {
		t.Fatalf("FindGuardrails shows %d guardrails (total %d), want only %s", len(list), total, mine.ID)
	}
	if _, total, _ := f.store.FindKeyAssignments(f.ctx, f.org.ID, "", page(0, 100)); total != 0 {
		t.Fatalf("organization-wide key assignments show %d of another organization", total)
	}
	if _, total, _ := f.store.FindMemberAssignments(f.ctx, f.org.ID, "", page(0, 100)); total != 0 {
		t.Fatalf("organization-wide member assignments show %d of another organization", total)
	}
	// Another organization's key and member are not assignable here.
	_, err = f.store.AssignKeys(f.ctx, f.org.ID, mine.ID, []string{theirKey.Hash}, nil)
	wantCode(t, err, gatehouse.EINVALID)
	wantMetadata(t, err, "key_hashes", []string{theirKey.Hash})
	_, err = f.store.AssignMembers(f.ctx, f.org.ID, mine.ID, []string{theirMember.ID}, nil)
	wantCode(t, err, gatehouse.EINVALID)
	wantMetadata(t, err, "member_user_ids", []string{theirMember.ID})
	// Nor is unassigning another organization's assignment possible.
	n, err := f.store.UnassignKeys(f.ctx, f.org.ID, mine.ID, []string{theirKey.Hash})
	if err != nil || n != 0 {
		t.Fatalf("UnassignKeys of a foreign key = %d, %v; want 0", n, err)
	}
	if _, total, _ := f.store.FindKeyAssignments(f.ctx, other.ID, theirs.ID, page(0, 10)); total != 1 {
		t.Fatalf("the other organization's key assignment is gone")
	}
}
