package gatehouse

import (
	"context"
	"reflect"
	"strconv"
	"strings"
	"time"
)

// Actor is who performs an operation: the key that authenticated the
// request and the user it belongs to, or, when neither acted, what did
// (System). Operations run from the command line have no actor.
type Actor struct {
	KeyHash string
	UserID  *string
	// System is one of the ActorSystem constants, "" when a key or a
	// member acts.
	System string
}

// What acts when no key and no member does: an Actor's System. Their
// values are part of the API (an audit entry's actor.system), so they
// never change.
const (
	// ActorFirstStart is the server's first start on an empty database
	// (the organization, its workspace and the printed management key),
	// and the start that makes sure of GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY.
	ActorFirstStart = "first_start"
	// ActorKeyExchange is an application exchanging an authorization code
	// for its key (POST /auth/keys), which needs no credential.
	ActorKeyExchange = "key_exchange"
	// ActorVisitor is someone not signed in: a console sign-in attempt
	// that failed or was refused.
	ActorVisitor = "visitor"
	// ActorObservability is the delivery of traces to observability
	// destinations: it records the events a destination's full queue
	// dropped.
	ActorObservability = "observability"
)

type actorKey struct{}
type requestIDKey struct{}

// WithActor returns ctx carrying the actor, so that stores can write it
// into the audit log in the transaction of the change.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the actor of ctx, if any.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// WithRequestID returns ctx carrying the id of the request being served.
func WithRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, requestIDKey{}, id)
}

// WithClientRequestID returns ctx carrying the X-Request-Id that the client
// sent, recorded beside (never instead of) the server's request id.
func WithClientRequestID(ctx context.Context, id string) context.Context {
	return context.WithValue(ctx, clientRequestIDKey{}, id)
}

type clientRequestIDKey struct{}

// RequestIDFrom returns the request id of ctx, or "".
func RequestIDFrom(ctx context.Context) string {
	id, _ := ctx.Value(requestIDKey{}).(string)
	return id
}

// AuditRecord describes one change, as a store method records it: the
// operation, the resources it changed, and details that never hold a
// secret (field names, ids and counts, not values).
type AuditRecord struct {
	Operation    string // one of the Op constants, e.g. OpKeyUpdate
	ResourceType string // one of the Resource constants, e.g. ResourceKey
	ResourceIDs  []string
	Details      map[string]any
	// Result is one of the AuditResult constants; "" is success.
	Result string
}

