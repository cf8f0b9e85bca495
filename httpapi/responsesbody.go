package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"gatehouse/provider"
	"reflect"
	"regexp"
	"slices"

	"gatehouse"
)

// A Responses request is read as a chat completion is (see chatbody.go):
// every spelling that could fold together is refused, only the fields
// Gatehouse knows how to bill are accepted, and the provider is sent a
// body re-encoded from the parsed values. The Responses API has more ways
// than Chat Completions to make a provider spend what the request does not
// show (stored context, background runs, server tools), each refused with
// the reason.

// responsesFields are the request fields forwarded to providers (but
// preset, provider and background, which Gatehouse reads and removes).
var responsesFields = map[string]bool{
	"model": true, "input": true, "instructions": true, "stream": true,
	"max_output_tokens": true, "max_tool_calls": true, "temperature": true, "top_p": true, "top_k": true,
	"presence_penalty": true, "frequency_penalty": true, "top_logprobs": true,
	"tools": true, "tool_choice": true, "parallel_tool_calls": true, "text": true, "reasoning": true,
	"truncation": true, "include": true, "metadata": true, "user": true, "safety_identifier": true,
	"prompt_cache_key": true, "session_id": true, "service_tier": true, "store": true, "background": true,
	"preset": true, "provider": true, "usage": true, "models": true, "route": true,
}

// storedContext is why a request may not pull in what the provider stored.
const storedContext = "it pulls in context the provider stored, which Gatehouse can neither see nor bound (and Gatehouse has the provider store nothing); send the whole conversation in input"

// refusedResponsesFields are known fields that make the provider bill what
// the reservation cannot bound; the reason says why.
var refusedResponsesFields = map[string]string{
	"previous_response_id":   storedContext,
	"conversation":           storedContext,
	"prompt":                 "a stored prompt template adds text Gatehouse can neither see nor bound; send its text in instructions or input",
	"plugins":                "plugins are billed apart from tokens, which Gatehouse does not price",
	"stop_server_tools_when": "server tools are billed apart from tokens, which Gatehouse does not price",
	"modalities":             "only text output is priced by Gatehouse; leave modalities out",
	"image_config":           "images are not priced by Gatehouse",
	"cache_control":          "cache writes are billed above the prompt price, which Gatehouse does not price",
	"prompt_cache_options":   "cache writes are billed above the prompt price, which Gatehouse does not price",
	"debug":                  "OpenRouter's debug output has no counterpart in Gatehouse",
	"trace":                  "OpenRouter's trace settings have no counterpart in Gatehouse, which traces to the workspace's observability destinations",
	"messages":               "the Responses API takes input (and instructions), not messages",
	"max_tokens":             "use max_output_tokens",
	"max_completion_tokens":  "use max_output_tokens",
	"n":                      "generates several responses per request; Gatehouse reserves for one",
}

// foldedResponsesFields maps folded names to the exact names of known
// fields.
var foldedResponsesFields = foldedNames(responsesFields, refusedResponsesFields)

// foldedNames maps the folded names of known and refused fields to their
// exact names.
func foldedNames(known map[string]bool, refused map[string]string) map[string]string {
	m := map[string]string{}
	for name := range known {
		m[foldKey(name)] = name
	}
	for name := range refused {
		m[foldKey(name)] = name
	}
	return m
}

// responsesRequest is the part of a Responses request Gatehouse reads.
type responsesRequest struct {
	Model           string            `json:"model"`
	Input           json.RawMessage   `json:"input"`
	Instructions    *string           `json:"instructions"`
	Stream          bool              `json:"stream"`
	MaxOutputTokens *int              `json:"max_output_tokens"`
	MaxToolCalls    *int              `json:"max_tool_calls"`
	TopLogprobs     *int              `json:"top_logprobs"`
	Temperature     *float64          `json:"temperature"`
	TopP            *float64          `json:"top_p"`
	TopK            *int              `json:"top_k"`
	Presence        *float64          `json:"presence_penalty"`
	Frequency       *float64          `json:"frequency_penalty"`
	Tools           json.RawMessage   `json:"tools"`
	ToolChoice      json.RawMessage   `json:"tool_choice"`
	ParallelTools   *bool             `json:"parallel_tool_calls"`
	Text            json.RawMessage   `json:"text"`
	Reasoning       json.RawMessage   `json:"reasoning"`
	Truncation      *string           `json:"truncation"`
	Include         []string          `json:"include"`
	Metadata        map[string]string `json:"metadata"`
	User            *string           `json:"user"`
	SafetyID        *string           `json:"safety_identifier"`
	PromptCacheKey  *string           `json:"prompt_cache_key"`
	SessionID       *string           `json:"session_id"`
	ServiceTier     *string           `json:"service_tier"`
	Store           *bool             `json:"store"`
	Background      *bool             `json:"background"`
	Preset          *string           `json:"preset"`
	Provider        json.RawMessage   `json:"provider"`
	Usage           json.RawMessage   `json:"usage"`
	Models          []string          `json:"models"`
	Route           *string           `json:"route"`
	prefs           *provider.ProviderPreferences
	// messages are the instructions and the input as a list of items, for
	// the content kept of the call and its trace.
	messages json.RawMessage
}

