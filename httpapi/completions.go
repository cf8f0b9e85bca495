package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"reflect"
	"time"

	"gatehouse"
)

// DataPlane is what the OpenAI-compatible endpoints need: the configured
// models, the upstream client, and where traces go (nil: nowhere).
type DataPlane struct {
	Catalog  *gatehouse.Catalog
	Upstream gatehouse.Upstream
	Traces   gatehouse.TraceSink
	// Ledger writes metering behind the request path, and Accounts admits
	// in memory (a database this process alone serves); nil: every
	// reservation and settle is written before the request goes on.
	Ledger   gatehouse.Ledger
	Accounts *gatehouse.Accountant
	// Leases admit in memory against slices of limits that a database
	// shared by several instances granted this one.
	Leases *gatehouse.Leases
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
	User                *string         `json:"user"`
	// Preset names a preset to apply (see presetapply.go); Provider holds
	// provider preferences, which Gatehouse enforces. Neither is forwarded.
	Preset   *string                        `json:"preset"`
	Provider json.RawMessage                `json:"provider"`
	prefs    *gatehouse.ProviderPreferences // Provider, read
}

// readChat reads and checks a chat completion request; body keeps every
// field for the upstream.
func readChat(w http.ResponseWriter, r *http.Request) (chatRequest, map[string]json.RawMessage, []byte, error) {
	if err := checkContentType(r); err != nil {
		return chatRequest{}, nil, nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCompletionBodyBytes))
	if err != nil {
		return chatRequest{}, nil, nil, gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxCompletionBodyBytes)
	}
	req, body, err := parseChat(raw)
	return req, body, raw, err
}

// parseChat checks the bytes of a chat completion request: the client's,
// or those of a request a preset was applied to.
func parseChat(raw []byte) (chatRequest, map[string]json.RawMessage, error) {
	var req chatRequest
	if _, err := scanObject(raw, nil); err != nil {
		return req, nil, err
	}
	body, err := canonicalChat(raw)
	if err != nil {
		return req, nil, err
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, nil, decodeError(err, reflect.TypeOf(req))
	}
	switch {
	case req.Model == "" && req.Preset == nil:
		return req, nil, gatehouse.FieldError("model", "is required, such as openai/gpt-4o-mini (GET /api/v1/models lists them)")
	case len(bytes.TrimSpace(req.Messages)) == 0 || bytes.Equal(bytes.TrimSpace(req.Messages), []byte("null")):
		return req, nil, gatehouse.FieldError("messages", "is required")
	case !bytes.HasPrefix(bytes.TrimSpace(req.Messages), []byte("[")) || bytes.Equal(bytes.Join(bytes.Fields(req.Messages), nil), []byte("[]")):
		return req, nil, gatehouse.FieldError("messages", "must be a non-empty array of messages")
	}
	for _, f := range []struct {
		name string
		v    *int
	}{{"max_tokens", req.MaxTokens}, {"max_completion_tokens", req.MaxCompletionTokens}} {
		if f.v != nil && (*f.v < 1 || *f.v > 10_000_000) {
			return req, nil, gatehouse.FieldError(f.name, "must be a positive integer")
		}
	}
	if req.MaxTokens != nil && req.MaxCompletionTokens != nil && *req.MaxTokens != *req.MaxCompletionTokens {
		return req, nil, gatehouse.FieldError("max_completion_tokens", "is %d but max_tokens is %d: send one cap, or both equal", *req.MaxCompletionTokens, *req.MaxTokens)
	}
	if req.N != nil && *req.N != 1 {
		return req, nil, gatehouse.FieldError("n", "must be 1: Gatehouse reserves and meters one completion per request")
	}
	if req.prefs, err = readProvider(req.Provider); err != nil {
		return req, nil, err
	}
	return req, body, nil
}

