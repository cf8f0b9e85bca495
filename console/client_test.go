package console_test

import (
	"io"
	"net"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
)

// client is a browser without JavaScript: a cookie jar, and forms posted
// as a browser posts them (with the console's Origin), for the tests of
// what the server enforces whatever the page does.
type client struct {
	t    testing.TB
	e    *env
	http *http.Client
	// page is the body of the last answer.
	page string
}

func (e *env) client() *client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return &client{t: e.t, e: e, http: &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error {
		return http.ErrUseLastResponse // the tests look at redirects
	}}}
}

// clientFrom is a client whose connections come from another loopback
// address (127.0.0.2, 127.0.0.3, ...: all of 127.0.0.0/8 is the loopback
// on Linux), as a browser elsewhere would.
func (e *env) clientFrom(addr string) *client {
	c := e.client()
	dialer := &net.Dialer{LocalAddr: &net.TCPAddr{IP: net.ParseIP(addr)}}
	c.http.Transport = &http.Transport{DialContext: dialer.DialContext}
	return c
}

// do sends a request with headers (name, value, ...) and returns the
// answer, its body read into c.page.
func (c *client) do(method, path string, form url.Values, headers ...string) *http.Response {
	c.t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(method, c.e.URL+path, body)
	if err != nil {
		c.t.Fatal(err)
	}
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(headers); i += 2 {
		req.Header.Set(headers[i], headers[i+1])
	}
	resp, err := c.http.Do(req)
	if err != nil {
		c.t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		c.t.Fatal(err)
	}
	c.page = string(b)
	return resp
}

// get fetches a page.
func (c *client) get(path string) *http.Response { return c.do("GET", path, nil) }

// post posts a form from the console's own origin, with the CSRF token of
// the last page unless the form has one.
func (c *client) post(path string, form url.Values) *http.Response {
	c.t.Helper()
	if form.Get("csrf") == "" {
		if token := c.csrf(); token != "" {
			form.Set("csrf", token)
		}
	}
	return c.do("POST", path, form, "Origin", c.e.URL)
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf is the CSRF token in the last page, "" when none.
func (c *client) csrf() string {
	if m := csrfField.FindStringSubmatch(c.page); m != nil {
		return m[1]
	}
	return ""
}

// signInWithKey signs in with the organization's management key, and
// loads the overview (which carries the session's CSRF token).
func (c *client) signInWithKey() {
	c.t.Helper()
	if resp := c.do("POST", "/sign-in/key", url.Values{"key": {c.e.mgmt}}, "Origin", c.e.URL); resp.StatusCode != http.StatusSeeOther {
		c.t.Fatalf("sign in with the key: %d\n%s", resp.StatusCode, c.page)
	}
	c.wantStatus(c.get("/"), http.StatusOK)
}

// wantStatus fails unless the answer has the status.
func (c *client) wantStatus(resp *http.Response, status int) {
	c.t.Helper()
	if resp.StatusCode != status {
		c.t.Fatalf("%s %s: status %d, want %d\n%s", resp.Request.Method, resp.Request.URL.Path, resp.StatusCode, status, c.page)
	}
}
