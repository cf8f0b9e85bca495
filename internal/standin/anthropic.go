package standin

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// Anthropic is a stand-in for Anthropic's Messages API (POST /v1/messages,
// https://docs.anthropic.com/en/api/messages), strict as the API is:
//   - the x-api-key header is required (401 authentication_error), and must
//     be Key when Key is set; anthropic-version is required (400);
//   - the body is checked field by field: an unknown field is "Extra inputs
//     are not permitted", a wrong type "Input should be a valid ...", a
//     missing one "Field required", as the API words them, at their path;
//     and the API's rules beyond types (a first message of the user, no
//     empty text block, at most 4 cache_control blocks, a thinking budget
//     of 1024 tokens or more and below max_tokens, tool results that
//     answer the previous message's tool calls);
//   - errors are {"type": "error", "error": {"type", "message"}}.
//
// It answers "You said: " and the last user text; offered tools (and not
// tool_choice none), a turn that does not end with a tool result is
// answered with a tool_use of the first tool (or the one tool_choice
// names), its string properties set to the user's text. With thinking
// enabled, a thinking block (signed) comes first. Tokens are words;
// max_tokens and stop_sequences cut the answer as the API does. Prompt
// caching: the prompt (tools, system, messages, in that order) up to a
// block or tool with cache_control is written to the cache
// (cache_creation_input_tokens) the first time, and read from it
// (cache_read_input_tokens) after; input_tokens are the rest. The model
// "overloaded" answers 529 overloaded_error, "rate-limited" 429
// rate_limit_error, and "fails-midstream" streams an error event after its
// first delta.
type Anthropic struct {
	Key string
	log
	mu    sync.Mutex
	cache map[[32]byte]bool
}

var (
	anthropicCache = object(map[string]schema{"type": enum("ephemeral"), "ttl": enum("5m", "1h")}, "type")
	anthropicText  = object(map[string]schema{"type": str(), "text": str(), "cache_control": anthropicCache, "citations": anyValue()}, "type", "text")
	anthropicImage = object(map[string]schema{"type": str(), "cache_control": anthropicCache, "source": tagged(map[string]schema{
		"base64": object(map[string]schema{"type": str(), "media_type": enum("image/jpeg", "image/png", "image/gif", "image/webp"), "data": str()}, "type", "media_type", "data"),
		"url":    object(map[string]schema{"type": str(), "url": str()}, "type", "url"),
	})}, "type", "source")
	anthropicBlock = tagged(map[string]schema{
		"text":  anthropicText,
		"image": anthropicImage,
		"tool_use": object(map[string]schema{"type": str(), "id": str(), "name": str(), "input": anyObject(),
			"cache_control": anthropicCache}, "type", "id", "name", "input"),
		"tool_result": object(map[string]schema{"type": str(), "tool_use_id": str(), "is_error": boolean(), "cache_control": anthropicCache,
			"content": either(str(), array(tagged(map[string]schema{"text": anthropicText, "image": anthropicImage})))}, "type", "tool_use_id"),
		"thinking":          object(map[string]schema{"type": str(), "thinking": str(), "signature": str()}, "type", "thinking", "signature"),
		"redacted_thinking": object(map[string]schema{"type": str(), "data": str()}, "type", "data"),
	})
	anthropicChoiceFields = map[string]schema{"type": str(), "disable_parallel_tool_use": boolean()}
	anthropicRequest      = object(map[string]schema{
		"model":          str(),
		"messages":       array(object(map[string]schema{"role": enum("user", "assistant"), "content": either(str(), array(anthropicBlock))}, "role", "content")),
		"max_tokens":     integer(1, 1<<31),
		"system":         either(str(), array(anthropicText)),
		"metadata":       object(map[string]schema{"user_id": str()}),
		"stop_sequences": array(str()),
		"stream":         boolean(),
		"temperature":    number(0, 1),
		"top_p":          number(0, 1),
		"top_k":          integer(0, 1<<31),
		"service_tier":   enum("auto", "standard_only"),
		"tools": array(object(map[string]schema{"name": str(), "description": str(), "input_schema": anyObject(),
			"cache_control": anthropicCache}, "name", "input_schema")),
		"tool_choice": tagged(map[string]schema{
			"auto": object(anthropicChoiceFields, "type"), "any": object(anthropicChoiceFields, "type"),
			"tool": object(map[string]schema{"type": str(), "name": str(), "disable_parallel_tool_use": boolean()}, "type", "name"),
			"none": object(map[string]schema{"type": str()}, "type"),
		}),
		"thinking": tagged(map[string]schema{
			"enabled":  object(map[string]schema{"type": str(), "budget_tokens": integer(1024, 1<<31)}, "type", "budget_tokens"),
			"disabled": object(map[string]schema{"type": str()}, "type"),
		}),
	}, "model", "messages", "max_tokens")
)

