package httpapi_test

import (
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse/httpapi"
	"gatehouse/ratelimit"
)

// limiterClock is the clock of the rate limiter, apart from the store's.
type limiterClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *limiterClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *limiterClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// sendFrom sends a request from a client address with a raw Authorization
// header value ("" for none).
func (e *testEnv) sendFrom(remote, method, path, authorization, body string) *response {
	e.t.Helper()
	req := httptest.NewRequest(method, path, strings.NewReader(body))
	req.RemoteAddr = remote
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if authorization != "" {
		req.Header.Set("Authorization", authorization)
	}
	return e.send(req)
}

// wantRate checks the rate-limit headers of an answer.
func wantRate(t *testing.T, what string, res *response, status, remaining int, reset time.Time) {
	t.Helper()
	if res.Status != status {
		t.Fatalf("%s: status %d, want %d: %s", what, res.Status, status, res.Body)
	}
	h := res.Header
	if got := h.Get("X-RateLimit-Limit"); got != "3" {
		t.Errorf("%s: X-RateLimit-Limit %q, want 3", what, got)
	}
	if got := h.Get("X-RateLimit-Remaining"); got != strconv.Itoa(remaining) {
		t.Errorf("%s: X-RateLimit-Remaining %q, want %d", what, got, remaining)
	}
	if got := h.Get("X-RateLimit-Reset"); got != strconv.FormatInt(reset.UnixMilli(), 10) {
		t.Errorf("%s: X-RateLimit-Reset %q, want %d (epoch ms)", what, got, reset.UnixMilli())
	}
	if status != http.StatusTooManyRequests {
		if got := h.Get("Retry-After"); got != "" {
			t.Errorf("%s: Retry-After %q on an allowed request", what, got)
		}
	}
}

// wantLimited checks a 429 answer: Retry-After in whole seconds and the JSON
// error body.
func wantLimited(t *testing.T, what string, res *response, retryAfter int, reset time.Time) {
	t.Helper()
	wantRate(t, what, res, http.StatusTooManyRequests, 0, reset)
	if got := res.Header.Get("Retry-After"); got != strconv.Itoa(retryAfter) {
		t.Errorf("%s: Retry-After %q, want %d", what, got, retryAfter)
	}
	if msg := res.errorMessage(t); !strings.Contains(msg, "rate limit") {
		t.Errorf("%s: message %q", what, msg)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	lc := &limiterClock{t: time.Date(2027, 3, 17, 10, 30, 0, 0, time.UTC)}
	e := newEnv(t, withLimiter(ratelimit.NewMemory(ratelimit.Config{RPS: 1, Burst: 3}, lc.now)))
	bearer := func(key string) string { return "Bearer " + key }
	const client = "192.0.2.10:4242"

	// Set-up requests spend the management key's bucket; an hour refills it.
	hash, k1 := e.createKey(e.mgmt, map[string]any{"name": "one"})
	_, k2 := e.createKey(e.mgmt, map[string]any{"name": "two"})
	lc.advance(time.Hour)

	// One key: three requests pass, the fourth is refused.
	t0 := lc.now()
	for i := range 3 {
		res := e.sendFrom(client, "GET", "/api/v1/key", bearer(k1), "")
		wantRate(t, "k1 request "+strconv.Itoa(i+1), res, http.StatusOK, 2-i, t0.Add(time.Duration(i+1)*time.Second))
	}
	wantLimited(t, "k1 request 4", e.sendFrom(client, "GET", "/api/v1/key", bearer(k1), ""), 1, t0.Add(3*time.Second))
	// Half a second later one token is still half a second away: Retry-After
	// rounds up to whole seconds.
	lc.advance(500 * time.Millisecond)
	wantLimited(t, "k1 after 0.5 s", e.sendFrom(client, "GET", "/api/v1/key", bearer(k1), ""), 1, t0.Add(3*time.Second))

	// Another key, from the same address, has its own bucket.
	wantRate(t, "k2", e.sendFrom(client, "GET", "/api/v1/key", bearer(k2), ""), http.StatusOK, 2, lc.now().Add(time.Second))

	// A 429 changes nothing.
	for range 3 {
		e.do("GET", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusOK)
	}
	e.unchanged("limited PATCH", func() {
		res := e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"name": "renamed", "disabled": true})
		wantLimited(t, "limited PATCH", res, 1, lc.now().Add(3*time.Second))
	})

	// Rejected credentials are limited per client address, before the 401.
	bogus := bearer("sk-gh-v1-" + strings.Repeat("0", 64))
	tIP := lc.now()
	for i := range 3 {
		res := e.sendFrom("198.51.100.7:1000", "GET", "/api/v1/keys", bogus, "")
		wantRate(t, "bad credential "+strconv.Itoa(i+1), res, http.StatusUnauthorized, 2-i, tIP.Add(time.Duration(i+1)*time.Second))
	}
	for _, auth := range []string{bogus, "", "Basic x", bearer(k2[:len(k2)-1] + "x")} {
		res := e.sendFrom("198.51.100.7:2000", "GET", "/api/v1/keys", auth, "") // another port, same address
		wantLimited(t, "bad credential "+auth, res, 1, tIP.Add(3*time.Second))
	}
	// Another address has its own bucket, and a valid key from the limited
	// address uses the key's bucket.
	wantRate(t, "other address", e.sendFrom("198.51.100.8:1000", "GET", "/api/v1/keys", bogus, ""),
		http.StatusUnauthorized, 2, tIP.Add(time.Second))
	e.sendFrom("198.51.100.7:1000", "GET", "/api/v1/key", bearer(k2), "").want(t, http.StatusOK)

	// The code exchange is limited per address, whatever credential it carries.
	tX := lc.now()
	exchange := `{"code": "ghc_unknown"}`
	for i := range 3 {
		res := e.sendFrom("203.0.113.5:1", "POST", "/api/v1/auth/keys", "", exchange)
		wantRate(t, "exchange "+strconv.Itoa(i+1), res, http.StatusForbidden, 2-i, tX.Add(time.Duration(i+1)*time.Second))
	}
	e.unchanged("limited exchange", func() {
		wantLimited(t, "exchange 4", e.sendFrom("203.0.113.5:1", "POST", "/api/v1/auth/keys", "", exchange), 1, tX.Add(3*time.Second))
		wantLimited(t, "exchange with a key", e.sendFrom("203.0.113.5:1", "POST", "/api/v1/auth/keys", bearer(e.mgmt), exchange), 1, tX.Add(3*time.Second))
	})
	e.sendFrom("203.0.113.6:1", "POST", "/api/v1/auth/keys", "", exchange).want(t, http.StatusForbidden)

	// After the refill time requests pass again: one token per second.
	lc.advance(time.Second) // k1 is now 1.5 s past its fourth request's refusal
	tR := lc.now()
	wantRate(t, "k1 after refill", e.sendFrom(client, "GET", "/api/v1/key", bearer(k1), ""), http.StatusOK, 0, t0.Add(4*time.Second))
	wantLimited(t, "k1 again", e.sendFrom(client, "GET", "/api/v1/key", bearer(k1), ""), 1, t0.Add(4*time.Second))
	lc.advance(3 * time.Second)
	for i := range 3 {
		res := e.sendFrom(client, "GET", "/api/v1/key", bearer(k1), "")
		wantRate(t, "k1 full bucket "+strconv.Itoa(i+1), res, http.StatusOK, 2-i, tR.Add(3*time.Second).Add(time.Duration(i+1)*time.Second))
	}
	// The limited PATCH can now go through.
	e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"name": "renamed"}).want(t, http.StatusOK)
}

