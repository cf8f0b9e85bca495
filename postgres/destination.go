package postgres

import (
	"context"
	"errors"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// scanDestination scans a destination row and opens its secrets.
func (db *DB) scanDestination(s dbrow.Scanner) (*gatehouse.Destination, error) {
	return dbrow.ScanDestination(db.box, s)
}

// findDestination returns a live destination of the organization. Ids that
// are not UUIDs are not found.
func (tx *Tx) findDestination(ctx context.Context, orgID, id string) (*gatehouse.Destination, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("destination", id)
	}
	d, err := tx.db.scanDestination(tx.QueryRow(ctx, `SELECT `+dbrow.DestinationColumns+` FROM destinations
		WHERE id = $1 AND organization_id = $2 AND deleted_at IS NULL`, id, orgID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, gatehouse.NotFound("destination", id)
	}
	return d, err
}

// FindDestination returns a live destination of the organization.
func (db *DB) FindDestination(ctx context.Context, orgID, id string) (*gatehouse.Destination, error) {
	var d *gatehouse.Destination
	err := db.view(ctx, func(tx *Tx) (err error) {
		d, err = tx.findDestination(ctx, orgID, id)
		return err
	})
	return d, err
}

// FindDestinations lists the live destinations of a workspace.
func (db *DB) FindDestinations(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) ([]*gatehouse.Destination, int, error) {
	var list []*gatehouse.Destination
	var total int
	err := db.view(ctx, func(tx *Tx) error {
		w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
		if err != nil {
			return err
		}
		list, total, err = findPage(ctx, tx, dbrow.DestinationColumns, `destinations WHERE workspace_id = $1 AND deleted_at IS NULL`,
			`created_at, id`, []any{w.ID}, page, db.scanDestination)
		return err
	})
	return list, total, err
}

// CreateDestination creates a destination, at most MaxDestinationsPerType
// live ones of a type per workspace. The count and the insert share one
// serializable transaction, so instances creating at once cannot both take
// the last place: one of them is retried and then counts the other's row.
func (db *DB) CreateDestination(ctx context.Context, orgID string, c gatehouse.DestinationCreate) (*gatehouse.Destination, error) {
	d, err := gatehouse.NewDestination(c)
	if err != nil {
		return nil, err
	}
	err = db.update(ctx, func(tx *Tx) error {
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM destinations WHERE workspace_id = $1 AND type = $2
			AND deleted_at IS NULL`, w.ID, d.Type).Scan(&n); err != nil {
			return err
		}
		if n >= gatehouse.MaxDestinationsPerType {
			return gatehouse.Errorf(gatehouse.ECONFLICT, "the workspace already has %d destinations of type %s; delete one first",
				gatehouse.MaxDestinationsPerType, d.Type)
		}
		// Every field set here is set again by a retry.
		d.ID, d.OrganizationID, d.WorkspaceID = uuid.NewString(), orgID, w.ID
		d.CreatedAt, d.UpdatedAt = tx.now, tx.now
		args, err := dbrow.DestinationArgs(db.box, d)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO destinations (`+dbrow.DestinationColumns+`)
			VALUES (`+placeholders(len(args))+`)`, args...); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationCreate, ResourceType: gatehouse.ResourceDestination,
			ResourceIDs: []string{d.ID}, Details: map[string]any{"type": d.Type, "workspace_id": w.ID}})
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// UpdateDestination updates a live destination; its configuration merges
// key by key.
func (db *DB) UpdateDestination(ctx context.Context, orgID, id string, u gatehouse.DestinationUpdate) (*gatehouse.Destination, error) {
	var d *gatehouse.Destination
	err := db.update(ctx, func(tx *Tx) error {
		var err error
		if d, err = tx.findDestination(ctx, orgID, id); err != nil {
			return err
		}
		if err := d.Apply(u); err != nil {
			return err
		}
		d.UpdatedAt = tx.now
		args, err := dbrow.DestinationArgs(db.box, d)
		if err != nil {
			return err
		}
		// args[3:18] are name through updated_at; type and created_at are
		// written back unchanged.
		_, err = tx.Exec(ctx, `UPDATE destinations SET name = $1, type = $2, config = $3, secrets = $4, enabled = $5,
			privacy_mode = $6, sampling_rate = $7, api_key_hashes = $8, filter_rules = $9, regions = $10,
			broadcast_generation_cost = $11, broadcast_generation_identity = $12, broadcast_generation_request_context = $13,
			created_at = $14, updated_at = $15 WHERE id = $16`, append(args[3:18:18], d.ID)...)
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationUpdate, ResourceType: gatehouse.ResourceDestination,
			ResourceIDs: []string{d.ID}, Details: map[string]any{"fields": dbrow.DestinationChangedFields(u)}})
	})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// DeleteDestination soft-deletes a live destination.
func (db *DB) DeleteDestination(ctx context.Context, orgID, id string) error {
	if _, err := uuid.Parse(id); err != nil {
		return gatehouse.NotFound("destination", id)
	}
	return db.update(ctx, func(tx *Tx) error {
		n, err := tx.execCount(ctx, `UPDATE destinations SET deleted_at = $1, updated_at = $1
			WHERE id = $2 AND organization_id = $3 AND deleted_at IS NULL`, dbrow.MS(tx.now), id, orgID)
		if err == nil && n == 0 {
			return gatehouse.NotFound("destination", id)
		}
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationDelete, ResourceType: gatehouse.ResourceDestination, ResourceIDs: []string{id}})
	})
}
