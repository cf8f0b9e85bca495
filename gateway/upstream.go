// Package gateway talks to the upstream providers: it forwards chat
// completion, Responses API and embeddings requests to OpenAI-compatible
// APIs and reads their answers, whole or streamed as server-sent events,
// extracting what metering needs (the token usage) and rewriting what
// clients see (the generation id and the model's slug). Client implements
// provider.Upstream.
package gateway

import (
	"bufio"
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// MaxResponseBytes bounds a non-streamed upstream answer.
const MaxResponseBytes = 16 << 20

// maxOutput bounds the completion text kept for traces.
const maxOutput = 64 << 10

// Client calls upstream providers.
type Client struct {
	HTTP *http.Client
}

var _ provider.Upstream = (*Client)(nil)

// NewClient returns a Client with a transport suited to many concurrent
// long-lived upstream calls; each call's deadline comes from its provider.
func NewClient() *Client {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConnsPerHost = 64
	return &Client{HTTP: &http.Client{Transport: t}}
}

// Complete forwards a chat completion and reads the answer. The provider's
// key, or the call's own (a workspace's BYOK key), goes in the
// Authorization header and nowhere else: an error answer that quotes it has
// it redacted before anyone sees it.
func (c *Client) Complete(ctx context.Context, call provider.CompletionCall, w provider.StreamWriter) (provider.Completion, error) {
	return c.forward(ctx, call, w, chatAPI)
}

// api is what differs between the endpoints a model call goes to: the
// path, the body the provider is sent, and how an answer and its events
// are read.
type api struct {
	path  string
	body  func(provider.CompletionCall) ([]byte, error)
	read  func(obj map[string]json.RawMessage) provider.Completion // a whole answer
	event eventReader
}

// chatAPI is the Chat Completions API.
var chatAPI = api{path: "/chat/completions", body: prepareBody,
	read: func(obj map[string]json.RawMessage) provider.Completion { return inspect(obj, false) },
	event: func(obj map[string]json.RawMessage) (provider.Completion, bool) {
		c := inspect(obj, true)
		return c, c.UsageKnown
	},
}

// forward makes a model call of an API and reads the answer, whole or
// streamed.
func (c *Client) forward(ctx context.Context, call provider.CompletionCall, w provider.StreamWriter, a api) (provider.Completion, error) {
	body, err := a.body(call)
	if err != nil {
		return provider.Completion{}, err
	}
	d := dialectOf(call.Provider)
	if body, err = d.request(a.path, call.Model, body); err != nil {
		return provider.Completion{}, err
	}
	x, err := c.exchange(ctx, call.Provider, call.Model, call.APIKey, a.path, call.Stream, body)
	if err != nil {
		return provider.Completion{}, err
	}
	defer x.close()
	if call.Stream && strings.HasPrefix(x.resp.Header.Get("Content-Type"), "text/event-stream") {
		w.Start()
		return stream(x.ctx, d.stream(a.path, x.resp.Body), w, call.Rewrite, a.event)
	}
	done, err := readWhole(d.answer(a.path, x.resp.Body), call.Rewrite, a.read)
	return done, x.answerError(err)
}

// Why a call's context ends before its answer: the provider's two
// timeouts.
var (
	errAnswerTimeout = errors.New("the answer did not begin within the provider's first-byte timeout")
	errCallTimeout   = errors.New("the answer did not end within the provider's timeout")
)

// call is one request to a provider, bounded by the provider's timeouts,
// and its answer once it began.
type call struct {
	p      *provider.Provider
	m      *provider.Model
	ctx    context.Context // ends with the caller's, or at a timeout (its cause says which)
	cancel context.CancelCauseFunc
	resp   *http.Response
	// delivered is set once the request was written to the provider: from
	// then on it may work on it, and bill it (provider.Billed).
	delivered atomic.Bool
}

// exchange sends a JSON body to one of the provider's endpoints (see post)
// within the provider's timeouts: its answer must begin within its
// first-byte timeout, and end within its timeout. An error is an
// *UpstreamError that says whether the provider received the request.
func (c *Client) exchange(ctx context.Context, p *provider.Provider, m *provider.Model, apiKey gatehouse.Secret, path string, stream bool, body []byte) (*call, error) {
	x := &call{p: p, m: m}
	whole, cancelWhole := context.WithTimeoutCause(ctx, m.CallTimeout(p), errCallTimeout)
	x.ctx, x.cancel = context.WithCancelCause(whole)
	cancel := x.cancel
	x.cancel = func(cause error) { cancel(cause); cancelWhole() }
	// The first-byte timeout counts from the request's last byte written
	// (the connection is bounded by the dialer and the whole call's
	// timeout): a busy machine's slow connect neither eats into the
	// provider's time to answer nor gives up on a request it never sent.
	var (
		mu       sync.Mutex
		answer   *time.Timer
		returned bool // post returned: a write reported later starts no timer
	)
	traced := httptrace.WithClientTrace(x.ctx, &httptrace.ClientTrace{WroteRequest: func(i httptrace.WroteRequestInfo) {
		if i.Err != nil {
			return
		}
		x.delivered.Store(true)
		mu.Lock()
		if !returned {
			answer = time.AfterFunc(m.AnswerTimeout(p), func() { cancel(errAnswerTimeout) })
		}
		mu.Unlock()
	}})
	resp, err := c.post(traced, p, m, apiKey, path, stream, body)
	mu.Lock()
	returned = true
	if answer != nil {
		answer.Stop()
	}
	mu.Unlock()
	if err != nil {
		x.cancel(context.Canceled)
		var ue *provider.UpstreamError
		if errors.As(err, &ue) {
			ue.Delivered = x.delivered.Load()
		}
		return nil, err
	}
	x.resp = resp
	return x, nil
}

func (x *call) close() {
	x.resp.Body.Close()
	x.cancel(context.Canceled)
}

// answerError describes a failure to read an answer that began (err from
// readWhole): a timeout when the provider's time was up, else the
// provider's answer as it was. The provider had the request.
func (x *call) answerError(err error) error {
	if err == nil {
		return nil
	}
	var ue *provider.UpstreamError
	switch {
	case errors.As(err, &ue):
	case x.ctx.Err() != nil:
		ue = networkError(x.ctx, x.p, x.m, err)
	default:
		ue = &provider.UpstreamError{Kind: provider.UpstreamBadAnswer, Provider: x.p.ID,
			Message: fmt.Sprintf("the provider %s sent an invalid answer: %v", x.p.ID, err)}
	}
	ue.Provider, ue.ProviderStatus, ue.Delivered, ue.Answered = x.p.ID, x.resp.StatusCode, true, true
	return ue
}

// post sends a JSON body to one of the provider's endpoints, in its
// dialect, with the provider's key, or apiKey when set. An answer with a
// status other than 2xx is returned as an *UpstreamError, its body closed.
func (c *Client) post(ctx context.Context, p *provider.Provider, m *provider.Model, apiKey gatehouse.Secret, path string, stream bool, body []byte) (*http.Response, error) {
	d := dialectOf(p)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, d.url(p, m, path, stream), bytes.NewReader(body))
	if err != nil {
		return nil, &provider.UpstreamError{Kind: provider.UpstreamUnreachable, Message: "the provider's URL is invalid", Provider: p.ID, Err: err}
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	key := p.APIKey
	if apiKey != "" {
		key = string(apiKey)
	}
	d.authorize(req, key)
	resp, err := c.HTTP.Do(req)
	if err != nil {
		return nil, networkError(ctx, p, m, err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, redactKey(upstreamError(p, d, resp), key, apiKey != "")
	}
	return resp, nil
}

// prepareBody returns the request body for the upstream: the checked,
// re-encoded body with the upstream's model name and exactly one completion
// cap, the reserved one, under both names providers read (max_tokens and
// max_completion_tokens), and, for streams, a request for the final usage
// chunk.
func prepareBody(call provider.CompletionCall) ([]byte, error) {
	out := make(map[string]json.RawMessage, len(call.Body)+3)
	for k, v := range call.Body {
		out[k] = v
	}
	out["model"], _ = json.Marshal(call.Model.ID)
	capTokens, _ := json.Marshal(call.MaxTokens)
	out["max_tokens"], out["max_completion_tokens"] = capTokens, capTokens
	if call.Stream {
		opts := map[string]json.RawMessage{}
		if raw, ok := out["stream_options"]; ok {
			_ = json.Unmarshal(raw, &opts)
		}
		opts["include_usage"] = json.RawMessage("true")
		out["stream_options"], _ = json.Marshal(opts)
	}
	return json.Marshal(out)
}

// networkError classifies a failed call: a timeout (of the answer's
// beginning, or of the whole call) or an unreachable provider.
func networkError(ctx context.Context, p *provider.Provider, m *provider.Model, err error) *provider.UpstreamError {
	var ne net.Error
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errAnswerTimeout) && m.AnswerTimeout(p) < m.CallTimeout(p):
		return &provider.UpstreamError{Kind: provider.UpstreamTimeout, Provider: p.ID, Err: err,
			Message: fmt.Sprintf("the provider %s did not begin its answer within %s (its first-byte timeout)", p.ID, m.AnswerTimeout(p))}
	case errors.Is(cause, errAnswerTimeout) || errors.Is(cause, errCallTimeout) || errors.Is(cause, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()):
		return &provider.UpstreamError{Kind: provider.UpstreamTimeout, Provider: p.ID, Err: err,
			Message: fmt.Sprintf("the provider %s did not answer within %s", p.ID, m.CallTimeout(p))}
	}
	return &provider.UpstreamError{Kind: provider.UpstreamUnreachable, Provider: p.ID, Err: err,
		Message: fmt.Sprintf("the provider %s could not be reached", p.ID)}
}

