package sqlstore

import (
	"context"
	"errors"
	"slices"

	"gatehouse"
)

// SCIM provisioning: the organization's token (only its hash), and its
// members as SCIM users. Every write is audited with the details "via":
// "scim", its actor the token (ctx carries it, see the scim package).

const viaSCIM = "scim"

// CreateSCIMToken makes the organization's SCIM token, replacing any.
func (s *Store) CreateSCIMToken(ctx context.Context, orgID string) (_ *gatehouse.SCIMToken, _ string, err error) {
	defer wrap(&err, "CreateSCIMToken")
	secret := gatehouse.NewSCIMTokenSecret()
	t, err := update(ctx, s, func(tx *Tx) (*gatehouse.SCIMToken, error) {
		if _, err := tx.organization(ctx, orgID); err != nil {
			return nil, err
		}
		t := &gatehouse.SCIMToken{OrganizationID: orgID, Hash: gatehouse.HashKey(secret), CreatedAt: tx.now}
		if _, err := tx.Exec(ctx, `DELETE FROM scim_tokens WHERE organization_id = ?`, orgID); err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "scim_tokens", `organization_id, hash, created_at`, []any{orgID, t.Hash, ms(t.CreatedAt)}); err != nil {
			return nil, err
		}
		return t, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSCIMTokenCreate, ResourceType: gatehouse.ResourceSCIMToken,
			ResourceIDs: []string{t.Hash}})
	})
	if err != nil {
		return nil, "", err
	}
	return t, secret, nil
}

func scanSCIMToken(s Scanner) (*gatehouse.SCIMToken, error) {
	var t gatehouse.SCIMToken
	return &t, s.Scan(&t.OrganizationID, &t.Hash, msTime(&t.CreatedAt), msTime(&t.LastUsedAt))
}

const scimTokenColumns = `organization_id, hash, created_at, last_used_at`

// FindSCIMToken returns the organization's token.
func (s *Store) FindSCIMToken(ctx context.Context, orgID string) (_ *gatehouse.SCIMToken, err error) {
	defer wrap(&err, "FindSCIMToken")
	return read(ctx, s, func(tx *Tx) (*gatehouse.SCIMToken, error) {
		return found("SCIM token", orgID, scanSCIMToken, tx.QueryRow(ctx, `SELECT `+scimTokenColumns+` FROM scim_tokens WHERE organization_id = ?`, orgID))
	})
}

