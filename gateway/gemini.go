package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// gemini is the dialect of Google's Gemini API: POST base_url +
// /v1beta/models/{model}:generateContent, or :streamGenerateContent?alt=sse
// for a stream, the key in x-goog-api-key.
type gemini struct{}

func init() { dialects["gemini"] = gemini{} }

func (gemini) url(p *provider.Provider, m *provider.Model, _ string, stream bool) string {
	u := strings.TrimSuffix(p.BaseURL, "/") + "/v1beta/models/" + url.PathEscape(m.ID)
	if stream {
		return u + ":streamGenerateContent?alt=sse"
	}
	return u + ":generateContent"
}

func (gemini) authorize(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("x-goog-api-key", key)
	}
}

// The Gemini API's request.

type geminiRequest struct {
	Contents          []geminiContent   `json:"contents"`
	SystemInstruction *geminiContent    `json:"systemInstruction,omitempty"`
	Tools             []geminiTool      `json:"tools,omitempty"`
	ToolConfig        *geminiToolConfig `json:"toolConfig,omitempty"`
	GenerationConfig  geminiConfig      `json:"generationConfig"`
}

type geminiContent struct {
	Role  string       `json:"role,omitempty"`
	Parts []geminiPart `json:"parts"`
}

type geminiPart struct {
	Text             string              `json:"text,omitempty"`
	Thought          bool                `json:"thought,omitempty"`
	ThoughtSignature string              `json:"thoughtSignature,omitempty"`
	InlineData       *geminiBlob         `json:"inlineData,omitempty"`
	FunctionCall     *geminiFunctionCall `json:"functionCall,omitempty"`
	FunctionResponse *geminiFunctionResp `json:"functionResponse,omitempty"`
}

type geminiBlob struct {
	MimeType string `json:"mimeType"`
	Data     string `json:"data"`
}

type geminiFunctionCall struct {
	ID   string          `json:"id,omitempty"`
	Name string          `json:"name"`
	Args json.RawMessage `json:"args,omitempty"`
}

type geminiFunctionResp struct {
	ID       string          `json:"id,omitempty"`
	Name     string          `json:"name"`
	Response json.RawMessage `json:"response"`
}

type geminiTool struct {
	FunctionDeclarations []geminiFunction `json:"functionDeclarations"`
}

type geminiFunction struct {
	Name                 string          `json:"name"`
	Description          string          `json:"description,omitempty"`
	ParametersJSONSchema json.RawMessage `json:"parametersJsonSchema,omitempty"`
}

type geminiToolConfig struct {
	FunctionCallingConfig struct {
		Mode                 string   `json:"mode"`
		AllowedFunctionNames []string `json:"allowedFunctionNames,omitempty"`
	} `json:"functionCallingConfig"`
}

type geminiConfig struct {
	MaxOutputTokens    int64           `json:"maxOutputTokens,omitempty"`
	Temperature        json.RawMessage `json:"temperature,omitempty"`
	TopP               json.RawMessage `json:"topP,omitempty"`
	TopK               json.RawMessage `json:"topK,omitempty"`
	Seed               json.RawMessage `json:"seed,omitempty"`
	PresencePenalty    json.RawMessage `json:"presencePenalty,omitempty"`
	FrequencyPenalty   json.RawMessage `json:"frequencyPenalty,omitempty"`
	StopSequences      []string        `json:"stopSequences,omitempty"`
	ResponseMimeType   string          `json:"responseMimeType,omitempty"`
	ResponseJSONSchema json.RawMessage `json:"responseJsonSchema,omitempty"`
	ThinkingConfig     *geminiThinking `json:"thinkingConfig,omitempty"`
}

type geminiThinking struct {
	ThinkingBudget  int64 `json:"thinkingBudget"`
	IncludeThoughts bool  `json:"includeThoughts,omitempty"`
}

// geminiDropped are the chat parameters the Gemini API has no counterpart
// for, which OpenRouter drops for Google's models: they are dropped too
// (see the README).
var geminiDropped = map[string]bool{
	"repetition_penalty": true, "min_p": true, "top_a": true, "logit_bias": true, "verbosity": true,
	"user": true, "session_id": true, "metadata": true, "parallel_tool_calls": true,
	"stream_options": true, "max_completion_tokens": true, "stream": true,
}

// geminiSignatureFormat marks the thought signatures of Gemini's parts
// in reasoning_details, which carry them back to it in the next turn.
const geminiSignatureFormat = "google-gemini-v1"