// upstreamError describes an upstream's error answer: its status, its
// message and its JSON body.
func upstreamError(p *provider.Provider, d dialect, resp *http.Response) *provider.UpstreamError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	raw = d.failure(resp.StatusCode, raw)
	e := &provider.UpstreamError{Kind: provider.UpstreamRejected, ProviderStatus: resp.StatusCode, Provider: p.ID,
		Answered: true, RetryAfter: retryAfter(resp.Header.Get("Retry-After"), time.Now()),
		Message: fmt.Sprintf("the provider %s answered %d", p.ID, resp.StatusCode)}
	if json.Valid(raw) {
		e.Raw = raw
		var body struct {
			Error struct {
				Message string `json:"message"`
			} `json:"error"`
			Message string `json:"message"`
		}
		if json.Unmarshal(raw, &body) == nil {
			if m := body.Error.Message + body.Message; m != "" {
				e.Message = m
			}
		}
	}
	if resp.StatusCode < 400 { // a 1xx or 3xx answer makes no sense here
		e.Kind = provider.UpstreamBadAnswer
	}
	return e
}

// readWhole reads a whole (non-streamed) answer: what metering needs of
// it, as read says, and the answer rewritten. An answer larger than
// MaxResponseBytes is not delivered, but read to its end for its usage
// (see tooLarge).
func readWhole(r io.Reader, rewrite func(map[string]json.RawMessage), read func(map[string]json.RawMessage) provider.Completion) (provider.Completion, error) {
	raw, err := io.ReadAll(io.LimitReader(r, MaxResponseBytes+1))
	var tl *errTooLarge
	if errors.As(err, &tl) { // a dialect's, with the usage it translated
		return tooLarge(bytes.NewReader(fmt.Appendf(nil, `{"usage":%s}`, cmp.Or(string(tl.usage), "null"))), read)
	}
	if err != nil {
		return provider.Completion{}, fmt.Errorf("the answer could not be read: %w", err)
	}
	if len(raw) > MaxResponseBytes {
		return tooLarge(io.MultiReader(bytes.NewReader(raw), r), read)
	}
	obj, err := jsonobj.Unmarshal(raw)
	if err != nil {
		return provider.Completion{}, errors.New("the answer is not a JSON object")
	}
	c := read(obj)
	rewrite(obj)
	c.Final = obj
	return c, nil
}

