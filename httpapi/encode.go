package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"gatehouse/provider"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"gatehouse"
)

// MaxBodyBytes bounds every request body.
const MaxBodyBytes = 1 << 20

// statuses maps domain error codes to HTTP statuses. It is the only place
// that knows both.
var statuses = map[string]int{
	gatehouse.EINVALID:      http.StatusBadRequest,
	gatehouse.EUNAUTHORIZED: http.StatusUnauthorized,
	gatehouse.EFORBIDDEN:    http.StatusForbidden,
	gatehouse.ENOTFOUND:     http.StatusNotFound,
	gatehouse.ECONFLICT:     http.StatusConflict,
	gatehouse.ETOOLARGE:     http.StatusRequestEntityTooLarge,
	gatehouse.EPAYMENT:      http.StatusPaymentRequired,
	gatehouse.EUNSUPPORTED:  http.StatusUnsupportedMediaType,
	gatehouse.ERATELIMIT:    http.StatusTooManyRequests,
	gatehouse.ETIMEOUT:      http.StatusRequestTimeout,
	gatehouse.EINTERNAL:     http.StatusInternalServerError,
	gatehouse.EUNAVAILABLE:  http.StatusServiceUnavailable,
}

// errorStatus returns the HTTP status of an error.
func errorStatus(err error) int {
	var ue *provider.UpstreamError
	if errors.As(err, &ue) {
		return upstreamStatus(ue)
	}
	if s, ok := statuses[gatehouse.ErrorCode(err)]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// upstreamStatus is the status of a provider's failure, as OpenRouter
// answers it: the provider's own error status passed through, 408 when it
// did not answer in time, else 502.
func upstreamStatus(e *provider.UpstreamError) int {
	switch {
	case e.Kind == provider.UpstreamTimeout:
		return http.StatusRequestTimeout
	case e.Kind == provider.UpstreamRejected && e.ProviderStatus >= 400:
		return e.ProviderStatus
	}
	return http.StatusBadGateway
}

// errorBody is the JSON shape of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code     int            `json:"code"`
	Message  string         `json:"message"`
	Metadata map[string]any `json:"metadata,omitempty"`
}

// writeJSON encodes v into a buffer first, so that an encoding failure still
// becomes a clean 500 rather than half a response. Bodies that encode
// themselves (see appendjson.go) skip encoding/json.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	if a, ok := v.(bodyAppender); ok {
		buf := bodyBuffers.Get().(*[]byte)
		defer putBodyBuffer(buf)
		*buf = append(a.appendBody((*buf)[:0]), '\n')
		writeBody(w, status, *buf)
		return nil
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Errorf("encode response: %w", err)
	}
	writeBody(w, status, buf.Bytes())
	return nil
}

// bodyBuffers holds the buffers that self-encoding bodies are appended to:
// a page of guardrails is some 74 KB, which a fresh buffer would reach by
// copying itself eight times.
var bodyBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 4<<10); return &b }}

// putBodyBuffer returns a buffer to the pool, unless it grew past what a
// page of the API takes, so that one huge body is not kept alive.
func putBodyBuffer(b *[]byte) {
	if cap(*b) <= 1<<20 {
		bodyBuffers.Put(b)
	}
}

