package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"gatehouse/meter"
	"gatehouse/provider"
	"io"
	"maps"
	"net/http"
	"slices"
	"time"

	"gatehouse"
)

// readResponses reads and checks a Responses request.
func readResponses(w http.ResponseWriter, r *http.Request) (responsesRequest, map[string]json.RawMessage, []byte, error) {
	if err := checkContentType(r); err != nil {
		return responsesRequest{}, nil, nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCompletionBodyBytes))
	if err != nil {
		return responsesRequest{}, nil, nil, gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxCompletionBodyBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return responsesRequest{}, nil, nil, gatehouse.Errorf(gatehouse.EINVALID, "request body is required: send a JSON object")
	}
	req, body, err := parseResponses(raw)
	return req, body, raw, err
}

// createResponse serves POST /responses, OpenAI's Responses API, for the
// models of providers that offer it: metered as a chat completion is (see
// serveModel), with max_output_tokens (else the model's cap) as the
// completion the reservation assumes, and the usage's input_tokens and
// output_tokens as what is charged.
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models; use a regular API key")
	}
	req, body, raw, err := readResponses(w, r)
	if err != nil {
		return err
	}
	req, body, raw, ps, err := s.useResponsesPreset(r.Context(), p.key, req, body, raw)
	if err != nil {
		return err
	}
	attribution, err := chatAttribution(r, req.User)
	if err != nil {
		return err
	}
	route := provider.Request{API: provider.Responses, Model: req.Model, Models: req.Models, Preferences: req.prefs,
		Parameters: slices.Collect(maps.Keys(body)), Conversation: conversation(p.key, req.SessionID, firstMessages(req.messages))}
	for _, k := range slices.Concat(notForwarded, []string{"background"}) {
		delete(body, k)
	}
	return s.serveModel(w, r, modelCall{
		metered: meter.MeteredCall{Key: p.key, Request: raw, MaxTokens: req.MaxOutputTokens, Stream: req.Stream,
			SessionID: req.SessionID, Messages: req.messages, Attribution: attribution},
		route: route, explain: ps.explain,
		attempt: func(e provider.Endpoint) (attempt, error) {
			if err := meter.CheckReasoningBudget(body["reasoning"], e.Model.CompletionCap(req.MaxOutputTokens)); err != nil {
				return attempt{}, err
			}
			form := &responsesForm{model: e.Model, now: s.now}
			return attempt{form: form, send: func(ctx context.Context, m *meter.Metering, sw *streamWriter) (provider.Completion, error) {
				gen := m.Generation
				return s.forward(ctx, m, provider.CompletionCall{
					Provider: e.Provider, Model: e.Model, Body: body, MaxTokens: m.MaxTokens, Stream: req.Stream,
					Rewrite: func(obj map[string]json.RawMessage) { form.rewrite(obj, gen.ID) },
				}, sw, sw, s.data.Upstream.Respond)
			}}, nil
		},
	})
}

// useResponsesPreset is usePreset for a Responses request: the preset's
// fields in the Responses form (see preset.PresetUse.ApplyResponses),
// applied before anything else is decided.
func (s *Server) useResponsesPreset(ctx context.Context, key *gatehouse.Key, req responsesRequest, body map[string]json.RawMessage, raw []byte) (responsesRequest, map[string]json.RawMessage, []byte, *appliedPreset, error) {
	applied, v, err := s.findPreset(ctx, key, req.Model, req.Preset)
	if err != nil || applied == nil {
		return req, body, raw, nil, err
	}
	merged, err := applied.use.ApplyResponses(body, v)
	if err != nil {
		return req, nil, nil, nil, applied.explain(err)
	}
	req, body, raw, err = reparse(applied, merged, parseResponses)
	return req, body, raw, applied, err
}

// responsesForm is the form of a Responses answer: a response object, or
// a stream of events whose response objects carry Gatehouse's id and the
// model's slug, and whose last event carries the usage with the cost. It
// remembers, as the events pass, the last response object and sequence
// number, for the last event it may have to make.
type responsesForm struct {
	model *provider.Model
	now   func() time.Time
	last  map[string]json.RawMessage
	seq   int64
}

// rewrite edits a whole answer (a response object) or an event: the
// response's id and model, and the fields the official client requires.
func (f *responsesForm) rewrite(obj map[string]json.RawMessage, id string) {
	if _, event := obj["type"]; !event {
		f.rewriteResponse(obj, id)
		return
	}
	var seq int64
	if json.Unmarshal(obj["sequence_number"], &seq) == nil && seq > f.seq {
		f.seq = seq
	}
	var resp map[string]json.RawMessage
	if json.Unmarshal(obj["response"], &resp) == nil && resp != nil {
		f.rewriteResponse(resp, id)
		obj["response"], _ = json.Marshal(resp)
		f.last = resp
	}
}

