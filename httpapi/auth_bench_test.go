package httpapi

import (
	"testing"

	"gatehouse"
)

// BenchmarkBearerTokenHash is what every authenticated request does before
// the key lookup: parse the Authorization header and hash the token.
func BenchmarkBearerTokenHash(b *testing.B) {
	header := "Bearer " + gatehouse.NewKeySecret(false)
	b.ReportAllocs()
	for b.Loop() {
		token, err := bearerToken(header)
		if err != nil {
			b.Fatal(err)
		}
		if len(gatehouse.HashKey(token)) != 64 {
			b.Fatal("bad hash")
		}
	}
}
