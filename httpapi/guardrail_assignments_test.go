package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// assigned posts an assignment body and returns the count field of the answer.
func (e *testEnv) assigned(key, path, field string, body map[string]any) int {
	e.t.Helper()
	r := e.do("POST", path, key, body).want(e.t, http.StatusOK)
	m := r.json(e.t)
	resWantFields(e.t, path, m, field)
	n, ok := m[field].(float64)
	if !ok {
		e.t.Fatalf("%s: no %s in %s", path, field, r.Body)
	}
	return int(n)
}

// assignments lists assignments and returns them.
func (e *testEnv) assignments(key, path string) []map[string]any {
	e.t.Helper()
	items, total := resList(e.t, e.do("GET", path+"?limit=100", key, nil).want(e.t, http.StatusOK))
	if total != len(items) {
		e.t.Errorf("%s: total_count %d, %d items", path, total, len(items))
	}
	return items
}

// resAssignmentAPI drives one kind of guardrail assignment with the
// management key of e: kind is "keys" or "members", body the field that
// carries the ids in a request, field the id of an assignment in a listing.
type resAssignmentAPI struct {
	e                 *testEnv
	kind, body, field string
}

// path is the assignments path of guardrail g.
func (a resAssignmentAPI) path(g string) string {
	return "/api/v1/guardrails/" + g + "/assignments/" + a.kind
}

// assign assigns ids to g and returns assigned_count.
func (a resAssignmentAPI) assign(g string, ids ...string) int {
	return a.e.assigned(a.e.mgmt, a.path(g), "assigned_count", map[string]any{a.body: ids})
}

// unassign unassigns ids from g and returns unassigned_count.
func (a resAssignmentAPI) unassign(g string, ids ...string) int {
	return a.e.assigned(a.e.mgmt, a.path(g)+"/remove", "unassigned_count", map[string]any{a.body: ids})
}

// ids returns the ids assigned to g, sorted.
func (a resAssignmentAPI) ids(g string) []string {
	return resSorted(resField(a.e.assignments(a.e.mgmt, a.path(g)), a.field))
}

