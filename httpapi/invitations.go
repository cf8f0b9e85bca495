package httpapi

import (
	"net/http"
	"strings"

	"gatehouse"
)

// Invitation and reset links of the console (Gatehouse extensions). A link
// is <public URL>/invite/<token>: the console serves that page, where its
// holder sets their password. The token is in the answer that made the
// link and nowhere else: lists show ids (the token's SHA-256) only.

// DefaultPublicURL is where the console is reached, in the links, unless
// SetPublicURL says otherwise.
const DefaultPublicURL = "http://127.0.0.1:8080"

// SetPublicURL sets the base URL of the links the API hands out (such as
// https://gatehouse.example.com, without a trailing slash). Call it before
// serving.
func (s *Server) SetPublicURL(u string) { s.publicURL = strings.TrimRight(u, "/") }

type invitationJSON struct {
	ID        string   `json:"id"`
	Email     string   `json:"email"`
	Role      string   `json:"role"`
	UserID    *string  `json:"user_id"`    // the member whose password it sets; null for a new member
	CreatedBy *string  `json:"created_by"` // the user of the key that made it, if any
	CreatedAt jsonTime `json:"created_at"`
	ExpiresAt jsonTime `json:"expires_at"`
}

func toInvitationJSON(v *gatehouse.Invitation) invitationJSON {
	return invitationJSON{ID: v.ID, Email: v.Email, Role: v.Role, UserID: v.UserID, CreatedBy: v.CreatedBy,
		CreatedAt: newJSONTime(v.CreatedAt), ExpiresAt: newJSONTime(v.ExpiresAt)}
}

// newInvitationJSON is a link just made: with its URL, shown once.
type newInvitationJSON struct {
	invitationJSON
	URL string `json:"url"`
}

func (s *Server) writeLink(w http.ResponseWriter, v *gatehouse.Invitation, token string) error {
	return writeJSON(w, http.StatusCreated, dataJSON[newInvitationJSON]{newInvitationJSON{toInvitationJSON(v), gatehouse.InvitationURL(s.publicURL, token)}})
}

func (s *Server) listInvitations() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.Invitation, int, error) {
		return s.store.FindInvitations(r.Context(), p.org(), page)
	}, toInvitationJSON)
}

type createInvitationRequest struct {
	Email string  `json:"email"`
	Role  *string `json:"role" null:"no"` // absent: org:member, or the member's own role
}

func (s *Server) createInvitation(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req createInvitationRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	role, err := givenRole(req.Role)
	if err != nil {
		return err
	}
	v, token, err := s.store.CreateInvitation(r.Context(), p.org(), gatehouse.InvitationCreate{Email: req.Email, Role: role})
	if err != nil {
		return err
	}
	return s.writeLink(w, v, token)
}

func (s *Server) deleteInvitation(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.store.DeleteInvitation(r.Context(), p.org(), r.PathValue("id")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

func (s *Server) resetPassword(w http.ResponseWriter, r *http.Request, p *principal) error {
	v, token, err := s.store.ResetPassword(r.Context(), p.org(), r.PathValue("user_id"))
	if err != nil {
		return err
	}
	return s.writeLink(w, v, token)
}

type updateMemberRequest struct {
	Role *string `json:"role" null:"no"` // the one field a member's update changes: required
}

func (s *Server) updateMember(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req updateMemberRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if req.Role == nil {
		return gatehouse.FieldError("role", "is required: org:admin or org:member")
	}
	m, err := s.store.UpdateMemberRole(r.Context(), p.org(), r.PathValue("user_id"), *req.Role)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[memberJSON]{toMemberJSON(m)})
}
