package observe

import (
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"gatehouse"
)

// request is an HTTP request ready to send, and to send again.
type request struct {
	method, url string
	header      http.Header
	body        []byte
}

// newRequest builds a JSON request with the destination's headers; set
// come last and win over them.
func newRequest(method, rawURL string, d *gatehouse.Destination, body any, set map[string]string) (*request, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errBadURL
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	h := http.Header{"User-Agent": {"gatehouse"}}
	for k, v := range d.Config.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", "application/json")
	for k, v := range set {
		h.Set(k, v)
	}
	return &request{method: method, url: u.String(), header: h, body: b}, nil
}

// deliverWebhook POSTs (or PUTs, per config.method) a WebhookPayload to
// config.url, one request an event. Idempotency-Key carries the
// generation id, so a receiver can drop a retried duplicate.
func deliverWebhook(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	method := http.MethodPost
	if strings.EqualFold(d.Config.Values["method"], http.MethodPut) {
		method = http.MethodPut
	}
	var last outcome
	for i, e := range evs {
		r, err := newRequest(method, d.Config.Values["url"], d, webhookPayload(e),
			map[string]string{"Idempotency-Key": e.Generation.ID})
		if err != nil {
			o := failed(err)
			o.delivered, o.oneByOne = i, true
			return o
		}
		if last = s.do(ctx, r); !last.ok() {
			last.delivered, last.oneByOne = i, true // the events before it were received
			return last
		}
	}
	return last
}

// maxBatch is the most events one attempt sends to a destination: the
// deliveries its lane holds when a worker comes for it, up to this.
const maxBatch = 100

// maxRetryAfter caps how long a destination's Retry-After can hold a retry.
const maxRetryAfter = time.Minute

// run makes one attempt of a batch of one destination's deliveries and
// counts it; it returns those to try again, and after how long.
func (p *Publisher) run(batch []*delivery) (retry []*delivery, delay time.Duration) {
	dest := batch[0].dest
	evs := make([]*event, len(batch))
	for i, d := range batch {
		d.attempts++
		evs[i] = d.event
	}
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.Timeout)
	o := batch[0].deliver(ctx, p.sender, dest, evs)
	cancel()
	if !o.permanent || o.status != 0 {
		p.metrics.attempts.Inc() // something was sent
	}
	o.answer = redact(dest, o.answer)
	delivered := len(batch)
	if !o.ok() {
		delivered = min(max(o.delivered, 0), len(batch))
	}
	if delivered > 0 {
		p.metrics.deliveries.WithLabelValues("delivered").Add(float64(delivered))
		p.status.record(dest, int64(delivered), 0, 0, o, p.now())
		p.finished(batch[:delivered]...)
	}
	if delivered == len(batch) {
		return nil, 0
	}
	if o.oneByOne {
		for _, d := range batch[delivered+1:] {
			d.attempts-- // not sent: the request before it failed
		}
	}
	var failedNow []*delivery
	again := !o.permanent && retryable(o.status)
	for _, d := range batch[delivered:] {
		switch {
		case again && p.ctx.Err() != nil:
			p.abandoned(d) // Close gave up during the attempt: the outbox keeps it
		case again && d.attempts < p.opts.MaxAttempts:
			p.retried(d)
			retry = append(retry, d)
			delay = max(delay, p.backoff(max(d.attempts, 1)), min(o.retryAfter, maxRetryAfter))
		default:
			failedNow = append(failedNow, d)
		}
	}
	if len(retry) > 0 {
		p.logger.Debug("observability: delivery attempt failed; retrying", "destination_id", dest.ID,
			"destination_type", dest.Type, "events", len(retry), "generation_id", retry[0].event.Generation.ID,
			"attempt", retry[0].attempts, "status", o.status, "error", describe(o.err))
	}
	if len(failedNow) > 0 {
		p.metrics.deliveries.WithLabelValues("failed").Add(float64(len(failedNow)))
		p.status.record(dest, 0, int64(len(failedNow)), 0, o, p.now())
		p.finished(failedNow...)
		msg := "the delivery failed"
		if o.permanent {
			msg = "the delivery cannot be made as configured"
		}
		p.logFailure(failedNow[0], len(failedNow), o.status, o.err, msg)
	}
	return retry, delay
}

// logFailure logs that n events, d's first, failed for good.
func (p *Publisher) logFailure(d *delivery, n, status int, err error, msg string) {
	p.logger.Warn("observability: "+msg, "destination_id", d.dest.ID, "destination_type", d.dest.Type,
		"generation_id", d.event.Generation.ID, "events", n, "attempts", d.attempts, "status", status, "error", describe(err))
}

// retryable reports whether an attempt that ended with status (0 for a
// network error or a timeout) may succeed later: any but a 4xx other than
// 408 and 429, and but a redirect (which is never followed).
func retryable(status int) bool {
	switch {
	case status == http.StatusRequestTimeout, status == http.StatusTooManyRequests:
		return true
	case status >= 300 && status < 500:
		return false
	}
	return true
}

// retryAfter reads a Retry-After of delay-seconds; 0 otherwise.
func retryAfter(v string) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(min(n, int(maxRetryAfter/time.Second))) * time.Second
}

// backoff returns the wait after the given number of failed attempts:
// Backoff doubled each time, between half of it and all of it at random.
func (p *Publisher) backoff(attempts int) time.Duration {
	d := p.opts.Backoff << min(attempts-1, 16)
	if d <= 0 || d > maxRetryAfter {
		d = maxRetryAfter
	}
	return d/2 + rand.N(d/2+1)
}

// describe renders an error for the log without the request's URL, which
// may hold a credential.
func describe(err error) string {
	if err == nil {
		return ""
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return "timed out"
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return describe(ue.Err)
	}
	return err.Error()
}
