package preset

import (
	"encoding/json"
	"strconv"

	"gatehouse/internal/jsonobj"
)

// Chat Completions answers told as Anthropic's Messages API tells them: a
// whole answer as a message (ChatToMessage), a stream of chunks as
// Anthropic's event stream (MessagesStream).

// MessagesUsage is the usage of a Messages answer as metered: Anthropic's
// input_tokens counts the prompt tokens neither read from nor written to
// the cache; Cost is the charge (a JSON number, in USD), which Gatehouse
// adds as OpenRouter adds it to chat answers.
type MessagesUsage struct {
	Prompt, Completion, CacheRead, CacheWrite int64
	Cost                                      json.RawMessage
}

func (u MessagesUsage) appendJSON(b []byte) []byte {
	b = strconv.AppendInt(append(b, `{"input_tokens":`...), max(u.Prompt-u.CacheRead-u.CacheWrite, 0), 10)
	b = strconv.AppendInt(append(b, `,"output_tokens":`...), u.Completion, 10)
	b = strconv.AppendInt(append(b, `,"cache_read_input_tokens":`...), u.CacheRead, 10)
	b = strconv.AppendInt(append(b, `,"cache_creation_input_tokens":`...), u.CacheWrite, 10)
	if len(u.Cost) > 0 {
		b = append(append(b, `,"cost":`...), u.Cost...)
	}
	return append(b, '}')
}

// MessageID is the id of a Messages answer: Anthropic's prefix before the
// generation's id (GET /generation takes either).
func MessageID(generationID string) string { return "msg_" + generationID }

// chatMessage is what a chat answer's message (or a chunk's delta) says.
type chatMessage struct {
	Content          *string           `json:"content"`
	Reasoning        *string           `json:"reasoning"`
	ReasoningContent *string           `json:"reasoning_content"`
	ReasoningDetails []reasoningDetail `json:"reasoning_details"`
	ToolCalls        []chatToolCall    `json:"tool_calls"`
}

type reasoningDetail struct {
	Type      string `json:"type"`
	Text      string `json:"text"`
	Signature string `json:"signature"`
	Data      string `json:"data"`
}

