package httpapi

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"reflect"
	"strconv"
	"strings"
	"time"

	"gatehouse"
)

// DefaultAnalyticsTimeout bounds an activity or analytics read unless
// SetAnalyticsTimeout says otherwise.
const DefaultAnalyticsTimeout = 30 * time.Second

// SetAnalyticsTimeout sets how long an activity or analytics read may take
// before it is stopped and answered 408. Call it before serving.
func (s *Server) SetAnalyticsTimeout(d time.Duration) { s.analyticsTimeout = d }

// analyticsRead runs read, an activity or analytics read of the ledger,
// bounded by the analytics timeout, once one of the analytics slots is
// free: each read may sum millions of ledger entries, and however many
// come at once (from any organization), they must leave the rest of the
// API its database connections and half of the CPUs at least. The wait
// for a slot counts towards the timeout. A read whose time ran out is a 408, whatever the
// engine made of its cancelled query.
//
// An organization first takes one of its own share of the slots (half of
// them, at least one), so that the reads waiting for a slot are never all
// one organization's: many heavy reads of one tenant queue behind each
// other, and another tenant's read waits for at most a share of them.
func (s *Server) analyticsRead(ctx context.Context, orgID string, read func(ctx context.Context) error) error {
	d := s.analyticsTimeoutOrDefault()
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	timedOut := func(err error) error {
		return gatehouse.WrapError(err, gatehouse.ETIMEOUT,
			"the query took longer than %s (GATEHOUSE_ANALYTICS_TIMEOUT), waiting for other analytics reads included: narrow its time range, filter it by key or workspace, or group by fewer dimensions", d)
	}
	for _, slots := range []chan struct{}{s.analyticsShare(orgID), s.analyticsSlots} {
		select {
		case slots <- struct{}{}:
			defer func() { <-slots }()
		case <-ctx.Done():
			if errors.Is(ctx.Err(), context.DeadlineExceeded) {
				return timedOut(ctx.Err())
			}
			return ctx.Err()
		}
	}
	err := read(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return timedOut(err)
	}
	return err
}

// analyticsShare returns the organization's share of the analytics slots.
// The shares stay for the life of the process: one small channel per
// organization that ever read its analytics.
func (s *Server) analyticsShare(orgID string) chan struct{} {
	if c, ok := s.analyticsShares.Load(orgID); ok {
		return c.(chan struct{})
	}
	c, _ := s.analyticsShares.LoadOrStore(orgID, make(chan struct{}, max(1, cap(s.analyticsSlots)/2)))
	return c.(chan struct{})
}

func (s *Server) analyticsTimeoutOrDefault() time.Duration {
	if s.analyticsTimeout > 0 {
		return s.analyticsTimeout
	}
	return DefaultAnalyticsTimeout
}

// activityItemJSON is OpenRouter's ActivityItem. An endpoint is a provider
// of the providers file: endpoint_id and provider_name are its id, and
// model_permaslug is the model's slug. The ledger keeps no reasoning
// tokens apart, so reasoning_tokens is 0.
type activityItemJSON struct {
	Date               string  `json:"date"`
	Model              string  `json:"model"`
	ModelPermaslug     string  `json:"model_permaslug"`
	EndpointID         string  `json:"endpoint_id"`
	ProviderName       string  `json:"provider_name"`
	Usage              usd     `json:"usage"`
	BYOKUsageInference usd     `json:"byok_usage_inference"`
	Requests           int64   `json:"requests"`
	PromptTokens       int64   `json:"prompt_tokens"`
	CompletionTokens   int64   `json:"completion_tokens"`
	ReasoningTokens    int64   `json:"reasoning_tokens"`
	WorkspaceID        *string `json:"workspace_id,omitempty"` // with group_by=workspace only
}

func toActivityItemJSON(r *gatehouse.ActivityRow) activityItemJSON {
	j := activityItemJSON{Date: r.Date.Format(gatehouse.ActivityDateLayout), Model: r.Model, ModelPermaslug: r.Model,
		EndpointID: r.Provider, ProviderName: r.Provider, Usage: usdOf(r.Usage), BYOKUsageInference: usdOf(r.BYOKUsage),
		Requests: r.Requests, PromptTokens: r.PromptTokens, CompletionTokens: r.CompletionTokens}
	if r.WorkspaceID != "" {
		j.WorkspaceID = &r.WorkspaceID
	}
	return j
}

