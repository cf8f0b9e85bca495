package httpapi

import (
	"gatehouse"
)

// The JSON shapes of responses. Every field is always present (null when
// empty): the official clients require most of them, and the OpenAPI
// document lists them all as required.

type listJSON[T any] struct {
	Data       []T `json:"data"`
	TotalCount int `json:"total_count"`
}

type dataJSON[T any] struct {
	Data T `json:"data"`
}

type deletedJSON struct {
	Deleted bool `json:"deleted"`
}

var deleted = deletedJSON{Deleted: true}

type usageJSON struct {
	Usage        usd `json:"usage"`
	UsageDaily   usd `json:"usage_daily"`
	UsageWeekly  usd `json:"usage_weekly"`
	UsageMonthly usd `json:"usage_monthly"`
	BYOK         usd `json:"byok_usage"`
	BYOKDaily    usd `json:"byok_usage_daily"`
	BYOKWeekly   usd `json:"byok_usage_weekly"`
	BYOKMonthly  usd `json:"byok_usage_monthly"`
}

// limitJSON holds the limit fields shared by the key and current-key objects.
type limitJSON struct {
	Limit              *usd    `json:"limit"`
	LimitRemaining     *usd    `json:"limit_remaining"`
	LimitReset         *string `json:"limit_reset"`
	IncludeBYOKInLimit bool    `json:"include_byok_in_limit"`
}

type keyJSON struct {
	Hash     string `json:"hash"`
	Name     string `json:"name"`
	Label    string `json:"label"`
	Disabled bool   `json:"disabled"`
	limitJSON
	usageJSON
	CreatedAt     jsonTime  `json:"created_at"`
	UpdatedAt     *jsonTime `json:"updated_at"`
	ExpiresAt     *jsonTime `json:"expires_at"`
	CreatorUserID *string   `json:"creator_user_id"`
	WorkspaceID   string    `json:"workspace_id"`
	ExternalUser  *string   `json:"external_user"`
}

func (s *Server) usage(k *gatehouse.Key) (limitJSON, usageJSON) {
	now := s.now()
	u, b := k.Usage.At(now), k.BYOKUsage.At(now)
	return limitJSON{
			Limit: usdPtr(k.Limit), LimitRemaining: usdPtr(k.LimitRemaining(now)), LimitReset: intervalPtr(k.LimitReset),
			IncludeBYOKInLimit: k.IncludeBYOKInLimit,
		}, usageJSON{
			Usage: usdOf(u.Total), UsageDaily: usdOf(u.Daily), UsageWeekly: usdOf(u.Weekly), UsageMonthly: usdOf(u.Monthly),
			BYOK: usdOf(b.Total), BYOKDaily: usdOf(b.Daily), BYOKWeekly: usdOf(b.Weekly), BYOKMonthly: usdOf(b.Monthly),
		}
}

func (s *Server) keyJSON(k *gatehouse.Key) keyJSON {
	limits, usage := s.usage(k)
	return keyJSON{
		Hash: k.Hash, Name: k.Name, Label: k.Name, Disabled: k.Disabled,
		limitJSON: limits, usageJSON: usage,
		CreatedAt: newJSONTime(k.CreatedAt), UpdatedAt: jsonTimePtr(k.UpdatedAt), ExpiresAt: jsonTimePtr(k.ExpiresAt),
		CreatorUserID: k.CreatorUserID, WorkspaceID: k.WorkspaceID, ExternalUser: k.ExternalUser,
	}
}

// currentKeyOf is the key that authenticated as GET /key shows it. The
// handler writes it with appendCurrentKey; this struct is its declaration,
// which TestAppendedJSONMatchesWireStructs holds the appender to.
func (s *Server) currentKeyOf(k *gatehouse.Key) currentKeyJSON {
	limits, usage := s.usage(k)
	cur := currentKeyJSON{
		Label: k.Name, limitJSON: limits, usageJSON: usage, CreatorUserID: k.CreatorUserID,
		ExpiresAt: jsonTimePtr(k.ExpiresAt), IsManagementKey: k.Management, IsProvisioningKey: k.Management,
		OrganizationID:         &k.OrganizationID,
		AllowedDataRegions:     []string{"global", "europe", "us"},
		FreeModelDailyRequests: freeModelRequestsJSON{},
		RateLimit:              legacyRateLimitJSON{Requests: -1, Interval: "10s", Note: "deprecated"},
	}
	if !k.Management {
		cur.WorkspaceID = &k.WorkspaceID
	}
	return cur
}

