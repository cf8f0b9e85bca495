package httpapi_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWorkspaceMembers(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	admin := e.addMemberAs(e.mgmt, "admin@example.com", "org:admin")
	e.tick()
	m1 := e.addMember(e.mgmt, "m1@example.com")
	e.tick()
	m2 := e.addMember(e.mgmt, "m2@example.com")
	def := e.workspace(e.mgmt, "default")["id"].(string)
	ws := e.createWorkspace(e.mgmt, "team")

	t.Run("default workspace lists every member", func(t *testing.T) {
		e := e.sub(t)
		items, total := resList(t, e.do("GET", "/api/v1/workspaces/default/members", e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff([]string{admin, m1, m2}, resField(items, "user_id")); diff != "" || total != 3 {
			t.Fatalf("default members (total %d, want 3) (-want +got):\n%s", total, diff)
		}
		for _, it := range items {
			resWantFields(t, "membership", it, "id workspace_id user_id role created_at")
			wantRole := "member"
			if it["user_id"] == admin {
				wantRole = "admin"
			}
			if it["workspace_id"] != def || it["role"] != wantRole {
				t.Errorf("membership %v: want workspace %s role %s", it, def, wantRole)
			}
		}
		items, total = resList(t, e.do("GET", "/api/v1/workspaces/"+def+"/members?offset=1&limit=1", e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff([]string{m1}, resField(items, "user_id")); diff != "" || total != 3 {
			t.Errorf("page 2 of default members (total %d, want 3) (-want +got):\n%s", total, diff)
		}
	})

	t.Run("another workspace lists only its members", func(t *testing.T) {
		e := e.sub(t)
		r := e.do("GET", "/api/v1/workspaces/team/members", e.mgmt, nil).want(t, http.StatusOK)
		if items, total := resList(t, r); len(items) != 0 || total != 0 {
			t.Errorf("members of a new workspace: %v (total %d)", items, total)
		}
	})

	t.Run("bulk add", func(t *testing.T) {
		e := e.sub(t)
		var out struct {
			AddedCount int              `json:"added_count"`
			Data       []map[string]any `json:"data"`
		}
		r := e.do("POST", "/api/v1/workspaces/team/members/add", e.mgmt, map[string]any{"user_ids": []string{admin, m1}}).
			want(t, http.StatusOK)
		resWantFields(t, "bulk add", r.json(t), "added_count data")
		r.decode(t, &out)
		if diff := cmp.Diff(resSorted([]string{admin, m1}), resSorted(resField(out.Data, "user_id"))); diff != "" || out.AddedCount != 2 {
			t.Errorf("add (added_count %d, want 2) (-want +got):\n%s", out.AddedCount, diff)
		}
		for _, it := range out.Data {
			if it["workspace_id"] != ws || it["created_at"] != e.now() {
				t.Errorf("membership %v", it)
			}
			if (it["user_id"] == admin) != (it["role"] == "admin") {
				t.Errorf("membership role %v", it)
			}
		}
		out.Data = nil
		e.do("POST", "/api/v1/workspaces/"+ws+"/members/add", e.mgmt, map[string]any{"user_ids": []string{m1, m2, m2}}).
			want(t, http.StatusOK).decode(t, &out)
		if diff := cmp.Diff(resSorted([]string{m1, m2}), resSorted(resField(out.Data, "user_id"))); diff != "" || out.AddedCount != 1 {
			t.Errorf("add with one already a member (added_count %d, want 1) (-want +got):\n%s", out.AddedCount, diff)
		}
		out.Data = nil
		e.do("POST", "/api/v1/workspaces/team/members/add", e.mgmt, map[string]any{"user_ids": []string{admin}}).
			want(t, http.StatusOK).decode(t, &out)
		if diff := cmp.Diff([]string{admin}, resField(out.Data, "user_id")); diff != "" || out.AddedCount != 0 {
			t.Errorf("re-add (added_count %d, want 0) (-want +got):\n%s", out.AddedCount, diff)
		}
		if diff := cmp.Diff(resSorted([]string{admin, m1, m2}), e.workspaceMembers(e.mgmt, "team")); diff != "" {
			t.Errorf("members (-want +got):\n%s", diff)
		}
	})

	t.Run("unknown users add nobody", func(t *testing.T) {
		e := e.sub(t)
		fresh := e.createWorkspace(e.mgmt, "fresh")
		e.unchanged("add unknown", func() {
			er := resWantError(t, e.do("POST", "/api/v1/workspaces/fresh/members/add", e.mgmt,
				map[string]any{"user_ids": []string{m1, "user_ghost", m2, "user_phantom"}}), http.StatusBadRequest, "user_ids")
			if diff := cmp.Diff([]string{"user_ghost", "user_phantom"}, resStrings(t, er.Metadata["user_ids"])); diff != "" {
				t.Errorf("metadata.user_ids (-want +got):\n%s", diff)
			}
		})
		if got := e.workspaceMembers(e.mgmt, fresh); len(got) != 0 {
			t.Errorf("members after a refused add = %v", got)
		}
	})

	t.Run("adding to the default workspace counts 0", func(t *testing.T) {
		e := e.sub(t)
		var out struct {
			AddedCount int              `json:"added_count"`
			Data       []map[string]any `json:"data"`
		}
		e.unchanged("add to default", func() {
			e.do("POST", "/api/v1/workspaces/default/members/add", e.mgmt, map[string]any{"user_ids": []string{m1}}).
				want(t, http.StatusOK).decode(t, &out)
		})
		if out.AddedCount != 0 || len(out.Data) != 1 || out.Data[0]["user_id"] != m1 || out.Data[0]["workspace_id"] != def {
			t.Errorf("add to default = %d %v", out.AddedCount, out.Data)
		}
		e.unchanged("add unknown to default", func() {
			resWantError(t, e.do("POST", "/api/v1/workspaces/default/members/add", e.mgmt,
				map[string]any{"user_ids": []string{"user_ghost"}}), http.StatusBadRequest, "user_ghost")
		})
	})

	t.Run("unknown workspace", func(t *testing.T) {
		e := e.sub(t)
		e.unchanged("unknown workspace", func() {
			resWantError(t, e.do("GET", "/api/v1/workspaces/nope/members", e.mgmt, nil), http.StatusNotFound, "not found")
			resWantError(t, e.do("POST", "/api/v1/workspaces/nope/members/add", e.mgmt,
				map[string]any{"user_ids": []string{m1}}), http.StatusNotFound, "not found")
			resWantError(t, e.do("POST", "/api/v1/workspaces/nope/members/remove", e.mgmt,
				map[string]any{"user_ids": []string{m1}}), http.StatusNotFound, "not found")
		})
	})

	t.Run("list bounds", func(t *testing.T) {
		e := e.sub(t)
		for _, q := range []string{"offset=-1", "limit=0", "limit=101", "limit=a"} {
			resWantError(t, e.do("GET", "/api/v1/workspaces/team/members?"+q, e.mgmt, nil), http.StatusBadRequest, strings.Split(q, "=")[0])
		}
	})
}

// TestWorkspaceMembersRemove checks the seed rule: members with an active
// key in the workspace cannot be removed, and then nobody is.
func TestWorkspaceMembersRemove(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m1 := e.addMember(e.mgmt, "m1@example.com")
	m2 := e.addMember(e.mgmt, "m2@example.com")
	m3 := e.addMember(e.mgmt, "m3@example.com")
	m4 := e.addMember(e.mgmt, "m4@example.com") // never joins the workspace
	ws := e.createWorkspace(e.mgmt, "team")
	e.addToWorkspace(e.mgmt, ws, m1, m2, m3)
	remove := func(ids ...string) *response {
		return e.do("POST", "/api/v1/workspaces/"+ws+"/members/remove", e.mgmt, map[string]any{"user_ids": ids})
	}

	k1, _ := e.createKey(e.mgmt, map[string]any{"name": "m1 key", "creator_user_id": m1, "workspace_id": ws})
	k2, _ := e.createKey(e.mgmt, map[string]any{"name": "m2 key", "creator_user_id": m2, "workspace_id": "team"})
	// A key in another workspace does not hold m3 here.
	e.createKey(e.mgmt, map[string]any{"name": "m3 elsewhere", "creator_user_id": m3})

	// The same call, three times: blocked by m1 and m2, then by m2 only,
	// then allowed. Blocked, it removes nobody, m4 and the unknown id included.
	call := []string{m1, m2, m1, m4, "user_ghost"}
	e.unchanged("remove blocked", func() {
		er := resWantError(t, remove(call...), http.StatusBadRequest, "active")
		if diff := cmp.Diff(resSorted([]string{m1, m2}), resStrings(t, er.Metadata["user_ids"])); diff != "" {
			t.Errorf("metadata.user_ids (-want +got):\n%s", diff)
		}
	})
	if diff := cmp.Diff(resSorted([]string{m1, m2, m3}), e.workspaceMembers(e.mgmt, ws)); diff != "" {
		t.Fatalf("members after a blocked remove (-want +got):\n%s", diff)
	}
	// m3's key is in another workspace: removing m3 alone would work, but
	// with m1 in the call nobody goes.
	e.unchanged("remove blocked with a removable member", func() {
		resWantError(t, remove(m3, m1), http.StatusBadRequest, m1)
	})

	e.do("PATCH", "/api/v1/keys/"+k1, e.mgmt, map[string]any{"disabled": true}).want(t, http.StatusOK)
	e.unchanged("still blocked by m2", func() {
		er := resWantError(t, remove(call...), http.StatusBadRequest, m2)
		if diff := cmp.Diff([]string{m2}, resStrings(t, er.Metadata["user_ids"])); diff != "" {
			t.Errorf("metadata.user_ids (-want +got):\n%s", diff)
		}
	})
	// A deleted key does not count either.
	resWantDeleted(t, e.do("DELETE", "/api/v1/keys/"+k2, e.mgmt, nil))

	var out struct {
		RemovedCount int `json:"removed_count"`
	}
	r := remove(call...).want(t, http.StatusOK)
	resWantFields(t, "bulk remove", r.json(t), "removed_count")
	r.decode(t, &out)
	if out.RemovedCount != 2 {
		t.Errorf("removed_count = %d, want 2 (duplicates once, non-members skipped)", out.RemovedCount)
	}
	if diff := cmp.Diff([]string{m3}, e.workspaceMembers(e.mgmt, ws)); diff != "" {
		t.Errorf("members after remove (-want +got):\n%s", diff)
	}
	// Removing from the workspace does not remove from the organization.
	items, _ := resList(t, e.do("GET", "/api/v1/organization/members", e.mgmt, nil).want(t, http.StatusOK))
	if len(items) != 4 {
		t.Errorf("organization members after remove: %d, want 4", len(items))
	}
	out.RemovedCount = -1
	remove(m1, m4).want(t, http.StatusOK).decode(t, &out)
	if out.RemovedCount != 0 {
		t.Errorf("removing non-members: removed_count = %d, want 0", out.RemovedCount)
	}

	t.Run("expired key does not block", func(t *testing.T) {
		e := e.sub(t)
		e.createKey(e.mgmt, map[string]any{"name": "m3 expiring", "creator_user_id": m3, "workspace_id": ws,
			"expires_at": e.clock.Now().Add(time.Hour).Format(time.RFC3339)})
		e.unchanged("blocked before expiry", func() {
			resWantError(t, remove(m3), http.StatusBadRequest, m3)
		})
		e.clock.Set(e.clock.Now().Add(time.Hour))
		out.RemovedCount = 0
		remove(m3).want(t, http.StatusOK).decode(t, &out)
		if out.RemovedCount != 1 {
			t.Errorf("removed_count = %d, want 1", out.RemovedCount)
		}
	})

	t.Run("bad id lists", func(t *testing.T) {
		e := e.sub(t)
		e.addToWorkspace(e.mgmt, ws, m1)
		for _, c := range []struct {
			name  string
			body  any
			field string
		}{
			{"empty", map[string]any{"user_ids": []string{}}, "user_ids"},
			{"missing", map[string]any{}, "user_ids"},
			{"null", map[string]any{"user_ids": nil}, "user_ids"},
			{"101", map[string]any{"user_ids": resIDs(101, "user_")}, "user_ids"},
			{"empty string", map[string]any{"user_ids": []string{m1, ""}}, "user_ids[1]"},
			{"blank", map[string]any{"user_ids": []string{" "}}, "user_ids[0]"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("POST", "/api/v1/workspaces/team/members/remove", e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
		out.RemovedCount = -1
		remove(resIDs(100, "user_")...).want(t, http.StatusOK).decode(t, &out)
		if out.RemovedCount != 0 {
			t.Errorf("100 unknown ids: removed_count %d", out.RemovedCount)
		}
	})

	t.Run("default workspace", func(t *testing.T) {
		e := e.sub(t)
		e.unchanged("remove from default", func() {
			resWantError(t, e.do("POST", "/api/v1/workspaces/default/members/remove", e.mgmt,
				map[string]any{"user_ids": []string{m4}}), http.StatusBadRequest, "default")
		})
	})
}

// TestWorkspaceBadInput sends malformed requests to the workspace and
// workspace member operations: each is refused, naming what was wrong, and
// changes nothing.
func TestWorkspaceBadInput(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.createWorkspace(e.mgmt, "team")
	m := e.addMember(e.mgmt, "m@example.com")
	valid := `"name":"N","slug":"new-ws"`
	e.runBadInput(t, []resBadInput{
		// create
		resBad("malformed", "POST", "/api/v1/workspaces", `{"name":"N",`, 400, "malformed JSON"),
		resBad("not an object", "POST", "/api/v1/workspaces", `["name"]`, 400, "JSON object"),
		resBad("string body", "POST", "/api/v1/workspaces", `"x"`, 400, "JSON object"),
		resBad("empty body", "POST", "/api/v1/workspaces", ``, 400, "request body"),
		resBad("trailing data", "POST", "/api/v1/workspaces", `{`+valid+`} {}`, 400, "nothing after"),
		resBad("trailing garbage", "POST", "/api/v1/workspaces", `{`+valid+`}x`, 400, ""),
		resBad("name number", "POST", "/api/v1/workspaces", `{"name":1,"slug":"a"}`, 400, "name"),
		resBad("slug bool", "POST", "/api/v1/workspaces", `{"name":"a","slug":true}`, 400, "slug"),
		resBad("unknown field", "POST", "/api/v1/workspaces", `{`+valid+`,"bogus":1}`, 400, "bogus"),
		resBad("unknown field camel", "POST", "/api/v1/workspaces", `{`+valid+`,"defaultTextModel":"x"}`, 400, "defaultTextModel"),
		resBad("duplicate key", "POST", "/api/v1/workspaces", `{"name":"a","slug":"a","name":"b"}`, 400, "name"),
		resBad("missing name", "POST", "/api/v1/workspaces", `{"slug":"a"}`, 400, "name"),
		resBad("missing slug", "POST", "/api/v1/workspaces", `{"name":"a"}`, 400, "slug"),
		resBad("null slug", "POST", "/api/v1/workspaces", `{"name":"a","slug":null}`, 400, "slug"),
		resBad("null bool", "POST", "/api/v1/workspaces", `{`+valid+`,"include_byok_in_budgets":null}`, 400, "include_byok_in_budgets"),
		resBad("null sampling", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_sampling_rate":null}`, 400, "io_logging_sampling_rate"),
		resBad("bool as string", "POST", "/api/v1/workspaces", `{`+valid+`,"is_data_discount_logging_enabled":"yes"}`, 400, "is_data_discount_logging_enabled"),
		resBad("sampling 0", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_sampling_rate":0}`, 400, "io_logging_sampling_rate"),
		resBad("sampling -1", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_sampling_rate":-1}`, 400, "io_logging_sampling_rate"),
		resBad("sampling 101", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_sampling_rate":101}`, 400, "io_logging_sampling_rate"),
		resBad("sampling string", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_sampling_rate":"1"}`, 400, "io_logging_sampling_rate"),
		resBad("name 101", "POST", "/api/v1/workspaces", `{"name":"`+strings.Repeat("n", 101)+`","slug":"a"}`, 400, "name"),
		resBad("slug 51", "POST", "/api/v1/workspaces", `{"name":"a","slug":"`+strings.Repeat("s", 51)+`"}`, 400, "slug"),
		resBad("description 501", "POST", "/api/v1/workspaces", `{`+valid+`,"description":"`+strings.Repeat("d", 501)+`"}`, 400, "description"),
		resBad("tools not array", "POST", "/api/v1/workspaces", `{`+valid+`,"disabled_server_tools":"openrouter:bash"}`, 400, "disabled_server_tools"),
		resBad("tools number", "POST", "/api/v1/workspaces", `{`+valid+`,"disabled_server_tools":[1]}`, 400, "disabled_server_tools"),
		resBad("tools unknown", "POST", "/api/v1/workspaces", `{`+valid+`,"disabled_server_tools":["openrouter:bash","nope"]}`, 400, "disabled_server_tools[1]"),
		resBad("log ids string", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_api_key_ids":["1"]}`, 400, "io_logging_api_key_ids"),
		resBad("log ids 0", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_api_key_ids":[0]}`, 400, "io_logging_api_key_ids[0]"),
		resBad("log ids -1", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_api_key_ids":[3,-1]}`, 400, "io_logging_api_key_ids[1]"),
		resBad("log ids fraction", "POST", "/api/v1/workspaces", `{`+valid+`,"io_logging_api_key_ids":[1.5]}`, 400, "io_logging_api_key_ids"),
		resBad("provider sort", "POST", "/api/v1/workspaces", `{`+valid+`,"default_provider_sort":"fastest"}`, 400, "default_provider_sort"),
		resBad("empty model", "POST", "/api/v1/workspaces", `{`+valid+`,"default_text_model":""}`, 400, "default_text_model"),
		resBad("long model", "POST", "/api/v1/workspaces", `{`+valid+`,"default_image_model":"`+strings.Repeat("m", 201)+`"}`, 400, "default_image_model"),
		resBad("oversized", "POST", "/api/v1/workspaces", `{`+valid+`,"description":"`+strings.Repeat("d", 1<<20)+`"}`, 413, "bytes"),
		resBad("text/plain", "POST", "/api/v1/workspaces", `{`+valid+`}`, 415, "Content-Type", "text/plain"),
		resBad("form", "POST", "/api/v1/workspaces", `name=a&slug=b`, 415, "Content-Type", "application/x-www-form-urlencoded"),
		// update
		resBad("update malformed", "PATCH", "/api/v1/workspaces/team", `{"name"}`, 400, "malformed JSON"),
		resBad("update null name", "PATCH", "/api/v1/workspaces/team", `{"name":null}`, 400, "name"),
		resBad("update null slug", "PATCH", "/api/v1/workspaces/team", `{"slug":null}`, 400, "slug"),
		resBad("update bad slug", "PATCH", "/api/v1/workspaces/team", `{"slug":"Bad Slug"}`, 400, "slug"),
		resBad("update unknown field", "PATCH", "/api/v1/workspaces/team", `{"id":"x"}`, 400, "id"),
		resBad("update duplicate", "PATCH", "/api/v1/workspaces/team", `{"description":"a","description":"b"}`, 400, "description"),
		resBad("update wrong type", "PATCH", "/api/v1/workspaces/team", `{"include_byok_in_budgets":1}`, 400, "include_byok_in_budgets"),
		resBad("update sampling 0", "PATCH", "/api/v1/workspaces/team", `{"io_logging_sampling_rate":0}`, 400, "io_logging_sampling_rate"),
		resBad("update text/plain", "PATCH", "/api/v1/workspaces/team", `{}`, 415, "Content-Type", "text/plain"),
		resBad("update oversized", "PATCH", "/api/v1/workspaces/team", `{"name":"`+strings.Repeat("n", 1<<20+1)+`"}`, 413, "bytes"),
		resBad("update unknown id", "PATCH", "/api/v1/workspaces/no-such", `{}`, 404, "not found"),
		resBad("update default slug", "PATCH", "/api/v1/workspaces/default", `{"slug":"main"}`, 400, "slug"),
		// delete
		resBad("delete unknown", "DELETE", "/api/v1/workspaces/no-such", ``, 404, "not found"),
		resBad("delete bad confirm", "DELETE", "/api/v1/workspaces/team?confirm_default_workspace_deletion=maybe", ``, 400, "confirm_default_workspace_deletion"),
		// members
		resBad("add malformed", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":[`, 400, "malformed JSON"),
		resBad("add not array", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":"`+m+`"}`, 400, "user_ids"),
		resBad("add numbers", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":[1]}`, 400, "user_ids"),
		resBad("add missing", "POST", "/api/v1/workspaces/team/members/add", `{}`, 400, "user_ids"),
		resBad("add null", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":null}`, 400, "user_ids"),
		resBad("add empty", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":[]}`, 400, "user_ids"),
		resBad("add empty id", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":[""]}`, 400, "user_ids[0]"),
		resBad("add id with space", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":["a b"]}`, 400, "user_ids[0]"),
		resBad("add null id", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":[null]}`, 400, "user_ids"),
		resBad("add 101", "POST", "/api/v1/workspaces/team/members/add", resUserIDsBody(101), 400, "user_ids"),
		resBad("add unknown field", "POST", "/api/v1/workspaces/team/members/add", `{"userIds":["`+m+`"]}`, 400, "userIds"),
		resBad("add duplicate key", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":["`+m+`"],"user_ids":["`+m+`"]}`, 400, "user_ids"),
		resBad("add text/plain", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":["`+m+`"]}`, 415, "Content-Type", "text/plain"),
		resBad("add oversized", "POST", "/api/v1/workspaces/team/members/add", `{"user_ids":["`+strings.Repeat("u", 1<<20)+`"]}`, 413, "bytes"),
		resBad("add unknown workspace", "POST", "/api/v1/workspaces/nope/members/add", `{"user_ids":["`+m+`"]}`, 404, "not found"),
		resBad("remove malformed", "POST", "/api/v1/workspaces/team/members/remove", `{"user_ids":["x"]`, 400, "malformed JSON"),
		resBad("remove wrong type", "POST", "/api/v1/workspaces/team/members/remove", `{"user_ids":{"a":1}}`, 400, "user_ids"),
		resBad("remove unknown field", "POST", "/api/v1/workspaces/team/members/remove", `{"user_ids":["x"],"force":true}`, 400, "force"),
		resBad("remove 101", "POST", "/api/v1/workspaces/team/members/remove", resUserIDsBody(101), 400, "user_ids"),
		resBad("remove long id", "POST", "/api/v1/workspaces/team/members/remove", `{"user_ids":["`+strings.Repeat("u", 129)+`"]}`, 400, "user_ids[0]"),
		resBad("remove text/plain", "POST", "/api/v1/workspaces/team/members/remove", `{"user_ids":["x"]}`, 415, "Content-Type", "text/plain"),
		resBad("remove unknown workspace", "POST", "/api/v1/workspaces/nope/members/remove", `{"user_ids":["x"]}`, 404, "not found"),
		resBad("list members unknown", "GET", "/api/v1/workspaces/nope/members", ``, 404, "not found"),
	})
}

// resUserIDsBody is a user_ids body of n distinct ids.
func resUserIDsBody(n int) string {
	b, _ := json.Marshal(map[string]any{"user_ids": resIDs(n, "user_")})
	return string(b)
}
