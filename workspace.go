package gatehouse

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Workspace groups keys, guardrails and destinations of an organization.
// Every organization has one default workspace, which implicitly holds every
// member of the organization.
type Workspace struct {
	ID                              string
	OrganizationID                  string
	Name                            string
	Slug                            string
	Description                     *string
	DefaultTextModel                *string
	DefaultImageModel               *string
	DefaultProviderSort             *string
	DisabledServerTools             []string
	IOLoggingAPIKeyIDs              []int64
	IOLoggingSamplingRate           float64
	IsDataDiscountLoggingEnabled    bool
	IsObservabilityBroadcastEnabled bool
	IsObservabilityIOLoggingEnabled bool
	IncludeBYOKInBudgets            bool
	IsDefault                       bool
	CreatedBy                       *string
	CreatedAt                       time.Time
	UpdatedAt                       *time.Time
}

// DefaultWorkspaceSlug is the slug of the workspace created with an
// organization.
const DefaultWorkspaceSlug = "default"

// guardrailNamespace derives default guardrail ids from workspace ids.
var guardrailNamespace = uuid.MustParse("5c0a3b5e-7f1d-4c36-9a57-6c1f4f0e2b71")

// DefaultGuardrailID returns the id of the workspace's default guardrail: a
// UUIDv5 of the workspace id, so it is known before it is configured.
func DefaultGuardrailID(workspaceID string) string {
	return uuid.NewSHA1(guardrailNamespace, []byte(workspaceID)).String()
}

// Workspace field limits.
const (
	MaxWorkspaceNameLength        = 100
	MaxSlugLength                 = 50
	MaxWorkspaceDescriptionLength = 500
	MaxModelSlugLength            = 200
)

var slugPattern = regexp.MustCompile(`^[a-z0-9]+(?:-[a-z0-9]+)*$`)

var providerSorts = []string{"price", "throughput", "latency", "exacto"}

var serverTools = []string{
	"openrouter:advisor", "openrouter:apply_patch", "openrouter:bash", "openrouter:datetime",
	"openrouter:fusion", "openrouter:image_generation", "openrouter:experimental__search_models",
	"openrouter:shell", "openrouter:subagent", "openrouter:tool_search", "openrouter:web_fetch",
	"openrouter:web_search",
}

// ProviderSorts returns the values a workspace's default_provider_sort
// takes.
func ProviderSorts() []string { return slices.Clone(providerSorts) }

// ServerTools returns the server tools a workspace may disable.
func ServerTools() []string { return slices.Clone(serverTools) }

// WorkspaceUpdate holds the fields of a workspace create or update; unset
// fields stay unchanged.
type WorkspaceUpdate struct {
	Name                            Patch[string]   `json:"name"`
	Slug                            Patch[string]   `json:"slug"`
	Description                     Patch[string]   `json:"description"`
	DefaultTextModel                Patch[string]   `json:"default_text_model"`
	DefaultImageModel               Patch[string]   `json:"default_image_model"`
	DefaultProviderSort             Patch[string]   `json:"default_provider_sort"`
	DisabledServerTools             Patch[[]string] `json:"disabled_server_tools"`
	IOLoggingAPIKeyIDs              Patch[[]int64]  `json:"io_logging_api_key_ids"`
	IOLoggingSamplingRate           Patch[float64]  `json:"io_logging_sampling_rate"`
	IsDataDiscountLoggingEnabled    Patch[bool]     `json:"is_data_discount_logging_enabled"`
	IsObservabilityBroadcastEnabled Patch[bool]     `json:"is_observability_broadcast_enabled"`
	IsObservabilityIOLoggingEnabled Patch[bool]     `json:"is_observability_io_logging_enabled"`
	IncludeBYOKInBudgets            Patch[bool]     `json:"include_byok_in_budgets"`
}

// NewWorkspace returns a workspace built from a create request, validated.
// Name and slug are required.
func NewWorkspace(c WorkspaceUpdate) (*Workspace, error) {
	if !c.Name.Set || c.Name.Null {
		return nil, FieldError("name", "is required")
	}
	if !c.Slug.Set || c.Slug.Null {
		return nil, FieldError("slug", "is required")
	}
	w := &Workspace{IOLoggingSamplingRate: 1}
	if err := w.Apply(c); err != nil {
		return nil, err
	}
	return w, nil
}

