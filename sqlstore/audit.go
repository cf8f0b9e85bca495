package sqlstore

import (
	"context"

	"gatehouse"
)

// audit appends the entry of a change to the audit log, in the change's
// transaction, with the actor and request id that ctx carries.
func (tx *Tx) audit(ctx context.Context, orgID string, rec gatehouse.AuditRecord) error {
	return tx.insert(ctx, "audit_log", auditColumns, auditArgs(gatehouse.NewAuditEntry(ctx, orgID, tx.now, rec)))
}

// FindAuditEntries lists the organization's audit entries, newest first.
func (s *Store) FindAuditEntries(ctx context.Context, orgID string, f gatehouse.AuditFilter) (_ []*gatehouse.AuditEntry, _ int, err error) {
	defer wrap(&err, "FindAuditEntries")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.AuditEntry], error) {
		where, args := auditWhere(orgID, f)
		return findPage(ctx, tx, auditColumns, `audit_log WHERE `+where, `at DESC, id DESC`, args, f.Page, scanAuditEntry)
	}))
}
