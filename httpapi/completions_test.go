package httpapi_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/gateway"
	"gatehouse/httpapi"
	"gatehouse/internal/standin"
	"gatehouse/provider"
)

// fakeUpstream is an OpenAI-compatible provider started for one test. It
// answers chat completions whole or streamed (with a final usage chunk when
// asked for one), and can fail, stall, or leave usage out.
type fakeUpstream struct {
	srv *httptest.Server

	// How it answers; set by the configure function of newFakeUpstream,
	// before the server starts.
	status           int           // non-zero: answer this status with errBody
	errBody          string        // JSON unless errType says otherwise
	errType          string        // Content-Type of errBody
	delay            time.Duration // wait this long before answering (or until the caller leaves)
	noUsage          bool          // report no usage
	promptTokens     int64
	completionTokens int64          // 0: the request's max_tokens
	hold             chan struct{}  // streams wait after their first chunk until it closes
	answerID         string         // the id of answers; "" is chatcmpl-up
	finishReason     string         // "" is stop
	uncapped         int64          // with completionTokens 0: tokens billed when the body has no exact "max_tokens"
	overbill         int64          // tokens billed beyond the request's max_tokens
	fingerprint      string         // the system_fingerprint of answers and chunks; "" sends none
	reasoning        string         // reasoning text of the answer (the first chunk's, streamed)
	tokenDetails     map[string]any // replaces the usage's token details, when set
	noFinal          bool           // Responses streams end without their final event
	toolArgs         string         // non-empty: chat answers call the tool "weather" with these arguments
	// refuse answers a request whose bearer token is a key of it with the
	// key's status and an error that quotes the token, as some providers do.
	refuse map[string]int
	// Ways to fail after the request was received: stall begins the
	// answer (a stream's first comment, or a whole answer's first byte)
	// and then sends nothing for that long; pad puts a member of that many
	// bytes first in a whole answer; cut closes the connection unanswered.
	stall time.Duration
	pad   int
	cut   bool
	// retryAfter is the Retry-After header of an error answer; failWhile,
	// when set, answers 500 while it returns true.
	retryAfter string
	failWhile  func() bool
	// native, when set, is the provider type the upstream speaks
	// (anthropic, gemini): its answers are those of that API's stand-in
	// (internal/standin), after the ways to fail above.
	native    string
	anthropic standin.Anthropic
	gemini    standin.Gemini

	mu       sync.Mutex
	bodies   []map[string]any // the requests received
	auths    []string         // their Authorization headers
	canceled chan struct{}    // closed when a caller left before the answer was complete
	once     sync.Once
}

// newFakeUpstream starts an upstream configured by configure (nil: defaults).
func newFakeUpstream(t testing.TB, configure func(*fakeUpstream)) *fakeUpstream {
	u := &fakeUpstream{promptTokens: 11, completionTokens: 7, canceled: make(chan struct{}),
		answerID: "chatcmpl-up", finishReason: "stop"}
	if configure != nil {
		configure(u)
	}
	u.srv = httptest.NewUnstartedServer(http.HandlerFunc(u.serveHTTP))
	u.srv.Start()
	t.Cleanup(u.srv.Close)
	return u
}

// requests returns the bodies received so far.
func (u *fakeUpstream) requests() []map[string]any {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]map[string]any(nil), u.bodies...)
}

// authorizations returns the Authorization headers received so far.
func (u *fakeUpstream) authorizations() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.auths...)
}

func (u *fakeUpstream) callerLeft() { u.once.Do(func() { close(u.canceled) }) }

