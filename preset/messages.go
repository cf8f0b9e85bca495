package preset

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"

	"gatehouse"
	"gatehouse/internal/jsonobj"
)

// Anthropic's Messages API as Gatehouse's clients speak it
// (POST /api/v1/messages), translated to and from Chat Completions,
// Gatehouse's own form of a model call: a request here (MessagesToChat),
// an answer in messagesanswer.go. The request is read strictly, each
// object by its exact keys (the body was checked for duplicate keys
// before), so that what the provider is sent is exactly what was read;
// what Chat Completions cannot carry is refused with a 400 naming the
// field, except the few things dropped because they change neither the
// answer nor its price (see the README's Messages API section).

// messagesFields are the fields of a Messages request: Anthropic's that
// Gatehouse translates, and OpenRouter's routing fields (provider, models,
// session_id), which pass to the chat request as they are.
var messagesFields = map[string]bool{
	"model": true, "messages": true, "max_tokens": true, "system": true, "metadata": true,
	"stop_sequences": true, "stream": true, "temperature": true, "top_p": true, "top_k": true,
	"tools": true, "tool_choice": true, "thinking": true, "output_config": true,
	"provider": true, "models": true, "session_id": true,
}

// refusedMessagesFields are Anthropic's fields that Gatehouse cannot
// honour, each with the reason.
var refusedMessagesFields = map[string]string{
	"container":          "containers belong to Anthropic's code execution tool, which is billed apart from tokens",
	"mcp_servers":        "MCP servers are called by Anthropic's servers, billed apart from tokens",
	"context_management": "context editing has no Chat Completions counterpart",
	"service_tier":       "service tiers are priced apart, which Gatehouse does not price",
	"inference_geo":      "data regions are chosen by routing: use provider or a guardrail",
}

// MessagesToChat translates a Messages request body (a JSON object, with no
// key given twice anywhere in it) into a Chat Completions request body.
func MessagesToChat(raw []byte) ([]byte, error) {
	body, err := jsonobj.Unmarshal(raw) // validates raw: its parts are read by the scanner alone
	if err != nil {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "request body must be a JSON object")
	}
	for _, k := range sortedKeys(body) {
		if reason, ok := refusedMessagesFields[k]; ok {
			return nil, gatehouse.FieldError(k, "is not supported: %s", reason)
		}
		if !messagesFields[k] {
			return nil, gatehouse.FieldError(k, "unknown field: Gatehouse translates only the fields of the Messages API it reads; remove it")
		}
	}
	b := newConfigBuilder()
	for _, k := range []string{"model", "provider", "models", "session_id"} {
		if v, ok := body[k]; ok {
			b.cfg[k] = v
		}
	}
	if err := firstError(messagesScalars(b, body), messagesUser(b, body["metadata"])); err != nil {
		return nil, err
	}
	tools, err := toolList(body["tools"])
	if err != nil {
		return nil, err
	}
	if err := messagesTools(b, tools, body["tool_choice"], true); err != nil {
		return nil, err
	}
	if err := messagesReasoning(b, body["thinking"], body["output_config"]); err != nil {
		return nil, err
	}
	msgs, err := messagesSystemMessage(body["system"])
	if err != nil {
		return nil, err
	}
	turns, err := chatTurns(body["messages"])
	if err != nil {
		return nil, err
	}
	b.set("messages", append(msgs, turns...))
	return json.Marshal(b.cfg)
}

// messagesScalars reads the numbers, stop sequences and stream switch of
// a Messages request, as Anthropic bounds them.
func messagesScalars(b *configBuilder, body map[string]json.RawMessage) error {
	raw, ok := body["max_tokens"]
	if !ok {
		return gatehouse.FieldError("max_tokens", "is required: the most tokens the answer may have")
	}
	var capTokens int64
	if json.Unmarshal(raw, &capTokens) != nil {
		return gatehouse.FieldError("max_tokens", "must be an integer")
	}
	var temperature, topP *float64
	var topK *int64
	var stream *bool
	var stops []string
	if err := readMembers("", pick(body, "temperature", "top_p", "top_k", "stream", "stop_sequences"), map[string]member{
		"temperature": {&temperature, "a number"}, "top_p": {&topP, "a number"}, "top_k": {&topK, "an integer"},
		"stream": {&stream, "a boolean"}, "stop_sequences": {&stops, "an array of strings"}}); err != nil {
		return unprefixed(err)
	}
	if err := firstError(
		integer(b, "max_tokens", "max_tokens", &capTokens, 1, MaxPresetCompletionTokens),
		number(b, "temperature", "temperature", temperature, 0, 1),
		number(b, "top_p", "top_p", topP, 0, 1),
		integer(b, "top_k", "top_k", topK, 0, math.MaxInt32),
	); err != nil {
		return err
	}
	b.set("stream", stream)
	if len(stops) > 0 {
		stop, err := readStop("stop_sequences", mustJSON(stops))
		if err != nil {
			return err
		}
		b.set("stop", stop)
	}
	return nil
}