// chatCompletions serves POST /chat/completions: the meter enforces the
// key's guardrails and limits and reserves the worst-case cost, the request
// goes to the provider, and the meter settles the exact cost from its usage.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models; use a regular API key")
	}
	req, body, raw, err := readChat(w, r)
	if err != nil {
		return err
	}
	req, body, raw, preset, err := s.usePreset(r.Context(), p.key, req, body, raw)
	if err != nil {
		return err
	}
	model, provider, err := s.chatModel(req, body)
	if err != nil {
		return preset.explain(err)
	}
	capTokens := req.MaxCompletionTokens // readChat made sure both caps agree
	if capTokens == nil {
		capTokens = req.MaxTokens
	}
	attribution, err := chatAttribution(r, req.User)
	if err != nil {
		return err
	}
	m, err := s.meter.Reserve(r.Context(), gatehouse.MeteredCall{Key: p.key, Model: model, Provider: provider,
		Request: raw, MaxTokens: capTokens, Stream: req.Stream, SessionID: req.SessionID,
		Messages: req.Messages, Attribution: attribution})
	if err != nil {
		return err
	}
	gen := m.Generation
	fp := &fingerprints{own: fingerprint(provider, model)}
	sw := &streamWriter{w: w, held: func() error { return m.Held(r.Context()) }}
	// A whole answer is paid for even if the client leaves before it comes:
	// the provider works (and bills) either way, so the call outlives the
	// client, bounded by the provider's timeout. A stream stops with its
	// client, and is charged what was reserved unless its usage arrived.
	callCtx := r.Context()
	if !req.Stream {
		callCtx = context.WithoutCancel(callCtx)
	}
	done, err := s.complete(callCtx, m, gatehouse.CompletionCall{
		Provider: provider, Model: model, Body: body, MaxTokens: m.MaxTokens, Stream: req.Stream,
		Rewrite: func(obj map[string]json.RawMessage) {
			obj["id"], _ = json.Marshal(gen.ID)
			obj["model"], _ = json.Marshal(model.Slug())
			obj["provider"], _ = json.Marshal(provider.ID)
			normalizeAnswer(obj)
			fp.stamp(obj)
		},
	}, sw)
	if err == nil && !sw.started {
		// An answer reaches its client only once its reservation is
		// durable: a crash after that cannot lose its charge.
		heldCtx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), heldTimeout)
		err = m.Held(heldCtx)
		cancel()
	}
	if sw.heldErr != nil {
		err = sw.heldErr
	}
	if err != nil && !sw.started {
		if rerr := s.meter.Release(r.Context(), m); rerr != nil {
			s.logger.Warn("release failed; the reservation stays open and is charged what it reserved when it expires", "reservation_id", m.Reservation.ID, "error", rerr.Error())
		}
		return err
	}
	gone := !sw.started && r.Context().Err() != nil
	if gone {
		s.logger.Info("client cancelled before the answer; the answer was metered",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID)
		if rec, ok := w.(*recorder); ok {
			rec.status, rec.wrote = statusClientClosed, true
		}
	}
	return s.settleAndSend(w, r, m, model, done, err, sw, fp, gone)
}

// settleAndSend meters a call that was answered (callErr: a stream that
// broke off) and sends what remains of its answer with the cost as
// metered: the whole answer, or a stream's usage chunk (the provider's,
// held back until now, or one of Gatehouse's) and [DONE]. Nothing is sent
// to a client that left before a whole answer.
func (s *Server) settleAndSend(w http.ResponseWriter, r *http.Request, m *gatehouse.Metering, model *gatehouse.Model,
	done gatehouse.Completion, callErr error, sw *streamWriter, fp *fingerprints, gone bool) error {
	gen := m.Generation
	settleErr := s.meter.Settle(r.Context(), m, done, callErr)
	if settleErr != nil && m.Reservation.Unheld {
		return settleErr // its charge is not recorded: the answer is not delivered
	}
	charged := *gen // as settled: tokens and cost
	if settleErr != nil {
		s.logger.Error("settle failed: the request was served, and is charged what it reserved when its reservation expires",
			"request_id", gatehouse.RequestIDFrom(r.Context()), "generation_id", gen.ID, "error", settleErr.Error())
		charged.Cost = m.Reservation.Amount
	}
	final := done.Final
	switch {
	case gone:
		return nil
	case !sw.started:
		if final == nil {
			final = map[string]json.RawMessage{} // never: a whole answer is read whole
		}
		withCost(final, &charged, model)
		body, _ := json.Marshal(final)
		return writeRaw(w, http.StatusOK, body)
	}
	if final == nil {
		final = lastChunk(gen, fp, s.now())
	}
	withCost(final, &charged, model)
	if b, err := json.Marshal(final); err == nil {
		_, _ = io.WriteString(w, "data: "+string(b)+"\n\n")
	}
	if done.Done {
		// Held back until now, so a client that stops at [DONE] reads its usage.
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}
	sw.Flush()
	return nil
}

