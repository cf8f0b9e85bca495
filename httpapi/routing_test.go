package httpapi_test

import (
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/gateway"
	"gatehouse/httpapi"
	"gatehouse/provider"

	"github.com/google/go-cmp/cmp"
)

// llama and embedSlug are the models the routing tests serve from several
// providers.
const (
	llama     = "meta-llama/llama-3.1-70b-instruct"
	embedSlug = "openai/text-embedding-3-small"
)

// turn returns a chat body for model whose conversation is new (sticky
// routing keeps a conversation on its endpoint: TestRoutingSticky).
func turn(model string, extra ...any) map[string]any {
	b := chatBody(model, extra...)
	b["messages"] = []any{map[string]any{"role": "user", "content": "Say hello, " + strconv.FormatInt(turns.Add(1), 10)}}
	return b
}

var turns atomic.Int64

// routeEnv is a data plane over several providers, each its own fake
// upstream, that serve one model (llama): alpha (dearest), beta, gamma
// (cheapest); and the key that calls them.
type routeEnv struct {
	*chatEnv
	ups    map[string]*fakeUpstream
	router *provider.Router
}

// newRouteEnv starts the providers, each configured by configure (by
// provider id), and routes with random numbers from rnd (nil: always the
// first of the price-weighted draw's order, the cheapest).
func newRouteEnv(t *testing.T, configure map[string]func(*fakeUpstream), health *provider.Health, keyBody map[string]any) *routeEnv {
	t.Helper()
	ups := map[string]*fakeUpstream{}
	var providers []*provider.Provider
	for _, p := range []struct {
		id          string
		prompt, out gatehouse.Money
		zdr         bool
		datacenters []string
	}{
		{"alpha", gatehouse.USD(3), gatehouse.USD(3), true, []string{"DE"}},
		{"beta", gatehouse.USD(1), gatehouse.USD(1), false, []string{"US"}},
		{"gamma", gatehouse.NanosPerUSD / 2, gatehouse.NanosPerUSD / 2, false, nil},
	} {
		ups[p.id] = newFakeUpstream(t, configure[p.id])
		providers = append(providers, &provider.Provider{ID: p.id, BaseURL: ups[p.id].srv.URL + "/v1", Timeout: 10 * time.Second,
			Responses: true, ProviderInfo: provider.ProviderInfo{ZDR: p.zdr, Datacenters: p.datacenters},
			Models: []*provider.Model{
				{ID: "llama-70b", Serves: llama, PromptPrice: p.prompt, CompletionPrice: p.out, MaxCompletionTokens: 100},
				{ID: "other", PromptPrice: p.prompt, CompletionPrice: p.out, MaxCompletionTokens: 100},
				{ID: "embed", Serves: embedSlug, PromptPrice: p.prompt,
					ModelInfo: provider.ModelInfo{OutputModalities: []string{"embeddings"}}},
			}})
	}
	catalog, err := provider.NewCatalog(providers)
	if err != nil {
		t.Fatal(err)
	}
	if health == nil {
		health = &provider.Health{}
	}
	router := &provider.Router{Catalog: catalog, Health: health, Rand: func() float64 { return 0 }}
	traces := &traceSink{}
	e := newEnv(t, withDataPlane(httpapi.DataPlane{Catalog: catalog, Router: router, Upstream: gateway.NewClient(), Traces: traces}))
	ce := &chatEnv{testEnv: e, up: ups["alpha"], traces: traces}
	if keyBody == nil {
		keyBody = map[string]any{}
	}
	keyBody["name"] = "routing key"
	ce.hash, ce.key = e.createKey(e.mgmt, keyBody)
	return &routeEnv{chatEnv: ce, ups: ups, router: router}
}

// calls returns how many requests each provider received.
func (e *routeEnv) calls() map[string]int {
	out := map[string]int{}
	for id, u := range e.ups {
		out[id] = len(u.requests())
	}
	return out
}

// answered sends a chat completion and returns the provider that answered
// it and the upstream model name it was sent.
func (e *routeEnv) answered(body map[string]any) (string, string) {
	e.t.Helper()
	before := e.calls()
	var got struct {
		Provider string `json:"provider"`
		Model    string `json:"model"`
	}
	e.chat(e.key, body).want(e.t, http.StatusOK).decode(e.t, &got)
	for id, n := range e.calls() {
		if n > before[id] {
			sent := e.ups[id].requests()[n-1]
			if got.Provider == id {
				return got.Provider, sent["model"].(string)
			}
		}
	}
	e.t.Fatalf("no provider received the call that %s answered", got.Provider)
	return "", ""
}

