package console

import (
	"net/http"
	"strings"

	"gatehouse"
)

// The admins' page of single sign-on (/sso): the identity providers (a
// page each, /sso/providers/{id}), how members may sign in, the mappings
// of the provider's groups, the SCIM token and the groups SCIM pushed.
// Every change goes through the store as the API's do, audited with the
// session as its actor.

// ssoData is the data of the single sign-on page.
type ssoData struct {
	Providers []*gatehouse.SSOProvider
	Settings  *gatehouse.SignInSettings
	// CanTurnOff: single sign-on works (an enabled provider has signed
	// someone in), so password sign-in may be turned off.
	CanTurnOff  bool
	RedirectURI string
	// Token is the organization's SCIM token (nil: none); NewToken one
	// just made, shown this once; SCIMURL is SCIM's base URL.
	Token    *gatehouse.SCIMToken
	NewToken string
	SCIMURL  string
	Mappings []mappingRow
	Groups   []*gatehouse.SCIMGroup
	// Workspaces are the workspaces a mapping may give (not the default).
	Workspaces   []option
	Roles        []option
	ProviderForm *form
	MappingForm  *form
	Form         *form // the page's error (a refused change of the settings or the token)
}

// mappingRow is a mapping with the names of its workspaces.
type mappingRow struct {
	*gatehouse.GroupMapping
	Workspaces string
}

// mappingRoles are the roles a mapping may give.
var mappingRoles = []option{{Value: "", Label: "no role (workspaces only)"}, {Value: gatehouse.RoleMember, Label: "member"}, {Value: gatehouse.RoleAdmin, Label: "admin"}}

// ssoPage shows the page.
func (s *Server) ssoPage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.renderSSO(w, r, sess, http.StatusOK, &ssoData{})
}

// renderSSO renders the page with what data holds already (forms, a new
// token) and what the store holds.
func (s *Server) renderSSO(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, data *ssoData) error {
	ctx, org := r.Context(), sess.OrganizationID
	var err error
	if data.Providers, _, err = s.store.FindSSOProviders(ctx, org, gatehouse.Page{Limit: gatehouse.MaxSSOProviders}); err != nil {
		return err
	}
	if data.Settings, err = s.store.FindSignInSettings(ctx, org); err != nil {
		return err
	}
	data.CanTurnOff = gatehouse.CheckPasswordSignInOff(data.Providers) == nil
	data.RedirectURI, data.SCIMURL = s.redirectURL(r), strings.TrimSuffix(s.redirectURL(r), gatehouse.RedirectPath)+"/scim/v2"
	if data.Token, err = s.store.FindSCIMToken(ctx, org); gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		data.Token, err = nil, nil
	}
	if err != nil {
		return err
	}
	workspaces, _, err := s.store.FindWorkspaces(ctx, org, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if err != nil {
		return err
	}
	names := map[string]string{}
	for _, ws := range workspaces {
		names[ws.ID] = ws.Name
		if !ws.IsDefault {
			data.Workspaces = append(data.Workspaces, option{Value: ws.ID, Label: ws.Name})
		}
	}
	mappings, _, err := s.store.FindGroupMappings(ctx, org, gatehouse.Page{Limit: gatehouse.MaxPageSize})
	if err != nil {
		return err
	}
	for _, m := range mappings {
		var ws []string
		for _, id := range m.WorkspaceIDs {
			ws = append(ws, names[id])
		}
		data.Mappings = append(data.Mappings, mappingRow{m, strings.Join(ws, ", ")})
	}
	if data.Groups, _, err = s.store.FindSCIMGroups(ctx, org, gatehouse.SCIMGroupFilter{Count: gatehouse.MaxPageSize, WithoutMembers: true}); err != nil {
		return err
	}
	if data.ProviderForm == nil { // the defaults, to change
		data.ProviderForm = providerForm(&gatehouse.SSOProvider{Scopes: gatehouse.DefaultSSOScopes(), EmailClaim: gatehouse.DefaultEmailClaim,
			EmailVerifiedClaim: gatehouse.DefaultEmailVerifiedClaim, NameClaim: gatehouse.DefaultNameClaim,
			GroupsClaim: gatehouse.DefaultGroupsClaim, Enabled: true})
	}
	if data.MappingForm == nil {
		data.MappingForm = emptyForm()
	}
	if data.Form == nil {
		data.Form = emptyForm()
	}
	data.Roles = mappingRoles
	return s.render(w, r, sess, status, "sso", "Single sign-on", data)
}

