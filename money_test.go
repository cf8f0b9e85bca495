package gatehouse_test

import (
	"encoding/json"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"gatehouse"
)

func TestParseMoney(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want gatehouse.Money
	}{
		{"0", 0},
		{"0.0", 0},
		{"-0", 0},
		{"1", gatehouse.NanosPerUSD},
		{"1.5", 1_500_000_000},
		{"0.1", 100_000_000},
		{"0.000000001", 1},
		{"123456789.123456789", 123_456_789_123_456_789},
		{"-1.5", -1_500_000_000},
		{"-0.000000001", -1},
		// Beyond nine decimals: round half away from zero.
		{"0.0000000005", 1},
		{"0.00000000049999", 0},
		{"0.0000000015", 2},
		{"-0.0000000005", -1},
		{"-0.00000000049", 0},
		{"1.9999999995", 2 * gatehouse.NanosPerUSD},
		{"0.1234567894", 123_456_789},
		{"0.1234567895", 123_456_790},
		// Exponents.
		{"1e2", 100 * gatehouse.NanosPerUSD},
		{"1E2", 100 * gatehouse.NanosPerUSD},
		{"1e+2", 100 * gatehouse.NanosPerUSD},
		{"2.5E-3", 2_500_000},
		{"2.5e-3", 2_500_000},
		{"1e-9", 1},
		{"1e-10", 0},
		{"5e-10", 1},
		{"-5e-10", -1},
		{"0e999999", 0},
		{"1e9", gatehouse.MaxMoney},
		{"0.001e3", gatehouse.NanosPerUSD},
		// Range: exactly MaxMoney is accepted.
		{"1000000000", gatehouse.MaxMoney},
		{"1000000000.000000000", gatehouse.MaxMoney},
		{"-1000000000", -gatehouse.MaxMoney},
		{"1000000000.0000000004", gatehouse.MaxMoney}, // rounds down to the maximum
	} {
		got, err := gatehouse.ParseMoney(tc.in)
		if err != nil || got != tc.want {
			t.Errorf("ParseMoney(%q) = %d, %v; want %d", tc.in, got, err, tc.want)
		}
	}
}

func TestParseMoneyErrors(t *testing.T) {
	for _, in := range []string{
		"", "-", "--1", "+1", ".5", "1.", "1..2", "1.2.3", "1e", "1e+", "1e-", "e5", "1e2.5",
		"abc", "NaN", "Infinity", " 1", "1 ", "0x10", "1_000", `"1"`, "true", "null",
		// Out of range.
		"1000000000.000000001", "1000000001", "-1000000000.000000001", "1e10", "9223372036854775807",
		"99999999999999999999999999999", "1000000000.0000000005",
		// Huge exponents.
		"1e999999", "-1e999999", "1e9999999", "1e-9999999", "1e99999999999999999999",
	} {
		if got, err := gatehouse.ParseMoney(in); err == nil {
			t.Errorf("ParseMoney(%q) = %d, want an error", in, got)
		}
	}
}

// A huge exponent is refused from the lengths alone, without building a
// number with a million digits.
func TestParseMoneyHugeExponentIsCheap(t *testing.T) {
	for _, in := range []string{"1e999999", "123.456e999999", "1e99999"} {
		start := time.Now()
		allocs := testing.AllocsPerRun(20, func() {
			if _, err := gatehouse.ParseMoney(in); err == nil {
				t.Fatalf("ParseMoney(%q) succeeded", in)
			}
		})
		if allocs > 2 {
			t.Errorf("ParseMoney(%q) allocates %v times per call, want at most 2", in, allocs)
		}
		if d := time.Since(start); d > time.Second {
			t.Errorf("ParseMoney(%q) 21 times took %v", in, d)
		}
	}
}

func TestMoneyExactSum(t *testing.T) {
	a, err := gatehouse.ParseMoney("0.1")
	if err != nil {
		t.Fatal(err)
	}
	b, err := gatehouse.ParseMoney("0.2")
	if err != nil {
		t.Fatal(err)
	}
	want, err := gatehouse.ParseMoney("0.3")
	if err != nil {
		t.Fatal(err)
	}
	if sum := a + b; sum != want || sum.String() != "0.3" {
		t.Errorf("0.1 + 0.2 = %s (%d), want 0.3 (%d)", sum, int64(sum), int64(want))
	}
	// A billion nano-dollars add up to exactly one dollar.
	var total gatehouse.Money
	nano, _ := gatehouse.ParseMoney("0.000000001")
	for range 1000 {
		total += nano
	}
	if total.String() != "0.000001" {
		t.Errorf("1000 × 1e-9 = %s, want 0.000001", total)
	}
}

