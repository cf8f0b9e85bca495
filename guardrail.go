package gatehouse

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"
)

// Guardrail restricts the models and providers a key or member may use and
// carries a spending budget.
type Guardrail struct {
	ID                         string
	OrganizationID             string
	WorkspaceID                string
	Name                       string
	Description                *string
	AllowedModels              []string // nil: no allow-list
	AllowedProviders           []string
	IgnoredModels              []string
	IgnoredProviders           []string
	LimitUSD                   *Money
	ResetInterval              Interval
	IncludeBYOKInBudgets       bool
	EnforceZDR                 *bool
	EnforceZDRAnthropic        *bool
	EnforceZDROpenAI           *bool
	EnforceZDRGoogle           *bool
	EnforceZDRXAI              *bool
	EnforceZDROther            *bool
	EnableFreeModelPublication *bool
	EnableFreeModelTraining    *bool
	EnablePaidModelTraining    *bool
	AllowedDataRegions         []string
	ContentFilters             []ContentFilter
	ContentFilterBuiltins      []ContentFilterBuiltin
	CreatedAt                  time.Time
	UpdatedAt                  *time.Time
}

// ContentFilter is a custom regular-expression filter of a guardrail.
type ContentFilter struct {
	Pattern string  `json:"pattern"`
	Action  string  `json:"action"`
	Label   *string `json:"label,omitempty"`
}

// ContentFilterBuiltin enables one of the built-in detectors. Label is
// assigned by the system and ignored on input.
type ContentFilterBuiltin struct {
	Slug      string  `json:"slug"`
	Action    string  `json:"action"`
	ScanScope *string `json:"scan_scope,omitempty" null:"no"`
	Label     string  `json:"label,omitempty"`
}

// builtinLabels maps each built-in detector to its system label.
var builtinLabels = map[string]string{
	"email":                  "[EMAIL]",
	"phone":                  "[PHONE]",
	"ssn":                    "[SSN]",
	"credit-card":            "[CREDIT_CARD]",
	"ip-address":             "[IP_ADDRESS]",
	"secrets":                "[SECRET]",
	"person-name":            "[PERSON_NAME]",
	"address":                "[ADDRESS]",
	"regex-prompt-injection": "[PROMPT_INJECTION]",
}

// Guardrail field limits.
const (
	MaxDescriptionLength   = 1000
	MaxListEntries         = 1000
	MaxListEntryLength     = 200
	MaxContentFilters      = 100
	MaxFilterPatternLength = 100_000
	MaxFilterLabelLength   = 100
)

// GuardrailUpdate holds the fields of a guardrail create or update; unset
// fields stay unchanged. Arrays are replaced whole and null clears them.
// EnforceZDR is a deprecated switch copied into every EnforceZDR* field
// that the same request does not set.
type GuardrailUpdate struct {
	Name                       Patch[string]                 `json:"name"`
	Description                Patch[string]                 `json:"description"`
	AllowedModels              Patch[[]string]               `json:"allowed_models"`
	AllowedProviders           Patch[[]string]               `json:"allowed_providers"`
	IgnoredModels              Patch[[]string]               `json:"ignored_models"`
	IgnoredProviders           Patch[[]string]               `json:"ignored_providers"`
	LimitUSD                   Patch[Money]                  `json:"limit_usd"`
	ResetInterval              Patch[Interval]               `json:"reset_interval"`
	IncludeBYOKInBudgets       Patch[bool]                   `json:"include_byok_in_budgets"`
	EnforceZDR                 Patch[bool]                   `json:"enforce_zdr"`
	EnforceZDRAnthropic        Patch[bool]                   `json:"enforce_zdr_anthropic"`
	EnforceZDROpenAI           Patch[bool]                   `json:"enforce_zdr_openai"`
	EnforceZDRGoogle           Patch[bool]                   `json:"enforce_zdr_google"`
	EnforceZDRXAI              Patch[bool]                   `json:"enforce_zdr_xai"`
	EnforceZDROther            Patch[bool]                   `json:"enforce_zdr_other"`
	EnableFreeModelPublication Patch[bool]                   `json:"enable_free_model_publication"`
	EnableFreeModelTraining    Patch[bool]                   `json:"enable_free_model_training"`
	EnablePaidModelTraining    Patch[bool]                   `json:"enable_paid_model_training"`
	AllowedDataRegions         Patch[[]string]               `json:"allowed_data_regions"`
	ContentFilters             Patch[[]ContentFilter]        `json:"content_filters"`
	ContentFilterBuiltins      Patch[[]ContentFilterBuiltin] `json:"content_filter_builtins"`
}

