package httpapi

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"gatehouse"
)

// Unit-level fuzz targets for the pure parsers of the package. Their
// property: no panic, and every error is a *gatehouse.Error of the code the
// handler turns into the right status. The handler-level targets are in
// fuzz_test.go.

// slowInput is how long one parse may take before the input counts as a
// denial of service. Generous, so that -race on a busy machine passes.
const slowInput = 2 * time.Second

// wantCode fails t unless err is a *gatehouse.Error with one of codes and a
// message.
func wantCode(t *testing.T, err error, codes ...string) {
	t.Helper()
	var ge *gatehouse.Error
	if !errors.As(err, &ge) {
		t.Fatalf("error %v (%T) is not a *gatehouse.Error", err, err)
	}
	for _, c := range codes {
		if ge.Code == c && ge.Message != "" {
			return
		}
	}
	t.Fatalf("error code %q, message %q; want one of %v with a message", ge.Code, ge.Message, codes)
}

func FuzzBearerToken(f *testing.F) {
	for _, h := range []string{"", "Bearer sk-gh-v1-abc", "bearer x", "BEARER x", "Bearer  x", "Bearer x ", "Bearer\tx",
		"Bearer", "Bearer ", "Basic dXNlcjpwYXNz", "Bearer a b", "Bearer a\tb", "Bearer " + strings.Repeat("x", 513),
		"Bearer \x00", "Bearer \xff", "Bearer\u00a0x", "Bearer x\u00a0", "Bearer \u2003x\u2003", "Bearer x\ny"} {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, header string) {
		token, err := bearerToken(header)
		if err != nil {
			wantCode(t, err, gatehouse.EUNAUTHORIZED)
			return
		}
		scheme, rest, _ := strings.Cut(header, " ")
		switch {
		case !strings.EqualFold(scheme, "Bearer"):
			t.Fatalf("bearerToken(%q) accepted scheme %q", header, scheme)
		case token == "" || len(token) > 512 || strings.ContainsAny(token, " \t"):
			t.Fatalf("bearerToken(%q) = %q: empty, too long or with blanks", header, token)
		case token != strings.TrimSpace(rest):
			t.Fatalf("bearerToken(%q) = %q, want %q", header, token, strings.TrimSpace(rest))
		}
		if again, err := bearerToken("Bearer " + token); err != nil || again != token {
			t.Fatalf("bearerToken(Bearer %q) = %q, %v; want the token back", token, again, err)
		}
	})
}

func FuzzIntParam(f *testing.F) {
	for _, s := range []string{"", "0", "1", "50", "100", "101", "-1", "+5", "05", "1e2", "1.0", " 1", "1 ", "0x10",
		"2147483648", "2147483649", "9223372036854775807", "9223372036854775808", "-9223372036854775809", "١", "\x00"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		for _, b := range []struct {
			name          string
			def, lo, hi   int
			wantDefaulted bool
		}{
			{"offset", 0, 0, maxOffset, false},
			{"limit", gatehouse.DefaultPageSize, 1, gatehouse.MaxPageSize, false},
		} {
			if v, err := intParam(url.Values{}, b.name, b.def, b.lo, b.hi); err != nil || v != b.def {
				t.Fatalf("intParam without %s = %d, %v; want the default %d", b.name, v, err, b.def)
			}
			// Given, even empty, the value must be an integer in range.
			v, err := intParam(url.Values{b.name: {raw}}, b.name, b.def, b.lo, b.hi)
			if err != nil {
				wantCode(t, err, gatehouse.EINVALID)
				if !strings.Contains(gatehouse.ErrorMessage(err), b.name) {
					t.Fatalf("intParam(%q, %s): error %q does not name the parameter", raw, b.name, gatehouse.ErrorMessage(err))
				}
				if n, perr := strconv.Atoi(raw); perr == nil && n >= b.lo && n <= b.hi {
					t.Fatalf("intParam(%q, %s) refused an integer in range", raw, b.name)
				}
				continue
			}
			switch {
			case b.wantDefaulted && v != b.def:
				t.Fatalf("intParam(%q, %s) = %d, want the default %d", raw, b.name, v, b.def)
			case v < b.lo || v > b.hi:
				t.Fatalf("intParam(%q, %s) = %d, outside %d..%d", raw, b.name, v, b.lo, b.hi)
			}
		}
	})
}

