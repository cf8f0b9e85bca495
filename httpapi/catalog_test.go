package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"gatehouse"
	"gatehouse/httpapi"
	"gatehouse/provider"
)

// describedCatalog is a catalog whose providers file said everything it
// can: a ZDR provider with every description, a plain one, and a model id
// holding a slash.
func describedCatalog(t testing.TB) *provider.Catalog {
	t.Helper()
	cacheRead, cacheWrite := gatehouse.Money(75_000_000), gatehouse.Money(187_500_000)
	enabled := true
	c, err := provider.NewCatalog([]*provider.Provider{
		{ID: "openai", BaseURL: "http://127.0.0.1:9/v1", ProviderInfo: provider.ProviderInfo{Name: "OpenAI", ZDR: true, Moderated: true,
			PrivacyPolicyURL: "https://openai.com/privacy", TermsOfServiceURL: "https://openai.com/terms", StatusPageURL: "https://status.openai.com",
			Headquarters: "US", Datacenters: []string{"US", "IE"}},
			Models: []*provider.Model{
				{ID: "gpt-4o-mini", Name: "GPT-4o mini", PromptPrice: 150_000_000, CompletionPrice: 600_000_000, MaxCompletionTokens: 16384,
					ContextLength: 128000, ModelInfo: provider.ModelInfo{
						Description: "Small and fast.", Created: time.Date(2024, 7, 18, 0, 0, 0, 0, time.UTC),
						HuggingFaceID: "openai/gpt-oss-20b", KnowledgeCutoff: "2023-10-01", ExpirationDate: "2027-01-31",
						Tokenizer: "GPT", InstructType: "chatml", InputModalities: []string{"text", "image"},
						SupportedParameters: []string{"max_tokens", "tools", "tool_choice"},
						CacheReadPrice:      &cacheRead, CacheWritePrice: &cacheWrite,
						Reasoning:    &provider.ModelReasoning{DefaultEnabled: &enabled, DefaultEffort: "low", SupportedEfforts: []string{"low", "high"}},
						Quantization: "fp16", ImplicitCaching: true, Categories: []string{"programming"},
					}},
				{ID: "text-embedding-3-small", PromptPrice: 20_000_000, MaxCompletionTokens: 1,
					ModelInfo: provider.ModelInfo{OutputModalities: []string{"embeddings"}}},
			}},
		{ID: "local", BaseURL: "http://127.0.0.1:9/v1", Models: []*provider.Model{
			{ID: "meta-llama/Llama-3.1-8B", MaxCompletionTokens: 4096},
			{ID: "qwen", PromptPrice: gatehouse.USD(1), CompletionPrice: gatehouse.USD(1), MaxCompletionTokens: 4096},
			{ID: "phi", PromptPrice: gatehouse.USD(2), CompletionPrice: gatehouse.USD(2), MaxCompletionTokens: 4096},
		}},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func newCatalogEnv(t *testing.T) *testEnv {
	return newEnv(t, withDataPlane(httpapi.DataPlane{Catalog: describedCatalog(t)}))
}

// modelList is the answer of GET /models.
type modelList struct {
	Data []struct {
		ID string `json:"id"`
	} `json:"data"`
	Links struct {
		Next *string `json:"next"`
	} `json:"links"`
	TotalCount int `json:"total_count"`
}

func (l modelList) ids() []string {
	var out []string
	for _, m := range l.Data {
		out = append(out, m.ID)
	}
	return out
}

func (e *testEnv) models(path, key string) modelList {
	e.t.Helper()
	var l modelList
	e.do("GET", path, key, nil).want(e.t, http.StatusOK).decode(e.t, &l)
	return l
}

var textModels = []string{"openai/gpt-4o-mini", "local/meta-llama/Llama-3.1-8B", "local/qwen", "local/phi"}

func TestModelsListPages(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t)
	all := e.models("/api/v1/models", "")
	if diff := cmp.Diff(textModels, all.ids()); diff != "" || all.TotalCount != 4 || all.Links.Next != nil {
		t.Errorf("without paging: total %d, next %v, ids (-want +got):\n%s", all.TotalCount, all.Links.Next, diff)
	}
	// Following links.next visits every model once, whatever the page size.
	for _, limit := range []string{"1", "2", "3", "4", "1000"} {
		var seen []string
		path, pages := "/api/v1/models?limit="+limit+"&output_modalities=all", 0
		for path != "" {
			l := e.models(path, "")
			seen = append(seen, l.ids()...)
			if pages++; pages > 10 || l.TotalCount != 5 {
				t.Fatalf("limit %s: page %d of %s, total %d", limit, pages, path, l.TotalCount)
			}
			path = ""
			if l.Links.Next != nil {
				path = *l.Links.Next
			}
		}
		if want := append(slices.Clone(textModels[:1]), append([]string{"openai/text-embedding-3-small"}, textModels[1:]...)...); !slices.Equal(seen, want) {
			t.Errorf("limit %s: visited %v, want %v", limit, seen, want)
		}
	}
	// The official client pages by offset until a page is short or empty.
	if l := e.models("/api/v1/models?offset=4", ""); len(l.Data) != 0 || l.TotalCount != 4 || l.Links.Next != nil {
		t.Errorf("past the end: %+v", l)
	}
	if l := e.models("/api/v1/models?offset=1", ""); !slices.Equal(l.ids(), textModels[1:]) || l.Links.Next != nil {
		t.Errorf("offset alone gives the rest: %v", l.ids())
	}
	l := e.models("/api/v1/models?limit=2&offset=1&sort=pricing-high-to-low", "")
	if !slices.Equal(l.ids(), []string{"local/qwen", "openai/gpt-4o-mini"}) || l.Links.Next == nil {
		t.Fatalf("a sorted page: %v", l.ids())
	}
	next, err := url.Parse(*l.Links.Next)
	if err != nil || next.Path != "/api/v1/models" || next.Query().Get("offset") != "3" || next.Query().Get("sort") != "pricing-high-to-low" || next.Query().Get("limit") != "2" {
		t.Errorf("links.next = %s", *l.Links.Next)
	}
}

// TestModelsListFilters: each query parameter reaches the catalog's filter
// (gatehouse.TestCatalogFind has the filters' rules), and count agrees.
func TestModelsListFilters(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t)
	for query, want := range map[string][]string{
		"q=LLAMA":                                    {"local/meta-llama/Llama-3.1-8B"},
		"category=programming":                       {"openai/gpt-4o-mini"},
		"supported_parameters=tools,tool_choice":     textModels,
		"supported_parameters=tools,seed":            textModels[1:],
		"output_modalities=embeddings":               {"openai/text-embedding-3-small"},
		"output_modalities=text,embeddings&zdr=true": {"openai/gpt-4o-mini", "openai/text-embedding-3-small"},
		"input_modalities=image":                     {"openai/gpt-4o-mini"},
		"context=100000":                             {"openai/gpt-4o-mini"},
		"min_price=1&max_price=1.5":                  {"local/qwen"},
		"max_output_price=0.6":                       {"openai/gpt-4o-mini", "local/meta-llama/Llama-3.1-8B"},
		"min_output_price=2":                         {"local/phi"},
		"arch=gp":                                    {"openai/gpt-4o-mini"},
		"model_authors=local":                        textModels[1:],
		"providers=OpenAI":                           {"openai/gpt-4o-mini"},
		"distillable=true":                           nil,
		"distillable=false&providers=openai":         {"openai/gpt-4o-mini"},
		"region=eu":                                  {"openai/gpt-4o-mini"},
		"region=us&model_authors=local":              nil,
		"max_age_days=900":                           textModels[1:], // the others were loaded in the test clock's past
		"min_age_days=900":                           {"openai/gpt-4o-mini"},
		"min_intelligence_index=10":                  nil,
		"max_tool_success_rate=1":                    nil,
		"sort=newest":                                {"local/meta-llama/Llama-3.1-8B", "local/qwen", "local/phi", "openai/gpt-4o-mini"},
		"sort=top-weekly&q=%20":                      textModels,
		"q=":                                         textModels,
	} {
		l := e.models("/api/v1/models?"+query, "")
		if diff := cmp.Diff(want, l.ids()); diff != "" {
			t.Errorf("?%s (-want +got):\n%s", query, diff)
		}
		var count struct {
			Data struct {
				Count int `json:"count"`
			} `json:"data"`
		}
		e.do("GET", "/api/v1/models/count?"+query, "", nil).want(t, http.StatusOK).decode(t, &count)
		if count.Data.Count != len(want) || l.TotalCount != len(want) {
			t.Errorf("?%s: count %d, total_count %d, want %d", query, count.Data.Count, l.TotalCount, len(want))
		}
	}
}

func TestModelsListBadQueries(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t)
	for query, field := range map[string]string{
		"limit=0":                         "limit",
		"limit=1001":                      "limit",
		"offset=-1":                       "offset",
		"output_modalities=pdf":           "output_modalities",
		"output_modalities=all,text":      "output_modalities",
		"input_modalities=text,smell":     "input_modalities",
		"supported_parameters=temprature": "supported_parameters",
		"category=coding":                 "category",
		"sort=cheapest":                   "sort",
		"zdr=false":                       "zdr",
		"distillable=yes":                 "distillable",
		"region=asia":                     "region",
		"context=1.5":                     "context",
		"min_price=-1":                    "min_price",
		"max_output_price=cheap":          "max_output_price",
		"min_age_days=NaN":                "min_age_days",
		"max_age_days=1e400":              "max_age_days",
		"min_tool_success_rate=1.5":       "min_tool_success_rate",
		"max_coding_index=-2":             "max_coding_index",
		"q=" + strings.Repeat("x", 1001):  "q",
		"arch=%00":                        "arch",
		"providers=%ff":                   "providers",
	} {
		for _, path := range []string{"/api/v1/models", "/api/v1/models/count"} {
			if path == "/api/v1/models/count" && (strings.HasPrefix(query, "limit") || strings.HasPrefix(query, "offset")) {
				continue // count takes no page
			}
			res := e.do("GET", path+"?"+query, "", nil).want(t, http.StatusBadRequest)
			if msg := res.errorMessage(t); !strings.HasPrefix(msg, field+": ") {
				t.Errorf("%s?%s: message %q does not name %s", path, query, msg, field)
			}
		}
	}
}

