package provider

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"gatehouse"
	"reflect"
	"slices"
	"strings"
)

// ProviderPreferences are OpenRouter's provider routing preferences, as a
// request or a preset gives them ("provider"): which of a model's
// endpoints may serve it (only, ignore, order without fallbacks,
// max_price, zdr, data_collection, quantizations, require_parameters,
// enforce_distillable_text) and in what order (order, sort; see
// Router.Resolve). The latency and throughput targets
// (preferred_max_latency, preferred_min_throughput) are read and ignored,
// as OpenRouter treats them as hints. They are read by Gatehouse and
// never forwarded.
type ProviderPreferences struct {
	AllowFallbacks         *bool           `json:"allow_fallbacks,omitempty"`
	DataCollection         *string         `json:"data_collection,omitempty"`
	EnforceDistillableText *bool           `json:"enforce_distillable_text,omitempty"`
	Ignore                 []string        `json:"ignore,omitempty"`
	MaxPrice               *MaxPrice       `json:"max_price,omitempty"`
	Only                   []string        `json:"only,omitempty"`
	Order                  []string        `json:"order,omitempty"`
	PreferredMaxLatency    json.RawMessage `json:"preferred_max_latency,omitempty"`
	PreferredMinThroughput json.RawMessage `json:"preferred_min_throughput,omitempty"`
	Quantizations          []string        `json:"quantizations,omitempty"`
	RequireParameters      *bool           `json:"require_parameters,omitempty"`
	Sort                   json.RawMessage `json:"sort,omitempty"`
	ZDR                    *bool           `json:"zdr,omitempty"`
}

// MaxPrice is the most a request may cost, in dollars per million tokens
// (prompt, completion), per request, image or audio unit.
type MaxPrice struct {
	Prompt     *PriceLimit `json:"prompt,omitempty"`
	Completion *PriceLimit `json:"completion,omitempty"`
	Request    *PriceLimit `json:"request,omitempty"`
	Image      *PriceLimit `json:"image,omitempty"`
	Audio      *PriceLimit `json:"audio,omitempty"`
}

// PriceLimit is a price of max_price, in dollars: a JSON number, or a
// string holding one, which is how the official clients send it. It is
// kept, and shown, as a number.
type PriceLimit gatehouse.Money

// UnmarshalJSON decodes a number, or a string holding one, exactly as
// Money decodes numbers.
func (p *PriceLimit) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if json.Unmarshal(data, &s) != nil || s == "" || s[0] == '"' {
			return &json.UnmarshalTypeError{Value: "string", Type: reflect.TypeFor[PriceLimit]()}
		}
		data = []byte(s)
	}
	var m gatehouse.Money
	if err := m.UnmarshalJSON(data); err != nil {
		return &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[PriceLimit]()}
	}
	*p = PriceLimit(m)
	return nil
}

// MarshalJSON encodes the price as a JSON number of dollars.
func (p PriceLimit) MarshalJSON() ([]byte, error) { return gatehouse.Money(p).MarshalJSON() }

// maxProviderList bounds the provider lists of preferences.
const maxProviderList = 100

// Validate checks preferences on their own (field is where they were
// given, such as "provider"): the values, and that Gatehouse can honour
// them with any model.
func (p *ProviderPreferences) Validate(field string) error {
	if p == nil {
		return nil
	}
	for _, l := range []struct {
		name string
		list []string
	}{{"ignore", p.Ignore}, {"only", p.Only}, {"order", p.Order}, {"quantizations", p.Quantizations}} {
		if len(l.list) > maxProviderList {
			return gatehouse.FieldError(field+"."+l.name, "must have at most %d entries", maxProviderList)
		}
		for i, s := range l.list {
			if s == "" || len(s) > 100 {
				return gatehouse.FieldError(fmt.Sprintf("%s.%s[%d]", field, l.name, i), "must be a provider slug of 1 to 100 characters")
			}
		}
	}
	if mp := p.MaxPrice; mp != nil {
		for _, c := range []struct {
			name string
			v    *PriceLimit
		}{{"prompt", mp.Prompt}, {"completion", mp.Completion}, {"request", mp.Request}, {"image", mp.Image}, {"audio", mp.Audio}} {
			if c.v != nil && *c.v < 0 {
				return gatehouse.FieldError(field+".max_price."+c.name, "must not be negative")
			}
		}
	}
	if d := p.DataCollection; d != nil && *d != "allow" && *d != "deny" {
		return gatehouse.FieldError(field+".data_collection", "must be allow or deny")
	}
	if err := checkKinds(field+".sort", p.Sort, "a string or an object", '"', '{'); err != nil {
		return err
	}
	for _, t := range []struct {
		name string
		raw  json.RawMessage
	}{{"preferred_max_latency", p.PreferredMaxLatency}, {"preferred_min_throughput", p.PreferredMinThroughput}} {
		if err := checkKinds(field+"."+t.name, t.raw, "a number or an object of percentiles", '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9', '{'); err != nil {
			return err
		}
	}
	for i, q := range p.Quantizations {
		if !slices.Contains(Quantizations, q) {
			return gatehouse.FieldError(fmt.Sprintf("%s.quantizations[%d]", field, i), "must be one of %s", strings.Join(Quantizations, ", "))
		}
	}
	if sort := p.sortBy(""); sort != "" && !slices.Contains(ProviderSorts, sort) || len(p.Sort) > 0 && string(p.Sort) != "null" && sort == "" {
		return gatehouse.FieldError(field+".sort", "must be one of %s (or {\"by\": ...} of one)", strings.Join(ProviderSorts, ", "))
	}
	return nil
}

