package sqlstore

import (
	"context"
	"errors"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// findGuardrail returns a guardrail of the organization. Ids that are not
// UUIDs are not found, like those of other organizations.
func (tx *Tx) findGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("guardrail", id)
	}
	return found("guardrail", id, scanGuardrail, tx.QueryRow(ctx, `SELECT `+guardrailColumns+` FROM guardrails
		WHERE id = ? AND organization_id = ?`, id, orgID))
}

// FindGuardrail returns a guardrail of the organization, or the default
// guardrail of one of its workspaces as it stands unconfigured.
func (s *Store) FindGuardrail(ctx context.Context, orgID, id string) (_ *gatehouse.Guardrail, err error) {
	defer wrap(&err, "FindGuardrail")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Guardrail, error) {
		g, _, err := tx.findOrDefaultGuardrail(ctx, orgID, id)
		return g, err
	})
}

// findOrDefaultGuardrail returns a guardrail of the organization, or, when
// id is the default guardrail of one of its workspaces and that was never
// configured, that guardrail unsaved (unconfigured true).
func (tx *Tx) findOrDefaultGuardrail(ctx context.Context, orgID, id string) (g *gatehouse.Guardrail, unconfigured bool, err error) {
	g, err = tx.findGuardrail(ctx, orgID, id)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		g, err = tx.unconfiguredDefaultGuardrail(ctx, orgID, id)
		unconfigured = err == nil
	}
	return g, unconfigured, err
}

// configuredGuardrail returns a guardrail of the organization for a write
// that needs its row, saving a workspace's default guardrail, with no
// rules, when it was never configured (the write configures it).
func (tx *Tx) configuredGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	g, unconfigured, err := tx.findOrDefaultGuardrail(ctx, orgID, id)
	if err != nil || !unconfigured {
		return g, err
	}
	now := tx.now
	g.CreatedAt, g.UpdatedAt = now, &now
	if err := tx.insertGuardrail(ctx, g); err != nil {
		return nil, err
	}
	return g, tx.audit(ctx, orgID, guardrailUpdateRecord(g.ID, gatehouse.GuardrailUpdate{}, true))
}

// FindGuardrails lists the guardrails of a workspace.
func (s *Store) FindGuardrails(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) (_ []*gatehouse.Guardrail, _ int, err error) {
	defer wrap(&err, "FindGuardrails")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Guardrail], error) {
		w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
		if err != nil {
			return nil, err
		}
		return findKeptCountPage(ctx, tx, "guardrails", w.ID, guardrailColumns, `guardrails WHERE workspace_id = ?`,
			`guardrails WHERE workspace_id = ?`, `created_at, id`, false, []any{w.ID}, page, scanGuardrail)
	}))
}

// CreateGuardrail creates a guardrail in a workspace.
func (s *Store) CreateGuardrail(ctx context.Context, orgID string, c gatehouse.GuardrailCreate) (_ *gatehouse.Guardrail, err error) {
	defer wrap(&err, "CreateGuardrail")
	if !c.Name.Set || c.Name.Null {
		return nil, gatehouse.FieldError("name", "is required")
	}
	base := &gatehouse.Guardrail{}
	if err := base.Apply(c.GuardrailUpdate); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Guardrail, error) {
		g := new(*base) // each run fills in a copy of its own
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return nil, err
		}
		if g.Name == gatehouse.DefaultGuardrailName(w.ID) {
			return nil, gatehouse.ErrReservedGuardrailName(g.Name)
		}
		now := tx.now
		g.ID, g.OrganizationID, g.WorkspaceID = uuid.NewString(), orgID, w.ID
		g.CreatedAt, g.UpdatedAt = now, &now
		err = tx.insertGuardrail(ctx, g)
		if tx.d.IsUnique(err) {
			return nil, gatehouse.ErrGuardrailNameTaken(g.Name, gatehouse.EINVALID)
		}
		if err != nil {
			return nil, err
		}
		return g, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGuardrailCreate, ResourceType: gatehouse.ResourceGuardrail,
			ResourceIDs: []string{g.ID}, Details: map[string]any{"workspace_id": w.ID}})
	})
}

func (tx *Tx) insertGuardrail(ctx context.Context, g *gatehouse.Guardrail) error {
	return tx.insert(ctx, "guardrails", guardrailColumns, guardrailArgs(g))
}

