package preset

import (
	"encoding/json"
	"gatehouse"
	"slices"
)

// A preset version holds its configuration in the Chat Completions form
// (PresetFields); a Responses request that names a preset gets it in the
// Responses form. Fields of that form that the Responses API has no field
// for are refused rather than dropped unsaid.

// responsesSameFields are the preset fields a Responses request takes
// under the same name and in the same shape.
var responsesSameFields = []string{"temperature", "top_p", "top_k", "presence_penalty", "frequency_penalty",
	"top_logprobs", "parallel_tool_calls", "provider", "models"}

// chatOnlyFields are the preset fields the Responses API has no field for.
var chatOnlyFields = []string{"min_p", "top_a", "repetition_penalty", "seed", "stop", "logit_bias", "logprobs"}

// ApplyResponses is Apply for a Responses request: the preset's fields in
// the Responses form (max_tokens as max_output_tokens, response_format and
// verbosity as text.format and text.verbosity, reasoning_effort as
// reasoning.effort, function tools and the tool choice in the Responses
// shape), each only where the request does not set it (text field by
// field), and its system prompt as a system message before the request's
// input (a string input becomes a user message after it). A preset that
// sets a field the Responses API lacks (stop, seed, logit_bias...) is
// refused, naming the field. The result is a request like any other: the
// caller checks it as such.
func (u PresetUse) ApplyResponses(body map[string]json.RawMessage, v *gatehouse.PresetVersion) (map[string]json.RawMessage, error) {
	out, err := u.withModel(body, v)
	if err != nil {
		return nil, err
	}
	for _, k := range chatOnlyFields {
		if _, ok := v.Config[k]; ok {
			return nil, gatehouse.FieldError(u.Field, "preset %q (version %d) sets %s, which the Responses API has no field for: use the preset with POST /api/v1/chat/completions, or make a version without it", u.Slug, v.Version, k)
		}
	}
	fill := func(k string, raw json.RawMessage) {
		if raw != nil && !isSet(out, k) {
			out[k] = raw
		}
	}
	for _, k := range responsesSameFields {
		fill(k, v.Config[k])
	}
	fill("max_output_tokens", v.Config["max_tokens"])
	fill("reasoning", presetReasoningForResponses(v.Config))
	tools, choice, err := presetToolsForResponses(v.Config)
	if err != nil {
		return nil, err
	}
	fill("tools", tools)
	fill("tool_choice", choice)
	if out["text"], err = presetText(out["text"], v.Config); err != nil {
		return nil, err
	}
	if out["text"] == nil {
		delete(out, "text")
	}
	if v.SystemPrompt != nil {
		if out["input"], err = withSystemInput(out["input"], *v.SystemPrompt); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// presetReasoningForResponses is the preset's reasoning with its
// reasoning_effort as the effort (when the reasoning sets none); nil when
// it sets neither.
func presetReasoningForResponses(cfg gatehouse.PresetConfig) json.RawMessage {
	var r map[string]json.RawMessage
	if raw, ok := cfg["reasoning"]; ok {
		_ = json.Unmarshal(raw, &r)
	}
	if effort, ok := cfg["reasoning_effort"]; ok {
		if r == nil {
			r = map[string]json.RawMessage{}
		}
		if _, set := r["effort"]; !set {
			r["effort"] = effort
		}
	}
	if r == nil {
		return nil
	}
	return mustJSON(r)
}

// presetToolsForResponses returns the preset's function tools and tool
// choice in the Responses shape, where the function's fields sit beside
// its type.
func presetToolsForResponses(cfg gatehouse.PresetConfig) (tools, choice json.RawMessage, err error) {
	if raw, ok := cfg["tools"]; ok {
		var in []presetTool
		if err := json.Unmarshal(raw, &in); err != nil {
			return nil, nil, err
		}
		out := make([]map[string]any, len(in))
		for i, t := range in {
			f := t.Function
			tool := map[string]any{"type": "function", "name": f.Name, "parameters": f.Parameters}
			if f.Parameters == nil {
				tool["parameters"] = nil
			}
			if f.Description != nil {
				tool["description"] = *f.Description
			}
			if f.Strict != nil {
				tool["strict"] = *f.Strict
			}
			out[i] = tool
		}
		tools = mustJSON(out)
	}
	if raw, ok := cfg["tool_choice"]; ok {
		var fn struct {
			Function *struct {
				Name string `json:"name"`
			} `json:"function"`
		}
		choice = raw
		if json.Unmarshal(raw, &fn) == nil && fn.Function != nil {
			choice = mustJSON(map[string]string{"type": "function", "name": fn.Function.Name})
		}
	}
	return tools, choice, nil
}

// presetText merges the preset's response_format and verbosity into the
// request's text configuration: the request's format and verbosity win.
// It returns nil when there is no text configuration.
func presetText(raw json.RawMessage, cfg gatehouse.PresetConfig) (json.RawMessage, error) {
	format, hasFormat := cfg["response_format"]
	verbosity, hasVerbosity := cfg["verbosity"]
	if !hasFormat && !hasVerbosity {
		return raw, nil
	}
	text := map[string]json.RawMessage{}
	if !isNull(raw) {
		if err := json.Unmarshal(raw, &text); err != nil || text == nil {
			return nil, gatehouse.FieldError("text", "must be an object")
		}
	}
	if hasFormat && !isSet(text, "format") {
		var f presetFormat
		if err := json.Unmarshal(format, &f); err != nil {
			return nil, err
		}
		text["format"] = responsesFormatJSON(f)
	}
	if hasVerbosity && !isSet(text, "verbosity") {
		text["verbosity"] = verbosity
	}
	return mustJSON(text), nil
}

// responsesFormatJSON renders a response format in the Responses shape,
// where a JSON schema's fields sit beside its type.
func responsesFormatJSON(f presetFormat) json.RawMessage {
	out := map[string]any{"type": f.Type}
	if js := f.JSONSchema; js != nil {
		out["name"] = js.Name
		if js.Description != nil {
			out["description"] = *js.Description
		}
		if js.Schema != nil {
			out["schema"] = js.Schema
		}
		if js.Strict != nil {
			out["strict"] = *js.Strict
		}
	}
	return mustJSON(out)
}

// withSystemInput puts a system message before a Responses input: an
// array of items, or a string (then the user's message).
func withSystemInput(raw json.RawMessage, prompt string) (json.RawMessage, error) {
	system := mustJSON(map[string]string{"role": "system", "content": prompt})
	var items []json.RawMessage
	var text string
	switch {
	case isNull(raw):
	case json.Unmarshal(raw, &text) == nil:
		items = []json.RawMessage{mustJSON(map[string]string{"role": "user", "content": text})}
	case json.Unmarshal(raw, &items) != nil:
		return nil, gatehouse.FieldError("input", "must be a string or an array of input items")
	}
	return mustJSON(slices.Concat([]json.RawMessage{system}, items)), nil
}
