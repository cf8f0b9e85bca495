package preset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"gatehouse"
	"gatehouse/provider"
	"regexp"
	"slices"
	"strings"
)

// MaxFallbackModels bounds the models a preset may fall back to, as it
// bounds a request's.
const MaxFallbackModels = 10

// A preset version is made from a request body of one of three inference
// APIs (Chat Completions, Anthropic Messages, OpenAI Responses), as
// OpenRouter's presets are: the fields that configure a request are kept,
// in the Chat Completions form the gateway applies (PresetFields); the
// fields of one request (messages, input, stream, user, metadata...) are
// ignored, except that the leading system messages, the Messages system
// text or the Responses instructions become the system prompt. What a
// preset could hold but Gatehouse cannot apply (model fallbacks, plugins,
// server tools, unconvertible formats) is refused with a 400 naming the
// field, rather than dropped unsaid.

// Bounds of preset values.
const (
	MaxPresetCompletionTokens = 10_000_000 // as the chat endpoint bounds max_tokens
	maxPresetStops            = 16
	maxPresetTools            = 128
)

// presetCommon are the fields the three request bodies share.
type presetCommon struct {
	Model       *string                       `json:"model"`
	Temperature *float64                      `json:"temperature"`
	TopP        *float64                      `json:"top_p"`
	TopK        *int64                        `json:"top_k"`
	Provider    *provider.ProviderPreferences `json:"provider"`
	// Refused when given: a preset cannot apply them.
	Models  []string                     `json:"models"`
	Plugins []map[string]json.RawMessage `json:"plugins"`
	// Fields of one request, which no preset keeps.
	CacheControl        json.RawMessage `json:"cache_control"`
	SessionID           json.RawMessage `json:"session_id"`
	StopServerToolsWhen json.RawMessage `json:"stop_server_tools_when"`
	Stream              json.RawMessage `json:"stream"`
	Trace               json.RawMessage `json:"trace"`
	User                json.RawMessage `json:"user"`
}

// ChatPresetRequest is a Chat Completions request body from which a preset
// version is made (POST /presets/{slug}/chat/completions).
type ChatPresetRequest struct {
	presetCommon
	Messages            []map[string]json.RawMessage `json:"messages"`
	MaxTokens           *int64                       `json:"max_tokens"`
	MaxCompletionTokens *int64                       `json:"max_completion_tokens"`
	MinP                *float64                     `json:"min_p"`
	TopA                *float64                     `json:"top_a"`
	PresencePenalty     *float64                     `json:"presence_penalty"`
	FrequencyPenalty    *float64                     `json:"frequency_penalty"`
	RepetitionPenalty   *float64                     `json:"repetition_penalty"`
	Seed                *int64                       `json:"seed"`
	Stop                json.RawMessage              `json:"stop"`
	LogitBias           map[string]float64           `json:"logit_bias"`
	Logprobs            *bool                        `json:"logprobs"`
	TopLogprobs         *int64                       `json:"top_logprobs"`
	ResponseFormat      json.RawMessage              `json:"response_format"`
	Tools               []map[string]json.RawMessage `json:"tools"`
	ToolChoice          json.RawMessage              `json:"tool_choice"`
	ParallelToolCalls   *bool                        `json:"parallel_tool_calls"`
	Reasoning           *PresetReasoning             `json:"reasoning"`
	ReasoningEffort     *string                      `json:"reasoning_effort"`
	Verbosity           *string                      `json:"verbosity"`
	// Fields of one request, which no preset keeps.
	Debug              json.RawMessage `json:"debug"`
	ImageConfig        json.RawMessage `json:"image_config"`
	Metadata           json.RawMessage `json:"metadata"`
	Modalities         json.RawMessage `json:"modalities"`
	Prediction         json.RawMessage `json:"prediction"`
	PromptCacheKey     json.RawMessage `json:"prompt_cache_key"`
	PromptCacheOptions json.RawMessage `json:"prompt_cache_options"`
	ServiceTier        json.RawMessage `json:"service_tier"`
	StreamOptions      json.RawMessage `json:"stream_options"`
}

