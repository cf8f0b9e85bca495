package sqlstore

import (
	"context"
	"errors"

	"gatehouse"

	"github.com/google/uuid"
)

// Single sign-on: the providers of an organization (their client secrets
// sealed, bound to the row), how its members may sign in, and the sign-ins
// under way.

// ssoProviderColumns are the columns of sso_providers the management API
// reads, in scanSSOProvider order: every one but sealed_client_secret.
const ssoProviderColumns = `id, organization_id, name, issuer_url, client_id, client_secret_label, scopes, email_claim,
	email_verified_claim, name_claim, groups_claim, allowed_domains, enabled, last_sign_in_at, created_at, updated_at`

func scanSSOProvider(s Scanner) (*gatehouse.SSOProvider, error) {
	var p gatehouse.SSOProvider
	err := s.Scan(&p.ID, &p.OrganizationID, &p.Name, &p.IssuerURL, &p.ClientID, nullString(&p.ClientSecretLabel),
		jsonCol{&p.Scopes}, &p.EmailClaim, &p.EmailVerifiedClaim, &p.NameClaim, nullString(&p.GroupsClaim),
		jsonCol{&p.AllowedDomains}, &p.Enabled, msTime(&p.LastSignInAt), msTime(&p.CreatedAt), msTime(&p.UpdatedAt))
	return &p, scanErr("sso provider", p.ID, err)
}

func ssoProviderArgs(p *gatehouse.SSOProvider) []any {
	return []any{p.ID, p.OrganizationID, p.Name, p.IssuerURL, p.ClientID, nullIfEmpty(p.ClientSecretLabel),
		jsonCol{p.Scopes}, p.EmailClaim, p.EmailVerifiedClaim, p.NameClaim, nullIfEmpty(p.GroupsClaim),
		jsonCol{p.AllowedDomains}, p.Enabled, ms(p.LastSignInAt), ms(p.CreatedAt), ms(p.UpdatedAt)}
}

// sealClientSecret seals a provider's client secret, bound to its id.
func (tx *Tx) sealClientSecret(id, secret string) string {
	return tx.box.Seal([]byte(secret), []byte("sso:"+id))
}

// openClientSecret opens a sealed client secret. The error never holds it.
func openClientSecret(box *gatehouse.SecretBox, id, sealed string) (gatehouse.Secret, error) {
	plain, err := box.Open(sealed, []byte("sso:"+id))
	if err != nil {
		return "", gatehouse.WrapError(err, gatehouse.EUNAVAILABLE,
			"the client secret of this identity provider cannot be read: the server's secret key does not open it (has GATEHOUSE_SECRET_KEY changed?); send the secret again")
	}
	return gatehouse.Secret(plain), nil
}

func (tx *Tx) findSSOProvider(ctx context.Context, orgID, id string) (*gatehouse.SSOProvider, error) {
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("sso provider", id)
	}
	return found("sso provider", id, scanSSOProvider, tx.QueryRow(ctx, `SELECT `+ssoProviderColumns+` FROM sso_providers
		WHERE id = ? AND organization_id = ?`, id, orgID))
}

// FindSSOProviders lists an organization's providers.
func (s *Store) FindSSOProviders(ctx context.Context, orgID string, page gatehouse.Page) (_ []*gatehouse.SSOProvider, _ int, err error) {
	defer wrap(&err, "FindSSOProviders")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.SSOProvider], error) {
		const from = `sso_providers WHERE organization_id = ?`
		return findKeptCountPage(ctx, tx, "sso_providers", orgID, ssoProviderColumns, from, from, `created_at, id`,
			false, []any{orgID}, page, scanSSOProvider)
	}))
}

// FindSignInProviders lists the enabled providers of the oldest
// organization.
func (s *Store) FindSignInProviders(ctx context.Context) (_ []*gatehouse.SSOProvider, err error) {
	defer wrap(&err, "FindSignInProviders")
	return read(ctx, s, func(tx *Tx) ([]*gatehouse.SSOProvider, error) {
		rows, err := tx.Query(ctx, `SELECT `+ssoProviderColumns+` FROM sso_providers WHERE enabled = TRUE
			AND organization_id = (SELECT id FROM organizations ORDER BY created_at, id LIMIT 1)
			ORDER BY created_at, id LIMIT ?`, gatehouse.MaxSSOProviders)
		return collect(rows, err, scanSSOProvider)
	})
}

