package gatehouse

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"time"
)

// Key prefixes. Distinct prefixes let secret scanners tell regular keys from
// management keys.
const (
	KeyPrefix           = "sk-gh-v1-"
	ManagementKeyPrefix = "sk-gh-mgmt-v1-"
)

// NewKeySecret returns a fresh plaintext key: the prefix followed by 32 bytes
// from crypto/rand in hex.
func NewKeySecret(management bool) string {
	prefix := KeyPrefix
	if management {
		prefix = ManagementKeyPrefix
	}
	return prefix + hex.EncodeToString(randomBytes(32))
}

// HashKey returns the identifier of a plaintext key: the lowercase hex
// SHA-256 of it. Only hashes are stored.
func HashKey(plaintext string) string {
	sum := sha256.Sum256([]byte(plaintext))
	var h [2 * sha256.Size]byte
	hex.Encode(h[:], sum[:])
	return string(h[:]) // one allocation, where hex.EncodeToString makes two
}

// IsKeyHash reports whether s has the shape of a key hash.
func IsKeyHash(s string) bool {
	if len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func randomBytes(n int) []byte {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails (Go 1.24+)
	return b
}

// Key is an API key. Management keys (Management true) administer their
// organization; regular keys call models and appear in the keys API.
type Key struct {
	Hash               string
	OrganizationID     string
	WorkspaceID        string
	Name               string
	Management         bool
	Disabled           bool
	Limit              *Money
	LimitReset         Interval
	IncludeBYOKInLimit bool
	Usage              Counter
	BYOKUsage          Counter
	CreatorUserID      *string
	ExternalUser       *string
	// ParentKeyHash is the regular key whose authorization code minted this
	// key through OAuth, nil otherwise. What a minted key spends is spent by
	// its parent too (see MintedFrom).
	ParentKeyHash *string
	CreatedAt     time.Time
	UpdatedAt     *time.Time
	ExpiresAt     *time.Time
}

// Expired reports whether the key has an expiry at or before now.
func (k *Key) Expired(now time.Time) bool {
	return k.ExpiresAt != nil && !now.Before(*k.ExpiresAt)
}

// Active reports whether the key can authenticate at now.
func (k *Key) Active(now time.Time) bool { return !k.Disabled && !k.Expired(now) }

// LimitRemaining returns what is left of the key's limit at now, never below
// zero, or nil when the key has no limit. Spend counts within the current
// period of LimitReset (all time when there is none), and BYOK spend counts
// too when IncludeBYOKInLimit is set.
func (k *Key) LimitRemaining(now time.Time) *Money {
	if k.Limit == nil {
		return nil
	}
	spent := k.Usage.At(now).In(k.LimitReset)
	if k.IncludeBYOKInLimit {
		spent += k.BYOKUsage.At(now).In(k.LimitReset)
	}
	left := max(*k.Limit-spent, 0)
	return &left
}

// ExternalKey links a key to a partner's end user.
type ExternalKey struct {
	User   string  `json:"user"`
	APIKey *string `json:"api_key" null:"no"` // optional, never null
}

// KeyCreate holds the fields of a new regular key.
type KeyCreate struct {
	Name               string
	Limit              *Money
	LimitReset         Interval
	IncludeBYOKInLimit bool
	ExpiresAt          *time.Time
	CreatorUserID      *string
	WorkspaceID        string // UUID or slug; "" means the default workspace
	External           *ExternalKey
}

// Limits on key fields.
const (
	MaxNameLength        = 200
	MinExternalKeyLength = 32
)

// Validate checks the fields that need no lookup. now is the instant the
// expiry must lie after.
func (c *KeyCreate) Validate(now time.Time) error {
	if err := validateName("name", c.Name, MaxNameLength); err != nil {
		return err
	}
	if err := validateLimit("limit", c.Limit); err != nil {
		return err
	}
	if !c.LimitReset.Valid() {
		return FieldError("limit_reset", "must be one of daily, weekly, monthly or null")
	}
	if c.ExpiresAt != nil {
		if err := checkExpiry(*c.ExpiresAt, now); err != nil {
			return err
		}
	}
	if c.CreatorUserID != nil && strings.TrimSpace(*c.CreatorUserID) == "" {
		return FieldError("creator_user_id", "must not be empty")
	}
	if e := c.External; e != nil {
		if strings.TrimSpace(e.User) == "" {
			return FieldError("external.user", "is required")
		}
		if len(e.User) > MaxNameLength {
			return FieldError("external.user", "must be at most %d characters", MaxNameLength)
		}
		if err := CheckDisplayText("external.user", e.User, false); err != nil {
			return err
		}
		if e.APIKey != nil && len(*e.APIKey) < MinExternalKeyLength {
			return FieldError("external.api_key", "must be at least %d characters", MinExternalKeyLength)
		}
	}
	return nil
}

// NewKey returns the key that a validated create makes in a workspace at
// now, for a plaintext, and the hash of the partner's external key (nil
// when none) — only hashes are stored.
func (c *KeyCreate) NewKey(orgID, workspaceID, plaintext string, now time.Time) (k *Key, externalKeyHash *string) {
	k = &Key{
		Hash: HashKey(plaintext), OrganizationID: orgID, WorkspaceID: workspaceID, Name: c.Name,
		Limit: c.Limit, LimitReset: c.LimitReset, IncludeBYOKInLimit: c.IncludeBYOKInLimit,
		CreatorUserID: c.CreatorUserID, ExpiresAt: c.ExpiresAt, CreatedAt: now,
	}
	if c.External != nil {
		k.ExternalUser = &c.External.User
		if c.External.APIKey != nil {
			h := HashKey(*c.External.APIKey)
			externalKeyHash = &h
		}
	}
	return k, externalKeyHash
}

// ErrNotAMember is the error for a creator_user_id that names no member.
func ErrNotAMember(userID string) error {
	return FieldError("creator_user_id", "%q is not a member of the organization", userID)
}

// KeyUpdate holds the changes of a key update; unset fields stay unchanged.
// Changing Limit or LimitReset never resets recorded usage.
type KeyUpdate struct {
	Name               Patch[string]   `json:"name"`
	Disabled           Patch[bool]     `json:"disabled"`
	IncludeBYOKInLimit Patch[bool]     `json:"include_byok_in_limit"`
	Limit              Patch[Money]    `json:"limit"`
	LimitReset         Patch[Interval] `json:"limit_reset"`
	// ExpiresAt changes when the key expires (null: never). The console
	// sets it; the API's PATCH takes no expires_at (OpenRouter's does not),
	// hence no JSON name.
	ExpiresAt Patch[time.Time] `json:"-" audit:"expires_at"`
}

// Validate checks the fields of the update.
func (u *KeyUpdate) Validate() error {
	for _, f := range []struct {
		name string
		null bool
	}{{"name", u.Name.Null}, {"disabled", u.Disabled.Null}, {"include_byok_in_limit", u.IncludeBYOKInLimit.Null}} {
		if f.null {
			return FieldError(f.name, "must not be null")
		}
	}
	if u.Name.Set {
		if err := validateName("name", u.Name.Value, MaxNameLength); err != nil {
			return err
		}
	}
	if u.Limit.Set && !u.Limit.Null {
		if err := validateLimit("limit", &u.Limit.Value); err != nil {
			return err
		}
	}
	if !u.LimitReset.Value.Valid() {
		return FieldError("limit_reset", "must be one of daily, weekly, monthly or null")
	}
	return nil
}

// CheckExpiry refuses, at now, an update that sets an expiry that is not in
// the future (a key is disabled, not expired, to stop it at once).
func (u *KeyUpdate) CheckExpiry(now time.Time) error {
	if u.ExpiresAt.Set && !u.ExpiresAt.Null {
		return checkExpiry(u.ExpiresAt.Value, now)
	}
	return nil
}

// checkExpiry refuses an expiry that is not in the future, or that RFC
// 3339 cannot write (a year past 9999: the API could show it but not take
// it back).
func checkExpiry(t, now time.Time) error {
	switch {
	case !t.After(now):
		return FieldError("expires_at", "must be in the future")
	case t.UTC().Year() > 9999:
		return FieldError("expires_at", "must be before the year 10000")
	}
	return nil
}

// Apply applies a validated update at now. An empty update changes nothing
// (not even UpdatedAt) and reports false.
func (k *Key) Apply(u KeyUpdate, now time.Time) bool {
	if u == (KeyUpdate{}) {
		return false
	}
	if u.Name.Set {
		k.Name = u.Name.Value
	}
	if u.Disabled.Set {
		k.Disabled = u.Disabled.Value
	}
	if u.IncludeBYOKInLimit.Set {
		k.IncludeBYOKInLimit = u.IncludeBYOKInLimit.Value
	}
	if u.Limit.Set {
		k.Limit = u.Limit.Ptr()
	}
	if u.LimitReset.Set {
		k.LimitReset = u.LimitReset.Value
	}
	if u.ExpiresAt.Set {
		k.ExpiresAt = u.ExpiresAt.Ptr()
	}
	k.UpdatedAt = &now
	return true
}

// KeyFilter selects keys of one organization for listing.
type KeyFilter struct {
	WorkspaceID     string // UUID or slug; "" means every workspace
	IncludeDisabled bool
	Offset          int
	Limit           int
}

// MaxKeysPerList is the most keys one list call returns.
const MaxKeysPerList = 100

// KeyService manages API keys. Every method but FindKeyByHash and
// RecordUsage acts within one organization: keys of other organizations,
// and management keys, are ENOTFOUND.
type KeyService interface {
	// FindKeyByHash returns the key (regular or management) with the hash,
	// whatever its state, for authentication. ENOTFOUND if none.
	FindKeyByHash(ctx context.Context, hash string) (*Key, error)
	// FindKey returns a regular key. ENOTFOUND.
	FindKey(ctx context.Context, orgID, hash string) (*Key, error)
	// FindKeys lists regular keys ordered by creation. ENOTFOUND for an
	// unknown workspace in the filter.
	FindKeys(ctx context.Context, orgID string, filter KeyFilter) ([]*Key, error)
	// SearchKeys returns a page of regular keys in the order the search
	// describes (see KeySearch). EINVALID for a malformed search.
	SearchKeys(ctx context.Context, orgID string, search KeySearch) (*KeyPage, error)
	// CreateKey creates a regular key and returns it with its plaintext,
	// which is never stored. EINVALID (including a creator who is not a
	// member), ENOTFOUND for an unknown workspace.
	CreateKey(ctx context.Context, orgID string, create KeyCreate) (*Key, string, error)
	// UpdateKey applies the update. EINVALID, ENOTFOUND.
	UpdateKey(ctx context.Context, orgID, hash string, update KeyUpdate) (*Key, error)
	// DeleteKey deletes the key and its guardrail assignment. ENOTFOUND.
	DeleteKey(ctx context.Context, orgID, hash string) error
	// RecordUsage adds amount to the key's usage (its BYOK usage when byok)
	// in the current periods. EINVALID for a negative amount, ENOTFOUND.
	RecordUsage(ctx context.Context, hash string, amount Money, byok bool) (*Key, error)
	// CreateManagementKey creates a management key for the organization and
	// returns it with its plaintext. EINVALID, ENOTFOUND.
	CreateManagementKey(ctx context.Context, orgID, name string) (*Key, string, error)
	// FindManagementKeys lists the management keys of the organization,
	// disabled ones included, oldest first (ties by hash): empty when it
	// has none. ENOTFOUND for an unknown organization.
	FindManagementKeys(ctx context.Context, orgID string) ([]*Key, error)
	// EnsureManagementKey makes sure a management key with this plaintext
	// exists for the organization; it does nothing if one does. EINVALID if
	// the plaintext is malformed or belongs to another organization.
	EnsureManagementKey(ctx context.Context, orgID, plaintext, name string) (*Key, error)
	// SetManagementKeyDisabled disables a management key of the
	// organization, or enables it again: a disabled key authenticates
	// nothing, and the console sessions exchanged for it end. ENOTFOUND.
	SetManagementKeyDisabled(ctx context.Context, orgID, hash string, disabled bool) (*Key, error)
	// DeleteManagementKey deletes a management key of the organization,
	// and the console sessions exchanged for it. ENOTFOUND.
	DeleteManagementKey(ctx context.Context, orgID, hash string) error
}

func validateName(field, name string, max int) error {
	if strings.TrimSpace(name) == "" {
		return FieldError(field, "is required and must not be blank")
	}
	if n := len([]rune(name)); n > max {
		return FieldError(field, "must be at most %d characters (got %d)", max, n)
	}
	return CheckDisplayText(field, name, false)
}

func validateLimit(field string, m *Money) error {
	if m == nil {
		return nil
	}
	if *m < 0 {
		return FieldError(field, "must not be negative")
	}
	if *m > MaxMoney {
		return FieldError(field, "must be at most %s", MaxMoney)
	}
	return nil
}
