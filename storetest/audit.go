package storetest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// testAudit checks the audit log: one entry per successful change, written
// in the change's transaction with the actor and request id of its
// context, none for a failure or a change of nothing, and the filters and
// pages of FindAuditEntries.
func testAudit(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"EveryMutation", testAuditEveryMutation},
		{"NoEntryWithoutChange", testAuditNoEntryWithoutChange},
		{"Tenancy", testAuditTenancy},
		{"Filters", testAuditFilters},
		{"Pages", testAuditPages},
		{"NoSecrets", testAuditNoSecrets},
	})
}

// auditRun makes requests in one organization and checks the entry each
// leaves.
type auditRun struct {
	t       *testing.T
	f       *fixture
	orgID   string
	actor   *gatehouse.Actor // of the last request; nil for none
	reqID   string           // of the last request
	n       int              // requests made
	entries int              // entries the organization has
}

// newAuditRun starts checking the log of orgID from its current entries.
func (f *fixture) newAuditRun(t *testing.T, orgID string) *auditRun {
	a := &auditRun{t: t, f: f, orgID: orgID}
	a.sync()
	return a
}

// sync takes the organization's current entries as the expected ones.
func (a *auditRun) sync() { a.entries = len(a.all()) }

var auditUser = "user_auditor"

// auditActor makes the requests of auditRun.ctx.
var auditActor = gatehouse.Actor{KeyHash: gatehouse.HashKey("auditor key"), UserID: &auditUser}

// ctx returns the context of the next request, made by auditActor one
// second after the last one, with a new request id.
func (a *auditRun) ctx() context.Context {
	ctx := a.anonymous()
	a.actor = &auditActor
	return gatehouse.WithActor(ctx, auditActor)
}

// as returns the context of the next request, made by actor.
func (a *auditRun) as(actor gatehouse.Actor) context.Context {
	ctx := a.anonymous()
	a.actor = &actor
	return gatehouse.WithActor(ctx, actor)
}

// anonymous returns the context of the next request without an actor, as
// the code exchange (which needs no key) makes.
func (a *auditRun) anonymous() context.Context {
	a.n++
	a.f.clock.Add(time.Second)
	a.actor, a.reqID = nil, fmt.Sprintf("req-%d", a.n)
	return gatehouse.WithRequestID(context.Background(), a.reqID)
}

// all returns every entry of the organization, newest first.
func (a *auditRun) all() []*gatehouse.AuditEntry {
	a.t.Helper()
	list, total, err := a.f.store.FindAuditEntries(a.f.ctx, a.orgID, gatehouse.AuditFilter{Page: page(0, 100)})
	ok(a.t, err)
	if total != len(list) {
		a.t.Fatalf("FindAuditEntries: total %d, %d entries", total, len(list))
	}
	return list
}

// want checks that the last request left exactly one entry, as described.
func (a *auditRun) want(op, resourceType string, ids []string, details map[string]any) *gatehouse.AuditEntry {
	a.t.Helper()
	return a.wantResult(op, gatehouse.AuditResultSuccess, resourceType, ids, details)
}

// wantResult is want for an entry of another result.
func (a *auditRun) wantResult(op, result, resourceType string, ids []string, details map[string]any) *gatehouse.AuditEntry {
	a.t.Helper()
	list := a.all()
	if len(list) != a.entries+1 {
		a.t.Fatalf("%s: %d entries, want %d", op, len(list), a.entries+1)
	}
	a.entries++
	e := list[0]
	want := map[string]any{
		"OrganizationID": a.orgID, "At": a.f.clock.Now(), "Operation": op, "ResourceType": resourceType,
		"ResourceIDs": ids, "Details": details, "Result": result, "RequestID": nil,
		"ActorKeyHash": nil, "ActorUserID": nil, "ActorSystem": nil,
	}
	if a.reqID != "" {
		want["RequestID"] = a.reqID
	}
	if a.actor != nil {
		want["ActorUserID"] = a.actor.UserID
		if a.actor.KeyHash != "" { // a member signed in to the console acts without a key
			want["ActorKeyHash"] = a.actor.KeyHash
		}
		if a.actor.System != "" {
			want["ActorSystem"] = a.actor.System
		}
	}
	got := map[string]any{
		"OrganizationID": e.OrganizationID, "At": e.At, "Operation": e.Operation, "ResourceType": e.ResourceType,
		"ResourceIDs": e.ResourceIDs, "Details": e.Details, "Result": e.Result, "RequestID": e.RequestID,
		"ActorKeyHash": e.ActorKeyHash, "ActorUserID": e.ActorUserID, "ActorSystem": e.ActorSystem,
	}
	wantEqual(a.t, op+" entry", want, got)
	if e.ID == "" {
		a.t.Fatalf("%s: entry without id", op)
	}
	return e
}

