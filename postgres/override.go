package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"
)

// UpdateKey applies an update to a regular key. It overrides the shared
// store's, for speed: PATCH /keys/{hash} is the hottest write of the API,
// and a SERIALIZABLE transaction takes five round trips (BEGIN, read,
// update, audit, COMMIT) where this takes two (PATCH on 2 cores: 2,400/s
// in a transaction, 3,300/s as below).
//
// It runs as two statements and no transaction: read the key, apply the
// update in Go, then one statement that writes the new values only if the
// row still holds the values read (compare and swap) and appends the audit
// entry. A key changed or deleted in between is read again. Usage counters
// are not among the columns written, so concurrent metering never
// conflicts.
func (db *DB) UpdateKey(ctx context.Context, orgID, hash string, u gatehouse.KeyUpdate) (*gatehouse.Key, error) {
	if err := u.Validate(); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(ctx, db.opTimeout)
	defer cancel()
	defer db.Wrote()
	for range maxAttempts {
		k, err := db.updateKeyOnce(ctx, orgID, hash, u)
		if !errors.Is(err, errKeyChanged) {
			return k, mapErr(err)
		}
	}
	return nil, gatehouse.Errorf(gatehouse.EUNAVAILABLE, "the key keeps changing concurrently; retry")
}

// errKeyChanged says the key changed between its read and its update.
var errKeyChanged = errors.New("the key changed meanwhile")

func (db *DB) updateKeyOnce(ctx context.Context, orgID, hash string, u gatehouse.KeyUpdate) (*gatehouse.Key, error) {
	read, err := db.FindKey(ctx, orgID, hash)
	if err != nil {
		return nil, err
	}
	old := sqlstore.KeyUpdateArgs(read)
	now := db.Now().UTC().Truncate(time.Millisecond)
	if err := u.CheckExpiry(now); err != nil {
		return nil, err
	}
	if !read.Apply(u, now) {
		return read, nil // {} changes nothing, not even updated_at
	}
	audit := sqlstore.AuditArgs(ctx, orgID, now, gatehouse.AuditRecord{Operation: gatehouse.OpKeyUpdate,
		ResourceType: gatehouse.ResourceKey, ResourceIDs: []string{hash}, Details: map[string]any{"fields": gatehouse.ChangedFields(u)}})
	args := append(append(append(sqlstore.KeyUpdateArgs(read)[:7], old[:7]...), hash, orgID), audit...)
	k, err := sqlstore.ScanKey(row{db.pool.QueryRow(ctx, updateKeySQL, args...)})
	if errors.Is(err, sqlstore.ErrNoRows) {
		return nil, errKeyChanged
	}
	return k, err
}

// updateKeySQL writes $1–$7 (KeyUpdateArgs' columns) where the row still
// holds $8–$14, and appends the audit entry ($17 on) for the row written.
var updateKeySQL = `WITH u AS (
	UPDATE api_keys SET name = $1, disabled = $2, include_byok_in_limit = $3, limit_nanos = $4, limit_reset = $5,
		expires_at = $6, updated_at = $7
	WHERE hash = $15 AND organization_id = $16 AND NOT management
		AND name = $8 AND disabled = $9 AND include_byok_in_limit = $10 AND limit_nanos IS NOT DISTINCT FROM $11
		AND limit_reset IS NOT DISTINCT FROM $12 AND expires_at IS NOT DISTINCT FROM $13 AND updated_at IS NOT DISTINCT FROM $14
	RETURNING ` + sqlstore.KeyColumns + `
), a AS (
	INSERT INTO audit_log (` + sqlstore.AuditColumns + `)
	SELECT ` + auditValues(16) + ` FROM u
)
SELECT ` + sqlstore.KeyColumns + ` FROM u`

// auditValues is the SELECT list that appends an audit entry from inside a
// statement: the entry's AuditArgs are the parameters following the first n.
func auditValues(n int) string {
	return fmt.Sprintf("$%d, $%d, $%d::bigint, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d, $%d",
		n+1, n+2, n+3, n+4, n+5, n+6, n+7, n+8, n+9, n+10, n+11, n+12, n+13)
}