func TestGuardrailKeyAssignments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	team := e.createWorkspace(e.mgmt, "team")
	k1, _ := e.createKey(e.mgmt, map[string]any{"name": "key one"})
	k2, _ := e.createKey(e.mgmt, map[string]any{"name": "key two"})
	k3, _ := e.createKey(e.mgmt, map[string]any{"name": "team key", "workspace_id": team})
	a := e.createGuardrail(e.mgmt, map[string]any{"name": "A"})["id"].(string)
	b := e.createGuardrail(e.mgmt, map[string]any{"name": "B"})["id"].(string)
	c := e.createGuardrail(e.mgmt, map[string]any{"name": "C", "workspace_id": team})["id"].(string)
	api := resAssignmentAPI{e: e, kind: "keys", body: "key_hashes", field: "key_hash"}
	keys, assign, unassign, hashesOf := api.path, api.assign, api.unassign, api.ids

	if n := assign(a, k1, k2); n != 2 {
		t.Errorf("assign 2 keys: assigned_count %d", n)
	}
	list := e.assignments(e.mgmt, keys(a))
	if len(list) != 2 {
		t.Fatalf("assignments of A: %v", list)
	}
	for _, it := range list {
		resWantFields(t, "key assignment", it, "id guardrail_id key_hash key_name key_label assigned_by created_at")
		name := map[string]string{k1: "key one", k2: "key two"}[it["key_hash"].(string)]
		if it["guardrail_id"] != a || it["key_name"] != name || it["key_label"] != name || it["assigned_by"] != nil ||
			it["created_at"] != e.now() {
			t.Errorf("assignment %v", it)
		}
	}
	if n := assign(a, k1); n != 0 {
		t.Errorf("re-assign: assigned_count %d, want 0", n)
	}
	if n := assign(a, k2, k2); n != 0 {
		t.Errorf("re-assign duplicate: assigned_count %d, want 0", n)
	}
	e.tick()
	if n := assign(b, k1); n != 1 {
		t.Errorf("move k1 to B: assigned_count %d, want 1", n)
	}
	if diff := cmp.Diff([]string{k2}, hashesOf(a)); diff != "" {
		t.Errorf("A after move (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{k1}, hashesOf(b)); diff != "" {
		t.Errorf("B after move (-want +got):\n%s", diff)
	}
	if n := assign(c, k3); n != 1 {
		t.Errorf("assign in team: %d", n)
	}

	t.Run("refused keys assign nothing", func(t *testing.T) {
		e := e.sub(t)
		mgmt := gatehouse.HashKey(e.mgmt)
		_, otherKey := e.newOrg("Other")
		fk, _ := e.createKey(otherKey, map[string]any{"name": "foreign"})
		unknown := gatehouse.HashKey("sk-gh-v1-unknown")
		for _, c := range []struct {
			name   string
			hashes []string
			bad    []string
		}{
			{"other workspace", []string{k2, k3}, []string{k3}},
			{"other organization", []string{fk, k1}, []string{fk}},
			{"unknown hash", []string{unknown}, []string{unknown}},
			{"management key", []string{mgmt}, []string{mgmt}},
			{"several", []string{k3, k2, unknown}, []string{k3, unknown}},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				er := resWantError(t, e.do("POST", keys(b), e.mgmt, map[string]any{"key_hashes": c.hashes}), http.StatusBadRequest, "key_hashes")
				if diff := cmp.Diff(c.bad, resStrings(t, er.Metadata["key_hashes"])); diff != "" {
					t.Errorf("metadata.key_hashes (-want +got):\n%s", diff)
				}
			})
		}
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"malformed hash", map[string]any{"key_hashes": []string{k1, "abc"}}, "key_hashes[1]"},
			{"uppercase hash", map[string]any{"key_hashes": []string{strings.ToUpper(k1)}}, "key_hashes[0]"},
			{"empty", map[string]any{"key_hashes": []string{}}, "key_hashes"},
			{"missing", map[string]any{}, "key_hashes"},
			{"101", map[string]any{"key_hashes": resHashes(101)}, "key_hashes"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("POST", keys(b), e.mgmt, c.body), http.StatusBadRequest, c.field)
				resWantError(t, e.do("POST", keys(b)+"/remove", e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
	})

	t.Run("unassign", func(t *testing.T) {
		if n := unassign(a, k1); n != 0 {
			t.Errorf("unassign a key held by another guardrail: %d, want 0", n)
		}
		if diff := cmp.Diff([]string{k1}, hashesOf(b)); diff != "" {
			t.Errorf("B after a no-op unassign (-want +got):\n%s", diff)
		}
		if n := unassign(a, k2, k2, gatehouse.HashKey("sk-gh-v1-unknown")); n != 1 {
			t.Errorf("unassign: %d, want 1", n)
		}
		if n := unassign(a, k2); n != 0 {
			t.Errorf("unassign again: %d, want 0", n)
		}
		if got := hashesOf(a); len(got) != 0 {
			t.Errorf("A after unassign: %v", got)
		}
		assign(a, k2)
	})

	t.Run("global list is not captured by /guardrails/{id}", func(t *testing.T) {
		e := e.sub(t)
		r := e.do("GET", "/api/v1/guardrails/assignments/keys", e.mgmt, nil).want(t, http.StatusOK)
		items, total := resList(t, r)
		got := map[string]string{}
		for _, it := range items {
			got[it["key_hash"].(string)] = it["guardrail_id"].(string)
		}
		if diff := cmp.Diff(map[string]string{k1: b, k2: a, k3: c}, got); diff != "" || total != 3 {
			t.Errorf("all key assignments (total %d, want 3) (-want +got):\n%s", total, diff)
		}
		page, total := resList(t, e.do("GET", "/api/v1/guardrails/assignments/keys?offset=1&limit=1", e.mgmt, nil).want(t, http.StatusOK))
		if len(page) != 1 || total != 3 || page[0]["key_hash"] != items[1]["key_hash"] {
			t.Errorf("page = %v (total %d)", page, total)
		}
		resWantError(t, e.do("GET", "/api/v1/guardrails/assignments/keys?limit=101", e.mgmt, nil), http.StatusBadRequest, "limit")
		resWantError(t, e.do("GET", keys(a)+"?offset=-1", e.mgmt, nil), http.StatusBadRequest, "offset")
	})

	t.Run("key renamed and deleted", func(t *testing.T) {
		e := e.sub(t)
		e.do("PATCH", "/api/v1/keys/"+k1, e.mgmt, map[string]any{"name": "renamed"}).want(t, http.StatusOK)
		list := e.assignments(e.mgmt, keys(b))
		if len(list) != 1 || list[0]["key_name"] != "renamed" || list[0]["key_label"] != "renamed" {
			t.Errorf("after rename: %v", list)
		}
		resWantDeleted(t, e.do("DELETE", "/api/v1/keys/"+k1, e.mgmt, nil))
		if got := hashesOf(b); len(got) != 0 {
			t.Errorf("a deleted key's assignment remains: %v", got)
		}
		for _, it := range e.assignments(e.mgmt, "/api/v1/guardrails/assignments/keys") {
			if it["key_hash"] == k1 {
				t.Errorf("a deleted key's assignment is listed: %v", it)
			}
		}
	})
}

