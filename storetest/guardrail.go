package storetest

import (
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

func testGuardrails(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"CreateFindUpdateDelete", testGuardrailLifecycle},
		{"Validation", testGuardrailValidation},
		{"NameUnique", testGuardrailNameUnique},
		{"ArraysReplacedNullClears", testGuardrailArrays},
		{"EnforceZDR", testGuardrailEnforceZDR},
		{"LimitAndReset", testGuardrailLimit},
		{"DefaultGuardrail", testDefaultGuardrail},
		{"Pagination", testGuardrailPagination},
		{"Tenancy", testGuardrailTenancy},
		{"AssignKeys", testAssignKeys},
		{"AssignKeysRejected", testAssignKeysRejected},
		{"UnassignKeys", testUnassignKeys},
		{"AssignMembers", testAssignMembers},
		{"AssignmentPagination", testAssignmentPagination},
		{"Cascades", testGuardrailCascades},
	})
}

// guardrail returns a create request for a guardrail named name in the
// default workspace.
func guardrail(name string) gatehouse.GuardrailCreate {
	return gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val(name)}}
}

// newGuardrail creates a guardrail.
func (f *fixture) newGuardrail(t *testing.T, orgID string, c gatehouse.GuardrailCreate) *gatehouse.Guardrail {
	t.Helper()
	g, err := f.store.CreateGuardrail(f.ctx, orgID, c)
	if err != nil {
		t.Fatalf("CreateGuardrail(%s): %v", c.Name.Value, err)
	}
	return g
}

func testGuardrailLifecycle(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws := f.newWorkspace(t, f.org.ID, "team-a")
	label := "cards"
	c := guardrail("Production")
	c.WorkspaceID = ws.Slug
	c.Description = gatehouse.Val("for production keys")
	c.AllowedModels = gatehouse.Val([]string{"openai/gpt-4o", "anthropic/claude-sonnet-4"})
	c.IgnoredProviders = gatehouse.Val([]string{"deepinfra"})
	c.LimitUSD = gatehouse.Val(gatehouse.USD(25))
	c.ResetInterval = gatehouse.Val(gatehouse.Weekly)
	c.IncludeBYOKInBudgets = gatehouse.Val(true)
	c.EnableFreeModelTraining = gatehouse.Val(false)
	c.AllowedDataRegions = gatehouse.Val([]string{"eu"})
	c.ContentFilters = gatehouse.Val([]gatehouse.ContentFilter{{Pattern: `\d{16}`, Action: "redact", Label: &label}})
	c.ContentFilterBuiltins = gatehouse.Val([]gatehouse.ContentFilterBuiltin{{Slug: "email", Action: "block", Label: "ignored"}})
	g := f.newGuardrail(t, f.org.ID, c)

	now := f.clock.Now()
	want := &gatehouse.Guardrail{
		ID: g.ID, OrganizationID: f.org.ID, WorkspaceID: ws.ID, Name: "Production",
		Description:   new("for production keys"),
		AllowedModels: []string{"openai/gpt-4o", "anthropic/claude-sonnet-4"}, IgnoredProviders: []string{"deepinfra"},
		LimitUSD: new(gatehouse.USD(25)), ResetInterval: gatehouse.Weekly, IncludeBYOKInBudgets: true,
		EnableFreeModelTraining: new(false), AllowedDataRegions: []string{"europe"},
		ContentFilters:        []gatehouse.ContentFilter{{Pattern: `\d{16}`, Action: "redact", Label: &label}},
		ContentFilterBuiltins: []gatehouse.ContentFilterBuiltin{{Slug: "email", Action: "block", Label: "[EMAIL]"}},
		CreatedAt:             now, UpdatedAt: &now,
	}
	wantEqual(t, "created guardrail", want, g)
	got, err := f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	wantEqual(t, "found guardrail", want, got)

	f.clock.Add(time.Minute)
	got, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{
		Name: gatehouse.Val("Prod"), Description: gatehouse.Null[string](),
	})
	ok(t, err)
	later := f.clock.Now()
	want.Name, want.Description, want.UpdatedAt = "Prod", nil, &later
	wantEqual(t, "updated guardrail", want, got)
	got, err = f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	wantEqual(t, "guardrail after update", want, got)
	// An empty update changes nothing but updated_at.
	got, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{})
	ok(t, err)
	wantEqual(t, "guardrail after empty update", want, got)

	list, total, err := f.store.FindGuardrails(f.ctx, f.org.ID, ws.ID, page(0, 10))
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != g.ID {
		t.Fatalf("FindGuardrails = %d guardrails, total %d; want just %s", len(list), total, g.ID)
	}
	if _, total, err := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(0, 10)); err != nil || total != 0 {
		t.Fatalf("default workspace guardrails: total %d, err %v; want 0", total, err)
	}

	ok(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, g.ID))
	_, err = f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	wantMessage(t, err, gatehouse.ENOTFOUND, "guardrail not found")
	wantCode(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, g.ID), gatehouse.ENOTFOUND)
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("x")})
	wantCode(t, err, gatehouse.ENOTFOUND)
	if _, total, _ := f.store.FindGuardrails(f.ctx, f.org.ID, ws.ID, page(0, 10)); total != 0 {
		t.Fatalf("total after delete = %d, want 0", total)
	}
}

