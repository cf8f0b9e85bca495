package console

import (
	"context"
	"net/url"
	"slices"

	"gatehouse"
)

// keyFilters narrow the keys page to one workspace's keys (?workspace=ID)
// and, for an admin, to one member's (?member=ID): where the workspace
// pages send someone to find the keys that block a change. A member's
// list stays theirs whatever the filters.
type keyFilters struct {
	WorkspaceID, Workspace string
	UserID, Member         string
}

// keyFilters reads the filters of the keys page into search.
func (s *Server) keyFilters(ctx context.Context, sess *gatehouse.Session, q url.Values, search *gatehouse.KeySearch) (keyFilters, error) {
	var f keyFilters
	if ref := q.Get("workspace"); ref != "" {
		ws, err := s.filterWorkspace(ctx, sess, ref)
		if err != nil {
			return f, err
		}
		f.WorkspaceID, f.Workspace, search.WorkspaceID = ws.ID, ws.Name, ws.ID
	}
	if id := q.Get("member"); id != "" && sess.IsAdmin() {
		members, err := s.store.FindMembersByRef(ctx, sess.OrganizationID, []string{id})
		if err != nil {
			return f, err
		}
		i := slices.IndexFunc(members, func(m *gatehouse.Member) bool { return m.ID == id })
		if i < 0 {
			return f, gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such member.")
		}
		f.UserID, f.Member, search.CreatorUserID = id, members[i].Email, &id
	}
	return f, nil
}

// filterWorkspace returns the workspace ref names: any of the
// organization's for an admin, one they belong to for a member (else
// ENOTFOUND: a member learns nothing of the others).
func (s *Server) filterWorkspace(ctx context.Context, sess *gatehouse.Session, ref string) (*gatehouse.Workspace, error) {
	if sess.IsAdmin() {
		return s.findWorkspace(ctx, sess, ref)
	}
	theirs, err := s.keyWorkspaces(ctx, sess)
	if err != nil {
		return nil, err
	}
	for _, w := range theirs {
		if w.ID == ref || w.Slug == ref {
			return w, nil
		}
	}
	return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such workspace.")
}

// Any reports whether a filter is set.
func (f keyFilters) Any() bool { return f.WorkspaceID != "" || f.UserID != "" }

// values are the filters as query parameters.
func (f keyFilters) values() url.Values {
	v := url.Values{}
	if f.WorkspaceID != "" {
		v.Set("workspace", f.WorkspaceID)
	}
	if f.UserID != "" {
		v.Set("member", f.UserID)
	}
	return v
}

// First is the link to the first page of the list with the filters and
// the search q.
func (f keyFilters) First(q string) string {
	v := f.values()
	if q != "" {
		v.Set("q", q)
	}
	if len(v) == 0 {
		return "/keys"
	}
	return "/keys?" + v.Encode()
}
