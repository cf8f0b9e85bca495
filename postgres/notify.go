package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"
)

// The channels on which the database announces changes: keyChannel the
// hash of a key whose authentication data changed or that was deleted (see
// the trigger in migration/0001_init.sql), guardrailChannel the id of a
// guardrail updated or deleted (migration/0008_guardrail_changes.sql).
const (
	keyChannel       = "gatehouse_keys"
	guardrailChannel = "gatehouse_guardrails"
)

// ChangeWatcher receives the change feed; keycache.Cache is one.
type ChangeWatcher interface {
	// Invalidate forgets a key that changed or was deleted.
	Invalidate(hash string)
	// InvalidateGuardrail forgets a guardrail that changed or was deleted.
	InvalidateGuardrail(id string)
	// Reset forgets everything: changes made while not listening are lost.
	Reset()
	// Heartbeat records that the feed is listening and up to date.
	Heartbeat()
}

// WatchChanges reports changes to keys and guardrails made by any instance
// to w: Invalidate for each key whose authentication data changed or that
// was deleted, InvalidateGuardrail for each guardrail updated or deleted,
// Reset when it (re)starts listening, and Heartbeat at least every
// heartbeatInterval while it listens, so that w can stop trusting its
// entries as soon as the feed falls silent. It reconnects with backoff and
// returns when ctx ends.
func (db *DB) WatchChanges(ctx context.Context, w ChangeWatcher) {
	backoff := 100 * time.Millisecond
	for ctx.Err() == nil {
		// A lost connection is expected during outages; the silence of
		// the heartbeat is the report, so the error itself is not needed.
		if listening, _ := db.watchChanges(ctx, w); listening {
			backoff = 100 * time.Millisecond
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(backoff):
		}
		backoff = min(backoff*2, 5*time.Second)
	}
}

// heartbeatInterval is how long a quiet listening connection waits before
// it proves it is still alive with a query; with the query's own timeout it
// stays well inside the cache's default staleness bound of one second.
const (
	heartbeatInterval = 250 * time.Millisecond
	heartbeatTimeout  = 500 * time.Millisecond
)

func (db *DB) watchChanges(ctx context.Context, w ChangeWatcher) (bool, error) {
	connectCtx, cancel := context.WithTimeout(ctx, db.opTimeout)
	conn, err := pgx.ConnectConfig(connectCtx, db.pool.Config().ConnConfig)
	cancel()
	if err != nil {
		return false, err
	}
	defer conn.Close(context.WithoutCancel(ctx))
	if _, err := conn.Exec(ctx, `LISTEN `+keyChannel+`; LISTEN `+guardrailChannel); err != nil {
		return false, err
	}
	w.Reset()
	w.Heartbeat()
	for {
		waitCtx, cancel := context.WithTimeout(ctx, heartbeatInterval)
		n, err := conn.WaitForNotification(waitCtx)
		cancel()
		switch {
		case err == nil:
			if n.Channel == guardrailChannel {
				w.InvalidateGuardrail(n.Payload)
			} else {
				w.Invalidate(n.Payload)
			}
			w.Heartbeat()
			continue
		case ctx.Err() != nil:
			return true, ctx.Err()
		case !errors.Is(err, context.DeadlineExceeded):
			return true, err
		}
		pingCtx, cancel := context.WithTimeout(ctx, heartbeatTimeout)
		_, err = conn.Exec(pingCtx, `SELECT 1`)
		cancel()
		if err != nil {
			return true, err
		}
		w.Heartbeat()
	}
}