// GuardrailCreate holds the fields of a new guardrail.
type GuardrailCreate struct {
	GuardrailUpdate
	WorkspaceID string `json:"workspace_id"` // UUID or slug; "" means the default workspace
}

// Apply applies u to g and validates the result. It does not touch ids or
// timestamps. The default guardrail of a workspace keeps its name, and no
// other guardrail may take that name.
func (g *Guardrail) Apply(u GuardrailUpdate) error {
	if n := u.Name; n.Set && !n.Null && n.Value != g.Name {
		if g.ID == DefaultGuardrailID(g.WorkspaceID) {
			return FieldError("name", "the default guardrail of a workspace cannot be renamed")
		}
		if n.Value == DefaultGuardrailName(g.WorkspaceID) {
			return ErrReservedGuardrailName(n.Value)
		}
	}
	if err := u.validateFields(); err != nil {
		return err
	}
	if u.Name.Set {
		g.Name = u.Name.Value
	}
	setPtr(&g.Description, u.Description)
	setSlice(&g.AllowedModels, u.AllowedModels)
	setSlice(&g.AllowedProviders, u.AllowedProviders)
	setSlice(&g.IgnoredModels, u.IgnoredModels)
	setSlice(&g.IgnoredProviders, u.IgnoredProviders)
	setPtr(&g.LimitUSD, u.LimitUSD)
	if u.ResetInterval.Set {
		g.ResetInterval = u.ResetInterval.Value
	}
	if u.IncludeBYOKInBudgets.Set {
		g.IncludeBYOKInBudgets = u.IncludeBYOKInBudgets.Value
	}
	setPtr(&g.EnforceZDR, u.EnforceZDR)
	for _, z := range []struct {
		dst *(*bool)
		p   Patch[bool]
	}{
		{&g.EnforceZDRAnthropic, u.EnforceZDRAnthropic},
		{&g.EnforceZDROpenAI, u.EnforceZDROpenAI},
		{&g.EnforceZDRGoogle, u.EnforceZDRGoogle},
		{&g.EnforceZDRXAI, u.EnforceZDRXAI},
		{&g.EnforceZDROther, u.EnforceZDROther},
	} {
		if !z.p.Set {
			z.p = u.EnforceZDR
		}
		setPtr(z.dst, z.p)
	}
	setPtr(&g.EnableFreeModelPublication, u.EnableFreeModelPublication)
	setPtr(&g.EnableFreeModelTraining, u.EnableFreeModelTraining)
	setPtr(&g.EnablePaidModelTraining, u.EnablePaidModelTraining)
	if u.AllowedDataRegions.Set {
		g.AllowedDataRegions = normalizeRegions(u.AllowedDataRegions.Value)
	}
	setSlice(&g.ContentFilters, u.ContentFilters)
	if u.ContentFilterBuiltins.Set {
		g.ContentFilterBuiltins = nil
		for _, b := range u.ContentFilterBuiltins.Value {
			b.Label = builtinLabels[b.Slug]
			g.ContentFilterBuiltins = append(g.ContentFilterBuiltins, b)
		}
	}
	if (g.LimitUSD == nil) != (g.ResetInterval == NoReset) {
		return FieldError("limit_usd", "limit_usd and reset_interval must be set together or not at all")
	}
	return nil
}

func setPtr[T any](dst **T, p Patch[T]) {
	if p.Set {
		*dst = p.Ptr()
	}
}

func setSlice[T any](dst *[]T, p Patch[[]T]) {
	if p.Set {
		*dst = p.Value // nil when null
	}
}

// validateFields checks each field of u on its own.
func (u *GuardrailUpdate) validateFields() error {
	if u.Name.Set {
		if u.Name.Null {
			return FieldError("name", "must not be null")
		}
		if err := validateName("name", u.Name.Value, MaxNameLength); err != nil {
			return err
		}
	}
	if d := u.Description; d.Set && !d.Null && len([]rune(d.Value)) > MaxDescriptionLength {
		return FieldError("description", "must be at most %d characters", MaxDescriptionLength)
	}
	if d := u.Description; d.Set && !d.Null {
		if err := CheckDisplayText("description", d.Value, true); err != nil {
			return err
		}
	}
	for _, l := range []struct {
		field string
		p     Patch[[]string]
	}{
		{"allowed_models", u.AllowedModels},
		{"allowed_providers", u.AllowedProviders},
		{"ignored_models", u.IgnoredModels},
		{"ignored_providers", u.IgnoredProviders},
	} {
		if err := validateSlugList(l.field, l.p); err != nil {
			return err
		}
	}
	if u.LimitUSD.Set && !u.LimitUSD.Null {
		if err := validateLimit("limit_usd", &u.LimitUSD.Value); err != nil {
			return err
		}
	}
	if r := u.ResetInterval; r.Set && !r.Value.Valid() {
		return FieldError("reset_interval", "must be one of daily, weekly, monthly or null")
	}
	if u.IncludeBYOKInBudgets.Set && u.IncludeBYOKInBudgets.Null {
		return FieldError("include_byok_in_budgets", "must not be null")
	}
	if r := u.AllowedDataRegions; r.Set && !r.Null {
		if err := validateRegions("allowed_data_regions", r.Value); err != nil {
			return err
		}
	}
	if err := validateContentFilters(u.ContentFilters); err != nil {
		return err
	}
	return validateBuiltins(u.ContentFilterBuiltins)
}

