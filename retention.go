package gatehouse

import (
	"context"
	"time"
)

// Retention says how long the two append-only logs keep their entries:
// the usage ledger (generations: one row per completed request, what
// GET /generation reads) and the audit log. Zero keeps them for ever (the
// default).
//
// Nothing else depends on these rows: a key's usage counters and a
// guardrail budget's spend are kept in counters of their own, updated in
// the transaction that writes a ledger entry, so pruning the ledger never
// changes what a key has spent or what a limit or budget admits.
type Retention struct {
	Ledger time.Duration
	Audit  time.Duration
}

// Keeps reports whether the policy keeps everything: nothing to prune.
func (r Retention) Keeps() bool { return r.Ledger <= 0 && r.Audit <= 0 }

// LogPruner deletes the oldest entries of the append-only logs, a bounded
// batch at a time, so that a large backlog never holds the database's
// writer for long. Each method deletes at most limit entries created
// before before (of every organization) in one short transaction and
// returns how many it deleted: fewer than limit means none is left.
type LogPruner interface {
	PruneGenerations(ctx context.Context, before time.Time, limit int) (int, error)
	PruneAuditLog(ctx context.Context, before time.Time, limit int) (int, error)
}
