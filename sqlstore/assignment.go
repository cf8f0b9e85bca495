package sqlstore

import (
	"context"
	"slices"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// FindKeyAssignments lists the key assignments of a guardrail, or of the
// whole organization when guardrailID is "".
func (s *Store) FindKeyAssignments(ctx context.Context, orgID, guardrailID string, page gatehouse.Page) (_ []*gatehouse.KeyAssignment, _ int, err error) {
	defer wrap(&err, "FindKeyAssignments")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.KeyAssignment], error) {
		where, args, err := tx.assignmentFilter(ctx, orgID, guardrailID)
		if err != nil {
			return nil, err
		}
		// Counted without the keys: every assignment has its key (the
		// foreign key cascades), and a count that looks each up reads a
		// page of api_keys per assignment (120 ms for 9,000 at 1M keys).
		from, counted := `key_assignments a JOIN api_keys k ON k.hash = a.key_hash WHERE `+where, `key_assignments a WHERE `+where
		list, scope := assignmentList("key_assignments", orgID, guardrailID)
		return findKeptCountPage(ctx, tx, list, scope, keyAssignmentColumns, from, counted, `a.created_at, a.id`, false, args, page, scanKeyAssignment)
	}))
}

// FindMemberAssignments lists the member assignments of a guardrail, or of
// the whole organization when guardrailID is "".
func (s *Store) FindMemberAssignments(ctx context.Context, orgID, guardrailID string, page gatehouse.Page) (_ []*gatehouse.MemberAssignment, _ int, err error) {
	defer wrap(&err, "FindMemberAssignments")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.MemberAssignment], error) {
		where, args, err := tx.assignmentFilter(ctx, orgID, guardrailID)
		if err != nil {
			return nil, err
		}
		from := `member_assignments a WHERE ` + where
		list, scope := assignmentList("member_assignments", orgID, guardrailID)
		return findKeptCountPage(ctx, tx, list, scope, memberAssignmentColumns, from, from, `a.created_at, a.id`, false, args, page, scanMemberAssignment)
	}))
}

// assignmentFilter returns the condition on assignment rows (alias a) of
// one guardrail, checked to exist, or of the whole organization.
func (tx *Tx) assignmentFilter(ctx context.Context, orgID, guardrailID string) (string, []any, error) {
	if guardrailID == "" {
		return `a.organization_id = ?`, []any{orgID}, nil
	}
	if _, _, err := tx.findOrDefaultGuardrail(ctx, orgID, guardrailID); err != nil {
		return "", nil, err
	}
	return `a.guardrail_id = ?`, []any{guardrailID}, nil
}

// assignmentList names the kept count and blocks of the assignments of
// table (key_assignments or member_assignments) of one guardrail, or of
// the whole organization when guardrailID is "" (migrations 0031, 0054).
func assignmentList(table, orgID, guardrailID string) (list, scope string) {
	if guardrailID == "" {
		return table, orgID
	}
	return "guardrail_" + table, guardrailID
}

// AssignKeys assigns keys of the guardrail's workspace to the guardrail,
// moving them from any other guardrail.
func (s *Store) AssignKeys(ctx context.Context, orgID, guardrailID string, hashes []string, by *string) (_ int, err error) {
	defer wrap(&err, "AssignKeys")
	hashes, err = gatehouse.ValidateKeyHashes(hashes)
	if err != nil {
		return 0, err
	}
	return update(ctx, s, func(tx *Tx) (int, error) {
		g, err := tx.configuredGuardrail(ctx, orgID, guardrailID)
		if err != nil {
			return 0, err
		}
		// The keys are looked up by primary key and filtered after (the
		// LIMIT keeps both planners from merging the two): an index on the
		// other columns would scan every key of the workspace, and under
		// PostgreSQL's SERIALIZABLE its predicate locks make concurrent bulk
		// assigns conflict and retry (100 keys at a time: 94/s without the
		// LIMIT, 381/s with it).
		in, args := tx.d.In("hash", hashes)
		rows, err := tx.Query(ctx, `SELECT hash FROM (SELECT hash, organization_id, workspace_id, management FROM api_keys
			WHERE `+in+` LIMIT ?) k WHERE organization_id = ? AND workspace_id = ? AND management = FALSE`,
			append(args, len(hashes), orgID, g.WorkspaceID)...)
		known, err := collect(rows, err, scanString)
		if err != nil {
			return 0, err
		}
		if unknown := missing(hashes, known); len(unknown) > 0 {
			return 0, (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "key_hashes: not keys of the guardrail's workspace: " +
				gatehouse.ListIDs(unknown) + "; nothing was assigned"}).WithMetadata("key_hashes", unknown)
		}
		changed, err := tx.insertRows(ctx, "key_assignments", assignmentColumns("key_hash"),
			assignmentRows(orgID, g.ID, hashes, by, tx.now), `ON CONFLICT (key_hash) DO UPDATE SET `+reassign("key_assignments"))
		if err != nil {
			return 0, err
		}
		return changed, tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailKeysAssign, g.ID, "key_hashes", hashes, changed)
	})
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
	n, err := tx.Exec(ctx, query, args...)
	return int(n), err
}

