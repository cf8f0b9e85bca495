package httpapi_test

import (
	"net/http"
	"net/url"
	"slices"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/httpapi"
)

// activityItem is an item of GET /activity, every field of the SDK's
// ActivityItem.
type activityItem struct {
	Date               string          `json:"date"`
	Model              string          `json:"model"`
	ModelPermaslug     string          `json:"model_permaslug"`
	EndpointID         string          `json:"endpoint_id"`
	ProviderName       string          `json:"provider_name"`
	Usage              gatehouse.Money `json:"usage"`
	BYOKUsageInference gatehouse.Money `json:"byok_usage_inference"`
	Requests           int64           `json:"requests"`
	PromptTokens       int64           `json:"prompt_tokens"`
	CompletionTokens   int64           `json:"completion_tokens"`
	ReasoningTokens    int64           `json:"reasoning_tokens"`
	WorkspaceID        *string         `json:"workspace_id"`
}

// analyticsEnv is a chat environment with three calls in its ledger: on
// 2027-03-17 (today), one to acme/chat and one to the BYOK other/mini with
// the default workspace's key; the day before, one to acme/chat with a key
// of workspace team.
type analyticsEnv struct {
	*chatEnv
	teamHash, teamID string
	byokCost         gatehouse.Money
}

func newAnalyticsEnv(t *testing.T) *analyticsEnv {
	e := &analyticsEnv{chatEnv: newChatEnv(t, nil, nil)}
	e.teamID = e.createWorkspace(e.mgmt, "team")
	var teamKey string
	e.teamHash, teamKey = e.createKey(e.mgmt, map[string]any{"name": "team key", "workspace_id": "team"})
	e.clock.Set(testStart.AddDate(0, 0, -1))
	e.chat(teamKey, chatBody("acme/chat")).want(t, http.StatusOK)
	e.settled() // stamped with yesterday: the ledger stamps a call when it writes it
	e.clock.Set(testStart)
	e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK)
	e.chat(e.key, chatBody("other/mini")).want(t, http.StatusOK)
	e.byokCost = gatehouse.Money((11*gatehouse.USD(1) + 7*gatehouse.USD(2)) / 1_000_000)
	return e
}

// activity reads GET /activity with the query and the management key.
func (e *analyticsEnv) activity(query string) []activityItem {
	e.t.Helper()
	var out struct {
		Data []activityItem `json:"data"`
	}
	e.do("GET", "/api/v1/activity"+query, e.mgmt, nil).want(e.t, http.StatusOK).decode(e.t, &out)
	return out.Data
}