// pick returns the members of obj named.
func pick(obj map[string]json.RawMessage, names ...string) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	for _, n := range names {
		if v, ok := obj[n]; ok && !isNull(v) {
			out[n] = v
		}
	}
	return out
}

// unprefixed turns readMembers' ".name" field (of a top-level read) into
// "name".
func unprefixed(err error) error {
	e, ok := err.(*gatehouse.Error)
	if !ok {
		return err
	}
	e.Message = strings.TrimPrefix(e.Message, ".")
	if f, ok := e.Metadata["field"].(string); ok {
		e.Metadata["field"] = strings.TrimPrefix(f, ".")
	}
	return e
}

// messagesUser reads metadata, whose user_id becomes the chat request's
// user (the end user of the call).
func messagesUser(b *configBuilder, raw json.RawMessage) error {
	if isNull(raw) {
		return nil
	}
	obj, err := readObject("metadata", raw)
	if err != nil {
		return err
	}
	var user *string
	if err := readMembers("metadata", obj, map[string]member{"user_id": {&user, "a string"}}); err != nil {
		return err
	}
	if user == nil || *user == "" {
		return nil // as the chat path takes an empty user
	}
	if err := gatehouse.CheckExternalUser(*user); err != nil {
		if e, ok := err.(*gatehouse.Error); ok { // named as the request names it
			e.Message = "metadata.user_id" + strings.TrimPrefix(e.Message, "user")
			e.Metadata = map[string]any{"field": "metadata.user_id"}
		}
		return err
	}
	b.set("user", *user)
	return nil
}

// toolList reads the tools of a request for messagesTools: an array of
// objects, custom tools with their input_schema, which Anthropic requires
// (messagesTools refuses the other kinds).
func toolList(raw json.RawMessage) ([]map[string]json.RawMessage, error) {
	if isNull(raw) {
		return nil, nil
	}
	list, ok := elements(raw)
	if !ok {
		return nil, gatehouse.FieldError("tools", "must be an array of tools")
	}
	tools := make([]map[string]json.RawMessage, len(list))
	for i, item := range list {
		field := "tools[" + strconv.Itoa(i) + "]"
		t, err := readObject(field, item)
		if err != nil {
			return nil, err
		}
		if kind, _ := typeOf(field, t); (kind == "" || kind == "custom") && isNull(t["input_schema"]) {
			return nil, gatehouse.FieldError(field+".input_schema", "is required: the JSON Schema of the tool's input")
		}
		tools[i] = t
	}
	return tools, nil
}

// messagesReasoning reads thinking and output_config (its effort and
// format) into the chat request's reasoning and response_format.
func messagesReasoning(b *configBuilder, thinking, outputConfig json.RawMessage) error {
	var oc *MessagesOutputConfig
	if !isNull(outputConfig) {
		obj, err := readObject("output_config", outputConfig)
		if err != nil {
			return err
		}
		oc = &MessagesOutputConfig{}
		if err := readMembers("output_config", obj, map[string]member{"effort": {&oc.Effort, "a string"},
			"format": {&oc.Format, "an object"}}); err != nil {
			return err
		}
		format, err := messagesFormat("output_config.format", oc.Format)
		if err != nil {
			return err
		}
		b.set("response_format", format)
	}
	reasoning, err := messagesThinking(thinking, oc)
	if err != nil {
		return err
	}
	b.set("reasoning", reasoning)
	return nil
}

