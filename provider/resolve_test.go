package provider_test

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/provider"

	"github.com/google/go-cmp/cmp"
)

// fiveEndpoints is a catalog with one model (m/x) served by five
// providers, p0 (cheapest) to p4 (dearest); p1 is ZDR, p3 runs in Germany.
func fiveEndpoints(t testing.TB) *provider.Catalog {
	t.Helper()
	var ps []*provider.Provider
	for i := range 5 {
		p := &provider.Provider{ID: fmt.Sprintf("p%d", i), BaseURL: "http://127.0.0.1/v1", Models: []*provider.Model{
			{ID: "x", Serves: "m/x", PromptPrice: gatehouse.USD(int64(i + 1)), CompletionPrice: gatehouse.USD(int64(i + 1)),
				MaxCompletionTokens: 100, ModelInfo: provider.ModelInfo{Quantization: []string{"fp8", "fp16"}[i%2]}},
		}}
		p.ZDR = i == 1
		if i == 3 {
			p.Datacenters = []string{"DE"}
		}
		ps = append(ps, p)
	}
	c, err := provider.NewCatalog(ps)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func providers(eps []provider.Endpoint) []string {
	out := make([]string, len(eps))
	for i, e := range eps {
		out[i] = e.Provider.ID
	}
	return out
}

func prefs(t *testing.T, raw string) *provider.ProviderPreferences {
	t.Helper()
	var p provider.ProviderPreferences
	if err := json.Unmarshal([]byte(raw), &p); err != nil {
		t.Fatal(err)
	}
	return &p
}

// TestResolveOrders: the preferences' order, sort and filters, and the
// default price-weighted draw (Rand 0 draws the cheapest).
func TestResolveOrders(t *testing.T) {
	rt := &provider.Router{Catalog: fiveEndpoints(t), Health: &provider.Health{}, Rand: func() float64 { return 0 }}
	for _, c := range []struct {
		prefs string
		want  []string
	}{
		{`{}`, []string{"p0", "p1", "p2", "p3", "p4"}},
		{`{"order": ["p3", "p1"]}`, []string{"p3", "p1", "p0", "p2", "p4"}},
		{`{"order": ["p3", "p1"], "allow_fallbacks": false}`, []string{"p3", "p1"}},
		{`{"allow_fallbacks": false}`, []string{"p0"}},
		{`{"only": ["p4", "P2"]}`, []string{"p2", "p4"}},
		{`{"ignore": ["p0"], "sort": "price"}`, []string{"p1", "p2", "p3", "p4"}},
		{`{"max_price": {"prompt": 2}}`, []string{"p0", "p1"}},
		{`{"zdr": true}`, []string{"p1"}},
		{`{"quantizations": ["fp16"]}`, []string{"p1", "p3"}},
	} {
		eps, err := rt.Resolve(provider.Request{API: provider.Chat, Model: "m/x", Preferences: prefs(t, c.prefs)})
		if err != nil {
			t.Errorf("%s: %v", c.prefs, err)
			continue
		}
		if diff := cmp.Diff(c.want, providers(eps)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", c.prefs, diff)
		}
	}
	// An address is that endpoint alone; the draw's last pick is the
	// dearest.
	eps, _ := rt.Resolve(provider.Request{API: provider.Chat, Model: "p2/x"})
	if diff := cmp.Diff([]string{"p2"}, providers(eps)); diff != "" {
		t.Errorf("an address (-want +got):\n%s", diff)
	}
	rt.Rand = func() float64 { return 0.9999 }
	eps, _ = rt.Resolve(provider.Request{API: provider.Chat, Model: "m/x"})
	if eps[0].Provider.ID != "p4" {
		t.Errorf("the draw at 0.9999 chose %s first", eps[0].Provider.ID)
	}
}

// TestResolveRefusals: a request no endpoint may serve is refused naming
// the rule of the endpoint nearest to serving; every endpoint cooling
// down is a 503 saying how long.
func TestResolveRefusals(t *testing.T) {
	now := time.Now()
	h := &provider.Health{Now: func() time.Time { return now }}
	rt := &provider.Router{Catalog: fiveEndpoints(t), Health: h}
	region := &gatehouse.Guardrail{ID: "g", Name: "eu only", AllowedDataRegions: []string{"europe"}, AllowedProviders: []string{"p0", "p1", "p2", "p3"}}
	for _, c := range []struct {
		req   provider.Request
		code  string
		field any
	}{
		{provider.Request{API: provider.Chat, Model: "m/nope"}, gatehouse.EINVALID, "model"},
		{provider.Request{API: provider.Chat, Model: "m/x", Models: []string{"m/nope"}}, gatehouse.EINVALID, "models[0]"},
		{provider.Request{API: provider.Embeddings, Model: "m/x"}, gatehouse.EINVALID, "model"},
		{provider.Request{API: provider.Chat, Model: "m/x", Preferences: prefs(t, `{"only": ["p9"]}`)}, gatehouse.EINVALID, "provider.only"},
		{provider.Request{API: provider.Chat, Model: "m/x", Preferences: prefs(t, `{"zdr": true, "ignore": ["p1"]}`)}, gatehouse.EINVALID, "provider.zdr"},
		{provider.Request{API: provider.Chat, Model: "m/x", Preferences: prefs(t, `{"ignore": ["p3"]}`),
			Guardrails: []gatehouse.AppliedGuardrail{{Guardrail: region}}}, gatehouse.EFORBIDDEN, nil},
	} {
		_, err := rt.Resolve(c.req)
		var e *gatehouse.Error
		if !errorAs(err, &e) || e.Code != c.code || e.Metadata["field"] != c.field {
			t.Errorf("%+v: %v, want %s on %v", c.req, err, c.code, c.field)
		}
	}
	// The region guardrail narrows to p3 alone.
	eps, err := rt.Resolve(provider.Request{API: provider.Chat, Model: "m/x", Guardrails: []gatehouse.AppliedGuardrail{{Guardrail: region}}})
	if err != nil || fmt.Sprint(providers(eps)) != "[p3]" {
		t.Errorf("allowed_data_regions europe: %v %v", providers(eps), err)
	}
	// Every endpoint asked to wait.
	for i := range 5 {
		h.Record(fmt.Sprintf("p%d/x", i), provider.Outcome{Class: provider.RateLimited, RetryAfter: 30 * time.Second})
	}
	_, err = rt.Resolve(provider.Request{API: provider.Chat, Model: "m/x"})
	var e *gatehouse.Error
	if !errorAs(err, &e) || e.Code != gatehouse.EUNAVAILABLE || e.Metadata["retry_after_seconds"] != int64(30) {
		t.Errorf("all cooling down: %v", err)
	}
}

func errorAs(err error, e **gatehouse.Error) bool {
	x, ok := err.(*gatehouse.Error)
	*e = x
	return ok
}

// TestHealthCircuit: three failures in a row open a circuit; it stays
// open for its cool-down, then admits one probe; a failed probe doubles
// the cool-down, a good one closes it. A refusal of the request does not
// count.
func TestHealthCircuit(t *testing.T) {
	now := time.Now()
	h := &provider.Health{Now: func() time.Time { return now }, OpenFor: 10 * time.Second}
	const a = "p/x"
	for range 5 {
		h.Record(a, provider.Outcome{Class: provider.Refused})
	}
	for i := range 3 {
		if !h.Begin(a) {
			t.Fatalf("call %d refused before the circuit opened", i)
		}
		h.Record(a, provider.Outcome{Class: provider.ServerError})
	}
	if h.Available(a) || h.Begin(a) || h.Stats(a).State != provider.CircuitOpen {
		t.Fatalf("the circuit did not open: %+v", h.Stats(a))
	}
	now = now.Add(11 * time.Second)
	if !h.Available(a) || !h.Begin(a) || h.Begin(a) {
		t.Fatalf("after the cool-down: one probe, not two")
	}
	h.Record(a, provider.Outcome{Class: provider.TimedOut})
	now = now.Add(11 * time.Second)
	if h.Available(a) {
		t.Fatal("a failed probe must double the cool-down (20 s)")
	}
	now = now.Add(10 * time.Second)
	if !h.Begin(a) {
		t.Fatal("no probe after the doubled cool-down")
	}
	h.Record(a, provider.Outcome{Class: provider.OK, FirstByte: 100 * time.Millisecond, Total: 2100 * time.Millisecond, Tokens: 100})
	s := h.Stats(a)
	if s.State != provider.CircuitClosed || s.Latency == nil || s.Latency[0] != 100 || s.Throughput == nil || s.Throughput[0] != 50 {
		t.Errorf("after a good probe: %+v", s)
	}
	if s.Counts[provider.ServerError] != 3 || s.Counts[provider.Refused] != 5 || *s.Uptime1d != 6.0/10 {
		t.Errorf("counts %v, uptime %v", s.Counts, *s.Uptime1d)
	}
}

// BenchmarkResolve is what routing adds to a request: a model with five
// endpoints, a guardrail, and provider preferences.
func BenchmarkResolve(b *testing.B) {
	rt := &provider.Router{Catalog: fiveEndpoints(b), Health: &provider.Health{}}
	g := []gatehouse.AppliedGuardrail{{Guardrail: &gatehouse.Guardrail{ID: "g", Name: "g", AllowedProviders: []string{"p0", "p1", "p2", "p3", "p4"}}}}
	var p provider.ProviderPreferences
	_ = json.Unmarshal([]byte(`{"ignore": ["p4"], "max_price": {"prompt": 10}}`), &p)
	req := provider.Request{API: provider.Chat, Model: "m/x", Preferences: &p, Guardrails: g,
		Parameters: []string{"model", "messages", "temperature"}, Conversation: "c"}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := rt.Resolve(req); err != nil {
			b.Fatal(err)
		}
	}
}
