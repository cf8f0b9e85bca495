package storetest

import (
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// testWorkspaces checks WorkspaceService: workspaces and their members.
func testWorkspaces(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"Default", testWorkspaceDefault},
		{"Create", testWorkspaceCreate},
		{"CreateInvalid", testWorkspaceCreateInvalid},
		{"FindWorkspaces", testWorkspaceFindWorkspaces},
		{"FindUnknown", testWorkspaceFindUnknown},
		{"Update", testWorkspaceUpdate},
		{"UpdateInvalid", testWorkspaceUpdateInvalid},
		{"UpdateDefault", testWorkspaceUpdateDefault},
		{"Delete", testWorkspaceDelete},
		{"DeleteDefault", testWorkspaceDeleteDefault},
		{"DeleteWithKeys", testWorkspaceDeleteWithKeys},
		{"DeleteRacingKeys", testWorkspaceDeleteRacingKeys},
		{"DefaultMembers", testWorkspaceDefaultMembers},
		{"MemberWorkspaces", testMemberWorkspaces},
		{"AddMembers", testWorkspaceAddMembers},
		{"AddMembersInvalid", testWorkspaceAddMembersInvalid},
		{"RemoveMembers", testWorkspaceRemoveMembers},
		{"RemoveMembersInvalid", testWorkspaceRemoveMembersInvalid},
		{"MembersPagination", testWorkspaceMembersPagination},
	})
}

func testWorkspaceDefault(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	want := &gatehouse.Workspace{
		ID: w.ID, OrganizationID: f.org.ID, Name: w.Name, Slug: gatehouse.DefaultWorkspaceSlug,
		IOLoggingSamplingRate: 1, IsDefault: true, CreatedAt: f.org.CreatedAt,
	}
	if w.Name == "" || w.ID == "" {
		t.Errorf("default workspace without name or id: %s", workspaceString(w))
	}
	sameWorkspace(t, "default workspace", w, want)
	for _, ref := range []string{w.ID, gatehouse.DefaultWorkspaceSlug} {
		got, err := f.store.FindWorkspace(f.ctx, f.org.ID, ref)
		ok(t, err)
		sameWorkspace(t, "FindWorkspace("+ref+")", got, want)
	}
	list, total, err := f.store.FindWorkspaces(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 1 || len(list) != 1 {
		t.Fatalf("FindWorkspaces = %d %v", total, workspaceSlugs(list))
	}
	sameWorkspace(t, "FindWorkspaces", list[0], want)
	// Another organization has its own default workspace.
	other := f.newOrg(t, "Other")
	ow, err := f.store.FindWorkspace(f.ctx, other.ID, "")
	ok(t, err)
	if ow.ID == w.ID || ow.OrganizationID != other.ID || !ow.IsDefault {
		t.Errorf("other organization's default workspace = %s", workspaceString(ow))
	}
}

func testWorkspaceCreate(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.clock.Add(time.Second)
	w, err := f.store.CreateWorkspace(f.ctx, f.org.ID, fullWorkspaceUpdate(), strp("user_creator"))
	ok(t, err)
	want := &gatehouse.Workspace{
		ID: w.ID, OrganizationID: f.org.ID, Name: "Research", Slug: "research-2",
		Description: strp("Models for research"), DefaultTextModel: strp("openai/gpt-4o"),
		DefaultImageModel: strp("openai/dall-e-3"), DefaultProviderSort: strp("price"),
		DisabledServerTools:   []string{"openrouter:web_search", "openrouter:bash"},
		IOLoggingAPIKeyIDs:    []int64{3, 1, 2},
		IOLoggingSamplingRate: 0.25, IsDataDiscountLoggingEnabled: true, IsObservabilityBroadcastEnabled: true,
		IsObservabilityIOLoggingEnabled: true, IncludeBYOKInBudgets: true,
		CreatedBy: strp("user_creator"), CreatedAt: f.clock.Now(),
	}
	if w.ID == "" || w.ID == want.Slug {
		t.Errorf("workspace id %q", w.ID)
	}
	sameWorkspace(t, "CreateWorkspace", w, want)
	for _, ref := range []string{w.ID, "research-2"} {
		got, err := f.store.FindWorkspace(f.ctx, f.org.ID, ref)
		ok(t, err)
		sameWorkspace(t, "FindWorkspace("+ref+")", got, want)
	}

	// Only name and slug: the defaults.
	f.clock.Add(time.Second)
	min, err := f.store.CreateWorkspace(f.ctx, f.org.ID, gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val("Minimal"), Slug: gatehouse.Val("m")}, nil)
	ok(t, err)
	wantMin := &gatehouse.Workspace{ID: min.ID, OrganizationID: f.org.ID, Name: "Minimal", Slug: "m",
		IOLoggingSamplingRate: 1, CreatedAt: f.clock.Now()}
	sameWorkspace(t, "minimal CreateWorkspace", min, wantMin)
	got, err := f.store.FindWorkspace(f.ctx, f.org.ID, "m")
	ok(t, err)
	sameWorkspace(t, "minimal FindWorkspace", got, wantMin)

	// The longest slug and name; a slug that another organization uses.
	_, err = f.store.CreateWorkspace(f.ctx, f.org.ID, gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val(strings.Repeat("é", gatehouse.MaxWorkspaceNameLength)),
		Slug: gatehouse.Val(strings.Repeat("a", gatehouse.MaxSlugLength))}, nil)
	ok(t, err)
	other := f.newOrg(t, "Other")
	_, err = f.store.CreateWorkspace(f.ctx, other.ID, gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research-2")}, nil)
	ok(t, err)
}

func testWorkspaceCreateInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.newWorkspace(t, f.org.ID, "taken")
	valid := func(mod func(*gatehouse.WorkspaceUpdate)) gatehouse.WorkspaceUpdate {
		u := gatehouse.WorkspaceUpdate{Name: gatehouse.Val("W"), Slug: gatehouse.Val("fresh")}
		mod(&u)
		return u
	}
	for _, tc := range []struct {
		name string
		u    gatehouse.WorkspaceUpdate
	}{
		{"no name", valid(func(u *gatehouse.WorkspaceUpdate) { u.Name = gatehouse.Patch[string]{} })},
		{"null name", valid(func(u *gatehouse.WorkspaceUpdate) { u.Name = gatehouse.Null[string]() })},
		{"empty name", valid(func(u *gatehouse.WorkspaceUpdate) { u.Name = gatehouse.Val("") })},
		{"101-char name", valid(func(u *gatehouse.WorkspaceUpdate) { u.Name = gatehouse.Val(strings.Repeat("n", 101)) })},
		{"no slug", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Patch[string]{} })},
		{"slug taken", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("taken") })},
		{"slug default taken", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val(gatehouse.DefaultWorkspaceSlug) })},
		{"upper-case slug", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("Team") })},
		{"slug with space", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("team a") })},
		{"slug double hyphen", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("team--a") })},
		{"slug leading hyphen", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("-team") })},
		{"slug trailing hyphen", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("team-") })},
		{"empty slug", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val("") })},
		{"51-char slug", valid(func(u *gatehouse.WorkspaceUpdate) { u.Slug = gatehouse.Val(strings.Repeat("a", 51)) })},
		{"long description", valid(func(u *gatehouse.WorkspaceUpdate) { u.Description = gatehouse.Val(strings.Repeat("d", 501)) })},
		{"empty text model", valid(func(u *gatehouse.WorkspaceUpdate) { u.DefaultTextModel = gatehouse.Val("") })},
		{"unknown provider sort", valid(func(u *gatehouse.WorkspaceUpdate) { u.DefaultProviderSort = gatehouse.Val("cheapest") })},
		{"unknown server tool", valid(func(u *gatehouse.WorkspaceUpdate) {
			u.DisabledServerTools = gatehouse.Val([]string{"openrouter:teleport"})
		})},
		{"zero key id", valid(func(u *gatehouse.WorkspaceUpdate) { u.IOLoggingAPIKeyIDs = gatehouse.Val([]int64{1, 0}) })},
		{"sampling rate 0", valid(func(u *gatehouse.WorkspaceUpdate) { u.IOLoggingSamplingRate = gatehouse.Val(0.0) })},
		{"sampling rate above 1", valid(func(u *gatehouse.WorkspaceUpdate) { u.IOLoggingSamplingRate = gatehouse.Val(1.5) })},
		{"null sampling rate", valid(func(u *gatehouse.WorkspaceUpdate) { u.IOLoggingSamplingRate = gatehouse.Null[float64]() })},
		{"null flag", valid(func(u *gatehouse.WorkspaceUpdate) { u.IncludeBYOKInBudgets = gatehouse.Null[bool]() })},
	} {
		_, err := f.store.CreateWorkspace(f.ctx, f.org.ID, tc.u, nil)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("%s: error %v, want %s", tc.name, err, gatehouse.EINVALID)
		}
	}
	_, total, err := f.store.FindWorkspaces(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 2 {
		t.Errorf("%d workspaces after failed creates, want 2", total)
	}
}

