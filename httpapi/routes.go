package httpapi

import (
	"gatehouse/preset"
	"net/http"

	"gatehouse"
)

// routes registers every operation. Each line names the method and path,
// who may call it, and its handler.
func (s *Server) routes(metrics http.Handler) {
	m := s.mux
	const v1 = "/api/v1"

	m.HandleFunc("GET /healthz", s.serve(s.healthz))
	m.HandleFunc("GET /readyz", s.serve(s.readyz))
	m.HandleFunc("GET /metrics", s.serve(func(w http.ResponseWriter, r *http.Request) error {
		if s.metricsElsewhere {
			return gatehouse.Errorf(gatehouse.ENOTFOUND, "no such route: GET /metrics (metrics are served on GATEHOUSE_METRICS_ADDR)")
		}
		metrics.ServeHTTP(w, r)
		return nil
	}))
	m.HandleFunc("GET "+v1+"/openapi.json", serveOpenAPI)

	m.HandleFunc("GET "+v1+"/key", s.authenticated(s.getCurrentKey))
	m.HandleFunc("GET "+v1+"/keys", s.management(s.listKeys))
	m.HandleFunc("POST "+v1+"/keys", s.management(s.createKey))
	m.HandleFunc("GET "+v1+"/keys/{hash}", s.management(s.getKey))
	m.HandleFunc("PATCH "+v1+"/keys/{hash}", s.management(s.updateKey))
	m.HandleFunc("DELETE "+v1+"/keys/{hash}", s.management(noBody(s.deleteKey)))

	m.HandleFunc("POST "+v1+"/auth/keys/code", s.authenticated(s.createAuthCode))
	m.HandleFunc("POST "+v1+"/auth/keys", s.public(s.exchangeAuthCode))

	m.HandleFunc("GET "+v1+"/workspaces", s.management(s.listWorkspaces()))
	m.HandleFunc("POST "+v1+"/workspaces", s.management(s.createWorkspace))
	m.HandleFunc("GET "+v1+"/workspaces/{id}", s.management(s.getWorkspace))
	m.HandleFunc("PATCH "+v1+"/workspaces/{id}", s.management(s.updateWorkspace))
	m.HandleFunc("DELETE "+v1+"/workspaces/{id}", s.management(noBody(s.deleteWorkspace)))
	m.HandleFunc("GET "+v1+"/workspaces/{id}/members", s.management(s.listWorkspaceMembers()))
	m.HandleFunc("POST "+v1+"/workspaces/{id}/members/add", s.management(s.addWorkspaceMembers))
	m.HandleFunc("POST "+v1+"/workspaces/{id}/members/remove", s.management(s.removeWorkspaceMembers))
	m.HandleFunc("GET "+v1+"/workspaces/{id}/budgets", s.management(s.listWorkspaceBudgets))
	m.HandleFunc("GET "+v1+"/workspaces/{id}/budgets/{interval}", s.management(s.getWorkspaceBudget))
	m.HandleFunc("PUT "+v1+"/workspaces/{id}/budgets/{interval}", s.management(s.setWorkspaceBudget))
	m.HandleFunc("DELETE "+v1+"/workspaces/{id}/budgets/{interval}", s.management(noBody(s.deleteWorkspaceBudget)))

	m.HandleFunc("GET "+v1+"/credits", s.management(s.getCredits))
	m.HandleFunc("POST "+v1+"/credits/grants", s.management(s.grantCredits))

	m.HandleFunc("GET "+v1+"/guardrails", s.management(s.listGuardrails))
	m.HandleFunc("POST "+v1+"/guardrails", s.management(s.createGuardrail))
	m.HandleFunc("GET "+v1+"/guardrails/{id}", s.management(s.getGuardrail))
	m.HandleFunc("PATCH "+v1+"/guardrails/{id}", s.management(s.updateGuardrail))
	m.HandleFunc("DELETE "+v1+"/guardrails/{id}", s.management(noBody(s.deleteGuardrail)))
	m.HandleFunc("GET "+v1+"/guardrails/{id}/assignments/keys", s.management(s.listKeyAssignments()))
	m.HandleFunc("POST "+v1+"/guardrails/{id}/assignments/keys", s.management(s.assignKeys()))
	m.HandleFunc("POST "+v1+"/guardrails/{id}/assignments/keys/remove", s.management(s.unassignKeys()))
	m.HandleFunc("GET "+v1+"/guardrails/{id}/assignments/members", s.management(s.listMemberAssignments()))
	m.HandleFunc("POST "+v1+"/guardrails/{id}/assignments/members", s.management(s.assignMembers()))
	m.HandleFunc("POST "+v1+"/guardrails/{id}/assignments/members/remove", s.management(s.unassignMembers()))
	// More specific than /guardrails/{id}/..., so these never reach the routes above.
	m.HandleFunc("GET "+v1+"/guardrails/assignments/keys", s.management(s.listKeyAssignments()))
	m.HandleFunc("GET "+v1+"/guardrails/assignments/members", s.management(s.listMemberAssignments()))

	m.HandleFunc("GET "+v1+"/observability/destinations", s.management(s.listDestinations()))
	m.HandleFunc("POST "+v1+"/observability/destinations", s.management(s.createDestination))
	m.HandleFunc("GET "+v1+"/observability/destinations/{id}", s.management(s.getDestination))
	m.HandleFunc("PATCH "+v1+"/observability/destinations/{id}", s.management(s.updateDestination))
	m.HandleFunc("DELETE "+v1+"/observability/destinations/{id}", s.management(noBody(s.deleteDestination)))
	m.HandleFunc("POST "+v1+"/observability/destinations/{id}/test", s.management(noBody(s.testDestination)))

	m.HandleFunc("GET "+v1+"/byok", s.management(s.listBYOKKeys()))
	m.HandleFunc("POST "+v1+"/byok", s.management(s.createBYOKKey))
	m.HandleFunc("GET "+v1+"/byok/{id}", s.management(s.getBYOKKey))
	m.HandleFunc("PATCH "+v1+"/byok/{id}", s.management(s.updateBYOKKey))
	m.HandleFunc("DELETE "+v1+"/byok/{id}", s.management(noBody(s.deleteBYOKKey)))

	m.HandleFunc("GET "+v1+"/organization/members", s.management(s.listMembers()))
	m.HandleFunc("POST "+v1+"/organization/members", s.management(s.addMember))
	m.HandleFunc("PATCH "+v1+"/organization/members/{user_id}", s.management(s.updateMember))
	m.HandleFunc("DELETE "+v1+"/organization/members/{user_id}", s.management(noBody(s.removeMember)))
	m.HandleFunc("POST "+v1+"/organization/members/{user_id}/password-reset", s.management(noBody(s.resetPassword)))
	m.HandleFunc("GET "+v1+"/organization/invitations", s.management(s.listInvitations()))
	m.HandleFunc("POST "+v1+"/organization/invitations", s.management(s.createInvitation))
	m.HandleFunc("DELETE "+v1+"/organization/invitations/{id}", s.management(noBody(s.deleteInvitation)))

	m.HandleFunc("GET "+v1+"/sso/providers", s.management(s.listSSOProviders()))
	m.HandleFunc("POST "+v1+"/sso/providers", s.management(s.createSSOProvider))
	m.HandleFunc("GET "+v1+"/sso/providers/{id}", s.management(s.getSSOProvider))
	m.HandleFunc("PATCH "+v1+"/sso/providers/{id}", s.management(s.updateSSOProvider))
	m.HandleFunc("DELETE "+v1+"/sso/providers/{id}", s.management(noBody(s.deleteSSOProvider)))
	m.HandleFunc("GET "+v1+"/sso/settings", s.management(s.getSignInSettings))
	m.HandleFunc("PATCH "+v1+"/sso/settings", s.management(s.updateSignInSettings))
	m.HandleFunc("GET "+v1+"/sso/group-mappings", s.management(s.listGroupMappings()))
	m.HandleFunc("POST "+v1+"/sso/group-mappings", s.management(s.createGroupMapping))
	m.HandleFunc("GET "+v1+"/sso/group-mappings/{id}", s.management(s.getGroupMapping))
	m.HandleFunc("PATCH "+v1+"/sso/group-mappings/{id}", s.management(s.updateGroupMapping))
	m.HandleFunc("DELETE "+v1+"/sso/group-mappings/{id}", s.management(noBody(s.deleteGroupMapping)))
	m.HandleFunc("GET "+v1+"/scim/token", s.management(s.getSCIMToken))
	m.HandleFunc("POST "+v1+"/scim/token", s.management(noBody(s.createSCIMToken)))
	m.HandleFunc("DELETE "+v1+"/scim/token", s.management(noBody(s.deleteSCIMToken)))
	m.HandleFunc("GET "+v1+"/scim/groups", s.management(s.listSCIMGroups()))
	// SCIM itself (/scim/v2/Users, /scim/v2/Groups...) is the scim
	// package's, authenticated by the organization's SCIM token: cmd
	// mounts it with Handle, as it mounts the console.

	m.HandleFunc("GET "+v1+"/audit-log", s.management(s.listAuditLog()))

	m.HandleFunc("GET "+v1+"/presets", s.management(s.listPresets()))
	m.HandleFunc("GET "+v1+"/presets/{slug}", s.management(s.getPreset))
	m.HandleFunc("GET "+v1+"/presets/{slug}/versions", s.management(s.listPresetVersions()))
	m.HandleFunc("GET "+v1+"/presets/{slug}/versions/{version}", s.management(s.getPresetVersion))
	m.HandleFunc("POST "+v1+"/presets/{slug}/chat/completions", s.management(savePreset[preset.ChatPresetRequest](s)))
	m.HandleFunc("POST "+v1+"/presets/{slug}/messages", s.management(savePreset[preset.MessagesPresetRequest](s)))
	m.HandleFunc("POST "+v1+"/presets/{slug}/responses", s.management(savePreset[preset.ResponsesPresetRequest](s)))
	m.HandleFunc("GET "+v1+"/activity", s.management(s.getActivity))
	m.HandleFunc("GET "+v1+"/analytics/meta", s.management(s.getAnalyticsMeta))
	m.HandleFunc("POST "+v1+"/analytics/query", s.management(s.queryAnalytics))

	m.HandleFunc("POST "+v1+"/chat/completions", s.authenticated(s.chatCompletions))
	m.HandleFunc("POST "+v1+"/responses", s.authenticated(s.createResponse))
	m.HandleFunc("POST "+v1+"/messages", s.messagesRoute(s.createMessage))
	m.HandleFunc("POST "+v1+"/embeddings", s.authenticated(s.createEmbeddings))
	m.HandleFunc("GET "+v1+"/embeddings/models", s.public(s.listEmbeddingModels))
	m.HandleFunc("GET "+v1+"/models", s.public(s.listModels))
	m.HandleFunc("GET "+v1+"/models/count", s.public(s.countModels))
	m.HandleFunc("GET "+v1+"/models/user", s.authenticated(s.listModelsForUser))
	m.HandleFunc("GET "+v1+"/model/{author}/{slug}", s.public(s.getModel))
	m.HandleFunc("GET "+v1+"/models/{author}/{slug}/endpoints", s.public(s.listEndpoints))
	m.HandleFunc("GET "+v1+"/endpoints/zdr", s.public(s.listZDREndpoints))
	m.HandleFunc("GET "+v1+"/providers", s.public(s.listProviders))
	m.HandleFunc("GET "+v1+"/generation", s.authenticated(s.shared(s.getGeneration)))
	m.HandleFunc("GET "+v1+"/generation/content", s.authenticated(s.shared(s.getGenerationContent)))
	m.HandleFunc("POST "+v1+"/generation/feedback", s.management(s.submitFeedback))
	m.HandleFunc("GET "+v1+"/generation/feedback", s.management(s.listFeedback()))

	m.HandleFunc("/", s.serve(s.notFound))
}