// tooLarge reads an answer larger than Gatehouse delivers to its end, for
// its usage: the provider did the work, so the call is charged what the
// answer says it cost (or the reservation, when it says nothing readable).
// Only the usage is kept; the rest is read token by token and dropped.
func tooLarge(r io.Reader, read func(map[string]json.RawMessage) provider.Completion) (provider.Completion, error) {
	var c provider.Completion
	usage, err := topLevelMember(r, "usage")
	if err == nil {
		c = read(map[string]json.RawMessage{"usage": usage})
		c.Output, c.Reasoning, c.FinishReason = "", "", ""
	}
	if err != nil && !errors.Is(err, errNotJSON) {
		return c, fmt.Errorf("the answer could not be read: %w", err) // a timeout, or the connection cut
	}
	return c, &provider.UpstreamError{Kind: provider.UpstreamTooLarge,
		Message: fmt.Sprintf("the provider's answer is larger than the %d MiB Gatehouse delivers: ask for less (fewer tokens or inputs, or encoding_format base64 for embeddings)", MaxResponseBytes>>20)}
}

// errNotJSON is an answer that is not one JSON object.
var errNotJSON = errors.New("the answer is not a JSON object")

// topLevelMember reads a JSON object from r and returns the value of its
// member name, which must be there exactly once (as usage is read, by its
// exact name); the other members are read and dropped, so that the memory
// it takes is bounded by the largest string, not the object. An error
// wrapping errNotJSON means the answer was read but is no such object.
func topLevelMember(r io.Reader, name string) (json.RawMessage, error) {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notJSON(err)
	}
	var value json.RawMessage
	seen := 0
	for dec.More() {
		key, err := dec.Token()
		if err != nil {
			return nil, notJSON(err)
		}
		if key == name {
			seen++
			if err := dec.Decode(&value); err != nil {
				return nil, notJSON(err)
			}
			continue
		}
		if err := skipValue(dec); err != nil {
			return nil, notJSON(err)
		}
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, notJSON(err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notJSON(err)
	}
	if seen != 1 {
		return nil, errNotJSON
	}
	return value, nil
}

