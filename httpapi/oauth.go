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
	code, err := s.store.CreateAuthCode(r.Context(), p.org(), p.key.CreatorUserID, gatehouse.AuthCodeCreate{
		CallbackURL: req.CallbackURL, CodeChallenge: req.CodeChallenge, CodeChallengeMethod: req.CodeChallengeMethod,
		Limit: req.Limit, UsageLimitType: req.UsageLimitType, ExpiresAt: req.ExpiresAt.ptr(),
		KeyLabel: req.KeyLabel, WorkspaceID: req.WorkspaceID, CreatorKeyHash: codeCreatorKey(p),
	})
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[authCodeJSON]{authCodeJSON{
		ID: code.ID, AppID: code.AppID, CreatedAt: newJSONTime(code.CreatedAt)}})
}

// codeCreatorKey returns the hash of the regular key that creates a code,
// which bounds the key the code yields (its workspace, limit, expiry and
// guardrail); "" for a management key, whose codes are bounded only by what
// they ask for, and may name any workspace of the organization.
func codeCreatorKey(p *principal) string {
	if p.key.Management {
		return ""
	}
	return p.key.Hash
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
