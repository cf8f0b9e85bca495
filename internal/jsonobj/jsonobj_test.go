package jsonobj

import (
	"bytes"
	"encoding/json"
	"testing"
)

// Marshal writes what encoding/json writes, but for the spacing inside
// values; the output is one line, and reads back as the same object.
func TestMarshal(t *testing.T) {
	for _, in := range []string{
		`{}`,
		`{"b":1,"a":"x","c":null}`,
		`{"choices":[{"message":{"content":"<b>&</b>","role":"assistant"}}],"usage":{"prompt_tokens":3}}`,
		`{"z": [1, 2,
		  3], "k\"ey": "v", "é": {"a" : true}, "\u0001": 1.5e3}`,
	} {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(in), &obj); err != nil {
			t.Fatal(err)
		}
		got := Marshal(obj)
		want, _ := json.Marshal(obj)
		var gotC, wantC bytes.Buffer
		if err := json.Compact(&gotC, got); err != nil {
			t.Fatalf("%s: not JSON: %s", in, got)
		}
		_ = json.Compact(&wantC, want)
		if !jsonEqual(gotC.Bytes(), wantC.Bytes()) {
			t.Errorf("Marshal(%s) = %s, want %s", in, got, want)
		}
		if bytes.ContainsAny(got, "\n\r") {
			t.Errorf("Marshal(%s) spans lines: %q", in, got)
		}
	}
	if got := string(Marshal(map[string]json.RawMessage{"a": nil})); got != `{"a":null}` {
		t.Errorf("nil value: %s", got)
	}
}

// FuzzMarshal: whatever object encoding/json reads, Marshal writes it back
// so that it reads the same.
func FuzzMarshal(f *testing.F) {
	f.Add([]byte(`{"a":1,"b":[true,{"c":"d\n"}]}`))
	f.Add([]byte("{\"x\":\n{\"y\" :\r\n 2}}"))
	f.Fuzz(func(t *testing.T, in []byte) {
		var obj map[string]json.RawMessage
		if json.Unmarshal(in, &obj) != nil || obj == nil {
			return
		}
		got := Marshal(obj)
		want, err := json.Marshal(obj)
		if err != nil {
			return
		}
		if !jsonEqual(got, want) {
			t.Fatalf("Marshal(%q) = %q, want %q", in, got, want)
		}
		if bytes.ContainsAny(got, "\n\r") {
			t.Fatalf("Marshal(%q) spans lines: %q", in, got)
		}
	})
}

// jsonEqual reports whether two JSON texts hold the same value.
func jsonEqual(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	xa, _ := json.Marshal(x)
	ya, _ := json.Marshal(y)
	return bytes.Equal(xa, ya)
}

func BenchmarkMarshal(b *testing.B) {
	in := []byte(`{"choices":[{"finish_reason":"stop","index":0,"message":{"content":"Hello","role":"assistant"}}],"created":1700000000,"id":"gen-1","model":"acme/chat","object":"chat.completion","provider":"acme","system_fingerprint":"fp","usage":{"completion_tokens":7,"prompt_tokens":11,"total_tokens":18}}`)
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(in, &obj)
	b.Run("jsonobj", func(b *testing.B) {
		for b.Loop() {
			Marshal(obj)
		}
	})
	b.Run("encoding/json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(obj)
		}
	})
}
