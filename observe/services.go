package observe

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// The types whose services take JSON over HTTP in their own shapes.

var errBadDSN = errors.New("the configured DSN has no public key")

// idNamespace makes the ids derived from generation ids (UUIDv5), so that
// a retried or re-sent delivery carries the same id and a service that
// deduplicates by id keeps one.
var idNamespace = uuid.MustParse("6f1a7d2e-3b8c-4e59-9a0d-5c2b7e8f1a34")

// eventUUID is the generation's id as a UUID.
func eventUUID(e *event) string { return uuid.NewSHA1(idNamespace, []byte(e.Generation.ID)).String() }

// eventUUIDv7 is the generation's id as a UUIDv7 (Opik takes no other):
// its start in milliseconds, then bits of the generation id's hash.
func eventUUIDv7(e *event, salt string) string {
	start, _ := e.times()
	h := sha256.Sum256([]byte(salt + e.Generation.ID))
	var u uuid.UUID
	ms := uint64(start.UnixMilli())
	for i := range 6 {
		u[i] = byte(ms >> (40 - 8*i))
	}
	copy(u[6:], h[:10])
	u[6] = u[6]&0x0f | 0x70 // version 7
	u[8] = u[8]&0x3f | 0x80 // variant 10
	return u.String()
}

// message is a chat message as the services take it: text content.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// inputMessages reads the request's messages; content that is not a
// string (parts) is kept as its JSON.
func inputMessages(e *event) []message {
	if e.privacy || len(e.Input) == 0 {
		return nil
	}
	var raw []struct {
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
	}
	if err := json.Unmarshal(e.Input, &raw); err != nil {
		return []message{{Role: "user", Content: string(e.Input)}}
	}
	out := make([]message, 0, len(raw))
	for _, m := range raw {
		var s string
		if err := json.Unmarshal(m.Content, &s); err != nil {
			s = string(m.Content)
		}
		out = append(out, message{Role: m.Role, Content: s})
	}
	return out
}

// outputMessage is the completion as a message; nil in privacy mode.
func outputMessage(e *event) []message {
	if e.privacy {
		return nil
	}
	return []message{{Role: "assistant", Content: e.Output}}
}

func rfc3339(t time.Time) string { return t.UTC().Format(time.RFC3339Nano) }

// metadata is what every service gets beside the usage: who and where.
func metadata(e *event) map[string]any {
	g := e.Generation
	m := map[string]any{
		"generation_id": g.ID, "organization_id": g.OrganizationID, "workspace_id": g.WorkspaceID,
		"api_key_hash": g.KeyHash, "api_key_name": e.KeyName, "provider": g.Provider, "model": g.Model,
		"cost_usd": g.Cost, "latency_ms": g.LatencyMS, "status": g.Status, "byok": g.BYOK, "streamed": g.Streamed,
	}
	if e.UserID != nil {
		m["user_id"] = *e.UserID
	}
	if g.SessionID != nil {
		m["session_id"] = *g.SessionID
	}
	if g.ExternalUser != nil {
		m["external_user"] = *g.ExternalUser
	}
	if g.FinishReason != nil {
		m["finish_reason"] = *g.FinishReason
	}
	return m
}

// post sends one JSON request with the destination's headers under the
// type's.
func post(ctx context.Context, s *sender, d *gatehouse.Destination, rawURL string, body any, set map[string]string) outcome {
	r, err := newRequest(http.MethodPost, rawURL, d, body, set)
	if err != nil {
		return failed(err)
	}
	return s.do(ctx, r)
}

// deliverDatadog sends LLM Observability spans of kind llm to the span
// intake of the site (config.url), under the ML app.
func deliverDatadog(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	spans := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		g := e.Generation
		start, end := e.times()
		meta := map[string]any{"kind": "llm", "model_name": g.Model, "model_provider": g.Provider,
			"metadata": metadata(e)}
		if !e.privacy {
			meta["input"] = map[string]any{"messages": inputMessages(e)}
			meta["output"] = map[string]any{"messages": outputMessage(e)}
		}
		sp := map[string]any{
			"parent_id": "undefined", "trace_id": e.ids.trace, "span_id": e.ids.span,
			"name": "chat " + g.Model, "start_ns": start.UnixNano(), "duration": end.Sub(start).Nanoseconds(),
			"status": "ok", "meta": meta,
			"metrics": map[string]any{"input_tokens": g.PromptTokens, "output_tokens": g.CompletionTokens,
				"total_tokens": g.PromptTokens + g.CompletionTokens, "total_cost": usd(g.Cost)},
			"tags": []string{"source:gatehouse", "workspace_id:" + g.WorkspaceID},
		}
		if g.SessionID != nil {
			sp["session_id"] = *g.SessionID
		}
		spans = append(spans, sp)
	}
	body := map[string]any{"data": map[string]any{"type": "span", "attributes": map[string]any{
		"ml_app": v["mlApp"], "tags": []string{"source:gatehouse"}, "spans": spans}}}
	return post(ctx, s, d, base(d, "url")+"/api/intake/llm-obs/v1/trace/spans", body,
		map[string]string{"DD-API-KEY": v["apiKey"]})
}

