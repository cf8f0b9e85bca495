package httpapi

import (
	"context"
	"net/http"
	"strings"

	"gatehouse"
)

// Single sign-on and SCIM provisioning (Gatehouse extensions): an
// organization's OpenID Connect providers, how its members may sign in,
// the mappings of its identity provider's groups, its SCIM token, and the
// groups SCIM pushed (in OpenRouter's shape of GET /scim/groups).

// IssuerChecker reads an OpenID provider's discovery document
// (sso.RelyingParty.CheckIssuer): a provider is saved only when its issuer
// answers as one.
type IssuerChecker interface {
	CheckIssuer(ctx context.Context, issuerURL string) error
}

// SetIssuerChecker makes the API check a provider's issuer as it is saved;
// without one it is not checked. Call it before serving.
func (s *Server) SetIssuerChecker(c IssuerChecker) { s.issuers = c }

type ssoProviderJSON struct {
	ID                 string    `json:"id"`
	Name               string    `json:"name"`
	IssuerURL          string    `json:"issuer_url"`
	ClientID           string    `json:"client_id"`
	ClientSecret       *string   `json:"client_secret"` // masked; null for a public client
	Scopes             []string  `json:"scopes"`
	EmailClaim         string    `json:"email_claim"`
	EmailVerifiedClaim string    `json:"email_verified_claim"`
	NameClaim          string    `json:"name_claim"`
	GroupsClaim        *string   `json:"groups_claim"`
	AllowedDomains     []string  `json:"allowed_domains"`
	Enabled            bool      `json:"enabled"`
	RedirectURI        string    `json:"redirect_uri"`
	LastSignInAt       *jsonTime `json:"last_sign_in_at"`
	CreatedAt          jsonTime  `json:"created_at"`
	UpdatedAt          jsonTime  `json:"updated_at"`
}

func (s *Server) toSSOProviderJSON(p *gatehouse.SSOProvider) ssoProviderJSON {
	out := ssoProviderJSON{ID: p.ID, Name: p.Name, IssuerURL: p.IssuerURL, ClientID: p.ClientID, Scopes: p.Scopes,
		EmailClaim: p.EmailClaim, EmailVerifiedClaim: p.EmailVerifiedClaim, NameClaim: p.NameClaim,
		AllowedDomains: p.AllowedDomains, Enabled: p.Enabled, RedirectURI: gatehouse.SSORedirectURL(s.publicURL),
		LastSignInAt: jsonTimePtr(p.LastSignInAt), CreatedAt: newJSONTime(p.CreatedAt), UpdatedAt: newJSONTime(p.UpdatedAt)}
	if p.ClientSecretLabel != "" {
		out.ClientSecret = &p.ClientSecretLabel
	}
	if p.GroupsClaim != "" {
		out.GroupsClaim = &p.GroupsClaim
	}
	if out.AllowedDomains == nil {
		out.AllowedDomains = []string{}
	}
	return out
}

func (s *Server) listSSOProviders() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.SSOProvider, int, error) {
		return s.store.FindSSOProviders(r.Context(), p.org(), page)
	}, s.toSSOProviderJSON)
}

// checkProvider refuses a client secret sent back masked (it would be
// stored as the secret), then checks the issuer when one is given.
func (s *Server) checkProvider(ctx context.Context, u gatehouse.SSOProviderUpdate) error {
	if cs := u.ClientSecret; cs.Set && !cs.Null && strings.HasPrefix(cs.Value, "********") {
		return gatehouse.FieldError("client_secret", "is the masked secret: send the secret in clear to replace it, or leave the field out to keep it")
	}
	if u.IssuerURL.Set && !u.IssuerURL.Null && s.issuers != nil && gatehouse.ValidateIssuerURL(strings.TrimSpace(u.IssuerURL.Value)) == nil {
		return s.issuers.CheckIssuer(ctx, strings.TrimSpace(u.IssuerURL.Value))
	}
	return nil
}

func (s *Server) createSSOProvider(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.SSOProviderUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	if _, err := gatehouse.NewSSOProvider(req); err != nil {
		return err // before the issuer is asked anything
	}
	if err := s.checkProvider(r.Context(), req); err != nil {
		return err
	}
	v, err := s.store.CreateSSOProvider(r.Context(), p.org(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[ssoProviderJSON]{s.toSSOProviderJSON(v)})
}

func (s *Server) getSSOProvider(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "sso provider")
	if err != nil {
		return err
	}
	v, err := s.store.FindSSOProvider(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[ssoProviderJSON]{s.toSSOProviderJSON(v)})
}

func (s *Server) updateSSOProvider(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "sso provider")
	if err != nil {
		return err
	}
	var req gatehouse.SSOProviderUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	current, err := s.store.FindSSOProvider(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	if err := current.Apply(req); err != nil {
		return err // before the issuer is asked anything
	}
	if err := s.checkProvider(r.Context(), req); err != nil {
		return err
	}
	v, err := s.store.UpdateSSOProvider(r.Context(), p.org(), id, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[ssoProviderJSON]{s.toSSOProviderJSON(v)})
}

