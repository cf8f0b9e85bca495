package sqlstore

import (
	"context"
	"database/sql"
	"fmt"
	"slices"
	"strings"
	"time"

	"gatehouse"
)

// The analytics of the usage ledger: one query builder, over the
// generations of one organization in a time range, serves both the
// activity and analytics queries. Indexes that keep it fast at scale are
// in migration 0010_activity_indexes.sql.

// dimensionSQL is the column of each dimension: of generations g, or of
// the key that made the call, k (joined only when needed).
var dimensionSQL = map[string]string{
	"model":         "g.model",
	"provider":      "g.provider",
	"api_key_id":    "g.key_hash",
	"workspace":     "g.workspace_id",
	"user":          "k.creator_user_id",
	"finish_reason": "g.finish_reason",
	"external_user": "g.external_user",
	"generation_id": "g.id",
}

// metricSQL is the aggregate of each metric. Sums of nothing read 0, an
// average of nothing NULL; averages are computed in floating point.
var metricSQL = map[string]string{
	"request_count":      "COUNT(*)",
	"byok_request_count": "COALESCE(SUM(CASE WHEN g.byok = TRUE THEN 1 ELSE 0 END), 0)",
	"tokens_prompt":      "COALESCE(SUM(g.prompt_tokens), 0)",
	"tokens_completion":  "COALESCE(SUM(g.completion_tokens), 0)",
	"tokens_total":       "COALESCE(SUM(g.prompt_tokens + g.completion_tokens), 0)",
	"total_usage":        "COALESCE(SUM(g.cost), 0)",
	"credits_usage":      "COALESCE(SUM(CASE WHEN g.byok = TRUE THEN 0 ELSE g.cost END), 0)",
	"byok_usage":         "COALESCE(SUM(CASE WHEN g.byok = TRUE THEN g.cost ELSE 0 END), 0)",
	"avg_latency":        "AVG(CAST(g.latency_ms AS DOUBLE PRECISION))",
	"avg_throughput":     "AVG(CAST(g.completion_tokens AS DOUBLE PRECISION) * 1000 / NULLIF(g.generation_ms, 0))",
}

// filterSQL is the comparison of each scalar operator.
var filterSQL = map[string]string{"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

// aggregation is an analytics query as the builder takes it: that of the
// API, or the activity's (three dimensions, every row).
type aggregation struct {
	q *gatehouse.AnalyticsQuery
	// metrics are the metrics computed: the query's, then the one it is
	// ordered by if the query does not show it.
	metrics []string
	// limit bounds the rows (one more is read, to tell truncation); 0
	// reads them all.
	limit int
}

// QueryAnalytics runs an analytics query, checked by Resolve, over the
// organization's generations.
func (s *Store) QueryAnalytics(ctx context.Context, orgID string, q *gatehouse.AnalyticsQuery) (_ *gatehouse.AnalyticsResult, err error) {
	defer wrap(&err, "QueryAnalytics")
	ctx = AdHoc(ctx)
	a := aggregation{q: q, metrics: q.Metrics, limit: q.Limit}
	if _, ok := gatehouse.FindMetric(q.OrderBy); ok && !slices.Contains(q.Metrics, q.OrderBy) {
		a.metrics = append(q.Metrics[:len(q.Metrics):len(q.Metrics)], q.OrderBy)
	}
	rows, err := view(ctx, s, func(tx *Tx) ([]gatehouse.AnalyticsRow, error) { return tx.aggregate(ctx, orgID, a) })
	if err != nil {
		return nil, err
	}
	res := &gatehouse.AnalyticsResult{Rows: rows}
	if a.limit > 0 && len(rows) > a.limit {
		res.Rows, res.Truncated = rows[:a.limit], true
	}
	for i := range res.Rows {
		res.Rows[i].Values = res.Rows[i].Values[:len(q.Metrics)]
	}
	return res, nil
}

// Activity sums the organization's generations that f selects by UTC day,
// model and provider (and workspace).
func (s *Store) Activity(ctx context.Context, orgID string, f gatehouse.ActivityFilter) (_ []*gatehouse.ActivityRow, err error) {
	defer wrap(&err, "Activity")
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.ActivityRow, error) {
		q := &gatehouse.AnalyticsQuery{Granularity: "day", Start: f.Since, End: f.Until, OrderBy: "date", Descending: true,
			Dimensions: []string{"model", "provider"},
			Metrics:    []string{"request_count", "tokens_prompt", "tokens_completion", "credits_usage", "byok_usage"}}
		if f.ByWorkspace {
			q.Dimensions = append(q.Dimensions, "workspace")
		}
		if f.WorkspaceID != "" {
			w, err := tx.findWorkspace(ctx, orgID, f.WorkspaceID)
			if err != nil {
				return nil, err
			}
			q.Filters = append(q.Filters, gatehouse.AnalyticsFilter{Field: "workspace", Operator: "eq", Values: []string{w.ID}})
		}
		for _, by := range [][2]string{{"api_key_id", f.KeyHash}, {"user", f.UserID}} {
			if by[1] != "" {
				q.Filters = append(q.Filters, gatehouse.AnalyticsFilter{Field: by[0], Operator: "eq", Values: []string{by[1]}})
			}
		}
		rows, err := tx.aggregate(ctx, orgID, aggregation{q: q, metrics: q.Metrics})
		if err != nil {
			return nil, err
		}
		out := make([]*gatehouse.ActivityRow, len(rows))
		for i, r := range rows {
			out[i] = &gatehouse.ActivityRow{Date: r.Bucket, Model: deref(r.Dimensions[0]), Provider: deref(r.Dimensions[1]),
				Requests: r.Values[0].N, PromptTokens: r.Values[1].N, CompletionTokens: r.Values[2].N,
				Usage: gatehouse.Money(r.Values[3].N), BYOKUsage: gatehouse.Money(r.Values[4].N)}
			if f.ByWorkspace {
				out[i].WorkspaceID = deref(r.Dimensions[2])
			}
		}
		return out, nil
	})
}

