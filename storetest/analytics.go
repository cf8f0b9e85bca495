package storetest

import (
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// testAnalytics checks the activity and analytics queries over the usage
// ledger.
func testAnalytics(t *testing.T, open Opener) {
	runSubtests(t, open, []subtest{
		{"Activity", testActivity},
		{"ActivityFilters", testActivityFilters},
		{"AnalyticsMetrics", testAnalyticsMetrics},
		{"AnalyticsBuckets", testAnalyticsBuckets},
		{"AnalyticsFilters", testAnalyticsFilters},
		{"AnalyticsOrderAndLimits", testAnalyticsOrderAndLimits},
		{"SearchGenerations", testGenerationSearch},
	})
}

// ledgerCall is a completed call to write into the ledger.
type ledgerCall struct {
	at              time.Time
	key             *gatehouse.Key
	model, provider string
	prompt, compl   int64
	cost            gatehouse.Money
	byok            bool
	finish          *string
	latency, gen    int64
}

// record writes a call into the ledger at its time, as the metering does:
// a reservation, then its settlement.
func (f *fixture) record(t *testing.T, c ledgerCall) *gatehouse.Generation {
	t.Helper()
	f.clock.Set(c.at)
	r := f.mustReserve(t, c.key, c.cost, c.byok, nil)
	g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: c.key.OrganizationID,
		WorkspaceID: c.key.WorkspaceID, KeyHash: c.key.Hash, Model: c.model, Provider: c.provider,
		PromptTokens: c.prompt, CompletionTokens: c.compl, Cost: c.cost, BYOK: c.byok, FinishReason: c.finish,
		Status: gatehouse.GenerationCompleted, LatencyMS: c.latency, GenerationMS: c.gen}
	ok(t, f.store.Settle(f.ctx, r.ID, g))
	return g
}

// ledgerWorld is an organization with a ledger of calls, and another
// organization whose calls must never show.
type ledgerWorld struct {
	*fixture
	now                 time.Time
	member              *gatehouse.Member
	team                *gatehouse.Workspace
	kA, kB, kC          *gatehouse.Key // kA and kC created by member, kB in team
	defaultWS           string
	otherOrg            *gatehouse.Organization
	stop                *string
	first, jan30, feb23 time.Time
}

// newLedgerWorld writes the calls every analytics test reads. Today is
// Wednesday 2028-03-01; the activity covers 2028-01-31 to today.
func newLedgerWorld(t *testing.T, open Opener) *ledgerWorld {
	f := newFixture(t, open)
	w := &ledgerWorld{fixture: f, now: time.Date(2028, 3, 1, 10, 0, 0, 0, time.UTC)}
	f.clock.Set(time.Date(2028, 1, 1, 0, 0, 0, 0, time.UTC))
	w.member = f.newMember(t, f.org.ID, "ana@example.com")
	w.team = f.newWorkspace(t, f.org.ID, "team")
	w.kA = f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "a", CreatorUserID: &w.member.ID})
	w.kB = f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "b", WorkspaceID: "team"})
	w.kC = f.newKey(t, f.org.ID, gatehouse.KeyCreate{Name: "c", CreatorUserID: &w.member.ID})
	w.defaultWS = w.kA.WorkspaceID
	w.otherOrg = f.newOrg(t, "Other")
	kX := f.newKey(t, w.otherOrg.ID, gatehouse.KeyCreate{Name: "x"})
	stop := "stop"
	w.stop = &stop
	w.first, w.jan30 = time.Date(2028, 1, 31, 0, 0, 0, 0, time.UTC), time.Date(2028, 1, 30, 23, 59, 59, 999e6, time.UTC)
	w.feb23 = time.Date(2028, 2, 23, 0, 0, 0, 0, time.UTC)
	for _, c := range []ledgerCall{
		{at: w.jan30, key: w.kA, model: "acme/chat", provider: "acme", prompt: 1, compl: 1, cost: cents(1), finish: &stop, latency: 100, gen: 1000},
		{at: w.first, key: w.kA, model: "acme/chat", provider: "acme", prompt: 10, compl: 20, cost: cents(2), finish: &stop, latency: 200, gen: 2000},
		{at: w.feb23.Add(12 * time.Hour), key: w.kA, model: "acme/chat", provider: "acme", prompt: 30, compl: 40, cost: cents(3), latency: 300, gen: 0},
		{at: w.feb23.Add(18 * time.Hour), key: w.kB, model: "acme/chat", provider: "acme", prompt: 50, compl: 60, cost: cents(4), byok: true, finish: &stop, latency: 400, gen: 3000},
		{at: w.feb23.Add(13 * time.Hour), key: w.kA, model: "other/mini", provider: "other", prompt: 70, compl: 80, cost: cents(5), latency: 500, gen: 4000},
		{at: w.now.Add(-time.Hour), key: w.kC, model: "acme/chat", provider: "acme", prompt: 90, compl: 100, cost: cents(6), finish: &stop, latency: 600, gen: 5000},
		{at: w.feb23.Add(12 * time.Hour), key: kX, model: "acme/chat", provider: "acme", prompt: 1000, compl: 1000, cost: cents(100), latency: 1, gen: 1},
	} {
		f.record(t, c)
	}
	f.clock.Set(w.now)
	return w
}

