package sqlstore

import (
	"context"
	"errors"

	"gatehouse"

	"github.com/google/uuid"
)

// CreateAuthCode creates an authorization code; only its hash is stored.
func (s *Store) CreateAuthCode(ctx context.Context, orgID string, creatorUserID *string, c gatehouse.AuthCodeCreate) (_ *gatehouse.AuthCode, err error) {
	defer wrap(&err, "CreateAuthCode")
	id := gatehouse.NewAuthCodeID()
	return update(ctx, s, func(tx *Tx) (*gatehouse.AuthCode, error) {
		c := c // codeCreator fills in the workspace: each run starts from the request
		if err := c.Validate(tx.now); err != nil {
			return nil, err
		}
		creator, err := tx.codeCreator(ctx, orgID, &c)
		if err != nil {
			return nil, err
		}
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return nil, err
		}
		if err := gatehouse.CheckCodeWorkspace(creator, w.ID); err != nil {
			return nil, err
		}
		if c.CodeChallenge != nil {
			var pending int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM auth_codes WHERE organization_id = ? AND code_challenge = ?
				AND used_at IS NULL AND expires_at > ? AND failed_attempts < ?`,
				orgID, *c.CodeChallenge, ms(tx.now), gatehouse.MaxVerifierAttempts).Scan(&pending); err != nil {
				return nil, err
			}
			if pending > 0 {
				return nil, gatehouse.Errorf(gatehouse.ECONFLICT, "code_challenge is already used by a pending authorization code; generate a new verifier and challenge")
			}
		}
		appID, err := tx.oauthApp(ctx, orgID, gatehouse.CallbackOrigin(c.CallbackURL))
		if err != nil {
			return nil, err
		}
		code := &gatehouse.AuthCode{ID: id, OrganizationID: orgID, WorkspaceID: w.ID, AppID: appID, CreatorUserID: creatorUserID,
			CallbackURL: c.CallbackURL, CodeChallenge: c.CodeChallenge, CodeChallengeMethod: c.CodeChallengeMethod,
			Limit: c.Limit, LimitReset: c.UsageLimitType, KeyExpiresAt: c.ExpiresAt, KeyLabel: gatehouse.DefaultOAuthKeyLabel,
			CreatedAt: tx.now, ExpiresAt: tx.now.Add(gatehouse.AuthCodeTTL)}
		if c.KeyLabel != nil {
			code.KeyLabel = *c.KeyLabel
		}
		if err := tx.insert(ctx, "auth_codes", `code_hash, organization_id, workspace_id, app_id, creator_user_id,
			callback_url, code_challenge, code_challenge_method, limit_nanos, limit_reset, key_expires_at, key_label,
			created_at, expires_at, creator_key_hash`, []any{gatehouse.HashKey(code.ID), orgID, w.ID, code.AppID,
			creatorUserID, code.CallbackURL, code.CodeChallenge, code.CodeChallengeMethod, nullMoney(code.Limit),
			nullIfEmpty(code.LimitReset), ms(code.KeyExpiresAt), code.KeyLabel, ms(code.CreatedAt), ms(code.ExpiresAt),
			nullIfEmpty(c.CreatorKeyHash)}); err != nil {
			return nil, err
		}
		// The code is a credential until exchanged: the log names it by its hash.
		return code, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpAuthCodeCreate, ResourceType: gatehouse.ResourceAuthCode,
			ResourceIDs: []string{gatehouse.HashKey(code.ID)}, Details: map[string]any{"app_id": code.AppID, "workspace_id": w.ID}})
	})
}

// oauthApp returns the id of the organization's application for an origin,
// creating it on first use.
func (tx *Tx) oauthApp(ctx context.Context, orgID, origin string) (int64, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO oauth_apps (organization_id, origin, created_at) VALUES (?, ?, ?)
		ON CONFLICT (organization_id, origin) DO NOTHING`, orgID, origin, ms(tx.now)); err != nil {
		return 0, err
	}
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM oauth_apps WHERE organization_id = ? AND origin = ?`, orgID, origin).Scan(&id)
	return id, err
}

// ExchangeAuthCode consumes a code and creates its key in one transaction.
// A wrong verifier is counted (and burns the code at the limit) by its own
// committed transaction, so the failure sticks even though no key is made.
func (s *Store) ExchangeAuthCode(ctx context.Context, x gatehouse.AuthCodeExchange) (_ string, _ *string, err error) {
	defer wrap(&err, "ExchangeAuthCode")
	if err := x.Validate(); err != nil {
		return "", nil, err
	}
	ctx = actorOr(ctx, gatehouse.Actor{System: gatehouse.ActorKeyExchange}) // no credential: the application acts
	// failure is an error to return after committing what the run wrote.
	type exchanged struct {
		plaintext string
		userID    *string
		failure   error
	}
	got, err := update(ctx, s, func(tx *Tx) (exchanged, error) {
		var c authCodeRow
		err := tx.QueryRow(ctx, `SELECT code_hash, organization_id, workspace_id, creator_user_id,
			code_challenge, code_challenge_method, limit_nanos, limit_reset, key_expires_at, key_label, creator_key_hash
			FROM auth_codes WHERE code_hash = ? AND used_at IS NULL AND expires_at > ? AND failed_attempts < ?`,
			gatehouse.HashKey(x.Code), ms(tx.now), gatehouse.MaxVerifierAttempts).
			Scan(&c.hash, &c.org, &c.workspace, &c.creator, &c.challenge, &c.method, &c.terms.Limit,
				nullString(&c.terms.LimitReset), msTime(&c.terms.ExpiresAt), nullString(&c.label), &c.creatorKey)
		if errors.Is(err, ErrNoRows) {
			return exchanged{}, gatehouse.ErrBadAuthCode
		}
		if err != nil {
			return exchanged{}, err
		}
		if err := gatehouse.CheckExchange(c.challenge, c.method, x); err != nil {
			if gatehouse.ErrorCode(err) == gatehouse.EFORBIDDEN {
				// commit the counted attempt, then fail
				_, dbErr := tx.Exec(ctx, `UPDATE auth_codes SET failed_attempts = failed_attempts + 1 WHERE code_hash = ?`, c.hash)
				return exchanged{failure: err}, dbErr
			}
			return exchanged{}, err
		}
		terms, err := tx.capByCreator(ctx, c)
		if gatehouse.ErrorCode(err) == gatehouse.EFORBIDDEN {
			// the code dies with its creator: burn it, then fail
			_, dbErr := tx.Exec(ctx, `UPDATE auth_codes SET failed_attempts = ? WHERE code_hash = ?`, gatehouse.MaxVerifierAttempts, c.hash)
			return exchanged{failure: err}, dbErr
		}
		if err != nil {
			return exchanged{}, err
		}
		if _, err := tx.Exec(ctx, `UPDATE auth_codes SET used_at = ? WHERE code_hash = ?`, ms(tx.now), c.hash); err != nil {
			return exchanged{}, err
		}
		plaintext := gatehouse.NewKeySecret(false)
		k := &gatehouse.Key{
			Hash: gatehouse.HashKey(plaintext), OrganizationID: c.org, WorkspaceID: c.workspace, Name: c.label,
			Limit: terms.Limit, LimitReset: terms.LimitReset, IncludeBYOKInLimit: terms.IncludeBYOKInLimit,
			CreatorUserID: c.creator, ExpiresAt: terms.ExpiresAt, CreatedAt: tx.now, ParentKeyHash: c.creatorKey,
		}
		if err := tx.insertKey(ctx, k, nil); err != nil {
			return exchanged{}, err
		}
		if err := tx.inheritGuardrail(ctx, c.creatorKey, k.Hash); err != nil {
			return exchanged{}, err
		}
		return exchanged{plaintext: plaintext, userID: k.CreatorUserID}, tx.audit(ctx, c.org, gatehouse.AuditRecord{
			Operation: gatehouse.OpAuthCodeExchange, ResourceType: gatehouse.ResourceKey, ResourceIDs: []string{k.Hash},
			Details: map[string]any{"code_hash": c.hash}})
	})
	if err == nil {
		err = got.failure
	}
	if err != nil {
		return "", nil, err
	}
	return got.plaintext, got.userID, nil
}

// authCodeRow is a pending authorization code, with the terms of its key.
type authCodeRow struct {
	hash, org, workspace, label            string
	creator, challenge, method, creatorKey *string
	terms                                  gatehouse.OAuthKeyTerms
}

// codeCreator returns the regular key that creates a code (nil for a
// management key's code), checked: it is active and has something left of
// its limit. A code that names no workspace lands in the key's.
func (tx *Tx) codeCreator(ctx context.Context, orgID string, c *gatehouse.AuthCodeCreate) (*gatehouse.Key, error) {
	if c.CreatorKeyHash == "" {
		return nil, nil
	}
	k, err := tx.findKey(ctx, orgID, c.CreatorKeyHash)
	if err != nil {
		return nil, err
	}
	if !k.Active(tx.now) {
		return nil, gatehouse.Errorf(gatehouse.EFORBIDDEN, "a disabled or expired key cannot create authorization codes")
	}
	ancestors, err := tx.ancestors(ctx, k, false)
	if err != nil {
		return nil, err
	}
	if err := gatehouse.CheckMintDepth(len(ancestors)); err != nil {
		return nil, err
	}
	if err := gatehouse.CheckMintedChain(ancestors, tx.now); err != nil {
		return nil, err
	}
	reserved, err := tx.reservedForKey(ctx, k)
	if err != nil {
		return nil, err
	}
	if err := gatehouse.CheckCodeCreator(k, tx.now, reserved); err != nil {
		return nil, err
	}
	if c.WorkspaceID == "" {
		c.WorkspaceID = k.WorkspaceID
	}
	return k, nil
}

// capByCreator bounds the terms of the key a code yields by its creator,
// read in the exchange's transaction: the creator member must still belong
// to the organization, and the creator key (if any) caps the terms.
// EFORBIDDEN when the creator is gone.
func (tx *Tx) capByCreator(ctx context.Context, c authCodeRow) (gatehouse.OAuthKeyTerms, error) {
	t := c.terms
	if c.creator != nil {
		if err := tx.memberExists(ctx, c.org, *c.creator); gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return t, gatehouse.ErrCodeCreatorGone
		} else if err != nil {
			return t, err
		}
	}
	if c.creatorKey == nil {
		return t, nil
	}
	k, err := tx.findKey(ctx, c.org, *c.creatorKey)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return t.CapByCreator(nil, tx.now, gatehouse.Reserved{})
	}
	if err != nil {
		return t, err
	}
	reserved, err := tx.reservedForKey(ctx, k)
	if err != nil {
		return t, err
	}
	return t.CapByCreator(k, tx.now, reserved)
}

// inheritGuardrail gives a new key the guardrail assigned to its creator
// key, if any.
func (tx *Tx) inheritGuardrail(ctx context.Context, creatorKey *string, hash string) error {
	if creatorKey == nil {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO key_assignments (id, organization_id, guardrail_id, key_hash, assigned_by, created_at)
		SELECT ?, organization_id, guardrail_id, ?, assigned_by, ? FROM key_assignments WHERE key_hash = ?`,
		uuid.NewString(), hash, ms(tx.now), *creatorKey)
	return err
}
