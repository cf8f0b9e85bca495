package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Function tools. A request that offers function tools (and does not say
// tool_choice "none") whose conversation does not end with a tool's result
// is answered with a call of its first tool, or of the one tool_choice
// names, with arguments made from the tool's JSON schema (see arguments);
// a conversation that ends with a tool's result is answered "The tool
// said: " and that result.

// tool is a function tool of a request: its name and parameters schema.
type tool struct {
	Name       string
	Parameters json.RawMessage
}

// chatTools reads the function tools of a chat completion request:
// [{"type": "function", "function": {"name", "parameters"}}].
func chatTools(raw json.RawMessage) []tool {
	var list []struct {
		Type     string `json:"type"`
		Function struct {
			Name       string          `json:"name"`
			Parameters json.RawMessage `json:"parameters"`
		} `json:"function"`
	}
	_ = json.Unmarshal(raw, &list)
	var out []tool
	for _, t := range list {
		if t.Type == "function" && t.Function.Name != "" {
			out = append(out, tool{t.Function.Name, t.Function.Parameters})
		}
	}
	return out
}

// responsesTools reads the function tools of a Responses request:
// [{"type": "function", "name", "parameters"}].
func responsesTools(raw json.RawMessage) []tool {
	var list []struct {
		Type       string          `json:"type"`
		Name       string          `json:"name"`
		Parameters json.RawMessage `json:"parameters"`
	}
	_ = json.Unmarshal(raw, &list)
	var out []tool
	for _, t := range list {
		if t.Type == "function" && t.Name != "" {
			out = append(out, tool{t.Name, t.Parameters})
		}
	}
	return out
}

// chooseTool returns the tool to call given tool_choice: none for "none",
// the named one for {"type": "function", "function": {"name"}} (chat) or
// {"type": "function", "name"} (Responses), else the first.
func chooseTool(tools []tool, choice json.RawMessage) *tool {
	var mode string
	if json.Unmarshal(choice, &mode) == nil && mode == "none" || len(tools) == 0 {
		return nil
	}
	var named struct {
		Name     string `json:"name"`
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	}
	_ = json.Unmarshal(choice, &named)
	for _, t := range tools {
		if t.Name == named.Name || t.Name == named.Function.Name {
			return &t
		}
	}
	return &tools[0]
}

// arguments makes a tool call's arguments from its parameters schema: an
// object with a value for each required property (every property when
// none is required) of its type: text for a string (the first of an enum),
// the number of words of text for a number or an integer, true, an empty
// array or object.
func arguments(schema json.RawMessage, text string) string {
	var s struct {
		Properties map[string]struct {
			Type any   `json:"type"`
			Enum []any `json:"enum"`
		} `json:"properties"`
		Required []string `json:"required"`
	}
	_ = json.Unmarshal(schema, &s)
	names := s.Required
	if len(names) == 0 {
		for name := range s.Properties {
			names = append(names, name)
		}
	}
	args := map[string]any{}
	for _, name := range names {
		p := s.Properties[name]
		kind, _ := p.Type.(string)
		if list, ok := p.Type.([]any); ok && len(list) > 0 {
			kind, _ = list[0].(string)
		}
		switch {
		case len(p.Enum) > 0:
			args[name] = p.Enum[0]
		case kind == "number" || kind == "integer":
			args[name] = len(strings.Fields(text))
		case kind == "boolean":
			args[name] = true
		case kind == "array":
			args[name] = []any{}
		case kind == "object":
			args[name] = map[string]any{}
		default:
			args[name] = text
		}
	}
	b, _ := json.Marshal(args)
	return string(b)
}

// toolCall is a call the answer makes.
type toolCall struct {
	id, name, arguments string
}

// tokens counts a call's completion tokens as words of its arguments, at
// least one.
func (c toolCall) tokens() int { return max(len(strings.Fields(c.arguments)), 1) }

// answerChatToolCall answers a chat completion with a tool call, whole or
// streamed as OpenAI streams one: the call's id, type and name first, then
// its arguments in two pieces, then finish_reason tool_calls.
func answerChatToolCall(w http.ResponseWriter, req request, call toolCall, prompt int) {
	id, created := "chatcmpl-"+randomHex(12), time.Now().Unix()
	usage := map[string]int{"prompt_tokens": prompt, "completion_tokens": call.tokens(), "total_tokens": prompt + call.tokens()}
	if rec, ok := w.(*recorder); ok {
		rec.note = fmt.Sprintf(" model=%s stream=%t prompt_tokens=%d completion_tokens=%d finish_reason=tool_calls tool=%s", req.Model, req.Stream, prompt, call.tokens(), call.name)
	}
	if !req.Stream {
		writeJSON(w, http.StatusOK, map[string]any{"id": id, "object": "chat.completion", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "finish_reason": "tool_calls",
				"message": map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
					"id": call.id, "type": "function", "function": map[string]any{"name": call.name, "arguments": call.arguments}}}}}},
			"usage": usage})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	rc := http.NewResponseController(w)
	send := func(delta map[string]any, finish any, usage any) {
		chunk := map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": req.Model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if delta == nil {
			chunk["choices"] = []any{}
		}
		if req.StreamOptions.IncludeUsage {
			chunk["usage"] = usage
		}
		b, _ := json.Marshal(chunk)
		fmt.Fprintf(w, "data: %s\n\n", b)
		_ = rc.Flush()
	}
	send(map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"index": 0, "id": call.id,
		"type": "function", "function": map[string]any{"name": call.name, "arguments": ""}}}}, nil, nil)
	half := len(call.arguments) / 2
	for _, piece := range []string{call.arguments[:half], call.arguments[half:]} {
		send(map[string]any{"tool_calls": []any{map[string]any{"index": 0, "function": map[string]any{"arguments": piece}}}}, nil, nil)
	}
	send(map[string]any{}, "tool_calls", nil)
	if req.StreamOptions.IncludeUsage {
		send(nil, nil, usage)
	}
	fmt.Fprint(w, "data: [DONE]\n\n")
	_ = rc.Flush()
}

// functionCall is the Responses output item of a tool call, done or as it
// starts.
func (a *answer) functionCall(done bool) map[string]any {
	item := map[string]any{"type": "function_call", "id": a.msgID, "call_id": a.call.id, "name": a.call.name,
		"arguments": a.call.arguments, "status": "completed"}
	if !done {
		item["arguments"], item["status"] = "", "in_progress"
	}
	return item
}

// streamToolCall sends a Responses answer that calls a tool as OpenAI's
// event stream: the item added, its arguments in two deltas, done.
func (a *answer) streamToolCall(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	a.w, a.flush = w, http.NewResponseController(w).Flush
	a.event("response.created", map[string]any{"response": a.response(false)})
	a.event("response.in_progress", map[string]any{"response": a.response(false)})
	a.event("response.output_item.added", map[string]any{"output_index": 0, "item": a.functionCall(false)})
	half := len(a.call.arguments) / 2
	for _, piece := range []string{a.call.arguments[:half], a.call.arguments[half:]} {
		a.event("response.function_call_arguments.delta", map[string]any{"item_id": a.msgID, "output_index": 0, "delta": piece})
	}
	a.event("response.function_call_arguments.done", map[string]any{"item_id": a.msgID, "output_index": 0, "arguments": a.call.arguments})
	a.event("response.output_item.done", map[string]any{"output_index": 0, "item": a.functionCall(true)})
	a.event("response.completed", map[string]any{"response": a.response(true)})
}