type currentKeyJSON struct {
	Label string `json:"label"`
	limitJSON
	usageJSON
	CreatorUserID          *string               `json:"creator_user_id"`
	ExpiresAt              *jsonTime             `json:"expires_at"`
	IsManagementKey        bool                  `json:"is_management_key"`
	IsProvisioningKey      bool                  `json:"is_provisioning_key"`
	IsFreeTier             bool                  `json:"is_free_tier"`
	OrganizationID         *string               `json:"organization_id"`
	WorkspaceID            *string               `json:"workspace_id"`
	AllowedDataRegions     []string              `json:"allowed_data_regions"`
	FreeModelDailyRequests freeModelRequestsJSON `json:"free_model_daily_requests"`
	RateLimit              legacyRateLimitJSON   `json:"rate_limit"`
}

type freeModelRequestsJSON struct {
	Limit     int `json:"limit"`
	Remaining int `json:"remaining"`
	Used      int `json:"used"`
}

type legacyRateLimitJSON struct {
	Requests int    `json:"requests"`
	Interval string `json:"interval"`
	Note     string `json:"note"`
}

type workspaceJSON struct {
	ID                              string    `json:"id"`
	Name                            string    `json:"name"`
	Slug                            string    `json:"slug"`
	Description                     *string   `json:"description"`
	DefaultTextModel                *string   `json:"default_text_model"`
	DefaultImageModel               *string   `json:"default_image_model"`
	DefaultProviderSort             *string   `json:"default_provider_sort"`
	DisabledServerTools             []string  `json:"disabled_server_tools"`
	IOLoggingAPIKeyIDs              []int64   `json:"io_logging_api_key_ids"`
	IOLoggingSamplingRate           float64   `json:"io_logging_sampling_rate"`
	IsDataDiscountLoggingEnabled    bool      `json:"is_data_discount_logging_enabled"`
	IsObservabilityBroadcastEnabled bool      `json:"is_observability_broadcast_enabled"`
	IsObservabilityIOLoggingEnabled bool      `json:"is_observability_io_logging_enabled"`
	IncludeBYOKInBudgets            bool      `json:"include_byok_in_budgets"`
	DefaultGuardrailID              string    `json:"default_guardrail_id"`
	CreatedBy                       *string   `json:"created_by"`
	CreatedAt                       jsonTime  `json:"created_at"`
	UpdatedAt                       *jsonTime `json:"updated_at"`
}

func toWorkspaceJSON(w *gatehouse.Workspace) workspaceJSON {
	return workspaceJSON{
		ID: w.ID, Name: w.Name, Slug: w.Slug, Description: w.Description, DefaultTextModel: w.DefaultTextModel,
		DefaultImageModel: w.DefaultImageModel, DefaultProviderSort: w.DefaultProviderSort,
		DisabledServerTools: w.DisabledServerTools, IOLoggingAPIKeyIDs: w.IOLoggingAPIKeyIDs,
		IOLoggingSamplingRate:           w.IOLoggingSamplingRate,
		IsDataDiscountLoggingEnabled:    w.IsDataDiscountLoggingEnabled,
		IsObservabilityBroadcastEnabled: w.IsObservabilityBroadcastEnabled,
		IsObservabilityIOLoggingEnabled: w.IsObservabilityIOLoggingEnabled,
		IncludeBYOKInBudgets:            w.IncludeBYOKInBudgets,
		DefaultGuardrailID:              gatehouse.DefaultGuardrailID(w.ID),
		CreatedBy:                       w.CreatedBy, CreatedAt: newJSONTime(w.CreatedAt), UpdatedAt: jsonTimePtr(w.UpdatedAt),
	}
}

type workspaceMemberJSON struct {
	ID          string   `json:"id"`
	WorkspaceID string   `json:"workspace_id"`
	UserID      string   `json:"user_id"`
	Role        string   `json:"role"`
	CreatedAt   jsonTime `json:"created_at"`
}

func toWorkspaceMemberJSON(m *gatehouse.WorkspaceMember) workspaceMemberJSON {
	return workspaceMemberJSON{ID: m.ID, WorkspaceID: m.WorkspaceID, UserID: m.UserID, Role: m.Role, CreatedAt: newJSONTime(m.CreatedAt)}
}

