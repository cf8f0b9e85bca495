package httpapi

import (
	"encoding/json"
	"testing"
)

func TestNormalizeAnswer(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{`{"object":"chat.completion","usage":{"prompt_tokens":1}}`, `{"object":"chat.completion","system_fingerprint":null,"usage":{"prompt_tokens":1}}`},
		{`{"object":"chat.completion","system_fingerprint":"fp","usage":null}`, `{"object":"chat.completion","system_fingerprint":"fp"}`},
		{`{"object":"chat.completion.chunk","system_fingerprint":null,"usage":null}`, `{"object":"chat.completion.chunk"}`},
		{`{"object":"chat.completion.chunk","system_fingerprint":"fp","usage":{"total_tokens":3}}`, `{"object":"chat.completion.chunk","system_fingerprint":"fp","usage":{"total_tokens":3}}`},
	} {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.in), &obj); err != nil {
			t.Fatal(err)
		}
		normalizeAnswer(obj)
		got, _ := json.Marshal(obj)
		if string(got) != tc.want {
			t.Errorf("normalizeAnswer(%s) = %s, want %s", tc.in, got, tc.want)
		}
	}
}
