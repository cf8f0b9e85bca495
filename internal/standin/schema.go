// Package standin holds strict stand-ins for the native APIs of model
// providers, built from their documentation: Anthropic's Messages API and
// Google's Gemini API. They check what the real APIs check (the headers,
// the request's shape: unknown fields and wrong types are refused, with the
// APIs' own error shapes), and answer deterministically, whole or
// streamed, with tool calls, thinking and cache usage, so that Gatehouse's
// translation to them is tested on the wire. cmd/fakellm serves them; the
// tests of httpapi call them.
//
// Like fakellm, they are not models: the answer is "You said: " and the
// last user text, and a token is a whitespace-separated word.
package standin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// A schema checks a JSON value at a path, as an API's request parser
// does.
type schema func(path []string, v json.RawMessage) *fault

// fault is what is wrong with a request, at a path.
type fault struct {
	path []string
	kind string // "unknown", "type", "missing", "invalid"
	want string // for "type": what was expected; for "invalid": the message
	name string // for "unknown" and "missing": the field
	raw  json.RawMessage
}

func at(path []string, k string) []string {
	return append(append([]string(nil), path...), k)
}

func typeFault(path []string, want string, v json.RawMessage) *fault {
	return &fault{path: path, kind: "type", want: want, raw: v}
}

func invalid(path []string, format string, args ...any) *fault {
	return &fault{path: path, kind: "invalid", want: fmt.Sprintf(format, args...)}
}

func kindOf(v json.RawMessage) byte {
	v = bytes.TrimSpace(v)
	if len(v) == 0 {
		return 0
	}
	return v[0]
}

func str() schema {
	return func(path []string, v json.RawMessage) *fault {
		if kindOf(v) != '"' {
			return typeFault(path, "string", v)
		}
		return nil
	}
}

// enum is a string of the values given.
func enum(values ...string) schema {
	return func(path []string, v json.RawMessage) *fault {
		var s string
		if json.Unmarshal(v, &s) != nil {
			return typeFault(path, "string", v)
		}
		for _, x := range values {
			if s == x {
				return nil
			}
		}
		return invalid(path, "Input should be %s", quoteList(values))
	}
}

func quoteList(values []string) string {
	q := make([]string, len(values))
	for i, v := range values {
		q[i] = "'" + v + "'"
	}
	if len(q) == 1 {
		return q[0]
	}
	return strings.Join(q[:len(q)-1], ", ") + " or " + q[len(q)-1]
}

func boolean() schema {
	return func(path []string, v json.RawMessage) *fault {
		if s := string(bytes.TrimSpace(v)); s != "true" && s != "false" {
			return typeFault(path, "boolean", v)
		}
		return nil
	}
}

// integer is a whole number within [lo, hi].
func integer(lo, hi int64) schema {
	return func(path []string, v json.RawMessage) *fault {
		n, err := strconv.ParseInt(string(bytes.TrimSpace(v)), 10, 64)
		if err != nil {
			return typeFault(path, "integer", v)
		}
		if n < lo || n > hi {
			return invalid(path, "Input should be between %d and %d", lo, hi)
		}
		return nil
	}
}

// number is a number within [lo, hi].
func number(lo, hi float64) schema {
	return func(path []string, v json.RawMessage) *fault {
		var f float64
		if kindOf(v) == '"' || json.Unmarshal(v, &f) != nil {
			return typeFault(path, "number", v)
		}
		if f < lo || f > hi {
			return invalid(path, "Input should be between %g and %g", lo, hi)
		}
		return nil
	}
}

// anyValue is any JSON value (a JSON schema, a function's arguments).
func anyValue() schema { return func([]string, json.RawMessage) *fault { return nil } }

// anyObject is any JSON object.
func anyObject() schema {
	return func(path []string, v json.RawMessage) *fault {
		if kindOf(v) != '{' {
			return typeFault(path, "object", v)
		}
		return nil
	}
}

func array(elem schema) schema {
	return func(path []string, v json.RawMessage) *fault {
		var items []json.RawMessage
		if kindOf(v) != '[' || json.Unmarshal(v, &items) != nil {
			return typeFault(path, "array", v)
		}
		for i, item := range items {
			if f := elem(at(path, strconv.Itoa(i)), item); f != nil {
				return f
			}
		}
		return nil
	}
}

// either is a string, or what s says.
func either(a, b schema) schema {
	return func(path []string, v json.RawMessage) *fault {
		if kindOf(v) == '"' {
			return a(path, v)
		}
		return b(path, v)
	}
}

// object is an object of the fields given, the required ones present; an
// unknown field is a fault. alias, when set, maps a field's other
// spelling to the one of fields (Gemini's parser takes both camelCase and
// snake_case).
func object(fields map[string]schema, required ...string) schema {
	return objectAliased(fields, nil, required...)
}

func objectAliased(fields map[string]schema, alias func(string) string, required ...string) schema {
	return func(path []string, v json.RawMessage) *fault {
		var obj map[string]json.RawMessage
		if kindOf(v) != '{' || json.Unmarshal(v, &obj) != nil {
			return typeFault(path, "object", v)
		}
		keys := make([]string, 0, len(obj))
		for k := range obj {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		seen := map[string]bool{}
		for _, k := range keys {
			name := k
			if alias != nil {
				name = alias(k)
			}
			s, ok := fields[name]
			if !ok {
				return &fault{path: path, kind: "unknown", name: k}
			}
			seen[name] = true
			if string(bytes.TrimSpace(obj[k])) == "null" {
				continue
			}
			if f := s(at(path, k), obj[k]); f != nil {
				return f
			}
		}
		for _, r := range required {
			if !seen[r] {
				return &fault{path: path, kind: "missing", name: r}
			}
		}
		return nil
	}
}

// tagged is an object whose "type" selects its fields.
func tagged(kinds map[string]schema) schema {
	return func(path []string, v json.RawMessage) *fault {
		var t struct {
			Type *string `json:"type"`
		}
		if kindOf(v) != '{' || json.Unmarshal(v, &t) != nil {
			return typeFault(path, "object", v)
		}
		if t.Type == nil {
			return &fault{path: path, kind: "missing", name: "type"}
		}
		s, ok := kinds[*t.Type]
		if !ok {
			names := make([]string, 0, len(kinds))
			for k := range kinds {
				names = append(names, k)
			}
			sort.Strings(names)
			return invalid(at(path, "type"), "Input tag '%s' found using 'type' does not match any of the expected tags: %s", *t.Type, quoteList(names))
		}
		return s(path, v)
	}
}

// words counts the tokens of a text: its whitespace-separated words.
func words(s string) int64 { return int64(len(strings.Fields(s))) }

// Usage is one answer's usage as a stand-in reported it, in its API's
// names: what the provider would bill.
type Usage map[string]int64

// log is the usages a stand-in reported, for tests to price.
type log struct {
	mu     sync.Mutex
	usages []Usage
}

func (l *log) add(u Usage) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.usages = append(l.usages, u)
}

// Reported returns the usages reported so far, in order.
func (l *log) Reported() []Usage {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Usage(nil), l.usages...)
}