// DeleteSCIMToken removes the organization's token.
func (s *Store) DeleteSCIMToken(ctx context.Context, orgID string) (err error) {
	defer wrap(&err, "DeleteSCIMToken")
	return s.exec(ctx, func(tx *Tx) error {
		var hash string
		err := tx.QueryRow(ctx, `SELECT hash FROM scim_tokens WHERE organization_id = ?`, orgID).Scan(&hash)
		if errors.Is(err, ErrNoRows) {
			return gatehouse.NotFound("SCIM token", orgID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM scim_tokens WHERE organization_id = ?`, orgID); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSCIMTokenDelete, ResourceType: gatehouse.ResourceSCIMToken,
			ResourceIDs: []string{hash}})
	})
}

// AuthenticateSCIM returns the token of a bearer token, recording its use
// at most once a SCIMTouchInterval.
func (s *Store) AuthenticateSCIM(ctx context.Context, token string) (_ *gatehouse.SCIMToken, err error) {
	defer wrap(&err, "AuthenticateSCIM")
	hash := gatehouse.HashKey(token)
	t, err := read(ctx, s, func(tx *Tx) (*gatehouse.SCIMToken, error) {
		return found("SCIM token", "", scanSCIMToken, tx.QueryRow(ctx, `SELECT `+scimTokenColumns+` FROM scim_tokens WHERE hash = ?`, hash))
	})
	if err != nil {
		return nil, err
	}
	if now := s.Now(); t.LastUsedAt == nil || now.Sub(*t.LastUsedAt) >= gatehouse.SCIMTouchInterval {
		if err := s.exec(ctx, func(tx *Tx) error {
			_, err := tx.Exec(ctx, `UPDATE scim_tokens SET last_used_at = ? WHERE hash = ?`, ms(tx.now), hash)
			return err
		}); err != nil {
			return nil, err
		}
	}
	return t, nil
}

// scimUserColumns read a member as a SCIM user (members m, scim_users su),
// in scanSCIMUser order.
const scimUserColumns = `m.id, m.email, m.first_name, m.last_name, m.role, m.created_at, m.password_hash IS NOT NULL,
	m.deactivated_at IS NOT NULL, COALESCE(su.user_name, m.email), su.external_id, su.display_name, COALESCE(su.updated_at, m.created_at)`

const scimUserFrom = `members m LEFT JOIN scim_users su ON su.organization_id = m.organization_id AND su.user_id = m.id
	WHERE m.organization_id = ?`

func scanSCIMUser(s Scanner) (*gatehouse.SCIMUser, error) {
	var u gatehouse.SCIMUser
	err := s.Scan(&u.ID, &u.Email, &u.FirstName, &u.LastName, &u.Role, msTime(&u.CreatedAt), &u.HasPassword,
		&u.Deactivated, &u.UserName, &u.ExternalID, &u.DisplayName, msTime(&u.UpdatedAt))
	u.Groups = []gatehouse.SCIMGroupRef{}
	return &u, scanErr("SCIM user", u.ID, err)
}

// userGroups fills in the SCIM groups of users.
func (tx *Tx) userGroups(ctx context.Context, orgID string, users []*gatehouse.SCIMUser) error {
	if len(users) == 0 {
		return nil
	}
	byID := map[string]*gatehouse.SCIMUser{}
	ids := make([]string, len(users))
	for i, u := range users {
		byID[u.ID], ids[i] = u, u.ID
	}
	in, args := tx.in("sm.user_id", ids, orgID)
	rows, err := tx.Query(ctx, `SELECT sm.user_id, g.id, g.display_name FROM scim_group_members sm JOIN scim_groups g ON g.id = sm.group_id
		WHERE sm.organization_id = ? AND `+in+` ORDER BY g.display_name, g.id`, args...)
	refs, err := collect(rows, err, func(s Scanner) ([3]string, error) {
		var r [3]string
		return r, s.Scan(&r[0], &r[1], &r[2])
	})
	for _, r := range refs {
		u := byID[r[0]]
		u.Groups = append(u.Groups, gatehouse.SCIMGroupRef{ID: r[1], DisplayName: r[2]})
	}
	return err
}

// FindSCIMUsers lists the organization's members as SCIM users.
func (s *Store) FindSCIMUsers(ctx context.Context, orgID string, f gatehouse.SCIMUserFilter) (_ []*gatehouse.SCIMUser, _ int, err error) {
	defer wrap(&err, "FindSCIMUsers")
	for _, v := range []string{f.ID, f.UserName, f.ExternalID} {
		if !gatehouse.IsPlainText(v) {
			return []*gatehouse.SCIMUser{}, 0, nil // no column holds it
		}
	}
	from, args := scimUserFrom, []any{orgID}
	// Unfiltered, the users are counted and paged without their SCIM
	// attributes: a member has one row of them at most (LEFT JOIN).
	counted := `members m WHERE m.organization_id = ?`
	if f.ID != "" || f.UserName != "" || f.ExternalID != "" {
		counted = ""
	}
	if f.ID != "" {
		from, args = from+` AND m.id = ?`, append(args, f.ID)
	}
	if f.UserName != "" {
		from, args = from+` AND (lower(su.user_name) = lower(?) OR (su.user_id IS NULL AND lower(m.email) = lower(?)))`, append(args, f.UserName, f.UserName)
	}
	if f.ExternalID != "" {
		from, args = from+` AND su.external_id = ?`, append(args, f.ExternalID)
	}
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.SCIMUser], error) {
		if counted == "" {
			counted = from
		}
		list := []string{}
		if counted != from { // unfiltered: the members' count is kept (migration 0031)
			list = []string{"members", orgID}
		}
		l, err := countAndPage(ctx, tx, scimUserColumns, from, counted, `m.created_at, m.id`, true, args, scimPage(f.StartIndex, f.Count), scanSCIMUser, list...)
		if err != nil {
			return nil, err
		}
		return l, tx.userGroups(ctx, orgID, l.items)
	}))
}

// scimPage is the window of a SCIM list: from startIndex (1-based), count
// items (0: none, only the total).
func scimPage(startIndex, count int) gatehouse.Page {
	return gatehouse.Page{Offset: max(startIndex, 1) - 1, Limit: max(count, 0)}
}

// FindSCIMUser returns a member as a SCIM user.
func (s *Store) FindSCIMUser(ctx context.Context, orgID, id string) (_ *gatehouse.SCIMUser, err error) {
	defer wrap(&err, "FindSCIMUser")
	return view(ctx, s, func(tx *Tx) (*gatehouse.SCIMUser, error) { return tx.findSCIMUser(ctx, orgID, id) })
}

func (tx *Tx) findSCIMUser(ctx context.Context, orgID, id string) (*gatehouse.SCIMUser, error) {
	if !gatehouse.IsPlainText(id) {
		return nil, gatehouse.NotFound("user", id)
	}
	u, err := found("user", id, scanSCIMUser, tx.QueryRow(ctx, `SELECT `+scimUserColumns+` FROM `+scimUserFrom+` AND m.id = ?`, orgID, id))
	if err != nil {
		return nil, err
	}
	return u, tx.userGroups(ctx, orgID, []*gatehouse.SCIMUser{u})
}

// CreateSCIMUser makes a member of a SCIM user.
func (s *Store) CreateSCIMUser(ctx context.Context, orgID string, w gatehouse.SCIMUserWrite) (_ *gatehouse.SCIMUser, err error) {
	defer wrap(&err, "CreateSCIMUser")
	if err := w.Validate(); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.SCIMUser, error) {
		m := &gatehouse.Member{ID: gatehouse.NewUserID(), Email: w.Email, FirstName: w.GivenName, LastName: w.FamilyName,
			Role: gatehouse.RoleMember, CreatedAt: tx.now}
		if err := tx.checkSCIMUnique(ctx, orgID, m.ID, w); err != nil {
			return nil, err
		}
		if err := tx.insertMemberWith(ctx, orgID, m, map[string]any{"via": viaSCIM}); err != nil {
			return nil, err
		}
		if err := tx.insert(ctx, "scim_users", `organization_id, user_id, user_name, external_id, display_name, created_at, updated_at`,
			[]any{orgID, m.ID, w.UserName, w.ExternalID, w.DisplayName, ms(tx.now), ms(tx.now)}); err != nil {
			return nil, err
		}
		if !w.Active {
			if err := tx.deactivate(ctx, orgID, m.ID); err != nil {
				return nil, err
			}
		}
		if err := tx.applyGroupAccess(ctx, orgID, m.ID); err != nil {
			return nil, err
		}
		return tx.findSCIMUser(ctx, orgID, m.ID)
	})
}

// checkSCIMUnique refuses a userName or an email that another member has
// (ECONFLICT, as SCIM's uniqueness error).
func (tx *Tx) checkSCIMUnique(ctx context.Context, orgID, userID string, w gatehouse.SCIMUserWrite) error {
	var other string
	err := tx.QueryRow(ctx, `SELECT m.id FROM `+scimUserFrom+` AND m.id <> ?
		AND (lower(su.user_name) = lower(?) OR (su.user_id IS NULL AND lower(m.email) = lower(?))) LIMIT 1`,
		orgID, userID, w.UserName, w.UserName).Scan(&other)
	switch {
	case err == nil:
		return gatehouse.Errorf(gatehouse.ECONFLICT, "userName: another user has it (%s)", other).WithMetadata("id", other)
	case !errors.Is(err, ErrNoRows):
		return err
	}
	err = tx.QueryRow(ctx, `SELECT id FROM members WHERE organization_id = ? AND id <> ? AND lower(email) = lower(?)`,
		orgID, userID, w.Email).Scan(&other)
	switch {
	case err == nil:
		return gatehouse.Errorf(gatehouse.ECONFLICT, "emails: another user has this email address (%s)", other).WithMetadata("id", other)
	case !errors.Is(err, ErrNoRows):
		return err
	}
	return nil
}

// scimUserWrite returns the write that would leave u as it is.
func scimUserWrite(u *gatehouse.SCIMUser) gatehouse.SCIMUserWrite {
	return gatehouse.SCIMUserWrite{UserName: u.UserName, ExternalID: u.ExternalID, DisplayName: u.DisplayName,
		GivenName: u.FirstName, FamilyName: u.LastName, Email: u.Email, Active: !u.Deactivated}
}

// UpdateSCIMUser changes a member as change says.
func (s *Store) UpdateSCIMUser(ctx context.Context, orgID, id string, change func(*gatehouse.SCIMUserWrite) error) (_ *gatehouse.SCIMUser, err error) {
	defer wrap(&err, "UpdateSCIMUser")
	return update(ctx, s, func(tx *Tx) (*gatehouse.SCIMUser, error) {
		u, err := tx.findSCIMUser(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		before := scimUserWrite(u)
		w := before
		if err := change(&w); err != nil {
			return nil, err
		}
		if err := w.Validate(); err != nil {
			return nil, err
		}
		if err := tx.checkSCIMUnique(ctx, orgID, id, w); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE members SET email = ?, first_name = ?, last_name = ? WHERE organization_id = ? AND id = ?`,
			w.Email, w.GivenName, w.FamilyName, orgID, id); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO scim_users (organization_id, user_id, user_name, external_id, display_name, created_at, updated_at)
			VALUES (?, ?, ?, ?, ?, ?, ?) ON CONFLICT (organization_id, user_id) DO UPDATE SET user_name = excluded.user_name,
			external_id = excluded.external_id, display_name = excluded.display_name, updated_at = excluded.updated_at`,
			orgID, id, w.UserName, w.ExternalID, w.DisplayName, ms(tx.now), ms(tx.now)); err != nil {
			return nil, err
		}
		if err := tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberUpdate, ResourceType: gatehouse.ResourceMember,
			ResourceIDs: []string{id}, Details: map[string]any{"fields": changedSCIMFields(before, w), "via": viaSCIM}}); err != nil {
			return nil, err
		}
		switch {
		case before.Active && !w.Active:
			err = tx.deactivate(ctx, orgID, id)
		case !before.Active && w.Active:
			err = tx.reactivate(ctx, orgID, id)
		}
		if err != nil {
			return nil, err
		}
		if err := tx.applyGroupAccess(ctx, orgID, id); err != nil {
			return nil, err
		}
		return tx.findSCIMUser(ctx, orgID, id)
	})
}

// changedSCIMFields names the SCIM attributes a write changed.
func changedSCIMFields(a, b gatehouse.SCIMUserWrite) []string {
	out := []string{}
	same := func(x, y *string) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	for _, f := range []struct {
		name string
		same bool
	}{
		{"userName", a.UserName == b.UserName}, {"externalId", same(a.ExternalID, b.ExternalID)},
		{"displayName", same(a.DisplayName, b.DisplayName)}, {"name.givenName", same(a.GivenName, b.GivenName)},
		{"name.familyName", same(a.FamilyName, b.FamilyName)}, {"emails", a.Email == b.Email}, {"active", a.Active == b.Active},
	} {
		if !f.same {
			out = append(out, f.name)
		}
	}
	return out
}

// deactivate marks a member deactivated, ends their sessions and takes
// what the rules of removed members take, in every workspace.
func (tx *Tx) deactivate(ctx context.Context, orgID, userID string) error {
	if _, err := tx.Exec(ctx, `UPDATE members SET deactivated_at = ? WHERE organization_id = ? AND id = ?`, ms(tx.now), orgID, userID); err != nil {
		return err
	}
	sessions, err := tx.deleteSessions(ctx, orgID, userID)
	if err != nil {
		return err
	}
	if err := tx.takeAccess(ctx, orgID, "", userID, viaSCIM); err != nil {
		return err
	}
	return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberDeactivate, ResourceType: gatehouse.ResourceMember,
		ResourceIDs: []string{userID}, Details: map[string]any{"sessions": sessions, "via": viaSCIM}})
}

// reactivate lets a deactivated member sign in again; what deactivation
// disabled stays disabled.
func (tx *Tx) reactivate(ctx context.Context, orgID, userID string) error {
	if _, err := tx.Exec(ctx, `UPDATE members SET deactivated_at = NULL WHERE organization_id = ? AND id = ?`, orgID, userID); err != nil {
		return err
	}
	return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberReactivate, ResourceType: gatehouse.ResourceMember,
		ResourceIDs: []string{userID}, Details: map[string]any{"via": viaSCIM}})
}

// DeleteSCIMUser removes a member, after taking what the rules of removed
// members take.
func (s *Store) DeleteSCIMUser(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteSCIMUser")
	return s.exec(ctx, func(tx *Tx) error {
		if !gatehouse.IsPlainText(id) {
			return gatehouse.NotFound("user", id)
		}
		if err := tx.memberExists(ctx, orgID, id); gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return gatehouse.NotFound("user", id)
		} else if err != nil {
			return err
		}
		if err := tx.takeAccess(ctx, orgID, "", id, viaSCIM); err != nil {
			return err
		}
		return tx.deleteMember(ctx, orgID, id, map[string]any{"via": viaSCIM})
	})
}

// dropClaimGroups forgets that the last sign-ins of users named a group
// (by any of its names): the provider said they are not in it.
func (tx *Tx) dropClaimGroups(ctx context.Context, orgID string, userIDs, names []string) error {
	for chunk := range slices.Chunk(userIDs, 500) {
		users, args := tx.in("user_id", chunk, orgID)
		groups, args := tx.in("group_name", names, args...)
		if _, err := tx.Exec(ctx, `DELETE FROM member_claim_groups WHERE organization_id = ? AND `+users+` AND `+groups, args...); err != nil {
			return err
		}
	}
	return nil
}
