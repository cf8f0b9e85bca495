// Package jsonlog is log/slog's JSON handler with a faster path for the
// lines a server writes on every request: a record whose attributes are
// all strings, numbers, booleans, durations or times, with plain ASCII
// keys and strings, is encoded by hand into the bytes slog.JSONHandler
// would write; any other record (and any handler made by WithAttrs or
// WithGroup) is written by slog.JSONHandler itself. slog's generic path
// (and json.Marshal for every float, such as a request's duration) was
// about a tenth of the CPU of a cached read.
package jsonlog

import (
	"context"
	"io"
	"log/slog"
	"math"
	"strconv"
	"sync"
	"time"
)

// Handler writes JSON lines to one writer.
type Handler struct {
	slow *slog.JSONHandler
	// w is where the fast path writes, shared with slow; nil when the
	// options ask for what only slog does (every record takes slow).
	w     *lockedWriter
	level slog.Leveler
}

// New returns a handler that writes JSON lines to w, as
// slog.NewJSONHandler(w, opts) would. With a ReplaceAttr function in opts,
// every record takes slog's path.
func New(w io.Writer, opts *slog.HandlerOptions) *Handler {
	if opts == nil {
		opts = &slog.HandlerOptions{}
	}
	lw := &lockedWriter{w: w}
	h := &Handler{slow: slog.NewJSONHandler(lw, opts), w: lw, level: opts.Level}
	if opts.ReplaceAttr != nil || opts.AddSource {
		h.w = nil // the fast path does neither
	}
	if h.level == nil {
		h.level = slog.LevelInfo
	}
	return h
}

// lockedWriter keeps the lines of both paths whole.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

func (h *Handler) Enabled(_ context.Context, l slog.Level) bool { return l >= h.level.Level() }

func (h *Handler) WithAttrs(as []slog.Attr) slog.Handler { return h.slow.WithAttrs(as) }

func (h *Handler) WithGroup(name string) slog.Handler { return h.slow.WithGroup(name) }

var buffers = sync.Pool{New: func() any { b := make([]byte, 0, 1024); return &b }}

// Handle writes r: by hand when every part of it can be, else by slog.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	if h.w == nil {
		return h.slow.Handle(ctx, r)
	}
	bp := buffers.Get().(*[]byte)
	defer buffers.Put(bp)
	b, ok := appendRecord((*bp)[:0], r)
	*bp = b[:0]
	if !ok {
		return h.slow.Handle(ctx, r)
	}
	_, err := h.w.Write(b)
	return err
}

// appendRecord appends r as slog.JSONHandler writes it; false if it has
// a part that only slog writes.
func appendRecord(b []byte, r slog.Record) ([]byte, bool) {
	var level string
	switch r.Level {
	case slog.LevelDebug, slog.LevelInfo, slog.LevelWarn, slog.LevelError:
		level = r.Level.String()
	default:
		return b, false
	}
	if !plain(r.Message) {
		return b, false
	}
	b = append(b, '{')
	if !r.Time.IsZero() {
		if y := r.Time.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, `"time":"`...)
		b = r.Time.AppendFormat(b, time.RFC3339Nano)
		b = append(b, `",`...)
	}
	b = append(b, `"level":"`...)
	b = append(b, level...)
	b = append(b, `","msg":"`...)
	b = append(b, r.Message...)
	b = append(b, '"')
	ok := true
	r.Attrs(func(a slog.Attr) bool {
		b, ok = appendAttr(b, a)
		return ok
	})
	return append(b, "}\n"...), ok
}

// appendAttr appends ,"key":value; false for what only slog writes.
func appendAttr(b []byte, a slog.Attr) ([]byte, bool) {
	if a.Key == "" || !plain(a.Key) {
		return b, false
	}
	b = append(b, `,"`...)
	b = append(b, a.Key...)
	b = append(b, `":`...)
	v := a.Value
	switch v.Kind() {
	case slog.KindString:
		s := v.String()
		if !plain(s) {
			return b, false
		}
		b = append(b, '"')
		b = append(b, s...)
		return append(b, '"'), true
	case slog.KindInt64:
		return strconv.AppendInt(b, v.Int64(), 10), true
	case slog.KindUint64:
		return strconv.AppendUint(b, v.Uint64(), 10), true
	case slog.KindBool:
		return strconv.AppendBool(b, v.Bool()), true
	case slog.KindDuration:
		return strconv.AppendInt(b, int64(v.Duration()), 10), true
	case slog.KindFloat64:
		// As json.Marshal writes it, within the range it writes
		// without an exponent.
		f := v.Float64()
		if abs := math.Abs(f); math.IsNaN(f) || math.IsInf(f, 0) || abs != 0 && (abs < 1e-6 || abs >= 1e21) {
			return b, false
		}
		return strconv.AppendFloat(b, f, 'f', -1, 64), true
	case slog.KindTime:
		t := v.Time()
		if y := t.Year(); y < 0 || y >= 10000 {
			return b, false
		}
		b = append(b, '"')
		b = t.AppendFormat(b, time.RFC3339Nano)
		return append(b, '"'), true
	}
	return b, false
}

// plain reports whether s is written in a JSON string as it is: printable
// ASCII but the quote and the backslash.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}
