package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"gatehouse"
	"gatehouse/forwarded"
	"gatehouse/ratelimit"
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
	return s.render(w, r, nil, http.StatusOK, "signin", "Sign in", signInData{Form: f, Next: next, SSO: s.ssoButtons(r, next)})
}

// signInWithPassword signs a member in with their email and password.
func (s *Server) signInWithPassword(w http.ResponseWriter, r *http.Request) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	next := localPath(f.get("next"))
	if err := s.signInLimit(r.Context(), r, gatehouse.SignInBucket(f.get("email"))); err != nil {
		return err
	}
	sess, token, err := s.accounts.SignIn(r.Context(), f.get("email"), f.Values.Get("password"))
	if err != nil {
		return s.signInFailed(w, r, f, next, false, err)
	}
	s.setSession(w, r, sess, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
}

// signInWithKey exchanges a management key for an admin session of its
// organization: how the operator of a fresh install signs in with the key
// printed at the first start.
func (s *Server) signInWithKey(w http.ResponseWriter, r *http.Request) error {
	f, err := newForm(w, r)
	if err != nil {
		return err
	}
	next := localPath(f.get("next"))
	if err := s.signInLimit(r.Context(), r, ""); err != nil {
		return err
	}
	sess, token, err := s.accounts.SignInWithKey(r.Context(), f.Values.Get("key"))
	if err != nil {
		return s.signInFailed(w, r, f, next, true, err)
	}
	s.setSession(w, r, sess, token)
	http.Redirect(w, r, next, http.StatusSeeOther)
	return nil
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
	return s.render(w, r, nil, http.StatusUnauthorized, "signin", "Sign in", signInData{Form: f, Next: next, KeyOpen: withKey, SSO: s.ssoButtons(r, next)})
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

// signInLimit takes one attempt from the client address's bucket and,
// when account is not "", from that one (gatehouse.SignInBucket of the
// email): so that nobody guesses a password by trying many, from one
// address or from many. A failing
// limiter does not stop sign-ins: it is logged.
func (s *Server) signInLimit(ctx context.Context, r *http.Request, account string) error {
	buckets := []string{"signin:addr:" + forwarded.AddressBucket(s.opts.Proxies.ClientIP(r))}
	if account != "" {
		buckets = append(buckets, account)
	}
	for _, b := range buckets {
		res, err := s.signIns.Allow(ctx, b)
		if err != nil {
			s.logger.Warn("sign-in rate limiter failed; attempt allowed", "error", err.Error())
			continue
		}
		if !res.Allowed {
			secs := max(int64(res.RetryAfter.Seconds()+0.999), 1)
			return &gatehouse.Error{Code: gatehouse.ERATELIMIT,
				Message:  "Too many sign-in attempts. For your account's safety, wait before trying again.",
				Metadata: map[string]any{"retry_after_seconds": secs}}
		}
	}
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

// SignInLimit is the rate of sign-in attempts (with a password, a key or
// an invitation link's form), per account and per client address: ten at
// once, then one every 20 seconds.
var SignInLimit = ratelimit.Config{RPS: 1.0 / 20, Burst: 10}
