package gatehouse

import (
	"encoding/base32"

	"github.com/google/uuid"
)

var tokenEncoding = base32.NewEncoding("abcdefghijklmnopqrstuvwxyz234567").WithPadding(base32.NoPadding)

// randomToken returns n random bytes from crypto/rand as lower-case base32.
func randomToken(n int) string { return tokenEncoding.EncodeToString(randomBytes(n)) }

// newTimeUUID returns a version 7 UUID: ordered by creation time, so that
// rows made in the same millisecond still sort in the order they were made
// by one process.
func newTimeUUID() string {
	id, err := uuid.NewV7()
	if err != nil {
		return uuid.NewString()
	}
	return id.String()
}