// anthropicMessage is a message of a request, read once its shape is
// checked.
type anthropicMessage struct {
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
	blocks  []aBlock
}

type aBlock struct {
	Type         string          `json:"type"`
	Text         string          `json:"text"`
	ID           string          `json:"id"`
	Name         string          `json:"name"`
	Input        json.RawMessage `json:"input"`
	ToolUseID    string          `json:"tool_use_id"`
	Content      json.RawMessage `json:"content"`
	Thinking     string          `json:"thinking"`
	CacheControl json.RawMessage `json:"cache_control"`
}

type anthropicReq struct {
	Model         string             `json:"model"`
	Messages      []anthropicMessage `json:"messages"`
	MaxTokens     int64              `json:"max_tokens"`
	System        json.RawMessage    `json:"system"`
	StopSequences []string           `json:"stop_sequences"`
	Stream        bool               `json:"stream"`
	Temperature   *float64           `json:"temperature"`
	TopK          *int64             `json:"top_k"`
	Tools         []struct {
		Name         string          `json:"name"`
		Description  string          `json:"description"`
		InputSchema  json.RawMessage `json:"input_schema"`
		CacheControl json.RawMessage `json:"cache_control"`
	} `json:"tools"`
	ToolChoice *struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tool_choice"`
	Thinking *struct {
		Type         string `json:"type"`
		BudgetTokens int64  `json:"budget_tokens"`
	} `json:"thinking"`
}

// blocksOf reads content: a string (one text block) or blocks.
func blocksOf(content json.RawMessage) []aBlock {
	var s string
	if json.Unmarshal(content, &s) == nil {
		return []aBlock{{Type: "text", Text: s}}
	}
	var bs []aBlock
	_ = json.Unmarshal(content, &bs)
	return bs
}

func anthropicError(w http.ResponseWriter, status int, typ, message string) {
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": message},
		"request_id": "req_" + randomHex(12)})
}

// anthropicFault words a fault as the API does.
func anthropicFault(f *fault) string {
	p := strings.Join(f.path, ".")
	join := func(name string) string {
		if p == "" {
			return name
		}
		return p + "." + name
	}
	switch f.kind {
	case "unknown":
		return join(f.name) + ": Extra inputs are not permitted"
	case "missing":
		return join(f.name) + ": Field required"
	case "type":
		want := map[string]string{"string": "a valid string", "integer": "a valid integer", "number": "a valid number",
			"boolean": "a valid boolean", "array": "a valid list", "object": "a valid dictionary"}[f.want]
		return p + ": Input should be " + want
	}
	return p + ": " + f.want
}

