package sqlstore

import (
	"context"
	"errors"
	"slices"
	"strings"

	"gatehouse"

	"github.com/google/uuid"
)

// CreateOrganization creates an organization with its default workspace.
func (s *Store) CreateOrganization(ctx context.Context, name string) (_ *gatehouse.Organization, err error) {
	defer wrap(&err, "CreateOrganization")
	name, err = gatehouse.ValidateOrganizationName(name)
	if err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Organization, error) { return tx.createOrganization(ctx, name) })
}

// EnsureOrganization returns the oldest organization, creating one when
// there is none, in one transaction.
func (s *Store) EnsureOrganization(ctx context.Context, name string) (_ *gatehouse.Organization, _ bool, err error) {
	defer wrap(&err, "EnsureOrganization")
	name, err = gatehouse.ValidateOrganizationName(name)
	if err != nil {
		return nil, false, err
	}
	type ensured struct {
		org     *gatehouse.Organization
		created bool
	}
	got, err := update(ctx, s, func(tx *Tx) (ensured, error) {
		org, err := tx.scanOrganization(ctx, `ORDER BY created_at, id LIMIT 1`)
		if gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
			return ensured{org, false}, err
		}
		org, err = tx.createOrganization(ctx, name)
		return ensured{org, true}, err
	})
	if err != nil {
		return nil, false, err
	}
	return got.org, got.created, nil
}

// Bootstrap returns the oldest organization, creating it when there is
// none, and makes sure of its management key, in one transaction.
func (s *Store) Bootstrap(ctx context.Context, b gatehouse.Bootstrap) (_ *gatehouse.Bootstrapped, err error) {
	defer wrap(&err, "Bootstrap")
	name, err := gatehouse.ValidateOrganizationName(b.OrganizationName)
	if err != nil {
		return nil, err
	}
	keyName := b.KeyName
	if b.Key != "" {
		if keyName, err = checkManagementKey(b.Key, keyName); err != nil {
			return nil, err
		}
	}
	ctx = actorOr(ctx, gatehouse.Actor{System: gatehouse.ActorFirstStart})
	return update(ctx, s, func(tx *Tx) (*gatehouse.Bootstrapped, error) {
		org, err := tx.scanOrganization(ctx, `ORDER BY created_at, id LIMIT 1`)
		created := gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND
		if created {
			org, err = tx.createOrganization(ctx, name)
		}
		if err != nil {
			return nil, err
		}
		out := &gatehouse.Bootstrapped{Organization: org, Created: created}
		if b.Key == "" || (!created && !b.Always) {
			return out, nil
		}
		out.Key, err = tx.ensureManagementKey(ctx, org.ID, b.Key, keyName)
		return out, err
	})
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
func (s *Store) FindOrganization(ctx context.Context, id string) (_ *gatehouse.Organization, err error) {
	defer wrap(&err, "FindOrganization")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Organization, error) { return tx.scanOrganization(ctx, `WHERE id = ?`, id) })
}

// FindFirstOrganization returns the oldest organization.
func (s *Store) FindFirstOrganization(ctx context.Context) (_ *gatehouse.Organization, err error) {
	defer wrap(&err, "FindFirstOrganization")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Organization, error) {
		return tx.scanOrganization(ctx, `ORDER BY created_at, id LIMIT 1`)
	})
}

// FindOrganizations lists every organization, oldest first.
func (s *Store) FindOrganizations(ctx context.Context, page gatehouse.Page) (_ []*gatehouse.Organization, _ int, err error) {
	defer wrap(&err, "FindOrganizations")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Organization], error) {
		return findPage(ctx, tx, `id, name, created_at`, `organizations`, `created_at, id`, nil, page,
			func(s Scanner) (*gatehouse.Organization, error) {
				var org gatehouse.Organization
				return &org, s.Scan(&org.ID, &org.Name, msTime(&org.CreatedAt))
			})
	}))
}

// scanOrganization returns the organization that the rest of the query
// (after FROM organizations) selects.
func (tx *Tx) scanOrganization(ctx context.Context, rest string, args ...any) (*gatehouse.Organization, error) {
	var org gatehouse.Organization
	err := tx.QueryRow(ctx, `SELECT id, name, created_at FROM organizations `+rest, args...).Scan(&org.ID, &org.Name, msTime(&org.CreatedAt))
	if errors.Is(err, ErrNoRows) {
		return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "organization not found")
	}
	if err != nil {
		return nil, err
	}
	return &org, nil
}

// FindMembers lists the organization's members.
func (s *Store) FindMembers(ctx context.Context, orgID string, page gatehouse.Page) (_ []*gatehouse.Member, _ int, err error) {
	defer wrap(&err, "FindMembers")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Member], error) { return tx.findMembers(ctx, orgID, page) }))
}

