package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// savePreset makes a version of preset slug from body, sent to the create
// operation of api ("chat/completions", "messages" or "responses"), and
// returns the answer's data.
func (e *testEnv) savePreset(mgmt, api, slug string, body map[string]any, query string) map[string]any {
	e.t.Helper()
	res := e.do("POST", "/api/v1/presets/"+slug+"/"+api+query, mgmt, body).want(e.t, http.StatusOK)
	return res.json(e.t)["data"].(map[string]any)
}

// supportBot is the body of a chat request from which the tests make
// preset support-bot.
func supportBot(temperature float64) map[string]any {
	return map[string]any{
		"model": "acme/chat", "temperature": temperature, "max_tokens": 40, "top_p": 0.9, "stop": []any{"END"},
		"messages": []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "ignored"}},
		"stream":   true, "user": "ignored",
	}
}

func TestPresetOperations(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	mgmtHash := gatehouse.HashKey(e.mgmt)
	def := e.workspaceIDOf(e.mgmt, "default")

	created := e.savePreset(e.mgmt, "chat/completions", "support-bot", supportBot(0.3), "")
	v1 := created["designated_version"].(map[string]any)
	wantPreset := map[string]any{
		"id": created["id"], "name": "support-bot", "slug": "support-bot", "description": nil, "status": "active",
		"status_updated_at": nil, "creator_user_id": nil, "workspace_id": def, "designated_version_id": v1["id"],
		"created_at": "2027-03-17T10:30:00.000Z", "updated_at": "2027-03-17T10:30:00.000Z",
		"designated_version": map[string]any{
			"id": v1["id"], "preset_id": created["id"], "version": float64(1), "creator_id": mgmtHash,
			"config": map[string]any{"model": "acme/chat", "temperature": 0.3, "max_tokens": float64(40), "top_p": 0.9,
				"stop": []any{"END"}},
			"system_prompt": "Be brief.", "created_at": "2027-03-17T10:30:00.000Z", "updated_at": "2027-03-17T10:30:00.000Z",
		},
	}
	if diff := cmp.Diff(wantPreset, created); diff != "" {
		t.Fatalf("created preset (-want +got):\n%s", diff)
	}
	got := e.do("GET", "/api/v1/presets/support-bot", e.mgmt, nil).want(t, http.StatusOK).json(t)["data"]
	if diff := cmp.Diff(wantPreset, got); diff != "" {
		t.Errorf("GET /presets/support-bot (-want +got):\n%s", diff)
	}

	// The same configuration again makes no version and leaves no entry.
	_, entries := e.auditLog(e.mgmt, "?resource_type=preset")
	e.clock.Set(testStart.Add(time.Hour))
	if again := e.savePreset(e.mgmt, "chat/completions", "support-bot", supportBot(0.3), ""); !cmp.Equal(wantPreset, again) {
		t.Errorf("saving the same configuration again changed the preset: %v", again)
	}
	if _, n := e.auditLog(e.mgmt, "?resource_type=preset"); n != entries {
		t.Errorf("saving the same configuration left an audit entry (%d, had %d)", n, entries)
	}

	// A Messages body makes version 2, the designated one.
	second := e.savePreset(e.mgmt, "messages", "support-bot", map[string]any{
		"model": "acme/chat", "max_tokens": 64, "system": "Be kind.", "messages": []any{}}, "")
	v2 := second["designated_version"].(map[string]any)
	if v2["version"] != float64(2) || second["updated_at"] != "2027-03-17T11:30:00.000Z" || second["created_at"] != created["created_at"] ||
		second["designated_version_id"] != v2["id"] || !cmp.Equal(v2["config"], map[string]any{"model": "acme/chat", "max_tokens": float64(64)}) {
		t.Errorf("second version: %v", second)
	}

	list := e.do("GET", "/api/v1/presets", e.mgmt, nil).want(t, http.StatusOK).json(t)
	wantItem := map[string]any{}
	for k, v := range second {
		if k != "designated_version" {
			wantItem[k] = v
		}
	}
	if diff := cmp.Diff(map[string]any{"data": []any{wantItem}, "total_count": float64(1)}, list); diff != "" {
		t.Errorf("GET /presets (-want +got):\n%s", diff)
	}
	versions := e.do("GET", "/api/v1/presets/support-bot/versions", e.mgmt, nil).want(t, http.StatusOK).json(t)
	if diff := cmp.Diff(map[string]any{"data": []any{wantPreset["designated_version"], v2}, "total_count": float64(2)}, versions); diff != "" {
		t.Errorf("GET /presets/support-bot/versions (-want +got):\n%s", diff)
	}
	one := e.do("GET", "/api/v1/presets/support-bot/versions/1", e.mgmt, nil).want(t, http.StatusOK).json(t)["data"]
	if diff := cmp.Diff(wantPreset["designated_version"], one); diff != "" {
		t.Errorf("GET /presets/support-bot/versions/1 (-want +got):\n%s", diff)
	}
	e.runUnchanged(t, "refusals", func(t *testing.T, e *testEnv) {
		for _, c := range []struct {
			method, path string
			body         any
			status       int
			substr       string
		}{
			{"GET", "/api/v1/presets/support-bot/versions/3", nil, 404, `preset "support-bot" has no version 3 (its latest is 2)`},
			{"GET", "/api/v1/presets/support-bot/versions/0", nil, 404, "a version is a positive integer"},
			{"GET", "/api/v1/presets/no-such-bot", nil, 404, "preset not found"},
			{"GET", "/api/v1/presets/No_Such_Bot", nil, 404, "no preset can be named"},
			{"POST", "/api/v1/presets/No_Such_Bot/responses", map[string]any{}, 404, "no preset can be named"},
			{"POST", "/api/v1/presets/support-bot/chat/completions", map[string]any{"model": "acme/nope"}, 400, `model: unknown model "acme/nope"`},
			{"POST", "/api/v1/presets/support-bot/chat/completions", map[string]any{"models": []any{"acme/chat", "acme/nope"}}, 400, `models[1]: unknown model "acme/nope"`},
			{"POST", "/api/v1/presets/support-bot/messages", map[string]any{"tools": []any{map[string]any{"type": "web_search_20250305", "name": "web_search"}}}, 400, "tools[0].type"},
			{"POST", "/api/v1/presets/support-bot/responses", map[string]any{"provider": map[string]any{"quantizations": []any{"fp9"}}}, 400, "provider.quantizations[0]: must be one of"},
			{"POST", "/api/v1/presets/support-bot/responses", map[string]any{"bogus": 1}, 400, "bogus: unknown field"},
			{"POST", "/api/v1/presets/support-bot/responses?workspace_id=no-such-ws", map[string]any{}, 404, "workspace not found"},
		} {
			res := e.do(c.method, c.path, e.mgmt, c.body).want(t, c.status)
			if msg := res.errorMessage(t); !strings.Contains(msg, c.substr) {
				t.Errorf("%s %s: message %q, want %q", c.method, c.path, msg, c.substr)
			}
		}
	})

	// Another workspace has presets of its own, reached with workspace_id.
	e.createWorkspace(e.mgmt, "team-b")
	inB := e.savePreset(e.mgmt, "responses", "support-bot", map[string]any{"model": "other/mini", "instructions": "Team B."}, "?workspace_id=team-b")
	if inB["id"] == created["id"] || inB["designated_version"].(map[string]any)["version"] != float64(1) {
		t.Errorf("the same slug in another workspace: %v", inB)
	}
	for path, want := range map[string]float64{"/api/v1/presets?workspace_id=team-b": 1, "/api/v1/presets": 1, "/api/v1/presets?limit=1&offset=1": 1} {
		if n := e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK).json(t)["total_count"]; n != want {
			t.Errorf("GET %s: total_count %v", path, n)
		}
	}

	// Every change is in the audit log, with the preset's id.
	log, _ := e.auditLog(e.mgmt, "?resource_type=preset")
	var ops []string
	for _, entry := range log {
		ops = append(ops, entry["operation"].(string))
		if ids := entry["resource_ids"].([]any); len(ids) != 1 || (ids[0] != created["id"] && ids[0] != inB["id"]) {
			t.Errorf("audit entry names %v", ids)
		}
	}
	if diff := cmp.Diff([]string{"preset.create", "preset.version.create", "preset.create"}, ops); diff != "" {
		t.Errorf("audit operations, newest first (-want +got):\n%s", diff)
	}
}

