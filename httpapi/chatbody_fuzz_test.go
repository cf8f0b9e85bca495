package httpapi_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"unicode"
)

// FuzzChatBody: for every body Gatehouse accepts, what the provider
// receives carries exactly the cap Gatehouse reserved, read the same by Go's
// case-insensitive decoder and by an exact-key (case-sensitive) decoder, and
// no other key folds to a cap's name.
func FuzzChatBody(f *testing.F) {
	for _, c := range smuggled {
		f.Add(c.body)
	}
	for _, b := range []string{
		`{"model":"acme/exact","messages":[{"role":"user","content":"hi"}]}`,
		`{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":7}`,
		`{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":9,"max_tokens":9}`,
		`{"model":"acme/exact","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}],"n":1,"temperature":0.5}`,
	} {
		f.Add(b)
	}
	e := newChatEnv(f, func(u *fakeUpstream) { u.completionTokens = 1 }, nil)
	f.Fuzz(func(t *testing.T, body string) {
		before := len(e.up.requests())
		req := httptest.NewRequest("POST", "/api/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+e.key)
		rec := httptest.NewRecorder()
		e.handler.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			return
		}
		reqs := e.up.requests()
		if len(reqs) != before+1 {
			t.Skip("another request interleaved")
		}
		sent, _ := json.Marshal(reqs[len(reqs)-1])
		var exact map[string]json.RawMessage
		if err := json.Unmarshal(sent, &exact); err != nil {
			t.Fatal(err)
		}
		var folded struct {
			MaxTokens           *int `json:"max_tokens"`
			MaxCompletionTokens *int `json:"max_completion_tokens"`
		}
		if err := json.Unmarshal(sent, &folded); err != nil {
			t.Fatal(err)
		}
		var client struct {
			Model               string `json:"model"`
			MaxTokens           *int   `json:"max_tokens"`
			MaxCompletionTokens *int   `json:"max_completion_tokens"`
		}
		_ = json.Unmarshal([]byte(body), &client)
		want, known := map[string]int{"acme/exact": 100, "acme/chat": chatMaxTokens}[client.Model]
		if !known {
			return
		}
		if client.MaxTokens != nil {
			want = *client.MaxTokens
		} else if client.MaxCompletionTokens != nil {
			want = *client.MaxCompletionTokens
		}
		wantRaw, _ := json.Marshal(want)
		if string(exact["max_tokens"]) != string(wantRaw) || string(exact["max_completion_tokens"]) != string(wantRaw) ||
			folded.MaxTokens == nil || *folded.MaxTokens != want || folded.MaxCompletionTokens == nil || *folded.MaxCompletionTokens != want {
			t.Fatalf("body %s reached the provider as %s; want the cap %d under both names", body, sent, want)
		}
		for k := range exact {
			if k != "max_tokens" && k != "max_completion_tokens" && (strings.EqualFold(k, "max_tokens") || strings.EqualFold(k, "max_completion_tokens") || strings.IndexFunc(k, func(r rune) bool { return r > unicode.MaxASCII }) >= 0) {
				t.Fatalf("key %q reached the provider beside the cap", k)
			}
		}
	})
}
