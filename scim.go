package gatehouse

import (
	"context"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"time"
)

// SCIM provisioning. An identity provider creates, updates, deactivates and
// deletes an organization's members and pushes its groups over SCIM 2.0
// (the scim package serves the protocol), authenticated by the
// organization's own bearer token. Every member of the organization is a
// SCIM user (so that a provider can find and adopt the members that exist),
// named by the userName the provider gave, or their email. Group
// memberships feed the group mappings (see sso.go).

// SCIMTokenPrefix starts every SCIM bearer token, so that secret scanners
// tell it from API keys.
const SCIMTokenPrefix = "sk-gh-scim-v1-"

// NewSCIMTokenSecret returns a fresh SCIM bearer token: the prefix and 32
// bytes from crypto/rand in hex. Only its SHA-256 (HashKey) is stored.
func NewSCIMTokenSecret() string { return SCIMTokenPrefix + hex.EncodeToString(randomBytes(32)) }

// SCIMToken is an organization's SCIM bearer token, as stored: its hash.
type SCIMToken struct {
	OrganizationID string
	Hash           string
	CreatedAt      time.Time
	// LastUsedAt is when a SCIM call last used it, to the minute.
	LastUsedAt *time.Time
}

// SCIMTouchInterval is how often a token's LastUsedAt is written, at most.
const SCIMTouchInterval = time.Minute

// SCIMUser is a member of the organization as SCIM shows it.
type SCIMUser struct {
	Member
	// UserName is the provider's name of the user, unique in the
	// organization whatever its case; the member's email until the
	// provider gives one.
	UserName    string
	ExternalID  *string
	DisplayName *string
	// Groups are the SCIM groups that hold the member, by display name.
	Groups    []SCIMGroupRef
	UpdatedAt time.Time
}

// SCIMGroupRef names a SCIM group.
type SCIMGroupRef struct {
	ID, DisplayName string
}

// SCIMUserWrite is a user as a provider writes it: the whole of what SCIM
// keeps of a member (a replace sets every field; a patch changes some of
// the current ones).
type SCIMUserWrite struct {
	UserName    string
	ExternalID  *string
	DisplayName *string
	GivenName   *string
	FamilyName  *string
	// Email is the member's email: the primary (or work, or first) email
	// of the user, else the userName when it is one.
	Email  string
	Active bool
}

// Limits of a SCIM user's and group's fields.
const (
	MaxSCIMUserNameLength   = 256
	MaxSCIMExternalIDLength = 256
	MaxSCIMGroupMembers     = 10000
)

// Validate checks a write, naming the SCIM attribute at fault. EINVALID.
func (w *SCIMUserWrite) Validate() error {
	w.UserName = strings.TrimSpace(w.UserName)
	if w.UserName == "" || len(w.UserName) > MaxSCIMUserNameLength || CheckDisplayText("userName", w.UserName, false) != nil || !IsPlainText(w.UserName) {
		return FieldError("userName", "is required: 1 to %d characters without control characters", MaxSCIMUserNameLength)
	}
	if err := validateExternalID(w.ExternalID); err != nil {
		return err
	}
	if w.Email == "" && strings.Contains(w.UserName, "@") {
		w.Email = w.UserName
	}
	email, err := ValidateEmail("emails", w.Email)
	if err != nil {
		return FieldError("emails", "a user needs an email address: give emails (primary or work), or a userName that is one")
	}
	w.Email = email
	for _, f := range []struct {
		name string
		v    *string
	}{{"name.givenName", w.GivenName}, {"name.familyName", w.FamilyName}, {"displayName", w.DisplayName}} {
		if f.v == nil {
			continue
		}
		if len([]rune(*f.v)) > MaxPersonNameField {
			return FieldError(f.name, "must be at most %d characters", MaxPersonNameField)
		}
		if err := CheckDisplayText(f.name, *f.v, false); err != nil {
			return err
		}
	}
	return nil
}

func validateExternalID(id *string) error {
	if id != nil && (*id == "" || len(*id) > MaxSCIMExternalIDLength || !IsPlainText(*id) || CheckDisplayText("externalId", *id, false) != nil) {
		return FieldError("externalId", "must be 1 to %d characters without control characters", MaxSCIMExternalIDLength)
	}
	return nil
}

// SCIMUserFilter selects users: by the exact values given (userName
// whatever its case), a window of the list (StartIndex from 1, oldest
// first).
type SCIMUserFilter struct {
	ID, UserName, ExternalID string
	StartIndex, Count        int
}

// SCIMGroup is a group a provider pushed.
type SCIMGroup struct {
	ID             string
	OrganizationID string
	DisplayName    string
	ExternalID     *string
	Members        []SCIMMemberRef // oldest membership first
	CreatedAt      time.Time
	UpdatedAt      time.Time
}

// SCIMMemberRef names a member of a SCIM group: their user id, and their
// email to show.
type SCIMMemberRef struct {
	UserID, Display string
}

