package httpapi_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"gatehouse"
)

// responseEvent is the part of a Responses stream event the tests read.
type responseEvent struct {
	Type     string          `json:"type"`
	Sequence int             `json:"sequence_number"`
	Delta    string          `json:"delta"`
	Response *responseAnswer `json:"response"`
}

// nextEvent reads the next data event of a Responses stream.
func nextEvent(t *testing.T, r *bufio.Reader, seen *[]string) responseEvent {
	t.Helper()
	var ev responseEvent
	if data := nextData(t, r, seen); json.Unmarshal([]byte(data), &ev) != nil {
		t.Fatalf("event %q", data)
	}
	return ev
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	hold := make(chan struct{})
	e := newChatEnv(t, func(u *fakeUpstream) { u.hold = hold }, map[string]any{"limit": 1, "limit_reset": "weekly"})
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	res := e.sseClientAt(context.Background(), srv, "/api/v1/responses", respondBody("acme/chat", "stream", true))
	e.checkStreamHeadAt(res, "/api/v1/responses")
	r := bufio.NewReader(res.Body)
	var seen []string

	// The events arrive as they come, while the provider holds the rest:
	// the response they carry has Gatehouse's id and the model's slug.
	created := nextEvent(t, r, &seen)
	if created.Type != "response.created" || created.Response == nil || !strings.HasPrefix(created.Response.ID, "gen-") ||
		created.Response.Model != "acme/chat" {
		t.Fatalf("first event %+v", created)
	}
	id := created.Response.ID
	if delta := nextEvent(t, r, &seen); delta.Type != "response.output_text.delta" || delta.Delta != "Hel" {
		t.Errorf("second event %+v", delta)
	}
	if _, _, held := e.ledger(e.hash); held != 1 {
		t.Errorf("%d reservations while streaming, want 1", held)
	}
	close(hold)
	if delta := nextEvent(t, r, &seen); delta.Delta != "lo" {
		t.Errorf("third event %+v", delta)
	}
	// The final event comes once the call is metered, with its cost.
	final := nextEvent(t, r, &seen)
	cost := chatCost(11, 7)
	if final.Type != "response.completed" || final.Response.ID != id || final.Response.Usage["cost"] != usdFloat(cost) ||
		final.Response.Usage["input_tokens"] != 11.0 || final.Response.Usage["output_tokens"] != 7.0 {
		t.Errorf("final event %+v", final)
	}
	if m := e.money(e.hash); m.Usage != cost {
		t.Errorf("at the final event the usage is %s, want %s", m.Usage, cost)
	}
	if rest, _ := io.ReadAll(r); strings.TrimSpace(string(rest)) != "" {
		t.Errorf("after the final event: %q", rest)
	}
	// The event lines, and the provider's comment, pass as they came.
	for _, line := range []string{"event: response.created", ": keep-alive", "event: response.completed"} {
		if !strings.Contains(strings.Join(seen, "\n"), line) {
			t.Errorf("%q did not pass: %q", line, seen)
		}
	}
	if reqs := e.up.requests(); len(reqs) != 1 || reqs[0]["stream"] != true || reqs[0]["max_output_tokens"] != float64(chatMaxTokens) {
		t.Errorf("the provider got %v", reqs)
	}
	if statuses, _, held := e.ledger(e.hash); len(statuses) != 1 || statuses[0] != "completed" || held != 0 {
		t.Errorf("ledger %v, %d reservations", statuses, held)
	}
	var gen struct {
		Data struct {
			Streamed bool  `json:"streamed"`
			Tokens   int64 `json:"tokens_completion"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/generation?id="+id, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
	if !gen.Data.Streamed || gen.Data.Tokens != 7 {
		t.Errorf("generation %+v", gen.Data)
	}
}

// TestResponsesStreamWithoutFinal: a provider whose stream ends without
// its final event is charged the reservation, and the stream ends with a
// response.failed event of Gatehouse's that says so and carries that cost.
func TestResponsesStreamWithoutFinal(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.noFinal = true }, nil)
	res := e.respond(e.key, respondBody("acme/exact", "stream", true, "max_output_tokens", 100)).want(t, http.StatusOK)
	reserved := gatehouse.Money(gatehouse.NanosPerUSD / 10)
	events := strings.Split(strings.TrimSuffix(string(res.Body), "\n\n"), "\n\n")
	last := events[len(events)-1]
	data, ok := strings.CutPrefix(last, "event: response.failed\ndata: ")
	var ev struct {
		Type     string `json:"type"`
		Sequence int    `json:"sequence_number"`
		Response struct {
			ID     string         `json:"id"`
			Status string         `json:"status"`
			Error  map[string]any `json:"error"`
			Usage  map[string]any `json:"usage"`
		} `json:"response"`
	}
	if !ok || json.Unmarshal([]byte(data), &ev) != nil {
		t.Fatalf("last event %q", last)
	}
	if ev.Type != "response.failed" || ev.Sequence != 3 || ev.Response.Status != "failed" || ev.Response.Error["code"] != "server_error" ||
		ev.Response.Usage["cost"] != usdFloat(reserved) || !strings.HasPrefix(ev.Response.ID, "gen-") {
		t.Errorf("last event %s", data)
	}
	if statuses, costs, held := e.ledger(e.hash); len(statuses) != 1 || statuses[0] != "partial" || costs[0] != reserved || held != 0 {
		t.Errorf("ledger %v %v, %d reservations; want one partial entry at %s", statuses, costs, held, reserved)
	}
}

// TestResponsesClientDisconnect: the client leaves mid-stream. The
// provider's call is cancelled, and the call is charged its reservation,
// as no usage arrived.
func TestResponsesClientDisconnect(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.hold = make(chan struct{}) }, nil)
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	res := e.sseClientAt(ctx, srv, "/api/v1/responses", respondBody("acme/exact", "stream", true, "max_output_tokens", 100))
	e.checkStreamHeadAt(res, "/api/v1/responses")
	var seen []string
	nextData(t, bufio.NewReader(res.Body), &seen)
	cancel()
	res.Body.Close()
	e.wantChargedReservation(100_000_000)
}

func TestResponsesPreset(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	tool := map[string]any{"type": "function", "name": "get_weather", "parameters": map[string]any{"type": "object"}}
	e.do("POST", "/api/v1/presets/bot/responses", e.mgmt, map[string]any{"model": "acme/chat", "instructions": "Be brief.",
		"max_output_tokens": 40, "temperature": 0.3, "reasoning": map[string]any{"effort": "low"},
		"text":  map[string]any{"format": map[string]any{"type": "json_schema", "name": "answer", "schema": map[string]any{"type": "object"}}, "verbosity": "low"},
		"tools": []any{tool}, "tool_choice": map[string]any{"type": "function", "name": "get_weather"}}).want(t, http.StatusOK)

	e.respond(e.key, map[string]any{"model": "@preset/bot", "input": "hi"}).want(t, http.StatusOK)
	wantJSON(t, "the provider's body", map[string]any{"model": "chat", "max_output_tokens": 40, "temperature": 0.3, "store": false, "stream": false,
		"input":     []any{map[string]any{"role": "system", "content": "Be brief."}, map[string]any{"role": "user", "content": "hi"}},
		"reasoning": map[string]any{"effort": "low"},
		"text":      map[string]any{"format": map[string]any{"type": "json_schema", "name": "answer", "schema": map[string]any{"type": "object"}}, "verbosity": "low"},
		"tools":     []any{tool}, "tool_choice": map[string]any{"type": "function", "name": "get_weather"}}, e.up.requests()[0])

	// The request's own fields win, text field by field.
	e.respond(e.key, map[string]any{"model": "acme/exact@preset/bot", "input": "hi", "max_output_tokens": 5,
		"text": map[string]any{"verbosity": "high"}}).want(t, http.StatusOK)
	sent := e.up.requests()[1]
	if sent["model"] != "exact" || sent["max_output_tokens"] != 5.0 {
		t.Errorf("the provider got %v", sent)
	}
	wantJSON(t, "text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "answer", "schema": map[string]any{"type": "object"}}, "verbosity": "high"}, sent["text"])

	// A preset made from a chat body with a field the Responses API lacks.
	e.do("POST", "/api/v1/presets/chatty/chat/completions", e.mgmt, map[string]any{"model": "acme/chat", "stop": []string{"END"}}).want(t, http.StatusOK)
	msg := e.respond(e.key, map[string]any{"model": "@preset/chatty", "input": "hi"}).want(t, http.StatusBadRequest).errorMessage(t)
	if !strings.Contains(msg, "stop") || !strings.Contains(msg, `"chatty"`) {
		t.Errorf("message %q", msg)
	}
	e.respond(e.key, map[string]any{"model": "@preset/nobody", "input": "hi"}).want(t, http.StatusBadRequest)
	// The preset comes before the guardrails: its model is refused as the
	// request's own would be.
	g := e.guardrail(map[string]any{"ignored_models": []string{"acme/chat"}})
	e.assign(g, "keys", e.hash)
	wantBlocked(t, e.respond(e.key, map[string]any{"preset": "bot", "input": "hi"}), g, "ignored_models")
	if n := len(e.up.requests()); n != 2 {
		t.Errorf("the provider was called %d times, want 2", n)
	}
}