func TestGetModel(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t)
	var got struct {
		Data map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/model/openai/gpt-4o-mini", "", nil).want(t, http.StatusOK).decode(t, &got)
	want := map[string]any{
		"id": "openai/gpt-4o-mini", "canonical_slug": "openai/gpt-4o-mini", "hugging_face_id": "openai/gpt-oss-20b",
		"name": "GPT-4o mini", "created": float64(1721260800), "description": "Small and fast.", "context_length": float64(128000),
		"architecture": map[string]any{"input_modalities": []any{"text", "image"}, "output_modalities": []any{"text"},
			"modality": "text+image->text", "tokenizer": "GPT", "instruct_type": "chatml"},
		"pricing": map[string]any{"prompt": "0.00000015", "completion": "0.0000006",
			"input_cache_read": "0.000000075", "input_cache_write": "0.0000001875"},
		"top_provider":       map[string]any{"context_length": float64(128000), "max_completion_tokens": float64(16384), "is_moderated": true},
		"per_request_limits": nil, "default_parameters": nil,
		"supported_parameters": []any{"max_tokens", "tools", "tool_choice"}, "supported_voices": nil,
		"knowledge_cutoff": "2023-10-01", "expiration_date": "2027-01-31",
		"reasoning": map[string]any{"mandatory": false, "default_enabled": true, "default_effort": "low", "supported_efforts": []any{"low", "high"}},
		"links":     map[string]any{"details": "/api/v1/models/openai/gpt-4o-mini/endpoints"},
	}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("model (-want +got):\n%s", diff)
	}
	// A model id holding a slash comes percent-encoded, as the client sends it.
	got.Data = nil
	e.do("GET", "/api/v1/model/local/meta-llama%2FLlama-3.1-8B", "", nil).want(t, http.StatusOK).decode(t, &got)
	if got.Data["id"] != "local/meta-llama/Llama-3.1-8B" || got.Data["name"] != "local/meta-llama/Llama-3.1-8B" ||
		got.Data["reasoning"] != nil || got.Data["knowledge_cutoff"] != nil {
		t.Errorf("a model without descriptions: %v", got.Data)
	}
	if _, ok := got.Data["reasoning"]; ok {
		t.Errorf("reasoning is present without a description: %v", got.Data)
	}
	for _, path := range []string{"/api/v1/model/openai/gpt-5", "/api/v1/model/nobody/gpt-4o-mini", "/api/v1/model/openai/gpt-4o-mini:free",
		"/api/v1/models/openai/gpt-5/endpoints"} {
		if msg := e.do("GET", path, "", nil).want(t, http.StatusNotFound).errorMessage(t); !strings.HasPrefix(msg, "model not found") {
			t.Errorf("%s: %q", path, msg)
		}
	}
}

