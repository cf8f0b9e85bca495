package sqlstore

import (
	"context"
	"errors"
	"slices"

	"gatehouse"

	"github.com/google/uuid"
)

// findWorkspace resolves a workspace reference of the organization: ""
// for the default workspace, else a UUID or a slug.
func (tx *Tx) findWorkspace(ctx context.Context, orgID, ref string) (*gatehouse.Workspace, error) {
	where, arg := `is_default = TRUE`, any(nil)
	if ref != "" {
		id, slug, ok := gatehouse.ParseWorkspaceRef(ref)
		switch {
		case !ok:
			return nil, gatehouse.NotFound("workspace", ref)
		case id != "":
			where, arg = `id = ?`, id
		default:
			where, arg = `slug = ?`, slug
		}
	}
	args := []any{orgID}
	if arg != nil {
		args = append(args, arg)
	}
	w, err := scanWorkspace(tx.QueryRow(ctx, `SELECT `+workspaceColumns+` FROM workspaces
		WHERE organization_id = ? AND `+where, args...))
	if errors.Is(err, ErrNoRows) {
		if ref == "" {
			return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "the organization has no default workspace; pass workspace_id")
		}
		return nil, gatehouse.NotFound("workspace", ref)
	}
	return w, err
}

// FindWorkspace returns a workspace by reference.
func (s *Store) FindWorkspace(ctx context.Context, orgID, ref string) (_ *gatehouse.Workspace, err error) {
	defer wrap(&err, "FindWorkspace")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Workspace, error) { return tx.findWorkspace(ctx, orgID, ref) })
}

// FindWorkspaces lists the organization's workspaces.
func (s *Store) FindWorkspaces(ctx context.Context, orgID string, page gatehouse.Page) (_ []*gatehouse.Workspace, _ int, err error) {
	defer wrap(&err, "FindWorkspaces")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Workspace], error) {
		return findKeptCountPage(ctx, tx, "workspaces", orgID, workspaceColumns, `workspaces WHERE organization_id = ?`,
			`workspaces WHERE organization_id = ?`, `created_at, id`, false, []any{orgID}, page, scanWorkspace)
	}))
}

// FindMemberWorkspaces lists the workspaces a member belongs to.
func (s *Store) FindMemberWorkspaces(ctx context.Context, orgID, userID string) (_ []*gatehouse.Workspace, err error) {
	defer wrap(&err, "FindMemberWorkspaces")
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.Workspace, error) {
		if err := tx.memberExists(ctx, orgID, userID); err != nil {
			return nil, err
		}
		rows, err := tx.Query(ctx, `SELECT `+workspaceColumns+` FROM workspaces WHERE organization_id = ? AND (is_default = TRUE
			OR id IN (SELECT workspace_id FROM workspace_members WHERE organization_id = ? AND user_id = ?))
			ORDER BY created_at, id`, orgID, orgID, userID)
		return collect(rows, err, scanWorkspace)
	})
}