// wantNone checks that the last request left no entry.
func (a *auditRun) wantNone(what string) {
	a.t.Helper()
	if n := len(a.all()); n != a.entries {
		a.t.Fatalf("%s: %d entries, want %d (no new one): newest %+v", what, n, a.entries, a.all()[0])
	}
}

func testAuditEveryMutation(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	act := a.ctx
	def, err := f.store.FindWorkspace(f.ctx, f.org.ID, "")
	ok(t, err)

	m1, err := f.store.CreateMember(act(), f.org.ID, gatehouse.MemberCreate{Email: "one@example.com"})
	ok(t, err)
	a.want("member.create", "member", []string{m1.ID}, nil)
	m2, err := f.store.CreateMember(act(), f.org.ID, gatehouse.MemberCreate{Email: "two@example.com"})
	ok(t, err)
	a.want("member.create", "member", []string{m2.ID}, nil)

	k, _, err := f.store.CreateKey(act(), f.org.ID, gatehouse.KeyCreate{Name: "audited", CreatorUserID: &m1.ID})
	ok(t, err)
	a.want("key.create", "key", []string{k.Hash}, map[string]any{"workspace_id": def.ID})
	_, err = f.store.UpdateKey(act(), f.org.ID, k.Hash, gatehouse.KeyUpdate{Name: gatehouse.Val("renamed"), Limit: gatehouse.Null[gatehouse.Money]()})
	ok(t, err)
	a.want("key.update", "key", []string{k.Hash}, map[string]any{"fields": []string{"name", "limit"}})
	mk, _, err := f.store.CreateManagementKey(act(), f.org.ID, "admin")
	ok(t, err)
	a.want("management_key.create", "management_key", []string{mk.Hash}, nil)

	code, err := f.store.CreateAuthCode(act(), f.org.ID, &m1.ID, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb"})
	ok(t, err)
	codeHash := gatehouse.HashKey(code.ID)
	a.want("auth_code.create", "auth_code", []string{codeHash}, map[string]any{"app_id": code.AppID, "workspace_id": def.ID})
	plaintext, _, err := f.store.ExchangeAuthCode(a.anonymous(), gatehouse.AuthCodeExchange{Code: code.ID})
	ok(t, err)
	a.actor = &gatehouse.Actor{System: gatehouse.ActorKeyExchange} // the application, with no credential
	a.want("auth_code.exchange", "key", []string{gatehouse.HashKey(plaintext)}, map[string]any{"code_hash": codeHash})

	ws, err := f.store.CreateWorkspace(act(), f.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("Team"), Slug: gatehouse.Val("team")}, nil)
	ok(t, err)
	a.want("workspace.create", "workspace", []string{ws.ID}, nil)
	_, err = f.store.UpdateWorkspace(act(), f.org.ID, "team", gatehouse.WorkspaceUpdate{Description: gatehouse.Val("secret plans")})
	ok(t, err)
	a.want("workspace.update", "workspace", []string{ws.ID}, map[string]any{"fields": []string{"description"}})
	_, _, err = f.store.AddWorkspaceMembers(act(), f.org.ID, ws.ID, []string{m1.ID, m2.ID})
	ok(t, err)
	a.want("workspace.members.add", "workspace", []string{ws.ID}, map[string]any{"user_ids": []string{m1.ID, m2.ID}, "added_count": 2})
	_, err = f.store.RemoveWorkspaceMembers(act(), f.org.ID, ws.ID, []string{m2.ID, "user_ghost"})
	ok(t, err)
	a.want("workspace.members.remove", "workspace", []string{ws.ID}, map[string]any{"user_ids": []string{m2.ID, "user_ghost"}, "removed_count": 1})

	g, err := f.store.CreateGuardrail(act(), f.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val("g")}})
	ok(t, err)
	a.want("guardrail.create", "guardrail", []string{g.ID}, map[string]any{"workspace_id": def.ID})
	_, err = f.store.UpdateGuardrail(act(), f.org.ID, g.ID, gatehouse.GuardrailUpdate{Description: gatehouse.Val("d"), AllowedModels: gatehouse.Val([]string{"openai/gpt-4o"})})
	ok(t, err)
	a.want("guardrail.update", "guardrail", []string{g.ID}, map[string]any{"fields": []string{"description", "allowed_models"}})
	defGuard := gatehouse.DefaultGuardrailID(ws.ID)
	_, err = f.store.UpdateGuardrail(act(), f.org.ID, defGuard, gatehouse.GuardrailUpdate{Description: gatehouse.Val("d")})
	ok(t, err)
	a.want("guardrail.update", "guardrail", []string{defGuard}, map[string]any{"fields": []string{"description"}, "materialized": true})
	for _, c := range []struct {
		op, list string
		ids      []string
		call     func(context.Context) (int, error)
	}{
		{"guardrail.keys.assign", "key_hashes", []string{k.Hash}, func(ctx context.Context) (int, error) {
			return f.store.AssignKeys(ctx, f.org.ID, g.ID, []string{k.Hash}, nil)
		}},
		{"guardrail.keys.unassign", "key_hashes", []string{k.Hash}, func(ctx context.Context) (int, error) {
			return f.store.UnassignKeys(ctx, f.org.ID, g.ID, []string{k.Hash})
		}},
		{"guardrail.members.assign", "member_user_ids", []string{m1.ID}, func(ctx context.Context) (int, error) {
			return f.store.AssignMembers(ctx, f.org.ID, g.ID, []string{m1.ID}, nil)
		}},
		{"guardrail.members.unassign", "member_user_ids", []string{m1.ID}, func(ctx context.Context) (int, error) {
			return f.store.UnassignMembers(ctx, f.org.ID, g.ID, []string{m1.ID})
		}},
	} {
		n, err := c.call(act())
		wantCount(t, c.op, n, err, 1)
		a.want(c.op, "guardrail", []string{g.ID}, map[string]any{c.list: c.ids, "count": 1})
	}

	d, err := f.store.CreateDestination(act(), f.org.ID, webhook("hook"))
	ok(t, err)
	a.want("destination.create", "destination", []string{d.ID}, map[string]any{"type": "webhook", "workspace_id": def.ID})
	_, err = f.store.UpdateDestination(act(), f.org.ID, d.ID, gatehouse.DestinationUpdate{
		Enabled: gatehouse.Val(false), Config: &gatehouse.ConfigPatch{Values: map[string]*string{"method": new("PUT")}}})
	ok(t, err)
	a.want("destination.update", "destination", []string{d.ID}, map[string]any{"fields": []string{"config", "enabled"}})
	ok(t, f.store.DeleteDestination(act(), f.org.ID, d.ID))
	a.want("destination.delete", "destination", []string{d.ID}, nil)

	ok(t, f.store.DeleteGuardrail(act(), f.org.ID, g.ID))
	a.want("guardrail.delete", "guardrail", []string{g.ID}, nil)
	ok(t, f.store.DeleteKey(act(), f.org.ID, k.Hash))
	a.want("key.delete", "key", []string{k.Hash}, nil)
	ok(t, f.store.DeleteWorkspace(act(), f.org.ID, "team", false))
	a.want("workspace.delete", "workspace", []string{ws.ID}, nil)
	ok(t, f.store.DeleteMember(act(), f.org.ID, m2.ID))
	a.want("member.delete", "member", []string{m2.ID}, nil)

	// From the command line: no actor, no request id.
	f.clock.Add(time.Second)
	other, err := f.store.CreateOrganization(context.Background(), "Other")
	ok(t, err)
	otherDef, err := f.store.FindWorkspace(f.ctx, other.ID, "")
	ok(t, err)
	a2 := &auditRun{t: t, f: f, orgID: other.ID}
	a2.want("organization.create", "organization", []string{other.ID}, map[string]any{"default_workspace_id": otherDef.ID})
}

