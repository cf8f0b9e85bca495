package console

import (
	"context"
	"net/http"
	"time"

	"gatehouse"
)

// keysPageSize is how many keys a page of the list shows.
const keysPageSize = 50

// keyRow is a key as the lists show it.
type keyRow struct {
	Key       *gatehouse.Key
	Workspace string
	// Status is "active", "disabled" or "expired".
	Status string
	// Spent is the spend that counts against the limit, in its current
	// period; Left what remains (nil without a limit).
	Spent gatehouse.Money
	Left  *gatehouse.Money
}

func newKeyRow(k *gatehouse.Key, workspaces map[string]string, now time.Time) keyRow {
	row := keyRow{Key: k, Workspace: workspaces[k.WorkspaceID], Status: "active", Left: k.LimitRemaining(now)}
	switch {
	case k.Disabled:
		row.Status = "disabled"
	case k.Expired(now):
		row.Status = "expired"
	}
	row.Spent = k.Usage.At(now).In(k.LimitReset)
	if k.IncludeBYOKInLimit {
		row.Spent += k.BYOKUsage.At(now).In(k.LimitReset)
	}
	return row
}

// keysData is the data of the keys page.
type keysData struct {
	Query string
	Keys  []keyRow
	// Next is the link to the next page, "" on the last; Later says that
	// this is not the first page.
	Next  string
	Later bool
	Form  *form
	// Workspaces are the workspaces a new key may go to.
	Workspaces []option
	// Created is the key just created, whose plaintext is shown this once.
	Created *createdKey
	// Filters narrow the list to a workspace's keys or a member's.
	Filters keyFilters
}

// createdKey is a key just created, with its plaintext.
type createdKey struct {
	Key       *gatehouse.Key
	Plaintext string
}

// keys lists the session's keys (an admin's: every key of the
// organization), newest first or by a search, a page at a time.
func (s *Server) keys(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.keysPage(w, r, sess, http.StatusOK, emptyForm(), nil)
}

// keysPage renders the keys page: the list that the URL's q and after
// select, and the create form f.
func (s *Server) keysPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, f *form, created *createdKey) error {
	ctx := r.Context()
	q := r.URL.Query()
	search := gatehouse.ParseKeyQuery(q.Get("q"))
	search.CreatorUserID, search.Limit = sess.KeyScope(), keysPageSize
	filters, err := s.keyFilters(ctx, sess, q, &search)
	if err != nil {
		return err
	}
	if after := q.Get("after"); after != "" && created == nil {
		c, err := gatehouse.ParseKeyCursor(after)
		if err != nil {
			return err
		}
		search.After = c
	}
	page, err := s.store.SearchKeys(ctx, sess.OrganizationID, search)
	if err != nil {
		return err
	}
	allowed, err := s.keyWorkspaces(ctx, sess)
	if err != nil {
		return err
	}
	names := workspaceNames(allowed)
	data := keysData{Query: q.Get("q"), Form: f, Workspaces: workspaceOptions(allowed), Created: created, Later: search.After != nil,
		Filters: filters}
	for _, k := range page.Keys {
		data.Keys = append(data.Keys, newKeyRow(k, names, s.now()))
	}
	if page.Next != nil {
		next := filters.values()
		next.Set("q", data.Query)
		next.Set("after", page.Next.String())
		data.Next = "/keys?" + next.Encode()
	}
	return s.render(w, r, sess, status, "keys", "Keys", data)
}

// keyWorkspaces are the workspaces the session may put keys in: every
// workspace of the organization for an admin (the first MaxPageSize),
// those they belong to for a member.
func (s *Server) keyWorkspaces(ctx context.Context, sess *gatehouse.Session) ([]*gatehouse.Workspace, error) {
	if sess.IsAdmin() {
		ws, _, err := s.store.FindWorkspaces(ctx, sess.OrganizationID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
		return ws, err
	}
	return s.store.FindMemberWorkspaces(ctx, sess.OrganizationID, *sess.KeyScope())
}

func workspaceNames(ws []*gatehouse.Workspace) map[string]string {
	out := make(map[string]string, len(ws))
	for _, w := range ws {
		out[w.ID] = w.Name
	}
	return out
}

// workspaceOptions are the choices of a workspace: the default one first
// (its value "", however it is named), then the others in order.
func workspaceOptions(ws []*gatehouse.Workspace) []option {
	out := make([]option, 0, len(ws))
	for _, w := range ws {
		if w.IsDefault {
			out = append([]option{{Value: "", Label: w.Name}}, out...)
		} else {
			out = append(out, option{Value: w.ID, Label: w.Name})
		}
	}
	return out
}

// createKey creates a key for the session's member (none for a management
// key's session) and shows its plaintext, this once.
func (s *Server) createKey(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	c, err := s.keyCreate(r.Context(), sess, f)
	if err == nil {
		var k *gatehouse.Key
		var plaintext string
		k, plaintext, err = s.store.CreateKey(r.Context(), sess.OrganizationID, c)
		if err == nil {
			return s.keysPage(w, r, sess, http.StatusCreated, emptyForm(), &createdKey{Key: k, Plaintext: plaintext})
		}
	}
	if err := f.withError(err, "name", "limit", "limit_reset", "expires_at", "workspace"); err != nil {
		return err
	}
	return s.keysPage(w, r, sess, http.StatusBadRequest, f, nil)
}

// keyCreate reads the create form.
func (s *Server) keyCreate(ctx context.Context, sess *gatehouse.Session, f *form) (gatehouse.KeyCreate, error) {
	c := gatehouse.KeyCreate{Name: f.get("name"), CreatorUserID: sess.UserID}
	var err error
	if c.Limit, err = f.money("limit"); err != nil {
		return c, err
	}
	if c.LimitReset, err = f.interval("limit_reset"); err != nil {
		return c, err
	}
	if c.ExpiresAt, err = f.date("expires_at"); err != nil {
		return c, err
	}
	allowed, err := s.keyWorkspaces(ctx, sess)
	if err != nil {
		return c, err
	}
	ws, err := gatehouse.ChooseWorkspace(allowed, "workspace", f.get("workspace"))
	if err != nil {
		return c, err
	}
	c.WorkspaceID = ws.ID
	return c, nil
}