func testWorkspaceFindWorkspaces(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	want := []string{def.Slug}
	for i := range 4 {
		f.clock.Add(time.Millisecond)
		want = append(want, f.newWorkspace(t, f.org.ID, fmt.Sprintf("w%d", i)).Slug)
	}
	f.newWorkspace(t, f.newOrg(t, "Other").ID, "elsewhere")
	var got []string
	for off := 0; off < 6; off += 2 {
		list, total, err := f.store.FindWorkspaces(f.ctx, f.org.ID, page(off, 2))
		ok(t, err)
		if total != 5 {
			t.Errorf("offset %d: total %d, want 5", off, total)
		}
		got = append(got, workspaceSlugs(list)...)
	}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("pages = %v, want %v", got, want)
	}
	list, total, err := f.store.FindWorkspaces(f.ctx, f.org.ID, page(5, 10))
	ok(t, err)
	if total != 5 || len(list) != 0 {
		t.Errorf("past the end: %d %v", total, workspaceSlugs(list))
	}
}

func testWorkspaceFindUnknown(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, ref := range []string{"nope", "6f1c1b7e-0000-4000-8000-000000000000", "Default", f.org.ID} {
		_, err := f.store.FindWorkspace(f.ctx, f.org.ID, ref)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	_, err := f.store.FindWorkspace(f.ctx, "00000000-0000-4000-8000-000000000000", "")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testWorkspaceUpdate(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	want := *w
	for _, s := range []struct {
		name   string
		update gatehouse.WorkspaceUpdate
		apply  func(w *gatehouse.Workspace)
	}{
		{"name", gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team A")}, func(w *gatehouse.Workspace) { w.Name = "Team A" }},
		{"slug", gatehouse.WorkspaceUpdate{Slug: gatehouse.Val("team-b")}, func(w *gatehouse.Workspace) { w.Slug = "team-b" }},
		{"description", gatehouse.WorkspaceUpdate{Description: gatehouse.Val("about")}, func(w *gatehouse.Workspace) { w.Description = strp("about") }},
		{"text model", gatehouse.WorkspaceUpdate{DefaultTextModel: gatehouse.Val("anthropic/claude-3.5-sonnet")}, func(w *gatehouse.Workspace) { w.DefaultTextModel = strp("anthropic/claude-3.5-sonnet") }},
		{"image model", gatehouse.WorkspaceUpdate{DefaultImageModel: gatehouse.Val("openai/dall-e-3")}, func(w *gatehouse.Workspace) { w.DefaultImageModel = strp("openai/dall-e-3") }},
		{"provider sort", gatehouse.WorkspaceUpdate{DefaultProviderSort: gatehouse.Val("latency")}, func(w *gatehouse.Workspace) { w.DefaultProviderSort = strp("latency") }},
		{"server tools", gatehouse.WorkspaceUpdate{DisabledServerTools: gatehouse.Val([]string{"openrouter:web_fetch"})}, func(w *gatehouse.Workspace) { w.DisabledServerTools = []string{"openrouter:web_fetch"} }},
		{"key ids", gatehouse.WorkspaceUpdate{IOLoggingAPIKeyIDs: gatehouse.Val([]int64{7})}, func(w *gatehouse.Workspace) { w.IOLoggingAPIKeyIDs = []int64{7} }},
		{"sampling rate", gatehouse.WorkspaceUpdate{IOLoggingSamplingRate: gatehouse.Val(0.0001)}, func(w *gatehouse.Workspace) { w.IOLoggingSamplingRate = 0.0001 }},
		{"data discount logging", gatehouse.WorkspaceUpdate{IsDataDiscountLoggingEnabled: gatehouse.Val(true)}, func(w *gatehouse.Workspace) { w.IsDataDiscountLoggingEnabled = true }},
		{"broadcast", gatehouse.WorkspaceUpdate{IsObservabilityBroadcastEnabled: gatehouse.Val(true)}, func(w *gatehouse.Workspace) { w.IsObservabilityBroadcastEnabled = true }},
		{"io logging", gatehouse.WorkspaceUpdate{IsObservabilityIOLoggingEnabled: gatehouse.Val(true)}, func(w *gatehouse.Workspace) { w.IsObservabilityIOLoggingEnabled = true }},
		{"byok in budgets", gatehouse.WorkspaceUpdate{IncludeBYOKInBudgets: gatehouse.Val(true)}, func(w *gatehouse.Workspace) { w.IncludeBYOKInBudgets = true }},
		{"empty", gatehouse.WorkspaceUpdate{}, func(w *gatehouse.Workspace) {}},
		{"clear strings", gatehouse.WorkspaceUpdate{
			Description: gatehouse.Null[string](), DefaultTextModel: gatehouse.Null[string](),
			DefaultImageModel: gatehouse.Null[string](), DefaultProviderSort: gatehouse.Null[string](),
		}, func(w *gatehouse.Workspace) {
			w.Description, w.DefaultTextModel, w.DefaultImageModel, w.DefaultProviderSort = nil, nil, nil, nil
		}},
		{"clear lists", gatehouse.WorkspaceUpdate{DisabledServerTools: gatehouse.Null[[]string](), IOLoggingAPIKeyIDs: gatehouse.Null[[]int64]()},
			func(w *gatehouse.Workspace) { w.DisabledServerTools, w.IOLoggingAPIKeyIDs = nil, nil }},
		{"flags off", gatehouse.WorkspaceUpdate{
			IsDataDiscountLoggingEnabled: gatehouse.Val(false), IsObservabilityBroadcastEnabled: gatehouse.Val(false),
			IsObservabilityIOLoggingEnabled: gatehouse.Val(false), IncludeBYOKInBudgets: gatehouse.Val(false),
			IOLoggingSamplingRate: gatehouse.Val(1.0),
		}, func(w *gatehouse.Workspace) {
			w.IsDataDiscountLoggingEnabled, w.IsObservabilityBroadcastEnabled = false, false
			w.IsObservabilityIOLoggingEnabled, w.IncludeBYOKInBudgets, w.IOLoggingSamplingRate = false, false, 1
		}},
		{"everything", fullWorkspaceUpdate(), func(w *gatehouse.Workspace) {
			w.Name, w.Slug, w.Description = "Research", "research-2", strp("Models for research")
			w.DefaultTextModel, w.DefaultImageModel, w.DefaultProviderSort = strp("openai/gpt-4o"), strp("openai/dall-e-3"), strp("price")
			w.DisabledServerTools, w.IOLoggingAPIKeyIDs = []string{"openrouter:web_search", "openrouter:bash"}, []int64{3, 1, 2}
			w.IOLoggingSamplingRate, w.IsDataDiscountLoggingEnabled, w.IsObservabilityBroadcastEnabled = 0.25, true, true
			w.IsObservabilityIOLoggingEnabled, w.IncludeBYOKInBudgets = true, true
		}},
	} {
		f.clock.Add(time.Second)
		got, err := f.store.UpdateWorkspace(f.ctx, f.org.ID, w.ID, s.update)
		ok(t, err)
		s.apply(&want)
		now := f.clock.Now()
		want.UpdatedAt = &now
		sameWorkspace(t, s.name+": UpdateWorkspace", got, &want)
		found, err := f.store.FindWorkspace(f.ctx, f.org.ID, want.Slug)
		ok(t, err)
		sameWorkspace(t, s.name+": FindWorkspace", found, &want)
	}
	// By slug, too; the old slug is gone.
	_, err := f.store.UpdateWorkspace(f.ctx, f.org.ID, "research-2", gatehouse.WorkspaceUpdate{Name: gatehouse.Val("By slug")})
	ok(t, err)
	for _, old := range []string{"team-a", "team-b"} {
		_, err = f.store.FindWorkspace(f.ctx, f.org.ID, old)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
}

func testWorkspaceUpdateInvalid(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	f.newWorkspace(t, f.org.ID, "team-b")
	for _, tc := range []struct {
		name string
		u    gatehouse.WorkspaceUpdate
	}{
		{"slug taken", gatehouse.WorkspaceUpdate{Slug: gatehouse.Val("team-b")}},
		{"slug of the default", gatehouse.WorkspaceUpdate{Slug: gatehouse.Val(gatehouse.DefaultWorkspaceSlug)}},
		{"bad slug", gatehouse.WorkspaceUpdate{Slug: gatehouse.Val("Team B")}},
		{"null slug", gatehouse.WorkspaceUpdate{Slug: gatehouse.Null[string]()}},
		{"null name", gatehouse.WorkspaceUpdate{Name: gatehouse.Null[string]()}},
		{"empty name", gatehouse.WorkspaceUpdate{Name: gatehouse.Val(" ")}},
		{"sampling rate", gatehouse.WorkspaceUpdate{IOLoggingSamplingRate: gatehouse.Val(2.0)}},
		{"valid name, bad slug", gatehouse.WorkspaceUpdate{Name: gatehouse.Val("ok"), Slug: gatehouse.Val("-")}},
	} {
		_, err := f.store.UpdateWorkspace(f.ctx, f.org.ID, w.ID, tc.u)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("%s: error %v, want %s", tc.name, err, gatehouse.EINVALID)
		}
	}
	got, err := f.store.FindWorkspace(f.ctx, f.org.ID, w.ID)
	ok(t, err)
	sameWorkspace(t, "after failed updates", got, w)
	_, err = f.store.UpdateWorkspace(f.ctx, f.org.ID, "no-such-team", gatehouse.WorkspaceUpdate{Name: gatehouse.Val("x")})
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testWorkspaceUpdateDefault(t *testing.T, open Opener) {
	f := newFixture(t, open)
	_, err := f.store.UpdateWorkspace(f.ctx, f.org.ID, "", gatehouse.WorkspaceUpdate{Slug: gatehouse.Val("main")})
	wantCode(t, err, gatehouse.EINVALID)
	f.clock.Add(time.Second)
	got, err := f.store.UpdateWorkspace(f.ctx, f.org.ID, gatehouse.DefaultWorkspaceSlug, gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val("Main"), Slug: gatehouse.Val(gatehouse.DefaultWorkspaceSlug)})
	ok(t, err)
	if got.Name != "Main" || got.Slug != gatehouse.DefaultWorkspaceSlug || !got.IsDefault ||
		got.UpdatedAt == nil || !got.UpdatedAt.Equal(f.clock.Now()) {
		t.Errorf("UpdateWorkspace(default) = %s", workspaceString(got))
	}
	found, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	sameWorkspace(t, "FindWorkspace", found, got)
}

func testWorkspaceDelete(t *testing.T, open Opener) {
	f := newFixture(t, open)
	w := f.newWorkspace(t, f.org.ID, "team-a")
	keep := f.newWorkspace(t, f.org.ID, "team-b")
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, w.ID, false))
	_, err := f.store.FindWorkspace(f.ctx, f.org.ID, w.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, w.ID, false), gatehouse.ENOTFOUND)
	wantCode(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, "no-such-team", true), gatehouse.ENOTFOUND)
	// By slug; the slug is free again.
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, "team-b", false))
	_, err = f.store.FindWorkspace(f.ctx, f.org.ID, keep.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	f.newWorkspace(t, f.org.ID, "team-a")
	list, total, err := f.store.FindWorkspaces(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 2 || len(list) != 2 {
		t.Errorf("workspaces after deletes: %d %v", total, workspaceSlugs(list))
	}
}

func testWorkspaceDeleteDefault(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	f.clock.Add(time.Second)
	a := f.newWorkspace(t, f.org.ID, "team-a")
	f.clock.Add(time.Second)
	b := f.newWorkspace(t, f.org.ID, "team-b")

	wantCode(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, def.ID, false), gatehouse.EINVALID)
	wantCode(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, "", false), gatehouse.EINVALID)
	got, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	sameWorkspace(t, "default after refused delete", got, def)

	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, gatehouse.DefaultWorkspaceSlug, true))
	_, err = f.store.FindWorkspace(f.ctx, f.org.ID, def.ID)
	wantCode(t, err, gatehouse.ENOTFOUND)
	// The oldest remaining workspace is the default now.
	got, err = f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	if got.ID != a.ID || !got.IsDefault {
		t.Errorf("new default = %s, want %s", workspaceString(got), a.Slug)
	}
	if got, err := f.store.FindWorkspace(f.ctx, f.org.ID, b.ID); err != nil || got.IsDefault {
		t.Errorf("team-b: %v, %v", got, err)
	}
	// New keys go there.
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	if k.WorkspaceID != a.ID {
		t.Errorf("key went to %s, want the new default %s", k.WorkspaceID, a.ID)
	}
	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, k.Hash))

	// Deleting the last workspaces leaves none; the next one created is the default.
	wantCode(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, a.ID, false), gatehouse.EINVALID)
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, a.ID, true))
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, b.ID, true))
	_, total, err := f.store.FindWorkspaces(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 0 {
		t.Errorf("%d workspaces left", total)
	}
	_, err = f.store.FindWorkspace(f.ctx, f.org.ID, "")
	wantCode(t, err, gatehouse.ENOTFOUND)
	c := f.newWorkspace(t, f.org.ID, "team-c")
	if !c.IsDefault {
		t.Errorf("first workspace of an organization without one is not the default")
	}
}

func testWorkspaceDeleteWithKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	m := f.newMember(t, f.org.ID, "ada@example.com")
	w := f.newWorkspace(t, f.org.ID, "team-a")
	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, w.ID, []string{m.ID})
	ok(t, err)
	active := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: w.ID})
	disabled := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: w.ID, CreatorUserID: &m.ID})
	_, err = f.store.UpdateKey(f.ctx, f.org.ID, disabled.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
	ok(t, err)
	in1h := f.clock.Now().Add(time.Hour)
	expiring := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: w.ID, ExpiresAt: &in1h})

	// Active keys block the delete, and nothing changes.
	err = f.store.DeleteWorkspace(f.ctx, f.org.ID, w.ID, true)
	wantCode(t, err, gatehouse.EINVALID)
	_, err = f.store.FindWorkspace(f.ctx, f.org.ID, w.ID)
	ok(t, err)
	for _, k := range []*gatehouse.Key{active, disabled, expiring} {
		_, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		ok(t, err)
	}
	_, total, err := f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
	ok(t, err)
	if total != 1 {
		t.Errorf("%d members after refused delete, want 1", total)
	}

	ok(t, f.store.DeleteKey(f.ctx, f.org.ID, active.Hash))
	wantCode(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, w.ID, false), gatehouse.EINVALID) // the expiring key
	f.clock.Add(time.Hour)
	// Only a disabled and an expired key: the delete goes through and takes them along.
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, w.ID, false))
	for _, k := range []*gatehouse.Key{disabled, expiring} {
		_, err := f.store.FindKey(f.ctx, f.org.ID, k.Hash)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.FindKeyByHash(f.ctx, k.Hash)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	_, _, err = f.store.FindWorkspaceMembers(f.ctx, f.org.ID, w.ID, page(0, 50))
	wantCode(t, err, gatehouse.ENOTFOUND)
	// The member is still in the organization.
	_, total, err = f.store.FindMembers(f.ctx, f.org.ID, page(0, 50))
	ok(t, err)
	if total != 1 {
		t.Errorf("%d organization members, want 1", total)
	}
	// A key elsewhere does not block.
	w2 := f.newWorkspace(t, f.org.ID, "team-b")
	f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, w2.ID, false))
}

