package provider_test

import (
	"errors"
	"fmt"
	"gatehouse/provider"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// writeFile writes a providers file into a temporary directory.
func writeFile(t *testing.T, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "providers.yaml")
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func env(vars map[string]string) func(string) string {
	return func(name string) string { return vars[name] }
}

const validFile = `# Two providers.
providers:
  - id: local
    base_url: http://127.0.0.1:11434/v1
    models:
      - id: llama3.2
        name: Llama 3.2
        prompt_price: 0.15
        completion_price: 0.60
        context_length: 128000
      - id: qwen2.5:7b
        prompt_price: 0
        completion_price: "0.000000001"
        max_completion_tokens: 512
  - id: openai
    base_url: https://api.openai.com/v1/
    api_key_env: OPENAI_API_KEY
    byok: true
    responses: true
    timeout: 90s
    first_byte_timeout: 20s
    models:
      - id: gpt-4o-mini
        prompt_price: 1e-1
        completion_price: 2.5
`

func TestLoadProvidersValid(t *testing.T) {
	path := writeFile(t, validFile)
	c, err := provider.LoadProviders(path, env(map[string]string{"OPENAI_API_KEY": "sk-test-secret"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Providers) != 2 || len(c.Models()) != 3 {
		t.Fatalf("got %d providers and %d models, want 2 and 3", len(c.Providers), len(c.Models()))
	}
	local, openai := c.Providers[0], c.Providers[1]
	if local.ID != "local" || local.BaseURL != "http://127.0.0.1:11434/v1" || local.APIKey != "" || local.APIKeyEnv != "" ||
		local.BYOK || local.Responses || local.Timeout != 30*time.Minute || local.AnswerTimeout() != 10*time.Minute {
		t.Errorf("local provider = %+v", local)
	}
	if openai.ID != "openai" || openai.APIKeyEnv != "OPENAI_API_KEY" || openai.APIKey != "sk-test-secret" ||
		!openai.BYOK || !openai.Responses || openai.Timeout != 90*time.Second || openai.AnswerTimeout() != 20*time.Second {
		t.Errorf("openai provider = %+v", openai)
	}
	for _, tt := range []struct {
		slug                string
		name                string
		prompt, completion  gatehouse.Money
		maxTokens, contextN int
	}{
		{"local/llama3.2", "Llama 3.2", 150_000_000, 600_000_000, 4096, 128000},
		{"local/qwen2.5:7b", "", 0, 1, 512, 0},
		{"openai/gpt-4o-mini", "", 100_000_000, 2_500_000_000, 4096, 0},
	} {
		m, p, ok := c.Model(tt.slug)
		if !ok {
			t.Errorf("model %s missing", tt.slug)
			continue
		}
		if p.ID != m.Provider || m.Name != tt.name || m.PromptPrice != tt.prompt || m.CompletionPrice != tt.completion ||
			m.MaxCompletionTokens != tt.maxTokens || m.ContextLength != tt.contextN {
			t.Errorf("model %s = %+v, want prices %d/%d, max %d, context %d", tt.slug, m, tt.prompt, tt.completion, tt.maxTokens, tt.contextN)
		}
	}
	// Exact prices: a million tokens at 0.15 costs exactly 0.15 dollars.
	m, _, _ := c.Model("local/llama3.2")
	if got := m.Cost(1_000_000, 1_000_000); got != 750_000_000 {
		t.Errorf("cost of a million tokens each way = %d, want 750000000", got)
	}
}

// TestLoadProvidersInvalid: each mistake is reported at its line and
// column, naming the setting and how to fix it.
func TestLoadProvidersInvalid(t *testing.T) {
	const head = "providers:\n  - id: local\n    base_url: http://127.0.0.1:8090/v1\n"
	const model = "    models:\n      - id: m\n        prompt_price: 1\n        completion_price: 2\n"
	tests := []struct {
		name, content string
		want          string // the first error, after the file name
	}{
		{"empty", "", ":1: the file is empty"},
		{"not a mapping", "- id: local\n", ":1:1: the file must be a mapping"},
		{"unknown top-level", "provider:\n  - id: x\n", ":1:1: provider: unknown setting in the file: want one of providers"},
		{"no providers", "providers: []\n", ":1:12: providers: must be a non-empty list"},
		{"indentation", "providers:\n  - id: local\n   base_url: x\n", ":2: invalid YAML in the block that starts on this line: did not find expected '-' indicator"},
		{"syntax", "providers:\n  - id: local\n    base_url: x: y\n", ":3: invalid YAML: mapping values are not allowed in this context"},
		{"unclosed flow", "providers: [\n", ":2: invalid YAML in the block that starts on this line: did not find expected node content"},
		{"tabs", "providers:\n\t- id: local\n", ":2: invalid YAML: found character that cannot start any token (indent with spaces"},
		{"two documents", head + model + "---\nproviders: []\n", ":8:1: the file holds more than one YAML document"},
		{"bad id", "providers:\n  - id: Local_1\n    base_url: http://x/v1\n" + model, ":2:9: id: must be 1 to 64 lowercase letters"},
		{"missing base_url", "providers:\n  - id: local\n" + model, `:2:5: base_url: is required in provider "local"`},
		{"relative base_url", "providers:\n  - id: local\n    base_url: 127.0.0.1:8090/v1\n" + model, ":3:15: base_url: must be an absolute http or https URL"},
		{"ftp base_url", "providers:\n  - id: local\n    base_url: ftp://x/v1\n" + model, ":3:15: base_url: must be an absolute http or https URL"},
		{"base_url with endpoint", "providers:\n  - id: local\n    base_url: http://x/v1/chat/completions\n" + model, ":3:15: base_url: must be the API's base"},
		{"base_url list", "providers:\n  - id: local\n    base_url: [a]\n" + model, ":3:15: base_url: must be a single value, not a list"},
		{"first byte after the whole call", head + "    timeout: 1m\n    first_byte_timeout: 2m\n" + model, ":5:25: first_byte_timeout: is 2m0s, longer than the provider's timeout of 1m0s, which bounds the whole call: shorten it, or lengthen timeout"},
		{"unknown provider setting", head + "    api_key: sk-x\n" + model, ":4:5: api_key: unknown setting in provider \"local\": want one of api_key_env, base_url, byok, collects_data, datacenters, first_byte_timeout, headquarters, id, models, moderated, name, privacy_policy_url, responses, status_page_url, terms_of_service_url, timeout, type, zdr"},
		{"repeated setting", head + "    base_url: http://y/v1\n" + model, ":4:5: base_url: is set twice (first on line 3)"},
		{"byok", head + "    byok: sometimes\n" + model, ":4:11: byok: must be true or false"},
		{"responses", head + "    responses: [yes]\n" + model, ":4:16: responses: must be a single value"},
		{"base_url with the responses endpoint", "providers:\n  - id: local\n    base_url: http://x/v1/responses\n" + model, ":3:15: base_url: must be the API's base"},
		{"timeout unit", head + "    timeout: 30\n" + model, ":4:14: timeout: must be a positive duration"},
		{"timeout negative", head + "    timeout: -1s\n" + model, ":4:14: timeout: must be a positive duration"},
		{"api_key_env unset", head + "    api_key_env: MISSING_KEY\n" + model, ":4:18: api_key_env: the environment variable MISSING_KEY is not set"},
		{"api_key_env is a key", head + "    api_key_env: sk-proj-abc\n" + model, ":4:18: api_key_env: must be the name of the environment variable"},
		{"no models", head + "    models: []\n", ":4:13: models: must be a non-empty list of models"},
		{"models missing", head, `:2:5: models: is required in provider "local"`},
		{"duplicate provider", head + model + "  - id: local\n    base_url: http://y/v1\n" + model, `:8:5: id: provider "local" is defined twice (first on line 2)`},
		{"duplicate model", head + model + "      - id: m\n        prompt_price: 1\n        completion_price: 2\n", `:8:9: id: model "m" is defined twice in provider local (first on line 5)`},
		{"model id with space", head + "    models:\n      - id: my model\n        prompt_price: 1\n        completion_price: 2\n", ":5:13: id: must be the upstream's model name"},
		{"missing price", head + "    models:\n      - id: m\n        prompt_price: 1\n", `:5:9: completion_price: is required in model "m" of provider local (only a model whose output_modalities are [embeddings] may leave it out)`},
		{"embedding and text without completion price", head + "    models:\n      - id: m\n        prompt_price: 1\n        output_modalities: [embeddings, text]\n", `:5:9: completion_price: is required in model "m"`},
		{"negative price", head + "    models:\n      - id: m\n        prompt_price: -0.5\n        completion_price: 2\n", ":6:23: prompt_price: must not be negative"},
		{"price not a number", head + "    models:\n      - id: m\n        prompt_price: 1\n        completion_price: $2\n", ":7:27: completion_price: must be a decimal number"},
		{"price too large", head + "    models:\n      - id: m\n        prompt_price: 1e10\n        completion_price: 2\n", ":6:23: prompt_price: must be a decimal number"},
		{"empty price", head + "    models:\n      - id: m\n        prompt_price:\n        completion_price: 2\n", ":6:22: prompt_price: has no value"},
		{"max tokens zero", head + model + "        max_completion_tokens: 0\n", ":8:32: max_completion_tokens: must be a whole number of tokens"},
		{"context length float", head + model + "        context_length: 1.5\n", ":8:25: context_length: must be a whole number of tokens"},
		{"unknown model setting", head + model + "        price: 1\n", ":8:9: price: unknown setting in model \"m\" of provider local"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := writeFile(t, tt.content)
			_, err := provider.LoadProviders(path, env(nil))
			if err == nil {
				t.Fatalf("no error for:\n%s", tt.content)
			}
			first := strings.SplitN(err.Error(), "\n", 2)[0]
			if !strings.HasPrefix(first, path+tt.want) {
				t.Errorf("error = %q\nwant it to start with %q", err, path+tt.want)
			}
			var le *provider.LineError
			if !errors.As(err, &le) || le.Line == 0 {
				t.Errorf("error %v is not a *LineError with a line", err)
			}
		})
	}
}

// TestLoadProvidersEmbeddingModel: a model whose only output is
// embeddings completes nothing, so its completion price may be left out.
func TestLoadProvidersEmbeddingModel(t *testing.T) {
	path := writeFile(t, "providers:\n  - id: local\n    base_url: http://127.0.0.1:8090/v1\n    models:\n"+
		"      - id: embed\n        prompt_price: 0.02\n        output_modalities: [embeddings]\n")
	c, err := provider.LoadProviders(path, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	m, _, ok := c.Model("local/embed")
	if !ok || !m.Embeds() || m.CompletionPrice != 0 || m.PromptPrice != 20_000_000 {
		t.Errorf("model %+v", m)
	}
}

// TestLoadProvidersReportsEveryMistake: one run lists all the mistakes, so
// a file is fixed in one go.
func TestLoadProvidersReportsEveryMistake(t *testing.T) {
	path := writeFile(t, "providers:\n  - id: local\n    base_url: nope\n    models:\n      - id: m\n        prompt_price: -1\n        completion_price: x\n")
	_, err := provider.LoadProviders(path, env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	for _, want := range []string{":3:15: base_url:", ":6:23: prompt_price:", ":7:27: completion_price:"} {
		if !strings.Contains(err.Error(), path+want) {
			t.Errorf("error does not report %q:\n%v", want, err)
		}
	}
}

func TestLoadProvidersMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := provider.LoadProviders(path, env(nil))
	if err == nil || !errors.Is(err, os.ErrNotExist) || !strings.Contains(err.Error(), path) {
		t.Errorf("err = %v, want one naming %s as not existing", err, path)
	}
}

// TestLoadProvidersNeverShowsKeys: whatever is wrong, the value of a key
// read from the environment is not in the error.
func TestLoadProvidersNeverShowsKeys(t *testing.T) {
	const secret = "sk-very-secret-value-123"
	vars := map[string]string{"OPENAI_API_KEY": secret, "OTHER": secret}
	for _, content := range []string{
		"providers:\n  - id: p\n    base_url: http://x/v1\n    api_key_env: OPENAI_API_KEY\n    models:\n      - id: m\n        prompt_price: bad\n        completion_price: 1\n",
		"providers:\n  - id: p\n    base_url: http://x/v1\n    api_key_env: OPENAI_API_KEY\n    models: []\n  - id: p\n    base_url: x\n    api_key_env: OTHER\n    models: x\n",
		"providers:\n  - id: p\n    base_url: http://x/v1\n    api_key_env: " + secret + "\n    models:\n      - {id: m, prompt_price: 1, completion_price: 1}\n",
		"providers:\n  - id: p\n    base_url: http://x/v1\n    api_key_env: OPENAI_API_KEY\n    api_key_env: OTHER\n",
	} {
		path := writeFile(t, content)
		_, err := provider.LoadProviders(path, env(vars))
		if err == nil {
			t.Fatalf("no error for:\n%s", content)
		}
		if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), "very-secret") {
			t.Errorf("the key's value appears in the error: %v", err)
		}
	}
}

// TestLoadProvidersErrorsInFileOrder: the mistakes come in the order of
// the file, line then column, although a missing setting is found only
// after the mapping's contents (and reported at its first line); past 20,
// a last line counts the rest.
func TestLoadProvidersErrorsInFileOrder(t *testing.T) {
	path := writeFile(t, `providers:
  - id: a
    models:
      - id: m
        prize: 1
  - id: b
    base_url: nope
    models: []
`)
	_, err := provider.LoadProviders(path, env(nil))
	if err == nil {
		t.Fatal("no error")
	}
	var lines []string
	for _, l := range strings.Split(err.Error(), "\n") {
		lines = append(lines, strings.SplitN(strings.TrimPrefix(l, path+":"), ": ", 2)[0])
	}
	want := []string{"2:5", "4:9", "4:9", "5:9", "7:15", "8:13"}
	if strings.Join(lines, " ") != strings.Join(want, " ") {
		t.Errorf("positions %v, want %v:\n%v", lines, want, err)
	}

	var many strings.Builder
	many.WriteString("providers:\n")
	for i := range 25 {
		fmt.Fprintf(&many, "  - id: p%d\n    base_url: http://127.0.0.1:1/v1\n    models: [{id: m, prompt_price: 0, completion_price: 0}]\n    colour: red\n", i)
	}
	_, err = provider.LoadProviders(writeFile(t, many.String()), env(nil))
	got := strings.Split(err.Error(), "\n")
	if len(got) != 21 || !strings.Contains(got[0], ":5:5: colour:") || !strings.Contains(got[19], ":81:5: colour:") ||
		!strings.HasSuffix(got[20], "and 5 more mistakes after line 81") {
		t.Errorf("25 mistakes reported as:\n%v", err)
	}
}