func (s *Server) deleteSSOProvider(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "sso provider")
	if err != nil {
		return err
	}
	if err := s.store.DeleteSSOProvider(r.Context(), p.org(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

type signInSettingsJSON struct {
	PasswordSignIn bool      `json:"password_sign_in"`
	UpdatedAt      *jsonTime `json:"updated_at"`
}

func toSignInSettingsJSON(v *gatehouse.SignInSettings) signInSettingsJSON {
	return signInSettingsJSON{PasswordSignIn: v.PasswordSignIn, UpdatedAt: jsonTimePtr(v.UpdatedAt)}
}

func (s *Server) getSignInSettings(w http.ResponseWriter, r *http.Request, p *principal) error {
	v, err := s.store.FindSignInSettings(r.Context(), p.org())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[signInSettingsJSON]{toSignInSettingsJSON(v)})
}

func (s *Server) updateSignInSettings(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.SignInSettingsUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	v, err := s.store.UpdateSignInSettings(r.Context(), p.org(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[signInSettingsJSON]{toSignInSettingsJSON(v)})
}

type groupMappingJSON struct {
	ID           string   `json:"id"`
	Group        string   `json:"group"`
	Role         *string  `json:"role"`
	WorkspaceIDs []string `json:"workspace_ids"`
	CreatedAt    jsonTime `json:"created_at"`
	UpdatedAt    jsonTime `json:"updated_at"`
}

func toGroupMappingJSON(m *gatehouse.GroupMapping) groupMappingJSON {
	out := groupMappingJSON{ID: m.ID, Group: m.Group, WorkspaceIDs: m.WorkspaceIDs, CreatedAt: newJSONTime(m.CreatedAt), UpdatedAt: newJSONTime(m.UpdatedAt)}
	if m.Role != "" {
		out.Role = &m.Role
	}
	if out.WorkspaceIDs == nil {
		out.WorkspaceIDs = []string{}
	}
	return out
}

func (s *Server) listGroupMappings() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.GroupMapping, int, error) {
		return s.store.FindGroupMappings(r.Context(), p.org(), page)
	}, toGroupMappingJSON)
}

func (s *Server) createGroupMapping(w http.ResponseWriter, r *http.Request, p *principal) error {
	var req gatehouse.GroupMappingUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	m, err := s.store.CreateGroupMapping(r.Context(), p.org(), req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[groupMappingJSON]{toGroupMappingJSON(m)})
}

func (s *Server) getGroupMapping(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "group mapping")
	if err != nil {
		return err
	}
	m, err := s.store.FindGroupMapping(r.Context(), p.org(), id)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[groupMappingJSON]{toGroupMappingJSON(m)})
}

func (s *Server) updateGroupMapping(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "group mapping")
	if err != nil {
		return err
	}
	var req gatehouse.GroupMappingUpdate
	if err := decode(w, r, &req); err != nil {
		return err
	}
	m, err := s.store.UpdateGroupMapping(r.Context(), p.org(), id, req)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[groupMappingJSON]{toGroupMappingJSON(m)})
}

func (s *Server) deleteGroupMapping(w http.ResponseWriter, r *http.Request, p *principal) error {
	id, err := uuidPath(r, "id", "group mapping")
	if err != nil {
		return err
	}
	if err := s.store.DeleteGroupMapping(r.Context(), p.org(), id); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

// scimTokenJSON is the organization's SCIM token as stored, with the base
// URL a provider is given.
type scimTokenJSON struct {
	Hash       string    `json:"hash"`
	URL        string    `json:"url"`
	CreatedAt  jsonTime  `json:"created_at"`
	LastUsedAt *jsonTime `json:"last_used_at"`
}

func (s *Server) toSCIMTokenJSON(t *gatehouse.SCIMToken) scimTokenJSON {
	return scimTokenJSON{Hash: t.Hash, URL: s.publicURL + "/scim/v2", CreatedAt: newJSONTime(t.CreatedAt), LastUsedAt: jsonTimePtr(t.LastUsedAt)}
}

// newSCIMTokenJSON is a token just made: with the token, shown once.
type newSCIMTokenJSON struct {
	scimTokenJSON
	Token string `json:"token"`
}

func (s *Server) getSCIMToken(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, err := s.store.FindSCIMToken(r.Context(), p.org())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, dataJSON[scimTokenJSON]{s.toSCIMTokenJSON(t)})
}

func (s *Server) createSCIMToken(w http.ResponseWriter, r *http.Request, p *principal) error {
	t, token, err := s.store.CreateSCIMToken(r.Context(), p.org())
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusCreated, dataJSON[newSCIMTokenJSON]{newSCIMTokenJSON{s.toSCIMTokenJSON(t), token}})
}

func (s *Server) deleteSCIMToken(w http.ResponseWriter, r *http.Request, p *principal) error {
	if err := s.store.DeleteSCIMToken(r.Context(), p.org()); err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, deleted)
}

// scimGroupJSON is a SCIM group in OpenRouter's shape.
type scimGroupJSON struct {
	ID             string   `json:"id"`
	OrganizationID string   `json:"organization_id"`
	ExternalID     *string  `json:"external_id"`
	DisplayName    string   `json:"display_name"`
	CreatedAt      jsonTime `json:"created_at"`
	UpdatedAt      jsonTime `json:"updated_at"`
}

func toSCIMGroupJSON(g *gatehouse.SCIMGroup) scimGroupJSON {
	return scimGroupJSON{ID: g.ID, OrganizationID: g.OrganizationID, ExternalID: g.ExternalID, DisplayName: g.DisplayName,
		CreatedAt: newJSONTime(g.CreatedAt), UpdatedAt: newJSONTime(g.UpdatedAt)}
}

func (s *Server) listSCIMGroups() authHandler {
	return list(func(r *http.Request, p *principal, page gatehouse.Page) ([]*gatehouse.SCIMGroup, int, error) {
		q := r.URL.Query() // each given once, as text (checkRequestText)
		return s.store.FindSCIMGroups(r.Context(), p.org(), gatehouse.SCIMGroupFilter{DisplayName: q.Get("display_name"),
			ExternalID: q.Get("external_id"), StartIndex: page.Offset + 1, Count: page.Limit, WithoutMembers: true})
	}, toSCIMGroupJSON)
}
