package gatehouse

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Analytics queries sum the usage ledger by any two dimensions and a time
// bucket, in the shape of OpenRouter's POST /analytics/query; the metrics
// and dimensions are those the ledger records.

// MetricKind says how a metric is computed and shown.
type MetricKind int

// The kinds of metrics.
const (
	CountMetric   MetricKind = iota // a sum of whole numbers: requests, tokens
	MoneyMetric                     // a sum of money
	AverageMetric                   // a mean over the generations; none without any
)

// AnalyticsMetric is a metric analytics queries compute.
type AnalyticsMetric struct {
	Name, Label string
	// Format tells clients how to show it: number, currency, latency
	// (milliseconds) or throughput (tokens per second).
	Format string
	Kind   MetricKind
}

// Rate reports whether the metric is averaged rather than summed.
func (m AnalyticsMetric) Rate() bool { return m.Kind == AverageMetric }

// AnalyticsMetrics are the metrics of the ledger, in the order the meta
// endpoint lists them.
var AnalyticsMetrics = []AnalyticsMetric{
	{"request_count", "Request Count", "number", CountMetric},
	{"byok_request_count", "BYOK Request Count", "number", CountMetric},
	{"tokens_prompt", "Prompt Tokens", "number", CountMetric},
	{"tokens_completion", "Completion Tokens", "number", CountMetric},
	{"tokens_total", "Total Tokens", "number", CountMetric},
	{"total_usage", "Total Spend", "currency", MoneyMetric},
	{"credits_usage", "Spend on Operator Keys", "currency", MoneyMetric},
	{"byok_usage", "BYOK Spend", "currency", MoneyMetric},
	{"avg_latency", "Average Latency", "latency", AverageMetric},
	{"avg_throughput", "Average Throughput", "throughput", AverageMetric},
}

// AnalyticsDimension is what analytics rows may be grouped and filtered by.
type AnalyticsDimension struct {
	Name, Label string
	// Unset says that some generations have no value for it, which the
	// in and not_in filters may include (include_unset).
	Unset bool
}

// AnalyticsDimensions are the dimensions of the ledger. Values are ids:
// api_key_id is a key's hash, workspace a workspace id, user the id of
// the member who created the key (unset for a key created without one, or
// deleted), model a model slug, provider a provider id.
var AnalyticsDimensions = []AnalyticsDimension{
	{"model", "Model", false},
	{"provider", "Provider", false},
	{"api_key_id", "API Key", false},
	{"workspace", "Workspace", false},
	{"user", "User", true},
	{"finish_reason", "Finish Reason", true},
	{"external_user", "External User", true},
	{"generation_id", "Generation", false},
}

// Granularity is the size of the time buckets of an analytics query.
type Granularity struct {
	Name, Label string
	Size        time.Duration // of a fixed-size bucket; 0 for a month
}

// Granularities are the time buckets, all in UTC; weeks start on Monday.
var Granularities = []Granularity{
	{"minute", "Minute", time.Minute},
	{"hour", "Hour", time.Hour},
	{"day", "Day", 24 * time.Hour},
	{"week", "Week", 7 * 24 * time.Hour},
	{"month", "Month", 0},
}

// BucketStart returns the first instant of the bucket of granularity g
// that holds t.
func (g Granularity) BucketStart(t time.Time) time.Time {
	t = t.UTC()
	switch g.Name {
	case "week":
		return Weekly.Start(t)
	case "month":
		return Monthly.Start(t)
	}
	return t.Truncate(g.Size)
}

// AnalyticsOperator is a filter operator; Array says its value is a list.
type AnalyticsOperator struct {
	Name  string
	Array bool
}

// AnalyticsOperators are the filter operators. The ordered ones compare
// text, as every dimension is.
var AnalyticsOperators = []AnalyticsOperator{
	{"eq", false}, {"neq", false}, {"in", true}, {"not_in", true},
	{"gt", false}, {"gte", false}, {"lt", false}, {"lte", false},
}

// Bounds of analytics queries.
const (
	MaxAnalyticsDimensions   = 2
	MaxAnalyticsFilters      = 20
	MaxAnalyticsFilterValues = 100
	DefaultAnalyticsLimit    = 1000
	MaxAnalyticsLimit        = 10_000
	MaxAnalyticsRange        = 366 * 24 * time.Hour
	DefaultAnalyticsRange    = 7 * 24 * time.Hour
	// MaxMinuteRange bounds the time range of minute buckets.
	MaxMinuteRange = 3 * time.Hour
)

// AnalyticsQuery is a query over the ledger: metrics of the generations
// created in [Start, End) that pass every filter, grouped by the
// dimensions and, with a granularity, by time bucket.
type AnalyticsQuery struct {
	Metrics     []string
	Dimensions  []string
	Granularity string // "" for no time buckets
	Start, End  time.Time
	Filters     []AnalyticsFilter
	// OrderBy is a metric, a dimension, "date" (the time bucket) or "";
	// Descending orders it from the largest.
	OrderBy    string
	Descending bool
	// Limit bounds the rows; GroupLimit, when not 0, the rows of each
	// combination of dimensions.
	Limit, GroupLimit int
}

