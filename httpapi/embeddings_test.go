package httpapi_test

import (
	"bytes"
	"encoding/json"
	"gatehouse/meter"
	"gatehouse/provider"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// embedPromptPrice is the prompt price of acme/embed: $0.02 per million
// tokens.
const embedPromptPrice = 20_000_000

// embedCatalog has an embedding model, a chat model (which cannot embed)
// and an embedding model priced so that a 500-byte request reserves
// exactly $0.10 (see TestEmbeddingsOverspend).
func embedCatalog(t testing.TB, base string) *provider.Catalog {
	t.Helper()
	c, err := provider.NewCatalog([]*provider.Provider{
		{ID: "acme", BaseURL: base + "/v1", Timeout: 10 * time.Second, Models: []*provider.Model{
			{ID: "embed", Name: "Acme Embed", PromptPrice: embedPromptPrice, ContextLength: 8192,
				ModelInfo: provider.ModelInfo{OutputModalities: []string{"embeddings"}}},
			{ID: "chat", Name: "Acme Chat", PromptPrice: chatPromptPrice, CompletionPrice: chatCompletionPrice,
				MaxCompletionTokens: chatMaxTokens, ContextLength: 8192},
			{ID: "dear-embed", Name: "Acme Dear Embed", PromptPrice: gatehouse.USD(200), ContextLength: 8192,
				ModelInfo: provider.ModelInfo{OutputModalities: []string{"embeddings"}}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newEmbedEnv(t testing.TB, configure func(*fakeUpstream), keyBody map[string]any) *chatEnv {
	t.Helper()
	return newUpstreamEnv(t, configure, keyBody, func(base string) *provider.Catalog { return embedCatalog(t, base) })
}

// embed sends an embeddings request with key and checks the answer
// against the OpenAPI document.
func (e *chatEnv) embed(key string, body any) *response {
	e.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.embedRaw(key, data)
}

func (e *chatEnv) embedRaw(key string, data []byte) *response {
	e.t.Helper()
	req := httptest.NewRequest("POST", "/api/v1/embeddings", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	res := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	e.checker.check(e.t, req, res.Status, res.Header, res.Body)
	return res
}

// embedAnswer is the part of an embeddings answer the tests read.
type embedAnswer struct {
	ID     string `json:"id"`
	Object string `json:"object"`
	Model  string `json:"model"`
	Data   []struct {
		Object    string    `json:"object"`
		Index     int       `json:"index"`
		Embedding []float64 `json:"embedding"`
	} `json:"data"`
	Usage map[string]any `json:"usage"`
}

func TestEmbeddings(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	var got embedAnswer
	e.embed(e.key, map[string]any{"model": "acme/embed", "input": []string{"hello", "world"}, "dimensions": 3,
		"encoding_format": "float", "user": "end-user-1", "provider": map[string]any{"only": []string{"acme"}}}).
		want(t, http.StatusOK).decode(t, &got)
	cost := gatehouse.Money((11*embedPromptPrice + 999_999) / 1_000_000)
	if !strings.HasPrefix(got.ID, "gen-") || got.Object != "list" || got.Model != "acme/embed" || len(got.Data) != 2 {
		t.Errorf("answer %+v", got)
	}
	wantUsage := map[string]any{"prompt_tokens": 11.0, "total_tokens": 11.0, "cost": usdFloat(cost), "is_byok": false,
		"cost_details": map[string]any{"upstream_inference_cost": nil, "upstream_inference_prompt_cost": usdFloat(cost), "upstream_inference_completions_cost": 0.0}}
	if b, w := mustJSON(got.Usage), mustJSON(wantUsage); b != w {
		t.Errorf("usage %s, want %s", b, w)
	}
	reqs := e.up.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d upstream requests", len(reqs))
	}
	sent := reqs[0]
	if sent["model"] != "embed" || sent["provider"] != nil || sent["dimensions"] != 3.0 || sent["user"] != "end-user-1" || sent["max_tokens"] != nil {
		t.Errorf("sent upstream %v", sent)
	}
	statuses, costs, held := e.ledger(e.hash)
	if len(statuses) != 1 || statuses[0] != gatehouse.GenerationCompleted || costs[0] != cost || held != 0 {
		t.Errorf("ledger %v %v, %d held", statuses, costs, held)
	}
	if m := e.money(e.hash); m.Usage != cost {
		t.Errorf("usage %s, want %s", m.Usage, cost)
	}
	var gen struct {
		Data struct {
			Model              string  `json:"model"`
			NativeTokensPrompt int64   `json:"native_tokens_prompt"`
			ExternalUser       *string `json:"external_user"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+got.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	if gen.Data.Model != "acme/embed" || gen.Data.ExternalUser == nil || *gen.Data.ExternalUser != "end-user-1" {
		t.Errorf("generation %+v", gen.Data)
	}
}

func mustJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

// TestEmbeddingsInputs accepts every input shape of the OpenAI API that
// is text.
func TestEmbeddingsInputs(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	for _, input := range []any{
		"one string",
		[]string{"a", "b", "c"},
		[]int{1, 2, 3},
		[][]int{{1, 2}, {3}},
		[]any{map[string]any{"content": []any{map[string]any{"type": "text", "text": "hi"}}}},
	} {
		var got embedAnswer
		e.embed(e.key, map[string]any{"model": "acme/embed", "input": input}).want(t, http.StatusOK).decode(t, &got)
		if len(got.Data) == 0 {
			t.Errorf("input %v: no data", input)
		}
	}
	if statuses, _, _ := e.ledger(e.hash); len(statuses) != 5 {
		t.Errorf("%d ledger entries, want 5", len(statuses))
	}
}

func TestEmbeddingsBadInput(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	many := make([]string, 2049)
	for i := range many {
		many[i] = "x"
	}
	manyJSON, _ := json.Marshal(many)
	for _, c := range []struct {
		body string
		want string
	}{
		{`{"input":"hi"}`, "model: is required"},
		{`{"model":"acme/embed"}`, "input: is required"},
		{`{"model":"acme/embed","input":null}`, "input: is required"},
		{`{"model":"acme/embed","input":""}`, "input: must be a non-empty string"},
		{`{"model":"acme/embed","input":[]}`, "input: must have 1 to 2048 items"},
		{`{"model":"acme/embed","input":` + string(manyJSON) + `}`, "input: must have 1 to 2048 items"},
		{`{"model":"acme/embed","input":42}`, "input: must be a string or an array"},
		{`{"model":"acme/embed","input":["a",1]}`, "input[1]: must be of the same kind"},
		{`{"model":"acme/embed","input":["a",""]}`, "input[1]: must be a non-empty string"},
		{`{"model":"acme/embed","input":[1,-2]}`, "input[1]: must be a token id"},
		{`{"model":"acme/embed","input":[1.5]}`, "input[0]: must be a token id"},
		{`{"model":"acme/embed","input":[[1],[]]}`, "input[1]: must be a non-empty array of token ids"},
		{`{"model":"acme/embed","input":[{"content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, "input[0].content[0]: only text content parts"},
		{`{"model":"acme/embed","input":[{"content":[]}]}`, "input[0].content: must be a non-empty array"},
		{`{"model":"acme/embed","input":[{"content":[{"type":"text","text":"a"}],"extra":1}]}`, "input[0].extra"},
		{`{"model":"acme/embed","input":"a","foo":1}`, "foo: unknown field"},
		{`{"model":"acme/embed","Input":"a"}`, `Input: is not a field; field names are case-sensitive: did you mean "input"?`},
		{`{"model":"acme/embed","input":"a","input":"b"}`, "input"},
		{`{"model":"acme/embed","input":"a","messages":[]}`, "messages: is not supported"},
		{`{"model":"acme/embed","input":"a","preset":"p"}`, "preset: is not supported"},
		{`{"model":"acme/embed","input":"a","dimensions":0}`, "dimensions: must be a positive integer"},
		{`{"model":"acme/embed","input":"a","dimensions":"3"}`, "dimensions: must be"},
		{`{"model":"acme/embed","input":"a","encoding_format":"hex"}`, "encoding_format: must be float or base64"},
		{`{"model":"acme/embed","input":"a","provider":{"bogus":1}}`, "provider.bogus"},
		{`{"model":"acme/embed","input":"a","provider":{"only":["other"]}}`, "provider"},
		{`{"model":"acme/chat","input":"a"}`, `model: "acme/chat" is not an embedding model`},
		{`{"model":"acme/nope","input":"a"}`, `model: unknown model "acme/nope"`},
		{`{"model":"@preset/mine","input":"a"}`, "model: presets apply to chat completions and the Responses API only"},
		{`[]`, "request body must be a JSON object"},
		{`{"model":"acme/embed","input":"a"} {}`, ""},
	} {
		res := e.embedRaw(e.key, []byte(c.body))
		if res.Status != http.StatusBadRequest {
			t.Errorf("%.80s: status %d, want 400: %s", c.body, res.Status, res.Body)
			continue
		}
		if msg := res.errorMessage(t); !strings.Contains(msg, c.want) {
			t.Errorf("%.80s: message %q, want %q", c.body, msg, c.want)
		}
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	e.wantNothingCharged(e.hash)
}

func TestEmbeddingsRefusals(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, map[string]any{"limit": 0.000001})
	body := map[string]any{"model": "acme/dear-embed", "input": "hello"}
	e.embed(e.mgmt, body).want(t, http.StatusForbidden)
	e.embed("", body).want(t, http.StatusUnauthorized)
	if msg := e.embed(e.key, body).want(t, http.StatusPaymentRequired).errorMessage(t); msg == "" {
		t.Error("402 without a message")
	}
	req := httptest.NewRequest("POST", "/api/v1/embeddings", strings.NewReader(`{}`))
	req.Header.Set("Content-Type", "text/plain")
	req.Header.Set("Authorization", "Bearer "+e.key)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	if rec.Code != http.StatusUnsupportedMediaType {
		t.Errorf("text/plain: %d", rec.Code)
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
	e.wantNothingCharged(e.hash)
}

// TestEmbeddingsProviderFailures passes the provider's error through: its
// refusal charges nothing, an unreadable answer is charged what was
// reserved (see TestProviderReceivedIsCharged).
func TestEmbeddingsProviderFailures(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		configure func(*fakeUpstream)
		status    int
		charged   bool
	}{
		{func(u *fakeUpstream) { u.status, u.errBody = 500, `{"error":{"message":"exploded"}}` }, 500, false},
		{func(u *fakeUpstream) { u.status, u.errBody = 400, `{"error":{"message":"input too long"}}` }, 400, false},
		{func(u *fakeUpstream) { u.status, u.errBody, u.errType = 200, `not json`, "text/plain" }, http.StatusBadGateway, true},
	} {
		e := newEmbedEnv(t, c.configure, nil)
		res := e.embed(e.key, map[string]any{"model": "acme/embed", "input": "hello"}).want(t, c.status)
		if got := res.apiError(t); got.Metadata["provider_name"] != "acme" {
			t.Errorf("%d: error %+v", c.status, got)
		}
		if c.charged {
			e.wantEveryReceivedCallPaid(1, false)
		} else {
			e.wantNothingCharged(e.hash)
		}
	}
}

// TestEmbeddingsUsage charges the reservation when the provider reports no
// usage, or usage past what was reserved (an anomaly).
func TestEmbeddingsUsage(t *testing.T) {
	t.Parallel()
	body := map[string]any{"model": "acme/embed", "input": "hello"}
	raw, _ := json.Marshal(body)
	m, _, _ := embedCatalog(t, "http://x").Model("acme/embed")
	reserved := meter.Estimate(m, len(raw), 0)
	for name, configure := range map[string]func(*fakeUpstream){
		"no usage":       func(u *fakeUpstream) { u.noUsage = true },
		"over the cap":   func(u *fakeUpstream) { u.overbill = 1_000_000 },
		"negative usage": func(u *fakeUpstream) { u.promptTokens = -5 },
	} {
		e := newEmbedEnv(t, configure, nil)
		var got embedAnswer
		e.embed(e.key, body).want(t, http.StatusOK).decode(t, &got)
		if got.Usage["cost"] != usdFloat(reserved) {
			t.Errorf("%s: usage %v, want the reservation %s charged", name, got.Usage, reserved)
		}
		if _, costs, held := e.ledger(e.hash); len(costs) != 1 || costs[0] != reserved || held != 0 {
			t.Errorf("%s: ledger %v, %d held; want the reservation %s", name, costs, held, reserved)
		}
	}
}

// TestEmbeddingsOverspend sends 50 concurrent embeddings requests, each
// reserving and costing $0.10, against a key limited to $1: exactly 10
// are served, and the key spends exactly $1.
func TestEmbeddingsOverspend(t *testing.T) {
	t.Parallel()
	body := map[string]any{"model": "acme/dear-embed", "input": ""}
	for pad := ""; ; pad += "x" {
		body["input"] = "hello " + pad
		if data, _ := json.Marshal(body); len(data)+16 >= 500 {
			break
		}
	}
	data, _ := json.Marshal(body)
	if len(data)+16 != 500 {
		t.Fatalf("body of %d bytes, want 484", len(data))
	}
	// 500 tokens at $200 per million: $0.10, reserved and charged.
	e := newEmbedEnv(t, func(u *fakeUpstream) { u.promptTokens, u.delay = 500, 20*time.Millisecond },
		map[string]any{"limit": 1, "limit_reset": "daily"})
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)

	const n = 50
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/embeddings", bytes.NewReader(data))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.key)
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			b, _ := io.ReadAll(res.Body)
			statuses[i] = res.StatusCode
			check := httptest.NewRequest("POST", "/api/v1/embeddings", nil)
			e.checker.check(t, check, res.StatusCode, res.Header, b)
		})
	}
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	t.Logf("%s: 50 concurrent $0.10 embeddings against a $1.00 limit: %v", testEngine, counts)
	if counts[http.StatusOK] != 10 || counts[http.StatusPaymentRequired] != 40 {
		t.Errorf("statuses %v, want 10 × 200 and 40 × 402", counts)
	}
	m := e.money(e.hash)
	if m.Usage != gatehouse.USD(1) || m.LimitRemaining == nil || *m.LimitRemaining != 0 {
		t.Errorf("usage %s remaining %v; want exactly $1 spent", m.Usage, m.LimitRemaining)
	}
	ledger, costs, held := e.ledger(e.hash)
	var sum gatehouse.Money
	for _, c := range costs {
		sum += c
	}
	if len(ledger) != 10 || sum != gatehouse.USD(1) || held != 0 {
		t.Errorf("ledger: %d entries summing to %s, %d reservations; want 10 summing to 1", len(ledger), sum, held)
	}
	if calls := len(e.up.requests()); calls != 10 {
		t.Errorf("the upstream was called %d times, want 10", calls)
	}
}

func TestEmbeddingModels(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	var list modelList
	e.do("GET", "/api/v1/embeddings/models", "", nil).want(t, http.StatusOK).decode(t, &list)
	if got := strings.Join(list.ids(), ","); got != "acme/embed,acme/dear-embed" || list.TotalCount != 2 {
		t.Errorf("embedding models %s (total %d)", got, list.TotalCount)
	}
	e.do("GET", "/api/v1/embeddings/models?limit=1", "", nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 1 || list.Links.Next == nil {
		t.Errorf("page %+v", list)
	}
	e.do("GET", "/api/v1/embeddings/models?limit=0", "", nil).want(t, http.StatusBadRequest)
}

// TestEmbeddingsGuardrails applies the guardrails' model lists as chat
// completions do, changing nothing when they refuse.
func TestEmbeddingsGuardrails(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	g := e.guardrail(map[string]any{"ignored_models": []string{"acme/dear-embed"}})
	e.assign(g, "keys", e.hash)
	wantBlocked(t, e.embed(e.key, map[string]any{"model": "acme/dear-embed", "input": "hi"}), g, "ignored_models")
	e.wantNothingCharged(e.hash)
	e.embed(e.key, map[string]any{"model": "acme/embed", "input": "hi"}).want(t, http.StatusOK)
	if n := len(e.up.requests()); n != 1 {
		t.Errorf("the upstream was called %d times, want 1", n)
	}
}

// TestEmbeddingsBYOK sends a call with the workspace's own key for the
// provider, and counts it as BYOK usage.
func TestEmbeddingsBYOK(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	e.createBYOK(e.mgmt, map[string]any{"provider": "acme", "key": byokKeyA})
	var got embedAnswer
	res := e.embed(e.key, map[string]any{"model": "acme/embed", "input": "hi"}).want(t, http.StatusOK)
	res.decode(t, &got)
	if auth := e.lastAuth(); auth != byokKeyA {
		t.Fatalf("the upstream got %q, want the workspace's key", auth)
	}
	if strings.Contains(string(res.Body), byokKeyA) {
		t.Errorf("the answer holds the provider key: %s", res.Body)
	}
	cost := gatehouse.Money((11*embedPromptPrice + 999_999) / 1_000_000)
	if got.Usage["is_byok"] != true {
		t.Errorf("usage %v, want is_byok", got.Usage)
	}
	if m := e.money(e.hash); m.Usage != 0 || m.BYOKUsage != cost {
		t.Errorf("usage %s, byok %s; want 0, %s: a BYOK call counts as byok_usage only", m.Usage, m.BYOKUsage, cost)
	}
}

// TestEmbeddingModelCompletesNothing: an embedding model has no completion
// price, so a chat completion of it would be free: a 400, through the
// model or through a preset, which cannot be saved with it either; the
// provider is never called.
func TestEmbeddingModelCompletesNothing(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	e.unchanged("chat with an embedding model", func() {
		res := e.chat(e.key, chatBody("acme/embed"))
		resWantError(t, res, http.StatusBadRequest, `"acme/embed" is an embedding model`)
	})
	res := e.do("POST", "/api/v1/presets/vec/chat/completions", e.mgmt, map[string]any{"model": "acme/embed", "max_tokens": 4000})
	resWantError(t, res, http.StatusBadRequest, `"acme/embed" is an embedding model`)
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
}

// TestCacheControlRefused: a text part asking for a cache write, which is
// billed above the prompt price, is refused by embeddings (as by the
// Responses API) whatever its case, and by chat completions to an
// endpoint that does not price cache writes, or in another case than its
// name's; the provider is never called. (Endpoints that price them take
// it: TestCachePricing.)
func TestCacheControlRefused(t *testing.T) {
	t.Parallel()
	e := newEmbedEnv(t, nil, nil)
	for _, c := range []struct{ name, chatError string }{
		{"cache_control", "cache_control: provider acme's endpoint of acme/chat does not take prompt caching"},
		{"Cache_Control", "messages[0].content[0].Cache_Control: unknown field"},
	} {
		part := []any{map[string]any{"type": "text", "text": "long doc", c.name: map[string]any{"type": "ephemeral", "ttl": "1h"}}}
		e.unchanged(c.name, func() {
			chat := map[string]any{"model": "acme/chat", "messages": []any{map[string]any{"role": "user", "content": part}}}
			resWantError(t, e.chat(e.key, chat), http.StatusBadRequest, c.chatError)
			embed := map[string]any{"model": "acme/embed", "input": []any{map[string]any{"content": part}}}
			resWantError(t, e.embed(e.key, embed), http.StatusBadRequest, "cache")
		})
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
}

// TestReasoningBudgetBelowCap: a reasoning budget at or above the
// completion cap sent with the call is a 400 naming it, and nothing is
// charged or sent: a provider that made room for it would produce more
// than was reserved. A budget below the cap goes through.
func TestReasoningBudgetBelowCap(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	for _, budget := range []any{50, 90000, -1, 1.5, "90000"} { // a number in a string reads as one
		e.unchanged("reasoning budget", func() {
			chat := chatBody("acme/exact", "max_tokens", 50, "reasoning", map[string]any{"effort": "high", "max_tokens": budget})
			resWantError(t, e.chat(e.key, chat), http.StatusBadRequest, "reasoning.max_tokens")
			resp := respondBody("acme/exact", "max_output_tokens", 50, "reasoning", map[string]any{"effort": "high", "max_tokens": budget})
			resWantError(t, e.respond(e.key, resp), http.StatusBadRequest, "reasoning.max_tokens")
		})
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider got %d requests", n)
	}
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 50, "reasoning", map[string]any{"max_tokens": 20})).want(t, http.StatusOK)
}
