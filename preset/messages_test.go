package preset_test

import (
	"bufio"
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"gatehouse/preset"

	"github.com/google/go-cmp/cmp"
)

func TestMessagesToChat(t *testing.T) {
	body := `{"model": "acme/chat", "max_tokens": 100, "stream": true,
		"system": [{"type": "text", "text": "Rules."}, {"type": "text", "text": "Doc.", "cache_control": {"type": "ephemeral"}}],
		"tools": [{"name": "weather", "input_schema": {"type": "object"}, "cache_control": {"type": "ephemeral"}}],
		"tool_choice": {"type": "none"},
		"output_config": {"effort": "low", "format": {"type": "json_schema", "schema": {"type": "object"}}},
		"messages": [
			{"role": "user", "content": "Weather?"},
			{"role": "assistant", "content": [
				{"type": "thinking", "thinking": "Call it.", "signature": "sig"},
				{"type": "redacted_thinking", "data": "enc"},
				{"type": "tool_use", "id": "t1", "name": "weather", "input": {}, "cache_control": {"type": "ephemeral"}}]},
			{"role": "user", "content": [
				{"type": "tool_result", "tool_use_id": "t1", "is_error": true, "cache_control": {"type": "ephemeral", "ttl": "5m"}}]}
		]}`
	got, err := preset.MessagesToChat([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	var chat, want map[string]any
	_ = json.Unmarshal(got, &chat)
	_ = json.Unmarshal([]byte(`{"model": "acme/chat", "max_tokens": 100, "stream": true,
		"tools": [{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}}, "cache_control": {"type": "ephemeral"}}],
		"tool_choice": "none",
		"reasoning": {"effort": "low"},
		"response_format": {"type": "json_schema", "json_schema": {"name": "output", "schema": {"type": "object"}}},
		"messages": [
			{"role": "system", "content": [{"type": "text", "text": "Rules."}, {"type": "text", "text": "Doc.", "cache_control": {"type": "ephemeral"}}]},
			{"role": "user", "content": "Weather?"},
			{"role": "assistant", "content": null,
				"tool_calls": [{"id": "t1", "type": "function", "function": {"name": "weather", "arguments": "{}"}, "cache_control": {"type": "ephemeral"}}],
				"reasoning_details": [{"type": "reasoning.text", "text": "Call it.", "signature": "sig", "format": "anthropic-claude-v1"},
					{"type": "reasoning.encrypted", "data": "enc", "format": "anthropic-claude-v1"}]},
			{"role": "tool", "tool_call_id": "t1", "content": [{"type": "text", "text": "", "cache_control": {"type": "ephemeral", "ttl": "5m"}}]}
		]}`), &want)
	if d := cmp.Diff(want, chat); d != "" {
		t.Errorf("chat request (-want +got):\n%s", d)
	}
}

func TestMessagesToChatRefusals(t *testing.T) {
	for _, c := range []struct{ body, want string }{
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}, {"type": "tool_result", "tool_use_id": "t"}]}]}`,
			"messages[0].content[1]: tool_result blocks must come first"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}}]}]}`,
			"messages[0].content[0].type: tool_use blocks belong in assistant messages"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t", "content": [{"type": "image"}]}]}]}`,
			`messages[0].content[0].content[0].type: "image" blocks are not accepted`},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": "x"}]}]}`,
			"messages[0].content[0].input: must be an object"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "persistent"}}]}]}`,
			"messages[0].content[0].cache_control.type: must be ephemeral"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "n", "input_schema": {}, "cache_control": {"type": "ephemeral", "ttl": "2h"}}]}`,
			"tools[0].cache_control.ttl: must be 5m or 1h"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "tool_use", "id": "t", "name": "n", "input": {}, "cache_control": {"type": "ephemeral", "x": 1}}]}]}`,
			"messages[1].content[0].cache_control.x: unknown field"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s", "cache_control": {"type": "ephemeral"}}]}]}`,
			"messages[1].content[0].cache_control: is not accepted on thinking blocks: Anthropic's API refuses it there; thinking blocks cannot carry cache_control, and are cached as part of the prompt before a later block's cache_control"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}, {"role": "assistant", "content": [{"type": "redacted_thinking", "data": "d", "cache_control": {"type": "ephemeral"}}]}]}`,
			"messages[1].content[0].cache_control: is not accepted on redacted_thinking blocks"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": [{"type": "text", "text": "x", "citations": [{}]}]}]}`,
			"messages[0].content[0].citations: is not supported"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": [{"name": "n", "input_schema": {}, "defer_loading": true}]}`,
			"tools[0].defer_loading: needs Anthropic's tool search tool"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user"}]}`, "messages[0].content: is required"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "stream": "yes"}`, "stream: must be a boolean"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "tools": {}}`, "tools: must be an array"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "mcp_servers": []}`, "mcp_servers: is not supported"},
		{`{"model": "m", "max_tokens": 5.5, "messages": [{"role": "user", "content": "x"}]}`, "max_tokens: must be an integer"},
		{`{"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "x"}], "metadata": {"user_id": " "}}`, "metadata.user_id: must not be empty"},
	} {
		_, err := preset.MessagesToChat([]byte(c.body))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want %q", c.body, err, c.want)
		}
	}
}

