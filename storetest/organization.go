package storetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// testOrganizations checks OrganizationService and that organizations are
// isolated from one another.
func testOrganizations(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateOrganization", testOrgCreateOrganization},
		{"CreateOrganizationInvalid", testOrgCreateOrganizationInvalid},
		{"FindOrganizationUnknown", testOrgFindOrganizationUnknown},
		{"FindFirstOrganization", testOrgFindFirstOrganization},
		{"FindOrganizations", testOrgFindOrganizations},
		{"Bootstrap", testOrgBootstrap},
		{"BootstrapConcurrent", testOrgBootstrapConcurrent},
		{"EnsureOrganization", testOrgEnsureOrganization},
		{"EnsureOrganizationConcurrent", testOrgEnsureOrganizationConcurrent},
		{"CreateMember", testOrgCreateMember},
		{"CreateMemberInvalid", testOrgCreateMemberInvalid},
		{"FindMembers", testOrgFindMembers},
		{"FindMembersByRef", testOrgFindMembersByRef},
		{"DeleteMember", testOrgDeleteMember},
		{"Tenancy", testOrgTenancy},
	})
}

func testOrgCreateOrganization(t *testing.T, open Opener) {
	f := newFixture(t, open)
	org, err := f.store.CreateOrganization(f.ctx, "  Globex  ")
	ok(t, err)
	if org.ID == "" || org.ID == f.org.ID || org.Name != "Globex" || !org.CreatedAt.Equal(f.clock.Now()) {
		t.Errorf("CreateOrganization = %+v", org)
	}
	got, err := f.store.FindOrganization(f.ctx, org.ID)
	ok(t, err)
	if got.ID != org.ID || got.Name != org.Name || !got.CreatedAt.Equal(org.CreatedAt) {
		t.Errorf("FindOrganization = %+v, want %+v", got, org)
	}
	// It comes with its default workspace.
	w, err := f.store.FindWorkspace(f.ctx, org.ID, "")
	ok(t, err)
	if !w.IsDefault || w.Slug != gatehouse.DefaultWorkspaceSlug || w.OrganizationID != org.ID {
		t.Errorf("default workspace = %+v", w)
	}
	// 200 characters is the limit.
	_, err = f.store.CreateOrganization(f.ctx, strings.Repeat("é", gatehouse.MaxOrganizationNameLength))
	ok(t, err)
}

func testOrgCreateOrganizationInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, name := range []string{"", "   ", strings.Repeat("o", gatehouse.MaxOrganizationNameLength+1)} {
		_, err := f.store.CreateOrganization(f.ctx, name)
		wantCode(t, err, gatehouse.EINVALID)
	}
}

func testOrgFindOrganizationUnknown(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, id := range []string{"", "nope", "00000000-0000-4000-8000-000000000000"} {
		_, err := f.store.FindOrganization(f.ctx, id)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
}

func testOrgFindFirstOrganization(t *testing.T, open Opener) {
	clock := NewClock(time.Date(2028, 2, 23, 12, 0, 0, 0, time.UTC))
	f := &fixture{ctx: t.Context(), clock: clock, store: open(t, clock.Now)}
	_, err := f.store.FindFirstOrganization(f.ctx)
	wantCode(t, err, gatehouse.ENOTFOUND)

	first := f.newOrg(t, "First")
	for i := range 3 {
		clock.Add(time.Second)
		f.newOrg(t, fmt.Sprintf("Later %d", i))
	}
	got, err := f.store.FindFirstOrganization(f.ctx)
	ok(t, err)
	if got.ID != first.ID || got.Name != "First" || !got.CreatedAt.Equal(first.CreatedAt) {
		t.Errorf("FindFirstOrganization = %+v, want %+v", got, first)
	}
}

func testOrgCreateMember(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{Email: "  ada@example.com "})
	ok(t, err)
	if !strings.HasPrefix(m.ID, "user_") || len(m.ID) <= len("user_")+8 || m.Email != "ada@example.com" ||
		m.Role != gatehouse.RoleMember || m.FirstName != nil || m.LastName != nil || !m.CreatedAt.Equal(f.clock.Now()) {
		t.Errorf("CreateMember = %s", memberString(m))
	}
	f.clock.Add(time.Millisecond) // members created at one instant are ordered by id
	admin, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{
		ID: "user_grace", Email: "grace@example.com", FirstName: strp("Grace"), LastName: strp("Hopper"), Role: gatehouse.RoleAdmin,
	})
	ok(t, err)
	if admin.ID != "user_grace" || admin.Role != gatehouse.RoleAdmin || derefStr(admin.FirstName) != "Grace" || derefStr(admin.LastName) != "Hopper" {
		t.Errorf("CreateMember = %s", memberString(admin))
	}
	list, total, err := f.store.FindMembers(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 2 || len(list) != 2 || memberString(list[0]) != memberString(m) || memberString(list[1]) != memberString(admin) {
		t.Errorf("FindMembers = %d %v", total, memberStrings(list))
	}
	// The same id and email are free in another organization.
	other := f.newOrg(t, "Other")
	_, err = f.store.CreateMember(f.ctx, other.ID, gatehouse.MemberCreate{ID: "user_grace", Email: "grace@example.com"})
	ok(t, err)
}

func testOrgCreateMemberInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{ID: "user_ada", Email: "Ada@Example.com"})
	ok(t, err)
	for _, c := range []gatehouse.MemberCreate{
		{Email: ""},
		{Email: "   "},
		{Email: "not-an-email"},
		{Email: "Ada <ada2@example.com>"},
		{Email: "ada2@example.com", Role: "owner"},
		{Email: "ada2@example.com", ID: "user with space"},
		{Email: "ada2@example.com", ID: strings.Repeat("u", gatehouse.MaxUserIDLength+1)},
		{Email: "ada2@example.com", FirstName: strp(strings.Repeat("f", gatehouse.MaxPersonNameField+1))},
		{Email: "ada2@example.com", ID: "user_ada"}, // id taken
		{Email: "ada@example.com"},                    // email taken
		{Email: "ADA@EXAMPLE.COM"},                    // email taken, in other case
		{Email: "ada@example.com", ID: "user_other2"}, // email taken with a fresh id
	} {
		_, err := f.store.CreateMember(f.ctx, f.org.ID, c)
		wantCode(t, err, gatehouse.EINVALID)
	}
	_, total, err := f.store.FindMembers(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 1 {
		t.Errorf("%d members after failed creates, want 1", total)
	}
}

func testOrgFindMembers(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var want []string
	for i := range 5 {
		want = append(want, f.newMember(t, f.org.ID, fmt.Sprintf("m%d@example.com", i)).ID)
		f.clock.Add(time.Millisecond)
	}
	// Two created at the same instant are ordered by id.
	for _, id := range []string{"user_zz", "user_aa"} {
		_, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{ID: id, Email: id + "@example.com"})
		ok(t, err)
	}
	want = append(want, "user_aa", "user_zz")
	var got []string
	for off := 0; off < 9; off += 2 {
		list, total, err := f.store.FindMembers(f.ctx, f.org.ID, page(off, 2))
		ok(t, err)
		if total != 7 {
			t.Errorf("offset %d: total %d, want 7", off, total)
		}
		if wantLen := min(2, max(0, 7-off)); len(list) != wantLen {
			t.Errorf("offset %d: %d members, want %d", off, len(list), wantLen)
		}
		for _, m := range list {
			got = append(got, m.ID)
		}
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("pages = %v, want %v", got, want)
	}
	list, total, err := f.store.FindMembers(f.ctx, f.newOrg(t, "Empty").ID, page(0, 10))
	ok(t, err)
	if total != 0 || len(list) != 0 {
		t.Errorf("empty organization: %d, %v", total, memberStrings(list))
	}
}

