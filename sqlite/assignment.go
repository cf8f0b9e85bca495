package sqlite

import (
	"context"
	"database/sql"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/google/uuid"
)

// FindKeyAssignments lists the key assignments of a guardrail, or of the
// whole organization when guardrailID is "".
func (db *DB) FindKeyAssignments(ctx context.Context, orgID, guardrailID string, page gatehouse.Page) ([]*gatehouse.KeyAssignment, int, error) {
	var list []*gatehouse.KeyAssignment
	var total int
	err := db.view(ctx, func(tx *Tx) error {
		where, args, err := tx.assignmentFilter(ctx, orgID, guardrailID)
		if err != nil {
			return err
		}
		list, total, err = findPage(ctx, tx, `a.id, a.guardrail_id, a.key_hash, k.name, a.assigned_by, a.created_at`,
			`key_assignments a JOIN api_keys k ON k.hash = a.key_hash WHERE `+where, `a.created_at, a.id`, args, page,
			func(s dbrow.Scanner) (*gatehouse.KeyAssignment, error) {
				var a gatehouse.KeyAssignment
				var by sql.NullString
				var created int64
				err := s.Scan(&a.ID, &a.GuardrailID, &a.KeyHash, &a.KeyName, &by, &created)
				a.AssignedBy, a.CreatedAt = dbrow.StrPtr(by), dbrow.FromMS(created)
				return &a, err
			})
		return err
	})
	return list, total, err
}

// FindMemberAssignments lists the member assignments of a guardrail, or of
// the whole organization when guardrailID is "".
func (db *DB) FindMemberAssignments(ctx context.Context, orgID, guardrailID string, page gatehouse.Page) ([]*gatehouse.MemberAssignment, int, error) {
	var list []*gatehouse.MemberAssignment
	var total int
	err := db.view(ctx, func(tx *Tx) error {
		where, args, err := tx.assignmentFilter(ctx, orgID, guardrailID)
		if err != nil {
			return err
		}
		list, total, err = findPage(ctx, tx, `a.id, a.guardrail_id, a.user_id, a.organization_id, a.assigned_by, a.created_at`,
			`member_assignments a WHERE `+where, `a.created_at, a.id`, args, page,
			func(s dbrow.Scanner) (*gatehouse.MemberAssignment, error) {
				var a gatehouse.MemberAssignment
				var by sql.NullString
				var created int64
				err := s.Scan(&a.ID, &a.GuardrailID, &a.UserID, &a.OrganizationID, &by, &created)
				a.AssignedBy, a.CreatedAt = dbrow.StrPtr(by), dbrow.FromMS(created)
				return &a, err
			})
		return err
	})
	return list, total, err
}

// assignmentFilter returns the condition on assignment rows (alias a) of
// one guardrail, checked to exist, or of the whole organization.
func (tx *Tx) assignmentFilter(ctx context.Context, orgID, guardrailID string) (string, []any, error) {
	if guardrailID == "" {
		return `a.organization_id = ?`, []any{orgID}, nil
	}
	if _, err := tx.findGuardrail(ctx, orgID, guardrailID); err != nil {
		return "", nil, err
	}
	return `a.guardrail_id = ?`, []any{guardrailID}, nil
}

// AssignKeys assigns keys of the guardrail's workspace to the guardrail,
// moving them from any other guardrail.
func (db *DB) AssignKeys(ctx context.Context, orgID, guardrailID string, hashes []string, by *string) (int, error) {
	hashes, err := gatehouse.ValidateKeyHashes(hashes)
	if err != nil {
		return 0, err
	}
	var changed int
	err = db.update(ctx, func(tx *Tx) error {
		g, err := tx.findGuardrail(ctx, orgID, guardrailID)
		if err != nil {
			return err
		}
		// The unary + keeps the planner on the primary key: an index on the
		// other columns would scan every key of the workspace.
		rows, err := tx.QueryContext(ctx, `SELECT hash FROM api_keys WHERE hash IN (`+placeholders(len(hashes))+`)
			AND +organization_id = ? AND +workspace_id = ? AND +management = 0`, append(anys(hashes), orgID, g.WorkspaceID)...)
		if err != nil {
			return err
		}
		known, err := collect(rows, dbrow.ScanString)
		if err != nil {
			return err
		}
		if unknown := dbrow.Missing(hashes, known); len(unknown) > 0 {
			return (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "key_hashes: not keys of the guardrail's workspace: " +
				gatehouse.ListIDs(unknown) + "; nothing was assigned"}).WithMetadata("key_hashes", unknown)
		}
		for _, h := range hashes {
			n, err := tx.execCount(ctx, `INSERT INTO key_assignments (id, organization_id, guardrail_id, key_hash, assigned_by, created_at)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (key_hash) DO UPDATE SET id = excluded.id,
				guardrail_id = excluded.guardrail_id, assigned_by = excluded.assigned_by, created_at = excluded.created_at
				WHERE guardrail_id <> excluded.guardrail_id`, uuid.NewString(), orgID, g.ID, h, by, dbrow.MS(tx.now))
			if err != nil {
				return err
			}
			changed += n
		}
		return tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailKeysAssign, g.ID, "key_hashes", hashes, changed)
	})
	return changed, err
}

