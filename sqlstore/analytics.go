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
// activity and analytics queries. It sums in two steps: the generations
// of each UTC day (or minute or hour) and combination of dimensions, then
// those partial sums into the query's buckets. The first step reads the
// index generations_daily (migration 0010_activity_indexes.sql) in its
// order, day then model, provider and workspace: SQLite then sums as it
// reads, where grouping in any other order sorts every row first (five
// times slower at a million rows); the second step has few rows to sort.

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

// sumSQL is the first step of each metric that is a sum; the second adds
// up its results (a sum of nothing reads 0).
var sumSQL = map[string]string{
	"request_count":      "COUNT(*)",
	"byok_request_count": "SUM(CASE WHEN g.byok = TRUE THEN 1 ELSE 0 END)",
	"tokens_prompt":      "SUM(g.prompt_tokens)",
	"tokens_completion":  "SUM(g.completion_tokens)",
	"tokens_total":       "SUM(g.prompt_tokens + g.completion_tokens)",
	"total_usage":        "SUM(g.cost)",
	"credits_usage":      "SUM(CASE WHEN g.byok = TRUE THEN 0 ELSE g.cost END)",
	"byok_usage":         "SUM(CASE WHEN g.byok = TRUE THEN g.cost ELSE 0 END)",
}

// averageSQL is the value each average metric averages, in floating
// point; NULL values are left out. The first step sums and counts them,
// the second divides (an average of nothing is NULL).
var averageSQL = map[string]string{
	"avg_latency":    "CAST(g.latency_ms AS DOUBLE PRECISION)",
	"avg_throughput": "CAST(g.completion_tokens AS DOUBLE PRECISION) * 1000 / NULLIF(g.generation_ms, 0)",
}

// filterSQL is the comparison of each scalar operator.
var filterSQL = map[string]string{"eq": "=", "neq": "<>", "gt": ">", "gte": ">=", "lt": "<", "lte": "<="}

// dayMS is a UTC day in milliseconds: created_at / dayMS is its day number.
const dayMS = int64(24 * time.Hour / time.Millisecond)

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
	ctx = AdHoc(LongRead(ctx))
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
	ctx = LongRead(ctx)
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
	inner, args := tx.innerQuery(orgID, a)
	bucket, bucketArgs, toTime := outerBucket(q)
	var cols, groups []string
	if bucket != "" {
		cols, groups = append(cols, bucket+" AS bucket"), append(groups, "bucket")
	}
	args = append(bucketArgs, args...)
	for i := range q.Dimensions {
		cols, groups = append(cols, fmt.Sprintf("i.d%d AS dim%d", i, i)), append(groups, fmt.Sprintf("dim%d", i))
	}
	for i, m := range a.metrics {
		if _, avg := averageSQL[m]; avg {
			cols = append(cols, fmt.Sprintf("SUM(i.x%ds) / NULLIF(CAST(SUM(i.x%dc) AS DOUBLE PRECISION), 0) AS m%d", i, i, i))
		} else {
			cols = append(cols, fmt.Sprintf("COALESCE(SUM(i.x%d), 0) AS m%d", i, i))
		}
	}
	query := `SELECT ` + strings.Join(cols, ", ") + ` FROM (` + inner + `) i`
	if len(groups) > 0 {
		query += ` GROUP BY ` + strings.Join(groups, ", ")
	}
	order := a.order()
	if q.GroupLimit > 0 && len(q.Dimensions) > 0 {
		partition := strings.Join(groups[len(groups)-len(q.Dimensions):], ", ")
		query = `SELECT * FROM (SELECT o.*, ROW_NUMBER() OVER (PARTITION BY ` + partition + ` ORDER BY ` + order + `) AS rn FROM (` +
			query + `) o) r WHERE rn <= ?`
		args = append(args, q.GroupLimit)
	}
	query += ` ORDER BY ` + order
	if a.limit > 0 {
		query, args = query+` LIMIT ?`, append(args, a.limit+1)
	}
	rows, err := tx.Query(ctx, query, args...)
	return collect(rows, err, func(s Scanner) (gatehouse.AnalyticsRow, error) { return a.scan(s, toTime) })
}

