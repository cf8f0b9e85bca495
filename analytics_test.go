package gatehouse

import (
	"strings"
	"testing"
	"time"
)

// TestAnalyticsQueryResolve: the defaults a query gets, and each refusal
// naming its field.
func TestAnalyticsQueryResolve(t *testing.T) {
	now := time.Date(2027, 3, 17, 10, 30, 0, 500e6, time.UTC)
	q := AnalyticsQuery{Metrics: []string{"total_usage", "request_count"}}
	if w, err := q.Resolve(now); err != nil || len(w) != 0 {
		t.Fatalf("Resolve: %v, warnings %v", err, w)
	}
	if want := now.Truncate(time.Millisecond).Add(time.Millisecond); !q.End.Equal(want) || !q.Start.Equal(want.AddDate(0, 0, -7)) {
		t.Errorf("default range %s – %s, want the 7 days up to now, now included", q.Start, q.End)
	}
	if q.Limit != DefaultAnalyticsLimit || q.OrderBy != "total_usage" || !q.Descending {
		t.Errorf("defaults: limit %d, order %s desc %v", q.Limit, q.OrderBy, q.Descending)
	}
	q = AnalyticsQuery{Metrics: []string{"request_count"}, Granularity: "day", OrderBy: "date__day"}
	if _, err := q.Resolve(now); err != nil || q.OrderBy != "date" || q.Descending {
		t.Errorf("order by date__day: %v, %s desc %v", err, q.OrderBy, q.Descending)
	}
	q = AnalyticsQuery{Metrics: []string{"request_count"}, Granularity: "week"}
	if _, err := q.Resolve(now); err != nil || q.OrderBy != "date" || !q.Descending {
		t.Errorf("default order with a granularity: %v, %s desc %v", err, q.OrderBy, q.Descending)
	}

	q = AnalyticsQuery{Metrics: []string{"request_count"}, Filters: []AnalyticsFilter{
		{Field: "api_key_id", Operator: "in", Values: []string{strings.Repeat("AB", 32), "k1"}, List: true},
		{Field: "workspace", Operator: "eq", Values: []string{"5C0A3B5E-7F1D-4C36-9A57-6C1F4F0E2B71"}},
		{Field: "workspace", Operator: "neq", Values: []string{"research"}},
	}}
	warnings, err := q.Resolve(now)
	if err != nil || len(warnings) != 1 || !strings.Contains(warnings[0], `"k1"`) {
		t.Fatalf("warnings %q, %v; want one, for k1", warnings, err)
	}
	if q.Filters[0].Values[0] != strings.Repeat("ab", 32) || q.Filters[1].Values[0] != "5c0a3b5e-7f1d-4c36-9a57-6c1f4f0e2b71" {
		t.Errorf("ids not normalized: %v", q.Filters)
	}

	day := func(d int) time.Time { return now.AddDate(0, 0, d) }
	for _, c := range []struct {
		name  string
		q     AnalyticsQuery
		field string
	}{
		{"no metric", AnalyticsQuery{}, "metrics"},
		{"unknown metric", AnalyticsQuery{Metrics: []string{"request_count", "p50_latency"}}, "metrics[1]"},
		{"a metric twice", AnalyticsQuery{Metrics: []string{"request_count", "request_count"}}, "metrics[1]"},
		{"three dimensions", AnalyticsQuery{Metrics: []string{"request_count"}, Dimensions: []string{"model", "provider", "user"}}, "dimensions"},
		{"unknown dimension", AnalyticsQuery{Metrics: []string{"request_count"}, Dimensions: []string{"country"}}, "dimensions[0]"},
		{"a dimension twice", AnalyticsQuery{Metrics: []string{"request_count"}, Dimensions: []string{"model", "model"}}, "dimensions[1]"},
		{"unknown granularity", AnalyticsQuery{Metrics: []string{"request_count"}, Granularity: "year"}, "granularity"},
		{"an empty range", AnalyticsQuery{Metrics: []string{"request_count"}, Start: day(0), End: day(0)}, "time_range"},
		{"367 days", AnalyticsQuery{Metrics: []string{"request_count"}, Start: day(-367), End: day(0)}, "time_range"},
		{"minutes of a day", AnalyticsQuery{Metrics: []string{"request_count"}, Granularity: "minute", Start: day(-1), End: day(0)}, "granularity"},
		{"order by nothing asked", AnalyticsQuery{Metrics: []string{"request_count"}, OrderBy: "model"}, "order_by.field"},
		{"date without granularity", AnalyticsQuery{Metrics: []string{"request_count"}, OrderBy: "date"}, "order_by.field"},
		{"limit over", AnalyticsQuery{Metrics: []string{"request_count"}, Limit: MaxAnalyticsLimit + 1}, "limit"},
		{"group limit over", AnalyticsQuery{Metrics: []string{"request_count"}, GroupLimit: MaxAnalyticsLimit + 1}, "group_limit"},
		{"21 filters", AnalyticsQuery{Metrics: []string{"request_count"}, Filters: make([]AnalyticsFilter, 21)}, "filters"},
		{"unknown field", filtered(AnalyticsFilter{Field: "country", Operator: "eq", Values: []string{"FR"}}), "filters[0].field"},
		{"unknown operator", filtered(AnalyticsFilter{Field: "model", Operator: "like", Values: []string{"x"}}), "filters[0].operator"},
		{"a list for eq", filtered(AnalyticsFilter{Field: "model", Operator: "eq", Values: []string{"x"}, List: true}), "filters[0].value"},
		{"one value for in", filtered(AnalyticsFilter{Field: "model", Operator: "in", Values: []string{"x"}}), "filters[0].value"},
		{"an empty list", filtered(AnalyticsFilter{Field: "model", Operator: "in", List: true}), "filters[0].value"},
		{"101 values", filtered(AnalyticsFilter{Field: "model", Operator: "not_in", Values: make([]string, 101), List: true}), "filters[0].value"},
		{"unset with eq", filtered(AnalyticsFilter{Field: "user", Operator: "eq", Values: []string{"u"}, IncludeUnset: true}), "filters[0].include_unset"},
		{"unset of a model", filtered(AnalyticsFilter{Field: "model", Operator: "in", Values: []string{"x"}, List: true, IncludeUnset: true}), "filters[0].include_unset"},
	} {
		_, err := c.q.Resolve(now)
		if ErrorCode(err) != EINVALID || !strings.HasPrefix(ErrorMessage(err), c.field+": ") {
			t.Errorf("%s: %v, want a 400 naming %s", c.name, err, c.field)
		}
	}
}

