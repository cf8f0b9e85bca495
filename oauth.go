package gatehouse

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"strings"
	"time"
)

// AuthCode is an authorization code of the OAuth PKCE flow: created by an
// authenticated caller, exchanged once by an application for a new key.
type AuthCode struct {
	ID                  string // the code itself; only its hash is stored
	AppID               int64
	OrganizationID      string
	WorkspaceID         string
	CreatorUserID       *string
	CallbackURL         string
	CodeChallenge       *string
	CodeChallengeMethod *string
	Limit               *Money
	LimitReset          Interval
	KeyExpiresAt        *time.Time
	KeyLabel            string
	CreatedAt           time.Time
	ExpiresAt           time.Time
}

// OAuth rules.
const (
	AuthCodeTTL          = 10 * time.Minute
	MaxVerifierAttempts  = 5
	MaxKeyLabelLength    = 100
	DefaultOAuthKeyLabel = "OAuth key"
	MethodS256           = "S256"
	MethodPlain          = "plain"
)

// AuthCodeCreate holds the fields of a new authorization code.
type AuthCodeCreate struct {
	CallbackURL         string
	CodeChallenge       *string
	CodeChallengeMethod *string
	Limit               *Money
	UsageLimitType      Interval
	ExpiresAt           *time.Time
	KeyLabel            *string
	WorkspaceID         string
	// CreatorKeyHash is the hash of the regular key that creates the code,
	// "" for a management key. The exchanged key never gets more than this
	// key holds when the code is exchanged (see CapByCreator).
	CreatorKeyHash string
}

// Validate checks the fields and fills in the default challenge method.
func (c *AuthCodeCreate) Validate(now time.Time) error {
	if c.CallbackURL == "" {
		return FieldError("callback_url", "is required")
	}
	if !validCallbackURL(c.CallbackURL) {
		return FieldError("callback_url", "must be an https URL, or an http URL on localhost or 127.0.0.1, whose host is a DNS name or an IP address")
	}
	if c.CodeChallenge != nil {
		if !validPKCEString(*c.CodeChallenge) {
			return FieldError("code_challenge", "must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~'")
		}
		if c.CodeChallengeMethod == nil {
			m := MethodS256
			c.CodeChallengeMethod = &m
		}
	}
	if m := c.CodeChallengeMethod; m != nil {
		if *m != MethodS256 && *m != MethodPlain {
			return FieldError("code_challenge_method", "must be S256 or plain")
		}
		if c.CodeChallenge == nil {
			return FieldError("code_challenge_method", "requires code_challenge")
		}
	}
	if err := validateLimit("limit", c.Limit); err != nil {
		return err
	}
	if !c.UsageLimitType.Valid() {
		return FieldError("usage_limit_type", "must be one of daily, weekly, monthly")
	}
	if c.ExpiresAt != nil {
		if err := checkExpiry(*c.ExpiresAt, now); err != nil {
			return err
		}
	}
	if l := c.KeyLabel; l != nil {
		if err := validateName("key_label", *l, MaxKeyLabelLength); err != nil {
			return err
		}
	}
	return nil
}

func validCallbackURL(s string) bool {
	u, err := url.Parse(s)
	if err != nil || u.Host == "" || u.User != nil || !validHost(u.Hostname()) {
		return false
	}
	switch u.Scheme {
	case "https":
		return true
	case "http":
		h := u.Hostname()
		return strings.EqualFold(h, "localhost") || (net.ParseIP(h) != nil && net.ParseIP(h).IsLoopback())
	}
	return false
}

