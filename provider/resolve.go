package provider

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"

	"gatehouse"
)

// API names the model endpoint a request calls: what an endpoint must
// offer to serve it.
type API string

// The model endpoints.
const (
	Chat       API = "chat"       // POST /chat/completions, and presets
	Responses  API = "responses"  // POST /responses
	Embeddings API = "embeddings" // POST /embeddings
)

// Request is what Resolve reads of a model call.
type Request struct {
	API API
	// Model is the model the request names: a model's slug
	// (author/name), routed among its endpoints, or an endpoint's address
	// (provider/id), that endpoint alone. Models are the models to fall
	// back to, in order, once Model's endpoints are spent (OpenRouter's
	// models); Model may be empty when they are given.
	Model  string
	Models []string
	// Preferences are the request's provider object (nil: none).
	Preferences *ProviderPreferences
	// Guardrails are the key's: they narrow the endpoints first.
	Guardrails []gatehouse.AppliedGuardrail
	// DefaultSort is the workspace's default_provider_sort, for a request
	// that gives no sort.
	DefaultSort string
	// Parameters are the request's parameters, for require_parameters.
	Parameters []string
	// Conversation names the conversation a request continues, for
	// sticky routing ("": none).
	Conversation string
	// CacheControl says the request asks for prompt caching: only
	// endpoints that price cache writes (Model.CachesExplicitly) take it.
	CacheControl bool
}

// Endpoint is one way to serve a request: a model of a provider.
type Endpoint struct {
	Provider *Provider
	Model    *Model
}

// Address returns the endpoint's address, provider/id.
func (e Endpoint) Address() string { return e.Model.Address() }

// Router turns model calls into the endpoints that may serve them: the
// catalog, what this instance measured of each endpoint (Health), and
// which endpoint each conversation used (sticky routing, so that a
// provider's prompt cache keeps serving it).
type Router struct {
	Catalog *Catalog
	Health  *Health
	// Rand returns a number in [0, 1), for the price-weighted choice;
	// nil: math/rand.
	Rand func() float64

	mu     sync.Mutex
	sticky map[string]stickyEntry
}

// stickyEntry is the endpoint a conversation used, and until when it is
// kept.
type stickyEntry struct {
	address string
	until   time.Time
}

// Sticky routing keeps a conversation on its endpoint for StickyFor after
// its last call (prompt caches expire after minutes), for at most
// maxSticky conversations.
const (
	StickyFor = 5 * time.Minute
	maxSticky = 100_000
)

// NewRouter returns a router of the catalog, with a health record of its
// own.
func NewRouter(c *Catalog) *Router { return &Router{Catalog: c, Health: &Health{}} }

