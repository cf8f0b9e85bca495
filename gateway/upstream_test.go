package gateway

import (
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"gatehouse/provider"
	"slices"
	"strings"
	"testing"
)

// TestRedactKey: an error answer that quotes the key the provider was sent,
// as it reads or escaped inside JSON, reaches nobody with it.
func TestRedactKey(t *testing.T) {
	for _, key := range []string{"sk-plain-0123456789", `sk-"quoted"-\back`, "sk-<html>&amp"} {
		quoted, _ := json.Marshal("Incorrect API key provided: " + key)
		e := redactKey(&provider.UpstreamError{Message: "Incorrect API key provided: " + key,
			Raw: []byte(`{"error":{"message":` + string(quoted) + `}}`)}, key, false)
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
		e := redactKey(&provider.UpstreamError{Message: "refused", Raw: []byte(raw)}, key, false)
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
	if e := redactKey(&provider.UpstreamError{Message: "m", Raw: []byte(clean)}, key, false); string(e.Raw) != clean {
		t.Errorf("raw without the key changed: %s", e.Raw)
	}
	for _, raw := range []string{`{"k":"a"`, `{"k":1} trailing`, `not json ` + key} {
		if e := redactKey(&provider.UpstreamError{Message: "refused", Raw: []byte(raw)}, key, false); e.Raw != nil {
			t.Errorf("raw %s: want it dropped", e.Raw)
		}
	}
	// No key (a provider without one): nothing changes.
	if e := redactKey(&provider.UpstreamError{Message: "m", Raw: []byte(`{}`)}, "", false); e.Message != "m" || string(e.Raw) != "{}" {
		t.Errorf("without a key: %+v", e)
	}
}

// TestRedactKeyEncoded: an error answer that gives the key away in another
// form a client could read back (base64 at any alignment, URL-safe or not;
// hex; reversed; split across members; in another case) keeps only its
// status and code. A provider's masked echo of the key, and an answer
// without it, pass.
func TestRedactKeyEncoded(t *testing.T) {
	const key = "sk-proj-Zt4q9XbW2LmN8vR1cD7yHs3KpQ0aE6uF"
	b64 := func(enc *base64.Encoding, prefix string) string {
		return enc.EncodeToString([]byte(prefix + key + "\n"))
	}
	for name, raw := range map[string]string{
		"base64":           `{"error":{"message":"bad credentials","debug":"` + b64(base64.StdEncoding, "") + `"}}`,
		"base64 offset 1":  `{"error":{"message":"` + b64(base64.StdEncoding, "Authorization: Bearer ") + `"}}`,
		"base64 offset 2":  `{"error":{"message":"` + b64(base64.StdEncoding, "x:") + `"}}`,
		"base64url":        `{"error":{"message":"` + b64(base64.URLEncoding, "key=") + `"}}`,
		"hex":              `{"error":{"message":"key hex ` + hex.EncodeToString([]byte(key)) + `"}}`,
		"HEX":              `{"error":{"message":"key hex ` + strings.ToUpper(hex.EncodeToString([]byte(key))) + `"}}`,
		"reversed":         `{"error":{"message":"` + reverse(key) + `"}}`,
		"split in members": `{"error":{"key_start":"` + key[:14] + `","key_mid":"` + key[14:27] + `","key_end":"` + key[27:] + `"}}`,
		"escaped split":    `{"a":"` + key[:10] + `","b":"\u` + fmt.Sprintf("%04x", key[10]) + key[11:] + `"}`,
		"upper case":       `{"error":{"message":"` + strings.ToUpper(key) + `"}}`,
	} {
		e := redactKey(&provider.UpstreamError{Provider: "acme", ProviderStatus: 401, Message: "bad credentials", Raw: []byte(raw)}, key, false)
		if e.Raw != nil || e.Message != "the provider acme answered 401; its message is not shown, as it may quote the key it was sent" {
			t.Errorf("%s: %q, raw %s", name, e.Message, e.Raw)
		}
	}
	// The provider's error code stays, when it is one.
	e := redactKey(&provider.UpstreamError{Provider: "acme", ProviderStatus: 401,
		Raw: []byte(`{"error":{"code":"invalid_api_key","message":"` + b64(base64.StdEncoding, "") + `"}}`)}, key, false)
	if e.Message != "the provider acme answered 401 (invalid_api_key); its message is not shown, as it may quote the key it was sent" {
		t.Errorf("message %q", e.Message)
	}
	for _, clean := range []string{
		`{"error":{"message":"Incorrect API key provided: sk-proj-****************************uF","code":"invalid_api_key"}}`,
		`{"error":{"message":"rate limited","type":"requests"}}`,
	} {
		if e := redactKey(&provider.UpstreamError{Message: "m", Raw: []byte(clean)}, key, false); string(e.Raw) != clean || e.Message != "m" {
			t.Errorf("%s: changed to %q %s", clean, e.Message, e.Raw)
		}
	}
	// A workspace's own key: the text is never shown, whatever it says;
	// the status and code are.
	e = redactKey(&provider.UpstreamError{Provider: "acme", ProviderStatus: 429, Message: "slow down",
		Raw: []byte(`{"error":{"message":"slow down","code":"rate_limit_exceeded"}}`)}, key, true)
	if e.Raw != nil || e.Message != "the provider acme answered 429 (rate_limit_exceeded); its message is not shown, as it may quote the key it was sent" {
		t.Errorf("BYOK: %q, raw %s", e.Message, e.Raw)
	}
	// A code that is the key is no code.
	e = redactKey(&provider.UpstreamError{Provider: "acme", ProviderStatus: 401, Raw: []byte(`{"error":{"code":"` + key + `"}}`)}, key, true)
	if strings.Contains(e.Message, key[8:24]) {
		t.Errorf("BYOK: %q", e.Message)
	}
}

func reverse(s string) string {
	b := []byte(s)
	slices.Reverse(b)
	return string(b)
}
