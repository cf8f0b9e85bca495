package sqlstore

import (
	"context"
	"fmt"
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
// what the first does. A page nearer the end of its list than the start
// and any mark before it is read backwards, from the end (whose distance
// the list's length, kept by triggers in list_counts, migration 0051,
// gives) or from a mark after the page: the index walked the other way,
// skipping the keys after the page.
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
	// inclusive makes the cursor a block's anchor (blocks.go): the
	// page starts at the key itself rather than after it.
	inclusive bool
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

// around returns the marks of l in version nearest to a page: the one at
// the greatest offset not past from, and the one at the least offset not
// before to, if any.
func (m *keyMarks) around(l keyList, version int64, from, to int) (before, after *keyMark) {
	m.mu.Lock()
	defer m.mu.Unlock()
	marks := m.lists[l]
	if marks == nil || marks.version != version {
		return nil, nil
	}
	for at, cur := range marks.at {
		if at <= from && (before == nil || at > before.at) {
			before = &keyMark{at, cur}
		}
		if at >= to && (after == nil || at < after.at) {
			after = &keyMark{at, cur}
		}
	}
	return before, after
}

// keyMark is a mark: the key just before the offset at.
type keyMark struct {
	at  int
	key KeyListCursor
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
// them, at most limit. Reversed, the list is read backwards: its keys up to
// c and including it (nil: from the last), newest first, skipping skip of
// them, and the page's rows returned in the list's order. The keys are
// found by hash in the index of the list's filter and order (walked
// backwards when reversed); only the page's are read from the table
// (pageOf).
func KeyPageQuery(orgID string, workspaceID string, includeDisabled bool, c *KeyListCursor, skip, limit int, reversed bool) (string, []any) {
	where, args := `organization_id = ? AND management = FALSE`, []any{orgID}
	if workspaceID != "" {
		where, args = `workspace_id = ?`, []any{workspaceID}
	}
	if !includeDisabled {
		where += ` AND disabled = FALSE`
	}
	order, after := `created_at, hash`, `>`
	if reversed {
		order, after = `created_at DESC, hash DESC`, `<=`
	}
	inner, innerArgs := where, args[:len(args):len(args)]
	if c != nil {
		if c.inclusive && !reversed {
			after = `>=`
		}
		inner, innerArgs = where+` AND (created_at, hash) `+after+` (?, ?)`, append(innerArgs, c.createdAt, c.hash)
	}
	all := append(innerArgs, limit, skip)
	return pageOf(keyColumns, `api_keys`, `hash`, `SELECT hash AS page_key FROM api_keys WHERE `+inner+`
		ORDER BY `+order+` LIMIT ? OFFSET ?`, reversed), all
}

// KeyCursorAt is a cursor for tests of KeyPageQuery's plans.
func KeyCursorAt(createdAtMillis int64, hash string) *KeyListCursor {
	return &KeyListCursor{createdAt: createdAtMillis, hash: hash}
}

// keyListCount is the list_counts list that counts the keys of a list
// (migration 0051), scoped by its workspace or else its organization.
func keyListCount(l keyList) (list, scope string) {
	list, scope = "keys", l.org
	if l.workspace != "" {
		list, scope = "workspace_keys", l.workspace
	}
	if !l.includeDisabled {
		list += "_enabled"
	}
	return list, scope
}

// keyWalk is the way a page of the keys API is read: from a mark (nil:
// from an end of the list), forward or reversed, skipping skip keys, at
// most limit (reversed: the page's keys, which the last page may have
// fewer of).
type keyWalk struct {
	from        *KeyListCursor
	skip, limit int
	reversed    bool
}

// walkKeys returns the way to read the page of limit keys at offset of a
// list of total keys that skips the fewest keys: from its start or the
// nearest mark before the page, forward; or from its end or the nearest
// mark after the page, reversed. ok is false when the page is empty.
func (s *Store) walkKeys(l keyList, version int64, total, offset, limit int) (w keyWalk, ok bool) {
	rows := max(min(limit, total-offset), 0) // the page's
	end := offset + rows
	before, after := s.keyMarks.around(l, version, offset, end)
	forward := keyWalk{skip: offset, limit: limit}
	if before != nil {
		forward = keyWalk{from: &before.key, skip: offset - before.at, limit: limit}
	}
	backward := keyWalk{skip: max(total-end, 0), limit: rows, reversed: true}
	if after != nil && after.at-end < backward.skip {
		backward = keyWalk{from: &after.key, skip: after.at - end, limit: rows, reversed: true}
	}
	return nearer(s.pageWalk, rows, forward, forward.skip, backward, backward.skip)
}

// FindKeys lists regular keys of the organization: the page is read from
// the nearest of the list's ends and the marks around it (walkKeys), the
// list's length kept by triggers (migration 0051) and read, with its
// version, in the page's snapshot.
func (s *Store) FindKeys(ctx context.Context, orgID string, f gatehouse.KeyFilter) (_ []*gatehouse.Key, err error) {
	defer wrap(&err, "FindKeys")
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.Key, error) {
		l := keyList{org: orgID, includeDisabled: f.IncludeDisabled}
		if f.WorkspaceID != "" {
			w, err := tx.findWorkspace(ctx, orgID, f.WorkspaceID)
			if err != nil {
				return nil, err
			}
			l.workspace = w.ID
		}
		list, scope := keyListCount(l)
		var version, total int64
		if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(CASE WHEN list = 'key_list_version' THEN n END), 0),
			COALESCE(SUM(CASE WHEN list = ? THEN n END), 0) FROM list_counts
			WHERE (list = 'key_list_version' AND scope = ?) OR (list = ? AND scope = ?)`,
			list, orgID, list, scope).Scan(&version, &total); err != nil {
			return nil, err
		}
		limit := f.Limit
		if limit <= 0 || limit > gatehouse.MaxKeysPerList {
			limit = gatehouse.MaxKeysPerList
		}
		offset := max(f.Offset, 0)
		w, ok := s.walkKeys(l, version, int(total), offset, limit)
		if !ok {
			return []*gatehouse.Key{}, nil
		}
		if s.byBlocks(w.skip) {
			b, ok, err := tx.keyBlockWalk(ctx, l, int(total), offset, limit)
			switch {
			case err != nil:
				return nil, err
			case s.pageWalk == WalkBlocks && !ok:
				return nil, fmt.Errorf("the blocks of list %v do not add up to its %d keys", l, total)
			case ok && (b.skip < w.skip || s.pageWalk == WalkBlocks):
				w = b
			}
		}
		query, args := KeyPageQuery(orgID, l.workspace, l.includeDisabled, w.from, w.skip, w.limit, w.reversed)
		rows, err := tx.Query(ctx, query, args...)
		keys, err := collect(rows, err, scanKey)
		if err != nil {
			return nil, err
		}
		if n := len(keys); n > 0 {
			last := keys[n-1]
			s.keyMarks.mark(l, version, offset+n, KeyListCursor{createdAt: last.CreatedAt.UnixMilli(), hash: last.Hash})
		}
		return keys, nil
	})
}
