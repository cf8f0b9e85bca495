package seed

import (
	"encoding/json"

	"gatehouse"
)

// auditTable writes the audit log that creating the seeded keys through
// the API would have left (Options.Audit): one key.create a key, by the
// organization's management key, at the key's creation, in its workspace;
// and, every 10,000th key, a workspace.update, so that an operation rarely
// made is there to be looked for.
func (p *plan) auditTable() table {
	actor := gatehouse.HashKey(p.mgmtKey)
	return table{name: "audit_log", n: p.opts.Keys, deferIndexes: p.opts.Keys >= 100_000,
		cols: []string{"id", "organization_id", "at", "actor_key_hash", "operation", "resource_type", "resource_ids",
			"details", "result"},
		row: func(k int, d []any) bool {
			ws := p.workspaceID(p.spread(k, p.keysDefault))
			op, typ, id, details := gatehouse.OpKeyCreate, gatehouse.ResourceKey, p.keyHash(k), map[string]any{"workspace_id": ws}
			if k%10_000 == 9_999 {
				op, typ, id, details = gatehouse.OpWorkspaceUpdate, gatehouse.ResourceWorkspace, ws, map[string]any{"fields": []string{"description"}}
			}
			ids, _ := json.Marshal([]string{id})
			det, _ := json.Marshal(details)
			fill(d, p.uuid('l', k), p.orgID, p.base+int64(k), actor, op, typ, string(ids), string(det), gatehouse.AuditResultSuccess)
			return true
		}}
}
