package preset

import (
	"cmp"
	"encoding/json"
	"fmt"
	"gatehouse"
	"slices"
)

// The tools and tool choices of a preset, read from each API's shape into
// the Chat Completions shape the gateway applies: function tools only.

// presetTool is a function tool in the Chat Completions shape. A
// preset's tools never carry cache_control (a preset keeps no request's
// caching); a Messages request's translated tools do.
type presetTool struct {
	Type         string            `json:"type"`
	Function     presetFunction    `json:"function"`
	CacheControl map[string]string `json:"cache_control,omitempty"`
}

type presetFunction struct {
	Name        string          `json:"name"`
	Description *string         `json:"description,omitempty"`
	Parameters  json.RawMessage `json:"parameters,omitempty"`
	Strict      *bool           `json:"strict,omitempty"`
}

// check validates a function of a tool.
func (f *presetFunction) check(field string) error {
	if !toolNamePattern.MatchString(f.Name) {
		return gatehouse.FieldError(field+".name", "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	if isNull(f.Parameters) {
		f.Parameters = nil
	} else if _, err := readObject(field+".parameters", f.Parameters); err != nil {
		return gatehouse.FieldError(field+".parameters", "must be an object (a JSON Schema)")
	}
	return nil
}

// serverTool refuses a tool of another kind than a function: server tools
// (web search, code execution...) are billed apart from tokens.
func serverTool(field, kind string) error {
	if kind == "" {
		return gatehouse.FieldError(field, "is required: function tools are supported")
	}
	return gatehouse.FieldError(field, "%q tools are not supported: only function tools are, since server tools are billed apart from tokens, which Gatehouse does not price", truncate(kind, 40))
}

// setTools keeps the tools read by read, one per element of tools.
func setTools(b *configBuilder, tools []map[string]json.RawMessage, read func(field string, t map[string]json.RawMessage) (presetTool, error)) error {
	if len(tools) > maxPresetTools {
		return gatehouse.FieldError("tools", "must have at most %d entries", maxPresetTools)
	}
	var out []presetTool
	for i, t := range tools {
		field := fmt.Sprintf("tools[%d]", i)
		if t == nil {
			return gatehouse.FieldError(field, "must be an object")
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
			return nil, gatehouse.FieldError(field, "must be none, auto, required or a function to call")
		}
		return s, nil
	}
	obj, err := readObject(field, raw)
	if err != nil {
		return nil, gatehouse.FieldError(field, "must be none, auto, required or a function to call, such as {\"type\": \"function\", \"function\": {\"name\": \"get_weather\"}}")
	}
	kind, err := typeOf(field, obj)
	if err != nil || kind != "function" {
		return nil, cmp.Or(err, error(gatehouse.FieldError(field+".type", "must be function: server tools are not supported")))
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
		return nil, gatehouse.FieldError(field, "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	return map[string]any{"type": "function", "function": map[string]string{"name": name}}, nil
}

// messagesTools keeps the custom tools and the tool choice of a Messages
// request. keepCache keeps a tool's cache_control (checked) on the chat
// tool it becomes, for a request translated to Chat Completions
// (MessagesToChat); a preset's tools keep none.
func messagesTools(b *configBuilder, tools []map[string]json.RawMessage, choice json.RawMessage, keepCache bool) error {
	err := setTools(b, tools, func(field string, t map[string]json.RawMessage) (presetTool, error) {
		tool := presetTool{Type: "function"}
		if kind, err := typeOf(field, t); err != nil || kind != "" && kind != "custom" {
			return tool, cmp.Or(err, serverTool(field+".type", kind))
		}
		f := &tool.Function
		var cache json.RawMessage
		var deferred bool
		if err := readMembers(field, t, map[string]member{"type": {new(string), "a string"}, "name": {&f.Name, "a string"},
			"description": {&f.Description, "a string"}, "input_schema": {&f.Parameters, "an object"},
			"cache_control": {&cache, "an object"}, "defer_loading": {&deferred, "a boolean"}}); err != nil {
			return tool, err
		}
		if deferred {
			// A deferred tool is loaded only when the tool search tool finds
			// it; without that server tool, dropping the flag would put the
			// tool in every prompt, which is not what was asked (nor its price).
			return tool, gatehouse.FieldError(field+".defer_loading", "needs Anthropic's tool search tool, which this gateway does not run; leave it out or false")
		}
		if keepCache && !isNull(cache) {
			cc, err := cacheControl(field+".cache_control", cache)
			if err != nil {
				return tool, err
			}
			tool.CacheControl = cc
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
		return gatehouse.FieldError("tool_choice.type", "must be auto, any, none or tool")
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
			return gatehouse.FieldError("tool_choice", "must be none, auto, required or a function to call")
		}
		b.set("tool_choice", s)
		return nil
	}
	obj, err := readObject("tool_choice", choice)
	if err != nil {
		return gatehouse.FieldError("tool_choice", "must be none, auto, required or a function to call, such as {\"type\": \"function\", \"name\": \"get_weather\"}")
	}
	if kind, err := typeOf("tool_choice", obj); err != nil || kind != "function" {
		return cmp.Or(err, error(gatehouse.FieldError("tool_choice.type", "must be function: server tools are not supported")))
	}
	var name string
	if err := readMembers("tool_choice", obj, map[string]member{"type": {new(string), "a string"}, "name": {&name, "a string"}}); err != nil {
		return err
	}
	value, err := functionChoice("tool_choice.name", name)
	b.set("tool_choice", value)
	return err
}