// TestActivity: usage by UTC day, model and endpoint right after the calls
// (the read waits for the ledger written behind them), filtered by day, key
// and workspace, split by workspace; another organization sees none of it.
func TestActivity(t *testing.T) {
	t.Parallel()
	e := newAnalyticsEnv(t)
	item := func(date, model, prov string, usage, byok gatehouse.Money) activityItem {
		return activityItem{Date: date, Model: model, ModelPermaslug: model, EndpointID: prov, ProviderName: prov,
			Usage: usage, BYOKUsageInference: byok, Requests: 1, PromptTokens: 11, CompletionTokens: 7}
	}
	today := item("2027-03-17", "acme/chat", "acme", chatCost(11, 7), 0)
	byok := item("2027-03-17", "other/mini", "other", 0, e.byokCost)
	yesterday := item("2027-03-16", "acme/chat", "acme", chatCost(11, 7), 0)
	wantItems(t, "all", []activityItem{today, byok, yesterday}, e.activity(""))
	wantItems(t, "one day", []activityItem{yesterday}, e.activity("?date=2027-03-16"))
	wantItems(t, "today", []activityItem{today, byok}, e.activity("?date=2027-03-17"))
	wantItems(t, "the first day of the window", []activityItem{}, e.activity("?date=2027-02-15"))
	wantItems(t, "a key, its hash in upper case", []activityItem{today, byok}, e.activity("?api_key_hash="+strings.ToUpper(e.hash)))
	wantItems(t, "a workspace by slug", []activityItem{yesterday}, e.activity("?workspace_id=team"))
	wantItems(t, "a workspace by id", []activityItem{yesterday}, e.activity("?workspace_id="+e.teamID))
	wantItems(t, "a member without keys", []activityItem{}, e.activity("?user_id="+e.addMember(e.mgmt, "ana@example.com")))

	defaultWS := e.workspaceIDOf(e.mgmt, "default")
	for _, it := range []*activityItem{&today, &byok} {
		it.WorkspaceID = &defaultWS
	}
	yesterday.WorkspaceID = &e.teamID
	wantItems(t, "by workspace", []activityItem{today, byok, yesterday}, e.activity("?group_by=workspace"))
	var raw struct {
		Data []map[string]any `json:"data"`
	}
	e.do("GET", "/api/v1/activity", e.mgmt, nil).want(t, http.StatusOK).decode(t, &raw)
	if _, ok := raw.Data[0]["workspace_id"]; ok || len(raw.Data[0]) != 11 {
		t.Errorf("an item without group_by has workspace_id or not the 11 fields: %v", raw.Data[0])
	}

	_, mgmtB := e.newOrg("Org B")
	var other struct {
		Data []activityItem `json:"data"`
	}
	e.do("GET", "/api/v1/activity", mgmtB, nil).want(t, http.StatusOK).decode(t, &other)
	if len(other.Data) != 0 {
		t.Errorf("another organization sees %v", other.Data)
	}
	e.unchanged("refused activity reads", func() {
		for query, want := range map[string]int{
			"?date=2027-02-14":                    http.StatusBadRequest, // 31 days ago
			"?date=2027-03-18":                    http.StatusBadRequest, // tomorrow
			"?date=17-03-2027":                    http.StatusBadRequest,
			"?date=2027-03-17T00:00:00Z":          http.StatusBadRequest,
			"?api_key_hash=" + e.hash[:63]:        http.StatusBadRequest,
			"?api_key_hash=sk-gh-v1-" + e.hash:    http.StatusBadRequest,
			"?group_by=model":                     http.StatusBadRequest,
			"?workspace_id=no-such-workspace":     http.StatusNotFound,
			"?user_id=" + url.QueryEscape("\xff"): http.StatusBadRequest,
		} {
			if res := e.do("GET", "/api/v1/activity"+query, e.mgmt, nil); res.Status != want {
				t.Errorf("%s: %d %s, want %d", query, res.Status, res.Body, want)
			}
		}
		e.do("GET", "/api/v1/activity?workspace_id="+e.teamID, mgmtB, nil).want(t, http.StatusNotFound)
		e.do("GET", "/api/v1/activity", e.key, nil).want(t, http.StatusForbidden)
	})
	msg := e.do("GET", "/api/v1/activity?date=2027-02-14", e.mgmt, nil).errorMessage(t)
	if !strings.Contains(msg, "2027-02-15") || !strings.Contains(msg, "2027-03-17") {
		t.Errorf("the message of a date out of the window does not name the window: %q", msg)
	}
}

func wantItems(t *testing.T, what string, want, got []activityItem) {
	t.Helper()
	if !slices.EqualFunc(want, got, func(a, b activityItem) bool {
		return a.Date == b.Date && a.Model == b.Model && a.ModelPermaslug == b.ModelPermaslug && a.EndpointID == b.EndpointID &&
			a.ProviderName == b.ProviderName && a.Usage == b.Usage && a.BYOKUsageInference == b.BYOKUsageInference &&
			a.Requests == b.Requests && a.PromptTokens == b.PromptTokens && a.CompletionTokens == b.CompletionTokens &&
			a.ReasoningTokens == b.ReasoningTokens && (a.WorkspaceID == nil) == (b.WorkspaceID == nil) &&
			(a.WorkspaceID == nil || *a.WorkspaceID == *b.WorkspaceID)
	}) {
		t.Errorf("%s:\ngot  %+v\nwant %+v", what, got, want)
	}
}

// usdFloat is an amount as a JSON number decodes: the float64 nearest it.
func usdFloat(m gatehouse.Money) float64 { return float64(m) / gatehouse.NanosPerUSD }

