package provider_test

import (
	"gatehouse/provider"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"gatehouse"
)

// findCatalog has models that differ in every way the filters look at.
func findCatalog(t *testing.T) *provider.Catalog {
	t.Helper()
	day := func(d int) time.Time { return time.Date(2026, 1, d, 0, 0, 0, 0, time.UTC) }
	c, err := provider.NewCatalog([]*provider.Provider{
		{ID: "openai", ProviderInfo: provider.ProviderInfo{Name: "OpenAI", ZDR: true, Datacenters: []string{"US"}}, Models: []*provider.Model{
			{ID: "gpt-4o", Name: "GPT-4o", PromptPrice: gatehouse.USD(2), CompletionPrice: gatehouse.USD(8), ContextLength: 128000,
				ModelInfo: provider.ModelInfo{Created: day(10), Tokenizer: "GPT", InputModalities: []string{"text", "image", "file"},
					SupportedParameters: []string{"tools", "tool_choice", "temperature"}, Categories: []string{"programming"}}},
			{ID: "text-embedding-3", Name: "Embedding", PromptPrice: gatehouse.USD(1),
				ModelInfo: provider.ModelInfo{Created: day(1), OutputModalities: []string{"embeddings"}}},
		}},
		{ID: "local", Models: []*provider.Model{
			{ID: "llama3.2", Name: "Llama 3.2", ContextLength: 8192,
				ModelInfo: provider.ModelInfo{Created: day(20), Tokenizer: "Llama3", Distillable: true, Categories: []string{"roleplay"}}},
			{ID: "painter", Name: "Painter", PromptPrice: gatehouse.USD(3), CompletionPrice: gatehouse.USD(3),
				ModelInfo: provider.ModelInfo{Created: day(5), OutputModalities: []string{"text", "image"}}},
		}},
		{ID: "mistral-eu", ProviderInfo: provider.ProviderInfo{Name: "Mistral", Datacenters: []string{"FR"}}, Models: []*provider.Model{
			{ID: "small", Name: "Mistral Small", PromptPrice: gatehouse.USD(1), CompletionPrice: gatehouse.USD(3), ContextLength: 32000,
				ModelInfo: provider.ModelInfo{Created: day(15), Tokenizer: "Mistral"}},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestCatalogFind(t *testing.T) {
	c := findCatalog(t)
	money := func(d int64) *gatehouse.Money { m := gatehouse.USD(d); return &m }
	days := func(d float64) *float64 { return &d }
	yes, no := true, false
	now := time.Date(2026, 1, 31, 0, 0, 0, 0, time.UTC)
	text := []string{"openai/gpt-4o", "local/llama3.2", "local/painter", "mistral-eu/small"}
	for _, tt := range []struct {
		name string
		q    provider.ModelQuery
		want []string
	}{
		{"default: text output, configuration order", provider.ModelQuery{}, text},
		{"every output", provider.ModelQuery{AllOutputs: true},
			[]string{"openai/gpt-4o", "openai/text-embedding-3", "local/llama3.2", "local/painter", "mistral-eu/small"}},
		{"any of the outputs", provider.ModelQuery{OutputModalities: []string{"image", "embeddings"}},
			[]string{"openai/text-embedding-3", "local/painter"}},
		{"all of the inputs", provider.ModelQuery{InputModalities: []string{"image", "text"}}, []string{"openai/gpt-4o"}},
		{"text in slug or name, any case", provider.ModelQuery{Text: "LLAMA"}, []string{"local/llama3.2"}},
		{"text in the name only", provider.ModelQuery{Text: "small"}, []string{"mistral-eu/small"}},
		{"category", provider.ModelQuery{Category: "programming"}, []string{"openai/gpt-4o"}},
		{"all of the parameters", provider.ModelQuery{SupportedParameters: []string{"tools", "temperature"}},
			[]string{"openai/gpt-4o", "local/llama3.2", "local/painter", "mistral-eu/small"}},
		{"a parameter only one lists", provider.ModelQuery{SupportedParameters: []string{"tools", "tool_choice", "seed"}},
			[]string{"local/llama3.2", "local/painter", "mistral-eu/small"}},
		{"min context leaves out unknown", provider.ModelQuery{MinContext: 10000}, []string{"openai/gpt-4o", "mistral-eu/small"}},
		{"prompt price range", provider.ModelQuery{MinPrice: money(1), MaxPrice: money(2)}, []string{"openai/gpt-4o", "mistral-eu/small"}},
		{"completion price max", provider.ModelQuery{MaxOutputPrice: money(3)}, []string{"local/llama3.2", "local/painter", "mistral-eu/small"}},
		{"completion price min", provider.ModelQuery{MinOutputPrice: money(4)}, []string{"openai/gpt-4o"}},
		{"arch is a prefix of the tokenizer", provider.ModelQuery{Arch: "llama"}, []string{"local/llama3.2"}},
		{"authors", provider.ModelQuery{Authors: []string{"LOCAL", "nobody"}}, []string{"local/llama3.2", "local/painter"}},
		{"providers by id or name", provider.ModelQuery{Providers: []string{"mistral", "openai"}}, []string{"openai/gpt-4o", "mistral-eu/small"}},
		{"distillable", provider.ModelQuery{Distillable: &yes}, []string{"local/llama3.2"}},
		{"not distillable", provider.ModelQuery{Distillable: &no}, []string{"openai/gpt-4o", "local/painter", "mistral-eu/small"}},
		{"zdr", provider.ModelQuery{ZDR: true}, []string{"openai/gpt-4o"}},
		{"region eu", provider.ModelQuery{Region: "eu"}, []string{"mistral-eu/small"}},
		{"region us", provider.ModelQuery{Region: "us", AllOutputs: true}, []string{"openai/gpt-4o", "openai/text-embedding-3"}},
		{"min age", provider.ModelQuery{MinAgeDays: days(20)}, []string{"openai/gpt-4o", "local/painter"}},
		{"max age", provider.ModelQuery{MaxAgeDays: days(16)}, []string{"local/llama3.2", "mistral-eu/small"}},
		{"unscored figures match nothing", provider.ModelQuery{Unscored: true}, nil},
		{"several filters intersect", provider.ModelQuery{Providers: []string{"local"}, MaxPrice: money(0)}, []string{"local/llama3.2"}},
		{"cheapest first, ties in configuration order", provider.ModelQuery{Sort: "pricing-low-to-high"},
			[]string{"local/llama3.2", "mistral-eu/small", "local/painter", "openai/gpt-4o"}},
		{"dearest first", provider.ModelQuery{Sort: "pricing-high-to-low"},
			[]string{"openai/gpt-4o", "local/painter", "mistral-eu/small", "local/llama3.2"}},
		{"largest context first, unknown last", provider.ModelQuery{Sort: "context-high-to-low"},
			[]string{"openai/gpt-4o", "mistral-eu/small", "local/llama3.2", "local/painter"}},
		{"newest first", provider.ModelQuery{Sort: "newest"},
			[]string{"local/llama3.2", "mistral-eu/small", "openai/gpt-4o", "local/painter"}},
		{"a sort without data keeps the order", provider.ModelQuery{Sort: "most-popular"}, text},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tt.q.Now = now
			var got []string
			for _, m := range c.Find(tt.q) {
				got = append(got, m.Slug())
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("slugs (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCatalogFindGuardrails: a key's list is what CheckModel lets through,
// the lists of several guardrails intersecting.
func TestCatalogFindGuardrails(t *testing.T) {
	c := findCatalog(t)
	allow := &gatehouse.Guardrail{ID: "g1", Name: "allow", AllowedProviders: []string{"openai", "local"}}
	deny := &gatehouse.Guardrail{ID: "g2", Name: "deny", IgnoredModels: []string{"local/painter"}}
	q := provider.ModelQuery{Guardrails: []gatehouse.AppliedGuardrail{{Guardrail: allow}, {Guardrail: deny}}}
	var got []string
	for _, m := range c.Find(q) {
		got = append(got, m.Slug())
		if err := gatehouse.CheckModel(q.Guardrails, m.Slug(), m.Provider); err != nil {
			t.Errorf("%s is listed but the gateway refuses it: %v", m.Slug(), err)
		}
	}
	if want := []string{"openai/gpt-4o", "local/llama3.2"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}

func TestModelDescriptionsDefaults(t *testing.T) {
	m := &provider.Model{}
	if m.Modality() != "text->text" || !slices.Equal(m.Parameters(), provider.DefaultSupportedParameters) {
		t.Errorf("defaults: %s %v", m.Modality(), m.Parameters())
	}
	for _, p := range provider.DefaultSupportedParameters {
		if !slices.Contains(provider.ModelParameters, p) {
			t.Errorf("default parameter %q is not one a model may list", p)
		}
	}
	p := &provider.Provider{ID: "x"}
	if p.DisplayName() != "x" || p.ServesRegion("us") {
		t.Errorf("provider defaults: %q %v", p.DisplayName(), p.ServesRegion("us"))
	}
}
