package sqlstore

import (
	"context"
	"slices"

	"gatehouse"

	"github.com/google/uuid"
)

// What a member's identity-provider groups give them. A member's groups are
// those their last OpenID Connect sign-in named (member_claim_groups) and
// the SCIM groups that hold them; a group mapping applies to a member when
// it names one of those groups by its name (or a SCIM group's id or
// externalId). Whenever a member's groups or the mappings change, the
// member's role and the workspace memberships the groups gave are set
// again (applyGroupAccess); memberships an admin added are left alone.

// viaGroups marks the audit entries of what group mappings changed.
const viaGroups = "group_mappings"

// memberGroupNames is the subquery of every name of a member's groups
// (arguments: organization, user, five times over).
const memberGroupNames = `SELECT group_name FROM member_claim_groups WHERE organization_id = ? AND user_id = ?
	UNION SELECT g.display_name FROM scim_group_members sm JOIN scim_groups g ON g.id = sm.group_id WHERE sm.organization_id = ? AND sm.user_id = ?
	UNION SELECT g.id FROM scim_group_members sm JOIN scim_groups g ON g.id = sm.group_id WHERE sm.organization_id = ? AND sm.user_id = ?
	UNION SELECT g.external_id FROM scim_group_members sm JOIN scim_groups g ON g.id = sm.group_id
		WHERE sm.organization_id = ? AND sm.user_id = ? AND g.external_id IS NOT NULL`

// memberMappings returns the mappings that apply to a member.
func (tx *Tx) memberMappings(ctx context.Context, orgID, userID string) ([]*gatehouse.GroupMapping, error) {
	args := []any{orgID}
	for range 4 {
		args = append(args, orgID, userID)
	}
	rows, err := tx.Query(ctx, `SELECT `+groupMappingColumns+` FROM group_mappings WHERE organization_id = ?
		AND group_name IN (`+memberGroupNames+`) ORDER BY created_at, id`, args...)
	mappings, err := collect(rows, err, scanGroupMapping)
	if err != nil {
		return nil, err
	}
	return mappings, tx.mappingWorkspaces(ctx, mappings)
}

// rolesGoverned reports whether some mapping of the organization gives a
// role: then the groups decide every mapped member's role.
func (tx *Tx) rolesGoverned(ctx context.Context, orgID string) (bool, error) {
	var n int
	err := tx.QueryRow(ctx, `SELECT count(*) FROM group_mappings WHERE organization_id = ? AND role IS NOT NULL`, orgID).Scan(&n)
	return n > 0, err
}