// fullWorkspaceUpdate sets every workspace field.
func fullWorkspaceUpdate() gatehouse.WorkspaceUpdate {
	return gatehouse.WorkspaceUpdate{
		Name: gatehouse.Val("Research"), Slug: gatehouse.Val("research-2"),
		Description: gatehouse.Val("Models for research"), DefaultTextModel: gatehouse.Val("openai/gpt-4o"),
		DefaultImageModel: gatehouse.Val("openai/dall-e-3"), DefaultProviderSort: gatehouse.Val("price"),
		DisabledServerTools:          gatehouse.Val([]string{"openrouter:web_search", "openrouter:bash"}),
		IOLoggingAPIKeyIDs:           gatehouse.Val([]int64{3, 1, 2}),
		IOLoggingSamplingRate:        gatehouse.Val(0.25),
		IsDataDiscountLoggingEnabled: gatehouse.Val(true), IsObservabilityBroadcastEnabled: gatehouse.Val(true),
		IsObservabilityIOLoggingEnabled: gatehouse.Val(true), IncludeBYOKInBudgets: gatehouse.Val(true),
	}
}

// sameWorkspace compares two workspaces field by field.
func sameWorkspace(t *testing.T, what string, got, want *gatehouse.Workspace) {
	t.Helper()
	if g, w := workspaceString(got), workspaceString(want); g != w {
		t.Errorf("%s:\n got  %s\n want %s", what, g, w)
	}
}

