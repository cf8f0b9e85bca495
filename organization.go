package gatehouse

import (
	"context"
	"strings"
	"time"
	"unicode"
)

// Organization owns members, workspaces, keys, guardrails and destinations.
// Nothing crosses from one organization to another.
type Organization struct {
	ID        string
	Name      string
	CreatedAt time.Time
}

// MaxOrganizationNameLength bounds organization names.
const MaxOrganizationNameLength = 200

// Organization roles.
const (
	RoleAdmin  = "org:admin"
	RoleMember = "org:member"
)

// Member is a user of an organization.
type Member struct {
	ID        string // user id, unique within the organization
	Email     string
	FirstName *string
	LastName  *string
	Role      string // RoleAdmin or RoleMember
	CreatedAt time.Time
	// HasPassword reports whether the member can sign in to the console
	// (they accepted an invitation, and no reset is pending).
	HasPassword bool
	// Deactivated reports that the identity provider deactivated the
	// member (SCIM active=false): they cannot sign in, in any way.
	Deactivated bool
}

// MemberCreate holds the fields of a new organization member.
type MemberCreate struct {
	ID        string // "" generates "user_" + random
	Email     string
	FirstName *string
	LastName  *string
	Role      string // "" means RoleMember
}

// Limits on member fields.
const (
	MaxUserIDLength    = 128
	MaxEmailLength     = 254
	MaxPersonNameField = 100
)

// Validate checks the member fields and fills in defaults.
func (c *MemberCreate) Validate() error {
	if c.ID != "" {
		if err := ValidateUserID("id", c.ID); err != nil {
			return err
		}
	}
	email, err := ValidateEmail("email", c.Email)
	if err != nil {
		return err
	}
	c.Email = email
	for _, f := range []struct {
		name string
		v    *string
	}{{"first_name", c.FirstName}, {"last_name", c.LastName}} {
		if f.v != nil && len([]rune(*f.v)) > MaxPersonNameField {
			return FieldError(f.name, "must be at most %d characters", MaxPersonNameField)
		}
		if f.v != nil {
			if err := CheckDisplayText(f.name, *f.v, false); err != nil {
				return err
			}
		}
	}
	if err := ValidateRole("role", c.Role, true); err != nil {
		return err
	}
	if c.Role == "" {
		c.Role = RoleMember
	}
	return nil
}

// NewUserID returns a fresh user id.
func NewUserID() string { return "user_" + randomToken(12) }

// ValidateUserID checks one user id given in the named field.
func ValidateUserID(field, id string) error {
	if strings.TrimSpace(id) == "" {
		return FieldError(field, "must not be empty")
	}
	if len(id) > MaxUserIDLength {
		return FieldError(field, "must be at most %d characters", MaxUserIDLength)
	}
	for _, r := range id {
		// Graphic and not a space: no control or format character (the
		// bidirectional controls among them), no space of any script.
		if !unicode.IsGraphic(r) || unicode.IsSpace(r) {
			return FieldError(field, "must not contain spaces, control or format characters (found U+%04X)", r)
		}
	}
	return nil
}

// ValidateOrganizationName checks an organization name and returns it
// without surrounding spaces.
func ValidateOrganizationName(name string) (string, error) {
	name = strings.TrimSpace(name)
	if name == "" {
		return "", FieldError("name", "must not be empty")
	}
	if len([]rune(name)) > MaxOrganizationNameLength {
		return "", FieldError("name", "must be at most %d characters", MaxOrganizationNameLength)
	}
	return name, nil
}

// NewDefaultWorkspace returns the workspace every organization is created
// with.
func NewDefaultWorkspace() *Workspace {
	w, err := NewWorkspace(WorkspaceUpdate{Name: Val("Default"), Slug: Val(DefaultWorkspaceSlug)})
	if err != nil {
		panic(err) // constant input
	}
	w.IsDefault = true
	return w
}

// Bootstrap is what a server's start makes sure of: the oldest
// organization, created (with its default workspace) when there is none,
// and a management key of it. Both happen in one transaction, so a start
// that fails creates neither, and one that succeeds creates both.
type Bootstrap struct {
	// OrganizationName names the organization if it is created.
	OrganizationName string
	// Key is a management key's plaintext, named KeyName. It is made sure
	// to exist when Always is set (GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY);
	// otherwise only with an organization this call creates (the first
	// start's key, which the server then prints once). "" makes none.
	Key, KeyName string
	Always       bool
}

// Bootstrapped is what Bootstrap found or made.
type Bootstrapped struct {
	Organization *Organization
	// Created reports that the organization was created by this call.
	Created bool
	// Key is the management key made sure of, or nil.
	Key *Key
}

// OrganizationService manages organizations and their members.
type OrganizationService interface {
	// CreateOrganization creates an organization with its default workspace.
	// EINVALID.
	CreateOrganization(ctx context.Context, name string) (*Organization, error)
	// EnsureOrganization returns the oldest organization, creating one with
	// this name (and its default workspace) when there is none; created
	// tells which. Instances starting together on an empty database create
	// one organization between them. EINVALID.
	EnsureOrganization(ctx context.Context, name string) (org *Organization, created bool, err error)
	// Bootstrap prepares a database for serving, in one transaction (see
	// Bootstrap). Audited with ActorFirstStart as actor unless ctx carries
	// one. EINVALID.
	Bootstrap(ctx context.Context, b Bootstrap) (*Bootstrapped, error)
	// FindOrganization returns an organization. ENOTFOUND.
	FindOrganization(ctx context.Context, id string) (*Organization, error)
	// FindFirstOrganization returns the oldest organization. ENOTFOUND if
	// there is none.
	FindFirstOrganization(ctx context.Context) (*Organization, error)
	// FindOrganizations lists every organization, oldest first, and their
	// total: for the operator (the command line), never for the API, whose
	// callers see their own organization only.
	FindOrganizations(ctx context.Context, page Page) ([]*Organization, int, error)
	// FindMembers lists the organization's members and their total.
	FindMembers(ctx context.Context, orgID string, page Page) ([]*Member, int, error)
	// FindMembersByRef returns the members named by refs: each ref is a
	// user id or an email (matched whatever its case), at most MaxBulkIDs
	// of them; oldest first. Refs that name nobody are left out. EINVALID
	// for too many refs.
	FindMembersByRef(ctx context.Context, orgID string, refs []string) ([]*Member, error)
	// CreateMember adds a member. EINVALID (including an id or email that is
	// taken).
	CreateMember(ctx context.Context, orgID string, create MemberCreate) (*Member, error)
	// DeleteMember removes a member, with their workspace memberships and
	// guardrail assignment. EINVALID while they have active keys; ENOTFOUND.
	DeleteMember(ctx context.Context, orgID, userID string) error
}
