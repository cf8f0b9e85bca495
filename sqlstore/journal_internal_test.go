package sqlstore

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// TestJournalEntryEncoding: an entry written by appendJSON reads back as
// the same entry as encoding/json's encoding of it does, every field set,
// strings that need escaping included; and with every optional field
// unset.
func TestJournalEntryEncoding(t *testing.T) {
	str := func(s string) *string { return &s }
	odd := "quote \" backslash \\ newline \n tab \t <script>&amp; \u2028 é 日本 \x00 invalid \xff"
	full := journalEntry{
		Reservation: "res-" + odd, Key: "key", Chain: []string{"parent", "grand" + odd}, BYOK: true,
		Budgets: [][2]string{{"g1", "key:abc"}, {"g2" + odd, "member:u"}},
		Generation: &gatehouse.Generation{
			ID: "gen-1", OrganizationID: "org", WorkspaceID: "ws", KeyHash: "key", Model: "acme/chat" + odd, Provider: "acme",
			UpstreamID: str("up" + odd), PromptTokens: 12, CompletionTokens: -3, CacheReadTokens: 5, CacheWriteTokens: 2, Cost: 123456789, BYOK: true, Streamed: true,
			FinishReason: str("stop"), Status: gatehouse.GenerationPartial, LatencyMS: 5, GenerationMS: 4,
			SessionID: str(""), ExternalUser: str("user" + odd), HTTPReferer: str("https://app.example"), AppTitle: str("App"),
			UserAgent: str("ua/1"), CreatedAt: time.Date(2026, 11, 28, 16, 0, 0, 123456789, time.UTC),
			ProviderResponses: []gatehouse.ProviderResponse{
				{Provider: "acme", Model: "acme/chat" + odd, Status: 503, LatencyMS: 12},
				{Provider: "other", Model: "other/chat", Status: 200, LatencyMS: 7, UpstreamID: "up" + odd, BYOK: true}},
			Content: &gatehouse.GenerationContent{
				Messages:   json.RawMessage(`[{"role":"user","content":"hi \u003c"}]`),
				Completion: str("answer" + odd), Reasoning: str(""),
				Error: &gatehouse.GenerationError{Message: "broke" + odd, Provider: str("acme")},
			},
		},
	}
	// A field Generation gains must be set here, and so be encoded.
	v := reflect.ValueOf(*full.Generation)
	for i := range v.NumField() {
		if name := v.Type().Field(i).Name; name != "AppID" && v.Field(i).IsZero() {
			t.Errorf("Generation.%s is not set in the test: set it, and make sure appendJSON writes it", name)
		}
	}
	bare := journalEntry{Reservation: "r", Key: "k", Generation: &gatehouse.Generation{ID: "gen-2"}}
	for name, e := range map[string]journalEntry{"every field": full, "no optional field": bare} {
		var got, want journalEntry
		if err := json.Unmarshal(e.appendJSON(nil), &got); err != nil {
			t.Fatalf("%s: the encoding does not read back: %v\n%s", name, err, e.appendJSON(nil))
		}
		std, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(std, &want); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("%s: read back (-encoding/json +appendJSON):\n%s", name, diff)
		}
	}
}