// auditAssignment records a bulk change of a guardrail's assignments. A
// call that changed nothing (count 0) leaves the database as it was: no entry.
func (tx *Tx) auditAssignment(ctx context.Context, orgID, op, guardrailID, listName string, list []string, count int) error {
	if count == 0 {
		return nil
	}
	return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: op, ResourceType: gatehouse.ResourceGuardrail, ResourceIDs: []string{guardrailID},
		Details: map[string]any{listName: list, "count": count}})
}

// execCount runs a statement and returns how many rows it changed.
func (tx *Tx) execCount(ctx context.Context, query string, args ...any) (int, error) {
	res, err := tx.ExecContext(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	return int(n), err
}

// UnassignKeys removes assignments of keys to the guardrail.
func (db *DB) UnassignKeys(ctx context.Context, orgID, guardrailID string, hashes []string) (int, error) {
	hashes, err := gatehouse.ValidateKeyHashes(hashes)
	if err != nil {
		return 0, err
	}
	var removed int
	err = db.update(ctx, func(tx *Tx) error {
		if _, err := tx.findGuardrail(ctx, orgID, guardrailID); err != nil {
			return err
		}
		if removed, err = tx.execCount(ctx, `DELETE FROM key_assignments WHERE guardrail_id = ? AND key_hash IN (`+
			placeholders(len(hashes))+`)`, anys(hashes, guardrailID)...); err != nil {
			return err
		}
		return tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailKeysUnassign, guardrailID, "key_hashes", hashes, removed)
	})
	return removed, err
}

// AssignMembers assigns organization members to the guardrail, moving them
// from any other guardrail.
func (db *DB) AssignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string, by *string) (int, error) {
	ids, err := gatehouse.ValidateUserIDs("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	var changed int
	err = db.update(ctx, func(tx *Tx) error {
		g, err := tx.findGuardrail(ctx, orgID, guardrailID)
		if err != nil {
			return err
		}
		unknown, err := tx.unknownMembers(ctx, orgID, ids)
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			return (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "member_user_ids: not members of the organization: " +
				gatehouse.ListIDs(unknown) + "; nothing was assigned"}).WithMetadata("member_user_ids", unknown)
		}
		for _, id := range ids {
			n, err := tx.execCount(ctx, `INSERT INTO member_assignments (id, organization_id, guardrail_id, user_id, assigned_by, created_at)
				VALUES (?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, user_id) DO UPDATE SET id = excluded.id,
				guardrail_id = excluded.guardrail_id, assigned_by = excluded.assigned_by, created_at = excluded.created_at
				WHERE guardrail_id <> excluded.guardrail_id`, uuid.NewString(), orgID, g.ID, id, by, dbrow.MS(tx.now))
			if err != nil {
				return err
			}
			changed += n
		}
		return tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailMembersAssign, g.ID, "member_user_ids", ids, changed)
	})
	return changed, err
}

// UnassignMembers removes assignments of members to the guardrail.
func (db *DB) UnassignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string) (int, error) {
	ids, err := gatehouse.ValidateUserIDs("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	var removed int
	err = db.update(ctx, func(tx *Tx) error {
		if _, err := tx.findGuardrail(ctx, orgID, guardrailID); err != nil {
			return err
		}
		if removed, err = tx.execCount(ctx, `DELETE FROM member_assignments WHERE guardrail_id = ? AND user_id IN (`+
			placeholders(len(ids))+`)`, anys(ids, guardrailID)...); err != nil {
			return err
		}
		return tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailMembersUnassign, guardrailID, "member_user_ids", ids, removed)
	})
	return removed, err
}
