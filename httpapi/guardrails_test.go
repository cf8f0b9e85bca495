package httpapi_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// createGuardrail creates a guardrail and returns it.
func (e *testEnv) createGuardrail(key string, body map[string]any) map[string]any {
	e.t.Helper()
	return resData(e.t, e.do("POST", "/api/v1/guardrails", key, body).want(e.t, http.StatusCreated))
}

const guardrailFields = `id name description workspace_id allowed_models allowed_providers ignored_models
	ignored_providers limit_usd reset_interval include_byok_in_budgets enforce_zdr enforce_zdr_anthropic
	enforce_zdr_openai enforce_zdr_google enforce_zdr_xai enforce_zdr_other enable_free_model_publication
	enable_free_model_training enable_paid_model_training allowed_data_regions content_filters
	content_filter_builtins created_at updated_at`

// TestGuardrailList checks the seed's list operation and its bounds.
func TestGuardrailList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	items, total := resList(t, e.do("GET", "/api/v1/guardrails", e.mgmt, nil).want(t, http.StatusOK))
	if len(items) != 0 || total != 0 {
		t.Fatalf("new organization lists guardrails %v", items)
	}
	if !strings.Contains(string(e.do("GET", "/api/v1/guardrails", e.mgmt, nil).Body), `"data":[]`) {
		t.Errorf("an empty list must be [] not null")
	}
	team := e.createWorkspace(e.mgmt, "team")
	var names []string
	for i := range 3 {
		e.tick()
		name := fmt.Sprintf("g%d", i)
		e.createGuardrail(e.mgmt, map[string]any{"name": name})
		names = append(names, name)
	}
	inTeam := e.createGuardrail(e.mgmt, map[string]any{"name": "team only", "workspace_id": team})

	items, total = resList(t, e.do("GET", "/api/v1/guardrails", e.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff(names, resField(items, "name")); diff != "" || total != 3 {
		t.Errorf("default list (total %d, want 3) (-want +got):\n%s", total, diff)
	}
	for _, it := range items {
		resWantFields(t, "guardrail", it, guardrailFields)
	}
	items, total = resList(t, e.do("GET", "/api/v1/guardrails?workspace_id="+team, e.mgmt, nil).want(t, http.StatusOK))
	if total != 1 || items[0]["id"] != inTeam["id"] {
		t.Errorf("team list = %v (total %d)", resField(items, "name"), total)
	}
	def := e.workspace(e.mgmt, "default")["id"].(string)
	items, _ = resList(t, e.do("GET", "/api/v1/guardrails?workspace_id="+def, e.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff(names, resField(items, "name")); diff != "" {
		t.Errorf("workspace_id=default id lists (-want +got):\n%s", diff)
	}
	for _, p := range []struct {
		query string
		want  []string
	}{
		{"limit=1", names[:1]},
		{"offset=1&limit=1", names[1:2]},
		{"offset=1", names[1:]},
		{"offset=3", []string{}},
		{"offset=0&limit=100", names},
		{"limit=2&offset=2", names[2:]},
	} {
		items, total := resList(t, e.do("GET", "/api/v1/guardrails?"+p.query, e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff(p.want, resField(items, "name")); diff != "" || total != 3 {
			t.Errorf("?%s (total %d, want 3) (-want +got):\n%s", p.query, total, diff)
		}
	}
	for _, q := range []string{"offset=-1", "offset=x", "offset=0.5", "limit=0", "limit=-1", "limit=101",
		"limit=1000", "limit=x", "limit=", "offset=%20"} {
		field := strings.Split(q, "=")[0]
		resWantError(t, e.do("GET", "/api/v1/guardrails?"+q, e.mgmt, nil), http.StatusBadRequest, field)
	}
	for _, ws := range []string{"00000000-0000-4000-8000-000000000000", "nope"} {
		resWantError(t, e.do("GET", "/api/v1/guardrails?workspace_id="+ws, e.mgmt, nil), http.StatusNotFound, "workspace")
	}
}

func TestGuardrailCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	team := e.createWorkspace(e.mgmt, "team")
	def := e.workspace(e.mgmt, "default")["id"].(string)

	t.Run("every field round-trips", func(t *testing.T) {
		e := e.sub(t)
		body := map[string]any{
			"name": "Full", "description": "every field",
			"allowed_models":    []any{"openai/gpt-4o", "anthropic/claude-3.5-sonnet"},
			"allowed_providers": []any{"openai", "anthropic"},
			"ignored_models":    []any{"x-ai/grok-2"},
			"ignored_providers": []any{"deepinfra"},
			"limit_usd":         12.5, "reset_interval": "weekly", "include_byok_in_budgets": true,
			"enforce_zdr": false, "enforce_zdr_anthropic": true, "enforce_zdr_openai": false,
			"enforce_zdr_google": true, "enforce_zdr_xai": false, "enforce_zdr_other": true,
			"enable_free_model_publication": true, "enable_free_model_training": false, "enable_paid_model_training": true,
			"allowed_data_regions": []any{"europe", "us"},
			"content_filters": []any{
				map[string]any{"pattern": "secret-[0-9]+", "action": "block", "label": "secrets"},
				map[string]any{"pattern": "(?i)password", "action": "redact"},
			},
			"content_filter_builtins": []any{
				map[string]any{"slug": "email", "action": "redact", "scan_scope": "user_only"},
				map[string]any{"slug": "credit-card", "action": "block"},
			},
		}
		g := e.createGuardrail(e.mgmt, with(body, "workspace_id", team))
		resWantFields(t, "guardrail", g, guardrailFields)
		want := resCopy(body)
		want["id"], want["workspace_id"], want["created_at"], want["updated_at"] = g["id"], team, e.now(), e.now()
		want["content_filter_builtins"] = []any{
			map[string]any{"slug": "email", "action": "redact", "scan_scope": "user_only", "label": "[EMAIL]"},
			map[string]any{"slug": "credit-card", "action": "block", "label": "[CREDIT_CARD]"},
		}
		if diff := cmp.Diff(want, g); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		got := resData(t, e.do("GET", "/api/v1/guardrails/"+g["id"].(string), e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("GET (-want +got):\n%s", diff)
		}
	})

	t.Run("defaults", func(t *testing.T) {
		e := e.sub(t)
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "Minimal"})
		want := map[string]any{"id": g["id"], "name": "Minimal", "workspace_id": def, "include_byok_in_budgets": false,
			"created_at": e.now(), "updated_at": e.now()}
		for _, f := range strings.Fields(guardrailFields) {
			if _, ok := want[f]; !ok {
				want[f] = nil
			}
		}
		if diff := cmp.Diff(want, g); diff != "" {
			t.Errorf("defaults (-want +got):\n%s", diff)
		}
	})

	t.Run("enforce_zdr fills the unset enforce_zdr_*", func(t *testing.T) {
		e := e.sub(t)
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "zdr", "enforce_zdr": true, "enforce_zdr_openai": false})
		for f, want := range map[string]any{"enforce_zdr": true, "enforce_zdr_anthropic": true, "enforce_zdr_openai": false,
			"enforce_zdr_google": true, "enforce_zdr_xai": true, "enforce_zdr_other": true} {
			if g[f] != want {
				t.Errorf("%s = %v, want %v", f, g[f], want)
			}
		}
	})

	t.Run("builtin labels are the system's", func(t *testing.T) {
		e := e.sub(t)
		builtins := []any{}
		want := []any{}
		for slug, label := range map[string]string{"email": "[EMAIL]", "phone": "[PHONE]", "ssn": "[SSN]",
			"credit-card": "[CREDIT_CARD]", "ip-address": "[IP_ADDRESS]", "secrets": "[SECRET]",
			"person-name": "[PERSON_NAME]", "address": "[ADDRESS]", "regex-prompt-injection": "[PROMPT_INJECTION]"} {
			builtins = append(builtins, map[string]any{"slug": slug, "action": "flag", "label": "mine", "scan_scope": "all_messages"})
			want = append(want, map[string]any{"slug": slug, "action": "flag", "label": label, "scan_scope": "all_messages"})
		}
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "builtins", "content_filter_builtins": builtins})
		if diff := cmp.Diff(want, g["content_filter_builtins"]); diff != "" {
			t.Errorf("builtins (-want +got):\n%s", diff)
		}
	})

	t.Run("region alias", func(t *testing.T) {
		e := e.sub(t)
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "eu", "allowed_data_regions": []any{"eu", "global"}})
		if diff := cmp.Diff([]any{"europe", "global"}, g["allowed_data_regions"]); diff != "" {
			t.Errorf("allowed_data_regions (-want +got):\n%s", diff)
		}
	})

	t.Run("longest pattern and name", func(t *testing.T) {
		e := e.sub(t)
		g := e.createGuardrail(e.mgmt, map[string]any{"name": strings.Repeat("n", 200),
			"content_filters": []any{map[string]any{"pattern": strings.Repeat("a", 100_000), "action": "flag"}}})
		if len(g["content_filters"].([]any)[0].(map[string]any)["pattern"].(string)) != 100_000 {
			t.Errorf("100 000-character pattern not stored")
		}
	})

	t.Run("refused", func(t *testing.T) {
		e := e.sub(t)
		e.createGuardrail(e.mgmt, map[string]any{"name": "taken"})
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"limit without reset", map[string]any{"name": "x", "limit_usd": 5}, "limit_usd"},
			{"reset without limit", map[string]any{"name": "x", "reset_interval": "daily"}, "reset_interval"},
			{"invalid regex", map[string]any{"name": "x", "content_filters": []any{map[string]any{"pattern": "(unclosed", "action": "block"}}}, "content_filters[0].pattern"},
			{"invalid second regex", map[string]any{"name": "x", "content_filters": []any{
				map[string]any{"pattern": "ok", "action": "block"}, map[string]any{"pattern": "a**", "action": "block"}}}, "content_filters[1].pattern"},
			{"perl lookahead", map[string]any{"name": "x", "content_filters": []any{map[string]any{"pattern": "a(?=b)", "action": "flag"}}}, "content_filters[0].pattern"},
			{"pattern too long", map[string]any{"name": "x", "content_filters": []any{map[string]any{"pattern": strings.Repeat("a", 100_001), "action": "block"}}}, "content_filters[0].pattern"},
			{"empty pattern", map[string]any{"name": "x", "content_filters": []any{map[string]any{"pattern": "", "action": "block"}}}, "content_filters[0].pattern"},
			{"bad action", map[string]any{"name": "x", "content_filters": []any{map[string]any{"pattern": "a", "action": "drop"}}}, "content_filters[0].action"},
			{"label too long", map[string]any{"name": "x", "content_filters": []any{map[string]any{"pattern": "a", "action": "flag", "label": strings.Repeat("l", 101)}}}, "content_filters[0].label"},
			{"empty allowed_models", map[string]any{"name": "x", "allowed_models": []any{}}, "allowed_models"},
			{"empty allowed_providers", map[string]any{"name": "x", "allowed_providers": []any{}}, "allowed_providers"},
			{"empty ignored_models", map[string]any{"name": "x", "ignored_models": []any{}}, "ignored_models"},
			{"empty ignored_providers", map[string]any{"name": "x", "ignored_providers": []any{}}, "ignored_providers"},
			{"empty regions", map[string]any{"name": "x", "allowed_data_regions": []any{}}, "allowed_data_regions"},
			{"unknown region", map[string]any{"name": "x", "allowed_data_regions": []any{"us", "mars"}}, "allowed_data_regions[1]"},
			{"blank model", map[string]any{"name": "x", "allowed_models": []any{"openai/gpt-4o", " "}}, "allowed_models[1]"},
			{"unknown builtin", map[string]any{"name": "x", "content_filter_builtins": []any{map[string]any{"slug": "dna", "action": "flag"}}}, "content_filter_builtins[0].slug"},
			{"builtin twice", map[string]any{"name": "x", "content_filter_builtins": []any{
				map[string]any{"slug": "email", "action": "flag"}, map[string]any{"slug": "email", "action": "block"}}}, "content_filter_builtins[1].slug"},
			{"bad scan scope", map[string]any{"name": "x", "content_filter_builtins": []any{map[string]any{"slug": "email", "action": "flag", "scan_scope": "system"}}}, "content_filter_builtins[0].scan_scope"},
			{"negative limit", map[string]any{"name": "x", "limit_usd": -1, "reset_interval": "daily"}, "limit_usd"},
			{"duplicate name", map[string]any{"name": "taken"}, "name"},
			{"no name", map[string]any{"description": "x"}, "name"},
			{"blank name", map[string]any{"name": "  "}, "name"},
			{"name 201", map[string]any{"name": strings.Repeat("n", 201)}, "name"},
			{"description 1001", map[string]any{"name": "x", "description": strings.Repeat("d", 1001)}, "description"},
			{"reserved name", map[string]any{"name": gatehouse.DefaultGuardrailName(def)}, "name"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("POST", "/api/v1/guardrails", e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
		e.unchanged("unknown workspace", func() {
			resWantError(t, e.do("POST", "/api/v1/guardrails", e.mgmt,
				map[string]any{"name": "x", "workspace_id": "00000000-0000-4000-8000-000000000000"}), http.StatusNotFound, "workspace")
		})
	})

	t.Run("same name in another workspace", func(t *testing.T) {
		e := e.sub(t)
		e.createGuardrail(e.mgmt, map[string]any{"name": "shared"})
		g := e.createGuardrail(e.mgmt, map[string]any{"name": "shared", "workspace_id": "team"})
		if g["workspace_id"] != team {
			t.Errorf("workspace_id by slug: %v, want %s", g["workspace_id"], team)
		}
	})
}