// Audited operations: the Operation of every record the stores write, one
// per kind of change. Their values are part of the API (GET /api/v1/audit
// shows and filters them), so they never change.
const (
	OpOrganizationCreate       = "organization.create"
	OpMemberCreate             = "member.create"
	OpMemberDelete             = "member.delete"
	OpWorkspaceCreate          = "workspace.create"
	OpWorkspaceUpdate          = "workspace.update"
	OpWorkspaceDelete          = "workspace.delete"
	OpWorkspaceMembersAdd      = "workspace.members.add"
	OpWorkspaceMembersRemove   = "workspace.members.remove"
	OpKeyCreate                = "key.create"
	OpKeyUpdate                = "key.update"
	OpKeyDelete                = "key.delete"
	OpManagementKeyCreate      = "management_key.create"
	OpAuthCodeCreate           = "auth_code.create"
	OpAuthCodeExchange         = "auth_code.exchange" // creates the key the code was for
	OpGuardrailCreate          = "guardrail.create"
	OpGuardrailUpdate          = "guardrail.update"
	OpGuardrailDelete          = "guardrail.delete"
	OpGuardrailKeysAssign      = "guardrail.keys.assign"
	OpGuardrailKeysUnassign    = "guardrail.keys.unassign"
	OpGuardrailMembersAssign   = "guardrail.members.assign"
	OpGuardrailMembersUnassign = "guardrail.members.unassign"
	OpDestinationCreate        = "destination.create"
	OpDestinationUpdate        = "destination.update"
	OpDestinationDelete        = "destination.delete"
	// OpDestinationDrop records events a destination did not receive
	// because its queue was full (details: dropped, the count).
	OpDestinationDrop       = "destination.deliveries_dropped"
	OpGenerationFeedback    = "generation.feedback"
	OpPresetCreate          = "preset.create"         // with its version 1
	OpPresetVersionCreate   = "preset.version.create" // a new version of a preset
	OpBYOKKeyCreate         = "byok_key.create"
	OpBYOKKeyUpdate         = "byok_key.update"
	OpBYOKKeyDelete         = "byok_key.delete"
	OpWorkspaceBudgetSet    = "workspace_budget.set" // creates or updates a workspace's budget of an interval
	OpWorkspaceBudgetDelete = "workspace_budget.delete"
	OpCreditsGrant          = "credits.grant"         // adds to (or takes back from) an organization's credits
	OpManagementKeyUpdate   = "management_key.update" // disables or enables a management key
	OpManagementKeyDelete   = "management_key.delete"
	OpMemberUpdate          = "member.update"         // changes a member's role
	OpMemberPasswordReset   = "member.password_reset" // removes a password, ends the sessions, makes a link
	OpSessionCreate         = "session.create"        // a console sign-in (result failure or throttled: one refused)
	OpSessionLockout        = "session.lockout"       // failed sign-ins used up an address's or an account's budget
	OpSessionDelete         = "session.delete"        // a console sign-out
	OpSessionsDelete        = "sessions.delete"       // every console session of a member ends
	OpInvitationCreate      = "invitation.create"
	OpInvitationDelete      = "invitation.delete"
	OpInvitationAccept      = "invitation.accept" // sets a password, creating the member if need be
	OpSSOProviderCreate     = "sso_provider.create"
	OpSSOProviderUpdate     = "sso_provider.update"
	OpSSOProviderDelete     = "sso_provider.delete"
	OpSignInSettingsUpdate  = "sign_in_settings.update" // turns password sign-in on or off
	OpGroupMappingCreate    = "group_mapping.create"
	OpGroupMappingUpdate    = "group_mapping.update"
	OpGroupMappingDelete    = "group_mapping.delete"
	OpSCIMTokenCreate       = "scim_token.create" // replaces the organization's SCIM token
	OpSCIMTokenDelete       = "scim_token.delete"
	OpMemberDeactivate      = "member.deactivate" // SCIM active=false: no sign-in, sessions ended, keys disabled
	OpMemberReactivate      = "member.reactivate"
	OpSCIMGroupCreate       = "scim_group.create"
	OpSCIMGroupUpdate       = "scim_group.update" // its name, external id or members
	OpSCIMGroupDelete       = "scim_group.delete"
)

// Audited resource types: the ResourceType of audit records, whose
// ResourceIDs are ids of that kind (a key's hash for ResourceKey).
const (
	ResourceOrganization    = "organization"
	ResourceMember          = "member"
	ResourceWorkspace       = "workspace"
	ResourceKey             = "key"
	ResourceManagementKey   = "management_key"
	ResourceAuthCode        = "auth_code"
	ResourceGuardrail       = "guardrail"
	ResourceDestination     = "destination"
	ResourceGeneration      = "generation"
	ResourcePreset          = "preset"
	ResourceBYOKKey         = "byok_key"
	ResourceWorkspaceBudget = "workspace_budget"
	ResourceCreditGrant     = "credit_grant"
	ResourceSession         = "session"    // ids are hashes of session tokens
	ResourceInvitation      = "invitation" // ids are hashes of link tokens
	ResourceSSOProvider     = "sso_provider"
	ResourceSignInSettings  = "sign_in_settings" // ids are organization ids
	ResourceGroupMapping    = "group_mapping"
	ResourceSCIMToken       = "scim_token" // ids are hashes of tokens
	ResourceSCIMGroup       = "scim_group"
)