// validHost reports whether h is an IP address or a DNS host name: labels
// of letters, digits and inner hyphens, up to 63 characters each and 253
// in all. Go's URL parser lets through hosts such as "*", "a;b" or "a,b",
// and the origin of a callback goes into the authorization page's
// Content-Security-Policy (form-action), where those would widen it or add
// a directive.
func validHost(h string) bool {
	if net.ParseIP(h) != nil {
		return true
	}
	if h == "" || len(h) > 253 {
		return false
	}
	for label := range strings.SplitSeq(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for i := 0; i < len(label); i++ {
			c := label[i]
			if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// CallbackOrigin returns the scheme://host[:port] of a callback URL, which
// identifies the application.
func CallbackOrigin(callbackURL string) string {
	u, err := url.Parse(callbackURL)
	if err != nil {
		return callbackURL
	}
	return u.Scheme + "://" + u.Host
}

// validPKCEString reports whether s is 43..128 characters of the RFC 7636
// unreserved set.
func validPKCEString(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.' || c == '_' || c == '~') {
			return false
		}
	}
	return true
}

// AuthCodeExchange holds the fields of a code exchange.
type AuthCodeExchange struct {
	Code                string  `json:"code"`
	CodeVerifier        *string `json:"code_verifier" null:"no"`
	CodeChallengeMethod *string `json:"code_challenge_method"`
}

// Validate checks the fields that need no lookup.
func (x *AuthCodeExchange) Validate() error {
	if x.Code == "" {
		return FieldError("code", "is required")
	}
	if len(x.Code) > 256 {
		return FieldError("code", "is too long")
	}
	if v := x.CodeVerifier; v != nil && !validPKCEString(*v) {
		return FieldError("code_verifier", "must be 43 to 128 characters of A-Z, a-z, 0-9, '-', '.', '_', '~' (RFC 7636)")
	}
	if m := x.CodeChallengeMethod; m != nil && *m != MethodS256 && *m != MethodPlain {
		return FieldError("code_challenge_method", "must be S256, plain or null")
	}
	return nil
}

// VerifyPKCE reports whether verifier answers challenge under method, in
// constant time.
func VerifyPKCE(method, challenge, verifier string) bool {
	want := verifier
	if method == MethodS256 {
		sum := sha256.Sum256([]byte(verifier))
		want = base64.RawURLEncoding.EncodeToString(sum[:])
	}
	return subtle.ConstantTimeCompare([]byte(want), []byte(challenge)) == 1
}

// NewAuthCodeID returns a fresh authorization code with 192 random bits.
func NewAuthCodeID() string { return "ghc_" + randomToken(24) }

// ErrBadAuthCode is the one answer for every unusable code (unknown, used,
// expired or burned), so that the answer does not tell which codes exist.
var ErrBadAuthCode = Errorf(EFORBIDDEN, "invalid, expired or already used authorization code")

// CheckExchange verifies an exchange request against the challenge and
// method the code was created with (nil when none): a method that differs
// is EINVALID; a missing or wrong verifier is EFORBIDDEN. A verifier sent
// for a code created without a challenge is ignored.
func CheckExchange(challenge, method *string, x AuthCodeExchange) error {
	if x.CodeChallengeMethod != nil && (method == nil || *x.CodeChallengeMethod != *method) {
		return FieldError("code_challenge_method", "does not match the method the code was created with")
	}
	if challenge == nil {
		return nil
	}
	if x.CodeVerifier == nil {
		return Errorf(EFORBIDDEN, "code_verifier is required: the code was created with a code_challenge")
	}
	if !VerifyPKCE(*method, *challenge, *x.CodeVerifier) {
		return Errorf(EFORBIDDEN, "code_verifier does not match the code_challenge")
	}
	return nil
}

// ErrCodeCreatorGone answers the exchange of a code whose creator can no
// longer stand behind it: its key is disabled, expired or deleted, its
// member removed, or its limit spent.
var ErrCodeCreatorGone = Errorf(EFORBIDDEN, "the key or member that created this authorization code is disabled, expired, deleted, removed or out of limit")

// CheckCodeCreator refuses a code from a key that has nothing left of its
// limit (live reservations count): the exchange could only fail.
func CheckCodeCreator(creator *Key, now time.Time, reserved Reserved) error {
	if left := creatorLeft(creator, now, reserved); left != nil && *left == 0 {
		return &Error{Code: EPAYMENT, Message: "the key has no limit left: a code it creates could yield no spending power",
			Metadata: map[string]any{"limit": *creator.Limit, "limit_remaining": Money(0)}}
	}
	return nil
}

// creatorLeft returns what the creator may still spend now: its limit less
// the spend of its current period and its live reservations, never below
// zero; nil when it has no limit.
func creatorLeft(creator *Key, now time.Time, reserved Reserved) *Money {
	left := creator.LimitRemaining(now)
	if left == nil {
		return nil
	}
	l := max(*left-reserved.counted(creator.IncludeBYOKInLimit), 0)
	return &l
}

// CheckCodeWorkspace keeps a regular key's codes to its own workspace: the
// key an application obtains lands there.
func CheckCodeWorkspace(creator *Key, workspaceID string) error {
	if creator != nil && creator.WorkspaceID != workspaceID {
		return Errorf(EFORBIDDEN, "a regular key can only create authorization codes for its own workspace")
	}
	return nil
}

// OAuthKeyTerms are the spending terms of the key a code yields.
type OAuthKeyTerms struct {
	Limit              *Money
	LimitReset         Interval
	IncludeBYOKInLimit bool
	ExpiresAt          *time.Time
}

// CapByCreator bounds the terms a code asked for by the regular key that
// created it, at the exchange (creator nil: the key is gone). The creator
// must be active and have something left. When it has a limit, the new
// key's limit is what it has left now (the code's limit if smaller) and
// never resets, so that a daily allowance's rest never becomes a recurring
// one; BYOK spend counts against it when it counts against the creator's.
// The new key expires no later than the creator.
func (t OAuthKeyTerms) CapByCreator(creator *Key, now time.Time, reserved Reserved) (OAuthKeyTerms, error) {
	if creator == nil || !creator.Active(now) {
		return t, ErrCodeCreatorGone
	}
	if left := creatorLeft(creator, now, reserved); left != nil {
		if *left == 0 {
			return t, ErrCodeCreatorGone
		}
		if t.Limit == nil || *t.Limit > *left {
			t.Limit = left
		}
		t.LimitReset = NoReset
		t.IncludeBYOKInLimit = creator.IncludeBYOKInLimit
	}
	if e := creator.ExpiresAt; e != nil && (t.ExpiresAt == nil || t.ExpiresAt.After(*e)) {
		t.ExpiresAt = e
	}
	return t, nil
}

// OAuthService runs the authorization-code flow.
type OAuthService interface {
	// CreateAuthCode creates a code that will yield a key for creatorUserID
	// in the organization. EINVALID, ENOTFOUND (workspace), ECONFLICT when
	// a pending code already uses the same challenge, EPAYMENT when the
	// creator key has nothing left of its limit.
	CreateAuthCode(ctx context.Context, orgID string, creatorUserID *string, create AuthCodeCreate) (*AuthCode, error)
	// ExchangeAuthCode consumes a code and returns the new key's plaintext
	// and its user id. It is atomic: a code yields at most one key.
	// EINVALID (malformed input, method mismatch), EFORBIDDEN (unknown,
	// used or expired code, wrong or missing verifier, creator key
	// disabled, expired, deleted or spent, creator member removed).
	// Audited with ActorKeyExchange as actor unless ctx carries one.
	ExchangeAuthCode(ctx context.Context, exchange AuthCodeExchange) (string, *string, error)
}

// MaxMintDepth bounds the chain of keys minted through OAuth from one
// another: a key minted from a key minted from a key... Each request of a
// minted key holds against every key of its chain, so the chain is short.
const MaxMintDepth = 8

// CheckMintDepth refuses a code from a key that is already depth keys down
// a chain of minted keys.
func CheckMintDepth(depth int) error {
	if depth >= MaxMintDepth {
		return Errorf(EFORBIDDEN, "keys minted through OAuth nest at most %d deep: this key cannot create authorization codes", MaxMintDepth)
	}
	return nil
}

// CheckMintedChain refuses a code from a minted key whose chain is dead:
// a key it was minted from (ancestors, parent first; nil: deleted) is
// disabled, expired or deleted. The key can no longer spend, so neither
// can what it would mint.
func CheckMintedChain(ancestors []*Key, now time.Time) error {
	for _, a := range ancestors {
		if a == nil || !a.Active(now) {
			return Errorf(EFORBIDDEN, "this key was minted through OAuth from a key that is now disabled, expired or deleted: it cannot create authorization codes")
		}
	}
	return nil
}

// MintedFrom checks, when a minted key reserves, one key of the chain it
// was minted from (ancestor nil: deleted). What a minted key spends, its
// parent spends too: the ancestor must be active, and the reservation must
// fit in what is left of its limit (reserved counts the live reservations
// of the ancestor and of every key minted from it). EFORBIDDEN for a dead
// ancestor, EPAYMENT for a spent one. The errors tell the minted key's
// holder (an application) nothing of the ancestor's figures.
func MintedFrom(ancestor *Key, now time.Time, reserved Reserved, r *Reservation) error {
	if ancestor == nil || !ancestor.Active(now) {
		return Errorf(EFORBIDDEN, "this key was minted through OAuth from a key that is now disabled, expired or deleted, and can no longer spend")
	}
	if err := CheckKeyLimit(ancestor, now, reserved, r); err != nil {
		return &Error{Code: EPAYMENT,
			Message:  fmt.Sprintf("Limit exceeded: this request may cost up to $%s, more than is left of the limit of the key this key was minted from through OAuth", r.Amount),
			Metadata: map[string]any{"request_max_cost": r.Amount}}
	}
	return nil
}
