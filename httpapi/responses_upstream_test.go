package httpapi_test

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
)

// respond answers a Responses API request as OpenAI does (its response
// object has no frequency_penalty or presence_penalty, which the official
// client requires): output "Hello" (and a reasoning item when reasoning is
// set), usage as for chat completions (completionTokens 0: the request's
// max_output_tokens and overbill; uncapped without one), whole or as the
// Responses event stream, whose response.completed carries the usage.
func (u *fakeUpstream) respond(w http.ResponseWriter, r *http.Request, body map[string]any) {
	completion := u.completionTokens
	if completion == 0 {
		n, capped := body["max_output_tokens"].(float64)
		completion = int64(n) + u.overbill
		if !capped {
			completion = u.uncapped
		}
	}
	usage := map[string]any{"input_tokens": u.promptTokens, "output_tokens": completion, "total_tokens": u.promptTokens + completion,
		"input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens_details": map[string]any{"reasoning_tokens": 0}}
	for k, v := range u.tokenDetails {
		usage[k] = v
	}
	message := map[string]any{"type": "message", "id": "msg_up", "status": "completed", "role": "assistant",
		"content": []any{map[string]any{"type": "output_text", "text": "Hello", "annotations": []any{}}}}
	output := []any{message}
	if u.reasoning != "" {
		output = []any{map[string]any{"type": "reasoning", "id": "rs_up", "summary": []any{map[string]any{"type": "summary_text", "text": u.reasoning}}}, message}
	}
	resp := map[string]any{"id": "resp_up", "object": "response", "created_at": 1700000000, "status": "completed",
		"error": nil, "incomplete_details": nil, "instructions": body["instructions"], "max_output_tokens": body["max_output_tokens"],
		"model": body["model"], "output": output, "parallel_tool_calls": true, "previous_response_id": nil, "store": false,
		"temperature": 1.0, "text": map[string]any{"format": map[string]any{"type": "text"}}, "tool_choice": "auto",
		"tools": []any{}, "top_p": 1.0, "truncation": "disabled", "user": nil, "metadata": map[string]any{}}
	if !u.noUsage {
		resp["usage"] = usage
	}
	if stream, _ := body["stream"].(bool); stream {
		u.respondStream(w, r, resp)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(resp)
}

// respondStream sends a response as events: created, a comment, two text
// deltas (waiting after the first while hold is open), and
// response.completed with the whole response, unless noFinal.
func (u *fakeUpstream) respondStream(w http.ResponseWriter, r *http.Request, resp map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	flush := w.(http.Flusher).Flush
	seq := 0
	event := func(kind string, fields map[string]any) {
		fields["type"], fields["sequence_number"] = kind, seq
		seq++
		b, _ := json.Marshal(fields)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", kind, b)
		flush()
	}
	started := map[string]any{}
	for k, v := range resp {
		started[k] = v
	}
	started["status"], started["output"], started["usage"] = "in_progress", []any{}, nil
	event("response.created", map[string]any{"response": started})
	io.WriteString(w, ": keep-alive\n\n")
	at := func(delta string) map[string]any {
		return map[string]any{"item_id": "msg_up", "output_index": 0, "content_index": 0, "delta": delta, "logprobs": []any{}}
	}
	if u.reasoning != "" {
		event("response.reasoning_summary_text.delta", map[string]any{"item_id": "rs_up", "output_index": 0, "summary_index": 0, "delta": u.reasoning})
	}
	event("response.output_text.delta", at("Hel"))
	if u.hold != nil {
		select {
		case <-u.hold:
		case <-r.Context().Done():
			u.callerLeft()
			return
		}
	}
	event("response.output_text.delta", at("lo"))
	if !u.noFinal {
		event("response.completed", map[string]any{"response": resp})
	}
}
