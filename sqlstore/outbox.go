package sqlstore

import (
	"context"
	"slices"
	"strings"
	"time"

	"gatehouse"
)

// The durable outbox of trace deliveries (migration 0040_observe_outbox).
// Its writes commit as the metering writes do (Engine.LockAsync): once a
// crash of this process can no longer undo them, without waiting for the
// disk.

const outboxColumns = `id, organization_id, workspace_id, destination_id, event, attempts, owner, lease_until, created_at`

// asyncTx runs a write of the outbox.
func asyncTx(ctx context.Context, s *Store, fn func(tx *Tx) error) error {
	return do(ctx, s, func(ctx context.Context, s *Store, fn func(*Tx) (none, error)) (none, error) {
		return run(ctx, s, s.engine.LockAsync, fn)
	}, fn)
}

// An entry's event is sealed with the secret box (AES-256-GCM, bound to
// its entry): it may carry a prompt and its completion, which the store
// keeps sealed as a generation's content too. Without a box (a store
// opened without a secret key) it is kept as it is.

// outboxAD binds a sealed event to its entry.
func outboxAD(id string) []byte { return []byte("observe_outbox:" + id) }

// AddTraces writes entries held by owner until leaseUntil.
func (s *Store) AddTraces(ctx context.Context, owner string, leaseUntil time.Time, entries []gatehouse.OutboxEntry) (err error) {
	defer wrap(&err, "AddTraces")
	if len(entries) == 0 {
		return nil
	}
	return asyncTx(ctx, s, func(tx *Tx) error {
		rows := make([][]any, 0, len(entries))
		for _, e := range entries {
			event := string(e.Event)
			if tx.box != nil {
				event = tx.box.Seal(e.Event, outboxAD(e.ID))
			}
			rows = append(rows, []any{e.ID, e.OrganizationID, e.WorkspaceID, e.DestinationID, event, e.Attempts,
				owner, ms(leaseUntil), ms(tx.now)})
		}
		_, err := tx.insertRows(ctx, "observe_outbox", outboxColumns, rows, "")
		return err
	})
}

// RenewTraces extends the lease of the entries owner holds.
func (s *Store) RenewTraces(ctx context.Context, owner string, leaseUntil time.Time) (err error) {
	defer wrap(&err, "RenewTraces")
	return asyncTx(ctx, s, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `UPDATE observe_outbox SET lease_until = ? WHERE owner = ?`, ms(leaseUntil), owner)
		return err
	})
}

// ClaimTraces takes the entries whose lease ran out, oldest first. On
// PostgreSQL the rows another instance is claiming are skipped, not
// waited for; the condition on lease_until, checked again by the UPDATE,
// keeps two instances from taking one entry.
func (s *Store) ClaimTraces(ctx context.Context, owner string, now, leaseUntil time.Time, limit int) (_ []gatehouse.OutboxEntry, err error) {
	defer wrap(&err, "ClaimTraces")
	return lock(ctx, s, func(tx *Tx) ([]gatehouse.OutboxEntry, error) {
		pick := `SELECT id FROM observe_outbox WHERE lease_until < ? ORDER BY lease_until, id LIMIT ?`
		if f := tx.d.ForUpdate(); f != "" {
			pick += f + " SKIP LOCKED"
		}
		rows, err := tx.Query(ctx, pick, ms(now), limit)
		ids, err := collect(rows, err, scanString)
		if err != nil || len(ids) == 0 {
			return nil, err
		}
		cond, args := tx.in("id", ids, owner, ms(leaseUntil))
		args = append(args, ms(now))
		rows, err = tx.Query(ctx, `UPDATE observe_outbox SET owner = ?, lease_until = ? WHERE `+cond+` AND lease_until < ?
			RETURNING `+outboxColumns, args...)
		out, err := collect(rows, err, scanOutboxEntry)
		if err != nil {
			return nil, err
		}
		for i, e := range out {
			if tx.box != nil && strings.HasPrefix(string(e.Event), "v1:") {
				// Nil when no key opens it: the entry is then dropped as
				// unreadable by the publisher.
				out[i].Event, _ = tx.box.Open(string(e.Event), outboxAD(e.ID))
			}
		}
		slices.SortFunc(out, func(a, b gatehouse.OutboxEntry) int { return a.CreatedAt.Compare(b.CreatedAt) })
		return out, nil
	})
}

func scanOutboxEntry(sc Scanner) (gatehouse.OutboxEntry, error) {
	var e gatehouse.OutboxEntry
	var event, owner string
	var lease int64
	err := sc.Scan(&e.ID, &e.OrganizationID, &e.WorkspaceID, &e.DestinationID, &event, &e.Attempts, &owner, &lease, msTime(&e.CreatedAt))
	e.Event = []byte(event)
	return e, err
}

