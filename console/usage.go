package console

import (
	"context"
	"slices"
	"time"

	"gatehouse"
)

// The usage the overview and a key's page show, read from the ledger with
// the analytics queries of the API (gatehouse.AnalyticsQuery): the days
// of the activity window (the last 30 completed UTC days and today), per
// day, and split by key or model into stacked bars.

// chartSeries is how many keys or models a chart shows apart; the others
// are summed as one.
const chartSeries = 8

// chart is what console.js draws: stacked bars, one series per key or
// model, one bar per day.
type chart struct {
	Labels []string `json:"labels"`
	Series []series `json:"series"`
	Money  bool     `json:"money"`
}

// series is one key's or model's values, per day.
type series struct {
	Label  string    `json:"label"`
	Values []float64 `json:"values"`
}

// days are the days of the activity window at now, first to last.
type days struct {
	first time.Time
	n     int
}

func activityDays(now time.Time) days {
	first, end := gatehouse.ActivityWindow(now)
	return days{first: first, n: int(end.Sub(first) / (24 * time.Hour))}
}

// index returns the position of the day that starts at t, or -1.
func (d days) index(t time.Time) int {
	i := int(t.Sub(d.first) / (24 * time.Hour))
	if i < 0 || i >= d.n {
		return -1
	}
	return i
}

// labels are the days as the chart's axis shows them.
func (d days) labels() []string {
	out := make([]string, d.n)
	for i := range out {
		out[i] = d.first.AddDate(0, 0, i).Format("Jan 2")
	}
	return out
}

// dailyTotals are the spend, requests and tokens of each day.
type dailyTotals struct {
	spend            []gatehouse.Money
	requests, tokens []int64
}

// scopeFilters are the analytics filters of a session's scope: a member's
// keys only.
func scopeFilters(sess *gatehouse.Session, more ...gatehouse.AnalyticsFilter) []gatehouse.AnalyticsFilter {
	if scope := sess.KeyScope(); scope != nil {
		more = append(more, gatehouse.AnalyticsFilter{Field: "user", Operator: "eq", Values: []string{*scope}})
	}
	return more
}

// query runs an analytics query over the window, checked and defaulted as
// the API's are.
func (s *Server) query(ctx context.Context, orgID string, d days, q gatehouse.AnalyticsQuery) (*gatehouse.AnalyticsResult, error) {
	q.Start, q.End = d.first, d.first.AddDate(0, 0, d.n)
	if _, err := q.Resolve(s.now()); err != nil {
		return nil, err
	}
	return s.store.QueryAnalytics(ctx, orgID, &q)
}

// totals reads the totals of each day of the window in scope.
func (s *Server) totals(ctx context.Context, sess *gatehouse.Session, d days, filters []gatehouse.AnalyticsFilter) (*dailyTotals, error) {
	res, err := s.query(ctx, sess.OrganizationID, d, gatehouse.AnalyticsQuery{Granularity: "day",
		Metrics: []string{"total_usage", "request_count", "tokens_total"}, Filters: filters, Limit: d.n})
	if err != nil {
		return nil, err
	}
	t := &dailyTotals{spend: make([]gatehouse.Money, d.n), requests: make([]int64, d.n), tokens: make([]int64, d.n)}
	for _, r := range res.Rows {
		if i := d.index(r.Bucket); i >= 0 {
			t.spend[i], t.requests[i], t.tokens[i] = gatehouse.Money(r.Values[0].N), r.Values[1].N, r.Values[2].N
		}
	}
	return t, nil
}

// since sums the days of the window from the one that starts at from.
func (t *dailyTotals) since(d days, from time.Time) (spend gatehouse.Money, requests, tokens int64) {
	for i := max(d.index(from), 0); i < d.n; i++ {
		spend, requests, tokens = spend+t.spend[i], requests+t.requests[i], tokens+t.tokens[i]
	}
	return spend, requests, tokens
}

// splitChart reads the daily spend split by a dimension (api_key_id or
// model): the chartSeries values that spent most over the window apart,
// the rest as "Others" (the day's total less theirs). name turns a value
// into its label.
func (s *Server) splitChart(ctx context.Context, sess *gatehouse.Session, d days, dim string, total []gatehouse.Money,
	filters []gatehouse.AnalyticsFilter, name func(ctx context.Context, values []string) map[string]string) (*chart, error) {
	top, err := s.query(ctx, sess.OrganizationID, d, gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"},
		Dimensions: []string{dim}, Filters: filters, OrderBy: "total_usage", Descending: true, Limit: chartSeries})
	if err != nil {
		return nil, err
	}
	var values []string
	for _, r := range top.Rows {
		if r.Dimensions[0] != nil && r.Values[0].N > 0 {
			values = append(values, *r.Dimensions[0])
		}
	}
	c := &chart{Labels: d.labels(), Series: []series{}, Money: true}
	if len(values) == 0 {
		return c, nil
	}
	byDay, err := s.query(ctx, sess.OrganizationID, d, gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"},
		Dimensions: []string{dim}, Granularity: "day", Limit: d.n * len(values),
		Filters: append(slices.Clip(filters), gatehouse.AnalyticsFilter{Field: dim, Operator: "in", Values: values, List: true})})
	if err != nil {
		return nil, err
	}
	return buildChart(c, d, values, name(ctx, values), byDay.Rows, total), nil
}

// buildChart lays the rows out as one series per value, in values' order,
// and one for the rest of each day's total.
func buildChart(c *chart, d days, values []string, labels map[string]string, rows []gatehouse.AnalyticsRow, total []gatehouse.Money) *chart {
	per := make(map[string][]gatehouse.Money, len(values))
	for _, v := range values {
		per[v] = make([]gatehouse.Money, d.n)
	}
	for _, r := range rows {
		if i := d.index(r.Bucket); i >= 0 && r.Dimensions[0] != nil && per[*r.Dimensions[0]] != nil {
			per[*r.Dimensions[0]][i] += gatehouse.Money(r.Values[0].N)
		}
	}
	others := slices.Clone(total)
	for _, v := range values {
		label := labels[v]
		if label == "" {
			label = v
		}
		c.Series = append(c.Series, series{Label: label, Values: dollars(per[v])})
		for i, m := range per[v] {
			others[i] -= m
		}
	}
	if slices.ContainsFunc(others, func(m gatehouse.Money) bool { return m > 0 }) {
		c.Series = append(c.Series, series{Label: "Others", Values: dollars(others)})
	}
	return c
}

// dollars turns amounts into dollars for the chart (display only).
func dollars(ms []gatehouse.Money) []float64 {
	out := make([]float64, len(ms))
	for i, m := range ms {
		out[i] = float64(max(m, 0)) / gatehouse.NanosPerUSD
	}
	return out
}

// keyNames names keys by their names, for a chart's legend; keys the
// session may not see, or gone, keep their short hash.
func (s *Server) keyNames(ctx context.Context, sess *gatehouse.Session) func(context.Context, []string) map[string]string {
	return func(ctx context.Context, hashes []string) map[string]string {
		out := map[string]string{}
		for _, h := range hashes {
			k, err := s.store.FindKey(ctx, sess.OrganizationID, h)
			if err == nil && sess.MayManageKey(k) {
				out[h] = k.Name
			} else {
				out[h] = "key " + h[:min(len(h), 8)]
			}
		}
		return out
	}
}

// sameNames labels values by themselves (models are their own names).
func sameNames(context.Context, []string) map[string]string { return nil }