func TestPresetTenancy(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	e.savePreset(e.mgmt, "chat/completions", "ours", map[string]any{"temperature": 0.1,
		"messages": []any{map[string]any{"role": "system", "content": "Our secret prompt."}}}, "")
	wsA := e.createWorkspace(e.mgmt, "team-a")
	e.savePreset(e.mgmt, "chat/completions", "team-only", map[string]any{"top_p": 0.5}, "?workspace_id=team-a")
	_, mgmtB := e.newOrg("Org B")
	defA := e.workspaceIDOf(e.mgmt, "default")
	e.unchanged("org B on org A's presets", func() {
		for _, path := range []string{
			"/api/v1/presets/ours", "/api/v1/presets/ours/versions", "/api/v1/presets/ours/versions/1",
			"/api/v1/presets/team-only?workspace_id=" + wsA, "/api/v1/presets?workspace_id=" + defA,
			"/api/v1/presets?workspace_id=team-a", "/api/v1/presets/ours?workspace_id=" + defA,
		} {
			e.do("GET", path, mgmtB, nil).want(t, http.StatusNotFound)
		}
		for _, api := range []string{"chat/completions", "messages", "responses"} {
			e.do("POST", "/api/v1/presets/ours/"+api+"?workspace_id="+defA, mgmtB, map[string]any{}).want(t, http.StatusNotFound)
		}
		list := e.do("GET", "/api/v1/presets", mgmtB, nil).want(t, http.StatusOK)
		if strings.Contains(string(list.Body), "ours") || list.json(t)["total_count"] != float64(0) {
			t.Errorf("org B lists org A's presets: %s", list.Body)
		}
	})
	// B's preset of the same name is its own, and A's is untouched.
	theirs := e.savePreset(mgmtB, "chat/completions", "ours", map[string]any{"temperature": 1}, "")
	if theirs["designated_version"].(map[string]any)["version"] != float64(1) {
		t.Errorf("org B's preset: %v", theirs)
	}
	mine := e.do("GET", "/api/v1/presets/ours", e.mgmt, nil).want(t, http.StatusOK).json(t)["data"].(map[string]any)
	if mine["designated_version"].(map[string]any)["system_prompt"] != "Our secret prompt." || mine["id"] == theirs["id"] {
		t.Errorf("org A's preset after org B saved its own: %v", mine)
	}
}

