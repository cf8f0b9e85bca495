package provider

import (
	"cmp"
	"gatehouse"
	"slices"
	"strings"
	"time"
)

// ProviderInfo is what the catalog says of a provider beyond how to call
// it: what GET /providers and the endpoint objects show. Every field is
// optional.
type ProviderInfo struct {
	Name string // display name, such as "OpenAI"; DisplayName falls back to the id
	// ZDR is the operator's statement that the provider keeps no prompts
	// or completions (zero data retention): its endpoints are the ones
	// GET /endpoints/zdr lists and ?zdr=true selects.
	ZDR bool
	// Moderated: the provider screens requests and answers.
	Moderated         bool
	PrivacyPolicyURL  string
	TermsOfServiceURL string
	StatusPageURL     string
	Headquarters      string   // ISO 3166-1 alpha-2 country code
	Datacenters       []string // ISO 3166-1 alpha-2 country codes
	// CollectsData is the operator's statement that the provider may keep
	// prompts, or train on them: a request (data_collection: deny) or a
	// guardrail (training off) may rule it out.
	CollectsData bool
}

// DisplayName returns the provider's name, or its id when it has none.
func (p *Provider) DisplayName() string {
	if p.Name != "" {
		return p.Name
	}
	return p.ID
}

// ModelInfo is what the catalog says of a model beyond what metering needs,
// in the terms of OpenRouter's model object. Every field is optional; a nil
// list means the default stated on it.
type ModelInfo struct {
	Description     string
	Created         time.Time // when the model was released; NewCatalog fills in its own time when zero
	HuggingFaceID   string
	KnowledgeCutoff string // a date, YYYY-MM-DD
	ExpirationDate  string // a date, YYYY-MM-DD, after which the model is withdrawn
	Tokenizer       string // one of Tokenizers
	InstructType    string // one of InstructTypes
	// InputModalities and OutputModalities describe the model (nil: text);
	// the chat path forwards text content only.
	InputModalities  []string
	OutputModalities []string
	// SupportedParameters are the request parameters the model honours,
	// each one of ModelParameters (nil: DefaultSupportedParameters).
	SupportedParameters []string
	// Prices of cached prompt tokens, in dollars per million tokens, shown
	// in the catalog (nil: none given). Metering charges prompt tokens at
	// the prompt price, cached or not.
	CacheReadPrice  *gatehouse.Money
	CacheWritePrice *gatehouse.Money
	Reasoning       *ModelReasoning // nil: nothing said about reasoning
	Categories      []string        // use cases, each one of ModelCategories; for the category filter
	Distillable     bool            // its outputs may be used to train other models; for the distillable filter
	Quantization    string          // one of Quantizations; "" unknown
	ImplicitCaching bool            // the provider caches prompts without being asked
	// What this endpoint says apart from its provider (nil: the
	// provider's): zero data retention, where it runs, and whether it may
	// keep prompts or train on them.
	EndpointZDR          *bool
	EndpointDatacenters  []string
	EndpointCollectsData *bool
}

// ZeroRetention reports whether the endpoint keeps no prompts or
// completions: its own statement, else its provider's.
func (m *Model) ZeroRetention(p *Provider) bool {
	if m.EndpointZDR != nil {
		return *m.EndpointZDR
	}
	return p.ZDR
}

// Collects reports whether the endpoint may keep prompts or train on them:
// its own statement, else its provider's.
func (m *Model) Collects(p *Provider) bool {
	if m.EndpointCollectsData != nil {
		return *m.EndpointCollectsData
	}
	return p.CollectsData
}

// ServesRegion reports whether the endpoint runs in a region of
// DataRegions: its own datacenters, else its provider's.
func (m *Model) ServesRegion(p *Provider, region string) bool {
	if m.EndpointDatacenters != nil {
		return inRegion(m.EndpointDatacenters, region)
	}
	return p.ServesRegion(region)
}

// ModelReasoning says how a model reasons, as OpenRouter's model object
// does.
type ModelReasoning struct {
	Mandatory         bool   // reasoning cannot be turned off
	DefaultEnabled    *bool  // nil: not said
	DefaultEffort     string // one of ReasoningEfforts; "" not said
	SupportedEfforts  []string
	SupportsMaxTokens *bool
}