func TestChatToMessage(t *testing.T) {
	var obj map[string]json.RawMessage
	_ = json.Unmarshal([]byte(`{"id": "chatcmpl-1", "object": "chat.completion", "choices": [{"index": 0, "finish_reason": "tool_calls",
		"message": {"role": "assistant", "content": "Calling.", "reasoning": "Hmm.",
			"reasoning_details": [{"type": "reasoning.text", "text": "Hmm.", "signature": "sig"}, {"type": "reasoning.encrypted", "data": "enc"}],
			"tool_calls": [{"id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\":1}"}},
				{"id": "c2", "type": "function", "function": {"name": "b", "arguments": "not json"}}]}}],
		"usage": {"prompt_tokens": 100, "completion_tokens": 9}}`), &obj)
	preset.ChatToMessage(obj, "msg_gen-1", "acme/chat", preset.MessagesUsage{Prompt: 100, Completion: 9, CacheRead: 60, CacheWrite: 30, Cost: json.RawMessage("0.5")})
	var got, want any
	_ = json.Unmarshal(mustMarshal(t, obj), &got)
	_ = json.Unmarshal([]byte(`{"id": "msg_gen-1", "type": "message", "role": "assistant", "model": "acme/chat",
		"content": [{"type": "thinking", "thinking": "Hmm.", "signature": "sig"}, {"type": "redacted_thinking", "data": "enc"},
			{"type": "text", "text": "Calling."},
			{"type": "tool_use", "id": "c1", "name": "a", "input": {"x": 1}}, {"type": "tool_use", "id": "c2", "name": "b", "input": {}}],
		"stop_reason": "tool_use", "stop_sequence": null,
		"usage": {"input_tokens": 10, "output_tokens": 9, "cache_read_input_tokens": 60, "cache_creation_input_tokens": 30, "cost": 0.5}}`), &want)
	if d := cmp.Diff(want, got); d != "" {
		t.Errorf("message (-want +got):\n%s", d)
	}
	for finish, want := range map[string]string{"stop": "end_turn", "length": "max_tokens", "tool_calls": "tool_use",
		"content_filter": "refusal", "": "end_turn"} {
		if got := preset.StopReason(finish); got != want {
			t.Errorf("StopReason(%q) = %q, want %q", finish, got, want)
		}
	}
}