// PresetReasoning is the reasoning configuration of a chat request.
type PresetReasoning struct {
	Effort    *string `json:"effort,omitempty"`
	Summary   *string `json:"summary,omitempty"`
	MaxTokens *int64  `json:"max_tokens,omitempty"`
	Exclude   *bool   `json:"exclude,omitempty"`
	Enabled   *bool   `json:"enabled,omitempty"`
}

// MessagesPresetRequest is an Anthropic Messages request body from which a
// preset version is made (POST /presets/{slug}/messages).
type MessagesPresetRequest struct {
	presetCommon
	MaxTokens     *int64                       `json:"max_tokens"`
	StopSequences []string                     `json:"stop_sequences"`
	System        json.RawMessage              `json:"system"`
	Thinking      json.RawMessage              `json:"thinking"`
	Tools         []map[string]json.RawMessage `json:"tools"`
	ToolChoice    json.RawMessage              `json:"tool_choice"`
	OutputConfig  *MessagesOutputConfig        `json:"output_config"`
	Fallbacks     json.RawMessage              `json:"fallbacks"` // refused when given
	// Fields of one request, which no preset keeps.
	Messages          json.RawMessage `json:"messages"`
	ContextManagement json.RawMessage `json:"context_management"`
	Metadata          json.RawMessage `json:"metadata"`
	Safeguards        json.RawMessage `json:"safeguards"`
	ServiceTier       json.RawMessage `json:"service_tier"`
	Speed             json.RawMessage `json:"speed"`
}

// MessagesOutputConfig is the output_config of a Messages request: its
// effort and format are kept (as reasoning.effort and response_format).
type MessagesOutputConfig struct {
	Effort     *string         `json:"effort"`
	Format     json.RawMessage `json:"format"`
	TaskBudget json.RawMessage `json:"task_budget"` // of one request
}

