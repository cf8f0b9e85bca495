package postgres

import (
	"context"

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
		list, total, err = findPage(ctx, tx, dbrow.KeyAssignmentColumns,
			`key_assignments a JOIN api_keys k ON k.hash = a.key_hash WHERE `+where, `a.created_at, a.id`, args, page,
			dbrow.ScanKeyAssignment)
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
		list, total, err = findPage(ctx, tx, dbrow.MemberAssignmentColumns,
			`member_assignments a WHERE `+where, `a.created_at, a.id`, args, page, dbrow.ScanMemberAssignment)
		return err
	})
	return list, total, err
}

// assignmentFilter returns the condition on assignment rows (alias a) of
// one guardrail, checked to exist, or of the whole organization.
func (tx *Tx) assignmentFilter(ctx context.Context, orgID, guardrailID string) (string, []any, error) {
	if guardrailID == "" {
		return `a.organization_id = $1`, []any{orgID}, nil
	}
	if _, err := tx.findGuardrail(ctx, orgID, guardrailID); err != nil {
		return "", nil, err
	}
	return `a.guardrail_id = $1`, []any{guardrailID}, nil
}

// newIDs returns n new assignment ids.
func newIDs(n int) []string {
	ids := make([]string, n)
	for i := range ids {
		ids[i] = uuid.NewString()
	}
	return ids
}

// AssignKeys assigns keys of the guardrail's workspace to the guardrail,
// moving them from any other guardrail. One statement upserts them all:
// UNIQUE (key_hash) keeps a key on one guardrail however many instances
// assign it at once, and a key already on this guardrail is left alone, so
// it does not count.
func (db *DB) AssignKeys(ctx context.Context, orgID, guardrailID string, hashes []string, by *string) (int, error) {
	hashes, err := gatehouse.ValidateKeyHashes(hashes)
	if err != nil {
		return 0, err
	}
	var changed int
	err = db.update(ctx, func(tx *Tx) error {
		changed = 0
		g, err := tx.findGuardrail(ctx, orgID, guardrailID)
		if err != nil {
			return err
		}
		// The keys are looked up by primary key and filtered after: an
		// index on the other columns would scan every key of the workspace.
		rows, err := tx.Query(ctx, `SELECT hash FROM (SELECT hash, organization_id, workspace_id, management
			FROM api_keys WHERE hash = ANY($3) OFFSET 0) k WHERE organization_id = $1 AND workspace_id = $2 AND NOT management`,
			orgID, g.WorkspaceID, hashes)
		known, err := collect(rows, err, dbrow.ScanString)
		if err != nil {
			return err
		}
		if unknown := dbrow.Missing(hashes, known); len(unknown) > 0 {
			return (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "key_hashes: not keys of the guardrail's workspace: " +
				gatehouse.ListIDs(unknown) + "; nothing was assigned"}).WithMetadata("key_hashes", unknown)
		}
		changed, err = tx.execCount(ctx, `INSERT INTO key_assignments AS a (id, organization_id, guardrail_id, key_hash, assigned_by, created_at)
			SELECT t.id, $1, $2, t.key_hash, $3, $4 FROM unnest($5::text[], $6::text[]) AS t (key_hash, id) ORDER BY t.key_hash
			ON CONFLICT (key_hash) DO UPDATE SET id = excluded.id, guardrail_id = excluded.guardrail_id,
				assigned_by = excluded.assigned_by, created_at = excluded.created_at
			WHERE a.guardrail_id <> excluded.guardrail_id`,
			orgID, g.ID, by, dbrow.MS(tx.now), hashes, newIDs(len(hashes)))
		if err != nil {
			return err
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
	tag, err := tx.Exec(ctx, query, args...)
	if err != nil {
		return 0, err
	}
	return int(tag.RowsAffected()), nil
}

// UnassignKeys removes assignments of keys to the guardrail.
func (db *DB) UnassignKeys(ctx context.Context, orgID, guardrailID string, hashes []string) (int, error) {
	hashes, err := gatehouse.ValidateKeyHashes(hashes)
	if err != nil {
		return 0, err
	}
	var removed int
	err = db.update(ctx, func(tx *Tx) error {
		removed = 0
		if _, err := tx.findGuardrail(ctx, orgID, guardrailID); err != nil {
			return err
		}
		if removed, err = tx.execCount(ctx, `DELETE FROM key_assignments WHERE guardrail_id = $1 AND key_hash = ANY($2)`,
			guardrailID, hashes); err != nil {
			return err
		}
		return tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailKeysUnassign, guardrailID, "key_hashes", hashes, removed)
	})
	return removed, err
}

// AssignMembers assigns organization members to the guardrail, moving them
// from any other guardrail, as AssignKeys does keys.
func (db *DB) AssignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string, by *string) (int, error) {
	ids, err := gatehouse.ValidateUserIDs("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	var changed int
	err = db.update(ctx, func(tx *Tx) error {
		changed = 0
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
		changed, err = tx.execCount(ctx, `INSERT INTO member_assignments AS a (id, organization_id, guardrail_id, user_id, assigned_by, created_at)
			SELECT t.id, $1, $2, t.user_id, $3, $4 FROM unnest($5::text[], $6::text[]) AS t (user_id, id) ORDER BY t.user_id
			ON CONFLICT (organization_id, user_id) DO UPDATE SET id = excluded.id, guardrail_id = excluded.guardrail_id,
				assigned_by = excluded.assigned_by, created_at = excluded.created_at
			WHERE a.guardrail_id <> excluded.guardrail_id`,
			orgID, g.ID, by, dbrow.MS(tx.now), ids, newIDs(len(ids)))
		if err != nil {
			return err
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
		removed = 0
		if _, err := tx.findGuardrail(ctx, orgID, guardrailID); err != nil {
			return err
		}
		if removed, err = tx.execCount(ctx, `DELETE FROM member_assignments WHERE guardrail_id = $1 AND user_id = ANY($2)`,
			guardrailID, ids); err != nil {
			return err
		}
		return tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailMembersUnassign, guardrailID, "member_user_ids", ids, removed)
	})
	return removed, err
}
