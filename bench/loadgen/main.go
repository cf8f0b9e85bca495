// Command loadgen is the HTTP load generator of Gatehouse's benchmarks.
//
// Closed loop (fixed concurrency): -concurrency clients, each sending its
// next request as soon as the previous one answered. Open loop (fixed
// rate): -rate requests per second are due on a fixed schedule, sent by up
// to -concurrency workers, and each latency is measured from when the
// request was due, so a server that falls behind shows it in the latencies
// (no coordinated omission). Both warm up for -warmup, then measure for
// -duration: throughput of 2xx answers, latency percentiles from a
// log-linear histogram (about 1% relative error), and errors by status.
//
//	go run ./bench/loadgen -url http://127.0.0.1:8080/api/v1/key \
//	    -header "Authorization: Bearer $KEY" -concurrency 32 -duration 5s -warmup 2s
//
// Requests vary with -paths-file (one path per line, appended to -url) or
// -requests-file (one JSON object per line: {"method", "path", "body"}),
// rotated through; -once uses each line at most once and ends the run when
// they run out. In paths and bodies {{.N}} becomes the request's sequence
// number. -record FILE sends one request and saves its body (for the
// baseline server); -wait polls -url until it answers 200.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"time"
)

// headerFlags collects repeated -header flags.
type headerFlags []string

func (h *headerFlags) String() string     { return strings.Join(*h, ", ") }
func (h *headerFlags) Set(v string) error { *h = append(*h, v); return nil }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := mainErr(ctx, os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

func mainErr(ctx context.Context, args []string, stdout io.Writer) error {
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	var o sourceOptions
	var headers headerFlags
	var cfg config
	fs.StringVar(&o.url, "url", "", "URL to request, or the base URL of -paths-file and -requests-file paths")
	fs.StringVar(&o.method, "method", "GET", "HTTP method")
	fs.StringVar(&o.body, "body", "", "request body ({{.N}} is the request's sequence number)")
	fs.StringVar(&o.bodyFile, "body-file", "", "file holding the request body")
	fs.StringVar(&o.pathsFile, "paths-file", "", "file of paths, one a line, rotated through")
	fs.StringVar(&o.requestsFile, "requests-file", "", `file of requests, one JSON object a line: {"method": ..., "path": ..., "body": ...}`)
	fs.BoolVar(&o.once, "once", false, "use each line of the paths or requests file at most once; the run ends when they run out")
	fs.Var(&headers, "header", `request header "Name: value" (repeatable)`)
	fs.IntVar(&cfg.Concurrency, "concurrency", 32, "closed loop: clients; open loop: most requests in flight")
	fs.Float64Var(&cfg.Rate, "rate", 0, "requests per second: an open loop at a fixed rate (0: closed loop)")
	fs.DurationVar(&cfg.Duration, "duration", 5*time.Second, "measured time")
	fs.DurationVar(&cfg.Warmup, "warmup", time.Second, "time before measuring")
	timeout := fs.Duration("timeout", 30*time.Second, "timeout of one request")
	asJSON := fs.Bool("json", false, "print the result as JSON")
	record := fs.String("record", "", "send one request, save its body to this file and print its status and content type as JSON")
	wait := fs.Bool("wait", false, "poll -url until it answers 200 (at most -timeout), then print the Unix time in nanoseconds")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.headers = headers
	client := newClient(cfg.Concurrency, *timeout)
	if *wait {
		return waitReady(ctx, client, o.url, *timeout, stdout)
	}
	src, err := newSource(o)
	if err != nil {
		return err
	}
	if *record != "" {
		return recordOne(client, src, *record, stdout)
	}
	res, err := run(ctx, client, src, cfg)
	if err != nil {
		return err
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		return enc.Encode(res)
	}
	printResult(stdout, res)
	return nil
}

// newClient returns a keep-alive client with an idle connection for every
// worker.
func newClient(concurrency int, timeout time.Duration) *http.Client {
	tr := &http.Transport{
		Proxy:               nil,
		MaxIdleConns:        concurrency * 2,
		MaxIdleConnsPerHost: concurrency * 2,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true,
	}
	return &http.Client{Transport: tr, Timeout: timeout}
}

// waitReady polls url every millisecond until it answers 200.
func waitReady(ctx context.Context, client *http.Client, url string, timeout time.Duration, stdout io.Writer) error {
	deadline := time.Now().Add(timeout)
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if status, err := do(client, req); err == nil && status == http.StatusOK {
			fmt.Fprintln(stdout, time.Now().UnixNano())
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("%s did not answer 200 within %s", url, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Millisecond):
		}
	}
}

// recordOne sends the first request and saves its body.
func recordOne(client *http.Client, src *source, path string, stdout io.Writer) error {
	n, sp, _ := src.take()
	req, err := src.request(n, sp)
	if err != nil {
		return err
	}
	resp, err := client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, body, 0o644); err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(map[string]any{
		"status": resp.StatusCode, "content_type": resp.Header.Get("Content-Type"), "bytes": len(body),
	})
}

func printResult(w io.Writer, r *result) {
	mode := fmt.Sprintf("closed loop, %d clients", r.Concurrency)
	if r.Mode == "open" {
		mode = fmt.Sprintf("open loop, %.0f/s, up to %d in flight", r.Rate, r.Concurrency)
	}
	fmt.Fprintf(w, "%s, %.1fs measured%s\n", mode, r.Seconds, map[bool]string{true: " (requests ran out)"}[r.Exhausted])
	fmt.Fprintf(w, "requests %d, ok %d, errors %d, throughput %.0f/s\n", r.Requests, r.OK, r.Errors, r.RPS)
	l := r.Latency
	fmt.Fprintf(w, "latency ms: min %.3f  mean %.3f  p50 %.3f  p90 %.3f  p99 %.3f  p99.9 %.3f  max %.3f\n",
		l.Min, l.Mean, l.P50, l.P90, l.P99, l.P999, l.Max)
	fmt.Fprintf(w, "status: %v\n", r.Status)
	for msg, n := range r.TransportErrors {
		fmt.Fprintf(w, "transport error x%d: %s\n", n, msg)
	}
}