// ResponsesPresetRequest is an OpenAI Responses request body from which a
// preset version is made (POST /presets/{slug}/responses).
type ResponsesPresetRequest struct {
	presetCommon
	MaxOutputTokens   *int64                       `json:"max_output_tokens"`
	PresencePenalty   *float64                     `json:"presence_penalty"`
	FrequencyPenalty  *float64                     `json:"frequency_penalty"`
	TopLogprobs       *int64                       `json:"top_logprobs"`
	Instructions      *string                      `json:"instructions"`
	Reasoning         *ResponsesReasoning          `json:"reasoning"`
	Text              *ResponsesText               `json:"text"`
	Tools             []map[string]json.RawMessage `json:"tools"`
	ToolChoice        json.RawMessage              `json:"tool_choice"`
	ParallelToolCalls *bool                        `json:"parallel_tool_calls"`
	// Fields of one request, which no preset keeps.
	Background         json.RawMessage `json:"background"`
	Debug              json.RawMessage `json:"debug"`
	ImageConfig        json.RawMessage `json:"image_config"`
	Include            json.RawMessage `json:"include"`
	Input              json.RawMessage `json:"input"`
	MaxToolCalls       json.RawMessage `json:"max_tool_calls"`
	Metadata           json.RawMessage `json:"metadata"`
	Modalities         json.RawMessage `json:"modalities"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Prompt             json.RawMessage `json:"prompt"`
	PromptCacheKey     json.RawMessage `json:"prompt_cache_key"`
	PromptCacheOptions json.RawMessage `json:"prompt_cache_options"`
	SafetyIdentifier   json.RawMessage `json:"safety_identifier"`
	ServiceTier        json.RawMessage `json:"service_tier"`
	Store              json.RawMessage `json:"store"`
	Truncation         json.RawMessage `json:"truncation"`
}

// ResponsesReasoning is the reasoning configuration of a Responses request:
// PresetReasoning's fields (declared again, so that errors name them as
// the client wrote them) and two of one request.
type ResponsesReasoning struct {
	Effort    *string         `json:"effort"`
	Summary   *string         `json:"summary"`
	MaxTokens *int64          `json:"max_tokens"`
	Exclude   *bool           `json:"exclude"`
	Enabled   *bool           `json:"enabled"`
	Context   json.RawMessage `json:"context"`
	Mode      json.RawMessage `json:"mode"`
}

// ResponsesText is the text configuration of a Responses request: its
// format becomes response_format, its verbosity verbosity.
type ResponsesText struct {
	Format    json.RawMessage `json:"format"`
	Verbosity *string         `json:"verbosity"`
}

// configBuilder collects the fields of a preset configuration.
type configBuilder struct{ cfg gatehouse.PresetConfig }

func newConfigBuilder() *configBuilder { return &configBuilder{cfg: gatehouse.PresetConfig{}} }

// set keeps v (its JSON) under name; nil values (nil pointers included)
// are left out.
func (b *configBuilder) set(name string, v any) {
	raw, err := json.Marshal(v)
	if err != nil || string(raw) == "null" {
		return
	}
	b.cfg[name] = raw
}

// common keeps the shared fields and refuses what no preset can apply.
func (c *presetCommon) common(b *configBuilder) error {
	if len(c.Models) > MaxFallbackModels {
		return gatehouse.FieldError("models", "must have at most %d models", MaxFallbackModels)
	}
	for i, m := range c.Models {
		if m == "" || len(m) > gatehouse.MaxModelSlugLength || strings.Contains(m, PresetModelPrefix) || strings.ContainsAny(m, " \t\r\n") {
			return gatehouse.FieldError(fmt.Sprintf("models[%d]", i), "must be a model slug of 1 to %d characters, such as openai/gpt-4o-mini (GET /api/v1/models lists them)", gatehouse.MaxModelSlugLength)
		}
	}
	if len(c.Models) > 0 {
		b.set("models", c.Models)
	}
	if len(c.Plugins) > 0 {
		return gatehouse.FieldError("plugins", "plugins are billed apart from tokens, which Gatehouse does not price")
	}
	if c.Model != nil {
		m := *c.Model
		if m == "" || len(m) > gatehouse.MaxModelSlugLength || strings.Contains(m, PresetModelPrefix) || strings.ContainsAny(m, " \t\r\n") {
			return gatehouse.FieldError("model", "must be a model slug of 1 to %d characters, such as openai/gpt-4o-mini (GET /api/v1/models lists them); a preset cannot name another preset", gatehouse.MaxModelSlugLength)
		}
		b.set("model", m)
	}
	if err := firstError(
		number(b, "temperature", "temperature", c.Temperature, 0, 2),
		number(b, "top_p", "top_p", c.TopP, 0, 1),
		integer(b, "top_k", "top_k", c.TopK, 0, 1_000_000),
	); err != nil {
		return err
	}
	if c.Provider != nil {
		if err := c.Provider.Validate("provider"); err != nil {
			return err
		}
		b.set("provider", c.Provider)
	}
	return nil
}

// Draft reads the configuration of a preset version from the request body.
func (r *ChatPresetRequest) Draft() (gatehouse.PresetDraft, error) {
	b := newConfigBuilder()
	if err := r.common(b); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	if r.MaxTokens != nil && r.MaxCompletionTokens != nil && *r.MaxTokens != *r.MaxCompletionTokens {
		return gatehouse.PresetDraft{}, gatehouse.FieldError("max_completion_tokens", "is %d but max_tokens is %d: send one cap, or both equal", *r.MaxCompletionTokens, *r.MaxTokens)
	}
	capName, capValue := "max_tokens", r.MaxTokens
	if capValue == nil {
		capName, capValue = "max_completion_tokens", r.MaxCompletionTokens
	}
	if err := firstError(
		integer(b, "max_tokens", capName, capValue, 1, MaxPresetCompletionTokens),
		number(b, "min_p", "min_p", r.MinP, 0, 1),
		number(b, "top_a", "top_a", r.TopA, 0, 1),
		number(b, "presence_penalty", "presence_penalty", r.PresencePenalty, -2, 2),
		number(b, "frequency_penalty", "frequency_penalty", r.FrequencyPenalty, -2, 2),
		number(b, "repetition_penalty", "repetition_penalty", r.RepetitionPenalty, 0, 2),
		integer(b, "top_logprobs", "top_logprobs", r.TopLogprobs, 0, 20),
		enum(b, "reasoning_effort", "reasoning_effort", r.ReasoningEffort, reasoningEfforts),
		enum(b, "verbosity", "verbosity", r.Verbosity, verbosities),
	); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	b.set("seed", r.Seed)
	b.set("logprobs", r.Logprobs)
	b.set("parallel_tool_calls", r.ParallelToolCalls)
	if err := r.chatStructured(b); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	system, err := leadingSystemPrompt(r.Messages)
	if err != nil {
		return gatehouse.PresetDraft{}, err
	}
	return gatehouse.PresetDraft{Config: b.cfg, SystemPrompt: system}, nil
}

// chatStructured keeps the structured fields of a chat request body.
func (r *ChatPresetRequest) chatStructured(b *configBuilder) error {
	stop, err := readStop("stop", r.Stop)
	if err != nil {
		return err
	}
	b.set("stop", stop)
	if len(r.LogitBias) > gatehouse.MaxListEntries {
		return gatehouse.FieldError("logit_bias", "must have at most %d entries", gatehouse.MaxListEntries)
	}
	for _, token := range sortedKeys(r.LogitBias) {
		if token == "" || strings.Trim(token, "0123456789") != "" || len(token) > 10 {
			return gatehouse.FieldError("logit_bias", "keys must be token ids (digits), not %q", truncate(token, 20))
		}
		if v := r.LogitBias[token]; v < -100 || v > 100 {
			return gatehouse.FieldError("logit_bias."+token, "must be between -100 and 100")
		}
	}
	if r.LogitBias != nil {
		b.set("logit_bias", r.LogitBias)
	}
	format, err := chatResponseFormat("response_format", r.ResponseFormat)
	if err != nil {
		return err
	}
	b.set("response_format", format)
	if err := chatTools(b, r.Tools); err != nil {
		return err
	}
	choice, err := chatToolChoice("tool_choice", r.ToolChoice)
	if err != nil {
		return err
	}
	b.set("tool_choice", choice)
	reasoning, err := r.Reasoning.check("reasoning")
	if err != nil {
		return err
	}
	b.set("reasoning", reasoning)
	return nil
}

// Draft reads the configuration of a preset version from the request body.
func (r *MessagesPresetRequest) Draft() (gatehouse.PresetDraft, error) {
	b := newConfigBuilder()
	if err := r.common(b); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	if !isEmptyList(r.Fallbacks) {
		return gatehouse.PresetDraft{}, gatehouse.FieldError("fallbacks", "is not read: name the models to fall back to in models")
	}
	if err := integer(b, "max_tokens", "max_tokens", r.MaxTokens, 1, MaxPresetCompletionTokens); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	if r.StopSequences != nil {
		stop, err := readStop("stop_sequences", mustJSON(r.StopSequences))
		if err != nil {
			return gatehouse.PresetDraft{}, err
		}
		b.set("stop", stop)
	}
	reasoning, err := messagesThinking(r.Thinking, r.OutputConfig)
	if err != nil {
		return gatehouse.PresetDraft{}, err
	}
	b.set("reasoning", reasoning)
	if r.OutputConfig != nil {
		format, err := messagesFormat("output_config.format", r.OutputConfig.Format)
		if err != nil {
			return gatehouse.PresetDraft{}, err
		}
		b.set("response_format", format)
	}
	if err := messagesTools(b, r.Tools, r.ToolChoice, false); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	system, err := messagesSystem(r.System)
	if err != nil {
		return gatehouse.PresetDraft{}, err
	}
	return gatehouse.PresetDraft{Config: b.cfg, SystemPrompt: system}, nil
}

// Draft reads the configuration of a preset version from the request body.
func (r *ResponsesPresetRequest) Draft() (gatehouse.PresetDraft, error) {
	b := newConfigBuilder()
	if err := r.common(b); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	if err := firstError(
		integer(b, "max_tokens", "max_output_tokens", r.MaxOutputTokens, 1, MaxPresetCompletionTokens),
		number(b, "presence_penalty", "presence_penalty", r.PresencePenalty, -2, 2),
		number(b, "frequency_penalty", "frequency_penalty", r.FrequencyPenalty, -2, 2),
		integer(b, "top_logprobs", "top_logprobs", r.TopLogprobs, 0, 20),
	); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	b.set("parallel_tool_calls", r.ParallelToolCalls)
	if rr := r.Reasoning; rr != nil {
		reasoning, err := (&PresetReasoning{Effort: rr.Effort, Summary: rr.Summary, MaxTokens: rr.MaxTokens,
			Exclude: rr.Exclude, Enabled: rr.Enabled}).check("reasoning")
		if err != nil {
			return gatehouse.PresetDraft{}, err
		}
		b.set("reasoning", reasoning)
	}
	if t := r.Text; t != nil {
		if err := enum(b, "verbosity", "text.verbosity", t.Verbosity, verbosities); err != nil {
			return gatehouse.PresetDraft{}, err
		}
		format, err := responsesFormat("text.format", t.Format)
		if err != nil {
			return gatehouse.PresetDraft{}, err
		}
		b.set("response_format", format)
	}
	if err := responsesTools(b, r.Tools, r.ToolChoice); err != nil {
		return gatehouse.PresetDraft{}, err
	}
	var system *string
	if r.Instructions != nil && *r.Instructions != "" {
		system = r.Instructions
	}
	return gatehouse.PresetDraft{Config: b.cfg, SystemPrompt: system}, nil
}

var (
	reasoningEfforts  = []string{"none", "minimal", "low", "medium", "high", "xhigh"}
	reasoningSummary  = []string{"auto", "concise", "detailed"}
	verbosities       = []string{"low", "medium", "high"}
	toolNamePattern   = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)
	schemaNamePattern = toolNamePattern
)

// check validates a reasoning configuration; nil when it sets nothing.
func (r *PresetReasoning) check(field string) (*PresetReasoning, error) {
	if r == nil {
		return nil, nil
	}
	b := newConfigBuilder()
	if err := firstError(
		enum(b, "effort", field+".effort", r.Effort, reasoningEfforts),
		enum(b, "summary", field+".summary", r.Summary, reasoningSummary),
		integer(b, "max_tokens", field+".max_tokens", r.MaxTokens, 1, MaxPresetCompletionTokens),
	); err != nil {
		return nil, err
	}
	if *r == (PresetReasoning{}) {
		return nil, nil
	}
	return r, nil
}

// number keeps a number within [lo, hi] under name; field names it in errors.
func number(b *configBuilder, name, field string, v *float64, lo, hi float64) error {
	if v == nil {
		return nil
	}
	if *v < lo || *v > hi {
		return gatehouse.FieldError(field, "must be between %g and %g", lo, hi)
	}
	b.set(name, *v)
	return nil
}

// integer keeps an integer within [lo, hi] under name.
func integer(b *configBuilder, name, field string, v *int64, lo, hi int64) error {
	if v == nil {
		return nil
	}
	if *v < lo || *v > hi {
		return gatehouse.FieldError(field, "must be an integer from %d to %d", lo, hi)
	}
	b.set(name, *v)
	return nil
}

// enum keeps one of the allowed strings under name.
func enum(b *configBuilder, name, field string, v *string, allowed []string) error {
	if v == nil {
		return nil
	}
	if !slices.Contains(allowed, *v) {
		return gatehouse.FieldError(field, "must be one of %s", strings.Join(allowed, ", "))
	}
	b.set(name, *v)
	return nil
}

func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// readStop reads stop sequences: a string, or an array of strings.
func readStop(field string, raw json.RawMessage) (any, error) {
	if isNull(raw) {
		return nil, nil
	}
	var one string
	if json.Unmarshal(raw, &one) == nil {
		if one == "" {
			return nil, gatehouse.FieldError(field, "must not be empty")
		}
		return one, nil
	}
	var many []string
	if err := json.Unmarshal(raw, &many); err != nil {
		return nil, gatehouse.FieldError(field, "must be a string or an array of strings")
	}
	if len(many) > maxPresetStops {
		return nil, gatehouse.FieldError(field, "must have at most %d entries", maxPresetStops)
	}
	for i, s := range many {
		if s == "" {
			return nil, gatehouse.FieldError(fmt.Sprintf("%s[%d]", field, i), "must not be empty")
		}
	}
	if len(many) == 0 {
		return nil, nil
	}
	return many, nil
}

func isNull(raw json.RawMessage) bool {
	s := bytes.TrimSpace(raw)
	return len(s) == 0 || string(s) == "null"
}

// isEmptyList reports whether raw is absent, null or [].
func isEmptyList(raw json.RawMessage) bool {
	var list []json.RawMessage
	return isNull(raw) || json.Unmarshal(raw, &list) == nil && len(list) == 0
}

func mustJSON(v any) json.RawMessage {
	raw, _ := json.Marshal(v)
	return raw
}

func truncate(s string, n int) string {
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
