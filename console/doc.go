// Package console is Gatehouse's web console: server-rendered pages
// (html/template) over the same store and domain code as the API, served
// by the same binary beside /api/v1 (cmd/gatehouse mounts its routes on the
// API's handler, so they are logged and counted alike). Its assets (a
// stylesheet, one script of our own and the vendored Chart.js, see
// assets/vendor/README.md) are embedded: nothing is fetched from the
// internet, and no Node is needed.
//
// # Security
//
// Sessions live in the store (gatehouse.AccountService) and are read
// through the sign-in policy (gatehouse.Accounts); the cookie holds only
// the session's token: HttpOnly, SameSite=Lax, Path=/, and Secure with the
// __Host- prefix over HTTPS (or behind a trusted proxy that says so). Every
// POST must come from the console's own origin (Origin, else Referer), and
// a signed-in session's POST must carry the session's CSRF token (the form
// field csrf, or the X-CSRF-Token header). Every answer carries a strict
// Content-Security-Policy (no inline script or style), X-Frame-Options
// DENY, nosniff, Referrer-Policy same-origin and Cache-Control no-store.
// Every change is made with the session as the actor of the audit log
// (gatehouse.WithActor), which the page adapter puts in the context.
//
// # Who sees what
//
// An admin (a member whose role is org:admin, or a management key's
// session) sees and changes everything of the organization. A member sees
// and changes only what is theirs:
//
//   - the overview, their keys (another's is a 404, even by URL) and each
//     key's page;
//   - the activity (activity.go): the ledger of their own keys only, the
//     search scoped by sess.KeyScope whatever the filters (a key filter
//     names only one of theirs);
//   - the keys page filtered by a workspace they belong to (another is a
//     404; the filter by member is an admin's);
//   - the authorization page, for keys of their own in their workspaces.
//
// Workspaces, guardrails, observability destinations, members and the
// audit log are admins' pages (s.admin): a member's menu does not offer
// them, and each, and every form of theirs, answers a member 403.
//
// What a page changes goes through the store (and, for destinations,
// gatehouse.Destinations, which holds the egress check and the trace
// publisher's invalidation the API applies too), so that no rule is
// written twice. Lists that can hold millions of rows (keys, the ledger,
// the audit log) page by cursor and never count.
//
// # Adding a page
//
// A page is a handler, a line in routes.go and a template. The handler is
// a method of Server that returns its error instead of writing it (an
// error becomes an error page with its status: 404, 403, 400...):
//
//	func (s *Server) workspaces(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
//		list, _, err := s.store.FindWorkspaces(r.Context(), sess.OrganizationID, gatehouse.Page{Limit: 100})
//		if err != nil {
//			return err
//		}
//		return s.render(w, r, sess, http.StatusOK, "workspaces", "Workspaces", list)
//	}
//
// Then:
//
//  1. Register it in routes.go: s.page for any signed-in session, s.admin
//     for admins only (a member gets a 403), s.handle for no session at
//     all. A POST route needs nothing more: the adapter has checked the
//     origin and the CSRF token before the handler runs. A member sees only
//     their own things: scope every query by the session (sess.KeyScope,
//     sess.MayManageKey), and answer 404 for anything else.
//  2. Add templates/workspaces.html, which defines "content"; the layout
//     gives it the view: .Page is the handler's data, .Session the session.
//     A form carries the token with {{template "csrf" .}} ($ inside a
//     range). A field is {{template "field" (field .Page.Form "name" "Name"
//     "text")}}, with .Needed, .Hinted "…", .Choices list and .Default "…"
//     (see form.go and partials/form.html): a label, the value, and the
//     error next to the field. A text area (a list, one entry a line) is
//     {{template "area" (field … "textarea")}}, a checkbox {{template
//     "box" (field … "checkbox")}}, a group of checkboxes of one name
//     {{template "checks" (checks .Page.Form "name" "Label" options)}}
//     (fields.go, partials/fields.html). A page of several forms (a
//     workspace's: settings, budgets, members, deletion) keeps one form
//     value each, so that a refusal shows next to the form that made it.
//  3. A POST handler reads its form with newForm(w, r). When the store
//     refuses it, form.withError(err, "name", ...) puts an EINVALID error
//     that names one of the fields next to it (the domain's FieldError), and
//     any other EINVALID or ECONFLICT error above the form; the handler then
//     renders the page again with the form and a 400. After a change,
//     redirect with 303 to the page with ?done=KEY, KEY one of the fixed
//     notices of render.go (a link cannot make the console say anything
//     else). A secret (a new key, a link) is shown once, in the answer to
//     the POST itself, never in a URL.
//  4. If the page belongs in the menu, add a line to nav in routes.go.
//  5. Test it in a real browser: newEnv(t) is a real server, e.newBrowser(t)
//     a Chromium (browser_test.go: visit, fill, submit, text, narrow,
//     screenshot; signInWithKey, signIn), e.client() a browser without
//     JavaScript for what the server must enforce (client_test.go). Every
//     browser test fails on an error of the page and on a request that
//     leaves the loopback.
package console
