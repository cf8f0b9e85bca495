package httpapi

import (
	"gatehouse/provider"
	"net/http"
	"net/url"
	"strconv"

	"gatehouse"
)

// The catalog (the providers file) in OpenRouter's shapes: models,
// endpoints and providers. Gatehouse fills in what the file says, and
// null, or a field left out where the client's schema does not allow null,
// for what it does not know. Each model is served by exactly one provider,
// the first part of its slug, so a model has one endpoint.

type modelJSON struct {
	ID                  string           `json:"id"`
	CanonicalSlug       string           `json:"canonical_slug"`
	HuggingFaceID       *string          `json:"hugging_face_id"`
	Name                string           `json:"name"`
	Created             int64            `json:"created"`
	Description         string           `json:"description"`
	ContextLength       *int             `json:"context_length"`
	Architecture        architectureJSON `json:"architecture"`
	Pricing             pricingJSON      `json:"pricing"`
	TopProvider         topProviderJSON  `json:"top_provider"`
	PerRequestLimits    *struct{}        `json:"per_request_limits"`
	DefaultParameters   *struct{}        `json:"default_parameters"`
	SupportedParameters []string         `json:"supported_parameters"`
	SupportedVoices     []string         `json:"supported_voices"`
	KnowledgeCutoff     *string          `json:"knowledge_cutoff"`
	ExpirationDate      *string          `json:"expiration_date"`
	Reasoning           *reasoningJSON   `json:"reasoning,omitempty"` // the client's schema does not allow null
	Links               modelLinksJSON   `json:"links"`
}

type architectureJSON struct {
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
	Modality         string   `json:"modality"`
	Tokenizer        string   `json:"tokenizer,omitempty"` // the model object's schema does not allow null
	InstructType     *string  `json:"instruct_type"`
}

// pricingJSON gives prices in dollars per token, as decimal strings.
type pricingJSON struct {
	Prompt          string `json:"prompt"`
	Completion      string `json:"completion"`
	InputCacheRead  string `json:"input_cache_read,omitempty"`
	InputCacheWrite string `json:"input_cache_write,omitempty"`
}

