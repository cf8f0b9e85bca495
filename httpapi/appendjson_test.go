package httpapi

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// TestAppendedJSONMatchesWireStructs: the appended answers are, byte for
// byte, what encoding/json writes for the wire structs they stand for, over
// random keys and guardrails (strings with every kind of character JSON
// escapes, usage in and out of the current periods).
func TestAppendedJSONMatchesWireStructs(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	now := time.Date(2027, 3, 17, 10, 30, 0, 0, time.UTC)
	s := &Server{now: func() time.Time { return now }}
	for i := range 2000 {
		k, g := random[gatehouse.Key](r, now), random[gatehouse.Guardrail](r, now)
		gs := make([]*gatehouse.Guardrail, r.IntN(4))
		for j := range gs {
			gs[j] = new(random[gatehouse.Guardrail](r, now))
		}
		total := r.IntN(1000)
		for _, c := range []struct {
			name      string
			got, want any
		}{
			{"key", dataOf(func(b []byte) []byte { return appendKey(b, &k, now) }), dataJSON[keyJSON]{s.keyJSON(&k)}},
			{"current key", dataOf(func(b []byte) []byte { return appendCurrentKey(b, &k, now) }), dataJSON[currentKeyJSON]{s.currentKeyOf(&k)}},
			{"guardrail", dataOf(func(b []byte) []byte { return appendGuardrail(b, &g) }), dataJSON[guardrailJSON]{toGuardrailJSON(&g)}},
			{"guardrails", listOf(gs, total, appendGuardrail), listJSON[guardrailJSON]{mapSlice(gs, toGuardrailJSON), total}},
		} {
			var want bytes.Buffer
			enc := json.NewEncoder(&want)
			enc.SetEscapeHTML(false)
			if err := enc.Encode(c.want); err != nil {
				t.Fatal(err)
			}
			rec := httptest.NewRecorder()
			if err := writeJSON(rec, http.StatusOK, c.got); err != nil {
				t.Fatal(err)
			}
			if got := rec.Body.String(); got != want.String() {
				t.Fatalf("round %d, %s:\n got %s\nwant %s", i, c.name, got, want.String())
			}
			if n := rec.Header().Get("Content-Length"); n != strconv.Itoa(want.Len()) {
				t.Fatalf("round %d, %s: Content-Length %s, want %d", i, c.name, n, want.Len())
			}
		}
	}
}

// random returns a T with every field set at random: pointers and slices
// sometimes nil, slices sometimes empty, times and period starts sometimes
// those of now.
func random[T any](r *rand.Rand, now time.Time) T {
	var v T
	fill(reflect.ValueOf(&v).Elem(), r, now)
	return v
}

var (
	timeType     = reflect.TypeFor[time.Time]()
	intervalType = reflect.TypeFor[gatehouse.Interval]()
	intervals    = []gatehouse.Interval{gatehouse.NoReset, gatehouse.Daily, gatehouse.Weekly, gatehouse.Monthly}
)

func fill(v reflect.Value, r *rand.Rand, now time.Time) {
	switch {
	case v.Type() == timeType:
		t := now.Add(time.Duration(r.Int64N(int64(400*24*time.Hour))) - 200*24*time.Hour)
		switch r.IntN(20) {
		case 0, 1, 2, 3, 4, 5, 6, 7, 8, 9: // a period start of now, so that Counter.At counts it
			t = intervals[1+r.IntN(3)].Start(now)
		case 10: // years of other than four digits
			t = time.Date([]int{-1, 0, 9999, 10000}[r.IntN(4)], 12, 31, 23, 59, 59, 999_999_999, time.UTC)
		case 11: // another zone
			t = t.In(time.FixedZone("", -7*3600))
		}
		v.Set(reflect.ValueOf(t))
		return
	case v.Type() == intervalType:
		v.SetString(string(intervals[r.IntN(len(intervals))]))
		return
	}
	switch v.Kind() {
	case reflect.String:
		v.SetString(randomString(r))
	case reflect.Bool:
		v.SetBool(r.IntN(2) == 0)
	case reflect.Int, reflect.Int64: // Money among them
		v.SetInt(r.Int64N(1e12) - 1e10)
	case reflect.Pointer:
		if r.IntN(3) > 0 {
			p := reflect.New(v.Type().Elem())
			fill(p.Elem(), r, now)
			v.Set(p)
		}
	case reflect.Slice:
		if n := r.IntN(5) - 1; n >= 0 {
			s := reflect.MakeSlice(v.Type(), n, n)
			for i := range n {
				fill(s.Index(i), r, now)
			}
			v.Set(s)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			fill(v.Field(i), r, now)
		}
	default:
		panic("fill: no rule for " + v.Type().String())
	}
}

// pieces are what random strings are made of: plain text, what JSON
// escapes, what HTML escaping would touch, invalid and unusual UTF-8.
var pieces = []string{"", "a", "key-name", " ", `"`, `\`, "/", "<", ">", "&", "\x00", "\x01", "\b", "\f", "\n",
	"\r", "\t", "\x1f", "\x7f", "é", "日本", "\u2028", "\u2029", "\U0001F600", "\xff", "\xc3", "\xe2\x80", "\ufffd"}

func randomString(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(6) {
		b.WriteString(pieces[r.IntN(len(pieces))])
	}
	return b.String()
}
