package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"gatehouse/meter"
	"gatehouse/provider"
	"io"
	"maps"
	"net/http"
	"reflect"
	"slices"

	"gatehouse"
)

// embeddingFields are the fields of an embeddings request Gatehouse reads
// and forwards (but provider, models and route, which it reads and
// removes). Anything else is refused, as for chat completions: a field
// Gatehouse does not read could be one the provider bills for.
var embeddingFields = map[string]bool{
	"model": true, "input": true, "dimensions": true, "encoding_format": true,
	"input_type": true, "user": true, "session_id": true, "provider": true, "models": true, "route": true,
}

// refusedEmbeddingFields are fields of chat completions or of OpenRouter's
// embeddings that an embeddings request here cannot have; the reason says
// why.
var refusedEmbeddingFields = map[string]string{
	"preset":   "presets apply to chat completions and the Responses API only",
	"messages": "embeddings take input, not messages",
}

// foldedEmbeddingFields maps folded names to the exact names of known
// embeddings fields.
var foldedEmbeddingFields = func() map[string]string {
	m := map[string]string{}
	for name := range embeddingFields {
		m[foldKey(name)] = name
	}
	for name := range refusedEmbeddingFields {
		m[foldKey(name)] = name
	}
	return m
}()

// MaxEmbeddingInputs bounds the inputs of one embeddings request, as
// OpenAI does.
const MaxEmbeddingInputs = 2048

// embeddingRequest is the part of an embeddings request Gatehouse reads.
type embeddingRequest struct {
	Model          string          `json:"model"`
	Input          json.RawMessage `json:"input"`
	Dimensions     *int            `json:"dimensions"`
	EncodingFormat *string         `json:"encoding_format"`
	InputType      *string         `json:"input_type"`
	User           *string         `json:"user"`
	SessionID      *string         `json:"session_id"`
	Provider       json.RawMessage `json:"provider"`
	Models         []string        `json:"models"`
	Route          *string         `json:"route"`
	prefs          *provider.ProviderPreferences
	// texts are the inputs that are text, for the content kept of the call.
	texts []string
}

// readEmbeddings reads and checks an embeddings request: the typed fields,
// and the body re-encoded as the provider will see it.
func readEmbeddings(w http.ResponseWriter, r *http.Request) (embeddingRequest, map[string]json.RawMessage, []byte, error) {
	var req embeddingRequest
	if err := checkContentType(r); err != nil {
		return req, nil, nil, err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCompletionBodyBytes))
	if err != nil {
		return req, nil, nil, gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxCompletionBodyBytes)
	}
	ms, err := readObject(raw)
	if err != nil {
		return req, nil, nil, err
	}
	if err := checkKeysOf(keysOf(ms), embeddingFields, foldedEmbeddingFields, refusedEmbeddingFields, ""); err != nil {
		return req, nil, nil, err
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, nil, nil, decodeError(err, reflect.TypeOf(req))
	}
	if err := req.check(); err != nil {
		return req, nil, nil, err
	}
	return req, canonical(ms), raw, nil
}

// check validates the fields an embeddings request may not leave to the
// provider: the model, the input's shape, the options' values.
func (req *embeddingRequest) check() error {
	var err error
	switch {
	case req.Model == "" && len(req.Models) == 0:
		return gatehouse.FieldError("model", "is required, such as openai/text-embedding-3-small (GET /api/v1/embeddings/models lists them)")
	case req.Dimensions != nil && (*req.Dimensions < 1 || *req.Dimensions > 100_000):
		return gatehouse.FieldError("dimensions", "must be a positive integer")
	case req.EncodingFormat != nil && *req.EncodingFormat != "float" && *req.EncodingFormat != "base64":
		return gatehouse.FieldError("encoding_format", "must be float or base64")
	case req.InputType != nil && (*req.InputType == "" || len(*req.InputType) > 64):
		return gatehouse.FieldError("input_type", "must be a non-empty string of at most 64 bytes")
	case req.SessionID != nil && (*req.SessionID == "" || len(*req.SessionID) > 256):
		return gatehouse.FieldError("session_id", "must be a non-empty string of at most 256 bytes")
	}
	if req.texts, err = embeddingInputs(req.Input); err != nil {
		return err
	}
	if err := checkModels(req.Models, req.Route); err != nil {
		return err
	}
	req.prefs, err = readProvider(req.Provider)
	return err
}