// notJSON is a failure to read an answer as a JSON object: the reading's
// own error (a timeout, a cut connection), or errNotJSON for bytes that
// are not one.
func notJSON(err error) error {
	var se *json.SyntaxError
	if err == nil || err == io.EOF || errors.As(err, &se) {
		return errNotJSON
	}
	return err
}

// skipValue reads one JSON value from dec, token by token.
func skipValue(dec *json.Decoder) error {
	depth := 0
	for {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
		}
		if depth == 0 {
			return nil
		}
	}
}

// chunk is the part of a completion object or stream chunk that metering
// and tracing read.
type chunk struct {
	ID      string `json:"id"`
	Choices []struct {
		FinishReason *string `json:"finish_reason"`
		Message      *text   `json:"message"`
		Delta        *text   `json:"delta"`
	} `json:"choices"`
}

// decode reads the fields of a chunk from an answer's object, each by its
// exact name, as the clients that read the answer do (not folding case, as
// a decode of the whole object into the struct would); one that does not
// read is left as it is. The usage is read apart, by usageCounts.
func (ch *chunk) decode(obj map[string]json.RawMessage) {
	_ = json.Unmarshal(obj["id"], &ch.ID)
	_ = json.Unmarshal(obj["choices"], &ch.Choices)
}

// usageCounts reads the token counts of a usage object by their exact
// names, as the official clients read them: each must be there once, as a
// whole number an int64 holds. Anything else (usage that is not an object,
// a count missing, given twice, written as a float or a string, or out of
// range) is usage not known, which is charged the reservation. A name in
// another case ("PROMPT_TOKENS", "prompt_tokenſ") is another name, and
// ignored: encoding/json would fold it onto the count, and the last of
// them would win.
func usageCounts(usage json.RawMessage, names ...string) ([]int64, bool) {
	if !json.Valid(usage) { // Members reads valid JSON only
		return nil, false
	}
	ms, ok := jsonobj.Members(usage)
	if !ok {
		return nil, false
	}
	counts := make([]int64, len(names))
	for i, name := range names {
		seen := 0
		for _, m := range ms {
			if m.Key != name {
				continue
			}
			seen++
			n, err := strconv.ParseInt(string(m.Value), 10, 64)
			if err != nil {
				return nil, false
			}
			counts[i] = n
		}
		if seen != 1 {
			return nil, false
		}
	}
	return counts, true
}