// upstreamBody returns the last request the fake provider received.
func (e *chatEnv) upstreamBody() map[string]any {
	e.t.Helper()
	reqs := e.up.requests()
	if len(reqs) == 0 {
		e.t.Fatal("the provider received nothing")
	}
	return reqs[len(reqs)-1]
}

func TestChatWithPreset(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.savePreset(e.mgmt, "chat/completions", "support-bot", supportBot(0.3), "")
	user := map[string]any{"role": "user", "content": "hi"}
	system := map[string]any{"role": "system", "content": "Be brief."}

	for _, c := range []struct {
		name    string
		request map[string]any
		model   string         // the upstream's name for the model called
		want    map[string]any // fields of the upstream request
	}{
		{"@preset/slug: the preset's model and settings, the request's fields winning",
			map[string]any{"model": "@preset/support-bot", "messages": []any{user}, "temperature": 1},
			"chat", map[string]any{"temperature": 1.0, "top_p": 0.9, "stop": []any{"END"}, "max_tokens": 40.0, "max_completion_tokens": 40.0}},
		{"provider/model@preset/slug: the request's model, the preset's settings",
			map[string]any{"model": "other/mini@preset/support-bot", "messages": []any{user}},
			"mini", map[string]any{"temperature": 0.3, "top_p": 0.9, "max_tokens": 40.0}},
		{"the preset field", map[string]any{"preset": "support-bot", "messages": []any{user}, "max_tokens": 5},
			"chat", map[string]any{"temperature": 0.3, "max_tokens": 5.0, "max_completion_tokens": 5.0}},
		{"the preset field beside a model", map[string]any{"preset": "support-bot@1", "model": "other/mini", "messages": []any{user}},
			"mini", map[string]any{"temperature": 0.3}},
	} {
		res := e.chat(e.key, c.request).want(t, http.StatusOK)
		sent := e.upstreamBody()
		if sent["model"] != c.model {
			t.Errorf("%s: upstream model %v, want %s", c.name, sent["model"], c.model)
		}
		if diff := cmp.Diff([]any{system, user}, sent["messages"]); diff != "" {
			t.Errorf("%s: upstream messages (-want +got):\n%s", c.name, diff)
		}
		for k, v := range c.want {
			if sent[k] != nil && !cmp.Equal(sent[k], v) || sent[k] == nil {
				t.Errorf("%s: upstream %s = %v, want %v", c.name, k, sent[k], v)
			}
		}
		for _, k := range []string{"preset", "provider", "user"} { // Gatehouse's, and one the preset ignored
			if _, ok := sent[k]; ok {
				t.Errorf("%s: upstream got %s", c.name, k)
			}
		}
		if got := res.json(t)["model"]; got != "acme/"+c.model && got != "other/"+c.model {
			t.Errorf("%s: answer's model %v", c.name, got)
		}
	}

	// Versions: the latest unless the request pins one.
	e.savePreset(e.mgmt, "chat/completions", "support-bot", supportBot(0.7), "")
	for ref, want := range map[string]float64{"@preset/support-bot": 0.7, "@preset/support-bot@1": 0.3, "@preset/support-bot@2": 0.7} {
		e.chat(e.key, map[string]any{"model": ref, "messages": []any{user}}).want(t, http.StatusOK)
		if got := e.upstreamBody()["temperature"]; got != want {
			t.Errorf("%s: temperature %v, want %v", ref, got, want)
		}
	}

	// A preset in another workspace, or of another organization, is
	// unknown to the key; a key of that workspace uses it.
	e.createWorkspace(e.mgmt, "team-b")
	e.savePreset(e.mgmt, "chat/completions", "team-bot", map[string]any{"model": "acme/chat"}, "?workspace_id=team-b")
	_, keyB := e.createKey(e.mgmt, map[string]any{"name": "team b", "workspace_id": "team-b"})
	e.chat(keyB, map[string]any{"model": "@preset/team-bot", "messages": []any{user}}).want(t, http.StatusOK)
	_, mgmtB := e.newOrg("Org B")
	e.savePreset(mgmtB, "chat/completions", "their-bot", map[string]any{"model": "acme/chat"}, "")
	e.savePreset(e.mgmt, "chat/completions", "no-model", map[string]any{"temperature": 0.1}, "")
	e.savePreset(e.mgmt, "chat/completions", "elsewhere", map[string]any{"provider": map[string]any{"only": []any{"other"}}}, "")

	calls := len(e.up.requests())
	for _, c := range []struct {
		name    string
		request map[string]any
		field   string
		substr  string
	}{
		{"another workspace's preset", map[string]any{"model": "@preset/team-bot"}, "model", `unknown preset "team-bot" in the key's workspace`},
		{"another organization's preset", map[string]any{"model": "@preset/their-bot"}, "model", `unknown preset "their-bot"`},
		{"an unknown version", map[string]any{"model": "@preset/support-bot@9"}, "model", `preset "support-bot" has no version 9 (its latest is 2)`},
		{"an unknown preset in the preset field", map[string]any{"preset": "nope", "model": "acme/chat"}, "preset", `unknown preset "nope"`},
		{"two presets", map[string]any{"preset": "support-bot", "model": "@preset/support-bot"}, "preset", "name one preset"},
		{"a malformed reference", map[string]any{"model": "@preset/Support_Bot"}, "model", "a preset slug must be"},
		{"no model anywhere", map[string]any{"model": "@preset/no-model"}, "model", `preset "no-model" (version 1) names no model`},
		{"the preset's provider preferences", map[string]any{"model": "acme/chat@preset/elsewhere"}, "provider.only",
			`model acme/chat is served by provider acme, which is not in the list (with preset "elsewhere" version 1 applied)`},
		{"a bad field of the request", map[string]any{"model": "@preset/support-bot", "max_tokens": 0}, "max_tokens", "must be a positive integer"},
		{"n", map[string]any{"model": "@preset/support-bot", "n": 2}, "n", "must be 1"},
	} {
		c.request["messages"] = []any{user}
		res := e.chat(e.key, c.request)
		if res.Status != http.StatusBadRequest {
			t.Errorf("%s: status %d, want 400: %s", c.name, res.Status, res.Body)
			continue
		}
		got := res.apiError(t)
		if got.Metadata["field"] != c.field || !strings.Contains(got.Message, c.substr) {
			t.Errorf("%s: error %+v, want field %s and %q", c.name, got, c.field, c.substr)
		}
	}
	if n := len(e.up.requests()); n != calls {
		t.Errorf("refused requests reached the provider (%d calls, had %d)", n, calls)
	}
}

