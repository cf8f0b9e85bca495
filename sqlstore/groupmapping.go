package sqlstore

import (
	"context"
	"errors"

	"gatehouse"

	"github.com/google/uuid"
)

// groupMappingColumns are the columns of group_mappings, in
// scanGroupMapping order; the workspaces are read apart
// (mappingWorkspaces).
const groupMappingColumns = `id, organization_id, group_name, role, created_at, updated_at`

func scanGroupMapping(s Scanner) (*gatehouse.GroupMapping, error) {
	var m gatehouse.GroupMapping
	err := s.Scan(&m.ID, &m.OrganizationID, &m.Group, nullString(&m.Role), msTime(&m.CreatedAt), msTime(&m.UpdatedAt))
	m.WorkspaceIDs = []string{}
	return &m, scanErr("group mapping", m.ID, err)
}

// mappingWorkspaces fills in the workspaces of mappings.
func (tx *Tx) mappingWorkspaces(ctx context.Context, mappings []*gatehouse.GroupMapping) error {
	if len(mappings) == 0 {
		return nil
	}
	byID := map[string]*gatehouse.GroupMapping{}
	ids := make([]string, len(mappings))
	for i, m := range mappings {
		byID[m.ID], ids[i] = m, m.ID
	}
	in, args := tx.in("mapping_id", ids)
	rows, err := tx.Query(ctx, `SELECT mapping_id, workspace_id FROM group_mapping_workspaces WHERE `+in+` ORDER BY mapping_id, workspace_id`, args...)
	pairs, err := collect(rows, err, func(s Scanner) ([2]string, error) {
		var p [2]string
		return p, s.Scan(&p[0], &p[1])
	})
	for _, p := range pairs {
		byID[p[0]].WorkspaceIDs = append(byID[p[0]].WorkspaceIDs, p[1])
	}
	return err
}

func (tx *Tx) findGroupMapping(ctx context.Context, orgID, id string) (*gatehouse.GroupMapping, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("group mapping", id)
	}
	m, err := found("group mapping", id, scanGroupMapping, tx.QueryRow(ctx, `SELECT `+groupMappingColumns+` FROM group_mappings
		WHERE id = ? AND organization_id = ?`, id, orgID))
	if err != nil {
		return nil, err
	}
	return m, tx.mappingWorkspaces(ctx, []*gatehouse.GroupMapping{m})
}

// FindGroupMappings lists an organization's mappings.
func (s *Store) FindGroupMappings(ctx context.Context, orgID string, page gatehouse.Page) (_ []*gatehouse.GroupMapping, _ int, err error) {
	defer wrap(&err, "FindGroupMappings")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.GroupMapping], error) {
		const from = `group_mappings WHERE organization_id = ?`
		l, err := findKeptCountPage(ctx, tx, "group_mappings", orgID, groupMappingColumns, from, from, `created_at, id`,
			false, []any{orgID}, page, scanGroupMapping)
		if err != nil {
			return nil, err
		}
		return l, tx.mappingWorkspaces(ctx, l.items)
	}))
}

// FindGroupMapping returns a mapping of the organization.
func (s *Store) FindGroupMapping(ctx context.Context, orgID, id string) (_ *gatehouse.GroupMapping, err error) {
	defer wrap(&err, "FindGroupMapping")
	return view(ctx, s, func(tx *Tx) (*gatehouse.GroupMapping, error) { return tx.findGroupMapping(ctx, orgID, id) })
}

