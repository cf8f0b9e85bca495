package provider

import (
	"gatehouse"
	"testing"
)

// TestCostSplit: the parts add up to the charged cost, whatever it was.
func TestCostSplit(t *testing.T) {
	m := &Model{PromptPrice: 333_333_333, CompletionPrice: gatehouse.USD(3) / 2}
	for _, tc := range []struct {
		name                     string
		prompt, completion       int64
		cost, wantPrompt, wantCo gatehouse.Money
	}{
		{"exact usage", 11, 7, m.Cost(11, 7), m.Cost(11, 0), m.Cost(11, 7) - m.Cost(11, 0)},
		{"capped below the prompt's part", 1_000_000, 7, 1000, 1000, 0},
		{"no usage: all completion", 0, 0, 5000, 0, 5000},
		{"free", 10, 10, 0, 0, 0},
	} {
		p, c := m.CostSplit(&gatehouse.Generation{PromptTokens: tc.prompt, CompletionTokens: tc.completion, Cost: tc.cost})
		if p != tc.wantPrompt || c != tc.wantCo || p+c != tc.cost {
			t.Errorf("%s: split %s + %s, want %s + %s", tc.name, p, c, tc.wantPrompt, tc.wantCo)
		}
	}
}
