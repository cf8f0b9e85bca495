package httpapi

import (
	"encoding/json"
	"unicode/utf8"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// The body of a model call is read once, on every metered request, by
// jsonobj.Canonical's scanner: it refuses what scanObject refuses
// (duplicate keys, NUL characters, nesting deeper than maxNesting) and
// writes each value as the provider will receive it, exactly as
// encoding/json would encode it after decoding it into an any with
// UseNumber. The body is first checked by json.Valid and utf8.Valid (a
// stray byte would reach the provider as U+FFFD, three bytes, past what
// its reservation was estimated from); when any refuses it, scanObject
// reads it again to say where, in the words every other body's errors use.

// member is a member of a JSON object (see jsonobj.Member).
type member = jsonobj.Member

// readObject reads a body that must be one JSON object and returns its
// members in order, each with its value re-encoded.
func readObject(raw []byte) ([]member, error) {
	if !json.Valid(raw) || !utf8.Valid(raw) {
		return nil, scanError(raw)
	}
	ms, ok := jsonobj.Canonical(raw, maxNesting)
	if !ok {
		return nil, scanError(raw)
	}
	return ms, nil
}

// scanError is scanObject's error for a body readObject refused.
func scanError(raw []byte) error {
	if _, err := scanObject(raw, nil); err != nil {
		return err
	}
	return gatehouse.Errorf(gatehouse.EINVALID, "malformed JSON") // never: the two refuse alike
}

// canonical returns the members' re-encoded values by key.
func canonical(ms []member) map[string]json.RawMessage {
	out := make(map[string]json.RawMessage, len(ms))
	for _, m := range ms {
		out[m.Key] = m.Canon
	}
	return out
}

// keysOf returns the members' keys in order.
func keysOf(ms []member) []string {
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = m.Key
	}
	return keys
}

// find returns the value of the member named key, or nil.
func find(ms []member, key string) json.RawMessage {
	for _, m := range ms {
		if m.Key == key {
			return m.Value
		}
	}
	return nil
}
