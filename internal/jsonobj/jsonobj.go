// Package jsonobj encodes JSON objects held as raw values
// (map[string]json.RawMessage), as the gateway reads providers' answers and
// rewrites a few of their fields, without encoding/json's reflection: the
// answer of every model call is written this way, so its cost is paid on
// every request.
package jsonobj

import (
	"bytes"
	"encoding/json"
	"slices"
)

var null = []byte("null")

// Marshal encodes obj as encoding/json does, keys sorted, each value as it
// is: a value must be valid JSON (read by encoding/json or made by it), and
// is copied without being compacted again, unless it spans lines, which a
// server-sent event cannot carry. A nil or empty value is null.
func Marshal(obj map[string]json.RawMessage) []byte {
	keys := make([]string, 0, len(obj))
	n := 2
	for k, v := range obj {
		keys = append(keys, k)
		n += len(k) + len(v) + 4
	}
	slices.Sort(keys)
	b := make([]byte, 0, n)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendKey(b, k)
		b = append(b, ':')
		b = appendValue(b, obj[k])
	}
	return append(b, '}')
}

// appendValue appends a raw value, on one line.
func appendValue(b []byte, v json.RawMessage) []byte {
	switch {
	case len(v) == 0:
		return append(b, null...)
	case bytes.ContainsAny(v, "\n\r"):
		var buf bytes.Buffer
		if json.Compact(&buf, v) != nil {
			return append(b, null...) // never: values are valid JSON
		}
		return append(b, buf.Bytes()...)
	}
	return append(b, v...)
}

// appendKey appends a key as a JSON string.
func appendKey(b []byte, k string) []byte { return AppendString(b, k) }

// AppendString appends s as a JSON string: as it is when it needs no
// escaping (the names of every field of the OpenAI-style answers), else as
// encoding/json writes it.
func AppendString(b []byte, k string) []byte {
	for i := 0; i < len(k); i++ {
		if c := k[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(k)
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, k...)
	return append(b, '"')
}