// AuditOperations returns every operation the audit log records, in the
// order of their declaration (by resource).
func AuditOperations() []string {
	return []string{
		OpOrganizationCreate, OpMemberCreate, OpMemberDelete, OpWorkspaceCreate, OpWorkspaceUpdate,
		OpWorkspaceDelete, OpWorkspaceMembersAdd, OpWorkspaceMembersRemove, OpKeyCreate, OpKeyUpdate,
		OpKeyDelete, OpManagementKeyCreate, OpAuthCodeCreate, OpAuthCodeExchange, OpGuardrailCreate,
		OpGuardrailUpdate, OpGuardrailDelete, OpGuardrailKeysAssign, OpGuardrailKeysUnassign,
		OpGuardrailMembersAssign, OpGuardrailMembersUnassign, OpDestinationCreate, OpDestinationUpdate,
		OpDestinationDelete, OpGenerationFeedback, OpPresetCreate, OpPresetVersionCreate, OpBYOKKeyCreate,
		OpBYOKKeyUpdate, OpBYOKKeyDelete, OpWorkspaceBudgetSet, OpWorkspaceBudgetDelete, OpCreditsGrant,
		OpManagementKeyUpdate, OpManagementKeyDelete, OpMemberUpdate, OpMemberPasswordReset,
		OpSessionCreate, OpSessionLockout, OpSessionDelete, OpSessionsDelete, OpInvitationCreate, OpInvitationDelete,
		OpInvitationAccept, OpSSOProviderCreate, OpSSOProviderUpdate, OpSSOProviderDelete, OpSignInSettingsUpdate,
		OpGroupMappingCreate, OpGroupMappingUpdate, OpGroupMappingDelete, OpSCIMTokenCreate, OpSCIMTokenDelete,
		OpMemberDeactivate, OpMemberReactivate, OpSCIMGroupCreate, OpSCIMGroupUpdate, OpSCIMGroupDelete,
		OpDestinationDrop,
	}
}

// AuditResourceTypes returns every resource type of the audit log.
func AuditResourceTypes() []string {
	return []string{
		ResourceOrganization, ResourceMember, ResourceWorkspace, ResourceKey, ResourceManagementKey,
		ResourceAuthCode, ResourceGuardrail, ResourceDestination, ResourceGeneration, ResourcePreset,
		ResourceBYOKKey, ResourceWorkspaceBudget, ResourceCreditGrant, ResourceSession, ResourceInvitation,
		ResourceSSOProvider, ResourceSignInSettings, ResourceGroupMapping, ResourceSCIMToken, ResourceSCIMGroup,
	}
}

// AuditEntry is a row of the audit log: a management change that
// succeeded, appended in the transaction that made it.
type AuditEntry struct {
	ID             string
	OrganizationID string
	At             time.Time
	ActorKeyHash   *string
	ActorUserID    *string
	// ActorSystem is what acted when no key or member did (an Actor's
	// System); all three nil is the command line.
	ActorSystem  *string
	Operation    string
	ResourceType string
	ResourceIDs  []string
	Details      map[string]any
	Result       string
	RequestID    *string // the server's id of the request
	// ClientRequestID is the X-Request-Id the client sent, if any: the
	// client's word, kept apart from the server's id.
	ClientRequestID *string
}

// The results of audit entries. Every recorded change succeeded: failed
// requests change nothing, so they leave no row (the request log has
// them), except refused console sign-ins, which are recorded for the
// account's organization (session.create with failure or throttled).
const (
	AuditResultSuccess   = "success"
	AuditResultFailure   = "failure"   // a sign-in with a wrong password
	AuditResultThrottled = "throttled" // a sign-in refused by the limits, unchecked
)

// NewAuditEntry fills an entry for rec at now from the actor and request
// id that ctx carries.
func NewAuditEntry(ctx context.Context, orgID string, now time.Time, rec AuditRecord) *AuditEntry {
	e := &AuditEntry{
		ID: newTimeUUID(), OrganizationID: orgID, At: now, Operation: rec.Operation,
		ResourceType: rec.ResourceType, ResourceIDs: rec.ResourceIDs, Details: rec.Details,
		Result: rec.Result,
	}
	if e.Result == "" {
		e.Result = AuditResultSuccess
	}
	if e.ResourceIDs == nil {
		e.ResourceIDs = []string{}
	}
	if a, ok := ActorFrom(ctx); ok {
		e.ActorUserID = a.UserID
		if a.KeyHash != "" { // a member signed in to the console acts without a key
			e.ActorKeyHash = &a.KeyHash
		}
		if a.System != "" {
			e.ActorSystem = &a.System
		}
	}
	if id := RequestIDFrom(ctx); id != "" {
		e.RequestID = &id
	}
	if id, _ := ctx.Value(clientRequestIDKey{}).(string); id != "" {
		e.ClientRequestID = &id
	}
	return e
}

