package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/jackc/pgx/v5"
)

// FindKeyByHash returns any key by hash, for authentication. It is the hot
// path of every request: one indexed query, outside any transaction.
func (db *DB) FindKeyByHash(ctx context.Context, hash string) (*gatehouse.Key, error) {
	var k *gatehouse.Key
	err := db.one(ctx, func(ctx context.Context, q querier) (err error) {
		k, err = dbrow.ScanKey(q.QueryRow(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = $1`, hash))
		if errors.Is(err, pgx.ErrNoRows) {
			return gatehouse.NotFound("key", hash)
		}
		return err
	})
	return k, err
}

const findKeySQL = `SELECT ` + dbrow.KeyColumns + ` FROM api_keys WHERE hash = $1 AND organization_id = $2 AND NOT management`

// findKey returns a regular key of the organization.
func findKey(ctx context.Context, q querier, orgID, hash string) (*gatehouse.Key, error) {
	k, err := dbrow.ScanKey(q.QueryRow(ctx, findKeySQL, hash, orgID))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, gatehouse.NotFound("key", hash)
	}
	return k, err
}

func (tx *Tx) findKey(ctx context.Context, orgID, hash string) (*gatehouse.Key, error) {
	return findKey(ctx, tx, orgID, hash)
}

// FindKey returns a regular key of the organization.
func (db *DB) FindKey(ctx context.Context, orgID, hash string) (*gatehouse.Key, error) {
	var k *gatehouse.Key
	err := db.one(ctx, func(ctx context.Context, q querier) (err error) {
		k, err = findKey(ctx, q, orgID, hash)
		return err
	})
	return k, err
}

// FindKeys lists regular keys of the organization.
func (db *DB) FindKeys(ctx context.Context, orgID string, f gatehouse.KeyFilter) ([]*gatehouse.Key, error) {
	var keys []*gatehouse.Key
	err := db.view(ctx, func(tx *Tx) error {
		where, arg := `organization_id = $1 AND NOT management`, orgID
		if f.WorkspaceID != "" {
			w, err := tx.findWorkspace(ctx, orgID, f.WorkspaceID)
			if err != nil {
				return err
			}
			where, arg = `workspace_id = $1`, w.ID
		}
		if !f.IncludeDisabled {
			where += ` AND NOT disabled`
		}
		limit := f.Limit
		if limit <= 0 || limit > gatehouse.MaxKeysPerList {
			limit = gatehouse.MaxKeysPerList
		}
		rows, err := tx.Query(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE `+where+`
			ORDER BY created_at, hash LIMIT $2 OFFSET $3`, arg, limit, f.Offset)
		keys, err = collect(rows, err, dbrow.ScanKey)
		return err
	})
	return keys, err
}

// CreateKey creates a regular key.
func (db *DB) CreateKey(ctx context.Context, orgID string, c gatehouse.KeyCreate) (*gatehouse.Key, string, error) {
	plaintext := gatehouse.NewKeySecret(false)
	var k *gatehouse.Key
	var err error
	if c.CreatorUserID != nil {
		// The creator must still be a member when the key commits, and the
		// member-removal rule must see the key: only a serializable
		// transaction relates the two rows.
		err = db.update(ctx, func(tx *Tx) (err error) {
			if err := c.Validate(tx.now); err != nil {
				return err
			}
			if err := tx.memberExists(ctx, orgID, *c.CreatorUserID); err != nil {
				return gatehouse.ErrNotAMember(*c.CreatorUserID)
			}
			k, err = createKey(ctx, tx, tx.now, orgID, c, plaintext)
			return err
		})
	} else {
		// Without a creator, two statements and no transaction: the key's
		// foreign key keeps it from outliving a workspace deleted meanwhile.
		err = db.one(ctx, func(ctx context.Context, q querier) (err error) {
			now := db.now()
			if err := c.Validate(now); err != nil {
				return err
			}
			k, err = createKey(ctx, q, now, orgID, c, plaintext)
			return err
		})
	}
	if err != nil {
		return nil, "", err
	}
	return k, plaintext, nil
}

// createKey inserts a validated key into its workspace and appends the
// audit entry, in one statement.
func createKey(ctx context.Context, q querier, now time.Time, orgID string, c gatehouse.KeyCreate, plaintext string) (*gatehouse.Key, error) {
	w, err := findWorkspace(ctx, q, orgID, c.WorkspaceID)
	if err != nil {
		return nil, err
	}
	k, externalHash := c.NewKey(orgID, w.ID, plaintext, now)
	audit, err := auditArgs(ctx, orgID, now, gatehouse.AuditRecord{Operation: gatehouse.OpKeyCreate,
		ResourceType: gatehouse.ResourceKey, ResourceIDs: []string{k.Hash}, Details: map[string]any{"workspace_id": w.ID}})
	if err != nil {
		return nil, err
	}
	keyArgs := dbrow.KeyInsertArgs(k, externalHash)
	_, err = q.Exec(ctx, `WITH k AS (INSERT INTO api_keys (`+dbrow.KeyInsertColumns+`) VALUES (`+placeholders(len(keyArgs))+`) RETURNING hash)
		INSERT INTO audit_log (`+dbrow.AuditColumns+`) SELECT `+auditValues(len(keyArgs))+` FROM k`, append(keyArgs, audit...)...)
	if isForeignKey(err) { // the workspace was deleted meanwhile
		return nil, gatehouse.NotFound("workspace", c.WorkspaceID)
	}
	if err := keyInsertErr(err); err != nil {
		return nil, err
	}
	return k, nil
}

func (tx *Tx) insertKey(ctx context.Context, k *gatehouse.Key, externalHash *string) error {
	args := dbrow.KeyInsertArgs(k, externalHash)
	_, err := tx.Exec(ctx, `INSERT INTO api_keys (`+dbrow.KeyInsertColumns+`) VALUES (`+placeholders(len(args))+`)`, args...)
	return keyInsertErr(err)
}

// keyInsertErr maps the error of inserting a key: a duplicate hash is a
// conflict.
func keyInsertErr(err error) error {
	if isUnique(err) {
		return gatehouse.Errorf(gatehouse.ECONFLICT, "a key with this value already exists")
	}
	return err
}

// UpdateKey applies an update to a regular key.
//
// It runs as two statements and no transaction: read the key, apply the
// update in Go, then one statement that writes the new values only if the
// row still holds the values read (compare and swap) and appends the audit
// entry. A key changed or deleted in between is read again. Usage counters
// are not among the columns written, so concurrent metering never
// conflicts. (A SERIALIZABLE transaction takes five round trips: this is
// the hottest write of the API.)
func (db *DB) UpdateKey(ctx context.Context, orgID, hash string, u gatehouse.KeyUpdate) (*gatehouse.Key, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	var k *gatehouse.Key
	err := db.one(ctx, func(ctx context.Context, q querier) error {
		for attempt := 1; attempt <= maxAttempts; attempt++ {
			read, err := findKey(ctx, q, orgID, hash)
			if err != nil {
				return err
			}
			old := dbrow.KeyUpdateArgs(read)
			now := db.now()
			if !read.Apply(u, now) {
				k = read // {} changes nothing, not even updated_at
				return nil
			}
			audit, err := auditArgs(ctx, orgID, now, gatehouse.AuditRecord{Operation: gatehouse.OpKeyUpdate,
				ResourceType: gatehouse.ResourceKey, ResourceIDs: []string{hash}, Details: map[string]any{"fields": gatehouse.ChangedFields(u)}})
			if err != nil {
				return err
			}
			args := append(append(append(dbrow.KeyUpdateArgs(read)[:6], old[:6]...), hash, orgID), audit...)
			k, err = dbrow.ScanKey(q.QueryRow(ctx, updateKeySQL, args...))
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
			// Changed or deleted since it was read: read it again.
		}
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the key keeps changing concurrently; retry")
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// updateKeySQL writes $1–$6 (KeyUpdateArgs' columns) where the row still
// holds $7–$12, and appends the audit entry ($15 on) for the row written.
var updateKeySQL = `WITH u AS (
	UPDATE api_keys SET name = $1, disabled = $2, include_byok_in_limit = $3, limit_nanos = $4, limit_reset = $5, updated_at = $6
	WHERE hash = $13 AND organization_id = $14 AND NOT management
		AND name = $7 AND disabled = $8 AND include_byok_in_limit = $9 AND limit_nanos IS NOT DISTINCT FROM $10
		AND limit_reset IS NOT DISTINCT FROM $11 AND updated_at IS NOT DISTINCT FROM $12
	RETURNING ` + dbrow.KeyColumns + `
), a AS (
	INSERT INTO audit_log (` + dbrow.AuditColumns + `)
	SELECT ` + auditValues(14) + ` FROM u
)
SELECT ` + dbrow.KeyColumns + ` FROM u`

// DeleteKey deletes a regular key; its guardrail assignment goes by cascade.
func (db *DB) DeleteKey(ctx context.Context, orgID, hash string) error {
	return db.update(ctx, func(tx *Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM api_keys WHERE hash = $1 AND organization_id = $2 AND NOT management`, hash, orgID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return gatehouse.NotFound("key", hash)
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpKeyDelete, ResourceType: gatehouse.ResourceKey, ResourceIDs: []string{hash}})
	})
}

// RecordUsage adds an amount to a key's usage in the current periods.
//
// Unlike the other writes it runs READ COMMITTED and locks the key's row
// (FOR UPDATE) before reading it: concurrent calls on one key then queue on
// the row lock and each reads the sum left by the one before, instead of
// failing with serialization errors and retrying. The row is the only
// thing read, so the result is the same as under SERIALIZABLE: no update
// is lost, and a busy key does not exhaust the retries.
func (db *DB) RecordUsage(ctx context.Context, hash string, amount gatehouse.Money, byok bool) (*gatehouse.Key, error) {
	if amount < 0 {
		return nil, gatehouse.FieldError("amount", "must not be negative")
	}
	var k *gatehouse.Key
	err := db.run(ctx, readCommitted, func(tx *Tx) (err error) {
		k, err = tx.addKeyUsage(ctx, hash, amount, byok)
		return err
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

// readCommitted is the isolation of the metering transactions: they lock
// the rows they change (SELECT ... FOR UPDATE), so concurrent requests on
// one key queue on its row instead of failing serialization and retrying.
var readCommitted = pgx.TxOptions{IsoLevel: pgx.ReadCommitted}

// addKeyUsage adds an amount to a key's counters (its BYOK ones when byok)
// under a row lock, and returns the key as it is afterwards.
func (tx *Tx) addKeyUsage(ctx context.Context, hash string, amount gatehouse.Money, byok bool) (*gatehouse.Key, error) {
	k, err := dbrow.ScanKey(tx.QueryRow(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = $1 FOR UPDATE`, hash))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, gatehouse.NotFound("key", hash)
	}
	if err != nil {
		return nil, err
	}
	prefix, c := "usage", &k.Usage
	if byok {
		prefix, c = "byok", &k.BYOKUsage
	}
	*c = c.Add(tx.now, amount)
	_, err = tx.Exec(ctx, `UPDATE api_keys SET `+dbrow.CounterAssignments(prefix, dollar)+` WHERE hash = $8`,
		append(dbrow.CounterArgs(*c), hash)...)
	return k, err
}

// dollar renders the n-th placeholder.
func dollar(n int) string { return fmt.Sprintf("$%d", n) }

// CreateManagementKey creates a management key for the organization.
func (db *DB) CreateManagementKey(ctx context.Context, orgID, name string) (*gatehouse.Key, string, error) {
	plaintext := gatehouse.NewKeySecret(true)
	k, err := db.EnsureManagementKey(ctx, orgID, plaintext, name)
	if err != nil {
		return nil, "", err
	}
	return k, plaintext, nil
}

// EnsureManagementKey makes sure a management key with this plaintext exists
// for the organization.
func (db *DB) EnsureManagementKey(ctx context.Context, orgID, plaintext, name string) (*gatehouse.Key, error) {
	if !strings.HasPrefix(plaintext, gatehouse.ManagementKeyPrefix) || len(plaintext) < 40 {
		return nil, gatehouse.Errorf(gatehouse.EINVALID, "a management key must start with %s and be at least 40 characters", gatehouse.ManagementKeyPrefix)
	}
	if name == "" {
		name = "Management key"
	}
	if err := validateKeyName(name); err != nil {
		return nil, err
	}
	hash := gatehouse.HashKey(plaintext)
	var k *gatehouse.Key
	err := db.update(ctx, func(tx *Tx) error {
		if _, err := tx.organization(ctx, orgID); err != nil {
			return err
		}
		existing, err := dbrow.ScanKey(tx.QueryRow(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = $1`, hash))
		switch {
		case err == nil && existing.Management && existing.OrganizationID == orgID:
			k = existing
			return nil
		case err == nil:
			return gatehouse.Errorf(gatehouse.EINVALID, "this key value is already in use by another key")
		case !errors.Is(err, pgx.ErrNoRows):
			return err
		}
		k = &gatehouse.Key{Hash: hash, OrganizationID: orgID, Name: name, Management: true, CreatedAt: tx.now}
		if err := tx.insertKey(ctx, k, nil); err != nil {
			return err
		}
		return tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpManagementKeyCreate, ResourceType: gatehouse.ResourceManagementKey,
			ResourceIDs: []string{hash}})
	})
	if err != nil {
		return nil, err
	}
	return k, nil
}

func validateKeyName(name string) error {
	c := gatehouse.KeyCreate{Name: name}
	return c.Validate(time.Time{})
}

func (tx *Tx) organization(ctx context.Context, id string) (string, error) {
	var name string
	err := tx.QueryRow(ctx, `SELECT name FROM organizations WHERE id = $1`, id).Scan(&name)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", gatehouse.NotFound("organization", id)
	}
	return name, err
}