// AnalyticsFilter keeps the generations whose dimension Field compares
// with Values under Operator: one value, or a list for in and not_in.
type AnalyticsFilter struct {
	Field, Operator string
	Values          []string
	List            bool // the value was given as a list
	// IncludeUnset keeps, for in and not_in, the generations that have no
	// value for the dimension too.
	IncludeUnset bool
}

// AnalyticsRow is one row of an analytics result.
type AnalyticsRow struct {
	Bucket     time.Time // the first instant of the time bucket; zero without a granularity
	Dimensions []*string // in the order of the query's; nil where unset
	Values     []AnalyticsValue
}

// AnalyticsValue is the value of a metric: N for counts and money (in
// nano-USD), F for averages, which are Null over no generation.
type AnalyticsValue struct {
	N    int64
	F    float64
	Null bool
}

// AnalyticsResult is the rows of a query; Truncated says that more rows
// than its limit matched.
type AnalyticsResult struct {
	Rows      []AnalyticsRow
	Truncated bool
}

// FindMetric returns the metric named name.
func FindMetric(name string) (AnalyticsMetric, bool) {
	i := slices.IndexFunc(AnalyticsMetrics, func(m AnalyticsMetric) bool { return m.Name == name })
	if i < 0 {
		return AnalyticsMetric{}, false
	}
	return AnalyticsMetrics[i], true
}

// FindDimension returns the dimension named name.
func FindDimension(name string) (AnalyticsDimension, bool) {
	i := slices.IndexFunc(AnalyticsDimensions, func(d AnalyticsDimension) bool { return d.Name == name })
	if i < 0 {
		return AnalyticsDimension{}, false
	}
	return AnalyticsDimensions[i], true
}

// FindGranularity returns the granularity named name.
func FindGranularity(name string) (Granularity, bool) {
	i := slices.IndexFunc(Granularities, func(g Granularity) bool { return g.Name == name })
	if i < 0 {
		return Granularity{}, false
	}
	return Granularities[i], true
}

// names lists the names of items, for messages.
func names[T any](items []T, name func(T) string) string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = name(it)
	}
	return strings.Join(out, ", ")
}

// Resolve checks q and fills in its defaults at now: the seven days up to
// now,
// the default limit, and the default order (by time bucket, newest first,
// with a granularity; else by the first metric, largest first). It returns
// warnings about filter values that can match nothing, which do not stop
// the query.
func (q *AnalyticsQuery) Resolve(now time.Time) ([]string, error) {
	if err := q.checkNames(); err != nil {
		return nil, err
	}
	if err := q.checkRange(now); err != nil {
		return nil, err
	}
	if err := q.checkOrder(); err != nil {
		return nil, err
	}
	if q.Limit == 0 {
		q.Limit = DefaultAnalyticsLimit
	}
	if q.Limit < 1 || q.Limit > MaxAnalyticsLimit {
		return nil, FieldError("limit", "must be an integer from 1 to %d", MaxAnalyticsLimit)
	}
	if q.GroupLimit < 0 || q.GroupLimit > MaxAnalyticsLimit {
		return nil, FieldError("group_limit", "must be an integer from 1 to %d", MaxAnalyticsLimit)
	}
	return q.checkFilters()
}

// checkNames checks the metrics, dimensions and granularity.
func (q *AnalyticsQuery) checkNames() error {
	if len(q.Metrics) == 0 {
		return FieldError("metrics", "is required: at least one of %s", names(AnalyticsMetrics, func(m AnalyticsMetric) string { return m.Name }))
	}
	for i, m := range q.Metrics {
		field := fmt.Sprintf("metrics[%d]", i)
		if _, ok := FindMetric(m); !ok {
			return FieldError(field, "unknown metric %q: want one of %s", m, names(AnalyticsMetrics, func(m AnalyticsMetric) string { return m.Name }))
		}
		if slices.Index(q.Metrics, m) < i {
			return FieldError(field, "metric %q is asked for twice", m)
		}
	}
	if len(q.Dimensions) > MaxAnalyticsDimensions {
		return FieldError("dimensions", "at most %d dimensions may be combined", MaxAnalyticsDimensions)
	}
	for i, d := range q.Dimensions {
		field := fmt.Sprintf("dimensions[%d]", i)
		if _, ok := FindDimension(d); !ok {
			return FieldError(field, "unknown dimension %q: want one of %s", d, names(AnalyticsDimensions, func(d AnalyticsDimension) string { return d.Name }))
		}
		if slices.Index(q.Dimensions, d) < i {
			return FieldError(field, "dimension %q is asked for twice", d)
		}
	}
	if _, ok := FindGranularity(q.Granularity); q.Granularity != "" && !ok {
		return FieldError("granularity", "must be one of %s", names(Granularities, func(g Granularity) string { return g.Name }))
	}
	return nil
}

