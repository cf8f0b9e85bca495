package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// A chat completion body is read by Gatehouse and again by the provider.
// If the two can read it differently, the reservation no longer bounds the
// bill: Go's decoder matches field names case-insensitively (with Unicode
// folding: "MAX_TOKENS", "max_tokenſ"), providers match them exactly, and
// the same key sent twice is resolved differently by different decoders.
// So the body is checked for every spelling that could fold together,
// restricted to the fields Gatehouse knows how to bill, and the provider is
// sent a body re-encoded from the parsed values, never the client's bytes.

// chatFields are the request fields forwarded to providers (but preset and
// provider, which Gatehouse reads and removes). Anything else is refused: a
// field Gatehouse does not read could be one the provider bills for.
var chatFields = map[string]bool{
	"model": true, "messages": true, "stream": true, "stream_options": true,
	"max_tokens": true, "max_completion_tokens": true, "n": true,
	"temperature": true, "top_p": true, "top_k": true, "min_p": true, "top_a": true,
	"stop": true, "seed": true, "presence_penalty": true, "frequency_penalty": true,
	"repetition_penalty": true, "logit_bias": true, "logprobs": true, "top_logprobs": true,
	"tools": true, "tool_choice": true, "parallel_tool_calls": true, "response_format": true,
	"reasoning": true, "reasoning_effort": true, "verbosity": true,
	"user": true, "session_id": true, "metadata": true,
	// Read by Gatehouse, never forwarded: see notForwarded.
	"preset": true, "provider": true, "usage": true, "models": true, "route": true,
}

// refusedChatFields are known fields that change what the provider bills in
// ways the reservation cannot bound; the reason says why.
var refusedChatFields = map[string]string{
	"best_of":            "generates several completions per request; Gatehouse reserves for one",
	"audio":              "audio output is not priced by Gatehouse",
	"modalities":         "only text output is priced by Gatehouse; leave modalities out",
	"prediction":         "predicted outputs are billed beyond the completion cap",
	"web_search_options": "web search is billed apart from tokens, which Gatehouse does not price",
	"plugins":            "plugins are billed apart from tokens, which Gatehouse does not price",
	"max_output_tokens":  "use max_tokens or max_completion_tokens",
}

// messageFields are the fields of a message that reach the provider.
var messageFields = map[string]bool{
	"role": true, "content": true, "name": true, "tool_calls": true, "tool_call_id": true,
	"refusal": true, "reasoning": true, "reasoning_details": true, "function_call": true,
}

// textPartFields are the fields of a text content part. cache_control
// (asking the provider to cache the prompt up to the part) is one of a
// chat message's part only: see cachePartFields.
var textPartFields = map[string]bool{"type": true, "text": true}

// cachePartFields are the fields of a chat message's text part:
// cache_control too, which only endpoints that price cache writes take
// (their model sets cache_write_price: see provider.Request.CacheControl),
// since a cache write is billed above the prompt price.
var cachePartFields = map[string]bool{"type": true, "text": true, "cache_control": true}

// foldedTextPartFields maps folded names to text part fields, so that a
// misspelt one is named as such rather than taken for another kind of part.
var foldedTextPartFields = func() map[string]string {
	m := map[string]string{}
	for name := range textPartFields {
		m[foldKey(name)] = name
	}
	return m
}()

// foldKey maps a field name to a form that equals that of every spelling a
// case-insensitive decoder would accept for it: each rune becomes the
// smallest rune of its Unicode simple-folding orbit (so K, k and the Kelvin
// sign, S, s and ſ, fold together).
func foldKey(s string) string {
	if !strings.ContainsFunc(s, func(r rune) bool { return r >= utf8.RuneSelf }) {
		return strings.ToUpper(s) // in ASCII, the least of an orbit is the upper case
	}
	var b strings.Builder
	for _, r := range s {
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		b.WriteRune(least)
	}
	return b.String()
}

// foldedChatFields maps folded names to the exact names of known fields.
var foldedChatFields = func() map[string]string {
	m := map[string]string{}
	for name := range chatFields {
		m[foldKey(name)] = name
	}
	for name := range refusedChatFields {
		m[foldKey(name)] = name
	}
	return m
}()