// TestMessagesStream: reasoning with its signature, encrypted reasoning,
// text, and two tool calls streamed as OpenAI streams parallel calls,
// become Anthropic's blocks in order, each opened, filled and closed.
func TestMessagesStream(t *testing.T) {
	s := preset.NewMessagesStream("msg_gen-1", "acme/chat")
	out := s.Start()
	for _, chunk := range []string{
		`{"choices": [{"delta": {"role": "assistant", "reasoning": "Thin"}}]}`,
		`{"choices": [{"delta": {"reasoning": "king.", "reasoning_details": [{"type": "reasoning.text", "text": "king."}]}}]}`,
		`{"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.text", "text": "", "signature": "sig"}]}}]}`,
		`{"choices": [{"delta": {"reasoning_details": [{"type": "reasoning.encrypted", "data": "enc"}]}}]}`,
		`{"choices": [{"delta": {"content": "Hi"}}]}`,
		`{"choices": [{"delta": {"tool_calls": [{"index": 0, "id": "c1", "type": "function", "function": {"name": "a", "arguments": "{\"x\""}}]}}]}`,
		`{"choices": [{"delta": {"tool_calls": [{"index": 1, "id": "c2", "type": "function", "function": {"name": "b", "arguments": "{}"}}]}}]}`,
		`{"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": ":1}"}}]}, "finish_reason": "length"}]}`,
		`{"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 7}}`,
	} {
		var obj map[string]json.RawMessage
		_ = json.Unmarshal([]byte(chunk), &obj)
		out = append(out, s.Chunk(obj)...)
	}
	out = append(out, s.End(preset.MessagesUsage{Prompt: 5, Completion: 7, Cost: json.RawMessage("0.01")})...)
	var got []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if data, ok := strings.CutPrefix(sc.Text(), "data: "); ok {
			got = append(got, data)
		}
	}
	want := []string{
		`{"message":{"content":[],"id":"msg_gen-1","model":"acme/chat","role":"assistant","stop_reason":null,"stop_sequence":null,"type":"message","usage":{"input_tokens":0,"output_tokens":0}},"type":"message_start"}`,
		`{"type":"ping"}`,
		`{"content_block":{"signature":"","thinking":"","type":"thinking"},"index":0,"type":"content_block_start"}`,
		`{"delta":{"thinking":"Thin","type":"thinking_delta"},"index":0,"type":"content_block_delta"}`,
		`{"delta":{"thinking":"king.","type":"thinking_delta"},"index":0,"type":"content_block_delta"}`,
		`{"delta":{"signature":"sig","type":"signature_delta"},"index":0,"type":"content_block_delta"}`,
		`{"index":0,"type":"content_block_stop"}`,
		`{"content_block":{"data":"enc","type":"redacted_thinking"},"index":1,"type":"content_block_start"}`,
		`{"index":1,"type":"content_block_stop"}`,
		`{"content_block":{"text":"","type":"text"},"index":2,"type":"content_block_start"}`,
		`{"delta":{"text":"Hi","type":"text_delta"},"index":2,"type":"content_block_delta"}`,
		`{"index":2,"type":"content_block_stop"}`,
		`{"content_block":{"id":"c1","input":{},"name":"a","type":"tool_use"},"index":3,"type":"content_block_start"}`,
		`{"delta":{"partial_json":"{\"x\"","type":"input_json_delta"},"index":3,"type":"content_block_delta"}`,
		`{"index":3,"type":"content_block_stop"}`,
		`{"content_block":{"id":"c2","input":{},"name":"b","type":"tool_use"},"index":4,"type":"content_block_start"}`,
		`{"delta":{"partial_json":"{}","type":"input_json_delta"},"index":4,"type":"content_block_delta"}`,
		`{"delta":{"partial_json":":1}","type":"input_json_delta"},"index":3,"type":"content_block_delta"}`,
		`{"index":4,"type":"content_block_stop"}`,
		`{"delta":{"stop_reason":"max_tokens","stop_sequence":null},"type":"message_delta","usage":{"input_tokens":5,"output_tokens":7,"cache_read_input_tokens":0,"cache_creation_input_tokens":0,"cost":0.01}}`,
		`{"type":"message_stop"}`,
	}
	parse := func(list []string) []any {
		out := make([]any, len(list))
		for i, s := range list {
			if err := json.Unmarshal([]byte(s), &out[i]); err != nil {
				t.Fatalf("event %d is not JSON: %s", i, s)
			}
		}
		return out
	}
	if d := cmp.Diff(parse(want), parse(got)); d != "" {
		t.Errorf("events (-want +got):\n%s", d)
	}
}
