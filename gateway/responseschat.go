package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// The Responses API to a provider that speaks neither it nor Chat
// Completions natively (types anthropic and gemini): the request, in the
// Responses API's form, becomes a chat completion request, which the
// dialect translates as any other; the answer, translated into a chat
// completion, becomes a response object, and a stream of chat chunks the
// Responses API's events. Nothing is stored (store is false): the
// conversation is in the request's input.

// responsesItem is an input item of a Responses request, as Gatehouse
// checked it (httpapi's responsesinput: messages of text, function calls
// and their outputs).
type responsesItem struct {
	Type      string          `json:"type"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    string          `json:"call_id"`
	Name      string          `json:"name"`
	Arguments string          `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// responsesDropped are the Responses parameters with no counterpart in a
// chat completion that change nothing of what is billed: dropped.
var responsesDropped = map[string]bool{
	"store": true, "truncation": true, "metadata": true, "safety_identifier": true, "prompt_cache_key": true,
	"session_id": true, "service_tier": true, "max_tool_calls": true, "model": true, "background": true,
}

// chatFromResponses translates a Responses request into a chat completion
// request.
func chatFromResponses(body []byte) ([]byte, error) {
	obj, err := jsonobj.Unmarshal(body)
	if err != nil {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "the request is not a JSON object")
	}
	out := map[string]json.RawMessage{}
	for k, v := range obj {
		switch k {
		case "input", "instructions":
		case "stream", "temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty", "parallel_tool_calls", "user":
			out[k] = v
		case "max_output_tokens":
			out["max_tokens"] = v
		case "tools":
			var tools []struct {
				Type        string          `json:"type"`
				Name        string          `json:"name"`
				Description string          `json:"description"`
				Parameters  json.RawMessage `json:"parameters"`
			}
			if json.Unmarshal(v, &tools) != nil {
				return nil, gatehouse.FieldError(k, "must be an array of function tools")
			}
			chat := make([]chatTool, len(tools))
			for i, t := range tools {
				if t.Type != "function" {
					return nil, gatehouse.FieldError(fmt.Sprintf("tools[%d].type", i), "must be function")
				}
				chat[i].Type = "function"
				chat[i].Function.Name, chat[i].Function.Description, chat[i].Function.Parameters = t.Name, t.Description, t.Parameters
			}
			out[k], _ = json.Marshal(chat)
		case "tool_choice":
			var f struct {
				Type string `json:"type"`
				Name string `json:"name"`
			}
			if json.Unmarshal(v, &f) == nil && f.Type == "function" {
				out[k], _ = json.Marshal(map[string]any{"type": "function", "function": map[string]string{"name": f.Name}})
			} else {
				out[k] = v
			}
		case "text":
			var t struct {
				Format *struct {
					Type   string          `json:"type"`
					Name   string          `json:"name"`
					Schema json.RawMessage `json:"schema"`
					Strict *bool           `json:"strict"`
				} `json:"format"`
			}
			if json.Unmarshal(v, &t) != nil {
				return nil, gatehouse.FieldError(k, "must be an object")
			}
			if f := t.Format; f != nil && f.Type != "text" {
				rf := map[string]any{"type": f.Type}
				if f.Type == "json_schema" {
					rf["json_schema"] = map[string]any{"name": f.Name, "schema": f.Schema, "strict": f.Strict}
				}
				out["response_format"], _ = json.Marshal(rf)
			}
		case "reasoning":
			var r struct {
				Effort    string `json:"effort"`
				MaxTokens *int64 `json:"max_tokens"`
			}
			if json.Unmarshal(v, &r) != nil {
				return nil, gatehouse.FieldError(k, "must be an object")
			}
			if r.Effort != "" || r.MaxTokens != nil {
				out[k], _ = json.Marshal(map[string]any{"effort": r.Effort, "max_tokens": r.MaxTokens})
			}
		case "top_logprobs", "include":
			if s := string(v); s != "0" && s != "[]" && s != "null" {
				return nil, gatehouse.FieldError(k, "asks for log probabilities, which Gatehouse does not translate from this provider's API")
			}
		default:
			if !responsesDropped[k] {
				return nil, gatehouse.FieldError(k, "has no counterpart in the provider's API")
			}
		}
	}
	messages, err := chatMessages(obj["instructions"], obj["input"])
	if err != nil {
		return nil, err
	}
	out["messages"] = messages
	return json.Marshal(out)
}