// innerQuery is the first step of an aggregation: the generations summed
// by UTC day (by minute or hour at those granularities) and dimensions.
// Its WHERE names the day numbers of the range too, so that the range is
// read from generations_daily, unless the query picks keys (or members'
// keys): their index, generations_key, must then serve it, and the
// organization is compared with the empty string appended to it, which
// no index serves. SQLite keeps no statistics here, so without that its planner
// could read the whole organization's range to find one member's calls.
func (tx *Tx) innerQuery(orgID string, a aggregation) (string, []any) {
	q := a.q
	unit := dayMS
	if g, _ := gatehouse.FindGranularity(q.Granularity); g.Size > 0 && g.Size < 24*time.Hour {
		unit = g.Size.Milliseconds()
	}
	cols := []string{fmt.Sprintf("g.created_at / %d AS b", unit)}
	groups := []string{"b"}
	for i, d := range q.Dimensions {
		cols, groups = append(cols, fmt.Sprintf("%s AS d%d", dimensionSQL[d], i)), append(groups, fmt.Sprintf("d%d", i))
	}
	for i, m := range a.metrics {
		if v, avg := averageSQL[m]; avg {
			cols = append(cols, fmt.Sprintf("SUM(%s) AS x%ds, COUNT(%s) AS x%dc", v, i, v, i))
		} else {
			cols = append(cols, fmt.Sprintf("%s AS x%d", sumSQL[m], i))
		}
	}
	where, args := `g.organization_id || '' = ?`, []any{orgID}
	if !picksKeys(q) {
		where = fmt.Sprintf(`g.organization_id = ? AND g.created_at / %d BETWEEN ? AND ?`, dayMS)
		args = append(args, q.Start.UnixMilli()/dayMS, (q.End.UnixMilli()-1)/dayMS)
	}
	filters, filterArgs := tx.analyticsWhere(orgID, q)
	where += ` AND g.created_at >= ? AND g.created_at < ?` + filters
	args = append(append(args, ms(q.Start), ms(q.End)), filterArgs...)
	return `SELECT ` + strings.Join(cols, ", ") + ` FROM generations g` + keyJoin(q) + ` WHERE ` + where +
		` GROUP BY ` + strings.Join(groups, ", "), args
}

// picksKeys reports whether a filter of q keeps only given keys, or the
// keys of given members.
func picksKeys(q *gatehouse.AnalyticsQuery) bool {
	return slices.ContainsFunc(q.Filters, func(f gatehouse.AnalyticsFilter) bool {
		return f.Field == "api_key_id" && (f.Operator == "eq" || f.Operator == "in") || keysOfMembers(f)
	})
}

// outerBucket returns the second step's time bucket, over the first
// step's bucket number i.b, with its arguments and what turns its values
// into instants; "" without a granularity. Weeks start on Monday: day 0
// of the epoch was a Thursday. Months are a CASE over the day numbers of
// the month starts of the range, at most 13 of them.
func outerBucket(q *gatehouse.AnalyticsQuery) (string, []any, func(int64) time.Time) {
	g, ok := gatehouse.FindGranularity(q.Granularity)
	switch {
	case !ok:
		return "", nil, nil
	case g.Name == "week":
		return "(i.b + 3) / 7", nil, func(w int64) time.Time { return fromMS((7*w - 3) * dayMS) }
	case g.Size > 0:
		unit := g.Size.Milliseconds()
		return "i.b", nil, func(v int64) time.Time { return fromMS(v * unit) }
	}
	var b strings.Builder
	var args []any
	start := gatehouse.Monthly.Start(q.Start)
	for next := start.AddDate(0, 1, 0); next.Before(q.End); start, next = next, next.AddDate(0, 1, 0) {
		b.WriteString(" WHEN i.b < ? THEN CAST(? AS BIGINT)")
		args = append(args, next.UnixMilli()/dayMS, start.UnixMilli()/dayMS)
	}
	toTime := func(d int64) time.Time { return fromMS(d * dayMS) }
	if b.Len() == 0 { // the range is within one month
		return "CAST(? AS BIGINT)", []any{start.UnixMilli() / dayMS}, toTime
	}
	return "CASE" + b.String() + " ELSE CAST(? AS BIGINT) END", append(args, start.UnixMilli()/dayMS), toTime
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
		terms = append(terms, "bucket"+dir)
	case slices.Contains(q.Dimensions, q.OrderBy):
		terms = append(terms, fmt.Sprintf("dim%d%s NULLS LAST", slices.Index(q.Dimensions, q.OrderBy), dir))
	default:
		terms = append(terms, fmt.Sprintf("m%d%s NULLS LAST", slices.Index(a.metrics, q.OrderBy), dir))
	}
	if q.Granularity != "" && q.OrderBy != "date" {
		terms = append(terms, "bucket DESC")
	}
	for i, d := range q.Dimensions {
		if d != q.OrderBy {
			terms = append(terms, fmt.Sprintf("dim%d ASC NULLS LAST", i))
		}
	}
	return strings.Join(terms, ", ")
}

