package observe

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"strconv"
	"time"

	"gatehouse"
)

// event is a trace event as one destination sees it: without text in
// privacy mode, with the span ids shared by all its OTLP destinations.
type event struct {
	*gatehouse.TraceEvent
	privacy bool
	ids     *spanIDs
}

// view returns ev for a destination; in privacy mode the input and output
// are gone.
func view(ev *gatehouse.TraceEvent, privacy bool, ids *spanIDs) *event {
	if privacy {
		cp := *ev
		cp.Input, cp.Output = nil, ""
		ev = &cp
	}
	return &event{TraceEvent: ev, privacy: privacy, ids: ids}
}

// spanIDs are the random ids of an event's span, kept across retries so a
// receiver sees one span however often it is sent.
type spanIDs struct {
	trace, span string
}

func newSpanIDs() *spanIDs {
	b := make([]byte, 24)
	_, _ = rand.Read(b) // never fails
	return &spanIDs{trace: hex.EncodeToString(b[:16]), span: hex.EncodeToString(b[16:])}
}

// times returns when the request started and ended; without them, the
// end is when the generation was recorded and the start its latency before.
func (e *event) times() (start, end time.Time) {
	start, end = e.StartedAt, e.EndedAt
	if end.IsZero() {
		end = e.Generation.CreatedAt
	}
	if start.IsZero() {
		start = end.Add(-time.Duration(e.Generation.LatencyMS) * time.Millisecond)
	}
	return start, end
}

// timestamp renders a time as the API does: RFC 3339 UTC, milliseconds, Z.
func timestamp(t time.Time) string { return t.UTC().Format("2006-01-02T15:04:05.000Z07:00") }

// WebhookPayload is the JSON body a webhook destination receives, one per
// generation. Every key is always present; absent values are null. In
// privacy mode input and output are null and privacy_mode is true.
type WebhookPayload struct {
	Event            string          `json:"event"` // always "generation"
	ID               string          `json:"id"`    // the generation id, as the client saw it
	OrganizationID   string          `json:"organization_id"`
	WorkspaceID      string          `json:"workspace_id"`
	Model            string          `json:"model"` // slug, e.g. openai/gpt-4o-mini
	Provider         string          `json:"provider"`
	UpstreamID       *string         `json:"upstream_id"` // the provider's id of the answer
	APIKeyHash       string          `json:"api_key_hash"`
	APIKeyName       string          `json:"api_key_name"`
	UserID           *string         `json:"user_id"` // the key's creator
	ExternalUser     *string         `json:"external_user"`
	SessionID        *string         `json:"session_id"`
	PromptTokens     int64           `json:"prompt_tokens"`
	CompletionTokens int64           `json:"completion_tokens"`
	TotalTokens      int64           `json:"total_tokens"`
	TotalCost        gatehouse.Money `json:"total_cost"` // USD, an exact decimal number
	BYOK             bool            `json:"byok"`
	Streamed         bool            `json:"streamed"`
	Status           string          `json:"status"` // completed, or partial when usage was estimated
	FinishReason     *string         `json:"finish_reason"`
	LatencyMS        int64           `json:"latency_ms"`
	GenerationTimeMS int64           `json:"generation_time_ms"`
	StartedAt        string          `json:"started_at"`
	EndedAt          string          `json:"ended_at"`
	CreatedAt        string          `json:"created_at"`
	PrivacyMode      bool            `json:"privacy_mode"`
	Input            json.RawMessage `json:"input"`  // the request's messages array
	Output           *string         `json:"output"` // the completion text
}

