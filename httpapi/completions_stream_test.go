package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// streamChunk is the part of a stream chunk the tests read.
type streamChunk struct {
	ID       string `json:"id"`
	Object   string `json:"object"`
	Model    string `json:"model"`
	Provider string `json:"provider"`
	Choices  []struct {
		Delta struct {
			Content string `json:"content"`
		} `json:"delta"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int64 `json:"prompt_tokens"`
		CompletionTokens int64 `json:"completion_tokens"`
	} `json:"usage"`
}

// checkStreamHead checks the status and headers of a streamed answer
// against the document and the event-stream conventions.
func (e *chatEnv) checkStreamHead(res *http.Response) {
	e.t.Helper()
	e.checkStreamHeadAt(res, "/api/v1/chat/completions")
}

// checkStreamHeadAt is checkStreamHead for the model endpoint at path.
func (e *chatEnv) checkStreamHeadAt(res *http.Response, path string) {
	e.t.Helper()
	if res.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(res.Body)
		e.t.Fatalf("status %d: %s", res.StatusCode, body)
	}
	if ct := res.Header.Get("Content-Type"); ct != "text/event-stream" {
		e.t.Errorf("Content-Type %q", ct)
	}
	if cc := res.Header.Get("Cache-Control"); cc != "no-cache" {
		e.t.Errorf("Cache-Control %q", cc)
	}
	// The document describes the answer (the body of a stream is not JSON).
	e.checker.check(e.t, httptest.NewRequest("POST", path, nil), res.StatusCode, res.Header, nil)
}

func TestChatCompletionStream(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	e := newChatEnv(t, func(u *fakeUpstream) { u.hold = hold }, map[string]any{"limit": 1, "limit_reset": "weekly"})
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	res := e.sseClient(context.Background(), srv, chatBody("acme/chat", "stream", true))
	e.checkStreamHead(res)
	r := bufio.NewReader(res.Body)
	var seen []string

	// The first event arrives while the upstream still holds the rest:
	// events are flushed as they come, rewritten.
	var first streamChunk
	if err := json.Unmarshal([]byte(nextData(t, r, &seen)), &first); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(first.ID, "gen-") || first.Model != "acme/chat" || first.Provider != "acme" ||
		first.Object != "chat.completion.chunk" || first.Choices[0].Delta.Content != "Hel" {
		t.Errorf("first chunk %+v", first)
	}
	close(hold)

	var chunks []streamChunk
	for {
		data := nextData(t, r, &seen)
		if data == "[DONE]" {
			break
		}
		var c streamChunk
		if err := json.Unmarshal([]byte(data), &c); err != nil {
			t.Fatalf("chunk %q: %v", data, err)
		}
		chunks = append(chunks, c)
	}
	// [DONE] comes only once the request is metered: a client that stops
	// reading there sees its usage.
	if m := e.money(e.hash); m.Usage != chatCost(11, 7) {
		t.Errorf("at [DONE] the usage is %s, want %s", m.Usage, chatCost(11, 7))
	}
	if rest, _ := io.ReadAll(r); strings.TrimSpace(string(rest)) != "" {
		t.Errorf("after [DONE]: %q", rest)
	}
	if seen[0] != ": PROCESSING" {
		t.Errorf("the upstream's comment did not pass: %q", seen)
	}
	if len(chunks) != 2 || chunks[1].Usage == nil || chunks[1].Usage.PromptTokens != 11 || chunks[1].Usage.CompletionTokens != 7 {
		t.Fatalf("chunks %+v", chunks)
	}
	for _, c := range chunks {
		if c.ID != first.ID || c.Model != "acme/chat" || c.Provider != "acme" {
			t.Errorf("chunk not rewritten: %+v", c)
		}
	}

	// The upstream was asked for the usage chunk and capped.
	reqs := e.up.requests()
	opts, _ := reqs[0]["stream_options"].(map[string]any)
	if len(reqs) != 1 || opts["include_usage"] != true || reqs[0]["max_tokens"] != float64(chatMaxTokens) || reqs[0]["stream"] != true {
		t.Errorf("upstream got %v", reqs)
	}

	// The cost is the usage chunk's.
	cost := chatCost(11, 7)
	m := e.money(e.hash)
	if m.Usage != cost || m.UsageWeekly != cost || m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1)-cost {
		t.Errorf("usage %+v, want %s", m, cost)
	}
	statuses, _, held := e.ledger(e.hash)
	if len(statuses) != 1 || statuses[0] != "completed" || held != 0 {
		t.Errorf("ledger %v, %d reservations", statuses, held)
	}
	var gen struct {
		Data struct {
			Streamed  bool  `json:"streamed"`
			Cancelled bool  `json:"cancelled"`
			Tokens    int64 `json:"tokens_completion"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+first.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	if !gen.Data.Streamed || gen.Data.Cancelled || gen.Data.Tokens != 7 {
		t.Errorf("generation %+v", gen.Data)
	}
}

func TestChatCompletionStreamKeepsStreamOptions(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	res := e.chat(e.key, chatBody("acme/chat", "stream", true, "max_tokens", 12,
		"stream_options", map[string]any{"include_usage": false, "other": "kept"})).want(t, http.StatusOK)
	if !strings.HasSuffix(string(res.Body), "data: [DONE]\n\n") {
		t.Errorf("body %q", res.Body)
	}
	opts, _ := e.up.requests()[0]["stream_options"].(map[string]any)
	if opts["include_usage"] != true || opts["other"] != "kept" || e.up.requests()[0]["max_tokens"] != float64(12) {
		t.Errorf("upstream got %v", e.up.requests()[0])
	}
}

// TestChatCompletionStreamWithoutUsage: a provider that ignores
// include_usage; the request is charged its reservation, which with
// acme/exact and max_tokens 100 is exactly $0.10, and the ledger says so.
func TestChatCompletionStreamWithoutUsage(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.noUsage = true }, nil)
	res := e.chat(e.key, chatBody("acme/exact", "stream", true, "max_tokens", 100)).want(t, http.StatusOK)
	reserved := gatehouse.Money(100_000_000)
	// The stream still ends with a usage chunk: what was charged, no tokens.
	events := strings.Split(strings.TrimSuffix(string(res.Body), "\n\n"), "\n\n")
	if len(events) < 2 || events[len(events)-1] != "data: [DONE]" || strings.Count(string(res.Body), `"usage"`) != 1 {
		t.Fatalf("body %q", res.Body)
	}
	var last struct {
		Choices []any `json:"choices"`
		Usage   struct {
			PromptTokens     int64           `json:"prompt_tokens"`
			CompletionTokens int64           `json:"completion_tokens"`
			Cost             gatehouse.Money `json:"cost"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(strings.TrimPrefix(events[len(events)-2], "data: ")), &last); err != nil ||
		len(last.Choices) != 0 || last.Usage.Cost != reserved || last.Usage.PromptTokens != 0 || last.Usage.CompletionTokens != 0 {
		t.Errorf("last chunk %s (%v), want no choices and usage costing the reservation %s", events[len(events)-2], err, reserved)
	}
	if m := e.money(e.hash); m.Usage != reserved {
		t.Errorf("usage %s, want the reservation %s", m.Usage, reserved)
	}
	statuses, costs, held := e.ledger(e.hash)
	if len(statuses) != 1 || statuses[0] != "partial" || costs[0] != reserved || held != 0 {
		t.Errorf("ledger %v %v, %d reservations; want one partial entry at %s", statuses, costs, held, reserved)
	}
	// Without usage in a whole answer, the same.
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 100)).want(t, http.StatusOK)
	if statuses, costs, _ := e.ledger(e.hash); len(statuses) != 2 || statuses[1] != "partial" || costs[1] != reserved {
		t.Errorf("ledger %v %v", statuses, costs)
	}
}

// TestChatCompletionClientDisconnect: the client leaves mid-stream. The
// upstream call is canceled, and the request is settled (at its
// reservation, as no usage arrived) even though the client is gone.
func TestChatCompletionClientDisconnect(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.hold = make(chan struct{}) }, nil)
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := e.sseClient(ctx, srv, chatBody("acme/exact", "stream", true, "max_tokens", 100))
	e.checkStreamHead(res)
	var seen []string
	nextData(t, bufio.NewReader(res.Body), &seen)
	if _, _, held := e.ledger(e.hash); held != 1 {
		t.Errorf("%d reservations while streaming, want 1", held)
	}
	cancel()
	res.Body.Close()
	e.wantChargedReservation(100_000_000)
	if m := e.money(e.hash); m.Usage != 100_000_000 {
		t.Errorf("usage %s", m.Usage)
	}
}

// TestChatCompletionStreamLeftBeforeAnswer: the client of a stream leaves
// after the provider has the request but before it answers (a long
// prefill, say). The call is canceled at the provider, which may have
// worked on it, so it is charged what was reserved, as a stream cut short
// is; it is not free.
func TestChatCompletionStreamLeftBeforeAnswer(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.delay = time.Minute }, nil)
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	data, _ := json.Marshal(chatBody("acme/exact", "stream", true, "max_tokens", 100))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/chat/completions", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.key)
	errc := make(chan error, 1)
	go func() {
		res, err := srv.Client().Do(req)
		if err == nil {
			res.Body.Close()
		}
		errc <- err
	}()
	for deadline := time.Now().Add(10 * time.Second); len(e.up.requests()) == 0; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the upstream got no request")
		}
	}
	cancel()
	if err := <-errc; err == nil {
		t.Fatal("the request was answered")
	}
	e.wantChargedReservation(100_000_000)
	if m := e.money(e.hash); m.Usage != 100_000_000 {
		t.Errorf("usage %s, want the reservation", m.Usage)
	}
}

// sseClient posts a streamed chat completion to a real server running the
// environment's handler and returns the response, its body open.
func (e *chatEnv) sseClient(ctx context.Context, srv *httptest.Server, body any) *http.Response {
	e.t.Helper()
	return e.sseClientAt(ctx, srv, "/api/v1/chat/completions", body)
}

// sseClientAt is sseClient for the model endpoint at path.
func (e *chatEnv) sseClientAt(ctx context.Context, srv *httptest.Server, path string, body any) *http.Response {
	e.t.Helper()
	data, _ := json.Marshal(body)
	req, err := http.NewRequestWithContext(ctx, "POST", srv.URL+path, bytes.NewReader(data))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.key)
	res, err := srv.Client().Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	e.t.Cleanup(func() { res.Body.Close() })
	return res
}

// nextData reads lines up to the next data event and returns its payload.
func nextData(t testing.TB, r *bufio.Reader, seen *[]string) string {
	t.Helper()
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			t.Fatalf("stream ended (%v) after %q", err, *seen)
		}
		line = strings.TrimRight(line, "\n")
		*seen = append(*seen, line)
		if data, ok := strings.CutPrefix(line, "data: "); ok {
			return data
		}
	}
}

// wantChargedReservation waits until the provider's call was canceled, and
// the ledger holds one partial entry charged at the reservation and no
// open reservation: a stream that broke off.
func (e *chatEnv) wantChargedReservation(reserved gatehouse.Money) {
	e.t.Helper()
	select {
	case <-e.up.canceled:
	case <-time.After(10 * time.Second):
		e.t.Fatal("the upstream call was not canceled")
	}
	var statuses []string
	var costs []gatehouse.Money
	held := 1
	for deadline := time.Now().Add(10 * time.Second); (len(statuses) == 0 || held != 0) && time.Now().Before(deadline); {
		time.Sleep(20 * time.Millisecond)
		statuses, costs, held = e.ledger(e.hash)
	}
	if len(statuses) != 1 || statuses[0] != "partial" || costs[0] != reserved || held != 0 {
		e.t.Fatalf("ledger %v %v, %d reservations; want one partial entry at the reservation", statuses, costs, held)
	}
}
