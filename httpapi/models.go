package httpapi

import (
	"net/http"
	"time"

	"gatehouse"
)

// The shape of OpenRouter's model list, which clients parse; Gatehouse
// fills in what its configuration knows and null or defaults elsewhere.
type modelJSON struct {
	ID                  string           `json:"id"`
	CanonicalSlug       string           `json:"canonical_slug"`
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
	Links               modelLinksJSON   `json:"links"`
}

type architectureJSON struct {
	InputModalities  []string `json:"input_modalities"`
	OutputModalities []string `json:"output_modalities"`
	Modality         string   `json:"modality"`
}

type pricingJSON struct {
	Prompt     string `json:"prompt"`
	Completion string `json:"completion"`
}

type topProviderJSON struct {
	ContextLength       *int `json:"context_length"`
	MaxCompletionTokens *int `json:"max_completion_tokens"`
	IsModerated         bool `json:"is_moderated"`
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

// startedAt stands for the models' creation time, which the configuration
// does not know.
var startedAt = time.Now().Unix()

func toModelJSON(m *gatehouse.Model) modelJSON {
	j := modelJSON{
		ID: m.Slug(), CanonicalSlug: m.Slug(), Name: m.Name, Created: startedAt,
		Description:         "Served by provider " + m.Provider + " through Gatehouse.",
		Architecture:        architectureJSON{InputModalities: []string{"text"}, OutputModalities: []string{"text"}, Modality: "text->text"},
		Pricing:             pricingJSON{Prompt: gatehouse.PricePerToken(m.PromptPrice), Completion: gatehouse.PricePerToken(m.CompletionPrice)},
		SupportedParameters: []string{"max_tokens", "temperature", "top_p", "stop", "frequency_penalty", "presence_penalty", "seed", "tools", "tool_choice", "response_format"},
		SupportedVoices:     nil,
		Links:               modelLinksJSON{Details: "/api/v1/models"},
	}
	if j.Name == "" {
		j.Name = m.Slug()
	}
	if m.ContextLength > 0 {
		n := m.ContextLength
		j.ContextLength, j.TopProvider.ContextLength = &n, &n
	}
	max := m.MaxCompletionTokens
	j.TopProvider.MaxCompletionTokens = &max
	return j
}

// listModels serves GET /models: the configured models, in OpenRouter's shape.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) error {
	models := s.data.Catalog.Models()
	out := modelsJSON{Data: mapSlice(models, toModelJSON), TotalCount: len(models)}
	return writeJSON(w, http.StatusOK, out)
}