// activity reads the activity of the world's organization at its now.
func (w *ledgerWorld) activity(t *testing.T, f gatehouse.ActivityFilter) []*gatehouse.ActivityRow {
	t.Helper()
	if f.Since.IsZero() {
		f.Since, f.Until = gatehouse.ActivityWindow(w.now)
	}
	rows, err := w.store.Activity(w.ctx, w.org.ID, f)
	ok(t, err)
	return rows
}

func day(y int, m time.Month, d int) time.Time { return time.Date(y, m, d, 0, 0, 0, 0, time.UTC) }

// activityRow builds an expected row of one call's figures.
func activityRow(date time.Time, model, provider string, requests, prompt, compl int64, usage, byok gatehouse.Money) *gatehouse.ActivityRow {
	return &gatehouse.ActivityRow{Date: date, Model: model, Provider: provider, Requests: requests,
		PromptTokens: prompt, CompletionTokens: compl, Usage: usage, BYOKUsage: byok}
}

// testActivity sums the last 30 UTC days and today by day, model and
// endpoint, newest day first; BYOK spend apart; the day before the window
// and other organizations never count.
func testActivity(t *testing.T, open Opener) {
	w := newLedgerWorld(t, open)
	wantEqual(t, "activity", []*gatehouse.ActivityRow{
		activityRow(day(2028, 3, 1), "acme/chat", "acme", 1, 90, 100, cents(6), 0),
		activityRow(day(2028, 2, 23), "acme/chat", "acme", 2, 80, 100, cents(3), cents(4)),
		activityRow(day(2028, 2, 23), "other/mini", "other", 1, 70, 80, cents(5), 0),
		activityRow(day(2028, 1, 31), "acme/chat", "acme", 1, 10, 20, cents(2), 0),
	}, w.activity(t, gatehouse.ActivityFilter{}))

	byWS := w.activity(t, gatehouse.ActivityFilter{ByWorkspace: true})
	feb23 := []*gatehouse.ActivityRow{
		activityRow(day(2028, 2, 23), "acme/chat", "acme", 1, 30, 40, cents(3), 0),
		activityRow(day(2028, 2, 23), "acme/chat", "acme", 1, 50, 60, 0, cents(4)),
	}
	feb23[0].WorkspaceID, feb23[1].WorkspaceID = w.defaultWS, w.team.ID
	if w.team.ID < w.defaultWS {
		feb23[0], feb23[1] = feb23[1], feb23[0]
	}
	if len(byWS) != 5 {
		t.Fatalf("by workspace: %d rows, want 5", len(byWS))
	}
	wantEqual(t, "Feb 23 of acme/chat by workspace", feb23, byWS[1:3])
	for _, r := range byWS {
		if r.WorkspaceID == "" {
			t.Errorf("row %v without a workspace", r)
		}
	}

	other, err := w.store.Activity(w.ctx, w.otherOrg.ID, gatehouse.ActivityFilter{Since: w.first, Until: w.now})
	ok(t, err)
	wantEqual(t, "the other organization's activity", []*gatehouse.ActivityRow{
		activityRow(day(2028, 2, 23), "acme/chat", "acme", 1, 1000, 1000, cents(100), 0),
	}, other)
}

