package gatehouse

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"time"
)

// Accounts is the console's sign-in policy, written once over a store:
// passwords are checked here (the store keeps only their hashes), sessions
// are made and kept alive here. The console's HTTP layer calls it, and
// rate limits sign-in attempts per account (SignInBucket) and per address
// before it does.
type Accounts struct {
	store interface {
		AccountService
		KeyService
	}
	now Clock
	// hashing holds a token for each password hash being computed: each
	// takes DefaultPasswordParams.Memory, so a flood of sign-ins queues
	// instead of taking the machine's memory.
	hashing chan struct{}
	// dummy is a hash of nothing that sign-ins of unknown emails verify
	// against, so that they take as long as those of known ones.
	dummy     string
	dummyOnce sync.Once
}

// NewAccounts returns the sign-in policy over store, reading the time from
// now (nil: time.Now).
func NewAccounts(store interface {
	AccountService
	KeyService
}, now Clock) *Accounts {
	if now == nil {
		now = time.Now
	}
	return &Accounts{store: store, now: now, hashing: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)))}
}

// errSignIn is the one answer of a failed sign-in with a password, whatever
// failed: it does not tell an unknown email from a wrong password.
func errSignIn() error {
	return Errorf(EUNAUTHORIZED, "the email or the password is wrong")
}

// SignIn checks an email and password and opens a session. A member of
// several organizations (one password each, as each membership accepted
// its own link) is signed in to the oldest organization whose password
// matches. EUNAUTHORIZED for a wrong email or password, told apart neither
// by the answer nor by its time.
func (a *Accounts) SignIn(ctx context.Context, email, password string) (*Session, string, error) {
	email = strings.TrimSpace(email)
	if email == "" || len(email) > MaxEmailLength || len(password) > 4*MaxPasswordLength {
		return nil, "", errSignIn() // never a valid account; nothing to time
	}
	creds, err := a.store.FindCredentials(ctx, email)
	if err != nil {
		return nil, "", err
	}
	if len(creds) == 0 {
		if _, err := a.verify(ctx, a.dummyHash(), password); err != nil {
			return nil, "", err
		}
		return nil, "", errSignIn()
	}
	for _, c := range creds {
		match, err := a.verify(ctx, c.PasswordHash, password)
		if err != nil {
			return nil, "", err
		}
		if match {
			return a.store.CreateSession(ctx, SessionCreate{OrganizationID: c.OrganizationID, UserID: &c.UserID})
		}
	}
	return nil, "", errSignIn()
}

// SignInWithKey exchanges a management key for an admin session of its
// organization: how the operator of a fresh install signs in with the key
// the first start printed. EUNAUTHORIZED for a key that is unknown,
// disabled or expired; EFORBIDDEN for a regular key.
func (a *Accounts) SignInWithKey(ctx context.Context, managementKey string) (*Session, string, error) {
	managementKey = strings.TrimSpace(managementKey)
	if managementKey == "" {
		return nil, "", FieldError("key", "is required")
	}
	k, err := a.store.FindKeyByHash(ctx, HashKey(managementKey))
	switch {
	case ErrorCode(err) == ENOTFOUND:
		return nil, "", Errorf(EUNAUTHORIZED, "unknown management key")
	case err != nil:
		return nil, "", err
	case !k.Management:
		return nil, "", Errorf(EFORBIDDEN, "this is a regular API key: sign in with a management key")
	case !k.Active(a.now()):
		return nil, "", Errorf(EUNAUTHORIZED, "this management key is disabled or expired")
	}
	return a.store.CreateSession(ctx, SessionCreate{OrganizationID: k.OrganizationID, KeyHash: &k.Hash})
}

// AcceptInvitation sets the password of the member a link is for (creating
// the member if need be) and uses the link up. EINVALID for a password the
// policy refuses (naming the field "password"), ENOTFOUND for a link that
// is unknown, used or expired.
func (a *Accounts) AcceptInvitation(ctx context.Context, token, password string) (*Member, error) {
	if err := ValidatePassword("password", password); err != nil {
		return nil, err
	}
	if _, err := a.store.FindInvitation(ctx, token); err != nil {
		return nil, err // before the cost of a hash
	}
	hash, err := a.hash(ctx, password)
	if err != nil {
		return nil, err
	}
	return a.store.AcceptInvitation(ctx, token, hash)
}

// Session returns the session of a token and records its activity, which
// writes only when the last record is SessionTouchInterval old. ENOTFOUND
// for a token without a live session.
func (a *Accounts) Session(ctx context.Context, token string) (*Session, error) {
	s, err := a.store.FindSession(ctx, token)
	if err != nil {
		return nil, err
	}
	if now := a.now(); now.Sub(s.LastSeenAt) >= SessionTouchInterval {
		if err := a.store.TouchSession(ctx, s.ID); err != nil {
			return nil, err
		}
		s.LastSeenAt = now.UTC().Truncate(time.Millisecond)
	}
	return s, nil
}

// verify checks a password against a hash in one of the hashing slots.
func (a *Accounts) verify(ctx context.Context, hash, password string) (bool, error) {
	if err := a.acquire(ctx); err != nil {
		return false, err
	}
	defer func() { <-a.hashing }()
	match, err := VerifyPassword(hash, password)
	if err != nil {
		return false, WrapError(err, EINTERNAL, "a stored password hash is malformed")
	}
	return match, nil
}

// hash hashes a password in one of the hashing slots.
func (a *Accounts) hash(ctx context.Context, password string) (string, error) {
	if err := a.acquire(ctx); err != nil {
		return "", err
	}
	defer func() { <-a.hashing }()
	return HashPassword(password), nil
}

func (a *Accounts) acquire(ctx context.Context) error {
	select {
	case a.hashing <- struct{}{}:
		return nil
	case <-ctx.Done():
		return WrapError(ctx.Err(), EUNAVAILABLE, "too many sign-ins at once; retry")
	}
}

// dummyHash returns the hash that sign-ins of unknown emails verify
// against: made once, with the default parameters, as real ones are.
func (a *Accounts) dummyHash() string {
	a.dummyOnce.Do(func() { a.dummy = HashPassword(NewAccountToken()) })
	return a.dummy
}