// checkRange checks the time range, or sets the default one.
func (q *AnalyticsQuery) checkRange(now time.Time) error {
	if q.Start.IsZero() && q.End.IsZero() {
		q.End = now.UTC().Truncate(time.Millisecond).Add(time.Millisecond) // up to now, included
		q.Start = q.End.Add(-DefaultAnalyticsRange)
	}
	q.Start, q.End = q.Start.UTC(), q.End.UTC()
	switch span := q.End.Sub(q.Start); {
	case span <= 0:
		return FieldError("time_range", "start must be before end")
	case span > MaxAnalyticsRange:
		return FieldError("time_range", "may span at most %d days", MaxAnalyticsRange/(24*time.Hour))
	case q.Granularity == "minute" && span > MaxMinuteRange:
		return FieldError("granularity", "minute buckets need a time range of at most 3 hours; use hour or a shorter range")
	}
	return nil
}

// checkOrder checks the order, or sets the default one.
func (q *AnalyticsQuery) checkOrder() error {
	switch f := q.OrderBy; {
	case f == "" && q.Granularity != "":
		q.OrderBy, q.Descending = "date", true
	case f == "":
		q.OrderBy, q.Descending = q.Metrics[0], true
	case f == "date" || f == "date__"+q.Granularity && q.Granularity != "":
		if q.Granularity == "" {
			return FieldError("order_by.field", "date orders by the time bucket, which needs a granularity")
		}
		q.OrderBy = "date"
	case slices.Contains(q.Metrics, f) || slices.Contains(q.Dimensions, f) || f == "request_count":
	default:
		return FieldError("order_by.field", "%q is not among the query's metrics, dimensions, request_count or date", f)
	}
	return nil
}

// checkFilters checks the filters and returns warnings about values that
// can match nothing.
func (q *AnalyticsQuery) checkFilters() ([]string, error) {
	if len(q.Filters) > MaxAnalyticsFilters {
		return nil, FieldError("filters", "at most %d filters may be given", MaxAnalyticsFilters)
	}
	warnings := []string{}
	for i := range q.Filters {
		f := &q.Filters[i]
		field := fmt.Sprintf("filters[%d]", i)
		d, ok := FindDimension(f.Field)
		if !ok {
			return nil, FieldError(field+".field", "unknown dimension %q: want one of %s", f.Field, names(AnalyticsDimensions, func(d AnalyticsDimension) string { return d.Name }))
		}
		j := slices.IndexFunc(AnalyticsOperators, func(o AnalyticsOperator) bool { return o.Name == f.Operator })
		if j < 0 {
			return nil, FieldError(field+".operator", "must be one of %s", names(AnalyticsOperators, func(o AnalyticsOperator) string { return o.Name }))
		}
		switch op := AnalyticsOperators[j]; {
		case op.Array && !f.List:
			return nil, FieldError(field+".value", "must be an array of strings or numbers for %s", op.Name)
		case !op.Array && f.List:
			return nil, FieldError(field+".value", "must be one string or number for %s", op.Name)
		case op.Array && (len(f.Values) == 0 || len(f.Values) > MaxAnalyticsFilterValues):
			return nil, FieldError(field+".value", "must hold 1 to %d values", MaxAnalyticsFilterValues)
		case f.IncludeUnset && !op.Array:
			return nil, FieldError(field+".include_unset", "applies only to the in and not_in operators")
		case f.IncludeUnset && !d.Unset:
			return nil, FieldError(field+".include_unset", "dimension %q has no unset bucket: every generation has one", d.Name)
		}
		warnings = append(warnings, f.normalize()...)
	}
	return warnings, nil
}

// normalize puts the filter's ids in the form the ledger keeps them, and
// warns of the values of eq and in that cannot be the id of anything.
func (f *AnalyticsFilter) normalize() []string {
	var warnings []string
	warn := f.Operator == "eq" || f.Operator == "in"
	for i, v := range f.Values {
		switch f.Field {
		case "api_key_id":
			f.Values[i] = strings.ToLower(v)
			if warn && !IsKeyHash(f.Values[i]) {
				warnings = append(warnings, fmt.Sprintf("api_key_id: %q is not a key hash (64 hexadecimal characters, as GET /keys shows): it matches no generation", v))
			}
		case "workspace":
			if u, err := uuid.Parse(v); err == nil && len(v) == 36 {
				f.Values[i] = u.String()
			} else if warn {
				warnings = append(warnings, fmt.Sprintf("workspace: %q is not a workspace id (a UUID): it matches no generation", v))
			}
		}
	}
	return warnings
}
