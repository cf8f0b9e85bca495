package provider

import (
	"maps"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"time"

	"gatehouse"

	"go.yaml.in/yaml/v3"
)

// The optional settings of the providers file that describe providers and
// models for the catalog (GET /models, /providers, /endpoints/zdr) in the
// terms of OpenRouter's objects. None changes how a request is served or
// metered.

// providerInfoSettings returns the descriptive settings of a provider.
func (l *loader) providerInfoSettings(p *ProviderInfo) map[string]func(*yaml.Node) {
	return map[string]func(*yaml.Node){
		"name":                 func(v *yaml.Node) { p.Name = l.displayText(v, "name", 100) },
		"zdr":                  func(v *yaml.Node) { p.ZDR = l.boolean(v, "zdr") },
		"moderated":            func(v *yaml.Node) { p.Moderated = l.boolean(v, "moderated") },
		"privacy_policy_url":   func(v *yaml.Node) { p.PrivacyPolicyURL = l.pageURL(v, "privacy_policy_url") },
		"terms_of_service_url": func(v *yaml.Node) { p.TermsOfServiceURL = l.pageURL(v, "terms_of_service_url") },
		"status_page_url":      func(v *yaml.Node) { p.StatusPageURL = l.pageURL(v, "status_page_url") },
		"headquarters":         func(v *yaml.Node) { p.Headquarters = l.country(v, "headquarters") },
		"datacenters":          func(v *yaml.Node) { p.Datacenters = l.countries(v, "datacenters") },
		"collects_data":        func(v *yaml.Node) { p.CollectsData = l.boolean(v, "collects_data") },
	}
}

// countries reads a list of ISO 3166-1 alpha-2 country codes.
func (l *loader) countries(v *yaml.Node, field string) []string {
	var out []string
	for _, item := range l.list(v, field) {
		if c := l.country(item, field); c != "" {
			out = append(out, c)
		}
	}
	return out
}

// modelInfoSettings returns the descriptive settings of a model.
func (l *loader) modelInfoSettings(m *ModelInfo) map[string]func(*yaml.Node) {
	return map[string]func(*yaml.Node){
		"description":          func(v *yaml.Node) { m.Description = l.description(v) },
		"created":              func(v *yaml.Node) { m.Created = l.created(v) },
		"hugging_face_id":      func(v *yaml.Node) { m.HuggingFaceID = l.huggingFaceID(v) },
		"knowledge_cutoff":     func(v *yaml.Node) { m.KnowledgeCutoff = l.date(v, "knowledge_cutoff") },
		"expiration_date":      func(v *yaml.Node) { m.ExpirationDate = l.date(v, "expiration_date") },
		"tokenizer":            func(v *yaml.Node) { m.Tokenizer = l.oneOf(v, "tokenizer", Tokenizers) },
		"instruct_type":        func(v *yaml.Node) { m.InstructType = l.oneOf(v, "instruct_type", InstructTypes) },
		"input_modalities":     func(v *yaml.Node) { m.InputModalities = l.listOf(v, "input_modalities", InputModalities) },
		"output_modalities":    func(v *yaml.Node) { m.OutputModalities = l.listOf(v, "output_modalities", OutputModalities) },
		"supported_parameters": func(v *yaml.Node) { m.SupportedParameters = l.parameters(v) },
		"cache_read_price":     func(v *yaml.Node) { m.CacheReadPrice = l.optionalPrice(v, "cache_read_price") },
		"cache_write_price":    func(v *yaml.Node) { m.CacheWritePrice = l.optionalPrice(v, "cache_write_price") },
		"reasoning":            func(v *yaml.Node) { m.Reasoning = l.reasoning(v) },
		"categories":           func(v *yaml.Node) { m.Categories = l.listOf(v, "categories", ModelCategories) },
		"distillable":          func(v *yaml.Node) { m.Distillable = l.boolean(v, "distillable") },
		"quantization":         func(v *yaml.Node) { m.Quantization = l.oneOf(v, "quantization", Quantizations) },
		"implicit_caching":     func(v *yaml.Node) { m.ImplicitCaching = l.boolean(v, "implicit_caching") },
		"zdr":                  func(v *yaml.Node) { m.EndpointZDR = new(l.boolean(v, "zdr")) },
		"datacenters":          func(v *yaml.Node) { m.EndpointDatacenters = l.countries(v, "datacenters") },
		"collects_data":        func(v *yaml.Node) { m.EndpointCollectsData = new(l.boolean(v, "collects_data")) },
	}
}

// withSettings returns the union of two sets of settings.
func withSettings(a, b map[string]func(*yaml.Node)) map[string]func(*yaml.Node) {
	out := maps.Clone(a)
	maps.Copy(out, b)
	return out
}

// displayText reads a one-line name of at most max characters.
func (l *loader) displayText(v *yaml.Node, field string, max int) string {
	s, ok := l.str(v, field)
	if !ok {
		return ""
	}
	if s == "" || len([]rune(s)) > max || gatehouse.CheckDisplayText(field, s, false) != nil {
		l.errorf(v, field, "must be 1 to %d characters on one line, without control characters", max)
		return ""
	}
	return s
}

// maxModelDescription bounds a model's description.
const maxModelDescription = 10_000

func (l *loader) description(v *yaml.Node) string {
	s, ok := l.str(v, "description")
	if !ok {
		return ""
	}
	if s == "" || len([]rune(s)) > maxModelDescription || gatehouse.CheckDisplayText("description", s, true) != nil {
		l.errorf(v, "description", "must be 1 to %d characters of text, without control characters other than newlines and tabs", maxModelDescription)
		return ""
	}
	return s
}