func filtered(f AnalyticsFilter) AnalyticsQuery {
	return AnalyticsQuery{Metrics: []string{"request_count"}, Filters: []AnalyticsFilter{f}}
}

// TestActivityWindow: the 30 completed UTC days before today, and today.
func TestActivityWindow(t *testing.T) {
	now := time.Date(2028, 3, 1, 0, 0, 0, 0, time.FixedZone("UTC+2", 2*60*60)) // 2028-02-29 22:00 UTC
	first, end := ActivityWindow(now)
	if !first.Equal(time.Date(2028, 1, 30, 0, 0, 0, 0, time.UTC)) || !end.Equal(time.Date(2028, 3, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("window %s – %s", first, end)
	}
	for s, ok := range map[string]bool{"2028-01-30": true, "2028-02-29": true, "2028-01-29": false, "2028-03-01": false,
		"2028-2-29": false, "29/02/2028": false, "": false} {
		d, err := ParseActivityDate(s, now)
		if ok != (err == nil) || ok && d.Format(ActivityDateLayout) != s {
			t.Errorf("ParseActivityDate(%q) = %s, %v", s, d, err)
		}
		if err != nil && (ErrorCode(err) != EINVALID || !strings.HasPrefix(ErrorMessage(err), "date: ")) {
			t.Errorf("ParseActivityDate(%q): %v, want a 400 naming date", s, err)
		}
	}
}