func TestGuardrailGet(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.createGuardrail(e.mgmt, map[string]any{"name": "g"})
	id := g["id"].(string)
	if diff := cmp.Diff(g, resData(t, e.do("GET", "/api/v1/guardrails/"+id, e.mgmt, nil).want(t, http.StatusOK))); diff != "" {
		t.Errorf("GET (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"nope", "123", strings.TrimSuffix(id, id[len(id)-1:]), id + "0",
		"00000000-0000-4000-8000-000000000000", "{" + id + "}", "urn:uuid:" + id} {
		resWantError(t, e.do("GET", "/api/v1/guardrails/"+bad, e.mgmt, nil), http.StatusNotFound, "not found")
	}
}

func TestGuardrailUpdate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	g := e.createGuardrail(e.mgmt, map[string]any{"name": "g", "description": "d",
		"allowed_models": []any{"a/one", "a/two"}, "allowed_providers": []any{"openai"},
		"limit_usd": 5, "reset_interval": "daily",
		"content_filters":         []any{map[string]any{"pattern": "x+", "action": "flag"}},
		"content_filter_builtins": []any{map[string]any{"slug": "ssn", "action": "block"}},
		"allowed_data_regions":    []any{"us"}})
	e.createGuardrail(e.mgmt, map[string]any{"name": "other"})
	id := g["id"].(string)
	path := "/api/v1/guardrails/" + id
	cur := g
	for _, c := range []struct {
		name  string
		body  map[string]any
		apply map[string]any // the expected changes; nil means body
	}{
		{"replace array whole", map[string]any{"allowed_models": []any{"b/three"}}, nil},
		{"null clears array", map[string]any{"allowed_models": nil}, nil},
		{"null clears description", map[string]any{"description": nil}, nil},
		{"rename", map[string]any{"name": "renamed"}, nil},
		{"same name", map[string]any{"name": "renamed"}, nil},
		{"limit only", map[string]any{"limit_usd": 7.25}, nil},
		{"clear limit and reset", map[string]any{"limit_usd": nil, "reset_interval": nil}, nil},
		{"set limit and reset", map[string]any{"limit_usd": 1000000, "reset_interval": "monthly"}, map[string]any{"limit_usd": 1000000.0, "reset_interval": "monthly"}},
		{"enforce_zdr copies", map[string]any{"enforce_zdr": true, "enforce_zdr_xai": false}, map[string]any{
			"enforce_zdr": true, "enforce_zdr_anthropic": true, "enforce_zdr_openai": true, "enforce_zdr_google": true,
			"enforce_zdr_xai": false, "enforce_zdr_other": true}},
		{"one zdr flag", map[string]any{"enforce_zdr_google": nil}, nil},
		{"replace filters", map[string]any{"content_filters": []any{map[string]any{"pattern": "y", "action": "redact", "label": "Y"}}}, nil},
		{"clear builtins", map[string]any{"content_filter_builtins": nil}, nil},
		{"clear regions", map[string]any{"allowed_data_regions": nil}, nil},
		{"booleans", map[string]any{"include_byok_in_budgets": true, "enable_paid_model_training": false}, nil},
		{"empty patch", map[string]any{}, nil},
	} {
		e.tick()
		got := resData(t, e.do("PATCH", path, e.mgmt, c.body).want(t, http.StatusOK))
		want := resPatched(cur, c.body, c.apply)
		if b, ok := want["limit_usd"].(int); ok {
			want["limit_usd"] = float64(b)
		}
		want["updated_at"] = e.now()
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.name, diff)
		}
		cur = got
	}
	if diff := cmp.Diff(cur, resData(t, e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK))); diff != "" {
		t.Errorf("GET after updates (-want +got):\n%s", diff)
	}

	t.Run("refused", func(t *testing.T) {
		e := e.sub(t)
		for _, c := range []struct {
			name   string
			body   map[string]any
			status int
			field  string
		}{
			{"workspace_id", map[string]any{"workspace_id": "default"}, 400, "workspace_id"},
			{"taken name", map[string]any{"name": "other"}, 409, "name"},
			{"null name", map[string]any{"name": nil}, 400, "name"},
			{"limit cleared alone", map[string]any{"limit_usd": nil}, 400, "limit_usd"},
			{"reset cleared alone", map[string]any{"reset_interval": nil}, 400, "limit_usd"},
			{"empty array", map[string]any{"ignored_models": []any{}}, 400, "ignored_models"},
			{"bad regex", map[string]any{"content_filters": []any{map[string]any{"pattern": "[", "action": "flag"}}}, 400, "content_filters[0].pattern"},
			{"null include_byok", map[string]any{"include_byok_in_budgets": nil}, 400, "include_byok_in_budgets"},
			{"reserved name", map[string]any{"name": gatehouse.DefaultGuardrailName(g["workspace_id"].(string))}, 400, "name"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("PATCH", path, e.mgmt, c.body), c.status, c.field)
			})
		}
		e.unchanged("unknown", func() {
			resWantError(t, e.do("PATCH", "/api/v1/guardrails/00000000-0000-4000-8000-000000000000", e.mgmt,
				map[string]any{"name": "x"}), http.StatusNotFound, "not found")
			resWantError(t, e.do("PATCH", "/api/v1/guardrails/nope", e.mgmt, map[string]any{"name": "x"}), http.StatusNotFound, "not found")
		})
	})
}

