package egress_test

import (
	"context"
	"errors"
	"net/netip"
	"testing"

	"gatehouse/egress"
)

func TestCheckAddr(t *testing.T) {
	p := &egress.Policy{}
	for _, a := range []string{"127.0.0.1", "127.9.9.9", "10.1.2.3", "172.16.0.1", "192.168.1.1", "169.254.169.254",
		"100.100.100.200", "0.0.0.0", "::1", "::", "fd00:ec2::254", "fe80::1", "::ffff:127.0.0.1", "::ffff:169.254.169.254",
		// A zone hid an address from every prefix.
		"::1%lo", "::1%1", "fd00:ec2::254%eth0", "fe80::fc:ff:fe00:1%eth0", "fd00::2%eth0",
		// IPv4-compatible, Teredo, documentation.
		"::127.0.0.1", "2001:0:4136:e378:8000:63bf:3fff:fdd2", "192.0.2.7", "198.51.100.1", "203.0.113.9", "2001:db8::1"} {
		if err := p.CheckAddr(netip.MustParseAddr(a)); !errors.Is(err, egress.ErrBlocked) {
			t.Errorf("%s: %v, want blocked", a, err)
		}
	}
	for _, a := range []string{"8.8.8.8", "93.184.215.14", "2606:4700::1111"} {
		if err := p.CheckAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s: %v, want allowed", a, err)
		}
	}
	open := egress.MustParse("127.0.0.1/32, 10.0.0.0/8")
	for _, a := range []string{"127.0.0.1", "10.9.8.7", "::ffff:127.0.0.1"} {
		if err := open.CheckAddr(netip.MustParseAddr(a)); err != nil {
			t.Errorf("%s with an allow list: %v", a, err)
		}
	}
	if err := open.CheckAddr(netip.MustParseAddr("127.0.0.2")); err == nil {
		t.Error("127.0.0.2 allowed by 127.0.0.1/32")
	}
}

func TestCheckURL(t *testing.T) {
	resolver := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "rebind.example":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14"), netip.MustParseAddr("127.0.0.1")}, nil
		case "hooks.example":
			return []netip.Addr{netip.MustParseAddr("93.184.215.14")}, nil
		}
		return nil, errors.New("no such host")
	}
	p := &egress.Policy{Resolve: resolver}
	for _, u := range []string{
		"http://127.0.0.1:8080/hook", "http://169.254.169.254/latest/meta-data/", "http://[fd00:ec2::254]/",
		"http://[::1]:9000/", "http://metadata.google.internal/computeMetadata/v1/", "http://localhost:9000/",
		"http://api.localhost/", "http://2130706433/", "http://0x7f.1/", "http://017700000001/", "http://0177.0.0.1/",
		"https://rebind.example/hook", "http://[::ffff:127.0.0.1]/",
		"http://[::1%25lo]:9285/", "http://[::1%251]/", "http://[fd00:ec2::254%25eth0]/latest/api/token",
		"http://[fe80::1%25eth0]:9285/", "http://[::127.0.0.1]/",
	} {
		if err := p.CheckURL(context.Background(), u); !errors.Is(err, egress.ErrBlocked) {
			t.Errorf("%s: %v, want blocked", u, err)
		}
	}
	for _, u := range []string{"https://hooks.example/x", "https://unknown.example/x", "https://8.8.8.8/"} {
		if err := p.CheckURL(context.Background(), u); err != nil {
			t.Errorf("%s: %v, want allowed", u, err)
		}
	}
	open := egress.MustParse("127.0.0.0/8,langfuse.internal")
	open.Resolve = resolver
	for _, u := range []string{"http://127.0.0.1:3000/", "http://langfuse.internal:3000/"} {
		if err := open.CheckURL(context.Background(), u); err != nil {
			t.Errorf("%s with an allow list: %v", u, err)
		}
	}
}

func TestParse(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/33", "not a host", "http://x"} {
		if _, err := egress.Parse(bad); err == nil {
			t.Errorf("Parse(%q) succeeded", bad)
		}
	}
	if _, err := egress.Parse(" 127.0.0.1 , ::1/128, langfuse.local "); err != nil {
		t.Error(err)
	}
}

// TestControl: the dial hook refuses the address actually dialed, zoned or
// not, and lets a public one through.
func TestControl(t *testing.T) {
	p := &egress.Policy{}
	for _, addr := range []string{"127.0.0.1:80", "[::1]:80", "[::1%lo]:80", "[fd00:ec2::254%eth0]:80", "[::ffff:169.254.169.254]:80"} {
		if err := p.Control("tcp", addr, nil); !errors.Is(err, egress.ErrBlocked) {
			t.Errorf("Control(%s) = %v, want blocked", addr, err)
		}
	}
	if err := p.Control("tcp", "93.184.215.14:443", nil); err != nil {
		t.Errorf("Control of a public address: %v", err)
	}
}
