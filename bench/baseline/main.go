// Command baseline is the yardstick of Gatehouse's benchmarks: a plain
// net/http server that answers every request with the same bytes, recorded
// from Gatehouse for the scenario being measured (see bench/loadgen
// -record). It reads each request's body, as Gatehouse does, and sets the
// same Content-Type and Content-Length, so the difference in throughput is
// what Gatehouse does beyond HTTP and copying bytes.
//
// With -proxy URL it is instead a bare reverse proxy to URL
// (net/http/httputil.ReverseProxy, no parsing, no authentication, no
// metering; the upstream transport of Gatehouse's gateway): the ceiling of
// a gateway in front of that upstream, for the chat completions scenario.
//
//	go run ./bench/baseline -addr 127.0.0.1:8099 -response-file body.json -status 200
//	go run ./bench/baseline -addr 127.0.0.1:8098 -proxy http://127.0.0.1:8090
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"gatehouse/gateway"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "baseline:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string, stderr io.Writer) error {
	fs := flag.NewFlagSet("baseline", flag.ContinueOnError)
	fs.SetOutput(stderr)
	addr := fs.String("addr", "127.0.0.1:8099", "listen address")
	file := fs.String("response-file", "", "file holding the response body (required unless -proxy)")
	status := fs.Int("status", http.StatusOK, "response status")
	contentType := fs.String("content-type", "application/json", "response Content-Type")
	upstream := fs.String("proxy", "", "be a bare reverse proxy to this base URL instead")
	if err := fs.Parse(args); err != nil {
		return err
	}
	h, what, err := newHandler(*upstream, *file, *status, *contentType)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.New(stderr, "", 0).Printf("baseline listening on http://%s (%s)", ln.Addr(), what)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return srv.Close()
	}
}

// newHandler returns the handler the flags ask for and a description of it.
func newHandler(upstream, file string, status int, contentType string) (http.Handler, string, error) {
	if upstream != "" {
		u, err := url.Parse(upstream)
		if err != nil || u.Scheme == "" || u.Host == "" {
			return nil, "", fmt.Errorf("-proxy %q: want a base URL such as http://127.0.0.1:8090", upstream)
		}
		return proxy(u), "bare reverse proxy to " + u.String(), nil
	}
	if file == "" {
		return nil, "", errors.New("-response-file or -proxy is required")
	}
	body, err := os.ReadFile(file)
	if err != nil {
		return nil, "", err
	}
	return handler(body, status, contentType), fmt.Sprintf("%d bytes, status %d", len(body), status), nil
}

// proxy forwards every request to upstream as it came, through the
// transport of Gatehouse's upstream client (gateway.NewClient), so that the
// two differ only in what Gatehouse does; /healthz answers 200 itself.
func proxy(upstream *url.URL) http.Handler {
	rp := &httputil.ReverseProxy{
		Rewrite:   func(r *httputil.ProxyRequest) { r.SetURL(upstream) },
		Transport: gateway.NewClient().HTTP.Transport,
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/healthz" {
			return
		}
		rp.ServeHTTP(w, r)
	})
}

// handler answers every request with body; /healthz answers 200 so that
// scripts can wait for the server the same way as for Gatehouse.
func handler(body []byte, status int, contentType string) http.Handler {
	length := strconv.Itoa(len(body))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		if r.URL.Path == "/healthz" {
			return
		}
		h := w.Header()
		h.Set("Content-Type", contentType)
		h.Set("Content-Length", length)
		w.WriteHeader(status)
		_, _ = w.Write(body)
	})
}
