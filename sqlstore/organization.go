package sqlstore

import (
	"context"
	"errors"

	"gatehouse"

	"github.com/google/uuid"
)

// CreateOrganization creates an organization with its default workspace.
func (s *Store) CreateOrganization(ctx context.Context, name string) (*gatehouse.Organization, error) {
	name, err := gatehouse.ValidateOrganizationName(name)
	if err != nil {
		return nil, err
	}
	var org *gatehouse.Organization
	err = s.updateFn(ctx, func(tx *Tx) (err error) {
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
func (s *Store) EnsureOrganization(ctx context.Context, name string) (*gatehouse.Organization, bool, error) {
	name, err := gatehouse.ValidateOrganizationName(name)
	if err != nil {
		return nil, false, err
	}
	var org *gatehouse.Organization
	var created bool
	err = s.exec(ctx, func(tx *Tx) error {
		org, created = &gatehouse.Organization{}, false
		var at int64
		err := tx.QueryRow(ctx, `SELECT id, name, created_at FROM organizations ORDER BY created_at, id LIMIT 1`).Scan(&org.ID, &org.Name, &at)
		switch {
		case err == nil:
			org.CreatedAt = fromMS(at)
			return nil
		case !errors.Is(err, ErrNoRows):
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
	if _, err := tx.Exec(ctx, `INSERT INTO organizations (id, name, created_at) VALUES (?, ?, ?)`, org.ID, org.Name, ms(tx.now)); err != nil {
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
func (s *Store) FindOrganization(ctx context.Context, id string) (*gatehouse.Organization, error) {
	return s.findOrganization(ctx, `WHERE id = ?`, id)
}

// FindFirstOrganization returns the oldest organization.
func (s *Store) FindFirstOrganization(ctx context.Context) (*gatehouse.Organization, error) {
	return s.findOrganization(ctx, `ORDER BY created_at, id LIMIT 1`)
}

func (s *Store) findOrganization(ctx context.Context, where string, args ...any) (*gatehouse.Organization, error) {
	return read(ctx, s, func(tx *Tx) (*gatehouse.Organization, error) {
		var org gatehouse.Organization
		var created int64
		err := tx.QueryRow(ctx, `SELECT id, name, created_at FROM organizations `+where, args...).Scan(&org.ID, &org.Name, &created)
		if errors.Is(err, ErrNoRows) {
			return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "organization not found")
		}
		org.CreatedAt = fromMS(created)
		return &org, err
	})
}

// FindMembers lists the organization's members.
func (s *Store) FindMembers(ctx context.Context, orgID string, page gatehouse.Page) ([]*gatehouse.Member, int, error) {
	var members []*gatehouse.Member
	var total int
	err := s.viewFn(ctx, func(tx *Tx) error {
		var err error
		members, total, err = tx.findMembers(ctx, orgID, page)
		return err
	})
	return members, total, err
}

func (tx *Tx) findMembers(ctx context.Context, orgID string, page gatehouse.Page) ([]*gatehouse.Member, int, error) {
	return findPage(ctx, tx, memberColumns, `members WHERE organization_id = ?`, `created_at, id`,
		[]any{orgID}, page, scanMember)
}

// CreateMember adds a member to the organization.
func (s *Store) CreateMember(ctx context.Context, orgID string, c gatehouse.MemberCreate) (*gatehouse.Member, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	m := &gatehouse.Member{ID: c.ID, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Role: c.Role}
	if m.ID == "" {
		m.ID = gatehouse.NewUserID()
	}
	err := s.exec(ctx, func(tx *Tx) error {
		m.CreatedAt = tx.now
		var taken string
		err := tx.QueryRow(ctx, `SELECT CASE WHEN id = ? THEN 'id' ELSE 'email' END FROM members
			WHERE organization_id = ? AND (id = ? OR lower(email) = lower(?)) LIMIT 1`, m.ID, orgID, m.ID, m.Email).Scan(&taken)
		switch {
		case err == nil:
			return gatehouse.FieldError(taken, "a member with this %s already exists", taken)
		case !errors.Is(err, ErrNoRows):
			return err
		}
		_, err = tx.Exec(ctx, `INSERT INTO members (organization_id, id, email, first_name, last_name, role, created_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, orgID, m.ID, m.Email, m.FirstName, m.LastName, m.Role, ms(tx.now))
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
func (s *Store) DeleteMember(ctx context.Context, orgID, userID string) error {
	return s.exec(ctx, func(tx *Tx) error {
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
		if _, err := tx.Exec(ctx, `DELETE FROM members WHERE organization_id = ? AND id = ?`, orgID, userID); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberDelete, ResourceType: gatehouse.ResourceMember, ResourceIDs: []string{userID}})
	})
}

func (tx *Tx) memberExists(ctx context.Context, orgID, userID string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM members WHERE organization_id = ? AND id = ?`, orgID, userID).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return gatehouse.NotFound("member", userID)
	}
	return err
}

// unknownMembers returns the ids that are not members of the organization.
func (tx *Tx) unknownMembers(ctx context.Context, orgID string, ids []string) ([]string, error) {
	in, args := tx.in("id", ids, orgID)
	rows, err := tx.Query(ctx, `SELECT id FROM members WHERE organization_id = ? AND `+in, args...)
	known, err := collect(rows, err, scanString)
	if err != nil {
		return nil, err
	}
	return missing(ids, known), nil
}

// usersWithActiveKeys returns which of the users created an active key (not
// disabled, not expired) or hold a pending authorization code (unused,
// unexpired, not burned, its creator key active: it may still become a key)
// in the workspace, or in any workspace when workspaceID is "".
func (tx *Tx) usersWithActiveKeys(ctx context.Context, orgID, workspaceID string, userIDs []string) ([]string, error) {
	inUsers, keyArgs := tx.in("creator_user_id", userIDs, orgID, ms(tx.now))
	inUsers = ` AND ` + inUsers
	_, codeArgs := tx.in("creator_user_id", userIDs, orgID, ms(tx.now), gatehouse.MaxVerifierAttempts, ms(tx.now))
	keys := `SELECT creator_user_id FROM api_keys
		WHERE organization_id = ? AND NOT management AND NOT disabled
		AND (expires_at IS NULL OR expires_at > ?)` + inUsers
	codes := `SELECT creator_user_id FROM auth_codes
		WHERE organization_id = ? AND used_at IS NULL AND expires_at > ? AND failed_attempts < ?
		AND (creator_key_hash IS NULL OR creator_key_hash IN (SELECT hash FROM api_keys
			WHERE NOT disabled AND (expires_at IS NULL OR expires_at > ?)))` + inUsers
	if workspaceID != "" {
		keys += ` AND workspace_id = ?`
		codes += ` AND workspace_id = ?`
		keyArgs = append(keyArgs, workspaceID)
		codeArgs = append(codeArgs, workspaceID)
	}
	rows, err := tx.Query(ctx, keys+` UNION `+codes+` ORDER BY creator_user_id`, append(keyArgs, codeArgs...)...)
	if err != nil {
		return nil, err
	}
	return collect(rows, nil, scanString)
}
