package gatehouse

import (
	"context"
	"time"
)

// Activity is the usage ledger summed by UTC day, model and endpoint, as
// OpenRouter's GET /activity shows it. An endpoint is a provider of the
// providers file: the upstream that served the call, which the ledger
// records with each generation (a model slug names exactly one provider, so
// a model is served by one endpoint).

// ActivityDays is how many completed UTC days the activity covers before
// the current one, which it covers too: the ledger is written as calls
// settle, so today's usage is there already.
const ActivityDays = 30

// ActivityWindow returns the first instant the activity covers at now, the
// midnight UTC ActivityDays days before today's, and the end of today (the
// first instant it does not cover).
func ActivityWindow(now time.Time) (first, end time.Time) {
	today := Daily.Start(now)
	return today.AddDate(0, 0, -ActivityDays), today.AddDate(0, 0, 1)
}

// ActivityDateLayout is the layout of the dates of the activity.
const ActivityDateLayout = "2006-01-02"

// ParseActivityDate reads the date filter of the activity: a UTC day
// (YYYY-MM-DD) within the window at now. It returns the day's first
// instant.
func ParseActivityDate(s string, now time.Time) (time.Time, error) {
	first, end := ActivityWindow(now)
	d, err := time.Parse(ActivityDateLayout, s)
	if err != nil {
		return time.Time{}, FieldError("date", "must be a UTC date in the form YYYY-MM-DD, such as %s", first.Format(ActivityDateLayout))
	}
	if d.Before(first) || !d.Before(end) {
		return time.Time{}, FieldError("date", "must be one of the last %d UTC days or today: from %s to %s",
			ActivityDays, first.Format(ActivityDateLayout), end.AddDate(0, 0, -1).Format(ActivityDateLayout))
	}
	return d, nil
}

// ActivityFilter selects the generations the activity sums. Zero fields
// select everything.
type ActivityFilter struct {
	// Since and Until bound the generations' creation: [Since, Until).
	Since, Until time.Time
	KeyHash      string // the key that made the calls
	UserID       string // the organization member who created the keys
	// WorkspaceID is the workspace the calls were made in: its id or slug.
	WorkspaceID string
	// ByWorkspace splits every row by workspace.
	ByWorkspace bool
}

// ActivityRow is the usage of one UTC day, model and endpoint (and
// workspace, when the filter splits by workspace).
type ActivityRow struct {
	Date        time.Time // the day's first instant
	Model       string    // the model slug, provider/model
	Provider    string    // the endpoint: the provider of the providers file that served the calls
	WorkspaceID string    // with ActivityFilter.ByWorkspace
	Requests    int64
	// PromptTokens and CompletionTokens are the tokens the providers
	// reported (or estimated, for a call cut short).
	PromptTokens, CompletionTokens int64
	Usage                          Money // spent on the operator's provider keys
	BYOKUsage                      Money // spent through BYOK providers
}

// AnalyticsService reads the usage ledger for reports.
type AnalyticsService interface {
	// Activity returns the generations of the organization that f
	// selects, summed by UTC day, model and endpoint (and workspace with
	// f.ByWorkspace): newest day first, then by model, endpoint and
	// workspace. ENOTFOUND for a workspace that is not the organization's.
	Activity(ctx context.Context, orgID string, f ActivityFilter) ([]*ActivityRow, error)
	// QueryAnalytics runs an analytics query (checked by Resolve) over the
	// generations of the organization.
	QueryAnalytics(ctx context.Context, orgID string, q *AnalyticsQuery) (*AnalyticsResult, error)
	// SearchGenerations returns a page of the organization's ledger,
	// newest first. EINVALID (see GenerationSearch.Validate).
	SearchGenerations(ctx context.Context, orgID string, s GenerationSearch) (*GenerationPage, error)
}
