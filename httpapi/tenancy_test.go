package httpapi_test

import (
	"context"
	"net/http"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// resTenant is an organization with one of everything.
type resTenant struct {
	name        string
	orgID       string
	mgmt        string
	def         string // default workspace id
	defGuard    string // the default workspace's default guardrail, configured
	ws, slug    string // another workspace
	wsGuard     string // its default guardrail id, never configured
	member      string // member of ws, holds key, assigned to guardrail
	other       string // member of the organization only
	key         string // key hash in ws, created by member
	defKey      string // key hash in the default workspace
	guardrail   string // in ws, with key and member assigned
	destination string // in ws
	invitation  string // a pending invitation's id
}

// newTenant fills an organization whose management key is mgmt.
func (e *testEnv) newTenant(name, orgID, mgmt, slug string) resTenant {
	e.t.Helper()
	tn := resTenant{name: name, orgID: orgID, mgmt: mgmt, slug: slug}
	def := e.workspace(mgmt, "default")
	tn.def = def["id"].(string)
	tn.defGuard = def["default_guardrail_id"].(string)
	e.do("PATCH", "/api/v1/guardrails/"+tn.defGuard, mgmt, map[string]any{"allowed_providers": []any{"openai"}}).want(e.t, http.StatusOK)
	w := e.postWorkspace(mgmt, map[string]any{"name": name + " team", "slug": slug})
	tn.ws, tn.wsGuard = w["id"].(string), w["default_guardrail_id"].(string)
	tn.member = e.addMember(mgmt, slug+"-member@example.com")
	tn.other = e.addMember(mgmt, slug+"-other@example.com")
	e.addToWorkspace(mgmt, tn.ws, tn.member)
	tn.key, _ = e.createKey(mgmt, map[string]any{"name": name + " key", "workspace_id": tn.ws, "creator_user_id": tn.member})
	tn.defKey, _ = e.createKey(mgmt, map[string]any{"name": name + " default key"})
	tn.guardrail = e.createGuardrail(mgmt, map[string]any{"name": name + " guardrail", "workspace_id": tn.ws})["id"].(string)
	gp := "/api/v1/guardrails/" + tn.guardrail + "/assignments/"
	e.do("POST", gp+"keys", mgmt, map[string]any{"key_hashes": []string{tn.key}}).want(e.t, http.StatusOK)
	e.do("POST", gp+"members", mgmt, map[string]any{"member_user_ids": []string{tn.member}}).want(e.t, http.StatusOK)
	e.do("POST", "/api/v1/guardrails/"+tn.defGuard+"/assignments/keys", mgmt, map[string]any{"key_hashes": []string{tn.defKey}}).
		want(e.t, http.StatusOK)
	tn.destination = e.createDestination(mgmt, map[string]any{"name": name + " sink", "type": "langfuse", "workspace_id": tn.ws,
		"config": map[string]any{"publicKey": "pk-" + slug, "secretKey": "sk-lf-" + slug + "-0123456789"}})["id"].(string)
	tn.invitation = e.invite(mgmt, slug+"-invitee@example.com", "").ID
	return tn
}

// ids are every identifier of the tenant that another must never see.
func (tn resTenant) ids() []string {
	return []string{tn.orgID, tn.def, tn.defGuard, tn.ws, tn.member, tn.other, tn.key, tn.defKey, tn.guardrail, tn.destination,
		tn.name + " key", tn.name + " guardrail", tn.name + " sink", tn.slug + "-member@example.com",
		tn.invitation, tn.slug + "-invitee@example.com"}
}

// TestTenancy checks that one organization's management key can neither
// see nor touch another organization's resources: every id of the other
// organization is 404, exactly like an unknown one.
func TestTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	orgB, mgmtB := e.newOrg("Org B")
	a := e.newTenant("Alpha", e.org.ID, e.mgmt, "alpha")
	b := e.newTenant("Beta", orgB.ID, mgmtB, "beta")

	for _, pair := range []struct{ attacker, victim resTenant }{{b, a}, {a, b}} {
		attacker, victim := pair.attacker, pair.victim
		t.Run(attacker.name+" on "+victim.name, func(t *testing.T) {
			e := e.sub(t)
			e.tenancyByID(t, attacker, victim)
			e.tenancyLists(t, attacker, victim)
			e.tenancyCrossLinks(t, attacker, victim)
		})
	}
	// Both organizations still have everything.
	for _, tn := range []resTenant{a, b} {
		e.do("GET", "/api/v1/keys/"+tn.key, tn.mgmt, nil).want(t, http.StatusOK)
		e.do("GET", "/api/v1/guardrails/"+tn.guardrail, tn.mgmt, nil).want(t, http.StatusOK)
		e.do("GET", "/api/v1/observability/destinations/"+tn.destination, tn.mgmt, nil).want(t, http.StatusOK)
		if diff := cmp.Diff([]string{tn.member}, e.workspaceMembers(tn.mgmt, tn.slug)); diff != "" {
			t.Errorf("%s members (-want +got):\n%s", tn.name, diff)
		}
		if n := len(e.assignments(tn.mgmt, "/api/v1/guardrails/"+tn.guardrail+"/assignments/members")); n != 1 {
			t.Errorf("%s member assignments: %d", tn.name, n)
		}
	}
}