func (a *Anthropic) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/v1/messages") {
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not Found")
		return
	}
	key := r.Header.Get("x-api-key")
	switch {
	case key == "":
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "x-api-key header is required")
		return
	case a.Key != "" && key != a.Key:
		anthropicError(w, http.StatusUnauthorized, "authentication_error", "invalid x-api-key")
		return
	case r.Header.Get("anthropic-version") == "":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: header is required")
		return
	case r.Header.Get("anthropic-version") != "2023-06-01" && r.Header.Get("anthropic-version") != "2023-01-01":
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "anthropic-version: invalid version")
		return
	}
	raw, err := io.ReadAll(io.LimitReader(r.Body, 32<<20))
	if err != nil || !json.Valid(raw) {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", "There was an error parsing the body of your request: it is not valid JSON")
		return
	}
	if f := anthropicRequest(nil, raw); f != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", anthropicFault(f))
		return
	}
	var req anthropicReq
	_ = json.Unmarshal(raw, &req)
	if msg := a.check(&req); msg != "" {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", msg)
		return
	}
	switch req.Model {
	case "overloaded":
		anthropicError(w, 529, "overloaded_error", "Overloaded")
		return
	case "rate-limited":
		w.Header().Set("retry-after", "1")
		anthropicError(w, http.StatusTooManyRequests, "rate_limit_error", "This request would exceed the rate limit for your organization of 50 input tokens per minute.")
		return
	}
	ans := a.answer(&req)
	a.add(Usage{"input_tokens": ans.input, "cache_creation_input_tokens": ans.write, "cache_read_input_tokens": ans.read, "output_tokens": ans.output})
	if req.Stream {
		a.stream(w, &req, ans)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"id": ans.id, "type": "message", "role": "assistant", "model": req.Model,
		"content": ans.blocks, "stop_reason": ans.stop, "stop_sequence": ans.stopSequence, "usage": ans.usage(ans.output)})
}

// check applies the API's rules beyond the request's shape; it returns
// what the API would say of a breach.
func (a *Anthropic) check(req *anthropicReq) string {
	cached := 0
	for _, t := range req.Tools {
		if len(t.CacheControl) > 0 && string(t.CacheControl) != "null" {
			cached++
		}
	}
	if len(req.System) > 0 {
		for _, b := range blocksOf(req.System) {
			if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
				cached++
			}
		}
	}
	var lastToolUses map[string]bool
	for i := range req.Messages {
		m := &req.Messages[i]
		m.blocks = blocksOf(m.Content)
		if i == 0 && m.Role != "user" {
			return `messages: first message must use the "user" role`
		}
		uses := map[string]bool{}
		for j, b := range m.blocks {
			if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
				cached++
			}
			switch {
			case b.Type == "text" && b.Text == "":
				return "messages: text content blocks must be non-empty"
			case b.Type == "tool_use" && m.Role != "assistant", (b.Type == "thinking" || b.Type == "redacted_thinking") && m.Role != "assistant":
				return fmt.Sprintf("messages.%d.content.%d: `%s` blocks can only be in `assistant` messages", i, j, b.Type)
			case b.Type == "tool_result" && m.Role != "user":
				return fmt.Sprintf("messages.%d.content.%d: `tool_result` blocks can only be in `user` messages", i, j)
			case b.Type == "tool_result" && !lastToolUses[b.ToolUseID]:
				return fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.", i, j, b.ToolUseID)
			case b.Type == "tool_use":
				uses[b.ID] = true
			}
		}
		lastToolUses = uses
	}
	if cached > 4 {
		return fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", cached)
	}
	if t := req.Thinking; t != nil && t.Type == "enabled" {
		switch {
		case t.BudgetTokens >= req.MaxTokens:
			return "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#max-tokens-and-context-window-size"
		case req.Temperature != nil && *req.Temperature != 1:
			return "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at https://docs.claude.com/en/docs/build-with-claude/extended-thinking#important-considerations-when-using-extended-thinking"
		case req.TopK != nil:
			return "`top_k` is not supported when thinking is enabled"
		case req.ToolChoice != nil && (req.ToolChoice.Type == "any" || req.ToolChoice.Type == "tool"):
			return "Thinking may not be enabled when tool_choice forces tool use."
		}
	}
	if req.ToolChoice != nil && req.ToolChoice.Type == "tool" {
		for _, t := range req.Tools {
			if t.Name == req.ToolChoice.Name {
				return ""
			}
		}
		return fmt.Sprintf("tool_choice.name: Tool '%s' not found in provided tools", req.ToolChoice.Name)
	}
	return ""
}

