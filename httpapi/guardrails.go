package httpapi

import (
	"net/http"

	"gatehouse"
)

func (s *Server) listGuardrails(w http.ResponseWriter, r *http.Request, p *principal) error {
	page, err := pageParams(r)
	if err != nil {
		return err
	}
	gs, total, err := s.store.FindGuardrails(r.Context(), p.org(), r.URL.Query().Get("workspace_id"), page)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, listOf(gs, total, appendGuardrail))
}

func (s *Server) createGuardrail(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.GuardrailCreate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	g, err := s.store.CreateGuardrail(r.Context(), p.org(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[guardrailJSON]{toGuardrailJSON(g)})
}

func (s *Server) getGuardrail(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "guardrail")
	if err != nil {
		return err
	}
	g, err := s.store.FindGuardrail(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataOf(func(b []byte) []byte { return appendGuardrail(b, g) }))
}

func (s *Server) updateGuardrail(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "guardrail")
	if err != nil {
		return err
	}
	var req gatehouse.GuardrailUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	g, err := s.store.UpdateGuardrail(r.Context(), p.org(), id, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[guardrailJSON]{toGuardrailJSON(g)})
}

func (s *Server) deleteGuardrail(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "guardrail")
	if err != nil {
		return err
	}
	if err := s.store.DeleteGuardrail(r.Context(), p.org(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

// guardrailPath returns the guardrail id of an assignment route; "" for the
// organization-wide lists, which have no id segment.
func guardrailPath(r *http.Request) (string, error) {
	if r.PathValue("id") == "" {
		return "", nil
	}
	return uuidPath(r, "id", "guardrail")
}

func (s *Server) listKeyAssignments() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.KeyAssignment, int, error) {
		id, err := guardrailPath(r)
		if err != nil {
			return nil, 0, err
		}
		return s.store.FindKeyAssignments(r.Context(), p.org(), id, page)
	}, toKeyAssignmentJSON)
}

func (s *Server) listMemberAssignments() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.MemberAssignment, int, error) {
		id, err := guardrailPath(r)
		if err != nil {
			return nil, 0, err
		}
		return s.store.FindMemberAssignments(r.Context(), p.org(), id, page)
	}, toMemberAssignmentJSON)
}

type keyHashesRequest struct {
	KeyHashes []string `json:"key_hashes"`
}

type memberIDsRequest struct {
	MemberUserIDs []string `json:"member_user_ids"`
}

type assignedJSON struct {
	AssignedCount int `json:"assigned_count"`
}

type unassignedJSON struct {
	UnassignedCount int `json:"unassigned_count"`
}

// bulkGuardrail serves one of the bulk assignment operations: it decodes a
// body of type Req, passes its ids to op with the guardrail of the path, and
// answers with op's count as counted(n).
func bulkGuardrail[Req any](ids func(*Req) []string, op func(r *http.Request, p *principal, guardrailID string, ids []string) (int, error), counted func(int) any) authHandler {
	return func(w http.ResponseWriter, r *http.Request, p *principal) error {
		id, err := uuidPath(r, "id", "guardrail")
		if err != nil {
			return err
		}
		var req Req
		if err := decode(w, r, &req); err != nil {
			return err
		}
		n, err := op(r, p, id, ids(&req))
		if err != nil {
			return err
		}
		return writeJSON(w, http.StatusOK, counted(n))
	}
}

func keyHashes(r *keyHashesRequest) []string     { return r.KeyHashes }
func memberUserIDs(r *memberIDsRequest) []string { return r.MemberUserIDs }
func assigned(n int) any                         { return assignedJSON{n} }
func unassigned(n int) any                       { return unassignedJSON{n} }

func (s *Server) assignKeys() authHandler {
	return bulkGuardrail(keyHashes, func(r *http.Request, p *principal, id string, ids []string) (int, error) {
		return s.store.AssignKeys(r.Context(), p.org(), id, ids, p.key.CreatorUserID)
	}, assigned)
}

func (s *Server) unassignKeys() authHandler {
	return bulkGuardrail(keyHashes, func(r *http.Request, p *principal, id string, ids []string) (int, error) {
		return s.store.UnassignKeys(r.Context(), p.org(), id, ids)
	}, unassigned)
}

func (s *Server) assignMembers() authHandler {
	return bulkGuardrail(memberUserIDs, func(r *http.Request, p *principal, id string, ids []string) (int, error) {
		return s.store.AssignMembers(r.Context(), p.org(), id, ids, p.key.CreatorUserID)
	}, assigned)
}

func (s *Server) unassignMembers() authHandler {
	return bulkGuardrail(memberUserIDs, func(r *http.Request, p *principal, id string, ids []string) (int, error) {
		return s.store.UnassignMembers(r.Context(), p.org(), id, ids)
	}, unassigned)
}
