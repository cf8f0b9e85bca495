package main

import (
	"path/filepath"
	"strings"
	"testing"
)

func TestHealthURL(t *testing.T) {
	for addr, want := range map[string]string{
		"127.0.0.1:8080": "http://127.0.0.1:8080/healthz",
		"0.0.0.0:8080":   "http://127.0.0.1:8080/healthz",
		":9000":          "http://127.0.0.1:9000/healthz",
		"[::]:8080":      "http://[::1]:8080/healthz",
		"[::1]:8080":     "http://[::1]:8080/healthz",
		"10.1.2.3:80":    "http://10.1.2.3:80/healthz",
	} {
		if got, err := healthURL(addr, false); err != nil || got != want {
			t.Errorf("healthURL(%q) = %q, %v; want %q", addr, got, err, want)
		}
	}
	if got, _ := healthURL("0.0.0.0:8080", true); got != "http://127.0.0.1:8080/readyz" {
		t.Errorf("healthURL ready = %q", got)
	}
	for _, addr := range []string{"127.0.0.1:0", "localhost", ""} {
		if _, err := healthURL(addr, false); err == nil {
			t.Errorf("healthURL(%q) succeeded", addr)
		}
	}
}

// TestHealthcheckCommand: 0 for a server that answers, 1 (with the reason)
// for an address where none listens.
func TestHealthcheckCommand(t *testing.T) {
	s := startServer(t, nil, "--addr", "127.0.0.1:0", "--database", filepath.Join(t.TempDir(), "g.db"))
	for _, args := range [][]string{{"healthcheck"}, {"healthcheck", "--ready"}} {
		out, _, err := cli(t, map[string]string{"GATEHOUSE_ADDR": s.addr}, args...)
		if err != nil || !strings.Contains(out, "200") {
			t.Errorf("gatehouse %v against a live server: %v %q", args, err, out)
		}
	}
	if _, _, err := cli(t, nil, "healthcheck", "--addr", s.addr); err != nil {
		t.Errorf("healthcheck --addr: %v", err)
	}
	s.stop()
	_, _, err := cli(t, map[string]string{"GATEHOUSE_ADDR": s.addr}, "healthcheck")
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "healthcheck") {
		t.Errorf("healthcheck of a stopped server: %v (exit %d), want exit 1", err, exitCode(err))
	}
}