// UpdateGuardrail updates a guardrail; the default guardrail of a workspace
// is created on its first update.
func (s *Store) UpdateGuardrail(ctx context.Context, orgID, id string, u gatehouse.GuardrailUpdate) (_ *gatehouse.Guardrail, err error) {
	defer wrap(&err, "UpdateGuardrail")
	return update(ctx, s, func(tx *Tx) (*gatehouse.Guardrail, error) {
		g, create, err := tx.findOrDefaultGuardrail(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		if err := g.Apply(u); err != nil {
			return nil, err
		}
		now := tx.now
		if create {
			g.CreatedAt = now
		}
		g.UpdatedAt = &now
		if create {
			err = tx.insertGuardrail(ctx, g)
		} else {
			err = tx.updateGuardrail(ctx, g)
		}
		if tx.d.IsUnique(err) {
			return nil, gatehouse.ErrGuardrailNameTaken(g.Name, gatehouse.ECONFLICT)
		}
		if err != nil {
			return nil, err
		}
		return g, tx.audit(ctx, orgID, guardrailUpdateRecord(g.ID, u, create))
	})
}

// unconfiguredDefaultGuardrail returns, unsaved, the default guardrail of
// the organization's workspace whose default guardrail id is id, as it
// stands before it is configured: no rules, created with its workspace,
// never updated. ENOTFOUND if no workspace of the organization has that id.
func (tx *Tx) unconfiguredDefaultGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("guardrail", id)
	}
	var w string
	var created time.Time
	err := tx.QueryRow(ctx, `SELECT id, created_at FROM workspaces WHERE default_guardrail_id = ? AND organization_id = ?`,
		id, orgID).Scan(&w, msTime(&created))
	if errors.Is(err, ErrNoRows) {
		return nil, gatehouse.NotFound("guardrail", id)
	}
	if err != nil {
		return nil, err
	}
	return &gatehouse.Guardrail{ID: id, OrganizationID: orgID, WorkspaceID: w,
		Name: gatehouse.DefaultGuardrailName(w), CreatedAt: created}, nil
}

func (tx *Tx) updateGuardrail(ctx context.Context, g *gatehouse.Guardrail) error {
	args := guardrailArgs(g)
	// args[3:24] are name through content_filter_builtins, args[25] is
	// updated_at; the full slice expression makes append copy.
	_, err := tx.Exec(ctx, `UPDATE guardrails SET name = ?, description = ?, allowed_models = ?,
		allowed_providers = ?, ignored_models = ?, ignored_providers = ?, limit_nanos = ?, reset_interval = ?,
		include_byok_in_budgets = ?, enforce_zdr = ?, enforce_zdr_anthropic = ?, enforce_zdr_openai = ?,
		enforce_zdr_google = ?, enforce_zdr_xai = ?, enforce_zdr_other = ?, enable_free_model_publication = ?,
		enable_free_model_training = ?, enable_paid_model_training = ?, allowed_data_regions = ?,
		content_filters = ?, content_filter_builtins = ?, updated_at = ? WHERE id = ?`,
		append(args[3:24:24], args[25], g.ID)...)
	return err
}

// DeleteGuardrail deletes a guardrail; its assignments go by cascade.
func (s *Store) DeleteGuardrail(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteGuardrail")
	return s.exec(ctx, func(tx *Tx) error {
		if _, err := tx.findGuardrail(ctx, orgID, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM guardrails WHERE id = ?`, id); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGuardrailDelete, ResourceType: gatehouse.ResourceGuardrail, ResourceIDs: []string{id}})
	})
}

// guardrailUpdateRecord is the audit record of a guardrail update; the
// first update of a workspace's default guardrail materializes it.
func guardrailUpdateRecord(id string, u gatehouse.GuardrailUpdate, materialized bool) gatehouse.AuditRecord {
	details := map[string]any{"fields": gatehouse.ChangedFields(u)}
	if materialized {
		details["materialized"] = true
	}
	return gatehouse.AuditRecord{Operation: gatehouse.OpGuardrailUpdate, ResourceType: gatehouse.ResourceGuardrail, ResourceIDs: []string{id}, Details: details}
}