// embeddingInputs checks the input of an embeddings request and returns
// its texts: a string, or a non-empty array of strings, of token ids, of
// arrays of token ids, or of {"content": [text parts]} objects. Images,
// audio, video and files are refused: their cost is not bounded by the
// request's length, and the providers file has no way to price them.
func embeddingInputs(raw json.RawMessage) ([]string, error) {
	v := bytes.TrimSpace(raw)
	if len(v) == 0 || string(v) == "null" {
		return nil, gatehouse.FieldError("input", "is required: a string or an array of strings")
	}
	var s string
	if v[0] == '"' {
		if err := json.Unmarshal(v, &s); err != nil || s == "" {
			return nil, gatehouse.FieldError("input", "must be a non-empty string")
		}
		return []string{s}, nil
	}
	var items []json.RawMessage
	if v[0] != '[' || json.Unmarshal(v, &items) != nil {
		return nil, gatehouse.FieldError("input", "must be a string or an array of strings, of token ids or of arrays of token ids")
	}
	if len(items) == 0 || len(items) > MaxEmbeddingInputs {
		return nil, gatehouse.FieldError("input", "must have 1 to %d items", MaxEmbeddingInputs)
	}
	var texts []string
	kind := inputKind(items[0])
	for i, item := range items {
		at := fmt.Sprintf("input[%d]", i)
		if inputKind(item) != kind {
			return nil, gatehouse.FieldError(at, "must be of the same kind as input[0]: all strings, all token ids, all arrays of token ids or all content objects")
		}
		text, err := checkEmbeddingItem(item, kind, at)
		if err != nil {
			return nil, err
		}
		texts = append(texts, text...)
	}
	return texts, nil
}

// inputKind names the kind of one item of an input array by its first
// byte: '"' a string, '[' an array of token ids, '{' a content object,
// else a token id (or an error found by checkEmbeddingItem).
func inputKind(item json.RawMessage) byte {
	v := bytes.TrimSpace(item)
	if len(v) == 0 {
		return 0
	}
	switch v[0] {
	case '"', '[', '{':
		return v[0]
	}
	return '0'
}

// checkEmbeddingItem checks one item of an input array and returns its
// texts.
func checkEmbeddingItem(item json.RawMessage, kind byte, at string) ([]string, error) {
	switch kind {
	case '"':
		var s string
		if err := json.Unmarshal(item, &s); err != nil || s == "" {
			return nil, gatehouse.FieldError(at, "must be a non-empty string")
		}
		return []string{s}, nil
	case '[':
		var tokens []uint32
		if err := json.Unmarshal(item, &tokens); err != nil || len(tokens) == 0 {
			return nil, gatehouse.FieldError(at, "must be a non-empty array of token ids (integers from 0)")
		}
		return nil, nil
	case '{':
		return contentInput(item, at)
	}
	var token uint32
	if err := json.Unmarshal(item, &token); err != nil {
		return nil, gatehouse.FieldError(at, "must be a token id (an integer from 0)")
	}
	return nil, nil
}

// contentInput checks an {"content": [text parts]} input and returns its
// texts.
func contentInput(item json.RawMessage, at string) ([]string, error) {
	keys, err := objectKeys(item)
	if err != nil {
		return nil, gatehouse.FieldError(at, "must be an object")
	}
	if err := checkKeysOf(keys, map[string]bool{"content": true}, nil, nil, at+"."); err != nil {
		return nil, err
	}
	var obj struct {
		Content []struct {
			Text string `json:"text"`
		} `json:"content"`
	}
	if json.Unmarshal(item, &obj) != nil || len(obj.Content) == 0 {
		return nil, gatehouse.FieldError(at+".content", "must be a non-empty array of text content parts")
	}
	var raw struct {
		Content json.RawMessage `json:"content"`
	}
	_ = json.Unmarshal(item, &raw)
	if _, err := checkContentParts(raw.Content, at+".content", textPartFields); err != nil {
		return nil, err
	}
	texts := make([]string, 0, len(obj.Content))
	for _, p := range obj.Content {
		texts = append(texts, p.Text)
	}
	return texts, nil
}

