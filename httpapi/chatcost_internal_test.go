package httpapi

import (
	"encoding/json"
	"testing"

	"gatehouse"
	"gatehouse/internal/jsonobj"
	"gatehouse/provider"
)

// TestWithCost pins the usage object of an answer, byte for byte: the
// provider's usage with the charged counts, its whole-number token details
// only, and the cost fields in OpenRouter's shape.
func TestWithCost(t *testing.T) {
	m := &provider.Model{Provider: "acme", ID: "m", PromptPrice: gatehouse.Money(3_000_000_000), CompletionPrice: gatehouse.Money(15_000_000_000)}
	g := &gatehouse.Generation{PromptTokens: 12, CompletionTokens: 7, Cost: m.Cost(12, 7)}
	byok := *g
	byok.BYOK = true
	for _, tc := range []struct {
		usage string // absent when empty
		g     *gatehouse.Generation
		want  string
	}{
		{"", g, `{"id":"x","usage":{"completion_tokens":7,"cost":0.000141,"cost_details":{"upstream_inference_cost":null,"upstream_inference_prompt_cost":0.000036,"upstream_inference_completions_cost":0.000105},"is_byok":false,"prompt_tokens":12,"total_tokens":19}}`},
		{`null`, g, `{"id":"x","usage":{"completion_tokens":7,"cost":0.000141,"cost_details":{"upstream_inference_cost":null,"upstream_inference_prompt_cost":0.000036,"upstream_inference_completions_cost":0.000105},"is_byok":false,"prompt_tokens":12,"total_tokens":19}}`},
		{`{"prompt_tokens":99,"completion_tokens":1,"total_tokens":100,"extra":"kept","prompt_tokens_details":{"cached_tokens":4,"audio_tokens":1.5,"x":-1},"completion_tokens_details":"odd"}`, g, `{"id":"x","usage":{"completion_tokens":7,"cost":0.000141,"cost_details":{"upstream_inference_cost":null,"upstream_inference_prompt_cost":0.000036,"upstream_inference_completions_cost":0.000105},"extra":"kept","is_byok":false,"prompt_tokens":12,"prompt_tokens_details":{"cached_tokens":4},"total_tokens":19}}`},
		{`{"prompt_tokens":1,"prompt_tokens":2,"cost":0.5,"is_byok":true,"cost_details":{}}`, &byok, `{"id":"x","usage":{"completion_tokens":7,"cost":0.000141,"cost_details":{"upstream_inference_cost":0.000141,"upstream_inference_prompt_cost":0.000036,"upstream_inference_completions_cost":0.000105},"is_byok":true,"prompt_tokens":12,"total_tokens":19}}`},
		{`[1]`, &byok, `{"id":"x","usage":{"completion_tokens":7,"cost":0.000141,"cost_details":{"upstream_inference_cost":0.000141,"upstream_inference_prompt_cost":0.000036,"upstream_inference_completions_cost":0.000105},"is_byok":true,"prompt_tokens":12,"total_tokens":19}}`},
	} {
		obj := map[string]json.RawMessage{"id": json.RawMessage(`"x"`)}
		if tc.usage != "" {
			obj["usage"] = json.RawMessage(tc.usage)
		}
		withCost(obj, tc.g, m)
		if got := string(jsonobj.Marshal(obj)); got != tc.want {
			t.Errorf("usage %s: got\n%s\nwant\n%s", tc.usage, got, tc.want)
		}
	}
}