// chatMessages translates instructions and input into chat messages:
// function calls join the assistant message before them, their outputs
// become tool messages.
func chatMessages(instructions, input json.RawMessage) (json.RawMessage, error) {
	type message struct {
		Role       string          `json:"role"`
		Content    json.RawMessage `json:"content"`
		ToolCalls  []chatToolCall  `json:"tool_calls,omitempty"`
		ToolCallID string          `json:"tool_call_id,omitempty"`
	}
	var msgs []message
	var s string
	if json.Unmarshal(instructions, &s) == nil && s != "" {
		msgs = append(msgs, message{Role: "system", Content: instructions})
	}
	if json.Unmarshal(input, &s) == nil {
		return json.Marshal(append(msgs, message{Role: "user", Content: input}))
	}
	var items []responsesItem
	if err := json.Unmarshal(input, &items); err != nil {
		return nil, gatehouse.FieldError("input", "must be a string or an array of input items")
	}
	for i, it := range items {
		switch it.Type {
		case "", "message":
			text, err := responsesText(it.Content, fmt.Sprintf("input[%d].content", i))
			if err != nil {
				return nil, err
			}
			content, _ := json.Marshal(text)
			msgs = append(msgs, message{Role: it.Role, Content: content})
		case "function_call":
			c := chatToolCall{ID: it.CallID, Type: "function"}
			c.Function.Name, c.Function.Arguments = it.Name, it.Arguments
			if n := len(msgs); n > 0 && msgs[n-1].Role == "assistant" {
				msgs[n-1].ToolCalls = append(msgs[n-1].ToolCalls, c)
			} else {
				msgs = append(msgs, message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chatToolCall{c}})
			}
		case "function_call_output":
			text, err := responsesText(it.Output, fmt.Sprintf("input[%d].output", i))
			if err != nil {
				return nil, err
			}
			content, _ := json.Marshal(text)
			msgs = append(msgs, message{Role: "tool", Content: content, ToolCallID: it.CallID})
		default:
			return nil, gatehouse.FieldError(fmt.Sprintf("input[%d].type", i), "%q input items are not translated to the provider's API", it.Type)
		}
	}
	return json.Marshal(msgs)
}

// responsesText reads a text content: a string, or text parts (input_text,
// output_text, refusal), joined.
func responsesText(raw json.RawMessage, where string) (string, error) {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return s, nil
	}
	var ps []struct {
		Text    string `json:"text"`
		Refusal string `json:"refusal"`
	}
	if err := json.Unmarshal(raw, &ps); err != nil {
		return "", gatehouse.FieldError(where, "must be a string or an array of text parts")
	}
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Text + p.Refusal)
	}
	return b.String(), nil
}

// The answer, as a response object.

type respUsage struct {
	InputTokens        int64 `json:"input_tokens"`
	InputTokensDetails struct {
		CachedTokens     int64 `json:"cached_tokens"`
		CacheWriteTokens int64 `json:"cache_write_tokens"`
	} `json:"input_tokens_details"`
	OutputTokens        int64 `json:"output_tokens"`
	OutputTokensDetails struct {
		ReasoningTokens int64 `json:"reasoning_tokens"`
	} `json:"output_tokens_details"`
	TotalTokens int64 `json:"total_tokens"`
}

