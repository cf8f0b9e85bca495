package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
)

// responsesRequest is what fakellm reads of a Responses API request.
type responsesRequest struct {
	Model           string          `json:"model"`
	Input           json.RawMessage `json:"input"`
	Instructions    *string         `json:"instructions"`
	Stream          bool            `json:"stream"`
	MaxOutputTokens int             `json:"max_output_tokens"`
	Tools           json.RawMessage `json:"tools"`
	ToolChoice      json.RawMessage `json:"tool_choice"`
}

// inputItem is an item of a Responses input: a message (its content a
// string or text parts) or a function call's output.
type inputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	Output  json.RawMessage `json:"output"`
}

// texts returns the text of every input message and function call output,
// the last user message's, and the last item's output when it is a
// function call's.
func (r responsesRequest) texts() (all []string, lastUser, toolOutput string) {
	if r.Instructions != nil {
		all = append(all, *r.Instructions)
	}
	var s string
	if json.Unmarshal(r.Input, &s) == nil {
		return append(all, s), s, ""
	}
	var items []inputItem
	_ = json.Unmarshal(r.Input, &items)
	for _, it := range items {
		text := message{Content: it.Content}.text()
		toolOutput = ""
		if it.Type == "function_call_output" {
			text = message{Content: it.Output}.text()
			toolOutput = text
		}
		all = append(all, text)
		if it.Role == "user" {
			lastUser = text
		}
	}
	return all, lastUser, toolOutput
}

// responses answers a Responses API request as chatCompletions answers a
// chat completion: "You said: " and the last user message, cut to
// max_output_tokens words (then status incomplete, reason
// max_output_tokens), with usage counted in words (input_tokens: the words
// of the instructions and of every input message), whole or as the
// Responses event stream (response.created ... response.completed, which
// carries the usage).
func responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if err := json.NewDecoder(io.LimitReader(r.Body, 10<<20)).Decode(&req); err != nil || req.Model == "" || len(req.Input) == 0 {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
			"message": "want a JSON body with model and input", "type": "invalid_request_error"}})
		return
	}
	all, last, toolOutput := req.texts()
	prompt := len(strings.Fields(strings.Join(all, " ")))
	said := "You said: " + last
	var call *toolCall
	if toolOutput != "" {
		said = "The tool said: " + toolOutput
	} else if t := chooseTool(responsesTools(req.Tools), req.ToolChoice); t != nil {
		call = &toolCall{id: "call_" + randomHex(12), name: t.Name, arguments: arguments(t.Parameters, last)}
		said = call.arguments
	}
	words := strings.Fields(said)
	if call != nil {
		words = make([]string, call.tokens())
	}
	incomplete := req.MaxOutputTokens > 0 && len(words) > req.MaxOutputTokens
	if incomplete {
		words = words[:req.MaxOutputTokens]
	}
	a := &answer{req: req, id: "resp_" + randomHex(12), msgID: "msg_" + randomHex(12), created: time.Now().Unix(),
		text: strings.Join(words, " "), incomplete: incomplete, call: call,
		usage: map[string]any{"input_tokens": prompt, "input_tokens_details": map[string]int{"cached_tokens": 0},
			"output_tokens": len(words), "output_tokens_details": map[string]int{"reasoning_tokens": 0},
			"total_tokens": prompt + len(words)}}
	if rec, ok := w.(*recorder); ok {
		rec.note = fmt.Sprintf(" model=%s stream=%t input_tokens=%d output_tokens=%d incomplete=%t", req.Model, req.Stream, prompt, len(words), incomplete)
	}
	switch {
	case !req.Stream:
		writeJSON(w, http.StatusOK, a.response(true))
	case call != nil:
		a.streamToolCall(w)
	default:
		a.stream(w, words)
	}
}

// answer is one response being made.
type answer struct {
	req             responsesRequest
	id, msgID, text string
	created         int64
	incomplete      bool
	call            *toolCall // the tool the answer calls, if it does
	usage           map[string]any
	seq             int
	w               io.Writer
	flush           func() error
}

// message is the output message, whole (done) or as it starts.
func (a *answer) message(done bool) map[string]any {
	if !done {
		return map[string]any{"type": "message", "id": a.msgID, "status": "in_progress", "role": "assistant", "content": []any{}}
	}
	status := "completed"
	if a.incomplete {
		status = "incomplete"
	}
	return map[string]any{"type": "message", "id": a.msgID, "status": status, "role": "assistant",
		"content": []any{a.part(a.text)}}
}

func (a *answer) part(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}}
}

// response is the response object, done (with its output and usage) or
// as it starts; in OpenAI's shape, which has no frequency_penalty or
// presence_penalty.
func (a *answer) response(done bool) map[string]any {
	r := map[string]any{"id": a.id, "object": "response", "created_at": a.created, "status": "in_progress",
		"completed_at": nil, "error": nil, "incomplete_details": nil, "instructions": a.req.Instructions,
		"max_output_tokens": nil, "model": a.req.Model, "output": []any{}, "parallel_tool_calls": true,
		"previous_response_id": nil, "store": false, "temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}},
		"tool_choice": "auto", "tools": []any{}, "top_p": 1.0, "truncation": "disabled", "usage": nil, "user": nil, "metadata": map[string]any{}}
	if a.req.MaxOutputTokens > 0 {
		r["max_output_tokens"] = a.req.MaxOutputTokens
	}
	if !done {
		return r
	}
	r["status"], r["completed_at"] = "completed", time.Now().Unix()
	if a.incomplete {
		r["status"], r["completed_at"], r["incomplete_details"] = "incomplete", nil, map[string]any{"reason": "max_output_tokens"}
	}
	r["output"], r["usage"] = []any{a.message(true)}, a.usage
	if a.call != nil {
		r["output"] = []any{a.functionCall(true)}
	}
	return r
}

// event sends one event of the stream, with its type and sequence number.
func (a *answer) event(kind string, fields map[string]any) {
	fields["type"], fields["sequence_number"] = kind, a.seq
	a.seq++
	b, _ := json.Marshal(fields)
	fmt.Fprintf(a.w, "event: %s\ndata: %s\n\n", kind, b)
	_ = a.flush()
}

// stream sends the answer as OpenAI's Responses event stream.
func (a *answer) stream(w http.ResponseWriter, words []string) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	a.w, a.flush = w, http.NewResponseController(w).Flush
	at := map[string]any{"item_id": a.msgID, "output_index": 0, "content_index": 0}
	with := func(extra map[string]any) map[string]any {
		out := map[string]any{}
		for k, v := range at {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	a.event("response.created", map[string]any{"response": a.response(false)})
	a.event("response.in_progress", map[string]any{"response": a.response(false)})
	a.event("response.output_item.added", map[string]any{"output_index": 0, "item": a.message(false)})
	a.event("response.content_part.added", with(map[string]any{"part": a.part("")}))
	for i, word := range words {
		if i > 0 {
			word = " " + word
		}
		a.event("response.output_text.delta", with(map[string]any{"delta": word, "logprobs": []any{}}))
	}
	a.event("response.output_text.done", with(map[string]any{"text": a.text, "logprobs": []any{}}))
	a.event("response.content_part.done", with(map[string]any{"part": a.part(a.text)}))
	a.event("response.output_item.done", map[string]any{"output_index": 0, "item": a.message(true)})
	final := "response.completed"
	if a.incomplete {
		final = "response.incomplete"
	}
	a.event(final, map[string]any{"response": a.response(true)})
}
