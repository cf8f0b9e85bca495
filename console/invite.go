package console

import (
	"net/http"

	"gatehouse"
)

// invitationData is the data of the page of an invitation or reset link.
type invitationData struct {
	Invitation *gatehouse.Invitation
	Form       *form
	// Reset says that the link sets a member's new password.
	Reset bool
}

// errLinkGone answers a link that is unknown, used, revoked or expired.
var errLinkGone = gatehouse.Errorf(gatehouse.ENOTFOUND,
	"This link is unknown, already used, revoked or expired. Ask an admin of your organization for a new one.")

// invitationPage shows the form that sets the password of the member a
// link is for.
func (s *Server) invitationPage(w http.ResponseWriter, r *http.Request) error {
	inv, err := s.store.FindInvitation(r.Context(), r.PathValue("token"))
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return errLinkGone
	} else if err != nil {
		return err
	}
	return s.render(w, r, nil, http.StatusOK, "invite", "Set your password",
		invitationData{Invitation: inv, Form: emptyForm(), Reset: inv.UserID != nil})
}

// acceptInvitation sets the password, uses the link up, and signs the
// member in.
func (s *Server) acceptInvitation(w http.ResponseWriter, r *http.Request) error {
	token := r.PathValue("token")
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	attempt, err := s.signIns.begin(r.Context(), r, s.opts.Proxies, "invitation", "")
	if err != nil {
		return err
	}
	inv, err := s.store.FindInvitation(r.Context(), token)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		attempt.failed() // a guessed link counts against the address
		return errLinkGone
	} else if err != nil {
		attempt.abandon()
		return err
	}
	password := f.Values.Get("password")
	var m *gatehouse.Member
	if password != f.Values.Get("password_again") {
		err = gatehouse.FieldError("password_again", "must be the same password again")
	} else {
		m, err = s.accounts.AcceptInvitation(r.Context(), token, password)
	}
	if err != nil {
		attempt.abandon() // a real link: its form's mistakes are no guesses
		if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return errLinkGone
		}
		if err := f.withError(err, "password", "password_again"); err != nil {
			return err
		}
		return s.render(w, r, nil, http.StatusBadRequest, "invite", "Set your password",
			invitationData{Invitation: inv, Form: f, Reset: inv.UserID != nil})
	}
	attempt.succeeded()
	sess, sessionToken, err := s.store.CreateSession(r.Context(), gatehouse.SessionCreate{OrganizationID: inv.OrganizationID, UserID: &m.ID})
	if err != nil {
		return err
	}
	s.setSession(w, r, sess, sessionToken)
	http.Redirect(w, r, "/", http.StatusSeeOther)
	return nil
}