// parseResponses checks the bytes of a Responses request (the client's,
// or those of a request a preset was applied to) and returns its fields
// re-encoded from the parsed values (responsesModel removes those that
// are not forwarded).
func parseResponses(raw []byte) (responsesRequest, map[string]json.RawMessage, error) {
	var req responsesRequest
	ms, err := readObject(raw)
	if err != nil {
		return req, nil, err
	}
	if err := checkKeysOf(keysOf(ms), responsesFields, foldedResponsesFields, refusedResponsesFields, ""); err != nil {
		return req, nil, err
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return req, nil, decodeError(err, reflect.TypeOf(req))
	}
	if err := req.check(); err != nil {
		return req, nil, err
	}
	return req, canonical(ms), nil
}

// check validates what a Responses request may not leave to the provider.
func (req *responsesRequest) check() error {
	if req.Model == "" && req.Preset == nil && len(req.Models) == 0 {
		return gatehouse.FieldError("model", "is required, such as openai/gpt-4o-mini (GET /api/v1/models lists them)")
	}
	if err := firstError(req.checkSettings, req.checkTools, req.checkInput); err != nil {
		return err
	}
	if err := readUsageAccounting(req.Usage); err != nil {
		return err
	}
	if err := checkModels(req.Models, req.Route); err != nil {
		return err
	}
	var err error
	req.prefs, err = readProvider(req.Provider)
	return err
}

// firstError runs checks in order and returns the first error.
func firstError(checks ...func() error) error {
	for _, c := range checks {
		if err := c(); err != nil {
			return err
		}
	}
	return nil
}

// checkSettings checks the request's scalar settings: the caps, and the
// switches that could make the provider bill what Gatehouse cannot see.
func (req *responsesRequest) checkSettings() error {
	for _, f := range []struct {
		name    string
		v       *int
		lo, hi  int
		problem string
	}{
		{"max_output_tokens", req.MaxOutputTokens, 1, 10_000_000, "must be a positive integer"},
		{"max_tool_calls", req.MaxToolCalls, 1, 10_000, "must be an integer from 1 to 10000"},
		{"top_logprobs", req.TopLogprobs, 0, 20, "must be an integer from 0 to 20"},
	} {
		if f.v != nil && (*f.v < f.lo || *f.v > f.hi) {
			return gatehouse.FieldError(f.name, "%s", f.problem)
		}
	}
	switch {
	case req.Background != nil && *req.Background:
		return gatehouse.FieldError("background", "must be false: a background response runs on after the answer, where Gatehouse can neither meter nor stop it")
	case req.Store != nil && *req.Store:
		return gatehouse.FieldError("store", "must be false: Gatehouse has the provider store nothing, so that no later request can pull in context it cannot see")
	case req.ServiceTier != nil && *req.ServiceTier != "auto" && *req.ServiceTier != "default":
		return gatehouse.FieldError("service_tier", "must be auto or default: the other tiers are billed at other prices than the providers file's")
	case req.Truncation != nil && *req.Truncation != "auto" && *req.Truncation != "disabled":
		return gatehouse.FieldError("truncation", "must be auto or disabled")
	case req.SessionID != nil && (*req.SessionID == "" || len(*req.SessionID) > 256):
		return gatehouse.FieldError("session_id", "must be a non-empty string of at most 256 bytes")
	case req.Instructions != nil && !plainText(*req.Instructions):
		return gatehouse.FieldError("instructions", "must be UTF-8 text without NUL characters")
	}
	for i, inc := range req.Include {
		if inc != "message.output_text.logprobs" {
			return gatehouse.FieldError(fmt.Sprintf("include[%d]", i), "%q is not accepted: only message.output_text.logprobs is; the others return what server tools, images or encrypted reasoning made, which Gatehouse does not accept", truncateRunes(inc, 60))
		}
	}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
	}{{"text", req.Text}, {"reasoning", req.Reasoning}} {
		if v := bytes.TrimSpace(f.raw); len(v) > 0 && v[0] != '{' && string(v) != "null" {
			return gatehouse.FieldError(f.name, "must be an object")
		}
	}
	return nil
}