// anthropicAnswer is what the stand-in answers a request.
type anthropicAnswer struct {
	id                         string
	blocks                     []map[string]any
	stop                       string
	stopSequence               any
	input, write, read, output int64
}

func (ans *anthropicAnswer) usage(output int64) map[string]any {
	return map[string]any{"input_tokens": ans.input, "cache_creation_input_tokens": ans.write,
		"cache_read_input_tokens": ans.read, "output_tokens": output, "service_tier": "standard"}
}

// text is what a block says, for counting and echoing.
func (b aBlock) text() string {
	switch b.Type {
	case "text", "tool":
		return b.Text
	case "tool_use":
		return b.Name + " " + string(b.Input)
	case "tool_result":
		var s string
		if json.Unmarshal(b.Content, &s) == nil {
			return s
		}
		var parts []aBlock
		_ = json.Unmarshal(b.Content, &parts)
		var out []string
		for _, p := range parts {
			out = append(out, p.Text)
		}
		return strings.Join(out, " ")
	case "thinking":
		return b.Thinking
	}
	return ""
}

func (a *Anthropic) answer(req *anthropicReq) *anthropicAnswer {
	ans := &anthropicAnswer{id: "msg_" + randomHex(12), stop: "end_turn"}
	// The prompt, block by block, and its cache breakpoints: the tools
	// first, then the system prompt and the messages, as the API renders
	// them (a tool's tokens are the words of its name, description and
	// schema).
	var all []aBlock
	for _, t := range req.Tools {
		all = append(all, aBlock{Type: "tool", Text: t.Name + " " + t.Description + " " + string(t.InputSchema), CacheControl: t.CacheControl})
	}
	if len(req.System) > 0 {
		all = append(all, blocksOf(req.System)...)
	}
	for _, m := range req.Messages {
		all = append(all, m.blocks...)
	}
	h := sha256.New()
	var total int64
	var checkpoints []struct {
		n   int64
		sum [32]byte
	}
	for _, b := range all {
		t := b.text()
		total += words(t)
		h.Write([]byte(b.Type + "\x00" + t + "\x00"))
		if len(b.CacheControl) > 0 && string(b.CacheControl) != "null" {
			var sum [32]byte
			copy(sum[:], h.Sum(nil))
			checkpoints = append(checkpoints, struct {
				n   int64
				sum [32]byte
			}{total, sum})
		}
	}
	a.mu.Lock()
	if a.cache == nil {
		a.cache = map[[32]byte]bool{}
	}
	for _, c := range checkpoints {
		if a.cache[c.sum] {
			ans.read = c.n
		}
	}
	if n := len(checkpoints); n > 0 {
		ans.write = checkpoints[n-1].n - ans.read
	}
	for _, c := range checkpoints {
		a.cache[c.sum] = true
	}
	a.mu.Unlock()
	ans.input = total - ans.read - ans.write

	last := req.Messages[len(req.Messages)-1]
	var said string
	toolResult := false
	for _, b := range last.blocks {
		if b.Type == "tool_result" {
			toolResult, said = true, "The tool said: "+b.text()
		}
	}
	var userText string
	for _, b := range last.blocks {
		if b.Type == "text" {
			userText += b.Text
		}
	}
	if !toolResult {
		said = "You said: " + userText
	}
	budget := req.MaxTokens
	if req.Thinking != nil && req.Thinking.Type == "enabled" {
		thought := strings.Fields("Let me think about: " + userText)
		thought = thought[:min(int64(len(thought)), budget)]
		budget -= int64(len(thought))
		ans.output += int64(len(thought))
		ans.blocks = append(ans.blocks, map[string]any{"type": "thinking", "thinking": strings.Join(thought, " "), "signature": "sig-" + randomHex(16)})
	}
	if tool := a.chooseTool(req); tool != "" && !toolResult && budget > 0 {
		input := map[string]any{}
		for _, t := range req.Tools {
			if t.Name != tool {
				continue
			}
			var s struct {
				Properties map[string]struct {
					Type string `json:"type"`
				} `json:"properties"`
			}
			_ = json.Unmarshal(t.InputSchema, &s)
			for name, p := range s.Properties {
				if p.Type == "string" {
					input[name] = userText
				}
			}
		}
		b, _ := json.Marshal(input)
		ans.output += words(tool + " " + string(b))
		ans.blocks = append(ans.blocks, map[string]any{"type": "tool_use", "id": "toolu_" + randomHex(12), "name": tool, "input": input})
		ans.stop = "tool_use"
		return ans
	}
	text := said
	for _, s := range req.StopSequences {
		if i := strings.Index(text, s); i >= 0 {
			text, ans.stop, ans.stopSequence = text[:i], "stop_sequence", s
		}
	}
	ws := strings.Fields(text)
	if int64(len(ws)) > budget {
		ws, ans.stop, ans.stopSequence = ws[:budget], "max_tokens", nil
	}
	ans.output += int64(len(ws))
	if len(ws) > 0 {
		ans.blocks = append(ans.blocks, map[string]any{"type": "text", "text": strings.Join(ws, " ")})
	}
	return ans
}

