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
	// An answer that redaction leaves unreadable is dropped, not passed on broken.
	e := redactKey(&gatehouse.UpstreamError{Message: "refused", Raw: []byte(`{"k":"a"}`)}, `a"}`)
	if e.Raw != nil {
		t.Errorf("raw %s: want it dropped", e.Raw)
	}
	// No key (a provider without one): nothing changes.
	if e := redactKey(&gatehouse.UpstreamError{Message: "m", Raw: []byte(`{}`)}, ""); e.Message != "m" || string(e.Raw) != "{}" {
		t.Errorf("without a key: %+v", e)
	}
}