// resHashes returns n distinct well-formed key hashes.
func resHashes(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = gatehouse.HashKey(fmt.Sprint("key-", i))
	}
	return out
}

func TestGuardrailMemberAssignments(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m1 := e.addMember(e.mgmt, "m1@example.com")
	m2 := e.addMember(e.mgmt, "m2@example.com")
	m3 := e.addMember(e.mgmt, "m3@example.com")
	team := e.createWorkspace(e.mgmt, "team")
	a := e.createGuardrail(e.mgmt, map[string]any{"name": "A"})["id"].(string)
	b := e.createGuardrail(e.mgmt, map[string]any{"name": "B", "workspace_id": team})["id"].(string)
	api := resAssignmentAPI{e: e, kind: "members", body: "member_user_ids", field: "user_id"}
	members, assign, unassign, usersOf := api.path, api.assign, api.unassign, api.ids

	if n := assign(a, m1, m2, m1); n != 2 {
		t.Errorf("assign: %d, want 2", n)
	}
	for _, it := range e.assignments(e.mgmt, members(a)) {
		resWantFields(t, "member assignment", it, "id guardrail_id user_id organization_id assigned_by created_at")
		if it["guardrail_id"] != a || it["organization_id"] != e.org.ID || it["assigned_by"] != nil || it["created_at"] != e.now() {
			t.Errorf("assignment %v", it)
		}
	}
	if n := assign(a, m1); n != 0 {
		t.Errorf("re-assign: %d, want 0", n)
	}
	// Members need not belong to the guardrail's workspace; assigning moves them.
	if n := assign(b, m1, m3); n != 2 {
		t.Errorf("move: %d, want 2", n)
	}
	if diff := cmp.Diff([]string{m2}, usersOf(a)); diff != "" {
		t.Errorf("A (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(resSorted([]string{m1, m3}), usersOf(b)); diff != "" {
		t.Errorf("B (-want +got):\n%s", diff)
	}

	t.Run("non-members assign nothing", func(t *testing.T) {
		e := e.sub(t)
		e.unchanged("non-member", func() {
			er := resWantError(t, e.do("POST", members(a), e.mgmt, map[string]any{"member_user_ids": []string{m3, "user_ghost"}}),
				http.StatusBadRequest, "member_user_ids")
			if diff := cmp.Diff([]string{"user_ghost"}, resStrings(t, er.Metadata["member_user_ids"])); diff != "" {
				t.Errorf("metadata.member_user_ids (-want +got):\n%s", diff)
			}
		})
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"empty", map[string]any{"member_user_ids": []string{}}, "member_user_ids"},
			{"missing", map[string]any{}, "member_user_ids"},
			{"empty id", map[string]any{"member_user_ids": []string{""}}, "member_user_ids[0]"},
			{"101", map[string]any{"member_user_ids": resIDs(101, "u")}, "member_user_ids"},
			{"user_ids instead", map[string]any{"user_ids": []string{m1}}, "user_ids"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("POST", members(a), e.mgmt, c.body), http.StatusBadRequest, c.field)
				resWantError(t, e.do("POST", members(a)+"/remove", e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
	})

	t.Run("unassign", func(t *testing.T) {
		if n := unassign(a, m1, "user_ghost"); n != 0 {
			t.Errorf("unassign a member of another guardrail: %d", n)
		}
		if n := unassign(b, m1, m1); n != 1 {
			t.Errorf("unassign: %d, want 1", n)
		}
		if diff := cmp.Diff([]string{m3}, usersOf(b)); diff != "" {
			t.Errorf("B (-want +got):\n%s", diff)
		}
	})

	t.Run("global list", func(t *testing.T) {
		e := e.sub(t)
		items, total := resList(t, e.do("GET", "/api/v1/guardrails/assignments/members", e.mgmt, nil).want(t, http.StatusOK))
		got := map[string]string{}
		for _, it := range items {
			got[it["user_id"].(string)] = it["guardrail_id"].(string)
		}
		if diff := cmp.Diff(map[string]string{m2: a, m3: b}, got); diff != "" || total != 2 {
			t.Errorf("all member assignments (total %d, want 2) (-want +got):\n%s", total, diff)
		}
	})

	t.Run("a removed member's assignment disappears", func(t *testing.T) {
		e := e.sub(t)
		resWantDeleted(t, e.do("DELETE", "/api/v1/organization/members/"+m2, e.mgmt, nil))
		if got := usersOf(a); len(got) != 0 {
			t.Errorf("A = %v", got)
		}
	})
}

// TestGuardrailBadInput sends malformed guardrail and assignment requests:
// each is refused, naming what was wrong, and changes nothing.
func TestGuardrailBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.createGuardrail(e.mgmt, map[string]any{"name": "g"})["id"].(string)
	k, _ := e.createKey(e.mgmt, map[string]any{"name": "k"})
	m := e.addMember(e.mgmt, "m@example.com")
	gp := "/api/v1/guardrails/" + g
	long := strings.Repeat("a", 100_001)
	e.runBadInput(t, []resBadInput{
		resBad("malformed", "POST", "/api/v1/guardrails", `{"name":"x"`, 400, "malformed JSON"),
		resBad("not an object", "POST", "/api/v1/guardrails", `[{"name":"x"}]`, 400, "JSON object"),
		resBad("empty body", "POST", "/api/v1/guardrails", ``, 400, "request body"),
		resBad("trailing", "POST", "/api/v1/guardrails", `{"name":"x"}{"name":"y"}`, 400, "nothing after"),
		resBad("name number", "POST", "/api/v1/guardrails", `{"name":5}`, 400, "name"),
		resBad("limit string", "POST", "/api/v1/guardrails", `{"name":"x","limit_usd":"5","reset_interval":"daily"}`, 400, "limit_usd"),
		resBad("limit -1", "POST", "/api/v1/guardrails", `{"name":"x","limit_usd":-1,"reset_interval":"daily"}`, 400, "limit_usd"),
		resBad("limit huge", "POST", "/api/v1/guardrails", `{"name":"x","limit_usd":1e300,"reset_interval":"daily"}`, 400, "limit_usd"),
		resBad("reset unknown", "POST", "/api/v1/guardrails", `{"name":"x","limit_usd":1,"reset_interval":"yearly"}`, 400, "reset_interval"),
		resBad("models string", "POST", "/api/v1/guardrails", `{"name":"x","allowed_models":"openai/gpt-4o"}`, 400, "allowed_models"),
		resBad("models numbers", "POST", "/api/v1/guardrails", `{"name":"x","allowed_models":[1]}`, 400, "allowed_models"),
		resBad("zdr string", "POST", "/api/v1/guardrails", `{"name":"x","enforce_zdr":"yes"}`, 400, "enforce_zdr"),
		resBad("filters object", "POST", "/api/v1/guardrails", `{"name":"x","content_filters":{"pattern":"a"}}`, 400, "content_filters"),
		resBad("filter pattern number", "POST", "/api/v1/guardrails", `{"name":"x","content_filters":[{"pattern":1,"action":"flag"}]}`, 400, "content_filters"),
		resBad("unknown field", "POST", "/api/v1/guardrails", `{"name":"x","max_budget":5}`, 400, "max_budget"),
		resBad("unknown nested filter field", "POST", "/api/v1/guardrails", `{"name":"x","content_filters":[{"pattern":"a","action":"flag","regex":true}]}`, 400, "content_filters[0].regex"),
		resBad("unknown nested builtin field", "POST", "/api/v1/guardrails", `{"name":"x","content_filter_builtins":[{"slug":"email","action":"flag","extra":1}]}`, 400, "content_filter_builtins[0].extra"),
		resBad("duplicate key", "POST", "/api/v1/guardrails", `{"name":"x","name":"y"}`, 400, "name"),
		resBad("nested duplicate key", "POST", "/api/v1/guardrails", `{"name":"x","content_filters":[{"pattern":"a","pattern":"b","action":"flag"}]}`, 400, "content_filters[0].pattern"),
		resBad("missing name", "POST", "/api/v1/guardrails", `{}`, 400, "name"),
		resBad("null name", "POST", "/api/v1/guardrails", `{"name":null}`, 400, "name"),
		resBad("null include_byok", "POST", "/api/v1/guardrails", `{"name":"x","include_byok_in_budgets":null}`, 400, "include_byok_in_budgets"),
		resBad("null workspace_id", "POST", "/api/v1/guardrails", `{"name":"x","workspace_id":null}`, 400, "workspace_id"),
		resBad("name 201", "POST", "/api/v1/guardrails", `{"name":"`+strings.Repeat("n", 201)+`"}`, 400, "name"),
		resBad("regex 100001", "POST", "/api/v1/guardrails", `{"name":"x","content_filters":[{"pattern":"`+long+`","action":"flag"}]}`, 400, "content_filters[0].pattern"),
		resBad("regions empty", "POST", "/api/v1/guardrails", `{"name":"x","allowed_data_regions":[]}`, 400, "allowed_data_regions"),
		resBad("oversized", "POST", "/api/v1/guardrails", `{"name":"x","description":"`+strings.Repeat("d", 1<<20)+`"}`, 413, "bytes"),
		resBad("text/plain", "POST", "/api/v1/guardrails", `{"name":"x"}`, 415, "Content-Type", "text/plain"),
		resBad("unknown workspace", "POST", "/api/v1/guardrails", `{"name":"x","workspace_id":"nope"}`, 404, "workspace"),
		// update
		resBad("update malformed", "PATCH", gp, `{"name":}`, 400, "malformed JSON"),
		resBad("update workspace_id", "PATCH", gp, `{"workspace_id":"default"}`, 400, "workspace_id"),
		resBad("update id", "PATCH", gp, `{"id":"`+g+`"}`, 400, "id"),
		resBad("update wrong type", "PATCH", gp, `{"description":5}`, 400, "description"),
		resBad("update nested unknown", "PATCH", gp, `{"content_filters":[{"pattern":"a","action":"flag","x":1}]}`, 400, "content_filters[0].x"),
		resBad("update null name", "PATCH", gp, `{"name":null}`, 400, "name"),
		resBad("update duplicate", "PATCH", gp, `{"limit_usd":1,"limit_usd":2}`, 400, "limit_usd"),
		resBad("update text/plain", "PATCH", gp, `{}`, 415, "Content-Type", "text/plain"),
		resBad("update oversized", "PATCH", gp, `{"name":"`+strings.Repeat("n", 1<<20)+`"}`, 413, "bytes"),
		resBad("update non-uuid", "PATCH", "/api/v1/guardrails/not-a-uuid", `{}`, 404, "not found"),
		resBad("get non-uuid", "GET", "/api/v1/guardrails/not-a-uuid", ``, 404, "not found"),
		resBad("delete non-uuid", "DELETE", "/api/v1/guardrails/not-a-uuid", ``, 404, "not found"),
		// assignment bodies
		resBad("assign keys malformed", "POST", gp+"/assignments/keys", `{"key_hashes":[`, 400, "malformed JSON"),
		resBad("assign keys string", "POST", gp+"/assignments/keys", `{"key_hashes":"`+k+`"}`, 400, "key_hashes"),
		resBad("assign keys numbers", "POST", gp+"/assignments/keys", `{"key_hashes":[1]}`, 400, "key_hashes"),
		resBad("assign keys null", "POST", gp+"/assignments/keys", `{"key_hashes":null}`, 400, "key_hashes"),
		resBad("assign keys unknown field", "POST", gp+"/assignments/keys", `{"key_hashes":["`+k+`"],"move":true}`, 400, "move"),
		resBad("assign keys duplicate", "POST", gp+"/assignments/keys", `{"key_hashes":["`+k+`"],"key_hashes":[]}`, 400, "key_hashes"),
		resBad("assign keys bad hash", "POST", gp+"/assignments/keys", `{"key_hashes":["xyz"]}`, 400, "key_hashes[0]"),
		resBad("assign keys text/plain", "POST", gp+"/assignments/keys", `{"key_hashes":["`+k+`"]}`, 415, "Content-Type", "text/plain"),
		resBad("assign keys oversized", "POST", gp+"/assignments/keys", `{"key_hashes":["`+strings.Repeat("a", 1<<20)+`"]}`, 413, "bytes"),
		resBad("assign keys non-uuid", "POST", "/api/v1/guardrails/x/assignments/keys", `{"key_hashes":["`+k+`"]}`, 404, "not found"),
		resBad("unassign keys wrong type", "POST", gp+"/assignments/keys/remove", `{"key_hashes":{}}`, 400, "key_hashes"),
		resBad("unassign keys empty", "POST", gp+"/assignments/keys/remove", `{"key_hashes":[]}`, 400, "key_hashes"),
		resBad("unassign keys non-uuid", "POST", "/api/v1/guardrails/x/assignments/keys/remove", `{"key_hashes":["`+k+`"]}`, 404, "not found"),
		resBad("assign members string", "POST", gp+"/assignments/members", `{"member_user_ids":"`+m+`"}`, 400, "member_user_ids"),
		resBad("assign members unknown field", "POST", gp+"/assignments/members", `{"member_user_ids":["`+m+`"],"role":"x"}`, 400, "role"),
		resBad("assign members blank", "POST", gp+"/assignments/members", `{"member_user_ids":[" "]}`, 400, "member_user_ids[0]"),
		resBad("assign members null", "POST", gp+"/assignments/members", `{"member_user_ids":null}`, 400, "member_user_ids"),
		resBad("assign members text/plain", "POST", gp+"/assignments/members", `{"member_user_ids":["`+m+`"]}`, 415, "Content-Type", "text/plain"),
		resBad("assign members non-member", "POST", gp+"/assignments/members", `{"member_user_ids":["`+m+`","nobody"]}`, 400, "nobody"),
		resBad("unassign members malformed", "POST", gp+"/assignments/members/remove", `{"member_user_ids":["a",]}`, 400, "malformed JSON"),
		resBad("unassign members non-uuid", "POST", "/api/v1/guardrails/x/assignments/members/remove", `{"member_user_ids":["`+m+`"]}`, 404, "not found"),
		resBad("list keys non-uuid", "GET", "/api/v1/guardrails/x/assignments/keys", ``, 404, "not found"),
		resBad("list members unknown", "GET", "/api/v1/guardrails/00000000-0000-4000-8000-000000000000/assignments/members", ``, 404, "not found"),
	})
}