// TestRoutingOneModelManyEndpoints: a model served by several providers is
// listed once, with its endpoints; a request for its slug routes among
// them (by default the price-weighted draw, here its first pick, the
// cheapest), and an endpoint's address reaches that endpoint alone. The
// answer says which provider served, and the upstream model name goes to
// that provider.
func TestRoutingOneModelManyEndpoints(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, nil, nil, nil)
	if p, model := e.answered(turn(llama)); p != "gamma" || model != "llama-70b" {
		t.Errorf("default: served by %s as %s, want gamma (cheapest) as llama-70b", p, model)
	}
	if p, _ := e.answered(turn("alpha/llama-70b")); p != "alpha" {
		t.Errorf("an address: served by %s, want alpha", p)
	}
	var list modelList
	e.do("GET", "/api/v1/models", "", nil).want(t, http.StatusOK).decode(t, &list)
	n := 0
	for _, m := range list.Data {
		if m.ID == llama {
			n++
		}
	}
	if n != 1 {
		t.Errorf("GET /models lists %s %d times, want once", llama, n)
	}
	var eps struct {
		Data struct {
			ID        string `json:"id"`
			Endpoints []struct {
				ProviderName string `json:"provider_name"`
				Tag          string `json:"tag"`
			} `json:"endpoints"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/models/"+llama+"/endpoints", "", nil).want(t, http.StatusOK).decode(t, &eps)
	var tags []string
	for _, ep := range eps.Data.Endpoints {
		tags = append(tags, ep.Tag)
	}
	if eps.Data.ID != llama || !slices.Equal(tags, []string{"alpha", "beta", "gamma"}) {
		t.Errorf("endpoints of %s: %+v", llama, eps.Data)
	}
}

// TestRoutingWeightedDraw: the default order draws the first endpoint at
// random, each weighted by the inverse square of its price: with prices
// 6, 2 and 1 (per million tokens, prompt and completion), gamma is drawn
// 36/46 of the time, beta 9/46, alpha 1/46.
func TestRoutingWeightedDraw(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, nil, nil, nil)
	first := func(r float64) string {
		e.router.Rand = func() float64 { return r }
		eps, err := e.router.Resolve(provider.Request{API: provider.Chat, Model: llama})
		if err != nil || len(eps) != 3 {
			t.Fatalf("Resolve: %v %v", eps, err)
		}
		return eps[0].Provider.ID
	}
	for r, want := range map[float64]string{0: "gamma", 35.9 / 46: "gamma", 36.1 / 46: "beta", 44.9 / 46: "beta", 45.1 / 46: "alpha"} {
		if got := first(r); got != want {
			t.Errorf("draw %.3f: %s first, want %s", r, got, want)
		}
	}
}

// TestRoutingPreferences: the request's provider object applies exactly:
// order, only, ignore, sort, max_price, zdr, data regions by guardrail; a
// request that leaves no endpoint is refused naming why, before anything
// is reserved or sent.
func TestRoutingPreferences(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, nil, nil, nil)
	for _, c := range []struct {
		prefs map[string]any
		want  string
	}{
		{map[string]any{"order": []any{"beta", "alpha"}}, "beta"},
		{map[string]any{"only": []any{"alpha"}}, "alpha"},
		{map[string]any{"ignore": []any{"gamma"}}, "beta"},
		{map[string]any{"sort": "price", "ignore": []any{"GAMMA"}}, "beta"},
		{map[string]any{"max_price": map[string]any{"prompt": 2}}, "gamma"},
		{map[string]any{"zdr": true}, "alpha"},
		{map[string]any{"sort": map[string]any{"by": "price"}, "order": []any{"alpha"}, "allow_fallbacks": false}, "alpha"},
	} {
		if got, _ := e.answered(turn(llama, "provider", c.prefs)); got != c.want {
			t.Errorf("provider %v: served by %s, want %s", c.prefs, got, c.want)
		}
	}
	before := e.calls()
	for _, c := range []struct {
		prefs map[string]any
		field string
	}{
		{map[string]any{"only": []any{"delta"}}, "provider.only"},
		{map[string]any{"max_price": map[string]any{"completion": 0.1}}, "provider.max_price.completion"},
		{map[string]any{"zdr": true, "ignore": []any{"alpha"}}, "provider.ignore"},
		{map[string]any{"quantizations": []any{"fp8"}}, "provider.quantizations"},
	} {
		got := e.chat(e.key, turn(llama, "provider", c.prefs)).want(t, http.StatusBadRequest).apiError(t)
		if got.Metadata["field"] != c.field {
			t.Errorf("provider %v: %+v, want field %s", c.prefs, got, c.field)
		}
	}
	if diff := cmp.Diff(before, e.calls()); diff != "" {
		t.Errorf("refused requests reached providers:\n%s", diff)
	}
}

// TestRoutingGuardrailsNarrow: the key's guardrails narrow the endpoints
// before the request's preferences: allowed providers, enforce_zdr and
// data regions choose among them; a guardrail that leaves none refuses
// with 403 naming it.
func TestRoutingGuardrailsNarrow(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, nil, nil, nil)
	g := e.guardrail(map[string]any{"allowed_providers": []string{"alpha", "beta"}})
	e.assign(g, "keys", e.hash)
	if got, _ := e.answered(turn(llama)); got != "beta" {
		t.Errorf("allowed_providers alpha, beta: served by %s, want beta", got)
	}
	e.do("PATCH", "/api/v1/guardrails/"+g, e.mgmt, map[string]any{"enforce_zdr": true}).want(t, http.StatusOK)
	if got, _ := e.answered(turn(llama)); got != "alpha" {
		t.Errorf("enforce_zdr: served by %s, want alpha (the ZDR endpoint)", got)
	}
	e.do("PATCH", "/api/v1/guardrails/"+g, e.mgmt, map[string]any{"enforce_zdr": false, "allowed_data_regions": []string{"us"}}).want(t, http.StatusOK)
	if got, _ := e.answered(turn(llama)); got != "beta" {
		t.Errorf("allowed_data_regions us: served by %s, want beta (its datacenter is in the US)", got)
	}
	e.do("PATCH", "/api/v1/guardrails/"+g, e.mgmt, map[string]any{"allowed_data_regions": []string{"europe"}, "allowed_providers": []string{"beta"}}).want(t, http.StatusOK)
	wantBlocked(t, e.chat(e.key, turn(llama)), g, "allowed_data_regions")
}

// TestRoutingFallbacks: a 503, a 429 (with Retry-After) or a connection
// refused falls back to the next endpoint; the client gets the answer of
// the one that served, charged at its prices alone (the refusals were not
// billed), and the generation keeps every attempt. An endpoint that asked
// to wait is left out of routing until then.
func TestRoutingFallbacks(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, map[string]func(*fakeUpstream){
		"gamma": func(u *fakeUpstream) { u.status, u.errBody = 503, `{"error":{"message":"overloaded"}}` },
		"beta": func(u *fakeUpstream) {
			u.status, u.errBody, u.retryAfter = 429, `{"error":{"message":"slow down"}}`, "120"
		},
	}, nil, nil)
	var answer struct {
		ID       string `json:"id"`
		Provider string `json:"provider"`
		Usage    struct {
			Cost float64 `json:"cost"`
		} `json:"usage"`
	}
	e.chat(e.key, turn(llama)).want(t, http.StatusOK).decode(t, &answer)
	if answer.Provider != "alpha" {
		t.Fatalf("served by %s, want alpha after gamma's 503 and beta's 429", answer.Provider)
	}
	if want := usdFloat(gatehouse.USD(3) * 18 / 1_000_000); answer.Usage.Cost != want {
		t.Errorf("cost %v, want %v (alpha's prices, 11 + 7 tokens)", answer.Usage.Cost, want)
	}
	var gen struct {
		Data struct {
			ProviderResponses []struct {
				ProviderName string `json:"provider_name"`
				Status       int    `json:"status"`
			} `json:"provider_responses"`
			ProviderName string `json:"provider_name"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+answer.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	var attempts []string
	for _, a := range gen.Data.ProviderResponses {
		attempts = append(attempts, a.ProviderName+":"+strings.TrimSpace(http.StatusText(a.Status)))
	}
	if diff := cmp.Diff([]string{"gamma:Service Unavailable", "beta:Too Many Requests", "alpha:OK"}, attempts); diff != "" {
		t.Errorf("provider_responses (-want +got):\n%s", diff)
	}
	if m := e.money(e.hash); m.Usage != gatehouse.USD(3)*18/1_000_000 {
		t.Errorf("usage %s: want alpha's answer alone charged", m.Usage)
	}
	// beta asked for two minutes: the next calls leave it out.
	before := e.calls()
	e.chat(e.key, turn(llama)).want(t, http.StatusOK)
	if after := e.calls(); after["beta"] != before["beta"] || after["gamma"] != before["gamma"]+1 {
		t.Errorf("calls %v -> %v: beta's Retry-After was not honoured", before, after)
	}
}

// TestRoutingDeadEndpointCostsNothing: an endpoint that keeps failing
// opens its circuit after three failures; from then its clients are not
// slowed by it (it receives no call) until its cool-down ends, when one
// call probes it; a success closes it again.
func TestRoutingDeadEndpointCostsNothing(t *testing.T) {
	t.Parallel()
	now := time.Now()
	clock := func() time.Time { return now }
	health := &provider.Health{Now: clock, OpenFor: time.Minute}
	failing := true
	e := newRouteEnv(t, map[string]func(*fakeUpstream){
		"gamma": func(u *fakeUpstream) { u.failWhile = func() bool { return failing } },
	}, health, nil)
	for range 3 {
		if got, _ := e.answered(turn(llama)); got != "beta" {
			t.Fatalf("served by %s, want beta after gamma failed", got)
		}
	}
	if s := health.Stats("gamma/llama-70b"); s.State != provider.CircuitOpen {
		t.Fatalf("gamma's circuit is %s after three failures", s.State)
	}
	before := e.calls()
	for range 5 {
		e.answered(turn(llama))
	}
	if after := e.calls(); after["gamma"] != before["gamma"] {
		t.Errorf("the open circuit let %d calls through", after["gamma"]-before["gamma"])
	}
	// The cool-down ends and gamma recovers: one probe, then it serves.
	failing, now = false, now.Add(time.Minute+time.Second)
	if got, _ := e.answered(turn(llama)); got != "gamma" {
		t.Errorf("after the cool-down: served by %s, want gamma (the probe)", got)
	}
	if s := health.Stats("gamma/llama-70b"); s.State != provider.CircuitClosed {
		t.Errorf("gamma's circuit is %s after a good probe", s.State)
	}
	metrics := string(e.do("GET", "/metrics", "", nil).Body)
	for _, want := range []string{`gatehouse_endpoint_calls_total{endpoint="gamma/llama-70b",outcome="server_error",provider="gamma"} 3`,
		`gatehouse_endpoint_circuit_state{endpoint="gamma/llama-70b",state="closed"} 1`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(metrics, "gatehouse_endpoint"))
		}
	}
}

