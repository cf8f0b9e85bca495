package console

import (
	"testing"

	"gatehouse"
)

func TestUSD(t *testing.T) {
	for _, tc := range []struct {
		m    gatehouse.Money
		want string
	}{
		{0, "$0.00"},
		{gatehouse.USD(5), "$5.00"},
		{gatehouse.USD(1234567), "$1,234,567.00"},
		{gatehouse.Money(1_500_000_000), "$1.50"},
		{gatehouse.Money(1_999_999_999), "$1.99"},
		{gatehouse.Money(16_000_000), "$0.016"},
		{gatehouse.Money(123_456_789), "$0.1234"},
		{gatehouse.Money(2_000), "$0.000002"},
		{gatehouse.Money(1), "< $0.000001"},
		{-gatehouse.USD(3), "−$3.00"},
	} {
		if got := usd(tc.m); got != tc.want {
			t.Errorf("usd(%d) = %q, want %q", tc.m, got, tc.want)
		}
	}
}

func TestCount(t *testing.T) {
	for n, want := range map[int64]string{0: "0", 999: "999", 1000: "1,000", 1234567: "1,234,567", -42000: "−42,000"} {
		if got := count(n); got != want {
			t.Errorf("count(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestLocalPath(t *testing.T) {
	for p, want := range map[string]string{
		"/keys?q=a": "/keys?q=a", "/": "/", "": "/", "keys": "/", "//evil.example": "/", "/\\evil.example": "/",
		"https://evil.example/": "/", "/auth?callback_url=https%3A%2F%2Fapp": "/auth?callback_url=https%3A%2F%2Fapp", "/a\r\nb": "/",
	} {
		if got := localPath(p); got != want {
			t.Errorf("localPath(%q) = %q, want %q", p, got, want)
		}
	}
}
