package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// budgetJSON is a workspace budget as the API shows it.
type budgetJSON struct {
	CreatedAt     string  `json:"created_at"`
	ID            string  `json:"id"`
	LimitUSD      float64 `json:"limit_usd"`
	ResetInterval *string `json:"reset_interval"`
	UpdatedAt     string  `json:"updated_at"`
	WorkspaceID   string  `json:"workspace_id"`
}

type budgetAnswer struct {
	Data        budgetJSON `json:"data"`
	IncludeBYOK bool       `json:"include_byok_in_budgets"`
}

type budgetsAnswer struct {
	Data        []budgetJSON `json:"data"`
	IncludeBYOK bool         `json:"include_byok_in_budgets"`
}

// setBudget sets a workspace's budget through the API.
func (e *testEnv) setBudget(ref, interval string, body map[string]any) budgetAnswer {
	e.t.Helper()
	var out budgetAnswer
	e.do("PUT", "/api/v1/workspaces/"+ref+"/budgets/"+interval, e.mgmt, body).want(e.t, http.StatusOK).decode(e.t, &out)
	return out
}

func TestWorkspaceBudgets(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ws := e.createWorkspace(e.mgmt, "team")
	path := "/api/v1/workspaces/team/budgets"

	var list budgetsAnswer
	e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	if len(list.Data) != 0 || list.IncludeBYOK {
		t.Fatalf("a new workspace's budgets: %+v", list)
	}
	at := testStart.Format("2006-01-02T15:04:05.000Z")
	monthly := e.setBudget("team", "monthly", map[string]any{"limit_usd": 50})
	if b := monthly.Data; b.LimitUSD != 50 || b.ResetInterval == nil || *b.ResetInterval != "monthly" || b.WorkspaceID != ws ||
		b.CreatedAt != at || b.UpdatedAt != at || len(b.ID) != 36 || monthly.IncludeBYOK {
		t.Fatalf("the monthly budget: %+v", monthly)
	}
	e.clock.Set(testStart.Add(time.Hour))
	lifetime := e.setBudget(ws, "lifetime", map[string]any{"limit_usd": 100.5, "include_byok_in_budgets": true})
	if b := lifetime.Data; b.LimitUSD != 100.5 || b.ResetInterval != nil || !lifetime.IncludeBYOK {
		t.Fatalf("the lifetime budget: %+v", lifetime)
	}
	// include_byok_in_budgets is the workspace's own setting.
	if got := e.do("GET", "/api/v1/workspaces/team", e.mgmt, nil).json(t)["data"].(map[string]any)["include_byok_in_budgets"]; got != true {
		t.Errorf("the workspace's include_byok_in_budgets: %v", got)
	}
	// An update keeps the id and the creation time.
	again := e.setBudget("team", "monthly", map[string]any{"limit_usd": 60})
	if again.Data.ID != monthly.Data.ID || again.Data.CreatedAt != at || again.Data.UpdatedAt == at || !again.IncludeBYOK {
		t.Errorf("the monthly budget updated: %+v", again)
	}

	_, mgmtB := e.newOrg("Org B")
	e.unchanged("refusals", func() {
		res := e.do("PUT", path+"/daily", e.mgmt, map[string]any{"limit_usd": 60}).want(t, http.StatusBadRequest)
		if msg := res.errorMessage(t); !strings.HasPrefix(msg, "limit_usd: must be less than the workspace's monthly budget of $60") {
			t.Errorf("order: %q", msg)
		}
		for _, body := range []any{map[string]any{"limit_usd": 0}, map[string]any{"limit_usd": -1}, map[string]any{},
			map[string]any{"limit_usd": nil}, map[string]any{"limit_usd": 1, "include_byok_in_budgets": nil}} {
			res := e.do("PUT", path+"/daily", e.mgmt, body).want(t, http.StatusBadRequest)
			if msg := res.errorMessage(t); !strings.Contains(msg, "limit_usd") && !strings.Contains(msg, "include_byok_in_budgets") {
				t.Errorf("%v: %q", body, msg)
			}
		}
		for _, method := range []string{"GET", "PUT", "DELETE"} {
			var body any // a GET or DELETE takes none
			if method == "PUT" {
				body = map[string]any{"limit_usd": 1}
			}
			res := e.do(method, path+"/yearly", e.mgmt, body).want(t, http.StatusBadRequest)
			if msg := res.errorMessage(t); msg != "interval: must be one of daily, weekly, monthly or lifetime" {
				t.Errorf("%s yearly: %q", method, msg)
			}
			e.do(method, "/api/v1/workspaces/nope/budgets/daily", e.mgmt, body).want(t, http.StatusNotFound)
		}
		e.do("GET", "/api/v1/workspaces/nope/budgets", e.mgmt, nil).want(t, http.StatusNotFound)
		res = e.do("GET", path+"/daily", e.mgmt, nil).want(t, http.StatusNotFound)
		if msg := res.errorMessage(t); msg != "the workspace has no daily budget" {
			t.Errorf("no daily budget: %q", msg)
		}
		// Another organization's workspace is not found, by slug or id.
		for _, ref := range []string{"team", ws} {
			for _, method := range []string{"GET", "PUT", "DELETE"} {
				var body any
				if method == "PUT" {
					body = map[string]any{"limit_usd": 1}
				}
				e.do(method, "/api/v1/workspaces/"+ref+"/budgets/monthly", mgmtB, body).want(t, http.StatusNotFound)
			}
			e.do("GET", "/api/v1/workspaces/"+ref+"/budgets", mgmtB, nil).want(t, http.StatusNotFound)
		}
	})

	var got budgetAnswer
	e.do("GET", path+"/monthly", e.mgmt, nil).want(t, http.StatusOK).decode(t, &got)
	if diff := cmp.Diff(again, got); diff != "" {
		t.Errorf("GET monthly differs from the PUT's answer (-put +get):\n%s", diff)
	}
	e.setBudget("team", "daily", map[string]any{"limit_usd": 2})
	e.setBudget("team", "weekly", map[string]any{"limit_usd": 10, "include_byok_in_budgets": false})
	e.do("GET", path, e.mgmt, nil).want(t, http.StatusOK).decode(t, &list)
	var order []string
	for _, b := range list.Data {
		name := "lifetime"
		if b.ResetInterval != nil {
			name = *b.ResetInterval
		}
		order = append(order, name)
	}
	if strings.Join(order, " ") != "daily weekly monthly lifetime" || list.IncludeBYOK {
		t.Errorf("the list: %v, include_byok_in_budgets %v", order, list.IncludeBYOK)
	}

	// A delete answers {"deleted": true} whether or not there was a budget.
	for range 2 {
		if body := string(e.do("DELETE", path+"/monthly", e.mgmt, nil).want(t, http.StatusOK).Body); body != "{\"deleted\":true}\n" {
			t.Errorf("delete: %s", body)
		}
	}
	e.do("GET", path+"/monthly", e.mgmt, nil).want(t, http.StatusNotFound)

	var audit struct {
		Data []struct {
			Operation   string         `json:"operation"`
			ResourceIDs []string       `json:"resource_ids"`
			Details     map[string]any `json:"details"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/audit-log?resource_type=workspace_budget", e.mgmt, nil).want(t, http.StatusOK).decode(t, &audit)
	var ops []string
	for _, a := range audit.Data {
		ops = append(ops, a.Operation)
	}
	want := "workspace_budget.delete workspace_budget.set workspace_budget.set workspace_budget.set workspace_budget.set workspace_budget.set"
	if strings.Join(ops, " ") != want || audit.Data[0].ResourceIDs[0] != monthly.Data.ID || audit.Data[0].Details["reset_interval"] != "monthly" {
		t.Errorf("audit log: %+v", audit.Data)
	}
}

// TestWorkspaceBudgetEnforced: a workspace's keys spend against its budgets
// together, refused with 403 naming the broadest budget exceeded, changing
// nothing; a daily budget resets at midnight UTC.
func TestWorkspaceBudgetEnforced(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens = 0 }, nil) // answers max_tokens tokens
	ws := e.createWorkspace(e.mgmt, "team")
	_, k1 := e.createKey(e.mgmt, map[string]any{"name": "k1", "workspace_id": "team"})
	_, k2 := e.createKey(e.mgmt, map[string]any{"name": "k2", "workspace_id": ws})
	body := chatBody("acme/exact", "max_tokens", 100) // $0.10

	daily := e.setBudget("team", "daily", map[string]any{"limit_usd": 0.25})
	monthly := e.setBudget("team", "monthly", map[string]any{"limit_usd": 0.35})
	e.chat(k1, body).want(t, http.StatusOK)
	e.chat(k2, body).want(t, http.StatusOK)
	e.unchanged("refusal", func() {
		for _, k := range []string{k1, k2} {
			got := e.chat(k, body).want(t, http.StatusForbidden).apiError(t)
			if !strings.HasPrefix(got.Message, "Workspace daily budget of $0.25 exceeded: this request may cost up to $0.1 and $0.05 of it remain until the daily reset") ||
				got.Metadata["workspace_id"] != ws || got.Metadata["budget_id"] != daily.Data.ID || got.Metadata["reset_interval"] != "daily" ||
				got.Metadata["limit_usd"] != 0.25 || got.Metadata["remaining"] != 0.05 || got.Metadata["request_max_cost"] != 0.1 {
				t.Errorf("403 %+v", got)
			}
		}
	})
	e.chat(e.key, body).want(t, http.StatusOK) // the default workspace's key
	e.chat(k1, chatBody("acme/exact", "max_tokens", 50)).want(t, http.StatusOK)

	// The next day the daily budget is whole again; the monthly one is not.
	e.clock.Set(time.Date(2027, 3, 18, 0, 0, 0, 0, time.UTC))
	e.chat(k2, chatBody("acme/exact", "max_tokens", 50)).want(t, http.StatusOK)
	got := e.chat(k1, body).want(t, http.StatusForbidden).apiError(t)
	if !strings.HasPrefix(got.Message, "Workspace monthly budget of $0.35 exceeded") || got.Metadata["budget_id"] != monthly.Data.ID {
		t.Errorf("403 %+v", got)
	}
	// Without the budget the request goes through at once.
	e.do("DELETE", "/api/v1/workspaces/team/budgets/monthly", e.mgmt, nil).want(t, http.StatusOK)
	e.chat(k1, body).want(t, http.StatusOK)
	if n := len(e.up.requests()); n != 6 {
		t.Errorf("the upstream was called %d times, want 6", n)
	}
}

// concurrentChats fires n requests at once over real HTTP, the i-th with
// keys[i % len(keys)], and returns the count of each status.
func (e *chatEnv) concurrentChats(t *testing.T, n int, keys []string, body any) map[int]int {
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	data, _ := json.Marshal(body)
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/chat/completions", bytes.NewReader(data))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+keys[i%len(keys)])
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			answer, _ := io.ReadAll(res.Body)
			statuses[i] = res.StatusCode
			e.checker.check(t, httptest.NewRequest("POST", "/api/v1/chat/completions", nil), res.StatusCode, res.Header, answer)
		})
	}
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	return counts
}

// spentFrom sums the ledger of the rows of generations that where selects.
func (e *chatEnv) spentFrom(where string, args ...any) (n int, sum gatehouse.Money) {
	e.t.Helper()
	if err := e.readDB().QueryRow(`SELECT COUNT(*), COALESCE(SUM(cost), 0) FROM generations WHERE `+where, args...).Scan(&n, &sum); err != nil {
		e.t.Fatal(err)
	}
	return n, sum
}

// TestWorkspaceBudgetOverspend: 50 concurrent $0.10 requests through five
// keys of a workspace against its $1.00 daily budget: exactly 10 pass, on
// either engine (on PostgreSQL through leases and batched admission).
func TestWorkspaceBudgetOverspend(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.delay = 0, 20*time.Millisecond }, nil)
	ws := e.createWorkspace(e.mgmt, "team")
	var keys []string
	for range 5 {
		_, k := e.createKey(e.mgmt, map[string]any{"name": "member of team", "workspace_id": ws})
		keys = append(keys, k)
	}
	budget := e.setBudget("team", "daily", map[string]any{"limit_usd": 1})
	counts := e.concurrentChats(t, 50, keys, chatBody("acme/exact", "max_tokens", 100))
	t.Logf("%s: 50 concurrent $0.10 requests through 5 keys against a workspace's $1.00 budget: %v", testEngine, counts)
	if counts[http.StatusOK] != 10 || counts[http.StatusForbidden] != 40 {
		t.Errorf("statuses %v, want 10 × 200 and 40 × 403", counts)
	}
	if n, sum := e.spentFrom(`workspace_id = $1`, ws); n != 10 || sum != gatehouse.USD(1) {
		t.Errorf("ledger: %d entries summing to %s; want 10 summing to 1", n, sum)
	}
	var counted int64
	if err := e.readDB().QueryRow(`SELECT usage_day FROM guardrail_usage WHERE guardrail_id = $1`, budget.Data.ID).Scan(&counted); err != nil {
		t.Fatal(err)
	}
	if counted != int64(gatehouse.USD(1)) {
		t.Errorf("the budget counted %s, want exactly 1", gatehouse.Money(counted))
	}
	var held int
	if err := e.readDB().QueryRow(`SELECT COUNT(*) FROM reservations WHERE workspace_id = $1 AND lease = FALSE`, ws).Scan(&held); err != nil {
		t.Fatal(err)
	}
	if held != 0 {
		t.Errorf("%d reservations left open", held)
	}
	if calls := len(e.up.requests()); calls != 10 {
		t.Errorf("the upstream was called %d times, want 10", calls)
	}
}

type creditsAnswer struct {
	Data struct {
		TotalCredits float64 `json:"total_credits"`
		TotalUsage   float64 `json:"total_usage"`
	} `json:"data"`
}

func (e *testEnv) credits(mgmt string) creditsAnswer {
	e.t.Helper()
	var out creditsAnswer
	e.do("GET", "/api/v1/credits", mgmt, nil).want(e.t, http.StatusOK).decode(e.t, &out)
	return out
}

// TestCredits: an organization is unlimited until it is granted credits;
// then its requests, from every workspace, are refused with 402 once they
// could take its spend (BYOK excepted) past them.
func TestCredits(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens = 0 }, nil)
	_, other := e.createKey(e.mgmt, map[string]any{"name": "team key", "workspace_id": e.createWorkspace(e.mgmt, "team")})
	body := chatBody("acme/exact", "max_tokens", 100) // $0.10
	if c := e.credits(e.mgmt); c.Data.TotalCredits != 1e9 || c.Data.TotalUsage != 0 {
		t.Fatalf("credits of a new organization: %+v", c)
	}
	e.chat(e.key, body).want(t, http.StatusOK)
	e.chat(e.key, chatBody("other/mini")).want(t, http.StatusOK) // BYOK: not counted
	if c := e.credits(e.mgmt); c.Data.TotalCredits != 1e9 || c.Data.TotalUsage != 0.1 {
		t.Fatalf("credits after a request: %+v", c)
	}

	e.unchanged("refused grants", func() {
		for _, c := range []struct {
			body any
			msg  string
		}{
			{map[string]any{"amount": 0}, "amount: must not be 0"},
			{map[string]any{"amount": -1}, "amount: would take the organization's credits below zero"},
			{map[string]any{"amount": 1e9 + 1}, "amount: must be a number of US dollars between -1000000000 and 1000000000"},
			{map[string]any{"amount": "5"}, "amount: must be a number of US dollars"},
			{map[string]any{}, "amount: is required"},
			{map[string]any{"amount": nil}, "amount: must not be null"},
		} {
			if msg := e.do("POST", "/api/v1/credits/grants", e.mgmt, c.body).want(t, http.StatusBadRequest).errorMessage(t); !strings.HasPrefix(msg, c.msg) {
				t.Errorf("%v: %q, want %q", c.body, msg, c.msg)
			}
		}
	})
	var grant struct {
		Data struct {
			ID           string  `json:"id"`
			Amount       float64 `json:"amount"`
			TotalCredits float64 `json:"total_credits"`
			CreatedAt    string  `json:"created_at"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/credits/grants", e.mgmt, map[string]any{"amount": 0.5}).want(t, http.StatusCreated).decode(t, &grant)
	if grant.Data.Amount != 0.5 || grant.Data.TotalCredits != 0.5 || len(grant.Data.ID) != 36 {
		t.Errorf("grant: %+v", grant)
	}
	e.do("POST", "/api/v1/credits/grants", e.mgmt, map[string]any{"amount": -0.15}).want(t, http.StatusCreated).decode(t, &grant)
	if grant.Data.Amount != -0.15 || grant.Data.TotalCredits != 0.35 {
		t.Errorf("grant taken back: %+v", grant)
	}
	if c := e.credits(e.mgmt); c.Data.TotalCredits != 0.35 || c.Data.TotalUsage != 0.1 {
		t.Fatalf("credits after the grants: %+v (the usage before the first grant counts)", c)
	}
	e.chat(other, body).want(t, http.StatusOK)
	e.chat(e.key, body).want(t, http.StatusOK)
	e.unchanged("refusal", func() {
		for _, k := range []string{e.key, other} {
			got := e.chat(k, body).want(t, http.StatusPaymentRequired).apiError(t)
			if !strings.HasPrefix(got.Message, "Insufficient credits: the organization's remaining credits do not cover this request, which may cost up to $0.1") ||
				len(got.Metadata) != 1 || got.Metadata["request_max_cost"] != 0.1 {
				t.Errorf("402 %+v", got)
			}
		}
	})
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 50)).want(t, http.StatusOK)
	e.chat(e.key, chatBody("other/mini")).want(t, http.StatusOK) // BYOK spends no credits
	if c := e.credits(e.mgmt); c.Data.TotalCredits != 0.35 || c.Data.TotalUsage != 0.35 {
		t.Fatalf("credits spent: %+v", c)
	}
	// Another organization's credits are its own.
	_, mgmtB := e.newOrg("Org B")
	if c := e.credits(mgmtB); c.Data.TotalCredits != 1e9 || c.Data.TotalUsage != 0 {
		t.Errorf("org B's credits: %+v", c)
	}
	var audit struct {
		Data []struct {
			Operation   string   `json:"operation"`
			ResourceIDs []string `json:"resource_ids"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/audit-log?resource_type=credit_grant", e.mgmt, nil).want(t, http.StatusOK).decode(t, &audit)
	if len(audit.Data) != 2 || audit.Data[0].Operation != "credits.grant" || audit.Data[0].ResourceIDs[0] != grant.Data.ID {
		t.Errorf("audit log: %+v", audit.Data)
	}
}

// TestCreditsOverspend: 50 concurrent $0.10 requests through keys of two
// workspaces against $1.00 of credits: exactly 10 pass.
func TestCreditsOverspend(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.delay = 0, 20*time.Millisecond }, nil)
	_, other := e.createKey(e.mgmt, map[string]any{"name": "team key", "workspace_id": e.createWorkspace(e.mgmt, "team")})
	e.do("POST", "/api/v1/credits/grants", e.mgmt, map[string]any{"amount": 1}).want(t, http.StatusCreated)
	counts := e.concurrentChats(t, 50, []string{e.key, other}, chatBody("acme/exact", "max_tokens", 100))
	t.Logf("%s: 50 concurrent $0.10 requests against $1.00 of credits: %v", testEngine, counts)
	if counts[http.StatusOK] != 10 || counts[http.StatusPaymentRequired] != 40 {
		t.Errorf("statuses %v, want 10 × 200 and 40 × 402", counts)
	}
	if n, sum := e.spentFrom(`organization_id = $1`, e.org.ID); n != 10 || sum != gatehouse.USD(1) {
		t.Errorf("ledger: %d entries summing to %s; want 10 summing to 1", n, sum)
	}
	if c := e.credits(e.mgmt); c.Data.TotalCredits != 1 || c.Data.TotalUsage != 1 {
		t.Errorf("credits: %+v", c)
	}
}