type topProviderJSON struct {
	ContextLength       *int `json:"context_length"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	IsModerated         bool `json:"is_moderated"`
}

type reasoningJSON struct {
	Mandatory         bool     `json:"mandatory"`
	DefaultEnabled    *bool    `json:"default_enabled,omitempty"`
	DefaultEffort     *string  `json:"default_effort,omitempty"`
	SupportedEfforts  []string `json:"supported_efforts,omitempty"`
	SupportsMaxTokens *bool    `json:"supports_max_tokens,omitempty"`
}

type modelLinksJSON struct {
	Details string `json:"details"`
}

type modelsJSON struct {
	Data  []modelJSON `json:"data"`
	Links struct {
		Next *string `json:"next"`
	} `json:"links"`
	TotalCount int `json:"total_count"`
}

func (s *Server) toModelJSON(m *provider.Model) modelJSON {
	p, _ := s.data.Catalog.Provider(m.Provider)
	j := modelJSON{
		ID: m.Slug(), CanonicalSlug: m.Slug(), HuggingFaceID: optional(m.HuggingFaceID), Name: m.Name,
		Created: m.Created.Unix(), Description: m.Description,
		Architecture: architectureJSON{InputModalities: m.Inputs(), OutputModalities: m.Outputs(), Modality: m.Modality(),
			Tokenizer: m.Tokenizer, InstructType: optional(m.InstructType)},
		Pricing:             toPricingJSON(m),
		TopProvider:         topProviderJSON{ContextLength: optionalInt(m.ContextLength), MaxCompletionTokens: optionalInt(m.MaxCompletionTokens), IsModerated: p.Moderated},
		SupportedParameters: m.Parameters(),
		KnowledgeCutoff:     optional(m.KnowledgeCutoff), ExpirationDate: optional(m.ExpirationDate),
		Links: modelLinksJSON{Details: "/api/v1/models/" + m.Slug() + "/endpoints"},
	}
	if j.Name == "" {
		j.Name = m.Slug()
	}
	if j.Description == "" {
		j.Description = "Served by provider " + p.DisplayName() + " through Gatehouse."
	}
	j.ContextLength = j.TopProvider.ContextLength
	if r := m.Reasoning; r != nil {
		j.Reasoning = &reasoningJSON{Mandatory: r.Mandatory, DefaultEnabled: r.DefaultEnabled,
			DefaultEffort: optional(r.DefaultEffort), SupportedEfforts: r.SupportedEfforts, SupportsMaxTokens: r.SupportsMaxTokens}
	}
	return j
}

func toPricingJSON(m *provider.Model) pricingJSON {
	p := pricingJSON{Prompt: provider.PricePerToken(m.PromptPrice), Completion: provider.PricePerToken(m.CompletionPrice)}
	if m.CacheReadPrice != nil {
		p.InputCacheRead = provider.PricePerToken(*m.CacheReadPrice)
	}
	if m.CacheWritePrice != nil {
		p.InputCacheWrite = provider.PricePerToken(*m.CacheWritePrice)
	}
	return p
}

// optional returns nil for "", else a pointer to s.
func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// optionalInt returns nil for 0 (unknown), else a pointer to n.
func optionalInt(n int) *int {
	if n == 0 {
		return nil
	}
	return &n
}

// listModels serves GET /models: the models that match the filters, a
// page of them when offset or limit is given, all of them otherwise.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	q, err := modelQuery(r, s.now())
	if err != nil {
		return err
	}
	return s.writeModels(w, r, q)
}

// listModelsForUser serves GET /models/user: the models the calling key
// may use, which are those its guardrails let through, as the gateway
// decides before it serves a request.
func (s *Server) listModelsForUser(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models: list a regular API key's models with that key, or every model with GET /api/v1/models")
	}
	q, err := modelQuery(r, s.now())
	if err != nil {
		return err
	}
	if q.Guardrails, err = s.store.GuardrailsForKey(r.Context(), p.key); err != nil {
		return err
	}
	return s.writeModels(w, r, q)
}

func (s *Server) writeModels(w http.ResponseWriter, r *http.Request, q provider.ModelQuery) error {
	offset, limit, err := modelPage(r)
	if err != nil {
		return err
	}
	models := s.data.Catalog.Find(q)
	page := models[min(offset, len(models)):]
	if limit > 0 && len(page) > limit {
		page = page[:limit]
	}
	out := modelsJSON{Data: mapSlice(page, s.toModelJSON), TotalCount: len(models)}
	if out.Data == nil {
		out.Data = []modelJSON{}
	}
	if next := offset + len(page); next < len(models) {
		out.Links.Next = nextPage(r, next)
	}
	return writeJSON(w, http.StatusOK, out)
}

// nextPage returns the request's path and query with offset set to next.
func nextPage(r *http.Request, next int) *string {
	q := r.URL.Query()
	q.Set("offset", strconv.Itoa(next))
	u := url.URL{Path: r.URL.Path, RawQuery: q.Encode()}
	s := u.String()
	return &s
}

// countModels serves GET /models/count: how many models match the filters.
func (s *Server) countModels(w http.ResponseWriter, r *http.Request) error {
	q, err := modelQuery(r, s.now())
	if err != nil {
		return err
	}
	var out struct {
		Data struct {
			Count int `json:"count"`
		} `json:"data"`
	}
	out.Data.Count = len(s.data.Catalog.Find(q))
	return writeJSON(w, http.StatusOK, out)
}

// catalogModel returns the model of the path's {author}/{slug}; 404 when
// there is none.
func (s *Server) catalogModel(r *http.Request) (*provider.Model, *provider.Provider, error) {
	slug := r.PathValue("author") + "/" + r.PathValue("slug")
	eps, ok := s.data.Catalog.Endpoints(slug)
	if !ok {
		return nil, nil, &gatehouse.Error{Code: gatehouse.ENOTFOUND, Message: "model not found: GET /api/v1/models lists the models served here",
			Metadata: map[string]any{"id": slug}}
	}
	p, _ := s.data.Catalog.Provider(eps[0].Provider)
	return eps[0], p, nil
}

// getModel serves GET /model/{author}/{slug}. A model id that holds a
// slash comes percent-encoded (%2F), as the official client sends it.
func (s *Server) getModel(w http.ResponseWriter, r *http.Request) error {
	m, _, err := s.catalogModel(r)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[modelJSON]{s.toModelJSON(m)})
}
