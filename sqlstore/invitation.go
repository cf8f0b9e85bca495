package sqlstore

import (
	"context"
	"errors"

	"gatehouse"
)

// Invitation and reset links, passwords and roles of members. A link is
// usable while it is not used nor expired; a new link for an email or a
// member replaces the earlier ones, so that only the latest one an admin
// handed out works.

// invitationColumns are the columns of invitations, in scanInvitation order.
const invitationColumns = `id, organization_id, email, role, user_id, created_by, created_at, expires_at`

func scanInvitation(s Scanner) (*gatehouse.Invitation, error) {
	var v gatehouse.Invitation
	return &v, s.Scan(&v.ID, &v.OrganizationID, &v.Email, &v.Role, &v.UserID, &v.CreatedBy, msTime(&v.CreatedAt), msTime(&v.ExpiresAt))
}

// usable is the condition of the links that may be used, with tx.now as
// its argument.
const usable = `used_at IS NULL AND expires_at > ?`

// account is what a link needs to know of a member.
type account struct {
	ID, Email, Role string
	HasPassword     bool
}

// findAccount returns the member with the id, or with the email (whatever
// its case) when id is ""; ENOTFOUND.
func (tx *Tx) findAccount(ctx context.Context, orgID, id, email string) (*account, error) {
	where, arg := `id = ?`, id
	if id == "" {
		where, arg = `lower(email) = lower(?)`, email
	}
	var a account
	err := tx.QueryRow(ctx, `SELECT id, email, role, password_hash IS NOT NULL FROM members WHERE organization_id = ? AND `+where,
		orgID, arg).Scan(&a.ID, &a.Email, &a.Role, &a.HasPassword)
	if errors.Is(err, ErrNoRows) {
		return nil, gatehouse.NotFound("member", id)
	}
	return &a, err
}

// CreateInvitation creates an invitation link for an email.
func (s *Store) CreateInvitation(ctx context.Context, orgID string, c gatehouse.InvitationCreate) (_ *gatehouse.Invitation, _ string, err error) {
	defer wrap(&err, "CreateInvitation")
	if err := c.Validate(); err != nil {
		return nil, "", err
	}
	token := gatehouse.NewAccountToken()
	v, err := update(ctx, s, func(tx *Tx) (*gatehouse.Invitation, error) {
		if _, err := tx.organization(ctx, orgID); err != nil {
			return nil, err
		}
		v := tx.newInvitation(ctx, orgID, token, c.Email, c.Role, nil)
		a, err := tx.findAccount(ctx, orgID, "", c.Email)
		switch {
		case err == nil && a.HasPassword:
			return nil, gatehouse.FieldError("email", "%s is a member who has a password already: reset their password instead", a.Email)
		case err == nil && c.Role != "" && c.Role != a.Role:
			return nil, gatehouse.FieldError("role", "%s is a member whose role is %s: change their role instead", a.Email, a.Role)
		case err == nil:
			v.Email, v.Role, v.UserID = a.Email, a.Role, &a.ID
		case gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND:
			return nil, err
		case v.Role == "":
			v.Role = gatehouse.RoleMember
		}
		replaced, err := tx.insertInvitation(ctx, v)
		if err != nil {
			return nil, err
		}
		details := map[string]any{"role": v.Role, "replaced": replaced}
		if v.UserID != nil {
			details["user_id"] = *v.UserID
		}
		return v, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpInvitationCreate, ResourceType: gatehouse.ResourceInvitation,
			ResourceIDs: []string{v.ID}, Details: details})
	})
	if err != nil {
		return nil, "", err
	}
	return v, token, nil
}

// newInvitation returns a link of the token made now by the actor of ctx.
func (tx *Tx) newInvitation(ctx context.Context, orgID, token, email, role string, userID *string) *gatehouse.Invitation {
	v := &gatehouse.Invitation{ID: gatehouse.AccountTokenID(token), OrganizationID: orgID, Email: email, Role: role,
		UserID: userID, CreatedAt: tx.now, ExpiresAt: tx.now.Add(gatehouse.InvitationTTL)}
	if a, ok := gatehouse.ActorFrom(ctx); ok {
		v.CreatedBy = a.UserID
	}
	return v
}

// insertInvitation stores a link after removing the organization's links
// that can no longer be used, and those of the same email or member that
// still could (it replaces them): it returns how many it replaced.
func (tx *Tx) insertInvitation(ctx context.Context, v *gatehouse.Invitation) (int64, error) {
	if _, err := tx.Exec(ctx, `DELETE FROM invitations WHERE organization_id = ? AND NOT (`+usable+`)`,
		v.OrganizationID, ms(tx.now)); err != nil {
		return 0, err
	}
	replaced, err := tx.revokeLinks(ctx, v.OrganizationID, v.Email, v.UserID)
	if err != nil {
		return 0, err
	}
	return replaced, tx.insert(ctx, "invitations", invitationColumns, []any{v.ID, v.OrganizationID, v.Email, v.Role,
		v.UserID, v.CreatedBy, ms(v.CreatedAt), ms(v.ExpiresAt)})
}