// getActivity serves GET /activity: the organization's usage by UTC day,
// model and endpoint over the last 30 completed UTC days and today.
func (s *Server) getActivity(w http.ResponseWriter, r *http.Request, p *principal) error {
	f, err := activityFilter(r, s.now())
	if err != nil {
		return err
	}
	s.settled(r.Context())
	var rows []*gatehouse.ActivityRow
	if err := s.analyticsRead(r.Context(), p.org(), func(ctx context.Context) (err error) {
		rows, err = s.store.Activity(ctx, p.org(), f)
		return err
	}); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[[]activityItemJSON]{mapSlice(rows, toActivityItemJSON)})
}

// activityFilter reads the query parameters of GET /activity.
func activityFilter(r *http.Request, now time.Time) (gatehouse.ActivityFilter, error) {
	q := r.URL.Query()
	if err := singleValues(q, "user_id", "workspace_id", "date", "api_key_hash", "group_by"); err != nil {
		return gatehouse.ActivityFilter{}, err
	}
	f := gatehouse.ActivityFilter{UserID: q.Get("user_id"), WorkspaceID: q.Get("workspace_id")}
	f.Since, f.Until = gatehouse.ActivityWindow(now)
	if d := q.Get("date"); d != "" {
		day, err := gatehouse.ParseActivityDate(d, now)
		if err != nil {
			return f, err
		}
		f.Since, f.Until = day, day.AddDate(0, 0, 1)
	}
	if h := q.Get("api_key_hash"); h != "" {
		f.KeyHash = strings.ToLower(h)
		if !gatehouse.IsKeyHash(f.KeyHash) {
			return f, gatehouse.FieldError("api_key_hash", "must be a key's hash: 64 hexadecimal characters, as the keys API shows it")
		}
	}
	switch g := q.Get("group_by"); g {
	case "":
	case "workspace":
		f.ByWorkspace = true
	default:
		return f, gatehouse.FieldError("group_by", "must be workspace, or absent to sum every workspace together")
	}
	return f, nil
}

// The shape of GET /analytics/meta.
type analyticsMetaJSON struct {
	Dimensions    []labelJSON  `json:"dimensions"`
	Granularities []labelJSON  `json:"granularities"`
	Metrics       []metricJSON `json:"metrics"`
	Operators     []opJSON     `json:"operators"`
}

type labelJSON struct {
	DisplayLabel string `json:"display_label"`
	Name         string `json:"name"`
}

type metricJSON struct {
	DisplayFormat string `json:"display_format"`
	DisplayLabel  string `json:"display_label"`
	IsRate        bool   `json:"is_rate"`
	Name          string `json:"name"`
}

type opJSON struct {
	Name      string `json:"name"`
	ValueType string `json:"value_type"` // scalar or array
}

// analyticsMeta is the answer of GET /analytics/meta, which never changes.
var analyticsMeta = dataJSON[analyticsMetaJSON]{analyticsMetaJSON{
	Dimensions: mapSlice(gatehouse.AnalyticsDimensions, func(d gatehouse.AnalyticsDimension) labelJSON {
		return labelJSON{DisplayLabel: d.Label, Name: d.Name}
	}),
	Granularities: mapSlice(gatehouse.Granularities, func(g gatehouse.Granularity) labelJSON {
		return labelJSON{DisplayLabel: g.Label, Name: g.Name}
	}),
	Metrics: mapSlice(gatehouse.AnalyticsMetrics, func(m gatehouse.AnalyticsMetric) metricJSON {
		return metricJSON{DisplayFormat: m.Format, DisplayLabel: m.Label, IsRate: m.Rate(), Name: m.Name}
	}),
	Operators: mapSlice(gatehouse.AnalyticsOperators, func(o gatehouse.AnalyticsOperator) opJSON {
		t := "scalar"
		if o.Array {
			t = "array"
		}
		return opJSON{Name: o.Name, ValueType: t}
	}),
}}

