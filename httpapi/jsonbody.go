package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"slices"
	"strings"
	"unicode/utf8"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// The body of a model call is read once, by a scanner over its bytes, on
// every metered request: it refuses what scanObject refuses (duplicate
// keys, NUL characters, nesting deeper than maxNesting) and writes each
// value as the provider will receive it, exactly as encoding/json would
// encode it after decoding it into an any with UseNumber: objects' keys
// sorted, strings unescaped and escaped again alike, numbers as written,
// no spaces. The body is first checked by json.Valid, so the scanner walks
// valid JSON only; when it finds a problem, scanObject reads the body again
// to say where, in the words every other body's errors use.

// member is a member of a JSON object: its key, unescaped; its value as
// the client wrote it; and (for readObject's members) the value re-encoded.
type member struct {
	key        string
	raw, canon json.RawMessage
}

// readObject reads a body that must be one JSON object and returns its
// members in order, each with its value re-encoded.
func readObject(raw []byte) ([]member, error) {
	i := skipSpace(raw, 0)
	if !json.Valid(raw) || i == len(raw) || raw[i] != '{' {
		return nil, scanError(raw)
	}
	w := canonWriter{b: raw, i: i + 1, out: make([]byte, 0, len(raw))}
	var spans []span
	var index map[string]bool
	for w.next() {
		key, ok := w.key()
		if !ok || duplicate(spans, &index, key) {
			return nil, scanError(raw)
		}
		w.i = skipSpace(raw, w.i) + 1 // ':'
		w.i = skipSpace(raw, w.i)
		from, start := len(w.out), w.i
		if !w.value(1) {
			return nil, scanError(raw)
		}
		spans = append(spans, span{key: key, from: from, to: len(w.out), start: start})
	}
	ms := make([]member, len(spans))
	for n, s := range spans {
		ms[n] = member{key: s.key, raw: raw[s.start:skipValue(raw, s.start)], canon: w.out[s.from:s.to:s.to]}
	}
	return ms, nil
}

// span is where a member's value was written, and (top level) read.
type span struct {
	key             string
	from, to, start int
}

// duplicate reports whether key is among the keys of spans, recording it
// in index once spans are too many to search.
func duplicate(spans []span, index *map[string]bool, key string) bool {
	if len(spans) < 32 {
		for _, s := range spans {
			if s.key == key {
				return true
			}
		}
		return false
	}
	if *index == nil {
		*index = make(map[string]bool, 2*len(spans))
		for _, s := range spans {
			(*index)[s.key] = true
		}
	}
	if (*index)[key] {
		return true
	}
	(*index)[key] = true
	return false
}

// scanError is scanObject's error for a body the scanner refused.
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
		out[m.key] = m.canon
	}
	return out
}

// keysOf returns the members' keys in order.
func keysOf(ms []member) []string {
	keys := make([]string, len(ms))
	for i, m := range ms {
		keys[i] = m.key
	}
	return keys
}

// find returns the value of the member named key, or nil.
func find(ms []member, key string) json.RawMessage {
	for _, m := range ms {
		if m.key == key {
			return m.raw
		}
	}
	return nil
}

// canonWriter re-encodes valid JSON from b[i:] into out.
type canonWriter struct {
	b   []byte
	i   int
	out []byte
}

// next moves past the space and comma before a member or element and
// reports whether there is one; if not, it moves past the closing bracket.
func (w *canonWriter) next() bool {
	w.i = skipSpace(w.b, w.i)
	if c := w.b[w.i]; c == '}' || c == ']' {
		w.i++
		return false
	} else if c == ',' {
		w.i = skipSpace(w.b, w.i+1)
	}
	return true
}

// key reads the string at i, a key, unescaped; false if it holds a NUL.
func (w *canonWriter) key() (string, bool) {
	start, end := w.i, skipString(w.b, w.i)
	w.i = end
	if s := w.b[start+1 : end-1]; bytes.IndexByte(s, '\\') < 0 && ascii(s) {
		return string(s), true
	}
	var k string
	if json.Unmarshal(w.b[start:end], &k) != nil || strings.IndexByte(k, 0) >= 0 {
		return "", false
	}
	return k, true
}