// TestPresetCannotWidenKey checks that a preset can do nothing the key
// could not do itself: what it puts into a request is refused exactly as
// the same request without a preset is.
func TestPresetCannotWidenKey(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, map[string]any{"limit": 0.01})
	g := e.guardrail(map[string]any{"allowed_models": []string{"acme/chat"}, "ignored_providers": []string{"other"}})
	e.assign(g, "keys", e.hash)
	e.savePreset(e.mgmt, "chat/completions", "denied-model", map[string]any{"model": "acme/exact"}, "")
	e.savePreset(e.mgmt, "chat/completions", "denied-provider", map[string]any{"model": "other/mini"}, "")
	e.savePreset(e.mgmt, "chat/completions", "allowed", map[string]any{"model": "acme/chat", "max_tokens": 1}, "")
	e.savePreset(e.mgmt, "chat/completions", "costly", map[string]any{"model": "acme/chat", "max_tokens": 10_000_000}, "")
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}

	for _, c := range []struct {
		name           string
		direct, preset map[string]any
		status         int
	}{
		{"a model the guardrail does not allow", map[string]any{"model": "acme/exact"}, map[string]any{"model": "@preset/denied-model"}, http.StatusForbidden},
		{"a provider the guardrail ignores", map[string]any{"model": "other/mini"}, map[string]any{"model": "@preset/denied-provider"}, http.StatusForbidden},
		{"the request's own model, through an allowed preset", map[string]any{"model": "acme/exact"}, map[string]any{"model": "acme/exact@preset/allowed"}, http.StatusForbidden},
		{"the preset field with a denied model", map[string]any{"model": "acme/exact"}, map[string]any{"preset": "allowed", "model": "acme/exact"}, http.StatusForbidden},
		{"a cap past the key's limit", map[string]any{"model": "acme/chat", "max_tokens": 10_000_000}, map[string]any{"model": "@preset/costly"}, http.StatusPaymentRequired},
	} {
		c.direct["messages"], c.preset["messages"] = msgs, msgs
		direct := e.chat(e.key, c.direct).want(t, c.status).apiError(t)
		via := e.chat(e.key, c.preset).want(t, c.status).apiError(t)
		if c.status == http.StatusPaymentRequired {
			// The request's length counts in its worst case, and the two
			// requests differ in length: the same refusal, other figures.
			direct.Message, via.Message = direct.Message[:strings.Index(direct.Message, ":")], via.Message[:strings.Index(via.Message, ":")]
			delete(direct.Metadata, "request_max_cost")
			delete(via.Metadata, "request_max_cost")
		}
		if diff := cmp.Diff(direct, via); diff != "" {
			t.Errorf("%s: the preset's refusal differs from the request's own (-direct +preset):\n%s", c.name, diff)
		}
	}
	if len(e.up.requests()) != 0 {
		t.Errorf("refused requests reached the provider")
	}
	e.wantNothingCharged(e.hash)
	// What the guardrail and the limit allow passes, with the preset's cap.
	e.chat(e.key, map[string]any{"model": "@preset/allowed", "messages": msgs}).want(t, http.StatusOK)
	if got := e.upstreamBody()["max_tokens"]; got != 1.0 {
		t.Errorf("upstream max_tokens %v, want the preset's 1", got)
	}
}

