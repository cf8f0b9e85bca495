package sqlstore

import (
	"context"
	"errors"
	"slices"

	"gatehouse"

	"github.com/google/uuid"
)

// SCIM groups and their members. A change of a group's members (or of its
// names, which the mappings match) applies the mappings again to the
// members it concerns.

const scimGroupColumns = `id, organization_id, display_name, external_id, created_at, updated_at`

func scanSCIMGroup(s Scanner) (*gatehouse.SCIMGroup, error) {
	var g gatehouse.SCIMGroup
	err := s.Scan(&g.ID, &g.OrganizationID, &g.DisplayName, &g.ExternalID, msTime(&g.CreatedAt), msTime(&g.UpdatedAt))
	g.Members = []gatehouse.SCIMMemberRef{}
	return &g, scanErr("SCIM group", g.ID, err)
}

// groupMemberRefs fills in the members of groups.
func (tx *Tx) groupMemberRefs(ctx context.Context, groups []*gatehouse.SCIMGroup) error {
	if len(groups) == 0 {
		return nil
	}
	byID := map[string]*gatehouse.SCIMGroup{}
	ids := make([]string, len(groups))
	for i, g := range groups {
		byID[g.ID], ids[i] = g, g.ID
	}
	in, args := tx.in("sm.group_id", ids)
	rows, err := tx.Query(ctx, `SELECT sm.group_id, sm.user_id, m.email FROM scim_group_members sm
		JOIN members m ON m.organization_id = sm.organization_id AND m.id = sm.user_id
		WHERE `+in+` ORDER BY sm.created_at, sm.user_id`, args...)
	refs, err := collect(rows, err, func(s Scanner) ([3]string, error) {
		var r [3]string
		return r, s.Scan(&r[0], &r[1], &r[2])
	})
	for _, r := range refs {
		g := byID[r[0]]
		g.Members = append(g.Members, gatehouse.SCIMMemberRef{UserID: r[1], Display: r[2]})
	}
	return err
}

// FindSCIMGroups lists the organization's SCIM groups.
func (s *Store) FindSCIMGroups(ctx context.Context, orgID string, f gatehouse.SCIMGroupFilter) (_ []*gatehouse.SCIMGroup, _ int, err error) {
	defer wrap(&err, "FindSCIMGroups")
	for _, v := range []string{f.ID, f.DisplayName, f.ExternalID} {
		if !gatehouse.IsPlainText(v) {
			return []*gatehouse.SCIMGroup{}, 0, nil
		}
	}
	from, args := `scim_groups WHERE organization_id = ?`, []any{orgID}
	for _, c := range []struct{ column, v string }{{"id", f.ID}, {"display_name", f.DisplayName}, {"external_id", f.ExternalID}} {
		if c.v != "" {
			from, args = from+` AND `+c.column+` = ?`, append(args, c.v)
		}
	}
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.SCIMGroup], error) {
		list := []string{}
		if len(args) == 1 { // unfiltered: the groups' count is kept (migration 0054)
			list = []string{"scim_groups", orgID}
		}
		l, err := countAndPage(ctx, tx, scimGroupColumns, from, from, `created_at, id`, false, args, scimPage(f.StartIndex, f.Count), scanSCIMGroup, list...)
		if err != nil || f.WithoutMembers {
			return l, err
		}
		return l, tx.groupMemberRefs(ctx, l.items)
	}))
}

// FindSCIMGroup returns a SCIM group of the organization.
func (s *Store) FindSCIMGroup(ctx context.Context, orgID, id string, withoutMembers bool) (_ *gatehouse.SCIMGroup, err error) {
	defer wrap(&err, "FindSCIMGroup")
	return view(ctx, s, func(tx *Tx) (*gatehouse.SCIMGroup, error) {
		g, err := tx.findSCIMGroup(ctx, orgID, id)
		if err != nil || withoutMembers {
			return g, err
		}
		return g, tx.groupMemberRefs(ctx, []*gatehouse.SCIMGroup{g})
	})
}

