package sqlstore

import (
	"context"
	"errors"
	"strings"
	"time"

	"gatehouse"
)

// FindKeyByHash returns any key by hash, for authentication.
func (s *Store) FindKeyByHash(ctx context.Context, hash string) (_ *gatehouse.Key, err error) {
	defer wrap(&err, "FindKeyByHash")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Key, error) { return tx.lockKey(ctx, hash, false) })
}

// findKey returns a regular key of the organization.
func (tx *Tx) findKey(ctx context.Context, orgID, hash string) (*gatehouse.Key, error) {
	return found("key", hash, scanKey, tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys
		WHERE hash = ? AND organization_id = ? AND management = FALSE`, hash, orgID))
}

// FindKey returns a regular key of the organization.
func (s *Store) FindKey(ctx context.Context, orgID, hash string) (_ *gatehouse.Key, err error) {
	defer wrap(&err, "FindKey")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Key, error) { return tx.findKey(ctx, orgID, hash) })
}

// CreateKey creates a regular key.
func (s *Store) CreateKey(ctx context.Context, orgID string, c gatehouse.KeyCreate) (_ *gatehouse.Key, _ string, err error) {
	defer wrap(&err, "CreateKey")
	plaintext := gatehouse.NewKeySecret(false)
	k, err := update(ctx, s, func(tx *Tx) (*gatehouse.Key, error) {
		if err := c.Validate(tx.now); err != nil {
			return nil, err
		}
		w, err := tx.findWorkspace(ctx, orgID, c.WorkspaceID)
		if err != nil {
			return nil, err
		}
		if c.CreatorUserID != nil {
			if err := tx.memberExists(ctx, orgID, *c.CreatorUserID); err != nil {
				return nil, gatehouse.ErrNotAMember(*c.CreatorUserID)
			}
		}
		k, externalHash := c.NewKey(orgID, w.ID, plaintext, tx.now)
		if err := tx.insertKey(ctx, k, externalHash); err != nil {
			return nil, err
		}
		return k, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpKeyCreate, ResourceType: gatehouse.ResourceKey,
			ResourceIDs: []string{k.Hash}, Details: map[string]any{"workspace_id": w.ID}})
	})
	if err != nil {
		return nil, "", err
	}
	return k, plaintext, nil
}

func (tx *Tx) insertKey(ctx context.Context, k *gatehouse.Key, externalHash *string) error {
	err := tx.insert(ctx, "api_keys", keyInsertColumns, keyInsertArgs(k, externalHash))
	if tx.d.IsUnique(err) {
		return gatehouse.Errorf(gatehouse.ECONFLICT, "a key with this value already exists")
	}
	return err
}

// UpdateKey applies an update to a regular key.
func (s *Store) UpdateKey(ctx context.Context, orgID, hash string, u gatehouse.KeyUpdate) (_ *gatehouse.Key, err error) {
	defer wrap(&err, "UpdateKey")
	if err := u.Validate(); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Key, error) {
		k, err := tx.findKey(ctx, orgID, hash)
		if err != nil {
			return nil, err
		}
		if err := u.CheckExpiry(tx.now); err != nil {
			return nil, err
		}
		if !k.Apply(u, tx.now) {
			return k, nil // {} changes nothing, not even updated_at
		}
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET name = ?, disabled = ?, include_byok_in_limit = ?,
			limit_nanos = ?, limit_reset = ?, expires_at = ?, updated_at = ? WHERE hash = ?`, keyUpdateArgs(k)...); err != nil {
			return nil, err
		}
		return k, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpKeyUpdate, ResourceType: gatehouse.ResourceKey,
			ResourceIDs: []string{k.Hash}, Details: map[string]any{"fields": gatehouse.ChangedFields(u)}})
	})
}