// responsesUsage translates a chat completion's usage (as a dialect wrote
// it) into the Responses API's.
func responsesUsage(u *oaUsage) *respUsage {
	if u == nil {
		return nil
	}
	r := &respUsage{InputTokens: u.PromptTokens, OutputTokens: u.CompletionTokens, TotalTokens: u.TotalTokens}
	r.InputTokensDetails.CachedTokens, r.InputTokensDetails.CacheWriteTokens = u.PromptTokensDetails.CachedTokens, u.PromptTokensDetails.CacheWriteTokens
	if u.CompletionTokensDetails != nil {
		r.OutputTokensDetails.ReasoningTokens = u.CompletionTokensDetails.ReasoningTokens
	}
	return r
}

type respContent struct {
	Type        string `json:"type"`
	Text        string `json:"text"`
	Annotations []any  `json:"annotations,omitempty"`
}

type respItem struct {
	Type      string        `json:"type"`
	ID        string        `json:"id"`
	Status    string        `json:"status,omitempty"`
	Role      string        `json:"role,omitempty"`
	Content   []respContent `json:"content,omitempty"`
	Summary   []any         `json:"summary,omitempty"`
	CallID    string        `json:"call_id,omitempty"`
	Name      string        `json:"name,omitempty"`
	Arguments *string       `json:"arguments,omitempty"`
}

