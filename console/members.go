package console

import (
	"net/http"
	"strconv"

	"gatehouse"
)

// membersPageSize is how many members a page of the list shows.
const membersPageSize = 50

// membersData is the data of the members page.
type membersData struct {
	Members     []*gatehouse.Member
	Invitations []*gatehouse.Invitation
	Total       int
	// Offset is the first member shown; Prev and Next link the pages
	// around ("" where there is none).
	Offset     int
	Prev, Next string
	Form       *form
	// Link is a new invitation or reset link, shown this once, for Email.
	Link, LinkEmail string
	Roles           []option
}

// roles are the roles a member may have.
var roles = []option{{Value: gatehouse.RoleMember, Label: "member"}, {Value: gatehouse.RoleAdmin, Label: "admin"}}

// members lists the organization's members and its pending links.
func (s *Server) members(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.membersPage(w, r, sess, http.StatusOK, emptyForm(), "", "")
}

// membersPage renders the members page with the invitation form f and,
// when link is set, the new link for email.
func (s *Server) membersPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, f *form, link, email string) error {
	ctx := r.Context()
	offset, _ := strconv.Atoi(r.URL.Query().Get("offset"))
	offset = max(offset, 0)
	list, total, err := s.store.FindMembers(ctx, sess.OrganizationID, gatehouse.Page{Offset: offset, Limit: membersPageSize})
	if err != nil {
		return err
	}
	invitations, _, err := s.store.FindInvitations(ctx, sess.OrganizationID, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if err != nil {
		return err
	}
	data := membersData{Members: list, Invitations: invitations, Total: total, Offset: offset, Form: f,
		Link: link, LinkEmail: email, Roles: roles}
	if offset > 0 {
		data.Prev = "/members?offset=" + strconv.Itoa(max(offset-membersPageSize, 0))
	}
	if offset+len(list) < total {
		data.Next = "/members?offset=" + strconv.Itoa(offset+membersPageSize)
	}
	return s.render(w, r, sess, status, "members", "Members", data)
}

// invite creates an invitation link (or, for a member's email, a link
// that sets their password) and shows it, this once.
func (s *Server) invite(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	inv, token, err := s.store.CreateInvitation(r.Context(), sess.OrganizationID,
		gatehouse.InvitationCreate{Email: f.get("email"), Role: f.get("role")})
	if err != nil {
		if err := f.withError(err, "email", "role"); err != nil {
			return err
		}
		return s.membersPage(w, r, sess, http.StatusBadRequest, f, "", "")
	}
	return s.membersPage(w, r, sess, http.StatusCreated, emptyForm(), s.link(r, token), inv.Email)
}

// link is the URL of an invitation or reset link's token.
func (s *Server) link(r *http.Request, token string) string {
	base := s.opts.PublicURL
	if base == "" {
		base = s.origin(r)
	}
	return gatehouse.InvitationURL(base, token)
}

// changeRole makes a member an admin or a member.
func (s *Server) changeRole(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	if _, err := s.store.UpdateMemberRole(r.Context(), sess.OrganizationID, r.PathValue("id"), f.get("role")); err != nil {
		return s.membersFailed(w, r, sess, err)
	}
	http.Redirect(w, r, "/members?done=role", http.StatusSeeOther)
	return nil
}

// resetPassword removes a member's password, ends their sessions, and
// shows the link that sets a new one, this once.
func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	inv, token, err := s.store.ResetPassword(r.Context(), sess.OrganizationID, r.PathValue("id"))
	if err != nil {
		return s.membersFailed(w, r, sess, err)
	}
	return s.membersPage(w, r, sess, http.StatusCreated, emptyForm(), s.link(r, token), inv.Email)
}

// removeMember removes a member from the organization once the form's
// confirmation box is ticked (refused while they hold active keys).
func (s *Server) removeMember(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	if f.get("confirm") != "yes" {
		return s.membersFailed(w, r, sess, gatehouse.Errorf(gatehouse.EINVALID, "Tick the box to confirm the removal."))
	}
	if err := s.store.DeleteMember(r.Context(), sess.OrganizationID, r.PathValue("id")); err != nil {
		return s.membersFailed(w, r, sess, err)
	}
	http.Redirect(w, r, "/members?done=removed", http.StatusSeeOther)
	return nil
}

// revokeInvitation revokes a pending link.
func (s *Server) revokeInvitation(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	if err := s.store.DeleteInvitation(r.Context(), sess.OrganizationID, r.PathValue("id")); err != nil {
		return err
	}
	http.Redirect(w, r, "/members?done=revoked", http.StatusSeeOther)
	return nil
}

// membersFailed shows the members page with a refused change's reason
// (the last admin made a member, a member with active keys removed...).
func (s *Server) membersFailed(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, err error) error {
	f := emptyForm()
	if err := f.withError(err); err != nil {
		return err
	}
	f.Error = "Not done: " + f.Error
	return s.membersPage(w, r, sess, http.StatusBadRequest, f, "", "")
}
