package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/preset"
	"gatehouse/provider"
)

// POST /messages speaks Anthropic's Messages API, as OpenRouter does, so
// that Anthropic's SDKs work pointed at Gatehouse: the request is
// translated into a chat completion (preset.MessagesToChat), served as one
// (the same keys, limits, guardrails, budgets, routing and generation
// records, to any upstream type), and its answer told as Anthropic tells
// one: a message, or Anthropic's event stream. Its errors are in
// Anthropic's shape (writeMessagesError).

// messagesRoute serves a route of the Messages API: authenticated by
// x-api-key (as Anthropic's SDKs send it) or a bearer token, errors in
// Anthropic's shape, and the request id also under Anthropic's name.
func (s *Server) messagesRoute(h authHandler) http.HandlerFunc {
	serve := s.serveAs(s.withKey(h, s.authenticateMessages), writeMessagesError)
	return func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Request-Id", w.Header().Get("X-Request-Id"))
		serve(w, r)
	}
}

// authenticateMessages returns the active key named by the x-api-key
// header or by the Authorization header's bearer token. A request that
// names two keys (both headers, different keys, or a header given twice)
// is refused rather than served with either: which one pays must never be
// a guess.
func (s *Server) authenticateMessages(r *http.Request) (*gatehouse.Key, error) {
	apiKeys, auths := r.Header.Values("X-Api-Key"), r.Header.Values("Authorization")
	if len(apiKeys) > 1 || len(auths) > 1 {
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "send one credential: x-api-key or Authorization is given more than once")
	}
	if len(apiKeys) == 0 {
		return s.authenticate(r)
	}
	token := strings.TrimSpace(apiKeys[0])
	if token == "" || strings.ContainsAny(token, " \t") || len(token) > 512 {
		return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "the x-api-key header is empty or malformed")
	}
	if len(auths) == 1 {
		bearer, err := bearerToken(auths[0])
		if err != nil || bearer != token {
			return nil, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "x-api-key and Authorization name different credentials: send one API key, in one of them")
		}
	}
	return s.keyOf(r.Context(), token)
}

// createMessage serves POST /messages.
func (s *Server) createMessage(w http.ResponseWriter, r *http.Request, p *principal) error {
	if p.key.Management {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "management keys cannot call models; use a regular API key")
	}
	if beta := r.Header.Get("Anthropic-Beta"); beta != "" {
		return gatehouse.FieldError("anthropic-beta", "beta features are not translated: leave the header out (it names %q)", truncateRunes(beta, 60))
	}
	if err := checkContentType(r); err != nil {
		return err
	}
	raw, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxCompletionBodyBytes))
	if err != nil {
		return gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxCompletionBodyBytes)
	}
	if len(bytes.TrimSpace(raw)) == 0 {
		return gatehouse.Errorf(gatehouse.EINVALID, "request body is required: send a JSON object")
	}
	if _, err := readObject(raw); err != nil { // JSON, UTF-8, no key twice, bounded nesting
		return err
	}
	chat, err := preset.MessagesToChat(raw)
	if err != nil {
		return err
	}
	req, body, err := parseChat(chat)
	if err != nil {
		return err
	}
	return s.completeChat(w, r, p, req, body, chat, func(e provider.Endpoint) chatAnswer {
		form := &messagesForm{model: e.Model}
		return chatAnswer{form: form,
			rewrite: func(*gatehouse.Generation, map[string]json.RawMessage) {}, // told by withCost or the stream's translation
			translate: func(sw *streamWriter, gen *gatehouse.Generation) provider.StreamWriter {
				form.stream = preset.NewMessagesStream(preset.MessageID(gen.ID), e.Model.Slug())
				return &messagesWriter{sw: sw, stream: form.stream}
			}}
	})
}

// messagesForm is the form of a Messages answer: a message whose usage is
// what was metered, or the end of Anthropic's event stream.
type messagesForm struct {
	model  *provider.Model
	stream *preset.MessagesStream
}

func messagesUsage(g *gatehouse.Generation) preset.MessagesUsage {
	return preset.MessagesUsage{Prompt: g.PromptTokens, Completion: g.CompletionTokens,
		CacheRead: g.CacheReadTokens, CacheWrite: g.CacheWriteTokens, Cost: g.Cost.AppendDecimal(nil)}
}

func (f *messagesForm) withCost(answer map[string]json.RawMessage, g *gatehouse.Generation) {
	preset.ChatToMessage(answer, preset.MessageID(g.ID), f.model.Slug(), messagesUsage(g))
}

// lastEvent translates the provider's last chunk (held back), then ends
// the stream: message_delta with the usage as metered and message_stop, or,
// when the stream broke off, an error event that says what was charged.
func (f *messagesForm) lastEvent(final map[string]json.RawMessage, g *gatehouse.Generation, callErr error) string {
	var b []byte
	if final != nil {
		b = f.stream.Chunk(final)
	}
	if callErr != nil {
		return string(append(b, f.stream.Fail(fmt.Sprintf("the provider's stream broke off before the answer was complete; it was charged $%s (see generation %s)", g.Cost, g.ID))...))
	}
	return string(append(b, f.stream.End(messagesUsage(g))...))
}

// messagesWriter translates the chat completion stream written to it, line
// by line, into Anthropic's event stream, written to sw.
type messagesWriter struct {
	sw     *streamWriter
	stream *preset.MessagesStream
	line   []byte // the start of a line not yet ended
}

func (m *messagesWriter) Start() {
	m.sw.Start()
	if m.sw.started {
		_, _ = m.sw.Write(m.stream.Start())
	}
}

func (m *messagesWriter) Write(b []byte) (int, error) {
	m.line = append(m.line, b...)
	start := 0
	for {
		i := bytes.IndexByte(m.line[start:], '\n')
		if i < 0 {
			break
		}
		out := m.translate(bytes.TrimSuffix(m.line[start:start+i], []byte("\r")))
		start += i + 1
		if len(out) > 0 {
			if _, err := m.sw.Write(out); err != nil {
				return 0, err
			}
		}
	}
	m.line = m.line[:copy(m.line, m.line[start:])] // what remains of a line, kept at the buffer's start
	return len(b), nil
}

// translate returns the events of one line of the chat stream: a chunk's
// events, a ping for a comment (a keep-alive), nothing for the rest
// ([DONE], blank lines, event names).
func (m *messagesWriter) translate(line []byte) []byte {
	if len(line) > 0 && line[0] == ':' {
		return preset.Ping(nil)
	}
	data, ok := bytes.CutPrefix(line, []byte("data:"))
	if !ok {
		return nil
	}
	obj, err := jsonobj.Unmarshal(bytes.TrimSpace(data))
	if err != nil {
		return nil
	}
	return m.stream.Chunk(obj)
}

func (m *messagesWriter) Flush() { m.sw.Flush() }

// writeMessagesError renders err in Anthropic's error shape, with the
// status Gatehouse answers it with.
func writeMessagesError(w http.ResponseWriter, err error) {
	status, body := errorOf(err)
	retryAfter(w, err)
	out := map[string]any{"type": "error", "error": map[string]string{"type": anthropicErrorType(status), "message": body.Error.Message}}
	if id := w.Header().Get("X-Request-Id"); id != "" {
		out["request_id"] = id
	}
	_ = writeJSON(w, status, out)
}

// anthropicErrorType is the type of Anthropic's errors of a status.
func anthropicErrorType(status int) string {
	switch status {
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusRequestTimeout, http.StatusGatewayTimeout:
		return "timeout_error"
	case http.StatusServiceUnavailable, 529:
		return "overloaded_error"
	}
	if status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}
