package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// Failing on command, for the tests of a gateway's routing: the control
// endpoints under /fakellm/ set how the model endpoints fail from now on,
// and count the calls they received.
//
//	POST   /fakellm/failure  {"status": 503, "retry_after": 2, "delay": "3s", "cut": false, "count": 0}
//	DELETE /fakellm/failure  answer normally again
//	GET    /fakellm/calls    {"calls": N}: the model calls received
//
// status answers that status with an OpenAI-style error (and Retry-After
// when retry_after is set); delay waits that long before answering (or
// failing); cut closes the connection without an answer; count fails only
// that many calls (0: every call until cleared).

// failure is how the model endpoints fail, set on command.
type failure struct {
	Status     int    `json:"status"`
	RetryAfter int    `json:"retry_after"`
	Delay      string `json:"delay"`
	Cut        bool   `json:"cut"`
	Count      int    `json:"count"`
	delay      time.Duration
}

// control is the state the control endpoints set.
type control struct {
	mu    sync.Mutex
	fail  *failure
	calls int64
}

// serve handles the control endpoints.
func (c *control) serve(mux *http.ServeMux) {
	mux.HandleFunc("POST /fakellm/failure", func(w http.ResponseWriter, r *http.Request) {
		var f failure
		dec := json.NewDecoder(io.LimitReader(r.Body, 1<<20))
		dec.DisallowUnknownFields()
		err := dec.Decode(&f)
		if err == nil && f.Delay != "" {
			f.delay, err = time.ParseDuration(f.Delay)
		}
		if err != nil || (f.Status != 0 && (f.Status < 400 || f.Status > 599)) || f.Count < 0 || f.RetryAfter < 0 {
			writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{
				"message": "want {status (400..599), retry_after (seconds), delay (a Go duration), cut, count}", "type": "invalid_request_error"}})
			return
		}
		c.mu.Lock()
		c.fail = &f
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, f)
	})
	mux.HandleFunc("DELETE /fakellm/failure", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.fail = nil
		c.mu.Unlock()
		w.WriteHeader(http.StatusNoContent)
	})
	mux.HandleFunc("GET /fakellm/calls", func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		n := c.calls
		c.mu.Unlock()
		writeJSON(w, http.StatusOK, map[string]any{"calls": n})
	})
}

// wrap counts a model endpoint's calls, and fails them as commanded.
func (c *control) wrap(next http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		c.mu.Lock()
		c.calls++
		f := c.fail
		if f != nil && f.Count > 0 {
			if f.Count--; f.Count == 0 {
				c.fail = nil
			}
		}
		c.mu.Unlock()
		if f == nil {
			next(w, r)
			return
		}
		if f.Cut || f.Status != 0 {
			_, _ = io.Copy(io.Discard, r.Body) // received whole, as a provider would
		}
		if f.delay > 0 {
			select {
			case <-time.After(f.delay):
			case <-r.Context().Done():
				return
			}
		}
		switch {
		case f.Cut:
			if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
				conn.Close()
			}
		case f.Status != 0:
			if f.RetryAfter > 0 {
				w.Header().Set("Retry-After", strconv.Itoa(f.RetryAfter))
			}
			writeJSON(w, f.Status, map[string]any{"error": map[string]any{
				"message": fmt.Sprintf("fakellm fails on command with %d", f.Status), "type": "server_error", "code": f.Status}})
		default:
			next(w, r) // a delay alone
		}
		if rec, ok := w.(*recorder); ok {
			rec.note = " (failing on command)"
		}
	}
}