// FuzzQueryParams parses any raw query string as the list routes do.
func FuzzQueryParams(f *testing.F) {
	for _, q := range []string{"", "offset=0&limit=1", "offset=-1", "limit=0", "limit=101", "limit=100&limit=1",
		"offset=2147483649", "include_disabled=1", "include_disabled=yes", "confirm_default_workspace_deletion=TRUE",
		"%", "offset=%zz", "limit=%31", ";", "a=b;c=d", "offset=1&&&", "\x00=\x00"} {
		f.Add(q)
	}
	f.Fuzz(func(t *testing.T, rawQuery string) {
		r := httptest.NewRequest("GET", "/api/v1/keys", nil)
		r.URL.RawQuery = rawQuery
		if p, err := pageParams(r); err != nil {
			wantCode(t, err, gatehouse.EINVALID)
		} else if p.Offset < 0 || p.Offset > maxOffset || p.Limit < 1 || p.Limit > gatehouse.MaxPageSize {
			t.Fatalf("pageParams(%q) = %+v, out of bounds", rawQuery, p)
		}
		for _, name := range []string{"include_disabled", "confirm_default_workspace_deletion"} {
			if _, err := boolParam(r, name); err != nil {
				wantCode(t, err, gatehouse.EINVALID)
			}
		}
	})
}