// testActivityFilters narrows the activity to a day, a key, a member's
// keys and a workspace; a workspace of another organization is not found.
func testActivityFilters(t *testing.T, open Opener) {
	w := newLedgerWorld(t, open)
	wantEqual(t, "one day", []*gatehouse.ActivityRow{
		activityRow(day(2028, 2, 23), "acme/chat", "acme", 2, 80, 100, cents(3), cents(4)),
		activityRow(day(2028, 2, 23), "other/mini", "other", 1, 70, 80, cents(5), 0),
	}, w.activity(t, gatehouse.ActivityFilter{Since: w.feb23, Until: w.feb23.AddDate(0, 0, 1)}))

	keyA := []*gatehouse.ActivityRow{
		activityRow(day(2028, 2, 23), "acme/chat", "acme", 1, 30, 40, cents(3), 0),
		activityRow(day(2028, 2, 23), "other/mini", "other", 1, 70, 80, cents(5), 0),
		activityRow(day(2028, 1, 31), "acme/chat", "acme", 1, 10, 20, cents(2), 0),
	}
	wantEqual(t, "key a", keyA, w.activity(t, gatehouse.ActivityFilter{KeyHash: w.kA.Hash}))
	wantEqual(t, "member's keys", append([]*gatehouse.ActivityRow{
		activityRow(day(2028, 3, 1), "acme/chat", "acme", 1, 90, 100, cents(6), 0)}, keyA...),
		w.activity(t, gatehouse.ActivityFilter{UserID: w.member.ID}))
	team := []*gatehouse.ActivityRow{activityRow(day(2028, 2, 23), "acme/chat", "acme", 1, 50, 60, 0, cents(4))}
	wantEqual(t, "team by slug", team, w.activity(t, gatehouse.ActivityFilter{WorkspaceID: "team"}))
	wantEqual(t, "team by id", team, w.activity(t, gatehouse.ActivityFilter{WorkspaceID: w.team.ID}))
	wantEqual(t, "a key of another workspace", []*gatehouse.ActivityRow{},
		w.activity(t, gatehouse.ActivityFilter{WorkspaceID: "team", KeyHash: w.kA.Hash}))
	wantEqual(t, "an unknown key", []*gatehouse.ActivityRow{}, w.activity(t, gatehouse.ActivityFilter{KeyHash: strings.Repeat("0", 64)}))

	// A deleted key's calls stay in the ledger, under its hash, but no
	// longer count as its creator's.
	ok(t, w.store.DeleteKey(w.ctx, w.org.ID, w.kC.Hash))
	wantEqual(t, "member's keys after one is deleted", keyA, w.activity(t, gatehouse.ActivityFilter{UserID: w.member.ID}))
	if rows := w.activity(t, gatehouse.ActivityFilter{KeyHash: w.kC.Hash}); len(rows) != 1 || rows[0].Usage != cents(6) {
		t.Errorf("a deleted key's activity: %v", rows)
	}

	otherWS := w.newWorkspace(t, w.otherOrg.ID, "theirs")
	for _, ref := range []string{otherWS.ID, "theirs", "no-such-workspace"} {
		_, err := w.store.Activity(w.ctx, w.org.ID, gatehouse.ActivityFilter{Since: w.first, Until: w.now, WorkspaceID: ref})
		wantCode(t, err, gatehouse.ENOTFOUND)
	}
}

// query resolves q at the world's now and runs it.
func (w *ledgerWorld) query(t *testing.T, q gatehouse.AnalyticsQuery) *gatehouse.AnalyticsResult {
	t.Helper()
	if _, err := q.Resolve(w.now); err != nil {
		t.Fatalf("Resolve: %v", err)
	}
	res, err := w.store.QueryAnalytics(w.ctx, w.org.ID, &q)
	ok(t, err)
	return res
}

// since returns the query's time range: from start to the world's now.
func (w *ledgerWorld) since(q gatehouse.AnalyticsQuery, start time.Time) gatehouse.AnalyticsQuery {
	q.Start, q.End = start, w.now
	return q
}

