package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"time"

	"gatehouse"
)

// Single sign-on: the sign-in page offers a button per enabled identity
// provider of the server's first organization ("Sign in with <name>", a
// link to /sso/start/{id}, which is also each provider's sign-in link for
// the other organizations' members); the start
// sends the browser to the provider, with the sign-in's state also in a
// cookie of this browser; the provider sends it back to /sso/callback,
// where the state must match the cookie (a sign-in begun in another browser
// is refused: nobody can sign someone else in to their own account), and
// the relying party (sso.RelyingParty) verifies what the provider says
// before the store opens the session.

// ssoCookie holds the state of a sign-in under way, for the callback only.
const ssoCookie = "gatehouse_sso"

// ssoButton is a provider's button on the sign-in page.
type ssoButton struct {
	Name, URL string
}

// ssoButtons are the sign-in page's buttons: the first organization's
// enabled providers' (gatehouse.SSOService.FindSignInProviders), each
// bringing the browser back to next. A store that cannot list them
// leaves the page without them (logged): the other ways in stay.
func (s *Server) ssoButtons(r *http.Request, next string) []ssoButton {
	providers, err := s.store.FindSignInProviders(r.Context())
	if err != nil {
		s.logger.Warn("console: the identity providers could not be listed for the sign-in page", "error", err.Error())
		return nil
	}
	out := make([]ssoButton, len(providers))
	for i, p := range providers {
		out[i] = ssoButton{Name: p.Name, URL: gatehouse.SSOStartPath + p.ID + "?next=" + url.QueryEscape(next)}
	}
	return out
}

// redirectURL is the console's callback as the providers know it: under
// the public URL, else the origin the browser used.
func (s *Server) redirectURL(r *http.Request) string {
	base := s.opts.PublicURL
	if base == "" {
		base = s.origin(r)
	}
	return gatehouse.SSORedirectURL(base)
}

// ssoStart sends the browser to a provider. Each start records a sign-in
// under way, so each takes a token of the client address's sign-in budget
// and keeps it (a start is not known to succeed here).
func (s *Server) ssoStart(w http.ResponseWriter, r *http.Request) error {
	next := localPath(r.URL.Query().Get("next"))
	if _, err := s.signIns.begin(r.Context(), r, s.opts.Proxies, "sso", ""); err != nil {
		return err
	}
	authURL, state, err := s.opts.SSO.Start(r.Context(), r.PathValue("id"), s.redirectURL(r), next)
	if err != nil {
		return err
	}
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: state, Path: gatehouse.RedirectPath, MaxAge: int(gatehouse.SSOLoginTTL / time.Second),
		HttpOnly: true, Secure: s.opts.Proxies.HTTPS(r), SameSite: http.SameSiteLaxMode})
	http.Redirect(w, r, authURL, http.StatusSeeOther)
	return nil
}

// ssoCallback finishes a sign-in when the provider sends the browser back:
// with the state this browser holds, and a code (or the provider's error).
// A failure shows the sign-in page with why.
func (s *Server) ssoCallback(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	state := q.Get("state")
	http.SetCookie(w, &http.Cookie{Name: ssoCookie, Value: "", Path: gatehouse.RedirectPath, MaxAge: -1,
		HttpOnly: true, Secure: s.opts.Proxies.HTTPS(r), SameSite: http.SameSiteLaxMode})
	c, err := r.Cookie(ssoCookie)
	if err != nil || state == "" || subtle.ConstantTimeCompare([]byte(c.Value), []byte(state)) != 1 {
		return s.ssoFailed(w, r, gatehouse.Errorf(gatehouse.EUNAUTHORIZED,
			"This sign-in did not start in this browser, or took too long. Start again from the sign-in page."))
	}
	if e := q.Get("error"); e != "" {
		// Forget the sign-in: its state must not serve again.
		if _, err := s.store.TakeSSOLogin(r.Context(), state); err != nil && gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
			return err
		}
		return s.ssoFailed(w, r, gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "The identity provider did not sign you in (%s).", providerError(e, q.Get("error_description"))))
	}
	sess, token, next, err := s.opts.SSO.Finish(r.Context(), state, q.Get("code"), s.redirectURL(r))
	if err != nil {
		return s.ssoFailed(w, r, err)
	}
	s.setSession(w, r, sess, token)
	http.Redirect(w, r, localPath(next), http.StatusSeeOther)
	return nil
}

// providerError is what the sign-in page repeats of a provider's error:
// its code and description, cut short.
func providerError(code, description string) string {
	msg := code
	if description != "" {
		msg += ": " + description
	}
	if r := []rune(msg); len(r) > 200 {
		msg = string(r[:200]) + "…"
	}
	return msg
}

// ssoFailed shows the sign-in page with why a single sign-on failed; an
// error of ours (or of the store) is the error page's.
func (s *Server) ssoFailed(w http.ResponseWriter, r *http.Request, err error) error {
	status := errorStatus(err)
	switch gatehouse.ErrorCode(err) {
	case gatehouse.EUNAUTHORIZED, gatehouse.EFORBIDDEN, gatehouse.EINVALID, gatehouse.ENOTFOUND, gatehouse.EUNAVAILABLE:
	default:
		return err
	}
	if wrapped, ok := err.(*gatehouse.Error); ok && wrapped.Err != nil {
		s.logger.Info("console: a single sign-on was refused", "reason", gatehouse.ErrorMessage(err), "cause", wrapped.Err.Error())
	}
	f := emptyForm()
	return s.render(w, r, nil, status, "signin", "Sign in", signInData{Form: f, Next: "/", SSO: s.ssoButtons(r, "/"),
		SSOError: gatehouse.ErrorMessage(err)})
}
