package sqlstore

import (
	"context"
	"errors"
	"slices"
	"strings"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// Workspace budgets and an organization's credits are budgets as a
// guardrail's is: requests hold against them in reservation_budgets, and
// their spend is counted in guardrail_usage under the budget's id and the
// subject workspace:<id> or organization:<id> (migration 0014). So
// admission, leases and settles enforce them with no code of their own:
// BudgetsForKey adds them to a reservation's budgets.

// workspaceBudgetColumns are the columns of workspace_budgets, in
// scanWorkspaceBudget order.
const workspaceBudgetColumns = `id, organization_id, workspace_id, reset_interval, limit_nanos, created_at, updated_at`

func scanWorkspaceBudget(s Scanner) (*gatehouse.WorkspaceBudget, error) {
	var b gatehouse.WorkspaceBudget
	var interval string
	if err := s.Scan(&b.ID, &b.OrganizationID, &b.WorkspaceID, &interval, &b.Limit, msTime(&b.CreatedAt), msTime(&b.UpdatedAt)); err != nil {
		return nil, err
	}
	i, err := gatehouse.ParseBudgetInterval(interval)
	if err != nil {
		return nil, errors.New("workspace_budgets: unknown reset_interval " + interval)
	}
	b.Interval = i
	return &b, nil
}

// workspaceBudgets reads the budgets of a workspace, narrowest first.
func (tx *Tx) workspaceBudgets(ctx context.Context, w *gatehouse.Workspace) (*gatehouse.WorkspaceBudgets, error) {
	rows, err := tx.Query(ctx, `SELECT `+workspaceBudgetColumns+` FROM workspace_budgets WHERE workspace_id = ?`, w.ID)
	bs, err := collect(rows, err, scanWorkspaceBudget)
	if err != nil {
		return nil, err
	}
	gatehouse.SortWorkspaceBudgets(bs)
	return &gatehouse.WorkspaceBudgets{WorkspaceID: w.ID, IncludeBYOK: w.IncludeBYOKInBudgets, Budgets: bs}, nil
}

// FindWorkspaceBudgets returns a workspace's budgets.
func (s *Store) FindWorkspaceBudgets(ctx context.Context, orgID, ref string) (_ *gatehouse.WorkspaceBudgets, err error) {
	defer wrap(&err, "FindWorkspaceBudgets")
	return view(ctx, s, func(tx *Tx) (*gatehouse.WorkspaceBudgets, error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return nil, err
		}
		return tx.workspaceBudgets(ctx, w)
	})
}

