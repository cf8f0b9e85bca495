package preset

import (
	"encoding/json"
	"fmt"
	"gatehouse"
	"gatehouse/internal/jsonobj"
	"slices"
	"strings"
)

// The structured fields of a preset (response format, reasoning, system
// prompt; tools are in presettools.go), read from each API's shape into the
// Chat Completions shape the gateway applies, and the helpers that read
// JSON objects strictly.

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
			return gatehouse.FieldError(field+"."+k, "unknown field")
		}
		if err := json.Unmarshal(obj[k], m.dst); err != nil {
			return gatehouse.FieldError(field+"."+k, "must be %s", m.want)
		}
	}
	return nil
}

// readObject reads raw, which must be a JSON object (read as
// json.Unmarshal reads one into a map, by a scanner that does not allocate
// what it skips).
func readObject(field string, raw json.RawMessage) (map[string]json.RawMessage, error) {
	obj, err := jsonobj.Unmarshal(raw)
	if err != nil {
		return nil, gatehouse.FieldError(field, "must be an object")
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
		return "", gatehouse.FieldError(field+".type", "must be a string")
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
		return nil, gatehouse.FieldError(field+".type", "must be text, json_object or json_schema")
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
		return gatehouse.FieldError(field+".name", "must be 1 to 64 letters, digits, underscores or hyphens")
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
	return nil, gatehouse.FieldError(field+".type", "must be text, json_object or json_schema")
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
		return nil, gatehouse.FieldError(field+".type", "must be json_schema")
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
			return nil, gatehouse.FieldError("thinking.type", "must be enabled, disabled or adaptive")
		}
		if err := readMembers("thinking", obj, members); err != nil {
			return nil, err
		}
		if kind == "enabled" {
			if budget == nil || *budget < 1 || *budget > MaxPresetCompletionTokens {
				return nil, gatehouse.FieldError("thinking.budget_tokens", "must be an integer from 1 to %d", MaxPresetCompletionTokens)
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
			return nil, gatehouse.FieldError("output_config.effort", "must be one of low, medium, high, xhigh, max")
		}
		r.Effort = &effort
	}
	return r.check("thinking")
}

// leadingSystemPrompt is the system prompt of a chat request: the text of
// the system (or developer) messages it starts with.
func leadingSystemPrompt(msgs []map[string]json.RawMessage) (*string, error) {
	var parts []string
	leading := true
	for i, m := range msgs {
		field := fmt.Sprintf("messages[%d]", i)
		if m == nil {
			return nil, gatehouse.FieldError(field, "must be an object")
		}
		var role string
		if raw, ok := m["role"]; ok && json.Unmarshal(raw, &role) != nil {
			return nil, gatehouse.FieldError(field+".role", "must be a string")
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
		return nil, gatehouse.FieldError(field, "must be a string or an array of text parts")
	}
	var out []string
	for j, p := range parts {
		at := fmt.Sprintf("%s[%d]", field, j)
		var t, text string
		var ignored json.RawMessage
		if p == nil {
			return nil, gatehouse.FieldError(at, "must be an object")
		}
		if err := readMembers(at, p, map[string]member{"type": {&t, "a string"}, "text": {&text, "a string"},
			"cache_control": {&ignored, "an object"}, "citations": {&ignored, "an array"}}); err != nil {
			return nil, err
		}
		if t != kind {
			return nil, gatehouse.FieldError(at+".type", "must be %s: a system prompt is text", kind)
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
