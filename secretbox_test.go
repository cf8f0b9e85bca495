package gatehouse_test

import (
	"encoding/base64"
	"strings"
	"testing"

	"gatehouse"
)

func newTestBox(t *testing.T) *gatehouse.SecretBox {
	t.Helper()
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	return box
}

func TestSecretBoxRoundTrip(t *testing.T) {
	box := newTestBox(t)
	for _, plain := range []string{"", "sk-secret-value", strings.Repeat("x", 10_000), "\x00\xff"} {
		sealed := box.Seal([]byte(plain), []byte("row-1"))
		if !strings.HasPrefix(sealed, "v1:") || (plain != "" && strings.Contains(sealed, plain)) {
			t.Errorf("Seal(%q) = %q", plain, sealed)
		}
		got, err := box.Open(sealed, []byte("row-1"))
		if err != nil || string(got) != plain {
			t.Errorf("Open(Seal(%.20q)) = %.20q, %v", plain, got, err)
		}
	}
	// A fresh nonce every time.
	if a, b := box.Seal([]byte("same"), nil), box.Seal([]byte("same"), nil); a == b {
		t.Errorf("two seals of the same plaintext are equal: %s", a)
	}
}

func TestSecretBoxRejects(t *testing.T) {
	box := newTestBox(t)
	sealed := box.Seal([]byte("api-key-123"), []byte("dest-1"))
	raw, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(sealed, "v1:"))
	if err != nil {
		t.Fatal(err)
	}
	tamper := func(i int) string {
		b := append([]byte(nil), raw...)
		b[i] ^= 0x01
		return "v1:" + base64.StdEncoding.EncodeToString(b)
	}
	for _, tc := range []struct {
		name, sealed, ad string
		box              *gatehouse.SecretBox
	}{
		{"other additional data", sealed, "dest-2", box},
		{"no additional data", sealed, "", box},
		{"other key", sealed, "dest-1", newTestBox(t)},
		{"tampered nonce", tamper(0), "dest-1", box},
		{"tampered ciphertext", tamper(len(raw) / 2), "dest-1", box},
		{"tampered tag", tamper(len(raw) - 1), "dest-1", box},
		{"truncated", "v1:" + base64.StdEncoding.EncodeToString(raw[:len(raw)-1]), "dest-1", box},
		{"too short", "v1:" + base64.StdEncoding.EncodeToString(raw[:5]), "dest-1", box},
		{"unknown version", "v2:" + strings.TrimPrefix(sealed, "v1:"), "dest-1", box},
		{"no prefix", strings.TrimPrefix(sealed, "v1:"), "dest-1", box},
		{"bad base64", "v1:***", "dest-1", box},
		{"empty", "", "dest-1", box},
	} {
		if got, err := tc.box.Open(tc.sealed, []byte(tc.ad)); err == nil {
			t.Errorf("%s: Open = %q, want an error", tc.name, got)
		}
	}
}

func TestNewSecretBoxKeySize(t *testing.T) {
	for _, n := range []int{0, 16, 31, 33, 64} {
		if _, err := gatehouse.NewSecretBox(make([]byte, n)); err == nil {
			t.Errorf("NewSecretBox(%d bytes) succeeded", n)
		}
	}
	if k1, k2 := gatehouse.NewSecretKey(), gatehouse.NewSecretKey(); len(k1) != gatehouse.SecretKeySize || string(k1) == string(k2) {
		t.Errorf("NewSecretKey: %d bytes, repeated %v", len(k1), string(k1) == string(k2))
	}
}

func TestSecretBoxPreviousKeys(t *testing.T) {
	oldKey, newKey := gatehouse.NewSecretKey(), gatehouse.NewSecretKey()
	old, _ := gatehouse.NewSecretBox(oldKey)
	sealedOld := old.Seal([]byte("s3cret"), []byte("id"))
	rotated, err := gatehouse.NewSecretBox(newKey, oldKey)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := rotated.Open(sealedOld, []byte("id")); err != nil || string(got) != "s3cret" {
		t.Fatalf("a previous key does not open old values: %q, %v", got, err)
	}
	sealedNew := rotated.Seal([]byte("s3cret"), []byte("id"))
	if _, err := old.Open(sealedNew, []byte("id")); err == nil {
		t.Fatal("new values are sealed with the previous key, not the current one")
	}
	newOnly, _ := gatehouse.NewSecretBox(newKey)
	if _, err := newOnly.Open(sealedNew, []byte("id")); err != nil {
		t.Fatalf("the current key does not open new values: %v", err)
	}
	if _, err := gatehouse.NewSecretBox(newKey, []byte("short")); err == nil {
		t.Fatal("a malformed previous key was accepted")
	}
}
