package gatehouse

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestParseRetention(t *testing.T) {
	for in, want := range map[string]time.Duration{
		"30d": 30 * 24 * time.Hour, "0d": 0, "0": 0, "12h": 12 * time.Hour, "90m": 90 * time.Minute, " 7d ": 7 * 24 * time.Hour,
	} {
		if got, err := ParseRetention(in); err != nil || got != want {
			t.Errorf("ParseRetention(%q) = %v, %v; want %v", in, got, err, want)
		}
	}
	for _, in := range []string{"", "d", "-1d", "1.5d", "-5m", "a month", "36501d", "30"} {
		if _, err := ParseRetention(in); err == nil {
			t.Errorf("ParseRetention(%q) accepted", in)
		}
	}
}

func TestFormatRetention(t *testing.T) {
	for d, want := range map[time.Duration]string{
		DefaultContentRetention: "30 days", 24 * time.Hour: "1 day", 36 * time.Hour: "36h0m0s", 0: "no time",
	} {
		if got := FormatRetention(d); got != want {
			t.Errorf("FormatRetention(%v) = %q, want %q", d, got, want)
		}
	}
}

func TestAttributionHeader(t *testing.T) {
	if AttributionHeader("  ", 10) != nil || AttributionHeader("", 10) != nil {
		t.Error("an empty header is attribution")
	}
	for _, tc := range []struct {
		in   string
		max  int
		want string
	}{
		{"https://app.example.com", 100, "https://app.example.com"},
		{"abcdef", 4, "abcd"},
		{"ab\u00e9cd", 3, "ab"}, // never half a character
		{"a\x00b\xffc", 10, "ab\uFFFDc"},
	} {
		if got := AttributionHeader(tc.in, tc.max); got == nil || *got != tc.want {
			t.Errorf("AttributionHeader(%q, %d) = %v, want %q", tc.in, tc.max, got, tc.want)
		}
	}
}

func TestCheckExternalUser(t *testing.T) {
	for _, ok := range []string{"user-1", strings.Repeat("é", MaxExternalUserLength)} {
		if err := CheckExternalUser(ok); err != nil {
			t.Errorf("CheckExternalUser(%q): %v", ok, err)
		}
	}
	for _, bad := range []string{" ", strings.Repeat("u", MaxExternalUserLength+1), "a\nb", "a\u202eb"} {
		if err := CheckExternalUser(bad); ErrorCode(err) != EINVALID || !strings.HasPrefix(ErrorMessage(err), "user: ") {
			t.Errorf("CheckExternalUser(%q) = %v, want a field error", bad, err)
		}
	}
}

func TestStoredContentReadable(t *testing.T) {
	g := &Generation{ID: "gen-1", WorkspaceID: "ws-1"}
	c := &GenerationContent{Messages: json.RawMessage(`[]`)}
	if _, err := (&StoredContent{Generation: g, Content: c}).Readable(time.Hour); ErrorCode(err) != EFORBIDDEN {
		t.Errorf("privacy mode: %v, want 403", err)
	}
	if _, err := (&StoredContent{Generation: g, Logged: true}).Readable(48 * time.Hour); ErrorCode(err) != ENOTFOUND ||
		!strings.Contains(ErrorMessage(err), "2 days") {
		t.Errorf("no content: %v, want 404 saying how long content is kept", err)
	}
	if got, err := (&StoredContent{Generation: g, Content: c, Logged: true}).Readable(time.Hour); err != nil || got != c {
		t.Errorf("logged content: %v, %v", got, err)
	}
}

// fakeContentStore counts the batches of PruneContent and ResealContent.
type fakeContentStore struct {
	GenerationService
	left, batches int
}

func (f *fakeContentStore) PruneGenerationContent(_ context.Context, _ time.Time, limit int) (int, error) {
	f.batches++
	n := min(f.left, limit)
	f.left -= n
	return n, nil
}

func (f *fakeContentStore) ResealGenerationContent(_ context.Context, after string, limit int) (ContentResealed, error) {
	n, err := f.PruneGenerationContent(context.Background(), time.Time{}, limit)
	unreadable := min(n, 1) // one content of each batch opened by no key
	return ContentResealed{Resealed: n - unreadable, Unreadable: unreadable, Last: after + "x"}, err
}

func TestContentBatches(t *testing.T) {
	f := &fakeContentStore{left: 1001}
	if n, err := PruneContent(context.Background(), f, time.Now(), 500); n != 1001 || err != nil || f.batches != 3 || f.left != 0 {
		t.Errorf("PruneContent = %d, %v in %d batches, %d left; want 1001 in 3", n, err, f.batches, f.left)
	}
	f = &fakeContentStore{left: 400}
	if r, err := ResealContent(context.Background(), f, 200); r.Resealed != 398 || r.Unreadable != 2 || err != nil || f.batches != 3 {
		t.Errorf("ResealContent = %+v, %v in %d batches; want 398 re-sealed and 2 unreadable in 3 (the last finds none)", r, err, f.batches)
	}
}