// deliverLangSmith posts llm runs to the batch ingestion endpoint; the run
// id derives from the generation id, so a re-sent run is one run.
func deliverLangSmith(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	runs := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		g := e.Generation
		start, end := e.times()
		id := eventUUID(e)
		md := metadata(e)
		md["ls_provider"], md["ls_model_name"], md["ls_model_type"] = g.Provider, g.Model, "chat"
		usage := map[string]int64{"input_tokens": g.PromptTokens, "output_tokens": g.CompletionTokens,
			"total_tokens": g.PromptTokens + g.CompletionTokens}
		inputs, outputs := map[string]any{}, map[string]any{"usage_metadata": usage}
		if !e.privacy {
			inputs["messages"] = inputMessages(e)
			outputs["choices"] = []map[string]any{{"message": message{"assistant", e.Output}}}
		}
		runs = append(runs, map[string]any{
			"id": id, "trace_id": id, "dotted_order": dottedTime(start) + id,
			"name": "chat " + g.Model, "run_type": "llm", "start_time": rfc3339(start), "end_time": rfc3339(end),
			"inputs": inputs, "outputs": outputs, "session_name": v["project"],
			"extra": map[string]any{"metadata": md}, "tags": []string{"gatehouse"},
		})
	}
	set := map[string]string{"x-api-key": v["apiKey"]}
	if w := v["workspaceId"]; w != "" {
		set["X-Tenant-Id"] = w
	}
	return post(ctx, s, d, base(d, "endpoint")+"/runs/batch", map[string]any{"post": runs, "patch": []any{}}, set)
}

// dottedTime is a run's start as LangSmith's dotted order begins:
// 20060102T150405 and microseconds, then Z.
func dottedTime(t time.Time) string {
	t = t.UTC()
	return t.Format("20060102T150405") + fmt.Sprintf("%06dZ", t.Nanosecond()/1000)
}

// deliverOpik creates each generation's trace, then its llm span, with
// UUIDv7 ids derived from the generation id (a batch upsert by id).
func deliverOpik(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	var traces, spans []map[string]any
	for _, e := range evs {
		g := e.Generation
		start, end := e.times()
		tid := eventUUIDv7(e, "trace:")
		var input, output map[string]any
		if !e.privacy {
			input = map[string]any{"messages": inputMessages(e)}
			output = map[string]any{"content": e.Output}
		}
		tr := map[string]any{"id": tid, "project_name": v["projectName"], "name": "chat " + g.Model,
			"start_time": rfc3339(start), "end_time": rfc3339(end), "input": input, "output": output,
			"metadata": metadata(e), "tags": []string{"gatehouse"}}
		if g.SessionID != nil {
			tr["thread_id"] = *g.SessionID
		}
		traces = append(traces, tr)
		spans = append(spans, map[string]any{"id": eventUUIDv7(e, "span:"), "trace_id": tid,
			"project_name": v["projectName"], "type": "llm", "name": "chat " + g.Model,
			"start_time": rfc3339(start), "end_time": rfc3339(end), "input": input, "output": output,
			"model": g.Model, "provider": g.Provider, "metadata": metadata(e),
			"usage":                map[string]int64{"prompt_tokens": g.PromptTokens, "completion_tokens": g.CompletionTokens, "total_tokens": g.PromptTokens + g.CompletionTokens},
			"total_estimated_cost": usd(g.Cost)})
	}
	set := map[string]string{"authorization": v["apiKey"], "Comet-Workspace": v["workspace"]}
	if o := post(ctx, s, d, base(d, "baseUrl")+"/v1/private/traces/batch", map[string]any{"traces": traces}, set); !o.ok() {
		return o
	}
	return post(ctx, s, d, base(d, "baseUrl")+"/v1/private/spans/batch", map[string]any{"spans": spans}, set)
}

// deliverPostHog captures $ai_generation events through the batch
// endpoint; each event's uuid derives from the generation id, by which
// PostHog deduplicates.
func deliverPostHog(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	batch := make([]map[string]any, 0, len(evs))
	for _, e := range evs {
		g := e.Generation
		start, end := e.times()
		props := map[string]any{
			"$ai_trace_id": g.ID, "$ai_span_id": e.ids.span, "$ai_model": g.Model, "$ai_provider": g.Provider,
			"$ai_input_tokens": g.PromptTokens, "$ai_output_tokens": g.CompletionTokens,
			"$ai_total_cost_usd": usd(g.Cost), "$ai_latency": end.Sub(start).Seconds(), "$ai_http_status": 200,
			"$ai_is_error": false, "$ai_stream": g.Streamed, "$ai_span_name": "chat " + g.Model,
			"gatehouse_workspace_id": g.WorkspaceID, "gatehouse_api_key_name": e.KeyName,
			"gatehouse_api_key_hash": g.KeyHash,
		}
		if g.SessionID != nil {
			props["$ai_session_id"] = *g.SessionID
		}
		if !e.privacy {
			props["$ai_input"] = inputMessages(e)
			props["$ai_output_choices"] = outputMessage(e)
		}
		distinct := g.KeyHash
		if e.UserID != nil {
			distinct = *e.UserID
		} else {
			props["$process_person_profile"] = false
		}
		batch = append(batch, map[string]any{"event": "$ai_generation", "distinct_id": distinct,
			"timestamp": rfc3339(end), "uuid": eventUUID(e), "properties": props})
	}
	return post(ctx, s, d, base(d, "endpoint")+"/batch/", map[string]any{"api_key": v["apiKey"], "batch": batch}, nil)
}

// deliverRamp posts the generations, as the webhook's body, to Ramp's
// OpenRouter usage endpoint with the API key as a bearer token.
func deliverRamp(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	gens := make([]WebhookPayload, 0, len(evs))
	for _, e := range evs {
		gens = append(gens, webhookPayload(e))
	}
	return post(ctx, s, d, base(d, "baseUrl"), map[string]any{"generations": gens},
		map[string]string{"Authorization": "Bearer " + d.Config.Values["apiKey"], "Idempotency-Key": batchID(evs)})
}
