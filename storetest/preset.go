package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

func testPresets(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateAndVersions", testPresetVersions},
		{"UnchangedAddsNoVersion", testPresetUnchanged},
		{"Slugs", testPresetSlugs},
		{"Workspaces", testPresetWorkspaces},
		{"ListOrderAndPages", testPresetPages},
		{"Tenancy", testPresetTenancy},
		{"Audit", testPresetAudit},
		{"WorkspaceDeletionCascades", testPresetCascade},
		{"ConcurrentSaves", testPresetConcurrent},
	})
}

// draft returns a preset draft setting temperature t, with a system prompt
// unless system is "".
func draft(model string, t float64, system string) gatehouse.PresetDraft {
	d := gatehouse.PresetDraft{Config: gatehouse.PresetConfig{
		"model": json.RawMessage(fmt.Sprintf("%q", model)), "temperature": json.RawMessage(fmt.Sprint(t)),
	}}
	if system != "" {
		d.SystemPrompt = &system
	}
	return d
}

// savePreset saves a preset draft and checks the call succeeded.
func (f *fixture) savePreset(t *testing.T, ctx context.Context, orgID, ws, slug string, d gatehouse.PresetDraft) (*gatehouse.Preset, bool) {
	t.Helper()
	p, changed, err := f.store.SavePreset(ctx, orgID, ws, slug, d)
	ok(t, err)
	return p, changed
}

var presetActor = gatehouse.Actor{KeyHash: gatehouse.HashKey("preset admin"), UserID: new("user_preset_admin")}