// TestBogusTokenFloodSparesCodeExchanges: a flood of bogus bearer tokens
// from an address drains only its failed-authentication bucket; valid code
// exchanges from the same address still go through.
func TestBogusTokenFloodSparesCodeExchanges(t *testing.T) {
	t.Parallel()
	lc := &limiterClock{t: time.Date(2027, 3, 17, 10, 30, 0, 0, time.UTC)}
	e := newEnv(t, withLimiter(ratelimit.NewMemory(ratelimit.Config{RPS: 1, Burst: 10}, lc.now)))
	codes := make([]string, 10)
	for i := range codes {
		codes[i] = e.createCode(e.mgmt, map[string]any{"callback_url": "https://app.example/cb"}).ID
		lc.advance(time.Second)
	}
	lc.advance(time.Hour)
	const addr = "192.0.2.77:5000"
	for i := range 200 {
		bogus := "Bearer sk-gh-v1-" + strings.Repeat(strconv.Itoa(i%10), 64)
		e.sendFrom(addr, "GET", "/api/v1/key", bogus, "")
	}
	e.sendFrom(addr, "GET", "/api/v1/key", "Bearer sk-gh-v1-"+strings.Repeat("f", 64), "").want(t, http.StatusTooManyRequests)
	for i, code := range codes {
		res := e.sendFrom(addr, "POST", "/api/v1/auth/keys", "", `{"code":"`+code+`"}`)
		if res.Status != http.StatusOK {
			t.Errorf("exchange %d after the flood: %d %s", i+1, res.Status, res.Body)
		}
	}
}

// TestTrustedProxies: forwarding headers name the client only when the
// connection comes from a trusted proxy; from anyone else they are ignored.
func TestTrustedProxies(t *testing.T) {
	t.Parallel()
	lc := &limiterClock{t: time.Date(2027, 3, 17, 10, 30, 0, 0, time.UTC)}
	e := newEnv(t, withLimiter(ratelimit.NewMemory(ratelimit.Config{RPS: 1, Burst: 2}, lc.now)))
	e.handler.(*httpapi.Server).TrustProxies([]netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")})
	exchange := `{"code":"ghc_unknown"}`
	send := func(remote string, header ...string) int {
		req := httptest.NewRequest("POST", "/api/v1/auth/keys", strings.NewReader(exchange))
		req.RemoteAddr = remote
		req.Header.Set("Content-Type", "application/json")
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Add(header[i], header[i+1])
		}
		return e.send(req).Status
	}
	// Behind the proxy, two clients have two buckets.
	for range 2 {
		if got := send("10.1.1.1:80", "X-Forwarded-For", "198.51.100.1, 10.2.2.2"); got != http.StatusForbidden {
			t.Fatalf("client 1 via proxy: %d", got)
		}
	}
	if got := send("10.1.1.1:80", "X-Forwarded-For", "198.51.100.1"); got != http.StatusTooManyRequests {
		t.Errorf("client 1's third request: %d, want 429", got)
	}
	if got := send("10.1.1.1:80", "Forwarded", `for="198.51.100.2:1234";proto=https`); got != http.StatusForbidden {
		t.Errorf("client 2 via Forwarded: %d, want its own bucket", got)
	}
	// A client that is not a proxy cannot pick its bucket with the header:
	// a forged left-most entry does not help either.
	for range 2 {
		send("203.0.113.9:1", "X-Forwarded-For", "198.51.100.50")
	}
	if got := send("203.0.113.9:1", "X-Forwarded-For", "198.51.100.51"); got != http.StatusTooManyRequests {
		t.Errorf("an untrusted peer changed its bucket with X-Forwarded-For: %d", got)
	}
	if got := send("10.1.1.1:80", "X-Forwarded-For", "6.6.6.6, 198.51.100.1"); got != http.StatusTooManyRequests {
		t.Errorf("a forged left-most entry escaped client 1's bucket: %d", got)
	}
}