// providerFields are the fields of a provider's forms.
var providerFields = []string{"name", "issuer_url", "client_id", "client_secret", "scopes", "email_claim",
	"email_verified_claim", "name_claim", "groups_claim", "allowed_domains", "enabled"}

// providerUpdate reads a provider's form. An empty secret leaves the
// secret alone (on create: a public client); an empty groups claim reads
// no groups; an empty claim otherwise keeps its default.
func providerUpdate(f *form) gatehouse.SSOProviderUpdate {
	u := gatehouse.SSOProviderUpdate{Name: gatehouse.Val(f.get("name")), IssuerURL: gatehouse.Val(f.get("issuer_url")),
		ClientID: gatehouse.Val(f.get("client_id")), Enabled: gatehouse.Val(f.get("enabled") == "on"),
		AllowedDomains: gatehouse.Null[[]string](), GroupsClaim: gatehouse.Null[string]()}
	if v := f.Values.Get("client_secret"); v != "" {
		u.ClientSecret = gatehouse.Val(v)
	}
	if v := strings.Fields(f.get("scopes")); len(v) > 0 {
		u.Scopes = gatehouse.Val(v)
	}
	for _, c := range []struct {
		name string
		dst  *gatehouse.Patch[string]
	}{{"email_claim", &u.EmailClaim}, {"email_verified_claim", &u.EmailVerifiedClaim}, {"name_claim", &u.NameClaim}, {"groups_claim", &u.GroupsClaim}} {
		if v := f.get(c.name); v != "" {
			*c.dst = gatehouse.Val(v)
		}
	}
	if d := splitLines(f.get("allowed_domains")); len(d) > 0 {
		u.AllowedDomains = gatehouse.Val(d)
	}
	return u
}

// providerForm is the form of a provider as it is.
func providerForm(p *gatehouse.SSOProvider) *form {
	f := emptyForm()
	for k, v := range map[string]string{"name": p.Name, "issuer_url": p.IssuerURL, "client_id": p.ClientID,
		"scopes": strings.Join(p.Scopes, " "), "email_claim": p.EmailClaim, "email_verified_claim": p.EmailVerifiedClaim,
		"name_claim": p.NameClaim, "groups_claim": p.GroupsClaim, "allowed_domains": strings.Join(p.AllowedDomains, "\n")} {
		f.Values.Set(k, v)
	}
	if p.Enabled {
		f.Values.Set("enabled", "on")
	}
	return f
}

// checkIssuer reads the discovery document of the form's issuer, when it
// is one, before anything is saved.
func (s *Server) checkIssuer(r *http.Request, u gatehouse.SSOProviderUpdate) error {
	if gatehouse.ValidateIssuerURL(u.IssuerURL.Value) != nil {
		return nil // the store names the field
	}
	return s.opts.SSO.CheckIssuer(r.Context(), u.IssuerURL.Value)
}

// createProvider adds a provider, then shows its page.
func (s *Server) createProvider(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u := providerUpdate(f)
	if _, err = gatehouse.NewSSOProvider(u); err == nil {
		err = s.checkIssuer(r, u)
	}
	var p *gatehouse.SSOProvider
	if err == nil {
		p, err = s.store.CreateSSOProvider(r.Context(), sess.OrganizationID, u)
	}
	if err != nil {
		if err := f.withError(err, providerFields...); err != nil {
			return err
		}
		return s.renderSSO(w, r, sess, http.StatusBadRequest, &ssoData{ProviderForm: f})
	}
	http.Redirect(w, r, "/sso/providers/"+p.ID+"?done=created", http.StatusSeeOther)
	return nil
}

// providerData is the data of a provider's page.
type providerData struct {
	Provider    *gatehouse.SSOProvider
	RedirectURI string
	// SignInLink starts a sign-in through the provider: for members, and
	// for the provider's own dashboard (its "initiate login URI").
	SignInLink string
	Form       *form
}