// writeBody writes an encoded JSON body.
func writeBody(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// writeError renders err as the JSON error body. Internal errors show only
// "internal error"; the caller logs the detail.
func writeError(w http.ResponseWriter, err error) {
	status, body := errorOf(err)
	retryAfter(w, err)
	_ = writeJSON(w, status, body)
}

// retryAfter sets Retry-After for a refusal that says when to come back
// (a busy share of the database: gatehouse.Shares), unless it is set.
func retryAfter(w http.ResponseWriter, err error) {
	var e *gatehouse.Error
	if !errors.As(err, &e) || w.Header().Get("Retry-After") != "" {
		return
	}
	if secs, ok := e.Metadata["retry_after_seconds"].(int); ok {
		w.Header().Set("Retry-After", strconv.Itoa(secs))
	}
}

// errorOf returns the status and body of an error's answer.
func errorOf(err error) (int, errorBody) {
	var ue *provider.UpstreamError
	if errors.As(err, &ue) {
		// A provider's failure, passed through with its status, in
		// OpenRouter's shape: the provider and its raw answer in metadata.
		meta := map[string]any{"provider_name": ue.Provider}
		if len(ue.Raw) > 0 {
			meta["raw"] = json.RawMessage(ue.Raw)
		}
		msg := ue.Message
		if ue.Charged != nil {
			// The provider had the request, and may bill it: so was the key.
			meta["generation_id"], meta["cost"] = ue.GenerationID, ue.Charged
			msg += fmt.Sprintf(" (the provider received the request, so it was charged $%s: see generation %s)", ue.Charged, ue.GenerationID)
		}
		status := upstreamStatus(ue)
		return status, errorBody{Error: errorDetail{Code: status, Message: msg, Metadata: meta}}
	}
	status := errorStatus(err)
	body := errorBody{Error: errorDetail{Code: status, Message: gatehouse.ErrorMessage(err)}}
	var e *gatehouse.Error
	if errors.As(err, &e) && status != http.StatusInternalServerError {
		body.Error.Metadata = e.Metadata
	}
	if status == http.StatusInternalServerError {
		body.Error.Message = "internal error"
	}
	return status, body
}

// decode reads a JSON object from the request body into dst, which must be
// a pointer to a struct. It enforces the input rules of the API: a JSON (or
// absent) Content-Type, at most MaxBodyBytes, one object with no duplicate
// keys and nothing after it, no unknown fields, no null for fields that are
// not nullable, no NUL character in any string, and types as declared —
// each failure naming the field.
func decode(w http.ResponseWriter, r *http.Request, dst any) error {
	if err := checkContentType(r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			return gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxBodyBytes)
		}
		return gatehouse.Errorf(gatehouse.EINVALID, "could not read the request body")
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return gatehouse.Errorf(gatehouse.EINVALID, "request body is required: send a JSON object")
	}
	nulls, err := scanObject(body, reflect.TypeOf(dst).Elem())
	if err != nil {
		return err
	}
	if err := checkUnicode(body); err != nil {
		return err
	}
	if err := rejectNulls(dst, nulls); err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(dst); err != nil {
		return decodeError(err, reflect.TypeOf(dst).Elem())
	}
	return nil
}

// checkUnicode refuses, in a management body (UTF-8, checked by
// scanObject), \u escapes of a lone UTF-16 surrogate: encoding/json would
// store U+FFFD in their place, so a name would be kept other than it was
// sent. (Model calls keep that leniency: a prompt cut inside an emoji by a
// JavaScript client is still answered, and the provider gets the same
// U+FFFD Gatehouse reads, which is shorter than the escape.) body is valid
// JSON: a backslash only occurs in a string, as the start of an escape.
func checkUnicode(body []byte) error {
	for i := 0; i < len(body); i++ {
		if body[i] != '\\' {
			continue
		}
		if body[i+1] != 'u' {
			i++ // a two-character escape; its second byte may be a backslash
			continue
		}
		r := hexRune(body[i+2 : i+6])
		switch {
		case utf16.IsSurrogate(r) && r < 0xdc00 && i+12 <= len(body) && body[i+6] == '\\' && body[i+7] == 'u' &&
			utf16.DecodeRune(r, hexRune(body[i+8:i+12])) != unicode.ReplacementChar:
			i += 11 // a pair
		case utf16.IsSurrogate(r):
			return gatehouse.Errorf(gatehouse.EINVALID, "request body holds %s at byte %d, half of a UTF-16 surrogate pair: text must be Unicode", body[i:i+6], i)
		default:
			i += 5
		}
	}
	return nil
}

// hexRune returns the rune of four hexadecimal digits (valid JSON's).
func hexRune(h []byte) rune {
	r, _ := strconv.ParseUint(string(h), 16, 32)
	return rune(r)
}

// decodeOptional is decode for operations whose body may be empty (such as
// a DELETE that clients send with "{}"): an empty body leaves dst unchanged.
func decodeOptional(w http.ResponseWriter, r *http.Request, dst any) error {
	if r.ContentLength == 0 && len(r.TransferEncoding) == 0 {
		return nil
	}
	// Before reading: a body of the wrong type is 415 whatever its size.
	if err := checkContentType(r); err != nil {
		return err
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBodyBytes))
	if err != nil {
		return gatehouse.Errorf(gatehouse.ETOOLARGE, "request body must be at most %d bytes", MaxBodyBytes)
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return decode(w, r, dst)
}

// noBody serves an operation that takes no body: it accepts none, or an
// empty JSON object, and refuses any other body (400, 415 or 413) before
// the operation runs, so that a malformed request never deletes anything.
func noBody(h authHandler) authHandler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		var empty struct{}
		if err := decodeOptional(w, r, &empty); err != nil {
			return err
		}
		return h(w, r, p)
	}
}

