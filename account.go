package gatehouse

import (
	"context"
	"time"
)

// Console accounts. A member of an organization signs in to the web console
// with their email and a password, which they set through a link: an
// invitation that an admin creates, or a reset that an admin makes. The
// operator of a fresh install signs in by exchanging a management key for an
// admin session. Sessions live in the database, so every instance sees them.

// Session is a signed-in browser. Its token is the cookie's value; only the
// token's hash is stored.
type Session struct {
	ID             string // the hash of the token
	OrganizationID string
	// UserID is the member signed in; nil for a session exchanged for a
	// management key.
	UserID *string
	// KeyHash is the management key the session was exchanged for; nil for
	// a member's session. The session ends when the key is deleted,
	// disabled or expired.
	KeyHash *string
	// Email and Role are the member's as of this read (a member whose role
	// changes has the new role at once); a key's session reads "" and
	// RoleAdmin.
	Email string
	Role  string
	// CSRFToken is the session's anti-forgery token, which every state
	// change through the console carries.
	CSRFToken  string
	CreatedAt  time.Time
	LastSeenAt time.Time
	// ExpiresAt is the absolute end of the session, whatever its activity.
	ExpiresAt time.Time
}

// Actor returns the actor of the session's changes for the audit log.
func (s *Session) Actor() Actor {
	if s.KeyHash != nil {
		return Actor{KeyHash: *s.KeyHash}
	}
	return Actor{UserID: s.UserID}
}

// IsAdmin reports whether the session may see and manage everything of its
// organization.
func (s *Session) IsAdmin() bool { return s.Role == RoleAdmin }

// SessionCreate holds the fields of a new session: exactly one of UserID and
// KeyHash.
type SessionCreate struct {
	OrganizationID string
	UserID         *string
	KeyHash        *string
	// Lifetime is the absolute lifetime of the session.
	Lifetime time.Duration
}

// Invitation is a link that lets its holder set a member's password: an
// invitation of a new member (UserID nil until accepted) or a reset of an
// existing member's password. The token is shown once, in the link; only its
// hash is stored.
type Invitation struct {
	ID             string // the hash of the token
	OrganizationID string
	Email          string
	Role           string
	// UserID is the member whose password the link sets; nil for an
	// invitation of someone who is not yet a member.
	UserID    *string
	CreatedBy *string // the user id of the admin who made it, if any
	CreatedAt time.Time
	ExpiresAt time.Time
}

// InvitationTTL is how long an invitation or reset link stays usable.
const InvitationTTL = 7 * 24 * time.Hour

// InvitationCreate holds the fields of a new invitation.
type InvitationCreate struct {
	Email string
	Role  string // "" means RoleMember
}

// Credential is a member's password hash, for sign-in.
type Credential struct {
	OrganizationID string
	UserID         string
	PasswordHash   string
}

// AccountService keeps console sessions, invitations and passwords.
type AccountService interface {
	// CreateSession creates a session and returns it with its token, which
	// is never stored. EINVALID, ENOTFOUND for an unknown member or key.
	CreateSession(ctx context.Context, create SessionCreate) (*Session, string, error)
	// FindSession returns the session of a token. ENOTFOUND when there is
	// none, it has passed its ExpiresAt, its member is gone, or its key is
	// gone, disabled or expired.
	FindSession(ctx context.Context, token string) (*Session, error)
	// TouchSession records activity of the session now.
	TouchSession(ctx context.Context, id string) error
	// DeleteSession ends one session (sign-out). Ending one that is gone
	// is not an error.
	DeleteSession(ctx context.Context, id string) error
	// DeleteSessions ends every session of a member (sign-out everywhere,
	// and what a password reset does). Audited.
	DeleteSessions(ctx context.Context, orgID, userID string) error

	// CreateInvitation creates an invitation link for an email address and
	// returns it with its token. An email of a member makes a link that
	// sets that member's password, keeping their role. EINVALID. Audited.
	CreateInvitation(ctx context.Context, orgID string, create InvitationCreate) (*Invitation, string, error)
	// ResetPassword removes a member's password, ends their sessions and
	// returns a link that sets a new one. ENOTFOUND. Audited.
	ResetPassword(ctx context.Context, orgID, userID string) (*Invitation, string, error)
	// FindInvitations lists the organization's links that are not used
	// nor expired, newest first, with their total.
	FindInvitations(ctx context.Context, orgID string, page Page) ([]*Invitation, int, error)
	// FindInvitation returns the link of a token. ENOTFOUND when there is
	// none, it was used or it expired.
	FindInvitation(ctx context.Context, token string) (*Invitation, error)
	// DeleteInvitation revokes a link. ENOTFOUND. Audited.
	DeleteInvitation(ctx context.Context, orgID, id string) error
	// AcceptInvitation uses a link: creates the member if need be, sets
	// their password hash, and uses up the link, in one transaction; it
	// returns the member. ENOTFOUND for a token that is unknown, used or
	// expired. Audited with the member as actor.
	AcceptInvitation(ctx context.Context, token, passwordHash string) (*Member, error)
	// FindCredentials returns the password hashes of the members with this
	// email, in every organization, oldest organization first.
	FindCredentials(ctx context.Context, email string) ([]Credential, error)
	// UpdateMemberRole changes a member's role. EINVALID (including the
	// last admin of an organization made a member), ENOTFOUND. Audited.
	UpdateMemberRole(ctx context.Context, orgID, userID, role string) (*Member, error)
}