func (tx *Tx) findSCIMGroup(ctx context.Context, orgID, id string) (*gatehouse.SCIMGroup, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("group", id)
	}
	return found("group", id, scanSCIMGroup, tx.QueryRow(ctx, `SELECT `+scimGroupColumns+` FROM scim_groups
		WHERE id = ? AND organization_id = ?`, id, orgID))
}

// CreateSCIMGroup makes a SCIM group with its members.
func (s *Store) CreateSCIMGroup(ctx context.Context, orgID string, w gatehouse.SCIMGroupWrite) (_ *gatehouse.SCIMGroup, err error) {
	defer wrap(&err, "CreateSCIMGroup")
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.SCIMGroup, error) {
		g := &gatehouse.SCIMGroup{ID: uuid.NewString(), OrganizationID: orgID, DisplayName: w.DisplayName, ExternalID: w.ExternalID,
			CreatedAt: tx.now, UpdatedAt: tx.now}
		if err := tx.checkSCIMGroup(ctx, g, w.MemberIDs); err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "scim_groups", scimGroupColumns, []any{g.ID, orgID, g.DisplayName, g.ExternalID, ms(g.CreatedAt), ms(g.UpdatedAt)}); err != nil {
			return nil, err
		}
		if err := tx.addGroupMembers(ctx, g, w.MemberIDs); err != nil {
			return nil, err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSCIMGroupCreate, ResourceType: gatehouse.ResourceSCIMGroup,
			ResourceIDs: []string{g.ID}, Details: map[string]any{"display_name": g.DisplayName, "added_user_ids": w.MemberIDs, "via": viaSCIM}}); err != nil {
			return nil, err
		}
		if err := tx.applyGroupAccessAll(ctx, orgID, w.MemberIDs); err != nil {
			return nil, err
		}
		return g, tx.groupMemberRefs(ctx, []*gatehouse.SCIMGroup{g})
	})
}

// checkSCIMGroup refuses a display name another group has (ECONFLICT) and
// members who are not the organization's (EINVALID naming them).
func (tx *Tx) checkSCIMGroup(ctx context.Context, g *gatehouse.SCIMGroup, memberIDs []string) error {
	var other string
	err := tx.QueryRow(ctx, `SELECT id FROM scim_groups WHERE organization_id = ? AND display_name = ? AND id <> ?`,
		g.OrganizationID, g.DisplayName, g.ID).Scan(&other)
	switch {
	case err == nil:
		return gatehouse.Errorf(gatehouse.ECONFLICT, "displayName: another group has it (%s)", other).WithMetadata("id", other)
	case !errors.Is(err, ErrNoRows):
		return err
	}
	if len(memberIDs) == 0 {
		return nil
	}
	for chunk := range slices.Chunk(memberIDs, 500) {
		unknown, err := tx.unknownMembers(ctx, g.OrganizationID, chunk)
		if err != nil {
			return err
		}
		if len(unknown) > 0 {
			return gatehouse.FieldError("members", "not users of this organization: %s", gatehouse.ListIDs(unknown)).WithMetadata("user_ids", unknown)
		}
	}
	return nil
}

func (tx *Tx) addGroupMembers(ctx context.Context, g *gatehouse.SCIMGroup, ids []string) error {
	if len(ids) == 0 {
		return nil
	}
	rows := make([][]any, len(ids))
	for i, id := range ids {
		rows[i] = []any{g.ID, g.OrganizationID, id, ms(g.UpdatedAt)}
	}
	_, err := tx.insertRows(ctx, "scim_group_members", `group_id, organization_id, user_id, created_at`, rows, `ON CONFLICT (group_id, user_id) DO NOTHING`)
	return err
}

