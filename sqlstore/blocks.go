package sqlstore

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"gatehouse"
)

// The longest lists, the keys API's four, the audit log and the members,
// are cut into blocks whose sizes are kept (migration
// 0052_list_blocks.sql): a block starts at an anchor, a row of its base,
// and holds its list's rows from the anchor up to the next one, in the
// ascending order of (time, key). The page at an offset deep in a list is
// found by adding the sizes of the blocks before it, in the page's
// snapshot (a thousand rows at a million), and walking the index from the
// anchor of the block it starts in: about a thousand entries skipped,
// where the walk from the nearer end of the list skips up to half of it.
// The last block, from the last anchor on, is where rows are made: its
// size is not kept but is what the others leave of the list's count, and
// CloseListBlocks places anchors in it once its rows are a minute old.

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
// rows of the block before it. The blocks kept are every block but the
// last, which starts at the last anchor and holds what the others leave of
// total. ok is false when the blocks do not add up to total, which a
// correct database never gives: the caller then walks as without blocks.
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
	last := block{at: -1}
	err = tx.QueryRow(ctx, `SELECT at, id FROM list_anchors WHERE base = (SELECT base FROM list_bases WHERE list = ?) AND scope = ?
		ORDER BY at DESC, id DESC LIMIT 1`, list, scope).Scan(&last.at, &last.id)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return nil, 0, false, err
	}
	sum := 0
	for _, b := range blocks {
		if b.n < 0 || b.at > last.at || (b.at == last.at && b.id >= last.id) {
			return nil, 0, false, nil
		}
		sum += b.n
	}
	if last.n = total - sum; last.n < 0 {
		return nil, 0, false, nil
	}
	sum = 0
	for _, b := range append(blocks, last) {
		if sum+b.n > pos {
			if b.at >= 0 {
				anchor = &b
			}
			return anchor, pos - sum, true, nil
		}
		sum += b.n
	}
	return nil, 0, false, nil // pos is past the end: no page to find
}

// blocksQuery reads the blocks kept of a list in its order, with their
// sizes: in the primary key of list_blocks, the list's rows in order.
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