// The values the catalog's fields take: those of the official client's
// model schema.
var (
	InputModalities  = []string{"text", "image", "file", "audio", "video"}
	OutputModalities = []string{"text", "image", "embeddings", "audio", "video", "rerank", "decisions", "speech", "transcription"}
	// ModelParameters are the request parameters a model may list as
	// supported: those of the client's schema that the chat path forwards
	// (structured_outputs is response_format with a JSON schema).
	// prediction and web_search_options are refused by the chat path, and
	// include_reasoning is not forwarded.
	ModelParameters = []string{"temperature", "top_p", "top_k", "min_p", "top_a", "frequency_penalty",
		"presence_penalty", "repetition_penalty", "max_tokens", "max_completion_tokens", "logit_bias",
		"logprobs", "top_logprobs", "seed", "response_format", "structured_outputs", "stop", "tools",
		"tool_choice", "parallel_tool_calls", "reasoning", "reasoning_effort", "verbosity"}
	// AllModelParameters are every parameter name of the client's schema,
	// which the supported_parameters filter accepts.
	AllModelParameters = append(slices.Clone(ModelParameters), "prediction", "include_reasoning", "web_search_options")
	// DefaultSupportedParameters are listed for a model that lists none.
	DefaultSupportedParameters = []string{"max_tokens", "temperature", "top_p", "stop", "frequency_penalty",
		"presence_penalty", "seed", "tools", "tool_choice", "response_format"}
	ModelCategories = []string{"programming", "roleplay", "marketing", "marketing/seo", "technology", "science",
		"translation", "legal", "finance", "health", "trivia", "academia"}
	ReasoningEfforts = []string{"max", "xhigh", "high", "medium", "low", "minimal", "none"}
	Quantizations    = []string{"int4", "int8", "fp4", "mxfp4", "nvfp4", "fp6", "fp8", "mxfp8", "fp16", "bf16", "fp32", "unknown"}
	Tokenizers       = []string{"Router", "Media", "Other", "GPT", "Claude", "Gemini", "Gemma", "Grok", "Cohere", "Nova",
		"Qwen", "Yi", "DeepSeek", "Mistral", "Llama2", "Llama3", "Llama4", "PaLM", "RWKV", "Qwen3"}
	InstructTypes = []string{"none", "airoboros", "alpaca", "alpaca-modif", "chatml", "claude", "code-llama", "gemma",
		"llama2", "llama3", "mistral", "nemotron", "neural", "openchat", "phi3", "rwkv", "vicuna", "zephyr",
		"deepseek-r1", "deepseek-v3.1", "qwq", "qwen3"}
	// ModelSorts are the orders of the model list. Only the first four
	// have data here; the others rank by figures Gatehouse does not have
	// (benchmarks, traffic), so every model is unranked and the
	// configuration order stays.
	ModelSorts = []string{"pricing-low-to-high", "pricing-high-to-low", "context-high-to-low", "newest",
		"most-popular", "top-weekly", "throughput-high-to-low", "latency-low-to-high", "intelligence-high-to-low",
		"coding-high-to-low", "agentic-high-to-low", "design-arena-elo-high-to-low"}
	// DataRegions are the regions the model list filters by.
	DataRegions = []string{"eu", "us"}
)

// euCountries are the member states of the European Union: a provider
// with a datacenter in one of them serves the "eu" region.
var euCountries = []string{"AT", "BE", "BG", "HR", "CY", "CZ", "DK", "EE", "FI", "FR", "DE", "GR", "HU", "IE",
	"IT", "LV", "LT", "LU", "MT", "NL", "PL", "PT", "RO", "SK", "SI", "ES", "SE"}

// Inputs returns the model's input modalities.
func (m *Model) Inputs() []string { return orDefault(m.InputModalities, []string{"text"}) }

// Outputs returns the model's output modalities.
func (m *Model) Outputs() []string { return orDefault(m.OutputModalities, []string{"text"}) }

// Embeds reports whether the model answers embeddings requests: its
// output modalities include embeddings.
func (m *Model) Embeds() bool { return slices.Contains(m.Outputs(), "embeddings") }

// Parameters returns the request parameters the model supports.
func (m *Model) Parameters() []string {
	return orDefault(m.SupportedParameters, DefaultSupportedParameters)
}

// Modality returns OpenRouter's summary of the modalities, such as
// "text+image->text".
func (m *Model) Modality() string {
	return strings.Join(m.Inputs(), "+") + "->" + strings.Join(m.Outputs(), "+")
}

func orDefault(list, def []string) []string {
	if list == nil {
		return def
	}
	return list
}

// ServesRegion reports whether the provider has a datacenter in a region
// of DataRegions.
func (p *Provider) ServesRegion(region string) bool { return inRegion(p.Datacenters, region) }

// inRegion reports whether a datacenter of the countries is in the region.
func inRegion(countries []string, region string) bool {
	return slices.ContainsFunc(countries, func(c string) bool {
		return region == "us" && c == "US" || region == "eu" && slices.Contains(euCountries, c)
	})
}

// ModelQuery selects and orders models of the catalog, as the model list's
// query parameters do. The zero value selects the text models.
type ModelQuery struct {
	Text                string   // in the slug or the name, any case
	Category            string   // one of ModelCategories
	SupportedParameters []string // all of them
	OutputModalities    []string // any of them; nil: text
	AllOutputs          bool     // every output modality
	InputModalities     []string // all of them
	MinContext          int
	MinPrice, MaxPrice  *gatehouse.Money // the prompt price, per million tokens
	// MinOutputPrice and MaxOutputPrice bound the completion price.
	MinOutputPrice, MaxOutputPrice *gatehouse.Money
	Arch                           string   // the start of the tokenizer's name, any case ("llama" for Llama3)
	Authors                        []string // the slug's first part, any case
	Providers                      []string // provider ids or names, any case
	Distillable                    *bool
	ZDR                            bool   // served by a ZDR provider
	Region                         string // one of DataRegions
	MinAgeDays, MaxAgeDays         *float64
	// Unscored asks for a benchmark score or a measured figure (tool-call
	// success rate) that no model of the catalog has: nothing matches.
	Unscored bool
	Sort     string // one of ModelSorts; "" the configuration order
	// Guardrails, when any, leave out the models CheckModel refuses: the
	// list of one key.
	Guardrails []gatehouse.AppliedGuardrail
	Now        time.Time // for the age filters
}