// Resolve turns a request into the endpoints that may serve it, in the
// order to try them. Every model endpoint (chat completions, the Responses
// API, embeddings, presets) calls it; it is the one place a routing rule
// lives.
//
// The endpoints of the request's model (then of each fallback model) are
// narrowed by what the API needs, the request's provider preferences
// (only, ignore, order without fallbacks, max_price, zdr, data_collection,
// quantizations, require_parameters, enforce_distillable_text) and the
// key's guardrails; those whose circuit is open, or that asked to be left
// alone (Retry-After), are left out. They are then ordered: the
// preferences' order first; then by the request's sort (or the
// workspace's) — price, throughput or latency as this instance measured
// them; else, as OpenRouter does, a price-weighted choice (the weight of
// an endpoint is the inverse square of its price) among them, the others
// after it, cheapest first. A conversation's endpoint comes first while it
// is healthy. allow_fallbacks false keeps only the first endpoint (or the
// order's endpoints).
//
// A request that no endpoint may serve is an error naming why: the rule
// that left out the endpoint nearest to serving it (see admits: the API or
// a preference, EINVALID naming the field; a guardrail, EFORBIDDEN naming
// it), or EUNAVAILABLE when every endpoint is cooling down, saying for how
// long.
func (rt *Router) Resolve(r Request) ([]Endpoint, error) {
	names, fields, err := modelNames(r)
	if err != nil {
		return nil, err
	}
	var out []Endpoint
	var why error // of the endpoint left out last in the rules' order
	stage := -1
	cooling := []string{}
	for i, name := range names {
		models, ok := rt.Catalog.Endpoints(name)
		if !ok {
			return nil, rt.Catalog.unknownModel(r.API, fields[i], name)
		}
		var kept []Endpoint
		for _, m := range models {
			e := Endpoint{Provider: rt.Catalog.providers[m.Provider], Model: m}
			if at, err := r.admits(e, name); err != nil {
				if at > stage {
					why, stage = err, at
				}
				continue
			}
			if !rt.Health.Available(e.Address()) {
				cooling = append(cooling, e.Address())
				continue
			}
			kept = append(kept, e)
		}
		out = append(out, rt.order(r, kept)...)
	}
	if len(out) == 0 {
		if len(cooling) > 0 {
			wait := max(rt.Health.Waiting(cooling).Round(time.Second), time.Second)
			return nil, (&gatehouse.Error{Code: gatehouse.EUNAVAILABLE,
				Message: fmt.Sprintf("every endpoint that may serve %q is failing or asked to wait; retry in %s", names[0], wait)}).
				WithMetadata("retry_after_seconds", int64(wait.Seconds()))
		}
		return nil, why
	}
	if allow := r.Preferences.allowFallbacks(); !allow && len(r.Preferences.orderList()) == 0 {
		out = out[:1]
	}
	return rt.stick(r, out), nil
}

// modelNames returns the models a request may be served by, in order, and
// the field that names each.
func modelNames(r Request) ([]string, []string, error) {
	var names, fields []string
	if r.Model != "" {
		names, fields = append(names, r.Model), append(fields, "model")
	}
	for i, m := range r.Models {
		if !slices.Contains(names, m) {
			names, fields = append(names, m), append(fields, fmt.Sprintf("models[%d]", i))
		}
	}
	if len(names) == 0 {
		return nil, nil, gatehouse.FieldError("model", "is required, such as openai/gpt-4o-mini (GET /api/v1/models lists them)")
	}
	return names, fields, nil
}

// admits returns why an endpoint may not serve the request (nil when it
// may), and how far through the rules it went: it does not offer the API
// (0), a preference leaves it out (1), a guardrail's lists do (2) or its
// rules of where prompts may go (3). Of the endpoints left out, the error
// of the one that went furthest is the request's: the reason nearest to
// serving it.
func (r *Request) admits(e Endpoint, name string) (int, error) {
	if err := r.API.serves(e.Model, e.Provider, name); err != nil {
		return 0, err
	}
	if r.CacheControl && !e.Model.CachesExplicitly() {
		return 0, gatehouse.FieldError("cache_control", "provider %s's endpoint of %s does not take prompt caching (its model in the providers file sets no cache_write_price, so what a cache write costs is not known); leave cache_control out", e.Provider.ID, e.Model.Slug())
	}
	if err := r.Preferences.Check("provider", e.Model, e.Provider); err != nil {
		return 1, err
	}
	if err := r.Preferences.checkEndpoint("provider", e, r.Parameters); err != nil {
		return 1, err
	}
	err := gatehouse.CheckEndpoint(r.Guardrails, e.Facts())
	var ge *gatehouse.Error
	if errors.As(err, &ge) && !strings.HasSuffix(fmt.Sprint(ge.Metadata["rule"]), "_providers") && !strings.HasSuffix(fmt.Sprint(ge.Metadata["rule"]), "_models") {
		return 3, err
	}
	return 2, err
}

// Facts returns what the guardrails judge of the endpoint.
func (e Endpoint) Facts() gatehouse.Endpoint {
	if e.Model.facts != nil {
		return *e.Model.facts
	}
	regions := []string{"global"}
	if e.Model.ServesRegion(e.Provider, "eu") {
		regions = append(regions, "europe")
	}
	if e.Model.ServesRegion(e.Provider, "us") {
		regions = append(regions, "us")
	}
	return gatehouse.Endpoint{Slug: e.Model.Slug(), Address: e.Address(), Provider: e.Provider.ID,
		ZDR: e.Model.ZeroRetention(e.Provider), Regions: regions, Collects: e.Model.Collects(e.Provider),
		Free: e.Model.PromptPrice == 0 && e.Model.CompletionPrice == 0}
}

