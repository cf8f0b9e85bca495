package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// TestUsageCounts: a provider's usage is read by the exact names of its
// counts, each once and a whole number; a count that is missing, given
// twice, not a whole number, or out of range makes the usage not known
// (charged the reservation), and a name in another case, which
// encoding/json would fold onto the count, is ignored.
func TestUsageCounts(t *testing.T) {
	for _, c := range []struct {
		usage string
		want  []int64 // nil: not known
	}{
		{`{"prompt_tokens":50,"completion_tokens":9}`, []int64{50, 9}},
		{`{"prompt_tokens":50,"completion_tokens":9,"PROMPT_TOKENS":1,"Completion_Tokens":1}`, []int64{50, 9}},
		{`{"prompt_tokenſ":1,"prompt_tokens":50,"completion_tokens":9}`, []int64{50, 9}},
		{`{"prompt_tokens":-5,"completion_tokens":9}`, []int64{-5, 9}}, // the meter refuses negatives
		{`{"PROMPT_TOKENS":50,"completion_tokens":9}`, nil},
		{`{"prompt_tokens":50}`, nil},
		{`{"prompt_tokens":50,"prompt_tokens":1,"completion_tokens":9}`, nil},
		{`{"prompt_tokens":50.0,"completion_tokens":9}`, nil},
		{`{"prompt_tokens":5e1,"completion_tokens":9}`, nil},
		{`{"prompt_tokens":"50","completion_tokens":9}`, nil},
		{`{"prompt_tokens":5,"completion_tokens":99999999999999999999}`, nil},
		{`{"prompt_tokens":null,"completion_tokens":9}`, nil},
		{`null`, nil},
		{`[50,9]`, nil},
		{``, nil},
	} {
		got, ok := usageCounts(json.RawMessage(c.usage), "prompt_tokens", "completion_tokens")
		if ok != (c.want != nil) || ok && (got[0] != c.want[0] || got[1] != c.want[1]) {
			t.Errorf("%s: %v, %v; want %v", c.usage, got, ok, c.want)
		}
	}
}

// TestAnswersReadUsageExactly: chat, Responses and embeddings answers are
// charged by the exact usage counts, and an embeddings answer whose id or
// usage does not read is still delivered (usage not known), not thrown
// away after the provider's work.
func TestAnswersReadUsageExactly(t *testing.T) {
	obj := func(s string) map[string]json.RawMessage {
		m, err := jsonobj.Unmarshal([]byte(s))
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	chat := inspect(obj(`{"id":"c","choices":[],"usage":{"prompt_tokens":50,"completion_tokens":9,"PROMPT_TOKENS":1,"Completion_Tokens":1}}`), false)
	if !chat.UsageKnown || chat.PromptTokens != 50 || chat.CompletionTokens != 9 {
		t.Errorf("chat: %+v", chat)
	}
	if c := inspect(obj(`{"usage":{"prompt_tokens":50.0,"completion_tokens":9}}`), false); c.UsageKnown {
		t.Errorf("chat with a float count: %+v, want usage not known", c)
	}
	resp := inspectResponse(obj(`{"id":"r","status":"completed","usage":{"input_tokens":50,"output_tokens":9,"INPUT_TOKENS":1,"Output_Tokens":1}}`))
	if !resp.UsageKnown || resp.PromptTokens != 50 || resp.CompletionTokens != 9 {
		t.Errorf("responses: %+v", resp)
	}
	for body, want := range map[string]int64{
		`{"id":"e","data":[{"embedding":[1]}],"usage":{"prompt_tokens":40,"PROMPT_TOKENS":1},"USAGE":{"prompt_tokens":1}}`: 40,
		`{"id":5,"data":[{"embedding":[1]}],"usage":{"prompt_tokens":40}}`:                                                 40,
		`{"id":"e","data":[{"embedding":[1]}],"usage":{"prompt_tokens":40.0}}`:                                             -1,
		`{"id":"e","data":[{"embedding":[1]}],"usage":{"prompt_tokens":"40"}}`:                                             -1,
	} {
		c, err := readEmbeddings(strings.NewReader(body), nil)
		switch {
		case err != nil:
			t.Errorf("%s: %v, want it delivered", body, err)
		case want < 0 && c.UsageKnown, want >= 0 && (!c.UsageKnown || c.PromptTokens != want):
			t.Errorf("%s: %+v, want %d prompt tokens (-1: not known)", body, c, want)
		}
	}
}

// TestWholeAnswerTimeout: a whole answer still arriving when the
// provider's time is up is a timeout (408 to the client), not "an invalid
// answer".
func TestWholeAnswerTimeout(t *testing.T) {
	stall := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Content-Length", "100000")
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write([]byte(`{"id":"x",`))
		w.(http.Flusher).Flush()
		select {
		case <-stall:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(stall)
	p := &provider.Provider{ID: "slow", BaseURL: srv.URL + "/v1", Timeout: 200 * time.Millisecond}
	c := &Client{HTTP: srv.Client()}
	_, err := c.Complete(context.Background(), provider.CompletionCall{Provider: p, Model: &provider.Model{ID: "m"},
		Body: map[string]json.RawMessage{"messages": json.RawMessage(`[]`)}, MaxTokens: 10}, nil)
	var ue *provider.UpstreamError
	if !errors.As(err, &ue) || ue.Kind != provider.UpstreamTimeout {
		t.Fatalf("error %v, want an upstream timeout", err)
	}
}
