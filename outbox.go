package gatehouse

import (
	"context"
	"time"
)

// OutboxEntry is one trace event waiting for delivery to one destination:
// a row of the durable outbox (package observe writes and reads it).
type OutboxEntry struct {
	ID             string
	OrganizationID string
	WorkspaceID    string
	DestinationID  string
	Event          []byte // the event as the destination receives it, encoded by package observe
	Attempts       int
	CreatedAt      time.Time
}

// DeliveryStatus is how deliveries to a destination have gone, over every
// instance.
type DeliveryStatus struct {
	Sent, Failed, Dropped int64
	LastSuccessAt         *time.Time
	LastErrorAt           *time.Time
	LastError             string // redacted: never a URL or a secret
}

// DeliveryCount is what a flush adds to a destination's status.
type DeliveryCount struct {
	DestinationID  string
	OrganizationID string
	WorkspaceID    string
	DeliveryStatus // counts to add; times and error replace the stored ones when set
}

// TraceOutbox is the durable outbox of trace deliveries: events written
// before they are delivered and deleted after, held by one instance at a
// time through a lease. sqlstore.Store is one.
type TraceOutbox interface {
	// AddTraces writes entries held by owner until leaseUntil.
	AddTraces(ctx context.Context, owner string, leaseUntil time.Time, entries []OutboxEntry) error
	// RenewTraces extends to leaseUntil the lease of the entries owner holds.
	RenewTraces(ctx context.Context, owner string, leaseUntil time.Time) error
	// ClaimTraces takes for owner, until leaseUntil, at most limit entries
	// whose lease ran out before now, oldest first; no two calls take an
	// entry while its lease runs.
	ClaimTraces(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) ([]OutboxEntry, error)
	// SetTraceAttempts records the attempts made of entries.
	SetTraceAttempts(ctx context.Context, ids []string, attempts int) error
	// DeleteTraces deletes entries: delivered, or failed for good.
	DeleteTraces(ctx context.Context, ids []string) error
	// CountTraces returns the number of entries of each destination.
	CountTraces(ctx context.Context) (map[string]int, error)
	// RecordDeliveries adds counts to the destinations' statuses, and an
	// audit entry (actor ActorObservability) for each that dropped events.
	RecordDeliveries(ctx context.Context, counts []DeliveryCount) error
	// DeliveryStatuses returns the statuses of destinations of the
	// organization (none for a destination that never delivered).
	DeliveryStatuses(ctx context.Context, orgID string, ids []string) (map[string]DeliveryStatus, error)
}