func testGuardrailValidation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	for _, tc := range []struct {
		name   string
		c      gatehouse.GuardrailCreate
		code   string
		prefix string
	}{
		{"name missing", gatehouse.GuardrailCreate{}, gatehouse.EINVALID, "name: is required"},
		{"name null", gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Null[string]()}},
			gatehouse.EINVALID, "name: is required"},
		{"name blank", guardrail("  "), gatehouse.EINVALID, "name: "},
		{"bad regex", func() gatehouse.GuardrailCreate {
			c := guardrail("g")
			c.ContentFilters = gatehouse.Val([]gatehouse.ContentFilter{{Pattern: "(unclosed", Action: "block"}})
			return c
		}(), gatehouse.EINVALID, "content_filters[0].pattern: "},
		{"limit without reset", func() gatehouse.GuardrailCreate {
			c := guardrail("g")
			c.LimitUSD = gatehouse.Val(gatehouse.USD(1))
			return c
		}(), gatehouse.EINVALID, "limit_usd: "},
		{"empty regions", func() gatehouse.GuardrailCreate {
			c := guardrail("g")
			c.AllowedDataRegions = gatehouse.Val([]string{})
			return c
		}(), gatehouse.EINVALID, "allowed_data_regions: "},
		{"empty model list", func() gatehouse.GuardrailCreate {
			c := guardrail("g")
			c.AllowedModels = gatehouse.Val([]string{})
			return c
		}(), gatehouse.EINVALID, "allowed_models: "},
		{"unknown workspace", func() gatehouse.GuardrailCreate {
			c := guardrail("g")
			c.WorkspaceID = "nope"
			return c
		}(), gatehouse.ENOTFOUND, "workspace not found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.store.CreateGuardrail(f.ctx, f.org.ID, tc.c)
			wantMessage(t, err, tc.code, tc.prefix)
		})
	}
	other := f.newOrg(t, "Other")
	foreign := f.newWorkspace(t, other.ID, "foreign")
	c := guardrail("g")
	c.WorkspaceID = foreign.ID
	_, err := f.store.CreateGuardrail(f.ctx, f.org.ID, c)
	wantCode(t, err, gatehouse.ENOTFOUND)
	if _, total, _ := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(0, 10)); total != 0 {
		t.Fatalf("%d guardrails created by failed calls", total)
	}

	g := f.newGuardrail(t, f.org.ID, guardrail("g"))
	for _, u := range []gatehouse.GuardrailUpdate{
		{Name: gatehouse.Null[string]()},
		{ContentFilters: gatehouse.Val([]gatehouse.ContentFilter{{Pattern: "ok", Action: "explode"}})},
		{ResetInterval: gatehouse.Val(gatehouse.Daily)},
	} {
		_, err := f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, u)
		wantCode(t, err, gatehouse.EINVALID)
	}
	got, err := f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	wantEqual(t, "failed updates changed the guardrail", g, got)
}

