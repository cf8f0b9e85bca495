package preset_test

import (
	"bytes"
	"encoding/json"
	"gatehouse/internal/errtest"
	"gatehouse/preset"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

func TestReadPresetUse(t *testing.T) {
	for _, tc := range []struct {
		model  string
		preset *string
		want   preset.PresetUse
		ok     bool
		field  string // of the error, "" for none
	}{
		{model: "acme/chat"},
		{model: "@preset/support-bot", want: preset.PresetUse{Slug: "support-bot", Field: "model"}, ok: true},
		{model: "@preset/support-bot@12", want: preset.PresetUse{Slug: "support-bot", Version: 12, Field: "model"}, ok: true},
		{model: "acme/chat@preset/support-bot", want: preset.PresetUse{Slug: "support-bot", Field: "model", Model: "acme/chat"}, ok: true},
		{model: "acme/chat@preset/bot@2", want: preset.PresetUse{Slug: "bot", Version: 2, Field: "model", Model: "acme/chat"}, ok: true},
		{model: "acme/chat", preset: new("bot"), want: preset.PresetUse{Slug: "bot", Field: "preset", Model: "acme/chat"}, ok: true},
		{preset: new("bot@3"), want: preset.PresetUse{Slug: "bot", Version: 3, Field: "preset"}, ok: true},
		{preset: new("@preset/bot"), want: preset.PresetUse{Slug: "bot", Field: "preset"}, ok: true},
		{model: "@preset/", field: "model"},
		{model: "@preset/Bot", field: "model"},
		{model: "@preset/bot@0", field: "model"},
		{model: "@preset/bot@01", field: "model"},
		{model: "@preset/bot@x", field: "model"},
		{model: "@preset/bot@99999999999", field: "model"},
		{model: "@preset/bot@1@2", field: "model"},
		{model: "a@b@preset/bot", field: "model"},
		{model: "@preset/bot", preset: new("bot"), field: "preset"},
		{preset: new(""), field: "preset"},
		{preset: new("bot@"), field: "preset"},
	} {
		use, ok, err := preset.ReadPresetUse(tc.model, tc.preset)
		errtest.WantField(t, tc.model, err, tc.field)
		if tc.field != "" {
			continue
		}
		if ok != tc.ok || use != tc.want {
			t.Errorf("ReadPresetUse(%q, %v) = %+v, %v; want %+v, %v", tc.model, tc.preset, use, ok, tc.want, tc.ok)
		}
	}
}

// body parses the top-level fields of a JSON object.
func body(t *testing.T, s string) map[string]json.RawMessage {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		t.Fatal(err)
	}
	return m
}

// compactJSON renders fields as one JSON object with sorted keys.
func compactJSON(t *testing.T, fields map[string]json.RawMessage) string {
	t.Helper()
	raw, err := json.Marshal(fields)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Compact(&out, raw); err != nil {
		t.Fatal(err)
	}
	return out.String()
}