// CreateWorkspace creates a workspace.
func (s *Store) CreateWorkspace(ctx context.Context, orgID string, c gatehouse.WorkspaceUpdate, createdBy *string) (_ *gatehouse.Workspace, err error) {
	defer wrap(&err, "CreateWorkspace")
	base, err := gatehouse.NewWorkspace(c)
	if err != nil {
		return nil, err
	}
	base.CreatedBy = createdBy
	return update(ctx, s, func(tx *Tx) (*gatehouse.Workspace, error) {
		w := new(*base) // each run fills in a copy of its own
		var defaults int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM workspaces WHERE organization_id = ? AND is_default = TRUE`, orgID).Scan(&defaults); err != nil {
			return nil, err
		}
		w.IsDefault = defaults == 0 // an organization left without one gets its next workspace as default
		if err := tx.insertWorkspace(ctx, orgID, w); err != nil {
			return nil, err
		}
		return w, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceCreate, ResourceType: gatehouse.ResourceWorkspace, ResourceIDs: []string{w.ID}})
	})
}

func (tx *Tx) insertWorkspace(ctx context.Context, orgID string, w *gatehouse.Workspace) error {
	w.ID, w.OrganizationID, w.CreatedAt, w.UpdatedAt = uuid.NewString(), orgID, tx.now, nil
	err := tx.insert(ctx, "workspaces", workspaceColumns+", default_guardrail_id",
		append(workspaceArgs(w), gatehouse.DefaultGuardrailID(w.ID)))
	if tx.d.IsUnique(err) {
		return gatehouse.FieldError("slug", "a workspace with slug %q already exists", w.Slug)
	}
	return err
}

// UpdateWorkspace updates a workspace.
func (s *Store) UpdateWorkspace(ctx context.Context, orgID, ref string, u gatehouse.WorkspaceUpdate) (_ *gatehouse.Workspace, err error) {
	defer wrap(&err, "UpdateWorkspace")
	return update(ctx, s, func(tx *Tx) (*gatehouse.Workspace, error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return nil, err
		}
		if err := w.Apply(u); err != nil {
			return nil, err
		}
		now := tx.now
		w.UpdatedAt = &now
		args := workspaceArgs(w)
		// args[2:15] are name through include_byok_in_budgets, args[18] is
		// updated_at; the full slice expression makes append copy.
		_, err = tx.Exec(ctx, `UPDATE workspaces SET name = ?, slug = ?, description = ?, default_text_model = ?,
			default_image_model = ?, default_provider_sort = ?, disabled_server_tools = ?, io_logging_api_key_ids = ?,
			io_logging_sampling_rate = ?, is_data_discount_logging_enabled = ?, is_observability_broadcast_enabled = ?,
			is_observability_io_logging_enabled = ?, include_byok_in_budgets = ?, updated_at = ? WHERE id = ?`,
			append(args[2:15:15], args[18], w.ID)...)
		if tx.d.IsUnique(err) {
			return nil, gatehouse.FieldError("slug", "a workspace with slug %q already exists", w.Slug)
		}
		if err != nil {
			return nil, err
		}
		return w, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceUpdate, ResourceType: gatehouse.ResourceWorkspace,
			ResourceIDs: []string{w.ID}, Details: map[string]any{"fields": gatehouse.ChangedFields(u)}})
	})
}

// DeleteWorkspace deletes a workspace and what it holds, in one transaction.
func (s *Store) DeleteWorkspace(ctx context.Context, orgID, ref string, confirmDefault bool) (err error) {
	defer wrap(&err, "DeleteWorkspace")
	return s.exec(ctx, func(tx *Tx) error {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return err
		}
		var active int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_keys WHERE workspace_id = ? AND disabled = FALSE
			AND (expires_at IS NULL OR expires_at > ?)`, w.ID, ms(tx.now)).Scan(&active); err != nil {
			return err
		}
		if err := gatehouse.CheckWorkspaceDeletion(w, confirmDefault, active); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE destinations SET deleted_at = ?, updated_at = ?
			WHERE workspace_id = ? AND deleted_at IS NULL`, ms(tx.now), ms(tx.now), w.ID); err != nil {
			return err
		}
		// Keys, guardrails, memberships, codes and assignments go by cascade.
		if _, err := tx.Exec(ctx, `DELETE FROM workspaces WHERE id = ?`, w.ID); err != nil {
			return err
		}
		if w.IsDefault {
			if _, err := tx.Exec(ctx, `UPDATE workspaces SET is_default = TRUE WHERE id =
				(SELECT id FROM workspaces WHERE organization_id = ? ORDER BY created_at, id LIMIT 1)`, orgID); err != nil {
				return err
			}
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceDelete, ResourceType: gatehouse.ResourceWorkspace, ResourceIDs: []string{w.ID}})
	})
}

// FindWorkspaceMembers lists the members of a workspace. The default
// workspace holds every member of the organization.
func (s *Store) FindWorkspaceMembers(ctx context.Context, orgID, ref string, page gatehouse.Page) (_ []*gatehouse.WorkspaceMember, _ int, err error) {
	defer wrap(&err, "FindWorkspaceMembers")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.WorkspaceMember], error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return nil, err
		}
		if !w.IsDefault {
			// Counted without the members: every membership has its
			// member (the foreign key cascades).
			return findKeptCountPage(ctx, tx, "workspace_members", w.ID, membershipColumns, membershipFrom,
				`workspace_members wm WHERE wm.workspace_id = ?`, `wm.created_at, wm.id`, false, []any{w.ID}, page, scanMembership)
		}
		members, err := tx.findMembers(ctx, orgID, page)
		if err != nil {
			return nil, err
		}
		return &listing[*gatehouse.WorkspaceMember]{implicitMemberships(w.ID, members.items), members.total}, nil
	}))
}

const membershipFrom = `workspace_members wm JOIN members m ON m.organization_id = wm.organization_id AND m.id = wm.user_id
		WHERE wm.workspace_id = ?`

// AddWorkspaceMembers adds organization members to a workspace.
func (s *Store) AddWorkspaceMembers(ctx context.Context, orgID, ref string, userIDs []string) (_ int, _ []*gatehouse.WorkspaceMember, err error) {
	defer wrap(&err, "AddWorkspaceMembers")
	ids, err := gatehouse.ValidateUserIDs("user_ids", userIDs)
	if err != nil {
		return 0, nil, err
	}
	type added struct {
		n    int
		list []*gatehouse.WorkspaceMember
	}
	got, err := update(ctx, s, func(tx *Tx) (added, error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return added{}, err
		}
		unknown, err := tx.unknownMembers(ctx, orgID, ids)
		if err != nil {
			return added{}, err
		}
		if len(unknown) > 0 {
			return added{}, (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "user_ids: not members of the organization: " +
				gatehouse.ListIDs(unknown)}).WithMetadata("user_ids", unknown)
		}
		if w.IsDefault { // holds every member already: nothing changes, nothing to record
			in, args := tx.in("id", ids, orgID)
			rows, err := tx.Query(ctx, `SELECT `+memberColumns+` FROM members WHERE organization_id = ? AND `+in+` ORDER BY created_at, id`, args...)
			members, err := collect(rows, err, scanMember)
			return added{list: implicitMemberships(w.ID, members)}, err
		}
		values := make([][]any, 0, len(ids))
		for _, id := range slices.Sorted(slices.Values(ids)) {
			values = append(values, []any{uuid.NewString(), orgID, w.ID, id, ms(tx.now)})
		}
		n, err := tx.insertRows(ctx, "workspace_members", `id, organization_id, workspace_id, user_id, created_at`, values,
			`ON CONFLICT (workspace_id, user_id) DO NOTHING`)
		if err != nil {
			return added{}, err
		}
		// A membership that group mappings gave is the admin's from now on:
		// the groups no longer take it away.
		mine, args := tx.in("user_id", ids, w.ID)
		if _, err := tx.Exec(ctx, `UPDATE workspace_members SET granted_by_groups = FALSE
			WHERE workspace_id = ? AND granted_by_groups = TRUE AND `+mine, args...); err != nil {
			return added{}, err
		}
		in, args := tx.in("wm.user_id", ids, w.ID)
		rows, err := tx.Query(ctx, `SELECT `+membershipColumns+` FROM `+membershipFrom+` AND `+in+` ORDER BY wm.created_at, wm.id`, args...)
		list, err := collect(rows, err, scanMembership)
		if err != nil {
			return added{}, err
		}
		return added{n, list}, tx.auditMembers(ctx, orgID, gatehouse.OpWorkspaceMembersAdd, w.ID, ids, "added_count", n)
	})
	if err != nil {
		return 0, nil, err
	}
	return got.n, got.list, nil
}

// implicitMemberships returns the memberships of members in the default
// workspace, which holds every member of the organization.
func implicitMemberships(workspaceID string, members []*gatehouse.Member) []*gatehouse.WorkspaceMember {
	out := make([]*gatehouse.WorkspaceMember, 0, len(members))
	for _, m := range members {
		out = append(out, gatehouse.ImplicitMembership(workspaceID, m))
	}
	return out
}

// RemoveWorkspaceMembers removes members from a workspace, all or nothing.
func (s *Store) RemoveWorkspaceMembers(ctx context.Context, orgID, ref string, userIDs []string) (_ int, err error) {
	defer wrap(&err, "RemoveWorkspaceMembers")
	ids, err := gatehouse.ValidateUserIDs("user_ids", userIDs)
	if err != nil {
		return 0, err
	}
	return update(ctx, s, func(tx *Tx) (int, error) {
		w, err := tx.findWorkspace(ctx, orgID, ref)
		if err != nil {
			return 0, err
		}
		if w.IsDefault {
			return 0, gatehouse.Errorf(gatehouse.EINVALID, "the default workspace holds every organization member; remove the member from the organization instead")
		}
		return tx.removeWorkspaceMembers(ctx, orgID, w.ID, ids, nil)
	})
}

// removeWorkspaceMembers removes members from a workspace that is not the
// default one, all or nothing, under the rule of removed members: nobody
// who holds active keys or pending authorization codes there goes
// (EINVALID naming them). details are added to the audit entry's.
func (tx *Tx) removeWorkspaceMembers(ctx context.Context, orgID, workspaceID string, ids []string, details map[string]any) (int, error) {
	blocked, err := tx.usersWithActiveKeys(ctx, orgID, workspaceID, ids)
	if err != nil {
		return 0, err
	}
	if len(blocked) > 0 {
		return 0, (&gatehouse.Error{Code: gatehouse.EINVALID, Message: "user_ids: members with active API keys or pending authorization codes in this workspace cannot be removed: " +
			gatehouse.ListIDs(blocked) + "; nobody was removed"}).WithMetadata("user_ids", blocked)
	}
	in, args := tx.in("user_id", ids, workspaceID)
	removed, err := tx.execCount(ctx, `DELETE FROM workspace_members WHERE workspace_id = ? AND `+in, args...)
	if err != nil || removed == 0 {
		return removed, err
	}
	rec := gatehouse.AuditRecord{Operation: gatehouse.OpWorkspaceMembersRemove, ResourceType: gatehouse.ResourceWorkspace, ResourceIDs: []string{workspaceID},
		Details: map[string]any{"user_ids": ids, "removed_count": removed}}
	for k, v := range details {
		rec.Details[k] = v
	}
	return removed, tx.audit(ctx, orgID, rec)
}

// auditMembers records a bulk change of a workspace's members. A call that
// changed nothing (count 0) leaves the database as it was: no entry.
func (tx *Tx) auditMembers(ctx context.Context, orgID, op, workspaceID string, userIDs []string, countName string, count int) error {
	if count == 0 {
		return nil
	}
	return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: op, ResourceType: gatehouse.ResourceWorkspace, ResourceIDs: []string{workspaceID},
		Details: map[string]any{"user_ids": userIDs, countName: count}})
}