func testAuditNoEntryWithoutChange(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	m := f.newMember(t, f.org.ID, "m@example.com")
	ws := f.newWorkspace(t, f.org.ID, "team")
	_, _, err := f.store.AddWorkspaceMembers(f.ctx, f.org.ID, ws.ID, []string{m.ID})
	ok(t, err)
	k := f.newKey(t, f.org.ID, gatehouse.KeyCreate{WorkspaceID: ws.ID, CreatorUserID: &m.ID})
	g, err := f.store.CreateGuardrail(f.ctx, f.org.ID, gatehouse.GuardrailCreate{GuardrailUpdate: gatehouse.GuardrailUpdate{Name: gatehouse.Val("g")},
		WorkspaceID: ws.ID})
	ok(t, err)
	_, err = f.store.AssignKeys(f.ctx, f.org.ID, g.ID, []string{k.Hash}, nil)
	ok(t, err)
	code := f.newCode(t, nil, gatehouse.AuthCodeCreate{CodeChallenge: new(strings.Repeat("c", 43)), CodeChallengeMethod: new("plain")})
	mgmtPlain := gatehouse.NewKeySecret(true)
	_, err = f.store.EnsureManagementKey(f.ctx, f.org.ID, mgmtPlain, "")
	ok(t, err)
	a.sync()

	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"CreateKey without a name", func(ctx context.Context) error {
			_, _, err := f.store.CreateKey(ctx, f.org.ID, gatehouse.KeyCreate{})
			return err
		}},
		{"RemoveWorkspaceMembers blocked by an active key", func(ctx context.Context) error {
			_, err := f.store.RemoveWorkspaceMembers(ctx, f.org.ID, ws.ID, []string{m.ID})
			return err
		}},
		{"DeleteKey of an unknown key", func(ctx context.Context) error {
			return f.store.DeleteKey(ctx, f.org.ID, gatehouse.HashKey("nothing"))
		}},
		{"DeleteMember with an active key", func(ctx context.Context) error { return f.store.DeleteMember(ctx, f.org.ID, m.ID) }},
		{"CreateWorkspace with a taken slug", func(ctx context.Context) error {
			_, err := f.store.CreateWorkspace(ctx, f.org.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("x"), Slug: gatehouse.Val("team")}, nil)
			return err
		}},
		{"ExchangeAuthCode with a wrong verifier", func(ctx context.Context) error {
			_, _, err := f.store.ExchangeAuthCode(ctx, gatehouse.AuthCodeExchange{Code: code.ID, CodeVerifier: new(strings.Repeat("d", 43))})
			return err
		}},
	} {
		if err := c.call(a.ctx()); err == nil {
			t.Fatalf("%s: no error", c.name)
		}
		a.wantNone(c.name)
	}

	// Successful calls that change nothing leave no entry either.
	for _, c := range []struct {
		name string
		call func(ctx context.Context) error
	}{
		{"UpdateKey {}", func(ctx context.Context) error {
			_, err := f.store.UpdateKey(ctx, f.org.ID, k.Hash, gatehouse.KeyUpdate{})
			return err
		}},
		{"AssignKeys again", func(ctx context.Context) error {
			_, err := f.store.AssignKeys(ctx, f.org.ID, g.ID, []string{k.Hash}, nil)
			return err
		}},
		{"UnassignMembers of an unassigned member", func(ctx context.Context) error {
			_, err := f.store.UnassignMembers(ctx, f.org.ID, g.ID, []string{m.ID})
			return err
		}},
		{"AddWorkspaceMembers of a member", func(ctx context.Context) error {
			_, _, err := f.store.AddWorkspaceMembers(ctx, f.org.ID, ws.ID, []string{m.ID})
			return err
		}},
		{"AddWorkspaceMembers to the default workspace", func(ctx context.Context) error {
			_, _, err := f.store.AddWorkspaceMembers(ctx, f.org.ID, "", []string{m.ID})
			return err
		}},
		{"EnsureManagementKey of an existing key", func(ctx context.Context) error {
			_, err := f.store.EnsureManagementKey(ctx, f.org.ID, mgmtPlain, "")
			return err
		}},
		{"EnsureOrganization with one", func(ctx context.Context) error {
			_, created, err := f.store.EnsureOrganization(ctx, "Another")
			if created {
				return fmt.Errorf("created an organization")
			}
			return err
		}},
		{"RecordUsage (metering, not management)", func(ctx context.Context) error {
			_, err := f.store.RecordUsage(ctx, k.Hash, gatehouse.Money(1000), false)
			return err
		}},
	} {
		ok(t, c.call(a.ctx()))
		a.wantNone(c.name)
	}
}

