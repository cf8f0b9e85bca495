package sqlstore

import (
	"context"
	"errors"
	"time"

	"gatehouse"
)

var _ gatehouse.LogPruner = (*Store)(nil)

// PruneGenerations deletes at most limit ledger entries created before
// before. Counters and budgets are kept apart from the ledger (api_keys,
// guardrail_usage), so nothing they hold changes.
func (s *Store) PruneGenerations(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer wrap(&err, "PruneGenerations")
	return s.prune(ctx, "generations", "created_at", before, limit)
}

// PruneAuditLog deletes at most limit audit entries made before before.
func (s *Store) PruneAuditLog(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer wrap(&err, "PruneAuditLog")
	return s.prune(ctx, "audit_log", "at", before, limit)
}

// prune deletes at most limit rows of table whose column (a time) is
// before before, oldest first within each organization, in one locking
// write: on SQLite one short turn of the single writer, on PostgreSQL a
// READ COMMITTED transaction whose row locks touch only the rows it
// deletes, so inserts into the log go on meanwhile. It commits as the
// metering writes do, without waiting for the disk: a prune that a power
// loss undoes is simply done again, and it adds no fsync to the writer's. Each organization's
// rows are found through the table's (organization_id, time, id) index;
// the logs have no index on time alone, and a scan of the whole table per
// batch would cost more than the organizations' probes.
func (s *Store) prune(ctx context.Context, table, column string, before time.Time, limit int) (int, error) {
	if limit <= 0 {
		return 0, errors.New("prune: limit must be positive")
	}
	return run(ctx, s, s.engine.LockAsync, func(tx *Tx) (int, error) {
		rows, err := tx.Query(ctx, `SELECT id FROM organizations ORDER BY id`)
		orgs, err := collect(rows, err, scanString)
		if err != nil {
			return 0, err
		}
		deleted := 0
		for _, org := range orgs {
			n, err := tx.Exec(ctx, `DELETE FROM `+table+` WHERE id IN (SELECT id FROM `+table+`
				WHERE organization_id = ? AND `+column+` < ? ORDER BY `+column+`, id LIMIT ?)`,
				org, ms(before), limit-deleted)
			if err != nil {
				return 0, err
			}
			if deleted += int(n); deleted >= limit {
				break
			}
		}
		return deleted, nil
	})
}
