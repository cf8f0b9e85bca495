package console

import (
	"net/http"
	"net/url"
	"strings"

	"gatehouse"
)

// The authorization page of the OAuth PKCE flow. An application sends its
// user to /auth?callback_url=…&code_challenge=…&code_challenge_method=S256
// (&limit=…), what the official client's createAuthorizationUrl builds; the
// user signs in if need be, sees which application asks, chooses the key's
// name, limit and workspace, and approves or denies. Approval creates the
// code through the OAuth store code, with the member as its creator, and
// sends the browser back to the callback with ?code=; denial with
// ?error=access_denied. A callback the domain refuses (not https, nor http
// on the loopback) is never redirected to.

// authorizeData is the data of the authorization page.
type authorizeData struct {
	// App is the application: the callback URL's origin.
	App, CallbackURL string
	Challenge        string
	Method           string
	Form             *form
	Workspaces       []option
	Resets           []option
}

// resets are the choices of a limit's reset.
var resets = []option{{Value: "", Label: "never"}, {Value: "daily", Label: "daily"}, {Value: "weekly", Label: "weekly"}, {Value: "monthly", Label: "monthly"}}

// authRequest reads what the application asks for, from the page's URL or
// the form that carries it on, checked by the domain's rules. EINVALID.
func (s *Server) authRequest(v url.Values) (gatehouse.AuthCodeCreate, error) {
	c := gatehouse.AuthCodeCreate{CallbackURL: strings.TrimSpace(v.Get("callback_url"))}
	if ch := v.Get("code_challenge"); ch != "" {
		c.CodeChallenge = &ch
	}
	if m := v.Get("code_challenge_method"); m != "" {
		c.CodeChallengeMethod = &m
	}
	if err := c.Validate(s.now()); err != nil {
		return c, gatehouse.Errorf(gatehouse.EINVALID, "The application's authorization request is malformed (%s). Tell its makers.", gatehouse.ErrorMessage(err))
	}
	return c, nil
}

// authorizePage shows the application and the form to approve it.
func (s *Server) authorizePage(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	q := r.URL.Query()
	c, err := s.authRequest(q)
	if err != nil {
		return err
	}
	f := emptyForm()
	f.Values.Set("key_label", appHost(c.CallbackURL))
	if l := q.Get("limit"); l != "" {
		if m, err := gatehouse.ParseMoney(l); err == nil && m >= 0 {
			f.Values.Set("limit", m.String()) // what the application suggests; the user decides
		}
	}
	return s.authorizeForm(w, r, sess, http.StatusOK, c, f)
}

// authorizeForm renders the authorization page for request c with form f.
// Its forms may lead to the application's origin (the approval's and the
// denial's redirects), and nowhere else.
func (s *Server) authorizeForm(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, c gatehouse.AuthCodeCreate, f *form) error {
	allowed, err := s.keyWorkspaces(r.Context(), sess)
	if err != nil {
		return err
	}
	origin := gatehouse.CallbackOrigin(c.CallbackURL)
	data := authorizeData{App: origin, CallbackURL: c.CallbackURL, Form: f, Workspaces: workspaceOptions(allowed), Resets: resets}
	if c.CodeChallenge != nil {
		data.Challenge, data.Method = *c.CodeChallenge, *c.CodeChallengeMethod
	}
	w.Header().Set("Content-Security-Policy", contentSecurityPolicy(origin))
	return s.render(w, r, sess, status, "authorize", "Authorize "+origin, data)
}

// authorize approves or denies the application's request, and sends the
// browser back to it.
func (s *Server) authorize(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	c, err := s.authRequest(f.Values)
	if err != nil {
		return err
	}
	if f.get("decision") != "approve" {
		http.Redirect(w, r, withQuery(c.CallbackURL, "error", "access_denied"), http.StatusSeeOther)
		return nil
	}
	code, err := s.approve(r, sess, c, f)
	if err != nil {
		if err := f.withError(err, "key_label", "limit", "usage_limit_type", "workspace"); err != nil {
			return err
		}
		return s.authorizeForm(w, r, sess, http.StatusBadRequest, c, f)
	}
	http.Redirect(w, r, withQuery(c.CallbackURL, "code", code.ID), http.StatusSeeOther)
	return nil
}

// approve creates the code of request c on the terms of form f, with the
// session's member as its creator (none for a management key's session):
// the key it yields is theirs, in a workspace they may use.
func (s *Server) approve(r *http.Request, sess *gatehouse.Session, c gatehouse.AuthCodeCreate, f *form) (*gatehouse.AuthCode, error) {
	label := f.get("key_label")
	c.KeyLabel = &label
	var err error
	if c.Limit, err = f.money("limit"); err != nil {
		return nil, err
	}
	if c.UsageLimitType, err = f.interval("usage_limit_type"); err != nil {
		return nil, err
	}
	allowed, err := s.keyWorkspaces(r.Context(), sess)
	if err != nil {
		return nil, err
	}
	ws, err := gatehouse.ChooseWorkspace(allowed, "workspace", f.get("workspace"))
	if err != nil {
		return nil, err
	}
	c.WorkspaceID = ws.ID
	return s.store.CreateAuthCode(r.Context(), sess.OrganizationID, sess.UserID, c)
}

// withQuery returns the URL u with the query parameter name set to value.
func withQuery(u, name, value string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return u // validated before: cannot happen
	}
	q := parsed.Query()
	q.Set(name, value)
	parsed.RawQuery = q.Encode()
	return parsed.String()
}

// appHost names an application by its callback's host, the default name
// of the key it gets.
func appHost(callback string) string {
	u, err := url.Parse(callback)
	if err != nil || u.Host == "" {
		return gatehouse.DefaultOAuthKeyLabel
	}
	return u.Host
}