// scan reads a row of the aggregation; toTime turns its bucket into an
// instant (nil: no bucket).
func (a aggregation) scan(s Scanner, toTime func(int64) time.Time) (gatehouse.AnalyticsRow, error) {
	var r gatehouse.AnalyticsRow
	var bucket int64
	var dest []any
	if toTime != nil {
		dest = append(dest, &bucket)
	}
	dims := make([]sql.NullString, len(a.q.Dimensions))
	for i := range dims {
		dest = append(dest, &dims[i])
	}
	r.Values = make([]gatehouse.AnalyticsValue, len(a.metrics))
	avgs := make([]sql.NullFloat64, len(a.metrics))
	for i, m := range a.metrics {
		if _, avg := averageSQL[m]; avg {
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
	if toTime != nil {
		r.Bucket = toTime(bucket)
	}
	for _, d := range dims {
		var v *string
		if d.Valid {
			v = &d.String
		}
		r.Dimensions = append(r.Dimensions, v)
	}
	for i, m := range a.metrics {
		if _, avg := averageSQL[m]; avg {
			r.Values[i] = gatehouse.AnalyticsValue{F: avgs[i].Float64, Null: !avgs[i].Valid}
		}
	}
	return r, nil
}

// analyticsWhere returns the conditions of a query's filters, each
// starting with AND, and their arguments. A filter that picks members
// (keysOfMembers) picks their keys, which the key index then reads.
func (tx *Tx) analyticsWhere(orgID string, q *gatehouse.AnalyticsQuery) (string, []any) {
	var where strings.Builder
	var args []any
	for _, f := range q.Filters {
		col := dimensionSQL[f.Field]
		var cond string
		switch {
		case keysOfMembers(f):
			var in string
			in, args = tx.in("creator_user_id", f.Values, append(args, orgID)...)
			cond = `g.key_hash IN (SELECT hash FROM api_keys WHERE organization_id = ? AND ` + in + `)`
		case f.Operator == "in" || f.Operator == "not_in":
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

// keysOfMembers reports whether f keeps the calls of the keys of given
// members (eq or in, without the unset): the same as keeping the keys
// those members created and that still exist.
func keysOfMembers(f gatehouse.AnalyticsFilter) bool {
	return f.Field == "user" && (f.Operator == "eq" || f.Operator == "in") && !f.IncludeUnset
}

// keyJoin joins the key that made each call when a dimension or a filter
// of q needs the member who created it. A deleted key's calls then have
// no user.
func keyJoin(q *gatehouse.AnalyticsQuery) string {
	uses := slices.Contains(q.Dimensions, "user")
	for _, f := range q.Filters {
		uses = uses || f.Field == "user" && !keysOfMembers(f)
	}
	if !uses {
		return ""
	}
	return ` LEFT JOIN api_keys k ON k.hash = g.key_hash AND k.organization_id = g.organization_id`
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

type longReadKey struct{}

// LongRead marks ctx for a read that may take longer than an engine's
// operation timeout (PostgreSQL's GATEHOUSE_DB_TIMEOUT), such as an
// analytics query over millions of ledger entries: when ctx has a deadline
// of its own, that deadline bounds it instead (IsLongRead).
func LongRead(ctx context.Context) context.Context {
	return context.WithValue(ctx, longReadKey{}, true)
}

// IsLongRead reports whether ctx is marked by LongRead.
func IsLongRead(ctx context.Context) bool {
	v, _ := ctx.Value(longReadKey{}).(bool)
	return v
}
