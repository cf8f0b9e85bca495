package httpapi_test

import (
	"database/sql"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

func TestWorkspaceList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	items, total := resList(t, e.do("GET", "/api/v1/workspaces", e.mgmt, nil).want(t, http.StatusOK))
	if total != 1 || len(items) != 1 || items[0]["slug"] != "default" || items[0]["name"] != "Default" {
		t.Fatalf("new organization lists %v (total %d), want only the default workspace", items, total)
	}
	slugs := []string{"default"}
	for i := 1; i <= 4; i++ {
		e.tick()
		slug := fmt.Sprintf("ws-%d", i)
		e.createWorkspace(e.mgmt, slug)
		slugs = append(slugs, slug)
	}
	items, total = resList(t, e.do("GET", "/api/v1/workspaces", e.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff(slugs, resField(items, "slug")); diff != "" || total != 5 {
		t.Fatalf("list, default first, then by creation (total %d, want 5) (-want +got):\n%s", total, diff)
	}
	for _, p := range []struct {
		query string
		want  []string
	}{
		{"limit=2", slugs[:2]},
		{"offset=2&limit=2", slugs[2:4]},
		{"offset=4", slugs[4:]},
		{"offset=5", []string{}},
		{"offset=1000", []string{}},
		{"offset=0&limit=100", slugs},
		{"limit=1&offset=3", slugs[3:4]},
	} {
		r := e.do("GET", "/api/v1/workspaces?"+p.query, e.mgmt, nil).want(t, http.StatusOK)
		items, total := resList(t, r)
		if diff := cmp.Diff(p.want, resField(items, "slug")); diff != "" || total != 5 {
			t.Errorf("?%s (total %d, want 5) (-want +got):\n%s", p.query, total, diff)
		}
	}
	for _, q := range []struct{ query, field string }{
		{"offset=-1", "offset"}, {"offset=x", "offset"}, {"offset=1.5", "offset"},
		{"limit=0", "limit"}, {"limit=-1", "limit"}, {"limit=101", "limit"}, {"limit=x", "limit"}, {"limit=2.0", "limit"},
	} {
		resWantError(t, e.do("GET", "/api/v1/workspaces?"+q.query, e.mgmt, nil), http.StatusBadRequest, q.field)
	}
}

func TestWorkspaceCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const fields = `id name slug description default_text_model default_image_model default_provider_sort
		disabled_server_tools io_logging_api_key_ids io_logging_sampling_rate is_data_discount_logging_enabled
		is_observability_broadcast_enabled is_observability_io_logging_enabled include_byok_in_budgets
		default_guardrail_id created_by created_at updated_at`

	t.Run("defaults", func(t *testing.T) {
		e := e.sub(t)
		w := e.postWorkspace(e.mgmt, map[string]any{"name": "Team A", "slug": "team-a"})
		resWantFields(t, "workspace", w, fields)
		id, _ := w["id"].(string)
		want := map[string]any{
			"id": id, "name": "Team A", "slug": "team-a", "description": nil,
			"default_text_model": nil, "default_image_model": nil, "default_provider_sort": nil,
			"disabled_server_tools": nil, "io_logging_api_key_ids": nil, "io_logging_sampling_rate": 1.0,
			"is_data_discount_logging_enabled": false, "is_observability_broadcast_enabled": false,
			"is_observability_io_logging_enabled": false, "include_byok_in_budgets": false,
			"default_guardrail_id": gatehouse.DefaultGuardrailID(id), "created_by": nil,
			"created_at": e.now(), "updated_at": nil,
		}
		if diff := cmp.Diff(want, w); diff != "" {
			t.Errorf("created workspace (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(want, e.workspace(e.mgmt, id)); diff != "" {
			t.Errorf("GET after create (-want +got):\n%s", diff)
		}
	})

	t.Run("every field", func(t *testing.T) {
		e := e.sub(t)
		body := map[string]any{
			"name": "Full", "slug": "full", "description": "all the fields",
			"default_text_model": "openai/gpt-4o", "default_image_model": "openai/dall-e-3",
			"default_provider_sort": "throughput", "disabled_server_tools": []any{"openrouter:web_search", "openrouter:bash"},
			"io_logging_api_key_ids": []any{1.0, 42.0}, "io_logging_sampling_rate": 0.25,
			"is_data_discount_logging_enabled": true, "is_observability_broadcast_enabled": true,
			"is_observability_io_logging_enabled": true, "include_byok_in_budgets": true,
		}
		w := e.postWorkspace(e.mgmt, body)
		for k, v := range body {
			if diff := cmp.Diff(v, w[k]); diff != "" {
				t.Errorf("%s (-want +got):\n%s", k, diff)
			}
		}
		if diff := cmp.Diff(w, e.workspace(e.mgmt, "full")); diff != "" {
			t.Errorf("GET by slug (-want +got):\n%s", diff)
		}
	})

	t.Run("slug rules", func(t *testing.T) {
		e := e.sub(t)
		for _, slug := range []string{"a", "0", "a1-b2-c3", "team-b", strings.Repeat("z", 50)} {
			w := e.postWorkspace(e.mgmt, map[string]any{"name": "ok", "slug": slug})
			if w["slug"] != slug {
				t.Errorf("slug %q stored as %v", slug, w["slug"])
			}
		}
		for _, slug := range []string{"", "A", "Team", "team_a", "team a", "-a", "a-", "a--b", "a.b", "é",
			strings.Repeat("y", 51), " a", "a/b"} {
			e.unchanged("slug "+slug, func() {
				resWantError(t, e.do("POST", "/api/v1/workspaces", e.mgmt, map[string]any{"name": "x", "slug": slug}),
					http.StatusBadRequest, "slug")
			})
		}
	})

	t.Run("slug taken", func(t *testing.T) {
		e := e.sub(t)
		e.createWorkspace(e.mgmt, "taken")
		for _, slug := range []string{"taken", "default"} {
			e.unchanged("slug "+slug, func() {
				resWantError(t, e.do("POST", "/api/v1/workspaces", e.mgmt, map[string]any{"name": "again", "slug": slug}),
					http.StatusBadRequest, "slug")
			})
		}
	})

	t.Run("name and slug required", func(t *testing.T) {
		e := e.sub(t)
		for _, c := range []struct {
			body  map[string]any
			field string
		}{
			{map[string]any{"slug": "no-name"}, "name"},
			{map[string]any{"name": "No slug"}, "slug"},
			{map[string]any{}, "name"},
			{map[string]any{"name": "", "slug": "empty-name"}, "name"},
			{map[string]any{"name": "   ", "slug": "blank-name"}, "name"},
			{map[string]any{"name": nil, "slug": "null-name"}, "name"},
			{map[string]any{"name": "x", "slug": nil}, "slug"},
			{map[string]any{"name": strings.Repeat("n", 101), "slug": "long-name"}, "name"},
		} {
			e.unchanged(fmt.Sprint(c.body), func() {
				resWantError(t, e.do("POST", "/api/v1/workspaces", e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
		w := e.postWorkspace(e.mgmt, map[string]any{"name": strings.Repeat("n", 100), "slug": "max-name"})
		if len(w["name"].(string)) != 100 {
			t.Errorf("100-character name not stored")
		}
	})
}

func TestWorkspaceGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	id := e.createWorkspace(e.mgmt, "team")
	byID := e.workspace(e.mgmt, id)
	bySlug := e.workspace(e.mgmt, "team")
	if diff := cmp.Diff(byID, bySlug); diff != "" || byID["id"] != id {
		t.Errorf("by id (id %v, want %s) and by slug (-by id +by slug):\n%s", byID["id"], id, diff)
	}
	def := e.workspace(e.mgmt, "default")
	if def["slug"] != "default" || def["default_guardrail_id"] != gatehouse.DefaultGuardrailID(def["id"].(string)) {
		t.Errorf("default workspace = %v", def)
	}
	for _, ref := range []string{"nope", "00000000-0000-4000-8000-000000000000", "Team", "team%20"} {
		resWantError(t, e.do("GET", "/api/v1/workspaces/"+ref, e.mgmt, nil), http.StatusNotFound, "not found")
	}
}

func TestWorkspaceUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	w := e.postWorkspace(e.mgmt, map[string]any{"name": "Team", "slug": "team", "description": "first"})
	id := w["id"].(string)
	path := "/api/v1/workspaces/" + id

	e.tick()
	cur := w
	for _, c := range []struct {
		field string
		value any
		want  any // when the stored value differs from the one sent
	}{
		{"name", "Renamed", nil},
		{"description", "second", nil},
		{"description", nil, nil},
		{"default_text_model", "anthropic/claude-3.5-sonnet", nil},
		{"default_text_model", nil, nil},
		{"default_image_model", "openai/gpt-image-1", nil},
		{"default_provider_sort", "latency", nil},
		{"default_provider_sort", nil, nil},
		{"disabled_server_tools", []any{"openrouter:web_fetch"}, nil},
		{"disabled_server_tools", []any{}, "null"},
		{"disabled_server_tools", []any{"openrouter:datetime"}, nil},
		{"disabled_server_tools", nil, nil},
		{"io_logging_api_key_ids", []any{7.0}, nil},
		{"io_logging_api_key_ids", nil, nil},
		{"io_logging_sampling_rate", 0.0001, nil},
		{"io_logging_sampling_rate", 1.0, nil},
		{"is_data_discount_logging_enabled", true, nil},
		{"is_observability_broadcast_enabled", true, nil},
		{"is_observability_io_logging_enabled", true, nil},
		{"include_byok_in_budgets", true, nil},
		{"include_byok_in_budgets", false, nil},
		{"slug", "team-renamed", nil},
	} {
		got := resData(t, e.do("PATCH", path, e.mgmt, map[string]any{c.field: c.value}).want(t, http.StatusOK))
		want := resCopy(cur)
		want[c.field] = c.value
		if c.want == "null" {
			want[c.field] = nil
		}
		want["updated_at"] = e.now()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PATCH %s=%v (-want +got):\n%s", c.field, c.value, diff)
		}
		cur = got
	}
	if diff := cmp.Diff(cur, e.workspace(e.mgmt, "team-renamed")); diff != "" {
		t.Errorf("GET after updates (-want +got):\n%s", diff)
	}
	resWantError(t, e.do("GET", "/api/v1/workspaces/team", e.mgmt, nil), http.StatusNotFound, "not found")

	t.Run("empty patch changes nothing but updated_at", func(t *testing.T) {
		e := e.sub(t)
		e.tick()
		got := resData(t, e.do("PATCH", "/api/v1/workspaces/team-renamed", e.mgmt, map[string]any{}).want(t, http.StatusOK))
		want := resCopy(cur)
		want["updated_at"] = e.now()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("PATCH {} (-want +got):\n%s", diff)
		}
	})

	t.Run("default workspace slug is fixed", func(t *testing.T) {
		e := e.sub(t)
		e.unchanged("rename default slug", func() {
			resWantError(t, e.do("PATCH", "/api/v1/workspaces/default", e.mgmt, map[string]any{"slug": "main"}),
				http.StatusBadRequest, "slug")
		})
		// Sending its own slug back is not a change; other fields may change.
		got := resData(t, e.do("PATCH", "/api/v1/workspaces/default", e.mgmt,
			map[string]any{"slug": "default", "name": "Main"}).want(t, http.StatusOK))
		if got["slug"] != "default" || got["name"] != "Main" {
			t.Errorf("default workspace after update: %v", got)
		}
	})

	t.Run("slug taken", func(t *testing.T) {
		e := e.sub(t)
		e.createWorkspace(e.mgmt, "other")
		for _, slug := range []string{"other", "default"} {
			e.unchanged("slug "+slug, func() {
				resWantError(t, e.do("PATCH", path, e.mgmt, map[string]any{"slug": slug}), http.StatusBadRequest, "slug")
			})
		}
	})

	t.Run("unknown workspace", func(t *testing.T) {
		e := e.sub(t)
		e.unchanged("unknown", func() {
			resWantError(t, e.do("PATCH", "/api/v1/workspaces/nope", e.mgmt, map[string]any{"name": "x"}), http.StatusNotFound, "not found")
			resWantError(t, e.do("PATCH", "/api/v1/workspaces/00000000-0000-4000-8000-000000000000", e.mgmt,
				map[string]any{"name": "x"}), http.StatusNotFound, "not found")
		})
	})
}

func TestWorkspaceDelete(t *testing.T) {
	t.Parallel()

	t.Run("plain", func(t *testing.T) {
		e := newEnv(t)
		id := e.createWorkspace(e.mgmt, "gone")
		resWantDeleted(t, e.do("DELETE", "/api/v1/workspaces/"+id, e.mgmt, nil))
		e.unchanged("after delete", func() {
			resWantError(t, e.do("GET", "/api/v1/workspaces/"+id, e.mgmt, nil), http.StatusNotFound, "not found")
			resWantError(t, e.do("GET", "/api/v1/workspaces/gone", e.mgmt, nil), http.StatusNotFound, "not found")
			resWantError(t, e.do("DELETE", "/api/v1/workspaces/"+id, e.mgmt, nil), http.StatusNotFound, "not found")
			resWantError(t, e.do("PATCH", "/api/v1/workspaces/"+id, e.mgmt, map[string]any{}), http.StatusNotFound, "not found")
		})
		// By slug, and the slug is free again.
		e.createWorkspace(e.mgmt, "by-slug")
		resWantDeleted(t, e.do("DELETE", "/api/v1/workspaces/by-slug", e.mgmt, nil))
		e.createWorkspace(e.mgmt, "by-slug")
		items, total := resList(t, e.do("GET", "/api/v1/workspaces", e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff([]string{"by-slug", "default"}, resSorted(resField(items, "slug"))); diff != "" || total != 2 {
			t.Errorf("workspaces after deletes (total %d, want 2) (-want +got):\n%s", total, diff)
		}
	})

	t.Run("default workspace", func(t *testing.T) {
		e := newEnv(t)
		m1 := e.addMember(e.mgmt, "m1@example.com")
		m2 := e.addMember(e.mgmt, "m2@example.com")
		def := e.workspace(e.mgmt, "default")
		e.tick()
		next := e.createWorkspace(e.mgmt, "next")
		e.tick()
		e.createWorkspace(e.mgmt, "later")
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "in next", "workspace_id": next})
		for _, q := range []string{"", "?confirm_default_workspace_deletion=false", "?confirm_default_workspace_deletion=0"} {
			e.unchanged("delete default"+q, func() {
				resWantError(t, e.do("DELETE", "/api/v1/workspaces/default"+q, e.mgmt, nil), http.StatusBadRequest,
					"confirm_default_workspace_deletion")
			})
		}
		e.unchanged("bad confirm", func() {
			resWantError(t, e.do("DELETE", "/api/v1/workspaces/default?confirm_default_workspace_deletion=yes", e.mgmt, nil),
				http.StatusBadRequest, "confirm_default_workspace_deletion")
		})
		resWantDeleted(t, e.do("DELETE", "/api/v1/workspaces/"+def["id"].(string)+"?confirm_default_workspace_deletion=true", e.mgmt, nil))
		resWantError(t, e.do("GET", "/api/v1/workspaces/default", e.mgmt, nil), http.StatusNotFound, "not found")

		// The oldest remaining workspace is the default now: it holds every
		// member, it is what an absent workspace_id means, and members cannot
		// be removed from it.
		if diff := cmp.Diff(resSorted([]string{m1, m2}), e.workspaceMembers(e.mgmt, next)); diff != "" {
			t.Errorf("members of the new default workspace, want every organization member (-want +got):\n%s", diff)
		}
		if got := e.workspaceMembers(e.mgmt, "later"); len(got) != 0 {
			t.Errorf("members of a non-default workspace = %v, want none", got)
		}
		items, _ := resList(t, e.do("GET", "/api/v1/guardrails", e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff([]string{g["id"].(string)}, resField(items, "id")); diff != "" {
			t.Errorf("guardrails of the default workspace, want those of %s (-want +got):\n%s", next, diff)
		}
		var key struct {
			Data struct {
				WorkspaceID string `json:"workspace_id"`
			} `json:"data"`
		}
		e.do("POST", "/api/v1/keys", e.mgmt, map[string]any{"name": "k"}).want(t, http.StatusCreated).decode(t, &key)
		if key.Data.WorkspaceID != next {
			t.Errorf("key without workspace_id went to %s, want the new default %s", key.Data.WorkspaceID, next)
		}
		e.unchanged("remove from new default", func() {
			resWantError(t, e.do("POST", "/api/v1/workspaces/"+next+"/members/remove", e.mgmt,
				map[string]any{"user_ids": []string{m1}}), http.StatusBadRequest, "default")
		})
	})

	t.Run("active keys block", func(t *testing.T) {
		e := newEnv(t)
		ws := e.createWorkspace(e.mgmt, "busy")
		hash, _ := e.createKey(e.mgmt, map[string]any{"name": "active", "workspace_id": ws})
		expiring, _ := e.createKey(e.mgmt, map[string]any{"name": "expiring", "workspace_id": ws,
			"expires_at": e.clock.Now().Add(time.Hour).Format(time.RFC3339)})
		e.unchanged("delete with active keys", func() {
			resWantError(t, e.do("DELETE", "/api/v1/workspaces/busy", e.mgmt, nil), http.StatusBadRequest, "active")
		})
		// The default workspace with an active key: blocked even when confirmed.
		e.createKey(e.mgmt, map[string]any{"name": "in default"})
		e.unchanged("delete default with active keys", func() {
			resWantError(t, e.do("DELETE", "/api/v1/workspaces/default?confirm_default_workspace_deletion=true", e.mgmt, nil),
				http.StatusBadRequest, "active")
		})
		e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"disabled": true}).want(t, http.StatusOK)
		e.unchanged("delete with an unexpired key", func() {
			resWantError(t, e.do("DELETE", "/api/v1/workspaces/busy", e.mgmt, nil), http.StatusBadRequest, "active")
		})
		e.clock.Set(e.clock.Now().Add(2 * time.Hour))
		resWantDeleted(t, e.do("DELETE", "/api/v1/workspaces/busy", e.mgmt, nil))
		// The inactive keys went with the workspace.
		for _, h := range []string{hash, expiring} {
			resWantError(t, e.do("GET", "/api/v1/keys/"+h, e.mgmt, nil), http.StatusNotFound, "not found")
		}
	})

	t.Run("removes guardrails, memberships and destinations", func(t *testing.T) {
		e := newEnv(t)
		m := e.addMember(e.mgmt, "m@example.com")
		ws := e.createWorkspace(e.mgmt, "full")
		keep := e.createWorkspace(e.mgmt, "keep")
		e.addToWorkspace(e.mgmt, ws, m)
		e.addToWorkspace(e.mgmt, keep, m)
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "g", "workspace_id": ws})["id"].(string)
		other := e.createGuardrail(e.mgmt, map[string]any{"name": "g", "workspace_id": keep})["id"].(string)
		e.do("POST", "/api/v1/guardrails/"+g+"/assignments/members", e.mgmt,
			map[string]any{"member_user_ids": []string{m}}).want(t, http.StatusOK)
		d := e.createDestination(e.mgmt, map[string]any{"name": "d", "type": "webhook", "workspace_id": ws,
			"config": map[string]any{"url": "https://example.com/hook"}})["id"].(string)
		dKeep := e.createDestination(e.mgmt, map[string]any{"name": "d", "type": "webhook", "workspace_id": keep,
			"config": map[string]any{"url": "https://example.com/hook"}})["id"].(string)
		e.tick()
		resWantDeleted(t, e.do("DELETE", "/api/v1/workspaces/"+ws, e.mgmt, nil))

		resWantError(t, e.do("GET", "/api/v1/guardrails/"+g, e.mgmt, nil), http.StatusNotFound, "not found")
		resWantError(t, e.do("GET", "/api/v1/observability/destinations/"+d, e.mgmt, nil), http.StatusNotFound, "not found")
		e.do("GET", "/api/v1/guardrails/"+other, e.mgmt, nil).want(t, http.StatusOK)
		e.do("GET", "/api/v1/observability/destinations/"+dKeep, e.mgmt, nil).want(t, http.StatusOK)
		if diff := cmp.Diff([]string{m}, e.workspaceMembers(e.mgmt, keep)); diff != "" {
			t.Errorf("members of the other workspace (-want +got):\n%s", diff)
		}
		items, _ := resList(t, e.do("GET", "/api/v1/guardrails/assignments/members", e.mgmt, nil).want(t, http.StatusOK))
		if len(items) != 0 {
			t.Errorf("member assignments of a deleted guardrail remain: %v", items)
		}
		if n := e.count(`SELECT count(*) FROM guardrails WHERE workspace_id = $1`, ws); n != 0 {
			t.Errorf("%d guardrail rows remain", n)
		}
		if n := e.count(`SELECT count(*) FROM workspace_members WHERE workspace_id = $1`, ws); n != 0 {
			t.Errorf("%d membership rows remain", n)
		}
		var deletedAt sql.NullInt64
		if err := e.readDB().QueryRow(`SELECT deleted_at FROM destinations WHERE id = $1`, d).Scan(&deletedAt); err != nil {
			t.Fatalf("destination row: %v", err)
		}
		if !deletedAt.Valid || deletedAt.Int64 != e.clock.Now().UnixMilli() {
			t.Errorf("destination deleted_at = %v, want %d (soft delete)", deletedAt, e.clock.Now().UnixMilli())
		}
	})
}
