package gatehouse

import (
	"bytes"
	"encoding/json"
	"errors"
	"math/big"
	"regexp"
	"strings"
	"testing"
	"time"
)

// slowMoney is how long one parse may take before the input counts as a
// denial of service. Generous, so that -race on a busy machine passes.
const slowMoney = time.Second

// jsonNumber matches the JSON number grammar (RFC 8259 §6).
var jsonNumber = regexp.MustCompile(`^-?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?([0-9]+))?$`)

// referenceNanos computes the Money of a JSON number with math/big: the
// number × 10^9, rounded half away from zero. ok is false when the exponent
// is too large for the reference to be cheap.
func referenceNanos(s string) (n *big.Int, ok bool) {
	m := jsonNumber.FindStringSubmatch(s)
	if m == nil || len(strings.TrimLeft(m[4], "0")) > 3 {
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return nil, false
	}
	r.Mul(r, big.NewRat(NanosPerUSD, 1))
	q, rem := new(big.Int).QuoRem(new(big.Int).Abs(r.Num()), r.Denom(), new(big.Int))
	if rem.Lsh(rem, 1).Cmp(r.Denom()) >= 0 {
		q.Add(q, big.NewInt(1))
	}
	if r.Sign() < 0 {
		q.Neg(q)
	}
	return q, true
}

func FuzzParseMoney(f *testing.F) {
	for _, s := range []string{"0", "-0", "1", "1.5", "0.000000001", "0.0000000005", "0.00000000049999", "-0.0000000005",
		"123456789.123456789", "1000000000", "1000000000.0000000004", "1000000000.0000000005", "1000000001",
		"1e9", "1e10", "1E2", "1e+2", "2.5e-3", "1e-10", "5e-10", "1e999999", "1e-999999", "1e9999999", "0e999999",
		"1e0000002", "1e+-5", "1e-+5", "01", "00.5", "", "-", ".5", "1.", "1e", "NaN", "9223372036854775807",
		"0." + strings.Repeat("9", 400), "0." + strings.Repeat("0", 400) + "1", "1" + strings.Repeat("0", 400) + "e-400"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		start := time.Now()
		m, err := ParseMoney(s)
		if d := time.Since(start); d > slowMoney {
			t.Fatalf("ParseMoney of %d bytes took %v", len(s), d)
		}
		if ref, ok := referenceNanos(s); ok {
			inRange := ref.CmpAbs(big.NewInt(int64(MaxMoney))) <= 0
			switch {
			case inRange && (err != nil || int64(m) != ref.Int64()):
				t.Fatalf("ParseMoney(%q) = %d, %v; want %s", s, m, err, ref)
			case !inRange && !errors.Is(err, errMoneyRange):
				t.Fatalf("ParseMoney(%q) = %d, %v; want a range error (the value is %s nano-dollars)", s, m, err, ref)
			}
		}
		if err != nil {
			if !errors.Is(err, errMoneySyntax) && !errors.Is(err, errMoneyRange) {
				t.Fatalf("ParseMoney(%q): unexpected error %v", s, err)
			}
			return
		}
		if m > MaxMoney || m < -MaxMoney {
			t.Fatalf("ParseMoney(%q) = %d, beyond MaxMoney", s, m)
		}
		out := m.String()
		if !jsonNumber.MatchString(out) {
			t.Fatalf("Money(%d).String() = %q, not a JSON number", m, out)
		}
		if back, err := ParseMoney(out); err != nil || back != m {
			t.Fatalf("ParseMoney(%q) = %d; ParseMoney(%q) = %d, %v: no round trip", s, m, out, back, err)
		}
	})
}

// FuzzMoneyJSON decodes any JSON into Money, as request bodies do: a number
// decodes to what ParseMoney says, anything else is a *json.UnmarshalTypeError
// (or a syntax error for invalid JSON), and what decodes encodes back to
// the same amount.
func FuzzMoneyJSON(f *testing.F) {
	for _, s := range []string{"0", "1.5", "-1.5", "null", `"1"`, "true", "{}", "[]", "1e999999", "1e-999999",
		"1000000000.000000001", " 2 ", "1 2", "-", "1e+", "0." + strings.Repeat("1", 1000)} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var direct Money
		if err := direct.UnmarshalJSON(data); err != nil {
			var te *json.UnmarshalTypeError
			if !errors.As(err, &te) {
				t.Fatalf("UnmarshalJSON(%q): error %v (%T), want a *json.UnmarshalTypeError", data, err, err)
			}
		}
		start := time.Now()
		var m Money
		err := json.Unmarshal(data, &m)
		if d := time.Since(start); d > slowMoney {
			t.Fatalf("decoding %d bytes took %v", len(data), d)
		}
		if err != nil {
			var te *json.UnmarshalTypeError
			var se *json.SyntaxError
			if !errors.As(err, &te) && !errors.As(err, &se) {
				t.Fatalf("json.Unmarshal(%q): error %v (%T)", data, err, err)
			}
			return
		}
		text := string(bytes.TrimSpace(data))
		if text == "null" {
			if m != 0 {
				t.Fatalf("null decoded to %d", m)
			}
			return
		}
		if want, err := ParseMoney(text); err != nil || m != want {
			t.Fatalf("json.Unmarshal(%q) = %d; ParseMoney says %d, %v", data, m, want, err)
		}
		out, err := json.Marshal(m)
		if err != nil || string(out) != m.String() {
			t.Fatalf("json.Marshal(%d) = %s, %v; want %s", m, out, err, m.String())
		}
		var back Money
		if err := json.Unmarshal(out, &back); err != nil || back != m {
			t.Fatalf("%s decodes to %d, %v; want %d", out, back, err, m)
		}
	})
}

// TestParseMoneyLongNumbersAreCheap is the regression test of a finding of
// the fuzzing: a number with a million digits (as a 1 MiB body may hold) took
// seconds of big-number arithmetic to round to nano-dollars.
func TestParseMoneyLongNumbersAreCheap(t *testing.T) {
	const n = 1 << 20
	for _, in := range []string{"0." + strings.Repeat("1", n), "0." + strings.Repeat("0", n) + "5", "1." + strings.Repeat("0", n),
		strings.Repeat("1", n), "9" + strings.Repeat("9", n) + "e-" + "999999"} {
		start := time.Now()
		_, _ = ParseMoney(in)
		if d := time.Since(start); d > slowMoney/4 {
			t.Errorf("ParseMoney of %d bytes took %v", len(in), d)
		}
	}
	for in, want := range map[string]Money{
		"0." + strings.Repeat("1", n):                     111_111_111,
		"0.000000000" + strings.Repeat("5", n):            1,
		"0.000000000" + strings.Repeat("4", n):            0,
		"1." + strings.Repeat("0", n):                     NanosPerUSD,
		"-0.00000000" + strings.Repeat("9", n):            -NanosPerUSD / 100_000_000,
		"1" + strings.Repeat("0", 999_999) + "e-999999":   NanosPerUSD,
		"0.000000001" + strings.Repeat("0", n) + "e00002": 100,
	} {
		if got, err := ParseMoney(in); err != nil || got != want {
			t.Errorf("ParseMoney(%.20q…) = %d, %v; want %d", in, got, err, want)
		}
	}
}
