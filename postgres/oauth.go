package postgres

import (
	"context"
	"database/sql"
	"errors"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
)

// CreateAuthCode creates an authorization code; only its hash is stored.
// The check for a pending code with the same challenge and the insert run
// in one serializable transaction, so concurrent requests cannot both pass.
func (db *DB) CreateAuthCode(ctx context.Context, orgID string, creatorUserID *string, c gatehouse.AuthCodeCreate) (*gatehouse.AuthCode, error) {
	code := &gatehouse.AuthCode{ID: gatehouse.NewAuthCodeID(), OrganizationID: orgID, CreatorUserID: creatorUserID}
	err := db.update(ctx, func(tx *Tx) error {
		if err := c.Validate(tx.now); err != nil {
			return err
		}
		creator, err := tx.codeCreator(ctx, orgID, &c)
		if err != nil {
			return err
		}
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return err
		}
		if err := gatehouse.CheckCodeWorkspace(creator, w.ID); err != nil {
			return err
		}
		if c.CodeChallenge != nil {
			var pending int
			if err := tx.QueryRow(ctx, `SELECT count(*) FROM auth_codes WHERE organization_id = $1 AND code_challenge = $2
				AND used_at IS NULL AND expires_at > $3 AND failed_attempts < $4`,
				orgID, *c.CodeChallenge, dbrow.MS(tx.now), gatehouse.MaxVerifierAttempts).Scan(&pending); err != nil {
				return err
			}
			if pending > 0 {
				return gatehouse.Errorf(gatehouse.ECONFLICT, "code_challenge is already used by a pending authorization code; generate a new verifier and challenge")
			}
		}
		if code.AppID, err = tx.oauthApp(ctx, orgID, gatehouse.CallbackOrigin(c.CallbackURL)); err != nil {
			return err
		}
		code.WorkspaceID, code.CallbackURL = w.ID, c.CallbackURL
		code.CodeChallenge, code.CodeChallengeMethod = c.CodeChallenge, c.CodeChallengeMethod
		code.Limit, code.LimitReset, code.KeyExpiresAt = c.Limit, c.UsageLimitType, c.ExpiresAt
		code.KeyLabel = gatehouse.DefaultOAuthKeyLabel
		if c.KeyLabel != nil {
			code.KeyLabel = *c.KeyLabel
		}
		code.CreatedAt, code.ExpiresAt = tx.now, tx.now.Add(gatehouse.AuthCodeTTL)
		var limit any
		if code.Limit != nil {
			limit = int64(*code.Limit)
		}
		_, err = tx.Exec(ctx, `INSERT INTO auth_codes (code_hash, organization_id, workspace_id, app_id,
			creator_user_id, callback_url, code_challenge, code_challenge_method, limit_nanos, limit_reset,
			key_expires_at, key_label, created_at, expires_at, creator_key_hash) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)`,
			gatehouse.HashKey(code.ID), orgID, w.ID, code.AppID, creatorUserID, code.CallbackURL, code.CodeChallenge,
			code.CodeChallengeMethod, limit, dbrow.NullInterval(code.LimitReset), dbrow.NullMS(code.KeyExpiresAt), code.KeyLabel,
			dbrow.MS(code.CreatedAt), dbrow.MS(code.ExpiresAt), nullIfEmpty(c.CreatorKeyHash))
		if err != nil {
			return err
		}
		// The code is a credential until exchanged: the log names it by its hash.
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpAuthCodeCreate, ResourceType: gatehouse.ResourceAuthCode,
			ResourceIDs: []string{gatehouse.HashKey(code.ID)}, Details: map[string]any{"app_id": code.AppID, "workspace_id": w.ID}})
	})
	if err != nil {
		return nil, err
	}
	return code, nil
}

// oauthApp returns the id of the organization's application for an origin,
// creating it on first use.
func (tx *Tx) oauthApp(ctx context.Context, orgID, origin string) (int64, error) {
	var id int64
	err := tx.QueryRow(ctx, `INSERT INTO oauth_apps (organization_id, origin, created_at) VALUES ($1, $2, $3)
		ON CONFLICT (organization_id, origin) DO NOTHING RETURNING id`, orgID, origin, dbrow.MS(tx.now)).Scan(&id)
	if !errors.Is(err, pgx.ErrNoRows) {
		return id, err
	}
	err = tx.QueryRow(ctx, `SELECT id FROM oauth_apps WHERE organization_id = $1 AND origin = $2`, orgID, origin).Scan(&id)
	return id, err
}

