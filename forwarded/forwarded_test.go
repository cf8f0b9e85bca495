package forwarded_test

import (
	"crypto/tls"
	"net/http"
	"net/netip"
	"testing"

	"gatehouse/forwarded"
)

var proxies = forwarded.Proxies{netip.MustParsePrefix("10.0.0.0/8")}

func request(remote string, header ...string) *http.Request {
	r := &http.Request{RemoteAddr: remote, Header: http.Header{}}
	for i := 0; i+1 < len(header); i += 2 {
		r.Header.Add(header[i], header[i+1])
	}
	return r
}

func TestClientIP(t *testing.T) {
	for _, tc := range []struct {
		name string
		r    *http.Request
		want string
	}{
		{"direct", request("203.0.113.9:5555", "X-Forwarded-For", "1.2.3.4"), "203.0.113.9"},
		{"through a trusted proxy", request("10.0.0.2:5555", "X-Forwarded-For", "1.2.3.4, 198.51.100.7"), "198.51.100.7"},
		{"through two trusted proxies", request("10.0.0.2:5555", "X-Forwarded-For", "198.51.100.7, 10.0.0.3"), "198.51.100.7"},
		// The proxy appended the client's address to X-Forwarded-For and
		// passed the client's own Forwarded header through: it picks nothing.
		{"X-Forwarded-For wins over a client's Forwarded", request("10.0.0.2:5555", "Forwarded", `for="[2001:db8::1]";proto=https`, "X-Forwarded-For", "1.2.3.4"), "1.2.3.4"},
		{"Forwarded alone", request("10.0.0.2:5555", "Forwarded", `for="[2001:db8::1]";proto=https`), "2001:db8::1"},
		{"no header from a proxy", request("10.0.0.2:5555"), "10.0.0.2"},
	} {
		if got := proxies.ClientIP(tc.r); got != tc.want {
			t.Errorf("%s: ClientIP = %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestHTTPS(t *testing.T) {
	tlsReq := request("203.0.113.9:5555")
	tlsReq.TLS = &tls.ConnectionState{}
	for _, tc := range []struct {
		name string
		r    *http.Request
		want bool
	}{
		{"plain", request("203.0.113.9:5555"), false},
		{"TLS", tlsReq, true},
		{"an untrusted client says https", request("203.0.113.9:5555", "X-Forwarded-Proto", "https"), false},
		{"a trusted proxy says https", request("10.0.0.2:5555", "X-Forwarded-Proto", "https"), true},
		{"a trusted proxy says http", request("10.0.0.2:5555", "X-Forwarded-Proto", "http"), false},
		{"the nearest proxy's word counts", request("10.0.0.2:5555", "X-Forwarded-Proto", "https, http"), false},
		{"Forwarded proto", request("10.0.0.2:5555", "Forwarded", "for=1.2.3.4;proto=https"), true},
		{"X-Forwarded-Proto wins over a client's Forwarded", request("10.0.0.2:5555", "Forwarded", "for=1.2.3.4;proto=https", "X-Forwarded-Proto", "http"), false},
	} {
		if got := proxies.HTTPS(tc.r); got != tc.want {
			t.Errorf("%s: HTTPS = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestAddressBucket(t *testing.T) {
	if got := forwarded.AddressBucket("2001:db8:1:2:3:4:5:6"); got != "2001:db8:1:2::/64" {
		t.Errorf("IPv6 bucket = %q", got)
	}
	if got := forwarded.AddressBucket("192.0.2.1"); got != "192.0.2.1" {
		t.Errorf("IPv4 bucket = %q", got)
	}
}