// blockPageQuery returns the query of a page of a list (list, scope) of
// total rows by its blocks, as countAndPage would read it otherwise (""
// when the blocks do not add up: the caller walks as without them). The
// list's order is two terms, (time, key), ascending or both descending:
// the page is read in the ascending order from the anchor of the block its
// first row in that order is in, and returned in the list's.
func (tx *Tx) blockPageQuery(ctx context.Context, list, scope string, total int, columns, from, counted, order string, scoped bool, args []any, page gatehouse.Page) (string, []any, error) {
	offset := max(page.Offset, 0)
	rows := min(page.Limit, total-offset) // the page's
	terms := strings.Split(order, ",")
	desc := strings.HasSuffix(strings.TrimSpace(terms[0]), " DESC")
	pos := offset // the page's first row in the ascending order
	if desc {
		pos = max(total-offset-page.Limit, 0)
	}
	anchor, skip, ok, err := tx.blockStart(ctx, list, scope, total, pos)
	if !ok || err != nil {
		if tx.s.pageWalk == WalkBlocks && err == nil {
			err = fmt.Errorf("the blocks of list %s of %s do not add up to its %d rows", list, scope, total)
		}
		return "", nil, err
	}
	countedArgs := args
	if anchor != nil {
		ordered := strings.TrimSuffix(strings.TrimSpace(terms[0]), " DESC") + ", " + strings.TrimSuffix(strings.TrimSpace(terms[1]), " DESC")
		counted += ` AND (` + ordered + `) >= (?, ?)`
		countedArgs = append(append([]any{}, args...), anchor.at, anchor.id)
	}
	query, qargs := pageQuery(columns, from, counted, order, scoped, args, countedArgs, gatehouse.Page{Offset: skip, Limit: rows}, desc)
	return query, qargs, nil
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

// CheckListBlocks compares the blocks kept with those counted again from
// the rows (every block but each list's last, which is not kept), and
// the lists' kept counts with their rows, checks that every anchor is a
// row of its base, and returns the first difference: for tests and for an
// operator who suspects them.
func (s *Store) CheckListBlocks(ctx context.Context) error {
	_, err := view(ctx, s, func(tx *Tx) (struct{}, error) {
		rows, err := tx.Query(ctx, `SELECT list, scope, at, id, SUM(kept), SUM(counted) FROM (
				SELECT list, scope, at, id, n AS kept, 0 AS counted FROM list_blocks
				UNION ALL
				SELECT list, scope, at, id, 0, count(*) FROM (
					SELECT r.list, r.scope, `+blockOf("b.base")+`, b.base
					FROM list_rows r JOIN list_bases b ON b.list = r.list) placed
				WHERE EXISTS (SELECT 1 FROM list_anchors a
					WHERE a.base = placed.base AND a.scope = placed.scope AND (a.at, a.id) > (placed.at, placed.id))
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
			return struct{}{}, fmt.Errorf("list %s of %s: the block at (%d, %s) is kept at %d rows and holds %d", list, scope, at, id, kept, counted)
		}
		if err := rows.Err(); err != nil {
			return struct{}{}, err
		}
		var list, scope string
		var kept, counted int64
		err = tx.QueryRow(ctx, `SELECT list, scope, SUM(kept), SUM(counted) FROM (
				SELECT list, scope, n AS kept, 0 AS counted FROM list_counts WHERE list IN (SELECT list FROM list_bases)
				UNION ALL
				SELECT list, scope, 0, 1 FROM list_rows) both_ways
			GROUP BY list, scope HAVING SUM(kept) <> SUM(counted) ORDER BY list, scope LIMIT 1`).Scan(&list, &scope, &kept, &counted)
		if err == nil {
			return struct{}{}, fmt.Errorf("list %s of %s: its count is kept at %d rows and it holds %d", list, scope, kept, counted)
		} else if !errors.Is(err, ErrNoRows) {
			return struct{}{}, err
		}
		var stray int
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM list_anchors a WHERE NOT EXISTS (
				SELECT 1 FROM list_rows r WHERE r.list = a.base AND r.scope = a.scope AND r.at = a.at AND r.id = a.id)`).Scan(&stray); err != nil {
			return struct{}{}, err
		}
		if stray > 0 {
			return struct{}{}, fmt.Errorf("%d anchors are no row of their base", stray)
		}
		return struct{}{}, nil
	})
	return err
}

// BlockSize is the number of rows of a base between the anchors that
// CloseListBlocks places.
const BlockSize = 1024

// CloseListBlocks places anchors in the last block of each base whose last
// block holds two blocks' rows or more: one every size rows of the base
// after its last anchor, among those made before horizon (a minute ago:
// no row is being made there, so no write waits on this one); and keeps
// the blocks before the new last anchor. It returns the anchors placed.
// Every instance may run it: each base is closed in short writes of its
// own, which two instances do one after the other.
func (s *Store) CloseListBlocks(ctx context.Context, horizon time.Time, size int) (placed int, err error) {
	defer wrap(&err, "CloseListBlocks")
	type base struct{ base, scope string }
	long, err := view(ctx, s, func(tx *Tx) ([]base, error) {
		rows, err := tx.Query(ctx, `SELECT c.list, c.scope
			FROM (SELECT list, scope, SUM(n) AS total FROM list_counts WHERE list IN (SELECT base FROM list_bases) GROUP BY list, scope) c
			LEFT JOIN (SELECT list, scope, SUM(n) AS kept FROM list_blocks WHERE list IN (SELECT base FROM list_bases) GROUP BY list, scope) b
				ON b.list = c.list AND b.scope = c.scope
			WHERE c.total - COALESCE(b.kept, 0) >= ? ORDER BY c.list, c.scope`, 2*size)
		return collect(rows, err, func(r Scanner) (b base, err error) {
			err = r.Scan(&b.base, &b.scope)
			return b, err
		})
	})
	if err != nil {
		return 0, err
	}
	for _, b := range long {
		for {
			n, err := update(ctx, s, func(tx *Tx) (int, error) { return tx.closeBlocks(ctx, b.base, b.scope, horizon, size) })
			if err != nil {
				return placed, err
			}
			if placed += n; n == 0 {
				break
			}
		}
	}
	return placed, nil
}

// closeBlocksAtOnce bounds the blocks one write of CloseListBlocks closes:
// a few thousand rows, a short write (on SQLite, every other write waits
// for it).
const closeBlocksAtOnce = 8

// closeBlocks places the anchors of one base's scope (CloseListBlocks), at
// most closeBlocksAtOnce of them, and returns how many.
func (tx *Tx) closeBlocks(ctx context.Context, base, scope string, horizon time.Time, size int) (int, error) {
	lastAnchor := func() (block, error) {
		last := block{at: -1}
		err := tx.QueryRow(ctx, `SELECT at, id FROM list_anchors WHERE base = ? AND scope = ? ORDER BY at DESC, id DESC LIMIT 1`,
			base, scope).Scan(&last.at, &last.id)
		if errors.Is(err, ErrNoRows) {
			err = nil
		}
		return last, err
	}
	from, err := lastAnchor()
	if err != nil {
		return 0, err
	}
	placed, err := tx.Exec(ctx, `INSERT INTO list_anchors (base, scope, at, id)
		SELECT ?, ?, at, id FROM (
			SELECT at, id, row_number() OVER (ORDER BY at, id) AS k FROM (
				SELECT at, id FROM list_rows WHERE list = ? AND scope = ? AND (at, id) > (?, ?) AND at < ?
				ORDER BY at, id LIMIT ?) tail) t
		WHERE k % ? = 0`, base, scope, base, scope, from.at, from.id, ms(horizon), closeBlocksAtOnce*size, size)
	if err != nil || placed == 0 {
		return 0, err
	}
	to, err := lastAnchor()
	if err != nil {
		return 0, err
	}
	rows, err := tx.Query(ctx, `SELECT list FROM list_bases WHERE base = ? ORDER BY list`, base)
	lists, err := collect(rows, err, func(r Scanner) (l string, err error) { return l, r.Scan(&l) })
	if err != nil {
		return 0, err
	}
	// The rows of the base's lists from the last anchor before to the last
	// now, each in the block of the anchor at or before it.
	args := append([]any{base, base}, anyOf(lists)...)
	args = append(args, scope, from.at, from.id, to.at, to.id)
	_, err = tx.Exec(ctx, `INSERT INTO list_blocks (list, scope, at, id, part, n)
		SELECT list, scope, at, id, 0, count(*) FROM (
			SELECT r.list, r.scope, `+blockOf("?")+`
			FROM list_rows r
			WHERE r.list IN (`+placeholders(len(lists))+`) AND r.scope = ? AND (r.at, r.id) >= (?, ?) AND (r.at, r.id) < (?, ?)) placed
		GROUP BY list, scope, at, id`, args...)
	return int(placed), err
}

// anyOf returns the strings as values of a statement's arguments.
func anyOf(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}

// blockOf is the columns at and id of the anchor of the block that holds
// row r (of list_rows) in the lists of base (an expression): the last
// anchor at or before the row, else -1 and the empty id: the block
// before the first anchor.
func blockOf(base string) string {
	anchor := func(column, none string) string {
		return `COALESCE((SELECT a.` + column + ` FROM list_anchors a WHERE a.base = ` + base + ` AND a.scope = r.scope
			AND (a.at, a.id) <= (r.at, r.id) ORDER BY a.at DESC, a.id DESC LIMIT 1), ` + none + `) AS ` + column
	}
	return anchor("at", "-1") + ", " + anchor("id", "''")
}

// RebuildListBlocks places again, from scratch, the anchors and blocks of
// every list, as CloseListBlocks would with no horizon but in a few long
// statements: for a database filled without its triggers, that nothing
// reads yet (gatehouse bench-seed).
var RebuildListBlocks = `DELETE FROM list_anchors;
DELETE FROM list_blocks;
INSERT INTO list_anchors (base, scope, at, id)
    SELECT list, scope, at, id FROM (
        SELECT list, scope, at, id, row_number() OVER (PARTITION BY list, scope ORDER BY at, id) AS k
        FROM list_rows WHERE list IN (SELECT base FROM list_bases)) t
    WHERE k % ` + fmt.Sprint(BlockSize) + ` = 0;
INSERT INTO list_blocks (list, scope, at, id, part, n)
    SELECT list, scope, at, id, 0, count(*) FROM (
        SELECT r.list, r.scope, ` + blockOf("b.base") + `, b.base
        FROM list_rows r JOIN list_bases b ON b.list = r.list) placed
    WHERE EXISTS (SELECT 1 FROM list_anchors a WHERE a.base = placed.base AND a.scope = placed.scope AND (a.at, a.id) > (placed.at, placed.id))
    GROUP BY list, scope, at, id;`

// rowsBefore returns how many rows of a list that has blocks (list,
// scope) of total rows were made before time at: the kept sizes of the
// blocks before the one that holds at, and a count of that block's own
// rows before at (at most its size, about a thousand entries, in the index
// of counted: the list's FROM clause, with args; bounded by the block's
// size, so that no planner expects more and reads in parallel). The list's
// order is (timeColumn, id), ascending. When the blocks say less than none
// or more than total, it counts the rows before at instead.
func (tx *Tx) rowsBefore(ctx context.Context, list, scope string, total int, at int64, counted, timeColumn string, args []any) (int, error) {
	anchor := block{at: -1}
	err := tx.QueryRow(ctx, `SELECT at, id FROM list_anchors WHERE base = (SELECT base FROM list_bases WHERE list = ?) AND scope = ?
		AND at < ? ORDER BY at DESC, id DESC LIMIT 1`, list, scope, at).Scan(&anchor.at, &anchor.id)
	if err != nil && !errors.Is(err, ErrNoRows) {
		return 0, err
	}
	// The blocks before the anchor's, the anchor's (if kept) and all kept.
	var before, size, kept, all int
	if err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(CASE WHEN (at, id) < (?, ?) THEN n ELSE 0 END), 0),
			COALESCE(SUM(CASE WHEN at = ? AND id = ? THEN n ELSE 0 END), 0), count(CASE WHEN at = ? AND id = ? THEN 1 END), COALESCE(SUM(n), 0)
		FROM list_blocks WHERE list = ? AND scope = ?`, anchor.at, anchor.id, anchor.at, anchor.id, anchor.at, anchor.id, list, scope).
		Scan(&before, &size, &kept, &all); err != nil {
		return 0, err
	}
	if kept == 0 { // the last block: what the kept ones leave
		size = total - all
	}
	var within int
	if size > 0 {
		err = tx.QueryRow(ctx, `SELECT count(*) FROM (SELECT 1 AS one FROM `+counted+` AND (`+timeColumn+`, id) >= (?, ?) AND `+timeColumn+` < ?
			LIMIT ?) block`, append(append([]any{}, args...), anchor.at, anchor.id, at, size)...).Scan(&within)
		if err != nil {
			return 0, err
		}
	}
	if n := before + within; n >= 0 && n <= total && size >= 0 {
		return n, nil
	}
	if tx.s.pageWalk == WalkBlocks {
		return 0, fmt.Errorf("the blocks of list %s of %s place %d rows before %d, of %d", list, scope, before+within, at, total)
	}
	var n int
	err = tx.QueryRow(ctx, `SELECT count(*) FROM `+counted+` AND `+timeColumn+` < ?`, append(append([]any{}, args...), at)...).Scan(&n)
	return n, err
}
