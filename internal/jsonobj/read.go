package jsonobj

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"unicode/utf8"
)

// The functions below read JSON that json.Valid accepted, by a scanner
// over its bytes: a model call's body and its answer are read on every
// request, and encoding/json's decoder spends several times longer on
// them, most of it allocating.

// Member is a member of a JSON object: its key, unescaped; its value as
// written; and, from Canonical, the value re-encoded.
type Member struct {
	Key          string
	Value, Canon json.RawMessage
}

// Unmarshal decodes a JSON object as json.Unmarshal decodes one into a
// map[string]json.RawMessage: keys unescaped, values as written, a key
// given twice keeping its last value. It fails if data is not a JSON
// object.
func Unmarshal(data []byte) (map[string]json.RawMessage, error) {
	if !json.Valid(data) {
		return nil, errors.New("jsonobj: invalid JSON")
	}
	r, ok := open(data, '{')
	if !ok {
		return nil, errors.New("jsonobj: not an object")
	}
	obj := make(map[string]json.RawMessage, 8)
	for r.next() {
		k, v := r.member()
		obj[k] = v
	}
	return obj, nil
}

// Members returns the members of the JSON object v in order, or false if
// v is not an object. v must be valid JSON.
func Members(v []byte) ([]Member, bool) {
	r, ok := open(v, '{')
	if !ok {
		return nil, false
	}
	var ms []Member
	for r.next() {
		k, val := r.member()
		ms = append(ms, Member{Key: k, Value: val})
	}
	return ms, true
}

// Elements returns the elements of the JSON array v, or false if v is not
// an array. v must be valid JSON.
func Elements(v []byte) ([]json.RawMessage, bool) {
	r, ok := open(v, '[')
	if !ok {
		return nil, false
	}
	var es []json.RawMessage
	for r.next() {
		end := skipValue(v, r.i)
		es = append(es, v[r.i:end:end])
		r.i = end
	}
	return es, true
}

// open returns a reader of the members or elements of v, if v is an object
// ('{') or an array ('[') as asked.
func open(v []byte, bracket byte) (reader, bool) {
	i := skipSpace(v, 0)
	if i == len(v) || v[i] != bracket {
		return reader{}, false
	}
	return reader{b: v, i: i + 1}, true
}

// Canonical returns the members of the JSON object v in order (v must be
// valid JSON), each with its value also re-encoded exactly as
// encoding/json encodes it after decoding it into an any with UseNumber:
// objects' keys sorted, strings unescaped and escaped again alike, numbers
// as written, no spaces. It returns false if v is not an object, if a key
// or a string holds a NUL, if an object has a key twice, or if arrays and
// objects nest more than maxDepth levels (v itself is the first).
func Canonical(v []byte, maxDepth int) ([]Member, bool) {
	w, ok := open(v, '{')
	if !ok {
		return nil, false
	}
	w.out, w.maxDepth = make([]byte, 0, len(v)), maxDepth
	var spans []span
	var index map[string]bool
	for w.next() {
		key, ok := w.key()
		if !ok || duplicate(spans, &index, key) {
			return nil, false
		}
		w.colon()
		from, start := len(w.out), w.i
		if !w.value(1) {
			return nil, false
		}
		spans = append(spans, span{key: key, from: from, to: len(w.out), start: start, end: w.i})
	}
	ms := make([]Member, len(spans))
	for n, s := range spans {
		ms[n] = Member{Key: s.key, Value: v[s.start:s.end:s.end], Canon: w.out[s.from:s.to:s.to]}
	}
	return ms, true
}

