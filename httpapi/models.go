package httpapi

import (
	"net/http"

	"gatehouse"
)

// generationJSON is OpenRouter's generation object (GenerationResponseData
// of the SDK), filled from the ledger. Every field of the SDK's schema is
// present; what Gatehouse does not know is null.
type generationJSON struct {
	APIType                      *string                `json:"api_type"` // completions, embeddings, ...
	AppID                        *int64                 `json:"app_id"`
	CacheDiscount                *float64               `json:"cache_discount"`
	Cancelled                    *bool                  `json:"cancelled"`
	CreatedAt                    jsonTime               `json:"created_at"`
	DataRegion                   string                 `json:"data_region"` // global, europe, us
	ExternalUser                 *string                `json:"external_user"`
	FinishReason                 *string                `json:"finish_reason"`
	GenerationTime               *int64                 `json:"generation_time"`
	HTTPReferer                  *string                `json:"http_referer"`
	ID                           string                 `json:"id"`
	IsBYOK                       bool                   `json:"is_byok"`
	Latency                      *int64                 `json:"latency"`
	Model                        string                 `json:"model"`
	ModerationLatency            *int64                 `json:"moderation_latency"`
	NativeFinishReason           *string                `json:"native_finish_reason"`
	NativeTokensCached           *int64                 `json:"native_tokens_cached"`
	NativeTokensCompletion       *int64                 `json:"native_tokens_completion"`
	NativeTokensCompletionImages *int64                 `json:"native_tokens_completion_images"`
	NativeTokensPrompt           *int64                 `json:"native_tokens_prompt"`
	NativeTokensReasoning        *int64                 `json:"native_tokens_reasoning"`
	NumFetches                   *int64                 `json:"num_fetches"`
	NumInputAudioPrompt          *int64                 `json:"num_input_audio_prompt"`
	NumMediaCompletion           *int64                 `json:"num_media_completion"`
	NumMediaPrompt               *int64                 `json:"num_media_prompt"`
	NumSearchResults             *int64                 `json:"num_search_results"`
	Origin                       string                 `json:"origin"`
	PresetID                     *string                `json:"preset_id"`
	ProviderName                 *string                `json:"provider_name"`
	ProviderResponses            []providerResponseJSON `json:"provider_responses"`
	RequestID                    *string                `json:"request_id"`
	ResponseCacheSourceID        *string                `json:"response_cache_source_id"`
	Router                       *string                `json:"router"`
	ServiceTier                  *string                `json:"service_tier"`
	SessionID                    *string                `json:"session_id"`
	Streamed                     *bool                  `json:"streamed"`
	TokensCompletion             *int64                 `json:"tokens_completion"`
	TokensPrompt                 *int64                 `json:"tokens_prompt"`
	TotalCost                    usd                    `json:"total_cost"`
	UpstreamID                   *string                `json:"upstream_id"`
	UpstreamInferenceCost        *float64               `json:"upstream_inference_cost"`
	Usage                        usd                    `json:"usage"`
	UserAgent                    *string                `json:"user_agent"`
	WebSearchEngine              *string                `json:"web_search_engine"`
	WorkspaceID                  *string                `json:"workspace_id"`
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
		NativeTokensCompletion: &g.CompletionTokens, NativeTokensPrompt: &g.PromptTokens, NativeTokensCached: &g.CacheReadTokens,
		ProviderName: &g.Provider, SessionID: g.SessionID, Streamed: &g.Streamed,
		TokensCompletion: &g.CompletionTokens, TokensPrompt: &g.PromptTokens,
		TotalCost: usdOf(g.Cost), UpstreamID: g.UpstreamID, Usage: usdOf(g.Cost), WorkspaceID: &g.WorkspaceID,
		AppID: g.AppID, HTTPReferer: g.HTTPReferer, UserAgent: g.UserAgent, AppTitle: g.AppTitle,
		Origin: origin(g.HTTPReferer), ProviderResponses: toProviderResponsesJSON(g),
	}
}

// providerResponseJSON is OpenRouter's ProviderResponse: one attempt of a
// call, at one endpoint.
type providerResponseJSON struct {
	ID             *string `json:"id,omitempty"` // the client's schema takes a string or nothing, not null
	EndpointID     string  `json:"endpoint_id"`
	ModelPermaslug string  `json:"model_permaslug"`
	ProviderName   string  `json:"provider_name"`
	Status         *int    `json:"status"`
	Latency        int64   `json:"latency"`
	IsBYOK         bool    `json:"is_byok"`
}

// toProviderResponsesJSON renders a generation's attempts; nil (null) for
// a generation recorded before routing kept them.
func toProviderResponsesJSON(g *gatehouse.Generation) []providerResponseJSON {
	if g.ProviderResponses == nil {
		return nil
	}
	out := make([]providerResponseJSON, len(g.ProviderResponses))
	for i, r := range g.ProviderResponses {
		out[i] = providerResponseJSON{EndpointID: r.Model, ModelPermaslug: g.Model, ProviderName: r.Provider,
			Status: &r.Status, Latency: r.LatencyMS, IsBYOK: r.BYOK}
		if r.UpstreamID != "" {
			out[i].ID = &r.UpstreamID
		}
	}
	return out
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
	id, err := generationID(r)
	if err != nil {
		return err
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