// Apply validates u and applies it to w.
func (w *Workspace) Apply(u WorkspaceUpdate) error {
	if err := u.validate(); err != nil {
		return err
	}
	if w.IsDefault && u.Slug.Set && u.Slug.Value != w.Slug {
		return FieldError("slug", "the slug of the default workspace cannot change")
	}
	if u.Name.Set {
		w.Name = u.Name.Value
	}
	if u.Slug.Set {
		w.Slug = u.Slug.Value
	}
	setPtr(&w.Description, u.Description)
	setPtr(&w.DefaultTextModel, u.DefaultTextModel)
	setPtr(&w.DefaultImageModel, u.DefaultImageModel)
	setPtr(&w.DefaultProviderSort, u.DefaultProviderSort)
	if u.DisabledServerTools.Set {
		w.DisabledServerTools = nil // an empty list clears it too
		if len(u.DisabledServerTools.Value) > 0 {
			w.DisabledServerTools = u.DisabledServerTools.Value
		}
	}
	setSlice(&w.IOLoggingAPIKeyIDs, u.IOLoggingAPIKeyIDs)
	for _, b := range []struct {
		dst *bool
		p   Patch[bool]
	}{
		{&w.IsDataDiscountLoggingEnabled, u.IsDataDiscountLoggingEnabled},
		{&w.IsObservabilityBroadcastEnabled, u.IsObservabilityBroadcastEnabled},
		{&w.IsObservabilityIOLoggingEnabled, u.IsObservabilityIOLoggingEnabled},
		{&w.IncludeBYOKInBudgets, u.IncludeBYOKInBudgets},
	} {
		if b.p.Set {
			*b.dst = b.p.Value
		}
	}
	if u.IOLoggingSamplingRate.Set {
		w.IOLoggingSamplingRate = u.IOLoggingSamplingRate.Value
	}
	return nil
}

func (u *WorkspaceUpdate) validate() error {
	for _, f := range []struct {
		name string
		null bool
	}{
		{"name", u.Name.Null}, {"slug", u.Slug.Null},
		{"io_logging_sampling_rate", u.IOLoggingSamplingRate.Null},
		{"is_data_discount_logging_enabled", u.IsDataDiscountLoggingEnabled.Null},
		{"is_observability_broadcast_enabled", u.IsObservabilityBroadcastEnabled.Null},
		{"is_observability_io_logging_enabled", u.IsObservabilityIOLoggingEnabled.Null},
		{"include_byok_in_budgets", u.IncludeBYOKInBudgets.Null},
	} {
		if f.null {
			return FieldError(f.name, "must not be null")
		}
	}
	if u.Name.Set {
		if err := validateName("name", u.Name.Value, MaxWorkspaceNameLength); err != nil {
			return err
		}
	}
	if u.Slug.Set {
		if err := ValidateSlug(u.Slug.Value); err != nil {
			return err
		}
	}
	if d := u.Description; d.Set && !d.Null && len([]rune(d.Value)) > MaxWorkspaceDescriptionLength {
		return FieldError("description", "must be at most %d characters", MaxWorkspaceDescriptionLength)
	}
	if d := u.Description; d.Set && !d.Null {
		if err := CheckDisplayText("description", d.Value, true); err != nil {
			return err
		}
	}
	for _, m := range []struct {
		name string
		p    Patch[string]
	}{{"default_text_model", u.DefaultTextModel}, {"default_image_model", u.DefaultImageModel}} {
		if !m.p.Set || m.p.Null {
			continue
		}
		if strings.TrimSpace(m.p.Value) == "" || len(m.p.Value) > MaxModelSlugLength {
			return FieldError(m.name, "must be a model slug of 1 to %d characters, or null", MaxModelSlugLength)
		}
		if err := CheckDisplayText(m.name, m.p.Value, false); err != nil {
			return err
		}
	}
	if s := u.DefaultProviderSort; s.Set && !s.Null && !containsString(providerSorts, s.Value) {
		return FieldError("default_provider_sort", "must be one of price, throughput, latency, exacto, or null")
	}
	for i, t := range u.DisabledServerTools.Value {
		if !containsString(serverTools, t) {
			return FieldError(fmt.Sprintf("disabled_server_tools[%d]", i), "unknown server tool %q", t)
		}
	}
	if len(u.IOLoggingAPIKeyIDs.Value) > MaxListEntries {
		return FieldError("io_logging_api_key_ids", "must have at most %d entries", MaxListEntries)
	}
	for i, id := range u.IOLoggingAPIKeyIDs.Value {
		if id < 1 {
			return FieldError(fmt.Sprintf("io_logging_api_key_ids[%d]", i), "must be a positive integer")
		}
	}
	if r := u.IOLoggingSamplingRate; r.Set && !(r.Value >= 0.0001 && r.Value <= 1) {
		return FieldError("io_logging_sampling_rate", "must be between 0.0001 and 1")
	}
	return nil
}

// ParseWorkspaceRef tells what a workspace reference names: a workspace id
// (a UUID in its 36-character form, returned canonical), a slug, or nothing
// at all (ok false), which can only be not found.
func ParseWorkspaceRef(ref string) (id, slug string, ok bool) {
	if u, err := uuid.Parse(ref); err == nil && len(ref) == 36 {
		return u.String(), "", true
	}
	if ValidateSlug(ref) == nil {
		return "", ref, true
	}
	return "", "", false
}

// ValidateSlug checks a workspace slug.
func ValidateSlug(slug string) error {
	if len(slug) == 0 || len(slug) > MaxSlugLength || !slugPattern.MatchString(slug) {
		return FieldError("slug", "must be 1 to %d characters of lowercase letters and digits in segments joined by single hyphens, such as team-a", MaxSlugLength)
	}
	return nil
}

