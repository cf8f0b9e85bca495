package httpapi

import (
	"net/http"

	"gatehouse"
)

func (s *Server) listWorkspaces() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.Workspace, int, error) {
		return s.store.FindWorkspaces(r.Context(), p.org(), page)
	}, toWorkspaceJSON)
}

func (s *Server) createWorkspace(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.WorkspaceUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ws, err := s.store.CreateWorkspace(r.Context(), p.org(), req, p.key.CreatorUserID)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[workspaceJSON]{toWorkspaceJSON(ws)})
}

func (s *Server) getWorkspace(w http.ResponseWriter, r *http.Request, p *principal) error {
	ref, err := workspaceRef(r)
	if err != nil {
		return err
	}
	ws, err := s.store.FindWorkspace(r.Context(), p.org(), ref)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[workspaceJSON]{toWorkspaceJSON(ws)})
}

// workspaceRef returns the workspace reference in the path: a UUID in its
// canonical 36-character form, or a slug. Anything else cannot name a
// workspace, so it is 404 like an unknown one (a store would read the other
// forms uuid.Parse accepts, such as {uuid} or urn:uuid:..., as the UUID).
func workspaceRef(r *http.Request) (string, error) {
	ref := r.PathValue("id")
	if _, _, ok := gatehouse.ParseWorkspaceRef(ref); !ok {
		return "", gatehouse.NotFound("workspace", ref)
	}
	return ref, nil
}

func (s *Server) updateWorkspace(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.WorkspaceUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ref, err := workspaceRef(r)
	if err != nil {
		return err
	}
	ws, err := s.store.UpdateWorkspace(r.Context(), p.org(), ref, req)
	s.destinationsChanged() // its I/O logging decides what its destinations are sent
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[workspaceJSON]{toWorkspaceJSON(ws)})
}

func (s *Server) deleteWorkspace(w http.ResponseWriter, r *http.Request, p *principal) error {
	confirm, err := boolParam(r, "confirm_default_workspace_deletion")
	if err != nil {
		return err
	}
	ref, err := workspaceRef(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteWorkspace(r.Context(), p.org(), ref, confirm); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

func (s *Server) listWorkspaceMembers() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.WorkspaceMember, int, error) {
		ref, err := workspaceRef(r)
		if err != nil {
			return nil, 0, err
		}
		return s.store.FindWorkspaceMembers(r.Context(), p.org(), ref, page)
	}, toWorkspaceMemberJSON)
}

type userIDsRequest struct {
	UserIDs []string `json:"user_ids"`
}

type addMembersResponse struct {
	AddedCount int                   `json:"added_count"`
	Data       []workspaceMemberJSON `json:"data"`
}

func (s *Server) addWorkspaceMembers(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req userIDsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ref, err := workspaceRef(r)
	if err != nil {
		return err
	}
	added, list, err := s.store.AddWorkspaceMembers(r.Context(), p.org(), ref, req.UserIDs)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, addMembersResponse{added, mapSlice(list, toWorkspaceMemberJSON)})
}

type removeMembersResponse struct {
	RemovedCount int `json:"removed_count"`
}

func (s *Server) removeWorkspaceMembers(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req userIDsRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	ref, err := workspaceRef(r)
	if err != nil {
		return err
	}
	removed, err := s.store.RemoveWorkspaceMembers(r.Context(), p.org(), ref, req.UserIDs)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, removeMembersResponse{removed})
}