// chooseTool is the tool the answer calls: none without tools or with
// tool_choice none.
func (a *Anthropic) chooseTool(req *anthropicReq) string {
	if len(req.Tools) == 0 || req.ToolChoice != nil && req.ToolChoice.Type == "none" {
		return ""
	}
	if req.ToolChoice != nil && req.ToolChoice.Type == "tool" {
		return req.ToolChoice.Name
	}
	return req.Tools[0].Name
}

// stream sends the answer as the API's event stream.
func (a *Anthropic) stream(w http.ResponseWriter, req *anthropicReq, ans *anthropicAnswer) {
	w.Header().Set("Content-Type", "text/event-stream; charset=utf-8")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	rc := http.NewResponseController(w)
	send := func(event string, data map[string]any) {
		data["type"] = event
		b, _ := json.Marshal(data)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
		_ = rc.Flush()
	}
	send("message_start", map[string]any{"message": map[string]any{"id": ans.id, "type": "message", "role": "assistant",
		"model": req.Model, "content": []any{}, "stop_reason": nil, "stop_sequence": nil, "usage": ans.usage(1)}})
	send("ping", map[string]any{})
	for i, b := range ans.blocks {
		switch b["type"] {
		case "text":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "text", "text": ""}})
			for j, word := range strings.Fields(b["text"].(string)) {
				if j > 0 {
					word = " " + word
				}
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "text_delta", "text": word}})
				if req.Model == "fails-midstream" {
					send("error", map[string]any{"error": map[string]any{"type": "overloaded_error", "message": "Overloaded"}})
					return
				}
			}
		case "thinking":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "thinking", "thinking": "", "signature": ""}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "thinking_delta", "thinking": b["thinking"]}})
			send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "signature_delta", "signature": b["signature"]}})
		case "tool_use":
			send("content_block_start", map[string]any{"index": i, "content_block": map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}})
			in, _ := json.Marshal(b["input"])
			half := len(in) / 2
			for _, part := range []string{"", string(in[:half]), string(in[half:])} {
				send("content_block_delta", map[string]any{"index": i, "delta": map[string]any{"type": "input_json_delta", "partial_json": part}})
			}
		}
		send("content_block_stop", map[string]any{"index": i})
	}
	send("message_delta", map[string]any{"delta": map[string]any{"stop_reason": ans.stop, "stop_sequence": ans.stopSequence},
		"usage": map[string]any{"output_tokens": ans.output}})
	send("message_stop", map[string]any{})
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(append(b, '\n'))
}

func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}