// FindSSOProvider returns a provider of the organization.
func (s *Store) FindSSOProvider(ctx context.Context, orgID, id string) (_ *gatehouse.SSOProvider, err error) {
	defer wrap(&err, "FindSSOProvider")
	return read(ctx, s, func(tx *Tx) (*gatehouse.SSOProvider, error) { return tx.findSSOProvider(ctx, orgID, id) })
}

// FindSSOProviderForSignIn returns an enabled provider with its client
// secret opened.
func (s *Store) FindSSOProviderForSignIn(ctx context.Context, id string) (_ *gatehouse.SSOProvider, err error) {
	defer wrap(&err, "FindSSOProviderForSignIn")
	if _, err := uuid.Parse(id); err != nil {
		return nil, gatehouse.NotFound("sso provider", id)
	}
	return read(ctx, s, func(tx *Tx) (*gatehouse.SSOProvider, error) {
		var sealed string
		p, err := found("sso provider", id, func(sc Scanner) (*gatehouse.SSOProvider, error) {
			return scanSSOProvider(scannerWith{sc, nullString(&sealed)})
		}, tx.QueryRow(ctx, `SELECT `+ssoProviderColumns+`, sealed_client_secret FROM sso_providers WHERE id = ? AND enabled = TRUE`, id))
		if err != nil || sealed == "" {
			return p, err
		}
		p.ClientSecret, err = openClientSecret(tx.box, p.ID, sealed)
		return p, err
	})
}

// CreateSSOProvider adds a provider, its client secret sealed.
func (s *Store) CreateSSOProvider(ctx context.Context, orgID string, c gatehouse.SSOProviderUpdate) (_ *gatehouse.SSOProvider, err error) {
	defer wrap(&err, "CreateSSOProvider")
	p, err := gatehouse.NewSSOProvider(c)
	if err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.SSOProvider, error) {
		p := *p
		p.ID, p.OrganizationID, p.CreatedAt, p.UpdatedAt = uuid.NewString(), orgID, tx.now, tx.now
		var n int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM sso_providers WHERE organization_id = ?`, orgID).Scan(&n); err != nil {
			return nil, err
		}
		if n >= gatehouse.MaxSSOProviders {
			return nil, gatehouse.Errorf(gatehouse.EINVALID, "an organization has at most %d identity providers; delete one first", gatehouse.MaxSSOProviders)
		}
		var sealed any
		if c.ClientSecret.Set && !c.ClientSecret.Null {
			sealed = tx.sealClientSecret(p.ID, c.ClientSecret.Value)
		}
		if err := tx.insert(ctx, "sso_providers", ssoProviderColumns+`, sealed_client_secret`, append(ssoProviderArgs(&p), sealed)); err != nil {
			return nil, err
		}
		return &p, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSSOProviderCreate, ResourceType: gatehouse.ResourceSSOProvider,
			ResourceIDs: []string{p.ID}, Details: map[string]any{"fields": gatehouse.ChangedFields(c)}})
	})
}

// UpdateSSOProvider changes a provider; a new client secret is sealed.
func (s *Store) UpdateSSOProvider(ctx context.Context, orgID, id string, u gatehouse.SSOProviderUpdate) (_ *gatehouse.SSOProvider, err error) {
	defer wrap(&err, "UpdateSSOProvider")
	return update(ctx, s, func(tx *Tx) (*gatehouse.SSOProvider, error) {
		p, err := tx.findSSOProvider(ctx, orgID, id)
		if err != nil {
			return nil, err
		}
		if err := p.Apply(u); err != nil {
			return nil, err
		}
		if u.Enabled.Set && !u.Enabled.Value {
			if err := tx.checkWayIn(ctx, orgID, id); err != nil {
				return nil, err
			}
		}
		p.UpdatedAt = tx.now
		if _, err := tx.Exec(ctx, `UPDATE sso_providers SET name = ?, issuer_url = ?, client_id = ?, client_secret_label = ?,
			scopes = ?, email_claim = ?, email_verified_claim = ?, name_claim = ?, groups_claim = ?, allowed_domains = ?,
			enabled = ?, updated_at = ? WHERE id = ?`, p.Name, p.IssuerURL, p.ClientID, nullIfEmpty(p.ClientSecretLabel),
			jsonCol{p.Scopes}, p.EmailClaim, p.EmailVerifiedClaim, p.NameClaim, nullIfEmpty(p.GroupsClaim),
			jsonCol{p.AllowedDomains}, p.Enabled, ms(p.UpdatedAt), p.ID); err != nil {
			return nil, err
		}
		if u.ClientSecret.Set {
			var sealed any
			if !u.ClientSecret.Null {
				sealed = tx.sealClientSecret(p.ID, u.ClientSecret.Value)
			}
			if _, err := tx.Exec(ctx, `UPDATE sso_providers SET sealed_client_secret = ? WHERE id = ?`, sealed, p.ID); err != nil {
				return nil, err
			}
		}
		return p, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSSOProviderUpdate, ResourceType: gatehouse.ResourceSSOProvider,
			ResourceIDs: []string{p.ID}, Details: map[string]any{"fields": gatehouse.ChangedFields(u)}})
	})
}

// DeleteSSOProvider removes a provider and, by cascade, the identities it
// linked and its sign-ins under way.
func (s *Store) DeleteSSOProvider(ctx context.Context, orgID, id string) (err error) {
	defer wrap(&err, "DeleteSSOProvider")
	return s.exec(ctx, func(tx *Tx) error {
		if _, err := tx.findSSOProvider(ctx, orgID, id); err != nil {
			return err
		}
		if err := tx.checkWayIn(ctx, orgID, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sso_providers WHERE id = ?`, id); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSSOProviderDelete, ResourceType: gatehouse.ResourceSSOProvider,
			ResourceIDs: []string{id}})
	})
}