// value writes the value at i, a member or element of a container at
// nesting depth depth; false if it is refused (see scanValue).
func (w *canonWriter) value(depth int) bool {
	switch c := w.b[w.i]; c {
	case '{':
		return depth < maxNesting && w.object(depth+1)
	case '[':
		if depth >= maxNesting {
			return false
		}
		w.i++
		w.out = append(w.out, '[')
		for first := true; w.next(); first = false {
			if !first {
				w.out = append(w.out, ',')
			}
			if !w.value(depth + 1) {
				return false
			}
		}
		w.out = append(w.out, ']')
		return true
	case '"':
		end := skipString(w.b, w.i)
		var ok bool
		w.out, ok = appendCanonString(w.out, w.b[w.i:end])
		w.i = end
		return ok
	default: // a number or a literal, as written
		end := skipValue(w.b, w.i)
		w.out = append(w.out, w.b[w.i:end]...)
		w.i = end
		return true
	}
}

// object writes the object at i, at nesting depth depth, its members
// sorted by key.
func (w *canonWriter) object(depth int) bool {
	w.i++
	start := len(w.out)
	w.out = append(w.out, '{')
	var buf [8]span
	var index map[string]bool
	spans, sorted := buf[:0], true
	for w.next() {
		if len(spans) > 0 {
			w.out = append(w.out, ',')
		}
		key, ok := w.key()
		if !ok || duplicate(spans, &index, key) {
			return false
		}
		sorted = sorted && (len(spans) == 0 || spans[len(spans)-1].key < key)
		from := len(w.out)
		w.out = jsonobj.AppendString(w.out, key)
		w.out = append(w.out, ':')
		w.i = skipSpace(w.b, skipSpace(w.b, w.i)+1) // ':'
		if !w.value(depth) {
			return false
		}
		spans = append(spans, span{key: key, from: from, to: len(w.out)})
	}
	if !sorted {
		// Members are written in the order of their keys: the
		// members written so far move to a copy and come back sorted.
		written := bytes.Clone(w.out[start+1:])
		w.out = w.out[:start+1]
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.key, b.key) })
		for n, s := range spans {
			if n > 0 {
				w.out = append(w.out, ',')
			}
			w.out = append(w.out, written[s.from-start-1:s.to-start-1]...)
		}
	}
	w.out = append(w.out, '}')
	return true
}

// appendCanonString appends the JSON string s (quotes included) as
// encoding/json encodes its value; false if the value holds a NUL.
func appendCanonString(out, s []byte) ([]byte, bool) {
	plain := true
	for _, c := range s[1 : len(s)-1] {
		if c == '\\' || c == '<' || c == '>' || c == '&' || c >= utf8.RuneSelf {
			plain = false
			break
		}
	}
	if plain || (utf8.Valid(s) && bytes.IndexByte(s, '\\') < 0 && bytes.IndexAny(s, "<>&\u2028\u2029") < 0) {
		return append(out, s...), true // control characters are not valid JSON
	}
	var v string
	if json.Unmarshal(s, &v) != nil || strings.IndexByte(v, 0) >= 0 {
		return out, false
	}
	return jsonobj.AppendString(out, v), true
}

// objectMembers returns the members of a JSON object (values as written,
// keys unescaped), or false if v is not one. v must be valid JSON.
func objectMembers(v []byte) ([]member, bool) {
	i := skipSpace(v, 0)
	if i == len(v) || v[i] != '{' {
		return nil, false
	}
	var ms []member
	w := canonWriter{b: v, i: i + 1}
	for w.next() {
		k, _ := w.key()
		w.i = skipSpace(v, skipSpace(v, w.i)+1)
		end := skipValue(v, w.i)
		ms = append(ms, member{key: k, raw: v[w.i:end:end]})
		w.i = end
	}
	return ms, true
}

// arrayElements returns the elements of a JSON array, or false if v is not
// one. v must be valid JSON.
func arrayElements(v []byte) ([]json.RawMessage, bool) {
	i := skipSpace(v, 0)
	if i == len(v) || v[i] != '[' {
		return nil, false
	}
	var es []json.RawMessage
	w := canonWriter{b: v, i: i + 1}
	for w.next() {
		end := skipValue(v, w.i)
		es = append(es, v[w.i:end:end])
		w.i = end
	}
	return es, true
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
		i++
	}
	return i
}

// skipString returns the end of the valid JSON string at i.
func skipString(b []byte, i int) int {
	for i++; ; i++ {
		switch b[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
}

// skipValue returns the end of the valid JSON value at i.
func skipValue(b []byte, i int) int {
	switch b[i] {
	case '"':
		return skipString(b, i)
	case '{', '[':
		depth := 0
		for ; ; i++ {
			switch b[i] {
			case '"':
				i = skipString(b, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
	}
	for i < len(b) && b[i] != ',' && b[i] != '}' && b[i] != ']' && b[i] != ' ' && b[i] != '\t' && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

func ascii[T string | []byte](s T) bool {
	for i := range len(s) {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