// TestRoutingTimeoutBeforeFirstByte: an endpoint that does not begin its
// answer within its first-byte timeout falls back to the next; the
// attempt it received is charged (the provider may bill it), and so is
// the answer.
func TestRoutingTimeoutBeforeFirstByte(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, map[string]func(*fakeUpstream){"gamma": func(u *fakeUpstream) { u.delay = 5 * time.Second }}, nil, nil)
	e.router.Catalog.Providers[2].FirstByteTimeout = 200 * time.Millisecond
	if got, _ := e.answered(turn(llama)); got != "beta" {
		t.Fatalf("served by %s, want beta", got)
	}
	statuses := e.waitLedger(2)
	slices.Sort(statuses)
	if !slices.Equal(statuses, []string{"completed", "partial"}) {
		t.Errorf("ledger %v: want gamma's attempt charged its reservation (partial) and beta's answer", statuses)
	}
}

// TestRoutingNoRetryAfterFirstByte: once a stream reached its client, a
// failure is the stream's end, never a retry elsewhere.
func TestRoutingNoRetryAfterFirstByte(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, map[string]func(*fakeUpstream){"gamma": func(u *fakeUpstream) { u.stall = time.Minute }}, nil, nil)
	e.router.Catalog.Providers[2].Timeout = 300 * time.Millisecond
	res := e.chat(e.key, chatBody(llama, "stream", true)).want(t, http.StatusOK)
	if !strings.Contains(string(res.Body), `"provider":"gamma"`) || !strings.Contains(string(res.Body), `"cost":`) {
		t.Errorf("the stream does not end with gamma's charge: %q", res.Body)
	}
	if c := e.calls(); c["beta"] != 0 || c["alpha"] != 0 {
		t.Errorf("a started stream was retried: %v", c)
	}
}