// CreateGroupMapping adds a mapping and applies it to its group's members.
func (s *Store) CreateGroupMapping(ctx context.Context, orgID string, c gatehouse.GroupMappingUpdate) (_ *gatehouse.GroupMapping, err error) {
	defer wrap(&err, "CreateGroupMapping")
	m, err := gatehouse.NewGroupMapping(c)
	if err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.GroupMapping, error) {
		m := *m
		m.ID, m.OrganizationID, m.CreatedAt, m.UpdatedAt = uuid.NewString(), orgID, tx.now, tx.now
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM group_mappings WHERE organization_id = ?`, orgID).Scan(&n); err != nil {
			return nil, err
		}
		if n >= gatehouse.MaxGroupMappings {
			return nil, gatehouse.Errorf(gatehouse.EINVALID, "an organization has at most %d group mappings", gatehouse.MaxGroupMappings)
		}
		if err := tx.checkMapping(ctx, &m); err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "group_mappings", groupMappingColumns,
			[]any{m.ID, orgID, m.Group, nullIfEmpty(m.Role), ms(m.CreatedAt), ms(m.UpdatedAt)}); err != nil {
			return nil, err
		}
		if err := tx.writeMappingWorkspaces(ctx, &m); err != nil {
			return nil, err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGroupMappingCreate, ResourceType: gatehouse.ResourceGroupMapping,
			ResourceIDs: []string{m.ID}, Details: mappingDetails(&m)}); err != nil {
			return nil, err
		}
		return &m, tx.applyToGroups(ctx, orgID, m.Group)
	})
}

// UpdateGroupMapping changes a mapping and applies the change to the
// members of its old group and of its new one.
func (s *Store) UpdateGroupMapping(ctx context.Context, orgID, id string, u gatehouse.GroupMappingUpdate) (_ *gatehouse.GroupMapping, err error) {
	defer wrap(&err, "UpdateGroupMapping")
	return update(ctx, s, func(tx *Tx) (*gatehouse.GroupMapping, error) {
		m, err := tx.findGroupMapping(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		old := m.Group
		if err := m.Apply(u); err != nil {
			return nil, err
		}
		if err := tx.checkMapping(ctx, m); err != nil {
			return nil, err
		}
		m.UpdatedAt = tx.now
		if _, err := tx.Exec(ctx, `UPDATE group_mappings SET group_name = ?, role = ?, updated_at = ? WHERE id = ?`,
			m.Group, nullIfEmpty(m.Role), ms(m.UpdatedAt), m.ID); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM group_mapping_workspaces WHERE mapping_id = ?`, m.ID); err != nil {
			return nil, err
		}
		if err := tx.writeMappingWorkspaces(ctx, m); err != nil {
			return nil, err
		}
		details := mappingDetails(m)
		details["fields"] = gatehouse.ChangedFields(u)
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGroupMappingUpdate, ResourceType: gatehouse.ResourceGroupMapping,
			ResourceIDs: []string{m.ID}, Details: details}); err != nil {
			return nil, err
		}
		return m, tx.applyToGroups(ctx, orgID, old, m.Group)
	})
}

// DeleteGroupMapping removes a mapping and takes away what it gave.
func (s *Store) DeleteGroupMapping(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteGroupMapping")
	return s.exec(ctx, func(tx *Tx) error {
		m, err := tx.findGroupMapping(ctx, orgID, id)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM group_mappings WHERE id = ?`, id); err != nil {
			return err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGroupMappingDelete, ResourceType: gatehouse.ResourceGroupMapping,
			ResourceIDs: []string{id}, Details: mappingDetails(m)}); err != nil {
			return err
		}
		return tx.applyToGroups(ctx, orgID, m.Group)
	})
}

// applyToGroups applies the mappings to the members of the named groups.
func (tx *Tx) applyToGroups(ctx context.Context, orgID string, names ...string) error {
	members, err := tx.groupMembers(ctx, orgID, names...)
	if err != nil {
		return err
	}
	return tx.applyGroupAccessAll(ctx, orgID, members)
}

// mappingDetails are what the audit log keeps of a mapping.
func mappingDetails(m *gatehouse.GroupMapping) map[string]any {
	d := map[string]any{"group": m.Group, "workspace_ids": append([]string{}, m.WorkspaceIDs...)}
	if m.Role != "" {
		d["role"] = m.Role
	}
	return d
}

// checkMapping refuses a group that another mapping has, and workspaces
// that are not the organization's or are its default one.
func (tx *Tx) checkMapping(ctx context.Context, m *gatehouse.GroupMapping) error {
	var other string
	err := tx.QueryRow(ctx, `SELECT id FROM group_mappings WHERE organization_id = ? AND group_name = ? AND id <> ?`,
		m.OrganizationID, m.Group, m.ID).Scan(&other)
	switch {
	case err == nil:
		return gatehouse.FieldError("group", "has a mapping already (%s): change that one", other).WithMetadata("id", other)
	case !errors.Is(err, ErrNoRows):
		return err
	}
	if len(m.WorkspaceIDs) == 0 {
		return nil
	}
	in, args := tx.in("id", m.WorkspaceIDs, m.OrganizationID)
	rows, err := tx.Query(ctx, `SELECT id FROM workspaces WHERE organization_id = ? AND is_default = FALSE AND `+in, args...)
	known, err := collect(rows, err, scanString)
	if err != nil {
		return err
	}
	if bad := missing(m.WorkspaceIDs, known); len(bad) > 0 {
		return gatehouse.FieldError("workspace_ids", "not workspaces of the organization, or the default workspace (which holds every member already): %s",
			gatehouse.ListIDs(bad)).WithMetadata("workspace_ids", bad)
	}
	return nil
}

func (tx *Tx) writeMappingWorkspaces(ctx context.Context, m *gatehouse.GroupMapping) error {
	if len(m.WorkspaceIDs) == 0 {
		return nil
	}
	rows := make([][]any, len(m.WorkspaceIDs))
	for i, ws := range m.WorkspaceIDs {
		rows[i] = []any{m.ID, ws}
	}
	_, err := tx.insertRows(ctx, "group_mapping_workspaces", `mapping_id, workspace_id`, rows, "")
	return err
}
