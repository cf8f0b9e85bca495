package console

import (
	"bytes"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net/http"
	"path"
	"strconv"
	"strings"
	"time"

	"gatehouse"
)

//go:embed templates
var templateFS embed.FS

// pages are the parsed templates: each page file with the layout and the
// partials, under the page's name (its file name without .html).
type pages struct {
	byName map[string]*template.Template
}

// mustParsePages parses every template; a mistake in one is a programming
// error, found by any test.
func mustParsePages() *pages {
	p := &pages{byName: map[string]*template.Template{}}
	files, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		panic(err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(path.Base(f), ".html")
		if name == "layout" {
			continue
		}
		t := template.New(name).Funcs(funcs)
		p.byName[name] = template.Must(t.ParseFS(templateFS, "templates/layout.html", "templates/partials/*.html", f))
	}
	return p
}

// view is what every page's template gets: the page's own data in Page,
// and what the layout needs.
type view struct {
	Title   string
	Session *gatehouse.Session // nil when signed out
	// Nav is the menu, its current item marked.
	Nav []navLink
	// Notice is a line shown above the page (a change saved, ...).
	Notice string
	Page   any
}

// render writes a page with status: the page template named name inside
// the layout, given data. It renders into a buffer first, so that a
// failing template becomes a clean 500.
func (s *Server) render(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session, status int, name, title string, data any) error {
	t, ok := s.pages.byName[name]
	if !ok {
		return errors.New("console: no template " + name)
	}
	v := view{Title: title, Session: sess, Nav: navFor(sess, r.URL.Path), Notice: notice(r), Page: data}
	var buf bytes.Buffer
	if err := t.ExecuteTemplate(&buf, "layout", v); err != nil {
		return err
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, err := buf.WriteTo(w)
	return err
}

// notices are the lines a redirect after a change asks for (?done=...):
// fixed texts, so that a link cannot make the console say anything else.
var notices = map[string]string{
	"saved":      "Saved.",
	"disabled":   "The key is disabled: it can no longer make requests.",
	"enabled":    "The key is enabled again.",
	"deleted":    "Deleted.",
	"signedout":  "You are signed out.",
	"everywhere": "You are signed out everywhere: every other session of yours has ended.",
	"revoked":    "The link is revoked.",
	"removed":    "The member is removed.",
	"role":       "The role is changed.",
	// The workspaces, guardrails, destinations pages'.
	"created":        "Created.",
	"budget":         "The budget is set.",
	"budgetcleared":  "The budget is cleared.",
	"membersadded":   "The members are added.",
	"membersremoved": "The members are removed.",
	"assigned":       "Assigned: the guardrail governs them now.",
	"unassigned":     "Taken from under the guardrail.",
}

func notice(r *http.Request) string { return notices[r.URL.Query().Get("done")] }

// navLink is an item of the menu.
type navLink struct {
	Path, Label string
	Current     bool
}

// navFor is the menu a session sees: the pages of nav it may open.
func navFor(sess *gatehouse.Session, current string) []navLink {
	if sess == nil {
		return nil
	}
	var out []navLink
	for _, it := range nav {
		if it.adminOnly && !sess.IsAdmin() {
			continue
		}
		here := current == it.path || it.path != "/" && strings.HasPrefix(current, it.path+"/")
		out = append(out, navLink{Path: it.path, Label: it.label, Current: here})
	}
	return out
}

// fail renders err as an error page: its status and its client-safe
// message; an internal error is logged, with the message "internal error".
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	status := errorStatus(err)
	msg := gatehouse.ErrorMessage(err)
	switch {
	case errors.Is(err, errMethod):
		msg = "This page does not take " + r.Method + " requests."
	case status >= 500:
		s.logger.Error("console error", "path", r.URL.Path, "error", err.Error())
		msg = "Something went wrong on our side. Try again; if it persists, the server's log says more."
	}
	if err == errForgery {
		s.logger.Info("console refused a state change", "path", r.URL.Path, "origin", r.Header.Get("Origin"),
			"referer_set", r.Referer() != "", "expected_origin", s.origin(r))
	}
	sess, _ := s.session(r)
	data := errorPage{Status: status, Message: msg, SignIn: status == http.StatusUnauthorized}
	if status == http.StatusTooManyRequests {
		data.RetryAfter = retryAfter(w, err)
	}
	if rerr := s.render(w, r, sess, status, "error", http.StatusText(status), data); rerr != nil {
		s.logger.Error("console: rendering the error page", "error", rerr.Error())
		http.Error(w, msg, status)
	}
}

// errorPage is the data of the error page.
type errorPage struct {
	Status  int
	Message string
	SignIn  bool
	// RetryAfter is, for a 429, when to try again, in words.
	RetryAfter string
}

// retryAfter sets the Retry-After header of a rate-limited answer and
// says in words when to try again.
func retryAfter(w http.ResponseWriter, err error) string {
	e, ok := errors.AsType[*gatehouse.Error](err)
	if !ok {
		return ""
	}
	secs, ok := e.Metadata["retry_after_seconds"].(int64)
	if !ok {
		return ""
	}
	w.Header().Set("Retry-After", strconv.FormatInt(secs, 10))
	return (time.Duration(secs) * time.Second).String()
}

// errorStatus maps a domain error code to the status of its page.
func errorStatus(err error) int {
	if errors.Is(err, errMethod) {
		return http.StatusMethodNotAllowed
	}
	switch gatehouse.ErrorCode(err) {
	case gatehouse.EINVALID:
		return http.StatusBadRequest
	case gatehouse.EUNAUTHORIZED:
		return http.StatusUnauthorized
	case gatehouse.EFORBIDDEN:
		return http.StatusForbidden
	case gatehouse.ENOTFOUND:
		return http.StatusNotFound
	case gatehouse.ECONFLICT:
		return http.StatusConflict
	case gatehouse.ETOOLARGE:
		return http.StatusRequestEntityTooLarge
	case gatehouse.ERATELIMIT:
		return http.StatusTooManyRequests
	case gatehouse.ETIMEOUT:
		return http.StatusRequestTimeout
	case gatehouse.EUNAVAILABLE:
		return http.StatusServiceUnavailable
	case gatehouse.EPAYMENT:
		return http.StatusPaymentRequired
	}
	return http.StatusInternalServerError
}