// messagesSystemMessage is the system prompt as a chat system message: a
// string, or text blocks as text parts (their cache_control kept).
func messagesSystemMessage(raw json.RawMessage) ([]any, error) {
	if isNull(raw) {
		return nil, nil
	}
	if s, ok := stringOf(raw); ok {
		return []any{map[string]any{"role": "system", "content": s}}, nil
	}
	blocks, ok := elements(raw)
	if !ok {
		return nil, gatehouse.FieldError("system", "must be a string or an array of text blocks")
	}
	parts := make([]any, 0, len(blocks))
	for j, block := range blocks {
		field := fmt.Sprintf("system[%d]", j)
		obj, err := readObject(field, block)
		if err != nil {
			return nil, err
		}
		if kind, _ := typeOf(field, obj); kind != "text" {
			return nil, gatehouse.FieldError(field+".type", "must be text: a system prompt is text")
		}
		part, err := textPart(field, obj)
		if err != nil {
			return nil, err
		}
		parts = append(parts, part)
	}
	if len(parts) == 0 {
		return nil, nil
	}
	return []any{map[string]any{"role": "system", "content": parts}}, nil
}

// textPart reads a text block as a chat text part.
func textPart(field string, obj map[string]json.RawMessage) (map[string]any, error) {
	var text *string
	var cache, citations json.RawMessage
	if err := readMembers(field, obj, map[string]member{"type": {new(string), "a string"}, "text": {&text, "a string"},
		"cache_control": {&cache, "an object"}, "citations": {&citations, "an array"}}); err != nil {
		return nil, err
	}
	if text == nil {
		return nil, gatehouse.FieldError(field+".text", "is required")
	}
	if !isEmptyList(citations) {
		return nil, gatehouse.FieldError(field+".citations", "is not supported: citations have no Chat Completions counterpart")
	}
	part := map[string]any{"type": "text", "text": *text}
	if !isNull(cache) {
		cc, err := cacheControl(field+".cache_control", cache)
		if err != nil {
			return nil, err
		}
		part["cache_control"] = cc
	}
	return part, nil
}

// cacheControl reads a block's cache_control: {"type": "ephemeral"} with
// an optional ttl of 5m or 1h.
func cacheControl(field string, raw json.RawMessage) (map[string]string, error) {
	obj, err := readObject(field, raw)
	if err != nil {
		return nil, err
	}
	var kind string
	var ttl *string
	if err := readMembers(field, obj, map[string]member{"type": {&kind, "a string"}, "ttl": {&ttl, "a string"}}); err != nil {
		return nil, err
	}
	if kind != "ephemeral" {
		return nil, gatehouse.FieldError(field+".type", "must be ephemeral")
	}
	cc := map[string]string{"type": kind}
	if ttl != nil {
		if *ttl != "5m" && *ttl != "1h" {
			return nil, gatehouse.FieldError(field+".ttl", "must be 5m or 1h")
		}
		cc["ttl"] = *ttl
	}
	return cc, nil
}

// chatTurns translates the messages of a Messages request into chat
// messages: a user turn's tool results become tool messages (first, as
// Anthropic requires them first), its other blocks a user message; an
// assistant turn's text, tool calls and thinking one assistant message.
func chatTurns(raw json.RawMessage) ([]any, error) {
	if isNull(raw) {
		return nil, gatehouse.FieldError("messages", "is required")
	}
	list, ok := elements(raw)
	if !ok || len(list) == 0 {
		return nil, gatehouse.FieldError("messages", "must be a non-empty array of messages")
	}
	var out []any
	for i, m := range list {
		field := fmt.Sprintf("messages[%d]", i)
		obj, err := readObject(field, m)
		if err != nil {
			return nil, err
		}
		var role string
		var content json.RawMessage
		if err := readMembers(field, obj, map[string]member{"role": {&role, "a string"}, "content": {&content, "a string or an array of content blocks"}}); err != nil {
			return nil, err
		}
		var turn []any
		switch role {
		case "user":
			turn, err = userTurn(field+".content", content)
		case "assistant":
			turn, err = assistantTurn(field+".content", content)
		default:
			return nil, gatehouse.FieldError(field+".role", "must be user or assistant: the system prompt goes in system")
		}
		if err != nil {
			return nil, err
		}
		out = append(out, turn...)
	}
	return out, nil
}

// contentBlocks reads a message's content: a string (one text block), or
// an array of blocks.
func contentBlocks(field string, raw json.RawMessage) (text *string, blocks []map[string]json.RawMessage, err error) {
	if isNull(raw) {
		return nil, nil, gatehouse.FieldError(field, "is required")
	}
	if s, ok := stringOf(raw); ok {
		return &s, nil, nil
	}
	list, ok := elements(raw)
	if !ok {
		return nil, nil, gatehouse.FieldError(field, "must be a string or an array of content blocks")
	}
	for j, item := range list {
		obj, err := readObject(fmt.Sprintf("%s[%d]", field, j), item)
		if err != nil {
			return nil, nil, err
		}
		blocks = append(blocks, obj)
	}
	return nil, blocks, nil
}

