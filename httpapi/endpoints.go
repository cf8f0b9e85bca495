package httpapi

import (
	"gatehouse/provider"
	"net/http"
	"slices"
)

// endpointJSON is OpenRouter's PublicEndpoint: one provider serving one
// model. Uptime, latency and throughput are what this instance measured of
// its own calls (null until it made some); status is 0 (serving), or -1
// while its circuit is open (see provider.Health).
type endpointJSON struct {
	Name                    string          `json:"name"` // "<provider name> | <model slug>"
	ModelID                 string          `json:"model_id"`
	ModelName               string          `json:"model_name"`
	ContextLength           int             `json:"context_length"` // 0: not given in the providers file
	Pricing                 pricingJSON     `json:"pricing"`
	ProviderName            string          `json:"provider_name"`
	Tag                     string          `json:"tag"` // the provider id, and /quantization when known
	Quantization            *string         `json:"quantization"`
	MaxCompletionTokens     *int            `json:"max_completion_tokens"`
	MaxPromptTokens         *int            `json:"max_prompt_tokens"`
	SupportedParameters     []string        `json:"supported_parameters"`
	SupportsImplicitCaching bool            `json:"supports_implicit_caching"`
	SupportsToolChoice      toolChoiceJSON  `json:"supports_tool_choice"`
	SupportsVoiceCloning    bool            `json:"supports_voice_cloning"`
	Status                  int             `json:"status"`
	UptimeLast5m            *float64        `json:"uptime_last_5m"`
	UptimeLast30m           *float64        `json:"uptime_last_30m"`
	UptimeLast1d            *float64        `json:"uptime_last_1d"`
	LatencyLast30m          *percentileJSON `json:"latency_last_30m"`
	ThroughputLast30m       *percentileJSON `json:"throughput_last_30m"`
}

// toolChoiceJSON says which tool_choice values the endpoint takes: all of
// them when the model lists tool_choice among its parameters, else only
// none (no tools).
type toolChoiceJSON struct {
	Auto     bool `json:"auto"`
	Function bool `json:"function"`
	None     bool `json:"none"`
	Required bool `json:"required"`
}

type percentileJSON struct {
	P50 float64 `json:"p50"`
	P75 float64 `json:"p75"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

func toEndpointJSON(m *provider.Model, p *provider.Provider, stats provider.EndpointStats) endpointJSON {
	name := m.Name
	if name == "" {
		name = m.Slug()
	}
	tools := slices.Contains(m.Parameters(), "tool_choice")
	e := endpointJSON{
		Name: p.DisplayName() + " | " + m.Slug(), ModelID: m.Slug(), ModelName: name, ContextLength: m.ContextLength,
		Pricing: toPricingJSON(m), ProviderName: p.DisplayName(), Tag: p.ID, Quantization: optional(m.Quantization),
		MaxCompletionTokens: optionalInt(m.MaxCompletionTokens), SupportedParameters: m.Parameters(),
		SupportsImplicitCaching: m.ImplicitCaching,
		SupportsToolChoice:      toolChoiceJSON{Auto: tools, Function: tools, None: true, Required: tools},
	}
	if m.Quantization != "" {
		e.Tag += "/" + m.Quantization
	}
	e.UptimeLast5m, e.UptimeLast30m, e.UptimeLast1d = percent(stats.Uptime5m), percent(stats.Uptime30m), percent(stats.Uptime1d)
	e.LatencyLast30m, e.ThroughputLast30m = toPercentiles(stats.Latency), toPercentiles(stats.Throughput)
	if stats.State == provider.CircuitOpen {
		e.Status = -1
	}
	return e
}

// percent renders a share as OpenRouter's uptime, a percentage.
func percent(share *float64) *float64 {
	if share == nil {
		return nil
	}
	return new(*share * 100)
}

func toPercentiles(p *[4]float64) *percentileJSON {
	if p == nil {
		return nil
	}
	return &percentileJSON{P50: p[0], P75: p[1], P90: p[2], P99: p[3]}
}

// modelEndpointsJSON is the answer of GET /models/{author}/{slug}/endpoints.
type modelEndpointsJSON struct {
	ID           string                    `json:"id"`
	Name         string                    `json:"name"`
	Created      int64                     `json:"created"`
	Description  string                    `json:"description"`
	Architecture endpointsArchitectureJSON `json:"architecture"`
	Endpoints    []endpointJSON            `json:"endpoints"`
}

// endpointsArchitectureJSON is the architecture of the endpoints answer,
// where (unlike in the model object) tokenizer is required and nullable.
type endpointsArchitectureJSON struct {
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
	Modality         string   `json:"modality"`
	Tokenizer        *string  `json:"tokenizer"`
	InstructType     *string  `json:"instruct_type"`
}

// listEndpoints serves GET /models/{author}/{slug}/endpoints: the model
// and its endpoints, in configuration order.
func (s *Server) listEndpoints(w http.ResponseWriter, r *http.Request) error {
	m, _, err := s.catalogModel(r)
	if err != nil {
		return err
	}
	eps, _ := s.data.Catalog.Endpoints(r.PathValue("author") + "/" + r.PathValue("slug"))
	list := make([]endpointJSON, len(eps))
	for i, ep := range eps {
		p, _ := s.data.Catalog.Provider(ep.Provider)
		list[i] = toEndpointJSON(ep, p, s.router.Health.Stats(ep.Address()))
	}
	j := s.toModelJSON(m)
	out := modelEndpointsJSON{ID: j.ID, Name: j.Name, Created: j.Created, Description: j.Description,
		Architecture: endpointsArchitectureJSON{InputModalities: m.Inputs(), OutputModalities: m.Outputs(), Modality: m.Modality(),
			Tokenizer: optional(m.Tokenizer), InstructType: optional(m.InstructType)},
		Endpoints: list}
	return writeJSON(w, http.StatusOK, dataJSON[modelEndpointsJSON]{out})
}

// listZDREndpoints serves GET /endpoints/zdr: the endpoints of the
// providers the providers file marks zdr: true.
func (s *Server) listZDREndpoints(w http.ResponseWriter, r *http.Request) error {
	out := []endpointJSON{}
	for _, p := range s.data.Catalog.Providers {
		for _, m := range p.Models {
			if m.ZeroRetention(p) {
				out = append(out, toEndpointJSON(m, p, s.router.Health.Stats(m.Address())))
			}
		}
	}
	return writeJSON(w, http.StatusOK, dataJSON[[]endpointJSON]{out})
}

type providerJSON struct {
	Name              string   `json:"name"`
	Slug              string   `json:"slug"`
	PrivacyPolicyURL  *string  `json:"privacy_policy_url"`
	TermsOfServiceURL *string  `json:"terms_of_service_url"`
	StatusPageURL     *string  `json:"status_page_url"`
	Headquarters      *string  `json:"headquarters"`
	Datacenters       []string `json:"datacenters"`
}

// listProviders serves GET /providers: every provider of the providers
// file, in its order.
func (s *Server) listProviders(w http.ResponseWriter, r *http.Request) error {
	out := []providerJSON{}
	for _, p := range s.data.Catalog.Providers {
		out = append(out, providerJSON{Name: p.DisplayName(), Slug: p.ID, PrivacyPolicyURL: optional(p.PrivacyPolicyURL),
			TermsOfServiceURL: optional(p.TermsOfServiceURL), StatusPageURL: optional(p.StatusPageURL),
			Headquarters: optional(p.Headquarters), Datacenters: p.Datacenters})
	}
	return writeJSON(w, http.StatusOK, dataJSON[[]providerJSON]{out})
}
