package sqlite

import (
	"context"

	"gatehouse"
	"gatehouse/dbrow"
)

// audit appends the entry of a change to the audit log, in the change's
// transaction, with the actor and request id that ctx carries.
func (tx *Tx) audit(ctx context.Context, orgID string, rec gatehouse.AuditRecord) error {
	args, err := dbrow.AuditArgs(gatehouse.NewAuditEntry(ctx, orgID, tx.now, rec))
	if err != nil {
		return err
	}
	_, err = tx.ExecContext(ctx, `INSERT INTO audit_log (`+dbrow.AuditColumns+`) VALUES (`+placeholders(len(args))+`)`, args...)
	return err
}

// FindAuditEntries lists the organization's audit entries, newest first.
func (db *DB) FindAuditEntries(ctx context.Context, orgID string, f gatehouse.AuditFilter) ([]*gatehouse.AuditEntry, int, error) {
	var list []*gatehouse.AuditEntry
	var total int
	err := db.view(ctx, func(tx *Tx) (err error) {
		where, args := dbrow.AuditWhere(orgID, f, func(int) string { return "?" })
		list, total, err = findPage(ctx, tx, dbrow.AuditColumns, `audit_log WHERE `+where, `at DESC, id DESC`,
			args, f.Page, dbrow.ScanAuditEntry)
		return err
	})
	return list, total, err
}
