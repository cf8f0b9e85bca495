package sqlstore

import (
	"context"
	"sync"

	"gatehouse"
)

// The keys API pages by offset, and the official clients' paginators walk
// a list page after page. The rows before an offset are skipped in an
// index that holds the list's filter and order (migration 0030), but
// skipping a million of them still walks a million entries. So where a
// page ended is remembered (a mark: the offset after it, and the created_at
// and hash of its last key), and the next page, or any later one, walks on
// from the nearest mark before it: each page of a paginator's walk costs
// what the first does.
//
// A mark holds while the organization's list of keys is what it was: the
// organization's key_list_version (in list_counts, migration 0030), which
// triggers grow with every key made, deleted, disabled or enabled (on
// every process sharing the database), is read in the page's snapshot, and
// the marks of another version are never used.

// keyListMarks bounds what the marks hold: lists remembered, and marks in
// each.
const (
	maxMarkedKeyLists = 4096
	maxKeyListMarks   = 256
)

// KeyListCursor is the last key of a page of the keys API, in its order.
type KeyListCursor struct {
	createdAt int64 // milliseconds
	hash      string
}

// keyList names one list of the keys API: an organization's, of one
// workspace or all, with the disabled keys or not.
type keyList struct {
	org, workspace  string
	includeDisabled bool
}

type keyListMarks struct {
	version int64
	at      map[int]KeyListCursor // offset -> the key just before it
}

type keyMarks struct {
	mu    sync.Mutex
	lists map[keyList]*keyListMarks
}

// nearest returns the mark of l at the greatest offset not past offset in
// version, if any.
func (m *keyMarks) nearest(l keyList, version int64, offset int) (int, *KeyListCursor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	marks := m.lists[l]
	if marks == nil || marks.version != version {
		return 0, nil
	}
	best, found := 0, false
	var c KeyListCursor
	for at, cur := range marks.at {
		if at <= offset && (!found || at > best) {
			best, c, found = at, cur, true
		}
	}
	if !found {
		return 0, nil
	}
	return best, &c
}

// mark remembers that the key before offset is c, in version.
func (m *keyMarks) mark(l keyList, version int64, offset int, c KeyListCursor) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lists == nil {
		m.lists = map[keyList]*keyListMarks{}
	}
	marks := m.lists[l]
	switch {
	case marks != nil && marks.version > version:
		return // read in an older snapshot
	case marks == nil || marks.version < version:
		if marks == nil && len(m.lists) >= maxMarkedKeyLists {
			for other := range m.lists { // forget one at random
				delete(m.lists, other)
				break
			}
		}
		marks = &keyListMarks{version: version, at: map[int]KeyListCursor{}}
		m.lists[l] = marks
	}
	if _, ok := marks.at[offset]; !ok && len(marks.at) >= maxKeyListMarks {
		for at := range marks.at {
			delete(marks.at, at)
			break
		}
	}
	marks.at[offset] = c
}

// KeyPageQuery is the query of a page of the keys API, and its arguments:
// the list's keys after the key c (nil: from the first), skipping skip of
// them, at most limit. The keys are found by hash in the index of the
// list's filter and order; only the page's are read from the table
// (pageOf).
func KeyPageQuery(orgID string, workspaceID string, includeDisabled bool, c *KeyListCursor, skip, limit int) (string, []any) {
	where, args := `organization_id = ? AND management = FALSE`, []any{orgID}
	if workspaceID != "" {
		where, args = `workspace_id = ?`, []any{workspaceID}
	}
	if !includeDisabled {
		where += ` AND disabled = FALSE`
	}
	inner, innerArgs := where, args[:len(args):len(args)]
	if c != nil {
		inner, innerArgs = where+` AND (created_at, hash) > (?, ?)`, append(innerArgs, c.createdAt, c.hash)
	}
	all := append(innerArgs, limit, skip)
	return pageOf(keyColumns, `api_keys`, `hash`, `SELECT hash AS page_key FROM api_keys WHERE `+inner+`
		ORDER BY created_at, hash LIMIT ? OFFSET ?`), all
}

// KeyCursorAt is a cursor for tests of KeyPageQuery's plans.
func KeyCursorAt(createdAtMillis int64, hash string) *KeyListCursor {
	return &KeyListCursor{createdAt: createdAtMillis, hash: hash}
}

// FindKeys lists regular keys of the organization.
func (s *Store) FindKeys(ctx context.Context, orgID string, f gatehouse.KeyFilter) (_ []*gatehouse.Key, err error) {
	defer wrap(&err, "FindKeys")
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.Key, error) {
		var version int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(n), 0) FROM list_counts WHERE list = 'key_list_version' AND scope = ?`,
			orgID).Scan(&version); err != nil {
			return nil, err
		}
		l := keyList{org: orgID, includeDisabled: f.IncludeDisabled}
		if f.WorkspaceID != "" {
			w, err := tx.findWorkspace(ctx, orgID, f.WorkspaceID)
			if err != nil {
				return nil, err
			}
			l.workspace = w.ID
		}
		limit := f.Limit
		if limit <= 0 || limit > gatehouse.MaxKeysPerList {
			limit = gatehouse.MaxKeysPerList
		}
		offset := max(f.Offset, 0)
		from, c := s.keyMarks.nearest(l, version, offset)
		query, args := KeyPageQuery(orgID, l.workspace, l.includeDisabled, c, offset-from, limit)
		rows, err := tx.Query(ctx, query, args...)
		keys, err := collect(rows, err, scanKey)
		if err != nil {
			return nil, err
		}
		if n := len(keys); n > 0 {
			last := keys[n-1]
			s.keyMarks.mark(l, version, offset+n, KeyListCursor{last.CreatedAt.UnixMilli(), last.Hash})
		}
		return keys, nil
	})
}
