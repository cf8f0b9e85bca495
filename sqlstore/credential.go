package sqlstore

import (
	"context"
	"errors"
	"strings"

	"gatehouse"
)

// AcceptInvitation uses a link: it creates the member if need be, sets
// their password hash and uses the link up, in one transaction.
func (s *Store) AcceptInvitation(ctx context.Context, token, passwordHash string) (_ *gatehouse.Member, err error) {
	defer wrap(&err, "AcceptInvitation")
	if _, _, _, err := gatehouse.ParsePasswordHash(passwordHash); err != nil {
		return nil, gatehouse.WrapError(err, gatehouse.EINVALID, "password hash: not an argon2id hash that Gatehouse made")
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Member, error) {
		v, err := tx.findInvitation(ctx, token)
		if err != nil {
			return nil, err
		}
		if settings, err := tx.signInSettings(ctx, v.OrganizationID); err != nil {
			return nil, err
		} else if !settings.PasswordSignIn {
			return nil, gatehouse.Errorf(gatehouse.EINVALID, "your organization signs in with single sign-on, not passwords: use its button on the sign-in page")
		}
		m, err := tx.invitedMember(ctx, v)
		if err != nil {
			return nil, err
		}
		ctx := gatehouse.WithActor(ctx, gatehouse.Actor{UserID: &m.ID}) // the member accepts
		if _, err := tx.Exec(ctx, `UPDATE members SET password_hash = ? WHERE organization_id = ? AND id = ?`,
			passwordHash, v.OrganizationID, m.ID); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE invitations SET used_at = ? WHERE id = ?`, ms(tx.now), v.ID); err != nil {
			return nil, err
		}
		if _, err := tx.revokeLinks(ctx, v.OrganizationID, m.Email, &m.ID); err != nil {
			return nil, err
		}
		m.HasPassword = true
		return m, tx.audit(ctx, v.OrganizationID, gatehouse.AuditRecord{Operation: gatehouse.OpInvitationAccept,
			ResourceType: gatehouse.ResourceInvitation, ResourceIDs: []string{v.ID}, Details: map[string]any{"user_id": m.ID}})
	})
}

// invitedMember returns the member a link is for: the member it names, or
// the member with its email, or a new member made with its role. ECONFLICT
// for a member who has a password (a link only sets a first or a reset
// password; a newer link of theirs replaced any other).
func (tx *Tx) invitedMember(ctx context.Context, v *gatehouse.Invitation) (*gatehouse.Member, error) {
	where, arg := `lower(email) = lower(?)`, v.Email
	if v.UserID != nil {
		where, arg = `id = ?`, *v.UserID
	}
	m, err := scanMember(tx.QueryRow(ctx, `SELECT `+memberColumns+` FROM members WHERE organization_id = ? AND `+where, v.OrganizationID, arg))
	switch {
	case err == nil && m.HasPassword:
		return nil, gatehouse.Errorf(gatehouse.ECONFLICT, "this member has a password already: sign in, or ask an admin to reset it")
	case err == nil:
		return m, nil
	case !errors.Is(err, ErrNoRows):
		return nil, err
	case v.UserID != nil:
		return nil, gatehouse.NotFound("member", *v.UserID) // removed: the cascade took the link too
	}
	m = &gatehouse.Member{ID: gatehouse.NewUserID(), Email: v.Email, Role: v.Role, CreatedAt: tx.now}
	return m, tx.insertMember(gatehouse.WithActor(ctx, gatehouse.Actor{UserID: &m.ID}), v.OrganizationID, m)
}

// FindCredentials returns the password hashes of an email's members, oldest
// organization first: of members who are not deactivated, in organizations
// that allow password sign-in.
func (s *Store) FindCredentials(ctx context.Context, email string) (_ []gatehouse.Credential, err error) {
	defer wrap(&err, "FindCredentials")
	return read(ctx, s, func(tx *Tx) ([]gatehouse.Credential, error) {
		rows, err := tx.Query(ctx, `SELECT m.organization_id, m.id, m.password_hash FROM members m
			JOIN organizations o ON o.id = m.organization_id
			WHERE lower(m.email) = lower(?) AND m.password_hash IS NOT NULL AND m.deactivated_at IS NULL
			AND NOT EXISTS (SELECT 1 FROM sign_in_settings ss WHERE ss.organization_id = m.organization_id AND ss.password_sign_in = FALSE)
			ORDER BY o.created_at, o.id`, email)
		return collect(rows, err, func(s Scanner) (gatehouse.Credential, error) {
			var c gatehouse.Credential
			return c, s.Scan(&c.OrganizationID, &c.UserID, &c.PasswordHash)
		})
	})
}

// UpdateMemberRole changes a member's role, never leaving the organization
// without an admin.
func (s *Store) UpdateMemberRole(ctx context.Context, orgID, userID, role string) (_ *gatehouse.Member, err error) {
	defer wrap(&err, "UpdateMemberRole")
	if err := gatehouse.ValidateRole("role", role, false); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Member, error) {
		m, err := found("member", userID, scanMember, tx.QueryRow(ctx, `SELECT `+memberColumns+` FROM members
			WHERE organization_id = ? AND id = ?`, orgID, userID))
		if err != nil || m.Role == role {
			return m, err
		}
		if m.Role == gatehouse.RoleAdmin {
			var admins int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM members WHERE organization_id = ? AND role = ?`,
				orgID, gatehouse.RoleAdmin).Scan(&admins); err != nil {
				return nil, err
			}
			if admins <= 1 {
				return nil, gatehouse.FieldError("role", "%s is the organization's last admin: make another member an admin first", m.Email)
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE members SET role = ? WHERE organization_id = ? AND id = ?`, role, orgID, userID); err != nil {
			return nil, err
		}
		m.Role = role
		return m, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberUpdate, ResourceType: gatehouse.ResourceMember,
			ResourceIDs: []string{userID}, Details: map[string]any{"fields": []string{"role"}, "role": role}})
	})
}

// RecordSignIn writes a refused sign-in into the audit log of each
// organization where the email is a member with a password, in one
// transaction.
func (s *Store) RecordSignIn(ctx context.Context, ev gatehouse.SignInEvent) (err error) {
	defer wrap(&err, "RecordSignIn")
	if err := ev.Validate(); err != nil {
		return err
	}
	ctx = gatehouse.WithActor(ctx, gatehouse.Actor{System: gatehouse.ActorVisitor})
	return s.exec(ctx, func(tx *Tx) error {
		rows, err := tx.Query(ctx, `SELECT organization_id, id FROM members
			WHERE lower(email) = lower(?) AND password_hash IS NOT NULL`, strings.TrimSpace(ev.Email))
		members, err := collect(rows, err, func(s Scanner) ([2]string, error) {
			var m [2]string
			return m, s.Scan(&m[0], &m[1])
		})
		if err != nil {
			return err
		}
		for _, m := range members {
			for _, rec := range ev.AuditRecords(m[1]) {
				if err := tx.audit(ctx, m[0], rec); err != nil {
					return err
				}
			}
		}
		return nil
	})
}