// analyticsResult is the answer of POST /analytics/query.
type analyticsResult struct {
	Data struct {
		Data     []map[string]any `json:"data"`
		Metadata struct {
			QueryTimeMS float64 `json:"query_time_ms"`
			RowCount    int     `json:"row_count"`
			Truncated   bool    `json:"truncated"`
		} `json:"metadata"`
		Warnings []string `json:"warnings"`
	} `json:"data"`
}

// query runs an analytics query with the management key.
func (e *analyticsEnv) query(key string, body map[string]any) analyticsResult {
	e.t.Helper()
	var out analyticsResult
	e.do("POST", "/api/v1/analytics/query", key, body).want(e.t, http.StatusOK).decode(e.t, &out)
	return out
}

// TestAnalyticsQuery: metrics by dimensions and time buckets, in the
// shapes of OpenRouter's rows; limits, warnings and refusals.
func TestAnalyticsQuery(t *testing.T) {
	t.Parallel()
	e := newAnalyticsEnv(t)
	res := e.query(e.mgmt, map[string]any{"metrics": []string{"request_count", "total_usage", "byok_usage", "avg_latency"},
		"dimensions": []string{"model", "provider"}})
	wantRows(t, "by model", []map[string]any{
		{"model": "acme/chat", "provider": "acme", "request_count": 2.0, "total_usage": usdFloat(chatCost(11, 7)) * 2, "byok_usage": 0.0},
		{"model": "other/mini", "provider": "other", "request_count": 1.0, "total_usage": usdFloat(e.byokCost), "byok_usage": usdFloat(e.byokCost)},
	}, res.Data.Data, "avg_latency")
	if m := res.Data.Metadata; m.RowCount != 2 || m.Truncated || m.QueryTimeMS < 0 || res.Data.Warnings == nil || len(res.Data.Warnings) != 0 {
		t.Errorf("metadata %+v, warnings %v", m, res.Data.Warnings)
	}

	res = e.query(e.mgmt, map[string]any{"metrics": []string{"request_count"}, "granularity": "day",
		"time_range": map[string]any{"start": "2027-03-01T00:00:00Z", "end": "2027-03-18T00:00:00.000Z"}})
	wantRows(t, "by day", []map[string]any{{"date__day": "2027-03-17", "request_count": 2.0}, {"date__day": "2027-03-16", "request_count": 1.0}}, res.Data.Data)
	res = e.query(e.mgmt, map[string]any{"metrics": []string{"request_count"}, "granularity": "hour",
		"order_by": map[string]any{"field": "date", "direction": "asc"}})
	wantRows(t, "by hour, oldest first", []map[string]any{{"date__hour": "2027-03-16T10:00:00Z", "request_count": 1.0},
		{"date__hour": "2027-03-17T10:00:00Z", "request_count": 2.0}}, res.Data.Data)

	res = e.query(e.mgmt, map[string]any{"metrics": []string{"total_usage"}, "dimensions": []string{"api_key_id"}, "limit": 1,
		"order_by": map[string]any{"field": "request_count", "direction": "desc"}})
	wantRows(t, "the busiest key", []map[string]any{{"api_key_id": e.hash, "total_usage": usdFloat(chatCost(11, 7) + e.byokCost)}}, res.Data.Data)
	if !res.Data.Metadata.Truncated || res.Data.Metadata.RowCount != 1 {
		t.Errorf("a result cut at its limit: %+v", res.Data.Metadata)
	}

	res = e.query(e.mgmt, map[string]any{"metrics": []string{"request_count"}, "filters": []any{
		map[string]any{"field": "api_key_id", "operator": "in", "value": []any{"nonsense", 7}},
		map[string]any{"field": "workspace", "operator": "neq", "value": "team"}}})
	wantRows(t, "filtered by no key", []map[string]any{{"request_count": 0.0}}, res.Data.Data)
	if len(res.Data.Warnings) != 2 || !strings.Contains(res.Data.Warnings[0], `"nonsense"`) || !strings.Contains(res.Data.Warnings[1], `"7"`) {
		t.Errorf("warnings %q, want one for each value that is not a key hash", res.Data.Warnings)
	}
	res = e.query(e.mgmt, map[string]any{"metrics": []string{"request_count"}, "dimensions": []string{"workspace"},
		"filters": []any{map[string]any{"field": "workspace", "operator": "eq", "value": strings.ToUpper(e.teamID)}}})
	wantRows(t, "a workspace id in upper case", []map[string]any{{"workspace": e.teamID, "request_count": 1.0}}, res.Data.Data)

	_, mgmtB := e.newOrg("Org B")
	wantRows(t, "another organization", []map[string]any{{"request_count": 0.0}},
		e.query(mgmtB, map[string]any{"metrics": []string{"request_count"}}).Data.Data)

	e.unchanged("refused queries", func() {
		for name, c := range map[string]struct {
			body  map[string]any
			field string
		}{
			"no metrics":           {map[string]any{"dimensions": []string{"model"}}, "metrics"},
			"unknown metric":       {map[string]any{"metrics": []string{"request_count", "p99_latency"}}, "metrics[1]"},
			"three dimensions":     {map[string]any{"metrics": []string{"request_count"}, "dimensions": []string{"model", "provider", "user"}}, "dimensions"},
			"a classifier":         {map[string]any{"metrics": []string{"request_count"}, "classifier_dimensions": map[string]any{"classifier_id": "x"}}, "classifier_dimensions"},
			"a year and a week":    {map[string]any{"metrics": []string{"request_count"}, "time_range": map[string]any{"start": "2026-03-01T00:00:00Z", "end": "2027-03-08T00:00:00Z"}}, "time_range"},
			"end before start":     {map[string]any{"metrics": []string{"request_count"}, "time_range": map[string]any{"start": "2027-03-08T00:00:00Z", "end": "2027-03-01T00:00:00Z"}}, "time_range"},
			"minutes of a day":     {map[string]any{"metrics": []string{"request_count"}, "granularity": "minute"}, "granularity"},
			"order by the unasked": {map[string]any{"metrics": []string{"request_count"}, "order_by": map[string]any{"field": "model", "direction": "asc"}}, "order_by.field"},
			"date without buckets": {map[string]any{"metrics": []string{"request_count"}, "order_by": map[string]any{"field": "date", "direction": "asc"}}, "order_by.field"},
			"in with a scalar":     {map[string]any{"metrics": []string{"request_count"}, "filters": []any{map[string]any{"field": "model", "operator": "in", "value": "x"}}}, "filters[0].value"},
			"eq with a list":       {map[string]any{"metrics": []string{"request_count"}, "filters": []any{map[string]any{"field": "model", "operator": "eq", "value": []any{"x"}}}}, "filters[0].value"},
			"unset of a model":     {map[string]any{"metrics": []string{"request_count"}, "filters": []any{map[string]any{"field": "model", "operator": "in", "value": []any{"x"}, "include_unset": true}}}, "filters[0].include_unset"},
			"a minute timestamp":   {map[string]any{"metrics": []string{"request_count"}, "time_range": map[string]any{"start": "2027-03-01T00:00Z", "end": "2027-03-08T00:00:00Z"}}, "time_range.start"},
		} {
			res := e.do("POST", "/api/v1/analytics/query", e.mgmt, c.body)
			if res.Status != http.StatusBadRequest || !strings.Contains(res.errorMessage(t), c.field) {
				t.Errorf("%s: %d %s, want 400 naming %s", name, res.Status, res.Body, c.field)
			}
		}
		e.do("POST", "/api/v1/analytics/query", e.key, map[string]any{"metrics": []string{"request_count"}}).want(t, http.StatusForbidden)
	})
}

