package httpapi

import (
	"gatehouse/provider"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"gatehouse"
)

// The query parameters of the model lists (GET /models, /models/user and
// /models/count), as the official client sends them. An empty value is
// read as absent; any other value that cannot be used is a 400 naming the
// parameter.

// maxModelLimit is the largest page of models.
const maxModelLimit = 1000

// maxQueryText bounds the free-text query parameters.
const maxQueryText = 1000

// modelPage reads offset and limit. Without either, the whole list is
// returned (limit 0); with offset alone, the rest of it.
func modelPage(r *http.Request) (offset, limit int, err error) {
	q := r.URL.Query()
	for _, name := range []string{"offset", "limit"} {
		if vs := q[name]; len(vs) == 1 && vs[0] == "" {
			delete(q, name) // the catalog reads an empty parameter as absent
		}
	}
	if offset, err = intParam(q, "offset", 0, 0, maxOffset); err != nil {
		return 0, 0, err
	}
	if limit, err = intParam(q, "limit", 0, 1, maxModelLimit); err != nil {
		return 0, 0, err
	}
	return offset, limit, nil
}

// modelQuery reads the filters and the sort.
func modelQuery(r *http.Request, now time.Time) (provider.ModelQuery, error) {
	mq := provider.ModelQuery{Now: now}
	p := queryParser{q: r.URL.Query()}
	mq.Text = p.text("q")
	mq.Category = p.oneOf("category", provider.ModelCategories)
	mq.SupportedParameters = p.listOf("supported_parameters", provider.AllModelParameters)
	if p.get("output_modalities") == "all" {
		mq.AllOutputs = true
	} else {
		mq.OutputModalities = p.listOf("output_modalities", provider.OutputModalities)
	}
	mq.InputModalities = p.listOf("input_modalities", provider.InputModalities)
	mq.MinContext = p.integer("context")
	mq.MinPrice, mq.MaxPrice = p.price("min_price"), p.price("max_price")
	mq.MinOutputPrice, mq.MaxOutputPrice = p.price("min_output_price"), p.price("max_output_price")
	mq.Arch = p.text("arch")
	mq.Authors, mq.Providers = p.list("model_authors"), p.list("providers")
	if d := p.oneOf("distillable", []string{"true", "false"}); d != "" {
		mq.Distillable = new(bool)
		*mq.Distillable = d == "true"
	}
	mq.ZDR = p.oneOf("zdr", []string{"true"}) == "true"
	mq.Region = p.oneOf("region", provider.DataRegions)
	mq.MinAgeDays, mq.MaxAgeDays = p.number("min_age_days", math.MaxFloat64), p.number("max_age_days", math.MaxFloat64)
	for _, name := range unscoredFilters {
		bound := math.MaxFloat64
		if strings.HasSuffix(name, "_rate") {
			bound = 1
		}
		if p.number(name, bound) != nil {
			mq.Unscored = true
		}
	}
	mq.Sort = p.oneOf("sort", provider.ModelSorts)
	return mq, p.err
}

// unscoredFilters bound figures that no model of the catalog has
// (benchmark scores, the measured tool-call success rate): given one, no
// model matches.
var unscoredFilters = []string{"min_intelligence_index", "max_intelligence_index", "min_coding_index", "max_coding_index",
	"min_agentic_index", "max_agentic_index", "min_tool_success_rate", "max_tool_success_rate"}

// queryParser reads query parameters and keeps the first error.
type queryParser struct {
	q   url.Values
	err error
}

func (p *queryParser) fail(name, format string, args ...any) {
	if p.err == nil {
		p.err = gatehouse.FieldError(name, format, args...)
	}
}

// get returns a parameter's value; text that is not UTF-8 or holds a NUL
// is refused.
func (p *queryParser) get(name string) string {
	v := p.q.Get(name)
	switch {
	case len(p.q[name]) > 1:
		if p.err == nil {
			p.err = repeatedParam(name)
		}
		return ""
	case !plainText(v):
		p.fail(name, "must be UTF-8 text without NUL characters")
		return ""
	case len(v) > maxQueryText:
		p.fail(name, "must be at most %d bytes", maxQueryText)
		return ""
	}
	return v
}

func (p *queryParser) text(name string) string { return strings.TrimSpace(p.get(name)) }

// list reads a comma-separated list; nil when absent.
func (p *queryParser) list(name string) []string {
	var out []string
	for _, item := range strings.Split(p.get(name), ",") {
		if item = strings.TrimSpace(item); item != "" {
			out = append(out, item)
		}
	}
	return out
}

func (p *queryParser) listOf(name string, allowed []string) []string {
	items := p.list(name)
	for _, item := range items {
		if !slices.Contains(allowed, item) {
			p.fail(name, "%q is not one of %s (a comma-separated list)", item, strings.Join(allowed, ", "))
			return nil
		}
	}
	return items
}

func (p *queryParser) oneOf(name string, allowed []string) string {
	v := p.text(name)
	if v != "" && !slices.Contains(allowed, v) {
		p.fail(name, "must be one of %s", strings.Join(allowed, ", "))
		return ""
	}
	return v
}

func (p *queryParser) integer(name string) int {
	v := p.text(name)
	if v == "" {
		return 0 // absent, or empty: the catalog reads both alike
	}
	n, err := intValue(v, name, 0, math.MaxInt32)
	if err != nil && p.err == nil {
		p.err = err
	}
	return n
}

// price reads a price in dollars per million tokens, exactly.
func (p *queryParser) price(name string) *gatehouse.Money {
	v := p.text(name)
	if v == "" {
		return nil
	}
	m, err := gatehouse.ParseMoney(v)
	if err != nil || m < 0 {
		p.fail(name, "must be a non-negative number of dollars per million tokens, such as 0.5")
		return nil
	}
	return &m
}

// number reads a number from 0 to max.
func (p *queryParser) number(name string, max float64) *float64 {
	v := p.text(name)
	if v == "" {
		return nil
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || f < 0 || f > max {
		if max == math.MaxFloat64 {
			p.fail(name, "must be a non-negative number")
		} else {
			p.fail(name, "must be a number from 0 to %g", max)
		}
		return nil
	}
	return &f
}
