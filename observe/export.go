package observe

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"io"
	"math/rand/v2"
	"net/http"
	"net/url"
	"slices"
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

// exporter builds the request that delivers an event to a destination.
type exporter func(d *gatehouse.Destination, e *event) (*request, error)

// exporters are the destination types that deliver; every other type is
// stored only.
var exporters = map[string]exporter{
	"webhook":        webhookRequest,
	"otel-collector": otelRequest,
	"langfuse":       langfuseRequest,
}

// DeliveredTypes returns the destination types whose events are delivered,
// sorted. Destinations of the other types are stored and managed through
// the API but receive nothing.
func DeliveredTypes() []string {
	types := make([]string, 0, len(exporters))
	for t := range exporters {
		types = append(types, t)
	}
	slices.Sort(types)
	return types
}

// errBadURL stands for any invalid configured URL: the URL itself may hold
// a credential, so no error names it.
var errBadURL = errors.New("the configured URL is not an absolute http(s) URL")

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

// webhookRequest POSTs (or PUTs, per config.method) a WebhookPayload to
// config.url. Idempotency-Key carries the generation id, so a receiver can
// drop a retried duplicate.
func webhookRequest(d *gatehouse.Destination, e *event) (*request, error) {
	method := http.MethodPost
	if strings.EqualFold(d.Config.Values["method"], http.MethodPut) {
		method = http.MethodPut
	}
	return newRequest(method, d.Config.Values["url"], d, webhookPayload(e),
		map[string]string{"Idempotency-Key": e.Generation.ID})
}

// otelRequest POSTs an OTLP/HTTP JSON trace to config.endpoint, with
// /v1/traces appended unless it is already there.
func otelRequest(d *gatehouse.Destination, e *event) (*request, error) {
	endpoint := strings.TrimRight(d.Config.Values["endpoint"], "/")
	if !strings.HasSuffix(endpoint, "/v1/traces") {
		endpoint += "/v1/traces"
	}
	return newRequest(http.MethodPost, endpoint, d, otlpPayload(e, nil), nil)
}

// langfuseRequest POSTs the OTLP trace, with Langfuse's attributes, to
// Langfuse's OTLP endpoint under config.baseUrl, with Basic auth of the
// public and secret keys.
func langfuseRequest(d *gatehouse.Destination, e *event) (*request, error) {
	v := d.Config.Values
	endpoint := strings.TrimRight(v["baseUrl"], "/") + "/api/public/otel/v1/traces"
	auth := base64.StdEncoding.EncodeToString([]byte(v["publicKey"] + ":" + v["secretKey"]))
	return newRequest(http.MethodPost, endpoint, d, otlpPayload(e, langfuseAttributes(e)),
		map[string]string{"Authorization": "Basic " + auth, "X-Langfuse-Ingestion-Version": "4"})
}

// maxRetryAfter caps how long a destination's Retry-After can hold a retry.
const maxRetryAfter = time.Minute

// run makes one attempt of a delivery and counts it; it returns whether to
// try again, and after how long.
func (p *Publisher) run(d *delivery) (retry bool, delay time.Duration) {
	typ := d.dest.Type
	if d.req == nil {
		req, err := d.export(d.dest, d.event)
		if err != nil {
			p.metrics.deliveries.WithLabelValues("failed").Inc()
			p.logFailure(d, 0, err, "the delivery cannot be built")
			return false, 0
		}
		d.req = req
	}
	d.attempts++
	p.metrics.attempts.Inc()
	status, retryAfter, err := p.send(d.req)
	if err == nil && status >= 200 && status < 300 {
		p.metrics.deliveries.WithLabelValues("delivered").Inc()
		return false, 0
	}
	if retryable(status) && d.attempts < p.opts.MaxAttempts && p.ctx.Err() == nil {
		p.logger.Debug("observability: delivery attempt failed; retrying", "destination_id", d.dest.ID,
			"destination_type", typ, "generation_id", d.event.Generation.ID, "attempt", d.attempts,
			"status", status, "error", describe(err))
		return true, max(p.backoff(d.attempts), min(retryAfter, maxRetryAfter))
	}
	p.metrics.deliveries.WithLabelValues("failed").Inc()
	p.logFailure(d, status, err, "the delivery failed")
	return false, 0
}

func (p *Publisher) logFailure(d *delivery, status int, err error, msg string) {
	p.logger.Warn("observability: "+msg, "destination_id", d.dest.ID, "destination_type", d.dest.Type,
		"generation_id", d.event.Generation.ID, "attempts", d.attempts, "status", status, "error", describe(err))
}

// send makes one HTTP attempt within the timeout: the status (0 for a
// network error) and the Retry-After the destination asked for.
func (p *Publisher) send(r *request) (int, time.Duration, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.Timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, bytes.NewReader(r.body))
	if err != nil {
		return 0, 0, errBadURL
	}
	req.Header = r.header.Clone()
	resp, err := p.client.Do(req)
	if err != nil {
		return 0, 0, err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), nil
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
