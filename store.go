package gatehouse

import (
	"context"
	"fmt"
	"time"
)

// Store is everything Gatehouse keeps: the services of every resource over
// one database. The sqlite and postgres packages implement it, and the
// storetest package checks that they behave alike.
type Store interface {
	OrganizationService
	KeyService
	AccountService
	OAuthService
	WorkspaceService
	GuardrailService
	DestinationService
	BYOKService
	WorkspaceBudgetService
	CreditService
	AuditService
	UsageService
	GenerationService
	PresetService
	SSOService
	SCIMService
	// ResealSecrets re-encrypts every secret at rest of every organization
	// (destination secrets, soft-deleted destinations' too, BYOK keys and
	// the client secrets of identity providers)
	// with the store's current key, in one transaction. It is how the key
	// is rotated: open the store with the new key as current and the old
	// one as previous, reseal, then drop the old key. Secrets that open
	// with none of the store's keys make it fail, changing nothing
	// (ECONFLICT, naming them all), unless skipUnreadable: then they are
	// left as they are, and listed in Skipped.
	ResealSecrets(ctx context.Context, skipUnreadable bool) (Resealed, error)
	// UnreadableSecrets lists the secrets at rest of every organization
	// that open with none of the store's keys.
	UnreadableSecrets(ctx context.Context) ([]UnreadableSecret, error)
	AnalyticsService
	// Ping reports whether the database answers. EUNAVAILABLE if not.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// Resealed counts the secrets ResealSecrets re-sealed: destinations with
// secrets, BYOK keys and the client secrets of identity providers; and
// lists those it left as they were.
type Resealed struct {
	Destinations, BYOKKeys, SSOProviders int
	Skipped                              []UnreadableSecret
}

// What an UnreadableSecret belongs to.
const (
	SecretOfDestination = "destination"
	SecretOfBYOKKey     = "BYOK key"
	SecretOfSSOProvider = "identity provider"
)

// UnreadableSecret names a secret at rest that no key of the store opens
// (it was sealed with a key the store was not given), for the operator.
type UnreadableSecret struct {
	Kind                            string // SecretOfDestination, SecretOfBYOKKey or SecretOfSSOProvider
	ID, OrganizationID, WorkspaceID string // WorkspaceID "" for an identity provider
	Deleted                         bool   // a soft-deleted destination
}

func (u UnreadableSecret) String() string {
	s := fmt.Sprintf("%s %s (organization %s", u.Kind, u.ID, u.OrganizationID)
	if u.WorkspaceID != "" {
		s += ", workspace " + u.WorkspaceID
	}
	if u.Deleted {
		s += ", deleted"
	}
	return s + ")"
}

type freshReadsKey struct{}

// WithFreshReads marks ctx for reads whose answer a user is shown, such as
// the usage figures of GET /key: a cache in front of the store may answer
// only with what it knows to be current up to its staleness bound (every
// write made through it, and writes made elsewhere, usage included, at most
// the bound ago); otherwise the store reads the database. Reads without the
// mark, such as authentication's, may be older in what they do not need.
func WithFreshReads(ctx context.Context) context.Context {
	return context.WithValue(ctx, freshReadsKey{}, true)
}

// FreshReads reports whether ctx asks for fresh reads.
func FreshReads(ctx context.Context) bool {
	v, _ := ctx.Value(freshReadsKey{}).(bool)
	return v
}

// Clock returns the current time; stores take one so tests can move time.
type Clock func() time.Time
