// Package egress decides where Gatehouse may connect on behalf of its
// tenants: the observability destinations that management keys configure,
// and the identity providers that organizations' admins name for single
// sign-on (package sso). Without it, a management key could point a webhook
// at the server's own loopback, a private network or a cloud metadata
// service, and use Gatehouse to reach what only the server can reach.
//
// A Policy is applied twice: when a destination is configured (a clear 400
// for an address that can never work) and on every connection, to the
// address actually dialed, so that a name that resolves to a public address
// when configured and to a private one later (DNS rebinding) is still
// refused.
package egress

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"syscall"
	"time"
)

// Policy is the set of addresses deliveries may not reach, less what the
// operator opened. The zero Policy refuses every blocked range.
type Policy struct {
	allowNets  []netip.Prefix
	allowHosts map[string]bool
	// Resolve looks up a host name at configuration time; nil uses the
	// system resolver. A failed look-up is not an error there: the dial
	// check still applies.
	Resolve func(ctx context.Context, host string) ([]netip.Addr, error)
}

// blockedNets are never reached unless allowed: loopback, private (RFC 1918
// and unique-local fc00::/7), link-local (which holds 169.254.169.254, the
// metadata address of most clouds), shared address space (RFC 6598, where
// 100.100.100.200 serves Alibaba's metadata), "this network", multicast,
// the documentation ranges (never a real destination), and the IPv6 forms
// that embed IPv4 addresses (IPv4-compatible ::/96, NAT64, 6to4, Teredo).
var blockedNets = func() []netip.Prefix {
	var out []netip.Prefix
	for _, s := range []string{
		"0.0.0.0/8", "10.0.0.0/8", "100.64.0.0/10", "127.0.0.0/8", "169.254.0.0/16", "172.16.0.0/12",
		"192.0.0.0/24", "192.0.2.0/24", "192.168.0.0/16", "198.18.0.0/15", "198.51.100.0/24", "203.0.113.0/24",
		"224.0.0.0/4", "240.0.0.0/4",
		"::/96", "::1/128", "64:ff9b::/96", "64:ff9b:1::/48", "2001::/32", "2001:db8::/32", "2002::/16",
		"fc00::/7", "fe80::/10", "ff00::/8",
	} {
		out = append(out, netip.MustParsePrefix(s))
	}
	return out
}()

// blockedNames are host names of metadata services and of the machine
// itself.
var blockedNames = map[string]bool{
	"localhost": true, "metadata": true, "metadata.google.internal": true, "metadata.goog": true,
	"instance-data": true, "instance-data.ec2.internal": true,
}

// Parse reads GATEHOUSE_EGRESS_ALLOW: comma-separated CIDRs, addresses and
// host names that deliveries may reach although they are blocked.
func Parse(allow string) (*Policy, error) {
	p := &Policy{allowHosts: map[string]bool{}}
	for _, f := range strings.Split(allow, ",") {
		f = strings.TrimSpace(f)
		switch {
		case f == "":
		case strings.Contains(f, "/"):
			n, err := netip.ParsePrefix(f)
			if err != nil {
				return nil, fmt.Errorf("%q is not a CIDR such as 10.0.0.0/8", f)
			}
			p.allowNets = append(p.allowNets, n.Masked())
		default:
			if a, err := netip.ParseAddr(f); err == nil {
				p.allowNets = append(p.allowNets, netip.PrefixFrom(a.Unmap(), a.Unmap().BitLen()))
				continue
			}
			if !validHostName(f) {
				return nil, fmt.Errorf("%q is neither a CIDR, an address nor a host name", f)
			}
			p.allowHosts[strings.ToLower(strings.TrimSuffix(f, "."))] = true
		}
	}
	return p, nil
}

// MustParse is Parse for tests and constants.
func MustParse(allow string) *Policy {
	p, err := Parse(allow)
	if err != nil {
		panic(err)
	}
	return p
}

// ErrBlocked is the error of a refused address.
var ErrBlocked = errors.New("egress blocked")