// getAnalyticsMeta serves GET /analytics/meta: what analytics queries may
// ask for.
func (s *Server) getAnalyticsMeta(w http.ResponseWriter, r *http.Request, p *principal) error {
	return writeJSON(w, http.StatusOK, analyticsMeta)
}

// analyticsQueryRequest is the body of POST /analytics/query.
type analyticsQueryRequest struct {
	Metrics     []string              `json:"metrics"`
	Dimensions  []string              `json:"dimensions"`
	Granularity *string               `json:"granularity"`
	TimeRange   *timeRangeJSON        `json:"time_range"`
	Filters     []analyticsFilterJSON `json:"filters"`
	OrderBy     *orderByJSON          `json:"order_by"`
	Limit       *int                  `json:"limit"`
	GroupLimit  *int                  `json:"group_limit"`
	// Gatehouse has no classifiers; these are read to be refused by name.
	ClassifierDimensions json.RawMessage `json:"classifier_dimensions"`
	ClassifierFilters    json.RawMessage `json:"classifier_filters"`
}

type timeRangeJSON struct {
	Start *timestamp `json:"start"`
	End   *timestamp `json:"end"`
}

type orderByJSON struct {
	Field     string `json:"field"`
	Direction string `json:"direction"`
}

type analyticsFilterJSON struct {
	Field        string       `json:"field"`
	Operator     string       `json:"operator"`
	Value        *filterValue `json:"value"`
	IncludeUnset bool         `json:"include_unset"`
}

// filterValue is a filter's value: a string or a number, or an array of
// them. Numbers are kept as written.
type filterValue struct {
	values []string
	list   bool
}

// UnmarshalJSON reads a string, a number or an array of them.
func (v *filterValue) UnmarshalJSON(data []byte) error {
	bad := &json.UnmarshalTypeError{Value: "value", Type: reflect.TypeFor[filterValue]()}
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '[' {
		var items []json.RawMessage
		if err := json.Unmarshal(data, &items); err != nil {
			return bad
		}
		v.values, v.list = make([]string, 0, len(items)), true
		for _, it := range items {
			s, ok := scalarText(it)
			if !ok {
				return bad
			}
			v.values = append(v.values, s)
		}
		return nil
	}
	s, ok := scalarText(data)
	if !ok {
		return bad
	}
	v.values = []string{s}
	return nil
}

// scalarText returns a JSON string's text or a JSON number as written.
func scalarText(raw json.RawMessage) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return "", false
	}
	switch t := tok.(type) {
	case string:
		return t, true
	case json.Number:
		return t.String(), true
	}
	return "", false
}

// query turns the request into the domain's query, checking what only
// the wire can get wrong: missing parts, directions, explicit zeros.
func (req *analyticsQueryRequest) query() (*gatehouse.AnalyticsQuery, error) {
	for _, c := range []struct {
		name string
		raw  json.RawMessage
	}{{"classifier_dimensions", req.ClassifierDimensions}, {"classifier_filters", req.ClassifierFilters}} {
		if len(c.raw) > 0 && string(c.raw) != "null" {
			return nil, gatehouse.FieldError(c.name, "Gatehouse has no classifiers: group and filter by the dimensions GET /analytics/meta lists")
		}
	}
	q := &gatehouse.AnalyticsQuery{Metrics: req.Metrics, Dimensions: req.Dimensions}
	if req.Granularity != nil {
		q.Granularity = *req.Granularity
		if q.Granularity == "" {
			return nil, gatehouse.FieldError("granularity", "must not be empty: leave it out for no time buckets")
		}
	}
	if tr := req.TimeRange; tr != nil {
		for _, t := range []struct {
			name string
			at   *timestamp
		}{{"start", tr.Start}, {"end", tr.End}} {
			if t.at == nil {
				return nil, gatehouse.FieldError("time_range."+t.name, "is required: an RFC 3339 timestamp with seconds and a zone, such as 2027-03-01T00:00:00Z")
			}
		}
		q.Start, q.End = tr.Start.Time, tr.End.Time
	}
	if o := req.OrderBy; o != nil {
		if o.Field == "" {
			return nil, gatehouse.FieldError("order_by.field", "is required: a metric, a dimension or date")
		}
		if o.Direction != "asc" && o.Direction != "desc" {
			return nil, gatehouse.FieldError("order_by.direction", "must be asc or desc")
		}
		q.OrderBy, q.Descending = o.Field, o.Direction == "desc"
	}
	for _, l := range []struct {
		name string
		n    *int
	}{{"limit", req.Limit}, {"group_limit", req.GroupLimit}} {
		if l.n != nil && (*l.n < 1 || *l.n > gatehouse.MaxAnalyticsLimit) {
			return nil, gatehouse.FieldError(l.name, "must be an integer from 1 to %d", gatehouse.MaxAnalyticsLimit)
		}
	}
	if req.Limit != nil {
		q.Limit = *req.Limit
	}
	if req.GroupLimit != nil {
		q.GroupLimit = *req.GroupLimit
	}
	for i, f := range req.Filters {
		if f.Value == nil {
			return nil, gatehouse.FieldError("filters["+strconv.Itoa(i)+"].value", "is required: a string or number, or an array of them for in and not_in")
		}
		q.Filters = append(q.Filters, gatehouse.AnalyticsFilter{Field: f.Field, Operator: f.Operator,
			Values: f.Value.values, List: f.Value.list, IncludeUnset: f.IncludeUnset})
	}
	return q, nil
}

