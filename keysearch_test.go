package gatehouse_test

import (
	"strings"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

func TestParseKeyQuery(t *testing.T) {
	plaintext := gatehouse.NewKeySecret(false)
	for _, tc := range []struct {
		q    string
		want gatehouse.KeySearch
	}{
		{"", gatehouse.KeySearch{}},
		{"  prod ", gatehouse.KeySearch{NamePrefix: "prod"}},
		{"cafe", gatehouse.KeySearch{NamePrefix: "cafe"}}, // too short for a hash
		{"CAFE12", gatehouse.KeySearch{HashPrefix: "cafe12"}},
		{"cafe12x", gatehouse.KeySearch{NamePrefix: "cafe12x"}},
		{plaintext, gatehouse.KeySearch{HashPrefix: gatehouse.HashKey(plaintext)}},
	} {
		if diff := cmp.Diff(tc.want, gatehouse.ParseKeyQuery(tc.q)); diff != "" {
			t.Errorf("ParseKeyQuery(%q) (-want +got):\n%s", tc.q, diff)
		}
	}
}

func TestKeyCursorRoundTrip(t *testing.T) {
	c := &gatehouse.KeyCursor{CreatedAt: time.UnixMilli(1_800_000_000_123).UTC(), Hash: strings.Repeat("ab", 32), Name: "prod.v2 é"}
	got, err := gatehouse.ParseKeyCursor(c.String())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(c, got); diff != "" {
		t.Errorf("round trip (-want +got):\n%s", diff)
	}
	for _, bad := range []string{"", "x", "12.zz.", "12." + strings.Repeat("a", 63) + ".", "a." + strings.Repeat("a", 64) + "."} {
		if _, err := gatehouse.ParseKeyCursor(bad); gatehouse.ErrorCode(err) != gatehouse.EINVALID {
			t.Errorf("ParseKeyCursor(%q) = %v, want EINVALID", bad, err)
		}
	}
}

func TestFoldKeyName(t *testing.T) {
	if got := gatehouse.FoldKeyName("Prod-É-X"); got != "prod-É-x" {
		t.Errorf("FoldKeyName = %q: only ASCII letters fold", got)
	}
}
