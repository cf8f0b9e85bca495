package gatehouse

import (
	"context"
	"slices"
)

// AddressPolicy decides where deliveries may connect on behalf of an
// organization (package egress): it checks, when a destination is
// configured, each address its configuration names. The error says what
// is wrong with the address.
type AddressPolicy interface {
	CheckURL(ctx context.Context, raw string) error
}

// Destinations changes observability destinations as every caller must,
// the API and the web console alike: the addresses of a configuration are
// checked against the egress policy before anything is stored (a clear
// EINVALID for an address deliveries could never reach), and the trace
// publisher hears of every change, so that it applies to the next
// delivery.
type Destinations struct {
	Store  DestinationService
	Egress AddressPolicy
	// Changed, when set, is called after each change, whether or not it
	// succeeded: the trace publisher's InvalidateDestinations.
	Changed func()
}

// Create checks and creates a destination (DestinationService's errors,
// and EINVALID for an address the egress policy refuses).
func (d *Destinations) Create(ctx context.Context, orgID string, c DestinationCreate) (*Destination, error) {
	if err := d.CheckAddresses(ctx, c.Config); err != nil {
		return nil, err
	}
	defer d.changed()
	return d.Store.CreateDestination(ctx, orgID, c)
}

// Update checks and applies a change of a destination.
func (d *Destinations) Update(ctx context.Context, orgID, id string, u DestinationUpdate) (*Destination, error) {
	if err := d.CheckAddresses(ctx, u.Config); err != nil {
		return nil, err
	}
	defer d.changed()
	return d.Store.UpdateDestination(ctx, orgID, id, u)
}

// Delete soft-deletes a destination.
func (d *Destinations) Delete(ctx context.Context, orgID, id string) error {
	defer d.changed()
	return d.Store.DeleteDestination(ctx, orgID, id)
}

// CheckAddresses refuses a configuration that names an address the egress
// policy forbids (loopback, private, link-local and metadata addresses,
// unless the operator opened them with GATEHOUSE_EGRESS_ALLOW): EINVALID
// naming the first such key, in key order.
func (d *Destinations) CheckAddresses(ctx context.Context, p *ConfigPatch) error {
	if p == nil {
		return nil
	}
	keys := make([]string, 0, len(p.Values))
	for k, v := range p.Values {
		if v != nil && IsAddressConfigKey(k) {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	for _, k := range keys {
		if err := d.Egress.CheckURL(ctx, *p.Values[k]); err != nil {
			return FieldError("config."+k, "is not a place Gatehouse may send traces to (%v); an operator can allow it with GATEHOUSE_EGRESS_ALLOW", err)
		}
	}
	return nil
}

func (d *Destinations) changed() {
	if d.Changed != nil {
		d.Changed()
	}
}

// WorkspaceChanged tells the trace publisher that a workspace changed (its
// I/O logging decides what its destinations are sent), so that the change
// applies to the next delivery.
func (d *Destinations) WorkspaceChanged() { d.changed() }

// DeliveryMonitor tells how deliveries to destinations go, and sends a
// test event; the trace publisher (observe.Publisher) is one.
type DeliveryMonitor interface {
	// DeliveryStatuses returns the statuses of destinations of the
	// organization (none for a destination that never delivered).
	DeliveryStatuses(ctx context.Context, orgID string, ids []string) (map[string]DeliveryStatus, error)
	// TestDestination sends one test event to d at once, whether or not d
	// is enabled, and reports the service's answer. EINVALID when d's
	// secrets cannot be opened.
	TestDestination(ctx context.Context, d *Destination) (*DeliveryTest, error)
}

// DeliveryTest is what a destination's service answered a test event.
type DeliveryTest struct {
	Delivered bool
	Status    int    // the service's HTTP status; 0 when it gave none
	Answer    string // the start of its answer, secrets taken out
	Error     string // what went wrong; "" when delivered
	LatencyMS int64
	EventID   string // the test generation's id, as the service received it
}
