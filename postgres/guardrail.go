package postgres

import (
	"context"
	"errors"
	"fmt"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// findGuardrail returns a guardrail of the organization. Ids that are not
// UUIDs are not found, like those of other organizations.
func (tx *Tx) findGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	return findGuardrail(ctx, tx, orgID, id)
}

func findGuardrail(ctx context.Context, q querier, orgID, id string) (*gatehouse.Guardrail, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("guardrail", id)
	}
	g, err := dbrow.ScanGuardrail(q.QueryRow(ctx, `SELECT `+dbrow.GuardrailColumns+` FROM guardrails
		WHERE id = $1 AND organization_id = $2`, id, orgID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, gatehouse.NotFound("guardrail", id)
	}
	return g, err
}

// FindGuardrail returns a guardrail of the organization.
func (db *DB) FindGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	var g *gatehouse.Guardrail
	err := db.one(ctx, func(ctx context.Context, q querier) (err error) {
		g, err = findGuardrail(ctx, q, orgID, id)
		return err
	})
	return g, err
}

// FindGuardrails lists the guardrails of a workspace.
func (db *DB) FindGuardrails(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) ([]*gatehouse.Guardrail, int, error) {
	var list []*gatehouse.Guardrail
	var total int
	err := db.view(ctx, func(tx *Tx) error {
		w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
		if err != nil {
			return err
		}
		list, total, err = findPage(ctx, tx, dbrow.GuardrailColumns, `guardrails WHERE workspace_id = $1`,
			`created_at, id`, []any{w.ID}, page, dbrow.ScanGuardrail)
		return err
	})
	return list, total, err
}

// CreateGuardrail creates a guardrail in a workspace.
func (db *DB) CreateGuardrail(ctx context.Context, orgID string, c gatehouse.GuardrailCreate) (*gatehouse.Guardrail, error) {
	if !c.Name.Set || c.Name.Null {
		return nil, gatehouse.FieldError("name", "is required")
	}
	g := &gatehouse.Guardrail{}
	if err := g.Apply(c.GuardrailUpdate); err != nil {
		return nil, err
	}
	err := db.update(ctx, func(tx *Tx) error {
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return err
		}
		if g.Name == gatehouse.DefaultGuardrailName(w.ID) {
			return gatehouse.ErrReservedGuardrailName(g.Name)
		}
		// Every field set here is set again by a retry.
		now := tx.now
		g.ID, g.OrganizationID, g.WorkspaceID = uuid.NewString(), orgID, w.ID
		g.CreatedAt, g.UpdatedAt = now, &now
		err = tx.insertGuardrail(ctx, g)
		if isUnique(err) {
			return gatehouse.ErrGuardrailNameTaken(g.Name, gatehouse.EINVALID)
		}
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGuardrailCreate, ResourceType: gatehouse.ResourceGuardrail,
			ResourceIDs: []string{g.ID}, Details: map[string]any{"workspace_id": w.ID}})
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// insertGuardrail inserts g. Its id may be taken only by a concurrent
// insert of the same default guardrail (whose id is fixed) that this
// transaction cannot see: ON CONFLICT then makes PostgreSQL report a
// serialization failure, so that the retry finds and updates that row, where
// a plain INSERT would report a unique violation, read as a name conflict.
func (tx *Tx) insertGuardrail(ctx context.Context, g *gatehouse.Guardrail) error {
	args, err := dbrow.GuardrailArgs(g)
	if err != nil {
		return err
	}
	n, err := tx.execCount(ctx, `INSERT INTO guardrails (`+dbrow.GuardrailColumns+`)
		VALUES (`+placeholders(len(args))+`) ON CONFLICT (id) DO NOTHING`, args...)
	if err == nil && n == 0 {
		return fmt.Errorf("guardrail %s exists already", g.ID) // visible, so found before: cannot happen
	}
	return err
}

// UpdateGuardrail updates a guardrail; the default guardrail of a workspace
// is created on its first update (see insertGuardrail for two instances
// creating it at once).
func (db *DB) UpdateGuardrail(ctx context.Context, orgID, id string, u gatehouse.GuardrailUpdate) (*gatehouse.Guardrail, error) {
	var g *gatehouse.Guardrail
	err := db.update(ctx, func(tx *Tx) error {
		var err error
		g, err = tx.findGuardrail(ctx, orgID, id)
		create := false
		if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			g, err = tx.unconfiguredDefaultGuardrail(ctx, orgID, id)
			create = true
		}
		if err != nil {
			return err
		}
		if err := g.Apply(u); err != nil {
			return err
		}
		now := tx.now
		g.UpdatedAt = &now
		if create {
			err = tx.insertGuardrail(ctx, g)
		} else {
			err = tx.updateGuardrail(ctx, g)
		}
		if isUnique(err) {
			return gatehouse.ErrGuardrailNameTaken(g.Name, gatehouse.ECONFLICT)
		}
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, guardrailUpdateRecord(g.ID, u, create))
	})
	if err != nil {
		return nil, err
	}
	return g, nil
}

// unconfiguredDefaultGuardrail returns, unsaved, the default guardrail of
// the organization's workspace whose default guardrail id is id. ENOTFOUND
// if no workspace of the organization has that id.
func (tx *Tx) unconfiguredDefaultGuardrail(ctx context.Context, orgID, id string) (*gatehouse.Guardrail, error) {
	var w string
	err := tx.QueryRow(ctx, `SELECT id FROM workspaces WHERE default_guardrail_id = $1 AND organization_id = $2`,
		id, orgID).Scan(&w)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, gatehouse.NotFound("guardrail", id)
	}
	if err != nil {
		return nil, err
	}
	return &gatehouse.Guardrail{ID: id, OrganizationID: orgID, WorkspaceID: w,
		Name: gatehouse.DefaultGuardrailName(w), CreatedAt: tx.now}, nil
}

func (tx *Tx) updateGuardrail(ctx context.Context, g *gatehouse.Guardrail) error {
	args, err := dbrow.GuardrailArgs(g)
	if err != nil {
		return err
	}
	// args[3:24] are name through content_filter_builtins, args[25] is
	// updated_at; the full slice expression makes append copy.
	_, err = tx.Exec(ctx, `UPDATE guardrails SET name = $1, description = $2, allowed_models = $3,
		allowed_providers = $4, ignored_models = $5, ignored_providers = $6, limit_nanos = $7, reset_interval = $8,
		include_byok_in_budgets = $9, enforce_zdr = $10, enforce_zdr_anthropic = $11, enforce_zdr_openai = $12,
		enforce_zdr_google = $13, enforce_zdr_xai = $14, enforce_zdr_other = $15, enable_free_model_publication = $16,
		enable_free_model_training = $17, enable_paid_model_training = $18, allowed_data_regions = $19,
		content_filters = $20, content_filter_builtins = $21, updated_at = $22 WHERE id = $23`,
		append(args[3:24:24], args[25], g.ID)...)
	return err
}

// DeleteGuardrail deletes a guardrail; its assignments go by cascade.
func (db *DB) DeleteGuardrail(ctx context.Context, orgID, id string) error {
	return db.update(ctx, func(tx *Tx) error {
		if _, err := tx.findGuardrail(ctx, orgID, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM guardrails WHERE id = $1`, id); err != nil {
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