// generationJSON is OpenRouter's generation object (GenerationResponseData
// of the SDK), filled from the ledger. Every field of the SDK's schema is
// present; what Gatehouse does not know is null.
type generationJSON struct {
	APIType                      *string     `json:"api_type"` // completions, embeddings, ...
	AppID                        *int64      `json:"app_id"`
	CacheDiscount                *float64    `json:"cache_discount"`
	Cancelled                    *bool       `json:"cancelled"`
	CreatedAt                    jsonTime    `json:"created_at"`
	DataRegion                   string      `json:"data_region"` // global, europe, us
	ExternalUser                 *string     `json:"external_user"`
	FinishReason                 *string     `json:"finish_reason"`
	GenerationTime               *int64      `json:"generation_time"`
	HTTPReferer                  *string     `json:"http_referer"`
	ID                           string      `json:"id"`
	IsBYOK                       bool        `json:"is_byok"`
	Latency                      *int64      `json:"latency"`
	Model                        string      `json:"model"`
	ModerationLatency            *int64      `json:"moderation_latency"`
	NativeFinishReason           *string     `json:"native_finish_reason"`
	NativeTokensCached           *int64      `json:"native_tokens_cached"`
	NativeTokensCompletion       *int64      `json:"native_tokens_completion"`
	NativeTokensCompletionImages *int64      `json:"native_tokens_completion_images"`
	NativeTokensPrompt           *int64      `json:"native_tokens_prompt"`
	NativeTokensReasoning        *int64      `json:"native_tokens_reasoning"`
	NumFetches                   *int64      `json:"num_fetches"`
	NumInputAudioPrompt          *int64      `json:"num_input_audio_prompt"`
	NumMediaCompletion           *int64      `json:"num_media_completion"`
	NumMediaPrompt               *int64      `json:"num_media_prompt"`
	NumSearchResults             *int64      `json:"num_search_results"`
	Origin                       string      `json:"origin"`
	PresetID                     *string     `json:"preset_id"`
	ProviderName                 *string     `json:"provider_name"`
	ProviderResponses            *[]struct{} `json:"provider_responses"`
	RequestID                    *string     `json:"request_id"`
	ResponseCacheSourceID        *string     `json:"response_cache_source_id"`
	Router                       *string     `json:"router"`
	ServiceTier                  *string     `json:"service_tier"`
	SessionID                    *string     `json:"session_id"`
	Streamed                     *bool       `json:"streamed"`
	TokensCompletion             *int64      `json:"tokens_completion"`
	TokensPrompt                 *int64      `json:"tokens_prompt"`
	TotalCost                    usd         `json:"total_cost"`
	UpstreamID                   *string     `json:"upstream_id"`
	UpstreamInferenceCost        *float64    `json:"upstream_inference_cost"`
	Usage                        usd         `json:"usage"`
	UserAgent                    *string     `json:"user_agent"`
	WebSearchEngine              *string     `json:"web_search_engine"`
	WorkspaceID                  *string     `json:"workspace_id"`
	// AppTitle is Gatehouse's: the X-OpenRouter-Title (or X-Title) of the
	// request, which OpenRouter's generation object does not show.
	AppTitle *string `json:"app_title"`
}

// toGenerationJSON renders a ledger entry. A partial generation (a stream
// cut short, or an answer without usage, charged its reservation) shows as
// cancelled.
func toGenerationJSON(g *gatehouse.Generation) generationJSON {
	apiType, partial := "completions", g.Status == gatehouse.GenerationPartial
	return generationJSON{
		APIType: &apiType, Cancelled: &partial, CreatedAt: newJSONTime(g.CreatedAt), DataRegion: "global",
		ExternalUser: g.ExternalUser, FinishReason: g.FinishReason, GenerationTime: &g.GenerationMS,
		ID: g.ID, IsBYOK: g.BYOK, Latency: &g.LatencyMS, Model: g.Model, NativeFinishReason: g.FinishReason,
		NativeTokensCompletion: &g.CompletionTokens, NativeTokensPrompt: &g.PromptTokens,
		ProviderName: &g.Provider, SessionID: g.SessionID, Streamed: &g.Streamed,
		TokensCompletion: &g.CompletionTokens, TokensPrompt: &g.PromptTokens,
		TotalCost: usdOf(g.Cost), UpstreamID: g.UpstreamID, Usage: usdOf(g.Cost), WorkspaceID: &g.WorkspaceID,
		AppID: g.AppID, HTTPReferer: g.HTTPReferer, UserAgent: g.UserAgent, AppTitle: g.AppTitle,
		Origin: origin(g.HTTPReferer),
	}
}

// origin returns the origin (scheme://host) of a referer, or "" without one.
func origin(referer *string) string {
	if referer == nil {
		return ""
	}
	o, _ := gatehouse.RefererOrigin(*referer)
	return o
}

// getGeneration serves GET /generation?id=: one ledger entry. A regular key
// sees its own generations, a management key those of its organization.
func (s *Server) getGeneration(w http.ResponseWriter, r *http.Request, p *principal) error {
	id := r.URL.Query().Get("id")
	switch {
	case id == "":
		return gatehouse.FieldError("id", "is required: the id of a completion, such as gen-…")
	case !plainText(id):
		return gatehouse.FieldError("id", "must be UTF-8 text without NUL characters")
	}
	s.settled(r.Context())
	g, err := s.store.FindGeneration(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	if !p.key.Management && g.KeyHash != p.key.Hash {
		return gatehouse.NotFound("generation", id)
	}
	return writeJSON(w, http.StatusOK, dataJSON[generationJSON]{toGenerationJSON(g)})
}
