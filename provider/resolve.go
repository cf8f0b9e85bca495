package provider

import (
	"strings"

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
	// Model is the model the request names: provider/model.
	Model string
	// Preferences are the request's provider object (nil: none).
	Preferences *ProviderPreferences
}

// Endpoint is one way to serve a request: a model of a provider.
type Endpoint struct {
	Provider *Provider
	Model    *Model
}

// Resolve turns a request into the endpoints that may serve it, in the
// order to try them. Every model endpoint calls it; it is the one place a
// routing rule lives. A request that no endpoint may serve is an EINVALID
// error naming the field at fault (model, or the provider preference that
// leaves none) and what would serve.
func (c *Catalog) Resolve(r Request) ([]Endpoint, error) {
	if strings.Contains(r.Model, "@preset/") && r.API != Chat {
		return nil, gatehouse.FieldError("model", "presets apply to chat completions and the Responses API only")
	}
	m, p, ok := c.Model(r.Model)
	if !ok {
		return nil, c.unknownModel(r)
	}
	if err := r.API.serves(m, p, r.Model); err != nil {
		return nil, err
	}
	if err := r.Preferences.Check("provider", m, p); err != nil {
		return nil, err
	}
	return []Endpoint{{Provider: p, Model: m}}, nil
}

// serves refuses an endpoint that does not offer the API.
func (a API) serves(m *Model, p *Provider, slug string) error {
	switch {
	case a == Embeddings && !m.Embeds():
		return gatehouse.FieldError("model", "%q is not an embedding model; GET /api/v1/embeddings/models lists them", slug)
	case a != Embeddings && m.Embeds():
		// It completes nothing, and has no completion price to charge.
		return gatehouse.FieldError("model", "%q is an embedding model; POST /api/v1/embeddings serves it", slug)
	case a == Responses && !p.Responses:
		return gatehouse.FieldError("model", "%q is served by provider %s, which does not offer the Responses API (its entry in the providers file does not say responses: true); call the model with POST /api/v1/chat/completions", slug, p.ID)
	}
	return nil
}

// unknownModel is the error of a request naming a model the providers
// file does not have: where to find the configured ones, or, when there
// are none, how to configure some.
func (c *Catalog) unknownModel(r Request) error {
	switch {
	case len(c.models) == 0:
		return gatehouse.FieldError("model", "unknown model %q: no models are configured on this server; start it with GATEHOUSE_PROVIDERS_FILE (or --providers) naming a providers file (see the README's \"Serving models\")", r.Model)
	case r.API == Embeddings:
		return gatehouse.FieldError("model", "unknown model %q; GET /api/v1/embeddings/models lists the embedding models", r.Model)
	}
	return gatehouse.FieldError("model", "unknown model %q; GET /api/v1/models lists the configured ones", r.Model)
}
