package sqlstore

import (
	"context"
	"database/sql"
	"slices"
	"strconv"

	"gatehouse"
)

// SearchGenerations pages through an organization's ledger newest first
// (see gatehouse.GenerationSearch), without counting or skipping:
//
//   - the whole organization's calls (in a range) walk generations_org
//     backwards from the cursor until the page is full;
//   - a key's calls walk generations_key (the organization's condition
//     is written so that no index serves it, which keeps the planner off
//     generations_org: it would walk that to the key's first call, half a
//     second for a quiet key at 300,000 calls);
//   - a member's keys' calls read generations_key for each key, which
//     yields them in no common order: a first read of the index alone
//     finds the creation time of the page's last call, so that only the
//     page's rows are read and sorted whole (7,500 calls of a member: 4 ms
//     instead of 140);
//   - a model's calls are read a UTC day at a time, newest first, each day
//     one seek in generations_daily (organization, day, model) and the
//     page's rows found as for a member: walking generations_org instead
//     reads every call of the ledger for a model that made none (a slug
//     mistyped), 0.5 s at 300,000 calls.
func (s *Store) SearchGenerations(ctx context.Context, orgID string, q gatehouse.GenerationSearch) (_ *gatehouse.GenerationPage, err error) {
	defer wrap(&err, "SearchGenerations")
	if err := q.Validate(); err != nil {
		return nil, err
	}
	gens, err := view(ctx, s, func(tx *Tx) ([]*gatehouse.Generation, error) {
		if q.Model != "" && q.KeyHash == "" && q.CreatorUserID == nil {
			return tx.searchModel(ctx, orgID, q)
		}
		query, args := generationSearchQuery(orgID, q, nil, q.Limit+1)
		rows, err := tx.Query(ctx, `SELECT `+generationColumns+query, args...)
		return collect(rows, err, scanGeneration)
	})
	if err != nil {
		return nil, err
	}
	page := &gatehouse.GenerationPage{Generations: gens}
	if len(gens) > q.Limit {
		last := gens[q.Limit-1]
		page.Generations, page.Next = gens[:q.Limit], &gatehouse.GenerationCursor{CreatedAt: last.CreatedAt, ID: last.ID}
	}
	return page, nil
}

// searchModel reads the page of a search by model a day at a time, from
// the newest day it may hold (the cursor's, the range's end, or the
// ledger's last) back to the oldest (the range's start, or the ledger's
// first), until it has a page and one more call.
func (tx *Tx) searchModel(ctx context.Context, orgID string, q gatehouse.GenerationSearch) ([]*gatehouse.Generation, error) {
	var first, last sql.NullInt64
	// Two subqueries: each an end of generations_org (min and max in one
	// query read every entry between).
	if err := tx.QueryRow(ctx, `SELECT (SELECT min(created_at) FROM generations WHERE organization_id = ?),
		(SELECT max(created_at) FROM generations WHERE organization_id = ?)`, orgID, orgID).Scan(&first, &last); err != nil || !first.Valid {
		return nil, err
	}
	lo, hi := first.Int64, last.Int64
	if q.Since != nil {
		lo = max(lo, ceilMS(*q.Since))
	}
	if q.Until != nil {
		hi = min(hi, ceilMS(*q.Until)-1)
	}
	if q.After != nil {
		hi = min(hi, q.After.CreatedAt.UnixMilli())
	}
	var out []*gatehouse.Generation
	for day := hi / dayMS; day >= lo/dayMS && len(out) <= q.Limit && day >= 0; day-- {
		query, args := generationSearchQuery(orgID, q, &day, q.Limit+1-len(out))
		rows, err := tx.Query(ctx, `SELECT `+generationColumns+query, args...)
		got, err := collect(rows, err, scanGeneration)
		if err != nil {
			return nil, err
		}
		out = append(out, got...)
	}
	return out, nil
}

// generationSearchQuery is the SQL of a search (validated), from FROM on,
// and its arguments, for limit rows (one more than the page, to tell
// whether another follows); day, when set, keeps that UTC day's calls. The
// sqlite package's tests check the index each shape walks.
func generationSearchQuery(orgID string, q gatehouse.GenerationSearch, day *int64, limit int) (string, []any) {
	where, args := `organization_id = ?`, []any{orgID}
	if q.KeyHash != "" || q.CreatorUserID != nil {
		where = `organization_id || '' = ?`
	}
	at := `created_at`
	if day != nil {
		// The expression of generations_daily, written as it is; and the
		// creation time as +created_at, which no index serves (SQLite
		// would walk generations_org for its order otherwise, every call
		// of the day).
		where += ` AND (created_at / ` + strconv.FormatInt(dayMS, 10) + `) = ?`
		args, at = append(args, *day), `+created_at`
	}
	if q.KeyHash != "" {
		where, args = where+` AND key_hash = ?`, append(args, q.KeyHash)
	}
	if q.Model != "" {
		where, args = where+` AND model = ?`, append(args, q.Model)
	}
	if q.CreatorUserID != nil {
		where, args = where+` AND key_hash IN (SELECT hash FROM api_keys WHERE organization_id = ? AND creator_user_id = ?)`,
			append(args, orgID, *q.CreatorUserID)
	}
	if q.Since != nil {
		where, args = where+` AND `+at+` >= ?`, append(args, ceilMS(*q.Since))
	}
	if q.Until != nil {
		where, args = where+` AND `+at+` < ?`, append(args, ceilMS(*q.Until))
	}
	if day != nil || q.CreatorUserID != nil && q.KeyHash == "" {
		// The page's oldest instant, from the index alone: that of the
		// limit-th call before the cursor's instant (the calls of that
		// instant past the cursor come first, and are newer).
		inner, innerArgs := where, slices.Clone(args)
		if q.After != nil {
			inner, innerArgs = inner+` AND `+at+` < ?`, append(innerArgs, ms(q.After.CreatedAt))
		}
		where, args = where+` AND `+at+` >= COALESCE((SELECT min(created_at) FROM (SELECT created_at FROM generations WHERE `+inner+`
			ORDER BY `+at+` DESC LIMIT ?) page), 0)`, append(append(args, innerArgs...), limit)
	}
	if q.After != nil { // the first bound seeks in either index, the second breaks the ties
		where, args = where+` AND `+at+` <= ? AND (`+at+`, id) < (?, ?)`,
			append(args, ms(q.After.CreatedAt), ms(q.After.CreatedAt), q.After.ID)
	}
	return ` FROM generations WHERE ` + where + ` ORDER BY ` + at + ` DESC, id DESC LIMIT ?`, append(args, limit)
}