// testOrgFindMembersByRef: members are found by id or by email whatever
// its case, oldest first, once each, in their own organization only; refs
// that name nobody, or look like a pattern, find nothing.
func testOrgFindMembersByRef(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ann := f.newMember(t, f.org.ID, "Ann@Example.com")
	f.clock.Add(time.Millisecond)
	bob := f.newMember(t, f.org.ID, "bob@example.com")
	f.clock.Add(time.Millisecond)
	f.newMember(t, f.org.ID, "carl@example.com")
	other := f.newOrg(t, "Other")
	f.newMember(t, other.ID, "dora@example.com")
	ids := func(ms []*gatehouse.Member) []string {
		out := []string{}
		for _, m := range ms {
			out = append(out, m.ID)
		}
		return out
	}
	for _, c := range []struct {
		name string
		refs []string
		want []string
	}{
		{"none", nil, []string{}},
		{"by id", []string{bob.ID}, []string{bob.ID}},
		{"by email in another case", []string{"ann@EXAMPLE.com"}, []string{ann.ID}},
		{"both ways, once each, oldest first", []string{"bob@example.com", ann.ID, bob.ID, "ANN@example.com"}, []string{ann.ID, bob.ID}},
		{"unknown", []string{"nobody@example.com", "user_nobody"}, []string{}},
		{"another organization's", []string{"dora@example.com"}, []string{}},
		{"a pattern", []string{"%@example.com", "_nn@example.com"}, []string{}},
		{"text no column holds", []string{"ann@example.com\x00", "\xff", bob.ID}, []string{bob.ID}},
	} {
		got, err := f.store.FindMembersByRef(f.ctx, f.org.ID, c.refs)
		ok(t, err)
		wantEqual(t, c.name, c.want, ids(got))
	}
	many := make([]string, gatehouse.MaxBulkIDs+1)
	for i := range many {
		many[i] = fmt.Sprintf("user_%d", i)
	}
	_, err := f.store.FindMembersByRef(f.ctx, f.org.ID, many)
	wantCode(t, err, gatehouse.EINVALID)
}

func testOrgDeleteMember(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	keep := f.newMember(t, f.org.ID, "grace@example.com")
	w := f.newWorkspace(t, f.org.ID, "team-a")
	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID, keep.ID})
	ok(t, err)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID})

	// Blocked while the member has an active key.
	err = f.store.DeleteMember(f.ctx, f.org.ID, m.ID)
	wantCode(t, err, gatehouse.EINVALID)
	if ids := metaIDs(t, err, "user_ids"); strings.Join(ids, ",") != m.ID {
		t.Errorf("metadata user_ids = %v, want [%s]", ids, m.ID)
	}
	// A key expiring later still blocks; a disabled one does not.
	f.clock.Add(time.Minute)
	in1h := f.clock.Now().Add(time.Hour)
	f.newKey(t, f.org.ID, gatehouse.KeyCreate{CreatorUserID: &m.ID, ExpiresAt: &in1h, WorkspaceID: w.ID})
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	wantCode(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID), gatehouse.EINVALID)
	f.clock.Add(time.Hour) // now the second key has expired
	ok(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID))

	list, total, err := f.store.FindMembers(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != keep.ID {
		t.Errorf("members after delete: %d %v", total, memberStrings(list))
	}
	wm, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
	ok(t, err)
	if total != 1 || len(wm) != 1 || wm[0].UserID != keep.ID {
		t.Errorf("workspace members after delete: %d %v", total, wm)
	}
	dm, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, "", page(0, 50))
	ok(t, err)
	if total != 1 || len(dm) != 1 || dm[0].UserID != keep.ID {
		t.Errorf("default workspace members after delete: %d %v", total, dm)
	}
	wantCode(t, f.store.DeleteMember(f.ctx, f.org.ID, m.ID), gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteMember(f.ctx, f.org.ID, "user_nobody"), gatehouse.ENOTFOUND)
	// The id can be used again.
	_, err = f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{ID: m.ID, Email: "ada@example.com"})
	ok(t, err)
}

func testOrgTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.org
	b := f.newOrg(t, "Globex")
	bm := f.newMember(t, b.ID, "hank@globex.example")
	bw := f.newWorkspace(t, b.ID, "globex-only")
	bk := f.newKey(t, b.ID, gatehouse.KeyCreate{WorkspaceID: bw.ID, CreatorUserID: &bm.ID})
	_, bmgmt, err := f.store.CreateManagementKey(f.ctx, b.ID, "")
	ok(t, err)
	bdefault, err := f.store.FindWorkspace(f.ctx, b.ID, "")
	ok(t, err)
	am := f.newMember(t, a.ID, "ada@acme.example")

	// Members.
	list, total, err := f.store.FindMembers(f.ctx, a.ID, page(0, 50))
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != am.ID {
		t.Errorf("FindMembers(A) = %d %v", total, memberStrings(list))
	}
	wantCode(t, f.store.DeleteMember(f.ctx, a.ID, bm.ID), gatehouse.ENOTFOUND)

	// Keys.
	_, err = f.store.FindKey(f.ctx, a.ID, bk.Hash)
	wantCode(t, err, gatehouse.ENOTFOUND)
	keys, err := f.store.FindKeys(f.ctx, a.ID, gatehouse.KeyFilter{IncludeDisabled: true})
	ok(t, err)
	if len(keys) != 0 {
		t.Errorf("FindKeys(A) = %v", keyHashes(keys))
	}
	_, err = f.store.FindKeys(f.ctx, a.ID, gatehouse.KeyFilter{WorkspaceID: bw.ID})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.UpdateKey(f.ctx, a.ID, bk.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteKey(f.ctx, a.ID, bk.Hash), gatehouse.ENOTFOUND)
	_, _, err = f.store.CreateKey(f.ctx, a.ID, gatehouse.KeyCreate{Name: "x", WorkspaceID: bw.ID})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, _, err = f.store.CreateKey(f.ctx, a.ID, gatehouse.KeyCreate{Name: "x", WorkspaceID: "globex-only"})
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, _, err = f.store.CreateKey(f.ctx, a.ID, gatehouse.KeyCreate{Name: "x", CreatorUserID: &bm.ID})
	wantCode(t, err, gatehouse.EINVALID)
	_, err = f.store.EnsureManagementKey(f.ctx, a.ID, bmgmt, "")
	wantCode(t, err, gatehouse.EINVALID)
	got, err := f.store.FindKey(f.ctx, b.ID, bk.Hash)
	ok(t, err)
	if got.Disabled {
		t.Errorf("B's key was changed from A")
	}

	// Workspaces.
	ws, total, err := f.store.FindWorkspaces(f.ctx, a.ID, page(0, 50))
	ok(t, err)
	if total != 1 || len(ws) != 1 || !ws[0].IsDefault || ws[0].OrganizationID != a.ID {
		t.Errorf("FindWorkspaces(A) = %d %v", total, workspaceSlugs(ws))
	}
	for _, ref := range []string{bw.ID, bw.Slug, bdefault.ID} {
		_, err = f.store.FindWorkspace(f.ctx, a.ID, ref)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.UpdateWorkspace(f.ctx, a.ID, ref, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Hijacked")})
		wantCode(t, err, gatehouse.ENOTFOUND)
		wantCode(t, f.store.DeleteWorkspace(f.ctx, a.ID, ref, true), gatehouse.ENOTFOUND)
		_, _, err = f.store.FindWorkspaceMembers(f.ctx, a.ID, ref, page(0, 50))
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, _, err = f.store.AddWorkspaceMembers(f.ctx, a.ID, ref, []string{am.ID})
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.RemoveWorkspaceMembers(f.ctx, a.ID, ref, []string{bm.ID})
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.CreateAuthCode(f.ctx, a.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example", WorkspaceID: ref})
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	aw := f.newWorkspace(t, a.ID, "acme-team")
	_, _, err = f.store.AddWorkspaceMembers(f.ctx, a.ID, aw.ID, []string{bm.ID})
	wantCode(t, err, gatehouse.EINVALID)
	// B is untouched.
	got2, err := f.store.FindWorkspace(f.ctx, b.ID, bw.Slug)
	ok(t, err)
	if got2.Name != bw.Name {
		t.Errorf("B's workspace renamed to %q", got2.Name)
	}
	wms, total, err := f.store.FindWorkspaceMembers(f.ctx, b.ID, "", page(0, 50))
	ok(t, err)
	if total != 1 || len(wms) != 1 || wms[0].UserID != bm.ID {
		t.Errorf("B's default workspace members = %d %v", total, wms)
	}
}

// memberString renders a member for comparisons and messages.
func memberString(m *gatehouse.Member) string {
	return fmt.Sprintf("{%s %s %s %s %s %s}", m.ID, m.Email, optStr(m.FirstName), optStr(m.LastName), m.Role,
		m.CreatedAt.UTC().Format(time.RFC3339Nano))
}

func memberStrings(ms []*gatehouse.Member) []string {
	out := []string{}
	for _, m := range ms {
		out = append(out, memberString(m))
	}
	return out
}

// metaIDs returns the ids listed in the metadata key of a *gatehouse.Error,
// sorted.
func metaIDs(t *testing.T, err error, key string) []string {
	t.Helper()
	var e *gatehouse.Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v (%T) is not a *gatehouse.Error", err, err)
	}
	var ids []string
	switch v := e.Metadata[key].(type) {
	case []string:
		ids = append(ids, v...)
	case []any:
		for _, x := range v {
			s, isStr := x.(string)
			if !isStr {
				t.Fatalf("metadata %s = %#v: not strings", key, v)
			}
			ids = append(ids, s)
		}
	default:
		t.Fatalf("metadata %s = %#v (%T), want a list of ids", key, e.Metadata[key], e.Metadata[key])
	}
	sort.Strings(ids)
	return ids
}

func strp(s string) *string { return &s }

func derefStr(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// optStr renders an optional string: <nil> or "value".
func optStr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return fmt.Sprintf("%q", *s)
}

func testOrgEnsureOrganization(t *testing.T, open Opener) {
	ctx := context.Background()
	clock := NewClock(time.Date(2028, 2, 23, 12, 0, 0, 0, time.UTC))
	store := open(t, clock.Now)
	if _, _, err := store.EnsureOrganization(ctx, "  "); gatehouse.ErrorCode(err) != gatehouse.EINVALID {
		t.Fatalf("blank name: %v, want EINVALID", err)
	}
	first, created, err := store.EnsureOrganization(ctx, "First")
	ok(t, err)
	if !created || first.Name != "First" {
		t.Fatalf("on an empty store: %+v created=%v, want a new organization First", first, created)
	}
	if _, err := store.FindWorkspace(ctx, first.ID, ""); err != nil {
		t.Fatalf("the new organization has no default workspace: %v", err)
	}
	clock.Add(time.Second)
	again, created, err := store.EnsureOrganization(ctx, "Second")
	ok(t, err)
	if created || again.ID != first.ID || again.Name != "First" || !again.CreatedAt.Equal(first.CreatedAt) {
		t.Fatalf("second call: %+v created=%v, want the first organization unchanged", again, created)
	}
}

func testOrgEnsureOrganizationConcurrent(t *testing.T, open Opener) {
	ctx := context.Background()
	store := open(t, time.Now)
	const n = 8
	var wg sync.WaitGroup
	ids := make([]string, n)
	createdCount := 0
	var mu sync.Mutex
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			org, created, err := store.EnsureOrganization(ctx, "Racer")
			if err != nil {
				t.Errorf("EnsureOrganization: %v", err)
				return
			}
			mu.Lock()
			ids[i] = org.ID
			if created {
				createdCount++
			}
			mu.Unlock()
		}()
	}
	close(start)
	wg.Wait()
	if createdCount != 1 {
		t.Errorf("%d concurrent calls created %d organizations, want 1", n, createdCount)
	}
	for _, id := range ids[1:] {
		if id != ids[0] {
			t.Fatalf("concurrent calls returned different organizations: %v", ids)
		}
	}
}