// objectKeys returns the keys of a JSON object in order, unescaped, or an
// error if raw is not an object. Duplicates are kept, so callers see them.
func objectKeys(raw []byte) ([]string, error) {
	if !json.Valid(raw) {
		return nil, fmt.Errorf("malformed JSON")
	}
	ms, ok := jsonobj.Members(raw)
	if !ok {
		return nil, fmt.Errorf("not an object")
	}
	return keysOf(ms), nil
}

// checkKeys refuses keys that a decoder could confuse: the same name twice
// under any spelling, or a spelling that is not the exact name of a known
// field. where prefixes field names in errors ("" or "messages[2].").
func checkKeys(keys []string, known map[string]bool, where string) error {
	return checkKeysOf(keys, known, foldedChatFields, refusedChatFields, where)
}

// checkKeysOf is checkKeys for a body whose known fields fold as folded
// and whose refused fields are refused, each with its reason.
func checkKeysOf(keys []string, known map[string]bool, folded, refused map[string]string, where string) error {
	// Searched in a slice: the loop ends at the first key that is not
	// known, so it sees at most one more key than known has.
	folds := make([]string, 0, len(keys))
	for _, k := range keys {
		f := foldKey(k)
		if j := slices.Index(folds, f); j >= 0 {
			prev := keys[j]
			if prev == k {
				return gatehouse.FieldError(where+k, "is given twice; send each field once")
			}
			return gatehouse.FieldError(where+k, "is given twice (also as %q); send each field once, spelt exactly", prev)
		}
		folds = append(folds, f)
		if known[k] {
			continue
		}
		if exact, ok := folded[f]; ok && where == "" && exact != k {
			return gatehouse.FieldError(where+k, "is not a field; field names are case-sensitive: did you mean %q?", exact)
		}
		if reason, ok := refused[k]; ok && where == "" {
			return gatehouse.FieldError(k, "is not supported: %s", reason)
		}
		return gatehouse.FieldError(where+k, "unknown field: Gatehouse forwards only the fields it reads; remove it")
	}
	return nil
}

// canonicalChat checks the members of a chat completion body (readObject's)
// for ambiguity and returns its fields re-encoded from the parsed values,
// which is all the provider will ever see of it.
func canonicalChat(ms []member) (map[string]json.RawMessage, bool, error) {
	if err := checkKeys(keysOf(ms), chatFields, ""); err != nil {
		return nil, false, err
	}
	caching, err := checkMessages(find(ms, "messages"))
	if err != nil {
		return nil, false, err
	}
	cachedTools, err := checkCacheMembers(find(ms, "tools"), "tools")
	if err != nil {
		return nil, false, err
	}
	return canonical(ms), caching || cachedTools, nil
}

// checkCacheMembers checks the cache_control of each object of list (a
// request's tools, an assistant message's tool_calls), as a part's is
// checked: spelt exactly, {"type": "ephemeral"} with an optional ttl. It
// reports whether one asks for prompt caching, which only endpoints that
// price cache writes take. What is not an array of objects is left to the
// typed decode, or to the provider, to refuse.
func checkCacheMembers(list json.RawMessage, where string) (bool, error) {
	items, _ := jsonobj.Elements(list)
	caching := false
	for i, item := range items {
		at := where + "[" + strconv.Itoa(i) + "]"
		ms, _ := jsonobj.Members(item)
		for _, m := range ms {
			if m.Key != "cache_control" && foldKey(m.Key) == foldKey("cache_control") {
				return false, gatehouse.FieldError(at+"."+m.Key, "is not a field; field names are case-sensitive: did you mean \"cache_control\"?")
			}
		}
		if cc := find(ms, "cache_control"); cc != nil {
			if err := checkCacheControl(cc, at+".cache_control"); err != nil {
				return false, err
			}
			caching = true
		}
	}
	return caching, nil
}

