package gatehouse

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"slices"
	"strings"
	"time"
)

// Single sign-on. An organization signs its members in to the console
// through OpenID Connect providers (Okta, Entra ID, Google, Keycloak, Dex,
// Zitadel...), each configured by its issuer, a client id and secret, the
// scopes to ask for and the claims that carry the email, the name and the
// groups. A provider's groups map to an organization role and to workspace
// memberships (GroupMapping), applied at every sign-in and at every SCIM
// push (see scim.go). The protocol itself (discovery, the code flow with
// PKCE, the ID token's checks) is the sso package's; what a verified sign-in
// may do is decided here and in the store.

// SSOProvider is an OpenID Connect provider of an organization.
type SSOProvider struct {
	ID             string
	OrganizationID string
	// Name is shown on the sign-in page: "Sign in with <Name>".
	Name      string
	IssuerURL string
	ClientID  string
	// ClientSecret is the client secret in the clear: only the read that
	// signs someone in (SSOService.FindSSOProviderForSignIn) fills it in.
	// "" for a public client (PKCE alone).
	ClientSecret Secret
	// ClientSecretLabel is the secret masked (Mask), "" when there is none.
	ClientSecretLabel string
	Scopes            []string
	// The claims of the ID token (or, where it lacks them, of the userinfo
	// endpoint) that carry the email, whether it is verified, the name and
	// the groups. GroupsClaim "" reads no groups.
	EmailClaim, EmailVerifiedClaim, NameClaim, GroupsClaim string
	// AllowedDomains are the email domains whose people the provider may
	// make members at their first sign-in; nil makes none (only members
	// and invited people sign in).
	AllowedDomains []string
	Enabled        bool
	// LastSignInAt is when the provider last signed someone in: single
	// sign-on works once it is set.
	LastSignInAt *time.Time
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// The claims a provider reads unless told otherwise: the standard claims of
// OpenID Connect, and "groups", which Okta, Keycloak, Dex and Entra ID use.
const (
	DefaultEmailClaim         = "email"
	DefaultEmailVerifiedClaim = "email_verified"
	DefaultNameClaim          = "name"
	DefaultGroupsClaim        = "groups"
)

// DefaultSSOScopes are the scopes asked for unless told otherwise.
func DefaultSSOScopes() []string { return []string{"openid", "email", "profile"} }

// Limits of a provider's fields.
const (
	MaxSSOProviderNameLength = 100
	MaxIssuerURLLength       = 2048
	MaxClientIDLength        = 512
	MaxClientSecretLength    = 4096
	MaxSSOScopes             = 20
	MaxClaimNameLength       = 256
	MaxAllowedDomains        = 100
	// MaxSSOProviders bounds the providers of an organization.
	MaxSSOProviders = 20
)

// SSOProviderUpdate holds the fields of a provider's create or update;
// unset fields stay unchanged. ClientSecret replaces the secret (null: a
// public client); GroupsClaim null stops reading groups; AllowedDomains
// null creates no members.
type SSOProviderUpdate struct {
	Name               Patch[string]   `json:"name"`
	IssuerURL          Patch[string]   `json:"issuer_url"`
	ClientID           Patch[string]   `json:"client_id"`
	ClientSecret       Patch[string]   `json:"client_secret"`
	Scopes             Patch[[]string] `json:"scopes"`
	EmailClaim         Patch[string]   `json:"email_claim"`
	EmailVerifiedClaim Patch[string]   `json:"email_verified_claim"`
	NameClaim          Patch[string]   `json:"name_claim"`
	GroupsClaim        Patch[string]   `json:"groups_claim"`
	AllowedDomains     Patch[[]string] `json:"allowed_domains"`
	Enabled            Patch[bool]     `json:"enabled"`
}

// NewSSOProvider returns a provider built from a create request, validated
// and with the defaults filled in: name, issuer_url and client_id are
// required; it is enabled unless it says otherwise.
func NewSSOProvider(c SSOProviderUpdate) (*SSOProvider, error) {
	for _, f := range []struct {
		name string
		p    Patch[string]
	}{{"name", c.Name}, {"issuer_url", c.IssuerURL}, {"client_id", c.ClientID}} {
		if !f.p.Set || f.p.Null {
			return nil, FieldError(f.name, "is required")
		}
	}
	p := &SSOProvider{
		Scopes: DefaultSSOScopes(), EmailClaim: DefaultEmailClaim, EmailVerifiedClaim: DefaultEmailVerifiedClaim,
		NameClaim: DefaultNameClaim, GroupsClaim: DefaultGroupsClaim, Enabled: true,
	}
	return p, p.Apply(c)
}

// Apply validates u and applies it to p. The client secret is not applied:
// the store seals it (its label is set here).
func (p *SSOProvider) Apply(u SSOProviderUpdate) error {
	if err := u.validate(); err != nil {
		return err
	}
	setString := func(dst *string, v Patch[string]) {
		if v.Set {
			*dst = strings.TrimSpace(v.Value)
		}
	}
	setString(&p.Name, u.Name)
	setString(&p.IssuerURL, u.IssuerURL)
	setString(&p.ClientID, u.ClientID)
	setString(&p.EmailClaim, u.EmailClaim)
	setString(&p.EmailVerifiedClaim, u.EmailVerifiedClaim)
	setString(&p.NameClaim, u.NameClaim)
	setString(&p.GroupsClaim, u.GroupsClaim) // null: ""
	if u.ClientSecret.Set {
		p.ClientSecretLabel = ""
		if !u.ClientSecret.Null {
			p.ClientSecretLabel = Mask(u.ClientSecret.Value)
		}
	}
	if u.Scopes.Set {
		p.Scopes = DefaultSSOScopes()
		if !u.Scopes.Null {
			p.Scopes = withOpenID(u.Scopes.Value)
		}
	}
	if u.AllowedDomains.Set {
		p.AllowedDomains = nil
		for _, d := range u.AllowedDomains.Value {
			p.AllowedDomains = append(p.AllowedDomains, strings.ToLower(strings.TrimSpace(d)))
		}
		slices.Sort(p.AllowedDomains)
		p.AllowedDomains = slices.Compact(p.AllowedDomains)
	}
	if u.Enabled.Set {
		p.Enabled = u.Enabled.Value
	}
	return nil
}

// withOpenID returns the scopes without repeats, "openid" first: OpenID
// Connect needs it, so it is added when missing.
func withOpenID(scopes []string) []string {
	out := []string{"openid"}
	for _, s := range scopes {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func (u *SSOProviderUpdate) validate() error {
	for _, f := range []struct {
		name string
		null bool
	}{
		{"name", u.Name.Null}, {"issuer_url", u.IssuerURL.Null}, {"client_id", u.ClientID.Null},
		{"email_claim", u.EmailClaim.Null}, {"email_verified_claim", u.EmailVerifiedClaim.Null},
		{"name_claim", u.NameClaim.Null}, {"enabled", u.Enabled.Null},
	} {
		if f.null {
			return FieldError(f.name, "must not be null")
		}
	}
	if u.Name.Set {
		if err := validateName("name", u.Name.Value, MaxSSOProviderNameLength); err != nil {
			return err
		}
	}
	if u.IssuerURL.Set {
		if err := ValidateIssuerURL(strings.TrimSpace(u.IssuerURL.Value)); err != nil {
			return err
		}
	}
	if err := validateToken("client_id", u.ClientID, MaxClientIDLength); err != nil {
		return err
	}
	if s := u.ClientSecret; s.Set && !s.Null && (s.Value == "" || len(s.Value) > MaxClientSecretLength || !IsPlainText(s.Value)) {
		return FieldError("client_secret", "must be 1 to %d characters, or null for a public client", MaxClientSecretLength)
	}
	for _, c := range []struct {
		name string
		p    Patch[string]
	}{{"email_claim", u.EmailClaim}, {"email_verified_claim", u.EmailVerifiedClaim}, {"name_claim", u.NameClaim}, {"groups_claim", u.GroupsClaim}} {
		if err := validateToken(c.name, c.p, MaxClaimNameLength); err != nil {
			return err
		}
	}
	if err := validateScopes(u.Scopes.Value); err != nil {
		return err
	}
	return validateDomains(u.AllowedDomains.Value)
}

// validateToken checks a field that holds one word of printable ASCII (a
// client id, a claim's name), when it is given and not null.
func validateToken(field string, p Patch[string], max int) error {
	if !p.Set || p.Null {
		return nil
	}
	v := strings.TrimSpace(p.Value)
	if v == "" || len(v) > max {
		return FieldError(field, "must be 1 to %d characters", max)
	}
	for i := 0; i < len(v); i++ {
		if v[i] <= ' ' || v[i] > '~' {
			return FieldError(field, "must be printable ASCII without spaces")
		}
	}
	return nil
}

func validateScopes(scopes []string) error {
	if len(scopes) > MaxSSOScopes {
		return FieldError("scopes", "must have at most %d entries", MaxSSOScopes)
	}
	for i, s := range scopes {
		if err := validateToken(fmt.Sprintf("scopes[%d]", i), Val(s), MaxClaimNameLength); err != nil {
			return err
		}
	}
	return nil
}

func validateDomains(domains []string) error {
	if len(domains) > MaxAllowedDomains {
		return FieldError("allowed_domains", "must have at most %d entries", MaxAllowedDomains)
	}
	for i, d := range domains {
		d = strings.ToLower(strings.TrimSpace(d))
		if !strings.Contains(d, ".") || net.ParseIP(d) != nil || !validHost(d) {
			return FieldError(fmt.Sprintf("allowed_domains[%d]", i), "must be a domain name such as example.com")
		}
	}
	return nil
}

// ValidateIssuerURL checks an OpenID provider's issuer: an https URL (or
// http on the loopback, for a provider on the same machine) without user,
// query or fragment. EINVALID naming the field issuer_url.
func ValidateIssuerURL(s string) error {
	u, err := url.Parse(s)
	if err != nil || len(s) > MaxIssuerURLLength || !validCallbackURL(s) || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" {
		return FieldError("issuer_url", "must be the provider's issuer: an https URL (http only on the loopback) without query or fragment, such as https://acme.okta.com")
	}
	return nil
}

// AllowsEmail reports whether the provider may make a member of someone
// with this (verified) email at their first sign-in: its domain is one of
// AllowedDomains.
func (p *SSOProvider) AllowsEmail(email string) bool {
	_, domain, ok := strings.Cut(strings.ToLower(email), "@")
	return ok && slices.Contains(p.AllowedDomains, domain)
}

// RedirectPath is the path of the console where every provider sends the
// browser back: register <public URL> + RedirectPath at the provider.
const RedirectPath = "/sso/callback"

// SSOStartPath is the path of the console that starts a sign-in through
// a provider: SSOStartPath + the provider's id. It is the provider's
// sign-in link (the page's buttons lead there too).
const SSOStartPath = "/sso/start/"

// SSORedirectURL returns the redirect URI of the console reached at
// publicURL.
func SSORedirectURL(publicURL string) string {
	return strings.TrimRight(publicURL, "/") + RedirectPath
}

// SignInSettings are how an organization's members may sign in to the
// console. Single sign-on is always open (through the enabled providers);
// a management key always signs in (break-glass).
type SignInSettings struct {
	OrganizationID string
	// PasswordSignIn allows members to sign in with their email and
	// password. It can be turned off once single sign-on works.
	PasswordSignIn bool
	UpdatedAt      *time.Time // nil: never changed
}

// SignInSettingsUpdate changes SignInSettings; unset fields stay unchanged.
type SignInSettingsUpdate struct {
	PasswordSignIn Patch[bool] `json:"password_sign_in"`
}

// CheckPasswordSignInOff decides whether an organization may turn password
// sign-in off: only once single sign-on works, that is once one of its
// enabled providers has signed someone in. Otherwise its members could be
// left with no way in. EINVALID saying what is missing.
func CheckPasswordSignInOff(providers []*SSOProvider) error {
	for _, p := range providers {
		if p.Enabled && p.LastSignInAt != nil {
			return nil
		}
	}
	return FieldError("password_sign_in", "can be turned off only once single sign-on works: an enabled provider must have signed someone in first")
}

// SSOLoginTTL is how long a sign-in may stay at the provider: the browser
// must come back within it.
const SSOLoginTTL = 10 * time.Minute

// SSOLogin is a sign-in under way: the browser was sent to the provider
// with a state, a nonce and a PKCE challenge, and is to come back with the
// state. Only the state's hash and the nonce's are stored; the verifier is
// sealed.
type SSOLogin struct {
	ProviderID string
	// NonceHash is HashNonce of the nonce the ID token must carry.
	NonceHash string
	// Verifier is the PKCE verifier of the code.
	Verifier Secret
	// Next is where the browser goes once signed in: a path of the console.
	Next      string
	CreatedAt time.Time
	ExpiresAt time.Time
}

// NewSSOState returns a fresh state or nonce: 32 bytes from crypto/rand,
// base64url.
func NewSSOState() string { return NewAccountToken() }

// HashNonce returns what is stored of a nonce: its SHA-256 in hex, which
// the nonce of an ID token is compared with.
func HashNonce(nonce string) string {
	sum := sha256.Sum256([]byte(nonce))
	return hex.EncodeToString(sum[:])
}

// SSOSignIn is what a provider said of someone in a verified ID token (and
// its userinfo): who they are to it, their email and whether it verified
// it, their name and their groups.
type SSOSignIn struct {
	ProviderID string
	// Subject is the ID token's sub: the person, for this provider.
	Subject       string
	Email         string
	EmailVerified bool
	Name          string
	// Groups are the values of the groups claim; GroupsGiven says the
	// provider reads a groups claim at all (an empty list then means no
	// groups, and takes away what groups gave).
	Groups      []string
	GroupsGiven bool
}

// Limits of what a sign-in may carry.
const (
	MaxSubjectLength    = 255
	MaxGroupNameLength  = 256
	MaxGroupsPerSignIn  = 1000
	maxSignInNameLength = MaxPersonNameField
)

// Validate checks what the provider said; groups are deduplicated. A
// provider that says too much is refused rather than cut short: dropping
// groups could drop the one that makes an admin. EINVALID.
func (s *SSOSignIn) Validate() error {
	if s.Subject == "" || len(s.Subject) > MaxSubjectLength || !IsPlainText(s.Subject) {
		return Errorf(EINVALID, "the provider's ID token has no usable subject (sub)")
	}
	if len(s.Groups) > MaxGroupsPerSignIn {
		return Errorf(EINVALID, "the provider named %d groups, more than the %d a sign-in may carry: filter the groups claim at the provider", len(s.Groups), MaxGroupsPerSignIn)
	}
	for _, g := range s.Groups {
		if err := ValidateGroupName("groups", g); err != nil {
			return Errorf(EINVALID, "the provider named a group Gatehouse cannot keep: %s", ErrorMessage(err))
		}
	}
	slices.Sort(s.Groups)
	s.Groups = slices.Compact(s.Groups)
	if len([]rune(s.Name)) > maxSignInNameLength || CheckDisplayText("name", s.Name, false) != nil {
		s.Name = "" // a name is a courtesy: one we cannot show is left out
	}
	return nil
}

// ErrSSOUnknownPerson is the refusal of someone whom nothing lets in: no
// member has their verified email, no invitation names it, and the
// provider may not make members of its domain.
func ErrSSOUnknownPerson() error {
	return Errorf(EFORBIDDEN, "you are not a member of this organization: ask an admin for an invitation, or to allow your email's domain")
}

// ErrMemberDeactivated refuses a sign-in of a member whom the identity
// provider deactivated.
func ErrMemberDeactivated() error {
	return Errorf(EFORBIDDEN, "your account in this organization is deactivated by its identity provider")
}

// ErrSSOUnverified refuses an email the provider did not verify: it never
// links to a member nor makes one.
func ErrSSOUnverified() error {
	return Errorf(EFORBIDDEN, "the identity provider did not verify your email address, so it cannot be matched to a member: verify it at the provider first")
}

// SSOService keeps an organization's providers, how its members may sign
// in, the sign-ins under way and the group mappings.
type SSOService interface {
	// FindSSOProviders lists the organization's providers and their total,
	// oldest first. Their client secrets stay empty.
	FindSSOProviders(ctx context.Context, orgID string, page Page) ([]*SSOProvider, int, error)
	// FindSignInProviders lists the enabled providers of the oldest
	// organization (the server's first, which its operator runs), oldest
	// first: the buttons of the sign-in page. Another organization's
	// providers are reached by their own sign-in links (SSOStartPath): a
	// button on a page every organization's people see would let one
	// organization's admin pose as another's identity provider.
	FindSignInProviders(ctx context.Context) ([]*SSOProvider, error)
	// FindSSOProvider returns a provider of the organization, without its
	// client secret. ENOTFOUND.
	FindSSOProvider(ctx context.Context, orgID, id string) (*SSOProvider, error)
	// FindSSOProviderForSignIn returns an enabled provider by id, whatever
	// its organization, with its client secret: for the sign-in alone.
	// ENOTFOUND for an unknown or disabled provider; EUNAVAILABLE when the
	// secret does not open with the store's keys.
	FindSSOProviderForSignIn(ctx context.Context, id string) (*SSOProvider, error)
	// CreateSSOProvider adds a provider; its client secret is sealed.
	// EINVALID (including past MaxSSOProviders). Audited.
	CreateSSOProvider(ctx context.Context, orgID string, create SSOProviderUpdate) (*SSOProvider, error)
	// UpdateSSOProvider changes a provider. EINVALID, ENOTFOUND. Audited.
	UpdateSSOProvider(ctx context.Context, orgID, id string, update SSOProviderUpdate) (*SSOProvider, error)
	// DeleteSSOProvider removes a provider with the identities it linked
	// (its members stay). EINVALID when it is the last working way in
	// while password sign-in is off; ENOTFOUND. Audited.
	DeleteSSOProvider(ctx context.Context, orgID, id string) error

	// FindSignInSettings returns how the organization's members sign in.
	FindSignInSettings(ctx context.Context, orgID string) (*SignInSettings, error)
	// UpdateSignInSettings changes them. EINVALID (password sign-in turned
	// off before single sign-on works: CheckPasswordSignInOff). Audited.
	UpdateSignInSettings(ctx context.Context, orgID string, update SignInSettingsUpdate) (*SignInSettings, error)

	// CreateSSOLogin records a sign-in under way under the hash of its
	// state. EINVALID.
	CreateSSOLogin(ctx context.Context, state string, login SSOLogin) error
	// TakeSSOLogin returns the sign-in of a state and forgets it, so that a
	// state serves once. ENOTFOUND for an unknown, used or expired state.
	TakeSSOLogin(ctx context.Context, state string) (*SSOLogin, error)
	// SignInWithSSO opens a session for what a provider verified: the
	// member its subject was linked to, else the member with the verified
	// email (linking them), else the person an invitation names, else, when
	// the provider allows the email's domain, a new member. The member's
	// groups are recorded and the mappings applied (GroupAccess), in the
	// same transaction. EFORBIDDEN for an unverified email, an unknown
	// person, a deactivated member; ENOTFOUND for a provider gone or
	// disabled. Audited (session.create, method oidc).
	SignInWithSSO(ctx context.Context, in SSOSignIn) (*Session, string, error)

	// FindGroupMappings lists the organization's mappings, oldest first,
	// with their total.
	FindGroupMappings(ctx context.Context, orgID string, page Page) ([]*GroupMapping, int, error)
	// FindGroupMapping returns a mapping. ENOTFOUND.
	FindGroupMapping(ctx context.Context, orgID, id string) (*GroupMapping, error)
	// CreateGroupMapping adds a mapping and applies it to the members the
	// group is known to hold. EINVALID (including a group that has a
	// mapping, a workspace that is not the organization's, the default
	// workspace). Audited.
	CreateGroupMapping(ctx context.Context, orgID string, create GroupMappingUpdate) (*GroupMapping, error)
	// UpdateGroupMapping changes a mapping and applies the change to the
	// members of its old and new group. EINVALID, ENOTFOUND. Audited.
	UpdateGroupMapping(ctx context.Context, orgID, id string, update GroupMappingUpdate) (*GroupMapping, error)
	// DeleteGroupMapping removes a mapping and takes away what it gave
	// (the removed members' keys following the rules of removed members).
	// ENOTFOUND. Audited.
	DeleteGroupMapping(ctx context.Context, orgID, id string) error
}
