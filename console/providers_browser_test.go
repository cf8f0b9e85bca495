package console_test

import (
	"bytes"
	"net/http"
	"strings"
	"testing"
)

// TestBrowserProvidersHealth: the providers page shows each endpoint's
// health as the router measured it: an endpoint that served has calls,
// uptime and latency; one whose provider failed three times in a row has
// its circuit open, its failures by class, and when it is probed again
// (after its cool-down of 10 s, which a slow browser start may outlast:
// then the next call probes it).
func TestBrowserProvidersHealth(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	var created struct {
		Key string `json:"key"`
	}
	if status := e.api("POST", "/keys", e.mgmt, map[string]any{"name": "health", "limit": 5}, &created); status != http.StatusCreated {
		t.Fatalf("create key: %d", status)
	}
	for range 2 {
		if status := e.chatWith(created.Key, "fake/echo-mini", "hello"); status != http.StatusOK {
			t.Fatalf("chat: %d", status)
		}
	}
	e.fakeFails(`{"status": 503}`)
	for range 3 {
		if status := e.chatWith(created.Key, "fake/echo", "hello"); status != http.StatusBadGateway && status != http.StatusServiceUnavailable {
			t.Fatalf("chat to a failing provider: %d", status)
		}
	}
	// The circuit is open: the next call is refused without reaching the
	// provider.
	if status := e.chatWith(created.Key, "fake/echo", "hello"); status != http.StatusServiceUnavailable {
		t.Fatalf("chat to an open circuit: %d, want 503", status)
	}

	b := e.newBrowser(t)
	b.signInWithKey()
	b.visit("/providers")
	b.must(b.status() == http.StatusOK, "providers page: %d", b.status())
	b.must(strings.Contains(b.text(".menu"), "Providers"), "the menu lacks the providers page: %s", b.text(".menu"))
	ok := b.text(`tr[data-endpoint="fake/echo-mini"]`)
	b.must(strings.Contains(ok, "closed") && strings.Contains(ok, "100.0%") && strings.Contains(ok, " ms"),
		"the serving endpoint's row: %q", ok)
	dead := b.text(`tr[data-endpoint="fake/echo"]`)
	b.must(strings.Contains(dead, "open") &&
		(strings.Contains(dead, "probed after") || strings.Contains(dead, "the next call probes it")) && strings.Contains(dead, "3 server error") &&
		strings.Contains(dead, "0.0%"), "the failing endpoint's row: %q", dead)
	b.screenshot("providers-health")
	b.narrow()
	b.must(!b.overflows(), "the providers page overflows at 375 px")
	b.screenshot("providers-health-narrow")
}

// TestBrowserProvidersNeverCalled: every endpoint of the providers file is
// listed, and one never called says so rather than showing figures.
func TestBrowserProvidersNeverCalled(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	b := e.newBrowser(t)
	b.signInWithKey()
	b.visit("/providers")
	b.must(b.status() == http.StatusOK, "providers page: %d", b.status())
	b.must(b.count(`tr[data-endpoint]`) == 3, "the fake provider's three endpoints are listed: %d", b.count(`tr[data-endpoint]`))
	b.must(strings.Contains(b.text("main"), "No calls") || strings.Contains(b.text("main"), "no calls"), "an endpoint never called says so: %s", b.text("main"))
}

// fakeFails makes the provider's stand-in fail every call as spec says
// (cmd/fakellm's POST /fakellm/failure).
func (e *env) fakeFails(spec string) {
	e.t.Helper()
	resp, err := http.Post(e.fakeLLM+"/fakellm/failure", "application/json", bytes.NewReader([]byte(spec)))
	if err != nil {
		e.t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK && resp.StatusCode != http.StatusNoContent {
		e.t.Fatalf("fakellm failure: %d", resp.StatusCode)
	}
}