// SetWorkspaceBudget creates or updates a workspace's budget of an
// interval. A new budget's counter starts at what the workspace spent in
// the budget's current period, read from the ledger.
func (s *Store) SetWorkspaceBudget(ctx context.Context, orgID, ref string, interval gatehouse.Interval, set gatehouse.WorkspaceBudgetSet) (_ *gatehouse.WorkspaceBudgets, err error) {
	defer wrap(&err, "SetWorkspaceBudget")
	if err := set.Validate(); err != nil {
		return nil, err
	}
	limit := set.LimitUSD.Value
	s.syncLedger(ctx)
	return update(ctx, s, func(tx *Tx) (*gatehouse.WorkspaceBudgets, error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return nil, err
		}
		all, err := tx.workspaceBudgets(ctx, w)
		if err != nil {
			return nil, err
		}
		if err := gatehouse.CheckBudgetOrder(all, interval, limit); err != nil {
			return nil, err
		}
		var fields []string // those that changed: none, no audit entry
		b := all.Interval(interval)
		created := b == nil
		if created || b.Limit != limit {
			fields = append(fields, "limit_usd")
		}
		if created {
			b = &gatehouse.WorkspaceBudget{ID: uuid.NewString(), OrganizationID: orgID, WorkspaceID: w.ID, Interval: interval,
				Limit: limit, CreatedAt: tx.now, UpdatedAt: tx.now}
			if err := tx.insert(ctx, "workspace_budgets", workspaceBudgetColumns, []any{b.ID, orgID, w.ID,
				gatehouse.BudgetIntervalName(interval), int64(limit), ms(tx.now), ms(tx.now)}); err != nil {
				return nil, err
			}
			err = tx.seedCounter(ctx, b.ID, gatehouse.WorkspaceSubject(w.ID), interval.Start(tx.now),
				`organization_id = ? AND workspace_id = ?`, orgID, w.ID)
			if err != nil {
				return nil, err
			}
			all.Budgets = append(all.Budgets, b)
			gatehouse.SortWorkspaceBudgets(all.Budgets)
		} else if b.Limit != limit {
			if _, err := tx.Exec(ctx, `UPDATE workspace_budgets SET limit_nanos = ?, updated_at = ? WHERE id = ?`,
				int64(limit), ms(tx.now), b.ID); err != nil {
				return nil, err
			}
			b.Limit, b.UpdatedAt = limit, tx.now
		}
		if v := set.IncludeBYOKInBudgets; v != nil && *v != all.IncludeBYOK {
			fields = append(fields, "include_byok_in_budgets")
			if _, err := tx.Exec(ctx, `UPDATE workspaces SET include_byok_in_budgets = ?, updated_at = ? WHERE id = ?`,
				*v, ms(tx.now), w.ID); err != nil {
				return nil, err
			}
			all.IncludeBYOK = *v
		}
		if len(fields) == 0 {
			return all, nil
		}
		return all, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceBudgetSet,
			ResourceType: gatehouse.ResourceWorkspaceBudget, ResourceIDs: []string{b.ID},
			Details: map[string]any{"workspace_id": w.ID, "reset_interval": gatehouse.BudgetIntervalName(interval),
				"created": created, "fields": fields}})
	})
}

// syncLedger waits (briefly) for the settles this process's ledger still
// has to write, so that a new budget's counter, read from the ledger,
// counts the calls answered before it. (Calls in flight when a budget is
// made, here or on another instance, are not counted against it.)
func (s *Store) syncLedger(ctx context.Context) {
	if s.ledger != nil {
		_ = s.ledger.Sync(ctx)
	}
}

// DeleteWorkspaceBudget deletes a workspace's budget of an interval, with
// its counter (a trigger deletes it).
func (s *Store) DeleteWorkspaceBudget(ctx context.Context, orgID, ref string, interval gatehouse.Interval) (_ bool, err error) {
	defer wrap(&err, "DeleteWorkspaceBudget")
	return update(ctx, s, func(tx *Tx) (bool, error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return false, err
		}
		rows, err := tx.Query(ctx, `DELETE FROM workspace_budgets WHERE workspace_id = ? AND reset_interval = ? RETURNING id`,
			w.ID, gatehouse.BudgetIntervalName(interval))
		ids, err := collect(rows, err, scanString)
		if err != nil || len(ids) == 0 {
			return false, err
		}
		return true, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceBudgetDelete,
			ResourceType: gatehouse.ResourceWorkspaceBudget, ResourceIDs: ids,
			Details: map[string]any{"workspace_id": w.ID, "reset_interval": gatehouse.BudgetIntervalName(interval)}})
	})
}

// seedCounter writes the counter of a new budget: what the ledger's
// entries that where selects (with args) cost, since since (the start of
// the budget's period, or the zero time for all of it). Only the budget's
// own period is ever read from it; the others count from since too.
func (tx *Tx) seedCounter(ctx context.Context, budgetID, subject string, since time.Time, where string, args ...any) error {
	starts := []time.Time{gatehouse.Daily.Start(tx.now), gatehouse.Weekly.Start(tx.now), gatehouse.Monthly.Start(tx.now)}
	var sums []string
	var q []any
	for _, byok := range []string{"FALSE", "TRUE"} {
		sums = append(sums, `COALESCE(SUM(CASE WHEN byok = `+byok+` THEN cost ELSE 0 END), 0)`)
		for _, s := range starts {
			sums = append(sums, `COALESCE(SUM(CASE WHEN byok = `+byok+` AND created_at >= ? THEN cost ELSE 0 END), 0)`)
			q = append(q, ms(s))
		}
	}
	var got [8]gatehouse.Money
	dest := make([]any, len(got))
	for i := range got {
		dest[i] = &got[i]
	}
	err := tx.QueryRow(ctx, `SELECT `+strings.Join(sums, ", ")+` FROM generations WHERE `+where+` AND created_at >= ?`,
		append(append(q, args...), ms(since))...).Scan(dest...)
	if err != nil {
		return err
	}
	counter := func(s []gatehouse.Money) gatehouse.Counter {
		return gatehouse.Counter{Total: s[0], Day: s[1], DayStart: starts[0], Week: s[2], WeekStart: starts[1],
			Month: s[3], MonthStart: starts[2]}
	}
	return tx.insert(ctx, "guardrail_usage", "guardrail_id, subject, "+counterColumns,
		append([]any{budgetID, subject}, append(counterArgs(counter(got[:4])), counterArgs(counter(got[4:]))...)...))
}

