package jsonlog

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"regexp"
	"strings"
	"testing"
	"time"
)

// write writes one record through a Handler and through slog's own JSON
// handler, and returns both outputs.
func write(t *testing.T, r slog.Record, opts *slog.HandlerOptions) (fast, want string) {
	t.Helper()
	var a, b bytes.Buffer
	if err := New(&a, opts).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if err := slog.NewJSONHandler(&b, opts).Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	return a.String(), b.String()
}

func record(level slog.Level, msg string, attrs ...slog.Attr) slog.Record {
	r := slog.NewRecord(time.Date(2026, 11, 28, 20, 5, 1, 123456700, time.UTC), level, msg, 0)
	r.AddAttrs(attrs...)
	return r
}

// TestSameAsSlog: every record is written byte for byte as
// slog.JSONHandler writes it, whether by hand or by slog.
func TestSameAsSlog(t *testing.T) {
	request := []slog.Attr{
		slog.String("request_id", "req_0123"), slog.String("method", "GET"), slog.String("route", "GET /api/v1/keys/{hash}"),
		slog.String("path", "/api/v1/keys/abc"), slog.Int("status", 200), slog.Int64("bytes", 553),
		slog.Float64("duration_ms", 0.123), slog.String("remote", "127.0.0.1"), slog.String("key_hash", "ab12"),
	}
	local := time.FixedZone("x", 3600)
	for _, r := range []slog.Record{
		record(slog.LevelInfo, "request", request...),
		record(slog.LevelError, "request", append(request, slog.String("error", `pq: "x" \ failed`))...),
		record(slog.LevelWarn, "", slog.Bool("ok", true), slog.Uint64("n", math.MaxUint64), slog.Int("neg", -5)),
		record(slog.LevelDebug, "d", slog.Duration("took", 1500*time.Millisecond), slog.Time("at", time.Date(2026, 1, 2, 3, 4, 5, 0, local))),
		record(slog.LevelInfo+2, "odd level"),
		record(slog.LevelInfo, "ünïcode <&>", slog.String("s", "tab\there")),
		record(slog.LevelInfo, "floats", slog.Float64("a", 0), slog.Float64("b", -0.5), slog.Float64("c", 1e21), slog.Float64("d", 1e-7),
			slog.Float64("e", 123456789.125), slog.Float64("f", math.Inf(1)), slog.Float64("g", 1e20)),
		record(slog.LevelInfo, "kinds", slog.Any("err", errors.New("boom")), slog.Group("g", slog.Int("x", 1)), slog.Any("m", map[string]int{"a": 1})),
		record(slog.LevelInfo, "empty key", slog.String("", "x")),
		slog.NewRecord(time.Time{}, slog.LevelInfo, "no time", 0),
	} {
		if fast, want := write(t, r, nil); fast != want {
			t.Errorf("got  %s\nwant %s", fast, want)
		}
	}
	// Options the fast path does not do send every record to slog.
	replace := &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
		if a.Key == "status" {
			a.Key = "code"
		}
		return a
	}}
	if fast, want := write(t, record(slog.LevelInfo, "request", request...), replace); fast != want {
		t.Errorf("ReplaceAttr: got  %s\nwant %s", fast, want)
	}
}

// FuzzSameAsSlog: any message, string and float are written as slog
// writes them.
func FuzzSameAsSlog(f *testing.F) {
	f.Add("request", "/api/v1/keys", 0.125)
	f.Add("a\"b", "\x00\xff\u2028", 1e-300)
	f.Fuzz(func(t *testing.T, msg, s string, x float64) {
		r := record(slog.LevelInfo, msg, slog.String("s", s), slog.Float64("x", x), slog.String(s, "k"))
		if fast, want := write(t, r, nil); fast != want {
			t.Errorf("got  %s\nwant %s", fast, want)
		}
	})
}

// TestWithAttrsAndLevel: handlers derived from a Handler write through
// slog, and the level filters.
func TestWithAttrsAndLevel(t *testing.T) {
	var a, b bytes.Buffer
	opts := &slog.HandlerOptions{Level: slog.LevelWarn}
	la, lb := slog.New(New(&a, opts)), slog.New(slog.NewJSONHandler(&b, opts))
	for _, l := range []*slog.Logger{la, lb} {
		l.Info("dropped")
		l.With("component", "x").WithGroup("g").Warn("kept", "n", 1)
	}
	stamp := regexp.MustCompile(`"time":"[^"]*"`)
	got, want := stamp.ReplaceAllString(a.String(), "T"), stamp.ReplaceAllString(b.String(), "T")
	if got != want || !strings.Contains(got, `"g":{"n":1}`) || strings.Contains(got, "dropped") {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func BenchmarkRequestLine(b *testing.B) {
	attrs := []slog.Attr{
		slog.String("request_id", "req_0123456789abcdef"), slog.String("method", "GET"), slog.String("route", "GET /api/v1/keys/{hash}"),
		slog.String("path", "/api/v1/keys/0123456789abcdef"), slog.Int("status", 200), slog.Int64("bytes", 553),
		slog.Float64("duration_ms", 0.123), slog.String("remote", "127.0.0.1"), slog.String("key_hash", "0123456789abcdef"),
	}
	for _, h := range []struct {
		name string
		h    slog.Handler
	}{{"jsonlog", New(discard{}, nil)}, {"slog", slog.NewJSONHandler(discard{}, nil)}} {
		b.Run(h.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				r := slog.NewRecord(time.Now(), slog.LevelInfo, "request", 0)
				r.AddAttrs(attrs...)
				_ = h.h.Handle(context.Background(), r)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