// TestRoutingFallbackModels: models falls back across models, in order,
// once the first model's endpoints are spent; an unknown one is refused.
func TestRoutingFallbackModels(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, map[string]func(*fakeUpstream){
		"alpha": func(u *fakeUpstream) { u.status, u.errBody = 500, `{"error":{"message":"down"}}` },
	}, nil, nil)
	var got struct {
		Model    string `json:"model"`
		Provider string `json:"provider"`
	}
	e.chat(e.key, chatBody("alpha/llama-70b", "models", []any{"beta/other"})).want(t, http.StatusOK).decode(t, &got)
	if got.Model != "beta/other" || got.Provider != "beta" {
		t.Errorf("answered by %s of %s, want beta/other", got.Model, got.Provider)
	}
	msg := e.chat(e.key, chatBody(llama, "models", []any{"nope/nope"})).want(t, http.StatusBadRequest).errorMessage(t)
	if !strings.HasPrefix(msg, `models[0]: unknown model "nope/nope"`) {
		t.Errorf("message %q", msg)
	}
}

// TestRoutingSticky: a conversation keeps to the endpoint that served it
// while it is healthy, whatever the draw says.
func TestRoutingSticky(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, nil, nil, nil)
	conv := []any{map[string]any{"role": "system", "content": "You are terse."}, map[string]any{"role": "user", "content": "Hi"}}
	e.router.Rand = func() float64 { return 0.99 } // alpha, the dearest
	first, _ := e.answered(map[string]any{"model": llama, "messages": conv})
	e.router.Rand = func() float64 { return 0 } // gamma
	turn := append(slices.Clone(conv), map[string]any{"role": "assistant", "content": "Hello"}, map[string]any{"role": "user", "content": "More"})
	if got, _ := e.answered(map[string]any{"model": llama, "messages": turn}); got != first || first != "alpha" {
		t.Errorf("the conversation moved from %s to %s", first, got)
	}
	if got, _ := e.answered(chatBody(llama)); got != "gamma" {
		t.Errorf("another conversation went to %s, want gamma", got)
	}
}