func TestPresetApply(t *testing.T) {
	v := &gatehouse.PresetVersion{Version: 4, SystemPrompt: new("Be brief."), Config: gatehouse.PresetConfig{
		"model": json.RawMessage(`"acme/chat"`), "temperature": json.RawMessage(`0.2`), "max_tokens": json.RawMessage(`50`),
		"top_p": json.RawMessage(`0.9`), "provider": json.RawMessage(`{"only":["acme"]}`),
	}}
	for _, tc := range []struct {
		name, request string
		use           preset.PresetUse
		want          string
		field         string
	}{
		{"the preset fills in", `{"model":"@preset/p","messages":[{"role":"user","content":"hi"}]}`,
			preset.PresetUse{Slug: "p", Field: "model"},
			`{"max_tokens":50,"messages":[{"content":"Be brief.","role":"system"},{"role":"user","content":"hi"}],"model":"acme/chat","provider":{"only":["acme"]},"temperature":0.2,"top_p":0.9}`, ""},
		{"the request wins field by field; null is unset", `{"model":"@preset/p","temperature":1,"top_p":null,"messages":[{"role":"system","content":"Mine."}]}`,
			preset.PresetUse{Slug: "p", Field: "model"},
			`{"max_tokens":50,"messages":[{"content":"Be brief.","role":"system"},{"role":"system","content":"Mine."}],"model":"acme/chat","provider":{"only":["acme"]},"temperature":1,"top_p":0.9}`, ""},
		{"a cap of the request replaces the preset's", `{"model":"@preset/p","max_completion_tokens":7,"messages":[]}`,
			preset.PresetUse{Slug: "p", Field: "model"},
			`{"max_completion_tokens":7,"messages":[{"content":"Be brief.","role":"system"}],"model":"acme/chat","provider":{"only":["acme"]},"temperature":0.2,"top_p":0.9}`, ""},
		{"the request's own model", `{"model":"other/mini@preset/p","messages":[]}`,
			preset.PresetUse{Slug: "p", Field: "model", Model: "other/mini"},
			`{"max_tokens":50,"messages":[{"content":"Be brief.","role":"system"}],"model":"other/mini","provider":{"only":["acme"]},"temperature":0.2,"top_p":0.9}`, ""},
		{"the preset field goes", `{"preset":"p","messages":[]}`,
			preset.PresetUse{Slug: "p", Field: "preset"},
			`{"max_tokens":50,"messages":[{"content":"Be brief.","role":"system"}],"model":"acme/chat","provider":{"only":["acme"]},"temperature":0.2,"top_p":0.9}`, ""},
		{"messages that are not an array", `{"model":"@preset/p","messages":{}}`,
			preset.PresetUse{Slug: "p", Field: "model"}, "", "messages"},
	} {
		got, err := tc.use.Apply(body(t, tc.request), v)
		errtest.WantField(t, tc.name, err, tc.field)
		if err == nil {
			if diff := cmp.Diff(tc.want, compactJSON(t, got)); diff != "" {
				t.Errorf("%s (-want +got):\n%s", tc.name, diff)
			}
		}
	}
	none := &gatehouse.PresetVersion{Version: 1, Config: gatehouse.PresetConfig{}}
	_, err := preset.PresetUse{Slug: "p", Field: "model"}.Apply(body(t, `{"model":"@preset/p","messages":[]}`), none)
	errtest.WantField(t, "a preset without a model, and a request without one", err, "model")
}

// draftOf decodes a request body into req and returns its draft as one
// JSON object: the config and the system prompt.
func draftOf(t *testing.T, req interface {
	Draft() (gatehouse.PresetDraft, error)
}, s string) (string, error) {
	t.Helper()
	dec := json.NewDecoder(strings.NewReader(s))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		t.Fatalf("decode %s: %v", s, err)
	}
	d, err := req.Draft()
	if err != nil {
		return "", err
	}
	out := map[string]json.RawMessage{"config": mustMarshal(t, d.Config), "system_prompt": mustMarshal(t, d.SystemPrompt)}
	return compactJSON(t, out), nil
}

func mustMarshal(t *testing.T, v any) json.RawMessage {
	t.Helper()
	raw, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}