func testGuardrailNameUnique(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newGuardrail(t, f.org.ID, guardrail("alpha"))
	_, err := f.store.CreateGuardrail(f.ctx, f.org.ID, guardrail("alpha"))
	wantMessage(t, err, gatehouse.EINVALID, `name: a guardrail named "alpha" already exists in this workspace`)

	ws := f.newWorkspace(t, f.org.ID, "team-b")
	c := guardrail("alpha")
	c.WorkspaceID = ws.ID
	f.newGuardrail(t, f.org.ID, c) // another workspace may use the name

	b := f.newGuardrail(t, f.org.ID, guardrail("beta"))
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, b.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("alpha")})
	wantMessage(t, err, gatehouse.ECONFLICT, `name: a guardrail named "alpha" already exists in this workspace`)
	if got, _ := f.store.FindGuardrail(f.ctx, f.org.ID, b.ID); got.Name != "beta" {
		t.Fatalf("name after failed rename = %q, want beta", got.Name)
	}
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, a.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("alpha")})
	ok(t, err) // its own name is not taken
	ok(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, a.ID))
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, b.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val("alpha")})
	ok(t, err) // free again after the delete
}

func testGuardrailArrays(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c := guardrail("g")
	c.AllowedModels = gatehouse.Val([]string{"a/x", "a/y"})
	c.AllowedProviders = gatehouse.Val([]string{"openai"})
	c.AllowedDataRegions = gatehouse.Val([]string{"eu", "us", "europe"})
	c.ContentFilterBuiltins = gatehouse.Val([]gatehouse.ContentFilterBuiltin{{Slug: "ssn", Action: "flag"}, {Slug: "phone", Action: "redact"}})
	g := f.newGuardrail(t, f.org.ID, c)
	if want := []string{"europe", "us"}; !slices.Equal(g.AllowedDataRegions, want) {
		t.Fatalf("allowed_data_regions = %v, want %v", g.AllowedDataRegions, want)
	}

	check := func(u gatehouse.GuardrailUpdate, want func(g *gatehouse.Guardrail)) {
		t.Helper()
		got, err := f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, u)
		ok(t, err)
		want(g)
		g.UpdatedAt = got.UpdatedAt
		wantEqual(t, "after update", g, got)
		found, err := f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
		ok(t, err)
		wantEqual(t, "stored differs from returned", got, found)
	}
	check(gatehouse.GuardrailUpdate{AllowedModels: gatehouse.Val([]string{"b/z"})}, func(g *gatehouse.Guardrail) {
		g.AllowedModels = []string{"b/z"} // replaced whole, not merged
	})
	check(gatehouse.GuardrailUpdate{AllowedModels: gatehouse.Null[[]string](), AllowedDataRegions: gatehouse.Null[[]string]()},
		func(g *gatehouse.Guardrail) { g.AllowedModels, g.AllowedDataRegions = nil, nil })
	check(gatehouse.GuardrailUpdate{ContentFilterBuiltins: gatehouse.Val([]gatehouse.ContentFilterBuiltin{{Slug: "secrets", Action: "block"}})},
		func(g *gatehouse.Guardrail) {
			g.ContentFilterBuiltins = []gatehouse.ContentFilterBuiltin{{Slug: "secrets", Action: "block", Label: "[SECRET]"}}
		})
	check(gatehouse.GuardrailUpdate{ContentFilterBuiltins: gatehouse.Null[[]gatehouse.ContentFilterBuiltin](),
		AllowedProviders: gatehouse.Null[[]string]()},
		func(g *gatehouse.Guardrail) { g.ContentFilterBuiltins, g.AllowedProviders = nil, nil })
	if g.AllowedProviders != nil || g.AllowedModels != nil {
		t.Fatalf("cleared lists read back as %v, %v; want nil", g.AllowedProviders, g.AllowedModels)
	}
}

