package console

import "gatehouse"

// register registers every route of the console, one per line: who may
// call it (handle: anyone; page: a signed-in session; admin: an admin's
// session) and its handler. Every POST is checked for its origin, and a
// session's POST for its CSRF token, before the handler runs.
func (s *Server) register() {
	s.handle("GET /assets/{file...}", s.asset)

	s.handle("GET /sign-in", s.signInPage)
	s.handle("POST /sign-in", s.signInWithPassword)
	s.handle("POST /sign-in/key", s.signInWithKey)
	s.page("GET /account", s.account)
	s.page("POST /sign-out", s.signOut)
	s.page("POST /sign-out/everywhere", s.signOutEverywhere)
	s.handle("GET /sso/start/{id}", s.ssoStart)
	s.handle("GET "+gatehouse.RedirectPath, s.ssoCallback)
	s.handle("GET /invite/{token}", s.invitationPage)
	s.handle("POST /invite/{token}", s.acceptInvitation)

	s.page("GET /{$}", s.overview)
	s.page("GET /keys", s.keys)
	s.page("POST /keys", s.createKey)
	s.page("GET /keys/{hash}", s.key)
	s.page("POST /keys/{hash}", s.updateKey)
	s.page("POST /keys/{hash}/disable", s.disableKey)
	s.page("POST /keys/{hash}/enable", s.enableKey)
	s.page("POST /keys/{hash}/delete", s.deleteKey)

	s.admin("GET /members", s.members)
	s.admin("POST /members/invite", s.invite)
	s.admin("POST /members/{id}/role", s.changeRole)
	s.admin("POST /members/{id}/reset", s.resetPassword)
	s.admin("POST /members/{id}/remove", s.removeMember)
	s.admin("POST /invitations/{id}/revoke", s.revokeInvitation)

	s.admin("GET /workspaces", s.workspaces)
	s.admin("POST /workspaces", s.createWorkspace)
	s.admin("GET /workspaces/{id}", s.workspace)
	s.admin("POST /workspaces/{id}", s.updateWorkspace)
	s.admin("POST /workspaces/{id}/delete", s.deleteWorkspace)
	s.admin("POST /workspaces/{id}/budgets", s.setWorkspaceBudget)
	s.admin("POST /workspaces/{id}/budgets/{interval}/delete", s.clearWorkspaceBudget)
	s.admin("POST /workspaces/{id}/members/add", s.addWorkspaceMembers)
	s.admin("POST /workspaces/{id}/members/remove", s.removeWorkspaceMembers)

	s.admin("GET /guardrails", s.guardrails)
	s.admin("POST /guardrails", s.createGuardrail)
	s.admin("GET /guardrails/{id}", s.guardrail)
	s.admin("POST /guardrails/{id}", s.updateGuardrail)
	s.admin("POST /guardrails/{id}/delete", s.deleteGuardrail)
	s.admin("POST /guardrails/{id}/keys/assign", s.assignGuardrailKeys)
	s.admin("POST /guardrails/{id}/keys/unassign", s.unassignGuardrailKeys)
	s.admin("POST /guardrails/{id}/members/assign", s.assignGuardrailMembers)
	s.admin("POST /guardrails/{id}/members/unassign", s.unassignGuardrailMembers)

	s.admin("GET /destinations", s.destinations)
	s.admin("GET /destinations/new", s.newDestination)
	s.admin("POST /destinations", s.createDestination)
	s.admin("GET /destinations/{id}", s.destination)
	s.admin("POST /destinations/{id}", s.updateDestination)
	s.admin("POST /destinations/{id}/delete", s.deleteDestination)
	s.admin("POST /destinations/{id}/test", s.testDestination)

	s.admin("GET /sso", s.ssoPage)
	s.admin("POST /sso/providers", s.createProvider)
	s.admin("GET /sso/providers/{id}", s.provider)
	s.admin("POST /sso/providers/{id}", s.updateProvider)
	s.admin("POST /sso/providers/{id}/delete", s.deleteProvider)
	s.admin("POST /sso/settings", s.updateSignIn)
	s.admin("POST /sso/mappings", s.createMapping)
	s.admin("POST /sso/mappings/{id}/delete", s.deleteMapping)
	s.admin("POST /sso/scim-token", s.createSCIMToken)
	s.admin("POST /sso/scim-token/delete", s.deleteSCIMToken)

	s.admin("GET /audit", s.auditLog)
	s.page("GET /activity", s.activity)
	s.page("GET /providers", s.providers)

	s.page("GET /auth", s.authorizePage)
	s.page("POST /auth", s.authorize)
}

// navItem is an entry of the menu.
type navItem struct {
	path, label string
	adminOnly   bool
}

// nav is the menu, in order: a new page that belongs in it gets a line.
var nav = []navItem{
	{path: "/", label: "Overview"},
	{path: "/keys", label: "Keys"},
	{path: "/activity", label: "Activity"},
	{path: "/providers", label: "Providers"},
	{path: "/workspaces", label: "Workspaces", adminOnly: true},
	{path: "/guardrails", label: "Guardrails", adminOnly: true},
	{path: "/destinations", label: "Destinations", adminOnly: true},
	{path: "/members", label: "Members", adminOnly: true},
	{path: "/sso", label: "Single sign-on", adminOnly: true},
	{path: "/audit", label: "Audit log", adminOnly: true},
}
