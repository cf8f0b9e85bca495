package provider_test

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"gatehouse"
	"gatehouse/provider"
)

const describedFile = `providers:
  - id: openai
    name: OpenAI
    base_url: https://api.openai.com/v1
    zdr: true
    moderated: true
    privacy_policy_url: https://openai.com/policies/privacy-policy
    terms_of_service_url: https://openai.com/policies/terms-of-use
    status_page_url: https://status.openai.com
    headquarters: US
    datacenters: [US, IE]
    models:
      - id: gpt-4o-mini
        name: GPT-4o mini
        prompt_price: 0.15
        completion_price: 0.60
        cache_read_price: 0.075
        cache_write_price: 0.1875
        description: |
          A small, fast model.
          Good at most things.
        created: 2024-07-18
        hugging_face_id: openai/gpt-oss-20b
        knowledge_cutoff: 2023-10-01
        expiration_date: 2027-01-31
        tokenizer: GPT
        instruct_type: chatml
        input_modalities: [text, image]
        output_modalities: [text]
        supported_parameters: [max_tokens, temperature, tools, tool_choice, structured_outputs]
        reasoning:
          mandatory: false
          default_enabled: true
          default_effort: medium
          supported_efforts: [low, medium, high]
          supports_max_tokens: false
        categories: [programming, marketing/seo]
        distillable: true
        quantization: fp16
        implicit_caching: true
      - id: plain
        prompt_price: 1
        completion_price: 2
        created: 2025-03-04T05:06:07+01:00
`

func TestLoadProvidersDescriptions(t *testing.T) {
	c, err := provider.LoadProviders(writeFile(t, describedFile), env(nil))
	if err != nil {
		t.Fatal(err)
	}
	p := c.Providers[0]
	wantProvider := provider.ProviderInfo{Name: "OpenAI", ZDR: true, Moderated: true,
		PrivacyPolicyURL: "https://openai.com/policies/privacy-policy", TermsOfServiceURL: "https://openai.com/policies/terms-of-use",
		StatusPageURL: "https://status.openai.com", Headquarters: "US", Datacenters: []string{"US", "IE"}}
	if diff := cmp.Diff(wantProvider, p.ProviderInfo); diff != "" {
		t.Errorf("provider info (-want +got):\n%s", diff)
	}
	m, _, _ := c.Model("openai/gpt-4o-mini")
	readPrice, writePrice := gatehouse.Money(75_000_000), gatehouse.Money(187_500_000)
	wantModel := provider.ModelInfo{
		Description: "A small, fast model.\nGood at most things.\n", Created: time.Date(2024, 7, 18, 0, 0, 0, 0, time.UTC),
		HuggingFaceID: "openai/gpt-oss-20b", KnowledgeCutoff: "2023-10-01", ExpirationDate: "2027-01-31",
		Tokenizer: "GPT", InstructType: "chatml", InputModalities: []string{"text", "image"}, OutputModalities: []string{"text"},
		SupportedParameters: []string{"max_tokens", "temperature", "tools", "tool_choice", "structured_outputs"},
		CacheReadPrice:      &readPrice, CacheWritePrice: &writePrice,
		Reasoning: &provider.ModelReasoning{DefaultEnabled: new(true), DefaultEffort: "medium",
			SupportedEfforts: []string{"low", "medium", "high"}, SupportsMaxTokens: new(false)},
		Categories: []string{"programming", "marketing/seo"}, Distillable: true, Quantization: "fp16", ImplicitCaching: true,
	}
	if diff := cmp.Diff(wantModel, m.ModelInfo); diff != "" {
		t.Errorf("model info (-want +got):\n%s", diff)
	}
	if m.Modality() != "text+image->text" {
		t.Errorf("modality = %q", m.Modality())
	}
	plain, _, _ := c.Model("openai/plain")
	if want := time.Date(2025, 3, 4, 4, 6, 7, 0, time.UTC); !plain.Created.Equal(want) || plain.Created.Location() != time.UTC {
		t.Errorf("created = %v, want %v in UTC", plain.Created, want)
	}
	if plain.Modality() != "text->text" || !slicesEqual(plain.Parameters(), provider.DefaultSupportedParameters) ||
		plain.Reasoning != nil || plain.CacheReadPrice != nil {
		t.Errorf("a model without descriptions: %+v", plain.ModelInfo)
	}
}

// TestLoadProvidersCatalogDefaults: without descriptions a provider shows
// its id as its name, and a model the time the catalog was made.
func TestLoadProvidersCatalogDefaults(t *testing.T) {
	before := time.Now().Add(-time.Second)
	c, err := provider.LoadProviders(writeFile(t, validFile), env(map[string]string{"OPENAI_API_KEY": "k"}))
	if err != nil {
		t.Fatal(err)
	}
	if p := c.Providers[0]; p.DisplayName() != "local" || p.ZDR || p.Datacenters != nil {
		t.Errorf("provider %+v", p.ProviderInfo)
	}
	for _, m := range c.Models() {
		if m.Created.Before(before) || m.Created.After(time.Now()) {
			t.Errorf("%s created %v, want the load time", m.Slug(), m.Created)
		}
	}
}