// complete makes the call: with the provider's own key, or with the
// workspace's BYOK keys that the metering chose (see withKeys).
func (s *Server) complete(ctx context.Context, m *gatehouse.Metering, call gatehouse.CompletionCall, sw *streamWriter) (gatehouse.Completion, error) {
	return s.withKeys(ctx, m, call.Provider, func(ctx context.Context, key gatehouse.Secret) (gatehouse.Completion, error) {
		call.APIKey = key
		return s.data.Upstream.Complete(ctx, call, sw)
	}, func() bool { return sw.started })
}

// withKeys makes a call with the provider's own key (key ""), or with the
// workspace's BYOK keys that the metering chose, one after the other while
// the provider refuses the key it was sent (and nothing has reached the
// client: started), all within the provider's timeout.
func (s *Server) withKeys(ctx context.Context, m *gatehouse.Metering, provider *gatehouse.Provider,
	call func(context.Context, gatehouse.Secret) (gatehouse.Completion, error), started func() bool) (gatehouse.Completion, error) {
	if len(m.BYOKKeys) == 0 {
		return call(ctx, "")
	}
	ctx, cancel := context.WithTimeout(ctx, provider.CallTimeout())
	defer cancel()
	for i := 0; ; i++ {
		done, err := call(ctx, m.BYOKKeys[i].Key)
		if i+1 == len(m.BYOKKeys) || started() || !gatehouse.BYOKKeyRefused(err) {
			return done, err
		}
		s.logger.Info("the provider refused a BYOK key; trying the workspace's next one",
			"request_id", gatehouse.RequestIDFrom(ctx), "generation_id", m.Generation.ID, "provider", provider.ID,
			"byok_key_id", m.BYOKKeys[i].ID, "error", err.Error())
	}
}

// settled waits (briefly) until the settles written behind the request
// path are in the database, so that a read of usage or of the ledger
// counts every call answered before it. If the database is too slow, the
// read goes ahead and shows what it has.
func (s *Server) settled(ctx context.Context) {
	_ = s.meter.Sync(ctx) // bounded by the ledger; immediate when nothing is pending
}

// heldTimeout bounds the wait for a reservation admitted in memory to be
// written before its answer is delivered.
const heldTimeout = 10 * time.Second

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

// streamWriter sends a streamed answer: event-stream headers first, then
// the events, flushed one by one.
type streamWriter struct {
	w       http.ResponseWriter
	started bool
	// held waits until the reservation is durable: the first event goes
	// out only then. heldErr is why it is not; the stream is not sent.
	held    func() error
	heldErr error
}

func (s *streamWriter) Start() {
	if s.heldErr = s.held(); s.heldErr != nil {
		return
	}
	s.w.Header().Set("Content-Type", "text/event-stream")
	s.w.Header().Set("Cache-Control", "no-cache")
	s.w.Header().Set("X-Accel-Buffering", "no")
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *streamWriter) Write(b []byte) (int, error) {
	if s.heldErr != nil {
		return 0, s.heldErr
	}
	return s.w.Write(b)
}

func (s *streamWriter) Flush() { _ = http.NewResponseController(s.w).Flush() }

// providerAnomaly counts and logs a provider's answer that was not
// charged in full: the key holder paid the reservation, the provider has
// the excess to explain.
func (s *Server) providerAnomaly(ctx context.Context, a gatehouse.Anomaly) {
	g := a.Generation
	s.metrics.anomalies.WithLabelValues(g.Provider, a.Kind).Inc()
	s.logger.Warn("provider anomaly: reported usage costs more than was reserved; charged the reservation",
		"request_id", gatehouse.RequestIDFrom(ctx), "generation_id", g.ID, "provider", g.Provider, "model", g.Model,
		"prompt_tokens", a.PromptTokens, "completion_tokens", a.CompletionTokens,
		"cost", a.Cost.String(), "reserved", a.Reserved.String())
}

// writeRaw writes a JSON body as is.
func writeRaw(w http.ResponseWriter, status int, body []byte) error {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, err := w.Write(body)
	return err
}
