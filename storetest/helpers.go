package storetest

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"gatehouse"
)

// subtest is one named test of the suite.
type subtest struct {
	name string
	fn   func(*testing.T, Opener)
}

// runSubtests runs each test as a subtest of t against stores made by open.
func runSubtests(t *testing.T, open Opener, tests []subtest) {
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) { tc.fn(t, open) })
	}
}

// wantMessage fails the test unless err has the code and its message
// starts with prefix.
func wantMessage(t *testing.T, err error, code, prefix string) {
	t.Helper()
	wantCode(t, err, code)
	if msg := gatehouse.ErrorMessage(err); !strings.HasPrefix(msg, prefix) {
		t.Fatalf("error message = %q, want prefix %q", msg, prefix)
	}
}

// wantMetadata fails the test unless err carries want under key.
func wantMetadata(t *testing.T, err error, key string, want []string) {
	t.Helper()
	e, isErr := err.(*gatehouse.Error)
	if !isErr {
		t.Fatalf("error %v is not a *gatehouse.Error", err)
	}
	got, _ := e.Metadata[key].([]string)
	slices.Sort(got)
	want = slices.Sorted(slices.Values(want))
	if !slices.Equal(got, want) {
		t.Fatalf("metadata[%s] = %v, want %v", key, e.Metadata[key], want)
	}
}

// wantEqual fails the test unless want and got have the same JSON encoding,
// which compares times by instant and tells nil slices from empty ones.
func wantEqual(t *testing.T, what string, want, got any) {
	t.Helper()
	w, err := json.MarshalIndent(want, "", "  ")
	ok(t, err)
	g, err := json.MarshalIndent(got, "", "  ")
	ok(t, err)
	if string(w) != string(g) {
		t.Fatalf("%s:\ngot  %s\nwant %s", what, g, w)
	}
}

func sortedStrings(s ...string) []string { return slices.Sorted(slices.Values(s)) }

// wantCount fails the test unless a bulk call returned n and no error.
func wantCount(t *testing.T, what string, got int, err error, want int) {
	t.Helper()
	if err != nil || got != want {
		t.Fatalf("%s = %d, %v; want %d", what, got, err, want)
	}
}
