package gatehouse

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"math"
	"net/mail"
	"strings"
	"time"
)

// Console accounts. A member of an organization signs in to the web console
// with their email and a password, which they set through a link: an
// invitation that an admin creates, or a reset that an admin makes. The
// operator of a fresh install signs in by exchanging a management key for an
// admin session. Sessions live in the database, so every instance sees them.

// Session lifetimes. A session ends SessionIdleTimeout after its last
// recorded activity, and SessionLifetime after it began whatever its
// activity. Activity is recorded at most once a SessionTouchInterval, so
// that a busy console does not write on every request; the idle end is
// therefore known to within that interval.
const (
	SessionIdleTimeout   = 12 * time.Hour
	SessionLifetime      = 7 * 24 * time.Hour
	SessionTouchInterval = time.Minute
)

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

// IdleAt returns when the session ends if it sees no more activity: the
// earlier of its idle end and its absolute end.
func (s *Session) IdleAt() time.Time {
	idle := s.LastSeenAt.Add(SessionIdleTimeout)
	if idle.After(s.ExpiresAt) {
		return s.ExpiresAt
	}
	return idle
}

// SessionCreate holds the fields of a new session: exactly one of UserID and
// KeyHash.
type SessionCreate struct {
	OrganizationID string
	UserID         *string
	KeyHash        *string
	// Lifetime is the absolute lifetime of the session; 0 means
	// SessionLifetime, and more than that is refused.
	Lifetime time.Duration
}

