package gateway

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// anthropic is the dialect of Anthropic's Messages API: POST base_url +
// /v1/messages, the key in x-api-key, the API's version in
// anthropic-version.
type anthropic struct{}

func init() { dialects["anthropic"] = anthropic{} }

// anthropicVersion is the version of the Messages API spoken.
const anthropicVersion = "2023-06-01"

func (anthropic) url(p *provider.Provider, _ *provider.Model, _ string, _ bool) string {
	return strings.TrimSuffix(p.BaseURL, "/") + "/v1/messages"
}

func (anthropic) authorize(req *http.Request, key string) {
	if key != "" {
		req.Header.Set("x-api-key", key)
	}
	req.Header.Set("anthropic-version", anthropicVersion)
}

// The Messages API's request.

type anthropicRequest struct {
	Model         string             `json:"model"`
	MaxTokens     int64              `json:"max_tokens"`
	System        []anthropicBlock   `json:"system,omitempty"`
	Messages      []anthropicMessage `json:"messages"`
	Stream        bool               `json:"stream,omitempty"`
	Temperature   json.RawMessage    `json:"temperature,omitempty"`
	TopP          json.RawMessage    `json:"top_p,omitempty"`
	TopK          json.RawMessage    `json:"top_k,omitempty"`
	StopSequences []string           `json:"stop_sequences,omitempty"`
	Tools         []anthropicTool    `json:"tools,omitempty"`
	ToolChoice    *anthropicChoice   `json:"tool_choice,omitempty"`
	Thinking      *anthropicThinking `json:"thinking,omitempty"`
	Metadata      *anthropicMetadata `json:"metadata,omitempty"`
}

type anthropicMetadata struct {
	UserID string `json:"user_id"`
}

type anthropicMessage struct {
	Role    string           `json:"role"`
	Content []anthropicBlock `json:"content"`
}

