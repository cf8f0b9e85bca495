package postgres

import (
	"context"
	"errors"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CreateOrganization creates an organization with its default workspace.
func (db *DB) CreateOrganization(ctx context.Context, name string) (*gatehouse.Organization, error) {
	name, err := gatehouse.ValidateOrganizationName(name)
	if err != nil {
		return nil, err
	}
	var org *gatehouse.Organization
	err = db.update(ctx, func(tx *Tx) (err error) {
		org, err = tx.createOrganization(ctx, name)
		return err
	})
	if err != nil {
		return nil, err
	}
	return org, nil
}

// EnsureOrganization returns the oldest organization, creating one when
// there is none, in one transaction.
func (db *DB) EnsureOrganization(ctx context.Context, name string) (*gatehouse.Organization, bool, error) {
	name, err := gatehouse.ValidateOrganizationName(name)
	if err != nil {
		return nil, false, err
	}
	var org *gatehouse.Organization
	var created bool
	err = db.update(ctx, func(tx *Tx) error {
		org, created = &gatehouse.Organization{}, false
		var at int64
		err := tx.QueryRow(ctx, `SELECT id, name, created_at FROM organizations ORDER BY created_at, id LIMIT 1`).Scan(&org.ID, &org.Name, &at)
		switch {
		case err == nil:
			org.CreatedAt = dbrow.FromMS(at)
			return nil
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		org, err = tx.createOrganization(ctx, name)
		created = err == nil
		return err
	})
	if err != nil {
		return nil, false, err
	}
	return org, created, nil
}

func (tx *Tx) createOrganization(ctx context.Context, name string) (*gatehouse.Organization, error) {
	org := &gatehouse.Organization{ID: uuid.NewString(), Name: name, CreatedAt: tx.now}
	if _, err := tx.Exec(ctx, `INSERT INTO organizations (id, name, created_at) VALUES ($1, $2, $3)`, org.ID, org.Name, dbrow.MS(tx.now)); err != nil {
		return nil, err
	}
	w := gatehouse.NewDefaultWorkspace()
	if err := tx.insertWorkspace(ctx, org.ID, w); err != nil {
		return nil, err
	}
	return org, tx.audit(ctx, org.ID, gatehouse.AuditRecord{Operation: gatehouse.OpOrganizationCreate, ResourceType: gatehouse.ResourceOrganization,
		ResourceIDs: []string{org.ID}, Details: map[string]any{"default_workspace_id": w.ID}})
}

// FindOrganization returns an organization by id.
func (db *DB) FindOrganization(ctx context.Context, id string) (*gatehouse.Organization, error) {
	return db.findOrganization(ctx, `WHERE id = $1`, id)
}

// FindFirstOrganization returns the oldest organization.
func (db *DB) FindFirstOrganization(ctx context.Context) (*gatehouse.Organization, error) {
	return db.findOrganization(ctx, `ORDER BY created_at, id LIMIT 1`)
}

func (db *DB) findOrganization(ctx context.Context, where string, args ...any) (*gatehouse.Organization, error) {
	var org gatehouse.Organization
	err := db.view(ctx, func(tx *Tx) error {
		var created int64
		err := tx.QueryRow(ctx, `SELECT id, name, created_at FROM organizations `+where, args...).
			Scan(&org.ID, &org.Name, &created)
		if errors.Is(err, pgx.ErrNoRows) {
			return gatehouse.Errorf(gatehouse.ENOTFOUND, "organization not found")
		}
		org.CreatedAt = dbrow.FromMS(created)
		return err
	})
	if err != nil {
		return nil, err
	}
	return &org, nil
}

// FindMembers lists the organization's members.
func (db *DB) FindMembers(ctx context.Context, orgID string, page gatehouse.Page) ([]*gatehouse.Member, int, error) {
	var members []*gatehouse.Member
	var total int
	err := db.view(ctx, func(tx *Tx) error {
		var err error
		members, total, err = tx.findMembers(ctx, orgID, page)
		return err
	})
	return members, total, err
}

func (tx *Tx) findMembers(ctx context.Context, orgID string, page gatehouse.Page) ([]*gatehouse.Member, int, error) {
	return findPage(ctx, tx, dbrow.MemberColumns, `members WHERE organization_id = $1`, `created_at, id`,
		[]any{orgID}, page, dbrow.ScanMember)
}

// CreateMember adds a member to the organization. The check for a taken id
// or email and the insert run in one serializable transaction, so that two
// concurrent requests cannot both pass the check.
func (db *DB) CreateMember(ctx context.Context, orgID string, c gatehouse.MemberCreate) (*gatehouse.Member, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &gatehouse.Member{ID: c.ID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Role: c.Role}
	if m.ID == "" {
		m.ID = gatehouse.NewUserID()
	}
	err := db.update(ctx, func(tx *Tx) error {
		m.CreatedAt = tx.now
		var taken string
		err := tx.QueryRow(ctx, `SELECT CASE WHEN id = $1 THEN 'id' ELSE 'email' END FROM members
			WHERE organization_id = $2 AND (id = $1 OR lower(email) = lower($3)) LIMIT 1`, m.ID, orgID, m.Email).Scan(&taken)
		switch {
		case err == nil:
			return gatehouse.FieldError(taken, "a member with this %s already exists", taken)
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO members (organization_id, id, email, first_name, last_name, role, created_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, orgID, m.ID, m.Email, m.FirstName, m.LastName, m.Role, dbrow.MS(tx.now))
		if err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberCreate, ResourceType: gatehouse.ResourceMember, ResourceIDs: []string{m.ID}})
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// DeleteMember removes a member from the organization.
func (db *DB) DeleteMember(ctx context.Context, orgID, userID string) error {
	return db.update(ctx, func(tx *Tx) error {
		if err := tx.memberExists(ctx, orgID, userID); err != nil {
			return err
		}
		blocked, err := tx.usersWithActiveKeys(ctx, orgID, "", []string{userID})
		if err != nil {
			return err
		}
		if len(blocked) > 0 {
			return (&gatehouse.Error{Code: gatehouse.EINVALID,
				Message: "the member has active API keys or pending authorization codes; disable or delete the keys, or let the codes expire, first"}).WithMetadata("user_ids", blocked)
		}
		if _, err := tx.Exec(ctx, `DELETE FROM members WHERE organization_id = $1 AND id = $2`, orgID, userID); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberDelete, ResourceType: gatehouse.ResourceMember, ResourceIDs: []string{userID}})
	})
}

func (tx *Tx) memberExists(ctx context.Context, orgID, userID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM members WHERE organization_id = $1 AND id = $2`, orgID, userID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return gatehouse.NotFound("member", userID)
	}
	return err
}

// unknownMembers returns the ids that are not members of the organization.
func (tx *Tx) unknownMembers(ctx context.Context, orgID string, ids []string) ([]string, error) {
	rows, err := tx.Query(ctx, `SELECT id FROM members WHERE organization_id = $1 AND id = ANY($2)`, orgID, ids)
	known, err := collect(rows, err, dbrow.ScanString)
	if err != nil {
		return nil, err
	}
	return dbrow.Missing(ids, known), nil
}

// usersWithActiveKeys returns which of the users created an active key (not
// disabled, not expired) or hold a pending authorization code (unused,
// unexpired, not burned, its creator key active: it may still become a key)
// in the workspace, or in any workspace when workspaceID is "".
func (tx *Tx) usersWithActiveKeys(ctx context.Context, orgID, workspaceID string, userIDs []string) ([]string, error) {
	keys := `SELECT creator_user_id FROM api_keys
		WHERE organization_id = $1 AND NOT management AND NOT disabled
		AND (expires_at IS NULL OR expires_at > $2)
		AND creator_user_id = ANY($3)`
	codes := `SELECT creator_user_id FROM auth_codes
		WHERE organization_id = $1 AND used_at IS NULL AND expires_at > $2 AND failed_attempts < $4
		AND (creator_key_hash IS NULL OR creator_key_hash IN (SELECT hash FROM api_keys
			WHERE NOT disabled AND (expires_at IS NULL OR expires_at > $2)))
		AND creator_user_id = ANY($3)`
	args := []any{orgID, dbrow.MS(tx.now), userIDs, gatehouse.MaxVerifierAttempts}
	if workspaceID != "" {
		keys += ` AND workspace_id = $5`
		codes += ` AND workspace_id = $5`
		args = append(args, workspaceID)
	}
	rows, err := tx.Query(ctx, keys+` UNION `+codes+` ORDER BY creator_user_id`, args...)
	return collect(rows, err, dbrow.ScanString)
}