// webhookPayload builds the body of a webhook delivery.
func webhookPayload(e *event) WebhookPayload {
	g := e.Generation
	start, end := e.times()
	p := WebhookPayload{
		Event: "generation", ID: g.ID, OrganizationID: g.OrganizationID, WorkspaceID: g.WorkspaceID,
		Model: g.Model, Provider: g.Provider, UpstreamID: g.UpstreamID,
		APIKeyHash: g.KeyHash, APIKeyName: e.KeyName, UserID: e.UserID, ExternalUser: g.ExternalUser,
		SessionID:    g.SessionID,
		PromptTokens: g.PromptTokens, CompletionTokens: g.CompletionTokens,
		TotalTokens: g.PromptTokens + g.CompletionTokens, TotalCost: g.Cost,
		BYOK: g.BYOK, Streamed: g.Streamed, Status: g.Status, FinishReason: g.FinishReason,
		LatencyMS: g.LatencyMS, GenerationTimeMS: g.GenerationMS,
		StartedAt: timestamp(start), EndedAt: timestamp(end), CreatedAt: timestamp(g.CreatedAt),
		PrivacyMode: e.privacy,
	}
	if !e.privacy {
		p.Input = inputJSON(e.Input)
		out := e.Output
		p.Output = &out
	}
	return p
}

// inputJSON returns the messages as JSON: as they are when valid, else as
// a JSON string; nil when there are none.
func inputJSON(in []byte) json.RawMessage {
	if len(in) == 0 {
		return nil
	}
	if json.Valid(in) {
		return in
	}
	s, _ := json.Marshal(string(in))
	return s
}

// OTLP/HTTP JSON: the protobuf JSON mapping of ExportTraceServiceRequest.
// 64-bit integers are strings, enums integers, ids lowercase hex.
type (
	otlpRequest struct {
		ResourceSpans []otlpResourceSpans `json:"resourceSpans"`
	}
	otlpResourceSpans struct {
		Resource   otlpResource     `json:"resource"`
		ScopeSpans []otlpScopeSpans `json:"scopeSpans"`
	}
	otlpResource struct {
		Attributes []otlpKeyValue `json:"attributes"`
	}
	otlpScopeSpans struct {
		Scope otlpScope  `json:"scope"`
		Spans []otlpSpan `json:"spans"`
	}
	otlpScope struct {
		Name string `json:"name"`
	}
	otlpSpan struct {
		TraceID           string         `json:"traceId"`
		SpanID            string         `json:"spanId"`
		Name              string         `json:"name"`
		Kind              int            `json:"kind"`
		StartTimeUnixNano string         `json:"startTimeUnixNano"`
		EndTimeUnixNano   string         `json:"endTimeUnixNano"`
		Attributes        []otlpKeyValue `json:"attributes"`
	}
	otlpKeyValue struct {
		Key   string       `json:"key"`
		Value otlpAnyValue `json:"value"`
	}
	otlpAnyValue struct {
		StringValue *string         `json:"stringValue,omitempty"`
		BoolValue   *bool           `json:"boolValue,omitempty"`
		IntValue    *string         `json:"intValue,omitempty"`
		DoubleValue *float64        `json:"doubleValue,omitempty"`
		ArrayValue  *otlpArrayValue `json:"arrayValue,omitempty"`
	}
	otlpArrayValue struct {
		Values []otlpAnyValue `json:"values"`
	}
)

// spanKindClient is SPAN_KIND_CLIENT.
const spanKindClient = 3

func strAttr(k, v string) otlpKeyValue { return otlpKeyValue{k, otlpAnyValue{StringValue: &v}} }
func boolAttr(k string, v bool) otlpKeyValue {
	return otlpKeyValue{k, otlpAnyValue{BoolValue: &v}}
}
func intAttr(k string, v int64) otlpKeyValue {
	s := strconv.FormatInt(v, 10)
	return otlpKeyValue{k, otlpAnyValue{IntValue: &s}}
}
func doubleAttr(k string, v float64) otlpKeyValue {
	return otlpKeyValue{k, otlpAnyValue{DoubleValue: &v}}
}
func strsAttr(k string, vs ...string) otlpKeyValue {
	arr := &otlpArrayValue{Values: []otlpAnyValue{}}
	for _, v := range vs {
		arr.Values = append(arr.Values, otlpAnyValue{StringValue: &v})
	}
	return otlpKeyValue{k, otlpAnyValue{ArrayValue: arr}}
}

