package gatehouse

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
)

// The structured fields of a preset (tools, tool choice, response format,
// reasoning, system prompt), read from each API's shape into the Chat
// Completions shape the gateway applies.

// presetTool is a function tool in the Chat Completions shape.
type presetTool struct {
	Type     string         `json:"type"`
	Function presetFunction `json:"function"`
}

type presetFunction struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// presetFormat is a response_format in the Chat Completions shape.
type presetFormat struct {
	Type       string            `json:"type"`
	JSONSchema *presetJSONSchema `json:"json_schema,omitempty"`
}

type presetJSONSchema struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Schema      json.RawMessage `json:"schema,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// member is a field of an object read by readMembers: where its value goes
// and, for errors, what it must be.
type member struct {
	dst  any
	want string
}

// readMembers reads the members of an object into their destinations; a
// key that is not a member is refused as unknown.
func readMembers(field string, obj map[string]json.RawMessage, members map[string]member) error {
	for _, k := range sortedKeys(obj) {
		m, ok := members[k]
		if !ok {
			return FieldError(field+"."+k, "unknown field")
		}
		if err := json.Unmarshal(obj[k], m.dst); err != nil {
			return FieldError(field+"."+k, "must be %s", m.want)
		}
	}
	return nil
}

// readObject reads raw, which must be a JSON object.
func readObject(field string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return nil, FieldError(field, "must be an object")
	}
	return obj, nil
}

// typeOf returns the "type" member of an object, "" when absent.
func typeOf(field string, obj map[string]json.RawMessage) (string, error) {
	raw, ok := obj["type"]
	if !ok {
		return "", nil
	}
	var t string
	if err := json.Unmarshal(raw, &t); err != nil {
		return "", FieldError(field+".type", "must be a string")
	}
	return t, nil
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// check validates a function of a tool.
func (f *presetFunction) check(field string) error {
	if !toolNamePattern.MatchString(f.Name) {
		return FieldError(field+".name", "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	if isNull(f.Parameters) {
		f.Parameters = nil
	} else if _, err := readObject(field+".parameters", f.Parameters); err != nil {
		return FieldError(field+".parameters", "must be an object (a JSON Schema)")
	}
	return nil
}

// serverTool refuses a tool of another kind than a function: server tools
// (web search, code execution...) are billed apart from tokens.
func serverTool(field, kind string) error {
	if kind == "" {
		return FieldError(field, "is required: function tools are supported")
	}
	return FieldError(field, "%q tools are not supported: only function tools are, since server tools are billed apart from tokens, which Gatehouse does not price", truncate(kind, 40))
}

// setTools keeps the tools read by read, one per element of tools.
func setTools(b *configBuilder, tools []map[string]json.RawMessage, read func(field string, t map[string]json.RawMessage) (presetTool, error)) error {
	if len(tools) > maxPresetTools {
		return FieldError("tools", "must have at most %d entries", maxPresetTools)
	}
	var out []presetTool
	for i, t := range tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t == nil {
			return FieldError(field, "must be an object")
		}
		tool, err := read(field, t)
		if err != nil {
			return err
		}
		out = append(out, tool)
	}
	if len(out) > 0 {
		b.set("tools", out)
	}
	return nil
}

// chatTools keeps Chat Completions function tools.
func chatTools(b *configBuilder, tools []map[string]json.RawMessage) error {
	return setTools(b, tools, func(field string, t map[string]json.RawMessage) (presetTool, error) {
		tool := presetTool{Type: "function"}
		if kind, err := typeOf(field, t); err != nil || kind != "function" {
			return tool, cmp.Or(err, serverTool(field+".type", kind))
		}
		var fn, kind, cache json.RawMessage
		if err := readMembers(field, t, map[string]member{"type": {&kind, "a string"}, "function": {&fn, "an object"},
			"cache_control": {&cache, "an object"}}); err != nil {
			return tool, err
		}
		obj, err := readObject(field+".function", fn)
		if err != nil {
			return tool, err
		}
		f := &tool.Function
		if err := readMembers(field+".function", obj, map[string]member{"name": {&f.Name, "a string"},
			"description": {&f.Description, "a string"}, "parameters": {&f.Parameters, "an object"},
			"strict": {&f.Strict, "a boolean"}}); err != nil {
			return tool, err
		}
		return tool, f.check(field + ".function")
	})
}

// chatToolChoice reads a Chat Completions tool_choice.
func chatToolChoice(field string, raw json.RawMessage) (any, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		if !slices.Contains([]string{"none", "auto", "required"}, s) {
			return nil, FieldError(field, "must be none, auto, required or a function to call")
		}
		return s, nil
	}
	obj, err := readObject(field, raw)
	if err != nil {
		return nil, FieldError(field, "must be none, auto, required or a function to call, such as {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}")
	}
	kind, err := typeOf(field, obj)
	if err != nil || kind != "function" {
		return nil, cmp.Or(err, error(FieldError(field+".type", "must be function: server tools are not supported")))
	}
	var fn json.RawMessage
	if err := readMembers(field, obj, map[string]member{"type": {new(string), "a string"}, "function": {&fn, "an object"}}); err != nil {
		return nil, err
	}
	f, err := readObject(field+".function", fn)
	if err != nil {
		return nil, err
	}
	var name string
	if err := readMembers(field+".function", f, map[string]member{"name": {&name, "a string"}}); err != nil {
		return nil, err
	}
	return functionChoice(field+".function.name", name)
}

// functionChoice is the tool choice that calls the named function.
func functionChoice(field, name string) (any, error) {
	if !toolNamePattern.MatchString(name) {
		return nil, FieldError(field, "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	return map[string]any{"type": "function", "function": map[string]string{"name": name}}, nil
}

// chatResponseFormat reads a Chat Completions response_format.
func chatResponseFormat(field string, raw json.RawMessage) (*presetFormat, error) {
	if isNull(raw) {
		return nil, nil
	}
	obj, err := readObject(field, raw)
	if err != nil {
		return nil, err
	}
	kind, err := typeOf(field, obj)
	if err != nil {
		return nil, err
	}
	var schema json.RawMessage
	members := map[string]member{"type": {new(string), "a string"}}
	switch kind {
	case "text", "json_object":
	case "json_schema":
		members["json_schema"] = member{&schema, "an object"}
	default:
		return nil, FieldError(field+".type", "must be text, json_object or json_schema")
	}
	if err := readMembers(field, obj, members); err != nil {
		return nil, err
	}
	if kind != "json_schema" {
		return &presetFormat{Type: kind}, nil
	}
	s, err := readObject(field+".json_schema", schema)
	if err != nil {
		return nil, err
	}
	js := &presetJSONSchema{}
	if err := readMembers(field+".json_schema", s, jsonSchemaMembers(js)); err != nil {
		return nil, err
	}
	return &presetFormat{Type: kind, JSONSchema: js}, js.check(field + ".json_schema")
}

func jsonSchemaMembers(js *presetJSONSchema) map[string]member {
	return map[string]member{"name": {&js.Name, "a string"}, "description": {&js.Description, "a string"},
		"schema": {&js.Schema, "an object"}, "strict": {&js.Strict, "a boolean"}}
}

func (js *presetJSONSchema) check(field string) error {
	if !schemaNamePattern.MatchString(js.Name) {
		return FieldError(field+".name", "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	if isNull(js.Schema) {
		js.Schema = nil
	} else if _, err := readObject(field+".schema", js.Schema); err != nil {
		return err
	}
	return nil
}

// responsesFormat reads the text.format of a Responses request, whose JSON
// schema fields sit beside its type.
func responsesFormat(field string, raw json.RawMessage) (*presetFormat, error) {
	if isNull(raw) {
		return nil, nil
	}
	obj, err := readObject(field, raw)
	if err != nil {
		return nil, err
	}
	kind, err := typeOf(field, obj)
	if err != nil {
		return nil, err
	}
	switch kind {
	case "text", "json_object":
		if err := readMembers(field, obj, map[string]member{"type": {new(string), "a string"}}); err != nil {
			return nil, err
		}
		return &presetFormat{Type: kind}, nil
	case "json_schema":
		js := &presetJSONSchema{}
		members := jsonSchemaMembers(js)
		members["type"] = member{new(string), "a string"}
		if err := readMembers(field, obj, members); err != nil {
			return nil, err
		}
		return &presetFormat{Type: kind, JSONSchema: js}, js.check(field)
	}
	return nil, FieldError(field+".type", "must be text, json_object or json_schema")
}

// messagesFormat reads the output_config.format of a Messages request.
func messagesFormat(field string, raw json.RawMessage) (*presetFormat, error) {
	if isNull(raw) {
		return nil, nil
	}
	obj, err := readObject(field, raw)
	if err != nil {
		return nil, err
	}
	js := &presetJSONSchema{Name: "output"}
	var kind string
	if err := readMembers(field, obj, map[string]member{"type": {&kind, "a string"}, "schema": {&js.Schema, "an object"}}); err != nil {
		return nil, err
	}
	if kind != "json_schema" {
		return nil, FieldError(field+".type", "must be json_schema")
	}
	return &presetFormat{Type: kind, JSONSchema: js}, js.check(field)
}

// messagesThinking reads the thinking and output_config.effort of a
// Messages request as a reasoning configuration.
func messagesThinking(raw json.RawMessage, oc *MessagesOutputConfig) (*PresetReasoning, error) {
	r := PresetReasoning{}
	if !isNull(raw) {
		obj, err := readObject("thinking", raw)
		if err != nil {
			return nil, err
		}
		kind, err := typeOf("thinking", obj)
		if err != nil {
			return nil, err
		}
		var budget *int64
		var ignored json.RawMessage
		members := map[string]member{"type": {new(string), "a string"}, "display": {&ignored, "a string"},
			"block_binding": {&ignored, "an object"}}
		switch kind {
		case "enabled":
			members["budget_tokens"] = member{&budget, "an integer"}
		case "disabled":
			delete(members, "display")
			delete(members, "block_binding")
			r.Enabled = new(false)
		case "adaptive":
			r.Enabled = new(true)
		default:
			return nil, FieldError("thinking.type", "must be enabled, disabled or adaptive")
		}
		if err := readMembers("thinking", obj, members); err != nil {
			return nil, err
		}
		if kind == "enabled" {
			if budget == nil || *budget < 1 || *budget > MaxPresetCompletionTokens {
				return nil, FieldError("thinking.budget_tokens", "must be an integer from 1 to %d", MaxPresetCompletionTokens)
			}
			r.MaxTokens = budget
		}
	}
	if oc != nil && oc.Effort != nil {
		effort := *oc.Effort
		if effort == "max" {
			effort = "xhigh" // the highest effort of the Chat Completions API
		}
		if !slices.Contains(reasoningEfforts, effort) {
			return nil, FieldError("output_config.effort", "must be one of low, medium, high, xhigh, max")
		}
		r.Effort = &effort
	}
	return r.check("thinking")
}

// messagesTools keeps the custom tools and the tool choice of a Messages
// request.
func messagesTools(b *configBuilder, tools []map[string]json.RawMessage, choice json.RawMessage) error {
	err := setTools(b, tools, func(field string, t map[string]json.RawMessage) (presetTool, error) {
		tool := presetTool{Type: "function"}
		if kind, err := typeOf(field, t); err != nil || kind != "" && kind != "custom" {
			return tool, cmp.Or(err, serverTool(field+".type", kind))
		}
		f := &tool.Function
		var ignored json.RawMessage
		if err := readMembers(field, t, map[string]member{"type": {new(string), "a string"}, "name": {&f.Name, "a string"},
			"description": {&f.Description, "a string"}, "input_schema": {&f.Parameters, "an object"},
			"cache_control": {&ignored, "an object"}, "defer_loading": {&ignored, "a boolean"}}); err != nil {
			return tool, err
		}
		return tool, f.check(field)
	})
	if err != nil || isNull(choice) {
		return err
	}
	obj, err := readObject("tool_choice", choice)
	if err != nil {
		return err
	}
	kind, err := typeOf("tool_choice", obj)
	if err != nil {
		return err
	}
	var name string
	var serial *bool
	members := map[string]member{"type": {new(string), "a string"}, "disable_parallel_tool_use": {&serial, "a boolean"}}
	var value any
	switch kind {
	case "auto", "none":
		value = kind
	case "any":
		value = "required"
	case "tool":
		members["name"] = member{&name, "a string"}
	default:
		return FieldError("tool_choice.type", "must be auto, any, none or tool")
	}
	if kind == "none" {
		delete(members, "disable_parallel_tool_use")
	}
	if err := readMembers("tool_choice", obj, members); err != nil {
		return err
	}
	if kind == "tool" {
		if value, err = functionChoice("tool_choice.name", name); err != nil {
			return err
		}
	}
	b.set("tool_choice", value)
	if serial != nil && *serial {
		b.set("parallel_tool_calls", false)
	}
	return nil
}

// responsesTools keeps the function tools and the tool choice of a
// Responses request.
func responsesTools(b *configBuilder, tools []map[string]json.RawMessage, choice json.RawMessage) error {
	err := setTools(b, tools, func(field string, t map[string]json.RawMessage) (presetTool, error) {
		tool := presetTool{Type: "function"}
		if kind, err := typeOf(field, t); err != nil || kind != "function" {
			return tool, cmp.Or(err, serverTool(field+".type", kind))
		}
		f := &tool.Function
		var ignored json.RawMessage
		if err := readMembers(field, t, map[string]member{"type": {new(string), "a string"}, "name": {&f.Name, "a string"},
			"description": {&f.Description, "a string"}, "parameters": {&f.Parameters, "an object"},
			"strict": {&f.Strict, "a boolean"}, "async": {&ignored, "a boolean"}}); err != nil {
			return tool, err
		}
		return tool, f.check(field)
	})
	if err != nil || isNull(choice) {
		return err
	}
	var s string
	if json.Unmarshal(choice, &s) == nil {
		if !slices.Contains([]string{"none", "auto", "required"}, s) {
			return FieldError("tool_choice", "must be none, auto, required or a function to call")
		}
		b.set("tool_choice", s)
		return nil
	}
	obj, err := readObject("tool_choice", choice)
	if err != nil {
		return FieldError("tool_choice", "must be none, auto, required or a function to call, such as {\"type\": \"function\", \"name\": \"get_weather\"}")
	}
	if kind, err := typeOf("tool_choice", obj); err != nil || kind != "function" {
		return cmp.Or(err, error(FieldError("tool_choice.type", "must be function: server tools are not supported")))
	}
	var name string
	if err := readMembers("tool_choice", obj, map[string]member{"type": {new(string), "a string"}, "name": {&name, "a string"}}); err != nil {
		return err
	}
	value, err := functionChoice("tool_choice.name", name)
	b.set("tool_choice", value)
	return err
}

// leadingSystemPrompt is the system prompt of a chat request: the text of
// the system (or developer) messages it starts with.
func leadingSystemPrompt(msgs []map[string]json.RawMessage) (*string, error) {
	var parts []string
	leading := true
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		if m == nil {
			return nil, FieldError(field, "must be an object")
		}
		var role string
		if raw, ok := m["role"]; ok && json.Unmarshal(raw, &role) != nil {
			return nil, FieldError(field+".role", "must be a string")
		}
		if leading = leading && (role == "system" || role == "developer"); !leading {
			continue
		}
		text, err := textOf(field+".content", m["content"], "text")
		if err != nil {
			return nil, err
		}
		parts = append(parts, text...)
	}
	return joinPrompt(parts), nil
}

// messagesSystem is the system prompt of a Messages request.
func messagesSystem(raw json.RawMessage) (*string, error) {
	if isNull(raw) {
		return nil, nil
	}
	parts, err := textOf("system", raw, "text")
	return joinPrompt(parts), err
}

// textOf reads content that must be text: a string, or an array of parts
// of type kind, each with its text.
func textOf(field string, raw json.RawMessage, kind string) ([]string, error) {
	if isNull(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return []string{s}, nil
	}
	var parts []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &parts); err != nil {
		return nil, FieldError(field, "must be a string or an array of text parts")
	}
	var out []string
	for j, p := range parts {
		at := fmt.Sprintf("%s[%d]", field, j)
		var t, text string
		var ignored json.RawMessage
		if p == nil {
			return nil, FieldError(at, "must be an object")
		}
		if err := readMembers(at, p, map[string]member{"type": {&t, "a string"}, "text": {&text, "a string"},
			"cache_control": {&ignored, "an object"}, "citations": {&ignored, "an array"}}); err != nil {
			return nil, err
		}
		if t != kind {
			return nil, FieldError(at+".type", "must be %s: a system prompt is text", kind)
		}
		out = append(out, text)
	}
	return out, nil
}

// joinPrompt joins the parts of a system prompt; nil when it is empty.
func joinPrompt(parts []string) *string {
	var kept []string
	for _, p := range parts {
		if strings.TrimSpace(p) != "" {
			kept = append(kept, p)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	s := strings.Join(kept, "\n\n")
	return &s
}