func TestPresetDrafts(t *testing.T) {
	for _, tc := range []struct {
		name string
		req  interface {
			Draft() (gatehouse.PresetDraft, error)
		}
		body, want string
	}{
		{"chat: configuration kept, the request's own fields ignored", &preset.ChatPresetRequest{}, `{
			"model": "acme/chat", "stream": true, "user": "u", "session_id": "s", "metadata": {"a": "b"},
			"messages": [{"role": "system", "content": "One."}, {"role": "developer", "content": [{"type": "text", "text": "Two."}]},
			             {"role": "user", "content": "hi"}, {"role": "system", "content": "Not leading."}],
			"max_completion_tokens": 300, "temperature": 0.7, "top_p": 0.5, "top_k": 40, "seed": 7, "stop": "END",
			"logit_bias": {"50256": -100}, "logprobs": true, "top_logprobs": 3, "parallel_tool_calls": false,
			"response_format": {"type": "json_schema", "json_schema": {"name": "answer", "schema": {"type": "object"}, "strict": true}},
			"tools": [{"type": "function", "function": {"name": "get_weather", "description": "d", "parameters": {"type": "object"}}, "cache_control": {"type": "ephemeral"}}],
			"tool_choice": {"type": "function", "function": {"name": "get_weather"}},
			"reasoning": {"effort": "high"}, "reasoning_effort": "low", "verbosity": "high",
			"provider": {"only": ["acme"], "sort": "price", "max_price": {"prompt": "1.5", "completion": 2}}, "models": [], "plugins": null}`,
			`{"config":{"logit_bias":{"50256":-100},"logprobs":true,"max_tokens":300,"model":"acme/chat","parallel_tool_calls":false,` +
				`"provider":{"max_price":{"prompt":1.5,"completion":2},"only":["acme"],"sort":"price"},` +
				`"reasoning":{"effort":"high"},"reasoning_effort":"low",` +
				`"response_format":{"type":"json_schema","json_schema":{"name":"answer","schema":{"type":"object"},"strict":true}},` +
				`"seed":7,"stop":"END","temperature":0.7,"tool_choice":{"function":{"name":"get_weather"},"type":"function"},` +
				`"tools":[{"type":"function","function":{"name":"get_weather","description":"d","parameters":{"type":"object"}}}],` +
				`"top_k":40,"top_logprobs":3,"top_p":0.5,"verbosity":"high"},"system_prompt":"One.\n\nTwo."}`},
		{"chat: nothing but messages", &preset.ChatPresetRequest{}, `{"messages": [{"role": "user", "content": "hi"}], "stream": false}`,
			`{"config":{},"system_prompt":null}`},
		{"messages: Anthropic fields in the Chat Completions form", &preset.MessagesPresetRequest{}, `{
			"model": "acme/chat", "max_tokens": 1024, "system": [{"type": "text", "text": "Be kind."}, {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}],
			"messages": [{"role": "user", "content": "hi"}], "stop_sequences": ["\n\nHuman:"], "temperature": 0.3, "top_k": 5,
			"thinking": {"type": "enabled", "budget_tokens": 2048}, "output_config": {"effort": "max", "format": {"type": "json_schema", "schema": {"type": "object"}}},
			"tools": [{"name": "lookup", "description": "Look up", "input_schema": {"type": "object", "properties": {}}}],
			"tool_choice": {"type": "any", "disable_parallel_tool_use": true}, "metadata": {"user_id": "u"}, "stream": true}`,
			`{"config":{"max_tokens":1024,"model":"acme/chat","parallel_tool_calls":false,"reasoning":{"effort":"xhigh","max_tokens":2048},` +
				`"response_format":{"type":"json_schema","json_schema":{"name":"output","schema":{"type":"object"}}},"stop":["\n\nHuman:"],"temperature":0.3,` +
				`"tool_choice":"required","tools":[{"type":"function","function":{"name":"lookup","description":"Look up","parameters":{"type":"object","properties":{}}}}],"top_k":5},` +
				`"system_prompt":"Be kind.\n\nBe brief."}`},
		{"messages: a named tool, thinking off", &preset.MessagesPresetRequest{}, `{"model": "acme/chat", "messages": null,
			"thinking": {"type": "disabled"}, "tool_choice": {"type": "tool", "name": "lookup"}}`,
			`{"config":{"model":"acme/chat","reasoning":{"enabled":false},"tool_choice":{"function":{"name":"lookup"},"type":"function"}},"system_prompt":null}`},
		{"responses: OpenAI Responses fields in the Chat Completions form", &preset.ResponsesPresetRequest{}, `{
			"model": "acme/chat", "instructions": "Answer in French.", "input": "hi", "store": false, "service_tier": null, "stream": false,
			"max_output_tokens": 200, "reasoning": {"effort": "low", "summary": "auto", "context": "x"},
			"text": {"format": {"type": "json_schema", "name": "out", "schema": {"type": "object"}, "strict": true}, "verbosity": "low"},
			"tools": [{"type": "function", "name": "f", "parameters": null, "strict": true}], "tool_choice": {"type": "function", "name": "f"},
			"parallel_tool_calls": true, "presence_penalty": 0.5}`,
			`{"config":{"max_tokens":200,"model":"acme/chat","parallel_tool_calls":true,"presence_penalty":0.5,"reasoning":{"effort":"low","summary":"auto"},` +
				`"response_format":{"type":"json_schema","json_schema":{"name":"out","schema":{"type":"object"},"strict":true}},` +
				`"tool_choice":{"function":{"name":"f"},"type":"function"},"tools":[{"type":"function","function":{"name":"f","strict":true}}],"verbosity":"low"},` +
				`"system_prompt":"Answer in French."}`},
	} {
		got, err := draftOf(t, tc.req, tc.body)
		if err != nil {
			t.Errorf("%s: %v", tc.name, err)
			continue
		}
		if diff := cmp.Diff(tc.want, got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

func TestPresetDraftRefusals(t *testing.T) {
	chat := func() interface {
		Draft() (gatehouse.PresetDraft, error)
	} {
		return &preset.ChatPresetRequest{}
	}
	messages := func() interface {
		Draft() (gatehouse.PresetDraft, error)
	} {
		return &preset.MessagesPresetRequest{}
	}
	responses := func() interface {
		Draft() (gatehouse.PresetDraft, error)
	} {
		return &preset.ResponsesPresetRequest{}
	}
	for _, tc := range []struct {
		req func() interface {
			Draft() (gatehouse.PresetDraft, error)
		}
		body  string
		field string
	}{
		{chat, `{"models": ["a/b", ""]}`, "models[1]"},
		{chat, `{"models": ["a/b", "@preset/x"]}`, "models[1]"},
		{chat, `{"plugins": [{"id": "web"}]}`, "plugins"},
		{chat, `{"model": "@preset/other"}`, "model"},
		{chat, `{"model": ""}`, "model"},
		{chat, `{"temperature": 2.5}`, "temperature"},
		{chat, `{"max_tokens": 5, "max_completion_tokens": 6}`, "max_completion_tokens"},
		{chat, `{"max_tokens": 0}`, "max_tokens"},
		{chat, `{"stop": 7}`, "stop"},
		{chat, `{"stop": ["a", ""]}`, "stop[1]"},
		{chat, `{"logit_bias": {"token": 1}}`, "logit_bias"},
		{chat, `{"logit_bias": {"1": 101}}`, "logit_bias.1"},
		{chat, `{"response_format": {"type": "grammar", "grammar": "x"}}`, "response_format.type"},
		{chat, `{"response_format": {"type": "json_schema"}}`, "response_format.json_schema"},
		{chat, `{"response_format": {"type": "json_schema", "json_schema": {"name": "bad name"}}}`, "response_format.json_schema.name"},
		{chat, `{"tools": [{"type": "openrouter:web_search"}]}`, "tools[0].type"},
		{chat, `{"tools": [{"function": {"name": "f"}}]}`, "tools[0].type"},
		{chat, `{"tools": [{"type": "function", "function": {"name": "f", "extra": 1}}]}`, "tools[0].function.extra"},
		{chat, `{"tools": [{"type": "function", "function": {"name": "f", "parameters": []}}]}`, "tools[0].function.parameters"},
		{chat, `{"tool_choice": "sometimes"}`, "tool_choice"},
		{chat, `{"tool_choice": {"type": "web_search"}}`, "tool_choice.type"},
		{chat, `{"reasoning": {"effort": "extreme"}}`, "reasoning.effort"},
		{chat, `{"verbosity": "max"}`, "verbosity"},
		{chat, `{"messages": [{"role": "system", "content": [{"type": "image_url"}]}]}`, "messages[0].content[0].type"},
		{chat, `{"messages": [{"role": 7}]}`, "messages[0].role"},
		{chat, `{"provider": {"quantizations": ["fp9"]}}`, "provider.quantizations[0]"},
		{chat, `{"provider": {"sort": "fastest"}}`, "provider.sort"},
		{chat, `{"provider": {"only": [""]}}`, "provider.only[0]"},
		{chat, `{"provider": {"sort": 1}}`, "provider.sort"},
		{chat, `{"provider": {"max_price": {"prompt": -1}}}`, "provider.max_price.prompt"},
		{chat, `{"provider": {"max_price": {"prompt": "-1"}}}`, "provider.max_price.prompt"},
		{messages, `{"fallbacks": [{"model": "a/b"}]}`, "fallbacks"},
		{messages, `{"tools": [{"type": "web_search_20250305", "name": "web_search"}]}`, "tools[0].type"},
		{messages, `{"thinking": {"type": "enabled"}}`, "thinking.budget_tokens"},
		{messages, `{"thinking": {"type": "sometimes"}}`, "thinking.type"},
		{messages, `{"tool_choice": {"type": "tool"}}`, "tool_choice.name"},
		{messages, `{"system": [{"type": "image"}]}`, "system[0].type"},
		{messages, `{"output_config": {"effort": "insane"}}`, "output_config.effort"},
		{messages, `{"output_config": {"format": {"type": "text"}}}`, "output_config.format.type"},
		{responses, `{"tools": [{"type": "web_search"}]}`, "tools[0].type"},
		{responses, `{"tool_choice": {"type": "allowed_tools", "tools": []}}`, "tool_choice.type"},
		{responses, `{"text": {"format": {"type": "grammar"}}}`, "text.format.type"},
		{responses, `{"text": {"verbosity": "loud"}}`, "text.verbosity"},
		{responses, `{"max_output_tokens": 10000001}`, "max_output_tokens"},
		{responses, `{"models": ["a b"]}`, "models[0]"},
	} {
		_, err := draftOf(t, tc.req(), tc.body)
		errtest.WantField(t, tc.body, err, tc.field)
	}
}

func TestPresetApplyResponses(t *testing.T) {
	v := &gatehouse.PresetVersion{Version: 2, SystemPrompt: new("Be brief."), Config: gatehouse.PresetConfig{
		"model": json.RawMessage(`"acme/chat"`), "max_tokens": json.RawMessage(`50`), "temperature": json.RawMessage(`0.2`),
		"reasoning_effort": json.RawMessage(`"high"`), "verbosity": json.RawMessage(`"low"`),
		"response_format": json.RawMessage(`{"type":"json_schema","json_schema":{"name":"a","schema":{"type":"object"},"strict":true}}`),
		"tools":           json.RawMessage(`[{"type":"function","function":{"name":"f","description":"d"}}]`),
		"tool_choice":     json.RawMessage(`{"type":"function","function":{"name":"f"}}`),
	}}
	use := preset.PresetUse{Slug: "p", Field: "model"}
	for _, tc := range []struct {
		name, request, want string
	}{
		{"the preset fills in, in the Responses form", `{"model":"@preset/p","input":"hi"}`,
			`{"input":[{"content":"Be brief.","role":"system"},{"content":"hi","role":"user"}],"max_output_tokens":50,"model":"acme/chat","reasoning":{"effort":"high"},"temperature":0.2,"text":{"format":{"name":"a","schema":{"type":"object"},"strict":true,"type":"json_schema"},"verbosity":"low"},"tool_choice":{"name":"f","type":"function"},"tools":[{"description":"d","name":"f","parameters":null,"type":"function"}]}`},
		{"the request wins, text field by field; input items keep their place", `{"model":"@preset/p","input":[{"role":"user","content":"x"}],"max_output_tokens":7,"text":{"verbosity":"high"},"reasoning":{"effort":"low"},"tools":[],"tool_choice":"none","temperature":null}`,
			`{"input":[{"content":"Be brief.","role":"system"},{"role":"user","content":"x"}],"max_output_tokens":7,"model":"acme/chat","reasoning":{"effort":"low"},"temperature":0.2,"text":{"format":{"name":"a","schema":{"type":"object"},"strict":true,"type":"json_schema"},"verbosity":"high"},"tool_choice":"none","tools":[]}`},
	} {
		got, err := use.ApplyResponses(body(t, tc.request), v)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if diff := cmp.Diff(tc.want, compactJSON(t, got)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
	for _, field := range []string{"stop", "seed", "logit_bias", "min_p"} {
		chat := &gatehouse.PresetVersion{Version: 1, Config: gatehouse.PresetConfig{"model": json.RawMessage(`"acme/chat"`), field: json.RawMessage(`1`)}}
		_, err := use.ApplyResponses(body(t, `{"model":"@preset/p","input":"hi"}`), chat)
		errtest.WantField(t, field, err, "model")
		if err != nil && !strings.Contains(err.Error(), field) {
			t.Errorf("%s: %v does not name it", field, err)
		}
	}
	_, err := use.ApplyResponses(body(t, `{"model":"@preset/p","input":{}}`), v)
	errtest.WantField(t, "input that is neither a string nor items", err, "input")
}