func TestGuardrailDelete(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	m := e.addMember(e.mgmt, "m@example.com")
	k, _ := e.createKey(e.mgmt, map[string]any{"name": "k"})
	g := e.createGuardrail(e.mgmt, map[string]any{"name": "doomed"})["id"].(string)
	other := e.createGuardrail(e.mgmt, map[string]any{"name": "other"})["id"].(string)
	e.assigned(e.mgmt, "/api/v1/guardrails/"+g+"/assignments/keys", "assigned_count", map[string]any{"key_hashes": []string{k}})
	e.assigned(e.mgmt, "/api/v1/guardrails/"+g+"/assignments/members", "assigned_count", map[string]any{"member_user_ids": []string{m}})

	resWantDeleted(t, e.do("DELETE", "/api/v1/guardrails/"+g, e.mgmt, nil))
	e.unchanged("after delete", func() {
		for _, method := range []string{"GET", "DELETE"} {
			resWantError(t, e.do(method, "/api/v1/guardrails/"+g, e.mgmt, nil), http.StatusNotFound, "not found")
		}
		resWantError(t, e.do("PATCH", "/api/v1/guardrails/"+g, e.mgmt, map[string]any{}), http.StatusNotFound, "not found")
		resWantError(t, e.do("GET", "/api/v1/guardrails/"+g+"/assignments/keys", e.mgmt, nil), http.StatusNotFound, "not found")
		resWantError(t, e.do("DELETE", "/api/v1/guardrails/nope", e.mgmt, nil), http.StatusNotFound, "not found")
	})
	if a := e.assignments(e.mgmt, "/api/v1/guardrails/assignments/keys"); len(a) != 0 {
		t.Errorf("key assignments remain: %v", a)
	}
	if a := e.assignments(e.mgmt, "/api/v1/guardrails/assignments/members"); len(a) != 0 {
		t.Errorf("member assignments remain: %v", a)
	}
	// The key and the member are free for another guardrail.
	if n := e.assigned(e.mgmt, "/api/v1/guardrails/"+other+"/assignments/keys", "assigned_count", map[string]any{"key_hashes": []string{k}}); n != 1 {
		t.Errorf("assigned_count = %d", n)
	}
	if n := e.assigned(e.mgmt, "/api/v1/guardrails/"+other+"/assignments/members", "assigned_count", map[string]any{"member_user_ids": []string{m}}); n != 1 {
		t.Errorf("assigned_count = %d", n)
	}
}

