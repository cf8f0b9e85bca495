package sqlstore

import (
	"context"
	"slices"

	"gatehouse"

	"github.com/google/uuid"
)

// findDestination returns a live destination of the organization. Ids that
// are not UUIDs are not found.
func (tx *Tx) findDestination(ctx context.Context, orgID, id string) (*gatehouse.Destination, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("destination", id)
	}
	return found("destination", id, tx.scanDestination, tx.QueryRow(ctx, `SELECT `+destinationColumns+` FROM destinations
		WHERE id = ? AND organization_id = ? AND deleted_at IS NULL`, id, orgID))
}

// FindDestination returns a live destination of the organization.
func (s *Store) FindDestination(ctx context.Context, orgID, id string) (_ *gatehouse.Destination, err error) {
	defer wrap(&err, "FindDestination")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Destination, error) { return tx.findDestination(ctx, orgID, id) })
}

// FindDestinations lists the live destinations of a workspace.
func (s *Store) FindDestinations(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) (_ []*gatehouse.Destination, _ int, err error) {
	defer wrap(&err, "FindDestinations")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Destination], error) {
		w, err := tx.findWorkspace(ctx, orgID, workspaceRef)
		if err != nil {
			return nil, err
		}
		return findPage(ctx, tx, destinationColumns, `destinations WHERE workspace_id = ? AND deleted_at IS NULL`,
			`created_at, id`, []any{w.ID}, page, tx.scanDestination)
	}))
}

// CreateDestination creates a destination, at most MaxDestinationsPerType
// live ones of a type per workspace.
func (s *Store) CreateDestination(ctx context.Context, orgID string, c gatehouse.DestinationCreate) (_ *gatehouse.Destination, err error) {
	defer wrap(&err, "CreateDestination")
	base, err := gatehouse.NewDestination(c)
	if err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Destination, error) {
		d := new(*base) // each run fills in a copy of its own
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return nil, err
		}
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM destinations WHERE workspace_id = ? AND type = ?
			AND deleted_at IS NULL`, w.ID, d.Type).Scan(&n); err != nil {
			return nil, err
		}
		if n >= gatehouse.MaxDestinationsPerType {
			return nil, gatehouse.Errorf(gatehouse.ECONFLICT, "the workspace already has %d destinations of type %s; delete one first",
				gatehouse.MaxDestinationsPerType, d.Type)
		}
		d.ID, d.OrganizationID, d.WorkspaceID = uuid.NewString(), orgID, w.ID
		d.CreatedAt, d.UpdatedAt = tx.now, tx.now
		args, err := destinationArgs(tx.box, d)
		if err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "destinations", destinationColumns, args); err != nil {
			return nil, err
		}
		return d, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationCreate, ResourceType: gatehouse.ResourceDestination,
			ResourceIDs: []string{d.ID}, Details: map[string]any{"type": d.Type, "workspace_id": w.ID}})
	})
}

// UpdateDestination updates a live destination; its configuration merges
// key by key.
func (s *Store) UpdateDestination(ctx context.Context, orgID, id string, u gatehouse.DestinationUpdate) (_ *gatehouse.Destination, err error) {
	defer wrap(&err, "UpdateDestination")
	return update(ctx, s, func(tx *Tx) (*gatehouse.Destination, error) {
		d, err := tx.findDestination(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		if err := d.Apply(u); err != nil {
			return nil, err
		}
		d.UpdatedAt = tx.now
		args, err := destinationArgs(tx.box, d)
		if err != nil {
			return nil, err
		}
		// args[3:18] are name through updated_at; type and created_at are
		// written back unchanged. Secrets that could not be opened, and
		// were not sent again (Apply), stay sealed as they were.
		secrets, set := `secrets = ?`, args[3:18:18]
		if d.SecretsUnreadable {
			secrets, set = `secrets = secrets`, slices.Delete(set, 3, 4) // args[6], secrets
		}
		if _, err := tx.Exec(ctx, `UPDATE destinations SET name = ?, type = ?, config = ?, `+secrets+`, enabled = ?,
			privacy_mode = ?, sampling_rate = ?, api_key_hashes = ?, filter_rules = ?, regions = ?,
			broadcast_generation_cost = ?, broadcast_generation_identity = ?, broadcast_generation_request_context = ?,
			created_at = ?, updated_at = ? WHERE id = ?`, append(set, d.ID)...); err != nil {
			return nil, err
		}
		return d, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationUpdate, ResourceType: gatehouse.ResourceDestination,
			ResourceIDs: []string{d.ID}, Details: map[string]any{"fields": destinationChangedFields(u)}})
	})
}

// DeleteDestination soft-deletes a live destination.
func (s *Store) DeleteDestination(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteDestination")
	if _, err := uuid.Parse(id); err != nil {
		return gatehouse.NotFound("destination", id)
	}
	return s.exec(ctx, func(tx *Tx) error {
		n, err := tx.execCount(ctx, `UPDATE destinations SET deleted_at = ?, updated_at = ?
			WHERE id = ? AND organization_id = ? AND deleted_at IS NULL`, ms(tx.now), ms(tx.now), id, orgID)
		if err == nil && n == 0 {
			return gatehouse.NotFound("destination", id)
		}
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpDestinationDelete, ResourceType: gatehouse.ResourceDestination, ResourceIDs: []string{id}})
	})
}

// scanDestination scans a destination row and opens its secrets.
func (tx *Tx) scanDestination(s Scanner) (*gatehouse.Destination, error) {
	return scanDestination(tx.box, s)
}