// wantRows compares rows, numbers as JSON numbers; the fields named in
// present must be there, whatever their value.
func wantRows(t *testing.T, what string, want, got []map[string]any, present ...string) {
	t.Helper()
	ok := len(want) == len(got)
	for i := 0; ok && i < len(want); i++ {
		ok = len(got[i]) == len(want[i])+len(present)
		for k, v := range want[i] {
			ok = ok && got[i][k] == v
		}
		for _, k := range present {
			_, has := got[i][k]
			ok = ok && has
		}
	}
	if !ok {
		t.Errorf("%s:\ngot  %v\nwant %v (and %v)", what, got, want, present)
	}
}

// TestAnalyticsMeta: the meta endpoint lists what queries accept, and
// every metric and dimension it lists works in a query.
func TestAnalyticsMeta(t *testing.T) {
	t.Parallel()
	e := newAnalyticsEnv(t)
	var meta struct {
		Data struct {
			Dimensions    []struct{ Name, DisplayLabel string } `json:"dimensions"`
			Granularities []struct{ Name string }               `json:"granularities"`
			Metrics       []struct {
				Name          string `json:"name"`
				DisplayFormat string `json:"display_format"`
				IsRate        bool   `json:"is_rate"`
			} `json:"metrics"`
			Operators []struct {
				Name      string `json:"name"`
				ValueType string `json:"value_type"`
			} `json:"operators"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/analytics/meta", e.mgmt, nil).want(t, http.StatusOK).decode(t, &meta)
	var metrics []string
	for _, m := range meta.Data.Metrics {
		metrics = append(metrics, m.Name)
		if m.IsRate != strings.HasPrefix(m.Name, "avg_") {
			t.Errorf("metric %s: is_rate %v", m.Name, m.IsRate)
		}
	}
	if len(metrics) != len(gatehouse.AnalyticsMetrics) || len(meta.Data.Operators) != 8 || len(meta.Data.Granularities) != 5 {
		t.Fatalf("meta %+v", meta.Data)
	}
	all := e.query(e.mgmt, map[string]any{"metrics": metrics})
	if len(all.Data.Data) != 1 || all.Data.Data[0]["request_count"] != 3.0 || all.Data.Data[0]["tokens_total"] != 54.0 {
		t.Errorf("every metric: %v", all.Data.Data)
	}
	for _, d := range meta.Data.Dimensions {
		dim, _ := gatehouse.FindDimension(d.Name)
		res := e.query(e.mgmt, map[string]any{"metrics": []string{"request_count"}, "dimensions": []string{d.Name},
			"filters": []any{map[string]any{"field": d.Name, "operator": "not_in", "value": []any{"matrix"}, "include_unset": dim.Unset}}})
		if len(res.Data.Data) == 0 {
			t.Errorf("dimension %s: no rows", d.Name)
		}
	}
	for _, g := range meta.Data.Granularities {
		res := e.query(e.mgmt, map[string]any{"metrics": []string{"request_count"}, "granularity": g.Name,
			"time_range": map[string]any{"start": "2027-03-17T09:00:00Z", "end": "2027-03-17T11:00:00Z"}})
		if len(res.Data.Data) != 1 || res.Data.Data[0]["request_count"] != 2.0 {
			t.Errorf("granularity %s: %v", g.Name, res.Data.Data)
		}
	}
	e.do("GET", "/api/v1/analytics/meta", e.key, nil).want(t, http.StatusForbidden)
}

// TestAnalyticsTimeout: a read that takes longer than the analytics
// timeout is stopped and answered 408, naming the setting.
func TestAnalyticsTimeout(t *testing.T) {
	t.Parallel()
	e := newAnalyticsEnv(t)
	e.handler.(*httpapi.Server).SetAnalyticsTimeout(time.Nanosecond)
	for _, res := range []*response{
		e.do("POST", "/api/v1/analytics/query", e.mgmt, map[string]any{"metrics": []string{"request_count"}}),
		e.do("GET", "/api/v1/activity", e.mgmt, nil),
	} {
		if res.want(t, http.StatusRequestTimeout); !strings.Contains(res.errorMessage(t), "GATEHOUSE_ANALYTICS_TIMEOUT") {
			t.Errorf("408 message %q does not name the setting", res.errorMessage(t))
		}
	}
	e.handler.(*httpapi.Server).SetAnalyticsTimeout(time.Minute)
	e.do("GET", "/api/v1/activity", e.mgmt, nil).want(t, http.StatusOK)
}
