package gatehouse_test

import (
	"strings"
	"testing"

	"gatehouse"
)

func TestParseBudgetInterval(t *testing.T) {
	for s, want := range map[string]gatehouse.Interval{
		"daily": gatehouse.Daily, "weekly": gatehouse.Weekly, "monthly": gatehouse.Monthly, "lifetime": gatehouse.NoReset,
	} {
		got, err := gatehouse.ParseBudgetInterval(s)
		if err != nil || got != want || gatehouse.BudgetIntervalName(got) != s {
			t.Errorf("ParseBudgetInterval(%q) = %q, %v", s, got, err)
		}
	}
	for _, s := range []string{"", "Daily", "yearly", "null", "lifetime ", "\x00"} {
		_, err := gatehouse.ParseBudgetInterval(s)
		if gatehouse.ErrorCode(err) != gatehouse.EINVALID || !strings.HasPrefix(gatehouse.ErrorMessage(err), "interval: ") {
			t.Errorf("ParseBudgetInterval(%q): %v, want a 400 naming interval", s, err)
		}
	}
}

func TestCheckBudgetOrder(t *testing.T) {
	usd := gatehouse.USD
	w := &gatehouse.WorkspaceBudgets{Budgets: []*gatehouse.WorkspaceBudget{
		{Interval: gatehouse.Weekly, Limit: usd(10)}, {Interval: gatehouse.NoReset, Limit: usd(100)},
	}}
	for _, c := range []struct {
		every    gatehouse.Interval
		limit    gatehouse.Money
		conflict string // "" for accepted
	}{
		{gatehouse.Daily, usd(9), ""},
		{gatehouse.Daily, usd(10), "weekly"},
		{gatehouse.Daily, usd(200), "weekly"}, // the first conflict, narrowest first
		{gatehouse.Monthly, usd(50), ""},
		{gatehouse.Monthly, usd(10), "weekly"},
		{gatehouse.Monthly, usd(100), "lifetime"},
		{gatehouse.Weekly, usd(99), ""}, // itself is no conflict
		{gatehouse.Weekly, usd(100), "lifetime"},
		{gatehouse.NoReset, gatehouse.Money(10*gatehouse.NanosPerUSD + 1), ""},
		{gatehouse.NoReset, usd(10), "weekly"},
	} {
		err := gatehouse.CheckBudgetOrder(w, c.every, c.limit)
		if c.conflict == "" {
			if err != nil {
				t.Errorf("%s %s: %v", c.every, c.limit, err)
			}
			continue
		}
		e, ok := err.(*gatehouse.Error)
		if !ok || e.Code != gatehouse.EINVALID || e.Metadata["conflicting_interval"] != c.conflict ||
			!strings.Contains(e.Message, "budget limits must strictly decrease as the interval narrows") {
			t.Errorf("%s %s: %v, want a conflict with the %s budget", c.every, c.limit, err, c.conflict)
		}
	}
}

func TestCheckCreditGrant(t *testing.T) {
	ten := gatehouse.USD(10)
	for _, c := range []struct {
		current *gatehouse.Money
		amount  gatehouse.Money
		ok      bool
	}{
		{nil, gatehouse.USD(5), true},
		{nil, 0, false},
		{nil, -1, false},
		{nil, gatehouse.MaxMoney, true},
		{&ten, -ten, true},
		{&ten, -ten - 1, false},
		{&ten, gatehouse.MaxMoney - ten, true},
		{&ten, gatehouse.MaxMoney - ten + 1, false},
	} {
		err := gatehouse.CheckCreditGrant(c.current, c.amount)
		if (err == nil) != c.ok || (err != nil && !strings.HasPrefix(gatehouse.ErrorMessage(err), "amount: ")) {
			t.Errorf("CheckCreditGrant(%v, %s) = %v, want ok %v", c.current, c.amount, err, c.ok)
		}
	}
}

// TestCheckBudgetKinds: the refusal of each kind of budget, with the same
// arithmetic.
func TestCheckBudgetKinds(t *testing.T) {
	spend := gatehouse.BudgetSpend{Usage: gatehouse.Usage{Total: gatehouse.USD(7), Monthly: gatehouse.USD(3)},
		Reserved: gatehouse.Reserved{All: gatehouse.USD(1)}}
	r := &gatehouse.Reservation{Amount: gatehouse.USD(2)}
	for _, c := range []struct {
		budget  gatehouse.Budget
		code    string
		message string
		meta    map[string]any
	}{
		{gatehouse.Budget{GuardrailID: "g", GuardrailName: "team", Subject: "key:k", Limit: gatehouse.USD(5), Interval: gatehouse.Monthly},
			gatehouse.EFORBIDDEN, "Request blocked: the monthly budget of $5 of guardrail \"team\"", map[string]any{"guardrail_id": "g"}},
		{gatehouse.Budget{GuardrailID: "b", Subject: "workspace:w", Limit: gatehouse.USD(5), Interval: gatehouse.Monthly, Kind: gatehouse.WorkspaceLimit},
			gatehouse.EFORBIDDEN, "Workspace monthly budget of $5 exceeded: this request may cost up to $2 and $1 of it remain until the monthly reset.",
			map[string]any{"workspace_id": "w", "budget_id": "b", "reset_interval": "monthly", "remaining": gatehouse.USD(1)}},
		{gatehouse.Budget{GuardrailID: "b", Subject: "workspace:w", Limit: gatehouse.USD(9), Kind: gatehouse.WorkspaceLimit},
			gatehouse.EFORBIDDEN, "Workspace lifetime budget of $9 exceeded: this request may cost up to $2 and $1 of it remain in total.",
			map[string]any{"reset_interval": "lifetime"}},
		{gatehouse.Budget{GuardrailID: "c", Subject: "organization:o", Limit: gatehouse.USD(9), Kind: gatehouse.OrganizationCredits},
			gatehouse.EPAYMENT, "Insufficient credits: the organization's remaining credits do not cover this request, which may cost up to $2.",
			map[string]any{"request_max_cost": gatehouse.USD(2)}},
	} {
		err := gatehouse.CheckBudget(c.budget, spend, r)
		e, ok := err.(*gatehouse.Error)
		if !ok || e.Code != c.code || !strings.HasPrefix(e.Message, c.message) {
			t.Errorf("%+v: %v, want %s %q", c.budget, err, c.code, c.message)
			continue
		}
		for k, v := range c.meta {
			if e.Metadata[k] != v {
				t.Errorf("%+v: metadata[%s] = %v, want %v", c.budget, k, e.Metadata[k], v)
			}
		}
		// A request that fits passes.
		if err := gatehouse.CheckBudget(c.budget, spend, &gatehouse.Reservation{Amount: gatehouse.USD(1)}); err != nil {
			t.Errorf("%+v: a request that fits: %v", c.budget, err)
		}
	}
	// Credits do not hold against BYOK requests.
	credits := gatehouse.Budget{Limit: 1, Kind: gatehouse.OrganizationCredits}
	if err := gatehouse.CheckBudget(credits, gatehouse.BudgetSpend{}, &gatehouse.Reservation{Amount: gatehouse.USD(5), BYOK: true}); err != nil {
		t.Errorf("a BYOK request against credits: %v", err)
	}
}
