package console

import (
	"context"
	"errors"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"gatehouse"
)

// workspacesPageSize is how many workspaces a page of the list shows.
const workspacesPageSize = 50

// workspacesData is the data of the workspaces page.
type workspacesData struct {
	Workspaces []*gatehouse.Workspace
	Total      int
	// Prev and Next link the pages around ("" where there is none).
	Prev, Next string
	Form       *form
}

// workspaces lists the organization's workspaces, a page at a time, with
// the form that creates one.
func (s *Server) workspaces(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.workspacesPage(w, r, sess, http.StatusOK, emptyForm())
}

func (s *Server) workspacesPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, f *form) error {
	offset := offsetParam(r)
	list, total, err := s.store.FindWorkspaces(r.Context(), sess.OrganizationID, gatehouse.Page{Offset: offset, Limit: workspacesPageSize})
	if err != nil {
		return err
	}
	data := workspacesData{Workspaces: list, Total: total, Form: f}
	data.Prev, data.Next = pageLinks("/workspaces", nil, offset, len(list), total, workspacesPageSize)
	return s.render(w, r, sess, status, "workspaces", "Workspaces", data)
}

// offsetParam reads the offset of a list's page from the URL (0 when
// missing or wrong).
func offsetParam(r *http.Request) int {
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	return max(offset, 0)
}

// pageLinks returns the links to the pages before and after the one at
// offset (of shown items, of total) of a list at path with the query q.
func pageLinks(path string, q url.Values, offset, shown, total, size int) (prev, next string) {
	link := func(at int) string {
		v := cloneValues(q)
		if at > 0 {
			v.Set("offset", strconv.Itoa(at))
		}
		if len(v) == 0 {
			return path
		}
		return path + "?" + v.Encode()
	}
	if offset > 0 {
		prev = link(max(offset-size, 0))
	}
	if offset+shown < total {
		next = link(offset + size)
	}
	return prev, next
}

// createWorkspace creates a workspace from its name, slug and
// description, and opens it.
func (s *Server) createWorkspace(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	slug := f.get("slug")
	if slug == "" {
		slug = slugOf(f.get("name"))
	}
	c := gatehouse.WorkspaceUpdate{Name: gatehouse.Val(f.get("name")), Slug: gatehouse.Val(slug)}
	if d := f.get("description"); d != "" {
		c.Description = gatehouse.Val(d)
	}
	ws, err := s.store.CreateWorkspace(r.Context(), sess.OrganizationID, c, sess.UserID)
	if err != nil {
		if err := f.withError(err, "name", "slug", "description"); err != nil {
			return err
		}
		return s.workspacesPage(w, r, sess, http.StatusBadRequest, f)
	}
	http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=created", http.StatusSeeOther)
	return nil
}

// slugOf suggests a slug for a name: its ASCII letters and digits in
// lower case, other runs of characters as single hyphens. The domain
// checks what comes out, as it checks a typed slug.
func slugOf(name string) string {
	var b strings.Builder
	hyphen := false
	for _, c := range strings.ToLower(name) {
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' {
			if hyphen && b.Len() > 0 {
				b.WriteByte('-')
			}
			b.WriteRune(c)
			hyphen = false
		} else {
			hyphen = true
		}
	}
	return b.String()[:min(b.Len(), gatehouse.MaxSlugLength)]
}

// findWorkspace returns the workspace of the path's {id}, or ENOTFOUND.
func (s *Server) findWorkspace(ctx context.Context, sess *gatehouse.Session, ref string) (*gatehouse.Workspace, error) {
	if _, _, ok := gatehouse.ParseWorkspaceRef(ref); !ok {
		return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such workspace.")
	}
	ws, err := s.store.FindWorkspace(ctx, sess.OrganizationID, ref)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such workspace.")
	}
	return ws, err
}

// workspaceForm is the edit form of a workspace as it is.
func workspaceForm(ws *gatehouse.Workspace) *form {
	f := emptyForm()
	v := f.Values
	v.Set("name", ws.Name)
	v.Set("slug", ws.Slug)
	for name, p := range map[string]*string{"description": ws.Description, "default_text_model": ws.DefaultTextModel,
		"default_image_model": ws.DefaultImageModel, "default_provider_sort": ws.DefaultProviderSort} {
		if p != nil {
			v.Set(name, *p)
		}
	}
	v.Set("io_logging_sampling_rate", strconv.FormatFloat(ws.IOLoggingSamplingRate, 'f', -1, 64))
	for name, on := range workspaceSwitches(ws) {
		if *on {
			v.Set(name, "on")
		}
	}
	return f
}

// workspaceSwitches are the workspace's on/off settings by form field.
func workspaceSwitches(ws *gatehouse.Workspace) map[string]*bool {
	return map[string]*bool{
		"is_data_discount_logging_enabled":    &ws.IsDataDiscountLoggingEnabled,
		"is_observability_io_logging_enabled": &ws.IsObservabilityIOLoggingEnabled,
		"include_byok_in_budgets":             &ws.IncludeBYOKInBudgets,
	}
}

