package gatehouse

import (
	"crypto/aes"
	"crypto/cipher"
	"encoding/base64"
	"errors"
	"log/slog"
	"strings"
)

// SecretBox encrypts secrets at rest with AES-256-GCM. Sealed values are
// text: "v1:" followed by base64 of nonce and ciphertext. It seals with its
// current key and opens with the current key or any previous one, so that
// the key can be rotated while values sealed with the old one are still
// around.
type SecretBox struct {
	aead     cipher.AEAD
	previous []cipher.AEAD
}

// SecretKeySize is the size of a SecretBox key in bytes.
const SecretKeySize = 32

// NewSecretBox returns a SecretBox sealing with a 32-byte key and opening
// with it or any of the previous keys.
func NewSecretBox(key []byte, previous ...[]byte) (*SecretBox, error) {
	aead, err := newAEAD(key)
	if err != nil {
		return nil, err
	}
	b := &SecretBox{aead: aead}
	for _, k := range previous {
		a, err := newAEAD(k)
		if err != nil {
			return nil, err
		}
		b.previous = append(b.previous, a)
	}
	return b, nil
}

func newAEAD(key []byte) (cipher.AEAD, error) {
	if len(key) != SecretKeySize {
		return nil, errors.New("secret key must be 32 bytes")
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// NewSecretKey returns a fresh random key for NewSecretBox.
func NewSecretKey() []byte { return randomBytes(SecretKeySize) }

// Seal encrypts plaintext. additional binds the ciphertext to its owner
// (a row id, say), so it cannot be moved to another row.
func (b *SecretBox) Seal(plaintext, additional []byte) string {
	nonce := randomBytes(b.aead.NonceSize())
	sealed := b.aead.Seal(nonce, nonce, plaintext, additional)
	return "v1:" + base64.StdEncoding.EncodeToString(sealed)
}

// Open decrypts a value made by Seal with the same additional data, under
// the current key or a previous one.
func (b *SecretBox) Open(sealed string, additional []byte) ([]byte, error) {
	raw, ok := strings.CutPrefix(sealed, "v1:")
	if !ok {
		return nil, errors.New("secretbox: unknown format")
	}
	data, err := base64.StdEncoding.DecodeString(raw)
	n := b.aead.NonceSize()
	if err != nil || len(data) < n {
		return nil, errors.New("secretbox: malformed value")
	}
	for _, aead := range append([]cipher.AEAD{b.aead}, b.previous...) {
		if plain, err := aead.Open(nil, data[:n], data[n:], additional); err == nil {
			return plain, nil
		}
	}
	return nil, errors.New("secretbox: no key opens this value (wrong key, or tampered)")
}

// Secret is a credential in the clear, such as a provider's API key. It
// prints, logs and encodes to JSON as [redacted], so that a value holding
// one cannot give it away by being logged or shown by mistake; string(s) is
// the credential, for the one place that sends it.
type Secret string

const redacted = "[redacted]"

// String returns [redacted].
func (Secret) String() string { return redacted }

// GoString returns [redacted], for %#v.
func (Secret) GoString() string { return `"` + redacted + `"` }

// LogValue returns [redacted], for log/slog.
func (Secret) LogValue() slog.Value { return slog.StringValue(redacted) }

// MarshalJSON encodes [redacted].
func (Secret) MarshalJSON() ([]byte, error) { return []byte(`"` + redacted + `"`), nil }