// request translates a chat completion request into a generateContent
// request (the model and the stream are in the URL).
func (gemini) request(path string, m *provider.Model, body []byte) ([]byte, error) {
	body, err := chatBody(path, "gemini", body)
	if err != nil {
		return nil, err
	}
	req, err := readChat(body)
	if err != nil {
		return nil, err
	}
	for _, k := range req.keys {
		switch k {
		case "model", "messages", "max_tokens", "temperature", "top_p", "top_k", "seed", "presence_penalty",
			"frequency_penalty", "stop", "tools", "tool_choice", "reasoning", "reasoning_effort", "response_format":
		case "n":
			if s := string(req.N); s != "1" && s != "null" {
				return nil, gatehouse.FieldError(k, "must be 1")
			}
		case "logprobs", "top_logprobs":
			if v := string(map[string]json.RawMessage{"logprobs": req.Logprobs, "top_logprobs": req.TopLogprobs}[k]); v != "false" && v != "null" && v != "0" {
				return nil, gatehouse.FieldError(k, "is not supported through the Gemini API (provider type gemini): Gatehouse does not translate its log probabilities")
			}
		default:
			if !geminiDropped[k] {
				return nil, gatehouse.FieldError(k, "is not supported by the Gemini API (provider type gemini)")
			}
		}
	}
	if err := numbers(map[string]json.RawMessage{"temperature": req.Temperature, "top_p": req.TopP, "top_k": req.TopK,
		"seed": req.Seed, "presence_penalty": req.PresencePenalty, "frequency_penalty": req.FrequencyPenalty}); err != nil {
		return nil, err
	}
	var out geminiRequest
	cfg := &out.GenerationConfig
	cfg.MaxOutputTokens, cfg.Temperature, cfg.TopP, cfg.TopK = req.MaxTokens, given(req.Temperature), given(req.TopP), given(req.TopK)
	cfg.Seed, cfg.PresencePenalty, cfg.FrequencyPenalty = given(req.Seed), given(req.PresencePenalty), given(req.FrequencyPenalty)
	if given(req.Stop) != nil {
		if cfg.StopSequences, err = stopSequences(req.Stop); err != nil {
			return nil, err
		}
	}
	if len(req.Tools) > 0 {
		decls := make([]geminiFunction, len(req.Tools))
		for i, t := range req.Tools {
			if given(t.CacheControl) != nil {
				return nil, geminiNoCacheControl(fmt.Sprintf("tools[%d].cache_control", i))
			}
			decls[i] = geminiFunction{Name: t.Function.Name, Description: t.Function.Description, ParametersJSONSchema: given(t.Function.Parameters)}
		}
		out.Tools = []geminiTool{{FunctionDeclarations: decls}}
	}
	if raw := given(req.ResponseFormat); raw != nil {
		var f struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Schema json.RawMessage `json:"schema"`
			} `json:"json_schema"`
		}
		if json.Unmarshal(raw, &f) != nil {
			return nil, gatehouse.FieldError("response_format", "must be an object with a type")
		}
		switch f.Type {
		case "text":
		case "json_object":
			cfg.ResponseMimeType = "application/json"
		case "json_schema":
			cfg.ResponseMimeType, cfg.ResponseJSONSchema = "application/json", f.JSONSchema.Schema
		default:
			return nil, gatehouse.FieldError("response_format.type", "must be text, json_object or json_schema")
		}
	}
	if err := geminiMessages(req.Messages, &out); err != nil {
		return nil, err
	}
	if raw := given(req.ToolChoice); raw != nil {
		mode, name, err := toolChoice(raw)
		if err != nil {
			return nil, err
		}
		out.ToolConfig = &geminiToolConfig{}
		out.ToolConfig.FunctionCallingConfig.Mode = map[string]string{"auto": "AUTO", "none": "NONE", "required": "ANY", "function": "ANY"}[mode]
		if name != "" {
			out.ToolConfig.FunctionCallingConfig.AllowedFunctionNames = []string{name}
		}
	}
	r, err := readReasoning(req.Reasoning, req.ReasoningEffort)
	if err != nil {
		return nil, err
	}
	switch {
	case r != nil && r.off:
		cfg.ThinkingConfig = &geminiThinking{}
	case r != nil:
		b, err := r.budget(cfg.MaxOutputTokens)
		if err != nil {
			return nil, err
		}
		cfg.ThinkingConfig = &geminiThinking{ThinkingBudget: b, IncludeThoughts: !r.Exclude}
	}
	return json.Marshal(out)
}