func testGuardrailEnforceZDR(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c := guardrail("zdr")
	c.EnforceZDR = gatehouse.Val(true)
	c.EnforceZDROpenAI = gatehouse.Val(false)
	g := f.newGuardrail(t, f.org.ID, c)
	g, err := f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	yes, no := new(true), new(false)
	want := []*bool{yes, yes, no, yes, yes, yes}
	got := []*bool{g.EnforceZDR, g.EnforceZDRAnthropic, g.EnforceZDROpenAI, g.EnforceZDRGoogle, g.EnforceZDRXAI, g.EnforceZDROther}
	wantEqual(t, "enforce_zdr, _anthropic, _openai, _google, _xai, _other", want, got)
	if g.EnableFreeModelPublication != nil {
		t.Fatalf("enable_free_model_publication = %v, want null", *g.EnableFreeModelPublication)
	}

	g, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{
		EnforceZDR: gatehouse.Null[bool](), EnforceZDRXAI: gatehouse.Val(false)})
	ok(t, err)
	g, err = f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	want = []*bool{nil, nil, nil, nil, no, nil}
	got = []*bool{g.EnforceZDR, g.EnforceZDRAnthropic, g.EnforceZDROpenAI, g.EnforceZDRGoogle, g.EnforceZDRXAI, g.EnforceZDROther}
	wantEqual(t, "after enforce_zdr null", want, got)
}

func testGuardrailLimit(t *testing.T, open Opener) {
	f := newFixture(t, open)
	c := guardrail("budget")
	c.LimitUSD = gatehouse.Val(gatehouse.Money(1_500_000_001)) // $1.500000001: exact
	c.ResetInterval = gatehouse.Val(gatehouse.Monthly)
	g := f.newGuardrail(t, f.org.ID, c)

	_, err := f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{LimitUSD: gatehouse.Null[gatehouse.Money]()})
	wantMessage(t, err, gatehouse.EINVALID, "limit_usd: ")
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{LimitUSD: gatehouse.Val(gatehouse.Money(-1))})
	wantCode(t, err, gatehouse.EINVALID)

	g, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{LimitUSD: gatehouse.Val(gatehouse.USD(7))})
	ok(t, err) // the interval stays set
	g, err = f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	if g.LimitUSD == nil || *g.LimitUSD != gatehouse.USD(7) || g.ResetInterval != gatehouse.Monthly {
		t.Fatalf("limit = %v %q, want $7 monthly", g.LimitUSD, g.ResetInterval)
	}
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, g.ID, gatehouse.GuardrailUpdate{
		LimitUSD: gatehouse.Null[gatehouse.Money](), ResetInterval: gatehouse.Null[gatehouse.Interval]()})
	ok(t, err)
	g, err = f.store.FindGuardrail(f.ctx, f.org.ID, g.ID)
	ok(t, err)
	if g.LimitUSD != nil || g.ResetInterval != gatehouse.NoReset {
		t.Fatalf("limit = %v %q after clearing both, want none", g.LimitUSD, g.ResetInterval)
	}
}