// ProviderSorts are the orders a request's sort (and a workspace's
// default_provider_sort) may ask for.
var ProviderSorts = []string{"price", "throughput", "latency"}

// checkEndpoint refuses an endpoint that the preferences leave out by what
// the providers file says of it: zdr (it must keep no data),
// data_collection deny (it may not keep prompts), quantizations (its
// quantization must be listed), enforce_distillable_text (its model must
// allow distillation), and require_parameters (it must support every
// parameter of the request).
func (p *ProviderPreferences) checkEndpoint(field string, e Endpoint, parameters []string) error {
	if p == nil {
		return nil
	}
	served := func() string { return fmt.Sprintf("provider %s's endpoint of %s", e.Provider.ID, e.Model.Slug()) }
	switch {
	case p.ZDR != nil && *p.ZDR && !e.Model.ZeroRetention(e.Provider):
		return gatehouse.FieldError(field+".zdr", "%s may retain data (the providers file does not mark it zdr)", served())
	case p.DataCollection != nil && *p.DataCollection == "deny" && e.Model.Collects(e.Provider):
		return gatehouse.FieldError(field+".data_collection", "%s may keep prompts or train on them (collects_data in the providers file)", served())
	case len(p.Quantizations) > 0 && !slices.Contains(p.Quantizations, e.Model.Quantization):
		return gatehouse.FieldError(field+".quantizations", "%s is quantized %s, which is not in the list", served(), cmp.Or(e.Model.Quantization, "unknown"))
	case p.EnforceDistillableText != nil && *p.EnforceDistillableText && !e.Model.Distillable:
		return gatehouse.FieldError(field+".enforce_distillable_text", "%s serves a model whose outputs may not be distilled", served())
	}
	if p.RequireParameters != nil && *p.RequireParameters {
		for _, param := range parameters {
			if slices.Contains(AllModelParameters, param) && !slices.Contains(e.Model.Parameters(), param) {
				return gatehouse.FieldError(field+".require_parameters", "%s does not support %s", served(), param)
			}
		}
	}
	return nil
}

// checkKinds refuses a JSON value (other than absent or null) whose first
// byte is none of starts, saying it must be want.
func checkKinds(field string, raw json.RawMessage, want string, starts ...byte) error {
	v := bytes.TrimSpace(raw)
	if len(v) == 0 || string(v) == "null" || slices.Contains(starts, v[0]) {
		return nil
	}
	return gatehouse.FieldError(field, "must be %s", want)
}

// Check refuses a call of model m from its provider that the preferences
// rule out: a provider that only, ignore or order (without fallbacks) leave
// out, or a price above max_price.
func (p *ProviderPreferences) Check(field string, m *Model, prov *Provider) error {
	if p == nil {
		return nil
	}
	has := func(list []string) bool {
		return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, prov.ID) })
	}
	served := func() string { return fmt.Sprintf("model %s is served by provider %s", m.Slug(), prov.ID) }
	switch {
	case len(p.Only) > 0 && !has(p.Only):
		return gatehouse.FieldError(field+".only", "%s, which is not in the list", served())
	case has(p.Ignore):
		return gatehouse.FieldError(field+".ignore", "%s, which the list ignores", served())
	case len(p.Order) > 0 && p.AllowFallbacks != nil && !*p.AllowFallbacks && !has(p.Order):
		return gatehouse.FieldError(field+".order", "%s, which is not in the list, and allow_fallbacks is false", served())
	}
	if mp := p.MaxPrice; mp != nil {
		for _, c := range []struct {
			name  string
			max   *PriceLimit
			price gatehouse.Money
		}{{"prompt", mp.Prompt, m.PromptPrice}, {"completion", mp.Completion, m.CompletionPrice}} {
			if c.max != nil && c.price > gatehouse.Money(*c.max) {
				return gatehouse.FieldError(field+".max_price."+c.name, "model %s costs $%s per million %s tokens, above the maximum of $%s",
					m.Slug(), c.price, c.name, gatehouse.Money(*c.max))
			}
		}
	}
	return nil
}