// TestPresetReservesWhatItSends checks that the reservation covers what a
// preset adds: its cap is the one reserved, and its system prompt counts in
// the request's length.
func TestPresetReservesWhatItSends(t *testing.T) {
	t.Parallel()
	// acme/chat reserves the worst case of its 256-token default cap: more
	// than $0.0002 with any prompt; with a 40-token cap, a short request
	// stays under it, and a long system prompt takes it over.
	e := newChatEnv(t, nil, map[string]any{"limit": 0.0002})
	e.savePreset(e.mgmt, "chat/completions", "capped", map[string]any{"model": "acme/chat", "max_tokens": 40}, "")
	e.savePreset(e.mgmt, "chat/completions", "verbose", map[string]any{"model": "acme/chat", "max_tokens": 40,
		"messages": []any{map[string]any{"role": "system", "content": strings.Repeat("Long instructions. ", 50)}}}, "")
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	e.chat(e.key, map[string]any{"model": "acme/chat", "messages": msgs}).want(t, http.StatusPaymentRequired)
	e.chat(e.key, map[string]any{"model": "@preset/verbose", "messages": msgs}).want(t, http.StatusPaymentRequired)
	e.chat(e.key, map[string]any{"model": "@preset/capped", "messages": msgs}).want(t, http.StatusOK)
	if got := e.upstreamBody()["max_tokens"]; got != 40.0 {
		t.Errorf("upstream max_tokens %v, want 40", got)
	}
}

