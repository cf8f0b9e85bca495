package sqlstore

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"gatehouse"

	"github.com/google/uuid"
)

// Content of generations: written with their ledger entries, sealed with
// the secret box, for the generations of workspaces that log I/O.

// storeContent writes the content of the generations a settle charged, for
// those whose workspace logs I/O (is_observability_io_logging_enabled), at
// its sampling rate. It rides the settle's own write: the request path
// never waits for it.
func (tx *Tx) storeContent(ctx context.Context, gens map[string]*gatehouse.Generation) error {
	var with []*gatehouse.Generation
	var workspaces []string
	for _, g := range gens {
		if g.Content != nil {
			with = append(with, g)
			workspaces = append(workspaces, g.WorkspaceID)
		}
	}
	if len(with) == 0 || tx.box == nil {
		return nil
	}
	rates, err := tx.loggingRates(ctx, workspaces)
	if err != nil || len(rates) == 0 {
		return err
	}
	slices.SortFunc(with, func(a, b *gatehouse.Generation) int { return strings.Compare(a.ID, b.ID) })
	var rows [][]any
	size := 0
	for _, g := range with {
		rate, logged := rates[g.WorkspaceID]
		if !logged || !gatehouse.IOSampled(g.ID, rate) {
			continue
		}
		plain, err := json.Marshal(g.Content)
		if err != nil {
			continue // messages that are not JSON: nothing readable to keep
		}
		sealed := tx.box.Seal(plain, contentAD(g.ID))
		rows, size = append(rows, []any{g.ID, sealed, ms(g.CreatedAt)}), size+len(sealed)
		// A statement carries a bounded amount: prompts can be large.
		if len(rows) == 100 || size >= 4<<20 {
			if err := tx.insertContent(ctx, rows); err != nil {
				return err
			}
			rows, size = nil, 0
		}
	}
	return tx.insertContent(ctx, rows)
}

func (tx *Tx) insertContent(ctx context.Context, rows [][]any) error {
	if len(rows) == 0 {
		return nil
	}
	return tx.insertLater(ctx, "generation_content", "generation_id, sealed, created_at", rows, "ON CONFLICT DO NOTHING")
}

// contentAD binds sealed content to its generation: it cannot be moved to
// another's row.
func contentAD(generationID string) []byte { return []byte("generation_content:" + generationID) }

// loggingRates returns, of the workspaces, those that log I/O, with their
// sampling rates. Every settle that carries content asks (with I/O logging
// off, the default, that is every one), so the answer is remembered as
// GuardrailsForKey's is: until the next write this process commits, or
// another instance's for at most policyTTL.
func (tx *Tx) loggingRates(ctx context.Context, workspaces []string) (map[string]float64, error) {
	c := &tx.s.logging
	writes, now := tx.s.writes.Load(), time.Now()
	out := map[string]float64{}
	var missing []string
	for _, w := range workspaces {
		if v, ok := c.entries.Load(w); ok {
			if e := v.(*loggingEntry); e.writes == writes && now.Sub(e.at) < policyTTL {
				if e.logged {
					out[w] = e.rate
				}
				continue
			}
		}
		missing = append(missing, w)
	}
	if len(missing) == 0 {
		return out, nil
	}
	slices.Sort(missing)
	missing = slices.Compact(missing)
	cond, args := tx.in("id", missing)
	rows, err := tx.Query(ctx, `SELECT id, io_logging_sampling_rate FROM workspaces WHERE `+cond+
		` AND is_observability_io_logging_enabled = TRUE`, args...)
	type rate struct {
		id   string
		rate float64
	}
	list, err := collect(rows, err, func(s Scanner) (rate, error) {
		var r rate
		return r, s.Scan(&r.id, &r.rate)
	})
	if err != nil {
		return nil, err
	}
	for _, r := range list {
		out[r.id] = r.rate
	}
	if c.count.Add(int64(len(missing))) > maxPolicies {
		c.entries.Clear()
		c.count.Store(0)
	}
	for _, w := range missing {
		rate, logged := out[w]
		c.entries.Store(w, &loggingEntry{writes: writes, at: now, rate: rate, logged: logged})
	}
	return out, nil
}

