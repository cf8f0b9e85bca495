package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strings"

	"gatehouse"
)

// workspaceMembersPageSize is how many members a page of a workspace's
// members shows.
const workspaceMembersPageSize = 50

// workspaceData is the data of a workspace's page: its settings, its
// budgets, its members, and its deletion, each with its form.
type workspaceData struct {
	Workspace *gatehouse.Workspace
	Edit      *form
	Sorts     []option
	// Keys links to the workspace's keys.
	Keys string

	Budgets   []budgetLine
	Budget    *form
	Intervals []option

	Members      []*gatehouse.WorkspaceMember
	MembersTotal int
	Prev, Next   string
	Add, Remove  *form
	// Blocked are the members a removal was refused for, and why.
	Blocked []blockedMember

	Delete *form
}

// budgetLine is a workspace budget with what counts against it now.
type budgetLine struct {
	Interval string // daily, weekly, monthly or lifetime
	Budget   *gatehouse.WorkspaceBudget
	Spent    gatehouse.Money
}

// blockedMember is a member whose removal from a workspace the domain
// refused: they hold active keys (or codes that may become keys) there.
type blockedMember struct {
	UserID, Email string
	// Keys lists their keys in the workspace.
	Keys string
}

// workspaceForms are the forms of a workspace's page that a POST filled
// in; the others are shown as they are.
type workspaceForms struct {
	edit, budget, add, remove, delete *form
	blocked                           []blockedMember
}

// workspace shows a workspace's page.
func (s *Server) workspace(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.workspacePage(w, r, sess, http.StatusOK, ws, workspaceForms{})
}

// workspacePage renders a workspace's page with the forms of fs (the
// others empty, the edit form as the workspace is).
func (s *Server) workspacePage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, ws *gatehouse.Workspace, fs workspaceForms) error {
	ctx := r.Context()
	data := workspaceData{Workspace: ws, Edit: orForm(fs.edit, func() *form { return workspaceForm(ws) }),
		Budget: orForm(fs.budget, emptyForm), Add: orForm(fs.add, emptyForm), Remove: orForm(fs.remove, emptyForm),
		Delete: orForm(fs.delete, emptyForm), Blocked: fs.blocked, Intervals: budgetIntervalOptions,
		Keys: keysLink(ws.ID, "")}
	data.Sorts = append([]option{{Value: "", Label: "none (the gateway's default)"}}, plainOptions(gatehouse.ProviderSorts())...)
	if err := s.workspaceBudgets(ctx, sess, ws, &data); err != nil {
		return err
	}
	offset := offsetParam(r)
	members, total, err := s.store.FindWorkspaceMembers(ctx, sess.OrganizationID, ws.ID, gatehouse.Page{Offset: offset, Limit: workspaceMembersPageSize})
	if err != nil {
		return err
	}
	data.Members, data.MembersTotal = members, total
	data.Prev, data.Next = pageLinks("/workspaces/"+ws.ID, nil, offset, len(members), total, workspaceMembersPageSize)
	return s.render(w, r, sess, status, "workspace", ws.Name, data)
}

// orForm is f, or a form made by empty when f is nil.
func orForm(f *form, empty func() *form) *form {
	if f != nil {
		return f
	}
	return empty()
}

// keysLink is the keys page of a workspace's keys, a member's when
// userID is set.
func keysLink(workspaceID, userID string) string {
	v := url.Values{"workspace": {workspaceID}}
	if userID != "" {
		v.Set("member", userID)
	}
	return "/keys?" + v.Encode()
}

// checkOptions are checkboxes of values, those in on ticked.
func checkOptions(values, on []string) []option {
	out := make([]option, len(values))
	for i, v := range values {
		out[i] = option{Value: v, Label: v, Selected: slices.Contains(on, v)}
	}
	return out
}

// plainOptions are choices labelled by their values.
func plainOptions(values []string) []option {
	out := make([]option, len(values))
	for i, v := range values {
		out[i] = option{Value: v, Label: v}
	}
	return out
}

// budgetIntervalOptions are the intervals of workspace budgets.
var budgetIntervalOptions = plainOptions([]string{"daily", "weekly", "monthly", gatehouse.LifetimeBudget})

// workspaceBudgets fills in the workspace's budgets with what counts
// against each in its current period (what the gateway holds requests
// against).
func (s *Server) workspaceBudgets(ctx context.Context, sess *gatehouse.Session, ws *gatehouse.Workspace, data *workspaceData) error {
	all, err := s.store.FindWorkspaceBudgets(ctx, sess.OrganizationID, ws.ID)
	if err != nil {
		return err
	}
	for _, b := range all.Budgets {
		usage, byok, err := s.store.BudgetUsage(ctx, b.ID, gatehouse.WorkspaceSubject(ws.ID))
		if err != nil {
			return err
		}
		spent := gatehouse.BudgetSpend{Usage: usage, BYOK: byok}.Spent(gatehouse.Budget{Interval: b.Interval, IncludeBYOK: all.IncludeBYOK})
		data.Budgets = append(data.Budgets, budgetLine{Interval: gatehouse.BudgetIntervalName(b.Interval), Budget: b, Spent: spent})
	}
	return nil
}

