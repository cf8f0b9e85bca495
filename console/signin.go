package console

import (
	"net/http"
	"net/url"
	"strings"

	"gatehouse"
)

// signInData is the data of the sign-in page.
type signInData struct {
	Form *form
	// Next is where to go once signed in: a path of the console.
	Next string
	// KeyOpen opens the management-key form (its error is shown there).
	KeyOpen bool
	// SSO are the buttons of the identity providers; SSOError says why a
	// single sign-on failed (sso.go).
	SSO      []ssoButton
	SSOError string
	// App is the origin of the application asking to connect, when the
	// sign-in leads on to the authorization page (/auth); else "".
	App string
}

// asking returns the origin of the application whose authorization page
// (/auth) a sign-in leads on to, "" when next is no such page or its
// request is malformed (the page itself says so).
func (s *Server) asking(next string) string {
	u, err := url.Parse(next)
	if err != nil || u.Path != "/auth" {
		return ""
	}
	c, err := s.authRequest(u.Query())
	if err != nil {
		return ""
	}
	return gatehouse.CallbackOrigin(c.CallbackURL)
}

// signInPage shows the sign-in forms; a signed-in session goes on to next.
func (s *Server) signInPage(w http.ResponseWriter, r *http.Request) error {
	next := localPath(r.URL.Query().Get("next"))
	if sess, err := s.session(r); err != nil {
		return err
	} else if sess != nil {
		http.Redirect(w, r, next, http.StatusSeeOther)
		return nil
	}
	f, _ := newForm(w, r)
	return s.render(w, r, nil, http.StatusOK, "signin", "Sign in", signInData{Form: f, Next: next, SSO: s.ssoButtons(r, next), App: s.asking(next)})
}

// signInWithPassword signs a member in with their email and password.
// Only failures count against the limits (see SignInPairLimit).
func (s *Server) signInWithPassword(w http.ResponseWriter, r *http.Request) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	next := localPath(f.get("next"))
	attempt, err := s.signIns.begin(r.Context(), r, s.opts.Proxies, "password", f.get("email"))
	if err != nil {
		return err
	}
	sess, token, err := s.accounts.SignIn(r.Context(), f.get("email"), f.Values.Get("password"))
	if err != nil {
		s.signInOutcome(attempt, err)
		return s.signInFailed(w, r, f, next, false, err)
	}
	attempt.succeeded()
	s.setSession(w, r, sess, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// signInWithKey exchanges a management key for an admin session of its
// organization: how the operator of a fresh install signs in with the key
// printed at the first start. Wrong keys count against the address's
// limit.
func (s *Server) signInWithKey(w http.ResponseWriter, r *http.Request) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	next := localPath(f.get("next"))
	attempt, err := s.signIns.begin(r.Context(), r, s.opts.Proxies, "key", "")
	if err != nil {
		return err
	}
	sess, token, err := s.accounts.SignInWithKey(r.Context(), f.Values.Get("key"))
	if err != nil {
		s.signInOutcome(attempt, err)
		return s.signInFailed(w, r, f, next, true, err)
	}
	attempt.succeeded()
	s.setSession(w, r, sess, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// signInOutcome ends an attempt that opened no session: a refused
// credential is a failure; anything else (the database failing, say) was
// no guess.
func (s *Server) signInOutcome(attempt *signInAttempt, err error) {
	switch gatehouse.ErrorCode(err) {
	case gatehouse.EUNAUTHORIZED, gatehouse.EFORBIDDEN, gatehouse.EINVALID:
		attempt.failed()
	default:
		attempt.abandon()
	}
}

// signInFailed shows the sign-in page again with what failed: next to
// the key for a key, above the form for a password (which does not say
// whether the email or the password was wrong).
func (s *Server) signInFailed(w http.ResponseWriter, r *http.Request, f *form, next string, withKey bool, err error) error {
	code := gatehouse.ErrorCode(err)
	if code != gatehouse.EUNAUTHORIZED && code != gatehouse.EFORBIDDEN && code != gatehouse.EINVALID {
		return err
	}
	msg := gatehouse.ErrorMessage(err)
	switch {
	case withKey:
		f.Errors["key"] = strings.TrimPrefix(msg, "key: ")
	default:
		f.Error = "The email or the password is wrong."
	}
	return s.render(w, r, nil, http.StatusUnauthorized, "signin", "Sign in", signInData{Form: f, Next: next, KeyOpen: withKey, SSO: s.ssoButtons(r, next), App: s.asking(next)})
}

// account shows the session and the ways to end it.
func (s *Server) account(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	return s.render(w, r, sess, http.StatusOK, "account", "Your session", nil)
}

// signOut ends this session.
func (s *Server) signOut(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	if err := s.store.DeleteSession(r.Context(), sess.ID); err != nil {
		return err
	}
	s.clearSession(w, r)
	http.Redirect(w, r, "/sign-in?done=signedout", http.StatusSeeOther)
	return nil
}

// signOutEverywhere ends every session of the member, this one included.
func (s *Server) signOutEverywhere(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	if sess.UserID == nil {
		return gatehouse.Errorf(gatehouse.EINVALID, "A management key's session has no other sessions to end: sign out, or delete the key to end them all.")
	}
	if err := s.store.DeleteSessions(r.Context(), sess.OrganizationID, *sess.UserID); err != nil {
		return err
	}
	s.clearSession(w, r)
	http.Redirect(w, r, "/sign-in?done=everywhere", http.StatusSeeOther)
	return nil
}

// localPath returns p if it is a path of this site ("/keys?q=a"), else
// "/": a link must not make the sign-in send the browser elsewhere
// ("//evil.example", "https://...", "/\evil").
func localPath(p string) string {
	if p == "" || p[0] != '/' || strings.HasPrefix(p, "//") || strings.ContainsAny(p, "\\\r\n\t") {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" {
		return "/"
	}
	return p
}