func testAuditTenancy(t *testing.T, open Opener) {
	f := newFixture(t, open)
	other := f.newOrg(t, "Other")
	b := f.newAuditRun(t, other.ID)
	mb, err := f.store.CreateMember(b.ctx(), other.ID, gatehouse.MemberCreate{Email: "b@example.com"})
	ok(t, err)
	b.want("member.create", "member", []string{mb.ID}, nil)
	wb, err := f.store.CreateWorkspace(b.ctx(), other.ID, gatehouse.WorkspaceUpdate{Name: gatehouse.Val("B"), Slug: gatehouse.Val("b")}, nil)
	ok(t, err)
	b.want("workspace.create", "workspace", []string{wb.ID}, nil)

	// The first organization sees its own creation only, however it asks.
	for _, filter := range []gatehouse.AuditFilter{
		{}, {ResourceID: mb.ID}, {ResourceID: wb.ID}, {ResourceID: other.ID}, {Actor: auditActor.KeyHash},
		{Actor: auditUser}, {ResourceType: "member"}, {ResourceType: "workspace"},
	} {
		filter.Page = page(0, 100)
		list, total, err := f.store.FindAuditEntries(f.ctx, f.org.ID, filter)
		ok(t, err)
		want := 0
		if filter == (gatehouse.AuditFilter{Page: filter.Page}) {
			want = 1
		}
		if total != want || len(list) != want {
			t.Fatalf("filter %+v: total %d, %d entries, want %d", filter, total, len(list), want)
		}
		for _, e := range list {
			if e.OrganizationID != f.org.ID || e.Operation != "organization.create" {
				t.Fatalf("filter %+v: entry %+v", filter, e)
			}
		}
	}
	_, total, err := f.store.FindAuditEntries(f.ctx, "00000000-0000-4000-8000-000000000000", gatehouse.AuditFilter{Page: page(0, 10)})
	if err != nil || total != 0 {
		t.Fatalf("unknown organization: total %d, %v", total, err)
	}
}

