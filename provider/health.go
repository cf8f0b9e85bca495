package provider

import (
	"slices"
	"sync"
	"time"
)

// Health is what this instance has seen of each endpoint (by address):
// its recent calls, how fast it answers, and its circuit breaker. A
// failing endpoint's circuit opens after FailureThreshold failures in a
// row: it is left out of routing for its cool-down, then one call probes
// it (half-open); a success closes the circuit, a failure opens it again
// for twice as long (up to MaxOpen). An endpoint that answered 429 with
// Retry-After is left out until then. Every instance keeps its own: an
// endpoint is judged by the calls this instance made. Safe for concurrent
// use.
type Health struct {
	FailureThreshold int           // failures in a row that open a circuit; 0: DefaultFailureThreshold
	OpenFor          time.Duration // the first cool-down of an open circuit; 0: DefaultOpenFor
	MaxOpen          time.Duration // the longest cool-down; 0: DefaultMaxOpen
	Now              func() time.Time

	mu  sync.Mutex
	eps map[string]*endpointHealth
}

// The circuit breaker's defaults.
const (
	DefaultFailureThreshold = 3
	DefaultOpenFor          = 10 * time.Second
	DefaultMaxOpen          = 5 * time.Minute
)

// CircuitState is the state of an endpoint's circuit breaker.
type CircuitState string

// The states of a circuit.
const (
	CircuitClosed   CircuitState = "closed"    // calls go through
	CircuitOpen     CircuitState = "open"      // calls are not made until the cool-down ends
	CircuitHalfOpen CircuitState = "half_open" // one call probes the endpoint
)

// Class sorts a call's outcome, for the circuit and the metrics.
type Class string

// The classes of outcomes. Only failures of the endpoint itself count
// against its circuit (not a refusal of the request, which another
// endpoint would refuse alike).
const (
	OK          Class = "ok"
	RateLimited Class = "rate_limited" // 429
	ServerError Class = "server_error" // 5xx
	Unreachable Class = "unreachable"  // no connection, or cut before an answer
	TimedOut    Class = "timeout"
	BadAnswer   Class = "bad_answer"
	Refused     Class = "refused" // another 4xx: the request's fault, not the endpoint's
)

// failure reports whether the class counts against the endpoint.
func (c Class) failure() bool { return c != OK && c != Refused }

// Outcome is what one call to an endpoint came to.
type Outcome struct {
	Class Class
	// FirstByte is how long the answer took to begin; Total how long the
	// whole call took; Tokens how many completion tokens it brought (for
	// throughput). Zero when not known.
	FirstByte, Total time.Duration
	Tokens           int64
	// RetryAfter is how long the endpoint asked to be left alone (429 or
	// 503 with Retry-After); zero: it did not say.
	RetryAfter time.Duration
}

// endpointHealth is one endpoint's record.
type endpointHealth struct {
	state     CircuitState
	failures  int           // in a row
	openFor   time.Duration // the cool-down of the last opening
	until     time.Time     // an open circuit's end, or the end of a Retry-After
	probing   bool          // the half-open probe is out
	latencies samples       // first-byte latencies, in milliseconds
	speeds    samples       // tokens per second of whole calls
	minutes   [minutesKept]minute
	counts    map[Class]int64
}

// minutesKept is how much of an endpoint's history its uptime covers.
const minutesKept = 24 * 60

// minute counts the calls of one minute.
type minute struct {
	at        int64 // Unix minute
	calls, ok int64
}

// samples keeps the last of a figure's values, and when they came.
type samples struct {
	values []float64
	at     []time.Time
	next   int
}

// maxSamples bounds the values kept of each figure.
const maxSamples = 512

func (s *samples) add(v float64, now time.Time) {
	if len(s.values) < maxSamples {
		s.values, s.at = append(s.values, v), append(s.at, now)
		return
	}
	s.values[s.next], s.at[s.next] = v, now
	s.next = (s.next + 1) % maxSamples
}

// percentiles returns the 50th, 75th, 90th and 99th percentiles of the
// values since from; false when there are none.
func (s *samples) percentiles(from time.Time) ([4]float64, bool) {
	var vs []float64
	for i, v := range s.values {
		if !s.at[i].Before(from) {
			vs = append(vs, v)
		}
	}
	if len(vs) == 0 {
		return [4]float64{}, false
	}
	slices.Sort(vs)
	var out [4]float64
	for i, p := range []float64{0.5, 0.75, 0.9, 0.99} {
		out[i] = vs[min(int(p*float64(len(vs))), len(vs)-1)]
	}
	return out, true
}

func (h *Health) now() time.Time {
	if h.Now != nil {
		return h.Now()
	}
	return time.Now()
}

// get returns the record of an endpoint; h.mu is held.
func (h *Health) get(address string) *endpointHealth {
	if h.eps == nil {
		h.eps = map[string]*endpointHealth{}
	}
	e := h.eps[address]
	if e == nil {
		e = &endpointHealth{state: CircuitClosed, counts: map[Class]int64{}}
		h.eps[address] = e
	}
	return e
}