func testOrgFindOrganizations(t *testing.T, open Opener) {
	f := newFixture(t, open)
	want := []*gatehouse.Organization{f.org}
	for _, name := range []string{"Globex", "Initech", "Umbrella"} {
		f.clock.Add(time.Second)
		want = append(want, f.newOrg(t, name))
	}
	var got []*gatehouse.Organization
	for offset := 0; ; offset += 3 {
		list, total, err := f.store.FindOrganizations(f.ctx, page(offset, 3))
		ok(t, err)
		if total != len(want) {
			t.Fatalf("FindOrganizations total = %d, want %d", total, len(want))
		}
		if len(list) == 0 {
			break
		}
		got = append(got, list...)
	}
	wantEqual(t, "organizations, oldest first", want, got)
}

func testOrgBootstrap(t *testing.T, open Opener) {
	ctx := context.Background()
	clock := NewClock(time.Date(2028, 2, 23, 12, 0, 0, 0, time.UTC))
	store := open(t, clock.Now)
	first := gatehouse.NewKeySecret(true)

	// A key that cannot be one creates nothing, not even the organization.
	_, err := store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "First", Key: "sk-gh-v1-not-a-management-key-at-all-000000"})
	wantCode(t, err, gatehouse.EINVALID)
	if _, err := store.FindFirstOrganization(ctx); gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
		t.Fatalf("a failed bootstrap left an organization: %v", err)
	}

	// The first start creates the organization and its key together.
	b, err := store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "First", Key: first, KeyName: "First management key"})
	ok(t, err)
	if !b.Created || b.Organization.Name != "First" || b.Key == nil || b.Key.Hash != gatehouse.HashKey(first) ||
		!b.Key.Management || b.Key.Name != "First management key" || b.Key.OrganizationID != b.Organization.ID {
		t.Fatalf("first bootstrap = %+v (key %+v)", b, b.Key)
	}
	k, err := store.FindKeyByHash(ctx, gatehouse.HashKey(first))
	if err != nil || k.OrganizationID != b.Organization.ID {
		t.Fatalf("the first key: %+v, %v", k, err)
	}
	if _, err := store.FindWorkspace(ctx, b.Organization.ID, ""); err != nil {
		t.Fatalf("the bootstrapped organization has no default workspace: %v", err)
	}
	// Its audit log names the first start as the actor of both creations.
	entries, _, err := store.FindAuditEntries(ctx, b.Organization.ID, gatehouse.AuditFilter{Page: page(0, 10)})
	ok(t, err)
	if len(entries) != 2 {
		t.Fatalf("the first start left %d audit entries, want 2 (the organization and its key)", len(entries))
	}
	for _, e := range entries {
		if e.ActorSystem == nil || *e.ActorSystem != gatehouse.ActorFirstStart || e.ActorKeyHash != nil || e.ActorUserID != nil {
			t.Errorf("%s: actor %v/%v/%v, want the first start", e.Operation, e.ActorSystem, e.ActorKeyHash, e.ActorUserID)
		}
	}

	// Later starts find it and make no key, unless told to make sure of one.
	clock.Add(time.Second)
	again, err := store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "Second", Key: gatehouse.NewKeySecret(true)})
	ok(t, err)
	if again.Created || again.Organization.ID != b.Organization.ID || again.Key != nil {
		t.Fatalf("second bootstrap = %+v, want the first organization and no key", again)
	}
	fixed := gatehouse.NewKeySecret(true)
	for range 2 { // idempotent
		got, err := store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "Second", Key: fixed, KeyName: "Bootstrap", Always: true})
		ok(t, err)
		if got.Created || got.Key == nil || got.Key.Hash != gatehouse.HashKey(fixed) || got.Key.OrganizationID != b.Organization.ID {
			t.Fatalf("bootstrap with Always = %+v", got)
		}
	}
	list, total, err := store.FindOrganizations(ctx, page(0, 10))
	if err != nil || total != 1 || len(list) != 1 {
		t.Fatalf("organizations after the bootstraps: %v (%d), %v; want one", list, total, err)
	}
	// Another organization's key is not taken over.
	other, err := store.CreateOrganization(ctx, "Other")
	ok(t, err)
	_, theirs, err := store.CreateManagementKey(ctx, other.ID, "theirs")
	ok(t, err)
	_, err = store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "First", Key: theirs, Always: true})
	wantCode(t, err, gatehouse.EINVALID)
}

func testOrgBootstrapConcurrent(t *testing.T, open Opener) {
	ctx := context.Background()
	store := open(t, time.Now)
	const n = 6
	got := make([]*gatehouse.Bootstrapped, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			got[i], errs[i] = store.Bootstrap(ctx, gatehouse.Bootstrap{OrganizationName: "Racer", Key: gatehouse.NewKeySecret(true)})
		})
	}
	close(start)
	wg.Wait()
	created := 0
	for i, b := range got {
		ok(t, errs[i])
		if b.Created != (b.Key != nil) {
			t.Errorf("bootstrap %d: created %v with key %v; a key comes with the organization it creates, only", i, b.Created, b.Key)
		}
		if b.Created {
			created++
		}
		if b.Organization.ID != got[0].Organization.ID {
			t.Errorf("bootstraps returned organizations %s and %s", got[0].Organization.ID, b.Organization.ID)
		}
	}
	if created != 1 {
		t.Errorf("%d concurrent bootstraps created %d organizations, want 1", n, created)
	}
}