// groupMembers returns the members a group name is known to hold: those
// whose last sign-in named it, and those of the SCIM groups it names.
func (tx *Tx) groupMembers(ctx context.Context, orgID string, names ...string) ([]string, error) {
	var out []string
	for _, name := range names {
		rows, err := tx.Query(ctx, `SELECT user_id FROM member_claim_groups WHERE organization_id = ? AND group_name = ?
			UNION SELECT sm.user_id FROM scim_group_members sm JOIN scim_groups g ON g.id = sm.group_id
			WHERE g.organization_id = ? AND (g.display_name = ? OR g.id = ? OR g.external_id = ?)`,
			orgID, name, orgID, name, name, name)
		ids, err := collect(rows, err, scanString)
		if err != nil {
			return nil, err
		}
		out = append(out, ids...)
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// applyGroupAccessAll applies the mappings to each of the members.
func (tx *Tx) applyGroupAccessAll(ctx context.Context, orgID string, userIDs []string) error {
	for _, id := range userIDs {
		if err := tx.applyGroupAccess(ctx, orgID, id); err != nil {
			return err
		}
	}
	return nil
}

// applyGroupAccess sets a member's role and group-given workspace
// memberships to what their groups give now (gatehouse.ResolveGroupAccess).
// A workspace the groups no longer give is taken away under the rules of
// removed members: their active keys there are disabled and their pending
// codes burned first (takeAccess), then the membership goes as any removal
// does (removeWorkspaceMembers).
func (tx *Tx) applyGroupAccess(ctx context.Context, orgID, userID string) error {
	var role string
	if err := tx.QueryRow(ctx, `SELECT role FROM members WHERE organization_id = ? AND id = ?`, orgID, userID).Scan(&role); err != nil {
		return err
	}
	mappings, err := tx.memberMappings(ctx, orgID, userID)
	if err != nil {
		return err
	}
	governed, err := tx.rolesGoverned(ctx, orgID)
	if err != nil {
		return err
	}
	access := gatehouse.ResolveGroupAccess(mappings, governed)
	if access.Role != "" && access.Role != role {
		if _, err := tx.Exec(ctx, `UPDATE members SET role = ? WHERE organization_id = ? AND id = ?`, access.Role, orgID, userID); err != nil {
			return err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberUpdate, ResourceType: gatehouse.ResourceMember,
			ResourceIDs: []string{userID}, Details: map[string]any{"fields": []string{"role"}, "role": access.Role, "via": viaGroups}}); err != nil {
			return err
		}
	}
	return tx.setGroupWorkspaces(ctx, orgID, userID, access.WorkspaceIDs)
}

// setGroupWorkspaces adds the member to the workspaces (but the default
// one, which holds everyone) that they are not in, as memberships the
// groups gave, and takes away the memberships the groups gave that are not
// among them.
func (tx *Tx) setGroupWorkspaces(ctx context.Context, orgID, userID string, want []string) error {
	type membership struct {
		workspace string
		byGroups  bool
	}
	rows, err := tx.Query(ctx, `SELECT workspace_id, granted_by_groups FROM workspace_members WHERE organization_id = ? AND user_id = ?`, orgID, userID)
	current, err := collect(rows, err, func(s Scanner) (membership, error) {
		var m membership
		return m, s.Scan(&m.workspace, &m.byGroups)
	})
	if err != nil {
		return err
	}
	has := func(ws string) bool {
		return slices.ContainsFunc(current, func(m membership) bool { return m.workspace == ws })
	}
	for _, ws := range want {
		if has(ws) {
			continue
		}
		n, err := tx.Exec(ctx, `INSERT INTO workspace_members (id, organization_id, workspace_id, user_id, created_at, granted_by_groups)
			SELECT ?, organization_id, id, ?, ?, TRUE FROM workspaces WHERE id = ? AND organization_id = ? AND is_default = FALSE`,
			uuid.NewString(), userID, ms(tx.now), ws, orgID)
		if err != nil {
			return err
		}
		if n == 0 {
			continue // a workspace deleted meanwhile, or the default one
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceMembersAdd, ResourceType: gatehouse.ResourceWorkspace,
			ResourceIDs: []string{ws}, Details: map[string]any{"user_ids": []string{userID}, "added_count": n, "via": viaGroups}}); err != nil {
			return err
		}
	}
	for _, m := range current {
		if !m.byGroups || slices.Contains(want, m.workspace) {
			continue
		}
		if err := tx.takeAccess(ctx, orgID, m.workspace, userID, viaGroups); err != nil {
			return err
		}
		if _, err := tx.removeWorkspaceMembers(ctx, orgID, m.workspace, []string{userID}, map[string]any{"via": viaGroups}); err != nil {
			return err
		}
	}
	return nil
}

// takeAccess disables what the rules of removed members say must go before
// a member leaves a workspace (or, for workspaceID "", the organization):
// the active keys they created there, each audited as a key update, and
// the pending authorization codes they made there, burned (as a code whose
// creator is gone is burned at its exchange). These are the keys and codes
// that usersWithActiveKeys counts; once they are gone the removal passes
// that rule. reason goes in the audit entries.
func (tx *Tx) takeAccess(ctx context.Context, orgID, workspaceID, userID, reason string) error {
	where, args := `organization_id = ? AND creator_user_id = ?`, []any{orgID, userID}
	if workspaceID != "" {
		where, args = where+` AND workspace_id = ?`, append(args, workspaceID)
	}
	rows, err := tx.Query(ctx, `SELECT hash FROM api_keys WHERE `+where+` AND management = FALSE AND disabled = FALSE
		AND (expires_at IS NULL OR expires_at > ?) ORDER BY hash`, append(args, ms(tx.now))...)
	hashes, err := collect(rows, err, scanString)
	if err != nil {
		return err
	}
	for _, h := range hashes {
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET disabled = TRUE, updated_at = ? WHERE hash = ?`, ms(tx.now), h); err != nil {
			return err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpKeyUpdate, ResourceType: gatehouse.ResourceKey,
			ResourceIDs: []string{h}, Details: map[string]any{"fields": []string{"disabled"}, "via": reason}}); err != nil {
			return err
		}
	}
	_, err = tx.Exec(ctx, `UPDATE auth_codes SET failed_attempts = ? WHERE `+where+` AND used_at IS NULL AND failed_attempts < ?`,
		append([]any{gatehouse.MaxVerifierAttempts}, append(args, gatehouse.MaxVerifierAttempts)...)...)
	return err
}
