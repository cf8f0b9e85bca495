package httpapi_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestUsageAccountingOption: OpenRouter's usage accounting option
// (usage: {include: true}, which @openrouter/ai-sdk-provider sends) is
// accepted on chat completions and the Responses API, answered with the
// usage and its cost as every answer is, and never forwarded; anything
// but an object of include is a 400 naming the field.
func TestUsageAccountingOption(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	for _, include := range []bool{true, false} {
		for _, stream := range []bool{false, true} {
			res := e.chat(e.key, chatBody("acme/chat", "usage", map[string]any{"include": include}, "stream", stream)).want(t, http.StatusOK)
			if !strings.Contains(string(res.Body), `"cost":`) {
				t.Errorf("include %v stream %v: no cost in the answer: %.400s", include, stream, res.Body)
			}
			e.respond(e.key, respondBody("acme/chat", "usage", map[string]any{"include": include}, "stream", stream)).want(t, http.StatusOK)
		}
	}
	for _, sent := range e.up.requests() {
		if _, ok := sent["usage"]; ok {
			t.Errorf("usage was forwarded: %v", sent)
		}
	}
	for _, bad := range []struct {
		usage any
		want  string
	}{
		{"yes", "usage: must be an object"},
		{map[string]any{"include": "yes"}, "usage.include"},
		{map[string]any{"include": true, "detail": 1}, "usage.detail"},
		{[]any{true}, "usage: must be an object"},
	} {
		for _, call := range []func() *response{
			func() *response { return e.chat(e.key, chatBody("acme/chat", "usage", bad.usage)) },
			func() *response { return e.respond(e.key, respondBody("acme/chat", "usage", bad.usage)) },
		} {
			if msg := call().want(t, http.StatusBadRequest).errorMessage(t); !strings.Contains(msg, bad.want) {
				t.Errorf("usage %v: message %q, want %q", bad.usage, msg, bad.want)
			}
		}
	}
}