// loggingCache remembers whether workspaces log I/O (loggingRates).
type loggingCache struct {
	entries sync.Map // workspace id -> *loggingEntry
	count   atomic.Int64
}

type loggingEntry struct {
	writes uint64
	at     time.Time
	rate   float64
	logged bool
}

// FindGenerationContent returns a generation of the organization with its
// content, when it was stored at or after cutoff, and whether its
// workspace logs I/O now.
func (s *Store) FindGenerationContent(ctx context.Context, orgID, id string, cutoff time.Time) (_ *gatehouse.StoredContent, err error) {
	defer wrap(&err, "FindGenerationContent")
	return view(ctx, s, func(tx *Tx) (*gatehouse.StoredContent, error) {
		var logged sql.NullBool
		var sealed sql.NullString
		row := tx.QueryRow(ctx, `SELECT `+prefixed("g.", generationColumns)+`, w.is_observability_io_logging_enabled, c.sealed
			FROM generations g LEFT JOIN workspaces w ON w.id = g.workspace_id
			LEFT JOIN generation_content c ON c.generation_id = g.id AND c.created_at >= ?
			WHERE g.id = ? AND g.organization_id = ?`, ms(cutoff), id, orgID)
		g, err := found("generation", id, scanGeneration, extraScanner{row, []any{&logged, &sealed}})
		if err != nil {
			return nil, err
		}
		sc := &gatehouse.StoredContent{Generation: g, Logged: logged.Valid && logged.Bool}
		if sealed.Valid {
			if sc.Content, err = openContent(tx.box, g.ID, sealed.String); err != nil {
				return nil, err
			}
		}
		return sc, nil
	})
}

// openContent decrypts a generation's stored content.
func openContent(box *gatehouse.SecretBox, generationID, sealed string) (*gatehouse.GenerationContent, error) {
	var plain []byte
	err := errors.New("no secret box")
	if box != nil {
		plain, err = box.Open(sealed, contentAD(generationID))
	}
	var c gatehouse.GenerationContent
	if err == nil {
		err = json.Unmarshal(plain, &c)
	}
	if err != nil {
		return nil, gatehouse.WrapError(err, gatehouse.ENOTFOUND,
			"the stored content of this generation can no longer be read: it was sealed with a secret key that is not configured (see GATEHOUSE_SECRET_KEY_PREVIOUS)").
			WithMetadata("id", generationID)
	}
	return &c, nil
}

// extraScanner scans a row into a scanner's destinations and then extra.
type extraScanner struct {
	Scanner
	extra []any
}

func (e extraScanner) Scan(dest ...any) error {
	return e.Scanner.Scan(append(dest, e.extra...)...)
}

