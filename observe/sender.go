package observe

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"time"
	"unicode/utf8"
)

// sender makes the attempts: the HTTP client every delivery uses (which
// checks each address it dials against the egress policy), and what the
// SQL types remember of the tables they made.
type sender struct {
	client *http.Client
	// recording is client with a transport that tells an attempt's
	// context the status and Retry-After of the answer, for the deliveries
	// whose HTTP client is a library's (the OTLP exporter, the S3 client).
	recording *http.Client
	// tables are the tables made, by destination id and configuration.
	tables sync.Map
}

func newSender(c *http.Client) *sender {
	base := c.Transport
	if base == nil {
		base = http.DefaultTransport
	}
	return &sender{client: c, recording: &http.Client{
		Transport: recordingTransport{base}, CheckRedirect: c.CheckRedirect, Timeout: c.Timeout,
	}}
}

// maxAnswer is how much of a service's answer is kept for the test action.
const maxAnswer = 512

// do sends one request and reads the start of the answer.
func (s *sender) do(ctx context.Context, r *request) outcome {
	req, err := http.NewRequestWithContext(ctx, r.method, r.url, bytes.NewReader(r.body))
	if err != nil {
		return failed(errBadURL)
	}
	req.Header = r.header.Clone()
	resp, err := s.client.Do(req)
	if err != nil {
		return outcome{err: err}
	}
	defer resp.Body.Close()
	head, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10)) // lets the connection be reused
	return outcome{status: resp.StatusCode, retryAfter: retryAfter(resp.Header.Get("Retry-After")), answer: clean(head)}
}

// clean makes the start of an answer printable: valid UTF-8, one line.
func clean(b []byte) string {
	s := strings.ToValidUTF8(string(b), "?")
	s = strings.Join(strings.Fields(s), " ")
	for len(s) > maxAnswer || !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}

// recorded is where recordingTransport leaves what it saw.
type recorded struct {
	mu         sync.Mutex
	status     int
	retryAfter time.Duration
	answer     []byte
}

type recordedKey struct{}

// withRecording returns a context under which recordingTransport records
// the answers of the requests made with it.
func withRecording(ctx context.Context) (context.Context, *recorded) {
	rec := &recorded{}
	return context.WithValue(ctx, recordedKey{}, rec), rec
}

// outcome is what was recorded, with the library's error.
func (r *recorded) outcome(err error) outcome {
	r.mu.Lock()
	defer r.mu.Unlock()
	o := outcome{status: r.status, retryAfter: r.retryAfter, answer: clean(r.answer)}
	if o.status < 200 || o.status >= 300 {
		o.err = err
	}
	return o
}

type recordingTransport struct{ base http.RoundTripper }

func (t recordingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.base.RoundTrip(req)
	rec, _ := req.Context().Value(recordedKey{}).(*recorded)
	if err != nil || rec == nil {
		return resp, err
	}
	rec.mu.Lock()
	rec.status, rec.retryAfter, rec.answer = resp.StatusCode, retryAfter(resp.Header.Get("Retry-After")), nil
	rec.mu.Unlock()
	resp.Body = &teeBody{ReadCloser: resp.Body, rec: rec}
	return resp, nil
}

// teeBody keeps the start of an answer as the library reads it.
type teeBody struct {
	io.ReadCloser
	rec *recorded
}

func (b *teeBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.rec.mu.Lock()
	if room := maxAnswer - len(b.rec.answer); room > 0 && n > 0 {
		b.rec.answer = append(b.rec.answer, p[:min(n, room)]...)
	}
	b.rec.mu.Unlock()
	return n, err
}

// summary says what went wrong, for people: the status and the start of
// the answer, or the error without its URL.
func (o outcome) summary() string {
	switch {
	case o.ok():
		return ""
	case o.status != 0 && o.answer != "":
		return fmt.Sprintf("the service answered %d: %s", o.status, o.answer)
	case o.status != 0:
		return fmt.Sprintf("the service answered %d", o.status)
	case o.err != nil:
		return describe(o.err)
	}
	return "no answer"
}