// Validate checks the fields and fills in the default lifetime.
func (c *SessionCreate) Validate() error {
	if (c.UserID == nil) == (c.KeyHash == nil) {
		return Errorf(EINVALID, "a session belongs to a member or to a management key: give exactly one")
	}
	if c.Lifetime == 0 {
		c.Lifetime = SessionLifetime
	}
	if c.Lifetime < 0 || c.Lifetime > SessionLifetime {
		return FieldError("lifetime", "must be between 0 and %s", SessionLifetime)
	}
	return nil
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
// The list of usable links (the store's FindInvitations) counts them as
// the unused links made less than InvitationTTL ago, by its blocks: were
// it changed, links made before would be listed by the new length until
// they expire, though they keep their own expires_at.
const InvitationTTL = 7 * 24 * time.Hour

// InvitationPath is the path under the public URL of the console's page of
// a link: InvitationPath + token.
const InvitationPath = "/invite/"

// InvitationURL returns the link of a token under the public URL where
// browsers reach the server (such as https://gatehouse.example.com).
func InvitationURL(publicURL, token string) string {
	return strings.TrimRight(publicURL, "/") + InvitationPath + token
}

// InvitationCreate holds the fields of a new invitation.
type InvitationCreate struct {
	Email string
	// Role is the role of the member the invitation makes; "" means
	// RoleMember, or the member's own role when the email is a member's
	// (another role is refused then: roles change through
	// UpdateMemberRole).
	Role string
}

// Validate checks the fields; it leaves an empty Role for the store to fill
// in.
func (c *InvitationCreate) Validate() error {
	email, err := ValidateEmail("email", c.Email)
	if err != nil {
		return err
	}
	c.Email = email
	return ValidateRole("role", c.Role, true)
}

// ValidateEmail checks a plain email address given in the named field and
// returns it without surrounding spaces.
func ValidateEmail(field, email string) (string, error) {
	email = strings.TrimSpace(email)
	if email == "" {
		return "", FieldError(field, "is required")
	}
	if a, err := mail.ParseAddress(email); err != nil || a.Address != email || len(email) > MaxEmailLength {
		return "", FieldError(field, "must be a plain email address such as ada@example.com")
	}
	return email, nil
}

// ValidateRole checks an organization role given in the named field; "" is
// accepted when optional.
func ValidateRole(field, role string, optional bool) error {
	switch {
	case role == RoleAdmin || role == RoleMember:
		return nil
	case role == "" && optional:
		return nil
	}
	return FieldError(field, "must be %s or %s", RoleAdmin, RoleMember)
}

// Credential is a member's password hash, for sign-in.
type Credential struct {
	OrganizationID string
	UserID         string
	PasswordHash   string
}

// NewAccountToken returns a fresh token for a session, a link or a CSRF
// check: 32 bytes from crypto/rand, base64url without padding (43
// characters, safe in a cookie and a URL path).
func NewAccountToken() string {
	return base64.RawURLEncoding.EncodeToString(randomBytes(32))
}

// AccountTokenID returns the id under which a session or a link is stored:
// the lowercase hex SHA-256 of its token. The token itself never is.
func AccountTokenID(token string) string {
	sum := sha256.Sum256([]byte(token))
	return hex.EncodeToString(sum[:])
}

// SignInBucket returns the name under which sign-in attempts for an email
// are counted (rate limited per account), whichever its case or spaces: a
// hash, so that a limiter's store holds no email address.
func SignInBucket(email string) string {
	return "signin:" + AccountTokenID(strings.ToLower(strings.TrimSpace(email)))[:32]
}

// SignInEvent is a console sign-in with a password that opened no
// session, as the audit log records it: a session.create entry with its
// Result, and a session.lockout entry for each of its Lockouts.
type SignInEvent struct {
	Email string
	// Result is AuditResultFailure (a wrong password) or
	// AuditResultThrottled (refused by the limits, never checked).
	Result string
	// Address is the client's address (the limits count an IPv6 /64).
	Address string
	// Lockouts are the budgets that a failure used up, if any.
	Lockouts []SignInLockout
}

// SignInLockout is a budget of failed sign-ins that a failure used up.
type SignInLockout struct {
	// Scope is SignInLockoutAddress or SignInLockoutAccount.
	Scope string
	// RetryAfter is how long until the budget admits an attempt again
	// (shown in whole seconds).
	RetryAfter time.Duration
}

// The scopes of sign-in lock-outs, in the details of session.lockout
// entries.
const (
	// SignInLockoutAddress: this address may not try this account again
	// for a while (other addresses, its owner's, still may).
	SignInLockoutAddress = "address"
	// SignInLockoutAccount: the account is under attack (too many
	// failures from all addresses together): each address may now fail on
	// it only a few times, then rarely. Nobody is refused for it alone.
	SignInLockoutAccount = "account"
)

// Validate checks an event's result and lock-outs. EINVALID.
func (ev SignInEvent) Validate() error {
	if ev.Result != AuditResultFailure && ev.Result != AuditResultThrottled {
		return FieldError("result", "must be %s or %s", AuditResultFailure, AuditResultThrottled)
	}
	if !IsPlainText(ev.Email) || !IsPlainText(ev.Address) {
		return FieldError("email", "must be UTF-8 text without NUL characters")
	}
	for _, l := range ev.Lockouts {
		switch {
		case l.Scope != SignInLockoutAddress && l.Scope != SignInLockoutAccount:
			return FieldError("lockouts", "scope must be %s or %s", SignInLockoutAddress, SignInLockoutAccount)
		case ev.Result != AuditResultFailure:
			return FieldError("lockouts", "only a failure locks out")
		}
	}
	return nil
}

// AuditRecords returns the audit records of the event for a member: the
// attempt, then the lock-outs it caused.
func (ev SignInEvent) AuditRecords(userID string) []AuditRecord {
	recs := []AuditRecord{{Operation: OpSessionCreate, ResourceType: ResourceMember, ResourceIDs: []string{userID}, Result: ev.Result,
		Details: map[string]any{"method": "password", "address": ev.Address}}}
	for _, l := range ev.Lockouts {
		recs = append(recs, AuditRecord{Operation: OpSessionLockout, ResourceType: ResourceMember, ResourceIDs: []string{userID},
			Details: map[string]any{"scope": l.Scope, "address": ev.Address,
				"retry_after_seconds": int64(math.Ceil(l.RetryAfter.Seconds()))}})
	}
	return recs
}

// AccountService keeps console sessions, invitations and passwords.
type AccountService interface {
	// CreateSession creates a session and returns it with its token, which
	// is never stored. EINVALID, ENOTFOUND for an unknown member, or a key
	// that is not an active management key of the organization. Audited,
	// with the session's member or key as actor unless ctx carries one.
	CreateSession(ctx context.Context, create SessionCreate) (*Session, string, error)
	// FindSession returns the session of a token. ENOTFOUND when there is
	// none, it has passed its ExpiresAt, it saw no activity for
	// SessionIdleTimeout, its member is gone, or its key is gone, disabled
	// or expired.
	FindSession(ctx context.Context, token string) (*Session, error)
	// TouchSession records activity of the session now, unless it was
	// recorded less than SessionTouchInterval ago (then it changes
	// nothing). A session that is gone is not an error. Callers that have
	// the session read it first (see Accounts.Session), so most requests
	// do not write at all.
	TouchSession(ctx context.Context, id string) error
	// DeleteSession ends one session (sign-out). Ending one that is gone
	// is not an error. Audited.
	DeleteSession(ctx context.Context, id string) error
	// DeleteSessions ends every session of a member (sign-out everywhere,
	// and what a password reset does). ENOTFOUND for an unknown member.
	// Audited.
	DeleteSessions(ctx context.Context, orgID, userID string) error

	// CreateInvitation creates an invitation link for an email address and
	// returns it with its token. An email of a member without a password
	// makes a link that sets that member's password, keeping their role;
	// a member with a password is refused (reset it instead). The email's
	// earlier links stop working. The actor of ctx is its creator.
	// EINVALID. Audited.
	CreateInvitation(ctx context.Context, orgID string, create InvitationCreate) (*Invitation, string, error)
	// ResetPassword removes a member's password, ends their sessions and
	// returns a link that sets a new one; their earlier links stop
	// working. ENOTFOUND. Audited.
	ResetPassword(ctx context.Context, orgID, userID string) (*Invitation, string, error)
	// FindInvitations lists the organization's links that are not used
	// nor expired, newest first, with their total.
	FindInvitations(ctx context.Context, orgID string, page Page) ([]*Invitation, int, error)
	// FindInvitation returns the link of a token. ENOTFOUND when there is
	// none, it was used or it expired.
	FindInvitation(ctx context.Context, token string) (*Invitation, error)
	// DeleteInvitation revokes a link that is not used nor expired.
	// ENOTFOUND. Audited.
	DeleteInvitation(ctx context.Context, orgID, id string) error
	// AcceptInvitation uses a link: creates the member if need be, sets
	// their password hash, and uses up the link, in one transaction; it
	// returns the member. ENOTFOUND for a token that is unknown, used or
	// expired; ECONFLICT when the email became a member's who has a
	// password meanwhile. Audited with the member as actor.
	AcceptInvitation(ctx context.Context, token, passwordHash string) (*Member, error)
	// RecordSignIn writes a refused sign-in with a password into the audit
	// log of every organization where the email (whatever its case) is a
	// member with a password, with ActorVisitor as actor and the request id
	// that ctx carries; an unknown email writes nothing, and the answer does
	// not tell which. EINVALID for an event that Validate refuses.
	RecordSignIn(ctx context.Context, ev SignInEvent) error
	// FindCredentials returns the password hashes of the members with this
	// email (whatever its case) who have a password, in every
	// organization, oldest organization first.
	FindCredentials(ctx context.Context, email string) ([]Credential, error)
	// UpdateMemberRole changes a member's role. EINVALID (including the
	// last admin of an organization made a member), ENOTFOUND. Audited.
	UpdateMemberRole(ctx context.Context, orgID, userID, role string) (*Member, error)
}