// serves refuses an endpoint that does not offer the API.
func (a API) serves(m *Model, p *Provider, name string) error {
	switch {
	case a == Embeddings && !m.Embeds():
		return gatehouse.FieldError("model", "%q is not an embedding model; GET /api/v1/embeddings/models lists them", name)
	case a != Embeddings && m.Embeds():
		// It completes nothing, and has no completion price to charge.
		return gatehouse.FieldError("model", "%q is an embedding model; POST /api/v1/embeddings serves it", name)
	case a == Embeddings && !p.OpenAICompatible():
		return gatehouse.FieldError("model", "%q is served by provider %s, which speaks the %s API: Gatehouse serves embeddings from OpenAI-compatible providers only", name, p.ID, p.Type)
	case a == Responses && p.OpenAICompatible() && !p.Responses:
		return gatehouse.FieldError("model", "%q is served by provider %s, which does not offer the Responses API (its entry in the providers file does not say responses: true); call the model with POST /api/v1/chat/completions", name, p.ID)
	}
	return nil
}

// order orders one model's endpoints (see Resolve).
func (rt *Router) order(r Request, eps []Endpoint) []Endpoint {
	if len(eps) < 2 {
		return eps
	}
	sorted := slices.Clone(eps)
	switch sort := r.Preferences.sortBy(r.DefaultSort); sort {
	case "price":
		slices.SortStableFunc(sorted, func(a, b Endpoint) int { return cmp.Compare(price(a), price(b)) })
	case "throughput", "latency":
		slices.SortStableFunc(sorted, rt.byMeasured(sort))
	default:
		sorted = rt.weighted(sorted)
	}
	order := r.Preferences.orderList()
	if len(order) == 0 {
		return sorted
	}
	rank := func(e Endpoint) int {
		if i := slices.IndexFunc(order, func(p string) bool { return strings.EqualFold(p, e.Provider.ID) }); i >= 0 {
			return i
		}
		return len(order)
	}
	slices.SortStableFunc(sorted, func(a, b Endpoint) int { return cmp.Compare(rank(a), rank(b)) })
	if !r.Preferences.allowFallbacks() {
		sorted = slices.DeleteFunc(sorted, func(e Endpoint) bool { return rank(e) == len(order) })
	}
	return sorted
}

// price is what an endpoint costs, to compare endpoints: its prompt and
// completion prices per million tokens, added.
func price(e Endpoint) gatehouse.Money { return e.Model.PromptPrice + e.Model.CompletionPrice }

// weighted orders endpoints as OpenRouter balances them: the first is
// chosen at random, each weighted by the inverse square of its price (a
// free one is chosen among the free ones alone); the others follow,
// cheapest first.
func (rt *Router) weighted(eps []Endpoint) []Endpoint {
	slices.SortStableFunc(eps, func(a, b Endpoint) int { return cmp.Compare(price(a), price(b)) })
	candidates := eps
	if price(eps[0]) == 0 {
		n := slices.IndexFunc(eps, func(e Endpoint) bool { return price(e) > 0 })
		if n < 0 {
			n = len(eps)
		}
		candidates = eps[:n]
	}
	weights := make([]float64, len(candidates))
	total := 0.0
	for i, e := range candidates {
		w := 1.0
		if p := float64(price(e)); p > 0 {
			w = 1 / (p * p)
		}
		weights[i], total = w, total+w
	}
	pick := rt.random() * total
	chosen := len(candidates) - 1
	for i, w := range weights {
		if pick < w {
			chosen = i
			break
		}
		pick -= w
	}
	out := append([]Endpoint{eps[chosen]}, eps[:chosen]...)
	return append(out, eps[chosen+1:]...)
}

func (rt *Router) random() float64 {
	if rt.Rand != nil {
		return rt.Rand()
	}
	return rand.Float64()
}

