package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"sync"
	"time"
)

// config is one load run.
type config struct {
	// Concurrency is the number of workers: the clients of a closed loop,
	// the most requests in flight of an open loop.
	Concurrency int
	// Rate, when > 0, makes the run an open loop: requests are due at a
	// fixed rate whether or not earlier ones have answered.
	Rate     float64
	Warmup   time.Duration
	Duration time.Duration
}

// result is what a run measured, after its warm-up.
type result struct {
	Mode            string         `json:"mode"`
	Concurrency     int            `json:"concurrency"`
	Rate            float64        `json:"rate,omitempty"`
	Seconds         float64        `json:"seconds"`
	Requests        uint64         `json:"requests"`
	OK              uint64         `json:"ok"`
	Errors          uint64         `json:"errors"`
	Status          map[string]int `json:"status"`
	TransportErrors map[string]int `json:"transport_errors,omitempty"`
	RPS             float64        `json:"rps"`
	Latency         latencyJSON    `json:"latency_ms"`
	Exhausted       bool           `json:"exhausted,omitempty"`

	hist *Histogram
}

type latencyJSON struct {
	Min  float64 `json:"min"`
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// tally is one worker's record; the workers' tallies are merged at the end.
type tally struct {
	hist      Histogram
	status    map[int]int
	transport map[string]int
	last      time.Time // latest completion counted
}

func newTally() *tally { return &tally{status: map[int]int{}, transport: map[string]int{}} }

// window says which requests count: with closed loops those that complete
// within [from, to]; with open loops those due within [from, to).
type window struct{ from, to time.Time }

// do sends one request and reads the whole answer.
func do(client *http.Client, req *http.Request) (status int, err error) {
	resp, err := client.Do(req)
	if err != nil {
		return 0, err
	}
	_, err = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, err
}

func (t *tally) add(status int, err error, latency time.Duration, done time.Time) {
	if err != nil {
		msg := err.Error()
		if len(msg) > 120 {
			msg = msg[:120]
		}
		t.transport[msg]++
		return
	}
	t.hist.Record(latency)
	t.status[status]++
	if done.After(t.last) {
		t.last = done
	}
}

// run drives the load and returns the measurement.
func run(ctx context.Context, client *http.Client, src *source, cfg config) (*result, error) {
	if cfg.Concurrency < 1 {
		return nil, fmt.Errorf("concurrency must be at least 1")
	}
	start := time.Now()
	win := window{from: start.Add(cfg.Warmup), to: start.Add(cfg.Warmup + cfg.Duration)}
	tallies := make([]*tally, cfg.Concurrency)
	for i := range tallies {
		tallies[i] = newTally()
	}
	var exhausted bool
	if cfg.Rate > 0 {
		exhausted = runOpen(ctx, client, src, cfg, start, win, tallies)
	} else {
		exhausted = runClosed(ctx, client, src, win, tallies)
	}
	return summarize(cfg, win, tallies, exhausted), nil
}

// runClosed runs cfg.Concurrency clients, each sending its next request as
// soon as the previous one has answered.
func runClosed(ctx context.Context, client *http.Client, src *source, win window, tallies []*tally) bool {
	var wg sync.WaitGroup
	var mu sync.Mutex
	exhausted := false
	for _, t := range tallies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				n, sp, ok := src.take()
				if !ok {
					mu.Lock()
					exhausted = true
					mu.Unlock()
					return
				}
				req, err := src.request(n, sp)
				if err != nil {
					t.add(0, err, 0, time.Now())
					return
				}
				sent := time.Now()
				if !sent.Before(win.to) {
					return
				}
				status, err := do(client, req.WithContext(ctx))
				done := time.Now()
				if !done.Before(win.from) && !done.After(win.to) {
					t.add(status, err, done.Sub(sent), done)
				}
			}
		}()
	}
	wg.Wait()
	return exhausted
}

// due returns when the i-th request of an open loop at rate per second is
// due, counted from start. It is computed from i, not by adding intervals,
// so rounding never accumulates.
func due(start time.Time, rate float64, i int64) time.Time {
	return start.Add(time.Duration(float64(i) * float64(time.Second) / rate))
}

// runOpen issues requests at cfg.Rate, each measured from when it was due,
// not from when a worker got to send it: when the server falls behind, the
// queueing shows in the latencies instead of slowing the load down (no
// coordinated omission).
func runOpen(ctx context.Context, client *http.Client, src *source, cfg config, start time.Time, win window, tallies []*tally) bool {
	type job struct {
		n   int64
		sp  *spec
		due time.Time
	}
	jobs := make(chan job, cfg.Concurrency*4)
	var wg sync.WaitGroup
	for _, t := range tallies {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				req, err := src.request(j.n, j.sp)
				if err != nil {
					t.add(0, err, 0, time.Now())
					continue
				}
				status, err := do(client, req.WithContext(ctx))
				done := time.Now()
				if !j.due.Before(win.from) {
					t.add(status, err, done.Sub(j.due), done)
				}
			}
		}()
	}
	exhausted := false
	for i := int64(0); ctx.Err() == nil; i++ {
		at := due(start, cfg.Rate, i)
		if !at.Before(win.to) {
			break
		}
		if d := time.Until(at); d > 0 {
			time.Sleep(d)
		}
		n, sp, ok := src.take()
		if !ok {
			exhausted = true
			break
		}
		jobs <- job{n: n, sp: sp, due: at}
	}
	close(jobs)
	wg.Wait()
	return exhausted
}

// summarize merges the tallies. A run whose source ran dry is measured
// over the time up to its last answer.
func summarize(cfg config, win window, tallies []*tally, exhausted bool) *result {
	var h Histogram
	status, transport := map[int]int{}, map[string]int{}
	last := time.Time{}
	for _, t := range tallies {
		h.Merge(&t.hist)
		for k, v := range t.status {
			status[k] += v
		}
		for k, v := range t.transport {
			transport[k] += v
		}
		if t.last.After(last) {
			last = t.last
		}
	}
	r := &result{Mode: "closed", Concurrency: cfg.Concurrency, Status: map[string]int{}, hist: &h, Exhausted: exhausted}
	if cfg.Rate > 0 {
		r.Mode, r.Rate = "open", cfg.Rate
	}
	seconds := win.to.Sub(win.from).Seconds()
	if exhausted && last.After(win.from) && last.Before(win.to) {
		seconds = last.Sub(win.from).Seconds()
	}
	r.Seconds = seconds
	codes := make([]int, 0, len(status))
	for c := range status {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	for _, c := range codes {
		r.Status[strconv.Itoa(c)] = status[c]
		r.Requests += uint64(status[c])
		if c >= 200 && c < 300 {
			r.OK += uint64(status[c])
		} else {
			r.Errors += uint64(status[c])
		}
	}
	for _, v := range transport {
		r.Errors += uint64(v)
		r.Requests += uint64(v)
	}
	if len(transport) > 0 {
		r.TransportErrors = transport
	}
	if seconds > 0 {
		r.RPS = float64(r.OK) / seconds
	}
	r.Latency = latencyJSON{
		Min: ms(h.Min()), Mean: ms(h.Mean()), P50: ms(h.Quantile(0.50)), P90: ms(h.Quantile(0.90)),
		P99: ms(h.Quantile(0.99)), P999: ms(h.Quantile(0.999)), Max: ms(h.Max()),
	}
	return r
}
