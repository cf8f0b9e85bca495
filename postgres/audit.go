package postgres

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"gatehouse"
	"gatehouse/dbrow"
)

// audit appends the entry of a change to the audit log, in the change's
// transaction, with the actor and request id that ctx carries. The entry
// is made here, inside the transaction's function, so that a retried
// transaction writes a fresh one.
func (tx *Tx) audit(ctx context.Context, orgID string, rec gatehouse.AuditRecord) error {
	args, err := auditArgs(ctx, orgID, tx.now, rec)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO audit_log (`+dbrow.AuditColumns+`) VALUES (`+placeholders(len(args))+`)`, args...)
	return err
}

// auditArgs returns the column values (AuditColumns) of a new audit entry.
func auditArgs(ctx context.Context, orgID string, now time.Time, rec gatehouse.AuditRecord) ([]any, error) {
	return dbrow.AuditArgs(gatehouse.NewAuditEntry(ctx, orgID, now, rec))
}

// auditValues is the SELECT list that appends an audit entry from inside a
// statement (INSERT INTO audit_log ... SELECT auditValues(n) FROM ...): the
// entry's auditArgs are the parameters following the first n.
func auditValues(n int) string {
	return fmt.Sprintf("$%d, $%d, $%d::bigint, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d",
		n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11, n+12)
}

// FindAuditEntries lists the organization's audit entries, newest first.
func (db *DB) FindAuditEntries(ctx context.Context, orgID string, f gatehouse.AuditFilter) ([]*gatehouse.AuditEntry, int, error) {
	var list []*gatehouse.AuditEntry
	var total int
	err := db.view(ctx, func(tx *Tx) (err error) {
		where, args := dbrow.AuditWhere(orgID, f, func(n int) string { return "$" + strconv.Itoa(n) })
		list, total, err = findPage(ctx, tx, dbrow.AuditColumns, `audit_log WHERE `+where, `at DESC, id DESC`,
			args, f.Page, dbrow.ScanAuditEntry)
		return err
	})
	return list, total, err
}
