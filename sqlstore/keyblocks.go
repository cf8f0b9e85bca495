package sqlstore

import (
	"context"
	"fmt"
)

// The keys API's lists are cut into blocks whose sizes triggers keep
// (migration 0052_key_blocks.sql): a block starts at an anchor, a key whose
// hash ends in 000 to 003 (one in 1,024), and holds its list's keys from
// the anchor up to the next one. The page at an offset deep in a list is
// found by adding the sizes of the blocks before it, in the page's
// snapshot (a thousand rows at a million keys), and walking the index from
// the anchor of the block it starts in: about a thousand entries skipped,
// where the walk from the nearer end of the list skips up to half of it.

// keyBlockWalk is the number of entries above which a page of the keys API
// is found by the blocks rather than by skipping them: below it, the skip
// costs less than reading the blocks.
const keyBlockWalk = 4096

// keyBlock is a block of a list: its anchor (at -1 the block before the
// first anchor) and its size.
type keyBlock struct {
	at int64
	id string
	n  int
}

// keyBlockWalk returns the walk to the page at offset of a list of total
// keys by its blocks: forward from the anchor of the block the page starts
// in (the anchor included, when it is in the list), skipping the keys of
// the block before the page. ok is false when the blocks do not add up to
// total, which a correct database never gives: the caller then walks as
// without blocks.
func (tx *Tx) keyBlockWalk(ctx context.Context, l keyList, total, offset, limit int) (w keyWalk, ok bool, err error) {
	query, args := keyBlocksQuery(l)
	rows, err := tx.Query(ctx, query, args...)
	blocks, err := collect(rows, err, func(r Scanner) (b keyBlock, err error) {
		err = r.Scan(&b.at, &b.id, &b.n)
		return b, err
	})
	if err != nil {
		return keyWalk{}, false, err
	}
	sum, start := 0, -1
	for i, b := range blocks {
		if b.n < 0 {
			return keyWalk{}, false, nil
		}
		if start < 0 && sum+b.n > offset {
			start, w = i, keyWalk{skip: offset - sum, limit: limit}
		}
		sum += b.n
	}
	if sum != total || start < 0 {
		return keyWalk{}, false, nil
	}
	if b := blocks[start]; b.at >= 0 {
		w.from = &KeyListCursor{createdAt: b.at, hash: b.id, inclusive: true}
	}
	return w, true, nil
}

// keyBlocksQuery reads the blocks of a list in its order, with their
// sizes: in the primary key of list_blocks, the list's rows in order.
func keyBlocksQuery(l keyList) (string, []any) {
	list, scope := keyListCount(l)
	return `SELECT at, id, SUM(n) FROM list_blocks WHERE list = ? AND scope = ? GROUP BY at, id ORDER BY at, id`, []any{list, scope}
}

// KeyBlockQueries are, for tests of their plans, the queries of a page
// found by its list's blocks: the blocks read, and the page read from the
// anchor (createdAtMillis, hash), skipping skip keys.
func KeyBlockQueries(orgID, workspaceID string, includeDisabled bool, createdAtMillis int64, hash string, skip, limit int) (blocks, page LoggedQuery) {
	l := keyList{org: orgID, workspace: workspaceID, includeDisabled: includeDisabled}
	blocks.Query, blocks.Args = keyBlocksQuery(l)
	page.Query, page.Args = KeyPageQuery(orgID, workspaceID, includeDisabled,
		&KeyListCursor{createdAt: createdAtMillis, hash: hash, inclusive: true}, skip, limit, false)
	return blocks, page
}

// CheckKeyBlocks compares the blocks the triggers kept with those counted
// again from the keys, and returns the first difference: for tests and
// for an operator who suspects them.
func (s *Store) CheckKeyBlocks(ctx context.Context) error {
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
					FROM key_list_rows r) placed
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
				AND ((a.base = 'keys' AND k.organization_id = a.scope) OR (a.base = 'workspace_keys' AND k.workspace_id = a.scope)))`).Scan(&stray); err != nil {
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
		if missing > 0 {
			return struct{}{}, fmt.Errorf("%d anchor keys are not anchors", missing)
		}
		return struct{}{}, nil
	})
	return err
}