func (tx *Tx) findMembers(ctx context.Context, orgID string, page gatehouse.Page) (*listing[*gatehouse.Member], error) {
	const from = `members WHERE organization_id = ?`
	return findKeptCountPage(ctx, tx, "members", orgID, memberColumns, from, from, `created_at, id`, true, []any{orgID}, page, scanMember)
}

// FindMembersByRef returns the members whose id, or email whatever its
// case, is among refs: one walk of the primary key and one of
// members_email per ref.
func (s *Store) FindMembersByRef(ctx context.Context, orgID string, refs []string) (_ []*gatehouse.Member, err error) {
	defer wrap(&err, "FindMembersByRef")
	if len(refs) > gatehouse.MaxBulkIDs {
		return nil, gatehouse.FieldError("members", "must name at most %d members (got %d)", gatehouse.MaxBulkIDs, len(refs))
	}
	// A ref that no text column can hold names nobody.
	refs = slices.DeleteFunc(slices.Clone(refs), func(r string) bool { return !gatehouse.IsPlainText(r) })
	if len(refs) == 0 {
		return []*gatehouse.Member{}, nil
	}
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.Member, error) {
		// Both engines' lower() folds ASCII letters; PostgreSQL's folds
		// others too: each email is looked for in both foldings.
		var lowered []string
		for _, r := range refs {
			lowered = append(lowered, gatehouse.FoldKeyName(r))
			if l := strings.ToLower(r); l != gatehouse.FoldKeyName(r) {
				lowered = append(lowered, l)
			}
		}
		ids, args := tx.in("id", refs, orgID)
		emails, args := tx.in("lower(email)", lowered, args...)
		rows, err := tx.Query(ctx, `SELECT `+memberColumns+` FROM members WHERE organization_id = ? AND (`+ids+` OR `+emails+`)
			ORDER BY created_at, id`, args...)
		return collect(rows, err, scanMember)
	})
}

// CreateMember adds a member to the organization.
func (s *Store) CreateMember(ctx context.Context, orgID string, c gatehouse.MemberCreate) (_ *gatehouse.Member, err error) {
	defer wrap(&err, "CreateMember")
	if err := c.Validate(); err != nil {
		return nil, err
	}
	id := c.ID
	if id == "" {
		id = gatehouse.NewUserID()
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Member, error) {
		m := &gatehouse.Member{ID: id, Email: c.Email, FirstName: c.FirstName, LastName: c.LastName, Role: c.Role, CreatedAt: tx.now}
		var taken string
		err := tx.QueryRow(ctx, `SELECT CASE WHEN id = ? THEN 'id' ELSE 'email' END FROM members
			WHERE organization_id = ? AND (id = ? OR lower(email) = lower(?)) LIMIT 1`, m.ID, orgID, m.ID, m.Email).Scan(&taken)
		switch {
		case err == nil:
			return nil, gatehouse.FieldError(taken, "a member with this %s already exists", taken)
		case !errors.Is(err, ErrNoRows):
			return nil, err
		}
		return m, tx.insertMember(ctx, orgID, m)
	})
}

// insertMember adds a member, without a password.
func (tx *Tx) insertMember(ctx context.Context, orgID string, m *gatehouse.Member) error {
	return tx.insertMemberWith(ctx, orgID, m, nil)
}

// insertMemberWith adds a member, without a password; details are the
// audit entry's.
func (tx *Tx) insertMemberWith(ctx context.Context, orgID string, m *gatehouse.Member, details map[string]any) error {
	if err := tx.insert(ctx, "members", memberInsertColumns,
		[]any{orgID, m.ID, m.Email, m.FirstName, m.LastName, m.Role, ms(m.CreatedAt)}); err != nil {
		return err
	}
	return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberCreate, ResourceType: gatehouse.ResourceMember,
		ResourceIDs: []string{m.ID}, Details: details})
}

// DeleteMember removes a member from the organization.
func (s *Store) DeleteMember(ctx context.Context, orgID, userID string) (err error) {
	defer wrap(&err, "DeleteMember")
	return s.exec(ctx, func(tx *Tx) error { return tx.deleteMember(ctx, orgID, userID, nil) })
}

// deleteMember removes a member under the rule of removed members: not
// while they hold active keys or pending authorization codes (EINVALID).
// details are the audit entry's.
func (tx *Tx) deleteMember(ctx context.Context, orgID, userID string, details map[string]any) error {
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
	return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberDelete, ResourceType: gatehouse.ResourceMember,
		ResourceIDs: []string{userID}, Details: details})
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
		WHERE organization_id = ? AND management = FALSE AND disabled = FALSE
		AND (expires_at IS NULL OR expires_at > ?)` + inUsers
	codes := `SELECT creator_user_id FROM auth_codes
		WHERE organization_id = ? AND used_at IS NULL AND expires_at > ? AND failed_attempts < ?
		AND (creator_key_hash IS NULL OR creator_key_hash IN (SELECT hash FROM api_keys
			WHERE disabled = FALSE AND (expires_at IS NULL OR expires_at > ?)))` + inUsers
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