// aggregate runs an aggregation: the generations of the organization in
// the query's time range that pass its filters, grouped by its time bucket
// and dimensions.
func (tx *Tx) aggregate(ctx context.Context, orgID string, a aggregation) ([]gatehouse.AnalyticsRow, error) {
	q := a.q
	bucket, bucketArgs := bucketSQL(q)
	var cols []string
	var args []any
	if bucket != "" {
		cols, args = append(cols, bucket+" AS b"), append(args, bucketArgs...)
	}
	var groups []string
	for i, d := range q.Dimensions {
		cols, groups = append(cols, fmt.Sprintf("%s AS d%d", dimensionSQL[d], i)), append(groups, fmt.Sprintf("d%d", i))
	}
	if bucket != "" {
		groups = append([]string{"b"}, groups...)
	}
	for i, m := range a.metrics {
		cols = append(cols, fmt.Sprintf("%s AS m%d", metricSQL[m], i))
	}
	where, whereArgs := tx.analyticsWhere(q)
	query := `SELECT ` + strings.Join(cols, ", ") + ` FROM generations g` + keyJoin(q) + ` WHERE g.organization_id = ? AND g.created_at >= ? AND g.created_at < ?` + where
	args = append(append(args, orgID, ms(q.Start), ms(q.End)), whereArgs...)
	if len(groups) > 0 {
		query += ` GROUP BY ` + strings.Join(groups, ", ")
	}
	order := a.order()
	if q.GroupLimit > 0 && len(q.Dimensions) > 0 {
		partition := strings.Join(groups[len(groups)-len(q.Dimensions):], ", ")
		query = `SELECT * FROM (SELECT a.*, ROW_NUMBER() OVER (PARTITION BY ` + partition + ` ORDER BY ` + order + `) AS rn FROM (` +
			query + `) a) r WHERE rn <= ?`
		args = append(args, q.GroupLimit)
	}
	query += ` ORDER BY ` + order
	if a.limit > 0 {
		query, args = query+` LIMIT ?`, append(args, a.limit+1)
	}
	rows, err := tx.Query(ctx, query, args...)
	return collect(rows, err, func(s Scanner) (gatehouse.AnalyticsRow, error) { return a.scan(s, bucket != "") })
}

// order is the ORDER BY of an aggregation: its order field, then the time
// bucket (newest first) and the dimensions, so that ties come out alike on
// every engine.
func (a aggregation) order() string {
	q := a.q
	dir := " ASC"
	if q.Descending {
		dir = " DESC"
	}
	var terms []string
	switch {
	case q.OrderBy == "date":
		terms = append(terms, "b"+dir)
	case slices.Contains(q.Dimensions, q.OrderBy):
		terms = append(terms, fmt.Sprintf("d%d%s NULLS LAST", slices.Index(q.Dimensions, q.OrderBy), dir))
	default:
		terms = append(terms, fmt.Sprintf("m%d%s NULLS LAST", slices.Index(a.metrics, q.OrderBy), dir))
	}
	if q.Granularity != "" && q.OrderBy != "date" {
		terms = append(terms, "b DESC")
	}
	for i, d := range q.Dimensions {
		if d != q.OrderBy {
			terms = append(terms, fmt.Sprintf("d%d ASC NULLS LAST", i))
		}
	}
	return strings.Join(terms, ", ")
}