// genAIAttributes are the span's attributes per the OpenTelemetry GenAI
// semantic conventions, plus gatehouse.*; the prompt (the messages as JSON)
// and the completion are the gen_ai.prompt and gen_ai.completion
// attributes, left out in privacy mode.
func genAIAttributes(e *event) []otlpKeyValue {
	g := e.Generation
	a := []otlpKeyValue{
		strAttr("gen_ai.operation.name", "chat"),
		strAttr("gen_ai.system", g.Provider),
		strAttr("gen_ai.provider.name", g.Provider),
		strAttr("gen_ai.request.model", g.Model),
		strAttr("gen_ai.response.model", g.Model),
		strAttr("gen_ai.response.id", g.ID),
		intAttr("gen_ai.usage.input_tokens", g.PromptTokens),
		intAttr("gen_ai.usage.output_tokens", g.CompletionTokens),
		doubleAttr("gatehouse.cost_usd", usd(g.Cost)),
		strAttr("gatehouse.key_hash", g.KeyHash),
		strAttr("gatehouse.key_name", e.KeyName),
		strAttr("gatehouse.organization_id", g.OrganizationID),
		strAttr("gatehouse.workspace_id", g.WorkspaceID),
		strAttr("gatehouse.status", g.Status),
		boolAttr("gatehouse.byok", g.BYOK),
		boolAttr("gatehouse.streamed", g.Streamed),
	}
	if g.FinishReason != nil {
		a = append(a, strsAttr("gen_ai.response.finish_reasons", *g.FinishReason))
	}
	if g.SessionID != nil && *g.SessionID != "" {
		a = append(a, strAttr("gen_ai.conversation.id", *g.SessionID), strAttr("session.id", *g.SessionID))
	}
	if e.UserID != nil {
		a = append(a, strAttr("user.id", *e.UserID))
	}
	if g.ExternalUser != nil {
		a = append(a, strAttr("gatehouse.external_user", *g.ExternalUser))
	}
	if g.UpstreamID != nil {
		a = append(a, strAttr("gatehouse.upstream_id", *g.UpstreamID))
	}
	if !e.privacy {
		if len(e.Input) > 0 {
			a = append(a, strAttr("gen_ai.prompt", string(e.Input)))
		}
		a = append(a, strAttr("gen_ai.completion", e.Output))
	}
	return a
}

// langfuseAttributes are Langfuse's own attributes for a generation.
func langfuseAttributes(e *event) []otlpKeyValue {
	g := e.Generation
	usage, _ := json.Marshal(map[string]int64{"input": g.PromptTokens, "output": g.CompletionTokens,
		"total": g.PromptTokens + g.CompletionTokens})
	cost, _ := json.Marshal(map[string]gatehouse.Money{"total": g.Cost})
	a := []otlpKeyValue{
		strAttr("langfuse.observation.type", "generation"),
		strAttr("langfuse.observation.model.name", g.Model),
		strAttr("langfuse.observation.usage_details", string(usage)),
		strAttr("langfuse.observation.cost_details", string(cost)),
		strAttr("langfuse.trace.name", "chat "+g.Model),
	}
	if g.SessionID != nil && *g.SessionID != "" {
		a = append(a, strAttr("langfuse.session.id", *g.SessionID))
	}
	if e.UserID != nil {
		a = append(a, strAttr("langfuse.user.id", *e.UserID))
	}
	if !e.privacy {
		if len(e.Input) > 0 {
			a = append(a, strAttr("langfuse.observation.input", string(e.Input)))
		}
		a = append(a, strAttr("langfuse.observation.output", e.Output))
	}
	return a
}

// otlpPayload builds the OTLP request of one span named "chat <model>".
func otlpPayload(e *event, extra []otlpKeyValue) otlpRequest {
	start, end := e.times()
	sp := otlpSpan{
		TraceID: e.ids.trace, SpanID: e.ids.span, Name: "chat " + e.Generation.Model, Kind: spanKindClient,
		StartTimeUnixNano: strconv.FormatInt(start.UnixNano(), 10),
		EndTimeUnixNano:   strconv.FormatInt(end.UnixNano(), 10),
		Attributes:        append(genAIAttributes(e), extra...),
	}
	return otlpRequest{ResourceSpans: []otlpResourceSpans{{
		Resource:   otlpResource{Attributes: []otlpKeyValue{strAttr("service.name", "gatehouse")}},
		ScopeSpans: []otlpScopeSpans{{Scope: otlpScope{Name: "gatehouse"}, Spans: []otlpSpan{sp}}},
	}}}
}
