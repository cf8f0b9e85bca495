package console

import (
	"crypto/subtle"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"gatehouse"
)

// Cookie names. Over HTTPS the session cookie takes the __Host- prefix,
// which browsers accept only with Secure, Path=/ and no Domain: nothing
// on another subdomain or path can set or shadow it.
const (
	sessionCookie       = "gatehouse_session"
	secureSessionCookie = "__Host-gatehouse_session"
)

// sessionHandler serves a request of a signed-in session.
type sessionHandler func(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error

// page registers a route for signed-in sessions. A GET without a session
// goes to the sign-in page and comes back; a state change must carry the
// session's CSRF token. The request's context names the session as the
// actor of every change it makes.
func (s *Server) page(pattern string, h sessionHandler) {
	s.handle(pattern, func(w http.ResponseWriter, r *http.Request) error {
		sess, err := s.session(r)
		if err != nil {
			return err
		}
		if sess == nil {
			if r.Method == http.MethodGet || r.Method == http.MethodHead {
				http.Redirect(w, r, "/sign-in?next="+url.QueryEscape(r.URL.RequestURI()), http.StatusSeeOther)
				return nil
			}
			return errSignedOut
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			if err := parseForm(w, r); err != nil {
				return err
			}
			if err := checkCSRFToken(r, sess.CSRFToken); err != nil {
				return err
			}
		}
		r = r.WithContext(gatehouse.WithActor(r.Context(), sess.Actor()))
		// The page runs in its organization's share of the database, as
		// the API's operations do (Options.Shares).
		release, err := s.opts.Shares.Enter(r.Context(), sess.OrganizationID)
		if err != nil {
			if e, ok := err.(*gatehouse.Error); ok {
				if secs, ok := e.Metadata["retry_after_seconds"].(int); ok {
					w.Header().Set("Retry-After", strconv.Itoa(secs))
				}
			}
			return err
		}
		defer release()
		return h(w, r, sess)
	})
}

// admin registers a route for admins' sessions only; a member gets a 403.
func (s *Server) admin(pattern string, h sessionHandler) {
	s.page(pattern, func(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
		if !sess.IsAdmin() {
			return gatehouse.Errorf(gatehouse.EFORBIDDEN, "Only the organization's admins may open this page.")
		}
		return h(w, r, sess)
	})
}

// errSignedOut answers a state change without a session (it expired, or
// was ended elsewhere).
var errSignedOut = gatehouse.Errorf(gatehouse.EUNAUTHORIZED, "Your session has ended. Sign in again, then repeat what you were doing.")

// session returns the request's session, or nil when it has none (no
// cookie, or one the store no longer knows: expired, idle too long, ended,
// or its key or member gone). Reading it records its activity, now and
// then (gatehouse.Accounts.Session).
func (s *Server) session(r *http.Request) (*gatehouse.Session, error) {
	c, err := r.Cookie(s.cookieName(r))
	if err != nil || c.Value == "" {
		return nil, nil
	}
	sess, err := s.accounts.Session(r.Context(), c.Value)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil, nil
	}
	return sess, err
}

// cookieName is the session cookie's name for the request's scheme.
func (s *Server) cookieName(r *http.Request) string {
	if s.opts.Proxies.HTTPS(r) {
		return secureSessionCookie
	}
	return sessionCookie
}

// setSession sets the cookie of a new session: HttpOnly (no script reads
// it), SameSite=Lax (no other site's form or script sends it), Secure over
// HTTPS, for the whole site, until the session's absolute end.
func (s *Server) setSession(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, token string) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r), Value: token, Path: "/", Expires: sess.ExpiresAt,
		HttpOnly: true, Secure: s.opts.Proxies.HTTPS(r), SameSite: http.SameSiteLaxMode})
}

// clearSession removes the session cookie.
func (s *Server) clearSession(w http.ResponseWriter, r *http.Request) {
	http.SetCookie(w, &http.Cookie{Name: s.cookieName(r), Value: "", Path: "/", MaxAge: -1,
		HttpOnly: true, Secure: s.opts.Proxies.HTTPS(r), SameSite: http.SameSiteLaxMode})
}

// errForgery answers a state change that fails the CSRF checks.
var errForgery = gatehouse.Errorf(gatehouse.EFORBIDDEN,
	"This form did not come from this console (or the page was open too long). Reload the page and try again.")

// checkCSRFToken refuses a state change whose form (or X-CSRF-Token
// header) does not carry the session's token.
func checkCSRFToken(r *http.Request, want string) error {
	got := r.Header.Get("X-CSRF-Token")
	if got == "" {
		got = r.PostForm.Get("csrf") // parsed, within its bound, by parseForm
	}
	if want == "" || subtle.ConstantTimeCompare([]byte(got), []byte(want)) != 1 {
		return errForgery
	}
	return nil
}

// checkOrigin refuses a state change that another origin sent: its Origin
// header (or, when a browser sends none, its Referer) must name this
// console's origin, as the browser reached it. Browsers send one of them
// with every form; a request with neither is refused.
func (s *Server) checkOrigin(r *http.Request) error {
	switch r.Method {
	case http.MethodGet, http.MethodHead, http.MethodOptions:
		return nil
	}
	from := r.Header.Get("Origin")
	if from == "" || from == "null" {
		if ref, err := url.Parse(r.Referer()); err == nil && ref.Host != "" {
			from = ref.Scheme + "://" + ref.Host
		}
	}
	if !strings.EqualFold(from, s.origin(r)) {
		return errForgery
	}
	return nil
}

// origin is the console's own origin as this request reached it.
func (s *Server) origin(r *http.Request) string {
	if s.opts.Proxies.HTTPS(r) {
		return "https://" + r.Host
	}
	return "http://" + r.Host
}
