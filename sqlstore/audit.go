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
		if f.Since == nil && f.Until == nil && f.Actor == "" && f.Operation == "" && f.ResourceType == "" && f.ResourceID == "" {
			// The whole log: its count is kept (migration 0031), and its
			// blocks (0052) find a page deep in it.
			return findKeptCountPage(ctx, tx, "audit_log", orgID, auditColumns, `audit_log WHERE `+where, `audit_log WHERE `+where,
				`at DESC, id DESC`, false, args, f.Page, scanAuditEntry)
		}
		return findPage(ctx, tx, auditColumns, `audit_log WHERE `+where, `at DESC, id DESC`, args, f.Page, scanAuditEntry)
	}))
}

// SearchAuditEntries pages through the organization's audit log newest
// first (see gatehouse.AuditService): each filter walks an index in (at,
// id) order from the cursor (migration 0018_audit_search.sql). An actor
// is a key hash or a user id: the two indexes are walked apart, a page of
// each, and the pages merged.
func (s *Store) SearchAuditEntries(ctx context.Context, orgID string, f gatehouse.AuditFilter) (_ *gatehouse.AuditPage, err error) {
	defer wrap(&err, "SearchAuditEntries")
	if err := f.Validate(); err != nil {
		return nil, err
	}
	limit := f.Page.Limit
	switch {
	case f.Page.Offset != 0:
		return nil, gatehouse.FieldError("offset", "must be 0: pages follow each other by their cursor")
	case limit == 0:
		limit = gatehouse.DefaultPageSize
	case limit < 0 || limit > gatehouse.MaxPageSize:
		return nil, gatehouse.FieldError("limit", "must be from 1 to %d", gatehouse.MaxPageSize)
	}
	query, args := auditSearchQuery(orgID, f, limit)
	entries, err := view(ctx, s, func(tx *Tx) ([]*gatehouse.AuditEntry, error) {
		rows, err := tx.Query(ctx, query, args...)
		return collect(rows, err, scanAuditEntry)
	})
	if err != nil {
		return nil, err
	}
	page := &gatehouse.AuditPage{Entries: entries}
	if len(entries) > limit {
		last := entries[limit-1]
		page.Entries, page.Next = entries[:limit], &gatehouse.AuditCursor{At: last.At, ID: last.ID}
	}
	return page, nil
}

// auditSearchQuery is the SQL of a page of the audit log of limit entries
// (one more is read, to tell whether another page follows), and its
// arguments. The sqlite package's tests check the index each filter walks.
func auditSearchQuery(orgID string, f gatehouse.AuditFilter, limit int) (string, []any) {
	branch := func(actorColumn string) (string, []any) {
		g := f
		g.Actor = ""
		where, args := auditWhere(orgID, g)
		switch actorColumn {
		case "actor_key_hash":
			where, args = where+" AND actor_key_hash = ?", append(args, f.Actor)
		case "actor_user_id": // not twice an entry whose key hash were also its user id
			where, args = where+" AND actor_user_id = ? AND (actor_key_hash IS NULL OR actor_key_hash <> ?)", append(args, f.Actor, f.Actor)
		}
		if f.After != nil {
			where, args = where+" AND (at, id) < (?, ?)", append(args, ms(f.After.At), f.After.ID)
		}
		return `SELECT ` + auditColumns + ` FROM audit_log WHERE ` + where + ` ORDER BY at DESC, id DESC LIMIT ?`, append(args, limit+1)
	}
	query, args := branch("")
	if f.Actor != "" {
		byKey, keyArgs := branch("actor_key_hash")
		byUser, userArgs := branch("actor_user_id")
		query = `SELECT ` + auditColumns + ` FROM (` + byKey + `) k UNION ALL SELECT ` + auditColumns + ` FROM (` + byUser + `) u
			ORDER BY at DESC, id DESC LIMIT ?`
		args = append(append(keyArgs, userArgs...), limit+1)
	}
	return query, args
}