func (u *fakeUpstream) serveHTTP(w http.ResponseWriter, r *http.Request) {
	var body map[string]any
	embeddings, responses := r.URL.Path == "/v1/embeddings", r.URL.Path == "/v1/responses"
	path := map[string]bool{"": r.URL.Path == "/v1/chat/completions" || embeddings || responses,
		"anthropic": r.URL.Path == "/v1/messages", "gemini": strings.HasPrefix(r.URL.Path, "/v1beta/models/")}[u.native]
	if !path || json.NewDecoder(r.Body).Decode(&body) != nil {
		http.Error(w, `{"error":{"message":"bad request to the fake upstream"}}`, http.StatusTeapot)
		return
	}
	u.mu.Lock()
	u.bodies = append(u.bodies, body)
	u.auths = append(u.auths, r.Header.Get("Authorization"))
	u.mu.Unlock()
	token, _ := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if status, ok := u.refuse[token]; ok {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		json.NewEncoder(w).Encode(map[string]any{"error": map[string]any{"message": "Incorrect API key provided: " + token}})
		return
	}
	if u.delay > 0 {
		select {
		case <-time.After(u.delay):
		case <-r.Context().Done():
			u.callerLeft()
			return
		}
	}
	if u.misbehave(w, r, body) {
		return
	}
	if u.pad > 0 && !u.streamed(r, body) {
		pw := &padWriter{ResponseWriter: w, pad: u.pad}
		defer pw.finish()
		w = pw
	}
	if u.failWhile != nil && u.failWhile() {
		http.Error(w, `{"error":{"message":"down"}}`, http.StatusInternalServerError)
		return
	}
	if u.status != 0 {
		ct := u.errType
		if ct == "" {
			ct = "application/json"
		}
		w.Header().Set("Content-Type", ct)
		if u.retryAfter != "" {
			w.Header().Set("Retry-After", u.retryAfter)
		}
		w.WriteHeader(u.status)
		io.WriteString(w, u.errBody)
		return
	}
	if u.native != "" {
		u.serveNative(w, r, body)
		return
	}
	if embeddings {
		u.embed(w, body)
		return
	}
	if responses {
		u.respond(w, r, body)
		return
	}
	completion := u.completionTokens
	if completion == 0 {
		// Like a provider: the exact, case-sensitive field, the last of
		// duplicates (as decoders keep), n completions billed.
		n, capped := body["max_tokens"].(float64)
		completion = int64(n) + u.overbill
		if !capped {
			completion = u.uncapped
		}
		if choices, ok := body["n"].(float64); ok && choices > 1 {
			completion *= int64(choices)
		}
	}
	usage := map[string]any{"prompt_tokens": u.promptTokens, "completion_tokens": completion,
		"total_tokens": u.promptTokens + completion, "prompt_tokens_details": map[string]any{"cached_tokens": 0}}
	for k, v := range u.tokenDetails {
		usage[k] = v
	}
	if stream, _ := body["stream"].(bool); stream {
		u.stream(w, r, body, usage)
		return
	}
	message := map[string]any{"role": "assistant", "content": "Hello"}
	if u.reasoning != "" {
		message["reasoning"] = u.reasoning
	}
	finish := u.finishReason
	if u.toolArgs != "" {
		message["content"], finish = nil, "tool_calls"
		message["tool_calls"] = []any{map[string]any{"id": "call_up", "type": "function",
			"function": map[string]any{"name": "weather", "arguments": u.toolArgs}}}
	}
	answer := map[string]any{"id": u.answerID, "object": "chat.completion", "created": 1700000000, "model": body["model"],
		"choices": []any{map[string]any{"index": 0, "finish_reason": finish, "message": message}}}
	if u.fingerprint != "" {
		answer["system_fingerprint"] = u.fingerprint
	}
	if !u.noUsage {
		answer["usage"] = usage
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

// misbehave fails a received request as cut or stall say, and reports
// whether it did.
func (u *fakeUpstream) misbehave(w http.ResponseWriter, r *http.Request, body map[string]any) bool {
	switch {
	case u.cut:
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	case u.stall > 0:
		if u.streamed(r, body) {
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, ": PROCESSING\n\n")
		} else {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"chatcmpl-up",`)
		}
		w.(http.Flusher).Flush()
		select {
		case <-time.After(u.stall):
		case <-r.Context().Done():
			u.callerLeft()
		}
		return true
	}
	return false
}

// streamed reports whether a request asks for a stream: its stream
// field, or for Gemini its method.
func (u *fakeUpstream) streamed(r *http.Request, body map[string]any) bool {
	if u.native == "gemini" {
		return strings.HasSuffix(r.URL.Path, ":streamGenerateContent")
	}
	stream, _ := body["stream"].(bool)
	return stream
}

// serveNative answers as the stand-in of the upstream's native API.
func (u *fakeUpstream) serveNative(w http.ResponseWriter, r *http.Request, body map[string]any) {
	b, _ := json.Marshal(body)
	r = r.Clone(r.Context())
	r.Body = io.NopCloser(bytes.NewReader(b))
	var h http.Handler = &u.anthropic
	if u.native == "gemini" {
		h = &u.gemini
	}
	if !u.noUsage || u.streamed(r, body) {
		h.ServeHTTP(w, r)
		return
	}
	// The whole answer, without its usage.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r)
	var answer map[string]any
	if json.Unmarshal(rec.Body.Bytes(), &answer) == nil {
		delete(answer, "usage")
		delete(answer, "usageMetadata")
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(rec.Code)
	json.NewEncoder(w).Encode(answer)
}

// padWriter holds a whole answer back, and sends it with a first member
// "x_padding" of pad bytes: an answer too large to deliver, whose usage
// comes last.
type padWriter struct {
	http.ResponseWriter
	pad int
	buf bytes.Buffer
}

func (p *padWriter) Write(b []byte) (int, error) { return p.buf.Write(b) }

func (p *padWriter) finish() {
	answer := p.buf.Bytes()
	if len(answer) == 0 || answer[0] != '{' {
		p.ResponseWriter.Write(answer)
		return
	}
	p.ResponseWriter.Write([]byte(`{"x_padding":"`))
	chunk := bytes.Repeat([]byte("a"), 64<<10)
	for n := p.pad; n > 0; n -= len(chunk) {
		p.ResponseWriter.Write(chunk[:min(n, len(chunk))])
	}
	p.ResponseWriter.Write([]byte(`",`))
	p.ResponseWriter.Write(answer[1:])
}

// embed answers an embeddings request: one vector per input (a string, or
// each item of an array), with promptTokens (and overbill) of usage.
func (u *fakeUpstream) embed(w http.ResponseWriter, body map[string]any) {
	inputs, ok := body["input"].([]any)
	if !ok {
		inputs = []any{body["input"]}
	}
	data := make([]any, len(inputs))
	for i := range inputs {
		data[i] = map[string]any{"object": "embedding", "index": i, "embedding": []float64{0.25, -0.5, float64(i)}}
	}
	prompt := u.promptTokens + u.overbill
	answer := map[string]any{"object": "list", "model": body["model"], "data": data}
	if u.answerID != "chatcmpl-up" {
		answer["id"] = u.answerID
	}
	if !u.noUsage {
		answer["usage"] = map[string]any{"prompt_tokens": prompt, "total_tokens": prompt}
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(answer)
}

// stream answers as server-sent events: a comment, two content chunks, the
// usage chunk when asked for, and [DONE].
func (u *fakeUpstream) stream(w http.ResponseWriter, r *http.Request, body, usage map[string]any) {
	w.Header().Set("Content-Type", "text/event-stream")
	flush := w.(http.Flusher).Flush
	chunk := func(choices []any, extra map[string]any) {
		c := map[string]any{"id": u.answerID, "object": "chat.completion.chunk", "created": 1700000000,
			"model": body["model"], "choices": choices}
		if u.fingerprint != "" {
			c["system_fingerprint"] = u.fingerprint
		}
		for k, v := range extra {
			c[k] = v
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		flush()
	}
	io.WriteString(w, ": PROCESSING\n\n")
	first := map[string]any{"role": "assistant", "content": "Hel"}
	if u.reasoning != "" {
		first["reasoning"] = u.reasoning
	}
	chunk([]any{map[string]any{"index": 0, "delta": first, "finish_reason": nil}}, nil)
	if u.hold != nil {
		select {
		case <-u.hold:
		case <-r.Context().Done():
			u.callerLeft()
			return
		}
	}
	if u.toolArgs != "" { // a tool call after the text, its arguments in two pieces
		half := len(u.toolArgs) / 2
		chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0, "id": "call_up",
			"type": "function", "function": map[string]any{"name": "weather", "arguments": u.toolArgs[:half]}}}}}}, nil)
		chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"tool_calls": []any{map[string]any{"index": 0,
			"function": map[string]any{"arguments": u.toolArgs[half:]}}}}, "finish_reason": "tool_calls"}}, nil)
	} else {
		chunk([]any{map[string]any{"index": 0, "delta": map[string]any{"content": "lo"}, "finish_reason": u.finishReason}}, nil)
	}
	opts, _ := body["stream_options"].(map[string]any)
	if include, _ := opts["include_usage"].(bool); include && !u.noUsage {
		chunk([]any{}, map[string]any{"usage": usage})
	}
	io.WriteString(w, "data: [DONE]\n\n")
	flush()
}