// DeleteKey deletes a regular key; its guardrail assignment goes by cascade.
func (s *Store) DeleteKey(ctx context.Context, orgID, hash string) (err error) {
	defer wrap(&err, "DeleteKey")
	return s.exec(ctx, func(tx *Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE hash = ? AND organization_id = ? AND management = FALSE`, hash, orgID)
		if err != nil {
			return err
		}
		if n == 0 {
			return gatehouse.NotFound("key", hash)
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpKeyDelete, ResourceType: gatehouse.ResourceKey, ResourceIDs: []string{hash}})
	})
}

// RecordUsage adds an amount to a key's usage in the current periods.
func (s *Store) RecordUsage(ctx context.Context, hash string, amount gatehouse.Money, byok bool) (_ *gatehouse.Key, err error) {
	defer wrap(&err, "RecordUsage")
	if amount < 0 {
		return nil, gatehouse.FieldError("amount", "must not be negative")
	}
	return lock(ctx, s, func(tx *Tx) (*gatehouse.Key, error) {
		return tx.addKeyUsage(ctx, hash, amount, byok)
	})
}

// addKeyUsage adds an amount to a key's counters (its BYOK ones when byok)
// and returns the key as it is afterwards.
func (tx *Tx) addKeyUsage(ctx context.Context, hash string, amount gatehouse.Money, byok bool) (*gatehouse.Key, error) {
	c := &charge{usage: amount}
	if byok {
		c = &charge{byok: amount}
	}
	if err := tx.addCharge(ctx, "api_keys", "hash = ?", c, hash); errors.Is(err, ErrNoRows) {
		return nil, gatehouse.NotFound("key", hash)
	} else if err != nil {
		return nil, err
	}
	return tx.lockKey(ctx, hash, false)
}

// CreateManagementKey creates a management key for the organization.
func (s *Store) CreateManagementKey(ctx context.Context, orgID, name string) (_ *gatehouse.Key, _ string, err error) {
	defer wrap(&err, "CreateManagementKey")
	plaintext := gatehouse.NewKeySecret(true)
	k, err := s.EnsureManagementKey(ctx, orgID, plaintext, name)
	if err != nil {
		return nil, "", err
	}
	return k, plaintext, nil
}

// FindManagementKeys lists the management keys of the organization, oldest
// first. An organization has a handful (one per administrator or machine),
// so the list has no page.
func (s *Store) FindManagementKeys(ctx context.Context, orgID string) (_ []*gatehouse.Key, err error) {
	defer wrap(&err, "FindManagementKeys")
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.Key, error) {
		if _, err := tx.organization(ctx, orgID); err != nil {
			return nil, err
		}
		rows, err := tx.Query(ctx, `SELECT `+keyColumns+` FROM api_keys
			WHERE organization_id = ? AND management = TRUE ORDER BY created_at, hash`, orgID)
		return collect(rows, err, scanKey)
	})
}

// EnsureManagementKey makes sure a management key with this plaintext exists
// for the organization.
func (s *Store) EnsureManagementKey(ctx context.Context, orgID, plaintext, name string) (_ *gatehouse.Key, err error) {
	defer wrap(&err, "EnsureManagementKey")
	if name, err = checkManagementKey(plaintext, name); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Key, error) {
		if _, err := tx.organization(ctx, orgID); err != nil {
			return nil, err
		}
		return tx.ensureManagementKey(ctx, orgID, plaintext, name)
	})
}

// checkManagementKey validates a management key's plaintext and name, and
// returns the name to give it.
func checkManagementKey(plaintext, name string) (string, error) {
	if !strings.HasPrefix(plaintext, gatehouse.ManagementKeyPrefix) || len(plaintext) < 40 {
		return "", gatehouse.Errorf(gatehouse.EINVALID, "a management key must start with %s and be at least 40 characters", gatehouse.ManagementKeyPrefix)
	}
	if name == "" {
		name = "Management key"
	}
	return name, validateKeyName(name)
}

// ensureManagementKey creates the management key of orgID with this
// plaintext unless it exists.
func (tx *Tx) ensureManagementKey(ctx context.Context, orgID, plaintext, name string) (*gatehouse.Key, error) {
	hash := gatehouse.HashKey(plaintext)
	existing, err := scanKey(tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys WHERE hash = ?`, hash))
	switch {
	case err == nil && existing.Management && existing.OrganizationID == orgID:
		return existing, nil
	case err == nil:
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "this key value is already in use by another key")
	case !errors.Is(err, ErrNoRows):
		return nil, err
	}
	k := &gatehouse.Key{Hash: hash, OrganizationID: orgID, Name: name, Management: true, CreatedAt: tx.now}
	if err := tx.insertKey(ctx, k, nil); err != nil {
		return nil, err
	}
	return k, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpManagementKeyCreate, ResourceType: gatehouse.ResourceManagementKey,
		ResourceIDs: []string{hash}})
}

func validateKeyName(name string) error {
	c := gatehouse.KeyCreate{Name: name}
	return c.Validate(time.Time{})
}

func (tx *Tx) organization(ctx context.Context, id string) (string, error) {
	var name string
	err := tx.QueryRow(ctx, `SELECT name FROM organizations WHERE id = ?`, id).Scan(&name)
	if errors.Is(err, ErrNoRows) {
		return "", gatehouse.NotFound("organization", id)
	}
	return name, err
}

// findManagementKey returns a management key of the organization.
func (tx *Tx) findManagementKey(ctx context.Context, orgID, hash string) (*gatehouse.Key, error) {
	return found("management key", hash, scanKey, tx.QueryRow(ctx, `SELECT `+keyColumns+` FROM api_keys
		WHERE hash = ? AND organization_id = ? AND management = TRUE`, hash, orgID))
}

// SetManagementKeyDisabled disables or enables a management key.
func (s *Store) SetManagementKeyDisabled(ctx context.Context, orgID, hash string, disabled bool) (_ *gatehouse.Key, err error) {
	defer wrap(&err, "SetManagementKeyDisabled")
	return update(ctx, s, func(tx *Tx) (*gatehouse.Key, error) {
		k, err := tx.findManagementKey(ctx, orgID, hash)
		if err != nil || k.Disabled == disabled {
			return k, err
		}
		k.Disabled, k.UpdatedAt = disabled, &tx.now
		if _, err := tx.Exec(ctx, `UPDATE api_keys SET disabled = ?, updated_at = ? WHERE hash = ?`, disabled, ms(tx.now), hash); err != nil {
			return nil, err
		}
		// Its sessions end for good: enabling the key again revives none.
		if _, err := tx.Exec(ctx, `DELETE FROM console_sessions WHERE key_hash = ?`, hash); err != nil {
			return nil, err
		}
		return k, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpManagementKeyUpdate, ResourceType: gatehouse.ResourceManagementKey,
			ResourceIDs: []string{hash}, Details: map[string]any{"fields": []string{"disabled"}, "disabled": disabled}})
	})
}

// DeleteManagementKey deletes a management key; its console sessions go by
// cascade.
func (s *Store) DeleteManagementKey(ctx context.Context, orgID, hash string) (err error) {
	defer wrap(&err, "DeleteManagementKey")
	return s.exec(ctx, func(tx *Tx) error {
		n, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE hash = ? AND organization_id = ? AND management = TRUE`, hash, orgID)
		if err != nil {
			return err
		}
		if n == 0 {
			return gatehouse.NotFound("management key", hash)
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpManagementKeyDelete, ResourceType: gatehouse.ResourceManagementKey,
			ResourceIDs: []string{hash}})
	})
}