// SCIMGroupWrite is a group as a provider writes it.
type SCIMGroupWrite struct {
	DisplayName string
	ExternalID  *string
	MemberIDs   []string
}

// Validate checks a write; member ids are deduplicated. EINVALID.
func (w *SCIMGroupWrite) Validate() error {
	if err := ValidateGroupName("displayName", w.DisplayName); err != nil {
		return err
	}
	if err := validateExternalID(w.ExternalID); err != nil {
		return err
	}
	if len(w.MemberIDs) > MaxSCIMGroupMembers {
		return FieldError("members", "must have at most %d members", MaxSCIMGroupMembers)
	}
	for i, id := range w.MemberIDs {
		if err := ValidateUserID(fmt.Sprintf("members[%d].value", i), id); err != nil {
			return err
		}
	}
	slices.Sort(w.MemberIDs)
	w.MemberIDs = slices.Compact(w.MemberIDs)
	return nil
}

// Names returns what mappings may name the group by: its display name,
// external id and id.
func (g *SCIMGroup) Names() []string {
	names := []string{g.DisplayName, g.ID}
	if g.ExternalID != nil {
		names = append(names, *g.ExternalID)
	}
	return names
}

// SCIMGroupFilter selects groups as SCIMUserFilter selects users;
// WithoutMembers leaves Members empty (excludedAttributes=members).
type SCIMGroupFilter struct {
	ID, DisplayName, ExternalID string
	StartIndex, Count           int
	WithoutMembers              bool
}

// SCIMService keeps what SCIM provisions. Every write is audited with the
// token's hash as the actor's key hash, and applies the group mappings to
// the members whose groups changed; a member removed from a workspace or
// deactivated loses what the rules of removed members take (their active
// keys there are disabled, their pending codes burned).
type SCIMService interface {
	// CreateSCIMToken makes the organization's SCIM token, replacing the
	// one it had; the token is returned once. Audited.
	CreateSCIMToken(ctx context.Context, orgID string) (*SCIMToken, string, error)
	// FindSCIMToken returns the organization's token. ENOTFOUND.
	FindSCIMToken(ctx context.Context, orgID string) (*SCIMToken, error)
	// DeleteSCIMToken removes it: SCIM calls are refused from then on.
	// ENOTFOUND. Audited.
	DeleteSCIMToken(ctx context.Context, orgID string) error
	// AuthenticateSCIM returns the token of a bearer token and records its
	// use (at most once a SCIMTouchInterval). ENOTFOUND for a token that
	// is nobody's.
	AuthenticateSCIM(ctx context.Context, token string) (*SCIMToken, error)

	// FindSCIMUsers lists the organization's members as SCIM users, with
	// the total the filter selects.
	FindSCIMUsers(ctx context.Context, orgID string, f SCIMUserFilter) ([]*SCIMUser, int, error)
	// FindSCIMUser returns a member as a SCIM user. ENOTFOUND.
	FindSCIMUser(ctx context.Context, orgID, id string) (*SCIMUser, error)
	// CreateSCIMUser makes a member. EINVALID; ECONFLICT for a userName or
	// email that is another member's.
	CreateSCIMUser(ctx context.Context, orgID string, w SCIMUserWrite) (*SCIMUser, error)
	// UpdateSCIMUser changes a member: change receives the user as it is
	// (as a write) and changes it, in the transaction (it may run again).
	// Deactivating ends the member's sessions and takes what the rules of
	// removed members take. EINVALID, ECONFLICT, ENOTFOUND.
	UpdateSCIMUser(ctx context.Context, orgID, id string, change func(*SCIMUserWrite) error) (*SCIMUser, error)
	// DeleteSCIMUser removes a member from the organization, after taking
	// what the rules of removed members take. ENOTFOUND.
	DeleteSCIMUser(ctx context.Context, orgID, id string) error

	// FindSCIMGroups lists the groups, with the total the filter selects.
	FindSCIMGroups(ctx context.Context, orgID string, f SCIMGroupFilter) ([]*SCIMGroup, int, error)
	// FindSCIMGroup returns a group. ENOTFOUND.
	FindSCIMGroup(ctx context.Context, orgID, id string, withoutMembers bool) (*SCIMGroup, error)
	// CreateSCIMGroup makes a group. EINVALID (members who are not the
	// organization's); ECONFLICT for a display name that is taken.
	CreateSCIMGroup(ctx context.Context, orgID string, w SCIMGroupWrite) (*SCIMGroup, error)
	// UpdateSCIMGroup changes a group as UpdateSCIMUser changes a user.
	// EINVALID, ECONFLICT, ENOTFOUND.
	UpdateSCIMGroup(ctx context.Context, orgID, id string, change func(*SCIMGroupWrite) error) (*SCIMGroup, error)
	// DeleteSCIMGroup removes a group; its members lose what it gave.
	// ENOTFOUND.
	DeleteSCIMGroup(ctx context.Context, orgID, id string) error
}
