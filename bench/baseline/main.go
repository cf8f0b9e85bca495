// Command baseline is the yardstick of Gatehouse's benchmarks: a plain
// net/http server that answers every request with the same bytes, recorded
// from Gatehouse for the scenario being measured (see bench/loadgen
// -record). It reads each request's body, as Gatehouse does, and sets the
// same Content-Type and Content-Length, so the difference in throughput is
// what Gatehouse does beyond HTTP and copying bytes.
//
//	go run ./bench/baseline -addr 127.0.0.1:8099 -response-file body.json -status 200
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
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"
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
	file := fs.String("response-file", "", "file holding the response body (required)")
	status := fs.Int("status", http.StatusOK, "response status")
	contentType := fs.String("content-type", "application/json", "response Content-Type")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("-response-file is required")
	}
	body, err := os.ReadFile(*file)
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	srv := &http.Server{Handler: handler(body, *status, *contentType), ReadHeaderTimeout: 10 * time.Second}
	log.New(stderr, "", 0).Printf("baseline listening on http://%s (%d bytes, status %d)", ln.Addr(), len(body), *status)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return srv.Close()
	}
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