// pageURL reads the absolute http(s) URL of a web page.
func (l *loader) pageURL(v *yaml.Node, field string) string {
	s, ok := l.str(v, field)
	if !ok {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || len(s) > 2000 {
		l.errorf(v, field, "must be an absolute http or https URL, such as https://example.com/privacy")
		return ""
	}
	return s
}

var countryRE = regexp.MustCompile(`^[A-Z]{2}$`)

// country reads an ISO 3166-1 alpha-2 country code.
func (l *loader) country(v *yaml.Node, field string) string {
	s, ok := l.str(v, field)
	if ok && !countryRE.MatchString(s) {
		l.errorf(v, field, "must be a two-letter ISO 3166-1 country code in capitals, such as US or DE")
		return ""
	}
	return s
}

// list returns the items of a non-empty list, each a single value.
func (l *loader) list(v *yaml.Node, field string) []*yaml.Node {
	if v.Kind != yaml.SequenceNode || len(v.Content) == 0 {
		l.errorf(v, field, "must be a non-empty list, such as [a, b]")
		return nil
	}
	items := make([]*yaml.Node, len(v.Content))
	for i, n := range v.Content {
		items[i] = deref(n)
	}
	return items
}

// oneOf reads a value that must be one of allowed.
func (l *loader) oneOf(v *yaml.Node, field string, allowed []string) string {
	s, ok := l.str(v, field)
	if ok && !slices.Contains(allowed, s) {
		l.errorf(v, field, "%q is not one of %s", s, strings.Join(allowed, ", "))
		return ""
	}
	return s
}

// listOf reads a non-empty list of distinct values, each one of allowed.
func (l *loader) listOf(v *yaml.Node, field string, allowed []string) []string {
	var out []string
	for _, item := range l.list(v, field) {
		s := l.oneOf(item, field, allowed)
		switch {
		case s == "":
		case slices.Contains(out, s):
			l.errorf(item, field, "lists %q twice", s)
		default:
			out = append(out, s)
		}
	}
	return out
}

// parameters reads supported_parameters: parameters the chat path
// forwards, so that the catalog never promises one that is refused.
func (l *loader) parameters(v *yaml.Node) []string {
	var out []string
	for _, item := range l.list(v, "supported_parameters") {
		s, ok := l.str(item, "supported_parameters")
		switch {
		case !ok:
		case slices.Contains(out, s):
			l.errorf(item, "supported_parameters", "lists %q twice", s)
		case slices.Contains(AllModelParameters, s) && !slices.Contains(ModelParameters, s):
			l.errorf(item, "supported_parameters", "%q is refused or not forwarded by Gatehouse's chat path, so no model can offer it through Gatehouse", s)
		case !slices.Contains(ModelParameters, s):
			l.errorf(item, "supported_parameters", "%q is not one of %s", s, strings.Join(ModelParameters, ", "))
		default:
			out = append(out, s)
		}
	}
	return out
}

// date reads a calendar date, YYYY-MM-DD.
func (l *loader) date(v *yaml.Node, field string) string {
	s, ok := l.str(v, field)
	if !ok {
		return ""
	}
	if _, err := time.Parse(time.DateOnly, s); err != nil {
		l.errorf(v, field, "must be a date, YYYY-MM-DD, such as 2024-06-30")
		return ""
	}
	return s
}

// created reads when a model was released: a date (midnight UTC) or an
// RFC 3339 time.
func (l *loader) created(v *yaml.Node) time.Time {
	s, ok := l.str(v, "created")
	if !ok {
		return time.Time{}
	}
	t, err := time.Parse(time.DateOnly, s)
	if err != nil {
		t, err = time.Parse(time.RFC3339, s)
	}
	if err != nil || t.Year() < 1970 || t.Year() > 9999 {
		l.errorf(v, "created", "must be a date, YYYY-MM-DD, or an RFC 3339 time, such as 2024-07-18 or 2024-07-18T12:00:00Z")
		return time.Time{}
	}
	return t.UTC()
}

var huggingFaceIDRE = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}$`)

func (l *loader) huggingFaceID(v *yaml.Node) string {
	s, ok := l.str(v, "hugging_face_id")
	if ok && !huggingFaceIDRE.MatchString(s) {
		l.errorf(v, "hugging_face_id", "must be a Hugging Face repository, owner/name, such as meta-llama/Llama-3.1-8B-Instruct")
		return ""
	}
	return s
}

func (l *loader) optionalPrice(v *yaml.Node, field string) *gatehouse.Money {
	before := len(l.errs)
	m := l.price(v, field)
	if len(l.errs) > before {
		return nil
	}
	return &m
}

// reasoning reads the reasoning: mapping of a model.
func (l *loader) reasoning(v *yaml.Node) *ModelReasoning {
	r := &ModelReasoning{}
	l.mapping(v, "reasoning", map[string]func(*yaml.Node){
		"mandatory":           func(v *yaml.Node) { r.Mandatory = l.boolean(v, "mandatory") },
		"default_enabled":     func(v *yaml.Node) { r.DefaultEnabled = new(l.boolean(v, "default_enabled")) },
		"default_effort":      func(v *yaml.Node) { r.DefaultEffort = l.oneOf(v, "default_effort", ReasoningEfforts) },
		"supported_efforts":   func(v *yaml.Node) { r.SupportedEfforts = l.listOf(v, "supported_efforts", ReasoningEfforts) },
		"supports_max_tokens": func(v *yaml.Node) { r.SupportsMaxTokens = new(l.boolean(v, "supports_max_tokens")) },
	})
	if r.DefaultEffort != "" && r.SupportedEfforts != nil && !slices.Contains(r.SupportedEfforts, r.DefaultEffort) {
		l.errorf(v, "default_effort", "%q is not among the supported_efforts (%s)", r.DefaultEffort, strings.Join(r.SupportedEfforts, ", "))
	}
	return r
}
