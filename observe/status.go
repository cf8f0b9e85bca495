package observe

import (
	"strings"
	"sync"
	"time"

	"gatehouse"
)

// DeliveryStatus is how deliveries to one destination have gone since
// this process started.
type DeliveryStatus struct {
	Sent, Failed, Dropped int64
	LastSuccessAt         *time.Time
	LastErrorAt           *time.Time
	LastError             string // redacted: a status and the start of the service's answer, never a URL or a secret
}

// statusBook keeps the status of each destination.
type statusBook struct {
	mu   sync.Mutex
	byID map[string]*DeliveryStatus
}

func newStatusBook() *statusBook { return &statusBook{byID: map[string]*DeliveryStatus{}} }

// record counts an outcome for a destination.
func (b *statusBook) record(id string, sent, failedN, dropped int64, o outcome, now time.Time) {
	b.mu.Lock()
	defer b.mu.Unlock()
	st := b.byID[id]
	if st == nil {
		st = &DeliveryStatus{}
		b.byID[id] = st
	}
	st.Sent += sent
	st.Failed += failedN
	st.Dropped += dropped
	switch {
	case sent > 0:
		t := now
		st.LastSuccessAt = &t
	case failedN > 0:
		t := now
		st.LastErrorAt = &t
		st.LastError = o.summary()
	}
}

// get returns a copy of a destination's status.
func (b *statusBook) get(id string) DeliveryStatus {
	b.mu.Lock()
	defer b.mu.Unlock()
	if st := b.byID[id]; st != nil {
		return *st
	}
	return DeliveryStatus{}
}

// redact takes the destination's secrets (its secret values and header
// values) out of a text from its service, which may echo them back.
func redact(d *gatehouse.Destination, s string) string {
	for k, v := range d.Config.Values {
		if gatehouse.IsSecretConfigKey(k) && len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "********")
		}
	}
	for _, v := range d.Config.Headers {
		if len(v) >= 4 {
			s = strings.ReplaceAll(s, v, "********")
		}
	}
	return s
}

// Status returns how deliveries to a destination have gone on this
// instance since it started.
func (p *Publisher) Status(destinationID string) DeliveryStatus { return p.status.get(destinationID) }
