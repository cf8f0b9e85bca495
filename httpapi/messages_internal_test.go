package httpapi

import (
	"net/http/httptest"
	"strings"
	"testing"

	"gatehouse/preset"
)

// TestMessagesWriterLines: the chat stream is translated line by line,
// whatever pieces it is written in; comments become pings, [DONE] and
// blank lines nothing.
func TestMessagesWriterLines(t *testing.T) {
	rec := httptest.NewRecorder()
	sw := &streamWriter{w: rec, held: func() error { return nil }}
	m := &messagesWriter{sw: sw, stream: preset.NewMessagesStream("msg_gen-1", "acme/chat")}
	m.Start()
	stream := ": keep-alive\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"Hel\"}}]}\r\n\ndata: {\"choices\":[{\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n"
	for i := 0; i < len(stream); i += 7 {
		if _, err := m.Write([]byte(stream[i:min(i+7, len(stream))])); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	for _, line := range strings.Split(rec.Body.String(), "\n") {
		if name, ok := strings.CutPrefix(line, "event: "); ok {
			names = append(names, name)
		}
	}
	want := "message_start ping ping content_block_start content_block_delta content_block_delta"
	if got := strings.Join(names, " "); got != want || !strings.Contains(rec.Body.String(), `"text":"lo"`) || len(m.line) != 0 {
		t.Errorf("events %s, want %s\n%s", got, want, rec.Body.String())
	}
}