// tenancyByID sends every operation that names a resource by id, with
// the attacker's key and the victim's ids: each is 404 and changes nothing.
func (e *testEnv) tenancyByID(t *testing.T, attacker, victim resTenant) {
	t.Helper()
	type op struct {
		method, path string
		body         any
	}
	var ops []op
	for _, hash := range []string{victim.key, victim.defKey, gatehouse.HashKey(victim.mgmt)} {
		ops = append(ops,
			op{"GET", "/api/v1/keys/" + hash, nil},
			op{"PATCH", "/api/v1/keys/" + hash, map[string]any{"disabled": true}},
			op{"DELETE", "/api/v1/keys/" + hash, nil})
	}
	for _, ref := range []string{victim.ws, victim.slug, victim.def} {
		w := "/api/v1/workspaces/" + ref
		ops = append(ops,
			op{"GET", w, nil},
			op{"PATCH", w, map[string]any{"name": "taken over"}},
			op{"DELETE", w, nil},
			op{"DELETE", w + "?confirm_default_workspace_deletion=true", nil},
			op{"GET", w + "/members", nil},
			op{"POST", w + "/members/add", map[string]any{"user_ids": []string{attacker.other}}},
			op{"POST", w + "/members/remove", map[string]any{"user_ids": []string{victim.member, attacker.member}}})
	}
	for _, g := range []string{victim.guardrail, victim.defGuard, victim.wsGuard} {
		p := "/api/v1/guardrails/" + g
		ops = append(ops,
			op{"GET", p, nil},
			op{"PATCH", p, map[string]any{"description": "taken over"}},
			op{"PATCH", p, map[string]any{}},
			op{"DELETE", p, nil},
			op{"GET", p + "/assignments/keys", nil},
			op{"POST", p + "/assignments/keys", map[string]any{"key_hashes": []string{attacker.key}}},
			op{"POST", p + "/assignments/keys/remove", map[string]any{"key_hashes": []string{victim.key, victim.defKey}}},
			op{"GET", p + "/assignments/members", nil},
			op{"POST", p + "/assignments/members", map[string]any{"member_user_ids": []string{attacker.member}}},
			op{"POST", p + "/assignments/members/remove", map[string]any{"member_user_ids": []string{victim.member}}})
	}
	d := "/api/v1/observability/destinations/" + victim.destination
	ops = append(ops,
		op{"GET", d, nil},
		op{"PATCH", d, map[string]any{"enabled": false}},
		op{"PATCH", d, map[string]any{"config": map[string]any{"secretKey": "sk-mine"}}},
		op{"DELETE", d, nil},
		op{"DELETE", d, map[string]any{}},
		op{"DELETE", "/api/v1/organization/members/" + victim.member, nil},
		op{"DELETE", "/api/v1/organization/members/" + victim.other, nil},
		op{"DELETE", "/api/v1/organization/invitations/" + victim.invitation, nil})
	for _, user := range []string{victim.member, victim.other} {
		ops = append(ops,
			op{"PATCH", "/api/v1/organization/members/" + user, map[string]any{"role": "org:admin"}},
			op{"POST", "/api/v1/organization/members/" + user + "/password-reset", nil})
	}

	e.unchanged("foreign ids", func() {
		for _, o := range ops {
			r := e.do(o.method, o.path, attacker.mgmt, o.body)
			if r.Status != http.StatusNotFound {
				t.Errorf("%s %s with %s's key: status %d, want 404; body %s", o.method, o.path, attacker.name, r.Status, r.Body)
				continue
			}
			for _, id := range victim.ids() {
				if id != "" && strings.Contains(r.errorMessage(t), id) && !strings.Contains(o.path, id) {
					t.Errorf("%s %s: the 404 names %q", o.method, o.path, id)
				}
			}
		}
	})
}