// maxTools bounds the tools of a request, as presets bound theirs.
const maxTools = 128

// functionToolFields are the fields of a function tool.
var functionToolFields = map[string]bool{"type": true, "name": true, "description": true, "parameters": true, "strict": true}

// checkTools accepts function tools only, and a tool choice of none, auto,
// required or one function: server tools (web search, file search, code
// interpreter, MCP, ...) are billed apart from tokens, or pull in context
// Gatehouse cannot see.
func (req *responsesRequest) checkTools() error {
	if v := bytes.TrimSpace(req.Tools); len(v) > 0 && string(v) != "null" {
		var tools []json.RawMessage
		if err := json.Unmarshal(v, &tools); err != nil {
			return gatehouse.FieldError("tools", "must be an array of tools")
		}
		if len(tools) > maxTools {
			return gatehouse.FieldError("tools", "must have at most %d tools", maxTools)
		}
		for i, t := range tools {
			if err := checkTool(t, fmt.Sprintf("tools[%d]", i)); err != nil {
				return err
			}
		}
	}
	v := bytes.TrimSpace(req.ToolChoice)
	var s string
	switch {
	case len(v) == 0 || string(v) == "null":
		return nil
	case json.Unmarshal(v, &s) == nil:
		if !slices.Contains([]string{"none", "auto", "required"}, s) {
			return gatehouse.FieldError("tool_choice", "must be none, auto, required or a function to call")
		}
		return nil
	}
	if err := checkTyped(v, "tool_choice", map[string]bool{"type": true, "name": true}, "function",
		"must be none, auto, required or a function to call, such as {\"type\": \"function\", \"name\": \"get_weather\"}: choices of server tools are not accepted"); err != nil {
		return err
	}
	var choice functionTool
	if err := decodeAt(v, "tool_choice", &choice); err != nil {
		return err
	}
	if !toolNamePattern.MatchString(choice.Name) {
		return gatehouse.FieldError("tool_choice.name", "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	return nil
}

// functionTool is a function tool of a Responses request.
type functionTool struct {
	Name        string          `json:"name"`
	Description *string         `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Strict      *bool           `json:"strict"`
}

// toolNamePattern is what OpenAI accepts as a function's name.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// checkTool accepts a function tool.
func checkTool(raw json.RawMessage, at string) error {
	if err := checkTyped(raw, at, functionToolFields, "function",
		"only function tools are accepted: server tools are billed apart from tokens, which Gatehouse does not price"); err != nil {
		return err
	}
	var t functionTool
	if err := decodeAt(raw, at, &t); err != nil {
		return err
	}
	if !toolNamePattern.MatchString(t.Name) {
		return gatehouse.FieldError(at+".name", "must be 1 to 64 letters, digits, underscores or hyphens")
	}
	if p := bytes.TrimSpace(t.Parameters); len(p) > 0 && p[0] != '{' && string(p) != "null" {
		return gatehouse.FieldError(at+".parameters", "must be an object (a JSON Schema)")
	}
	return nil
}

// decodeAt decodes the object at (a field path) into dst, naming the
// field of a value of the wrong type under at.
func decodeAt(raw json.RawMessage, at string, dst any) error {
	if err := json.Unmarshal(raw, dst); err != nil {
		return underField(at, decodeError(err, reflect.TypeOf(dst).Elem()))
	}
	return nil
}

// checkTyped checks an object whose fields must be among known and whose
// type must be want; problem says what else it may not be.
func checkTyped(raw json.RawMessage, at string, known map[string]bool, want, problem string) error {
	keys, kind, err := itemKeys(raw, at)
	if err != nil {
		return err
	}
	if kind != want {
		return gatehouse.FieldError(at+".type", "%s", problem)
	}
	return checkKeysOf(keys, known, nil, nil, at+".")
}

// itemKeys returns the keys of an object, in order, and its type: the
// string under the exact key "type" ("" when there is none; a spelling
// that folds to it is refused with the keys).
func itemKeys(raw json.RawMessage, at string) ([]string, string, error) {
	keys, err := objectKeys(raw)
	if err != nil {
		return nil, "", gatehouse.FieldError(at, "must be an object")
	}
	var obj map[string]json.RawMessage
	_ = json.Unmarshal(raw, &obj)
	var kind string
	if t, ok := obj["type"]; ok && (string(t) == "null" || json.Unmarshal(t, &kind) != nil) {
		return nil, "", gatehouse.FieldError(at+".type", "must be a string")
	}
	return keys, kind, nil
}