// workspaceString renders every field of a workspace.
func workspaceString(w *gatehouse.Workspace) string {
	if w == nil {
		return "<nil>"
	}
	list := func(v any, isNil bool) string {
		if isNil {
			return "<nil>"
		}
		return fmt.Sprint(v)
	}
	return fmt.Sprintf("{id:%s org:%s name:%q slug:%s desc:%s text:%s image:%s sort:%s tools:%s key_ids:%s rate:%v discount:%v broadcast:%v io:%v byok:%v default:%v by:%s created:%s updated:%s}",
		w.ID, w.OrganizationID, w.Name, w.Slug, optStr(w.Description), optStr(w.DefaultTextModel), optStr(w.DefaultImageModel),
		optStr(w.DefaultProviderSort), list(w.DisabledServerTools, w.DisabledServerTools == nil),
		list(w.IOLoggingAPIKeyIDs, w.IOLoggingAPIKeyIDs == nil), w.IOLoggingSamplingRate, w.IsDataDiscountLoggingEnabled,
		w.IsObservabilityBroadcastEnabled, w.IsObservabilityIOLoggingEnabled, w.IncludeBYOKInBudgets, w.IsDefault,
		optStr(w.CreatedBy), timeString(&w.CreatedAt), timeString(w.UpdatedAt))
}

