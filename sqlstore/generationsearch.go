package sqlstore

import (
	"context"

	"gatehouse"
)

// SearchGenerations pages through an organization's ledger newest first
// (see gatehouse.GenerationSearch): a walk of generations_org (a key's
// calls, generations_key) backwards from the cursor, reading rows until
// the page is full. Nothing is counted or skipped.
func (s *Store) SearchGenerations(ctx context.Context, orgID string, q gatehouse.GenerationSearch) (_ *gatehouse.GenerationPage, err error) {
	defer wrap(&err, "SearchGenerations")
	if err := q.Validate(); err != nil {
		return nil, err
	}
	where, args := `organization_id = ?`, []any{orgID}
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
		where, args = where+` AND created_at >= ?`, append(args, ceilMS(*q.Since))
	}
	if q.Until != nil {
		where, args = where+` AND created_at < ?`, append(args, ceilMS(*q.Until))
	}
	if q.After != nil {
		where, args = where+` AND (created_at, id) < (?, ?)`, append(args, ms(q.After.CreatedAt), q.After.ID)
	}
	gens, err := view(ctx, s, func(tx *Tx) ([]*gatehouse.Generation, error) {
		rows, err := tx.Query(ctx, `SELECT `+generationColumns+` FROM generations WHERE `+where+`
			ORDER BY created_at DESC, id DESC LIMIT ?`, append(args, q.Limit+1)...)
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