// checkWayIn refuses to take away provider id (disabling or deleting it)
// while password sign-in is off and no other enabled provider works: the
// members would have no way in left but the management keys.
func (tx *Tx) checkWayIn(ctx context.Context, orgID, id string) error {
	settings, err := tx.signInSettings(ctx, orgID)
	if err != nil || settings.PasswordSignIn {
		return err
	}
	var others int
	if err := tx.QueryRow(ctx, `SELECT count(*) FROM sso_providers WHERE organization_id = ? AND id <> ?
		AND enabled = TRUE AND last_sign_in_at IS NOT NULL`, orgID, id).Scan(&others); err != nil {
		return err
	}
	if others == 0 {
		return gatehouse.Errorf(gatehouse.EINVALID, "password sign-in is off and this is the organization's last working identity provider: turn password sign-in on first")
	}
	return nil
}

// FindSignInSettings returns how an organization's members sign in.
func (s *Store) FindSignInSettings(ctx context.Context, orgID string) (_ *gatehouse.SignInSettings, err error) {
	defer wrap(&err, "FindSignInSettings")
	return read(ctx, s, func(tx *Tx) (*gatehouse.SignInSettings, error) { return tx.signInSettings(ctx, orgID) })
}

// signInSettings returns an organization's settings, the defaults when it
// has no row.
func (tx *Tx) signInSettings(ctx context.Context, orgID string) (*gatehouse.SignInSettings, error) {
	v := &gatehouse.SignInSettings{OrganizationID: orgID, PasswordSignIn: true}
	err := tx.QueryRow(ctx, `SELECT password_sign_in, updated_at FROM sign_in_settings WHERE organization_id = ?`, orgID).
		Scan(&v.PasswordSignIn, msTime(&v.UpdatedAt))
	if errors.Is(err, ErrNoRows) {
		return v, nil
	}
	return v, err
}