func TestMoneyString(t *testing.T) {
	for _, tc := range []struct {
		m    gatehouse.Money
		want string
	}{
		{0, "0"},
		{1, "0.000000001"},
		{-1, "-0.000000001"},
		{10, "0.00000001"},
		{gatehouse.NanosPerUSD, "1"},
		{1_500_000_000, "1.5"},
		{-1_500_000_000, "-1.5"},
		{gatehouse.USD(42), "42"},
		{100_000_000, "0.1"},
		{123_456_789_123_456_789, "123456789.123456789"},
		{gatehouse.MaxMoney, "1000000000"},
		{-gatehouse.MaxMoney, "-1000000000"},
	} {
		if got := tc.m.String(); got != tc.want {
			t.Errorf("Money(%d).String() = %q, want %q", int64(tc.m), got, tc.want)
		}
		b, err := json.Marshal(tc.m)
		if err != nil || string(b) != tc.want {
			t.Errorf("json.Marshal(Money(%d)) = %s, %v; want %s", int64(tc.m), b, err, tc.want)
		}
	}
}

func TestMoneyStringRoundTrip(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	values := []gatehouse.Money{0, 1, -1, 9, 10, 999_999_999, gatehouse.NanosPerUSD, gatehouse.MaxMoney, -gatehouse.MaxMoney}
	for range 2000 {
		values = append(values, gatehouse.Money(r.Int64N(2*int64(gatehouse.MaxMoney)+1)-int64(gatehouse.MaxMoney)))
		values = append(values, gatehouse.Money(r.Int64N(1_000_000))) // small amounts: many decimals
	}
	for _, m := range values {
		got, err := gatehouse.ParseMoney(m.String())
		if err != nil || got != m {
			t.Fatalf("ParseMoney(%q) = %d, %v; want %d", m.String(), got, err, int64(m))
		}
		var back gatehouse.Money
		b, _ := json.Marshal(m)
		if err := json.Unmarshal(b, &back); err != nil || back != m {
			t.Fatalf("JSON round trip of %d via %s = %d, %v", int64(m), b, int64(back), err)
		}
	}
}

func TestMoneyJSON(t *testing.T) {
	type body struct {
		Limit gatehouse.Money  `json:"limit"`
		Opt   *gatehouse.Money `json:"opt"`
	}
	var b body
	if err := json.Unmarshal([]byte(`{"limit": 0.1, "opt": 2.5E-3}`), &b); err != nil {
		t.Fatal(err)
	}
	if b.Limit != 100_000_000 || b.Opt == nil || *b.Opt != 2_500_000 {
		t.Errorf("decoded %+v (opt %v)", b, b.Opt)
	}
	out, err := json.Marshal(b)
	if err != nil || string(out) != `{"limit":0.1,"opt":0.0025}` {
		t.Errorf("json.Marshal = %s, %v", out, err)
	}

	// null leaves the value alone; a pointer stays nil.
	b = body{Limit: 7}
	if err := json.Unmarshal([]byte(`{"limit": null, "opt": null}`), &b); err != nil {
		t.Fatal(err)
	}
	if b.Limit != 7 || b.Opt != nil {
		t.Errorf("after nulls: %+v", b)
	}
	var m gatehouse.Money = 3
	if err := m.UnmarshalJSON([]byte("null")); err != nil || m != 3 {
		t.Errorf("UnmarshalJSON(null) = %v, m = %d", err, int64(m))
	}

	// Negative numbers decode (callers reject them where they must).
	if err := json.Unmarshal([]byte(`{"limit": -1.25}`), &b); err != nil || b.Limit != -1_250_000_000 {
		t.Errorf("negative: %d, %v", int64(b.Limit), err)
	}
}

func TestMoneyJSONTypeErrors(t *testing.T) {
	for _, tc := range []struct {
		in, kind string
	}{
		{`{"limit": "1.5"}`, "string"},
		{`{"limit": ""}`, "string"},
		{`{"limit": true}`, "bool"},
		{`{"limit": false}`, "bool"},
		{`{"limit": {}}`, "object"},
		{`{"limit": [1]}`, "array"},
		{`{"limit": 1e999999}`, "number"},
		{`{"limit": 1000000000.000000001}`, "number"},
		{`{"limit": -1e10}`, "number"},
	} {
		var b struct {
			Limit gatehouse.Money `json:"limit"`
		}
		err := json.Unmarshal([]byte(tc.in), &b)
		var te *json.UnmarshalTypeError
		if !errors.As(err, &te) {
			t.Errorf("json.Unmarshal(%s) error = %v (%T), want *json.UnmarshalTypeError", tc.in, err, err)
			continue
		}
		if te.Value != tc.kind {
			t.Errorf("json.Unmarshal(%s): UnmarshalTypeError.Value = %q, want %q", tc.in, te.Value, tc.kind)
		}
		if te.Field != "limit" {
			t.Errorf("json.Unmarshal(%s): UnmarshalTypeError.Field = %q, want limit", tc.in, te.Field)
		}
	}
	// Called directly, too.
	var m gatehouse.Money
	var te *json.UnmarshalTypeError
	if err := m.UnmarshalJSON([]byte(`"1"`)); !errors.As(err, &te) {
		t.Errorf(`UnmarshalJSON("1") = %v, want *json.UnmarshalTypeError`, err)
	}
}

func TestUSD(t *testing.T) {
	if gatehouse.USD(3) != 3*gatehouse.NanosPerUSD || gatehouse.USD(-2).String() != "-2" {
		t.Errorf("USD: %d, %s", int64(gatehouse.USD(3)), gatehouse.USD(-2))
	}
}
