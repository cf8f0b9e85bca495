package gateway

import (
	"encoding/json"
	"strings"
	"testing"

	"gatehouse"
)

// TestRedactKey: an error answer that quotes the key the provider was sent,
// as it reads or escaped inside JSON, reaches nobody with it.
func TestRedactKey(t *testing.T) {
	for _, key := range []string{"sk-plain-0123456789", `sk-"quoted"-\back`, "sk-<html>&amp"} {
		quoted, _ := json.Marshal("Incorrect API key provided: " + key)
		e := redactKey(&gatehouse.UpstreamError{Message: "Incorrect API key provided: " + key,
			Raw: []byte(`{"error":{"message":` + string(quoted) + `}}`)}, key)
		if strings.Contains(e.Message, key) || !strings.Contains(e.Message, "[redacted]") {
			t.Errorf("%q: message %q", key, e.Message)
		}
		if strings.Contains(string(e.Raw), key) || strings.Contains(string(e.Raw), string(quoted[1:len(quoted)-1])) || !json.Valid(e.Raw) {
			t.Errorf("%q: raw %s", key, e.Raw)
		}
	}
	// Escaped otherwise than Go escapes it (PHP's "\/", "\u" escapes), or
	// in a member name: found all the same, in what the client decodes.
	key := "byok/SECRET/abc+def0123456789"
	for _, raw := range []string{
		`{"error":{"message":"Incorrect API key provided: byok\/SECRET\/abc+def0123456789"}}`,
		`{"error":{"message":"key \u0062yok/SECRET/abc\u002bdef0123456789 refused"}}`,
		`{"errors":{"byok\/SECRET\/abc+def0123456789":"unknown"}}`,
		`[{"k":["x","byok/SECRET/abc+def0123456789"]}]`,
	} {
		e := redactKey(&gatehouse.UpstreamError{Message: "refused", Raw: []byte(raw)}, key)
		var v any
		if err := json.Unmarshal(e.Raw, &v); err != nil {
			t.Fatalf("%s: raw %s is not JSON", raw, e.Raw)
		}
		if text, _ := json.Marshal(v); strings.Contains(string(text), "SECRET") || !strings.Contains(string(text), "[redacted]") {
			t.Errorf("%s: the client would read %s", raw, text)
		}
	}
	// An answer without the key passes byte for byte; one that is not JSON
	// is dropped, not passed on.
	const clean = `{"error": {"message": "rate limited <slow down>", "n": 1.50}}`
	if e := redactKey(&gatehouse.UpstreamError{Message: "m", Raw: []byte(clean)}, key); string(e.Raw) != clean {
		t.Errorf("raw without the key changed: %s", e.Raw)
	}
	for _, raw := range []string{`{"k":"a"`, `{"k":1} trailing`, `not json ` + key} {
		if e := redactKey(&gatehouse.UpstreamError{Message: "refused", Raw: []byte(raw)}, key); e.Raw != nil {
			t.Errorf("raw %s: want it dropped", e.Raw)
		}
	}
	// No key (a provider without one): nothing changes.
	if e := redactKey(&gatehouse.UpstreamError{Message: "m", Raw: []byte(`{}`)}, ""); e.Message != "m" || string(e.Raw) != "{}" {
		t.Errorf("without a key: %+v", e)
	}
}
