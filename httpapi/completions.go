package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"strings"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// DataPlane is what the OpenAI-compatible endpoints need: the configured
// models, the upstream client, and where traces go (nil: nowhere). Timeout
// is the longest a provider call may take (for how long a reservation
// holds); zero means two minutes.
type DataPlane struct {
	Catalog  *gatehouse.Catalog
	Upstream gatehouse.Upstream
	Traces   gatehouse.TraceSink
}

// MaxCompletionBodyBytes bounds a chat completion request; chats carry more
// than management bodies do.
const MaxCompletionBodyBytes = 10 << 20

// chatRequest is the part of a chat completion request Gatehouse reads; the
// rest passes through to the upstream untouched.
type chatRequest struct {
	Model               string          `json:"model"`
	Messages            json.RawMessage `json:"messages"`
	Stream              bool            `json:"stream"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	SessionID           *string         `json:"session_id"`
	N                   *int            `json:"n"`
}

// readChat reads and checks a chat completion request; body keeps every
// field for the upstream.
func readChat(w http.ResponseWriter, r *http.Request) (chatRequest, map[string]json.RawMessage, []byte, error) {
	var req chatRequest
	if err := checkContentType(r); err != nil {
		return req, nil, nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCompletionBodyBytes))
	if err != nil {
		return req, nil, nil, gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxCompletionBodyBytes)
	}
	if _, err := scanObject(raw, nil); err != nil {
		return req, nil, nil, err
	}
	body, err := canonicalChat(raw)
	if err != nil {
		return req, nil, nil, err
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, nil, nil, decodeError(err, reflect.TypeOf(req))
	}
	switch {
	case req.Model == "":
		return req, nil, nil, gatehouse.FieldError("model", "is required, such as openai/gpt-4o-mini (GET /api/v1/models lists them)")
	case len(bytes.TrimSpace(req.Messages)) == 0 || bytes.Equal(bytes.TrimSpace(req.Messages), []byte("null")):
		return req, nil, nil, gatehouse.FieldError("messages", "is required")
	case !bytes.HasPrefix(bytes.TrimSpace(req.Messages), []byte("[")) || bytes.Equal(bytes.Join(bytes.Fields(req.Messages), nil), []byte("[]")):
		return req, nil, nil, gatehouse.FieldError("messages", "must be a non-empty array of messages")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if f.v != nil && (*f.v < 1 || *f.v > 10_000_000) {
			return req, nil, nil, gatehouse.FieldError(f.name, "must be a positive integer")
		}
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil && *req.MaxTokens != *req.MaxCompletionTokens {
		return req, nil, nil, gatehouse.FieldError("max_completion_tokens", "is %d but max_tokens is %d: send one cap, or both equal", *req.MaxCompletionTokens, *req.MaxTokens)
	}
	if req.N != nil && *req.N != 1 {
		return req, nil, nil, gatehouse.FieldError("n", "must be 1: Gatehouse reserves and meters one completion per request")
	}
	return req, body, raw, nil
}

// chatCompletions serves POST /chat/completions: it enforces the key's
// guardrails and limits, reserves the worst-case cost, forwards the request,
// and settles the exact cost from the upstream's usage.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models; use a regular API key")
	}
	req, body, raw, err := readChat(w, r)
	if err != nil {
		return err
	}
	model, provider, ok := s.data.Catalog.Model(req.Model)
	if !ok {
		return gatehouse.FieldError("model", "unknown model %q; GET /api/v1/models lists the configured ones", req.Model)
	}
	guardrails, err := s.store.GuardrailsForKey(r.Context(), p.key)
	if err != nil {
		return err
	}
	if err := gatehouse.CheckModel(guardrails, model.Slug(), provider.ID); err != nil {
		return err
	}
	maxTokens := model.MaxCompletionTokens
	if req.MaxCompletionTokens != nil {
		maxTokens = *req.MaxCompletionTokens
	} else if req.MaxTokens != nil {
		maxTokens = *req.MaxTokens
	}
	started := time.Now()
	res := &gatehouse.Reservation{
		ID: uuid.NewString(), KeyHash: p.key.Hash, BYOK: provider.BYOK, Budgets: gatehouse.Budgets(guardrails),
		// A token is at least one byte of the request, so its length bounds the prompt.
		Amount:    model.Cost(int64(len(raw))+16, int64(maxTokens)),
		ExpiresAt: s.now().Add(providerTimeout(provider) + time.Minute),
	}
	if err := s.store.Reserve(r.Context(), res); err != nil {
		return err
	}
	gen := &gatehouse.Generation{
		ID: gatehouse.NewGenerationID(), OrganizationID: p.org(), WorkspaceID: p.key.WorkspaceID, KeyHash: p.key.Hash,
		Model: model.Slug(), Provider: provider.ID, BYOK: provider.BYOK, Streamed: req.Stream,
		SessionID: req.SessionID, ExternalUser: p.key.ExternalUser,
	}
	sw := &streamWriter{w: w}
	// A whole answer is paid for even if the client leaves before it comes:
	// the provider works (and bills) either way, so the call outlives the
	// client, bounded by the provider's timeout. A stream stops with its
	// client, and is charged what was reserved unless its usage arrived.
	callCtx := r.Context()
	if !req.Stream {
		callCtx = context.WithoutCancel(callCtx)
	}
	done, err := s.data.Upstream.Complete(callCtx, gatehouse.CompletionCall{
		Provider: provider, Model: model, Body: body, MaxTokens: maxTokens, Stream: req.Stream,
		Rewrite: func(obj map[string]json.RawMessage) {
			obj["id"], _ = json.Marshal(gen.ID)
			obj["model"], _ = json.Marshal(model.Slug())
			obj["provider"], _ = json.Marshal(provider.ID)
			normalizeAnswer(obj)
		},
	}, sw)
	if err != nil && !sw.started {
		s.release(r, res)
		return err
	}
	if !sw.started && r.Context().Err() != nil {
		s.logger.Info("client cancelled before the answer; the answer was metered",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID)
		if rec, ok := w.(*recorder); ok {
			rec.status, rec.wrote = statusClientClosed, true
		}
	} else if !sw.started {
		defer func() { _ = writeRaw(w, http.StatusOK, done.Body) }()
	}
	s.settle(r, p, res, gen, model, done, err, started, raw)
	if sw.started && done.Done {
		// Held back until now, so a client that stops at [DONE] reads its usage.
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
		sw.Flush()
	}
	return nil
}

// statusClientClosed is the status logged for a request whose client left
// before its answer (nginx's 499); it is never sent.
const statusClientClosed = 499

// normalizeAnswer makes an answer object or stream chunk parse with the
// official clients, whatever the provider's habits: a whole answer must have
// system_fingerprint (null allowed), which many providers leave out, while
// usage (and a chunk's system_fingerprint) may be absent but never null,
// which OpenAI-style providers send on every chunk but the last.
func normalizeAnswer(obj map[string]json.RawMessage) {
	whole := string(obj["object"]) == `"chat.completion"`
	if _, ok := obj["system_fingerprint"]; !ok && whole {
		obj["system_fingerprint"] = json.RawMessage("null")
	}
	if string(obj["usage"]) == "null" {
		delete(obj, "usage")
	}
	if string(obj["system_fingerprint"]) == "null" && !whole {
		delete(obj, "system_fingerprint")
	}
}

// providerTimeout is how long a call to the provider may take.
func providerTimeout(p *gatehouse.Provider) time.Duration {
	if p.Timeout > 0 {
		return p.Timeout
	}
	return 2 * time.Minute
}

// streamWriter sends a streamed answer: event-stream headers first, then
// the events, flushed one by one.
type streamWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *streamWriter) Start() {
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.Header().Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *streamWriter) Write(b []byte) (int, error) { return s.w.Write(b) }

func (s *streamWriter) Flush() { _ = http.NewResponseController(s.w).Flush() }

// settle records the generation at its exact cost, or at the reserved
// worst case when the upstream reported no usage (a stream cut short), and
// publishes the trace. It runs even when the client has gone.
func (s *Server) settle(r *http.Request, p *principal, res *gatehouse.Reservation, gen *gatehouse.Generation, model *gatehouse.Model, c gatehouse.Completion, streamErr error, started time.Time, request []byte) {
	gen.Status, gen.Cost = "completed", res.Amount
	// Negative counts would credit the key: they count as no usage.
	if c.UsageKnown && streamErr == nil && c.PromptTokens >= 0 && c.CompletionTokens >= 0 {
		gen.PromptTokens, gen.CompletionTokens = c.PromptTokens, c.CompletionTokens
		gen.Cost = model.Cost(c.PromptTokens, c.CompletionTokens)
		if gen.Cost > res.Amount {
			// The provider billed past the cap it was sent. The key holder
			// is charged what was reserved, never more; the operator learns
			// of the excess, which is the provider's to explain.
			s.metrics.anomalies.WithLabelValues(gen.Provider, "usage_over_reservation").Inc()
			s.logger.Warn("provider anomaly: reported usage costs more than was reserved; charged the reservation",
				"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID, "provider", gen.Provider, "model", gen.Model,
				"prompt_tokens", c.PromptTokens, "completion_tokens", c.CompletionTokens,
				"cost", gen.Cost.String(), "reserved", res.Amount.String())
			gen.Cost = res.Amount
		}
	} else {
		gen.Status = "partial" // no usage reported: charged the reservation
	}
	if c.UpstreamID != "" {
		id := storableText(c.UpstreamID)
		gen.UpstreamID = &id
	}
	if c.FinishReason != "" {
		reason := storableText(c.FinishReason)
		gen.FinishReason = &reason
	}
	ended := time.Now()
	gen.LatencyMS, gen.GenerationMS = ended.Sub(started).Milliseconds(), ended.Sub(started).Milliseconds()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 30*time.Second)
	defer cancel()
	if err := s.store.Settle(ctx, res.ID, gen); err != nil {
		s.logger.Error("settle failed: the request was served but not metered until its reservation expires",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID, "error", err.Error())
		return
	}
	if s.data.Traces != nil {
		var msgs struct {
			Messages json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(request, &msgs)
		s.data.Traces.Publish(&gatehouse.TraceEvent{Generation: gen, KeyName: p.key.Name, UserID: p.key.CreatorUserID,
			StartedAt: started, EndedAt: ended, Input: msgs.Messages, Output: c.Output})
	}
}

// storableText makes a provider's text storable by every engine: PostgreSQL
// refuses NUL in text, and a refused settle would leave the request unmetered.
func storableText(s string) string {
	return strings.ToValidUTF8(strings.ReplaceAll(s, "\x00", ""), "\uFFFD")
}

// release drops a reservation after a failure; the request charged nothing.
func (s *Server) release(r *http.Request, res *gatehouse.Reservation) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), 10*time.Second)
	defer cancel()
	if err := s.store.Release(ctx, res.ID); err != nil {
		s.logger.Warn("release failed; the reservation lapses by itself", "reservation_id", res.ID, "error", err.Error())
	}
}

// writeRaw writes a JSON body as is.
func writeRaw(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}
