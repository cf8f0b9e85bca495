package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/httpapi"
)

// answerUsage is the usage of an answer or chunk, with the cost.
type answerUsage struct {
	PromptTokens            int64            `json:"prompt_tokens"`
	CompletionTokens        int64            `json:"completion_tokens"`
	TotalTokens             int64            `json:"total_tokens"`
	Cost                    *gatehouse.Money `json:"cost"`
	IsBYOK                  *bool            `json:"is_byok"`
	PromptTokensDetails     map[string]any   `json:"prompt_tokens_details"`
	CompletionTokensDetails map[string]any   `json:"completion_tokens_details"`
	CostDetails             *struct {
		UpstreamInferenceCost            *gatehouse.Money `json:"upstream_inference_cost"`
		UpstreamInferencePromptCost      gatehouse.Money  `json:"upstream_inference_prompt_cost"`
		UpstreamInferenceCompletionsCost gatehouse.Money  `json:"upstream_inference_completions_cost"`
	} `json:"cost_details"`
}

// generationCost reads what the ledger charged for a generation, as GET
// /generation shows it.
func (e *chatEnv) generationCost(key, id string) gatehouse.Money {
	e.t.Helper()
	var g struct {
		Data struct {
			TotalCost gatehouse.Money `json:"total_cost"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+url.QueryEscape(id), key, nil).want(e.t, http.StatusOK).decode(e.t, &g)
	return g.Data.TotalCost
}

// wantMetered checks that an answer's usage carries the cost the ledger
// charged, split into its prompt and completion parts.
func wantMetered(t *testing.T, u answerUsage, charged gatehouse.Money, byok bool, promptPart gatehouse.Money) {
	t.Helper()
	if u.Cost == nil || *u.Cost != charged {
		t.Errorf("usage.cost %v, want the charged %s", u.Cost, charged)
	}
	if u.IsBYOK == nil || *u.IsBYOK != byok {
		t.Errorf("usage.is_byok %v, want %t", u.IsBYOK, byok)
	}
	if u.TotalTokens != u.PromptTokens+u.CompletionTokens {
		t.Errorf("total_tokens %d, want %d + %d", u.TotalTokens, u.PromptTokens, u.CompletionTokens)
	}
	d := u.CostDetails
	if d == nil {
		t.Fatal("no cost_details")
	}
	if d.UpstreamInferencePromptCost != promptPart || d.UpstreamInferencePromptCost+d.UpstreamInferenceCompletionsCost != charged {
		t.Errorf("cost_details prompt %s + completions %s, want %s + the rest of %s", d.UpstreamInferencePromptCost,
			d.UpstreamInferenceCompletionsCost, promptPart, charged)
	}
	if byok != (d.UpstreamInferenceCost != nil) || (byok && *d.UpstreamInferenceCost != charged) {
		t.Errorf("upstream_inference_cost %v, want the cost for BYOK and null otherwise", d.UpstreamInferenceCost)
	}
}

// TestChatCostInAnswer: a whole answer carries the cost the ledger
// charged, its split, the provider's token details (whole numbers only) and
// its system_fingerprint.
func TestChatCostInAnswer(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) {
		u.fingerprint = "fp_provider1"
		u.tokenDetails = map[string]any{
			"prompt_tokens_details":     map[string]any{"cached_tokens": 4, "audio_tokens": nil, "odd": 1.5},
			"completion_tokens_details": map[string]any{"reasoning_tokens": 3, "rejected_prediction_tokens": -1},
		}
	}, nil)
	var answer struct {
		ID                string      `json:"id"`
		SystemFingerprint string      `json:"system_fingerprint"`
		Usage             answerUsage `json:"usage"`
	}
	e.chat(e.key, chatBody("acme/chat", "max_tokens", 50)).want(t, http.StatusOK).decode(t, &answer)
	charged := e.generationCost(e.key, answer.ID)
	if charged != chatCost(11, 7) {
		t.Fatalf("ledger charged %s, want %s", charged, chatCost(11, 7))
	}
	wantMetered(t, answer.Usage, charged, false, chatCost(11, 0))
	if answer.Usage.PromptTokens != 11 || answer.Usage.CompletionTokens != 7 {
		t.Errorf("tokens %d + %d, want 11 + 7", answer.Usage.PromptTokens, answer.Usage.CompletionTokens)
	}
	wantJSON(t, "prompt_tokens_details", map[string]any{"cached_tokens": 4.0}, answer.Usage.PromptTokensDetails)
	wantJSON(t, "completion_tokens_details", map[string]any{"reasoning_tokens": 3.0}, answer.Usage.CompletionTokensDetails)
	if answer.SystemFingerprint != "fp_provider1" {
		t.Errorf("system_fingerprint %q, want the provider's", answer.SystemFingerprint)
	}

	// A BYOK provider: the cost counts as BYOK, and is the upstream's.
	e.chat(e.key, chatBody("other/mini", "max_tokens", 10)).want(t, http.StatusOK).decode(t, &answer)
	charged = e.generationCost(e.key, answer.ID)
	mini := gatehouse.Money((11*gatehouse.USD(1) + 7*gatehouse.USD(2)) / 1_000_000)
	if charged != mini {
		t.Fatalf("ledger charged %s for other/mini, want %s", charged, mini)
	}
	wantMetered(t, answer.Usage, charged, true, gatehouse.Money(11*gatehouse.USD(1)/1_000_000))
}

// TestChatCostCapped: a provider that bills past the cap it was sent is
// charged (and shows) the reservation; one that reports no usage, too,
// with no tokens.
func TestChatCostCapped(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.overbill = 0, 5 }, nil)
	var answer struct {
		ID    string      `json:"id"`
		Usage answerUsage `json:"usage"`
	}
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 20)).want(t, http.StatusOK).decode(t, &answer)
	charged := e.generationCost(e.key, answer.ID)
	if reserved := gatehouse.USD(1000) / 1_000_000 * 20; charged != reserved {
		t.Fatalf("ledger charged %s, want the reservation %s", charged, reserved)
	}
	wantMetered(t, answer.Usage, charged, false, 0)

	e = newChatEnv(t, func(u *fakeUpstream) { u.noUsage = true }, nil)
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 30)).want(t, http.StatusOK).decode(t, &answer)
	charged = e.generationCost(e.key, answer.ID)
	wantMetered(t, answer.Usage, charged, false, 0)
	if charged != gatehouse.USD(1000)/1_000_000*30 || answer.Usage.PromptTokens != 0 || answer.Usage.CompletionTokens != 0 {
		t.Errorf("no usage reported: charged %s, tokens %d + %d; want the reservation and none", charged,
			answer.Usage.PromptTokens, answer.Usage.CompletionTokens)
	}
}

// sseEvents splits a recorded event stream into its data payloads.
func sseEvents(t *testing.T, body []byte) []string {
	t.Helper()
	var out []string
	for _, event := range strings.Split(string(body), "\n\n") {
		for _, line := range strings.Split(event, "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok {
				out = append(out, data)
			}
		}
	}
	return out
}

// TestChatCostInStream: the stream's usage chunk comes last before
// [DONE], once, with the metered cost; every chunk has a fingerprint.
func TestChatCostInStream(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, fingerprint string
	}{{"provider's fingerprint", "fp_up"}, {"no fingerprint from the provider", ""}} {
		t.Run(tc.name, func(t *testing.T) {
			e := newChatEnv(t, func(u *fakeUpstream) { u.fingerprint = tc.fingerprint }, nil)
			res := e.chat(e.key, chatBody("acme/chat", "stream", true, "max_tokens", 40)).want(t, http.StatusOK)
			events := sseEvents(t, res.Body)
			if len(events) != 4 || events[3] != "[DONE]" {
				t.Fatalf("events %q, want two content chunks, the usage chunk and [DONE]", events)
			}
			var fingerprints []string
			var id string
			for i, data := range events[:3] {
				var chunk struct {
					ID                string       `json:"id"`
					SystemFingerprint *string      `json:"system_fingerprint"`
					Usage             *answerUsage `json:"usage"`
				}
				if err := json.Unmarshal([]byte(data), &chunk); err != nil {
					t.Fatal(err)
				}
				if chunk.SystemFingerprint == nil {
					t.Fatalf("chunk %d has no system_fingerprint: %s", i, data)
				}
				fingerprints = append(fingerprints, *chunk.SystemFingerprint)
				if (chunk.Usage != nil) != (i == 2) {
					t.Fatalf("chunk %d: usage %v; want it on the last chunk only", i, chunk.Usage)
				}
				if chunk.Usage != nil {
					id = chunk.ID
					charged := e.generationCost(e.key, id)
					if charged != chatCost(11, 7) {
						t.Fatalf("ledger charged %s, want %s", charged, chatCost(11, 7))
					}
					wantMetered(t, *chunk.Usage, charged, false, chatCost(11, 0))
				}
			}
			want := tc.fingerprint
			if want == "" {
				want = fingerprints[0]
				if !strings.HasPrefix(want, "fp_gh_") {
					t.Errorf("fingerprint %q, want Gatehouse's", want)
				}
			}
			for _, fp := range fingerprints {
				if fp != want {
					t.Errorf("fingerprints %q, want %q on every chunk", fingerprints, want)
					break
				}
			}
		})
	}
}

// TestGenerationAttribution: the request's referer, title, user agent and
// user are the generation's; the application is the organization's OAuth
// application of the referer's origin.
func TestGenerationAttribution(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	var answer struct {
		ID string `json:"id"`
	}
	e.chatWith(e.key, chatBody("acme/chat", "user", "end-user-42"), map[string]string{
		"HTTP-Referer": "https://myapp.example.com/chat?room=1", "X-Title": "Old Title", "X-OpenRouter-Title": "My App",
		"User-Agent": "my-client/2.0 " + strings.Repeat("x", 600),
	}).want(t, http.StatusOK).decode(t, &answer)
	gen := func() map[string]any {
		var g struct {
			Data map[string]any `json:"data"`
		}
		e.do("GET", "/api/v1/generation?id="+answer.ID, e.mgmt, nil).want(t, http.StatusOK).decode(t, &g)
		return g.Data
	}
	got := gen()
	for k, want := range map[string]any{"http_referer": "https://myapp.example.com/chat?room=1",
		"origin": "https://myapp.example.com", "app_title": "My App", "external_user": "end-user-42", "app_id": nil} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}
	if ua, _ := got["user_agent"].(string); len(ua) != gatehouse.MaxUserAgentLength || !strings.HasPrefix(ua, "my-client/2.0 x") {
		t.Errorf("user_agent %q: want the header cut to %d bytes", ua, gatehouse.MaxUserAgentLength)
	}
	// Once the organization has an application of that origin, it is the
	// generation's.
	code := e.createCode(e.mgmt, map[string]any{"callback_url": "https://myapp.example.com/oauth"})
	if got := gen(); got["app_id"] == nil || code.AppID.String() != jsonNumber(got["app_id"]) {
		t.Errorf("app_id %v, want the application %s of the referer's origin", got["app_id"], code.AppID)
	}

	// X-Title alone names the application; without a user, the key's
	// external user stays.
	_, partnerKey := e.createKey(e.mgmt, map[string]any{"name": "partner", "external": map[string]any{"user": "partner-user"}})
	e.chatWith(partnerKey, chatBody("acme/chat"), map[string]string{"X-Title": "Only Title"}).want(t, http.StatusOK).decode(t, &answer)
	got = gen()
	for k, want := range map[string]any{"app_title": "Only Title", "external_user": "partner-user", "http_referer": nil, "origin": ""} {
		if got[k] != want {
			t.Errorf("%s = %v, want %v", k, got[k], want)
		}
	}

	// A bad user is refused before anything is reserved or sent.
	e.unchanged("bad user", func() {
		for _, user := range []any{5, strings.Repeat("u", 201), "bad\x1buser", "rtl\u202euser"} {
			res := e.chat(e.key, chatBody("acme/chat", "user", user))
			if res.Status != http.StatusBadRequest || !strings.HasPrefix(res.apiError(t).Message, "user") {
				t.Errorf("user %q: %d %s, want 400 naming user", user, res.Status, res.Body)
			}
		}
	})
	if n := len(e.up.requests()); n != 2 {
		t.Errorf("the provider got %d requests, want 2", n)
	}
}

func jsonNumber(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// wantJSON compares two values by their JSON encoding.
func wantJSON(t *testing.T, what string, want, got any) {
	t.Helper()
	w, _ := json.Marshal(want)
	g, _ := json.Marshal(got)
	if string(w) != string(g) {
		t.Errorf("%s = %s, want %s", what, g, w)
	}
}

// contentOf reads a generation's content with key.
func (e *chatEnv) contentOf(key, id string) *response {
	e.t.Helper()
	return e.do("GET", "/api/v1/generation/content?id="+url.QueryEscape(id), key, nil)
}

// logIO turns the I/O logging of a workspace on or off.
func (e *testEnv) logIO(workspace string, on bool) {
	e.t.Helper()
	e.do("PATCH", "/api/v1/workspaces/"+workspace, e.mgmt, map[string]any{"is_observability_io_logging_enabled": on}).
		want(e.t, http.StatusOK)
}

// TestGenerationContent: content is kept for calls made while the workspace
// logs I/O, shown to the generation's key and the organization's
// management keys while it still does, for the retention.
func TestGenerationContent(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.reasoning = "Thinking it over." }, nil)
	var answer struct {
		ID string `json:"id"`
	}
	// Privacy mode (I/O logging off) is the default: no content.
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK).decode(t, &answer)
	private := answer.ID
	res := e.contentOf(e.key, private).want(t, http.StatusForbidden)
	if msg := res.errorMessage(t); !strings.Contains(msg, "is_observability_io_logging_enabled") {
		t.Errorf("message %q does not say how to turn logging on", msg)
	}

	e.logIO("default", true)
	messages := []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "Say hello"}}
	e.chat(e.key, map[string]any{"model": "acme/chat", "messages": messages}).want(t, http.StatusOK).decode(t, &answer)
	whole := answer.ID
	res = e.chat(e.key, chatBody("acme/chat", "stream", true)).want(t, http.StatusOK)
	var chunk struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal([]byte(sseEvents(t, res.Body)[0]), &chunk); err != nil {
		t.Fatal(err)
	}
	streamed := chunk.ID

	type content struct {
		Data struct {
			Error  any `json:"error"`
			Input  struct{ Messages []any }
			Output struct {
				Completion, Reasoning *string
			}
		}
	}
	var c content
	e.contentOf(e.key, whole).want(t, http.StatusOK).decode(t, &c)
	wantJSON(t, "input.messages", messages, c.Data.Input.Messages)
	if c.Data.Output.Completion == nil || *c.Data.Output.Completion != "Hello" || c.Data.Output.Reasoning == nil ||
		*c.Data.Output.Reasoning != "Thinking it over." || c.Data.Error != nil {
		t.Errorf("content %+v", c.Data)
	}
	e.contentOf(e.mgmt, streamed).want(t, http.StatusOK).decode(t, &c)
	if c.Data.Output.Completion == nil || *c.Data.Output.Completion != "Hello" || *c.Data.Output.Reasoning != "Thinking it over." {
		t.Errorf("streamed content %+v", c.Data.Output)
	}
	// A call made while private stays without content.
	e.contentOf(e.key, private).want(t, http.StatusNotFound)

	_, sibling := e.createKey(e.mgmt, map[string]any{"name": "sibling"})
	_, mgmtB := e.newOrg("Org B")
	e.unchanged("refused reads", func() {
		for name, c := range map[string]struct {
			key, id string
			status  int
		}{
			"another key of the organization": {sibling, whole, http.StatusNotFound},
			"another organization":            {mgmtB, whole, http.StatusNotFound},
			"unknown id":                      {e.mgmt, "gen-unknown", http.StatusNotFound},
			"no id":                           {e.mgmt, "", http.StatusBadRequest},
			"NUL in id":                       {e.mgmt, "gen-\x00", http.StatusBadRequest},
		} {
			if res := e.contentOf(c.key, c.id); res.Status != c.status {
				t.Errorf("%s: %d %s, want %d", name, res.Status, res.Body, c.status)
			}
		}
	})

	// Turning logging off hides what was kept.
	e.logIO("default", false)
	e.contentOf(e.mgmt, whole).want(t, http.StatusForbidden)
	e.logIO("default", true)
	e.contentOf(e.mgmt, whole).want(t, http.StatusOK)

	// Past the retention, content is gone whether or not it was pruned yet.
	e.clock.Set(e.clock.Now().Add(gatehouse.DefaultContentRetention + time.Minute))
	if res := e.contentOf(e.mgmt, whole).want(t, http.StatusNotFound); !strings.Contains(res.errorMessage(t), "30 days") {
		t.Errorf("message %q does not say how long content is kept", res.errorMessage(t))
	}
}

// TestGenerationContentRetentionOff: with a retention of 0 no content is
// stored at all.
func TestGenerationContentRetentionOff(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.handler.(*httpapi.Server).SetContentRetention(0)
	e.logIO("default", true)
	var answer struct {
		ID string `json:"id"`
	}
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK).decode(t, &answer)
	e.contentOf(e.key, answer.ID).want(t, http.StatusNotFound)
	var n int
	if err := e.readDB().QueryRow(`SELECT COUNT(*) FROM generation_content`).Scan(&n); err != nil || n != 0 {
		t.Errorf("generation_content has %d rows (%v), want none", n, err)
	}
}

// TestGenerationFeedback: management keys submit feedback on their
// organization's generations; it is audited and listed.
func TestGenerationFeedback(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	var answer struct {
		ID string `json:"id"`
	}
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK).decode(t, &answer)
	var ok struct {
		Data map[string]any `json:"data"`
	}
	e.do("POST", "/api/v1/generation/feedback", e.mgmt, map[string]any{"generation_id": answer.ID, "category": "latency",
		"comment": "took a while"}).want(t, http.StatusOK).decode(t, &ok)
	wantJSON(t, "answer", map[string]any{"success": true}, ok.Data)

	var list struct {
		Data []struct {
			ID, GenerationID, Category string
			Comment                    *string
			KeyHash                    *string `json:"key_hash"`
			CreatedAt                  string  `json:"created_at"`
		}
		TotalCount int `json:"total_count"`
	}
	e.do("GET", "/api/v1/generation/feedback?id="+answer.ID, e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	if list.TotalCount != 1 || len(list.Data) != 1 || list.Data[0].Category != "latency" || *list.Data[0].Comment != "took a while" ||
		*list.Data[0].KeyHash != gatehouse.HashKey(e.mgmt) {
		t.Fatalf("feedback %+v", list)
	}
	var audit struct {
		Data []struct {
			Operation   string         `json:"operation"`
			ResourceIDs []string       `json:"resource_ids"`
			Details     map[string]any `json:"details"`
		}
	}
	e.do("GET", "/api/v1/audit-log?resource_type=generation", e.mgmt, nil).want(t, http.StatusOK).decode(t, &audit)
	if len(audit.Data) != 1 || audit.Data[0].Operation != "generation.feedback" || audit.Data[0].ResourceIDs[0] != answer.ID ||
		audit.Data[0].Details["feedback_id"] != list.Data[0].ID || strings.Contains(jsonNumber(audit.Data[0].Details), "took") {
		t.Errorf("audit %+v", audit.Data)
	}

	_, mgmtB := e.newOrg("Org B")
	e.unchanged("refused feedback", func() {
		for name, c := range map[string]struct {
			key    string
			body   any
			status int
			field  string
		}{
			"regular key":          {e.key, map[string]any{"generation_id": answer.ID, "category": "other"}, http.StatusForbidden, ""},
			"another organization": {mgmtB, map[string]any{"generation_id": answer.ID, "category": "other"}, http.StatusNotFound, ""},
			"unknown generation":   {e.mgmt, map[string]any{"generation_id": "gen-unknown", "category": "other"}, http.StatusNotFound, ""},
			"unknown category":     {e.mgmt, map[string]any{"generation_id": answer.ID, "category": "slow"}, http.StatusBadRequest, "category"},
			"null comment":         {e.mgmt, map[string]any{"generation_id": answer.ID, "category": "other", "comment": nil}, http.StatusBadRequest, "comment"},
			"unknown field":        {e.mgmt, map[string]any{"generation_id": answer.ID, "category": "other", "rating": 1}, http.StatusBadRequest, "rating"},
			"no generation":        {e.mgmt, map[string]any{"category": "other"}, http.StatusBadRequest, "generation_id"},
		} {
			res := e.do("POST", "/api/v1/generation/feedback", c.key, c.body)
			if res.Status != c.status || (c.field != "" && !strings.HasPrefix(res.errorMessage(t), c.field)) {
				t.Errorf("%s: %d %s, want %d naming %q", name, res.Status, res.Body, c.status, c.field)
			}
		}
		e.do("GET", "/api/v1/generation/feedback?id="+answer.ID, mgmtB, nil).want(t, http.StatusNotFound)
		e.do("GET", "/api/v1/generation/feedback?id="+answer.ID, e.key, nil).want(t, http.StatusForbidden)
	})
}
