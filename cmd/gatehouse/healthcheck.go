package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"
)

// healthcheckCommand runs `gatehouse healthcheck`: it asks the server on
// GATEHOUSE_ADDR (or --addr) whether it serves (GET /healthz; with --ready,
// whether its database answers: GET /readyz) and exits 0 if so, 1 if not.
// It is the container image's HEALTHCHECK, which has no shell or curl to
// run one with.
func healthcheckCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg := DefaultConfig()
	if v := getenv("GATEHOUSE_ADDR"); v != "" {
		cfg.Addr = v
	}
	fs := flag.NewFlagSet("healthcheck", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "the server's listen address (env GATEHOUSE_ADDR)")
	ready := fs.Bool("ready", false, "check readiness (GET /readyz: the database answers) instead of liveness (GET /healthz)")
	timeout := fs.Duration("timeout", 3*time.Second, "how long to wait for the answer")
	if err := parseFlags(fs, args); err != nil {
		return err
	}
	url, err := healthURL(cfg.Addr, *ready)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return fmt.Errorf("healthcheck: %w", err)
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("healthcheck: GET %s answered %s", url, resp.Status)
	}
	fmt.Fprintf(stdout, "GET %s: %s\n", url, resp.Status)
	return nil
}

// healthURL is where the server listening on addr answers health checks:
// an unspecified host (":8080", "0.0.0.0:8080", "[::]:8080") is reached on
// the loopback address.
func healthURL(addr string, ready bool) (string, error) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil || port == "" || port == "0" {
		return "", usageError{fmt.Sprintf("healthcheck: the listen address %q has no fixed port: set GATEHOUSE_ADDR or --addr to the server's, such as 127.0.0.1:8080", addr)}
	}
	switch host {
	case "", "0.0.0.0":
		host = "127.0.0.1"
	case "::":
		host = "::1"
	}
	path := "/healthz"
	if ready {
		path = "/readyz"
	}
	return "http://" + net.JoinHostPort(host, port) + path, nil
}