// rewriteResponse gives a response object Gatehouse's id and the model's
// slug, and the fields the official client requires that providers may
// leave out (OpenAI's answers have no frequency_penalty, for one): null,
// or the API's default.
func (f *responsesForm) rewriteResponse(resp map[string]json.RawMessage, id string) {
	resp["id"], _ = json.Marshal(id)
	resp["model"], _ = json.Marshal(f.model.Slug())
	resp["object"] = json.RawMessage(`"response"`)
	for _, k := range []string{"completed_at", "error", "frequency_penalty", "presence_penalty", "incomplete_details",
		"instructions", "metadata", "temperature", "top_p"} {
		if _, ok := resp[k]; !ok {
			resp[k] = json.RawMessage("null")
		}
	}
	for k, v := range map[string]string{"output": "[]", "tools": "[]", "tool_choice": `"auto"`, "parallel_tool_calls": "true"} {
		if raw, ok := resp[k]; !ok || string(raw) == "null" {
			resp[k] = json.RawMessage(v)
		}
	}
	if _, ok := resp["created_at"]; !ok {
		resp["created_at"], _ = json.Marshal(f.now().Unix())
	}
	if string(resp["usage"]) == "null" {
		delete(resp, "usage")
	}
}

func (f *responsesForm) withCost(answer map[string]json.RawMessage, g *gatehouse.Generation) {
	withResponsesCost(answer, g, f.model)
}

// lastEvent is the provider's final event (response.completed, .incomplete
// or .failed) with the cost in its response's usage, or when it sent none
// a response.failed event of Gatehouse's: the last response the stream
// showed (or a new one), failed, with the cost that was charged.
func (f *responsesForm) lastEvent(final map[string]json.RawMessage, g *gatehouse.Generation, callErr error) string {
	if final != nil {
		var resp map[string]json.RawMessage
		if json.Unmarshal(final["response"], &resp) != nil || resp == nil {
			resp = map[string]json.RawMessage{}
			f.rewriteResponse(resp, g.ID)
		}
		withResponsesCost(resp, g, f.model)
		final["response"], _ = json.Marshal(resp)
		b, _ := json.Marshal(final)
		return "data: " + string(b) + "\n\n"
	}
	resp := map[string]json.RawMessage{}
	for k, v := range f.last {
		resp[k] = v
	}
	f.rewriteResponse(resp, g.ID)
	why := "the provider's stream ended without its final event"
	if callErr != nil {
		why = "the provider's stream broke off before the response was complete"
	}
	resp["status"] = json.RawMessage(`"failed"`)
	resp["completed_at"] = json.RawMessage("null")
	resp["error"], _ = json.Marshal(map[string]string{"code": "server_error", "message": why})
	withResponsesCost(resp, g, f.model)
	b, _ := json.Marshal(map[string]any{"type": "response.failed", "sequence_number": f.seq + 1, "response": resp})
	return "event: response.failed\ndata: " + string(b) + "\n\n"
}

// responsesCostDetailsJSON is OpenRouter's cost details of a response:
// chat's, named for input and output.
type responsesCostDetailsJSON struct {
	UpstreamInferenceCost       *usd `json:"upstream_inference_cost"`
	UpstreamInferenceInputCost  usd  `json:"upstream_inference_input_cost"`
	UpstreamInferenceOutputCost usd  `json:"upstream_inference_output_cost"`
}

// withResponsesCost sets the usage of a response object to what was
// metered: the token counts that were charged, the provider's token details
// where it gave them (whole numbers; cached_tokens and reasoning_tokens, 0
// when not given, as the official client requires them), and the cost,
// is_byok and cost_details of the charge.
func withResponsesCost(resp map[string]json.RawMessage, g *gatehouse.Generation, m *provider.Model) {
	usage := map[string]json.RawMessage{}
	if json.Unmarshal(resp["usage"], &usage) != nil || usage == nil {
		usage = map[string]json.RawMessage{}
	}
	set := func(name string, v any) { usage[name], _ = json.Marshal(v) }
	set("input_tokens", g.PromptTokens)
	set("output_tokens", g.CompletionTokens)
	set("total_tokens", g.PromptTokens+g.CompletionTokens)
	for name, required := range map[string]string{"input_tokens_details": "cached_tokens", "output_tokens_details": "reasoning_tokens"} {
		d := map[string]json.RawMessage{}
		_ = json.Unmarshal(tokenDetails(usage[name]), &d)
		if _, ok := d[required]; !ok {
			d[required] = json.RawMessage("0")
		}
		usage[name], _ = json.Marshal(d)
	}
	input, output := m.CostSplit(g)
	details := responsesCostDetailsJSON{UpstreamInferenceInputCost: usdOf(input), UpstreamInferenceOutputCost: usdOf(output)}
	if g.BYOK {
		details.UpstreamInferenceCost = usdPtr(&g.Cost)
	}
	set("cost", usdOf(g.Cost))
	set("is_byok", g.BYOK)
	set("cost_details", details)
	resp["usage"], _ = json.Marshal(usage)
}