var canonicalUUID = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$`)

// FuzzPathValues checks the id parsers of the routes: anything that is not
// a well-formed id is ENOTFOUND (404), never another error or a panic.
func FuzzPathValues(f *testing.F) {
	for _, s := range []string{"", "00000000-0000-4000-8000-000000000000", "00000000-0000-4000-8000-00000000000G",
		"{00000000-0000-4000-8000-000000000000}", "urn:uuid:00000000-0000-4000-8000-000000000000",
		"00000000000040008000000000000000", "AAAAAAAA-AAAA-4AAA-8AAA-AAAAAAAAAAAA", strings.Repeat("a", 64),
		strings.Repeat("A", 64), strings.Repeat("g", 64), "\x00", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, id string) {
		r := httptest.NewRequest("GET", "/", nil)
		r.SetPathValue("id", id)
		r.SetPathValue("hash", id)
		if got, err := uuidPath(r, "id", "guardrail"); err != nil {
			wantCode(t, err, gatehouse.ENOTFOUND)
		} else if !canonicalUUID.MatchString(got) || !strings.EqualFold(got, id) {
			t.Fatalf("uuidPath(%q) = %q, not the canonical form of the same UUID", id, got)
		}
		if got, err := keyHashPath(r); err != nil {
			wantCode(t, err, gatehouse.ENOTFOUND)
		} else if got != id || !gatehouse.IsKeyHash(got) {
			t.Fatalf("keyHashPath(%q) = %q", id, got)
		}
	})
}

// decodeTargets are the request types of every operation with a body, in
// the order of bodyOps in fuzz_test.go where they overlap. Only ever append.
var decodeTargets = []func() any{
	func() any { return new(createKeyRequest) },
	func() any { return new(gatehouse.KeyUpdate) },
	func() any { return new(createCodeRequest) },
	func() any { return new(gatehouse.AuthCodeExchange) },
	func() any { return new(gatehouse.WorkspaceUpdate) },
	func() any { return new(userIDsRequest) },
	func() any { return new(gatehouse.GuardrailCreate) },
	func() any { return new(gatehouse.GuardrailUpdate) },
	func() any { return new(keyHashesRequest) },
	func() any { return new(memberIDsRequest) },
	func() any { return new(createDestinationRequest) },
	func() any { return new(destinationFields) },
	func() any { return new(struct{}) }, // DELETE /observability/destinations/{id}, decoded with decodeOptional
	func() any { return new(addMemberRequest) },
	func() any { return new(gatehouse.BYOKKeyCreate) },
	func() any { return new(gatehouse.BYOKKeyUpdate) },
}

// FuzzDecode runs decode (and decodeOptional) on any body into each request
// type: errors are 400, 413 or 415 with a message, a body that decodes is
// one valid JSON object, and no body takes long.
func FuzzDecode(f *testing.F) {
	for i := range decodeTargets {
		f.Add(uint8(i), []byte(`{}`), "application/json")
	}
	for _, b := range []string{`{"name":"k","limit":1.5,"expires_at":"2030-01-01T00:00:00Z","external":{"user":"u"}}`,
		`{"name":"a","name":"b"}`, `{"name":null}`, `{"limit":1e999999}`, `{"limit":-0.0000000005}`, `{} {}`, `{}x`, `[]`,
		"\ufeff{}", `{"external":{"extra":1}}`, `{"name":"\ud800"}`, `{"limit":"1"}`, `{"expires_at":"2030-01-01"}`} {
		f.Add(uint8(0), []byte(b), "application/json")
	}
	f.Add(uint8(10), []byte(`{"type":"webhook","config":{"url":"https://x","headers":{"A":"b"}},"filter_rules":{"groups":[{"rules":[{"field":"model","operator":"equals","value":1}]}]}}`), "")
	f.Add(uint8(6), []byte(`{"name":"g","content_filters":[{"pattern":"a","action":"block","extra":1}]}`), "application/vnd.api+json")
	f.Add(uint8(0), []byte(`{"name":`+strings.Repeat("[", 10000)+strings.Repeat("]", 10000)+`}`), "application/json")
	f.Fuzz(func(t *testing.T, target uint8, body []byte, contentType string) {
		newDst := decodeTargets[int(target)%len(decodeTargets)]
		for _, optional := range []bool{false, true} {
			r := httptest.NewRequest("POST", "/", bytes.NewReader(body))
			if contentType != "" {
				r.Header.Set("Content-Type", contentType)
			}
			dst := newDst()
			start := time.Now()
			var err error
			if optional {
				err = decodeOptional(httptest.NewRecorder(), r, dst)
			} else {
				err = decode(httptest.NewRecorder(), r, dst)
			}
			if d := time.Since(start); d > slowInput {
				t.Fatalf("decoding %d bytes into %T took %v", len(body), dst, d)
			}
			if err != nil {
				wantCode(t, err, gatehouse.EINVALID, gatehouse.ETOOLARGE, gatehouse.EUNSUPPORTED)
				if s := errorStatus(err); s != http.StatusBadRequest && s != http.StatusRequestEntityTooLarge && s != http.StatusUnsupportedMediaType {
					t.Fatalf("decode error %v has status %d", err, s)
				}
				continue
			}
			if optional && len(bytes.TrimSpace(body)) == 0 {
				continue
			}
			trimmed := bytes.TrimSpace(body)
			if !json.Valid(trimmed) || trimmed[0] != '{' {
				t.Fatalf("decode accepted %q into %T: not one JSON object", body, dst)
			}
			if !utf8.Valid(body) {
				t.Fatalf("decode accepted %q into %T: not UTF-8", body, dst)
			}
		}
	})
}

// TestDecodeDeepNestingIsFast is the regression test of the first finding
// of FuzzDecode: a body of half a million nested arrays took time quadratic
// in its depth (minutes) before it was refused.
func TestDecodeDeepNestingIsFast(t *testing.T) {
	n := (MaxBodyBytes - 100) / 2
	for _, body := range []string{
		`{"name":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}`,
		`{"name":` + strings.Repeat("[", n) + `}`,
		// Condition.value is free-form (any): only the bound stops the scan.
		`{"filter_rules":{"groups":[{"rules":[{"value":` + strings.Repeat(`{"a":`, n/3) + `1` + strings.Repeat("}", n/3) + `}]}]}}`,
	} {
		start := time.Now()
		err := decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(body)), new(destinationFields))
		if d := time.Since(start); d > slowInput {
			t.Errorf("decoding %d bytes of nesting took %v", len(body), d)
		}
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("decoding %d bytes of nesting: %v, want EINVALID", len(body), err)
		}
	}
	// The bound leaves room for every real body.
	ok := `{"name":"n","filter_rules":{"groups":[{"rules":[{"field":"model","operator":"equals","value":"m"}]}]}}`
	if err := decode(httptest.NewRecorder(), httptest.NewRequest("POST", "/", strings.NewReader(ok)), new(destinationFields)); err != nil {
		t.Errorf("decode(%s): %v", ok, err)
	}
}

// TestCheckRequestText pins the answers to the text that PostgreSQL cannot
// compare (a finding of FuzzPathIDs and FuzzQuery, 500s on PostgreSQL): a
// path id with a NUL byte or not UTF-8 is 404, a free-text query parameter
// 400, and routes that read no such parameter ignore it.
func TestCheckRequestText(t *testing.T) {
	for _, tc := range []struct {
		pattern, wildcard, value, query string
		want                            string // error code, "" for none
	}{
		{"GET /api/v1/keys/{hash}", "hash", "a\x00", "", gatehouse.ENOTFOUND},
		{"GET /api/v1/workspaces/{id}/members", "id", "\xff", "", gatehouse.ENOTFOUND},
		{"DELETE /api/v1/organization/members/{user_id}", "user_id", "u\x00", "", gatehouse.ENOTFOUND},
		{"GET /api/v1/workspaces/{id}", "id", "é-ok", "", ""},
		{"GET /api/v1/keys", "", "", "workspace_id=%00", gatehouse.EINVALID},
		{"GET /api/v1/observability/destinations", "", "", "workspace_id=%FF", gatehouse.EINVALID},
		{"GET /api/v1/audit-log", "", "", "resource_id=%C3%A9&actor=%00", gatehouse.EINVALID},
		{"GET /api/v1/key", "", "", "workspace_id=%00", ""},
		{"GET /api/v1/keys", "", "", "workspace_id=caf%C3%A9", ""},
		{"GET /api/v1/byok", "", "", "provider=%00", gatehouse.EINVALID},
		{"GET /api/v1/byok/{id}", "id", "\xff", "", gatehouse.ENOTFOUND},
	} {
		r := httptest.NewRequest("GET", "/?"+tc.query, nil)
		r.Pattern = tc.pattern
		if tc.wildcard != "" {
			r.SetPathValue(tc.wildcard, tc.value)
		}
		err := checkRequestText(r)
		if got := gatehouse.ErrorCode(err); err != nil && got != tc.want || err == nil && tc.want != "" {
			t.Errorf("%s %q %q: error %v, want code %q", tc.pattern, tc.value, tc.query, err, tc.want)
		}
	}
}

// TestCheckUnicode checks the refusal of text that is not Unicode in a
// management body: bytes that are not UTF-8 (checkUTF8, which every body
// gets through scanObject) and lone surrogate escapes (checkUnicode),
// wherever they are, while pairs, escaped backslashes and any other text
// pass.
func TestCheckUnicode(t *testing.T) {
	for _, tt := range []struct {
		body, err string
	}{
		{`{"name":"é😀 plain"}`, ""},
		{`{"name":"\ud83d\ude00"}`, ""},
		{`{"name":"\uD83D\uDE00x"}`, ""},
		{`{"name":"\\ud800"}`, ""},
		{`{"name":"\\\ud83d\ude00"}`, ""},
		{`{"name":"\"\u00e9\n\t"}`, ""},
		{`{"name":"\ufffd"}`, ""},
		{`{"name":"\ud800"}`, `\ud800 at byte 9`},
		{`{"name":"\udc00"}`, `\udc00 at byte 9`},
		{`{"name":"\ud800\u0041"}`, `\ud800 at byte 9`},
		{`{"name":"\ud800\ud800"}`, `\ud800 at byte 9`},
		{`{"name":"\ud800x\udc00"}`, `\ud800 at byte 9`},
		{`{"name":"a\"\uDBFF"}`, `\uDBFF at byte 12`},
		{`{"\ud800":1}`, `\ud800 at byte 2`},
		{`{"name":["ok","\ude00"]}`, `\ude00 at byte 15`},
		{"{\"name\":\"\xff\"}", "not valid UTF-8 (at byte 9)"},
		{"{\"name\":\"\xed\xa0\x80\"}", "not valid UTF-8 (at byte 9)"}, // a surrogate encoded as UTF-8
	} {
		err := cmp.Or(checkUTF8([]byte(tt.body)), checkUnicode([]byte(tt.body)))
		switch {
		case tt.err == "" && err != nil:
			t.Errorf("%s: refused: %v", tt.body, err)
		case tt.err != "" && (err == nil || !strings.Contains(err.Error(), tt.err)):
			t.Errorf("%s: error %v, want one saying %q", tt.body, err, tt.err)
		case err != nil:
			wantCode(t, err, gatehouse.EINVALID)
		}
	}
}