// analyticsRow is an expected row: its bucket, dimensions ("" for unset)
// and values (a float64 for an average, nil for a null one).
func analyticsRow(bucket time.Time, dims []string, values ...any) gatehouse.AnalyticsRow {
	r := gatehouse.AnalyticsRow{Bucket: bucket}
	for _, d := range dims {
		if d == "" {
			r.Dimensions = append(r.Dimensions, nil)
		} else {
			r.Dimensions = append(r.Dimensions, &d)
		}
	}
	for _, v := range values {
		switch v := v.(type) {
		case nil:
			r.Values = append(r.Values, gatehouse.AnalyticsValue{Null: true})
		case float64:
			r.Values = append(r.Values, gatehouse.AnalyticsValue{F: v})
		case gatehouse.Money:
			r.Values = append(r.Values, gatehouse.AnalyticsValue{N: int64(v)})
		case int:
			r.Values = append(r.Values, gatehouse.AnalyticsValue{N: int64(v)})
		}
	}
	return r
}

// testAnalyticsMetrics computes every metric over the organization's
// calls, and over none.
func testAnalyticsMetrics(t *testing.T, open Opener) {
	w := newLedgerWorld(t, open)
	var all []string
	for _, m := range gatehouse.AnalyticsMetrics {
		all = append(all, m.Name)
	}
	// Six calls (one BYOK of $0.04); throughput skips the call without a generation time.
	wantEqual(t, "every metric", []gatehouse.AnalyticsRow{analyticsRow(time.Time{}, nil,
		6, 1, 251, 301, 552, cents(21), cents(17), cents(4), 350.0, (1.0+10+20+20+20)/5)},
		w.query(t, w.since(gatehouse.AnalyticsQuery{Metrics: all}, w.jan30)).Rows)
	wantEqual(t, "metrics of no call", []gatehouse.AnalyticsRow{analyticsRow(time.Time{}, nil, 0, cents(0), nil)},
		w.query(t, w.since(gatehouse.AnalyticsQuery{Metrics: []string{"request_count", "total_usage", "avg_latency"}}, w.now.Add(-time.Minute))).Rows)
	wantEqual(t, "the default range is the last seven days", []gatehouse.AnalyticsRow{analyticsRow(time.Time{}, nil, 4)},
		w.query(t, gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}}).Rows)
}

// testAnalyticsBuckets groups by every granularity: UTC minutes, hours,
// days, Monday weeks and calendar months.
func testAnalyticsBuckets(t *testing.T, open Opener) {
	w := newLedgerWorld(t, open)
	bucketed := func(g string, start time.Time) []gatehouse.AnalyticsRow {
		return w.query(t, w.since(gatehouse.AnalyticsQuery{Metrics: []string{"request_count", "total_usage"}, Granularity: g}, start)).Rows
	}
	wantEqual(t, "months", []gatehouse.AnalyticsRow{
		analyticsRow(day(2028, 3, 1), nil, 1, cents(6)),
		analyticsRow(day(2028, 2, 1), nil, 3, cents(12)),
		analyticsRow(day(2028, 1, 1), nil, 2, cents(3)),
	}, bucketed("month", day(2027, 12, 15)))
	wantEqual(t, "a range within one month", []gatehouse.AnalyticsRow{analyticsRow(day(2028, 2, 1), nil, 3, cents(12))},
		w.query(t, gatehouse.AnalyticsQuery{Metrics: []string{"request_count", "total_usage"}, Granularity: "month",
			Start: w.feb23, End: day(2028, 2, 24)}).Rows)
	wantEqual(t, "weeks", []gatehouse.AnalyticsRow{
		analyticsRow(day(2028, 2, 28), nil, 1, cents(6)),
		analyticsRow(day(2028, 2, 21), nil, 3, cents(12)),
		analyticsRow(day(2028, 1, 31), nil, 1, cents(2)),
		analyticsRow(day(2028, 1, 24), nil, 1, cents(1)),
	}, bucketed("week", day(2028, 1, 1)))
	wantEqual(t, "days", []gatehouse.AnalyticsRow{
		analyticsRow(day(2028, 3, 1), nil, 1, cents(6)),
		analyticsRow(day(2028, 2, 23), nil, 3, cents(12)),
		analyticsRow(day(2028, 1, 31), nil, 1, cents(2)),
	}, bucketed("day", w.first))
	wantEqual(t, "hours", []gatehouse.AnalyticsRow{
		analyticsRow(w.feb23.Add(18*time.Hour), nil, 1, cents(4)),
		analyticsRow(w.feb23.Add(13*time.Hour), nil, 1, cents(5)),
		analyticsRow(w.feb23.Add(12*time.Hour), nil, 1, cents(3)),
	}, w.query(t, gatehouse.AnalyticsQuery{Metrics: []string{"request_count", "total_usage"}, Granularity: "hour",
		Start: w.feb23, End: w.feb23.AddDate(0, 0, 1)}).Rows)
	wantEqual(t, "minutes", []gatehouse.AnalyticsRow{analyticsRow(w.jan30.Truncate(time.Minute), nil, 1, cents(1))},
		w.query(t, gatehouse.AnalyticsQuery{Metrics: []string{"request_count", "total_usage"}, Granularity: "minute",
			Start: w.jan30.Add(-time.Hour), End: w.first}).Rows)
	// The range is [start, end): a call at end is left out.
	wantEqual(t, "a call at the range's end", []gatehouse.AnalyticsRow{analyticsRow(time.Time{}, nil, 1)},
		w.query(t, gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}, Start: w.jan30, End: w.first}).Rows)
}

