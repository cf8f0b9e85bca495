package gatehouse

import (
	"context"
	"fmt"
	"slices"
	"time"
)

// WorkspaceBudget caps what all of a workspace's keys spend together in a
// period: a UTC day, a week from Monday, a calendar month, or for ever
// (Interval NoReset, "lifetime"). The gateway refuses a request that could
// take the workspace past any of its budgets (403), in the same atomic step
// as the key's limit and the guardrail budgets.
type WorkspaceBudget struct {
	ID             string
	OrganizationID string
	WorkspaceID    string
	Interval       Interval // NoReset: lifetime
	Limit          Money
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// WorkspaceBudgets are the budgets of one workspace, narrowest first
// (daily, weekly, monthly, lifetime), and whether they count BYOK spend: a
// setting of the workspace (its include_byok_in_budgets), for all of them.
type WorkspaceBudgets struct {
	WorkspaceID string
	IncludeBYOK bool
	Budgets     []*WorkspaceBudget
}

// Interval returns the budget of an interval, or nil.
func (w *WorkspaceBudgets) Interval(i Interval) *WorkspaceBudget {
	for _, b := range w.Budgets {
		if b.Interval == i {
			return b
		}
	}
	return nil
}

// LifetimeBudget is how budgets name the interval that never resets.
const LifetimeBudget = "lifetime"

// budgetIntervals are the intervals of workspace budgets, narrowest first:
// their limits must strictly increase along it.
var budgetIntervals = []Interval{Daily, Weekly, Monthly, NoReset}

// ParseBudgetInterval reads the interval of a workspace budget: daily,
// weekly, monthly or lifetime. EINVALID naming the interval otherwise.
func ParseBudgetInterval(s string) (Interval, error) {
	if s == LifetimeBudget {
		return NoReset, nil
	}
	if i, ok := ParseInterval(s); ok && i != NoReset {
		return i, nil
	}
	return NoReset, FieldError("interval", "must be one of daily, weekly, monthly or lifetime")
}

// BudgetIntervalName names the interval of a workspace budget: daily,
// weekly, monthly or lifetime.
func BudgetIntervalName(i Interval) string {
	if i == NoReset {
		return LifetimeBudget
	}
	return string(i)
}

// BudgetBreadth orders the intervals of workspace budgets: 0 for daily, 1
// weekly, 2 monthly, 3 lifetime.
func BudgetBreadth(i Interval) int { return slices.Index(budgetIntervals, i) }

// SortWorkspaceBudgets orders budgets narrowest first.
func SortWorkspaceBudgets(bs []*WorkspaceBudget) {
	slices.SortFunc(bs, func(a, b *WorkspaceBudget) int { return BudgetBreadth(a.Interval) - BudgetBreadth(b.Interval) })
}

// WorkspaceBudgetSet is the body of a budget's create-or-update: its limit,
// and optionally the workspace's include_byok_in_budgets.
type WorkspaceBudgetSet struct {
	LimitUSD Patch[Money] `json:"limit_usd"`
	// IncludeBYOKInBudgets, when given, sets the workspace's setting,
	// which every one of its budgets follows.
	IncludeBYOKInBudgets *bool `json:"include_byok_in_budgets" null:"no"`
}

// Validate checks the body: limit_usd is required and above zero.
func (s *WorkspaceBudgetSet) Validate() error {
	if !s.LimitUSD.Set || s.LimitUSD.Null {
		return FieldError("limit_usd", "is required: a number of US dollars greater than 0")
	}
	if s.LimitUSD.Value <= 0 {
		return FieldError("limit_usd", "must be greater than 0")
	}
	return nil
}

// CheckBudgetOrder refuses a limit for the interval that would break the
// order of the workspace's other budgets: limits must strictly decrease as
// the interval narrows (lifetime > monthly > weekly > daily); intervals
// without a budget impose nothing.
func CheckBudgetOrder(w *WorkspaceBudgets, interval Interval, limit Money) error {
	at := BudgetBreadth(interval)
	for _, b := range w.Budgets {
		other := BudgetBreadth(b.Interval)
		if other == at {
			continue
		}
		if other > at && limit >= b.Limit || other < at && limit <= b.Limit {
			rel := "less"
			if other < at {
				rel = "greater"
			}
			return FieldError("limit_usd", "must be %s than the workspace's %s budget of $%s: budget limits must strictly decrease as the interval narrows (lifetime > monthly > weekly > daily)",
				rel, BudgetIntervalName(b.Interval), b.Limit).
				WithMetadata("conflicting_interval", BudgetIntervalName(b.Interval))
		}
	}
	return nil
}

// WorkspaceBudgetService manages the budgets of workspaces. Workspaces are
// named by UUID or slug, within the organization.
type WorkspaceBudgetService interface {
	// FindWorkspaceBudgets returns a workspace's budgets. ENOTFOUND.
	FindWorkspaceBudgets(ctx context.Context, orgID, workspaceRef string) (*WorkspaceBudgets, error)
	// SetWorkspaceBudget creates or updates the workspace's budget of an
	// interval (and its include_byok_in_budgets when set says), and
	// returns the workspace's budgets after it. A new budget counts what
	// the workspace already spent in its current period (from the
	// ledger). EINVALID (the body, the order of limits), ENOTFOUND.
	SetWorkspaceBudget(ctx context.Context, orgID, workspaceRef string, interval Interval, set WorkspaceBudgetSet) (*WorkspaceBudgets, error)
	// DeleteWorkspaceBudget deletes the workspace's budget of an interval,
	// if it has one, and reports whether it had. ENOTFOUND for the
	// workspace.
	DeleteWorkspaceBudget(ctx context.Context, orgID, workspaceRef string, interval Interval) (bool, error)
}

// WorkspaceSubject and OrganizationSubject name the subjects of workspace
// budgets and of credits: the spend of the whole workspace or organization.
func WorkspaceSubject(workspaceID string) string { return "workspace:" + workspaceID }
func OrganizationSubject(orgID string) string    { return "organization:" + orgID }

// Credits are what an organization's requests may spend in all: the total
// the operator granted (nil: unlimited) and the spend counted against it,
// BYOK spend excepted (a BYOK provider bills the workspace directly).
type Credits struct {
	OrganizationID string
	Total          *Money
	Usage          Money
}

// UnlimitedCredits is the total an organization without credits shows
// (total_credits): the largest amount Gatehouse takes, so that what
// remains (total_credits - total_usage) is never taken for exhausted.
const UnlimitedCredits = MaxMoney

// TotalShown returns the total credits as GET /credits shows them.
func (c *Credits) TotalShown() Money {
	if c.Total == nil {
		return UnlimitedCredits
	}
	return *c.Total
}

// CreditGrant adds Amount (taken back when negative) to an organization's
// credits, which total Total after it.
type CreditGrant struct {
	ID             string
	OrganizationID string
	Amount         Money
	Total          Money
	CreatedAt      time.Time
}

// CheckCreditGrant refuses a grant of amount on top of the credits granted
// so far (nil: none): a zero amount, a total above MaxMoney, or one below
// zero.
func CheckCreditGrant(current *Money, amount Money) error {
	var total Money
	if current != nil {
		total = *current
	}
	switch {
	case amount == 0:
		return FieldError("amount", "must not be 0: a number of US dollars to add (or, when negative, to take back)")
	case total+amount > MaxMoney:
		return FieldError("amount", "would take the organization's credits to $%s, above the most Gatehouse takes ($%s)", total+amount, MaxMoney)
	case total+amount < 0:
		return FieldError("amount", "would take the organization's credits below zero: $%s are granted", total)
	}
	return nil
}

// CreditService manages the credits of organizations.
type CreditService interface {
	// FindCredits returns an organization's credits and the spend counted
	// against them (for an organization without credits, all its non-BYOK
	// spend in the ledger). ENOTFOUND for the organization.
	FindCredits(ctx context.Context, orgID string) (*Credits, error)
	// GrantCredits adds amount (negative: takes it back) to the
	// organization's credits; the first grant makes the organization
	// limited, counting what it already spent. EINVALID (see
	// CheckCreditGrant), ENOTFOUND.
	GrantCredits(ctx context.Context, orgID string, amount Money) (*CreditGrant, error)
	// FindCreditGrants lists an organization's grants, newest first, with
	// their total.
	FindCreditGrants(ctx context.Context, orgID string, page Page) ([]*CreditGrant, int, error)
}

// The kinds of budgets a request holds against.
type BudgetKind uint8

const (
	GuardrailBudget     BudgetKind = iota // a guardrail's limit_usd, per key or per member
	WorkspaceLimit                        // a workspace budget: the workspace's spend
	OrganizationCredits                   // an organization's credits: its spend, for ever
)

// workspaceBudgetError is the refusal of a request that could take its
// workspace past a budget (403, as OpenRouter answers).
func workspaceBudgetError(b Budget, remaining, need Money) error {
	name := BudgetIntervalName(b.Interval)
	period := "in total"
	if b.Interval != NoReset {
		period = "until the " + name + " reset"
	}
	workspace := b.Subject[len("workspace:"):]
	return &Error{Code: EFORBIDDEN,
		Message: fmt.Sprintf("Workspace %s budget of $%s exceeded: this request may cost up to $%s and $%s of it remain %s. Contact your workspace admin.",
			name, b.Limit, need, remaining, period),
		Metadata: map[string]any{"workspace_id": workspace, "budget_id": b.GuardrailID, "reset_interval": name,
			"limit_usd": b.Limit, "remaining": remaining, "request_max_cost": need}}
}

// creditsError is the refusal of a request that could take its
// organization past its credits (402). Like a minted key's refusal, it does
// not show the organization's figures to the key's holder.
func creditsError(need Money) error {
	return &Error{Code: EPAYMENT,
		Message:  fmt.Sprintf("Insufficient credits: the organization's remaining credits do not cover this request, which may cost up to $%s. Ask an administrator to grant more credits, or lower max_tokens.", need),
		Metadata: map[string]any{"request_max_cost": need}}
}