// revokeLinks removes the unused links of an email, or of a member.
func (tx *Tx) revokeLinks(ctx context.Context, orgID, email string, userID *string) (int64, error) {
	return tx.Exec(ctx, `DELETE FROM invitations WHERE organization_id = ? AND used_at IS NULL
		AND (lower(email) = lower(?) OR user_id = ?)`, orgID, email, userID)
}

// ResetPassword removes a member's password, ends their sessions and makes
// a link that sets a new one.
func (s *Store) ResetPassword(ctx context.Context, orgID, userID string) (_ *gatehouse.Invitation, _ string, err error) {
	defer wrap(&err, "ResetPassword")
	token := gatehouse.NewAccountToken()
	v, err := update(ctx, s, func(tx *Tx) (*gatehouse.Invitation, error) {
		a, err := tx.findAccount(ctx, orgID, userID, "")
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE members SET password_hash = NULL WHERE organization_id = ? AND id = ?`, orgID, a.ID); err != nil {
			return nil, err
		}
		ended, err := tx.deleteSessions(ctx, orgID, a.ID)
		if err != nil {
			return nil, err
		}
		v := tx.newInvitation(ctx, orgID, token, a.Email, a.Role, &a.ID)
		if _, err := tx.insertInvitation(ctx, v); err != nil {
			return nil, err
		}
		return v, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpMemberPasswordReset, ResourceType: gatehouse.ResourceMember,
			ResourceIDs: []string{a.ID}, Details: map[string]any{"invitation_id": v.ID, "sessions": ended}})
	})
	if err != nil {
		return nil, "", err
	}
	return v, token, nil
}

// FindInvitations lists the organization's usable links, newest first.
//
// A link is usable while it is unused and for gatehouse.InvitationTTL
// after it was made (its expires_at is its created_at and the TTL): the
// usable links are the newest of the unused ones, whose list has blocks
// (migration 0054), and the expired ones its oldest (the next link made
// deletes them). So the usable links are counted as the unused ones less
// those made before the TTL (rowsBefore, by the blocks), and a page of
// them is the same page of the unused links, never past the usable ones.
func (s *Store) FindInvitations(ctx context.Context, orgID string, page gatehouse.Page) (_ []*gatehouse.Invitation, _ int, err error) {
	defer wrap(&err, "FindInvitations")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Invitation], error) {
		const unused = `invitations WHERE organization_id = ? AND used_at IS NULL`
		args := []any{orgID}
		var total int
		count, countArgs := keptCountQuery("invitations", orgID)
		if err := tx.QueryRow(ctx, count, countArgs...).Scan(&total); err != nil {
			return nil, err
		}
		expired, err := tx.rowsBefore(ctx, "invitations", orgID, total, tx.now.Add(-gatehouse.InvitationTTL).UnixMilli()+1, unused, "created_at", args)
		if err != nil {
			return nil, err
		}
		usable := total - expired
		p := gatehouse.Page{Offset: max(page.Offset, 0), Limit: page.Limit}
		if p.Limit = min(p.Limit, usable-p.Offset); p.Limit <= 0 {
			return &listing[*gatehouse.Invitation]{[]*gatehouse.Invitation{}, usable}, nil
		}
		l, err := pageOfTotal(ctx, tx, total, invitationColumns, unused, unused, `created_at DESC, id DESC`, false, args, p, scanInvitation,
			"invitations", orgID)
		if err != nil {
			return nil, err
		}
		l.total = usable
		return l, nil
	}))
}

// FindInvitation returns the usable link of a token.
func (s *Store) FindInvitation(ctx context.Context, token string) (_ *gatehouse.Invitation, err error) {
	defer wrap(&err, "FindInvitation")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Invitation, error) { return tx.findInvitation(ctx, token) })
}

func (tx *Tx) findInvitation(ctx context.Context, token string) (*gatehouse.Invitation, error) {
	v, err := scanInvitation(tx.QueryRow(ctx, `SELECT `+invitationColumns+` FROM invitations WHERE id = ? AND `+usable,
		gatehouse.AccountTokenID(token), ms(tx.now)))
	if errors.Is(err, ErrNoRows) {
		return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "this link is unknown, used or expired: ask an admin for a new one")
	}
	return v, err
}

// DeleteInvitation revokes a usable link.
func (s *Store) DeleteInvitation(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteInvitation")
	return s.exec(ctx, func(tx *Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM invitations WHERE id = ? AND organization_id = ? AND `+usable, id, orgID, ms(tx.now))
		if err != nil {
			return err
		}
		if n == 0 {
			return gatehouse.NotFound("invitation", id)
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpInvitationDelete, ResourceType: gatehouse.ResourceInvitation,
			ResourceIDs: []string{id}})
	})
}