// CheckWorkspaceDeletion decides whether a workspace may be deleted, given
// how many active keys (enabled and unexpired) the store counted in it. The
// default workspace goes only when the caller confirms it; a workspace
// holding active keys never goes, since deleting it would break whoever uses
// them without a word. EINVALID saying what stops it.
func CheckWorkspaceDeletion(w *Workspace, confirmDefault bool, activeKeys int) error {
	if w.IsDefault && !confirmDefault {
		return Errorf(EINVALID, "this is the default workspace; pass confirm_default_workspace_deletion=true to delete it")
	}
	if activeKeys > 0 {
		return Errorf(EINVALID, "the workspace holds %d active API keys; disable or delete them first", activeKeys).
			WithMetadata("active_key_count", activeKeys)
	}
	return nil
}

// WorkspaceMember is a user's membership of a workspace.
type WorkspaceMember struct {
	ID          string
	WorkspaceID string
	UserID      string
	Email       string // the member's, for people to read
	Role        string // "admin" or "member", from the organization role
	CreatedAt   time.Time
}

// WorkspaceRole returns the workspace role of an organization role.
func WorkspaceRole(orgRole string) string {
	if orgRole == RoleAdmin {
		return "admin"
	}
	return "member"
}

// membershipNamespace derives the membership ids of the default workspace.
var membershipNamespace = uuid.MustParse("0b8f3f8e-2f4c-4f0a-8e62-93a4d1c7d9a4")

// ImplicitMembershipID returns the id of a member's implicit membership of
// the default workspace.
func ImplicitMembershipID(workspaceID, userID string) string {
	return uuid.NewSHA1(membershipNamespace, []byte(workspaceID+"\x00"+userID)).String()
}

// ImplicitMembership returns a member's membership of the default
// workspace, which holds every member of the organization without a row.
func ImplicitMembership(workspaceID string, m *Member) *WorkspaceMember {
	return &WorkspaceMember{
		ID: ImplicitMembershipID(workspaceID, m.ID), WorkspaceID: workspaceID, UserID: m.ID, Email: m.Email,
		Role: WorkspaceRole(m.Role), CreatedAt: m.CreatedAt,
	}
}

// ValidateUserIDs checks the ids of a bulk member operation and returns them
// without repeats, in their first order.
func ValidateUserIDs(field string, ids []string) ([]string, error) {
	if len(ids) == 0 {
		return nil, FieldError(field, "must list at least one user id")
	}
	if len(ids) > MaxBulkIDs {
		return nil, FieldError(field, "must list at most %d user ids (got %d)", MaxBulkIDs, len(ids))
	}
	out := make([]string, 0, len(ids))
	for i, id := range ids {
		if err := ValidateUserID(fmt.Sprintf("%s[%d]", field, i), id); err != nil {
			return nil, err
		}
		if !containsString(out, id) {
			out = append(out, id)
		}
	}
	return out, nil
}

// WorkspaceService manages workspaces and their members within one
// organization. A workspace reference is its UUID or its slug.
type WorkspaceService interface {
	// FindWorkspaces lists workspaces and their total.
	FindWorkspaces(ctx context.Context, orgID string, page Page) ([]*Workspace, int, error)
	// FindWorkspace returns a workspace by reference; "" is the default one.
	// ENOTFOUND.
	FindWorkspace(ctx context.Context, orgID, ref string) (*Workspace, error)
	// CreateWorkspace creates a workspace. EINVALID (including a slug taken).
	CreateWorkspace(ctx context.Context, orgID string, create WorkspaceUpdate, createdBy *string) (*Workspace, error)
	// UpdateWorkspace updates a workspace. EINVALID, ENOTFOUND.
	UpdateWorkspace(ctx context.Context, orgID, ref string, update WorkspaceUpdate) (*Workspace, error)
	// DeleteWorkspace deletes a workspace with its guardrails, memberships
	// and inactive keys, and soft-deletes its destinations. EINVALID while
	// it holds active keys, or for the default workspace without
	// confirmDefault; ENOTFOUND.
	DeleteWorkspace(ctx context.Context, orgID, ref string, confirmDefault bool) error
	// FindMemberWorkspaces lists the workspaces a member belongs to: the
	// default one (every member's) and those they were added to, oldest
	// first. ENOTFOUND for someone who is not a member.
	FindMemberWorkspaces(ctx context.Context, orgID, userID string) ([]*Workspace, error)
	// FindWorkspaceMembers lists a workspace's members and their total.
	FindWorkspaceMembers(ctx context.Context, orgID, ref string, page Page) ([]*WorkspaceMember, int, error)
	// AddWorkspaceMembers adds organization members to a workspace and
	// returns how many memberships are new and the memberships of all the
	// ids. EINVALID (metadata user_ids: the non-members), ENOTFOUND.
	AddWorkspaceMembers(ctx context.Context, orgID, ref string, userIDs []string) (int, []*WorkspaceMember, error)
	// RemoveWorkspaceMembers removes members from a workspace, all or
	// nothing, and returns how many memberships were removed. EINVALID
	// (metadata user_ids: members holding active keys there), ENOTFOUND.
	RemoveWorkspaceMembers(ctx context.Context, orgID, ref string, userIDs []string) (int, error)
}