// createEmbeddings serves POST /embeddings, metered and routed like a chat
// completion (see serveModel): the worst case reserved is a prompt of as
// many tokens as the request has bytes, and no completion; the exact cost
// is settled from the usage's prompt_tokens.
func (s *Server) createEmbeddings(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models; use a regular API key")
	}
	req, body, raw, err := readEmbeddings(w, r)
	if err != nil {
		return err
	}
	attribution, err := chatAttribution(r, req.User)
	if err != nil {
		return err
	}
	route := provider.Request{API: provider.Embeddings, Model: req.Model, Models: req.Models, Preferences: req.prefs,
		Parameters: slices.Collect(maps.Keys(body))}
	for _, k := range notForwarded {
		delete(body, k)
	}
	noCompletion := 0
	return s.serveModel(w, r, modelCall{
		metered: meter.MeteredCall{Key: p.key, Request: raw, MaxTokens: &noCompletion, SessionID: req.SessionID,
			Attribution: attribution, Messages: embeddingMessages(req.texts)},
		route: route,
		attempt: func(e provider.Endpoint) (attempt, error) {
			return attempt{form: embeddingsForm{model: e.Model}, send: func(ctx context.Context, m *meter.Metering, _ *streamWriter) (provider.Completion, error) {
				gen := m.Generation
				return s.withKeys(ctx, m, e, func(ctx context.Context, key gatehouse.Secret) (provider.Completion, error) {
					return s.data.Upstream.Embed(ctx, provider.EmbeddingCall{Provider: e.Provider, APIKey: key, Model: e.Model, Body: body,
						Rewrite: func(obj map[string]json.RawMessage) {
							obj["id"], _ = json.Marshal(gen.ID)
							obj["model"], _ = json.Marshal(e.Model.Slug())
							obj["object"] = json.RawMessage(`"list"`)
						}})
				}, func() bool { return false })
			}}, nil
		},
	})
}

// embeddingsForm is the form of an embeddings answer: always whole, its
// usage the prompt's alone (an embedding has no completion).
type embeddingsForm struct{ model *provider.Model }

func (f embeddingsForm) withCost(answer map[string]json.RawMessage, g *gatehouse.Generation) {
	withCost(answer, g, f.model)
	var usage map[string]json.RawMessage
	if json.Unmarshal(answer["usage"], &usage) == nil && usage != nil {
		delete(usage, "completion_tokens")
		delete(usage, "completion_tokens_details")
		answer["usage"], _ = json.Marshal(usage)
	}
}

func (f embeddingsForm) lastEvent(map[string]json.RawMessage, *gatehouse.Generation, error) string {
	return "" // never: embeddings are not streamed
}

// embeddingMessages returns the texts of an embeddings request as the
// messages of the content kept of the call, one user message each (token
// ids are not kept); nil when it has none.
func embeddingMessages(texts []string) json.RawMessage {
	if len(texts) == 0 {
		return nil
	}
	msgs := make([]map[string]string, len(texts))
	for i, t := range texts {
		msgs[i] = map[string]string{"role": "user", "content": t}
	}
	out, _ := json.Marshal(msgs)
	return out
}

// listEmbeddingModels serves GET /embeddings/models: the models that answer
// POST /embeddings (output_modalities includes embeddings), paged with
// limit and offset like GET /models.
func (s *Server) listEmbeddingModels(w http.ResponseWriter, r *http.Request) error {
	return s.writeModels(w, r, provider.ModelQuery{Now: s.now(), OutputModalities: []string{"embeddings"}})
}