// checkContentType accepts a JSON (or absent) Content-Type.
func checkContentType(r *http.Request) error {
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || (mt != "application/json" && !strings.HasSuffix(mt, "+json")) {
			return gatehouse.Errorf(gatehouse.EUNSUPPORTED, "Content-Type must be application/json (with curl, add -H 'Content-Type: application/json')")
		}
		if cs, ok := params["charset"]; ok && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
			return gatehouse.Errorf(gatehouse.EUNSUPPORTED, "Content-Type's charset must be utf-8 (the body is read as UTF-8), not %q", cs)
		}
	}
	return nil
}

// scanObject checks that body is exactly one JSON object whose objects have
// no duplicate keys and no keys unknown to the Go type t that the body will
// decode into (so that errors name the full path, such as external.extra),
// and returns the top-level keys whose value is null.
func scanObject(body []byte, t reflect.Type) (map[string]bool, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, syntaxError(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "request body must be a JSON object")
	}
	nulls := map[string]bool{}
	if err := scanMembers(dec, "", t, nulls, 1); err != nil {
		return nil, err
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "request body must hold one JSON object and nothing after it")
	}
	if err := checkUTF8(body); err != nil {
		return nil, err
	}
	return nulls, nil
}

// checkUTF8 refuses a body that is not UTF-8, as JSON must be (RFC 8259).
// encoding/json would read each stray byte as U+FFFD, three bytes, so a
// model call would reach its provider up to three times as long as the
// body its reservation was estimated from.
func checkUTF8(body []byte) error {
	if utf8.Valid(body) {
		return nil
	}
	i := 0
	for i < len(body) {
		r, n := utf8.DecodeRune(body[i:])
		if r == utf8.RuneError && n == 1 {
			break
		}
		i += n
	}
	return gatehouse.Errorf(gatehouse.EINVALID, "request body is not valid UTF-8 (at byte %d)", i)
}

// maxNesting bounds how deeply arrays and objects may nest in a request
// body. No request needs more than a few levels; without a bound, a body of
// half a million '[' would cost time quadratic in its depth (every level
// builds its field path) before encoding/json refused it.
const maxNesting = 64

// scanMembers reads the members of an object whose '{' was just read, at
// nesting depth depth (1 for the body itself). t is the Go type it decodes
// into, nil when unknown or free-form. nulls, when not nil, collects the
// keys with a null value.
func scanMembers(dec *json.Decoder, path string, t reflect.Type, nulls map[string]bool, depth int) error {
	seen := map[string]bool{}
	var fields map[string]reflect.Type
	if t != nil && t.Kind() == reflect.Struct {
		fields = jsonFields(t)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return syntaxError(err)
		}
		key := tok.(string)
		if strings.IndexByte(key, 0) >= 0 {
			return gatehouse.FieldError(cmp.Or(path, "body"), "keys must not contain the NUL character (\\u0000)")
		}
		field := key
		if path != "" {
			field = path + "." + key
		}
		if seen[key] {
			return gatehouse.FieldError(field, "appears more than once")
		}
		seen[key] = true
		var ft reflect.Type
		if fields != nil {
			var ok bool
			if ft, ok = fields[key]; !ok {
				return gatehouse.FieldError(field, "unknown field")
			}
		} else if t != nil && t.Kind() == reflect.Map {
			ft = t.Elem()
		}
		if tok, err = dec.Token(); err != nil {
			return syntaxError(err)
		}
		if tok == nil && nulls != nil {
			nulls[key] = true
		} else if tok == nil && fields != nil && !nullable(t, key) {
			return gatehouse.FieldError(field, "must not be null")
		}
		if err := scanValue(dec, tok, field, ft, depth); err != nil {
			return err
		}
	}
	_, err := dec.Token() // '}'
	return syntaxError(err)
}

// scanValue skips the rest of the value that starts with tok, a member or
// element of a value at nesting depth depth, checking nested objects for
// duplicate and unknown keys.
func scanValue(dec *json.Decoder, tok json.Token, path string, t reflect.Type, depth int) error {
	t = shapeOf(t)
	d, ok := tok.(json.Delim)
	if ok && depth >= maxNesting {
		return gatehouse.FieldError(path, "nests arrays or objects more than %d levels deep", maxNesting)
	}
	switch {
	case !ok:
		// PostgreSQL cannot store U+0000 in text, and no field needs it:
		// refused here, it is a 400 on both engines instead of a 500 on one.
		if s, isString := tok.(string); isString && strings.IndexByte(s, 0) >= 0 {
			return gatehouse.FieldError(path, "must not contain the NUL character (\\u0000)")
		}
		return nil
	case d == '{':
		return scanMembers(dec, path, t, nil, depth+1)
	case d == '[':
		var elem reflect.Type
		if t != nil && (t.Kind() == reflect.Slice || t.Kind() == reflect.Array) {
			elem = t.Elem()
		}
		for i := 0; dec.More(); i++ {
			tok, err := dec.Token()
			if err != nil {
				return syntaxError(err)
			}
			if err := scanValue(dec, tok, fmt.Sprintf("%s[%d]", path, i), elem, depth+1); err != nil {
				return err
			}
		}
		_, err := dec.Token() // ']'
		return syntaxError(err)
	}
	return nil
}

