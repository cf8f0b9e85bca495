package sqlstore

import (
	"context"
	"errors"
	"strings"

	"gatehouse"
)

// SignInWithSSO opens a session for what a provider verified, in one
// transaction: the member is found (or linked, or made), their groups
// recorded and the mappings applied, the session opened and audited.
func (s *Store) SignInWithSSO(ctx context.Context, in gatehouse.SSOSignIn) (_ *gatehouse.Session, _ string, err error) {
	defer wrap(&err, "SignInWithSSO")
	if err := in.Validate(); err != nil {
		return nil, "", err
	}
	token := gatehouse.NewAccountToken()
	v, err := update(ctx, s, func(tx *Tx) (*gatehouse.Session, error) {
		var orgID string
		err := tx.QueryRow(ctx, `SELECT organization_id FROM sso_providers WHERE id = ? AND enabled = TRUE`, in.ProviderID).Scan(&orgID)
		if errors.Is(err, ErrNoRows) {
			return nil, gatehouse.NotFound("sso provider", in.ProviderID)
		}
		if err != nil {
			return nil, err
		}
		userID, how, err := tx.ssoMember(ctx, orgID, in)
		if err != nil {
			return nil, err
		}
		ctx := actorOr(ctx, gatehouse.Actor{UserID: &userID}) // what the sign-in changes, the member does
		if in.GroupsGiven {
			if err := tx.setClaimGroups(ctx, orgID, userID, in.Groups); err != nil {
				return nil, err
			}
			if err := tx.applyGroupAccess(ctx, orgID, userID); err != nil {
				return nil, err
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE sso_identities SET last_sign_in_at = ? WHERE provider_id = ? AND subject = ?`,
			ms(tx.now), in.ProviderID, in.Subject); err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `UPDATE sso_providers SET last_sign_in_at = ? WHERE id = ?`, ms(tx.now), in.ProviderID); err != nil {
			return nil, err
		}
		c := gatehouse.SessionCreate{OrganizationID: orgID, UserID: &userID}
		if err := c.Validate(); err != nil {
			return nil, err
		}
		return tx.createSession(ctx, c, token, map[string]any{"method": "oidc", "provider_id": in.ProviderID, "member": how})
	})
	if err != nil {
		return nil, "", err
	}
	return v, token, nil
}

// How a sign-in found its member, for the audit log.
const (
	ssoLinked   = "linked"   // the provider's subject was linked before
	ssoMatched  = "matched"  // linked now, by the member's verified email
	ssoInvited  = "invited"  // made now from a pending invitation of the email
	ssoProvided = "provided" // made now: the provider may make members of the email's domain
)

// ssoMember returns the member a provider's sign-in is for, and how it was
// found: by the subject's link; else, for a verified email only, the
// member with that email, the person a pending invitation names, or a new
// member of an allowed domain, linking the subject to them. A deactivated
// member is refused.
func (tx *Tx) ssoMember(ctx context.Context, orgID string, in gatehouse.SSOSignIn) (string, string, error) {
	var userID string
	err := tx.QueryRow(ctx, `SELECT user_id FROM sso_identities WHERE provider_id = ? AND subject = ?`, in.ProviderID, in.Subject).Scan(&userID)
	how := ssoLinked
	switch {
	case errors.Is(err, ErrNoRows):
		if userID, how, err = tx.ssoNewLink(ctx, orgID, in); err != nil {
			return "", "", err
		}
	case err != nil:
		return "", "", err
	}
	var deactivated bool
	if err := tx.QueryRow(ctx, `SELECT deactivated_at IS NOT NULL FROM members WHERE organization_id = ? AND id = ?`,
		orgID, userID).Scan(&deactivated); err != nil {
		return "", "", err
	}
	if deactivated {
		return "", "", gatehouse.ErrMemberDeactivated()
	}
	return userID, how, nil
}

// ssoNewLink finds or makes the member of a first sign-in by its verified
// email, and links the subject to them.
func (tx *Tx) ssoNewLink(ctx context.Context, orgID string, in gatehouse.SSOSignIn) (string, string, error) {
	if in.Email == "" {
		return "", "", gatehouse.Errorf(gatehouse.EFORBIDDEN, "the identity provider gave no email address (check the provider's email claim and scopes)")
	}
	if !in.EmailVerified {
		return "", "", gatehouse.ErrSSOUnverified()
	}
	email, err := gatehouse.ValidateEmail("email", in.Email)
	if err != nil {
		return "", "", gatehouse.Errorf(gatehouse.EFORBIDDEN, "the identity provider's email is not a plain email address")
	}
	var userID string
	how := ssoMatched
	err = tx.QueryRow(ctx, `SELECT id FROM members WHERE organization_id = ? AND lower(email) = lower(?)`, orgID, email).Scan(&userID)
	if errors.Is(err, ErrNoRows) {
		userID, how, err = tx.ssoNewMember(ctx, orgID, email, in)
	}
	if err != nil {
		return "", "", err
	}
	return userID, how, tx.insert(ctx, "sso_identities", `provider_id, subject, organization_id, user_id, created_at, last_sign_in_at`,
		[]any{in.ProviderID, in.Subject, orgID, userID, ms(tx.now), ms(tx.now)})
}

// ssoNewMember makes the member of a verified email that no member has:
// with the role of a pending invitation of the email (which it uses up),
// else, when the provider allows the email's domain, as a member.
func (tx *Tx) ssoNewMember(ctx context.Context, orgID, email string, in gatehouse.SSOSignIn) (string, string, error) {
	m := &gatehouse.Member{ID: gatehouse.NewUserID(), Email: email, Role: gatehouse.RoleMember, CreatedAt: tx.now}
	if name := strings.TrimSpace(in.Name); name != "" {
		m.FirstName = &name
	}
	ctx = actorOr(ctx, gatehouse.Actor{UserID: &m.ID})
	var invitation string
	err := tx.QueryRow(ctx, `SELECT id, role, email FROM invitations WHERE organization_id = ? AND lower(email) = lower(?)
		AND user_id IS NULL AND used_at IS NULL AND expires_at > ? ORDER BY created_at DESC, id LIMIT 1`,
		orgID, email, ms(tx.now)).Scan(&invitation, &m.Role, &m.Email)
	switch {
	case errors.Is(err, ErrNoRows):
		p, err := tx.ssoProviderDomains(ctx, in.ProviderID)
		if err != nil {
			return "", "", err
		}
		if !p.AllowsEmail(email) {
			return "", "", gatehouse.ErrSSOUnknownPerson()
		}
		return m.ID, ssoProvided, tx.insertMemberWith(ctx, orgID, m, map[string]any{"via": "oidc", "provider_id": in.ProviderID})
	case err != nil:
		return "", "", err
	}
	if err := tx.insertMemberWith(ctx, orgID, m, map[string]any{"via": "oidc", "provider_id": in.ProviderID}); err != nil {
		return "", "", err
	}
	if _, err := tx.Exec(ctx, `UPDATE invitations SET used_at = ? WHERE id = ?`, ms(tx.now), invitation); err != nil {
		return "", "", err
	}
	if _, err := tx.revokeLinks(ctx, orgID, email, &m.ID); err != nil {
		return "", "", err
	}
	return m.ID, ssoInvited, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpInvitationAccept,
		ResourceType: gatehouse.ResourceInvitation, ResourceIDs: []string{invitation}, Details: map[string]any{"user_id": m.ID, "via": "oidc"}})
}

// ssoProviderDomains reads the allowed domains of a provider.
func (tx *Tx) ssoProviderDomains(ctx context.Context, id string) (*gatehouse.SSOProvider, error) {
	p := &gatehouse.SSOProvider{ID: id}
	return p, tx.QueryRow(ctx, `SELECT allowed_domains FROM sso_providers WHERE id = ?`, id).Scan(jsonCol{&p.AllowedDomains})
}

// setClaimGroups replaces the groups a member's last sign-in named.
func (tx *Tx) setClaimGroups(ctx context.Context, orgID, userID string, groups []string) error {
	if _, err := tx.Exec(ctx, `DELETE FROM member_claim_groups WHERE organization_id = ? AND user_id = ?`, orgID, userID); err != nil {
		return err
	}
	if len(groups) == 0 {
		return nil
	}
	rows := make([][]any, len(groups))
	for i, g := range groups {
		rows[i] = []any{orgID, userID, g}
	}
	_, err := tx.insertRows(ctx, "member_claim_groups", `organization_id, user_id, group_name`, rows, "")
	return err
}
