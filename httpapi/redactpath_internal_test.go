package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"
)

// TestRedactPath: the request log never holds a plaintext key or an
// invitation token, whatever shape the path takes: a key anywhere in a
// segment, a token on a route that did not match (trailing or doubled
// slashes, another case), and the {token} of a matched route.
func TestRedactPath(t *testing.T) {
	const key = "sk-gh-v1-9102295fabcdef"
	const token = "ny7QwDbwcyepr14t6Y82ziatNJ2kn0jUIOJjM8C6TG4"
	for _, p := range []string{
		"/api/v1/keys/" + key,
		"/api/v1/keys/%20" + key,
		"/api/v1/keys:" + key,
		"/api/v1/keys/%22" + key + "%22",
		"/keys/" + key + "/edit",
		"/invite/" + token + "/",
		"/invite//" + token,
		"/INVITE/" + token,
		"/invite/" + token + "/accept",
	} {
		got := redactPath(httptest.NewRequest("GET", p, nil))
		if strings.Contains(got, key) || strings.Contains(got, token) || !strings.Contains(got, "[redacted]") {
			t.Errorf("%s logged as %s", p, got)
		}
	}
	r := httptest.NewRequest("GET", "/invite/"+token, nil)
	r.SetPathValue("token", token)
	if got := redactPath(r); got != "/invite/[redacted]" {
		t.Errorf("matched route logged as %s", got)
	}
	for _, p := range []string{"/api/v1/keys", "/api/v1/workspaces/invitees", "/api/v1/organization/invitations/abc"} {
		if got := redactPath(httptest.NewRequest("GET", p, nil)); got != p {
			t.Errorf("%s logged as %s", p, got)
		}
	}
}
