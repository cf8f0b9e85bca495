package console

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"

	"gatehouse"
)

// assignmentsPageSize is how many assignments of each kind a guardrail's
// page shows.
const assignmentsPageSize = gatehouse.MaxPageSize

// guardrailData is the data of a guardrail's page.
type guardrailData struct {
	Guardrail *gatehouse.Guardrail
	Workspace *gatehouse.Workspace
	Form      *form
	Resets    []option
	Regions   []option

	Keys            []*gatehouse.KeyAssignment
	KeysTotal       int
	Members         []memberAssignment
	MembersTotal    int
	AssignKeys      *form
	AssignMembers   *form
	UnassignKeys    *form
	UnassignMembers *form
	Delete          *form
}

// memberAssignment is a member's assignment with their email.
type memberAssignment struct {
	*gatehouse.MemberAssignment
	Email string
}

// guardrailForms are the forms of a guardrail's page that a POST filled in.
type guardrailForms struct {
	edit, assignKeys, assignMembers, unassignKeys, unassignMembers, delete *form
}

// findGuardrail returns the guardrail of the path's {id}, or ENOTFOUND.
func (s *Server) findGuardrail(ctx context.Context, sess *gatehouse.Session, id string) (*gatehouse.Guardrail, error) {
	notFound := gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no such guardrail.")
	if !isUUID(id) {
		return nil, notFound
	}
	g, err := s.store.FindGuardrail(ctx, sess.OrganizationID, id)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, notFound
	}
	return g, err
}

// isUUID reports whether s is a UUID in its canonical form (what ids of
// guardrails and destinations are).
func isUUID(s string) bool {
	id, _, ok := gatehouse.ParseWorkspaceRef(s)
	return ok && id == s
}

// guardrail shows a guardrail: its settings, its assignments, its deletion.
func (s *Server) guardrail(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	g, err := s.findGuardrail(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.guardrailPage(w, r, sess, http.StatusOK, g, guardrailForms{})
}

func (s *Server) guardrailPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, g *gatehouse.Guardrail, fs guardrailForms) error {
	ctx := r.Context()
	ws, err := s.store.FindWorkspace(ctx, sess.OrganizationID, g.WorkspaceID)
	if err != nil {
		return err
	}
	data := guardrailData{Guardrail: g, Workspace: ws, Form: orForm(fs.edit, func() *form { return guardrailForm(g) }),
		Resets: guardrailResets, AssignKeys: orForm(fs.assignKeys, emptyForm), AssignMembers: orForm(fs.assignMembers, emptyForm),
		UnassignKeys: orForm(fs.unassignKeys, emptyForm), UnassignMembers: orForm(fs.unassignMembers, emptyForm),
		Delete: orForm(fs.delete, emptyForm)}
	data.Regions = checkOptions(dataRegions, data.Form.Values["allowed_data_regions"])
	page := gatehouse.Page{Limit: assignmentsPageSize}
	if data.Keys, data.KeysTotal, err = s.store.FindKeyAssignments(ctx, sess.OrganizationID, g.ID, page); err != nil {
		return err
	}
	members, total, err := s.store.FindMemberAssignments(ctx, sess.OrganizationID, g.ID, page)
	if err != nil {
		return err
	}
	data.MembersTotal = total
	if data.Members, err = s.withEmails(ctx, sess, members); err != nil {
		return err
	}
	return s.render(w, r, sess, status, "guardrail", g.Name, data)
}

// withEmails gives member assignments their members' emails.
func (s *Server) withEmails(ctx context.Context, sess *gatehouse.Session, as []*gatehouse.MemberAssignment) ([]memberAssignment, error) {
	ids := make([]string, len(as))
	for i, a := range as {
		ids[i] = a.UserID
	}
	members, err := s.store.FindMembersByRef(ctx, sess.OrganizationID, ids)
	if err != nil {
		return nil, err
	}
	out := make([]memberAssignment, len(as))
	for i, a := range as {
		out[i] = memberAssignment{MemberAssignment: a, Email: a.UserID}
		if j := slices.IndexFunc(members, func(m *gatehouse.Member) bool { return m.ID == a.UserID }); j >= 0 {
			out[i].Email = members[j].Email
		}
	}
	return out, nil
}