// anthropicBlock is a content block, of a request or an answer.
type anthropicBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text,omitempty"`
	Source       *anthropicImage `json:"source,omitempty"`
	ID           string          `json:"id,omitempty"`
	Name         string          `json:"name,omitempty"`
	Input        json.RawMessage `json:"input,omitempty"`
	ToolUseID    string          `json:"tool_use_id,omitempty"`
	Content      json.RawMessage `json:"content,omitempty"`
	Thinking     string          `json:"thinking,omitempty"`
	Signature    string          `json:"signature,omitempty"`
	Data         string          `json:"data,omitempty"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type anthropicImage struct {
	Type      string `json:"type"`
	MediaType string `json:"media_type,omitempty"`
	Data      string `json:"data,omitempty"`
	URL       string `json:"url,omitempty"`
}

type anthropicTool struct {
	Name         string          `json:"name"`
	Description  string          `json:"description,omitempty"`
	InputSchema  json.RawMessage `json:"input_schema"`
	CacheControl json.RawMessage `json:"cache_control,omitempty"`
}

type anthropicChoice struct {
	Type                   string `json:"type"`
	Name                   string `json:"name,omitempty"`
	DisableParallelToolUse bool   `json:"disable_parallel_tool_use,omitempty"`
}

type anthropicThinking struct {
	Type         string `json:"type"`
	BudgetTokens int64  `json:"budget_tokens"`
}

// anthropicDropped are the chat parameters the Messages API has no
// counterpart for, which OpenRouter drops for Anthropic's models: they are
// dropped too (see the README).
var anthropicDropped = map[string]bool{
	"seed": true, "presence_penalty": true, "frequency_penalty": true, "repetition_penalty": true,
	"min_p": true, "top_a": true, "logit_bias": true, "verbosity": true, "session_id": true, "metadata": true,
	"stream_options": true, "max_completion_tokens": true,
}

// request translates a chat completion request into a Messages request.
func (anthropic) request(path string, m *provider.Model, body []byte) ([]byte, error) {
	body, err := chatBody(path, "anthropic", body)
	if err != nil {
		return nil, err
	}
	req, err := readChat(body)
	if err != nil {
		return nil, err
	}
	for _, k := range req.keys {
		switch k {
		case "model", "messages", "max_tokens", "stream", "temperature", "top_p", "top_k", "stop", "tools",
			"tool_choice", "parallel_tool_calls", "user", "reasoning", "reasoning_effort":
		case "n":
			if s := string(req.N); s != "1" && s != "null" {
				return nil, gatehouse.FieldError(k, "must be 1: Anthropic's Messages API makes one completion")
			}
		case "response_format":
			var f struct {
				Type string `json:"type"`
			}
			if given(req.ResponseFormat) != nil && (json.Unmarshal(req.ResponseFormat, &f) != nil || f.Type != "text") {
				return nil, gatehouse.FieldError(k, "is not supported by Anthropic's Messages API (provider type anthropic): leave it out, or describe the JSON wanted in the prompt or as a tool")
			}
		case "logprobs", "top_logprobs":
			if v := string(map[string]json.RawMessage{"logprobs": req.Logprobs, "top_logprobs": req.TopLogprobs}[k]); v != "false" && v != "null" && v != "0" {
				return nil, gatehouse.FieldError(k, "is not supported by Anthropic's Messages API (provider type anthropic), which gives no log probabilities")
			}
		default:
			if !anthropicDropped[k] {
				return nil, gatehouse.FieldError(k, "is not supported by Anthropic's Messages API (provider type anthropic)")
			}
		}
	}
	if err := numbers(map[string]json.RawMessage{"temperature": req.Temperature, "top_p": req.TopP, "top_k": req.TopK}); err != nil {
		return nil, err
	}
	out := anthropicRequest{Model: m.ID, MaxTokens: req.MaxTokens, Stream: req.Stream,
		Temperature: given(req.Temperature), TopP: given(req.TopP), TopK: given(req.TopK)}
	if out.MaxTokens < 1 {
		return nil, gatehouse.FieldError("max_tokens", "is required by Anthropic's Messages API: a positive integer")
	}
	if given(req.Stop) != nil {
		if out.StopSequences, err = stopSequences(req.Stop); err != nil {
			return nil, err
		}
	}
	for i, t := range req.Tools {
		if err := anthropicCacheControl(t.CacheControl, fmt.Sprintf("tools[%d].cache_control", i)); err != nil {
			return nil, err
		}
		schema := t.Function.Parameters
		if given(schema) == nil {
			schema = json.RawMessage(`{"type":"object","properties":{}}`)
		}
		out.Tools = append(out.Tools, anthropicTool{Name: t.Function.Name, Description: t.Function.Description,
			InputSchema: schema, CacheControl: nonNull(t.CacheControl)})
	}
	if req.User != nil {
		out.Metadata = &anthropicMetadata{UserID: *req.User}
	}
	if err := anthropicMessages(req.Messages, &out); err != nil {
		return nil, err
	}
	if raw := given(req.ToolChoice); raw != nil {
		mode, name, err := toolChoice(raw)
		if err != nil {
			return nil, err
		}
		out.ToolChoice = &anthropicChoice{Type: map[string]string{"auto": "auto", "none": "none", "required": "any", "function": "tool"}[mode], Name: name}
	}
	if req.ParallelToolCalls != nil && !*req.ParallelToolCalls && len(out.Tools) > 0 {
		if out.ToolChoice == nil {
			out.ToolChoice = &anthropicChoice{Type: "auto"}
		}
		if out.ToolChoice.Type != "none" {
			out.ToolChoice.DisableParallelToolUse = true
		}
	}
	r, err := readReasoning(req.Reasoning, req.ReasoningEffort)
	if err != nil {
		return nil, err
	}
	if r != nil && !r.off {
		if r.Exclude {
			return nil, gatehouse.FieldError("reasoning.exclude", "is not supported by Anthropic's Messages API (provider type anthropic), which returns the thinking it bills: leave it out")
		}
		b, err := r.budget(out.MaxTokens)
		if err != nil {
			return nil, err
		}
		switch {
		case b < 1024:
			return nil, gatehouse.FieldError("reasoning", "asks for %d thinking tokens; Anthropic's models think at least 1024 (and less than max_tokens, %d): raise max_tokens or reasoning.max_tokens", b, out.MaxTokens)
		case b >= out.MaxTokens:
			return nil, gatehouse.FieldError("reasoning.max_tokens", "%d is not below max_tokens (%d), which Anthropic's models require", b, out.MaxTokens)
		}
		out.Thinking = &anthropicThinking{Type: "enabled", BudgetTokens: b}
	}
	return json.Marshal(out)
}

// unsupportedAPI refuses a call of an API a dialect does not translate.
func unsupportedAPI(typ, path string) error {
	return gatehouse.Errorf(gatehouse.EINVALID, "the provider speaks the %s API, to which Gatehouse translates chat completions only (not %s): call the model with POST /api/v1/chat/completions", typ, path)
}

// anthropicMessages translates the chat messages: system and developer
// messages become the system prompt, tool results user turns of
// tool_result blocks, assistant tool calls tool_use blocks (with their
// cache_control); consecutive turns of one role are one turn, as the API
// would combine them.
func anthropicMessages(msgs []chatMessage, out *anthropicRequest) error {
	add := func(role string, blocks []anthropicBlock) {
		if n := len(out.Messages); n > 0 && out.Messages[n-1].Role == role {
			out.Messages[n-1].Content = append(out.Messages[n-1].Content, blocks...)
			return
		}
		out.Messages = append(out.Messages, anthropicMessage{Role: role, Content: blocks})
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
		switch m.Role {
		case "system", "developer":
			for j, p := range ps {
				if p.Type != "text" {
					return gatehouse.FieldError(fmt.Sprintf("%s.content[%d]", where, j), "a system prompt takes text only")
				}
				if err := anthropicCacheControl(p.CacheControl, fmt.Sprintf("%s.content[%d].cache_control", where, j)); err != nil {
					return err
				}
				out.System = append(out.System, anthropicBlock{Type: "text", Text: p.Text, CacheControl: nonNull(p.CacheControl)})
			}
		case "user":
			blocks, err := anthropicBlocks(ps, where)
			if err != nil {
				return err
			}
			add("user", blocks)
		case "assistant":
			var blocks []anthropicBlock
			for _, d := range m.ReasoningDetails {
				switch {
				case d.Type == "reasoning.text" && d.Signature != "":
					blocks = append(blocks, anthropicBlock{Type: "thinking", Thinking: d.Text, Signature: d.Signature})
				case d.Type == "reasoning.encrypted" && d.Data != "":
					blocks = append(blocks, anthropicBlock{Type: "redacted_thinking", Data: d.Data})
				}
			}
			text, err := anthropicBlocks(ps, where)
			if err != nil {
				return err
			}
			blocks = append(blocks, text...)
			for j, c := range m.ToolCalls {
				input := json.RawMessage(c.Function.Arguments)
				if strings.TrimSpace(c.Function.Arguments) == "" {
					input = json.RawMessage("{}")
				}
				if !json.Valid(input) || bytes.TrimSpace(input)[0] != '{' {
					return gatehouse.FieldError(fmt.Sprintf("%s.tool_calls[%d].function.arguments", where, j), "must be a JSON object, as a string")
				}
				if err := anthropicCacheControl(c.CacheControl, fmt.Sprintf("%s.tool_calls[%d].cache_control", where, j)); err != nil {
					return err
				}
				blocks = append(blocks, anthropicBlock{Type: "tool_use", ID: c.ID, Name: c.Function.Name, Input: input, CacheControl: nonNull(c.CacheControl)})
			}
			add("assistant", blocks)
		case "tool":
			if m.ToolCallID == "" {
				return gatehouse.FieldError(where+".tool_call_id", "is required in a tool message")
			}
			result := anthropicBlock{Type: "tool_result", ToolUseID: m.ToolCallID}
			if len(ps) > 0 {
				blocks, err := anthropicBlocks(ps, where)
				if err != nil {
					return err
				}
				result.Content, _ = json.Marshal(blocks)
			}
			add("user", []anthropicBlock{result})
		default:
			return gatehouse.FieldError(where+".role", "%q is not a role Anthropic's Messages API takes (system, developer, user, assistant, tool)", m.Role)
		}
	}
	return nil
}

// anthropicBlocks translates content parts: text (with its cache_control)
// and images, given as data: URLs (base64) or http(s) URLs. Empty text,
// which the API refuses, is left out.
func anthropicBlocks(ps []chatPart, where string) ([]anthropicBlock, error) {
	blocks := make([]anthropicBlock, 0, len(ps))
	for j, p := range ps {
		switch p.Type {
		case "text":
			if err := anthropicCacheControl(p.CacheControl, fmt.Sprintf("%s.content[%d].cache_control", where, j)); err != nil {
				return nil, err
			}
			if p.Text != "" {
				blocks = append(blocks, anthropicBlock{Type: "text", Text: p.Text, CacheControl: nonNull(p.CacheControl)})
			}
		case "image_url":
			u := p.ImageURL.URL
			if mt, data, ok := dataURL(u); ok {
				blocks = append(blocks, anthropicBlock{Type: "image", Source: &anthropicImage{Type: "base64", MediaType: mt, Data: data}})
			} else if strings.HasPrefix(u, "https://") || strings.HasPrefix(u, "http://") {
				blocks = append(blocks, anthropicBlock{Type: "image", Source: &anthropicImage{Type: "url", URL: u}})
			} else {
				return nil, gatehouse.FieldError(fmt.Sprintf("%s.content[%d].image_url.url", where, j), "must be a base64 data: URL or an http(s) URL")
			}
		}
	}
	return blocks, nil
}

// anthropicCacheControl refuses a cache write Gatehouse would price
// wrong: Anthropic bills a one-hour cache write at twice the prompt price,
// a five-minute one (the default) at 1.25 times, and a model has one
// cache_write_price, that of the five-minute writes.
func anthropicCacheControl(cc json.RawMessage, where string) error {
	var c struct {
		TTL string `json:"ttl"`
	}
	if len(cc) > 0 && json.Unmarshal(cc, &c) == nil && c.TTL == "1h" {
		return gatehouse.FieldError(where+".ttl", "1h is not accepted for Anthropic's models: one-hour cache writes are billed at twice the prompt price, and a model's cache_write_price is that of five-minute writes; leave ttl out (5m)")
	}
	return nil
}

// nonNull is a value, nil for JSON null.
func nonNull(v json.RawMessage) json.RawMessage {
	if string(v) == "null" {
		return nil
	}
	return v
}

// The Messages API's answer.

type anthropicAnswer struct {
	ID         string           `json:"id"`
	Type       string           `json:"type"`
	Model      string           `json:"model"`
	Content    []anthropicBlock `json:"content"`
	StopReason string           `json:"stop_reason"`
	Usage      json.RawMessage  `json:"usage"`
}

// anthropicFinish maps a stop_reason to a finish_reason.
func anthropicFinish(stop string) string {
	switch stop {
	case "end_turn", "stop_sequence", "pause_turn", "":
		return "stop"
	case "max_tokens", "model_context_window_exceeded":
		return "length"
	case "tool_use":
		return "tool_calls"
	case "refusal":
		return "content_filter"
	}
	return stop
}

// anthropicUsage translates the Messages API's usage into OpenAI's: the
// prompt counts every input token, cached reads and cache writes
// included. nil when the usage does not read (input_tokens and
// output_tokens whole numbers, the cache counts absent, null or whole).
func anthropicUsage(raw json.RawMessage) *oaUsage {
	n, ok := usageCounts(raw, "input_tokens", "output_tokens")
	if !ok || n[0] < 0 || n[1] < 0 {
		return nil
	}
	ms, _ := jsonobj.Members(raw)
	read, ok1 := count(ms, "cache_read_input_tokens")
	write, ok2 := count(ms, "cache_creation_input_tokens")
	if !ok1 || !ok2 {
		return nil
	}
	return newUsage(n[0]+read+write, n[1], read, write)
}

// usageJSON turns a dialect's reader of its usage into the writer of
// OpenAI's usage that wholeAnswer takes: nil when the usage is unknown.
func usageJSON(read func(json.RawMessage) *oaUsage) func(json.RawMessage) []byte {
	return func(u json.RawMessage) []byte {
		if t := read(u); t != nil {
			b, _ := json.Marshal(t)
			return b
		}
		return nil
	}
}

func newUsage(prompt, completion, read, write int64) *oaUsage {
	u := &oaUsage{PromptTokens: prompt, CompletionTokens: completion, TotalTokens: prompt + completion}
	u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens = read, write
	return u
}

func (anthropic) answer(path string, body io.Reader) io.Reader {
	return asAPI(path, wholeAnswer(body, anthropicCompletion, "usage", usageJSON(anthropicUsage)), false)
}

// anthropicCompletion translates a whole answer. What is not a JSON
// object stays as it is, for the gateway to refuse.
//
// The answer is decoded once, into its fields: an odd field is left
// empty, the others read (the usage by its exact names, see
// anthropicUsage). Its one reader is this translation, so a name spelt in
// another case, which encoding/json folds, cannot be read two ways.
func anthropicCompletion(raw []byte) []byte {
	var a anthropicAnswer
	if !isObject(raw, &a) {
		return raw
	}
	msg := oaMessage{Role: "assistant"}
	var text, reasoning strings.Builder
	for _, b := range a.Content {
		switch b.Type {
		case "text":
			text.WriteString(b.Text)
		case "thinking":
			reasoning.WriteString(b.Thinking)
			msg.ReasoningDetails = append(msg.ReasoningDetails, reasoningDetail{Type: "reasoning.text", Text: b.Thinking,
				Signature: b.Signature, Format: "anthropic-claude-v1", Index: len(msg.ReasoningDetails)})
		case "redacted_thinking":
			msg.ReasoningDetails = append(msg.ReasoningDetails, reasoningDetail{Type: "reasoning.encrypted", Data: b.Data,
				Format: "anthropic-claude-v1", Index: len(msg.ReasoningDetails)})
		case "tool_use":
			c := chatToolCall{ID: b.ID, Type: "function"}
			c.Function.Name, c.Function.Arguments = b.Name, string(cmpInput(b.Input))
			msg.ToolCalls = append(msg.ToolCalls, c)
		}
	}
	msg.setText(text.String(), reasoning.String())
	return completion(a.ID, a.Model, msg, anthropicFinish(a.StopReason), anthropicUsage(a.Usage))
}

// setText sets a translated answer's content (null when the message only
// calls tools) and reasoning (absent when there is none).
func (msg *oaMessage) setText(text, reasoning string) {
	if text != "" || len(msg.ToolCalls) == 0 {
		msg.Content = stringPtr(text)
	}
	if reasoning != "" {
		msg.Reasoning = stringPtr(reasoning)
	}
}

// cmpInput is a tool call's input, {} when it has none.
func cmpInput(in json.RawMessage) json.RawMessage {
	if len(in) == 0 || string(in) == "null" {
		return json.RawMessage("{}")
	}
	return in
}

// The Messages API's stream.

func (anthropic) stream(path string, body io.Reader) io.Reader {
	s := &anthropicStream{c: chunks{created: time.Now().Unix()}, tools: map[int]int{}}
	return asAPI(path, newSSEReader(body, s.event, func(*bytes.Buffer) {}), true)
}

// anthropicStream is what the translation of a stream knows as its events
// pass: the usage of message_start (input and cache counts), the tool
// calls begun (content block index to tool call index).
type anthropicStream struct {
	c          chunks
	startUsage []jsonobj.Member
	tools      map[int]int
	done       bool
}

type anthropicEvent struct {
	Type    string          `json:"type"`
	Index   int             `json:"index"`
	Message json.RawMessage `json:"message"`
	Block   *anthropicBlock `json:"content_block"`
	Delta   struct {
		Type        string `json:"type"`
		Text        string `json:"text"`
		PartialJSON string `json:"partial_json"`
		Thinking    string `json:"thinking"`
		Signature   string `json:"signature"`
		StopReason  string `json:"stop_reason"`
	} `json:"delta"`
	Usage json.RawMessage `json:"usage"`
	Error struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	} `json:"error"`
}

// event translates one event. The data's type says what it is (the
// event: line repeats it).
func (s *anthropicStream) event(_ string, data []byte, out *bytes.Buffer) {
	var ev anthropicEvent
	if json.Unmarshal(data, &ev) != nil || s.done {
		return
	}
	switch ev.Type {
	case "message_start":
		var msg struct {
			ID    string          `json:"id"`
			Model string          `json:"model"`
			Usage json.RawMessage `json:"usage"`
		}
		_ = json.Unmarshal(ev.Message, &msg)
		s.c.id, s.c.model = msg.ID, msg.Model
		s.startUsage, _ = jsonobj.Members(msg.Usage)
		s.c.delta(out, oaDelta{Role: "assistant", Content: stringPtr("")}, "")
	case "content_block_start":
		if ev.Block == nil {
			return
		}
		switch ev.Block.Type {
		case "text":
			if ev.Block.Text != "" {
				s.c.delta(out, oaDelta{Content: stringPtr(ev.Block.Text)}, "")
			}
		case "thinking":
			if ev.Block.Thinking != "" {
				s.c.delta(out, oaDelta{Reasoning: ev.Block.Thinking}, "")
			}
		case "redacted_thinking":
			s.c.delta(out, oaDelta{ReasoningDetails: []reasoningDetail{{Type: "reasoning.encrypted", Data: ev.Block.Data, Format: "anthropic-claude-v1", Index: ev.Index}}}, "")
		case "tool_use":
			n := len(s.tools)
			s.tools[ev.Index] = n
			d := oaToolCallDelta{Index: n, ID: ev.Block.ID, Type: "function"}
			d.Function.Name = ev.Block.Name
			s.c.delta(out, oaDelta{ToolCalls: []oaToolCallDelta{d}}, "")
		}
	case "content_block_delta":
		switch ev.Delta.Type {
		case "text_delta":
			s.c.text(out, "content", ev.Delta.Text)
		case "thinking_delta":
			s.c.text(out, "reasoning", ev.Delta.Thinking)
		case "signature_delta":
			s.c.delta(out, oaDelta{ReasoningDetails: []reasoningDetail{{Type: "reasoning.text", Signature: ev.Delta.Signature, Format: "anthropic-claude-v1", Index: ev.Index}}}, "")
		case "input_json_delta":
			if n, ok := s.tools[ev.Index]; ok {
				d := oaToolCallDelta{Index: n}
				d.Function.Arguments = ev.Delta.PartialJSON
				s.c.delta(out, oaDelta{ToolCalls: []oaToolCallDelta{d}}, "")
			}
		}
	case "message_delta":
		s.c.delta(out, oaDelta{}, anthropicFinish(ev.Delta.StopReason))
		// The counts of message_delta are the message's, cumulative; those
		// it does not give are message_start's.
		ms, _ := jsonobj.Members(ev.Usage)
		merged := append([]jsonobj.Member(nil), ms...)
		for _, m := range s.startUsage {
			if !has(ms, m.Key) && m.Key != "output_tokens" {
				merged = append(merged, m)
			}
		}
		if u := anthropicUsage(membersJSON(merged)); u != nil {
			s.c.usage(out, u)
		}
	case "message_stop":
		out.WriteString("data: [DONE]\n\n")
		s.done = true
	case "error":
		s.c.failure(out, ev.Error.Message, ev.Error.Type)
		s.done = true
	}
	// ping, content_block_stop: nothing to say.
}

// membersJSON writes members as a JSON object.
func membersJSON(ms []jsonobj.Member) json.RawMessage {
	obj := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		if _, dup := obj[m.Key]; dup {
			return json.RawMessage("null") // not a usage read
		}
		obj[m.Key] = m.Value
	}
	return jsonobj.Marshal(obj)
}

// failure translates an error answer: {"type": "error", "error": {"type",
// "message"}}. Its status stays: 429 (rate_limit_error) and 529
// (overloaded_error) fall back as any 429 and 5xx do.
func (anthropic) failure(status int, body []byte) []byte {
	var e struct {
		Error struct {
			Type    string `json:"type"`
			Message string `json:"message"`
		} `json:"error"`
	}
	if json.Unmarshal(body, &e) != nil || e.Error.Message == "" {
		return body
	}
	return openAIError(e.Error.Message, e.Error.Type, e.Error.Type)
}