// readUsage reads an answer's usage into c: the prompt and completion
// counts (by usageCounts' rules), and the cache reads and writes of the
// prompt's details (cached_tokens, cache_write_tokens), each optional but
// read by the same rules when there; usage whose cache counts are not
// whole numbers, or exceed the prompt's, is usage not known.
func readUsage(c *provider.Completion, usage json.RawMessage, prompt, completion, details string) {
	n, ok := usageCounts(usage, prompt, completion)
	if !ok {
		return
	}
	var read, write int64
	if ms, _ := jsonobj.Members(usage); len(ms) > 0 {
		for _, m := range ms {
			if m.Key != details || string(m.Value) == "null" {
				continue
			}
			if read, write, ok = cacheCounts(m.Value); !ok || read+write > n[0] {
				return
			}
		}
	}
	c.PromptTokens, c.CompletionTokens, c.CacheReadTokens, c.CacheWriteTokens, c.UsageKnown = n[0], n[1], read, write, true
}

// cacheCounts reads the cache counts of a usage's prompt details: each of
// cached_tokens and cache_write_tokens absent (0), or there once as a
// whole number.
func cacheCounts(details json.RawMessage) (read, write int64, ok bool) {
	if !json.Valid(details) {
		return 0, 0, false
	}
	ms, ok := jsonobj.Members(details)
	if !ok {
		return 0, 0, false
	}
	counts := map[string]*int64{"cached_tokens": &read, "cache_write_tokens": &write}
	seen := map[string]bool{}
	for _, m := range ms {
		dst, known := counts[m.Key]
		if !known || string(m.Value) == "null" {
			continue
		}
		n, err := strconv.ParseInt(string(m.Value), 10, 64)
		if err != nil || n < 0 || seen[m.Key] {
			return 0, 0, false
		}
		*dst, seen[m.Key] = n, true
	}
	return read, write, true
}

// text is the text of a message or a delta: its content, and its
// reasoning under either name providers use.
type text struct {
	Content          string `json:"content"`
	Reasoning        string `json:"reasoning"`
	ReasoningContent string `json:"reasoning_content"`
}

func (t *text) reasoning() string { return t.Reasoning + t.ReasoningContent }

// inspect extracts id, usage, finish reason and text from an answer, or
// from a stream chunk (delta).
func inspect(obj map[string]json.RawMessage, delta bool) provider.Completion {
	var ch chunk
	ch.decode(obj)
	c := provider.Completion{UpstreamID: ch.ID}
	readUsage(&c, obj["usage"], "prompt_tokens", "completion_tokens", "prompt_tokens_details")
	if len(ch.Choices) > 0 {
		if f := ch.Choices[0].FinishReason; f != nil {
			c.FinishReason = *f
		}
		t := ch.Choices[0].Message
		if delta {
			t = ch.Choices[0].Delta
		}
		if t != nil {
			c.Output, c.Reasoning = t.Content, t.reasoning()
		}
	}
	c.Output, c.Reasoning = truncate(c.Output), truncate(c.Reasoning)
	return c
}

func truncate(s string) string {
	if len(s) > maxOutput {
		return s[:maxOutput]
	}
	return s
}

// eventReader returns what metering needs of one event of a stream (its
// data, parsed), and whether it is the stream's final event, which is held
// back.
type eventReader func(obj map[string]json.RawMessage) (part provider.Completion, final bool)

