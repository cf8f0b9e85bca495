package sqlstore

import (
	"context"
	"fmt"

	"gatehouse"
)

// The longest lists, the keys API's four and the audit log, are cut into
// blocks whose sizes triggers keep (migration 0052_list_blocks.sql): a
// block starts at an anchor, a row whose key ends in 000 to 003 (one in
// 1,024), and holds its list's rows from the anchor up to the next one, in
// the ascending order of (time, key). The page at an offset deep in a list
// is found by adding the sizes of the blocks before it, in the page's
// snapshot (a thousand rows at a million), and walking the index from the
// anchor of the block it starts in: about a thousand entries skipped,
// where the walk from the nearer end of the list skips up to half of it.

// blockWalk is the number of entries above which a page is found by the
// blocks rather than by skipping them: below it, the skip costs less than
// reading the blocks.
const blockWalk = 4096

// block is a block of a list: its anchor (at -1 the block before the first
// anchor) and its size.
type block struct {
	at int64
	id string
	n  int
}

// blockStart finds the row at position pos of the list (list, scope) of
// total rows, in the ascending order of (time, key): the anchor of the
// block that holds it (nil: the block before the first anchor) and the
// rows of the block before it. ok is false when the blocks do not add up to
// total, which a correct database never gives: the caller then walks as
// without blocks.
func (tx *Tx) blockStart(ctx context.Context, list, scope string, total, pos int) (anchor *block, skip int, ok bool, err error) {
	query, args := blocksQuery(list, scope)
	rows, err := tx.Query(ctx, query, args...)
	blocks, err := collect(rows, err, func(r Scanner) (b block, err error) {
		err = r.Scan(&b.at, &b.id, &b.n)
		return b, err
	})
	if err != nil {
		return nil, 0, false, err
	}
	sum, start := 0, -1
	for i, b := range blocks {
		if b.n < 0 {
			return nil, 0, false, nil
		}
		if start < 0 && sum+b.n > pos {
			start, skip = i, pos-sum
		}
		sum += b.n
	}
	if sum != total || start < 0 {
		return nil, 0, false, nil
	}
	if b := blocks[start]; b.at >= 0 {
		anchor = &b
	}
	return anchor, skip, true, nil
}

// blocksQuery reads the blocks of a list in its order, with their sizes:
// in the primary key of list_blocks, the list's rows in order.
func blocksQuery(list, scope string) (string, []any) {
	return `SELECT at, id, SUM(n) FROM list_blocks WHERE list = ? AND scope = ? GROUP BY at, id ORDER BY at, id`, []any{list, scope}
}

// byBlocks tells whether a page whose walk from the nearer end or mark
// skips skip entries is found by its list's blocks instead.
func (s *Store) byBlocks(skip int) bool {
	return s.pageWalk == WalkBlocks || (s.pageWalk == WalkNearer && skip > blockWalk)
}

// keyBlockWalk returns the walk to the page at offset of a list of total
// keys by its blocks: forward from the anchor of the block the page starts
// in (the anchor included, when it is in the list), skipping the keys of
// that block before the page.
func (tx *Tx) keyBlockWalk(ctx context.Context, l keyList, total, offset, limit int) (w keyWalk, ok bool, err error) {
	list, scope := keyListCount(l)
	anchor, skip, ok, err := tx.blockStart(ctx, list, scope, total, offset)
	if !ok || err != nil {
		return keyWalk{}, ok, err
	}
	w = keyWalk{skip: skip, limit: limit}
	if anchor != nil {
		w.from = &KeyListCursor{createdAt: anchor.at, hash: anchor.id, inclusive: true}
	}
	return w, true, nil
}

// auditBlockPage reads a page of an organization's whole audit log, of
// total entries, by its blocks, when its walk from the nearer end would
// skip more than blockWalk entries (ok is false otherwise, or when the
// blocks do not add up). The log is listed newest first: the page is read
// in the ascending order of (at, id) from the anchor of the block its
// oldest entry is in, and returned newest first.
func (tx *Tx) auditBlockPage(ctx context.Context, orgID string, total int, page gatehouse.Page) (_ []*gatehouse.AuditEntry, ok bool, err error) {
	w, nonempty := tx.s.walkPage(total, page)
	if !nonempty || !tx.s.byBlocks(w.page.Offset) {
		return nil, false, nil
	}
	offset := max(page.Offset, 0)
	rows := min(page.Limit, total-offset)  // the page's
	pos := max(total-offset-page.Limit, 0) // its oldest entry's, ascending
	anchor, skip, ok, err := tx.blockStart(ctx, "audit_log", orgID, total, pos)
	if !ok || err != nil {
		if tx.s.pageWalk == WalkBlocks && err == nil {
			err = fmt.Errorf("the blocks of the audit log of %s do not add up to its %d entries", orgID, total)
		}
		return nil, false, err
	}
	counted, args := `audit_log WHERE organization_id = ?`, []any{orgID}
	if anchor != nil {
		counted, args = counted+` AND (at, id) >= (?, ?)`, append(args, anchor.at, anchor.id)
	}
	query, qargs := PageQuery(auditColumns, `audit_log`, counted, `at DESC, id DESC`, false, args,
		gatehouse.Page{Offset: skip, Limit: rows}, true)
	rs, err := tx.Query(ctx, query, qargs...)
	entries, err := collect(rs, err, scanAuditEntry)
	return entries, err == nil, err
}

