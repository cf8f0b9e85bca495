package httpapi

import "testing"

// BenchmarkParseChat: reading and checking the body of bench/run.sh's
// chat completion, which every metered request pays for.
func BenchmarkParseChat(b *testing.B) {
	raw := []byte(`{"model": "fake/echo", "messages": [{"role": "user", "content": "Hello, gateway! How are you today?"}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, _, err := parseChat(raw); err != nil {
			b.Fatal(err)
		}
	}
}