// The shape of the answer of POST /analytics/query.
type analyticsResultJSON struct {
	Data     []map[string]any        `json:"data"`
	Metadata analyticsResultMetaJSON `json:"metadata"`
	Warnings []string                `json:"warnings"`
}

type analyticsResultMetaJSON struct {
	QueryTimeMS float64 `json:"query_time_ms"`
	RowCount    int     `json:"row_count"`
	Truncated   bool    `json:"truncated"`
}

// queryAnalytics serves POST /analytics/query.
func (s *Server) queryAnalytics(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req analyticsQueryRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	q, err := req.query()
	if err != nil {
		return err
	}
	warnings, err := q.Resolve(s.now())
	if err != nil {
		return err
	}
	s.settled(r.Context())
	var res *gatehouse.AnalyticsResult
	var elapsed time.Duration
	if err := s.analyticsRead(r.Context(), p.org(), func(ctx context.Context) (err error) {
		start := time.Now()
		res, err = s.store.QueryAnalytics(ctx, p.org(), q)
		elapsed = time.Since(start)
		return err
	}); err != nil {
		return err
	}
	out := analyticsResultJSON{Data: make([]map[string]any, len(res.Rows)), Warnings: warnings,
		Metadata: analyticsResultMetaJSON{QueryTimeMS: float64(elapsed.Microseconds()) / 1000, RowCount: len(res.Rows), Truncated: res.Truncated}}
	for i, row := range res.Rows {
		out.Data[i] = analyticsRowJSON(q, row)
	}
	return writeJSON(w, http.StatusOK, dataJSON[analyticsResultJSON]{out})
}

// analyticsRowJSON renders a row as a flat object: date__<granularity>
// (a date for days, weeks and months, an RFC 3339 instant for hours and
// minutes), each dimension (null where unset) and each metric (counts as
// integers, money in dollars, averages as numbers or null).
func analyticsRowJSON(q *gatehouse.AnalyticsQuery, row gatehouse.AnalyticsRow) map[string]any {
	out := make(map[string]any, 1+len(q.Dimensions)+len(q.Metrics))
	switch q.Granularity {
	case "":
	case "minute", "hour":
		out["date__"+q.Granularity] = row.Bucket.UTC().Format(time.RFC3339)
	default:
		out["date__"+q.Granularity] = row.Bucket.UTC().Format(gatehouse.ActivityDateLayout)
	}
	for i, d := range q.Dimensions {
		out[d] = row.Dimensions[i]
	}
	for i, name := range q.Metrics {
		m, _ := gatehouse.FindMetric(name)
		v := row.Values[i]
		switch {
		case m.Kind == gatehouse.MoneyMetric:
			out[name] = usdOf(gatehouse.Money(v.N))
		case m.Kind == gatehouse.CountMetric:
			out[name] = v.N
		case v.Null:
			out[name] = nil
		default:
			out[name] = v.F
		}
	}
	return out
}