// keyBudgets returns the budgets of a key's workspaces (its own and those
// of the keys it was minted from, which are the same but for a key minted
// by a management key's code) and of its organization's credits, for
// BudgetsForKey: credits first, then each workspace's budgets broadest
// first.
func (tx *Tx) keyBudgets(ctx context.Context, keys []*gatehouse.Key) ([]gatehouse.Budget, error) {
	var out []gatehouse.Budget
	org := keys[0].OrganizationID
	var id string
	var total gatehouse.Money
	err := tx.QueryRow(ctx, `SELECT id, total_nanos FROM organization_credits WHERE organization_id = ?`, org).Scan(&id, &total)
	switch {
	case err == nil:
		out = append(out, gatehouse.Budget{GuardrailID: id, Subject: gatehouse.OrganizationSubject(org), Limit: total,
			Interval: gatehouse.NoReset, Kind: gatehouse.OrganizationCredits})
	case !errors.Is(err, ErrNoRows):
		return nil, err
	}
	var seen []string
	for _, k := range keys {
		if k == nil || k.WorkspaceID == "" || slices.Contains(seen, k.WorkspaceID) {
			continue
		}
		seen = append(seen, k.WorkspaceID)
		rows, err := tx.Query(ctx, `SELECT b.id, b.reset_interval, b.limit_nanos, w.include_byok_in_budgets
			FROM workspace_budgets b JOIN workspaces w ON w.id = b.workspace_id WHERE b.workspace_id = ?`, k.WorkspaceID)
		bs, err := collect(rows, err, func(s Scanner) (gatehouse.Budget, error) {
			b := gatehouse.Budget{Subject: gatehouse.WorkspaceSubject(k.WorkspaceID), Kind: gatehouse.WorkspaceLimit}
			var interval string
			if err := s.Scan(&b.GuardrailID, &interval, &b.Limit, &b.IncludeBYOK); err != nil {
				return b, err
			}
			var err error
			b.Interval, err = gatehouse.ParseBudgetInterval(interval)
			return b, err
		})
		if err != nil {
			return nil, err
		}
		slices.SortFunc(bs, func(a, b gatehouse.Budget) int {
			return gatehouse.BudgetBreadth(b.Interval) - gatehouse.BudgetBreadth(a.Interval)
		})
		out = append(out, bs...)
	}
	return out, nil
}

