package gatehouse

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"
)

// BYOKKey is a workspace's own API key for a provider of the providers file
// (bring your own key): the gateway sends it, instead of the operator's
// key, with the workspace's requests to that provider, and meters what they
// cost as BYOK usage. The key is sealed at rest and never shown again after
// it is given; Label identifies it. Deleting one removes its row.
type BYOKKey struct {
	ID             string
	OrganizationID string
	WorkspaceID    string
	Provider       string // a provider id of the providers file
	Name           *string
	// Key is the provider key in the clear. Only the gateway's read
	// (BYOKService.ProviderBYOKKeys) fills it in; every other read leaves it
	// empty, so that nothing but a call to the provider ever holds it.
	Key      Secret
	Label    string // the key masked, as Mask shows it
	Disabled bool
	// The allowlists: nil lets anyone through. A request uses the key only
	// when its API key's hash, its model and its API key's user pass each.
	AllowedAPIKeyHashes []string
	AllowedModels       []string
	AllowedUserIDs      []string
	// DeclaredZDR is the workspace's word that its provider account keeps no
	// data; stored and shown, not verified or applied.
	DeclaredZDR *bool
	// IsBYOKOnly: the provider serves the workspace only through its own
	// keys; a request that none of them may serve is refused rather than
	// sent with the operator's key.
	IsBYOKOnly bool
	// IsFallback: tried only after the keys that are not fallbacks.
	IsFallback bool
	// IsRequired: like IsBYOKOnly, for the models of AllowedModels (every
	// model when nil).
	IsRequired bool
	// SortOrder is the key's place among the workspace's keys for its
	// provider (0 first): keys are tried in ascending order.
	SortOrder int
	CreatedAt time.Time
	UpdatedAt time.Time
}

// BYOK limits.
const (
	// MaxBYOKKeyLength bounds a provider key.
	MaxBYOKKeyLength = 4096
	// MaxBYOKKeysPerProvider bounds the keys of a workspace for one
	// provider, which every request to it looks through.
	MaxBYOKKeysPerProvider = 50
	// MaxBYOKAllowlist bounds each allowlist of a key.
	MaxBYOKAllowlist = MaxBulkIDs
)

// BYOKKeyUpdate holds the fields of a BYOK key create or update; unset
// fields stay unchanged. The allowlists are replaced whole and null clears
// them. Key replaces the provider key (a rotation).
type BYOKKeyUpdate struct {
	Name                Patch[string]   `json:"name"`
	Key                 Patch[string]   `json:"key"`
	Disabled            Patch[bool]     `json:"disabled"`
	AllowedAPIKeyHashes Patch[[]string] `json:"allowed_api_key_hashes"`
	AllowedModels       Patch[[]string] `json:"allowed_models"`
	AllowedUserIDs      Patch[[]string] `json:"allowed_user_ids"`
	DeclaredZDR         Patch[bool]     `json:"declared_zdr"`
	IsBYOKOnly          Patch[bool]     `json:"is_byok_only"`
	IsFallback          Patch[bool]     `json:"is_fallback"`
	IsRequired          Patch[bool]     `json:"is_required"`
}

// BYOKKeyCreate holds the fields of a new BYOK key.
type BYOKKeyCreate struct {
	BYOKKeyUpdate
	Provider    string `json:"provider"`
	WorkspaceID string `json:"workspace_id"` // UUID or slug; "" means the default workspace
}

// BYOKKeyFilter selects BYOK keys of one workspace.
type BYOKKeyFilter struct {
	WorkspaceRef string // UUID or slug; "" means the default workspace
	Provider     string // "" for every provider
	Page         Page
}

// IsProviderID reports whether s has the shape of a provider id of the
// providers file.
func IsProviderID(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '-' {
			return false
		}
	}
	return true
}

// NewBYOKKey returns a BYOK key built from a create request, validated: the
// provider and key are required, and it is enabled unless it says otherwise.
func NewBYOKKey(c BYOKKeyCreate) (*BYOKKey, error) {
	switch {
	case c.Provider == "":
		return nil, FieldError("provider", "is required, such as openai (GET /api/v1/providers lists them)")
	case !IsProviderID(c.Provider):
		return nil, FieldError("provider", "must be a provider id: 1 to 64 lowercase letters, digits and dashes")
	case !c.Key.Set:
		return nil, FieldError("key", "is required: the provider's API key")
	}
	k := &BYOKKey{Provider: c.Provider}
	return k, k.Apply(c.BYOKKeyUpdate)
}