// Find returns the models that match q, in q's order: each model once,
// as the first of its endpoints (in configuration order) that matches.
func (c *Catalog) Find(q ModelQuery) []*Model {
	var out []*Model
	for _, slug := range c.order {
		for _, m := range c.slugs[slug] {
			if q.matches(m, c.providers[m.Provider]) {
				out = append(out, m)
				break
			}
		}
	}
	sortModels(out, q.Sort)
	return out
}

func (q *ModelQuery) matches(m *Model, p *Provider) bool {
	if q.Unscored || !q.matchesText(m, p) || !q.matchesFeatures(m, p) || !q.matchesFigures(m) {
		return false
	}
	return len(q.Guardrails) == 0 || gatehouse.CheckEndpoint(q.Guardrails, Endpoint{Provider: p, Model: m}.Facts()) == nil
}

func (q *ModelQuery) matchesText(m *Model, p *Provider) bool {
	author, _, _ := strings.Cut(m.Slug(), "/")
	switch {
	case q.Text != "" && !containsFold(m.Slug(), q.Text) && !containsFold(m.Name, q.Text):
		return false
	case q.Arch != "" && !strings.HasPrefix(strings.ToLower(m.Tokenizer), strings.ToLower(q.Arch)):
		return false
	case q.Authors != nil && !slices.ContainsFunc(q.Authors, eqFold(author)):
		return false
	case q.Providers != nil && !slices.ContainsFunc(q.Providers, eqFold(p.ID)) && !slices.ContainsFunc(q.Providers, eqFold(p.DisplayName())):
		return false
	}
	return true
}

func (q *ModelQuery) matchesFeatures(m *Model, p *Provider) bool {
	switch {
	case q.Category != "" && !slices.Contains(m.Categories, q.Category):
		return false
	case !containsAll(m.Parameters(), q.SupportedParameters) || !containsAll(m.Inputs(), q.InputModalities):
		return false
	case !q.AllOutputs && !slices.ContainsFunc(orDefault(q.OutputModalities, []string{"text"}), func(o string) bool { return slices.Contains(m.Outputs(), o) }):
		return false
	case q.Distillable != nil && m.Distillable != *q.Distillable:
		return false
	case q.ZDR && !m.ZeroRetention(p), q.Region != "" && !m.ServesRegion(p, q.Region):
		return false
	}
	return true
}

func (q *ModelQuery) matchesFigures(m *Model) bool {
	ageDays := q.Now.Sub(m.Created).Hours() / 24
	switch {
	case q.MinContext > 0 && m.ContextLength < q.MinContext:
		return false
	case !within(m.PromptPrice, q.MinPrice, q.MaxPrice), !within(m.CompletionPrice, q.MinOutputPrice, q.MaxOutputPrice):
		return false
	case q.MinAgeDays != nil && ageDays < *q.MinAgeDays, q.MaxAgeDays != nil && ageDays > *q.MaxAgeDays:
		return false
	}
	return true
}

func within(v gatehouse.Money, lo, hi *gatehouse.Money) bool {
	return (lo == nil || v >= *lo) && (hi == nil || v <= *hi)
}

func containsAll(have, want []string) bool {
	for _, w := range want {
		if !slices.Contains(have, w) {
			return false
		}
	}
	return true
}

func containsFold(s, sub string) bool {
	return strings.Contains(strings.ToLower(s), strings.ToLower(sub))
}

func eqFold(s string) func(string) bool {
	return func(t string) bool { return strings.EqualFold(s, t) }
}

// sortModels orders models by a sort of ModelSorts, keeping the
// configuration order among equals and for the sorts without data.
func sortModels(models []*Model, sort string) {
	var by func(a, b *Model) int
	switch sort {
	case "pricing-low-to-high": // the average of the two prices, so their sum
		by = func(a, b *Model) int {
			return cmp.Compare(a.PromptPrice+a.CompletionPrice, b.PromptPrice+b.CompletionPrice)
		}
	case "pricing-high-to-low":
		by = func(a, b *Model) int {
			return cmp.Compare(b.PromptPrice+b.CompletionPrice, a.PromptPrice+a.CompletionPrice)
		}
	case "context-high-to-low": // an unknown context (0) comes last
		by = func(a, b *Model) int { return cmp.Compare(b.ContextLength, a.ContextLength) }
	case "newest":
		by = func(a, b *Model) int { return b.Created.Compare(a.Created) }
	default:
		return
	}
	slices.SortStableFunc(models, by)
}