func TestListEndpoints(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t)
	var got struct {
		Data map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/models/openai/gpt-4o-mini/endpoints", "", nil).want(t, http.StatusOK).decode(t, &got)
	endpoint := map[string]any{
		"name": "OpenAI | openai/gpt-4o-mini", "model_id": "openai/gpt-4o-mini", "model_name": "GPT-4o mini",
		"context_length": float64(128000),
		"pricing": map[string]any{"prompt": "0.00000015", "completion": "0.0000006",
			"input_cache_read": "0.000000075", "input_cache_write": "0.0000001875"},
		"provider_name": "OpenAI", "tag": "openai/fp16", "quantization": "fp16",
		"max_completion_tokens": float64(16384), "max_prompt_tokens": nil,
		"supported_parameters": []any{"max_tokens", "tools", "tool_choice"}, "supports_implicit_caching": true,
		"supports_tool_choice":   map[string]any{"auto": true, "function": true, "none": true, "required": true},
		"supports_voice_cloning": false, "status": float64(0),
		"uptime_last_5m": nil, "uptime_last_30m": nil, "uptime_last_1d": nil, "latency_last_30m": nil, "throughput_last_30m": nil,
	}
	want := map[string]any{
		"id": "openai/gpt-4o-mini", "name": "GPT-4o mini", "created": float64(1721260800), "description": "Small and fast.",
		"architecture": map[string]any{"input_modalities": []any{"text", "image"}, "output_modalities": []any{"text"},
			"modality": "text+image->text", "tokenizer": "GPT", "instruct_type": "chatml"},
		"endpoints": []any{endpoint},
	}
	if diff := cmp.Diff(want, got.Data); diff != "" {
		t.Errorf("endpoints (-want +got):\n%s", diff)
	}
	got.Data = nil
	e.do("GET", "/api/v1/models/local/qwen/endpoints", "", nil).want(t, http.StatusOK).decode(t, &got)
	ep := got.Data["endpoints"].([]any)[0].(map[string]any)
	arch := got.Data["architecture"].(map[string]any)
	if ep["provider_name"] != "local" || ep["tag"] != "local" || ep["quantization"] != nil || ep["context_length"] != float64(0) ||
		ep["supports_tool_choice"].(map[string]any)["auto"] != true || arch["tokenizer"] != nil || arch["modality"] != "text->text" {
		t.Errorf("a plain model's endpoint: %v %v", arch, ep)
	}
	e.do("GET", "/api/v1/models/local/meta-llama%2FLlama-3.1-8B/endpoints", "", nil).want(t, http.StatusOK)
}