// SetTraceAttempts records the attempts made of entries.
func (s *Store) SetTraceAttempts(ctx context.Context, ids []string, attempts int) (err error) {
	defer wrap(&err, "SetTraceAttempts")
	if len(ids) == 0 {
		return nil
	}
	return asyncTx(ctx, s, func(tx *Tx) error {
		cond, args := tx.in("id", ids, attempts)
		_, err := tx.Exec(ctx, `UPDATE observe_outbox SET attempts = ? WHERE `+cond, args...)
		return err
	})
}

// DeleteTraces deletes entries.
func (s *Store) DeleteTraces(ctx context.Context, ids []string) (err error) {
	defer wrap(&err, "DeleteTraces")
	if len(ids) == 0 {
		return nil
	}
	return asyncTx(ctx, s, func(tx *Tx) error {
		cond, args := tx.in("id", ids)
		_, err := tx.Exec(ctx, `DELETE FROM observe_outbox WHERE `+cond, args...)
		return err
	})
}

// CountTraces returns the number of entries of each destination.
func (s *Store) CountTraces(ctx context.Context) (_ map[string]int, err error) {
	defer wrap(&err, "CountTraces")
	return read(ctx, s, func(tx *Tx) (map[string]int, error) {
		rows, err := tx.Query(ctx, `SELECT destination_id, count(*) FROM observe_outbox GROUP BY destination_id`)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		out := map[string]int{}
		for rows.Next() {
			var id string
			var n int
			if err := rows.Scan(&id, &n); err != nil {
				return nil, err
			}
			out[id] = n
		}
		return out, rows.Err()
	})
}

// RecordDeliveries adds counts to the destinations' statuses and audits
// the drops.
func (s *Store) RecordDeliveries(ctx context.Context, counts []gatehouse.DeliveryCount) (err error) {
	defer wrap(&err, "RecordDeliveries")
	if len(counts) == 0 {
		return nil
	}
	counts = slices.Clone(counts)
	slices.SortFunc(counts, func(a, b gatehouse.DeliveryCount) int {
		if a.DestinationID < b.DestinationID {
			return -1
		}
		if a.DestinationID > b.DestinationID {
			return 1
		}
		return 0
	})
	ctx = gatehouse.WithActor(ctx, gatehouse.Actor{System: gatehouse.ActorObservability})
	return asyncTx(ctx, s, func(tx *Tx) error {
		for _, c := range counts {
			_, err := tx.Exec(ctx, `INSERT INTO observe_delivery_status (destination_id, organization_id, sent, failed, dropped,
				last_success_at, last_error_at, last_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
				ON CONFLICT (destination_id) DO UPDATE SET sent = observe_delivery_status.sent + excluded.sent,
				failed = observe_delivery_status.failed + excluded.failed,
				dropped = observe_delivery_status.dropped + excluded.dropped,
				last_success_at = COALESCE(excluded.last_success_at, observe_delivery_status.last_success_at),
				last_error_at = COALESCE(excluded.last_error_at, observe_delivery_status.last_error_at),
				last_error = COALESCE(excluded.last_error, observe_delivery_status.last_error)`,
				c.DestinationID, c.OrganizationID, c.Sent, c.Failed, c.Dropped, ms(c.LastSuccessAt), ms(c.LastErrorAt),
				nullIfEmpty(c.LastError))
			if err != nil {
				return err
			}
			if c.Dropped > 0 {
				if err := tx.audit(ctx, c.OrganizationID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationDrop,
					ResourceType: gatehouse.ResourceDestination, ResourceIDs: []string{c.DestinationID},
					Details: map[string]any{"dropped": c.Dropped, "workspace_id": c.WorkspaceID,
						"reason": "the destination's queue was full"}}); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// DeliveryStatuses returns the statuses of destinations of the organization.
func (s *Store) DeliveryStatuses(ctx context.Context, orgID string, ids []string) (_ map[string]gatehouse.DeliveryStatus, err error) {
	defer wrap(&err, "DeliveryStatuses")
	out := map[string]gatehouse.DeliveryStatus{}
	if len(ids) == 0 {
		return out, nil
	}
	return read(ctx, s, func(tx *Tx) (map[string]gatehouse.DeliveryStatus, error) {
		cond, args := tx.in("destination_id", ids, orgID)
		rows, err := tx.Query(ctx, `SELECT destination_id, sent, failed, dropped, last_success_at, last_error_at, COALESCE(last_error, '')
			FROM observe_delivery_status WHERE organization_id = ? AND `+cond, args...)
		if err != nil {
			return nil, err
		}
		defer rows.Close()
		for rows.Next() {
			var id string
			var st gatehouse.DeliveryStatus
			if err := rows.Scan(&id, &st.Sent, &st.Failed, &st.Dropped, msTime(&st.LastSuccessAt), msTime(&st.LastErrorAt), &st.LastError); err != nil {
				return nil, err
			}
			out[id] = st
		}
		return out, rows.Err()
	})
}

var _ gatehouse.TraceOutbox = (*Store)(nil)