type memberJSON struct {
	ID        string  `json:"id"`
	Email     string  `json:"email"`
	FirstName *string `json:"first_name"`
	LastName  *string `json:"last_name"`
	Role      string  `json:"role"`
}

func toMemberJSON(m *gatehouse.Member) memberJSON {
	return memberJSON{ID: m.ID, Email: m.Email, FirstName: m.FirstName, LastName: m.LastName, Role: m.Role}
}

type guardrailJSON struct {
	ID                         string                           `json:"id"`
	Name                       string                           `json:"name"`
	Description                *string                          `json:"description"`
	WorkspaceID                string                           `json:"workspace_id"`
	AllowedModels              []string                         `json:"allowed_models"`
	AllowedProviders           []string                         `json:"allowed_providers"`
	IgnoredModels              []string                         `json:"ignored_models"`
	IgnoredProviders           []string                         `json:"ignored_providers"`
	LimitUSD                   *usd                             `json:"limit_usd"`
	ResetInterval              *string                          `json:"reset_interval"`
	IncludeBYOKInBudgets       bool                             `json:"include_byok_in_budgets"`
	EnforceZDR                 *bool                            `json:"enforce_zdr"`
	EnforceZDRAnthropic        *bool                            `json:"enforce_zdr_anthropic"`
	EnforceZDROpenAI           *bool                            `json:"enforce_zdr_openai"`
	EnforceZDRGoogle           *bool                            `json:"enforce_zdr_google"`
	EnforceZDRXAI              *bool                            `json:"enforce_zdr_xai"`
	EnforceZDROther            *bool                            `json:"enforce_zdr_other"`
	EnableFreeModelPublication *bool                            `json:"enable_free_model_publication"`
	EnableFreeModelTraining    *bool                            `json:"enable_free_model_training"`
	EnablePaidModelTraining    *bool                            `json:"enable_paid_model_training"`
	AllowedDataRegions         []string                         `json:"allowed_data_regions"`
	ContentFilters             []gatehouse.ContentFilter        `json:"content_filters"`
	ContentFilterBuiltins      []gatehouse.ContentFilterBuiltin `json:"content_filter_builtins"`
	CreatedAt                  jsonTime                         `json:"created_at"`
	UpdatedAt                  *jsonTime                        `json:"updated_at"`
}

func toGuardrailJSON(g *gatehouse.Guardrail) guardrailJSON {
	return guardrailJSON{
		ID: g.ID, Name: g.Name, Description: g.Description, WorkspaceID: g.WorkspaceID,
		AllowedModels: g.AllowedModels, AllowedProviders: g.AllowedProviders,
		IgnoredModels: g.IgnoredModels, IgnoredProviders: g.IgnoredProviders,
		LimitUSD: usdPtr(g.LimitUSD), ResetInterval: intervalPtr(g.ResetInterval), IncludeBYOKInBudgets: g.IncludeBYOKInBudgets,
		EnforceZDR: g.EnforceZDR, EnforceZDRAnthropic: g.EnforceZDRAnthropic, EnforceZDROpenAI: g.EnforceZDROpenAI,
		EnforceZDRGoogle: g.EnforceZDRGoogle, EnforceZDRXAI: g.EnforceZDRXAI, EnforceZDROther: g.EnforceZDROther,
		EnableFreeModelPublication: g.EnableFreeModelPublication, EnableFreeModelTraining: g.EnableFreeModelTraining,
		EnablePaidModelTraining: g.EnablePaidModelTraining, AllowedDataRegions: g.AllowedDataRegions,
		ContentFilters: g.ContentFilters, ContentFilterBuiltins: g.ContentFilterBuiltins,
		CreatedAt: newJSONTime(g.CreatedAt), UpdatedAt: jsonTimePtr(g.UpdatedAt),
	}
}

type keyAssignmentJSON struct {
	ID          string   `json:"id"`
	GuardrailID string   `json:"guardrail_id"`
	KeyHash     string   `json:"key_hash"`
	KeyName     string   `json:"key_name"`
	KeyLabel    string   `json:"key_label"`
	AssignedBy  *string  `json:"assigned_by"`
	CreatedAt   jsonTime `json:"created_at"`
}

func toKeyAssignmentJSON(a *gatehouse.KeyAssignment) keyAssignmentJSON {
	return keyAssignmentJSON{ID: a.ID, GuardrailID: a.GuardrailID, KeyHash: a.KeyHash, KeyName: a.KeyName,
		KeyLabel: a.KeyName, AssignedBy: a.AssignedBy, CreatedAt: newJSONTime(a.CreatedAt)}
}