// updateGuardrail changes what the edit form changed of a guardrail.
func (s *Server) updateGuardrail(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	g, err := s.findGuardrail(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u, err := guardrailUpdate(g, f)
	if err == nil {
		_, err = s.store.UpdateGuardrail(r.Context(), sess.OrganizationID, g.ID, u)
	}
	if err != nil {
		if err := f.withError(err, guardrailFields...); err != nil {
			return err
		}
		return s.guardrailPage(w, r, sess, http.StatusBadRequest, g, guardrailForms{edit: f})
	}
	http.Redirect(w, r, "/guardrails/"+g.ID+"?done=saved", http.StatusSeeOther)
	return nil
}

// deleteGuardrail deletes a guardrail and its assignments once the form's
// box is ticked.
func (s *Server) deleteGuardrail(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	g, err := s.findGuardrail(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	if f.get("confirm") != "yes" {
		f.Errors["confirm"] = "Tick the box to confirm: a deleted guardrail cannot be brought back."
		return s.guardrailPage(w, r, sess, http.StatusBadRequest, g, guardrailForms{delete: f})
	}
	if err := s.store.DeleteGuardrail(r.Context(), sess.OrganizationID, g.ID); err != nil {
		return err
	}
	http.Redirect(w, r, "/guardrails?done=deleted&workspace="+g.WorkspaceID, http.StatusSeeOther)
	return nil
}

// assignGuardrailKeys puts the keys the form names (hashes, hash prefixes,
// names or plaintexts, one a line) under the guardrail: each key holds one
// guardrail, so a key under another one moves.
func (s *Server) assignGuardrailKeys(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	g, err := s.findGuardrail(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	refs := splitLines(f.get("keys"))
	hashes, err := s.resolveKeys(r.Context(), sess, "keys", refs)
	if err == nil {
		_, err = s.store.AssignKeys(r.Context(), sess.OrganizationID, g.ID, hashes, sess.UserID)
		err = namedKeys(err, hashes, refs)
	}
	if err != nil {
		if err := f.withError(err, "keys"); err != nil {
			return err
		}
		return s.guardrailPage(w, r, sess, http.StatusBadRequest, g, guardrailForms{assignKeys: f})
	}
	http.Redirect(w, r, "/guardrails/"+g.ID+"?done=assigned#keys", http.StatusSeeOther)
	return nil
}

// splitLines splits what someone typed into its non-empty lines (key
// names may hold spaces and commas).
func splitLines(v string) []string {
	var out []string
	for _, line := range strings.Split(v, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// resolveKeys turns what was typed into key hashes: a key's plaintext, a
// hash or a prefix of one (six digits or more), or a key's exact name;
// each must name exactly one key of the organization. EINVALID naming
// field and what names none, or more than one.
func (s *Server) resolveKeys(ctx context.Context, sess *gatehouse.Session, field string, refs []string) ([]string, error) {
	if len(refs) == 0 {
		return nil, gatehouse.FieldError(field, "name at least one key: its name, or its hash (the first 12 characters will do), one a line")
	}
	if len(refs) > gatehouse.MaxBulkIDs {
		return nil, gatehouse.FieldError(field, "name at most %d keys at once", gatehouse.MaxBulkIDs)
	}
	var hashes, unknown, ambiguous []string
	for _, ref := range refs {
		matches, err := s.keysNamed(ctx, sess, ref)
		if err != nil {
			return nil, err
		}
		switch len(matches) {
		case 0:
			unknown = append(unknown, ref)
		case 1:
			hashes = append(hashes, matches[0].Hash)
		default:
			ambiguous = append(ambiguous, ref)
		}
	}
	switch {
	case len(unknown) > 0:
		return nil, gatehouse.FieldError(field, "no key is named or hashed so: %s", strings.Join(unknown, ", "))
	case len(ambiguous) > 0:
		return nil, gatehouse.FieldError(field, "more than one key is named or hashed so (give more of the hash): %s", strings.Join(ambiguous, ", "))
	}
	return hashes, nil
}

// keysNamed returns up to two keys of the session's scope that ref names:
// by its plaintext or a hash prefix, else by its exact name.
func (s *Server) keysNamed(ctx context.Context, sess *gatehouse.Session, ref string) ([]*gatehouse.Key, error) {
	search := gatehouse.ParseKeyQuery(ref)
	search.Limit, search.CreatorUserID = 2, sess.KeyScope()
	if search.HashPrefix == "" {
		search.Limit = gatehouse.MaxKeysPerList // the keys whose name starts so, among which the exact name
	}
	page, err := s.store.SearchKeys(ctx, sess.OrganizationID, search)
	if err != nil {
		if gatehouse.ErrorCode(err) == gatehouse.EINVALID {
			return nil, nil
		}
		return nil, err
	}
	if search.HashPrefix != "" {
		return page.Keys, nil
	}
	return slices.DeleteFunc(page.Keys, func(k *gatehouse.Key) bool { return k.Name != ref }), nil
}

// namedKeys rewords the refusal of keys outside the guardrail's workspace
// (its metadata key_hashes) with the keys as they were typed.
func namedKeys(err error, hashes, refs []string) error {
	e, ok := errors.AsType[*gatehouse.Error](err)
	if !ok || e.Code != gatehouse.EINVALID {
		return err
	}
	outside, _ := e.Metadata["key_hashes"].([]string)
	if len(outside) == 0 {
		return err
	}
	var names []string
	for _, h := range outside {
		if i := slices.Index(hashes, h); i >= 0 {
			names = append(names, refs[i])
		}
	}
	return gatehouse.FieldError("keys", "not keys of the guardrail's workspace (a guardrail governs the keys of its own workspace): %s; nothing was assigned",
		strings.Join(names, ", "))
}

// unassignGuardrailKeys takes the ticked keys from under the guardrail.
func (s *Server) unassignGuardrailKeys(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.unassign(w, r, sess, "key", "keys", func(ctx context.Context, id string, ids []string) error {
		_, err := s.store.UnassignKeys(ctx, sess.OrganizationID, id, ids)
		return err
	})
}

// assignGuardrailMembers puts the members the form names (emails or user
// ids) under the guardrail.
func (s *Server) assignGuardrailMembers(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	g, err := s.findGuardrail(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	ids, err := s.resolveMembers(r.Context(), sess, "members", splitList(f.get("members")))
	if err == nil {
		_, err = s.store.AssignMembers(r.Context(), sess.OrganizationID, g.ID, ids, sess.UserID)
	}
	if err != nil {
		if err := f.withError(err, "members"); err != nil {
			return err
		}
		return s.guardrailPage(w, r, sess, http.StatusBadRequest, g, guardrailForms{assignMembers: f})
	}
	http.Redirect(w, r, "/guardrails/"+g.ID+"?done=assigned#members", http.StatusSeeOther)
	return nil
}

// unassignGuardrailMembers takes the ticked members from under the
// guardrail.
func (s *Server) unassignGuardrailMembers(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.unassign(w, r, sess, "user", "members", func(ctx context.Context, id string, ids []string) error {
		_, err := s.store.UnassignMembers(ctx, sess.OrganizationID, id, ids)
		return err
	})
}

// unassign removes the assignments ticked in the form's field (each a key
// hash or a user id) with op; anchor is the page's section.
func (s *Server) unassign(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, field, anchor string,
	op func(ctx context.Context, guardrailID string, ids []string) error) error {
	g, err := s.findGuardrail(r.Context(), sess, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	ids := f.Values[field]
	if len(ids) == 0 {
		err = gatehouse.Errorf(gatehouse.EINVALID, "Tick what to take from under the guardrail first.")
	} else {
		err = op(r.Context(), g.ID, ids)
	}
	if err != nil {
		if err := f.withError(err); err != nil {
			return err
		}
		fs := guardrailForms{unassignKeys: f}
		if field == "user" {
			fs = guardrailForms{unassignMembers: f}
		}
		return s.guardrailPage(w, r, sess, http.StatusBadRequest, g, fs)
	}
	http.Redirect(w, r, "/guardrails/"+g.ID+"?done=unassigned#"+anchor, http.StatusSeeOther)
	return nil
}
