package httpapi

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/meter"
	"gatehouse/provider"
)

// DataPlane is what the OpenAI-compatible endpoints need: the configured
// models, the router among their endpoints (nil: one of the catalog's own),
// the upstream client, and where traces go (nil: nowhere).
type DataPlane struct {
	Catalog  *provider.Catalog
	Router   *provider.Router
	Upstream provider.Upstream
	Traces   gatehouse.TraceSink
	// Ledger writes metering behind the request path, and Accounts admits
	// in memory (a database this process alone serves); nil: every
	// reservation and settle is written before the request goes on.
	Ledger   meter.Ledger
	Accounts *meter.Accountant
	// Leases admit in memory against slices of limits that a database
	// shared by several instances granted this one.
	Leases *meter.Leases
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
	Preset   *string                       `json:"preset"`
	Provider json.RawMessage               `json:"provider"`
	prefs    *provider.ProviderPreferences // Provider, read
	// Usage asks for usage accounting (see readUsageAccounting); never
	// forwarded.
	Usage json.RawMessage `json:"usage"`
	// Models are the models to fall back to (OpenRouter's models), and
	// Route its older switch for them ("fallback"); neither is forwarded.
	Models []string `json:"models"`
	Route  *string  `json:"route"`
	// caching says a message part asks for prompt caching (cache_control).
	caching bool
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
	ms, err := readObject(raw)
	if err != nil {
		return req, nil, err
	}
	body, caching, err := canonicalChat(ms)
	if err != nil {
		return req, nil, err
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, nil, decodeError(err, reflect.TypeOf(req))
	}
	req.caching = caching
	switch {
	case req.Model == "" && req.Preset == nil && len(req.Models) == 0:
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
	if err := readUsageAccounting(req.Usage); err != nil {
		return req, nil, err
	}
	if err := checkModels(req.Models, req.Route); err != nil {
		return req, nil, err
	}
	if req.prefs, err = readProvider(req.Provider); err != nil {
		return req, nil, err
	}
	return req, body, nil
}

// MaxFallbackModels bounds the models a request may fall back to.
const MaxFallbackModels = 10

// checkModels checks a request's fallback models (models) and route.
func checkModels(models []string, route *string) error {
	if len(models) > MaxFallbackModels {
		return gatehouse.FieldError("models", "must have at most %d models", MaxFallbackModels)
	}
	for i, m := range models {
		if m == "" || len(m) > gatehouse.MaxModelSlugLength {
			return gatehouse.FieldError(fmt.Sprintf("models[%d]", i), "must be a model's slug of 1 to %d characters", gatehouse.MaxModelSlugLength)
		}
	}
	if route != nil && *route != "fallback" {
		return gatehouse.FieldError("route", "must be fallback (the models are tried in order), or left out")
	}
	return nil
}

// usageAccounting is OpenRouter's usage accounting option of a model
// call, {"include": true}: the answer's usage with its cost, which
// Gatehouse's answers always carry (whole answers, and a stream's last
// chunk), as OpenRouter's now do. It is read, never forwarded.
type usageAccounting struct {
	Include *bool `json:"include"`
}

// readUsageAccounting checks a model call's usage option, strictly (an
// object of usageAccounting's fields, no unknown or duplicate key).
func readUsageAccounting(raw json.RawMessage) error {
	v := bytes.TrimSpace(raw)
	if len(v) == 0 || string(v) == "null" {
		return nil
	}
	if v[0] != '{' {
		return gatehouse.FieldError("usage", "must be an object, such as {\"include\": true}")
	}
	t := reflect.TypeFor[usageAccounting]()
	if _, err := scanObject(v, t); err != nil {
		return underField("usage", err)
	}
	dec := json.NewDecoder(bytes.NewReader(v))
	dec.DisallowUnknownFields()
	var u usageAccounting
	if err := dec.Decode(&u); err != nil {
		return underField("usage", decodeError(err, t))
	}
	return nil
}

// chatCompletions serves POST /chat/completions: the meter enforces the
// key's guardrails and limits and reserves the worst-case cost, the request
// goes to the provider, and the meter settles the exact cost from its usage
// (see serveModel).
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models; use a regular API key")
	}
	req, body, raw, err := readChat(w, r)
	if err != nil {
		return err
	}
	return s.completeChat(w, r, p, req, body, raw, func(e provider.Endpoint) chatAnswer {
		form := &chatForm{fp: &fingerprints{own: fingerprint(e.Provider, e.Model)}, model: e.Model, now: s.now}
		return chatAnswer{form: form, rewrite: func(gen *gatehouse.Generation, obj map[string]json.RawMessage) {
			obj["id"], _ = json.Marshal(gen.ID)
			obj["model"], _ = json.Marshal(e.Model.Slug())
			obj["provider"], _ = json.Marshal(e.Provider.ID)
			normalizeAnswer(obj)
			form.fp.stamp(obj)
		}}
	})
}