// UpdateSignInSettings changes how an organization's members sign in.
func (s *Store) UpdateSignInSettings(ctx context.Context, orgID string, u gatehouse.SignInSettingsUpdate) (_ *gatehouse.SignInSettings, err error) {
	defer wrap(&err, "UpdateSignInSettings")
	if u.PasswordSignIn.Null {
		return nil, gatehouse.FieldError("password_sign_in", "must be true or false")
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.SignInSettings, error) {
		v, err := tx.signInSettings(ctx, orgID)
		if err != nil || !u.PasswordSignIn.Set || u.PasswordSignIn.Value == v.PasswordSignIn {
			return v, err
		}
		if !u.PasswordSignIn.Value {
			rows, err := tx.Query(ctx, `SELECT `+ssoProviderColumns+` FROM sso_providers WHERE organization_id = ?`, orgID)
			providers, err := collect(rows, err, scanSSOProvider)
			if err != nil {
				return nil, err
			}
			if err := gatehouse.CheckPasswordSignInOff(providers); err != nil {
				return nil, err
			}
		}
		v.PasswordSignIn, v.UpdatedAt = u.PasswordSignIn.Value, &tx.now
		if _, err := tx.Exec(ctx, `INSERT INTO sign_in_settings (organization_id, password_sign_in, updated_at) VALUES (?, ?, ?)
			ON CONFLICT (organization_id) DO UPDATE SET password_sign_in = excluded.password_sign_in, updated_at = excluded.updated_at`,
			orgID, v.PasswordSignIn, ms(tx.now)); err != nil {
			return nil, err
		}
		return v, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpSignInSettingsUpdate, ResourceType: gatehouse.ResourceSignInSettings,
			ResourceIDs: []string{orgID}, Details: map[string]any{"password_sign_in": v.PasswordSignIn}})
	})
}

// CreateSSOLogin records a sign-in under way, its verifier sealed to it.
func (s *Store) CreateSSOLogin(ctx context.Context, state string, l gatehouse.SSOLogin) (err error) {
	defer wrap(&err, "CreateSSOLogin")
	if len(state) < 32 || len(l.NonceHash) != 64 || l.Verifier == "" {
		return gatehouse.Errorf(gatehouse.EINVALID, "a sign-in needs a state, a nonce and a verifier")
	}
	id := gatehouse.AccountTokenID(state)
	return s.exec(ctx, func(tx *Tx) error {
		// Sign-ins are rare: each clears those that were abandoned.
		if _, err := tx.Exec(ctx, `DELETE FROM sso_logins WHERE expires_at <= ?`, ms(tx.now)); err != nil {
			return err
		}
		return tx.insert(ctx, "sso_logins", `id, provider_id, nonce_hash, sealed_verifier, next, created_at, expires_at`,
			[]any{id, l.ProviderID, l.NonceHash, tx.box.Seal([]byte(l.Verifier), []byte("sso-login:"+id)), l.Next,
				ms(tx.now), ms(tx.now.Add(gatehouse.SSOLoginTTL))})
	})
}

// TakeSSOLogin returns the sign-in of a state and deletes it.
func (s *Store) TakeSSOLogin(ctx context.Context, state string) (_ *gatehouse.SSOLogin, err error) {
	defer wrap(&err, "TakeSSOLogin")
	id := gatehouse.AccountTokenID(state)
	return update(ctx, s, func(tx *Tx) (*gatehouse.SSOLogin, error) {
		var l gatehouse.SSOLogin
		var sealed string
		err := tx.QueryRow(ctx, `SELECT provider_id, nonce_hash, sealed_verifier, next, created_at, expires_at FROM sso_logins
			WHERE id = ?`, id).Scan(&l.ProviderID, &l.NonceHash, &sealed, &l.Next, msTime(&l.CreatedAt), msTime(&l.ExpiresAt))
		if errors.Is(err, ErrNoRows) {
			return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "this sign-in is unknown, was used already or took too long: start again")
		}
		if err != nil {
			return nil, err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM sso_logins WHERE id = ?`, id); err != nil {
			return nil, err
		}
		if !l.ExpiresAt.After(tx.now) {
			return nil, gatehouse.Errorf(gatehouse.ENOTFOUND, "this sign-in is unknown, was used already or took too long: start again")
		}
		plain, err := tx.box.Open(sealed, []byte("sso-login:"+id))
		if err != nil {
			return nil, gatehouse.WrapError(err, gatehouse.EUNAVAILABLE, "this sign-in cannot be read (has GATEHOUSE_SECRET_KEY changed?): start again")
		}
		l.Verifier = gatehouse.Secret(plain)
		return &l, nil
	})
}
