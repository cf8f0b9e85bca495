package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"

	"gatehouse"
)

// The input of a Responses request: a string (the user's message), or
// input items. Gatehouse accepts the items whose whole content is in the
// request, as text, so that the request's length bounds the prompt it
// reserves for: messages of text, function calls and their outputs.

// inputItemFields are the fields of each kind of input item accepted.
var inputItemFields = map[string]map[string]bool{
	"message":              {"type": true, "role": true, "content": true, "id": true, "status": true, "phase": true},
	"function_call":        {"type": true, "call_id": true, "name": true, "arguments": true, "id": true, "status": true},
	"function_call_output": {"type": true, "call_id": true, "output": true, "id": true, "status": true},
}

// refusedInputItems are kinds of input items whose content is not in the
// request; the reason says why.
var refusedInputItems = map[string]string{
	"reasoning":      "the provider decrypts or looks up their content, which Gatehouse can neither see nor bound; leave reasoning items out of input",
	"item_reference": storedContext,
}

// inputRoles are the roles of input messages.
var inputRoles = map[string]bool{"user": true, "assistant": true, "system": true, "developer": true}

// contentPartFields are the fields of each kind of content part accepted:
// text in, text out (an assistant's earlier output), a refusal.
var contentPartFields = map[string]map[string]bool{
	"input_text":  {"type": true, "text": true},
	"output_text": {"type": true, "text": true, "annotations": true, "logprobs": true},
	"refusal":     {"type": true, "refusal": true},
}

// checkInput checks the input and keeps it, after the instructions, as the
// messages of the call.
func (req *responsesRequest) checkInput() error {
	v := bytes.TrimSpace(req.Input)
	var items []json.RawMessage
	var text string
	switch {
	case len(v) == 0 || string(v) == "null":
		return gatehouse.FieldError("input", "is required: a string, or an array of input items")
	case v[0] == '"':
		if json.Unmarshal(v, &text) != nil || text == "" {
			return gatehouse.FieldError("input", "must be a non-empty string or a non-empty array of input items")
		}
		items = []json.RawMessage{mustMarshal(map[string]string{"role": "user", "content": text})}
	case v[0] != '[' || json.Unmarshal(v, &items) != nil || len(items) == 0:
		return gatehouse.FieldError("input", "must be a non-empty string or a non-empty array of input items")
	default:
		for i, item := range items {
			if err := checkInputItem(item, fmt.Sprintf("input[%d]", i)); err != nil {
				return err
			}
		}
	}
	if req.Instructions != nil && *req.Instructions != "" {
		system := mustMarshal(map[string]string{"role": "system", "content": *req.Instructions})
		items = append([]json.RawMessage{system}, items...)
	}
	req.messages = mustMarshal(items)
	return nil
}

// checkInputItem checks one input item: its kind, its fields, and that
// its content is text.
func checkInputItem(raw json.RawMessage, at string) error {
	keys, kind, err := itemKeys(raw, at)
	if err != nil {
		return err
	}
	if kind == "" {
		kind = "message" // an item with a role and no type is a message
	}
	if reason, ok := refusedInputItems[kind]; ok {
		return gatehouse.FieldError(at+".type", "%q input items are not accepted: %s", kind, reason)
	}
	fields, ok := inputItemFields[kind]
	if !ok {
		return gatehouse.FieldError(at+".type", "%q input items are not accepted: only messages, function calls and function call outputs are, whose content Gatehouse can count", truncateRunes(kind, 40))
	}
	if err := checkKeysOf(keys, fields, nil, nil, at+"."); err != nil {
		return err
	}
	var item inputItem
	if err := decodeAt(raw, at, &item); err != nil {
		return err
	}
	switch kind {
	case "message":
		if !inputRoles[item.Role] {
			return gatehouse.FieldError(at+".role", "must be user, assistant, system or developer")
		}
		return checkTextParts(item.Content, at+".content")
	case "function_call":
		switch {
		case item.CallID == nil || *item.CallID == "":
			return gatehouse.FieldError(at+".call_id", "is required")
		case item.Name == nil || !toolNamePattern.MatchString(*item.Name):
			return gatehouse.FieldError(at+".name", "must be the name of a function: 1 to 64 letters, digits, underscores or hyphens")
		case item.Arguments == nil:
			return gatehouse.FieldError(at+".arguments", "is required: the function's arguments, as a JSON text")
		}
	case "function_call_output":
		if item.CallID == nil || *item.CallID == "" {
			return gatehouse.FieldError(at+".call_id", "is required")
		}
		return checkTextParts(item.Output, at+".output")
	}
	return nil
}

// inputItem is the part of an input item Gatehouse reads; each field is
// typed as the API has it, so that a value of another type is named.
type inputItem struct {
	ID        *string         `json:"id"`
	Status    *string         `json:"status"`
	Phase     *string         `json:"phase"`
	Role      string          `json:"role"`
	Content   json.RawMessage `json:"content"`
	CallID    *string         `json:"call_id"`
	Name      *string         `json:"name"`
	Arguments *string         `json:"arguments"`
	Output    json.RawMessage `json:"output"`
}

// contentPart is a text content part: its text, or its refusal.
type contentPart struct {
	Text        *string           `json:"text"`
	Refusal     *string           `json:"refusal"`
	Annotations []json.RawMessage `json:"annotations"`
	Logprobs    []json.RawMessage `json:"logprobs"`
}

// checkTextParts accepts a string, or an array of text content parts.
func checkTextParts(content json.RawMessage, at string) error {
	c := bytes.TrimSpace(content)
	switch {
	case len(c) == 0 || string(c) == "null":
		return gatehouse.FieldError(at, "is required: a string or an array of text content parts")
	case c[0] == '"':
		return nil
	case c[0] != '[':
		return gatehouse.FieldError(at, "must be a string or an array of content parts")
	}
	var parts []json.RawMessage
	if err := json.Unmarshal(c, &parts); err != nil {
		return gatehouse.FieldError(at, "must be a string or an array of content parts")
	}
	for j, p := range parts {
		part := fmt.Sprintf("%s[%d]", at, j)
		keys, kind, err := itemKeys(p, part)
		if err != nil {
			return err
		}
		fields, ok := contentPartFields[kind]
		if !ok {
			return gatehouse.FieldError(part+".type", "%q is not accepted: only text content parts are (input_text, output_text, refusal), since Gatehouse cannot price images, audio or files, so it cannot bound their cost", truncateRunes(kind, 40))
		}
		if err := checkKeysOf(keys, fields, nil, nil, part+"."); err != nil {
			return err
		}
		var cp contentPart
		if err := decodeAt(p, part, &cp); err != nil {
			return err
		}
		if kind == "refusal" && cp.Refusal == nil {
			return gatehouse.FieldError(part+".refusal", "is required")
		} else if kind != "refusal" && cp.Text == nil {
			return gatehouse.FieldError(part+".text", "is required")
		}
	}
	return nil
}

// mustMarshal encodes a value that always encodes.
func mustMarshal(v any) json.RawMessage {
	b, _ := json.Marshal(v)
	return b
}
