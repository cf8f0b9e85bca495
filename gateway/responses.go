package gateway

import (
	"context"
	"encoding/json"
	"gatehouse/provider"
	"strings"
)

// Respond forwards a Responses API request to the provider's /responses
// and reads the answer, whole or streamed, as Complete does for a chat
// completion. The key goes as in Complete.
func (c *Client) Respond(ctx context.Context, call provider.CompletionCall, w provider.StreamWriter) (provider.Completion, error) {
	return c.forward(ctx, call, w, responsesAPI)
}

// responsesAPI is the OpenAI Responses API.
var responsesAPI = api{path: "/responses", body: responsesBody, read: inspectResponse, event: responsesEvent}

// responsesBody returns the request body for the upstream: the checked,
// re-encoded body with the upstream's model name, the reserved cap as
// max_output_tokens (which counts reasoning tokens too), and store false:
// the provider keeps nothing that a later request could pull in unseen.
func responsesBody(call provider.CompletionCall) ([]byte, error) {
	out := make(map[string]json.RawMessage, len(call.Body)+4)
	for k, v := range call.Body {
		out[k] = v
	}
	out["model"], _ = json.Marshal(call.Model.ID)
	out["max_output_tokens"], _ = json.Marshal(call.MaxTokens)
	out["store"] = json.RawMessage("false")
	out["stream"], _ = json.Marshal(call.Stream)
	return json.Marshal(out)
}

// responseObject is the part of a Responses answer (a response object)
// that metering and tracing read. Each part is read on its own, so that
// an odd output cannot hide the usage.
type responseObject struct {
	ID                string `json:"id"`
	Status            string `json:"status"`
	IncompleteDetails *struct {
		Reason string `json:"reason"`
	} `json:"incomplete_details"`
}

// decode reads the fields of a response object, each by its exact name,
// as the clients that read the answer do.
func (r *responseObject) decode(obj map[string]json.RawMessage) {
	_ = json.Unmarshal(obj["id"], &r.ID)
	_ = json.Unmarshal(obj["status"], &r.Status)
	_ = json.Unmarshal(obj["incomplete_details"], &r.IncompleteDetails)
}

// responseItem is an output item of a response: a message's text parts,
// a reasoning item's summary and text.
type responseItem struct {
	Type    string `json:"type"`
	Content []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"content"`
	Summary []struct {
		Text string `json:"text"`
	} `json:"summary"`
}

// inspectResponse extracts id, usage, finish reason and text from a
// response object. Usage is known when it gives both input_tokens and
// output_tokens (which includes reasoning tokens).
func inspectResponse(obj map[string]json.RawMessage) provider.Completion {
	var r responseObject
	r.decode(obj)
	c := provider.Completion{UpstreamID: r.ID}
	readUsage(&c, obj["usage"], "input_tokens", "output_tokens", "input_tokens_details")
	var items []json.RawMessage
	_ = json.Unmarshal(obj["output"], &items)
	var output, reasoning strings.Builder
	calls := false
	for _, raw := range items {
		var item responseItem
		if json.Unmarshal(raw, &item) != nil {
			continue
		}
		calls = calls || item.Type == "function_call"
		for _, p := range item.Content {
			if item.Type == "message" && p.Type == "output_text" && output.Len() < maxOutput {
				output.WriteString(p.Text)
			} else if item.Type == "reasoning" && reasoning.Len() < maxOutput {
				reasoning.WriteString(p.Text)
			}
		}
		for _, s := range item.Summary {
			if item.Type == "reasoning" && reasoning.Len() < maxOutput {
				reasoning.WriteString(s.Text)
			}
		}
	}
	c.Output, c.Reasoning = truncate(output.String()), truncate(reasoning.String())
	c.FinishReason = finishReason(r, calls)
	return c
}

// finishReason says why a response ended, in the terms of Chat
// Completions that generations record: stop (or tool_calls when it calls
// a function), length (max_output_tokens reached), content_filter, error
// (failed); the status itself otherwise.
func finishReason(r responseObject, calls bool) string {
	switch {
	case r.Status == "completed" && calls:
		return "tool_calls"
	case r.Status == "completed":
		return "stop"
	case r.Status == "failed":
		return "error"
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason == "max_output_tokens":
		return "length"
	case r.Status == "incomplete" && r.IncompleteDetails != nil && r.IncompleteDetails.Reason != "":
		return r.IncompleteDetails.Reason
	}
	return r.Status
}

// isFinalResponseEvent reports whether a Responses stream event of that
// type ends the response, carrying it whole with its usage.
func isFinalResponseEvent(kind string) bool {
	return kind == "response.completed" || kind == "response.incomplete" || kind == "response.failed"
}

// responsesEvent reads one event of a Responses stream: the text of its
// deltas, the id of its response, and the usage and finish reason of the
// final event, which is held back.
func responsesEvent(obj map[string]json.RawMessage) (provider.Completion, bool) {
	var ev struct {
		Type     string                     `json:"type"`
		Delta    string                     `json:"delta"`
		Response map[string]json.RawMessage `json:"response"`
	}
	// Each field by its exact name, as clients read them.
	_ = json.Unmarshal(obj["type"], &ev.Type)
	_ = json.Unmarshal(obj["delta"], &ev.Delta)
	_ = json.Unmarshal(obj["response"], &ev.Response)
	var c provider.Completion
	switch {
	case isFinalResponseEvent(ev.Type):
		c = inspectResponse(ev.Response)
		c.Output, c.Reasoning = "", "" // the deltas brought them
		return c, true
	case ev.Type == "response.output_text.delta":
		c.Output = ev.Delta
	case ev.Type == "response.reasoning_text.delta" || ev.Type == "response.reasoning_summary_text.delta":
		c.Reasoning = ev.Delta
	case ev.Response != nil:
		_ = json.Unmarshal(ev.Response["id"], &c.UpstreamID)
	}
	return c, false
}
