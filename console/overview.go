package console

import (
	"context"
	"net/http"
	"time"

	"gatehouse"
)

// overviewData is the data of the overview.
type overviewData struct {
	Periods []period
	// Credits are the organization's (admins only); nil when unlimited.
	Credits *gatehouse.Credits
	// Budgets are the workspace budgets (admins only), with what each
	// workspace spent in the budget's current period.
	Budgets []budgetRow
	// Limits are a member's keys that have a limit, with their spend.
	Limits         []keyRow
	ByKey, ByModel *chart
	// Empty says that nothing was spent in the window.
	Empty bool
}

// period is the spend, requests and tokens of today, this week or this
// month.
type period struct {
	Label            string
	Spend            gatehouse.Money
	Requests, Tokens int64
}

// budgetRow is a workspace budget with its current spend.
type budgetRow struct {
	Workspace string
	Budget    *gatehouse.WorkspaceBudget
	Spent     gatehouse.Money
}

// overview shows what the session's scope spent today, this week and this
// month, against the limits that apply (credits and workspace budgets for
// an admin, their keys' limits for a member), and the daily spend of the
// last 30 days by key and by model.
func (s *Server) overview(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ctx, now := r.Context(), s.now()
	d := activityDays(now)
	filters := scopeFilters(sess)
	t, byModel, err := s.usageByModel(ctx, sess, d, filters)
	if err != nil {
		return err
	}
	data := overviewData{Empty: true, ByModel: byModel}
	for _, p := range []struct {
		label string
		i     gatehouse.Interval
	}{{"Today", gatehouse.Daily}, {"This week", gatehouse.Weekly}, {"This month", gatehouse.Monthly}} {
		spend, requests, tokens := t.since(d, p.i.Start(now))
		data.Periods = append(data.Periods, period{Label: p.label, Spend: spend, Requests: requests, Tokens: tokens})
	}
	for _, m := range t.spend {
		data.Empty = data.Empty && m == 0
	}
	if data.ByKey, err = s.splitChart(ctx, sess, d, "api_key_id", t.spend, filters, s.keyNames(ctx, sess)); err != nil {
		return err
	}
	if err := s.limits(ctx, sess, now, &data); err != nil {
		return err
	}
	return s.render(w, r, sess, http.StatusOK, "overview", "Overview", data)
}

// limits fills in what the spend is held against: an admin's credits and
// workspace budgets, or a member's keys with limits (the first page).
func (s *Server) limits(ctx context.Context, sess *gatehouse.Session, now time.Time, data *overviewData) error {
	if !sess.IsAdmin() {
		page, err := s.store.SearchKeys(ctx, sess.OrganizationID, gatehouse.KeySearch{CreatorUserID: sess.KeyScope(), Limit: 20})
		if err != nil {
			return err
		}
		for _, k := range page.Keys {
			if k.Limit != nil {
				data.Limits = append(data.Limits, newKeyRow(k, nil, now))
			}
		}
		return nil
	}
	// Credits exist once granted; without, FindCredits would sum the
	// whole ledger for a figure the overview does not show.
	if _, grants, err := s.store.FindCreditGrants(ctx, sess.OrganizationID, gatehouse.Page{Limit: 1}); err != nil {
		return err
	} else if grants > 0 {
		credits, err := s.store.FindCredits(ctx, sess.OrganizationID)
		if err != nil {
			return err
		}
		if credits.Total != nil {
			data.Credits = credits
		}
	}
	return s.budgets(ctx, sess, data)
}

// budgets fills in the budgets of the organization's first workspaces,
// with what counts against each in its current period: the counters that
// the gateway holds requests against.
func (s *Server) budgets(ctx context.Context, sess *gatehouse.Session, data *overviewData) error {
	ws, _, err := s.store.FindWorkspaces(ctx, sess.OrganizationID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if err != nil {
		return err
	}
	for _, w := range ws {
		all, err := s.store.FindWorkspaceBudgets(ctx, sess.OrganizationID, w.ID)
		if err != nil {
			return err
		}
		for _, b := range all.Budgets {
			usage, byok, err := s.store.BudgetUsage(ctx, b.ID, gatehouse.WorkspaceSubject(w.ID))
			if err != nil {
				return err
			}
			spent := gatehouse.BudgetSpend{Usage: usage, BYOK: byok}.Spent(gatehouse.Budget{Interval: b.Interval, IncludeBYOK: all.IncludeBYOK})
			data.Budgets = append(data.Budgets, budgetRow{Workspace: w.Name, Budget: b, Spent: spent})
		}
	}
	return nil
}