func testDefaultGuardrail(t *testing.T, open Opener) {
	f := newFixture(t, open)
	ws, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)
	id, name := gatehouse.DefaultGuardrailID(ws.ID), gatehouse.DefaultGuardrailName(ws.ID)

	// Unconfigured, it reads as a guardrail without rules, created with its
	// workspace and never updated, and is not listed.
	unconfigured := &gatehouse.Guardrail{ID: id, OrganizationID: f.org.ID, WorkspaceID: ws.ID, Name: name, CreatedAt: ws.CreatedAt}
	stillUnconfigured := func(what string) {
		t.Helper()
		g, err := f.store.FindGuardrail(f.ctx, f.org.ID, id)
		ok(t, err)
		wantEqual(t, what, unconfigured, g)
		if _, total, _ := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(0, 10)); total != 0 {
			t.Fatalf("%s: %d guardrails listed, want none", what, total)
		}
	}
	stillUnconfigured("unconfigured default guardrail")
	keys, n, err := f.store.FindKeyAssignments(f.ctx, f.org.ID, id, page(0, 10))
	if err != nil || n != 0 || len(keys) != 0 {
		t.Fatalf("FindKeyAssignments of the unconfigured default guardrail = %v (%d), %v; want none", keys, n, err)
	}
	if n, err := f.store.UnassignKeys(f.ctx, f.org.ID, id, []string{gatehouse.HashKey("x")}); err != nil || n != 0 {
		t.Fatalf("UnassignKeys from the unconfigured default guardrail = %d, %v; want 0", n, err)
	}
	wantCode(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, id), gatehouse.ENOTFOUND) // nothing to delete
	_, err = f.store.AssignKeys(f.ctx, f.org.ID, id, []string{gatehouse.HashKey("x")}, nil)
	wantCode(t, err, gatehouse.EINVALID) // an unknown key: nothing assigned, nothing configured
	stillUnconfigured("after a failed assignment")
	_, err = f.store.CreateGuardrail(f.ctx, f.org.ID, guardrail(name))
	wantCode(t, err, gatehouse.EINVALID) // the name is reserved
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, id, gatehouse.GuardrailUpdate{Name: gatehouse.Val("Mine")})
	wantMessage(t, err, gatehouse.EINVALID, "name: the default guardrail of a workspace cannot be renamed")
	stillUnconfigured("after a failed update") // the failed update created nothing

	other := f.newOrg(t, "Other")
	_, err = f.store.UpdateGuardrail(f.ctx, other.ID, id, gatehouse.GuardrailUpdate{})
	wantCode(t, err, gatehouse.ENOTFOUND) // not another organization's to create
	_, err = f.store.FindGuardrail(f.ctx, other.ID, id)
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, _, err = f.store.FindKeyAssignments(f.ctx, other.ID, id, page(0, 10))
	wantCode(t, err, gatehouse.ENOTFOUND)
	_, err = f.store.AssignKeys(f.ctx, other.ID, id, []string{gatehouse.HashKey("x")}, nil)
	wantCode(t, err, gatehouse.ENOTFOUND)

	g, err := f.store.UpdateGuardrail(f.ctx, f.org.ID, id, gatehouse.GuardrailUpdate{
		Description: gatehouse.Val("house rules"), AllowedProviders: gatehouse.Val([]string{"openai"})})
	ok(t, err)
	now := f.clock.Now()
	want := &gatehouse.Guardrail{ID: id, OrganizationID: f.org.ID, WorkspaceID: ws.ID, Name: name,
		Description: new("house rules"), AllowedProviders: []string{"openai"}, CreatedAt: now, UpdatedAt: &now}
	wantEqual(t, "materialized default guardrail", want, g)
	found, err := f.store.FindGuardrail(f.ctx, f.org.ID, id)
	ok(t, err)
	wantEqual(t, "found default guardrail", want, found)
	list, total, err := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(0, 10))
	ok(t, err)
	if total != 1 || len(list) != 1 || list[0].ID != id {
		t.Fatalf("FindGuardrails = %d (total %d), want the default guardrail", len(list), total)
	}
	_, err = f.store.FindGuardrail(f.ctx, other.ID, id)
	wantCode(t, err, gatehouse.ENOTFOUND)

	f.clock.Add(time.Hour)
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, id, gatehouse.GuardrailUpdate{Name: gatehouse.Val("Renamed")})
	wantMessage(t, err, gatehouse.EINVALID, "name: the default guardrail of a workspace cannot be renamed")
	g, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, id, gatehouse.GuardrailUpdate{Name: gatehouse.Val(name)})
	ok(t, err) // its own name is fine
	if !g.CreatedAt.Equal(now) || !g.UpdatedAt.Equal(f.clock.Now()) {
		t.Fatalf("created_at %v updated_at %v after a second update; want %v and %v", g.CreatedAt, g.UpdatedAt, now, f.clock.Now())
	}
	key := f.newKey(t, f.org.ID, gatehouse.KeyCreate{})
	n, err = f.store.AssignKeys(f.ctx, f.org.ID, id, []string{key.Hash}, nil)
	if err != nil || n != 1 {
		t.Fatalf("AssignKeys to the default guardrail = %d, %v; want 1", n, err)
	}

	// Deleting it reverts it to unconfigured.
	ok(t, f.store.DeleteGuardrail(f.ctx, f.org.ID, id))
	stillUnconfigured("after deleting it")
	g, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, id, gatehouse.GuardrailUpdate{})
	ok(t, err)
	if g.Description != nil || g.Name != name || !g.CreatedAt.Equal(f.clock.Now()) {
		t.Fatalf("re-materialized guardrail = %+v, want a fresh one", g)
	}
	if _, total, _ := f.store.FindKeyAssignments(f.ctx, f.org.ID, id, page(0, 10)); total != 0 {
		t.Fatalf("re-materialized guardrail has %d key assignments, want 0", total)
	}

	// A non-default workspace has its own default guardrail, which an
	// assignment configures too (without rules).
	team := f.newWorkspace(t, f.org.ID, "team")
	teamKey := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: team.ID})
	f.clock.Add(time.Minute)
	if n, err := f.store.AssignKeys(f.ctx, f.org.ID, gatehouse.DefaultGuardrailID(team.ID), []string{teamKey.Hash}, nil); err != nil || n != 1 {
		t.Fatalf("AssignKeys to the unconfigured team default guardrail = %d, %v; want 1", n, err)
	}
	g, err = f.store.FindGuardrail(f.ctx, f.org.ID, gatehouse.DefaultGuardrailID(team.ID))
	ok(t, err)
	if now := f.clock.Now(); !g.CreatedAt.Equal(now) || g.UpdatedAt == nil || !g.UpdatedAt.Equal(now) || g.AllowedProviders != nil {
		t.Fatalf("team default guardrail configured by an assignment = %+v", g)
	}
	g, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, gatehouse.DefaultGuardrailID(team.ID), gatehouse.GuardrailUpdate{})
	ok(t, err)
	if g.WorkspaceID != team.ID || g.Name != gatehouse.DefaultGuardrailName(team.ID) {
		t.Fatalf("team default guardrail in %s named %q", g.WorkspaceID, g.Name)
	}
	// Other guardrails cannot take the reserved name.
	plain := f.newGuardrail(t, f.org.ID, guardrail("plain"))
	_, err = f.store.UpdateGuardrail(f.ctx, f.org.ID, plain.ID, gatehouse.GuardrailUpdate{Name: gatehouse.Val(name)})
	if code := gatehouse.ErrorCode(err); code != gatehouse.EINVALID && code != gatehouse.ECONFLICT {
		t.Fatalf("renaming to the default guardrail's name: %v, want EINVALID or ECONFLICT", err)
	}
}

func testGuardrailPagination(t *testing.T, open Opener) {
	f := newFixture(t, open)
	var made []*gatehouse.Guardrail
	for i, step := range []time.Duration{0, 0, time.Second, 0, time.Millisecond, 0, 0} {
		f.clock.Add(step)
		made = append(made, f.newGuardrail(t, f.org.ID, guardrail(string(rune('a'+i)))))
	}
	slices.SortStableFunc(made, func(a, b *gatehouse.Guardrail) int {
		if c := a.CreatedAt.Compare(b.CreatedAt); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	var got []string
	for offset := 0; offset < len(made)+3; offset += 3 {
		list, total, err := f.store.FindGuardrails(f.ctx, f.org.ID, "", page(offset, 3))
		ok(t, err)
		if total != len(made) {
			t.Fatalf("total = %d, want %d", total, len(made))
		}
		if want := min(3, max(0, len(made)-offset)); len(list) != want {
			t.Fatalf("page at %d has %d guardrails, want %d", offset, len(list), want)
		}
		for _, g := range list {
			got = append(got, g.ID)
		}
	}
	want := make([]string, len(made))
	for i, g := range made {
		want[i] = g.ID
	}
	wantEqual(t, "ids in page order", want, got)
}
