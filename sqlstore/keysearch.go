package sqlstore

import (
	"context"
	"strings"

	"gatehouse"
)

// SearchKeys pages through an organization's regular keys (see
// gatehouse.KeySearch). Each order is one index's (migration
// 0017_key_search.sql): the list newest first walks api_keys_org_list (a
// member's keys, api_keys_creator_list) backwards from the cursor; a name
// search walks api_keys_name_search over the folded names that start with
// the prefix; a hash search walks the primary key; a workspace's keys
// newest first walk api_keys_workspace_list. Nothing is counted or
// skipped, so a page deep in millions of keys costs what the first does.
func (s *Store) SearchKeys(ctx context.Context, orgID string, q gatehouse.KeySearch) (_ *gatehouse.KeyPage, err error) {
	defer wrap(&err, "SearchKeys")
	if err := q.Validate(); err != nil {
		return nil, err
	}
	query, args := keySearchQuery(s.d, orgID, q)
	keys, err := view(ctx, s, func(tx *Tx) ([]*gatehouse.Key, error) {
		rows, err := tx.Query(ctx, `SELECT `+keyColumns+query, args...)
		return collect(rows, err, scanKey)
	})
	if err != nil {
		return nil, err
	}
	page := &gatehouse.KeyPage{Keys: keys}
	if len(keys) > q.Limit {
		page.Keys = keys[:q.Limit]
		page.Next = q.CursorAfter(page.Keys[q.Limit-1])
	}
	return page, nil
}

// keySearchQuery is the SQL of a search, from FROM on, and its arguments
// (one more row than the page, to tell whether another follows). Each
// shape is written so that the planner has one index that fits it best
// (the sqlite package's tests check which each takes).
func keySearchQuery(d Dialect, orgID string, q gatehouse.KeySearch) (string, []any) {
	where, args := `organization_id = ? AND management = FALSE`, []any{orgID}
	if q.CreatorUserID != nil {
		// NOT management, which no index holds, leaves the planner the
		// creator's indexes: with management = FALSE, SQLite (3.53) walks
		// the whole organization's api_keys_org_list instead, looking for
		// the creator's keys in it (seconds at a million keys).
		where, args = `organization_id = ? AND creator_user_id = ? AND NOT management`, append(args, *q.CreatorUserID)
	}
	if q.WorkspaceID != "" {
		where, args = where+` AND workspace_id = ?`, append(args, q.WorkspaceID)
	}
	var order string
	switch fold := d.FoldedKeyName(); {
	case q.HashPrefix != "":
		// organization_id || '' keeps the planner off the organization's
		// indexes, whose every entry it would read and sort: the primary
		// key finds the few keys of the prefix.
		where = strings.Replace(where, `organization_id = ?`, `organization_id || '' = ?`, 1)
		if q.After == nil {
			where, args = where+` AND hash >= ?`, append(args, q.HashPrefix)
		} else {
			where, args = where+` AND hash > ?`, append(args, q.After.Hash)
		}
		where, args = where+` AND hash < ?`, append(args, q.HashPrefix+"g") // 'g' follows every hex digit
		order = `hash`
	case q.NamePrefix != "":
		prefix := gatehouse.FoldKeyName(q.NamePrefix)
		// U+10FFFF sorts after every character that may follow the
		// prefix. The page starts at the prefix, or at the cursor (which
		// lies past the prefix's start): one bound, which the index seeks.
		if q.After == nil {
			where, args = where+` AND `+fold+` >= ?`, append(args, prefix)
		} else {
			where, args = where+` AND (`+fold+`, hash) > (?, ?)`, append(args, q.After.Name, q.After.Hash)
		}
		where, args = where+` AND `+fold+` < ?`, append(args, prefix+"\U0010FFFF")
		order = fold + `, hash`
	default:
		if q.WorkspaceID != "" {
			// A workspace's keys newest first: api_keys_workspace_list,
			// not the organization's list filtered (see the hash search).
			where = strings.Replace(where, `organization_id = ?`, `organization_id || '' = ?`, 1)
		}
		if q.After != nil {
			where, args = where+` AND (created_at, hash) < (?, ?)`, append(args, ms(q.After.CreatedAt), q.After.Hash)
		}
		order = `created_at DESC, hash DESC`
	}
	return ` FROM api_keys WHERE ` + where + ` ORDER BY ` + order + ` LIMIT ?`, append(args, q.Limit+1)
}