func geminiNoCacheControl(field string) error {
	return gatehouse.FieldError(field, "is not supported by the Gemini API (provider type gemini), which caches prompts implicitly (cached reads are priced from its usage)")
}

// geminiMessages translates the chat messages: system and developer
// messages become the system instruction, assistant turns the model's,
// tool results functionResponse parts (named by the call they answer).
func geminiMessages(msgs []chatMessage, out *geminiRequest) error {
	names := map[string]string{} // tool call id: function name
	add := func(role string, ps []geminiPart) {
		if n := len(out.Contents); n > 0 && out.Contents[n-1].Role == role {
			out.Contents[n-1].Parts = append(out.Contents[n-1].Parts, ps...)
			return
		}
		out.Contents = append(out.Contents, geminiContent{Role: role, Parts: ps})
	}
	for i, m := range msgs {
		where := fmt.Sprintf("messages[%d]", i)
		if len(m.FunctionCall) > 0 && string(m.FunctionCall) != "null" {
			return gatehouse.FieldError(where+".function_call", "is OpenAI's former function calling: use tool_calls")
		}
		ps, err := parts(m.Content, where+".content")
		if err != nil {
			return err
		}
		gps, err := geminiParts(ps, where)
		if err != nil {
			return err
		}
		switch m.Role {
		case "system", "developer":
			if out.SystemInstruction == nil {
				out.SystemInstruction = &geminiContent{}
			}
			out.SystemInstruction.Parts = append(out.SystemInstruction.Parts, gps...)
		case "user":
			add("user", gps)
		case "assistant":
			var sigs []string
			for _, d := range m.ReasoningDetails {
				if d.Format == geminiSignatureFormat && d.Type == "reasoning.encrypted" && d.Data != "" {
					sigs = append(sigs, d.Data)
				}
			}
			for j, c := range m.ToolCalls {
				if given(c.CacheControl) != nil {
					return geminiNoCacheControl(fmt.Sprintf("%s.tool_calls[%d].cache_control", where, j))
				}
				args := json.RawMessage(c.Function.Arguments)
				if strings.TrimSpace(c.Function.Arguments) == "" {
					args = json.RawMessage("{}")
				}
				if !json.Valid(args) || bytes.TrimSpace(args)[0] != '{' {
					return gatehouse.FieldError(fmt.Sprintf("%s.tool_calls[%d].function.arguments", where, j), "must be a JSON object, as a string")
				}
				names[c.ID] = c.Function.Name
				gps = append(gps, geminiPart{FunctionCall: &geminiFunctionCall{ID: geminiCallID(c.ID), Name: c.Function.Name, Args: args}})
			}
			// The signatures go back on the parts they came with: the
			// function calls first, else the first part.
			k := 0
			for j := range gps {
				if gps[j].FunctionCall != nil && k < len(sigs) {
					gps[j].ThoughtSignature, k = sigs[k], k+1
				}
			}
			if k == 0 && len(sigs) > 0 && len(gps) > 0 {
				gps[0].ThoughtSignature = sigs[0]
			}
			add("model", gps)
		case "tool":
			name, ok := names[m.ToolCallID]
			if !ok {
				return gatehouse.FieldError(where+".tool_call_id", "%q answers no tool call of an earlier assistant message: the Gemini API names a function's result by the function", m.ToolCallID)
			}
			var text strings.Builder
			for _, p := range ps {
				text.WriteString(p.Text)
			}
			response := json.RawMessage(text.String())
			if !json.Valid(response) || bytes.TrimSpace(response)[0] != '{' {
				response, _ = json.Marshal(map[string]string{"result": text.String()})
			}
			add("user", []geminiPart{{FunctionResponse: &geminiFunctionResp{ID: geminiCallID(m.ToolCallID), Name: name, Response: response}}})
		default:
			return gatehouse.FieldError(where+".role", "%q is not a role the Gemini API takes (system, developer, user, assistant, tool)", m.Role)
		}
	}
	return nil
}

// geminiCallID is the id of a function call as Gemini gave it: the tool
// call ids Gatehouse makes for calls without one (geminiToolID) are not
// sent back.
func geminiCallID(id string) string {
	if strings.HasPrefix(id, "call_gh_") {
		return ""
	}
	return id
}

// geminiToolID is the tool call id of a function call: Gemini's own, or
// one made of its place in the answer.
func geminiToolID(c *geminiFunctionCall, n int) string {
	if c.ID != "" {
		return c.ID
	}
	return "call_gh_" + strconv.Itoa(n) + "_" + c.Name
}