// CheckAddr refuses a blocked address that the policy does not open.
func (p *Policy) CheckAddr(a netip.Addr) error {
	// Without its zone ("::1%lo"): a prefix contains no zoned address, so
	// a zoned loopback or private address would pass every check below.
	a = a.WithZone("").Unmap()
	for _, n := range p.allowNets {
		if n.Contains(a) {
			return nil
		}
	}
	for _, n := range blockedNets {
		if n.Contains(a) {
			return fmt.Errorf("%w: %s is a loopback, private, link-local or metadata address", ErrBlocked, a)
		}
	}
	return nil
}

// hostAllowed reports whether the operator opened a host name.
func (p *Policy) hostAllowed(host string) bool {
	return p.allowHosts[strings.ToLower(strings.TrimSuffix(host, "."))]
}

// Control is a net.Dialer Control hook: it checks the address actually
// dialed, after every resolution.
func (p *Policy) Control(_, address string, _ syscall.RawConn) error {
	ap, err := netip.ParseAddrPort(address)
	if err != nil {
		return fmt.Errorf("%w: cannot read the dialed address %q", ErrBlocked, address)
	}
	return p.CheckAddr(ap.Addr())
}

// DialContext dials like a net.Dialer with the policy checked on the
// address dialed; a host name the operator allowed is dialed unchecked.
func (p *Policy) DialContext(d *net.Dialer) func(ctx context.Context, network, addr string) (net.Conn, error) {
	checked := *d
	checked.Control = p.Control
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		if host, _, err := net.SplitHostPort(addr); err == nil && p.hostAllowed(host) {
			return d.DialContext(ctx, network, addr)
		}
		return checked.DialContext(ctx, network, addr)
	}
}

// Transport returns an HTTP transport that dials under the policy (the
// address actually dialed, after every resolution) and uses no proxy from
// the environment: the policy must see the address that receives what is
// sent. Otherwise it is http.DefaultTransport's.
func (p *Policy) Transport() *http.Transport {
	t := &http.Transport{}
	if dt, ok := http.DefaultTransport.(*http.Transport); ok {
		t = dt.Clone()
	}
	t.Proxy = nil
	t.DialContext = p.DialContext(&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second})
	return t
}

// CheckURL checks, at configuration time, a URL (or a bare host) that a
// destination will connect to. The error says what is wrong, for a 400.
func (p *Policy) CheckURL(ctx context.Context, raw string) error {
	host := raw
	if u, err := url.Parse(raw); err == nil && u.Host != "" {
		host = u.Hostname()
	}
	host = strings.TrimSuffix(strings.ToLower(strings.Trim(host, "[]")), ".")
	if host == "" || p.hostAllowed(host) {
		return nil
	}
	if a, err := netip.ParseAddr(host); err == nil {
		return p.CheckAddr(a)
	}
	if numericHost(host) {
		// 2130706433, 0x7f.1, 017700000001: forms some resolvers read as
		// IPv4 addresses. No destination needs them.
		return fmt.Errorf("%w: %q is a numeric address in a non-standard form; write addresses as dotted decimals", ErrBlocked, host)
	}
	if blockedNames[host] || strings.HasSuffix(host, ".localhost") || strings.HasSuffix(host, ".internal") && strings.HasPrefix(host, "metadata") {
		return fmt.Errorf("%w: %s names this machine or a metadata service", ErrBlocked, host)
	}
	resolve := p.Resolve
	if resolve == nil {
		resolve = func(ctx context.Context, host string) ([]netip.Addr, error) {
			return net.DefaultResolver.LookupNetIP(ctx, "ip", host)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Second)
	defer cancel()
	addrs, err := resolve(ctx, host)
	if err != nil {
		return nil // unknown now; the dial check decides later
	}
	for _, a := range addrs {
		if err := p.CheckAddr(a); err != nil {
			return fmt.Errorf("%w: %s resolves to %s", ErrBlocked, host, a.Unmap())
		}
	}
	return nil
}

// numericHost reports a host made of numbers, dots and hex prefixes only,
// which is no name of a public host (a top-level domain is never numeric).
func numericHost(h string) bool {
	last := h[strings.LastIndex(h, ".")+1:]
	if last == "" {
		return false
	}
	if strings.HasPrefix(last, "0x") {
		last = last[2:]
		return last == "" || strings.Trim(last, "0123456789abcdef") == ""
	}
	return strings.Trim(last, "0123456789") == ""
}

func validHostName(s string) bool {
	if s == "" || len(s) > 253 {
		return false
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '.') {
			return false
		}
	}
	return true
}