// checkMessages refuses messages whose fields could be read two ways, and
// content parts that Gatehouse cannot price (images, audio, files): their
// cost is not bounded by the request's length. messages is the checked
// value of the messages field: anything but an array is left to the typed
// decode to report.
func checkMessages(messages json.RawMessage) (caching bool, err error) {
	list, _ := jsonobj.Elements(messages)
	for i, m := range list {
		where := "messages[" + strconv.Itoa(i) + "]."
		ms, ok := jsonobj.Members(m)
		if !ok {
			return false, gatehouse.FieldError(where[:len(where)-1], "must be an object")
		}
		if err := checkKeys(keysOf(ms), messageFields, where); err != nil {
			return false, err
		}
		cached, err := checkContentParts(find(ms, "content"), where+"content", cachePartFields)
		if err != nil {
			return false, err
		}
		cachedCalls, err := checkCacheMembers(find(ms, "tool_calls"), where+"tool_calls")
		if err != nil {
			return false, err
		}
		caching = caching || cached || cachedCalls
	}
	return caching, nil
}

// checkContentParts accepts a string content, or an array of text parts
// with the fields allowed (textPartFields, or cachePartFields); it reports
// whether a part asks for prompt caching.
func checkContentParts(content json.RawMessage, where string, allowed map[string]bool) (bool, error) {
	c := bytes.TrimSpace(content)
	if len(c) == 0 || c[0] != '[' {
		return false, nil
	}
	if !json.Valid(c) {
		return false, gatehouse.FieldError(where, "must be a string or an array of content parts")
	}
	parts, ok := jsonobj.Elements(c)
	if !ok {
		return false, gatehouse.FieldError(where, "must be a string or an array of content parts")
	}
	caching := false
	for j, p := range parts {
		at := fmt.Sprintf("%s[%d]", where, j)
		pm, ok := jsonobj.Members(p)
		if !ok {
			return false, gatehouse.FieldError(at, "must be an object")
		}
		keys := keysOf(pm)
		for _, k := range keys {
			if foldKey(k) == foldKey("cache_control") && !allowed["cache_control"] {
				return false, gatehouse.FieldError(at+"."+k, "is not accepted here: cache writes are billed above the prompt price, which Gatehouse prices for chat completions only")
			}
			if !allowed[k] && !allowed[foldedTextPartFields[foldKey(k)]] && foldKey(k) != foldKey("cache_control") {
				return false, gatehouse.FieldError(at, "only text content parts are accepted: Gatehouse cannot price images, audio or files, so it cannot bound their cost")
			}
		}
		if err := checkKeys(keys, allowed, at+"."); err != nil {
			return false, err
		}
		if cc := find(pm, "cache_control"); cc != nil {
			if err := checkCacheControl(cc, at+".cache_control"); err != nil {
				return false, err
			}
			caching = true
		}
		var kind string
		if t := find(pm, "type"); t != nil {
			_ = json.Unmarshal(t, &kind)
		}
		if kind != "text" {
			return false, gatehouse.FieldError(at+".type", "%q is not accepted: only text content parts are, since Gatehouse cannot price images, audio or files", truncateRunes(kind, 40))
		}
	}
	return caching, nil
}

// checkCacheControl checks a part's cache_control, as Anthropic and
// OpenRouter take it: {"type": "ephemeral"}, with an optional "ttl" of
// "5m" or "1h".
func checkCacheControl(raw json.RawMessage, where string) error {
	ms, ok := jsonobj.Members(raw)
	if !ok {
		return gatehouse.FieldError(where, `must be an object: {"type": "ephemeral"}`)
	}
	if err := checkKeysOf(keysOf(ms), map[string]bool{"type": true, "ttl": true}, nil, nil, where+"."); err != nil {
		return err
	}
	var typ, ttl string
	if json.Unmarshal(find(ms, "type"), &typ) != nil || typ != "ephemeral" {
		return gatehouse.FieldError(where+".type", "must be ephemeral")
	}
	if v := find(ms, "ttl"); v != nil && (json.Unmarshal(v, &ttl) != nil || ttl != "5m" && ttl != "1h") {
		return gatehouse.FieldError(where+".ttl", "must be 5m or 1h")
	}
	return nil
}

func truncateRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n])
}