func TestZDREndpointsAndProviders(t *testing.T) {
	t.Parallel()
	e := newCatalogEnv(t)
	var zdr struct {
		Data []struct {
			ModelID string `json:"model_id"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/endpoints/zdr", "", nil).want(t, http.StatusOK).decode(t, &zdr)
	if len(zdr.Data) != 2 || zdr.Data[0].ModelID != "openai/gpt-4o-mini" || zdr.Data[1].ModelID != "openai/text-embedding-3-small" {
		t.Errorf("zdr endpoints: %+v", zdr.Data)
	}
	var providers struct {
		Data []map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/providers", "", nil).want(t, http.StatusOK).decode(t, &providers)
	want := []map[string]any{
		{"name": "OpenAI", "slug": "openai", "privacy_policy_url": "https://openai.com/privacy", "terms_of_service_url": "https://openai.com/terms",
			"status_page_url": "https://status.openai.com", "headquarters": "US", "datacenters": []any{"US", "IE"}},
		{"name": "local", "slug": "local", "privacy_policy_url": nil, "terms_of_service_url": nil, "status_page_url": nil,
			"headquarters": nil, "datacenters": nil},
	}
	if diff := cmp.Diff(want, providers.Data); diff != "" {
		t.Errorf("providers (-want +got):\n%s", diff)
	}
	// Without a providers file every list is empty, never null.
	empty := newEnv(t)
	for _, path := range []string{"/api/v1/endpoints/zdr", "/api/v1/providers", "/api/v1/models"} {
		if body := string(empty.do("GET", path, "", nil).want(t, http.StatusOK).Body); !strings.Contains(body, `"data":[]`) {
			t.Errorf("%s without models: %s", path, body)
		}
	}
}

// TestModelsForUser: a key's list holds exactly the models its completions
// may use, through every kind of guardrail the gateway applies.
func TestModelsForUser(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	member := e.addMember(e.mgmt, "dev@example.com")
	hash, key := e.createKey(e.mgmt, map[string]any{"name": "dev", "creator_user_id": member})
	all := []string{"acme/chat", "acme/exact", "other/mini"}
	check := func(want []string) {
		t.Helper()
		l := e.models("/api/v1/models/user?limit=500&offset=0", key)
		if diff := cmp.Diff(want, l.ids()); diff != "" {
			t.Errorf("models of the key (-want +got):\n%s", diff)
		}
		for _, slug := range all {
			res := e.chat(key, chatBody(slug))
			if listed := slices.Contains(want, slug); listed != (res.Status == http.StatusOK) {
				t.Errorf("%s: listed %v, but a completion answers %d: %s", slug, listed, res.Status, res.Body)
			}
		}
	}
	check(all)
	m := e.guardrail(map[string]any{"ignored_models": []string{"acme/exact"}})
	e.assign(m, "members", member)
	check([]string{"acme/chat", "other/mini"})
	d := e.configureDefault(map[string]any{"allowed_providers": []string{"acme"}})
	check([]string{"acme/chat"})
	k := e.guardrail(map[string]any{"allowed_models": []string{"acme/exact", "other/mini"}})
	e.assign(k, "keys", hash) // replaces the member's guardrail; the default still applies
	check([]string{"acme/exact"})
	e.do("PATCH", "/api/v1/guardrails/"+d, e.mgmt, map[string]any{"allowed_providers": nil}).want(t, http.StatusOK)
	check([]string{"acme/exact", "other/mini"})

	// Its filters and pages are those of GET /models.
	if l := e.models("/api/v1/models/user?providers=other", key); !slices.Equal(l.ids(), []string{"other/mini"}) {
		t.Errorf("filtered: %v", l.ids())
	}
	if l := e.models("/api/v1/models/user?limit=1", key); l.TotalCount != 2 || len(l.Data) != 1 || l.Links.Next == nil ||
		!strings.HasPrefix(*l.Links.Next, "/api/v1/models/user?") {
		t.Errorf("paged: %+v", l)
	}
	e.do("GET", "/api/v1/models/user?output_modalities=smell", key, nil).want(t, http.StatusBadRequest)
	msg := e.do("GET", "/api/v1/models/user", e.mgmt, nil).want(t, http.StatusForbidden).errorMessage(t)
	if !strings.Contains(msg, "management keys cannot call models") {
		t.Errorf("management key: %q", msg)
	}
	e.do("GET", "/api/v1/models/user", "", nil).want(t, http.StatusUnauthorized)
}