// groupMemberIDs returns the ids of a group's members, sorted.
func (tx *Tx) groupMemberIDs(ctx context.Context, groupID string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT user_id FROM scim_group_members WHERE group_id = ? ORDER BY user_id`, groupID)
	return collect(rows, err, scanString)
}

// UpdateSCIMGroup changes a group as change says.
func (s *Store) UpdateSCIMGroup(ctx context.Context, orgID, id string, change func(*gatehouse.SCIMGroupWrite) error) (_ *gatehouse.SCIMGroup, err error) {
	defer wrap(&err, "UpdateSCIMGroup")
	return update(ctx, s, func(tx *Tx) (*gatehouse.SCIMGroup, error) {
		g, err := tx.findSCIMGroup(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		before, err := tx.groupMemberIDs(ctx, id)
		if err != nil {
			return nil, err
		}
		oldNames := g.Names()
		w := gatehouse.SCIMGroupWrite{DisplayName: g.DisplayName, ExternalID: g.ExternalID, MemberIDs: slices.Clone(before)}
		if err := change(&w); err != nil {
			return nil, err
		}
		if err := w.Validate(); err != nil {
			return nil, err
		}
		added, removed := missing(w.MemberIDs, before), missing(before, w.MemberIDs)
		renamed := g.DisplayName != w.DisplayName || !sameString(g.ExternalID, w.ExternalID)
		g.DisplayName, g.ExternalID, g.UpdatedAt = w.DisplayName, w.ExternalID, tx.now
		if err := tx.checkSCIMGroup(ctx, g, added); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE scim_groups SET display_name = ?, external_id = ?, updated_at = ? WHERE id = ?`,
			g.DisplayName, g.ExternalID, ms(g.UpdatedAt), id); err != nil {
			return nil, err
		}
		if err := tx.addGroupMembers(ctx, g, added); err != nil {
			return nil, err
		}
		for chunk := range slices.Chunk(removed, 500) {
			in, args := tx.in("user_id", chunk, id)
			if _, err := tx.Exec(ctx, `DELETE FROM scim_group_members WHERE group_id = ? AND `+in, args...); err != nil {
				return nil, err
			}
		}
		if err := tx.dropClaimGroups(ctx, orgID, removed, oldNames); err != nil {
			return nil, err
		}
		details := map[string]any{"display_name": g.DisplayName, "added_user_ids": added, "removed_user_ids": removed, "via": viaSCIM}
		if renamed {
			details["renamed"] = true
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSCIMGroupUpdate, ResourceType: gatehouse.ResourceSCIMGroup,
			ResourceIDs: []string{id}, Details: details}); err != nil {
			return nil, err
		}
		affected := append(added, removed...)
		if renamed {
			affected = append(affected, w.MemberIDs...)
		}
		slices.Sort(affected)
		if err := tx.applyGroupAccessAll(ctx, orgID, slices.Compact(affected)); err != nil {
			return nil, err
		}
		return g, tx.groupMemberRefs(ctx, []*gatehouse.SCIMGroup{g})
	})
}

func sameString(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// DeleteSCIMGroup removes a group; its members lose what it gave.
func (s *Store) DeleteSCIMGroup(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteSCIMGroup")
	return s.exec(ctx, func(tx *Tx) error {
		g, err := tx.findSCIMGroup(ctx, orgID, id)
		if err != nil {
			return err
		}
		members, err := tx.groupMemberIDs(ctx, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM scim_groups WHERE id = ?`, id); err != nil {
			return err
		}
		if err := tx.dropClaimGroups(ctx, orgID, members, g.Names()); err != nil {
			return err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSCIMGroupDelete, ResourceType: gatehouse.ResourceSCIMGroup,
			ResourceIDs: []string{id}, Details: map[string]any{"display_name": g.DisplayName, "removed_user_ids": members, "via": viaSCIM}}); err != nil {
			return err
		}
		return tx.applyGroupAccessAll(ctx, orgID, members)
	})
}