// geminiParts translates content parts: text, and images given as data:
// URLs (the Gemini API reads no image from a URL of the web).
func geminiParts(ps []chatPart, where string) ([]geminiPart, error) {
	out := make([]geminiPart, 0, len(ps))
	for j, p := range ps {
		if len(p.CacheControl) > 0 && string(p.CacheControl) != "null" {
			return nil, geminiNoCacheControl(fmt.Sprintf("%s.content[%d].cache_control", where, j))
		}
		switch p.Type {
		case "text":
			if p.Text != "" {
				out = append(out, geminiPart{Text: p.Text})
			}
		case "image_url":
			mt, data, ok := dataURL(p.ImageURL.URL)
			if !ok {
				return nil, gatehouse.FieldError(fmt.Sprintf("%s.content[%d].image_url.url", where, j), "must be a base64 data: URL for the Gemini API")
			}
			out = append(out, geminiPart{InlineData: &geminiBlob{MimeType: mt, Data: data}})
		}
	}
	return out, nil
}

// The Gemini API's answer.

type geminiAnswer struct {
	Candidates []struct {
		Content struct {
			Parts []geminiPart `json:"parts"`
		} `json:"content"`
		FinishReason string `json:"finishReason"`
	} `json:"candidates"`
	PromptFeedback *struct {
		BlockReason string `json:"blockReason"`
	} `json:"promptFeedback"`
	ModelVersion  string          `json:"modelVersion"`
	ResponseID    string          `json:"responseId"`
	UsageMetadata json.RawMessage `json:"usageMetadata"`
	Error         *struct {
		Message string `json:"message"`
		Status  string `json:"status"`
	} `json:"error"`
}

// geminiFinish maps a finishReason to a finish_reason.
func geminiFinish(reason string, calls bool) string {
	switch reason {
	case "STOP":
		if calls {
			return "tool_calls"
		}
		return "stop"
	case "MAX_TOKENS":
		return "length"
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "LANGUAGE":
		return "content_filter"
	case "":
		return ""
	}
	return "error"
}

// geminiUsage translates usageMetadata into OpenAI's usage: the prompt its
// promptTokenCount (cached tokens included) and toolUsePromptTokenCount,
// the completion its candidates and thoughts, the cache reads its
// cachedContentTokenCount. nil when it does not read.
func geminiUsage(raw json.RawMessage) *oaUsage {
	n, ok := usageCounts(raw, "promptTokenCount")
	if !ok || n[0] < 0 {
		return nil
	}
	ms, _ := jsonobj.Members(raw)
	var c [4]int64
	for i, name := range []string{"candidatesTokenCount", "thoughtsTokenCount", "cachedContentTokenCount", "toolUsePromptTokenCount"} {
		if c[i], ok = count(ms, name); !ok {
			return nil
		}
	}
	u := newUsage(n[0]+c[3], c[0]+c[1], c[2], 0)
	if c[1] > 0 {
		u.CompletionTokensDetails = &struct {
			ReasoningTokens int64 `json:"reasoning_tokens"`
		}{c[1]}
	}
	return u
}

func (gemini) answer(path string, body io.Reader) io.Reader {
	return asAPI(path, wholeAnswer(body, geminiCompletion, "usageMetadata", usageJSON(geminiUsage)), false)
}

// geminiCompletion translates a whole answer (its first candidate).
// It is decoded once, as Anthropic's is (see anthropicCompletion).
func geminiCompletion(raw []byte) []byte {
	var a geminiAnswer
	if !isObject(raw, &a) {
		return raw
	}
	msg := oaMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	finish := ""
	if len(a.Candidates) > 0 {
		for _, p := range a.Candidates[0].Content.Parts {
			geminiPartInto(p, &text, &reasoning, &msg)
		}
		finish = geminiFinish(a.Candidates[0].FinishReason, len(msg.ToolCalls) > 0)
	}
	if a.PromptFeedback != nil && a.PromptFeedback.BlockReason != "" {
		finish = "content_filter"
	}
	msg.setText(text.String(), reasoning.String())
	return completion(a.ResponseID, a.ModelVersion, msg, finish, geminiUsage(a.UsageMetadata))
}