// provider shows a provider's page: what to register at the provider, and
// its settings to change.
func (s *Server) provider(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	p, err := s.store.FindSSOProvider(r.Context(), sess.OrganizationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	return s.render(w, r, sess, http.StatusOK, "ssoprovider", p.Name, providerData{Provider: p, RedirectURI: s.redirectURL(r),
		SignInLink: s.signInLink(r, p), Form: providerForm(p)})
}

// signInLink is the URL that starts a sign-in through a provider.
func (s *Server) signInLink(r *http.Request, p *gatehouse.SSOProvider) string {
	return strings.TrimSuffix(s.redirectURL(r), gatehouse.RedirectPath) + gatehouse.SSOStartPath + p.ID
}

// updateProvider changes a provider.
func (s *Server) updateProvider(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	p, err := s.store.FindSSOProvider(r.Context(), sess.OrganizationID, r.PathValue("id"))
	if err != nil {
		return err
	}
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u := providerUpdate(f)
	if u.IssuerURL.Value == p.IssuerURL {
		u.IssuerURL = gatehouse.Patch[string]{} // unchanged: not read again
	} else {
		err = s.checkIssuer(r, u)
	}
	if err == nil {
		p, err = s.store.UpdateSSOProvider(r.Context(), sess.OrganizationID, p.ID, u)
	}
	if err != nil {
		if err := f.withError(err, providerFields...); err != nil {
			return err
		}
		return s.render(w, r, sess, http.StatusBadRequest, "ssoprovider", p.Name, providerData{Provider: p, RedirectURI: s.redirectURL(r),
			SignInLink: s.signInLink(r, p), Form: f})
	}
	http.Redirect(w, r, "/sso/providers/"+p.ID+"?done=saved", http.StatusSeeOther)
	return nil
}

// deleteProvider removes a provider.
func (s *Server) deleteProvider(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	if err := s.store.DeleteSSOProvider(r.Context(), sess.OrganizationID, r.PathValue("id")); err != nil {
		return s.ssoRefused(w, r, sess, err)
	}
	http.Redirect(w, r, "/sso?done=deleted", http.StatusSeeOther)
	return nil
}

// ssoRefused shows the page with why a change was refused.
func (s *Server) ssoRefused(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, err error) error {
	f := emptyForm()
	if err := f.withError(err); err != nil {
		return err
	}
	f.Error = "Not done: " + strings.TrimPrefix(f.Error, "password_sign_in: ")
	return s.renderSSO(w, r, sess, http.StatusBadRequest, &ssoData{Form: f})
}

// updateSignIn turns password sign-in on or off.
func (s *Server) updateSignIn(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	on := gatehouse.SignInSettingsUpdate{PasswordSignIn: gatehouse.Val(f.get("password_sign_in") == "on")}
	if _, err := s.store.UpdateSignInSettings(r.Context(), sess.OrganizationID, on); err != nil {
		return s.ssoRefused(w, r, sess, err)
	}
	http.Redirect(w, r, "/sso?done=saved", http.StatusSeeOther)
	return nil
}

// createMapping maps a group to a role and workspaces.
func (s *Server) createMapping(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	u := gatehouse.GroupMappingUpdate{Group: gatehouse.Val(f.get("group")), WorkspaceIDs: gatehouse.Val(f.Values["workspace_ids"])}
	if role := f.get("role"); role != "" {
		u.Role = gatehouse.Val(role)
	}
	if u.WorkspaceIDs.Value == nil {
		u.WorkspaceIDs.Value = []string{}
	}
	if _, err := s.store.CreateGroupMapping(r.Context(), sess.OrganizationID, u); err != nil {
		if err := f.withError(err, "group", "role", "workspace_ids"); err != nil {
			return err
		}
		return s.renderSSO(w, r, sess, http.StatusBadRequest, &ssoData{MappingForm: f})
	}
	http.Redirect(w, r, "/sso?done=created#mappings", http.StatusSeeOther)
	return nil
}

// deleteMapping removes a mapping: its members lose what it gave.
func (s *Server) deleteMapping(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	if err := s.store.DeleteGroupMapping(r.Context(), sess.OrganizationID, r.PathValue("id")); err != nil {
		return s.ssoRefused(w, r, sess, err)
	}
	http.Redirect(w, r, "/sso?done=deleted#mappings", http.StatusSeeOther)
	return nil
}

// createSCIMToken makes (or replaces) the SCIM token and shows it, once.
func (s *Server) createSCIMToken(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	_, token, err := s.store.CreateSCIMToken(r.Context(), sess.OrganizationID)
	if err != nil {
		return err
	}
	return s.renderSSO(w, r, sess, http.StatusCreated, &ssoData{NewToken: token})
}

// deleteSCIMToken removes the SCIM token: provisioning stops.
func (s *Server) deleteSCIMToken(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	if err := s.store.DeleteSCIMToken(r.Context(), sess.OrganizationID); err != nil {
		return s.ssoRefused(w, r, sess, err)
	}
	http.Redirect(w, r, "/sso?done=deleted", http.StatusSeeOther)
	return nil
}