func validateSlugList(field string, p Patch[[]string]) error {
	if !p.Set || p.Null {
		return nil
	}
	if len(p.Value) == 0 {
		return FieldError(field, "must not be empty; use null to remove the list")
	}
	if len(p.Value) > MaxListEntries {
		return FieldError(field, "must have at most %d entries", MaxListEntries)
	}
	for i, s := range p.Value {
		if s == "" || strings.ContainsFunc(s, isSpaceOrControl) || len(s) > MaxListEntryLength {
			return FieldError(fmt.Sprintf("%s[%d]", field, i), "must be a non-empty identifier of at most %d characters without spaces", MaxListEntryLength)
		}
	}
	return nil
}

func isSpaceOrControl(r rune) bool { return r <= 0x20 || r == 0x7f }

// Data regions.
var dataRegions = map[string]string{"global": "global", "europe": "europe", "eu": "europe", "us": "us"}

func validateRegions(field string, regions []string) error {
	if len(regions) == 0 {
		return FieldError(field, "must not be empty")
	}
	for i, r := range regions {
		if _, ok := dataRegions[r]; !ok {
			return FieldError(fmt.Sprintf("%s[%d]", field, i), "must be one of global, europe, us")
		}
	}
	return nil
}

// normalizeRegions maps aliases (eu) to their names and drops repeats.
func normalizeRegions(regions []string) []string {
	if regions == nil {
		return nil
	}
	out := make([]string, 0, len(regions))
	for _, r := range regions {
		if n := dataRegions[r]; !containsString(out, n) {
			out = append(out, n)
		}
	}
	return out
}

