package sqlstore

import (
	"context"

	"gatehouse"
)

// JournalOnly appends a charge to the ledger's journal without writing it
// to the database: what a process killed between the two leaves.
func (l *Ledger) JournalOnly(r *gatehouse.Reservation, g *gatehouse.Generation) error {
	_, err := l.journal.append(entryOf(r, g))
	return err
}

// SetJournalSegmentBytes sets the length past which the journal starts a
// new segment, and returns what puts it back.
func SetJournalSegmentBytes(n int64) func() {
	old := journalSegmentBytes
	journalSegmentBytes = n
	return func() { journalSegmentBytes = old }
}

// SetLedgerQueueBound sets how many operations may wait for the ledger's
// writer, and returns what puts it back.
func SetLedgerQueueBound(n int) func() {
	old := maxLedgerQueue
	maxLedgerQueue = n
	return func() { maxLedgerQueue = old }
}

// ExecForTest runs a statement in a write transaction of the store.
func (s *Store) ExecForTest(ctx context.Context, query string, args ...any) error {
	_, err := update(ctx, s, func(tx *Tx) (struct{}, error) {
		_, err := tx.Exec(ctx, query, args...)
		return struct{}{}, err
	})
	return err
}

// StringsForTest reads the first column of a query's rows, as strings.
func (s *Store) StringsForTest(ctx context.Context, query string, args ...any) ([]string, error) {
	return view(ctx, s, func(tx *Tx) ([]string, error) {
		rows, err := tx.Query(ctx, query, args...)
		return collect(rows, err, scanString)
	})
}