// ExchangeAuthCode consumes a code and creates its key in one transaction.
// A wrong verifier is counted (and burns the code at the limit) by its own
// committed transaction, so the failure sticks even though no key is made.
// The transaction may run more than once (serialization retries): what it
// sets outside is reset at its start, and concurrent exchanges of one code
// serialize, so that exactly one of them sees the code unused.
func (db *DB) ExchangeAuthCode(ctx context.Context, x gatehouse.AuthCodeExchange) (string, *string, error) {
	if err := x.Validate(); err != nil {
		return "", nil, err
	}
	var plaintext string
	var userID *string
	var failure error
	err := db.update(ctx, func(tx *Tx) error {
		plaintext, userID, failure = "", nil, nil
		var c authCodeRow
		err := tx.QueryRow(ctx, `SELECT code_hash, organization_id, workspace_id, creator_user_id,
			code_challenge, code_challenge_method, limit_nanos, limit_reset, key_expires_at, key_label, creator_key_hash
			FROM auth_codes WHERE code_hash = $1 AND used_at IS NULL AND expires_at > $2 AND failed_attempts < $3`,
			gatehouse.HashKey(x.Code), dbrow.MS(tx.now), gatehouse.MaxVerifierAttempts).
			Scan(&c.hash, &c.org, &c.workspace, &c.creator, &c.challenge, &c.method, &c.limit, &c.reset, &c.expires, &c.label, &c.creatorKey)
		if errors.Is(err, pgx.ErrNoRows) {
			return gatehouse.ErrBadAuthCode
		}
		if err != nil {
			return err
		}
		if err := gatehouse.CheckExchange(dbrow.StrPtr(c.challenge), dbrow.StrPtr(c.method), x); err != nil {
			if gatehouse.ErrorCode(err) == gatehouse.EFORBIDDEN {
				failure = err // commit the counted attempt, then fail
				_, err := tx.Exec(ctx, `UPDATE auth_codes SET failed_attempts = failed_attempts + 1 WHERE code_hash = $1`, c.hash)
				return err
			}
			return err
		}
		terms, err := tx.capByCreator(ctx, c, gatehouse.OAuthKeyTerms{Limit: dbrow.MoneyPtr(c.limit),
			LimitReset: gatehouse.Interval(c.reset.String), ExpiresAt: dbrow.TimePtr(c.expires)})
		if gatehouse.ErrorCode(err) == gatehouse.EFORBIDDEN {
			failure = err // the code dies with its creator: burn it, then fail
			_, err := tx.Exec(ctx, `UPDATE auth_codes SET failed_attempts = $1 WHERE code_hash = $2`, gatehouse.MaxVerifierAttempts, c.hash)
			return err
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `UPDATE auth_codes SET used_at = $1 WHERE code_hash = $2`, dbrow.MS(tx.now), c.hash); err != nil {
			return err
		}
		plaintext = gatehouse.NewKeySecret(false)
		userID = dbrow.StrPtr(c.creator)
		k := &gatehouse.Key{
			Hash: gatehouse.HashKey(plaintext), OrganizationID: c.org, WorkspaceID: c.workspace, Name: c.label.String,
			Limit: terms.Limit, LimitReset: terms.LimitReset, IncludeBYOKInLimit: terms.IncludeBYOKInLimit,
			CreatorUserID: userID, ExpiresAt: terms.ExpiresAt, CreatedAt: tx.now,
		}
		if err := tx.insertKey(ctx, k, nil); err != nil {
			return err
		}
		if err := tx.inheritGuardrail(ctx, c.creatorKey, k.Hash); err != nil {
			return err
		}
		return tx.audit(ctx, c.org, gatehouse.AuditRecord{Operation: gatehouse.OpAuthCodeExchange, ResourceType: gatehouse.ResourceKey,
			ResourceIDs: []string{k.Hash}, Details: map[string]any{"code_hash": c.hash}})
	})
	if err == nil {
		err = failure
	}
	if err != nil {
		return "", nil, err
	}
	return plaintext, userID, nil
}

type authCodeRow struct {
	hash, org, workspace string
	creator, challenge   sql.NullString
	creatorKey           sql.NullString
	method, reset, label sql.NullString
	limit, expires       sql.NullInt64
}

// nullIfEmpty stores "" as NULL.
func nullIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
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

// reservedForKey sums the key's live reservations: all of them, and the BYOK ones.
func (tx *Tx) reservedForKey(ctx context.Context, k *gatehouse.Key) (gatehouse.Reserved, error) {
	var r gatehouse.Reserved
	err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(CASE WHEN byok THEN amount ELSE 0 END), 0)
		FROM reservations WHERE key_hash = $1 AND expires_at > $2`, k.Hash, dbrow.MS(tx.now)).Scan(&r.All, &r.BYOK)
	return r, err
}

// capByCreator bounds the terms of the key a code yields by its creator,
// read in the exchange's transaction: the creator member must still belong
// to the organization, and the creator key (if any) caps the terms.
// EFORBIDDEN when the creator is gone.
func (tx *Tx) capByCreator(ctx context.Context, c authCodeRow, t gatehouse.OAuthKeyTerms) (gatehouse.OAuthKeyTerms, error) {
	if c.creator.Valid {
		if err := tx.memberExists(ctx, c.org, c.creator.String); gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return t, gatehouse.ErrCodeCreatorGone
		} else if err != nil {
			return t, err
		}
	}
	if !c.creatorKey.Valid {
		return t, nil
	}
	k, err := tx.findKey(ctx, c.org, c.creatorKey.String)
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
func (tx *Tx) inheritGuardrail(ctx context.Context, creatorKey sql.NullString, hash string) error {
	if !creatorKey.Valid {
		return nil
	}
	_, err := tx.Exec(ctx, `INSERT INTO key_assignments (id, organization_id, guardrail_id, key_hash, assigned_by, created_at)
		SELECT $1, organization_id, guardrail_id, $2, assigned_by, $3 FROM key_assignments WHERE key_hash = $4`,
		uuid.NewString(), hash, dbrow.MS(tx.now), creatorKey.String)
	return err
}