type chatToolCall struct {
	Index    int    `json:"index"`
	ID       string `json:"id"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// thinking returns the reasoning text of a message or delta: its
// reasoning (under either name providers use), else that of its
// reasoning.text details; and the signature and encrypted reasoning of
// its details.
func (m *chatMessage) thinking() (text, signature string, encrypted []string) {
	for _, s := range []*string{m.Reasoning, m.ReasoningContent} {
		if s != nil {
			text += *s
		}
	}
	fromDetails := text == ""
	for _, d := range m.ReasoningDetails {
		switch d.Type {
		case "reasoning.text":
			if fromDetails {
				text += d.Text
			}
			signature += d.Signature
		case "reasoning.encrypted":
			encrypted = append(encrypted, d.Data)
		}
	}
	return text, signature, encrypted
}

// chatChoice is the first choice of an answer or chunk.
type chatChoice struct {
	FinishReason *string      `json:"finish_reason"`
	Message      *chatMessage `json:"message"`
	Delta        *chatMessage `json:"delta"`
}

func firstChoice(obj map[string]json.RawMessage) chatChoice {
	var choices []chatChoice
	_ = json.Unmarshal(obj["choices"], &choices)
	if len(choices) == 0 {
		return chatChoice{}
	}
	return choices[0]
}

// StopReason is Anthropic's stop reason for a chat finish reason.
func StopReason(finish string) string {
	switch finish {
	case "length":
		return "max_tokens"
	case "tool_calls", "function_call":
		return "tool_use"
	case "content_filter":
		return "refusal"
	}
	return "end_turn"
}

// toolInput is a tool call's arguments as a tool_use block's input: the
// object they hold, or, when they hold none (a provider's malformed call),
// an empty object.
func toolInput(arguments string) json.RawMessage {
	var obj map[string]json.RawMessage
	if json.Unmarshal([]byte(arguments), &obj) != nil || obj == nil {
		return json.RawMessage("{}")
	}
	return json.RawMessage(arguments)
}

// ChatToMessage rewrites a whole chat completion (obj) as an Anthropic
// message with the given id, model and usage.
func ChatToMessage(obj map[string]json.RawMessage, id, model string, u MessagesUsage) {
	choice := firstChoice(obj)
	content := []any{}
	if m := choice.Message; m != nil {
		text, signature, encrypted := m.thinking()
		if text != "" || signature != "" {
			content = append(content, map[string]string{"type": "thinking", "thinking": text, "signature": signature})
		}
		for _, data := range encrypted {
			content = append(content, map[string]string{"type": "redacted_thinking", "data": data})
		}
		if m.Content != nil && *m.Content != "" {
			content = append(content, map[string]string{"type": "text", "text": *m.Content})
		}
		for _, c := range m.ToolCalls {
			content = append(content, map[string]any{"type": "tool_use", "id": c.ID, "name": c.Function.Name, "input": toolInput(c.Function.Arguments)})
		}
	}
	finish := ""
	if choice.FinishReason != nil {
		finish = *choice.FinishReason
	}
	clear(obj)
	obj["id"], obj["type"], obj["role"] = mustJSON(id), json.RawMessage(`"message"`), json.RawMessage(`"assistant"`)
	obj["model"], obj["content"] = mustJSON(model), mustJSON(content)
	obj["stop_reason"], obj["stop_sequence"] = mustJSON(StopReason(finish)), json.RawMessage("null")
	obj["usage"] = u.appendJSON(nil)
}

// MessagesStream translates a stream of chat completion chunks into
// Anthropic's event stream: message_start and a ping first (Start), then
// for each chunk the content_block_start, _delta and _stop events of its
// text, thinking and tool calls (Chunk), then message_delta, with the stop
// reason and the usage as metered, and message_stop (End), or an error
// event when the stream broke off (Fail).
type MessagesStream struct {
	id, model string
	open      string      // the kind of the open block, "" when none
	index     int         // the open block's index
	next      int         // the next block's index
	tools     map[int]int // a chat tool call's index → its block's index
	stop      string
}

// NewMessagesStream starts the translation of a stream whose message has
// the id and model given.
func NewMessagesStream(id, model string) *MessagesStream {
	return &MessagesStream{id: id, model: model, tools: map[int]int{}}
}

// event appends one server-sent event.
func event(b []byte, name string, data any) []byte {
	raw, _ := json.Marshal(data)
	b = append(append(append(b, "event: "...), name...), "\ndata: "...)
	return append(append(b, raw...), "\n\n"...)
}

// Start returns the stream's first events: message_start (its usage
// counts 0: they come in message_delta, once metered) and a ping.
func (s *MessagesStream) Start() []byte {
	msg := map[string]any{"id": s.id, "type": "message", "role": "assistant", "model": s.model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": 0, "output_tokens": 0}}
	return Ping(event(nil, "message_start", map[string]any{"type": "message_start", "message": msg}))
}

// Ping appends a ping event: what a keep-alive comment of the provider's
// stream becomes.
func Ping(b []byte) []byte { return event(b, "ping", map[string]string{"type": "ping"}) }

// begin closes the open block and opens one of the kind given.
func (s *MessagesStream) begin(b []byte, kind string, block any) []byte {
	b = s.closeBlock(b)
	s.open, s.index = kind, s.next
	s.next++
	return event(b, "content_block_start", map[string]any{"type": "content_block_start", "index": s.index, "content_block": block})
}

func (s *MessagesStream) closeBlock(b []byte) []byte {
	if s.open == "" {
		return b
	}
	s.open = ""
	return event(b, "content_block_stop", map[string]any{"type": "content_block_stop", "index": s.index})
}

// delta appends a content_block_delta event whose delta is of the kind
// given, its text under the name given: written by hand, as a stream has
// one for each of its chunks.
func (s *MessagesStream) delta(b []byte, index int, kind, name, text string) []byte {
	b = append(b, "event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":"...)
	b = strconv.AppendInt(b, int64(index), 10)
	b = append(append(append(b, `,"delta":{"type":"`...), kind...), `","`...)
	b = jsonobj.AppendString(append(append(b, name...), `":`...), text)
	return append(b, "}}\n\n"...)
}

// Chunk returns the events of one chat completion chunk.
func (s *MessagesStream) Chunk(obj map[string]json.RawMessage) []byte {
	choice := firstChoice(obj)
	var b []byte
	if d := choice.Delta; d != nil {
		text, signature, encrypted := d.thinking()
		if text != "" || signature != "" {
			if s.open != "thinking" {
				b = s.begin(b, "thinking", map[string]string{"type": "thinking", "thinking": "", "signature": ""})
			}
			if text != "" {
				b = s.delta(b, s.index, "thinking_delta", "thinking", text)
			}
			if signature != "" {
				b = s.delta(b, s.index, "signature_delta", "signature", signature)
			}
		}
		for _, data := range encrypted {
			b = s.begin(b, "redacted_thinking", map[string]string{"type": "redacted_thinking", "data": data})
		}
		if d.Content != nil && *d.Content != "" {
			if s.open != "text" {
				b = s.begin(b, "text", map[string]string{"type": "text", "text": ""})
			}
			b = s.delta(b, s.index, "text_delta", "text", *d.Content)
		}
		for _, c := range d.ToolCalls {
			b = s.toolCall(b, c)
		}
	}
	if choice.FinishReason != nil && *choice.FinishReason != "" {
		s.stop = StopReason(*choice.FinishReason)
	}
	return b
}

// toolCall returns the events of a chunk's piece of a tool call: a new
// call opens a tool_use block, its arguments are input_json_delta events.
// Providers stream parallel calls one after the other; a piece of an
// earlier call that comes after a later one began (no provider seen does
// this) is a delta of the earlier call's block, which the SDKs add to it.
func (s *MessagesStream) toolCall(b []byte, c chatToolCall) []byte {
	index, seen := s.tools[c.Index]
	if !seen {
		id := c.ID
		if id == "" {
			id = "toolu_" + strconv.Itoa(s.next)
		}
		b = s.begin(b, "tool_use", map[string]any{"type": "tool_use", "id": id, "name": c.Function.Name, "input": map[string]any{}})
		index, s.tools[c.Index] = s.index, s.index
	}
	if c.Function.Arguments != "" {
		b = s.delta(b, index, "input_json_delta", "partial_json", c.Function.Arguments)
	}
	return b
}

// End returns the stream's last events: the open block's stop,
// message_delta with the stop reason and the usage, and message_stop.
func (s *MessagesStream) End(u MessagesUsage) []byte {
	b := s.closeBlock(nil)
	stop := s.stop
	if stop == "" {
		stop = "end_turn"
	}
	b = event(b, "message_delta", map[string]any{"type": "message_delta",
		"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": json.RawMessage(u.appendJSON(nil))})
	return event(b, "message_stop", map[string]string{"type": "message_stop"})
}

// Fail returns the error event of a stream that broke off: Anthropic's
// api_error, with the message given.
func (s *MessagesStream) Fail(message string) []byte {
	return event(nil, "error", map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": message}})
}
