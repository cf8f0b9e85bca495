// Package forwarded says who a request comes from and whether the client
// reached us over HTTPS, believing the forwarding headers (X-Forwarded-For,
// X-Forwarded-Proto, Forwarded) only from the reverse proxies the operator
// trusts (GATEHOUSE_TRUSTED_PROXIES): from anyone else a client could forge
// them. The API (rate limits, the request log) and the web console (its
// sign-in limits, its Secure cookies and origin checks) read requests
// through the same rules.
package forwarded

import (
	"net"
	"net/http"
	"net/netip"
	"strings"
)

// Proxies are the reverse proxies whose forwarding headers count. The zero
// value trusts none.
type Proxies []netip.Prefix

// ClientIP returns the address the request came from: the connection's
// peer, or, when the peer is a trusted proxy, the right-most address of
// X-Forwarded-For (or, without one, Forwarded) that is not itself a trusted
// proxy.
//
// X-Forwarded-For comes first because it is what the common proxies write
// (nginx's $proxy_add_x_forwarded_for, Caddy, HAProxy's forwardfor, Go's
// ReverseProxy), and they pass a client's own Forwarded header through
// untouched: were Forwarded to win whenever present, a client would choose
// its rate-limit bucket (or drain another's) by sending one. A proxy that
// writes only Forwarded must drop a client's X-Forwarded-For.
func (p Proxies) ClientIP(r *http.Request) string {
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil {
		host, _, err := net.SplitHostPort(r.RemoteAddr)
		if err != nil {
			return r.RemoteAddr
		}
		return host
	}
	addr := peer.Addr().Unmap()
	if !p.trusts(addr) {
		return addr.String()
	}
	hops := forwardedFor(r.Header)
	for i := len(hops) - 1; i >= 0; i-- {
		addr = hops[i]
		if !p.trusts(addr) {
			break
		}
	}
	return addr.String()
}

// HTTPS reports whether the client reached us over TLS: the connection is
// TLS, or the peer is a trusted proxy that says the client used https (the
// last X-Forwarded-Proto value, else the last proto= of Forwarded: what the
// proxy nearest to us set; X-Forwarded-Proto first, as for ClientIP).
func (p Proxies) HTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	peer, err := netip.ParseAddrPort(r.RemoteAddr)
	if err != nil || !p.trusts(peer.Addr().Unmap()) {
		return false
	}
	proto := ""
	if xs := r.Header.Values("X-Forwarded-Proto"); len(xs) > 0 {
		parts := strings.Split(xs[len(xs)-1], ",")
		proto = strings.TrimSpace(parts[len(parts)-1])
	} else if fwd := r.Header.Values("Forwarded"); len(fwd) > 0 {
		forEachPair(fwd, func(k, v string) {
			if strings.EqualFold(k, "proto") {
				proto = v
			}
		})
	}
	return strings.EqualFold(proto, "https")
}

func (p Proxies) trusts(a netip.Addr) bool {
	for _, prefix := range p {
		if prefix.Contains(a) {
			return true
		}
	}
	return false
}

// forEachPair calls f with every key=value pair of Forwarded header values,
// in order, the value unquoted.
func forEachPair(values []string, f func(k, v string)) {
	for _, v := range values {
		for _, elem := range strings.Split(v, ",") {
			for _, pair := range strings.Split(elem, ";") {
				if k, val, ok := strings.Cut(strings.TrimSpace(pair), "="); ok {
					f(k, strings.Trim(val, `"`))
				}
			}
		}
	}
}

// forwardedFor lists the addresses of X-Forwarded-For, or else of the
// Forwarded header's for= values, in order; unparsable entries end the
// list at that point, since nothing to their left can be trusted.
func forwardedFor(h http.Header) []netip.Addr {
	var raw []string
	if xs := h.Values("X-Forwarded-For"); len(xs) > 0 {
		for _, v := range xs {
			raw = append(raw, strings.Split(v, ",")...)
		}
	} else {
		forEachPair(h.Values("Forwarded"), func(k, v string) {
			if strings.EqualFold(k, "for") {
				raw = append(raw, v)
			}
		})
	}
	var out []netip.Addr
	for i := len(raw) - 1; i >= 0; i-- {
		v := strings.TrimSpace(raw[i])
		a, err := netip.ParseAddr(strings.Trim(v, "[]"))
		if err != nil {
			ap, err2 := netip.ParseAddrPort(v)
			if err2 != nil {
				break
			}
			a = ap.Addr()
		}
		out = append([]netip.Addr{a.Unmap()}, out...)
	}
	return out
}

// AddressBucket names the rate-limit bucket of a client address: IPv6
// clients are counted per /64, which one subscriber usually holds whole.
func AddressBucket(ip string) string {
	a, err := netip.ParseAddr(ip)
	if err != nil || !a.Is6() {
		return ip
	}
	p, _ := a.Prefix(64)
	return p.String()
}
