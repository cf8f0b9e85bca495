package console

import (
	"cmp"
	"context"
	"slices"
	"strings"
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

// window is the answer of a query over the window: the rows of its
// completed days, and today's.
type window struct {
	past, today []gatehouse.AnalyticsRow
	// truncated says that either was cut at the query's limit.
	truncated bool
}

// rows are the rows of the whole window, the past days' first.
func (w *window) rows() []gatehouse.AnalyticsRow { return append(slices.Clip(w.past), w.today...) }

// windowRows runs q (checked and defaulted as the API's queries are) over
// the window: its completed days through the cache of past days (read once
// a day, see pastCache), today from the ledger.
func (s *Server) windowRows(ctx context.Context, orgID string, d days, q gatehouse.AnalyticsQuery) (*window, error) {
	today := d.first.AddDate(0, 0, d.n-1)
	past, live := q, q
	past.Start, past.End = d.first, today
	live.Start, live.End = today, today.AddDate(0, 0, 1)
	for _, q := range []*gatehouse.AnalyticsQuery{&past, &live} {
		if _, err := q.Resolve(s.now()); err != nil {
			return nil, err
		}
	}
	p, err := s.past.get(ctx, orgID, today, &past, s.store.QueryAnalytics)
	if err != nil {
		return nil, err
	}
	l, err := s.store.QueryAnalytics(ctx, orgID, &live)
	if err != nil {
		return nil, err
	}
	return &window{past: p.Rows, today: l.Rows, truncated: p.Truncated || l.Truncated}, nil
}

// usageByModel reads the window's usage in scope split by model and day:
// the totals of each day, and the chart of its spend by model.
func (s *Server) usageByModel(ctx context.Context, sess *gatehouse.Session, d days, filters []gatehouse.AnalyticsFilter) (*dailyTotals, *chart, error) {
	w, err := s.windowRows(ctx, sess.OrganizationID, d, gatehouse.AnalyticsQuery{Granularity: "day",
		Dimensions: []string{"model"}, Metrics: []string{"total_usage", "request_count", "tokens_total"},
		Filters: filters, Limit: gatehouse.MaxAnalyticsLimit})
	if err != nil {
		return nil, nil, err
	}
	truncated := w.truncated
	if truncated { // more models than an answer holds: the totals apart, then the chart as the keys'
		if w, err = s.windowRows(ctx, sess.OrganizationID, d, gatehouse.AnalyticsQuery{Granularity: "day",
			Metrics: []string{"total_usage", "request_count", "tokens_total"}, Filters: filters, Limit: d.n}); err != nil {
			return nil, nil, err
		}
	}
	rows := w.rows()
	t := &dailyTotals{spend: make([]gatehouse.Money, d.n), requests: make([]int64, d.n), tokens: make([]int64, d.n)}
	for _, r := range rows {
		if i := d.index(r.Bucket); i >= 0 {
			t.spend[i] += gatehouse.Money(r.Values[0].N)
			t.requests[i] += r.Values[1].N
			t.tokens[i] += r.Values[2].N
		}
	}
	if truncated {
		c, err := s.splitChart(ctx, sess, d, "model", t.spend, filters, sameNames)
		return t, c, err
	}
	return t, buildChart(newChart(d), d, top(sumBy(rows), chartSeries), nil, rows, t.spend), nil
}

func newChart(d days) *chart { return &chart{Labels: d.labels(), Series: []series{}, Money: true} }

// sumBy sums the spend (the first value) of rows by their first dimension.
func sumBy(rows []gatehouse.AnalyticsRow) map[string]gatehouse.Money {
	out := map[string]gatehouse.Money{}
	for _, r := range rows {
		if r.Dimensions[0] != nil {
			out[*r.Dimensions[0]] += gatehouse.Money(r.Values[0].N)
		}
	}
	return out
}

// top returns the n values that spent most (and something), most first.
func top(spent map[string]gatehouse.Money, n int) []string {
	var values []string
	for v, m := range spent {
		if m > 0 {
			values = append(values, v)
		}
	}
	slices.SortFunc(values, func(a, b string) int {
		if c := cmp.Compare(spent[b], spent[a]); c != 0 {
			return c
		}
		return strings.Compare(a, b)
	})
	return values[:min(len(values), n)]
}

// since sums the days of the window from the one that starts at from.
func (t *dailyTotals) since(d days, from time.Time) (spend gatehouse.Money, requests, tokens int64) {
	for i := max(d.index(from), 0); i < d.n; i++ {
		spend, requests, tokens = spend+t.spend[i], requests+t.requests[i], tokens+t.tokens[i]
	}
	return spend, requests, tokens
}

// candidates is how many of the values that spent most, over the past days
// and today apart, a chart split by a dimension chooses its series from.
const candidates = 100

// splitChart reads the daily spend split by a dimension (api_key_id or
// model): the chartSeries values that spent most over the window apart,
// the rest as "Others" (the day's total less theirs). The series are chosen
// among the past days' and today's top candidates, and a series' past days
// are read for the past top candidates: a value outside them shows only
// today's spend apart (its past is in Others). name turns values into
// labels.
func (s *Server) splitChart(ctx context.Context, sess *gatehouse.Session, d days, dim string, total []gatehouse.Money,
	filters []gatehouse.AnalyticsFilter, name func(ctx context.Context, values []string) map[string]string) (*chart, error) {
	tops, err := s.windowRows(ctx, sess.OrganizationID, d, gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"},
		Dimensions: []string{dim}, Filters: filters, OrderBy: "total_usage", Descending: true, Limit: candidates})
	if err != nil {
		return nil, err
	}
	values := top(sumBy(tops.rows()), chartSeries)
	if len(values) == 0 {
		return newChart(d), nil
	}
	rows, err := s.byDay(ctx, sess.OrganizationID, d, dim, filters, top(sumBy(tops.past), candidates), values)
	if err != nil {
		return nil, err
	}
	return buildChart(newChart(d), d, values, name(ctx, values), rows, total), nil
}

// byDay reads the spend per day of the series values of dimension dim:
// the past days for the past top candidates (cached), today for values.
func (s *Server) byDay(ctx context.Context, orgID string, d days, dim string, filters []gatehouse.AnalyticsFilter, pastTop, values []string) ([]gatehouse.AnalyticsRow, error) {
	today := d.first.AddDate(0, 0, d.n-1)
	in := func(vs []string) []gatehouse.AnalyticsFilter {
		return append(slices.Clip(filters), gatehouse.AnalyticsFilter{Field: dim, Operator: "in", Values: vs, List: true})
	}
	var rows []gatehouse.AnalyticsRow
	if len(pastTop) > 0 {
		past := gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"}, Dimensions: []string{dim}, Granularity: "day",
			Start: d.first, End: today, Filters: in(pastTop), Limit: gatehouse.MaxAnalyticsLimit}
		if _, err := past.Resolve(s.now()); err != nil {
			return nil, err
		}
		p, err := s.past.get(ctx, orgID, today, &past, s.store.QueryAnalytics)
		if err != nil {
			return nil, err
		}
		rows = append(rows, p.Rows...)
	}
	live := gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"}, Dimensions: []string{dim}, Granularity: "day",
		Start: today, End: today.AddDate(0, 0, 1), Filters: in(values), Limit: gatehouse.MaxAnalyticsLimit}
	if _, err := live.Resolve(s.now()); err != nil {
		return nil, err
	}
	l, err := s.store.QueryAnalytics(ctx, orgID, &live)
	if err != nil {
		return nil, err
	}
	return append(rows, l.Rows...), nil
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
