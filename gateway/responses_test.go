package gateway

import (
	"encoding/json"
	"gatehouse/provider"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestInspectResponse reads what metering and tracing need of a response
// object, whatever else it holds: usage only with both counts, the text of
// its messages, the reasoning of its reasoning items, and why it ended.
func TestInspectResponse(t *testing.T) {
	for _, tc := range []struct {
		name, answer string
		want         provider.Completion
	}{
		{"completed", `{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":5},
			"output":[{"type":"reasoning","summary":[{"type":"summary_text","text":"why"}]},
			{"type":"message","content":[{"type":"output_text","text":"Hel"},{"type":"refusal","refusal":"no"},{"type":"output_text","text":"lo"}]}]}`,
			provider.Completion{UpstreamID: "resp_1", PromptTokens: 3, CompletionTokens: 5, UsageKnown: true, Output: "Hello", Reasoning: "why", FinishReason: "stop"}},
		{"a function call", `{"status":"completed","output":[{"type":"function_call","name":"f","arguments":"{}"}]}`,
			provider.Completion{FinishReason: "tool_calls"}},
		{"cut at the cap", `{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"usage":{"input_tokens":3}}`,
			provider.Completion{FinishReason: "length"}},
		{"filtered", `{"status":"incomplete","incomplete_details":{"reason":"content_filter"}}`, provider.Completion{FinishReason: "content_filter"}},
		{"failed", `{"status":"failed","usage":{"input_tokens":3,"output_tokens":0}}`,
			provider.Completion{FinishReason: "error", PromptTokens: 3, UsageKnown: true}},
		{"odd output, usage kept", `{"status":"completed","output":"nonsense","usage":{"input_tokens":1,"output_tokens":2}}`,
			provider.Completion{FinishReason: "stop", PromptTokens: 1, CompletionTokens: 2, UsageKnown: true}},
	} {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.answer), &obj); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(tc.want, inspectResponse(obj)); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.name, diff)
		}
	}
}

// TestResponsesEvent: the deltas bring the text, the final events (and
// only they) are held back, with their usage.
func TestResponsesEvent(t *testing.T) {
	for _, tc := range []struct {
		event string
		want  provider.Completion
		final bool
	}{
		{`{"type":"response.created","response":{"id":"resp_1","status":"in_progress"}}`, provider.Completion{UpstreamID: "resp_1"}, false},
		{`{"type":"response.output_text.delta","delta":"Hel"}`, provider.Completion{Output: "Hel"}, false},
		{`{"type":"response.reasoning_summary_text.delta","delta":"hm"}`, provider.Completion{Reasoning: "hm"}, false},
		{`{"type":"response.output_text.done","text":"Hello"}`, provider.Completion{}, false},
		{`{"type":"response.completed","response":{"id":"resp_1","status":"completed","usage":{"input_tokens":3,"output_tokens":5},
			"output":[{"type":"message","content":[{"type":"output_text","text":"Hello"}]}]}}`,
			provider.Completion{UpstreamID: "resp_1", PromptTokens: 3, CompletionTokens: 5, UsageKnown: true, FinishReason: "stop"}, true},
		{`{"type":"response.incomplete","response":{"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`,
			provider.Completion{FinishReason: "length"}, true},
		{`{"type":"response.failed","response":{"status":"failed"}}`, provider.Completion{FinishReason: "error"}, true},
	} {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal([]byte(tc.event), &obj); err != nil {
			t.Fatal(err)
		}
		got, final := responsesEvent(obj)
		if diff := cmp.Diff(tc.want, got); diff != "" || final != tc.final {
			t.Errorf("%s: final %t (-want +got):\n%s", tc.event, final, diff)
		}
	}
}
