package httpapi_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// TestGetGeneration: a key sees its own generations, a management key those
// of its organization; anything else is 404.
func TestGetGeneration(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, map[string]any{"limit": 5})
	var answer struct {
		ID string `json:"id"`
	}
	e.chat(e.key, chatBody("acme/chat", "max_tokens", 20)).want(t, http.StatusOK).decode(t, &answer)
	path := "/api/v1/generation?id=" + url.QueryEscape(answer.ID)
	_, sibling := e.createKey(e.mgmt, map[string]any{"name": "sibling"})
	_, mgmtB := e.newOrg("Org B")
	_, keyB := e.createKey(mgmtB, map[string]any{"name": "b"})

	var own, byMgmt struct {
		Data map[string]any `json:"data"`
	}
	e.do("GET", path, e.key, nil).want(t, http.StatusOK).decode(t, &own)
	e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK).decode(t, &byMgmt)
	if own.Data["id"] != answer.ID || byMgmt.Data["id"] != answer.ID {
		t.Errorf("generation %v / %v", own.Data["id"], byMgmt.Data["id"])
	}
	var money struct {
		Data struct {
			TotalCost gatehouse.Money `json:"total_cost"`
			Usage     gatehouse.Money `json:"usage"`
		} `json:"data"`
	}
	e.do("GET", path, e.key, nil).want(t, http.StatusOK).decode(t, &money)
	if cost := chatCost(11, 7); money.Data.TotalCost != cost || money.Data.Usage != cost {
		t.Errorf("total_cost %s usage %s, want %s", money.Data.TotalCost, money.Data.Usage, cost)
	}
	wantWorkspace := e.workspaceIDOf(e.mgmt, "default")
	for k, want := range map[string]any{"workspace_id": wantWorkspace, "data_region": "global", "origin": "",
		"native_tokens_prompt": 11.0, "native_tokens_completion": 7.0, "app_id": nil} {
		if own.Data[k] != want {
			t.Errorf("%s = %v, want %v", k, own.Data[k], want)
		}
	}
	// The one attempt: the provider's endpoint and its answer.
	attempts, _ := own.Data["provider_responses"].([]any)
	if len(attempts) != 1 {
		t.Fatalf("provider_responses = %v, want one attempt", own.Data["provider_responses"])
	}
	a := attempts[0].(map[string]any)
	if a["endpoint_id"] != "acme/chat" || a["provider_name"] != "acme" || a["status"] != 200.0 || a["id"] != "chatcmpl-up" ||
		a["model_permaslug"] != "acme/chat" || a["is_byok"] != false {
		t.Errorf("provider_responses[0] = %v", a)
	}

	e.unchanged("refused lookups", func() {
		for name, c := range map[string]struct {
			key, path string
			status    int
		}{
			"another key of the organization": {sibling, path, http.StatusNotFound},
			"another organization":            {mgmtB, path, http.StatusNotFound},
			"another organization's key":      {keyB, path, http.StatusNotFound},
			"unknown id":                      {e.key, "/api/v1/generation?id=gen-unknown", http.StatusNotFound},
			"no id":                           {e.key, "/api/v1/generation", http.StatusBadRequest},
			"empty id":                        {e.mgmt, "/api/v1/generation?id=", http.StatusBadRequest},
			"NUL in id":                       {e.mgmt, "/api/v1/generation?id=gen%00x", http.StatusBadRequest},
			"invalid UTF-8 id":                {e.key, "/api/v1/generation?id=%ff", http.StatusBadRequest},
			"no key":                          {"", path, http.StatusUnauthorized},
		} {
			if res := e.do("GET", c.path, c.key, nil); res.Status != c.status {
				t.Errorf("%s: %d %s, want %d", name, res.Status, res.Body, c.status)
			}
		}
	})
}

func TestListModels(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	type model struct {
		ID            string `json:"id"`
		CanonicalSlug string `json:"canonical_slug"`
		Name          string `json:"name"`
		ContextLength *int   `json:"context_length"`
		Pricing       struct {
			Prompt, Completion string
		} `json:"pricing"`
		TopProvider struct {
			MaxCompletionTokens *int `json:"max_completion_tokens"`
		} `json:"top_provider"`
	}
	var list struct {
		Data  []model `json:"data"`
		Links struct {
			Next *string `json:"next"`
		} `json:"links"`
		TotalCount int `json:"total_count"`
	}
	// Public: no credential needed, and one sent (even a bad one) is ignored.
	for _, key := range []string{"", e.key, e.mgmt, gatehouse.NewKeySecret(false)} {
		e.do("GET", "/api/v1/models", key, nil).want(t, http.StatusOK).decode(t, &list)
	}
	if list.TotalCount != 3 || len(list.Data) != 3 || list.Links.Next != nil {
		t.Fatalf("list %+v", list)
	}
	chat, exact, mini := list.Data[0], list.Data[1], list.Data[2]
	if chat.ID != "acme/chat" || chat.CanonicalSlug != "acme/chat" || chat.Name != "Acme Chat" ||
		chat.ContextLength == nil || *chat.ContextLength != 8192 ||
		chat.TopProvider.MaxCompletionTokens == nil || *chat.TopProvider.MaxCompletionTokens != chatMaxTokens {
		t.Errorf("acme/chat %+v", chat)
	}
	for _, c := range []struct {
		m                  model
		prompt, completion string
	}{
		{chat, "0.000000333333333", "0.0000015"},
		{exact, "0", "0.001"},
		{mini, "0.000001", "0.000002"},
	} {
		if c.m.Pricing.Prompt != c.prompt || c.m.Pricing.Completion != c.completion {
			t.Errorf("%s pricing %+v, want %s / %s per token", c.m.ID, c.m.Pricing, c.prompt, c.completion)
		}
	}
	if mini.ID != "other/mini" || mini.Name != "other/mini" || mini.ContextLength != nil {
		t.Errorf("other/mini %+v", mini)
	}

	// Without a data plane configured, the list is empty.
	empty := newEnv(t)
	empty.do("GET", "/api/v1/models", "", nil).want(t, http.StatusOK).decode(t, &list)
	if list.TotalCount != 0 || len(list.Data) != 0 {
		t.Errorf("empty catalog lists %+v", list)
	}
}

// storeGeneration records a generation of a key in the ledger, with its
// content, as the gateway does once a call is answered; it returns its id.
func (e *testEnv) storeGeneration(keyHash string) string {
	e.t.Helper()
	ctx := context.Background()
	k, err := e.db.FindKeyByHash(ctx, keyHash)
	if err != nil {
		e.t.Fatal(err)
	}
	r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 1000, ExpiresAt: e.clock.Now().Add(time.Minute)}
	if err := e.db.Reserve(ctx, r); err != nil {
		e.t.Fatal(err)
	}
	completion := "Hello"
	g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: k.OrganizationID, WorkspaceID: k.WorkspaceID,
		KeyHash: k.Hash, Model: "acme/chat", Provider: "acme", Cost: 1000, Status: gatehouse.GenerationCompleted,
		Content: &gatehouse.GenerationContent{Messages: json.RawMessage(`[{"role":"user","content":"hi"}]`), Completion: &completion}}
	if err := e.db.Settle(ctx, r.ID, g); err != nil {
		e.t.Fatal(err)
	}
	return g.ID
}