func syntaxError(err error) error {
	if err == nil {
		return nil
	}
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return gatehouse.Errorf(gatehouse.EINVALID, "malformed JSON at byte %d: %s", se.Offset, strings.TrimPrefix(se.Error(), "invalid character "))
	}
	if errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, io.EOF) {
		return gatehouse.Errorf(gatehouse.EINVALID, "malformed JSON: the body ends before the object does")
	}
	return gatehouse.Errorf(gatehouse.EINVALID, "malformed JSON")
}

var unmarshalerType = reflect.TypeFor[json.Unmarshaler]()

// shapeOf returns the type whose fields a JSON value must match: t itself,
// through pointers and gatehouse.Patch, or nil when a custom decoder (or an
// interface) takes any shape, so that no key can be called unknown.
func shapeOf(t reflect.Type) reflect.Type {
	for t != nil {
		switch {
		case t.Kind() == reflect.Pointer:
			t = t.Elem()
		case t.PkgPath() == "gatehouse" && strings.HasPrefix(t.Name(), "Patch["):
			f, _ := t.FieldByName("Value")
			t = f.Type
		case reflect.PointerTo(t).Implements(unmarshalerType), t.Kind() == reflect.Interface:
			return nil
		default:
			return t
		}
	}
	return nil
}

// rejectNulls fails for a top-level null given to a field that cannot hold
// one: one that is neither a pointer, slice, map nor a type that decodes
// null itself (such as gatehouse.Patch).
func rejectNulls(dst any, nulls map[string]bool) error {
	if len(nulls) == 0 {
		return nil
	}
	t := reflect.TypeOf(dst).Elem()
	fields := jsonFields(t)
	for name := range nulls {
		if _, ok := fields[name]; !ok {
			continue // unknown: the decoder names it
		}
		if !nullable(t, name) {
			return gatehouse.FieldError(name, "must not be null")
		}
	}
	return nil
}

// nullable reports whether the field of struct type t named name in JSON
// may be given null: its Go type can hold one (a pointer, slice, map or
// interface, or a type that decodes null itself, such as gatehouse.Patch)
// and it is not tagged null:"no", which marks a field that may be absent
// but never null.
func nullable(t reflect.Type, name string) bool {
	f, ok := jsonField(t, name)
	if !ok || f.Tag.Get("null") == "no" {
		return false
	}
	if reflect.PointerTo(f.Type).Implements(unmarshalerType) {
		return true
	}
	switch f.Type.Kind() {
	case reflect.Pointer, reflect.Slice, reflect.Map, reflect.Interface:
		return true
	}
	return false
}

// jsonField returns the field of struct type t, embedded ones included,
// whose JSON name is name.
func jsonField(t reflect.Type, name string) (reflect.StructField, bool) {
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		n, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && n == "" && f.Type.Kind() == reflect.Struct {
			if sf, ok := jsonField(f.Type, name); ok {
				return sf, true
			}
			continue
		}
		if n == "" {
			n = f.Name
		}
		if n == name && n != "-" && f.IsExported() {
			return f, true
		}
	}
	return reflect.StructField{}, false
}

// jsonFields maps the JSON names of a struct's fields, embedded ones
// included, to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	out := map[string]reflect.Type{}
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for k, v := range jsonFields(f.Type) {
				out[k] = v
			}
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" {
			name = f.Name
		}
		out[name] = f.Type
	}
	return out
}