// UnassignKeys removes assignments of keys to the guardrail.
func (s *Store) UnassignKeys(ctx context.Context, orgID, guardrailID string, hashes []string) (_ int, err error) {
	defer wrap(&err, "UnassignKeys")
	if hashes, err = gatehouse.ValidateKeyHashes(hashes); err != nil {
		return 0, err
	}
	return s.unassign(ctx, orgID, guardrailID, "key_assignments", "key_hash", hashes, gatehouse.OpGuardrailKeysUnassign, "key_hashes")
}

// AssignMembers assigns organization members to the guardrail, moving them
// from any other guardrail.
func (s *Store) AssignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string, by *string) (_ int, err error) {
	defer wrap(&err, "AssignMembers")
	ids, err := gatehouse.ValidateUserIDs("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	return update(ctx, s, func(tx *Tx) (int, error) {
		g, err := tx.configuredGuardrail(ctx, orgID, guardrailID)
		if err != nil {
			return 0, err
		}
		unknown, err := tx.unknownMembers(ctx, orgID, ids)
		if err != nil {
			return 0, err
		}
		if len(unknown) > 0 {
			return 0, (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "member_user_ids: not members of the organization: " +
				gatehouse.ListIDs(unknown) + "; nothing was assigned"}).WithMetadata("member_user_ids", unknown)
		}
		changed, err := tx.insertRows(ctx, "member_assignments", assignmentColumns("user_id"),
			assignmentRows(orgID, g.ID, ids, by, tx.now), `ON CONFLICT (organization_id, user_id) DO UPDATE SET `+reassign("member_assignments"))
		if err != nil {
			return 0, err
		}
		return changed, tx.auditAssignment(ctx, orgID, gatehouse.OpGuardrailMembersAssign, g.ID, "member_user_ids", ids, changed)
	})
}

// UnassignMembers removes assignments of members to the guardrail.
func (s *Store) UnassignMembers(ctx context.Context, orgID, guardrailID string, userIDs []string) (_ int, err error) {
	defer wrap(&err, "UnassignMembers")
	ids, err := gatehouse.ValidateUserIDs("member_user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	return s.unassign(ctx, orgID, guardrailID, "member_assignments", "user_id", ids, gatehouse.OpGuardrailMembersUnassign, "member_user_ids")
}

// unassign removes the assignments to a guardrail of the subjects (in
// column of table) and records it as op, the list under listName.
func (s *Store) unassign(ctx context.Context, orgID, guardrailID, table, column string, subjects []string, op, listName string) (int, error) {
	return update(ctx, s, func(tx *Tx) (int, error) {
		if _, _, err := tx.findOrDefaultGuardrail(ctx, orgID, guardrailID); err != nil {
			return 0, err
		}
		in, args := tx.in(column, subjects, guardrailID)
		removed, err := tx.execCount(ctx, `DELETE FROM `+table+` WHERE guardrail_id = ? AND `+in, args...)
		if err != nil {
			return 0, err
		}
		return removed, tx.auditAssignment(ctx, orgID, op, guardrailID, listName, subjects, removed)
	})
}

// assignmentColumns are the columns of a new key or member assignment,
// whose subject is in column.
func assignmentColumns(column string) string {
	return `id, organization_id, guardrail_id, ` + column + `, assigned_by, created_at`
}

// assignmentRows are the rows of new assignments of subjects (sorted: the
// lock order) to a guardrail.
func assignmentRows(orgID, guardrailID string, subjects []string, by *string, now time.Time) [][]any {
	rows := make([][]any, 0, len(subjects))
	for _, s := range slices.Sorted(slices.Values(subjects)) {
		rows = append(rows, []any{uuid.NewString(), orgID, guardrailID, s, by, ms(now)})
	}
	return rows
}

// reassign moves an existing assignment of the table to the new guardrail,
// and leaves (and does not count) one already there.
func reassign(table string) string {
	return `id = excluded.id, guardrail_id = excluded.guardrail_id, assigned_by = excluded.assigned_by,
		created_at = excluded.created_at WHERE ` + table + `.guardrail_id <> excluded.guardrail_id`
}
