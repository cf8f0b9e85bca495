package httpapi

import (
	"net/http"

	"gatehouse"
)

// createCodeRequest is the body of a code creation. Only limit and
// expires_at take null; the other optional fields are absent or set.
type createCodeRequest struct {
	CallbackURL         string             `json:"callback_url"`
	CodeChallenge       *string            `json:"code_challenge" null:"no"`
	CodeChallengeMethod *string            `json:"code_challenge_method" null:"no"`
	Limit               *gatehouse.Money   `json:"limit"`
	UsageLimitType      gatehouse.Interval `json:"usage_limit_type" null:"no"`
	ExpiresAt           *timestamp         `json:"expires_at"`
	KeyLabel            *string            `json:"key_label" null:"no"`
	WorkspaceID         string             `json:"workspace_id"`
}

type authCodeJSON struct {
	ID        string   `json:"id"`
	AppID     int64    `json:"app_id"`
	CreatedAt jsonTime `json:"created_at"`
}

func (s *Server) createAuthCode(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req createCodeRequest
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if err := s.checkCodeWorkspace(r, p, &req); err != nil {
		return err
	}
	code, err := s.store.CreateAuthCode(r.Context(), p.org(), p.key.CreatorUserID, gatehouse.AuthCodeCreate{
		CallbackURL: req.CallbackURL, CodeChallenge: req.CodeChallenge, CodeChallengeMethod: req.CodeChallengeMethod,
		Limit: req.Limit, UsageLimitType: req.UsageLimitType, ExpiresAt: req.ExpiresAt.ptr(),
		KeyLabel: req.KeyLabel, WorkspaceID: req.WorkspaceID,
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[authCodeJSON]{authCodeJSON{
		ID: code.ID, AppID: code.AppID, CreatedAt: newJSONTime(code.CreatedAt)}})
}

// checkCodeWorkspace keeps a regular key to its own workspace: the key it
// lets an application obtain lands there (also when the request names none).
// Management keys may name any workspace of their organization.
func (s *Server) checkCodeWorkspace(r *http.Request, p *principal, req *createCodeRequest) error {
	if p.key.Management {
		return nil
	}
	if req.WorkspaceID == "" {
		req.WorkspaceID = p.key.WorkspaceID
		return nil
	}
	ws, err := s.store.FindWorkspace(r.Context(), p.org(), req.WorkspaceID)
	if err != nil {
		return err
	}
	if ws.ID != p.key.WorkspaceID {
		return gatehouse.Errorf(gatehouse.EFORBIDDEN, "a regular key can only create authorization codes for its own workspace")
	}
	return nil
}

type exchangeResponse struct {
	Key    string  `json:"key"`
	UserID *string `json:"user_id"`
}

func (s *Server) exchangeAuthCode(w http.ResponseWriter, r *http.Request) error {
	var x gatehouse.AuthCodeExchange
	if err := decode(w, r, &x); err != nil {
		return err
	}
	key, userID, err := s.store.ExchangeAuthCode(r.Context(), x)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, exchangeResponse{Key: key, UserID: userID})
}
