package preset_test

import (
	"encoding/json"
	"testing"

	"gatehouse/preset"
)

// BenchmarkMessagesToChat: translating a Messages request with a system
// prompt, a tool and a turn of tool use into a chat completion, which every
// call of POST /messages pays for on top of the chat path.
func BenchmarkMessagesToChat(b *testing.B) {
	raw := []byte(`{"model": "fake/echo", "max_tokens": 256, "system": "Be brief.",
		"tools": [{"name": "weather", "description": "The weather", "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}}}],
		"messages": [{"role": "user", "content": "Weather in Paris?"},
			{"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "weather", "input": {"city": "Paris"}}]},
			{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "sunny"}]}]}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := preset.MessagesToChat(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMessagesAnswer: a whole chat answer told as a message, and a
// stream of ten text chunks told as Anthropic's events.
func BenchmarkMessagesAnswer(b *testing.B) {
	whole := []byte(`{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "stop",
		"message": {"role": "assistant", "content": "You said: Weather in Paris?"}}], "usage": {"prompt_tokens": 9, "completion_tokens": 5}}`)
	chunk := []byte(`{"id": "chatcmpl-1", "object": "chat.completion.chunk", "choices": [{"index": 0, "delta": {"content": " word"}, "finish_reason": null}]}`)
	usage := preset.MessagesUsage{Prompt: 9, Completion: 5, Cost: json.RawMessage("0.000019")}
	b.ReportAllocs()
	for b.Loop() {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal(whole, &obj)
		preset.ChatToMessage(obj, "msg_gen-1", "fake/echo", usage)
		s := preset.NewMessagesStream("msg_gen-1", "fake/echo")
		out := s.Start()
		for range 10 {
			var c map[string]json.RawMessage
			_ = json.Unmarshal(chunk, &c)
			out = append(out, s.Chunk(c)...)
		}
		_ = append(out, s.End(usage)...)
	}
}