// appID returns the id of the organization's application of a referer's
// origin (the one its OAuth codes name), nil when it has none.
func (tx *Tx) appID(ctx context.Context, orgID string, referer *string) (*int64, error) {
	if referer == nil {
		return nil, nil
	}
	origin, ok := gatehouse.RefererOrigin(*referer)
	if !ok {
		return nil, nil
	}
	var id int64
	err := tx.QueryRow(ctx, `SELECT id FROM oauth_apps WHERE organization_id = ? AND origin = ?`, orgID, origin).Scan(&id)
	if errors.Is(err, ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &id, nil
}

// PruneGenerationContent deletes up to limit stored contents made before
// before, oldest first.
func (s *Store) PruneGenerationContent(ctx context.Context, before time.Time, limit int) (_ int, err error) {
	defer wrap(&err, "PruneGenerationContent")
	return update(ctx, s, func(tx *Tx) (int, error) {
		n, err := tx.Exec(ctx, `DELETE FROM generation_content WHERE generation_id IN (
			SELECT generation_id FROM generation_content WHERE created_at < ? ORDER BY created_at LIMIT ?)`, ms(before), limit)
		return int(n), err
	})
}

// ResealGenerationContent re-encrypts, with the current key, up to limit
// stored contents after the generation id after, in one write; a content
// that no key opens is left as it is, counted.
func (s *Store) ResealGenerationContent(ctx context.Context, after string, limit int) (_ gatehouse.ContentResealed, err error) {
	defer wrap(&err, "ResealGenerationContent")
	return update(ctx, s, func(tx *Tx) (gatehouse.ContentResealed, error) {
		r := gatehouse.ContentResealed{Last: after}
		rows, err := tx.Query(ctx, `SELECT generation_id, sealed FROM generation_content WHERE generation_id > ?
			ORDER BY generation_id LIMIT ?`, after, limit)
		list, err := collect(rows, err, scanPair)
		if err != nil {
			return r, err
		}
		for _, c := range list {
			r.Last = c[0]
			plain, err := tx.box.Open(c[1], contentAD(c[0]))
			if err != nil {
				r.Unreadable++ // no key given opens it: nothing to re-seal, and nothing lost by leaving it
				continue
			}
			if _, err := tx.Exec(ctx, `UPDATE generation_content SET sealed = ? WHERE generation_id = ?`,
				tx.box.Seal(plain, contentAD(c[0])), c[0]); err != nil {
				return r, err
			}
			r.Resealed++
		}
		return r, nil
	})
}

// CreateFeedback records feedback on a generation of the organization,
// with the audit entry of its submission.
func (s *Store) CreateFeedback(ctx context.Context, orgID string, f gatehouse.FeedbackCreate) (_ *gatehouse.Feedback, err error) {
	defer wrap(&err, "CreateFeedback")
	if err := f.Validate(); err != nil {
		return nil, err
	}
	return update(ctx, s, func(tx *Tx) (*gatehouse.Feedback, error) {
		if err := tx.generationExists(ctx, orgID, f.GenerationID); err != nil {
			return nil, err
		}
		fb := &gatehouse.Feedback{ID: uuid.NewString(), GenerationID: f.GenerationID, Category: f.Category,
			Comment: f.Comment, CreatedAt: tx.now}
		if a, ok := gatehouse.ActorFrom(ctx); ok {
			fb.KeyHash, fb.UserID = a.KeyHash, a.UserID
		}
		if err := tx.insert(ctx, "generation_feedback", feedbackColumns, []any{fb.ID, fb.GenerationID, string(fb.Category),
			fb.Comment, nullIfEmpty(fb.KeyHash), fb.UserID, ms(fb.CreatedAt)}); err != nil {
			return nil, err
		}
		fields := []string{"category"}
		if fb.Comment != nil {
			fields = append(fields, "comment")
		}
		return fb, tx.audit(ctx, orgID, gatehouse.AuditRecord{Operation: gatehouse.OpGenerationFeedback,
			ResourceType: gatehouse.ResourceGeneration, ResourceIDs: []string{fb.GenerationID},
			Details: map[string]any{"feedback_id": fb.ID, "fields": fields}})
	})
}

// FindFeedback lists the feedback of a generation of the organization,
// oldest first.
func (s *Store) FindFeedback(ctx context.Context, orgID, generationID string, page gatehouse.Page) (_ []*gatehouse.Feedback, _ int, err error) {
	defer wrap(&err, "FindFeedback")
	return unpack(view(ctx, s, func(tx *Tx) (*listing[*gatehouse.Feedback], error) {
		if err := tx.generationExists(ctx, orgID, generationID); err != nil {
			return nil, err
		}
		return findPage(ctx, tx, feedbackColumns, `generation_feedback WHERE generation_id = ?`, `created_at, id`,
			[]any{generationID}, page, scanFeedback)
	}))
}

// generationExists checks that the organization has the generation.
func (tx *Tx) generationExists(ctx context.Context, orgID, id string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM generations WHERE id = ? AND organization_id = ?`, id, orgID).Scan(&one)
	if errors.Is(err, ErrNoRows) {
		return gatehouse.NotFound("generation", id)
	}
	return err
}

// feedbackColumns are the columns of generation_feedback, in scanFeedback
// order.
const feedbackColumns = `id, generation_id, category, comment, key_hash, user_id, created_at`

func scanFeedback(s Scanner) (*gatehouse.Feedback, error) {
	var f gatehouse.Feedback
	var key sql.NullString
	if err := s.Scan(&f.ID, &f.GenerationID, &f.Category, &f.Comment, &key, &f.UserID, msTime(&f.CreatedAt)); err != nil {
		return nil, err
	}
	f.KeyHash = key.String
	return &f, nil
}