// chatAnswer is how the answer of a chat completion made at one endpoint
// reaches its client: its form, what each answer object or chunk is
// rewritten to, and, for an API that tells the answer in another shape
// (the Messages API), the translation a stream is written through (nil:
// none) and, since that ends its stream its own way, no [DONE].
type chatAnswer struct {
	form      answerForm
	rewrite   func(gen *gatehouse.Generation, obj map[string]json.RawMessage)
	translate func(sw *streamWriter, gen *gatehouse.Generation) provider.StreamWriter
}

// completeChat serves a chat completion request, read and checked: the
// preset it names applied, then metered and made (see serveModel), its
// answer told as answer says for the endpoint that serves it.
func (s *Server) completeChat(w http.ResponseWriter, r *http.Request, p *principal, req chatRequest,
	body map[string]json.RawMessage, raw []byte, answer func(provider.Endpoint) chatAnswer) error {
	req, body, raw, ps, err := s.usePreset(r.Context(), p.key, req, body, raw)
	if err != nil {
		return err
	}
	capTokens := req.MaxCompletionTokens // readChat made sure both caps agree
	if capTokens == nil {
		capTokens = req.MaxTokens
	}
	attribution, err := chatAttribution(r, req.User)
	if err != nil {
		return err
	}
	route := provider.Request{API: provider.Chat, Model: req.Model, Models: req.Models, Preferences: req.prefs,
		Parameters: slices.Collect(maps.Keys(body)), Conversation: conversation(p.key, req.SessionID, firstMessages(req.Messages)),
		CacheControl: req.caching}
	for _, k := range notForwarded {
		delete(body, k)
	}
	return s.serveModel(w, r, modelCall{
		metered: meter.MeteredCall{Key: p.key, Request: raw, MaxTokens: capTokens, Stream: req.Stream,
			SessionID: req.SessionID, Messages: req.Messages, Attribution: attribution, CacheControl: req.caching},
		route: route, explain: ps.explain,
		attempt: func(e provider.Endpoint) (attempt, error) {
			if err := meter.CheckReasoningBudget(body["reasoning"], e.Model.CompletionCap(capTokens)); err != nil {
				return attempt{}, err
			}
			a := answer(e)
			return attempt{form: a.form, send: func(ctx context.Context, m *meter.Metering, sw *streamWriter) (provider.Completion, error) {
				gen := m.Generation
				var out provider.StreamWriter = sw
				if a.translate != nil {
					out = a.translate(sw, gen)
				}
				done, err := s.forward(ctx, m, provider.CompletionCall{
					Provider: e.Provider, Model: e.Model, Body: body, MaxTokens: m.MaxTokens, Stream: req.Stream,
					Rewrite: func(obj map[string]json.RawMessage) { a.rewrite(gen, obj) },
				}, sw, out, s.data.Upstream.Complete)
				if a.translate != nil {
					done.Done = false
				}
				return done, err
			}}, nil
		},
	})
}

// notForwarded are the fields of a model call that Gatehouse reads and
// never forwards: its routing (provider, models, route), its preset and
// its usage option.
var notForwarded = []string{"provider", "preset", "usage", "models", "route"}

// conversation names the conversation a call continues, for sticky
// routing: the key's session (session_id), else the key and the call's
// first messages (a conversation's calls all begin with them), hashed.
func conversation(key *gatehouse.Key, session *string, first []byte) string {
	h := sha256.New()
	h.Write([]byte(key.Hash))
	if session != nil {
		h.Write([]byte("\x00session\x00" + *session))
	} else {
		h.Write([]byte("\x00messages\x00"))
		h.Write(first)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// firstMessages returns the first two messages of a list (a system
// prompt and the first turn), as sent.
func firstMessages(messages json.RawMessage) []byte {
	list, _ := jsonobj.Elements(messages)
	var out []byte
	for i := 0; i < len(list) && i < 2; i++ {
		out = append(out, list[i]...)
	}
	return out
}

// chatForm is the form of a chat answer: usage in the Chat Completions
// shape, and a stream of data-only chunks, every one with a
// system_fingerprint.
type chatForm struct {
	fp    *fingerprints
	model *provider.Model
	now   func() time.Time
}

func (f *chatForm) withCost(answer map[string]json.RawMessage, g *gatehouse.Generation) {
	withCost(answer, g, f.model)
}

// lastEvent is the provider's usage chunk, or when it sent none a chunk of
// Gatehouse's (no choices, just the usage), with the cost.
func (f *chatForm) lastEvent(final map[string]json.RawMessage, g *gatehouse.Generation, _ error) string {
	if final == nil {
		final = lastChunk(g, f.fp, f.now())
	}
	withCost(final, g, f.model)
	return "data: " + string(jsonobj.Marshal(final)) + "\n\n"
}

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