// testAnalyticsFilters filters by every operator, on ids and on dimensions
// that may be unset, and groups by the key's creator.
func testAnalyticsFilters(t *testing.T, open Opener) {
	w := newLedgerWorld(t, open)
	count := func(filters ...gatehouse.AnalyticsFilter) int64 {
		t.Helper()
		rows := w.query(t, w.since(gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}, Filters: filters}, w.jan30)).Rows
		return rows[0].Values[0].N
	}
	one := func(field, op, v string) gatehouse.AnalyticsFilter {
		return gatehouse.AnalyticsFilter{Field: field, Operator: op, Values: []string{v}}
	}
	list := func(field, op string, unset bool, vs ...string) gatehouse.AnalyticsFilter {
		return gatehouse.AnalyticsFilter{Field: field, Operator: op, Values: vs, List: true, IncludeUnset: unset}
	}
	for name, c := range map[string]struct {
		filters []gatehouse.AnalyticsFilter
		want    int64
	}{
		"model eq":                  {[]gatehouse.AnalyticsFilter{one("model", "eq", "acme/chat")}, 5},
		"model neq":                 {[]gatehouse.AnalyticsFilter{one("model", "neq", "acme/chat")}, 1},
		"provider gt":               {[]gatehouse.AnalyticsFilter{one("provider", "gt", "acme")}, 1},
		"provider gte":              {[]gatehouse.AnalyticsFilter{one("provider", "gte", "acme")}, 6},
		"provider lt":               {[]gatehouse.AnalyticsFilter{one("provider", "lt", "other")}, 5},
		"provider lte":              {[]gatehouse.AnalyticsFilter{one("provider", "lte", "other")}, 6},
		"key in, upper case":        {[]gatehouse.AnalyticsFilter{list("api_key_id", "in", false, strings.ToUpper(w.kA.Hash), w.kB.Hash)}, 5},
		"key not_in":                {[]gatehouse.AnalyticsFilter{list("api_key_id", "not_in", false, w.kA.Hash)}, 2},
		"workspace":                 {[]gatehouse.AnalyticsFilter{one("workspace", "eq", strings.ToUpper(w.team.ID))}, 1},
		"finish_reason in":          {[]gatehouse.AnalyticsFilter{list("finish_reason", "in", false, "stop")}, 4},
		"finish_reason in or unset": {[]gatehouse.AnalyticsFilter{list("finish_reason", "in", true, "stop")}, 6},
		"finish_reason not_in":      {[]gatehouse.AnalyticsFilter{list("finish_reason", "not_in", false, "stop")}, 0},
		"not_in or unset":           {[]gatehouse.AnalyticsFilter{list("finish_reason", "not_in", true, "stop")}, 2},
		"user eq":                   {[]gatehouse.AnalyticsFilter{one("user", "eq", w.member.ID)}, 5},
		"user in or unset":          {[]gatehouse.AnalyticsFilter{list("user", "in", true, "user_nobody")}, 1},
		"two filters, and-ed":       {[]gatehouse.AnalyticsFilter{one("model", "eq", "acme/chat"), one("user", "neq", "user_nobody")}, 4},
		"a key of another org":      {[]gatehouse.AnalyticsFilter{one("generation_id", "neq", "x"), list("api_key_id", "in", false, strings.Repeat("f", 64))}, 0},
	} {
		if got := count(c.filters...); got != c.want {
			t.Errorf("%s: %d calls, want %d", name, got, c.want)
		}
	}

	byUser := w.query(t, w.since(gatehouse.AnalyticsQuery{Metrics: []string{"request_count", "total_usage"},
		Dimensions: []string{"user"}, OrderBy: "user"}, w.jan30)).Rows
	wantEqual(t, "by user", []gatehouse.AnalyticsRow{
		analyticsRow(time.Time{}, []string{w.member.ID}, 5, cents(17)),
		analyticsRow(time.Time{}, []string{""}, 1, cents(4)),
	}, byUser)
}

