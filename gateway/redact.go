package gateway

import (
	"bytes"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"gatehouse/provider"
	"io"
	"regexp"
	"slices"
	"strings"
)

// redactKey keeps the key a provider was sent out of its error answer,
// which clients and the log see: some providers quote the key they refuse,
// whole or in part, as it is or encoded.
//
// The answer to a call made with a workspace's own key (byok) keeps only
// its status and the provider's error code: its text is dropped, whatever
// it says, as the workspace's key is not the operator's to risk. For the
// operator's key, the key is removed from the answer's decoded strings (so
// that no escaping of the provider's, "\/" or "\u0041", hides it); if the
// answer still gives away part of it in a form that can be read back
// (see exposes), its text is dropped as well. An answer that does not
// read as JSON keeps no raw body.
func redactKey(e *provider.UpstreamError, key string, byok bool) *provider.UpstreamError {
	if key == "" {
		return e
	}
	if !byok {
		e.Message = strings.ReplaceAll(e.Message, key, "[redacted]")
		if len(e.Raw) > 0 {
			e.Raw = redactJSON(e.Raw, key)
		}
		if !exposes(e.Message, key) && !exposes(jsonText(e.Raw), key) {
			return e
		}
	}
	code := errorCode(e.Raw, key)
	e.Message = fmt.Sprintf("the provider %s answered %d", e.Provider, e.ProviderStatus)
	if code != "" {
		e.Message += " (" + code + ")"
	}
	e.Message += "; its message is not shown, as it may quote the key it was sent"
	e.Raw = nil
	return e
}

// redactJSON returns raw with key replaced in every string, member names
// included, as they decode: raw itself when it holds none, re-encoded when
// it did, nil when it is not one JSON value.
func redactJSON(raw []byte, key string) []byte {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil
	}
	changed := false
	v = redactValue(v, key, &changed)
	if !changed {
		return raw
	}
	out, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return out
}

// redactValue replaces key in the strings of a decoded JSON value.
func redactValue(v any, key string, changed *bool) any {
	redact := func(s string) string {
		if r := strings.ReplaceAll(s, key, "[redacted]"); r != s {
			*changed = true
			return r
		}
		return s
	}
	switch v := v.(type) {
	case string:
		return redact(v)
	case []any:
		for i := range v {
			v[i] = redactValue(v[i], key, changed)
		}
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, x := range v {
			out[redact(k)] = redactValue(x, key, changed)
		}
		return out
	}
	return v
}

// jsonText returns the strings of a JSON value, decoded: its string
// values in the order they come, joined (so that a key split across
// members, or escaped, reads back whole), then its member names. Empty
// when raw is not JSON.
func jsonText(raw []byte) string {
	var values, names strings.Builder
	dec := json.NewDecoder(bytes.NewReader(raw))
	var inObject []bool // per open container: whether it is an object
	name := false       // whether the next string is a member name
	for {
		tok, err := dec.Token()
		if err != nil {
			return values.String() + "\n" + names.String()
		}
		switch tok := tok.(type) {
		case json.Delim:
			if tok == '{' || tok == '[' {
				inObject = append(inObject, tok == '{')
			} else {
				inObject = inObject[:len(inObject)-1]
			}
			name = (tok == '{') || (tok != '[' && len(inObject) > 0 && inObject[len(inObject)-1])
			continue
		case string:
			if name {
				names.WriteString(tok)
				name = false
				continue
			}
			values.WriteString(tok)
		}
		name = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

// exposeWindow and exposeStride: text exposes a key when it holds a
// stretch of exposeWindow characters of one of the key's forms that starts
// at a multiple of exposeStride, so every run of at least 23 characters of
// a form is found, at a cost that grows with the key's length and the
// text's, not their product.
const (
	exposeWindow = 16
	exposeStride = 8
)

// exposes reports whether text gives away part of key in a form that can
// be read back (whatever the case): the key as it is or reversed, in hex,
// or in base64 (standard or URL-safe, at any alignment in the encoded
// data). Short keys are looked for whole.
func exposes(text, key string) bool {
	if text == "" {
		return false
	}
	text = strings.ToLower(text)
	for _, form := range keyForms(key) {
		form = strings.ToLower(form)
		if len(form) <= exposeWindow {
			if strings.Contains(text, form) {
				return true
			}
			continue
		}
		for i := 0; i+exposeWindow <= len(form); i += exposeStride {
			if strings.Contains(text, form[i:i+exposeWindow]) {
				return true
			}
		}
	}
	return false
}

// keyForms returns the forms of key to look for: itself, reversed, hex,
// and the parts of its base64 encodings that do not depend on the bytes
// around it (at each of the three alignments).
func keyForms(key string) []string {
	reversed := []byte(key)
	slices.Reverse(reversed)
	forms := []string{key, string(reversed), hex.EncodeToString([]byte(key))}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		for pad := range 3 {
			s := enc.EncodeToString(append(make([]byte, pad), key...))
			// The first characters hold bits of the padding, the last
			// four those of whatever follows the key.
			from, to := (pad*8+5)/6, len(s)-4
			if to-from >= 8 {
				forms = append(forms, s[from:to])
			}
		}
	}
	return forms
}

// providerCodeRE is what an error code the provider gave may look like to
// be shown: a short identifier or number.
var providerCodeRE = regexp.MustCompile(`^[A-Za-z0-9_.:-]{1,64}$`)

// errorCode returns the code of a provider's JSON error answer (its
// error.code, error.type, code or type), when it is a short identifier
// that does not expose the key.
func errorCode(raw []byte, key string) string {
	var body struct {
		Error struct {
			Code json.RawMessage `json:"code"`
			Type json.RawMessage `json:"type"`
		} `json:"error"`
		Code json.RawMessage `json:"code"`
		Type json.RawMessage `json:"type"`
	}
	if json.Unmarshal(raw, &body) != nil {
		return ""
	}
	for _, v := range []json.RawMessage{body.Error.Code, body.Error.Type, body.Code, body.Type} {
		var s string
		if json.Unmarshal(v, &s) != nil {
			s = string(v) // a number, or nothing
		}
		if providerCodeRE.MatchString(s) && !exposes(s, key) && !strings.Contains(s, key) {
			return s
		}
	}
	return ""
}