func TestChatProviderPreferences(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	msgs := []any{map[string]any{"role": "user", "content": "hi"}}
	for _, prefs := range []map[string]any{
		{"only": []any{"acme"}, "sort": "price", "require_parameters": true},
		{"order": []any{"other"}}, // fallbacks allowed: the model's provider serves it
		{"ignore": []any{"other"}, "max_price": map[string]any{"prompt": 1, "completion": 1.5}},
		{"max_price": map[string]any{"prompt": "0.5", "completion": "1.5"}}, // strings, as the official clients send them
		{"zdr": false, "data_collection": "allow", "quantizations": []any{}},
		{"data_collection": "deny"}, // acme keeps no prompts (it says no collects_data)
	} {
		e.chat(e.key, map[string]any{"model": "acme/chat", "messages": msgs, "provider": prefs}).want(t, http.StatusOK)
		if _, ok := e.upstreamBody()["provider"]; ok {
			t.Errorf("provider preferences %v reached the provider", prefs)
		}
	}
	calls := len(e.up.requests())
	for _, c := range []struct {
		prefs any
		field string
	}{
		{map[string]any{"only": []any{"other"}}, "provider.only"},
		{map[string]any{"ignore": []any{"ACME"}}, "provider.ignore"},
		{map[string]any{"order": []any{"other"}, "allow_fallbacks": false}, "provider.order"},
		{map[string]any{"max_price": map[string]any{"prompt": 0.1}}, "provider.max_price.prompt"},
		{map[string]any{"max_price": map[string]any{"completion": "1.49"}}, "provider.max_price.completion"},
		{map[string]any{"max_price": map[string]any{"prompt": "cheap"}}, "provider.max_price.prompt"},
		{map[string]any{"zdr": true}, "provider.zdr"},
		{map[string]any{"quantizations": []any{"fp8"}}, "provider.quantizations"},
		{map[string]any{"enforce_distillable_text": true}, "provider.enforce_distillable_text"},
		{map[string]any{"sorting": "price"}, "provider.sorting"},
		{map[string]any{"max_price": map[string]any{"tokens": 1}}, "provider.max_price.tokens"},
		{map[string]any{"only": "acme"}, "provider.only"},
		{"acme", "provider"},
	} {
		res := e.chat(e.key, map[string]any{"model": "acme/chat", "messages": msgs, "provider": c.prefs}).want(t, http.StatusBadRequest)
		if got := res.apiError(t); got.Metadata["field"] != c.field {
			t.Errorf("provider %v: error %+v, want field %s", c.prefs, got, c.field)
		}
	}
	res := e.chatRaw(e.key, `{"model":"acme/chat","messages":[{"role":"user","content":"hi"}],"provider":{"only":["acme"],"only":["other"]}}`)
	res.want(t, http.StatusBadRequest)
	if n := len(e.up.requests()); n != calls {
		t.Errorf("refused requests reached the provider")
	}
}