// auditIDs returns the first resource id of each entry.
func auditIDs(list []*gatehouse.AuditEntry) []string {
	out := []string{}
	for _, e := range list {
		out = append(out, strings.Join(e.ResourceIDs, ","))
	}
	return out
}

func testAuditFilters(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	userA := "user_a"
	actorA := gatehouse.Actor{KeyHash: gatehouse.HashKey("key a"), UserID: &userA}
	actorB := gatehouse.Actor{KeyHash: gatehouse.HashKey("key b")}
	// Members whose ids hold LIKE wildcards and differ only in case.
	ids := []string{"a%c", "abc", "a_c", "aXc", "ABC"}
	actors := []*gatehouse.Actor{&actorA, &actorB, &actorA, nil, &actorB}
	at := make([]time.Time, len(ids))
	for i, id := range ids {
		ctx := a.anonymous()
		if actors[i] != nil {
			ctx = gatehouse.WithActor(ctx, *actors[i])
		}
		at[i] = f.clock.Now()
		_, err := f.store.CreateMember(ctx, f.org.ID, gatehouse.MemberCreate{ID: id, Email: fmt.Sprintf("m%d@example.com", i)})
		ok(t, err)
	}
	ns := time.Nanosecond
	for _, c := range []struct {
		name   string
		filter gatehouse.AuditFilter
		want   []string // newest first
	}{
		{"none", gatehouse.AuditFilter{}, []string{"ABC", "aXc", "a_c", "abc", "a%c", f.org.ID}},
		{"id with %", gatehouse.AuditFilter{ResourceID: "a%c"}, []string{"a%c"}},
		{"id with _", gatehouse.AuditFilter{ResourceID: "a_c"}, []string{"a_c"}},
		{"id in another case", gatehouse.AuditFilter{ResourceID: "abc"}, []string{"abc"}},
		{"bare %", gatehouse.AuditFilter{ResourceID: "%"}, []string{}},
		{"bare _", gatehouse.AuditFilter{ResourceID: "___"}, []string{}},
		{"part of an id", gatehouse.AuditFilter{ResourceID: "a"}, []string{}},
		{"organization id", gatehouse.AuditFilter{ResourceID: f.org.ID}, []string{f.org.ID}},
		{"resource type", gatehouse.AuditFilter{ResourceType: "member"}, []string{"ABC", "aXc", "a_c", "abc", "a%c"}},
		{"unknown resource type", gatehouse.AuditFilter{ResourceType: "membe"}, []string{}},
		{"operation", gatehouse.AuditFilter{Operation: gatehouse.OpMemberCreate}, []string{"ABC", "aXc", "a_c", "abc", "a%c"}},
		{"another operation", gatehouse.AuditFilter{Operation: gatehouse.OpOrganizationCreate}, []string{f.org.ID}},
		{"operation in another case", gatehouse.AuditFilter{Operation: "MEMBER.create"}, []string{}},
		{"operation and actor", gatehouse.AuditFilter{Operation: gatehouse.OpMemberCreate, Actor: actorB.KeyHash}, []string{"ABC", "abc"}},
		{"actor key hash", gatehouse.AuditFilter{Actor: actorA.KeyHash}, []string{"a_c", "a%c"}},
		{"actor user id", gatehouse.AuditFilter{Actor: userA}, []string{"a_c", "a%c"}},
		{"actor without user", gatehouse.AuditFilter{Actor: actorB.KeyHash}, []string{"ABC", "abc"}},
		{"unknown actor", gatehouse.AuditFilter{Actor: "user_b"}, []string{}},
		{"since", gatehouse.AuditFilter{Since: &at[2]}, []string{"ABC", "aXc", "a_c"}},
		{"since just after", gatehouse.AuditFilter{Since: new(at[2].Add(ns))}, []string{"ABC", "aXc"}},
		{"since just before", gatehouse.AuditFilter{Since: new(at[2].Add(-ns))}, []string{"ABC", "aXc", "a_c"}},
		{"until", gatehouse.AuditFilter{Until: &at[2]}, []string{"abc", "a%c", f.org.ID}},
		{"until just after", gatehouse.AuditFilter{Until: new(at[2].Add(ns))}, []string{"a_c", "abc", "a%c", f.org.ID}},
		{"window", gatehouse.AuditFilter{Since: &at[1], Until: &at[3]}, []string{"a_c", "abc"}},
		{"empty window", gatehouse.AuditFilter{Since: &at[3], Until: &at[3]}, []string{}},
		{"all at once", gatehouse.AuditFilter{Since: &at[1], Actor: userA, ResourceType: "member", ResourceID: "a_c"}, []string{"a_c"}},
	} {
		c.filter.Page = page(0, 100)
		list, total, err := f.store.FindAuditEntries(f.ctx, f.org.ID, c.filter)
		ok(t, err)
		wantEqual(t, c.name, c.want, auditIDs(list))
		if total != len(c.want) {
			t.Fatalf("%s: total %d, want %d", c.name, total, len(c.want))
		}
		for _, size := range []int{1, 2, 100} {
			wantEqual(t, fmt.Sprintf("%s, searched in pages of %d", c.name, size), c.want, auditIDs(f.searchAudit(t, c.filter, size)))
		}
	}
}