func testPresetVersions(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	ctx := gatehouse.WithActor(f.ctx, presetActor)
	created := f.clock.Now()
	p, changed := f.savePreset(t, ctx, f.org.ID, "", "support-bot", draft("acme/chat", 0.5, "Be brief."))
	if !changed {
		t.Fatal("creating a preset reports no change")
	}
	v1 := &gatehouse.PresetVersion{ID: p.Latest.ID, PresetID: p.ID, Version: 1, Config: draft("acme/chat", 0.5, "").Config,
		SystemPrompt: new("Be brief."), CreatorID: "user_preset_admin", CreatedAt: created}
	want := &gatehouse.Preset{ID: p.ID, OrganizationID: f.org.ID, WorkspaceID: def.ID, Slug: "support-bot", Name: "support-bot",
		CreatorUserID: new("user_preset_admin"), Status: gatehouse.PresetActive, CreatedAt: created, UpdatedAt: created,
		Latest: v1, LatestVersionID: v1.ID}
	wantEqual(t, "created preset", want, p)
	got, err := f.store.FindPreset(f.ctx, f.org.ID, "", "support-bot")
	ok(t, err)
	wantEqual(t, "found preset", want, got)

	// A key without a user makes the next version: its hash is the creator.
	f.clock.Add(time.Minute)
	keyOnly := gatehouse.WithActor(f.ctx, gatehouse.Actor{KeyHash: gatehouse.HashKey("bot key")})
	p2, changed := f.savePreset(t, keyOnly, f.org.ID, def.ID, "support-bot", draft("acme/chat", 0.9, ""))
	if !changed || p2.Latest.Version != 2 || p2.ID != p.ID {
		t.Fatalf("second save: changed %v, version %d, id %s (want true, 2, %s)", changed, p2.Latest.Version, p2.ID, p.ID)
	}
	v2 := &gatehouse.PresetVersion{ID: p2.Latest.ID, PresetID: p.ID, Version: 2, Config: draft("acme/chat", 0.9, "").Config,
		CreatorID: gatehouse.HashKey("bot key"), CreatedAt: f.clock.Now()}
	want.Latest, want.LatestVersionID, want.UpdatedAt = v2, v2.ID, f.clock.Now()
	wantEqual(t, "preset after a second version", want, p2)
	got, err = f.store.FindPreset(f.ctx, f.org.ID, "default", "support-bot")
	ok(t, err)
	wantEqual(t, "found after a second version", want, got)

	versions, total, err := f.store.FindPresetVersions(f.ctx, f.org.ID, "", "support-bot", page(0, 10))
	ok(t, err)
	wantEqual(t, "versions, oldest first", []*gatehouse.PresetVersion{v1, v2}, versions)
	if total != 2 {
		t.Fatalf("total %d, want 2", total)
	}
	// By slug, and by workspace id as a chat request names it.
	for _, ref := range []string{"", def.ID} {
		for version, want := range map[int]*gatehouse.PresetVersion{0: v2, 1: v1, 2: v2} {
			got, err := f.store.FindPresetVersion(f.ctx, f.org.ID, ref, "support-bot", version)
			ok(t, err)
			wantEqual(t, fmt.Sprintf("version %d in workspace %q", version, ref), want, got)
		}
		_, err = f.store.FindPresetVersion(f.ctx, f.org.ID, ref, "support-bot", 3)
		wantMessage(t, err, gatehouse.ENOTFOUND, `preset "support-bot" has no version 3`)
		_, err = f.store.FindPresetVersion(f.ctx, f.org.ID, ref, "Not A Slug", 0)
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	_, _, err = f.store.FindPresetVersions(f.ctx, f.org.ID, "", "no-such-preset", page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindPresetVersion(f.ctx, f.org.ID, "", "no-such-preset", 0)
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testPresetUnchanged(t *testing.T, open Opener) {
	f := newFixture(t, open)
	p, _ := f.savePreset(t, f.ctx, f.org.ID, "", "same", draft("acme/chat", 0.5, "Hi."))
	f.clock.Add(time.Minute)
	again, changed := f.savePreset(t, f.ctx, f.org.ID, "", "same", draft("acme/chat", 0.5, "Hi."))
	if changed {
		t.Fatal("saving what the latest version holds reports a change")
	}
	wantEqual(t, "preset after saving the same draft", p, again)
	// The system prompt is part of what a version holds.
	p3, changed := f.savePreset(t, f.ctx, f.org.ID, "", "same", draft("acme/chat", 0.5, ""))
	if !changed || p3.Latest.Version != 2 {
		t.Fatalf("dropping the system prompt: changed %v, version %d", changed, p3.Latest.Version)
	}
	_, total, err := f.store.FindPresetVersions(f.ctx, f.org.ID, "", "same", page(0, 10))
	ok(t, err)
	if total != 2 {
		t.Fatalf("%d versions, want 2", total)
	}
}

func testPresetSlugs(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, slug := range []string{"", "Upper", "under_score", "-lead", "trail-", "two--hyphens", "a b", "é", string(make([]byte, 65))} {
		_, _, err := f.store.SavePreset(f.ctx, f.org.ID, "", slug, draft("acme/chat", 1, ""))
		wantCode(t, err, gatehouse.EINVALID)
		_, err = f.store.FindPreset(f.ctx, f.org.ID, "", slug)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, _, err = f.store.FindPresetVersions(f.ctx, f.org.ID, "", slug, page(0, 1))
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	long := ""
	for len(long) < gatehouse.MaxPresetSlugLength {
		long += "a"
	}
	f.savePreset(t, f.ctx, f.org.ID, "", long, draft("acme/chat", 1, ""))
	list, _, err := f.store.FindPresets(f.ctx, f.org.ID, "", page(0, 10))
	ok(t, err)
	if len(list) != 1 || list[0].Slug != long {
		t.Fatalf("presets %+v, want only %s", list, long)
	}
}

func testPresetWorkspaces(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team-a")
	inTeam, _ := f.savePreset(t, f.ctx, f.org.ID, "team-a", "shared-name", draft("acme/chat", 0.1, ""))
	inDefault, _ := f.savePreset(t, f.ctx, f.org.ID, "", "shared-name", draft("acme/chat", 0.2, ""))
	if inTeam.ID == inDefault.ID || inTeam.WorkspaceID != ws.ID || inDefault.Latest.Version != 1 {
		t.Fatalf("one slug in two workspaces: %+v and %+v", inTeam, inDefault)
	}
	for _, ref := range []string{"team-a", ws.ID} {
		got, err := f.store.FindPresetVersion(f.ctx, f.org.ID, ref, "shared-name", 0)
		ok(t, err)
		wantEqual(t, "the team's version by "+ref, inTeam.Latest, got)
	}
	_, _, err := f.store.SavePreset(f.ctx, f.org.ID, "no-such-ws", "x", draft("acme/chat", 1, ""))
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, _, err = f.store.FindPresets(f.ctx, f.org.ID, "no-such-ws", page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.FindPreset(f.ctx, f.org.ID, "no-such-ws", "shared-name")
	wantCode(t, err, gatehouse.ENOTFOUND)
}

func testPresetPages(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, slug := range []string{"p1", "p2", "p3", "p4", "p5"} {
		f.clock.Add(time.Second)
		f.savePreset(t, f.ctx, f.org.ID, "", slug, draft("acme/chat", 1, ""))
	}
	f.clock.Add(time.Second)
	f.savePreset(t, f.ctx, f.org.ID, "", "p2", draft("acme/chat", 0.3, "")) // p2 is now the most recently updated
	var slugs []string
	for offset := 0; offset < 6; offset += 2 {
		list, total, err := f.store.FindPresets(f.ctx, f.org.ID, "", page(offset, 2))
		ok(t, err)
		if total != 5 {
			t.Fatalf("total %d, want 5", total)
		}
		for _, p := range list {
			if p.Latest != nil || p.LatestVersionID == "" {
				t.Fatalf("a listed preset carries Latest %v, LatestVersionID %q", p.Latest, p.LatestVersionID)
			}
			slugs = append(slugs, p.Slug)
		}
	}
	wantEqual(t, "slugs, most recently updated first", []string{"p2", "p5", "p4", "p3", "p1"}, slugs)

	for i := 0; i < 4; i++ {
		f.savePreset(t, f.ctx, f.org.ID, "", "p1", draft("acme/chat", float64(i)/10, ""))
	}
	versions, total, err := f.store.FindPresetVersions(f.ctx, f.org.ID, "", "p1", page(1, 2))
	ok(t, err)
	if total != 5 || len(versions) != 2 || versions[0].Version != 2 || versions[1].Version != 3 {
		t.Fatalf("page (1, 2) of 5 versions: total %d, %+v", total, versions)
	}
}

func testPresetTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	mine, _ := f.savePreset(t, f.ctx, f.org.ID, "", "secret-sauce", draft("acme/chat", 1, "Our prompt."))
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	// By slug, and by this organization's workspace id: nothing.
	for _, ref := range []string{"", def.ID} {
		_, err := f.store.FindPreset(f.ctx, other.ID, ref, "secret-sauce")
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, err = f.store.FindPresetVersion(f.ctx, other.ID, ref, "secret-sauce", 1)
		wantCode(t, err, gatehouse.ENOTFOUND)
		_, _, err = f.store.FindPresetVersions(f.ctx, other.ID, ref, "secret-sauce", page(0, 10))
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
	_, _, err = f.store.SavePreset(f.ctx, other.ID, def.ID, "secret-sauce", draft("acme/chat", 0, ""))
	wantCode(t, err, gatehouse.ENOTFOUND)
	list, total, err := f.store.FindPresets(f.ctx, other.ID, "", page(0, 10))
	ok(t, err)
	if total != 0 || len(list) != 0 {
		t.Fatalf("the other organization lists %d presets", total)
	}
	// The same slug in the other organization is its own preset.
	theirs, _ := f.savePreset(t, f.ctx, other.ID, "", "secret-sauce", draft("acme/chat", 0, ""))
	if theirs.ID == mine.ID || theirs.Latest.Version != 1 {
		t.Fatalf("the other organization's preset %+v", theirs)
	}
	got, err := f.store.FindPreset(f.ctx, f.org.ID, "", "secret-sauce")
	ok(t, err)
	wantEqual(t, "own preset after the other organization saved the same slug", mine, got)
}

func testPresetAudit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	a := f.newAuditRun(t, f.org.ID)
	d := draft("acme/chat", 0.5, "Be brief.")
	p, _, err := f.store.SavePreset(a.ctx(), f.org.ID, "", "audited", d)
	ok(t, err)
	a.want("preset.create", "preset", []string{p.ID}, map[string]any{"workspace_id": def.ID, "slug": "audited",
		"version": 1, "version_id": p.Latest.ID, "fields": []string{"model", "temperature", "system_prompt"}})
	_, _, err = f.store.SavePreset(a.ctx(), f.org.ID, "", "audited", d)
	ok(t, err)
	a.wantNone("saving the same draft")
	p, _, err = f.store.SavePreset(a.ctx(), f.org.ID, "", "audited", draft("acme/chat", 0.7, ""))
	ok(t, err)
	a.want("preset.version.create", "preset", []string{p.ID}, map[string]any{"workspace_id": def.ID, "slug": "audited",
		"version": 2, "version_id": p.Latest.ID, "fields": []string{"model", "temperature"}})
	_, _, err = f.store.SavePreset(a.ctx(), f.org.ID, "", "Not A Slug", d)
	wantCode(t, err, gatehouse.EINVALID)
	a.wantNone("a refused save")
	// Values never reach the log: not the prompt, not the model.
	for _, e := range a.all() {
		raw, _ := json.Marshal(e)
		for _, value := range []string{"Be brief.", "acme/chat"} {
			if strings.Contains(string(raw), value) {
				t.Fatalf("audit entry holds %q: %s", value, raw)
			}
		}
	}
}

func testPresetCascade(t *testing.T, open Opener) {
	f := newFixture(t, open)
	f.newWorkspace(t, f.org.ID, "doomed")
	f.savePreset(t, f.ctx, f.org.ID, "doomed", "p", draft("acme/chat", 1, ""))
	f.savePreset(t, f.ctx, f.org.ID, "doomed", "p", draft("acme/chat", 0, ""))
	ok(t, f.store.DeleteWorkspace(f.ctx, f.org.ID, "doomed", false))
	// A new workspace of the same slug starts with no presets.
	f.newWorkspace(t, f.org.ID, "doomed")
	_, err := f.store.FindPreset(f.ctx, f.org.ID, "doomed", "p")
	wantCode(t, err, gatehouse.ENOTFOUND)
	p, _ := f.savePreset(t, f.ctx, f.org.ID, "doomed", "p", draft("acme/chat", 1, ""))
	if p.Latest.Version != 1 {
		t.Fatalf("the preset of a new workspace starts at version %d", p.Latest.Version)
	}
}

// testPresetConcurrent saves distinct drafts of one new preset at once: one
// preset, every save a version, numbered 1..n without gaps or repeats.
func testPresetConcurrent(t *testing.T, open Opener) {
	f := newFixture(t, open)
	const n = 8
	var wg sync.WaitGroup
	errs := make([]error, n)
	for i := range n {
		wg.Go(func() {
			_, _, errs[i] = f.store.SavePreset(f.ctx, f.org.ID, "", "raced", draft("acme/chat", float64(i)/10, ""))
		})
	}
	wg.Wait()
	for _, err := range errs {
		ok(t, err)
	}
	versions, total, err := f.store.FindPresetVersions(f.ctx, f.org.ID, "", "raced", page(0, n+1))
	ok(t, err)
	if total != n {
		t.Fatalf("%d versions, want %d", total, n)
	}
	seen := map[string]bool{}
	for i, v := range versions {
		if v.Version != i+1 || seen[string(v.Config["temperature"])] {
			t.Fatalf("versions %+v: want 1..%d, each draft once", versions, n)
		}
		seen[string(v.Config["temperature"])] = true
	}
	p, err := f.store.FindPreset(f.ctx, f.org.ID, "", "raced")
	ok(t, err)
	if p.Latest.Version != n {
		t.Fatalf("latest version %d, want %d", p.Latest.Version, n)
	}
}