// updateWorkspace changes what the edit form changed of a workspace: the
// fields the API's PATCH takes, each sent only when it differs, so that
// the audit log names what changed.
func (s *Server) updateWorkspace(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u, err := workspaceUpdate(ws, f)
	if err == nil {
		_, err = s.store.UpdateWorkspace(r.Context(), sess.OrganizationID, ws.ID, u)
		s.opts.Destinations.WorkspaceChanged()
	}
	if err != nil {
		if err := f.withError(err, workspaceFields...); err != nil {
			return err
		}
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{edit: f})
	}
	http.Redirect(w, r, "/workspaces/"+ws.ID+"?done=saved", http.StatusSeeOther)
	return nil
}

// workspaceFields are the fields of the edit form.
var workspaceFields = []string{"name", "slug", "description", "default_text_model", "default_image_model",
	"default_provider_sort", "io_logging_sampling_rate", "is_data_discount_logging_enabled",
	"is_observability_io_logging_enabled", "include_byok_in_budgets"}

// workspaceUpdate reads the edit form of ws: the fields whose value
// differs from ws's.
func workspaceUpdate(ws *gatehouse.Workspace, f *form) (gatehouse.WorkspaceUpdate, error) {
	var u gatehouse.WorkspaceUpdate
	if v := f.get("name"); v != ws.Name {
		u.Name = gatehouse.Val(v)
	}
	if v := f.get("slug"); v != ws.Slug {
		u.Slug = gatehouse.Val(v)
	}
	for _, t := range []struct {
		name string
		cur  *string
		dst  *gatehouse.Patch[string]
	}{
		{"description", ws.Description, &u.Description}, {"default_text_model", ws.DefaultTextModel, &u.DefaultTextModel},
		{"default_image_model", ws.DefaultImageModel, &u.DefaultImageModel}, {"default_provider_sort", ws.DefaultProviderSort, &u.DefaultProviderSort},
	} {
		if v := f.get(t.name); v != deref(t.cur) {
			*t.dst = patchOf(optional(v))
		}
	}
	rate, err := strconv.ParseFloat(f.get("io_logging_sampling_rate"), 64)
	if err != nil {
		return u, gatehouse.FieldError("io_logging_sampling_rate", "must be a number between 0.0001 and 1, such as 0.25")
	}
	if rate != ws.IOLoggingSamplingRate {
		u.IOLoggingSamplingRate = gatehouse.Val(rate)
	}
	current := workspaceSwitches(ws)
	for name, dst := range map[string]*gatehouse.Patch[bool]{
		"is_data_discount_logging_enabled": &u.IsDataDiscountLoggingEnabled, "is_observability_io_logging_enabled": &u.IsObservabilityIOLoggingEnabled, "include_byok_in_budgets": &u.IncludeBYOKInBudgets,
	} {
		if on := f.get(name) == "on"; on != *current[name] {
			*dst = gatehouse.Val(on)
		}
	}
	return u, nil
}

// sameSet reports whether a and b hold the same strings, in any order
// (the boxes of a form come in the page's order, not the stored one's).
func sameSet(a, b []string) bool {
	return slices.Equal(slices.Sorted(slices.Values(a)), slices.Sorted(slices.Values(b)))
}

// optional is nil for "", else v.
func optional(v string) *string {
	if v == "" {
		return nil
	}
	return &v
}

func deref(p *string) string {
	if p == nil {
		return ""
	}
	return *p
}

func nilIfEmpty[T any](s []T) *[]T {
	if len(s) == 0 {
		return nil
	}
	return &s
}

// splitList splits what someone typed into a list: entries separated by
// commas, semicolons, spaces or lines, without empty ones.
func splitList(v string) []string {
	return strings.FieldsFunc(v, func(c rune) bool {
		return c == ',' || c == ';' || c == ' ' || c == '\n' || c == '\r' || c == '\t'
	})
}

// deleteWorkspace deletes a workspace once the form's box is ticked (for
// the default workspace, a second box too); the domain's preconditions
// are explained on the page when they block.
func (s *Server) deleteWorkspace(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	ws, err := s.findWorkspace(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	if f.get("confirm") != "yes" {
		f.Errors["confirm"] = "Tick the box to confirm: a deleted workspace cannot be brought back."
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{delete: f})
	}
	err = s.store.DeleteWorkspace(r.Context(), sess.OrganizationID, ws.ID, f.get("confirm_default") == "yes")
	if err != nil {
		if err := f.withError(err); err != nil {
			return err
		}
		f.Error = deletionBlocked(ws, err, f.Error)
		return s.workspacePage(w, r, sess, http.StatusBadRequest, ws, workspaceForms{delete: f})
	}
	http.Redirect(w, r, "/workspaces?done=deleted", http.StatusSeeOther)
	return nil
}

// deletionBlocked says in plain words why the domain refused to delete
// ws (CheckWorkspaceDeletion): msg is its message.
func deletionBlocked(ws *gatehouse.Workspace, err error, msg string) string {
	if e, ok := errors.AsType[*gatehouse.Error](err); ok {
		if n, ok := e.Metadata["active_key_count"].(int); ok {
			return "The workspace still holds " + strconv.Itoa(n) + " active " + plural(n, "key", "keys") +
				": deleting it would stop them without a word to whoever uses them. Disable or delete them first (the link below lists them)."
		}
	}
	if ws.IsDefault {
		return "This is the default workspace, where keys go when no workspace is named. Tick the second box too to delete it; the oldest remaining workspace becomes the default."
	}
	return msg
}

func plural(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