func containsString(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func validAction(a string) bool { return a == "redact" || a == "block" || a == "flag" }

func validateContentFilters(p Patch[[]ContentFilter]) error {
	if !p.Set || p.Null {
		return nil
	}
	if len(p.Value) > MaxContentFilters {
		return FieldError("content_filters", "must have at most %d entries", MaxContentFilters)
	}
	for i, f := range p.Value {
		field := fmt.Sprintf("content_filters[%d]", i)
		if f.Pattern == "" || len(f.Pattern) > MaxFilterPatternLength {
			return FieldError(field+".pattern", "must be 1 to %d characters", MaxFilterPatternLength)
		}
		if _, err := regexp.Compile(f.Pattern); err != nil {
			return FieldError(field+".pattern", "is not a valid regular expression (RE2 syntax): %s", strings.TrimPrefix(err.Error(), "error parsing regexp: "))
		}
		if !validAction(f.Action) {
			return FieldError(field+".action", "must be one of redact, block, flag")
		}
		if f.Label != nil && len([]rune(*f.Label)) > MaxFilterLabelLength {
			return FieldError(field+".label", "must be at most %d characters", MaxFilterLabelLength)
		}
		if f.Label != nil {
			if err := CheckDisplayText(field+".label", *f.Label, false); err != nil {
				return err
			}
		}
	}
	return nil
}

func validateBuiltins(p Patch[[]ContentFilterBuiltin]) error {
	if !p.Set || p.Null {
		return nil
	}
	if len(p.Value) > len(builtinLabels) {
		return FieldError("content_filter_builtins", "must have at most %d entries", len(builtinLabels))
	}
	seen := map[string]bool{}
	for i, b := range p.Value {
		field := fmt.Sprintf("content_filter_builtins[%d]", i)
		if _, ok := builtinLabels[b.Slug]; !ok {
			return FieldError(field+".slug", "must be one of email, phone, ssn, credit-card, ip-address, secrets, person-name, address, regex-prompt-injection")
		}
		if seen[b.Slug] {
			return FieldError(field+".slug", "%s is listed twice", b.Slug)
		}
		seen[b.Slug] = true
		if !validAction(b.Action) {
			return FieldError(field+".action", "must be one of redact, block, flag")
		}
		if s := b.ScanScope; s != nil && *s != "user_only" && *s != "all_messages" {
			return FieldError(field+".scan_scope", "must be user_only or all_messages")
		}
	}
	return nil
}

// ValidateKeyHashes checks the hashes of a bulk key operation and returns
// them without repeats, in their first order.
func ValidateKeyHashes(hashes []string) ([]string, error) {
	if len(hashes) == 0 {
		return nil, FieldError("key_hashes", "must list at least one key hash")
	}
	if len(hashes) > MaxBulkIDs {
		return nil, FieldError("key_hashes", "must list at most %d key hashes (got %d)", MaxBulkIDs, len(hashes))
	}
	out := make([]string, 0, len(hashes))
	for i, h := range hashes {
		if !IsKeyHash(h) {
			return nil, FieldError(fmt.Sprintf("key_hashes[%d]", i), "must be a key hash (64 lowercase hex characters)").
				WithMetadata("key_hashes", []string{h})
		}
		if !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out, nil
}

// ErrGuardrailNameTaken is the error for a guardrail name already used in the
// workspace: EINVALID on create, ECONFLICT on rename.
func ErrGuardrailNameTaken(name, code string) error {
	e := FieldError("name", "a guardrail named %q already exists in this workspace", name)
	e.Code = code
	return e
}

// ErrReservedGuardrailName refuses the name of the workspace's default guardrail to
// other guardrails, so that materializing the default never collides.
func ErrReservedGuardrailName(name string) error {
	return FieldError("name", "%q is reserved for the default guardrail of the workspace", name)
}

// KeyAssignment records that a key is governed by a guardrail.
type KeyAssignment struct {
	ID          string
	GuardrailID string
	KeyHash     string
	KeyName     string
	AssignedBy  *string
	CreatedAt   time.Time
}

// MemberAssignment records that an organization member is governed by a
// guardrail.
type MemberAssignment struct {
	ID             string
	GuardrailID    string
	UserID         string
	OrganizationID string
	AssignedBy     *string
	CreatedAt      time.Time
}

// MaxBulkIDs bounds the ids of one bulk operation.
const MaxBulkIDs = 100

// DefaultGuardrailName returns the fixed name of a workspace's default
// guardrail.
func DefaultGuardrailName(workspaceID string) string {
	return "Workspace " + workspaceID + " Default"
}

// GuardrailService manages guardrails and their assignments within one
// organization. A key or member holds at most one guardrail: assigning
// moves it.
type GuardrailService interface {
	// FindGuardrails lists the guardrails of a workspace ("" = default) and
	// their total. ENOTFOUND for an unknown workspace.
	FindGuardrails(ctx context.Context, orgID, workspaceRef string, page Page) ([]*Guardrail, int, error)
	// CreateGuardrail creates a guardrail. EINVALID, ENOTFOUND.
	CreateGuardrail(ctx context.Context, orgID string, create GuardrailCreate) (*Guardrail, error)
	// FindGuardrail returns a guardrail. ENOTFOUND.
	FindGuardrail(ctx context.Context, orgID, id string) (*Guardrail, error)
	// UpdateGuardrail updates a guardrail; on a workspace's default
	// guardrail id that was never configured it creates it. EINVALID,
	// ECONFLICT (name taken), ENOTFOUND.
	UpdateGuardrail(ctx context.Context, orgID, id string, update GuardrailUpdate) (*Guardrail, error)
	// DeleteGuardrail deletes a guardrail and its assignments. ENOTFOUND.
	DeleteGuardrail(ctx context.Context, orgID, id string) error
	// FindKeyAssignments lists key assignments of one guardrail ("" = all
	// of the organization). ENOTFOUND for an unknown guardrail.
	FindKeyAssignments(ctx context.Context, orgID, guardrailID string, page Page) ([]*KeyAssignment, int, error)
	// FindMemberAssignments lists member assignments of one guardrail ("" =
	// all of the organization). ENOTFOUND for an unknown guardrail.
	FindMemberAssignments(ctx context.Context, orgID, guardrailID string, page Page) ([]*MemberAssignment, int, error)
	// AssignKeys assigns keys of the guardrail's workspace to it and returns
	// how many assignments changed. EINVALID (metadata key_hashes), ENOTFOUND.
	AssignKeys(ctx context.Context, orgID, guardrailID string, hashes []string, by *string) (int, error)
	// UnassignKeys removes assignments of keys to the guardrail and returns
	// how many were removed. EINVALID (malformed list), ENOTFOUND.
	UnassignKeys(ctx context.Context, orgID, guardrailID string, hashes []string) (int, error)
	// AssignMembers assigns organization members to the guardrail.
	// EINVALID (metadata member_user_ids), ENOTFOUND.
	AssignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string, by *string) (int, error)
	// UnassignMembers removes assignments of members to the guardrail and
	// returns how many were removed. EINVALID (malformed list), ENOTFOUND.
	UnassignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string) (int, error)
}