// unpriced refuses a block whose cost Gatehouse cannot bound.
func unpriced(field, kind string) error {
	return gatehouse.FieldError(field+".type", "%q blocks are not accepted: only text is, since Gatehouse cannot price images or documents, so it cannot bound their cost", truncate(kind, 40))
}

// userTurn translates a user message.
func userTurn(field string, raw json.RawMessage) ([]any, error) {
	text, blocks, err := contentBlocks(field, raw)
	if err != nil || text != nil {
		return []any{map[string]any{"role": "user", "content": text}}, err
	}
	var tools, parts []any
	for j, block := range blocks {
		at := fmt.Sprintf("%s[%d]", field, j)
		kind, err := typeOf(at, block)
		if err != nil {
			return nil, err
		}
		switch kind {
		case "text":
			part, err := textPart(at, block)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		case "tool_result":
			if len(parts) > 0 {
				return nil, gatehouse.FieldError(at, "tool_result blocks must come first in a user message, before any text")
			}
			msg, err := toolResult(at, block)
			if err != nil {
				return nil, err
			}
			tools = append(tools, msg)
		case "image", "document", "search_result", "container_upload":
			return nil, unpriced(at, kind)
		case "tool_use", "thinking", "redacted_thinking":
			return nil, gatehouse.FieldError(at+".type", "%s blocks belong in assistant messages", kind)
		default:
			return nil, gatehouse.FieldError(at+".type", "must be text or tool_result in a user message")
		}
	}
	if len(parts) > 0 || len(tools) == 0 {
		tools = append(tools, map[string]any{"role": "user", "content": parts})
	}
	return tools, nil
}

// toolResult translates a tool_result block into a chat tool message.
// is_error has no counterpart: the result's content goes as it is (the
// README says so).
func toolResult(field string, block map[string]json.RawMessage) (any, error) {
	var id string
	var content, cache json.RawMessage
	var isError *bool
	if err := readMembers(field, block, map[string]member{"type": {new(string), "a string"},
		"tool_use_id": {&id, "a string"}, "content": {&content, "a string or an array of text blocks"},
		"is_error": {&isError, "a boolean"}, "cache_control": {&cache, "an object"}}); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, gatehouse.FieldError(field+".tool_use_id", "is required: the id of the tool_use block it answers")
	}
	msg := map[string]any{"role": "tool", "tool_call_id": id, "content": ""}
	var parts []map[string]any
	if !isNull(content) {
		text, blocks, err := contentBlocks(field+".content", content)
		if err != nil {
			return nil, err
		}
		if text != nil && isNull(cache) {
			msg["content"] = *text
			return msg, nil
		}
		if text != nil {
			blocks = []map[string]json.RawMessage{{"type": json.RawMessage(`"text"`), "text": mustJSON(*text)}}
		}
		for j, block := range blocks {
			at := fmt.Sprintf("%s.content[%d]", field, j)
			if kind, err := typeOf(at, block); err != nil || kind != "text" {
				if err == nil {
					err = unpriced(at, kind)
				}
				return nil, err
			}
			part, err := textPart(at, block)
			if err != nil {
				return nil, err
			}
			parts = append(parts, part)
		}
	}
	if !isNull(cache) {
		cc, err := cacheControl(field+".cache_control", cache)
		if err != nil {
			return nil, err
		}
		if len(parts) == 0 {
			parts = append(parts, map[string]any{"type": "text", "text": ""})
		}
		parts[len(parts)-1]["cache_control"] = cc // the cache ends where the block does
	}
	if len(parts) > 0 {
		msg["content"] = parts
	}
	return msg, nil
}