func testAuditPages(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	for i := range 4 {
		_, err := f.store.CreateMember(a.ctx(), f.org.ID, gatehouse.MemberCreate{ID: fmt.Sprintf("user_%d", i), Email: fmt.Sprintf("m%d@example.com", i)})
		ok(t, err)
	}
	// Three changes in one millisecond: the newest first is then the
	// greatest id first.
	f.clock.Add(time.Second)
	for i := 4; i < 7; i++ {
		_, err := f.store.CreateMember(f.ctx, f.org.ID, gatehouse.MemberCreate{ID: fmt.Sprintf("user_%d", i), Email: fmt.Sprintf("m%d@example.com", i)})
		ok(t, err)
	}
	all := a.all()
	if len(all) != 8 {
		t.Fatalf("%d entries, want 8", len(all))
	}
	for i := 1; i < len(all); i++ {
		prev, e := all[i-1], all[i]
		if e.At.After(prev.At) || e.At.Equal(prev.At) && e.ID > prev.ID {
			t.Fatalf("entries %d and %d out of order: %s %s, %s %s", i-1, i, prev.At, prev.ID, e.At, e.ID)
		}
	}
	if got := auditIDs(all[3:]); !equalStrings(got, []string{"user_3", "user_2", "user_1", "user_0", f.org.ID}) {
		t.Fatalf("older entries = %v", got)
	}
	for _, p := range []gatehouse.Page{page(0, 3), page(3, 3), page(6, 3), page(2, 4), page(8, 3), page(100, 1)} {
		list, total, err := f.store.FindAuditEntries(f.ctx, f.org.ID, gatehouse.AuditFilter{Page: p})
		ok(t, err)
		end := min(p.Offset+p.Limit, len(all))
		want := []*gatehouse.AuditEntry{}
		if p.Offset < len(all) {
			want = all[p.Offset:end]
		}
		if total != len(all) {
			t.Fatalf("page %+v: total %d, want %d", p, total, len(all))
		}
		wantEqual(t, fmt.Sprintf("page %+v", p), want, list)
	}
	// The total counts the filtered entries.
	list, total, err := f.store.FindAuditEntries(f.ctx, f.org.ID, gatehouse.AuditFilter{Actor: auditUser, Page: page(1, 2)})
	ok(t, err)
	wantEqual(t, "filtered page", all[4:6], list)
	if total != 4 {
		t.Fatalf("filtered total %d, want 4", total)
	}
	// Cursors walk the same order, the changes of one millisecond too,
	// whole entries; an offset or a limit out of bounds is refused.
	for _, size := range []int{1, 2, 3, 8, 9} {
		wantEqual(t, fmt.Sprintf("searched in pages of %d", size), all, f.searchAudit(t, gatehouse.AuditFilter{}, size))
	}
	for _, bad := range []gatehouse.Page{page(1, 10), {Limit: -1}, {Limit: gatehouse.MaxPageSize + 1}} {
		_, err := f.store.SearchAuditEntries(f.ctx, f.org.ID, gatehouse.AuditFilter{Page: bad})
		wantCode(t, err, gatehouse.EINVALID)
	}
	for _, bad := range []gatehouse.AuditFilter{{Actor: "a\x00b"}, {Operation: "\xff"}, {ResourceType: "\x00"}, {ResourceID: "x\xffy"}} {
		_, err := f.store.SearchAuditEntries(f.ctx, f.org.ID, bad)
		wantCode(t, err, gatehouse.EINVALID)
	}
	other, err := f.store.SearchAuditEntries(f.ctx, f.newOrg(t, "Other").ID, gatehouse.AuditFilter{})
	ok(t, err)
	if len(other.Entries) != 1 || other.Entries[0].Operation != gatehouse.OpOrganizationCreate || other.Next != nil {
		t.Errorf("another organization's log: %+v", other)
	}
}