// Apply validates u and applies it to k. The allowlists are checked for
// shape; whether their hashes and users exist is the store's to check.
func (k *BYOKKey) Apply(u BYOKKeyUpdate) error {
	if err := u.validate(k.Provider); err != nil {
		return err
	}
	setPtr(&k.Name, u.Name)
	if u.Key.Set {
		k.Key, k.Label = Secret(u.Key.Value), Mask(u.Key.Value)
	}
	if u.Disabled.Set {
		k.Disabled = u.Disabled.Value
	}
	if u.AllowedAPIKeyHashes.Set {
		k.AllowedAPIKeyHashes = dedupe(u.AllowedAPIKeyHashes.Value)
	}
	if u.AllowedModels.Set {
		k.AllowedModels = dedupe(u.AllowedModels.Value)
	}
	if u.AllowedUserIDs.Set {
		k.AllowedUserIDs = dedupe(u.AllowedUserIDs.Value)
	}
	setPtr(&k.DeclaredZDR, u.DeclaredZDR)
	for _, b := range []struct {
		dst *bool
		p   Patch[bool]
	}{{&k.IsBYOKOnly, u.IsBYOKOnly}, {&k.IsFallback, u.IsFallback}, {&k.IsRequired, u.IsRequired}} {
		if b.p.Set {
			*b.dst = b.p.Value
		}
	}
	if k.IsBYOKOnly && k.IsFallback {
		return FieldError("is_byok_only", "cannot be combined with is_fallback: a fallback key is tried after others, a BYOK-only key makes the provider serve through the workspace's keys alone")
	}
	return nil
}

// validate checks each field of u on its own, for a key of provider.
func (u *BYOKKeyUpdate) validate(provider string) error {
	for _, f := range []struct {
		name string
		null bool
	}{
		{"key", u.Key.Null}, {"disabled", u.Disabled.Null}, {"is_byok_only", u.IsBYOKOnly.Null},
		{"is_fallback", u.IsFallback.Null}, {"is_required", u.IsRequired.Null},
	} {
		if f.null {
			return FieldError(f.name, "must not be null")
		}
	}
	if n := u.Name; n.Set && !n.Null {
		if strings.TrimSpace(n.Value) == "" {
			return FieldError("name", "must not be blank; send null for no name")
		}
		if err := validateName("name", n.Value, MaxNameLength); err != nil {
			return err
		}
	}
	if u.Key.Set {
		if err := validateProviderKey(u.Key.Value); err != nil {
			return err
		}
	}
	if err := validateAllowlist("allowed_api_key_hashes", u.AllowedAPIKeyHashes, func(field, s string) error {
		if !IsKeyHash(s) {
			return FieldError(field, "must be a key hash (64 lowercase hex characters)")
		}
		return nil
	}); err != nil {
		return err
	}
	if err := validateAllowlist("allowed_models", u.AllowedModels, func(field, s string) error {
		author, _, ok := strings.Cut(s, "/")
		switch {
		case !ok || len(s) > MaxListEntryLength || strings.ContainsFunc(s, isSpaceOrControl) || strings.HasSuffix(s, "/"):
			return FieldError(field, "must be a model slug such as %s/model-id (at most %d characters, no spaces)", provider, MaxListEntryLength)
		case author != provider:
			return FieldError(field, "must be a model of provider %s, the provider of this key", provider)
		}
		return nil
	}); err != nil {
		return err
	}
	return validateAllowlist("allowed_user_ids", u.AllowedUserIDs, ValidateUserID)
}

// validateProviderKey checks a provider key: it is sent as a bearer token,
// so it must be one header value's worth of visible ASCII.
func validateProviderKey(key string) error {
	if key == "" || len(key) > MaxBYOKKeyLength {
		return FieldError("key", "must be 1 to %d characters", MaxBYOKKeyLength)
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c <= ' ' || c > '~' {
			return FieldError("key", "must be visible ASCII characters without spaces or line breaks: it is sent to the provider as a bearer token")
		}
	}
	return nil
}

// validateAllowlist checks a nullable list whose entries check checks, each
// under its own field name: absent or null is fine, an empty list is not
// (null removes the restriction; an empty one would let nobody use the key).
func validateAllowlist(field string, p Patch[[]string], check func(field, entry string) error) error {
	if !p.Set || p.Null {
		return nil
	}
	if len(p.Value) == 0 {
		return FieldError(field, "must not be empty; use null to remove the restriction")
	}
	if len(p.Value) > MaxBYOKAllowlist {
		return FieldError(field, "must have at most %d entries", MaxBYOKAllowlist)
	}
	for i, s := range p.Value {
		if err := check(fmt.Sprintf("%s[%d]", field, i), s); err != nil {
			return err
		}
	}
	return nil
}