// scan reads a row of the aggregation.
func (a aggregation) scan(s Scanner, bucketed bool) (gatehouse.AnalyticsRow, error) {
	var r gatehouse.AnalyticsRow
	var bucket int64
	var dest []any
	if bucketed {
		dest = append(dest, &bucket)
	}
	dims := make([]sql.NullString, len(a.q.Dimensions))
	for i := range dims {
		dest = append(dest, &dims[i])
	}
	r.Values = make([]gatehouse.AnalyticsValue, len(a.metrics))
	avgs := make([]sql.NullFloat64, len(a.metrics))
	for i, m := range a.metrics {
		if metric, _ := gatehouse.FindMetric(m); metric.Kind == gatehouse.AverageMetric {
			dest = append(dest, &avgs[i])
		} else {
			dest = append(dest, &r.Values[i].N)
		}
	}
	if a.q.GroupLimit > 0 && len(a.q.Dimensions) > 0 {
		var rank int64
		dest = append(dest, &rank)
	}
	if err := s.Scan(dest...); err != nil {
		return r, err
	}
	if bucketed {
		r.Bucket = fromMS(bucket)
	}
	for _, d := range dims {
		var v *string
		if d.Valid {
			v = &d.String
		}
		r.Dimensions = append(r.Dimensions, v)
	}
	for i, m := range a.metrics {
		if metric, _ := gatehouse.FindMetric(m); metric.Kind == gatehouse.AverageMetric {
			r.Values[i] = gatehouse.AnalyticsValue{F: avgs[i].Float64, Null: !avgs[i].Valid}
		}
	}
	return r, nil
}

// analyticsWhere returns the conditions of a query's filters, each
// starting with AND, and their arguments.
func (tx *Tx) analyticsWhere(q *gatehouse.AnalyticsQuery) (string, []any) {
	var where strings.Builder
	var args []any
	for _, f := range q.Filters {
		col := dimensionSQL[f.Field]
		var cond string
		switch f.Operator {
		case "in", "not_in":
			var in string
			in, args = tx.in(col, f.Values, args...)
			cond = in
			if f.Operator == "not_in" {
				cond = "NOT (" + in + ")"
			}
			if f.IncludeUnset {
				cond = "(" + cond + " OR " + col + " IS NULL)"
			}
		default:
			cond, args = col+" "+filterSQL[f.Operator]+" ?", append(args, f.Values[0])
		}
		where.WriteString(" AND " + cond)
	}
	return where.String(), args
}

// keyJoin joins the key that made each call when a dimension or filter of
// q is the member who created it. A deleted key's calls then have no user.
func keyJoin(q *gatehouse.AnalyticsQuery) string {
	uses := slices.Contains(q.Dimensions, "user")
	for _, f := range q.Filters {
		uses = uses || f.Field == "user"
	}
	if !uses {
		return ""
	}
	return ` LEFT JOIN api_keys k ON k.hash = g.key_hash AND k.organization_id = g.organization_id`
}

// bucketSQL returns the start of each generation's time bucket, in Unix
// milliseconds, and its arguments; "" without a granularity. Fixed-size
// buckets are arithmetic on created_at (weeks start on Monday: the epoch
// was a Thursday, 4 days after one); months are a CASE over the month
// starts of the range, at most 13 of them.
func bucketSQL(q *gatehouse.AnalyticsQuery) (string, []any) {
	g, ok := gatehouse.FindGranularity(q.Granularity)
	switch {
	case !ok:
		return "", nil
	case g.Name == "week":
		const monday = int64(4 * 24 * time.Hour / time.Millisecond)
		return fmt.Sprintf("g.created_at - (g.created_at - %d) %% %d", monday, g.Size.Milliseconds()), nil
	case g.Size > 0:
		return fmt.Sprintf("g.created_at - g.created_at %% %d", g.Size.Milliseconds()), nil
	}
	var b strings.Builder
	var args []any
	start := gatehouse.Monthly.Start(q.Start)
	for next := start.AddDate(0, 1, 0); next.Before(q.End); start, next = next, next.AddDate(0, 1, 0) {
		b.WriteString(" WHEN g.created_at < ? THEN CAST(? AS BIGINT)")
		args = append(args, ms(next), ms(start))
	}
	if b.Len() == 0 { // the range is within one month
		return "CAST(? AS BIGINT)", []any{ms(start)}
	}
	return "CASE" + b.String() + " ELSE CAST(? AS BIGINT) END", append(args, ms(start))
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

type adHocKey struct{}

// AdHoc marks ctx for statements whose text is built for one request, such
// as analytics queries: an engine that keeps prepared statements by their
// text should not keep theirs (IsAdHoc).
func AdHoc(ctx context.Context) context.Context { return context.WithValue(ctx, adHocKey{}, true) }

// IsAdHoc reports whether ctx is marked by AdHoc.
func IsAdHoc(ctx context.Context) bool {
	v, _ := ctx.Value(adHocKey{}).(bool)
	return v
}