// assistantTurn translates an assistant message: its text as content, its
// tool_use blocks as tool_calls (a block's cache_control on its call, a
// Gatehouse and OpenRouter member of the chat form), its thinking as
// reasoning_details. cache_control on a thinking block is refused, as
// Anthropic refuses it (see thinkingDetail).
func assistantTurn(field string, raw json.RawMessage) ([]any, error) {
	text, blocks, err := contentBlocks(field, raw)
	if err != nil || text != nil {
		return []any{map[string]any{"role": "assistant", "content": text}}, err
	}
	var parts, calls, thinking []any
	for j, block := range blocks {
		at := fmt.Sprintf("%s[%d]", field, j)
		kind, err := typeOf(at, block)
		if err != nil {
			return nil, err
		}
		var item any
		switch kind {
		case "text":
			item, err = textPart(at, block)
			parts = appendIf(parts, item, err)
		case "tool_use":
			item, err = toolUse(at, block)
			calls = appendIf(calls, item, err)
		case "thinking", "redacted_thinking":
			item, err = thinkingDetail(at, kind, block)
			thinking = appendIf(thinking, item, err)
		case "image", "document":
			return nil, unpriced(at, kind)
		case "tool_result":
			return nil, gatehouse.FieldError(at+".type", "tool_result blocks belong in user messages")
		default:
			return nil, gatehouse.FieldError(at+".type", "must be text, tool_use, thinking or redacted_thinking in an assistant message")
		}
		if err != nil {
			return nil, err
		}
	}
	msg := map[string]any{"role": "assistant", "content": nil}
	if len(parts) > 0 {
		msg["content"] = parts
	}
	if len(calls) > 0 {
		msg["tool_calls"] = calls
	}
	if len(thinking) > 0 {
		msg["reasoning_details"] = thinking
	}
	return []any{msg}, nil
}

func appendIf(list []any, item any, err error) []any {
	if err != nil {
		return list
	}
	return append(list, item)
}

// toolUse translates a tool_use block into a chat tool call.
func toolUse(field string, block map[string]json.RawMessage) (any, error) {
	var id, name string
	var input, cache json.RawMessage
	if err := readMembers(field, block, map[string]member{"type": {new(string), "a string"}, "id": {&id, "a string"},
		"name": {&name, "a string"}, "input": {&input, "an object"}, "cache_control": {&cache, "an object"}}); err != nil {
		return nil, err
	}
	if id == "" {
		return nil, gatehouse.FieldError(field+".id", "is required")
	}
	if !toolNamePattern.MatchString(name) {
		return nil, gatehouse.FieldError(field+".name", "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	if _, err := readObject(field+".input", input); err != nil {
		return nil, err
	}
	call := map[string]any{"id": id, "type": "function", "function": map[string]string{"name": name, "arguments": string(input)}}
	if !isNull(cache) {
		cc, err := cacheControl(field+".cache_control", cache)
		if err != nil {
			return nil, err
		}
		call["cache_control"] = cc // the cache ends where the block does
	}
	return call, nil
}

// thinkingDetail translates a thinking block into OpenRouter's
// reasoning_details entry: reasoning.text with its signature, or, for
// redacted thinking, reasoning.encrypted. cache_control on it is refused:
// Anthropic's API takes none on thinking blocks (they are cached as part
// of the prompt before a later block's cache_control), and dropping it
// would silently change what the client asked for.
func thinkingDetail(field, kind string, block map[string]json.RawMessage) (any, error) {
	var text, signature, data string
	var cache json.RawMessage
	members := map[string]member{"type": {new(string), "a string"}, "cache_control": {&cache, "an object"}}
	if kind == "thinking" {
		members["thinking"], members["signature"] = member{&text, "a string"}, member{&signature, "a string"}
	} else {
		members["data"] = member{&data, "a string"}
	}
	if err := readMembers(field, block, members); err != nil {
		return nil, err
	}
	if !isNull(cache) {
		return nil, gatehouse.FieldError(field+".cache_control", "is not accepted on %s blocks: Anthropic's API refuses it there; thinking blocks cannot carry cache_control, and are cached as part of the prompt before a later block's cache_control (put it on a text, tool_use or tool_result block after them)", kind)
	}
	if kind == "redacted_thinking" {
		return map[string]any{"type": "reasoning.encrypted", "data": data, "format": "anthropic-claude-v1"}, nil
	}
	d := map[string]any{"type": "reasoning.text", "text": text, "format": "anthropic-claude-v1"}
	if signature != "" {
		d["signature"] = signature
	}
	return d, nil
}

// elements returns the elements of a JSON array, or false if raw is not
// one. raw is part of a body that was validated.
func elements(raw json.RawMessage) ([]json.RawMessage, bool) {
	return jsonobj.Elements(raw)
}

// stringOf returns the string raw holds, or false if it holds none.
func stringOf(raw json.RawMessage) (string, bool) {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 || t[0] != '"' {
		return "", false
	}
	var s string
	return s, json.Unmarshal(t, &s) == nil
}
