package console

import (
	"context"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"gatehouse"
)

// guardrailsPageSize is how many guardrails a page of the list shows.
const guardrailsPageSize = 50

// guardrailsData is the data of the guardrails page: one workspace's
// guardrails (chosen in Workspaces), and the form that creates one there.
type guardrailsData struct {
	Workspace  *gatehouse.Workspace
	Workspaces []option
	Guardrails []*gatehouse.Guardrail
	Total      int
	Prev, Next string
	Form       *form
	Resets     []option
	Regions    []option
}

// guardrails lists the guardrails of a workspace (?workspace=, the
// default one without it).
func (s *Server) guardrails(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.guardrailsPage(w, r, sess, http.StatusOK, emptyForm())
}

func (s *Server) guardrailsPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, f *form) error {
	ctx := r.Context()
	ws, choices, err := s.chosenWorkspace(ctx, sess, r.URL.Query().Get("workspace"))
	if err != nil {
		return err
	}
	offset := offsetParam(r)
	list, total, err := s.store.FindGuardrails(ctx, sess.OrganizationID, ws.ID, gatehouse.Page{Offset: offset, Limit: guardrailsPageSize})
	if err != nil {
		return err
	}
	data := guardrailsData{Workspace: ws, Workspaces: choices, Guardrails: list, Total: total, Form: f,
		Resets: guardrailResets, Regions: checkOptions(dataRegions, f.Values["allowed_data_regions"])}
	data.Prev, data.Next = pageLinks("/guardrails", url.Values{"workspace": {ws.ID}}, offset, len(list), total, guardrailsPageSize)
	return s.render(w, r, sess, status, "guardrails", "Guardrails", data)
}

// chosenWorkspace returns the workspace ref names ("" the default one)
// and the choices of workspaces (the first MaxPageSize, and the chosen
// one), for the pages that show one workspace's things at a time.
func (s *Server) chosenWorkspace(ctx context.Context, sess *gatehouse.Session, ref string) (*gatehouse.Workspace, []option, error) {
	var ws *gatehouse.Workspace
	var err error
	if ref == "" {
		ws, err = s.store.FindWorkspace(ctx, sess.OrganizationID, "")
	} else {
		ws, err = s.findWorkspace(ctx, sess, ref)
	}
	if err != nil {
		return nil, nil, err
	}
	all, _, err := s.store.FindWorkspaces(ctx, sess.OrganizationID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if err != nil {
		return nil, nil, err
	}
	if !slices.ContainsFunc(all, func(w *gatehouse.Workspace) bool { return w.ID == ws.ID }) {
		all = append(all, ws)
	}
	choices := make([]option, len(all))
	for i, w := range all {
		choices[i] = option{Value: w.ID, Label: w.Name, Selected: w.ID == ws.ID}
	}
	return ws, choices, nil
}

// guardrailResets are the periods of a guardrail's budget.
var guardrailResets = []option{{Value: "daily", Label: "every day"}, {Value: "weekly", Label: "every week"}, {Value: "monthly", Label: "every month"}}

// dataRegions are the regions a guardrail may keep requests to.
var dataRegions = []string{"global", "europe", "us"}

// guardrailLists are the form fields of a guardrail's lists of models and
// providers.
var guardrailLists = []string{"allowed_models", "ignored_models", "allowed_providers", "ignored_providers"}

// guardrailFields are the fields of a guardrail's forms.
var guardrailFields = append(slices.Clone(guardrailLists), "name", "description", "limit_usd", "reset_interval",
	"include_byok_in_budgets", "allowed_data_regions", "workspace_id")

// createGuardrail creates a guardrail in the form's workspace, and opens
// it.
func (s *Server) createGuardrail(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	c := gatehouse.GuardrailCreate{WorkspaceID: f.get("workspace_id")}
	c.GuardrailUpdate, err = guardrailUpdate(&gatehouse.Guardrail{}, f)
	var g *gatehouse.Guardrail
	if err == nil {
		g, err = s.store.CreateGuardrail(r.Context(), sess.OrganizationID, c)
	}
	if err != nil {
		if err := f.withError(err, guardrailFields...); err != nil {
			return err
		}
		r.URL.RawQuery = url.Values{"workspace": {c.WorkspaceID}}.Encode()
		return s.guardrailsPage(w, r, sess, http.StatusBadRequest, f)
	}
	http.Redirect(w, r, "/guardrails/"+g.ID+"?done=created", http.StatusSeeOther)
	return nil
}

// guardrailForm is the edit form of a guardrail as it is.
func guardrailForm(g *gatehouse.Guardrail) *form {
	f := emptyForm()
	v := f.Values
	v.Set("name", g.Name)
	v.Set("description", deref(g.Description))
	for name, list := range guardrailListsOf(g) {
		v.Set(name, strings.Join(*list, "\n"))
	}
	if g.LimitUSD != nil {
		v.Set("limit_usd", g.LimitUSD.String())
	}
	v.Set("reset_interval", string(g.ResetInterval))
	if g.IncludeBYOKInBudgets {
		v.Set("include_byok_in_budgets", "on")
	}
	v["allowed_data_regions"] = slices.Clone(g.AllowedDataRegions)
	return f
}

// guardrailListsOf are a guardrail's lists by form field.
func guardrailListsOf(g *gatehouse.Guardrail) map[string]*[]string {
	return map[string]*[]string{"allowed_models": &g.AllowedModels, "ignored_models": &g.IgnoredModels,
		"allowed_providers": &g.AllowedProviders, "ignored_providers": &g.IgnoredProviders}
}

// guardrailUpdate reads a guardrail's form: the fields whose value differs
// from g's (a new guardrail is the zero one), so that the audit log names
// what changed. An empty list, limit or region set is none (null).
func guardrailUpdate(g *gatehouse.Guardrail, f *form) (gatehouse.GuardrailUpdate, error) {
	var u gatehouse.GuardrailUpdate
	if v := f.get("name"); v != g.Name || g.ID == "" {
		u.Name = gatehouse.Val(v)
	}
	if v := f.get("description"); v != deref(g.Description) {
		u.Description = patchOf(optional(v))
	}
	patches := map[string]*gatehouse.Patch[[]string]{"allowed_models": &u.AllowedModels, "ignored_models": &u.IgnoredModels,
		"allowed_providers": &u.AllowedProviders, "ignored_providers": &u.IgnoredProviders}
	for name, cur := range guardrailListsOf(g) {
		if list := splitList(f.get(name)); !slices.Equal(list, *cur) {
			*patches[name] = patchOf(nilIfEmpty(list))
		}
	}
	limit, err := f.money("limit_usd")
	if err != nil {
		return u, err
	}
	reset := gatehouse.Interval(f.get("reset_interval"))
	if limit == nil {
		reset = gatehouse.NoReset // no budget, no period
	}
	if !sameMoney(limit, g.LimitUSD) || reset != g.ResetInterval {
		u.LimitUSD, u.ResetInterval = patchOf(limit), gatehouse.Val(reset)
	}
	if byok := f.get("include_byok_in_budgets") == "on"; byok != g.IncludeBYOKInBudgets {
		u.IncludeBYOKInBudgets = gatehouse.Val(byok)
	}
	if regions := f.Values["allowed_data_regions"]; !sameSet(regions, g.AllowedDataRegions) {
		u.AllowedDataRegions = patchOf(nilIfEmpty(regions))
	}
	return u, nil
}
