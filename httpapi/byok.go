package httpapi

import (
	"net/http"

	"gatehouse"
)

// byokKeyJSON is a BYOK key as the official clients read it: its provider
// key never, its label (the key masked) always.
type byokKeyJSON struct {
	ID                  string   `json:"id"`
	WorkspaceID         string   `json:"workspace_id"`
	Provider            string   `json:"provider"`
	Name                *string  `json:"name"`
	Label               string   `json:"label"`
	Disabled            bool     `json:"disabled"`
	AllowedAPIKeyHashes []string `json:"allowed_api_key_hashes"`
	AllowedModels       []string `json:"allowed_models"`
	AllowedUserIDs      []string `json:"allowed_user_ids"`
	DeclaredZDR         *bool    `json:"declared_zdr"`
	IsBYOKOnly          bool     `json:"is_byok_only"`
	IsFallback          bool     `json:"is_fallback"`
	IsRequired          bool     `json:"is_required"`
	SortOrder           int      `json:"sort_order"`
	CreatedAt           jsonTime `json:"created_at"`
}

// toBYOKKeyJSON renders a BYOK key; k.Key is not read.
func toBYOKKeyJSON(k *gatehouse.BYOKKey) byokKeyJSON {
	return byokKeyJSON{
		ID: k.ID, WorkspaceID: k.WorkspaceID, Provider: k.Provider, Name: k.Name, Label: k.Label, Disabled: k.Disabled,
		AllowedAPIKeyHashes: k.AllowedAPIKeyHashes, AllowedModels: k.AllowedModels, AllowedUserIDs: k.AllowedUserIDs,
		DeclaredZDR: k.DeclaredZDR, IsBYOKOnly: k.IsBYOKOnly, IsFallback: k.IsFallback, IsRequired: k.IsRequired,
		SortOrder: k.SortOrder, CreatedAt: newJSONTime(k.CreatedAt),
	}
}

func (s *Server) listBYOKKeys() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.BYOKKey, int, error) {
		q := r.URL.Query()
		prov := q.Get("provider")
		if prov != "" && !gatehouse.IsProviderID(prov) {
			return nil, 0, gatehouse.FieldError("provider", "must be a provider id: 1 to 64 lowercase letters, digits and dashes")
		}
		return s.store.FindBYOKKeys(r.Context(), p.org(), gatehouse.BYOKKeyFilter{
			WorkspaceRef: q.Get("workspace_id"), Provider: prov, Page: page})
	}, toBYOKKeyJSON)
}

func (s *Server) createBYOKKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.BYOKKeyCreate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if gatehouse.IsProviderID(req.Provider) {
		// A key for a provider this server does not serve could never be used.
		if err := s.data.Catalog.CheckBYOKProvider(req.Provider); err != nil {
			return err
		}
	}
	k, err := s.store.CreateBYOKKey(r.Context(), p.org(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[byokKeyJSON]{toBYOKKeyJSON(k)})
}

func (s *Server) getBYOKKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "byok key")
	if err != nil {
		return err
	}
	k, err := s.store.FindBYOKKey(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[byokKeyJSON]{toBYOKKeyJSON(k)})
}

func (s *Server) updateBYOKKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "byok key")
	if err != nil {
		return err
	}
	var req gatehouse.BYOKKeyUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	k, err := s.store.UpdateBYOKKey(r.Context(), p.org(), id, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[byokKeyJSON]{toBYOKKeyJSON(k)})
}

func (s *Server) deleteBYOKKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "byok key")
	if err != nil {
		return err
	}
	if err := s.store.DeleteBYOKKey(r.Context(), p.org(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}