// geminiPartInto adds a part of an answer to its message.
func geminiPartInto(p geminiPart, text, reasoning *strings.Builder, msg *oaMessage) {
	switch {
	case p.FunctionCall != nil:
		c := chatToolCall{ID: geminiToolID(p.FunctionCall, len(msg.ToolCalls)), Type: "function"}
		c.Function.Name, c.Function.Arguments = p.FunctionCall.Name, string(cmpInput(p.FunctionCall.Args))
		msg.ToolCalls = append(msg.ToolCalls, c)
	case p.Thought:
		reasoning.WriteString(p.Text)
	default:
		text.WriteString(p.Text)
	}
	if p.ThoughtSignature != "" {
		msg.ReasoningDetails = append(msg.ReasoningDetails, reasoningDetail{Type: "reasoning.encrypted", Data: p.ThoughtSignature,
			Format: geminiSignatureFormat, Index: len(msg.ReasoningDetails)})
	}
}

// The Gemini API's stream: each event is a GenerateContentResponse, its
// usageMetadata the call's so far.

func (gemini) stream(path string, body io.Reader) io.Reader {
	s := &geminiStream{c: chunks{created: time.Now().Unix()}}
	return asAPI(path, newSSEReader(body, s.event, s.end), true)
}

type geminiStream struct {
	c        chunks
	started  bool
	calls    int
	details  int
	finished bool
	failed   bool
	usage    json.RawMessage
}

func (s *geminiStream) event(_ string, data []byte, out *bytes.Buffer) {
	var a geminiAnswer
	if s.failed || !isObject(data, &a) {
		return
	}
	if a.Error != nil {
		s.c.failure(out, a.Error.Message, a.Error.Status)
		s.failed = true
		return
	}
	if !s.started {
		s.c.id, s.c.model, s.started = a.ResponseID, a.ModelVersion, true
		s.c.delta(out, oaDelta{Role: "assistant", Content: stringPtr("")}, "")
	}
	if a.UsageMetadata != nil {
		s.usage = a.UsageMetadata
	}
	if len(a.Candidates) == 0 {
		if a.PromptFeedback != nil && a.PromptFeedback.BlockReason != "" {
			s.c.delta(out, oaDelta{}, "content_filter")
			s.finished = true
		}
		return
	}
	for _, p := range a.Candidates[0].Content.Parts {
		if p.FunctionCall == nil && p.ThoughtSignature == "" {
			s.c.text(out, map[bool]string{false: "content", true: "reasoning"}[p.Thought], p.Text)
			continue
		}
		var d oaDelta
		switch {
		case p.FunctionCall != nil:
			t := oaToolCallDelta{Index: s.calls, ID: geminiToolID(p.FunctionCall, s.calls), Type: "function"}
			t.Function.Name, t.Function.Arguments = p.FunctionCall.Name, string(cmpInput(p.FunctionCall.Args))
			d.ToolCalls = []oaToolCallDelta{t}
			s.calls++
		case p.Thought:
			d.Reasoning = p.Text
		default:
			d.Content = stringPtr(p.Text)
		}
		if p.ThoughtSignature != "" {
			d.ReasoningDetails = []reasoningDetail{{Type: "reasoning.encrypted", Data: p.ThoughtSignature, Format: geminiSignatureFormat, Index: s.details}}
			s.details++
		}
		s.c.delta(out, d, "")
	}
	if f := a.Candidates[0].FinishReason; f != "" {
		s.c.delta(out, oaDelta{}, geminiFinish(f, s.calls > 0))
		s.finished = true
	}
}

// end writes, at the stream's end, its usage (once it finished) and
// [DONE].
func (s *geminiStream) end(out *bytes.Buffer) {
	if s.failed || !s.finished {
		return
	}
	if u := geminiUsage(s.usage); u != nil {
		s.c.usage(out, u)
	}
	out.WriteString("data: [DONE]\n\n")
}

// failure translates an error answer: {"error": {"code", "message",
// "status"}}. Its status stays: 429 (RESOURCE_EXHAUSTED) and 503
// (UNAVAILABLE) fall back.
func (gemini) failure(status int, body []byte) []byte {
	var e []struct { // the API answers an array in some cases
		Error struct {
			Message string `json:"message"`
			Status  string `json:"status"`
		} `json:"error"`
	}
	trimmed := bytes.TrimSpace(body)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		trimmed = append(append([]byte("["), trimmed...), ']')
	}
	if json.Unmarshal(trimmed, &e) != nil || len(e) == 0 || e[0].Error.Message == "" {
		return body
	}
	return openAIError(e[0].Error.Message, e[0].Error.Status, status)
}
