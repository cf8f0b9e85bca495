package jsonobj

import (
	"bytes"
	"encoding/json"
	"maps"
	"testing"
)

var readCases = []string{
	`{"id":"x","choices":[{"message":{"content":"hi \"there\""}}],"usage":{"prompt_tokens":3}}`,
	` { "a" : 1 , "a" : [ 2 , { "b" : null } ] , "\u00e9\n" : "x" , "k` + "\xff" + `" : true } `,
	`{}`, `[]`, `[1, "a", {"b": [2]}, [3]]`, `null`, `"x"`, `1`, `{"a":1`, `{"a":1}x`, ``,
}

func TestUnmarshal(t *testing.T) {
	for _, c := range readCases {
		checkUnmarshal(t, []byte(c))
	}
}

// FuzzUnmarshal: Unmarshal reads what json.Unmarshal reads into a
// map[string]json.RawMessage, refuses what it refuses or leaves nil, and
// Elements reads what it reads into a []json.RawMessage.
func FuzzUnmarshal(f *testing.F) {
	for _, c := range readCases {
		f.Add(c)
	}
	f.Fuzz(func(t *testing.T, s string) { checkUnmarshal(t, []byte(s)) })
}

func checkUnmarshal(t *testing.T, data []byte) {
	t.Helper()
	var want map[string]json.RawMessage
	wantErr := json.Unmarshal(data, &want)
	got, err := Unmarshal(data)
	if (err != nil) != (wantErr != nil || want == nil) {
		t.Fatalf("%q: Unmarshal error %v, encoding/json %v (%v)", data, err, wantErr, want)
	}
	if err == nil && !maps.EqualFunc(got, want, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) }) {
		t.Fatalf("%q: Unmarshal = %q, encoding/json %q", data, got, want)
	}
	var wantElems []json.RawMessage
	if json.Unmarshal(data, &wantElems) == nil && wantElems != nil {
		elems, ok := Elements(data)
		if !ok || len(elems) != len(wantElems) {
			t.Fatalf("%q: Elements = %q, encoding/json %q", data, elems, wantElems)
		}
		for i := range elems {
			if !bytes.Equal(elems[i], wantElems[i]) {
				t.Fatalf("%q: Elements = %q, encoding/json %q", data, elems, wantElems)
			}
		}
	}
}