// KeyBlockQueries are, for tests of their plans, the queries of a page
// found by its list's blocks: the blocks read, and the page read from the
// anchor (createdAtMillis, hash), skipping skip keys.
func KeyBlockQueries(orgID, workspaceID string, includeDisabled bool, createdAtMillis int64, hash string, skip, limit int) (blocks, page LoggedQuery) {
	l := keyList{org: orgID, workspace: workspaceID, includeDisabled: includeDisabled}
	list, scope := keyListCount(l)
	blocks.Query, blocks.Args = blocksQuery(list, scope)
	page.Query, page.Args = KeyPageQuery(orgID, workspaceID, includeDisabled,
		&KeyListCursor{createdAt: createdAtMillis, hash: hash, inclusive: true}, skip, limit, false)
	return blocks, page
}

// CheckListBlocks compares the blocks the triggers kept with those counted
// again from the rows, and the anchors with the rows whose keys make them,
// and returns the first difference: for tests and for an operator who
// suspects them.
func (s *Store) CheckListBlocks(ctx context.Context) error {
	_, err := view(ctx, s, func(tx *Tx) (struct{}, error) {
		rows, err := tx.Query(ctx, `SELECT list, scope, at, id, SUM(kept), SUM(counted) FROM (
				SELECT list, scope, at, id, n AS kept, 0 AS counted FROM list_blocks
				UNION ALL
				SELECT list, scope, at, id, 0, count(*) FROM (
					SELECT r.list, r.scope,
						COALESCE((SELECT a.at FROM list_anchors a WHERE a.base = r.base AND a.scope = r.scope
							AND (a.at, a.id) <= (r.at, r.id) ORDER BY a.at DESC, a.id DESC LIMIT 1), -1) AS at,
						COALESCE((SELECT a.id FROM list_anchors a WHERE a.base = r.base AND a.scope = r.scope
							AND (a.at, a.id) <= (r.at, r.id) ORDER BY a.at DESC, a.id DESC LIMIT 1), '') AS id
					FROM list_rows r) placed
				GROUP BY list, scope, at, id) both_ways
			GROUP BY list, scope, at, id HAVING SUM(kept) <> SUM(counted) ORDER BY list, scope, at, id LIMIT 1`)
		if err != nil {
			return struct{}{}, err
		}
		defer rows.Close()
		if rows.Next() {
			var list, scope, id string
			var at, kept, counted int64
			if err := rows.Scan(&list, &scope, &at, &id, &kept, &counted); err != nil {
				return struct{}{}, err
			}
			return struct{}{}, fmt.Errorf("list %s of %s: the block at (%d, %s) is kept at %d keys and holds %d", list, scope, at, id, kept, counted)
		}
		if err := rows.Err(); err != nil {
			return struct{}{}, err
		}
		var stray int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM list_anchors a WHERE NOT EXISTS (
				SELECT 1 FROM api_keys k WHERE k.hash = a.id AND k.created_at = a.at
				AND ((a.base = 'keys' AND k.organization_id = a.scope) OR (a.base = 'workspace_keys' AND k.workspace_id = a.scope)))
			AND NOT EXISTS (SELECT 1 FROM audit_log e WHERE a.base = 'audit_log' AND e.id = a.id AND e.at = a.at AND e.organization_id = a.scope)`).Scan(&stray); err != nil {
			return struct{}{}, err
		}
		if stray > 0 {
			return struct{}{}, fmt.Errorf("%d anchors are of no key", stray)
		}
		var missing int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM api_keys k CROSS JOIN (SELECT 'keys' AS base UNION ALL SELECT 'workspace_keys') b
			WHERE substr(k.hash, length(k.hash) - 2, 3) IN ('000', '001', '002', '003')
			AND (b.base = 'keys' OR k.workspace_id IS NOT NULL) AND NOT EXISTS (
				SELECT 1 FROM list_anchors a WHERE a.base = b.base AND a.at = k.created_at AND a.id = k.hash
				AND a.scope = CASE b.base WHEN 'keys' THEN k.organization_id ELSE k.workspace_id END)`).Scan(&missing); err != nil {
			return struct{}{}, err
		}
		var missingEntries int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM audit_log e
			WHERE substr(e.id, length(e.id) - 2, 3) IN ('000', '001', '002', '003') AND NOT EXISTS (
				SELECT 1 FROM list_anchors a WHERE a.base = 'audit_log' AND a.scope = e.organization_id AND a.at = e.at AND a.id = e.id)`).Scan(&missingEntries); err != nil {
			return struct{}{}, err
		}
		if missing+missingEntries > 0 {
			return struct{}{}, fmt.Errorf("%d keys and %d audit entries that make anchors are not anchors", missing, missingEntries)
		}
		return struct{}{}, nil
	})
	return err
}