type respObject struct {
	ID                string `json:"id"`
	Object            string `json:"object"`
	CreatedAt         int64  `json:"created_at"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
	Model  string     `json:"model"`
	Output []respItem `json:"output"`
	Usage  *respUsage `json:"usage,omitempty"`
	Error  any        `json:"error"`
}

// status sets a response's status from the chat finish reason.
func (r *respObject) status(finish string) {
	switch finish {
	case "length":
		r.Status, r.IncompleteDetails = "incomplete", &struct {
			Reason string `json:"reason"`
		}{"max_output_tokens"}
	case "content_filter":
		r.Status, r.IncompleteDetails = "incomplete", &struct {
			Reason string `json:"reason"`
		}{"content_filter"}
	default:
		r.Status = "completed"
	}
}

// responseFromChat translates a whole chat completion (read from r) into
// a response object; a too large answer's usage, into the Responses
// API's.
func responseFromChat(r io.Reader) io.Reader {
	return &lazyReader{make: func() ([]byte, error) {
		raw, err := io.ReadAll(r)
		var tl *errTooLarge
		if errors.As(err, &tl) && tl.usage != nil {
			var u oaUsage
			_ = json.Unmarshal(tl.usage, &u)
			b, _ := json.Marshal(responsesUsage(&u))
			return nil, &errTooLarge{usage: b}
		}
		if err != nil {
			return nil, err
		}
		var c struct {
			ID      string `json:"id"`
			Model   string `json:"model"`
			Choices []struct {
				Message      oaMessage `json:"message"`
				FinishReason string    `json:"finish_reason"`
			} `json:"choices"`
			Usage *oaUsage `json:"usage"`
		}
		if !isObject(raw, &c) {
			return raw, nil
		}
		resp := respObject{ID: c.ID, Object: "response", CreatedAt: time.Now().Unix(), Model: c.Model, Usage: responsesUsage(c.Usage)}
		resp.Output = []respItem{}
		finish := ""
		if len(c.Choices) > 0 {
			m := c.Choices[0].Message
			finish = c.Choices[0].FinishReason
			if m.Reasoning != nil {
				resp.Output = append(resp.Output, respItem{Type: "reasoning", ID: "rs_" + c.ID, Summary: []any{},
					Content: []respContent{{Type: "reasoning_text", Text: *m.Reasoning}}})
			}
			if m.Content != nil && *m.Content != "" {
				resp.Output = append(resp.Output, respItem{Type: "message", ID: "msg_" + c.ID, Status: "completed", Role: "assistant",
					Content: []respContent{{Type: "output_text", Text: *m.Content, Annotations: []any{}}}})
			}
			for _, tc := range m.ToolCalls {
				args := tc.Function.Arguments
				resp.Output = append(resp.Output, respItem{Type: "function_call", ID: "fc_" + tc.ID, Status: "completed",
					CallID: tc.ID, Name: tc.Function.Name, Arguments: &args})
			}
		}
		resp.status(finish)
		return json.Marshal(resp)
	}}
}

// responsesStream translates a stream of chat chunks (as a dialect wrote
// them) into the Responses API's events: the response created, each
// output item (reasoning, the message, function calls) added, its deltas
// and done, and the response completed (or incomplete) with its usage.
func responsesStream(chat io.Reader) io.Reader {
	s := &respStream{}
	return newSSEReader(chat, s.event, s.end)
}

type respStream struct {
	seq      int
	resp     respObject
	started  bool
	finish   string
	usage    *oaUsage
	done     bool
	failed   bool
	open     int // the output item open, -1 for none
	text     strings.Builder
	reason   strings.Builder
	calls    map[int]int // the chat tool call index: output index
	callArgs map[int]*strings.Builder
	order    []int // the chat tool call indexes, as they came
}

func (s *respStream) send(out *bytes.Buffer, typ string, fields map[string]any) {
	fields["type"], fields["sequence_number"] = typ, s.seq
	s.seq++
	b, _ := json.Marshal(fields)
	out.WriteString("event: " + typ + "\ndata: ")
	out.Write(b)
	out.WriteString("\n\n")
}

// begin sends the events of a new output item; kind is its type.
func (s *respStream) begin(out *bytes.Buffer, item respItem) int {
	s.closeOpen(out)
	s.resp.Output = append(s.resp.Output, item)
	i := len(s.resp.Output) - 1
	s.send(out, "response.output_item.added", map[string]any{"output_index": i, "item": item})
	if item.Type == "message" {
		s.send(out, "response.content_part.added", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0,
			"part": respContent{Type: "output_text", Text: "", Annotations: []any{}}})
	}
	if item.Type != "function_call" {
		s.open = i
	}
	return i
}

// closeOpen ends the open message or reasoning item.
func (s *respStream) closeOpen(out *bytes.Buffer) {
	if s.open < 0 {
		return
	}
	i := s.open
	s.open = -1
	item := &s.resp.Output[i]
	switch item.Type {
	case "message":
		text := s.text.String()
		item.Status, item.Content = "completed", []respContent{{Type: "output_text", Text: text, Annotations: []any{}}}
		s.send(out, "response.output_text.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0, "text": text})
		s.send(out, "response.content_part.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0, "part": item.Content[0]})
	case "reasoning":
		text := s.reason.String()
		item.Content = []respContent{{Type: "reasoning_text", Text: text}}
		s.send(out, "response.reasoning_text.done", map[string]any{"item_id": item.ID, "output_index": i, "content_index": 0, "text": text})
	}
	s.send(out, "response.output_item.done", map[string]any{"output_index": i, "item": *item})
}

func (s *respStream) event(_ string, data []byte, out *bytes.Buffer) {
	if s.done || s.failed {
		return
	}
	if string(data) == "[DONE]" {
		s.complete(out)
		return
	}
	var ch struct {
		ID      string `json:"id"`
		Model   string `json:"model"`
		Choices []struct {
			Delta        oaDelta `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *oaUsage `json:"usage"`
		Error *struct {
			Message string `json:"message"`
			Code    any    `json:"code"`
		} `json:"error"`
	}
	if !isObject(data, &ch) {
		return
	}
	if ch.Error != nil {
		s.send(out, "error", map[string]any{"code": ch.Error.Code, "message": ch.Error.Message, "param": nil})
		s.failed = true
		return
	}
	if !s.started {
		s.started, s.open = true, -1
		s.calls, s.callArgs = map[int]int{}, map[int]*strings.Builder{}
		s.resp = respObject{ID: ch.ID, Object: "response", CreatedAt: time.Now().Unix(), Status: "in_progress", Model: ch.Model, Output: []respItem{}}
		s.send(out, "response.created", map[string]any{"response": s.resp})
		s.send(out, "response.in_progress", map[string]any{"response": s.resp})
	}
	if ch.Usage != nil {
		s.usage = ch.Usage
	}
	if len(ch.Choices) == 0 {
		return
	}
	d := ch.Choices[0].Delta
	if d.Reasoning != "" {
		if s.open < 0 || s.resp.Output[s.open].Type != "reasoning" {
			s.reason.Reset()
			s.begin(out, respItem{Type: "reasoning", ID: fmt.Sprintf("rs_%s_%d", s.resp.ID, len(s.resp.Output)), Summary: []any{}})
		}
		s.reason.WriteString(d.Reasoning)
		s.send(out, "response.reasoning_text.delta", map[string]any{"item_id": s.resp.Output[s.open].ID, "output_index": s.open, "content_index": 0, "delta": d.Reasoning})
	}
	if d.Content != nil && *d.Content != "" {
		if s.open < 0 || s.resp.Output[s.open].Type != "message" {
			s.text.Reset()
			s.begin(out, respItem{Type: "message", ID: fmt.Sprintf("msg_%s_%d", s.resp.ID, len(s.resp.Output)), Status: "in_progress", Role: "assistant", Content: []respContent{}})
		}
		s.text.WriteString(*d.Content)
		s.send(out, "response.output_text.delta", map[string]any{"item_id": s.resp.Output[s.open].ID, "output_index": s.open, "content_index": 0, "delta": *d.Content})
	}
	for _, tc := range d.ToolCalls {
		i, ok := s.calls[tc.Index]
		if !ok {
			empty := ""
			i = s.begin(out, respItem{Type: "function_call", ID: "fc_" + tc.ID, Status: "in_progress", CallID: tc.ID, Name: tc.Function.Name, Arguments: &empty})
			s.calls[tc.Index], s.callArgs[tc.Index] = i, &strings.Builder{}
			s.order = append(s.order, tc.Index)
		}
		if tc.Function.Arguments != "" {
			s.callArgs[tc.Index].WriteString(tc.Function.Arguments)
			s.send(out, "response.function_call_arguments.delta", map[string]any{"item_id": s.resp.Output[i].ID, "output_index": i, "delta": tc.Function.Arguments})
		}
	}
	if f := ch.Choices[0].FinishReason; f != nil && *f != "" {
		s.finish = *f
	}
}