func workspaceSlugs(ws []*gatehouse.Workspace) []string {
	out := []string{}
	for _, w := range ws {
		out = append(out, w.Slug)
	}
	return out
}

// testWorkspaceDeleteRacingKeys deletes a workspace while keys are created
// in it, or a disabled key of it is enabled: a workspace holding an active
// key is never deleted, so the delete and a key's success exclude each
// other, and every refusal is the documented one.
func testWorkspaceDeleteRacingKeys(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var deleted, refused int
	defer func() { t.Logf("%d rounds deleted the workspace, %d refused", deleted, refused) }()
	for round := range 12 {
		w := f.newWorkspace(t, f.org.ID, fmt.Sprintf("race-%d", round))
		disabled := f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "off", WorkspaceID: w.ID})
		_, err := f.store.UpdateKey(f.ctx, f.org.ID, disabled.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(true)})
		ok(t, err)
		var wg sync.WaitGroup
		start := make(chan struct{})
		keyErrs := make([]error, 4)
		for i := range keyErrs {
			wg.Go(func() {
				<-start
				if i == 0 {
					_, keyErrs[i] = f.store.UpdateKey(f.ctx, f.org.ID, disabled.Hash, gatehouse.KeyUpdate{Disabled: gatehouse.Val(false)})
					return
				}
				_, _, keyErrs[i] = f.store.CreateKey(f.ctx, f.org.ID, gatehouse.KeyCreate{Name: "racer", WorkspaceID: w.ID})
			})
		}
		var delErr error
		wg.Go(func() {
			<-start
			delErr = f.store.DeleteWorkspace(f.ctx, f.org.ID, w.ID, false)
		})
		close(start)
		wg.Wait()
		succeeded := 0
		for _, err := range keyErrs {
			if err == nil {
				succeeded++
			} else if gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
				t.Fatalf("round %d: a key change racing the delete failed with %v, want success or not found", round, err)
			}
		}
		switch {
		case delErr == nil && succeeded > 0:
			t.Fatalf("round %d: the workspace was deleted although %d key changes making an active key succeeded", round, succeeded)
		case delErr != nil && gatehouse.ErrorCode(delErr) != gatehouse.EINVALID:
			t.Fatalf("round %d: delete failed with %v, want success or the active-keys refusal", round, delErr)
		case delErr != nil && succeeded == 0:
			t.Fatalf("round %d: delete refused (%v) though no key became active", round, delErr)
		case delErr == nil:
			deleted++
		default:
			refused++
		}
	}
}