// AuditFilter selects audit entries of one organization.
type AuditFilter struct {
	Since, Until *time.Time // At >= Since, At < Until
	Actor        string     // a key hash or a user id
	Operation    string     // one of the Op constants, e.g. OpKeyUpdate
	ResourceType string
	ResourceID   string
	Page         Page
	// After is where a page of SearchAuditEntries starts: the cursor of
	// the previous page (FindAuditEntries pages by Page.Offset instead).
	After *AuditCursor
}

// Validate checks the filter's text: each must be UTF-8 without NUL (no
// entry holds other text). EINVALID naming the field.
func (f *AuditFilter) Validate() error {
	for _, t := range []struct{ name, v string }{
		{"actor", f.Actor}, {"operation", f.Operation}, {"resource_type", f.ResourceType}, {"resource_id", f.ResourceID},
	} {
		if !IsPlainText(t.v) {
			return FieldError(t.name, "must be UTF-8 text without NUL characters")
		}
	}
	return nil
}

// AuditCursor is the position after the last entry of a page, newest
// first.
type AuditCursor struct {
	At time.Time
	ID string
}

// AuditPage is a page of SearchAuditEntries; Next is nil on the last.
type AuditPage struct {
	Entries []*AuditEntry
	Next    *AuditCursor
}

// String encodes the cursor for a URL: milliseconds and the entry's id.
func (c *AuditCursor) String() string {
	return strconv.FormatInt(c.At.UnixMilli(), 10) + "." + c.ID
}

// ParseAuditCursor decodes a cursor that String encoded. EINVALID.
func ParseAuditCursor(s string) (*AuditCursor, error) {
	msPart, id, ok := strings.Cut(s, ".")
	ms, err := strconv.ParseInt(msPart, 10, 64)
	if !ok || err != nil || id == "" || len(id) > 64 {
		return nil, FieldError("after", "is not a cursor of the audit log: start again from the first page")
	}
	return &AuditCursor{At: time.UnixMilli(ms).UTC(), ID: id}, nil
}

// AuditService reads the audit log.
type AuditService interface {
	// FindAuditEntries lists entries newest first, with their total.
	FindAuditEntries(ctx context.Context, orgID string, filter AuditFilter) ([]*AuditEntry, int, error)
	// SearchAuditEntries returns a page of entries newest first, from
	// filter.After, of filter.Page.Limit entries (default DefaultPageSize):
	// one index walk a page, nothing counted or skipped, however long the
	// log. EINVALID for an offset or a limit out of 1..MaxPageSize, or a
	// filter that Validate refuses.
	SearchAuditEntries(ctx context.Context, orgID string, filter AuditFilter) (*AuditPage, error)
}

// ChangedFields returns the JSON names of the fields an update struct sets
// (its Patch fields with Set), for audit details: names, never values.
func ChangedFields(update any) []string {
	out := []string{}
	v := reflect.ValueOf(update)
	if v.Kind() == reflect.Pointer {
		v = v.Elem()
	}
	t := v.Type()
	for i := 0; i < t.NumField(); i++ {
		f, fv := t.Field(i), v.Field(i)
		if f.Anonymous && fv.Kind() == reflect.Struct {
			out = append(out, ChangedFields(fv.Interface())...)
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if a := f.Tag.Get("audit"); a != "" {
			name = a // a field the API does not take has its name here
		}
		if name == "" || name == "-" {
			name = f.Name
		}
		switch fv.Kind() {
		case reflect.Struct:
			if set := fv.FieldByName("Set"); set.IsValid() && set.Kind() == reflect.Bool && set.Bool() {
				out = append(out, name)
			}
		case reflect.Pointer:
			if !fv.IsNil() {
				out = append(out, name)
			}
		}
	}
	return out
}
