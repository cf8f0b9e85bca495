// Package console is Gatehouse's web console: server-rendered pages
// (html/template) over the same store and domain code as the API, served
// by the same binary beside /api/v1. Its assets (a stylesheet, one script
// of our own and the vendored Chart.js) are embedded, so nothing is fetched
// from the internet and no Node is needed.
//
// # Security
//
// Sessions live in the store (gatehouse.AccountService); the cookie holds
// only the session's token: HttpOnly, SameSite=Lax, Secure and __Host-
// prefixed over HTTPS (or behind a trusted proxy that says so). Every POST
// must come from the console's own origin (Origin, else Referer), and a
// signed-in session's POST must carry the session's CSRF token (the form
// field csrf, or the X-CSRF-Token header). Every answer carries a strict
// Content-Security-Policy (no inline script or style), X-Frame-Options
// DENY, nosniff, Referrer-Policy same-origin and Cache-Control no-store.
// Every change is made with the session as the actor of the audit log
// (gatehouse.WithActor), which the page adapter puts in the context.
//
// # Adding a page
//
//  1. Write the handler, in a file of its own (workspaces.go, say), as a
//     method of Server that returns its error instead of writing it:
//
//     func (s *Server) workspaces(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
//     list, _, err := s.store.FindWorkspaces(r.Context(), sess.OrganizationID, gatehouse.Page{Limit: 100})
//     if err != nil {
//     return err // rendered as an error page with its status (404, 403, ...)
//     }
//     return s.render(w, r, sess, http.StatusOK, "workspaces", "Workspaces", list)
//     }
//
//  2. Register it in routes.go: s.page for any signed-in session, s.admin
//     for admins only (members get a 403), s.handle for no session at all.
//     POST routes need nothing more: the adapter checks the origin and the
//     CSRF token first. A member sees only their own things: scope every
//     query by sess (see keyScope), and answer 404 for anything else.
//  3. Add the template templates/workspaces.html, which defines "content"
//     (the layout gives it the data as .Page, the session as .Session).
//     A form carries the token with {{template "csrf" .}}; a field uses
//     {{template "field" (field .Page.Form "name" "Name" "text")}} (see
//     partials/form.html), which shows the label, the value and the error
//     next to the field. A POST handler that fails validation renders the
//     page again with newForm(r).withError(err): an EINVALID error that
//     names a field lands next to it.
//  4. If the page belongs in the menu, add a line to nav in routes.go.
//  5. Test it in a real browser (browser_test.go): newBrowser(t) and the
//     env's helpers (signInWithKey, visit, submit, screenshot). Every test
//     fails on a console error of the page or a request to another host.
//
// After a change, redirect with 303 to the page with ?done=KEY, where KEY
// names one of the fixed notices of render.go (a link cannot make the
// console say anything else). Show a secret (a new key, a link) once, in
// the answer to the POST itself, never in a URL.
package console