// testAnalyticsOrderAndLimits orders by metrics and dimensions, cuts at
// the limit (saying so) and at the group limit.
func testAnalyticsOrderAndLimits(t *testing.T, open Opener) {
	w := newLedgerWorld(t, open)
	byModel := gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"}, Dimensions: []string{"model", "provider"}}
	wantEqual(t, "by the first metric, largest first", []gatehouse.AnalyticsRow{
		analyticsRow(time.Time{}, []string{"acme/chat", "acme"}, cents(16)),
		analyticsRow(time.Time{}, []string{"other/mini", "other"}, cents(5)),
	}, w.query(t, w.since(byModel, w.jan30)).Rows)

	asc := byModel
	asc.OrderBy, asc.Limit = "request_count", 1
	res := w.query(t, w.since(asc, w.jan30))
	wantEqual(t, "by a metric not shown, smallest first, cut at 1", []gatehouse.AnalyticsRow{
		analyticsRow(time.Time{}, []string{"other/mini", "other"}, cents(5)),
	}, res.Rows)
	if !res.Truncated {
		t.Error("a result cut at its limit is not marked truncated")
	}
	asc.Limit = 2
	if res := w.query(t, w.since(asc, w.jan30)); res.Truncated || len(res.Rows) != 2 {
		t.Errorf("limit 2 of 2 rows: %d rows, truncated %v", len(res.Rows), res.Truncated)
	}

	daily := gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}, Dimensions: []string{"model"}, Granularity: "day", GroupLimit: 1}
	wantEqual(t, "the newest day of each model", []gatehouse.AnalyticsRow{
		analyticsRow(day(2028, 3, 1), []string{"acme/chat"}, 1),
		analyticsRow(day(2028, 2, 23), []string{"other/mini"}, 1),
	}, w.query(t, w.since(daily, w.jan30)).Rows)
	daily.OrderBy, daily.Descending = "request_count", true
	wantEqual(t, "the busiest day of each model", []gatehouse.AnalyticsRow{
		analyticsRow(day(2028, 2, 23), []string{"acme/chat"}, 2),
		analyticsRow(day(2028, 2, 23), []string{"other/mini"}, 1),
	}, w.query(t, w.since(daily, w.jan30)).Rows)

	byDate := gatehouse.AnalyticsQuery{Metrics: []string{"request_count"}, Granularity: "day", OrderBy: "date"}
	if rows := w.query(t, w.since(byDate, w.jan30)).Rows; len(rows) != 4 || !rows[0].Bucket.Equal(day(2028, 1, 30)) {
		t.Errorf("by date, oldest first: %v", rows)
	}
	gens := gatehouse.AnalyticsQuery{Metrics: []string{"total_usage"}, Dimensions: []string{"generation_id"}, Limit: 10}
	if rows := w.query(t, w.since(gens, w.jan30)).Rows; len(rows) != 6 || rows[0].Values[0].N != int64(cents(6)) {
		t.Errorf("by generation: %v", rows)
	}
}
