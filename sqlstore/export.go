package sqlstore

import (
	"context"
	"gatehouse"
	"time"
)

// What an engine's override needs of the row mapping (see the postgres
// package's UpdateKey): the key's columns and scanner, the arguments of a
// key update, and the audit entry's.

// KeyColumns are the columns of api_keys, in ScanKey order.
const KeyColumns = keyColumns

// AuditColumns are the columns of audit_log, in AuditArgs order.
const AuditColumns = auditColumns

// ScanKey scans a row of KeyColumns.
func ScanKey(s Scanner) (*gatehouse.Key, error) { return scanKey(s) }

// KeyUpdateArgs returns the values of name, disabled,
// include_byok_in_limit, limit_nanos, limit_reset, expires_at and
// updated_at, then the hash, of a changed key.
func KeyUpdateArgs(k *gatehouse.Key) []any { return keyUpdateArgs(k) }

// AuditArgs returns the values of AuditColumns of a new entry made now
// from what ctx carries. Its JSON columns are encoded when the statement
// runs, and fail it if they cannot be.
func AuditArgs(ctx context.Context, orgID string, now time.Time, rec gatehouse.AuditRecord) []any {
	return auditArgs(gatehouse.NewAuditEntry(ctx, orgID, now, rec))
}

// KeySearchQuery is the SQL (from FROM on) and the arguments of a key
// search (validated), for the engines' tests of its query plans.
func KeySearchQuery(d Dialect, orgID string, q gatehouse.KeySearch) (string, []any) {
	return keySearchQuery(d, orgID, q)
}

// GenerationSearchQuery is the SQL (from FROM on) and the arguments of a
// search of the ledger (validated), of one UTC day's calls when day is
// set (a search by model), for the engines' tests of its plans.
func GenerationSearchQuery(orgID string, q gatehouse.GenerationSearch, day *int64) (string, []any) {
	return generationSearchQuery(orgID, q, day, q.Limit+1)
}

// AuditSearchQuery is the SQL and the arguments of a page of the audit
// log, for the engines' tests of its plans.
func AuditSearchQuery(orgID string, f gatehouse.AuditFilter, limit int) (string, []any) {
	return auditSearchQuery(orgID, f, limit)
}