// span is where a member's value was read, and where it was written.
type span struct {
	key                  string
	from, to, start, end int
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

// reader reads valid JSON from b[i:], and for Canonical writes it again
// into out.
type reader struct {
	b        []byte
	i        int
	out      []byte
	maxDepth int
}

// next moves past the space and comma before a member or element and
// reports whether there is one; if not, it moves past the closing bracket.
func (r *reader) next() bool {
	r.i = skipSpace(r.b, r.i)
	switch r.b[r.i] {
	case '}', ']':
		r.i++
		return false
	case ',':
		r.i = skipSpace(r.b, r.i+1)
	}
	return true
}

// member reads the member at i: its key, unescaped, and its value as
// written.
func (r *reader) member() (string, json.RawMessage) {
	k, _ := r.key()
	r.colon()
	start := r.i
	r.i = skipValue(r.b, start)
	return k, r.b[start:r.i:r.i]
}

// colon moves past the colon after a key, to the value.
func (r *reader) colon() { r.i = skipSpace(r.b, skipSpace(r.b, r.i)+1) }

// key reads the string at i, a key, unescaped; false if it holds a NUL.
func (r *reader) key() (string, bool) {
	start, end := r.i, skipString(r.b, r.i)
	r.i = end
	if s := r.b[start+1 : end-1]; bytes.IndexByte(s, '\\') < 0 && ascii(s) {
		return string(s), true
	}
	var k string
	if json.Unmarshal(r.b[start:end], &k) != nil || strings.IndexByte(k, 0) >= 0 {
		return "", false
	}
	return k, true
}

// value writes the value at i, a member or element of a container at
// nesting depth depth; false if it is refused.
func (r *reader) value(depth int) bool {
	switch r.b[r.i] {
	case '{':
		return depth < r.maxDepth && r.object(depth+1)
	case '[':
		if depth >= r.maxDepth {
			return false
		}
		r.i++
		r.out = append(r.out, '[')
		for first := true; r.next(); first = false {
			if !first {
				r.out = append(r.out, ',')
			}
			if !r.value(depth + 1) {
				return false
			}
		}
		r.out = append(r.out, ']')
		return true
	case '"':
		end := skipString(r.b, r.i)
		var ok bool
		r.out, ok = appendCanonString(r.out, r.b[r.i:end])
		r.i = end
		return ok
	default: // a number or a literal, as written
		end := skipValue(r.b, r.i)
		r.out = append(r.out, r.b[r.i:end]...)
		r.i = end
		return true
	}
}

// object writes the object at i, at nesting depth depth, its members
// sorted by key.
func (r *reader) object(depth int) bool {
	r.i++
	start := len(r.out)
	r.out = append(r.out, '{')
	var buf [8]span
	var index map[string]bool
	spans, sorted := buf[:0], true
	for r.next() {
		if len(spans) > 0 {
			r.out = append(r.out, ',')
		}
		key, ok := r.key()
		if !ok || duplicate(spans, &index, key) {
			return false
		}
		sorted = sorted && (len(spans) == 0 || spans[len(spans)-1].key < key)
		from := len(r.out)
		r.out = AppendString(r.out, key)
		r.out = append(r.out, ':')
		r.colon()
		if !r.value(depth) {
			return false
		}
		spans = append(spans, span{key: key, from: from, to: len(r.out)})
	}
	if !sorted {
		// The members written so far move to a copy and come back in
		// the order of their keys.
		written := bytes.Clone(r.out[start+1:])
		r.out = r.out[:start+1]
		slices.SortFunc(spans, func(a, b span) int { return cmp.Compare(a.key, b.key) })
		for n, s := range spans {
			if n > 0 {
				r.out = append(r.out, ',')
			}
			r.out = append(r.out, written[s.from-start-1:s.to-start-1]...)
		}
	}
	r.out = append(r.out, '}')
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
	if plain || (utf8.Valid(s) && bytes.IndexByte(s, '\\') < 0 && !bytes.ContainsAny(s, "<>&\u2028\u2029")) {
		return append(out, s...), true // control characters are not valid JSON
	}
	var v string
	if json.Unmarshal(s, &v) != nil || strings.IndexByte(v, 0) >= 0 {
		return out, false
	}
	return AppendString(out, v), true
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

// ascii reports whether s is all ASCII.
func ascii(s []byte) bool {
	for _, c := range s {
		if c >= utf8.RuneSelf {
			return false
		}
	}
	return true
}