// Prices of the test catalog, in nano-dollars per million tokens.
const (
	chatPromptPrice     = 333_333_333   // $0.333333333 per million tokens: costs round up
	chatCompletionPrice = 1_500_000_000 // $1.50 per million
	chatMaxTokens       = 256
)

// testCatalog returns the models of the tests: acme/chat (odd prices, so
// costs round), acme/exact (prompts free, 100 completion tokens cost exactly
// $0.10, so the worst case reserved is the real cost), and other/mini from a
// BYOK provider. Every provider is the fake upstream at base; acme offers
// the Responses API, other does not.
func testCatalog(t testing.TB, base string, timeout time.Duration) *provider.Catalog {
	t.Helper()
	c, err := provider.NewCatalog([]*provider.Provider{
		{ID: "acme", BaseURL: base + "/v1", Timeout: timeout, Responses: true, Models: []*provider.Model{
			{ID: "chat", Name: "Acme Chat", PromptPrice: chatPromptPrice, CompletionPrice: chatCompletionPrice,
				MaxCompletionTokens: chatMaxTokens, ContextLength: 8192},
			{ID: "exact", Name: "Acme Exact", CompletionPrice: gatehouse.USD(1000), MaxCompletionTokens: 100},
		}},
		{ID: "other", BaseURL: base + "/v1", BYOK: true, Timeout: timeout, Models: []*provider.Model{
			{ID: "mini", PromptPrice: gatehouse.USD(1), CompletionPrice: gatehouse.USD(2), MaxCompletionTokens: 64},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// chatCost is the cost of a request to acme/chat, computed here: rounded up
// to the nano-dollar.
func chatCost(prompt, completion int64) gatehouse.Money {
	total := prompt*chatPromptPrice + completion*chatCompletionPrice
	return gatehouse.Money((total + 999_999) / 1_000_000)
}

// traceSink records the trace events of completed requests.
type traceSink struct {
	mu     sync.Mutex
	events []*gatehouse.TraceEvent
}

func (s *traceSink) Publish(ev *gatehouse.TraceEvent) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.events = append(s.events, ev)
}

// chatEnv is a test environment serving the data plane over a fake
// upstream, with one regular key.
type chatEnv struct {
	*testEnv
	up     *fakeUpstream
	traces *traceSink
	key    string // plaintext of the regular key
	hash   string
}

// newChatEnv starts an upstream configured by configure and an environment
// whose providers call it, and creates a regular key from keyBody (nil: no
// limit).
func newChatEnv(t testing.TB, configure func(*fakeUpstream), keyBody map[string]any) *chatEnv {
	t.Helper()
	return newChatEnvTimeout(t, configure, keyBody, 10*time.Second)
}

func newChatEnvTimeout(t testing.TB, configure func(*fakeUpstream), keyBody map[string]any, timeout time.Duration) *chatEnv {
	t.Helper()
	return newUpstreamEnv(t, configure, keyBody, func(base string) *provider.Catalog { return testCatalog(t, base, timeout) })
}

// newUpstreamEnv is newChatEnv over the catalog that catalog makes for the
// upstream's base URL.
func newUpstreamEnv(t testing.TB, configure func(*fakeUpstream), keyBody map[string]any, catalog func(base string) *provider.Catalog, opts ...envOption) *chatEnv {
	t.Helper()
	up := newFakeUpstream(t, configure)
	traces := &traceSink{}
	e := newEnv(t, append([]envOption{withDataPlane(httpapi.DataPlane{Catalog: catalog(up.srv.URL),
		Upstream: gateway.NewClient(), Traces: traces})}, opts...)...)
	ce := &chatEnv{testEnv: e, up: up, traces: traces}
	if keyBody == nil {
		keyBody = map[string]any{}
	}
	if keyBody["name"] == nil {
		keyBody["name"] = "chat key"
	}
	ce.hash, ce.key = e.createKey(e.mgmt, keyBody)
	return ce
}

// chatBody returns a request body for model with the given extra fields.
func chatBody(model string, extra ...any) map[string]any {
	b := map[string]any{"model": model, "messages": []any{map[string]any{"role": "user", "content": "Say hello"}}}
	for i := 0; i+1 < len(extra); i += 2 {
		b[extra[i].(string)] = extra[i+1]
	}
	return b
}

// chat sends a chat completion with key through the handler and checks the
// answer against the OpenAPI document. Unlike do, it accepts 5xx answers:
// providers' failures pass through.
func (e *chatEnv) chat(key string, body any) *response {
	e.t.Helper()
	return e.chatWith(key, body, nil)
}

// chatWith is chat with more request headers.
func (e *chatEnv) chatWith(key string, body any, headers map[string]string) *response {
	e.t.Helper()
	return e.postModel("/api/v1/chat/completions", key, body, headers)
}

// postModel sends a body (as JSON) to a model endpoint with key and more
// request headers, through the handler, and checks the answer against the
// OpenAPI document. Unlike do, it accepts 5xx answers: providers' failures
// pass through.
func (e *chatEnv) postModel(path, key string, body any, headers map[string]string) *response {
	e.t.Helper()
	data, err := json.Marshal(body)
	if err != nil {
		e.t.Fatal(err)
	}
	req := httptest.NewRequest("POST", path, bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req)
	res := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	e.checker.check(e.t, req, res.Status, res.Header, res.Body)
	return res
}

// keyMoney is the money of a key as GET /keys/{hash} shows it.
type keyMoney struct {
	Usage          gatehouse.Money  `json:"usage"`
	UsageDaily     gatehouse.Money  `json:"usage_daily"`
	UsageWeekly    gatehouse.Money  `json:"usage_weekly"`
	UsageMonthly   gatehouse.Money  `json:"usage_monthly"`
	BYOKUsage      gatehouse.Money  `json:"byok_usage"`
	LimitRemaining *gatehouse.Money `json:"limit_remaining"`
}

// money reads a key's usage through the management API.
func (e *chatEnv) money(hash string) keyMoney {
	e.t.Helper()
	var out struct {
		Data keyMoney `json:"data"`
	}
	e.do("GET", "/api/v1/keys/"+hash, e.mgmt, nil).want(e.t, http.StatusOK).decode(e.t, &out)
	return out.Data
}

// ledger returns the key's generations (status and cost) and the number of
// live reservations, read from the database (not counting leases, the
// slices of limits an instance admits against: see TestLeases*).
func (e *chatEnv) ledger(hash string) (statuses []string, costs []gatehouse.Money, reservations int) {
	e.t.Helper()
	rows, err := e.readDB().Query(`SELECT status, cost FROM generations WHERE key_hash = $1 ORDER BY created_at, id`, hash)
	if err != nil {
		e.t.Fatal(err)
	}
	defer rows.Close()
	for rows.Next() {
		var s string
		var c int64
		if err := rows.Scan(&s, &c); err != nil {
			e.t.Fatal(err)
		}
		statuses, costs = append(statuses, s), append(costs, gatehouse.Money(c))
	}
	if err := e.readDB().QueryRow(`SELECT COUNT(*) FROM reservations WHERE key_hash = $1 AND lease = FALSE`, hash).Scan(&reservations); err != nil {
		e.t.Fatal(err)
	}
	return statuses, costs, reservations
}

// wantNothingCharged checks that a key has no usage, no ledger entry and no
// live reservation.
func (e *chatEnv) wantNothingCharged(hash string) {
	e.t.Helper()
	if m := e.money(hash); m.Usage != 0 || m.BYOKUsage != 0 {
		e.t.Errorf("usage %s, byok %s; want nothing charged", m.Usage, m.BYOKUsage)
	}
	if statuses, _, held := e.ledger(hash); len(statuses) != 0 || held != 0 {
		e.t.Errorf("ledger %v, %d reservations; want none", statuses, held)
	}
}

// errorBody is the error object of an answer.
type errorBody struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata"`
}

func (r *response) apiError(t testing.TB) errorBody {
	t.Helper()
	var b struct {
		Error errorBody `json:"error"`
	}
	r.decode(t, &b)
	return b.Error
}

func TestChatCompletion(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, map[string]any{"limit": 1, "limit_reset": "daily"})
	res := e.chat(e.key, chatBody("acme/chat", "max_tokens", 50, "temperature", 0.2, "session_id", "s-1")).want(t, http.StatusOK)
	var got struct {
		ID                string  `json:"id"`
		Object            string  `json:"object"`
		Model             string  `json:"model"`
		Provider          string  `json:"provider"`
		SystemFingerprint *string `json:"system_fingerprint"`
		Choices           []struct {
			Message struct{ Content string } `json:"message"`
		} `json:"choices"`
		Usage struct {
			PromptTokens, CompletionTokens int64
		} `json:"usage"`
	}
	res.decode(t, &got)
	if !strings.HasPrefix(got.ID, "gen-") || got.Model != "acme/chat" || got.Provider != "acme" || got.Object != "chat.completion" {
		t.Errorf("answer id %q model %q provider %q object %q", got.ID, got.Model, got.Provider, got.Object)
	}
	if len(got.Choices) != 1 || got.Choices[0].Message.Content != "Hello" {
		t.Errorf("choices %+v", got.Choices)
	}
	// The SDK requires the key; the provider sent none, so it is Gatehouse's.
	if got.SystemFingerprint == nil || !strings.HasPrefix(*got.SystemFingerprint, "fp_gh_") {
		t.Errorf("system_fingerprint %v, want Gatehouse's: %s", got.SystemFingerprint, res.Body)
	}

	// The upstream got the client's request with its own model name.
	reqs := e.up.requests()
	if len(reqs) != 1 || reqs[0]["model"] != "chat" || reqs[0]["max_tokens"] != float64(50) ||
		reqs[0]["temperature"] != 0.2 || reqs[0]["stream_options"] != nil {
		t.Errorf("upstream got %v", reqs)
	}

	// Usage moved, exactly: 11 prompt and 7 completion tokens at odd prices.
	cost := chatCost(11, 7)
	m := e.money(e.hash)
	if m.Usage != cost || m.UsageDaily != cost || m.UsageWeekly != cost || m.UsageMonthly != cost || m.BYOKUsage != 0 {
		t.Errorf("usage %+v, want %s in every period", m, cost)
	}
	if m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1)-cost {
		t.Errorf("limit_remaining %v, want %s", m.LimitRemaining, gatehouse.USD(1)-cost)
	}
	statuses, costs, held := e.ledger(e.hash)
	if len(statuses) != 1 || statuses[0] != "completed" || costs[0] != cost || held != 0 {
		t.Errorf("ledger %v %v, %d reservations", statuses, costs, held)
	}

	var gen struct {
		Data map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+got.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	for k, want := range map[string]any{"id": got.ID, "model": "acme/chat", "provider_name": "acme", "upstream_id": "chatcmpl-up",
		"tokens_prompt": 11.0, "tokens_completion": 7.0, "streamed": false, "cancelled": false, "is_byok": false,
		"session_id": "s-1", "finish_reason": "stop", "api_type": "completions"} {
		if gen.Data[k] != want {
			t.Errorf("generation %s = %v, want %v", k, gen.Data[k], want)
		}
	}
	e.traces.mu.Lock()
	defer e.traces.mu.Unlock()
	if len(e.traces.events) != 1 || e.traces.events[0].Generation.ID != got.ID || e.traces.events[0].Output != "Hello" {
		t.Errorf("traces %+v", e.traces.events)
	}
}

func TestChatCompletionDefaultCap(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK)
	e.chat(e.key, chatBody("acme/chat", "max_completion_tokens", 9)).want(t, http.StatusOK)
	reqs := e.up.requests()
	if len(reqs) != 2 || reqs[0]["max_tokens"] != float64(chatMaxTokens) || reqs[0]["max_completion_tokens"] != float64(chatMaxTokens) {
		t.Fatalf("upstream got %v, want max_tokens = max_completion_tokens = %d", reqs, chatMaxTokens)
	}
	// The one cap reserved reaches the provider under both names it may read.
	if reqs[1]["max_tokens"] != float64(9) || reqs[1]["max_completion_tokens"] != float64(9) {
		t.Errorf("the reserved cap 9 did not reach the provider under both names: %v", reqs[1])
	}
}

func TestChatCompletionBadRequests(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	e.unchanged("refused requests", func() {
		for _, c := range []struct {
			name   string
			body   any
			status int
			field  string
		}{
			{"unknown model", chatBody("acme/nope"), 400, "model"},
			{"model of no provider", chatBody("gpt-4o"), 400, "model"},
			{"no model", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x"}}}, 400, "model"},
			{"model not a string", chatBody("x", "model", 5), 400, "model"},
			{"no messages", map[string]any{"model": "acme/chat"}, 400, "messages"},
			{"empty messages", chatBody("acme/chat", "messages", []any{}), 400, "messages"},
			{"messages not an array", chatBody("acme/chat", "messages", "hi"), 400, "messages"},
			{"max_tokens 0", chatBody("acme/chat", "max_tokens", 0), 400, "max_tokens"},
			{"max_tokens not an integer", chatBody("acme/chat", "max_tokens", 1.5), 400, "max_tokens"},
			{"not an object", []any{1}, 400, ""},
		} {
			res := e.chat(e.key, c.body)
			if res.Status != c.status || !strings.Contains(res.errorMessage(t), c.field) {
				t.Errorf("%s: %d %s", c.name, res.Status, res.Body)
			}
		}
		req := httptest.NewRequest("POST", "/api/v1/chat/completions", strings.NewReader("model=acme/chat"))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Authorization", "Bearer "+e.key)
		e.send(req).want(t, http.StatusUnsupportedMediaType)
		big := `{"model":"acme/chat","messages":[{"role":"user","content":"` + strings.Repeat("a", httpapi.MaxCompletionBodyBytes) + `"}]}`
		req = httptest.NewRequest("POST", "/api/v1/chat/completions", strings.NewReader(big))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.key)
		e.send(req).want(t, http.StatusRequestEntityTooLarge)
	})
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the upstream was called %d times", n)
	}
}