// TestDefaultGuardrail checks a workspace's default guardrail: unknown
// until configured, materialized by its first PATCH, with a fixed name.
func TestDefaultGuardrail(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ws := e.workspace(e.mgmt, "default")
	wsID, id := ws["id"].(string), ws["default_guardrail_id"].(string)
	path := "/api/v1/guardrails/" + id
	fixed := "Workspace " + wsID + " Default"

	// Before it is configured, the workspace's default_guardrail_id
	// resolves: a guardrail without rules, created with the workspace,
	// never updated; its assignment lists are empty. Nothing of this
	// writes.
	unconfigured := map[string]any{"id": id, "name": fixed, "description": nil, "workspace_id": wsID,
		"allowed_models": nil, "allowed_providers": nil, "ignored_models": nil, "ignored_providers": nil,
		"limit_usd": nil, "reset_interval": nil, "include_byok_in_budgets": false, "enforce_zdr": nil,
		"enforce_zdr_anthropic": nil, "enforce_zdr_openai": nil, "enforce_zdr_google": nil, "enforce_zdr_xai": nil,
		"enforce_zdr_other": nil, "enable_free_model_publication": nil, "enable_free_model_training": nil,
		"enable_paid_model_training": nil, "allowed_data_regions": nil, "content_filters": nil,
		"content_filter_builtins": nil, "created_at": ws["created_at"], "updated_at": nil}
	_, otherKey := e.newOrg("Org B")
	e.unchanged("before configuration", func() {
		if diff := cmp.Diff(unconfigured, resData(t, e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK))); diff != "" {
			t.Errorf("GET of the unconfigured default guardrail (-want +got):\n%s", diff)
		}
		for _, list := range []string{"/assignments/keys", "/assignments/members"} {
			if items, total := resList(t, e.do("GET", path+list, e.mgmt, nil).want(t, http.StatusOK)); len(items) != 0 || total != 0 {
				t.Errorf("GET %s of the unconfigured default guardrail = %v (%d)", list, items, total)
			}
		}
		resWantError(t, e.do("DELETE", path, e.mgmt, nil), http.StatusNotFound, "not found")
		resWantError(t, e.do("POST", path+"/assignments/members", e.mgmt, map[string]any{"member_user_ids": []string{"u"}}),
			http.StatusBadRequest, "member_user_ids")
		resWantError(t, e.do("PATCH", path, e.mgmt, map[string]any{"name": "Mine"}), http.StatusBadRequest, "name")
		resWantError(t, e.do("POST", "/api/v1/guardrails", e.mgmt, map[string]any{"name": fixed}), http.StatusBadRequest, "name")
		// Another organization's is not found.
		resWantError(t, e.do("GET", path, otherKey, nil), http.StatusNotFound, "not found")
	})
	if items, _ := resList(t, e.do("GET", "/api/v1/guardrails", e.mgmt, nil).want(t, http.StatusOK)); len(items) != 0 {
		t.Errorf("unconfigured default guardrail listed: %v", items)
	}

	g := resData(t, e.do("PATCH", path, e.mgmt, map[string]any{"limit_usd": 10, "reset_interval": "monthly"}).want(t, http.StatusOK))
	if g["id"] != id || g["name"] != fixed || g["workspace_id"] != wsID || g["limit_usd"] != 10.0 {
		t.Errorf("materialized default guardrail = %v", g)
	}
	if diff := cmp.Diff(g, resData(t, e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK))); diff != "" {
		t.Errorf("GET (-want +got):\n%s", diff)
	}
	items, _ := resList(t, e.do("GET", "/api/v1/guardrails", e.mgmt, nil).want(t, http.StatusOK))
	if diff := cmp.Diff([]string{id}, resField(items, "id")); diff != "" {
		t.Errorf("list (-want +got):\n%s", diff)
	}
	e.unchanged("rename default guardrail", func() {
		resWantError(t, e.do("PATCH", path, e.mgmt, map[string]any{"name": "Renamed"}), http.StatusBadRequest, "name")
	})
	e.do("PATCH", path, e.mgmt, map[string]any{"name": fixed, "description": "ours"}).want(t, http.StatusOK)

	// Another guardrail cannot take the name.
	other := e.createGuardrail(e.mgmt, map[string]any{"name": "other"})["id"].(string)
	e.unchanged("rename to the default name", func() {
		resWantError(t, e.do("PATCH", "/api/v1/guardrails/"+other, e.mgmt, map[string]any{"name": fixed}), http.StatusBadRequest, "name")
	})

	// Assignments work on it like on any guardrail.
	k, _ := e.createKey(e.mgmt, map[string]any{"name": "k"})
	if n := e.assigned(e.mgmt, path+"/assignments/keys", "assigned_count", map[string]any{"key_hashes": []string{k}}); n != 1 {
		t.Errorf("assigned_count = %d", n)
	}

	// Deleted, it is unconfigured again; the next PATCH brings it back.
	resWantDeleted(t, e.do("DELETE", path, e.mgmt, nil))
	if diff := cmp.Diff(unconfigured, resData(t, e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK))); diff != "" {
		t.Errorf("GET after DELETE (-want +got):\n%s", diff)
	}
	g = resData(t, e.do("PATCH", path, e.mgmt, map[string]any{}).want(t, http.StatusOK))
	if g["name"] != fixed || g["limit_usd"] != nil {
		t.Errorf("re-materialized = %v", g)
	}

	// Each workspace has its own.
	team := e.workspace(e.mgmt, e.createWorkspace(e.mgmt, "team"))
	tg := resData(t, e.do("PATCH", "/api/v1/guardrails/"+team["default_guardrail_id"].(string), e.mgmt,
		map[string]any{"allowed_providers": []any{"openai"}}).want(t, http.StatusOK))
	if tg["workspace_id"] != team["id"] || tg["name"] != "Workspace "+team["id"].(string)+" Default" {
		t.Errorf("team default guardrail = %v", tg)
	}
}