// TestRoutingEveryAPI: the Responses API, embeddings and presets route as
// chat completions do.
func TestRoutingEveryAPI(t *testing.T) {
	t.Parallel()
	e := newRouteEnv(t, map[string]func(*fakeUpstream){
		"gamma": func(u *fakeUpstream) { u.status, u.errBody = 503, `{"error":{"message":"overloaded"}}` },
	}, &provider.Health{FailureThreshold: 1 << 30}, nil)
	var resp struct {
		Model string `json:"model"`
	}
	e.respond(e.key, respondBody(llama)).want(t, http.StatusOK).decode(t, &resp)
	if n := len(e.ups["beta"].requests()); n != 1 || resp.Model != llama {
		t.Errorf("responses: model %s, beta received %d", resp.Model, n)
	}
	e.savePreset(e.mgmt, "chat/completions", "routed", map[string]any{"model": llama, "provider": map[string]any{"order": []any{"alpha"}}}, "")
	if got, _ := e.answered(map[string]any{"model": "@preset/routed", "messages": []any{map[string]any{"role": "user", "content": "hi"}}}); got != "alpha" {
		t.Errorf("a preset's provider order: served by %s, want alpha", got)
	}
	var emb struct {
		Model string `json:"model"`
	}
	e.embed(e.key, map[string]any{"model": embedSlug, "input": "hello"}).want(t, http.StatusOK).decode(t, &emb)
	if n := len(e.ups["beta"].requests()); n != 2 || emb.Model != embedSlug {
		t.Errorf("embeddings: model %s, beta received %d calls in all", emb.Model, n)
	}
}