// setWorkspaceBudget sets the workspace's budget of the form's interval.
func (s *Server) setWorkspaceBudget(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	interval, err := gatehouse.ParseBudgetInterval(f.get("interval"))
	if err == nil {
		var limit *gatehouse.Money
		if limit, err = f.money("limit_usd"); err == nil {
			set := gatehouse.WorkspaceBudgetSet{}
			if limit != nil {
				set.LimitUSD = gatehouse.Val(*limit)
			}
			_, err = s.store.SetWorkspaceBudget(r.Context(), sess.OrganizationID, ws.ID, interval, set)
		}
	}
	if err != nil {
		if err := f.withError(err, "interval", "limit_usd"); err != nil {
			return err
		}
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{budget: f})
	}
	http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=budget#budgets", http.StatusSeeOther)
	return nil
}

// clearWorkspaceBudget deletes the workspace's budget of an interval.
func (s *Server) clearWorkspaceBudget(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	interval, err := gatehouse.ParseBudgetInterval(r.PathValue("interval"))
	if err != nil {
		return err
	}
	if _, err := s.store.DeleteWorkspaceBudget(r.Context(), sess.OrganizationID, ws.ID, interval); err != nil {
		return err
	}
	http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=budgetcleared#budgets", http.StatusSeeOther)
	return nil
}

// addWorkspaceMembers adds the members the form names (user ids or
// emails, several at once) to a workspace.
func (s *Server) addWorkspaceMembers(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	ids, err := s.resolveMembers(r.Context(), sess, "members", splitList(f.get("members")))
	if err == nil {
		_, _, err = s.store.AddWorkspaceMembers(r.Context(), sess.OrganizationID, ws.ID, ids)
	}
	if err != nil {
		if err := f.withError(err, "members"); err != nil {
			return err
		}
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{add: f})
	}
	http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=membersadded#members", http.StatusSeeOther)
	return nil
}

// resolveMembers turns what was typed (user ids or emails) into user ids;
// EINVALID naming field and listing what names no member.
func (s *Server) resolveMembers(ctx context.Context, sess *gatehouse.Session, field string, refs []string) ([]string, error) {
	if len(refs) == 0 {
		return nil, gatehouse.FieldError(field, "name at least one member: an email or a user id, one a line")
	}
	found, err := s.store.FindMembersByRef(ctx, sess.OrganizationID, refs)
	if err != nil {
		if e, ok := errors.AsType[*gatehouse.Error](err); ok && e.Code == gatehouse.EINVALID {
			return nil, gatehouse.FieldError(field, "name at most %d members at once", gatehouse.MaxBulkIDs)
		}
		return nil, err
	}
	var ids, unknown []string
	for _, ref := range refs {
		i := slices.IndexFunc(found, func(m *gatehouse.Member) bool { return m.ID == ref || strings.EqualFold(m.Email, ref) })
		switch {
		case i < 0:
			unknown = append(unknown, ref)
		case !slices.Contains(ids, found[i].ID):
			ids = append(ids, found[i].ID)
		}
	}
	if len(unknown) > 0 {
		return nil, gatehouse.FieldError(field, "no member of the organization has this email or id: %s (invite them on the Members page first)", strings.Join(unknown, ", "))
	}
	return ids, nil
}

// removeWorkspaceMembers removes the members ticked in the list from a
// workspace, all or none: when the domain refuses (members who hold
// active keys there), the page says who and why, with their keys.
func (s *Server) removeWorkspaceMembers(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	ids := f.Values["user"]
	if len(ids) == 0 {
		f.Error = "Tick the members to remove first."
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{remove: f})
	}
	_, err = s.store.RemoveWorkspaceMembers(r.Context(), sess.OrganizationID, ws.ID, ids)
	if err != nil {
		blocked, berr := s.blockedMembers(r.Context(), sess, ws, err)
		if berr != nil {
			return berr
		}
		if err := f.withError(err); err != nil {
			return err
		}
		if blocked != nil {
			f.Error = "" // the page explains the refusal with the members' names
		}
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{remove: f, blocked: blocked})
	}
	http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=membersremoved#members", http.StatusSeeOther)
	return nil
}

// blockedMembers reads, from a refused removal, the members who hold
// active keys or pending codes in the workspace (the error's user_ids),
// with their emails and a link to their keys there; nil when the removal
// was refused for another reason.
func (s *Server) blockedMembers(ctx context.Context, sess *gatehouse.Session, ws *gatehouse.Workspace, err error) ([]blockedMember, error) {
	e, ok := errors.AsType[*gatehouse.Error](err)
	if !ok || e.Code != gatehouse.EINVALID {
		return nil, nil
	}
	ids, _ := e.Metadata["user_ids"].([]string)
	if len(ids) == 0 {
		return nil, nil
	}
	members, err := s.store.FindMembersByRef(ctx, sess.OrganizationID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]blockedMember, len(ids))
	for i, id := range ids {
		out[i] = blockedMember{UserID: id, Email: id, Keys: keysLink(ws.ID, id)}
		if j := slices.IndexFunc(members, func(m *gatehouse.Member) bool { return m.ID == id }); j >= 0 {
			out[i].Email = members[j].Email
		}
	}
	return out, nil
}