func TestChatCompletionCredentials(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	disabledHash, disabled := e.createKey(e.mgmt, map[string]any{"name": "disabled"})
	e.do("PATCH", "/api/v1/keys/"+disabledHash, e.mgmt, map[string]any{"disabled": true}).want(t, http.StatusOK)
	expiry := testStart.Add(time.Hour)
	_, expiring := e.createKey(e.mgmt, map[string]any{"name": "expiring", "expires_at": expiry.Format(time.RFC3339)})
	e.chat(expiring, chatBody("acme/chat")).want(t, http.StatusOK) // not yet expired
	e.clock.Set(expiry)
	e.unchanged("refused credentials", func() {
		res := e.chat(e.mgmt, chatBody("acme/chat")).want(t, http.StatusForbidden)
		if msg := res.errorMessage(t); !strings.Contains(msg, "management key") {
			t.Errorf("management key: %q", msg)
		}
		for name, key := range map[string]string{"unknown": gatehouse.NewKeySecret(false), "disabled": disabled,
			"expired": expiring, "none": ""} {
			if res := e.chat(key, chatBody("acme/chat")); res.Status != http.StatusUnauthorized {
				t.Errorf("%s key: %d %s", name, res.Status, res.Body)
			}
		}
	})
	if n := len(e.up.requests()); n != 1 {
		t.Errorf("the upstream was called %d times, want once", n)
	}
}
