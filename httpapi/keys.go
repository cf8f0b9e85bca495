package httpapi

import (
	"net/http"

	"gatehouse"
)

func (s *Server) getCurrentKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	// The key that authenticated may come from a cache entry whose usage
	// figures have changed since; a fresh read may not.
	s.settled(r.Context())
	k, err := s.store.FindKeyByHash(gatehouse.WithFreshReads(r.Context()), p.key.Hash)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND { // deleted since it authenticated
		return gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "invalid API key")
	}
	if err != nil {
		return err
	}
	now := s.now()
	return writeJSON(w, http.StatusOK, dataOf(func(b []byte) []byte { return appendCurrentKey(b, k, now) }))
}

func (s *Server) listKeys(w http.ResponseWriter, r *http.Request, p *principal) error {
	includeDisabled, err := boolParam(r, "include_disabled")
	if err != nil {
		return err
	}
	offset, err := intParam(r.URL.Query(), "offset", 0, 0, maxOffset)
	if err != nil {
		return err
	}
	// The official client sends no limit and reads up to 100 keys a page;
	// a smaller page may be asked for.
	limit, err := intParam(r.URL.Query(), "limit", gatehouse.MaxKeysPerList, 1, gatehouse.MaxKeysPerList)
	if err != nil {
		return err
	}
	s.settled(r.Context())
	keys, err := s.store.FindKeys(r.Context(), p.org(), gatehouse.KeyFilter{
		WorkspaceID: r.URL.Query().Get("workspace_id"), IncludeDisabled: includeDisabled,
		Offset: offset, Limit: limit,
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[[]keyJSON]{mapSlice(keys, s.keyJSON)})
}

type createKeyRequest struct {
	Name               string                 `json:"name"`
	Limit              *gatehouse.Money       `json:"limit"`
	LimitReset         gatehouse.Interval     `json:"limit_reset"`
	IncludeBYOKInLimit bool                   `json:"include_byok_in_limit"`
	ExpiresAt          *timestamp             `json:"expires_at"`
	CreatorUserID      *string                `json:"creator_user_id"`
	WorkspaceID        string                 `json:"workspace_id"`
	External           *gatehouse.ExternalKey `json:"external" null:"no"`
}

type createKeyResponse struct {
	Data keyJSON `json:"data"`
	Key  string  `json:"key"`
}

func (s *Server) createKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req createKeyRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	k, plaintext, err := s.store.CreateKey(r.Context(), p.org(), gatehouse.KeyCreate{
		Name: req.Name, Limit: req.Limit, LimitReset: req.LimitReset, IncludeBYOKInLimit: req.IncludeBYOKInLimit,
		ExpiresAt: req.ExpiresAt.ptr(), CreatorUserID: req.CreatorUserID, WorkspaceID: req.WorkspaceID,
		External: req.External,
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, createKeyResponse{Data: s.keyJSON(k), Key: plaintext})
}

func (s *Server) getKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	hash, err := keyHashPath(r)
	if err != nil {
		return err
	}
	s.settled(r.Context())
	k, err := s.store.FindKey(r.Context(), p.org(), hash)
	if err != nil {
		return err
	}
	now := s.now()
	return writeJSON(w, http.StatusOK, dataOf(func(b []byte) []byte { return appendKey(b, k, now) }))
}

func (s *Server) updateKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	hash, err := keyHashPath(r)
	if err != nil {
		return err
	}
	var u gatehouse.KeyUpdate
	if err := decode(w, r, &u); err != nil {
		return err
	}
	k, err := s.store.UpdateKey(r.Context(), p.org(), hash, u)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[keyJSON]{s.keyJSON(k)})
}

func (s *Server) deleteKey(w http.ResponseWriter, r *http.Request, p *principal) error {
	hash, err := keyHashPath(r)
	if err != nil {
		return err
	}
	if err := s.store.DeleteKey(r.Context(), p.org(), hash); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}