// stream copies a streamed answer (server-sent events) to w event by event,
// rewriting each event's data and flushing after each event. The last
// final event (read says which: for chat, a chunk that carries usage) is
// held back (Completion.Final), for the caller to add what metering
// decides and send it; lines other than data (such as event: lines) pass
// as they come. It returns what metering needs once the stream ends; an
// error means it broke off (the client left, or the upstream failed
// midway).
func stream(ctx context.Context, body io.Reader, w provider.StreamWriter, rewrite func(map[string]json.RawMessage), read eventReader) (provider.Completion, error) {
	s := &streamState{w: w, rewrite: rewrite, inspect: read}
	sc := bufio.NewScanner(body)
	sc.Buffer(make([]byte, 0, 64<<10), 4<<20)
	for sc.Scan() {
		if err := s.line(sc.Text()); err != nil {
			return s.finish(), err
		}
	}
	w.Flush()
	if err := sc.Err(); err != nil {
		return s.finish(), err
	}
	if ctx.Err() != nil {
		return s.finish(), ctx.Err()
	}
	return s.finish(), nil
}

// streamState is what stream knows as the events pass.
type streamState struct {
	w       provider.StreamWriter
	rewrite func(map[string]json.RawMessage)
	inspect eventReader
	c       provider.Completion
	output  strings.Builder
	reason  strings.Builder
	// held is the last final event's data, not sent yet: the lines after
	// it send it first, unless they are blank (its own end of event) or the
	// stream ends.
	held map[string]json.RawMessage
}

// line handles one line of the event stream.
func (s *streamState) line(line string) error {
	if s.c.Done {
		return nil // nothing follows [DONE]; its terminating blank line is the caller's
	}
	if line == "" && s.held != nil {
		return nil
	}
	data, isData := strings.CutPrefix(line, "data:")
	data = strings.TrimSpace(data)
	if isData && data == "[DONE]" {
		s.c.Done = true
		return nil
	}
	var obj map[string]json.RawMessage
	if isData {
		obj, _ = jsonobj.Unmarshal([]byte(data)) // nil unless an object
	}
	if obj != nil {
		if s.read(obj) {
			if err := s.sendHeld(); err != nil {
				return err
			}
			s.held = obj
			return nil
		}
		line = "data: " + string(jsonobj.Marshal(obj))
	}
	if err := s.sendHeld(); err != nil {
		return err
	}
	if _, err := io.WriteString(s.w, line+"\n"); err != nil {
		return err
	}
	if line == "" {
		s.w.Flush()
	}
	return nil
}

// read takes what metering needs of an event and rewrites it; it reports
// whether the event is final.
func (s *streamState) read(obj map[string]json.RawMessage) bool {
	part, final := s.inspect(obj)
	if part.UsageKnown {
		s.c.PromptTokens, s.c.CompletionTokens, s.c.UsageKnown = part.PromptTokens, part.CompletionTokens, true
		s.c.CacheReadTokens, s.c.CacheWriteTokens = part.CacheReadTokens, part.CacheWriteTokens
	}
	if part.UpstreamID != "" {
		s.c.UpstreamID = part.UpstreamID
	}
	if part.FinishReason != "" {
		s.c.FinishReason = part.FinishReason
	}
	if s.output.Len() < maxOutput {
		s.output.WriteString(part.Output)
	}
	if s.reason.Len() < maxOutput {
		s.reason.WriteString(part.Reasoning)
	}
	s.rewrite(obj)
	return final
}

// sendHeld sends the held chunk, as an event of its own.
func (s *streamState) sendHeld() error {
	if s.held == nil {
		return nil
	}
	b := jsonobj.Marshal(s.held)
	s.held = nil
	if _, err := io.WriteString(s.w, "data: "+string(b)+"\n\n"); err != nil {
		return err
	}
	s.w.Flush()
	return nil
}

func (s *streamState) finish() provider.Completion {
	c := s.c
	c.Output, c.Reasoning, c.Final = truncate(s.output.String()), truncate(s.reason.String()), s.held
	return c
}

// maxRetryAfter bounds how long a provider's Retry-After keeps its
// endpoint out of routing.
const maxRetryAfter = 10 * time.Minute

// retryAfter reads a Retry-After header (seconds, or an HTTP date), up to
// maxRetryAfter; zero when there is none, or it says nothing usable.
func retryAfter(v string, now time.Time) time.Duration {
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64); err == nil {
		return min(time.Duration(max(secs, 0))*time.Second, maxRetryAfter)
	}
	if t, err := http.ParseTime(v); err == nil {
		return min(max(t.Sub(now), 0), maxRetryAfter)
	}
	return 0
}
