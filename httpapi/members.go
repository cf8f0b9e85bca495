package httpapi

import (
	"net/http"

	"gatehouse"
)

func (s *Server) listMembers() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.Member, int, error) {
		return s.store.FindMembers(r.Context(), p.org(), page)
	}, toMemberJSON)
}

type addMemberRequest struct {
	ID        *string `json:"id" null:"no"` // absent: generated; never empty
	Email     string  `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Role      *string `json:"role" null:"no"` // absent: org:member; never empty
}

func (s *Server) addMember(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req addMemberRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	var id string
	if req.ID != nil {
		if id = *req.ID; id == "" {
			return gatehouse.FieldError("id", "must not be empty; leave it out to have one generated")
		}
	}
	role, err := givenRole(req.Role)
	if err != nil {
		return err
	}
	m, err := s.store.CreateMember(r.Context(), p.org(), gatehouse.MemberCreate{
		ID: id, Email: req.Email, FirstName: req.FirstName, LastName: req.LastName, Role: role})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[memberJSON]{toMemberJSON(m)})
}

func (s *Server) removeMember(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.store.DeleteMember(r.Context(), p.org(), r.PathValue("user_id")); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

// givenRole returns the role a request names, "" when it names none: a
// role that is given must be one, "" included.
func givenRole(role *string) (string, error) {
	if role == nil {
		return "", nil
	}
	return *role, gatehouse.ValidateRole("role", *role, false)
}