// byMeasured compares endpoints by what this instance measured: the
// median throughput (highest first) or latency (lowest first) of the last
// 30 minutes; an endpoint not measured yet comes after those that were.
func (rt *Router) byMeasured(sort string) func(a, b Endpoint) int {
	figure := func(e Endpoint) (float64, bool) {
		s := rt.Health.Stats(e.Address())
		if sort == "throughput" && s.Throughput != nil {
			return -s.Throughput[0], true
		}
		if sort == "latency" && s.Latency != nil {
			return s.Latency[0], true
		}
		return 0, false
	}
	return func(a, b Endpoint) int {
		fa, oka := figure(a)
		fb, okb := figure(b)
		switch {
		case oka != okb && oka:
			return -1
		case oka != okb:
			return 1
		}
		return cmp.Compare(fa, fb)
	}
}

// stick moves the endpoint the request's conversation used last to the
// front, when it is among those that may serve it.
func (rt *Router) stick(r Request, eps []Endpoint) []Endpoint {
	if r.Conversation == "" || len(eps) < 2 {
		return eps
	}
	rt.mu.Lock()
	s, ok := rt.sticky[r.Conversation]
	rt.mu.Unlock()
	if !ok || time.Now().After(s.until) {
		return eps
	}
	i := slices.IndexFunc(eps, func(e Endpoint) bool { return e.Address() == s.address })
	if i <= 0 {
		return eps
	}
	out := append([]Endpoint{eps[i]}, eps[:i]...)
	return append(out, eps[i+1:]...)
}

// Served records the endpoint that served a conversation's call: its next
// calls go there first while it is healthy (see Resolve).
func (rt *Router) Served(conversation string, e Endpoint) {
	if conversation == "" {
		return
	}
	rt.mu.Lock()
	defer rt.mu.Unlock()
	now := time.Now()
	if rt.sticky == nil {
		rt.sticky = map[string]stickyEntry{}
	}
	if len(rt.sticky) >= maxSticky {
		for k, s := range rt.sticky {
			if now.After(s.until) || len(rt.sticky) >= maxSticky {
				delete(rt.sticky, k)
			}
		}
	}
	rt.sticky[conversation] = stickyEntry{address: e.Address(), until: now.Add(StickyFor)}
}

// unknownModel is the error of a request naming a model the providers
// file does not have, in field: where to find the configured ones, or,
// when there are none, how to configure some.
func (c *Catalog) unknownModel(api API, field, name string) error {
	switch {
	case len(c.models) == 0:
		return gatehouse.FieldError(field, "unknown model %q: no models are configured on this server; start it with GATEHOUSE_PROVIDERS_FILE (or --providers) naming a providers file (see the README's \"Serving models\")", name)
	case strings.Contains(name, "@preset/"):
		return gatehouse.FieldError(field, "presets apply to chat completions and the Responses API only")
	case api == Embeddings:
		return gatehouse.FieldError(field, "unknown model %q; GET /api/v1/embeddings/models lists the embedding models", name)
	}
	return gatehouse.FieldError(field, "unknown model %q; GET /api/v1/models lists the configured ones", name)
}

// allowFallbacks reports whether endpoints beyond the first (or beyond
// the order's) may serve: allow_fallbacks, true unless said.
func (p *ProviderPreferences) allowFallbacks() bool {
	return p == nil || p.AllowFallbacks == nil || *p.AllowFallbacks
}

func (p *ProviderPreferences) orderList() []string {
	if p == nil {
		return nil
	}
	return p.Order
}

// sortBy returns how the preferences sort endpoints (sort, a string or
// {"by": ...}), else def; "" for the default balance.
func (p *ProviderPreferences) sortBy(def string) string {
	if p == nil || len(p.Sort) == 0 || string(p.Sort) == "null" {
		return def
	}
	var s string
	if json.Unmarshal(p.Sort, &s) == nil {
		return s
	}
	var o struct {
		By string `json:"by"`
	}
	if json.Unmarshal(p.Sort, &o) == nil && o.By != "" {
		return o.By
	}
	return def
}