// Available reports whether routing may consider the endpoint now: no
// open circuit's cool-down, nor a Retry-After it asked for, runs.
func (h *Health) Available(address string) bool {
	if h == nil {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return !h.now().Before(h.get(address).until)
}

// Begin reports whether a call may go to the endpoint now, and counts it
// begun: its circuit is closed, or half-open with no probe out (the call
// then is the probe, until its outcome is recorded), and it asked for no
// pause that still runs. An open circuit whose cool-down ended becomes
// half-open. A call begun is ended by Record, or by Release when it was
// not made.
func (h *Health) Begin(address string) bool {
	if h == nil {
		return true
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.get(address)
	now := h.now()
	if now.Before(e.until) {
		return false
	}
	switch e.state {
	case CircuitOpen:
		e.state = CircuitHalfOpen
		fallthrough
	case CircuitHalfOpen:
		if e.probing {
			return false
		}
		e.probing = true
	}
	return true
}

// Waiting returns how long until the soonest of the endpoints may be
// called again; zero when one may be now.
func (h *Health) Waiting(addresses []string) time.Duration {
	if h == nil {
		return 0
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.now()
	var soonest time.Duration
	for i, a := range addresses {
		d := max(h.get(a).until.Sub(now), 0)
		if i == 0 || d < soonest {
			soonest = d
		}
	}
	return soonest
}

// Record counts a call's outcome, and moves the endpoint's circuit.
func (h *Health) Record(address string, o Outcome) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e := h.get(address)
	now := h.now()
	e.counts[o.Class]++
	m := &e.minutes[now.Unix()/60%minutesKept]
	if m.at != now.Unix()/60 {
		*m = minute{at: now.Unix() / 60}
	}
	m.calls++
	if o.FirstByte > 0 {
		e.latencies.add(float64(o.FirstByte.Milliseconds()), now)
	}
	if o.Tokens > 0 && o.Total > o.FirstByte {
		e.speeds.add(float64(o.Tokens)/(o.Total-o.FirstByte).Seconds(), now)
	}
	if o.RetryAfter > 0 {
		e.until = now.Add(o.RetryAfter)
	}
	if !o.Class.failure() {
		m.ok++
		e.state, e.failures, e.openFor, e.probing = CircuitClosed, 0, 0, false
		return
	}
	e.failures++
	if e.state == CircuitHalfOpen || e.failures >= h.threshold() {
		e.openFor = min(max(e.openFor*2, h.openFor()), h.maxOpen())
		e.state, e.probing = CircuitOpen, false
		e.until = maxTime(e.until, now.Add(e.openFor))
	}
}

// Release gives back an endpoint's half-open probe that was not made (the
// call went elsewhere, or ended before reaching it).
func (h *Health) Release(address string) {
	if h == nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.get(address).probing = false
}

func maxTime(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

func (h *Health) threshold() int {
	if h.FailureThreshold > 0 {
		return h.FailureThreshold
	}
	return DefaultFailureThreshold
}

func (h *Health) openFor() time.Duration {
	if h.OpenFor > 0 {
		return h.OpenFor
	}
	return DefaultOpenFor
}

func (h *Health) maxOpen() time.Duration {
	if h.MaxOpen > 0 {
		return h.MaxOpen
	}
	return DefaultMaxOpen
}

// EndpointStats are what this instance measured of an endpoint.
type EndpointStats struct {
	Address string
	State   CircuitState
	// Until is when an open circuit may be probed, or a Retry-After
	// ends; zero when neither.
	Until time.Time
	// Counts are the calls made, by the class of their outcome.
	Counts map[Class]int64
	// Uptime is the share of calls that did not fail in the last 5
	// minutes, 30 minutes and day; nil when there were none.
	Uptime5m, Uptime30m, Uptime1d *float64
	// Latency (ms to the first byte) and Throughput (tokens per second)
	// percentiles (p50, p75, p90, p99) of the last 30 minutes; nil when
	// none were measured.
	Latency, Throughput *[4]float64
}

// Stats returns what was measured of an endpoint.
func (h *Health) Stats(address string) EndpointStats {
	out := EndpointStats{Address: address, State: CircuitClosed, Counts: map[Class]int64{}}
	if h == nil {
		return out
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	e, ok := h.eps[address]
	if !ok {
		return out
	}
	now := h.now()
	out.State, out.Counts = e.state, make(map[Class]int64, len(e.counts))
	if now.Before(e.until) {
		out.Until = e.until
	}
	for c, n := range e.counts {
		out.Counts[c] = n
	}
	out.Uptime5m, out.Uptime30m, out.Uptime1d = e.uptime(now, 5), e.uptime(now, 30), e.uptime(now, minutesKept)
	if p, ok := e.latencies.percentiles(now.Add(-30 * time.Minute)); ok {
		out.Latency = &p
	}
	if p, ok := e.speeds.percentiles(now.Add(-30 * time.Minute)); ok {
		out.Throughput = &p
	}
	return out
}

// uptime is the share of the last n minutes' calls that did not fail.
func (e *endpointHealth) uptime(now time.Time, n int64) *float64 {
	var calls, ok int64
	for _, m := range e.minutes {
		if m.at > now.Unix()/60-n && m.at <= now.Unix()/60 {
			calls, ok = calls+m.calls, ok+m.ok
		}
	}
	if calls == 0 {
		return nil
	}
	share := float64(ok) / float64(calls)
	return &share
}

// Addresses returns the endpoints there is a record of.
func (h *Health) Addresses() []string {
	if h == nil {
		return nil
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	out := make([]string, 0, len(h.eps))
	for a := range h.eps {
		out = append(out, a)
	}
	slices.Sort(out)
	return out
}