func TestLoadProvidersInvalidDescriptions(t *testing.T) {
	const head = "providers:\n  - id: p\n    base_url: http://127.0.0.1:8090/v1\n"
	const model = "    models:\n      - id: m\n        prompt_price: 1\n        completion_price: 2\n"
	tests := []struct{ name, content, want string }{
		{"zdr", head + "    zdr: always\n" + model, ":4:10: zdr: must be true or false"},
		{"provider name with a newline", head + "    name: \"a\\nb\"\n" + model, ":4:11: name: must be 1 to 100 characters on one line"},
		{"privacy url", head + "    privacy_policy_url: example.com/privacy\n" + model, ":4:25: privacy_policy_url: must be an absolute http or https URL"},
		{"headquarters", head + "    headquarters: usa\n" + model, ":4:19: headquarters: must be a two-letter ISO 3166-1 country code"},
		{"datacenters not a list", head + "    datacenters: US\n" + model, ":4:18: datacenters: must be a non-empty list"},
		{"datacenter code", head + "    datacenters: [US, Germany]\n" + model, ":4:23: datacenters: must be a two-letter ISO 3166-1 country code"},
		{"unknown reasoning setting", head + model + "        reasoning:\n          effort: high\n", `:9:11: effort: unknown setting in reasoning: want one of default_effort, default_enabled, mandatory, supported_efforts, supports_max_tokens`},
		{"reasoning not a mapping", head + model + "        reasoning: true\n", ":8:20: reasoning must be a mapping of settings"},
		{"effort", head + model + "        reasoning:\n          default_effort: extreme\n", `:9:27: default_effort: "extreme" is not one of max, xhigh, high`},
		{"default effort unsupported", head + model + "        reasoning:\n          default_effort: high\n          supported_efforts: [low]\n", `:9:11: default_effort: "high" is not among the supported_efforts (low)`},
		{"tokenizer", head + model + "        tokenizer: Lama3\n", `:8:20: tokenizer: "Lama3" is not one of Router, Media, Other, GPT`},
		{"instruct type", head + model + "        instruct_type: ChatML\n", `:8:24: instruct_type: "ChatML" is not one of none, airoboros`},
		{"input modality", head + model + "        input_modalities: [text, pdf]\n", `:8:34: input_modalities: "pdf" is not one of text, image, file, audio, video`},
		{"output modality twice", head + model + "        output_modalities: [text, text]\n", `:8:35: output_modalities: lists "text" twice`},
		{"empty modalities", head + model + "        output_modalities: []\n", ":8:28: output_modalities: must be a non-empty list"},
		{"refused parameter", head + model + "        supported_parameters: [tools, web_search_options]\n", `:8:39: supported_parameters: "web_search_options" is refused or not forwarded by Gatehouse's chat path`},
		{"unknown parameter", head + model + "        supported_parameters: [temprature]\n", `:8:32: supported_parameters: "temprature" is not one of temperature, top_p`},
		{"category", head + model + "        categories: [coding]\n", `:8:22: categories: "coding" is not one of programming, roleplay`},
		{"cache price", head + model + "        cache_read_price: -1\n", ":8:27: cache_read_price: must not be negative"},
		{"created", head + model + "        created: last year\n", ":8:18: created: must be a date, YYYY-MM-DD, or an RFC 3339 time"},
		{"knowledge cutoff month", head + model + "        knowledge_cutoff: 2024-06\n", ":8:27: knowledge_cutoff: must be a date, YYYY-MM-DD"},
		{"expiration date", head + model + "        expiration_date: 2027-02-30\n", ":8:26: expiration_date: must be a date, YYYY-MM-DD"},
		{"hugging face id", head + model + "        hugging_face_id: llama\n", ":8:26: hugging_face_id: must be a Hugging Face repository, owner/name"},
		{"quantization", head + model + "        quantization: q4_K_M\n", `:8:23: quantization: "q4_K_M" is not one of int4, int8`},
		{"distillable", head + model + "        distillable: maybe\n", ":8:22: distillable: must be true or false"},
		{"description with a control character", head + model + "        description: \"a\\x07b\"\n", ":8:22: description: must be 1 to 10000 characters of text"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			_, err := provider.LoadProviders(path, env(nil))
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.content)
			}
			if first := strings.SplitN(err.Error(), "\n", 2)[0]; !strings.HasPrefix(first, path+tt.want) {
				t.Errorf("error = %q\nwant it to start with %q", err, path+tt.want)
			}
		})
	}
}

func slicesEqual(a, b []string) bool { return strings.Join(a, ",") == strings.Join(b, ",") }
