package httpapi

import (
	"encoding/json"
	"net/http"
	"reflect"
	"strings"

	"gatehouse"
)

// Workspace budgets (workspaces.setBudget, getBudget, listBudgets,
// deleteBudget) and organization credits (credits.getCredits, and the
// grant of credits, an extension).

type workspaceBudgetJSON struct {
	CreatedAt     jsonTime `json:"created_at"`
	ID            string   `json:"id"`
	LimitUSD      usd      `json:"limit_usd"`
	ResetInterval *string  `json:"reset_interval"` // null: lifetime
	UpdatedAt     jsonTime `json:"updated_at"`
	WorkspaceID   string   `json:"workspace_id"`
}

func toWorkspaceBudgetJSON(b *gatehouse.WorkspaceBudget) workspaceBudgetJSON {
	return workspaceBudgetJSON{CreatedAt: newJSONTime(b.CreatedAt), ID: b.ID, LimitUSD: usdOf(b.Limit),
		ResetInterval: intervalPtr(b.Interval), UpdatedAt: newJSONTime(b.UpdatedAt), WorkspaceID: b.WorkspaceID}
}

// workspaceBudgetResponse answers the get and the set of one budget;
// include_byok_in_budgets is the workspace's setting, for all its budgets.
type workspaceBudgetResponse struct {
	Data        workspaceBudgetJSON `json:"data"`
	IncludeBYOK bool                `json:"include_byok_in_budgets"`
}

type workspaceBudgetsResponse struct {
	Data        []workspaceBudgetJSON `json:"data"`
	IncludeBYOK bool                  `json:"include_byok_in_budgets"`
}

// budgetPath returns the workspace reference and the interval of a budget
// route. An interval that is none of daily, weekly, monthly or lifetime is
// a 400 (the official client types it as one), before any lookup.
func budgetPath(r *http.Request) (string, gatehouse.Interval, error) {
	interval, err := gatehouse.ParseBudgetInterval(r.PathValue("interval"))
	if err != nil {
		return "", interval, err
	}
	ref, err := workspaceRef(r)
	return ref, interval, err
}

func (s *Server) listWorkspaceBudgets(w http.ResponseWriter, r *http.Request, p *principal) error {
	ref, err := workspaceRef(r)
	if err != nil {
		return err
	}
	all, err := s.store.FindWorkspaceBudgets(r.Context(), p.org(), ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, workspaceBudgetsResponse{mapSlice(all.Budgets, toWorkspaceBudgetJSON), all.IncludeBYOK})
}

func (s *Server) getWorkspaceBudget(w http.ResponseWriter, r *http.Request, p *principal) error {
	ref, interval, err := budgetPath(r)
	if err != nil {
		return err
	}
	all, err := s.store.FindWorkspaceBudgets(r.Context(), p.org(), ref)
	if err != nil {
		return err
	}
	b := all.Interval(interval)
	if b == nil {
		return gatehouse.Errorf(gatehouse.ENOTFOUND, "the workspace has no %s budget", gatehouse.BudgetIntervalName(interval)).
			WithMetadata("workspace_id", all.WorkspaceID).WithMetadata("interval", gatehouse.BudgetIntervalName(interval))
	}
	return writeJSON(w, http.StatusOK, workspaceBudgetResponse{toWorkspaceBudgetJSON(b), all.IncludeBYOK})
}

func (s *Server) setWorkspaceBudget(w http.ResponseWriter, r *http.Request, p *principal) error {
	ref, interval, err := budgetPath(r)
	if err != nil {
		return err
	}
	var req gatehouse.WorkspaceBudgetSet
	if err := decode(w, r, &req); err != nil {
		return err
	}
	all, err := s.store.SetWorkspaceBudget(r.Context(), p.org(), ref, interval, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, workspaceBudgetResponse{toWorkspaceBudgetJSON(all.Interval(interval)), all.IncludeBYOK})
}

// deleteWorkspaceBudget answers {"deleted": true} whether or not the
// workspace had a budget of the interval, as OpenRouter does.
func (s *Server) deleteWorkspaceBudget(w http.ResponseWriter, r *http.Request, p *principal) error {
	ref, interval, err := budgetPath(r)
	if err != nil {
		return err
	}
	if _, err := s.store.DeleteWorkspaceBudget(r.Context(), p.org(), ref, interval); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

type creditsJSON struct {
	TotalCredits usd `json:"total_credits"`
	TotalUsage   usd `json:"total_usage"`
}

// getCredits answers the caller's organization's credits. Its usage counts
// every call answered before it (the ledger is written behind).
func (s *Server) getCredits(w http.ResponseWriter, r *http.Request, p *principal) error {
	s.settled(r.Context())
	c, err := s.store.FindCredits(r.Context(), p.org())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[creditsJSON]{creditsJSON{usdOf(c.TotalShown()), usdOf(c.Usage)}})
}

type grantCreditsRequest struct {
	Amount *signedUSD `json:"amount" null:"no"`
}

// signedUSD is an amount of dollars that may be negative (a grant that
// takes credits back): a JSON number from -MaxMoney to MaxMoney.
type signedUSD struct{ gatehouse.Money }

// UnmarshalJSON decodes a JSON number of dollars; anything else is a
// *json.UnmarshalTypeError, so that the decoder names the field.
func (u *signedUSD) UnmarshalJSON(data []byte) error {
	v, err := gatehouse.ParseMoney(string(data))
	if err != nil {
		kind := "number"
		if len(data) > 0 && strings.IndexByte(`"{[tfn`, data[0]) >= 0 {
			kind = map[byte]string{'"': "string", '{': "object", '[': "array", 't': "bool", 'f': "bool", 'n': "null"}[data[0]]
		}
		return &json.UnmarshalTypeError{Value: kind, Type: reflect.TypeFor[signedUSD]()}
	}
	u.Money = v
	return nil
}

type creditGrantJSON struct {
	ID           string   `json:"id"`
	Amount       usd      `json:"amount"`
	TotalCredits usd      `json:"total_credits"`
	CreatedAt    jsonTime `json:"created_at"`
}

// grantCredits adds credits to the caller's organization (an extension:
// OpenRouter sells them).
func (s *Server) grantCredits(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req grantCreditsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Amount == nil {
		return gatehouse.FieldError("amount", "is required: a number of US dollars to add (or, when negative, to take back)")
	}
	g, err := s.store.GrantCredits(r.Context(), p.org(), req.Amount.Money)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[creditGrantJSON]{creditGrantJSON{g.ID, usdOf(g.Amount), usdOf(g.Total), newJSONTime(g.CreatedAt)}})
}