// decodeError turns an encoding/json error into a 400 naming the field as
// the client sent it. t is the type decoded into.
func decodeError(err error, t reflect.Type) error {
	var te *json.UnmarshalTypeError
	var se *json.SyntaxError
	switch {
	case errors.As(err, &te):
		field := jsonPath(te.Field, t)
		if field == "" {
			field = "body"
		}
		return gatehouse.FieldError(field, "must be %s", describeType(te.Type))
	case errors.As(err, &se):
		return syntaxError(err)
	}
	if name, ok := strings.CutPrefix(err.Error(), "json: unknown field "); ok {
		name = strings.Trim(name, `"`)
		return gatehouse.FieldError(name, "unknown field").WithMetadata("field", name)
	}
	var ge *gatehouse.Error
	if errors.As(err, &ge) {
		return ge
	}
	return gatehouse.Errorf(gatehouse.EINVALID, "malformed JSON")
}

// jsonPath removes from a path reported by encoding/json the names of
// embedded structs, which are Go names, not JSON ones.
func jsonPath(field string, t reflect.Type) string {
	embedded := map[string]bool{}
	collectEmbedded(t, embedded)
	parts := strings.Split(field, ".")
	out := parts[:0]
	for _, p := range parts {
		if !embedded[p] {
			out = append(out, p)
		}
	}
	return strings.Join(out, ".")
}

func collectEmbedded(t reflect.Type, names map[string]bool) {
	if t.Kind() != reflect.Struct {
		return
	}
	for i := 0; i < t.NumField(); i++ {
		if f := t.Field(i); f.Anonymous {
			names[f.Name] = true
			collectEmbedded(f.Type, names)
		}
	}
}

// describeType says in words what a JSON value must be to fit Go type t.
func describeType(t reflect.Type) string {
	switch t {
	case reflect.TypeFor[gatehouse.Money]():
		return "a number of US dollars between 0 and 1000000000"
	case reflect.TypeFor[provider.PriceLimit]():
		return "a number of US dollars between 0 and 1000000000, or a string holding one"
	case reflect.TypeFor[signedUSD]():
		return "a number of US dollars between -1000000000 and 1000000000"
	case reflect.TypeFor[gatehouse.Interval]():
		return "one of daily, weekly, monthly or null"
	case reflect.TypeFor[timestamp]():
		return "an RFC 3339 timestamp with seconds and a time zone, such as 2027-12-31T23:59:59Z"
	case reflect.TypeFor[filterValue]():
		return "a string or a number, or an array of strings and numbers"
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "a boolean"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array of " + strings.TrimPrefix(strings.TrimPrefix(describeType(t.Elem()), "a "), "an ") + " values"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return describeType(t.Elem())
	}
	return "a valid value"
}

// timestamp is a request timestamp: RFC 3339 with seconds and a zone, and
// optional fractional seconds. Date-only or zone-less values are refused.
type timestamp struct{ time.Time }

// UnmarshalJSON parses an RFC 3339 string.
func (t *timestamp) UnmarshalJSON(data []byte) error {
	var s string
	if err := json.Unmarshal(data, &s); err == nil {
		if v, err := time.Parse(time.RFC3339Nano, s); err == nil {
			t.Time = v.UTC()
			return nil
		}
	}
	kind := "string"
	if len(data) > 0 && data[0] != '"' {
		kind = "number"
	}
	return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[timestamp]()}
}

// ptr returns the time of an optional timestamp.
func (t *timestamp) ptr() *time.Time {
	if t == nil {
		return nil
	}
	v := t.Time
	return &v
}

// jsonTime is a time as responses show it: RFC 3339 UTC with milliseconds
// and Z. It is formatted when the response is built, so that the encoder
// writes a plain string (a MarshalJSON method costs a call and a second pass
// over its output on every field of every object).
type jsonTime string

// jsonTimeLayout is the layout of jsonTime.
const jsonTimeLayout = "2006-01-02T15:04:05.000Z"

// newJSONTime formats a time.
func newJSONTime(t time.Time) jsonTime {
	return jsonTime(t.UTC().Format(jsonTimeLayout))
}

// jsonTimePtr converts an optional time.
func jsonTimePtr(t *time.Time) *jsonTime {
	if t == nil {
		return nil
	}
	v := newJSONTime(*t)
	return &v
}

// usd is an amount of dollars as responses show it: a JSON number, exact,
// formatted when the response is built (see jsonTime).
type usd = json.Number

// usdOf formats an amount.
func usdOf(m gatehouse.Money) usd { return usd(m.String()) }

// usdPtr formats an optional amount.
func usdPtr(m *gatehouse.Money) *usd {
	if m == nil {
		return nil
	}
	v := usdOf(*m)
	return &v
}

// intervalPtr renders a reset interval: its name, or null for none.
func intervalPtr(i gatehouse.Interval) *string {
	if i == gatehouse.NoReset {
		return nil
	}
	s := string(i)
	return &s
}
