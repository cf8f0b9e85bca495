package gatehouse

import (
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"golang.org/x/crypto/argon2"
)

// Password policy: length bounds, in characters. The upper bound keeps a
// sign-in from hashing megabytes; there is no rule of composition (NIST SP
// 800-63B: length is what counts).
const (
	MinPasswordLength = 12
	MaxPasswordLength = 1024
)

// ValidatePassword checks a new password against the policy, naming the
// field in its error.
func ValidatePassword(field, password string) error {
	if !utf8.ValidString(password) {
		return FieldError(field, "must be valid UTF-8 text")
	}
	n := utf8.RuneCountInString(password)
	if n < MinPasswordLength {
		return FieldError(field, "must be at least %d characters (got %d)", MinPasswordLength, n)
	}
	if n > MaxPasswordLength {
		return FieldError(field, "must be at most %d characters (got %d)", MaxPasswordLength, n)
	}
	if strings.TrimSpace(password) == "" {
		return FieldError(field, "must not be only spaces")
	}
	return nil
}

// PasswordParams are the argon2id parameters of a password hash.
type PasswordParams struct {
	Memory  uint32 // KiB
	Time    uint32 // passes
	Threads uint8
	SaltLen uint32 // bytes
	KeyLen  uint32 // bytes
}

// DefaultPasswordParams are those new hashes take: OWASP's recommendation
// for argon2id in interactive login (19 MiB, 2 passes, 1 lane), with a
// 16-byte salt and a 32-byte hash. About 30 ms of one core.
var DefaultPasswordParams = PasswordParams{Memory: 19 * 1024, Time: 2, Threads: 1, SaltLen: 16, KeyLen: 32}

// Bounds of the parameters a stored hash may carry: hashes made with other
// parameters than today's still verify (so that the defaults can be raised
// later), but a hash that would take gigabytes or minutes is refused.
const (
	maxPasswordMemory  = 1 << 20 // KiB: 1 GiB
	maxPasswordTime    = 64
	minPasswordSaltLen = 8
	maxPasswordSaltLen = 64
	minPasswordKeyLen  = 16
	maxPasswordKeyLen  = 128
)

// phcB64 is the base64 of the PHC string format: standard alphabet, no
// padding.
var phcB64 = base64.RawStdEncoding

// HashPassword returns the argon2id hash of a password with the default
// parameters and a fresh salt, in the PHC string format:
// $argon2id$v=19$m=19456,t=2,p=1$<salt>$<hash>.
func HashPassword(password string) string {
	return hashPassword(password, DefaultPasswordParams, randomBytes(int(DefaultPasswordParams.SaltLen)))
}

func hashPassword(password string, p PasswordParams, salt []byte) string {
	key := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, p.KeyLen)
	return fmt.Sprintf("$argon2id$v=%d$m=%d,t=%d,p=%d$%s$%s", argon2.Version, p.Memory, p.Time, p.Threads,
		phcB64.EncodeToString(salt), phcB64.EncodeToString(key))
}

// VerifyPassword reports whether password matches hash, a PHC string that
// HashPassword made (with these or other parameters), comparing in
// constant time. A malformed hash is an error, never a match.
func VerifyPassword(hash, password string) (bool, error) {
	p, salt, key, err := ParsePasswordHash(hash)
	if err != nil {
		return false, err
	}
	got := argon2.IDKey([]byte(password), salt, p.Time, p.Memory, p.Threads, uint32(len(key)))
	return subtle.ConstantTimeCompare(got, key) == 1, nil
}

// errPasswordHash is the error of a stored hash that is not one Gatehouse
// can verify.
var errPasswordHash = errors.New("malformed password hash: want $argon2id$v=19$m=…,t=…,p=…$salt$hash")

// ParsePasswordHash reads the parameters, salt and key of a PHC string of
// argon2id, version 19, within the bounds Gatehouse accepts.
func ParsePasswordHash(hash string) (p PasswordParams, salt, key []byte, err error) {
	parts := strings.Split(hash, "$")
	if len(parts) != 6 || parts[0] != "" || parts[1] != "argon2id" || parts[2] != fmt.Sprintf("v=%d", argon2.Version) {
		return p, nil, nil, errPasswordHash
	}
	var threads uint32
	var rest string
	if n, _ := fmt.Sscanf(parts[3], "m=%d,t=%d,p=%d%s", &p.Memory, &p.Time, &threads, &rest); n != 3 {
		return p, nil, nil, errPasswordHash
	}
	if fmt.Sprintf("m=%d,t=%d,p=%d", p.Memory, p.Time, threads) != parts[3] {
		return p, nil, nil, errPasswordHash // no leading zeros, signs or spaces
	}
	salt, err1 := phcB64.DecodeString(parts[4])
	key, err2 := phcB64.DecodeString(parts[5])
	if err1 != nil || err2 != nil {
		return p, nil, nil, errPasswordHash
	}
	p.Threads, p.SaltLen, p.KeyLen = uint8(threads), uint32(len(salt)), uint32(len(key))
	if p.Time < 1 || p.Time > maxPasswordTime || threads < 1 || threads > 255 ||
		p.Memory < 8*threads || p.Memory > maxPasswordMemory ||
		len(salt) < minPasswordSaltLen || len(salt) > maxPasswordSaltLen ||
		len(key) < minPasswordKeyLen || len(key) > maxPasswordKeyLen {
		return p, nil, nil, errPasswordHash
	}
	return p, salt, key, nil
}

// PasswordNeedsRehash reports whether a hash was made with other
// parameters than the defaults, so that a fresh hash of the password (when
// the member next sets it) would be stronger or cheaper.
func PasswordNeedsRehash(hash string) bool {
	p, _, _, err := ParsePasswordHash(hash)
	return err != nil || p != DefaultPasswordParams
}