type memberAssignmentJSON struct {
	ID             string   `json:"id"`
	GuardrailID    string   `json:"guardrail_id"`
	UserID         string   `json:"user_id"`
	OrganizationID string   `json:"organization_id"`
	AssignedBy     *string  `json:"assigned_by"`
	CreatedAt      jsonTime `json:"created_at"`
}

func toMemberAssignmentJSON(a *gatehouse.MemberAssignment) memberAssignmentJSON {
	return memberAssignmentJSON{ID: a.ID, GuardrailID: a.GuardrailID, UserID: a.UserID,
		OrganizationID: a.OrganizationID, AssignedBy: a.AssignedBy, CreatedAt: newJSONTime(a.CreatedAt)}
}

type destinationJSON struct {
	ID                                string                 `json:"id"`
	WorkspaceID                       string                 `json:"workspace_id"`
	Name                              *string                `json:"name"`
	Type                              string                 `json:"type"`
	Config                            map[string]any         `json:"config"`
	Enabled                           bool                   `json:"enabled"`
	PrivacyMode                       bool                   `json:"privacy_mode"`
	SamplingRate                      float64                `json:"sampling_rate"`
	APIKeyHashes                      []string               `json:"api_key_hashes"`
	FilterRules                       *gatehouse.FilterRules `json:"filter_rules"`
	Regions                           []string               `json:"regions"`
	BroadcastGenerationCost           bool                   `json:"broadcast_generation_cost"`
	BroadcastGenerationIdentity       bool                   `json:"broadcast_generation_identity"`
	BroadcastGenerationRequestContext bool                   `json:"broadcast_generation_request_context"`
	CreatedAt                         jsonTime               `json:"created_at"`
	UpdatedAt                         jsonTime               `json:"updated_at"`
	// SecretsUnreadable is Gatehouse's own, present only when true: the
	// server's key does not open the destination's secrets.
	SecretsUnreadable bool `json:"secrets_unreadable,omitempty"`
	// Delivery is Gatehouse's own: how deliveries to it have gone.
	Delivery *deliveryJSON `json:"delivery"`
}

// deliveryJSON is a destination's delivery status.
type deliveryJSON struct {
	Sent          int64     `json:"sent"`
	Failed        int64     `json:"failed"`
	Dropped       int64     `json:"dropped"`
	LastSuccessAt *jsonTime `json:"last_success_at"`
	LastErrorAt   *jsonTime `json:"last_error_at"`
	LastError     *string   `json:"last_error"`
}

func toDeliveryJSON(st gatehouse.DeliveryStatus) *deliveryJSON {
	out := &deliveryJSON{Sent: st.Sent, Failed: st.Failed, Dropped: st.Dropped,
		LastSuccessAt: jsonTimePtr(st.LastSuccessAt), LastErrorAt: jsonTimePtr(st.LastErrorAt)}
	if st.LastError != "" {
		out.LastError = &st.LastError
	}
	return out
}

// toDestinationJSON renders a destination with its secrets masked.
func toDestinationJSON(d *gatehouse.Destination) destinationJSON {
	masked := d.ShownConfig()
	config := make(map[string]any, len(masked.Values)+1)
	for k, v := range masked.Values {
		config[k] = v
	}
	if masked.Headers != nil {
		config["headers"] = masked.Headers
	}
	return destinationJSON{
		ID: d.ID, WorkspaceID: d.WorkspaceID, Name: d.Name, Type: d.Type, Config: config, Enabled: d.Enabled,
		PrivacyMode: d.PrivacyMode, SamplingRate: d.SamplingRate, APIKeyHashes: d.APIKeyHashes,
		FilterRules: d.FilterRules, Regions: d.Regions,
		BroadcastGenerationCost:           d.BroadcastGenerationCost,
		BroadcastGenerationIdentity:       d.BroadcastGenerationIdentity,
		BroadcastGenerationRequestContext: d.BroadcastGenerationRequestContext,
		CreatedAt:                         newJSONTime(d.CreatedAt), UpdatedAt: newJSONTime(d.UpdatedAt),
		SecretsUnreadable: d.SecretsUnreadable,
	}
}

// mapSlice converts every element of a slice.
func mapSlice[T, U any](in []T, f func(T) U) []U {
	out := make([]U, len(in))
	for i, v := range in {
		out[i] = f(v)
	}
	return out
}