// dedupe returns list without repeats, in first order; nil stays nil.
func dedupe(list []string) []string {
	if list == nil {
		return nil
	}
	out := make([]string, 0, len(list))
	for _, s := range list {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// applies reports whether the key may serve a request of the API key for
// the model: each allowlist lets it through.
func (k *BYOKKey) applies(key *Key, modelSlug string) bool {
	if k.AllowedAPIKeyHashes != nil && !slices.Contains(k.AllowedAPIKeyHashes, key.Hash) {
		return false
	}
	if k.AllowedModels != nil && !slices.Contains(k.AllowedModels, modelSlug) {
		return false
	}
	if k.AllowedUserIDs != nil && (key.CreatorUserID == nil || !slices.Contains(k.AllowedUserIDs, *key.CreatorUserID)) {
		return false
	}
	return true
}

// ChooseBYOKKeys decides which of its workspace's own keys a request of
// key to the model of provider is sent with: those of keys (the BYOK keys
// of the key's workspace for the provider) that are enabled, belong to
// the key's organization and workspace and let the request through, the
// keys that are not fallbacks first, each group in sort order. The first
// is used; the next ones only when the provider refuses the one before
// (BYOKKeyRefused). None: the request goes with the operator's key, unless
// an enabled key of the workspace reserves the provider (is_byok_only) or
// the model (is_required) to the workspace's own keys: then it is refused
// (EFORBIDDEN), naming that key.
func ChooseBYOKKeys(keys []*BYOKKey, key *Key, provider, modelSlug string) ([]*BYOKKey, error) {
	var usable, chosen []*BYOKKey
	for _, k := range keys {
		// The store reads one workspace's keys of one provider; checked
		// again, so that no slip there can send another tenant's key.
		if k.Disabled || k.OrganizationID != key.OrganizationID || k.WorkspaceID != key.WorkspaceID || k.Provider != provider {
			continue
		}
		usable = append(usable, k)
		if k.applies(key, modelSlug) {
			chosen = append(chosen, k)
		}
	}
	slices.SortStableFunc(chosen, func(a, b *BYOKKey) int {
		if a.IsFallback != b.IsFallback {
			if a.IsFallback {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.SortOrder, b.SortOrder), a.CreatedAt.Compare(b.CreatedAt), strings.Compare(a.ID, b.ID))
	})
	if len(chosen) > 0 {
		return chosen, nil
	}
	for _, k := range usable {
		rule := ""
		switch {
		case k.IsBYOKOnly:
			rule = "is_byok_only"
		case k.IsRequired && (k.AllowedModels == nil || slices.Contains(k.AllowedModels, modelSlug)):
			rule = "is_required"
		default:
			continue
		}
		return nil, &Error{Code: EFORBIDDEN,
			Message: fmt.Sprintf("Request blocked: the workspace's BYOK key %s (%s) reserves provider %s to the workspace's own keys, and none of them may serve this API key for model %q",
				k.ID, rule, provider, modelSlug),
			Metadata: map[string]any{"byok_key_id": k.ID, "rule": rule, "provider": provider, "model": modelSlug}}
	}
	return nil, nil
}

// BYOKService manages the BYOK keys of workspaces within one organization.
type BYOKService interface {
	// FindBYOKKeys lists the BYOK keys of a workspace, oldest first, and
	// their total. ENOTFOUND for an unknown workspace.
	FindBYOKKeys(ctx context.Context, orgID string, filter BYOKKeyFilter) ([]*BYOKKey, int, error)
	// CreateBYOKKey creates a BYOK key, last in sort order among the
	// workspace's keys for its provider. EINVALID (also for allowlisted
	// hashes that are not regular keys of the workspace, and users that
	// are not members of the organization), ENOTFOUND for an unknown
	// workspace.
	CreateBYOKKey(ctx context.Context, orgID string, create BYOKKeyCreate) (*BYOKKey, error)
	// FindBYOKKey returns a BYOK key of the organization. ENOTFOUND.
	FindBYOKKey(ctx context.Context, orgID, id string) (*BYOKKey, error)
	// UpdateBYOKKey updates a BYOK key. EINVALID, ENOTFOUND.
	UpdateBYOKKey(ctx context.Context, orgID, id string, update BYOKKeyUpdate) (*BYOKKey, error)
	// DeleteBYOKKey deletes a BYOK key and its sealed key. ENOTFOUND.
	DeleteBYOKKey(ctx context.Context, orgID, id string) error
	// ProviderBYOKKeys returns the BYOK keys of a workspace for a provider,
	// disabled ones included, with their keys in the clear: for the
	// gateway alone, which chooses among them (ChooseBYOKKeys). The answer
	// may be remembered for a second; callers must not change it.
	ProviderBYOKKeys(ctx context.Context, workspaceID, provider string) ([]*BYOKKey, error)
}
