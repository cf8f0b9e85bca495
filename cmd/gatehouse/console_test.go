package main

import (
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"testing"
)

// TestConsoleServed: the first start's banner names the web console, the
// server serves it at the root beside the API (whose unknown routes still
// answer JSON), and the printed key signs in to it.
func TestConsoleServed(t *testing.T) {
	s := startServer(t, nil, "serve", "--addr", "127.0.0.1:0", "--database", filepath.Join(t.TempDir(), "gatehouse.db"))
	keys := printedKeys(t, s.stderr.String())
	if len(keys) != 1 {
		t.Fatalf("printed keys: %v", keys)
	}
	if want := "sign in with it to the web console at " + s.url + "/"; !strings.Contains(s.stderr.String(), want) {
		t.Errorf("the banner does not say %q:\n%s", want, s.stderr)
	}
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := noRedirect.Get(s.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/sign-in?next=%2F" {
		t.Errorf("GET / = %d to %q, want the sign-in page", resp.StatusCode, resp.Header.Get("Location"))
	}
	req, _ := http.NewRequest("POST", s.url+"/sign-in/key", strings.NewReader(url.Values{"key": {keys[0]}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", s.url)
	resp, err = noRedirect.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || len(resp.Cookies()) != 1 {
		t.Errorf("sign-in with the printed key = %d, cookies %v", resp.StatusCode, resp.Cookies())
	}
	status, body := s.do("GET", "/api/v1/nothing", keys[0], nil)
	if status != http.StatusNotFound || body["error"] == nil {
		t.Errorf("an unknown API route = %d %v, want the JSON 404", status, body)
	}
}
