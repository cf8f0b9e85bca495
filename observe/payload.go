package observe

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
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

// batchID names a batch of events: its generation id when it holds one,
// else the first's, the count of the others and a hash of all their ids.
// A batch sent again is named alike; another batch never is (a retried
// event may travel with other events than the first time).
func batchID(evs []*event) string {
	if len(evs) == 1 {
		return evs[0].Generation.ID
	}
	h := sha256.New()
	for _, e := range evs {
		h.Write([]byte(e.Generation.ID))
		h.Write([]byte{0})
	}
	return fmt.Sprintf("%s+%d-%x", evs[0].Generation.ID, len(evs)-1, h.Sum(nil)[:8])
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