// tenancyLists checks that no list the attacker calls shows the victim's
// rows, and that filtering by the victim's workspace is 404.
func (e *testEnv) tenancyLists(t *testing.T, attacker, victim resTenant) {
	t.Helper()
	e.unchanged("foreign lists", func() {
		for _, path := range []string{
			"/api/v1/keys", "/api/v1/keys?include_disabled=true", "/api/v1/workspaces", "/api/v1/workspaces/default/members",
			"/api/v1/workspaces/" + attacker.slug + "/members", "/api/v1/guardrails", "/api/v1/guardrails?workspace_id=" + attacker.ws,
			"/api/v1/guardrails/assignments/keys", "/api/v1/guardrails/assignments/members",
			"/api/v1/observability/destinations", "/api/v1/observability/destinations?workspace_id=" + attacker.ws,
			"/api/v1/organization/members", "/api/v1/organization/invitations", "/api/v1/key",
		} {
			r := e.do("GET", path, attacker.mgmt, nil).want(t, http.StatusOK)
			for _, id := range victim.ids() {
				if strings.Contains(string(r.Body), id) {
					t.Errorf("GET %s with %s's key shows %s's %q", path, attacker.name, victim.name, id)
				}
			}
		}
		for _, path := range []string{"/api/v1/keys", "/api/v1/guardrails", "/api/v1/observability/destinations"} {
			for _, ref := range []string{victim.ws, victim.def, victim.slug} {
				resWantError(t, e.do("GET", path+"?workspace_id="+ref, attacker.mgmt, nil), http.StatusNotFound, "workspace")
			}
		}
	})
	// The attacker's own lists hold exactly its own rows.
	items, _ := resList(t, e.do("GET", "/api/v1/guardrails/assignments/keys", attacker.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff(resSorted([]string{attacker.key, attacker.defKey}), resSorted(resField(items, "key_hash"))); diff != "" {
		t.Errorf("%s key assignments (-want +got):\n%s", attacker.name, diff)
	}
	items, _ = resList(t, e.do("GET", "/api/v1/organization/members", attacker.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff(resSorted([]string{attacker.member, attacker.other}), resSorted(resField(items, "id"))); diff != "" {
		t.Errorf("%s organization members (-want +got):\n%s", attacker.name, diff)
	}
}

// tenancyCrossLinks checks that the attacker cannot link the victim's
// keys, members or workspaces to its own resources.
func (e *testEnv) tenancyCrossLinks(t *testing.T, attacker, victim resTenant) {
	t.Helper()
	own := "/api/v1/guardrails/" + attacker.guardrail + "/assignments/"
	e.unchanged("cross links", func() {
		er := resWantError(t, e.do("POST", own+"keys", attacker.mgmt, map[string]any{"key_hashes": []string{attacker.key, victim.key}}),
			http.StatusBadRequest, "key_hashes")
		if diff := cmp.Diff([]string{victim.key}, resStrings(t, er.Metadata["key_hashes"])); diff != "" {
			t.Errorf("metadata.key_hashes (-want +got):\n%s", diff)
		}
		er = resWantError(t, e.do("POST", own+"members", attacker.mgmt,
			map[string]any{"member_user_ids": []string{attacker.other, victim.member}}), http.StatusBadRequest, "member_user_ids")
		if diff := cmp.Diff([]string{victim.member}, resStrings(t, er.Metadata["member_user_ids"])); diff != "" {
			t.Errorf("metadata.member_user_ids (-want +got):\n%s", diff)
		}
		er = resWantError(t, e.do("POST", "/api/v1/workspaces/"+attacker.ws+"/members/add", attacker.mgmt,
			map[string]any{"user_ids": []string{attacker.other, victim.other}}), http.StatusBadRequest, "user_ids")
		if diff := cmp.Diff([]string{victim.other}, resStrings(t, er.Metadata["user_ids"])); diff != "" {
			t.Errorf("metadata.user_ids (-want +got):\n%s", diff)
		}
		resWantError(t, e.do("POST", "/api/v1/workspaces/default/members/add", attacker.mgmt,
			map[string]any{"user_ids": []string{victim.member}}), http.StatusBadRequest, "user_ids")
		// Unassigning the victim's keys from one's own guardrail changes nothing.
		var out struct {
			UnassignedCount int `json:"unassigned_count"`
		}
		e.do("POST", own+"keys/remove", attacker.mgmt, map[string]any{"key_hashes": []string{victim.key}}).
			want(t, http.StatusOK).decode(t, &out)
		if out.UnassignedCount != 0 {
			t.Errorf("unassigned_count = %d", out.UnassignedCount)
		}
		for _, ref := range []string{victim.ws, victim.slug} {
			resWantError(t, e.do("POST", "/api/v1/keys", attacker.mgmt, map[string]any{"name": "x", "workspace_id": ref}),
				http.StatusNotFound, "workspace")
			resWantError(t, e.do("POST", "/api/v1/guardrails", attacker.mgmt, map[string]any{"name": "x", "workspace_id": ref}),
				http.StatusNotFound, "workspace")
			resWantError(t, e.do("POST", "/api/v1/observability/destinations", attacker.mgmt, map[string]any{"name": "x",
				"type": "webhook", "workspace_id": ref, "config": map[string]any{"url": "https://e.com"}}), http.StatusNotFound, "workspace")
		}
		resWantError(t, e.do("POST", "/api/v1/keys", attacker.mgmt, map[string]any{"name": "x", "creator_user_id": victim.member}),
			http.StatusBadRequest, "creator_user_id")
	})
	// Removing the victim's member from one's own workspace removes nobody.
	var out struct {
		RemovedCount int `json:"removed_count"`
	}
	e.unchanged("remove a foreign member", func() {
		e.do("POST", "/api/v1/workspaces/"+attacker.ws+"/members/remove", attacker.mgmt,
			map[string]any{"user_ids": []string{victim.member}}).want(t, http.StatusOK).decode(t, &out)
	})
	if out.RemovedCount != 0 {
		t.Errorf("removed_count = %d", out.RemovedCount)
	}
}

// TestTenancySharedUserID checks that a user id used by two organizations
// names two different members.
func TestTenancySharedUserID(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	_, mgmtB := e.newOrg("Org B")
	for _, key := range []string{e.mgmt, mgmtB} {
		e.do("POST", "/api/v1/organization/members", key, map[string]any{"id": "user_shared", "email": "shared@example.com"}).
			want(t, http.StatusCreated)
	}
	wsA := e.createWorkspace(e.mgmt, "team")
	wsB := e.createWorkspace(mgmtB, "team")
	e.addToWorkspace(e.mgmt, wsA, "user_shared")
	e.addToWorkspace(mgmtB, wsB, "user_shared")
	gA := e.createGuardrail(e.mgmt, map[string]any{"name": "g"})["id"].(string)
	gB := e.createGuardrail(mgmtB, map[string]any{"name": "g"})["id"].(string)
	for _, c := range []struct{ key, g string }{{e.mgmt, gA}, {mgmtB, gB}} {
		if n := e.assigned(c.key, "/api/v1/guardrails/"+c.g+"/assignments/members", "assigned_count",
			map[string]any{"member_user_ids": []string{"user_shared"}}); n != 1 {
			t.Errorf("assigned_count = %d, want 1 in each organization", n)
		}
	}
	e.createKey(e.mgmt, map[string]any{"name": "k", "creator_user_id": "user_shared", "workspace_id": wsA})

	// B's role change and password reset of its user_shared leave A's, and
	// A's console session of it, alone.
	_, sessionA, err := e.db.CreateSession(context.Background(), gatehouse.SessionCreate{OrganizationID: e.org.ID, UserID: new("user_shared")})
	if err != nil {
		t.Fatal(err)
	}
	e.do("PATCH", "/api/v1/organization/members/user_shared", mgmtB, map[string]any{"role": "org:admin"}).want(t, http.StatusOK)
	e.do("POST", "/api/v1/organization/members/user_shared/password-reset", mgmtB, nil).want(t, http.StatusCreated)
	if s, err := e.db.FindSession(context.Background(), sessionA); err != nil || s.Role != gatehouse.RoleMember {
		t.Errorf("A's session after B's changes: %+v, %v", s, err)
	}

	// B's member has no key, so B can remove it; A's member and its
	// membership, assignment and key stay.
	var out struct {
		RemovedCount int `json:"removed_count"`
	}
	e.do("POST", "/api/v1/workspaces/team/members/remove", mgmtB, map[string]any{"user_ids": []string{"user_shared"}}).
		want(t, http.StatusOK).decode(t, &out)
	if out.RemovedCount != 1 {
		t.Errorf("B removed_count = %d", out.RemovedCount)
	}
	resWantDeleted(t, e.do("DELETE", "/api/v1/organization/members/user_shared", mgmtB, nil))
	if diff := cmp.Diff([]string{"user_shared"}, e.workspaceMembers(e.mgmt, "team")); diff != "" {
		t.Errorf("A's workspace members (-want +got):\n%s", diff)
	}
	if a := e.assignments(e.mgmt, "/api/v1/guardrails/"+gA+"/assignments/members"); len(a) != 1 {
		t.Errorf("A's member assignments = %v", a)
	}
	if a := e.assignments(mgmtB, "/api/v1/guardrails/assignments/members"); len(a) != 0 {
		t.Errorf("B's member assignments = %v", a)
	}
	items, _ := resList(t, e.do("GET", "/api/v1/organization/members", e.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff([]string{"user_shared"}, resField(items, "id")); diff != "" {
		t.Errorf("A's members (-want +got):\n%s", diff)
	}
	// In A the same id is still blocked by its key.
	e.unchanged("A's member with a key", func() {
		resWantError(t, e.do("POST", "/api/v1/workspaces/team/members/remove", e.mgmt,
			map[string]any{"user_ids": []string{"user_shared"}}), http.StatusBadRequest, "user_shared")
	})
}