func equalStrings(a, b []string) bool { return strings.Join(a, "\x00") == strings.Join(b, "\x00") }

func testAuditNoSecrets(t *testing.T, open Opener) {
	f := newFixture(t, open)
	a := f.newAuditRun(t, f.org.ID)
	const destSecret, headerValue = "sk-lf-AUDIT-d3adb33f-secret", "Bearer AUDIT-header-7c0ffee"
	var secrets []string
	_, plain, err := f.store.CreateKey(a.ctx(), f.org.ID, gatehouse.KeyCreate{Name: "k",
		External: &gatehouse.ExternalKey{User: "ext", APIKey: new("ext-AUDIT-" + strings.Repeat("e", 40))}})
	ok(t, err)
	secrets = append(secrets, plain, "ext-AUDIT-")
	_, mgmtPlain, err := f.store.CreateManagementKey(a.ctx(), f.org.ID, "admin")
	ok(t, err)
	secrets = append(secrets, mgmtPlain)
	code, err := f.store.CreateAuthCode(a.ctx(), f.org.ID, nil, gatehouse.AuthCodeCreate{CallbackURL: "https://app.example.com/cb"})
	ok(t, err)
	exchanged, _, err := f.store.ExchangeAuthCode(a.anonymous(), gatehouse.AuthCodeExchange{Code: code.ID})
	ok(t, err)
	secrets = append(secrets, code.ID, exchanged)
	c := langfuse("sink")
	c.Config.Values["secretKey"] = new(destSecret)
	c.Config.Headers, c.Config.HeadersSet = map[string]string{"Authorization": headerValue}, true
	d, err := f.store.CreateDestination(a.ctx(), f.org.ID, c)
	ok(t, err)
	_, err = f.store.UpdateDestination(a.ctx(), f.org.ID, d.ID, gatehouse.DestinationUpdate{
		Config: &gatehouse.ConfigPatch{Values: map[string]*string{"secretKey": new(destSecret + "-2")}}})
	ok(t, err)
	secrets = append(secrets, destSecret, headerValue, "secretKey", "pk-lf-")

	all := a.all()
	if len(all) != 7 {
		t.Fatalf("%d entries, want 7", len(all))
	}
	for _, e := range all {
		data, err := json.Marshal(e)
		ok(t, err)
		for _, s := range append(secrets, "sk-gh-") {
			if strings.Contains(string(data), s) {
				t.Errorf("entry %s holds %q: %s", e.Operation, s, data)
			}
		}
	}
}

// searchAudit follows the cursors of SearchAuditEntries, pages of size,
// and returns every entry it found.
func (f *fixture) searchAudit(t *testing.T, filter gatehouse.AuditFilter, size int) []*gatehouse.AuditEntry {
	t.Helper()
	filter.Page, filter.After = page(0, size), nil
	var out []*gatehouse.AuditEntry
	for pages := 0; ; pages++ {
		if pages > 50 {
			t.Fatal("the audit log's cursors do not end")
		}
		p, err := f.store.SearchAuditEntries(f.ctx, f.org.ID, filter)
		ok(t, err)
		if len(p.Entries) > size {
			t.Fatalf("a page of %d entries, asked for %d", len(p.Entries), size)
		}
		out = append(out, p.Entries...)
		if p.Next == nil {
			return out
		}
		c, err := gatehouse.ParseAuditCursor(p.Next.String())
		ok(t, err)
		filter.After = c
	}
}
