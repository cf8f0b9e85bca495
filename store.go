package gatehouse

import (
	"context"
	"time"
)

// Store is everything Gatehouse keeps: the services of every resource over
// one database. The sqlite and postgres packages implement it, and the
// storetest package checks that they behave alike.
type Store interface {
	OrganizationService
	KeyService
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
	// ResealSecrets re-encrypts every secret at rest of every organization
	// (destination secrets, soft-deleted destinations' too, and BYOK keys)
	// with the store's current secret key, in one transaction, and says how
	// many of each it re-sealed. It is how the key is rotated: open the
	// store with the new key as current and the old one as previous,
	// reseal, then drop the old key. It fails, changing nothing, when a
	// secret opens with none of the store's keys.
	ResealSecrets(ctx context.Context) (Resealed, error)
	AnalyticsService
	// Ping reports whether the database answers. EUNAVAILABLE if not.
	Ping(ctx context.Context) error
	// Close releases the database.
	Close() error
}

// Resealed counts the secrets ResealSecrets re-sealed: destinations with
// secrets, and BYOK keys.
type Resealed struct {
	Destinations, BYOKKeys int
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