// complete ends the items and sends the response's last event, with its
// usage: once the chat stream said [DONE], or ended after its finish.
func (s *respStream) complete(out *bytes.Buffer) {
	if s.done || s.failed || !s.started {
		return
	}
	s.done = true
	s.closeOpen(out)
	for _, idx := range s.order {
		i := s.calls[idx]
		item := &s.resp.Output[i]
		args := s.callArgs[idx].String()
		item.Status, item.Arguments = "completed", &args
		s.send(out, "response.function_call_arguments.done", map[string]any{"item_id": item.ID, "output_index": i, "arguments": args})
		s.send(out, "response.output_item.done", map[string]any{"output_index": i, "item": *item})
	}
	s.resp.status(s.finish)
	s.resp.Usage = responsesUsage(s.usage)
	kind := "response.completed"
	if s.resp.Status == "incomplete" {
		kind = "response.incomplete"
	}
	s.send(out, kind, map[string]any{"response": s.resp})
}

func (s *respStream) end(out *bytes.Buffer) {
	if s.finish != "" {
		s.complete(out)
	}
}

// chatBody is the chat completion request of a call of an API (path) to
// a provider of type typ: the request itself, or a Responses request
// translated.
func chatBody(path, typ string, body []byte) ([]byte, error) {
	switch path {
	case "/chat/completions":
		return body, nil
	case "/responses":
		return chatFromResponses(body)
	}
	return nil, unsupportedAPI(typ, path)
}

// asAPI returns a translated answer (a chat completion, or a stream of
// chat chunks) in the form of the API called.
func asAPI(path string, answer io.Reader, stream bool) io.Reader {
	switch {
	case path != "/responses":
		return answer
	case stream:
		return responsesStream(answer)
	}
	return responseFromChat(answer)
}