// FindCredits returns an organization's credits and the spend counted
// against them: the counter of its credits, or without credits its
// non-BYOK spend in the ledger.
func (s *Store) FindCredits(ctx context.Context, orgID string) (_ *gatehouse.Credits, err error) {
	defer wrap(&err, "FindCredits")
	return view(ctx, s, func(tx *Tx) (*gatehouse.Credits, error) {
		if err := tx.organizationExists(ctx, orgID); err != nil {
			return nil, err
		}
		c := &gatehouse.Credits{OrganizationID: orgID}
		var id string
		var total gatehouse.Money
		err := tx.QueryRow(ctx, `SELECT id, total_nanos FROM organization_credits WHERE organization_id = ?`, orgID).Scan(&id, &total)
		if errors.Is(err, ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT COALESCE(SUM(cost), 0) FROM generations WHERE organization_id = ? AND byok = FALSE`,
				orgID).Scan(&c.Usage)
			return c, err
		}
		if err != nil {
			return nil, err
		}
		c.Total = &total
		u, _, err := scanCounters(tx.QueryRow(ctx, `SELECT `+counterColumns+` FROM guardrail_usage
			WHERE guardrail_id = ? AND subject = ?`, id, gatehouse.OrganizationSubject(orgID)))
		if errors.Is(err, ErrNoRows) {
			return c, nil
		}
		c.Usage = u.Total
		return c, err
	})
}

// organizationExists returns ENOTFOUND for an unknown organization.
func (tx *Tx) organizationExists(ctx context.Context, orgID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM organizations WHERE id = ?`, orgID).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return gatehouse.NotFound("organization", orgID)
	}
	return err
}

// GrantCredits adds amount to an organization's credits. The first grant
// makes the credits a budget, whose counter starts at everything the
// organization spent (its non-BYOK ledger).
func (s *Store) GrantCredits(ctx context.Context, orgID string, amount gatehouse.Money) (_ *gatehouse.CreditGrant, err error) {
	defer wrap(&err, "GrantCredits")
	s.syncLedger(ctx)
	return update(ctx, s, func(tx *Tx) (*gatehouse.CreditGrant, error) {
		if err := tx.organizationExists(ctx, orgID); err != nil {
			return nil, err
		}
		var id string
		var total gatehouse.Money
		err := tx.QueryRow(ctx, `SELECT id, total_nanos FROM organization_credits WHERE organization_id = ?`, orgID).Scan(&id, &total)
		first := errors.Is(err, ErrNoRows)
		if err != nil && !first {
			return nil, err
		}
		var current *gatehouse.Money
		if !first {
			current = &total
		}
		if err := gatehouse.CheckCreditGrant(current, amount); err != nil {
			return nil, err
		}
		g := &gatehouse.CreditGrant{ID: uuid.NewString(), OrganizationID: orgID, Amount: amount, Total: total + amount, CreatedAt: tx.now}
		if first {
			id = uuid.NewString()
			if err := tx.insert(ctx, "organization_credits", "id, organization_id, total_nanos, created_at, updated_at",
				[]any{id, orgID, int64(g.Total), ms(tx.now), ms(tx.now)}); err != nil {
				return nil, err
			}
			if err := tx.seedCounter(ctx, id, gatehouse.OrganizationSubject(orgID), time.Time{}, `organization_id = ?`, orgID); err != nil {
				return nil, err
			}
		} else if _, err := tx.Exec(ctx, `UPDATE organization_credits SET total_nanos = ?, updated_at = ? WHERE id = ?`,
			int64(g.Total), ms(tx.now), id); err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "credit_grants", creditGrantColumns, []any{g.ID, orgID, int64(amount), int64(g.Total), ms(tx.now)}); err != nil {
			return nil, err
		}
		return g, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpCreditsGrant,
			ResourceType: gatehouse.ResourceCreditGrant, ResourceIDs: []string{g.ID}, Details: map[string]any{"first": first}})
	})
}

// creditGrantColumns are the columns of credit_grants, in
// scanCreditGrant order.
const creditGrantColumns = `id, organization_id, amount_nanos, total_nanos, created_at`

func scanCreditGrant(s Scanner) (*gatehouse.CreditGrant, error) {
	var g gatehouse.CreditGrant
	return &g, s.Scan(&g.ID, &g.OrganizationID, &g.Amount, &g.Total, msTime(&g.CreatedAt))
}

// FindCreditGrants lists an organization's grants, newest first.
func (s *Store) FindCreditGrants(ctx context.Context, orgID string, page gatehouse.Page) (_ []*gatehouse.CreditGrant, _ int, err error) {
	defer wrap(&err, "FindCreditGrants")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.CreditGrant], error) {
		if err := tx.organizationExists(ctx, orgID); err != nil {
			return nil, err
		}
		const from = `credit_grants WHERE organization_id = ?`
		return findKeptCountPage(ctx, tx, "credit_grants", orgID, creditGrantColumns, from, from,
			`created_at DESC, id DESC`, false, []any{orgID}, page, scanCreditGrant)
	}))
}
