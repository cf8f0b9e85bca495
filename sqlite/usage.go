package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"

	"gatehouse"
	"gatehouse/dbrow"
)

// GuardrailsForKey returns the guardrails that govern a key, and those
// of every key it was minted from: what a minted key spends, they spend.
func (db *DB) GuardrailsForKey(ctx context.Context, key *gatehouse.Key) ([]gatehouse.AppliedGuardrail, error) {
	var out []gatehouse.AppliedGuardrail
	err := db.view(ctx, func(tx *Tx) error {
		out = nil
		ancestors, err := tx.ancestors(ctx, key)
		if err != nil {
			return err
		}
		for _, k := range append([]*gatehouse.Key{key}, ancestors...) {
			if k == nil {
				continue // a deleted ancestor: Reserve refuses the request
			}
			applied, err := tx.keyGuardrails(ctx, k)
			if err != nil {
				return err
			}
			out = gatehouse.AppendGuardrails(out, applied...)
		}
		return nil
	})
	return out, err
}

// keyGuardrails returns the guardrails that govern one key by itself.
func (tx *Tx) keyGuardrails(ctx context.Context, key *gatehouse.Key) ([]gatehouse.AppliedGuardrail, error) {
	rows, err := tx.QueryContext(ctx, `SELECT `+prefixed("g.", dbrow.GuardrailColumns)+` FROM key_assignments a
		JOIN guardrails g ON g.id = a.guardrail_id WHERE a.key_hash = ?`, key.Hash)
	if err != nil {
		return nil, err
	}
	own, err := collect(rows, dbrow.ScanGuardrail)
	if err != nil {
		return nil, err
	}
	var member []*gatehouse.Guardrail
	if len(own) == 0 && key.CreatorUserID != nil {
		rows, err := tx.QueryContext(ctx, `SELECT `+prefixed("g.", dbrow.GuardrailColumns)+` FROM member_assignments a
			JOIN guardrails g ON g.id = a.guardrail_id WHERE a.organization_id = ? AND a.user_id = ?`,
			key.OrganizationID, *key.CreatorUserID)
		if err != nil {
			return nil, err
		}
		if member, err = collect(rows, dbrow.ScanGuardrail); err != nil {
			return nil, err
		}
	}
	def, err := dbrow.ScanGuardrail(tx.QueryRowContext(ctx, `SELECT `+dbrow.GuardrailColumns+` FROM guardrails WHERE id = ?`,
		gatehouse.DefaultGuardrailID(key.WorkspaceID)))
	if errors.Is(err, sql.ErrNoRows) {
		def, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return gatehouse.KeyGuardrails(key, own, member, def), nil
}

// ancestors returns the keys a key was minted from, parent first; a nil
// entry is a deleted key, and ends the chain.
func (tx *Tx) ancestors(ctx context.Context, k *gatehouse.Key) ([]*gatehouse.Key, error) {
	var out []*gatehouse.Key
	for k.ParentKeyHash != nil && len(out) < gatehouse.MaxMintDepth {
		parent, err := dbrow.ScanKey(tx.QueryRowContext(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = ?`, *k.ParentKeyHash))
		if errors.Is(err, sql.ErrNoRows) {
			return append(out, nil), nil
		}
		if err != nil {
			return nil, err
		}
		out, k = append(out, parent), parent
	}
	return out, nil
}

// prefixed qualifies every column of a comma-separated list.
func prefixed(prefix, columns string) string {
	parts := strings.Split(columns, ",")
	for i, p := range parts {
		parts[i] = prefix + strings.TrimSpace(p)
	}
	return strings.Join(parts, ", ")
}

// Reserve holds a request's worst-case cost against every limit, atomically:
// SQLite runs one write transaction at a time.
func (db *DB) Reserve(ctx context.Context, r *gatehouse.Reservation) error {
	return db.update(ctx, func(tx *Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM reservations WHERE key_hash = ? AND expires_at <= ?`, r.KeyHash, dbrow.MS(tx.now)); err != nil {
			return err
		}
		k, err := dbrow.ScanKey(tx.QueryRowContext(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = ?`, r.KeyHash))
		if errors.Is(err, sql.ErrNoRows) {
			return gatehouse.NotFound("key", r.KeyHash)
		}
		if err != nil {
			return err
		}
		reserved, err := tx.reservedForKey(ctx, k)
		if err != nil {
			return err
		}
		if err := gatehouse.CheckKeyLimit(k, tx.now, reserved, r); err != nil {
			return err
		}
		ancestors, err := tx.ancestors(ctx, k)
		if err != nil {
			return err
		}
		for _, a := range ancestors {
			var reserved gatehouse.Reserved
			if a != nil {
				if reserved, err = tx.reservedForKey(ctx, a); err != nil {
					return err
				}
			}
			if err := gatehouse.MintedFrom(a, tx.now, reserved, r); err != nil {
				return err
			}
		}
		for _, b := range r.Budgets {
			spent, err := tx.budgetSpend(ctx, b)
			if err != nil {
				return err
			}
			if err := gatehouse.CheckBudget(b, spent, r); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO reservations (id, organization_id, key_hash, amount, byok, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.ID, k.OrganizationID, r.KeyHash, int64(r.Amount), r.BYOK,
			dbrow.MS(tx.now), dbrow.MS(r.ExpiresAt)); err != nil {
			return err
		}
		for _, b := range r.Budgets {
			if _, err := tx.ExecContext(ctx, `INSERT INTO reservation_budgets (reservation_id, guardrail_id, subject) VALUES (?, ?, ?)`,
				r.ID, b.GuardrailID, b.Subject); err != nil {
				return err
			}
		}
		for i, a := range ancestors {
			if _, err := tx.ExecContext(ctx, `INSERT INTO reservation_holds (reservation_id, key_hash, depth) VALUES (?, ?, ?)`,
				r.ID, a.Hash, i+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// reservedForKey sums the live reservations that hold against the key:
// all of them, and the BYOK ones. They are its own and, through
// reservation_holds, those of the keys minted from it.
func (tx *Tx) reservedForKey(ctx context.Context, k *gatehouse.Key) (gatehouse.Reserved, error) {
	var r gatehouse.Reserved
	err := tx.QueryRowContext(ctx, reservedForKeySQL, k.Hash, dbrow.MS(tx.now), k.Hash, dbrow.MS(tx.now)).Scan(&r.All, &r.BYOK)
	return r, err
}

// reservedForKeySQL sums a key's own reservations and those it holds for
// the keys minted from it (parameters: hash, now, hash, now).
const reservedForKeySQL = `SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(CASE WHEN byok THEN amount ELSE 0 END), 0) FROM (
	SELECT amount, byok FROM reservations WHERE key_hash = ? AND expires_at > ?
	UNION ALL
	SELECT r.amount, r.byok FROM reservation_holds h JOIN reservations r ON r.id = h.reservation_id
	WHERE h.key_hash = ? AND r.expires_at > ?)`

// budgetSpend returns what counts against a budget now: the recorded spend
// of its subject and its live reservations.
func (tx *Tx) budgetSpend(ctx context.Context, b gatehouse.Budget) (gatehouse.BudgetSpend, error) {
	var s gatehouse.BudgetSpend
	u, byok, err := tx.budgetCounters(ctx, b.GuardrailID, b.Subject)
	if err != nil {
		return s, err
	}
	s.Usage, s.BYOK = u.At(tx.now), byok.At(tx.now)
	err = tx.QueryRowContext(ctx, `SELECT COALESCE(SUM(r.amount), 0), COALESCE(SUM(CASE WHEN r.byok THEN r.amount ELSE 0 END), 0)
		FROM reservation_budgets rb JOIN reservations r ON r.id = rb.reservation_id
		WHERE rb.guardrail_id = ? AND rb.subject = ? AND r.expires_at > ?`,
		b.GuardrailID, b.Subject, dbrow.MS(tx.now)).Scan(&s.Reserved.All, &s.Reserved.BYOK)
	return s, err
}

// budgetCounters reads a guardrail budget's counters; zero when none yet.
func (tx *Tx) budgetCounters(ctx context.Context, guardrailID, subject string) (gatehouse.Counter, gatehouse.Counter, error) {
	u, b, err := dbrow.ScanCounters(tx.QueryRowContext(ctx, `SELECT `+dbrow.CounterColumns+` FROM guardrail_usage
		WHERE guardrail_id = ? AND subject = ?`, guardrailID, subject))
	if errors.Is(err, sql.ErrNoRows) {
		return gatehouse.Counter{}, gatehouse.Counter{}, nil
	}
	return u, b, err
}

// Settle records a completed request and drops its reservation.
func (db *DB) Settle(ctx context.Context, reservationID string, g *gatehouse.Generation) error {
	return db.update(ctx, func(tx *Tx) error {
		var keyHash string
		err := tx.QueryRowContext(ctx, `SELECT key_hash FROM reservations WHERE id = ?`, reservationID).Scan(&keyHash)
		if errors.Is(err, sql.ErrNoRows) {
			return gatehouse.NotFound("reservation", reservationID)
		}
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT guardrail_id, subject FROM reservation_budgets WHERE reservation_id = ?`, reservationID)
		if err != nil {
			return err
		}
		budgets, err := collect(rows, func(s dbrow.Scanner) ([2]string, error) {
			var b [2]string
			return b, s.Scan(&b[0], &b[1])
		})
		if err != nil {
			return err
		}
		holds, err := tx.holds(ctx, reservationID)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM reservations WHERE id = ?`, reservationID); err != nil {
			return err
		}
		g.CreatedAt = tx.now
		args, err := dbrow.GenerationArgs(g)
		if err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO generations (`+dbrow.GenerationColumns+`) VALUES (`+placeholders(len(args))+`)`, args...); err != nil {
			return err
		}
		if _, err := tx.addKeyUsage(ctx, keyHash, g.Cost, g.BYOK); err != nil {
			return err
		}
		for _, hash := range holds {
			// A deleted ancestor has nothing left to charge.
			if _, err := tx.addKeyUsage(ctx, hash, g.Cost, g.BYOK); err != nil && gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
				return err
			}
		}
		for _, b := range budgets {
			if err := tx.addBudgetUsage(ctx, b[0], b[1], g.Cost, g.BYOK); err != nil {
				return err
			}
		}
		return nil
	})
}

// holds returns the keys a reservation holds against besides its own,
// parent first.
func (tx *Tx) holds(ctx context.Context, reservationID string) ([]string, error) {
	rows, err := tx.QueryContext(ctx, `SELECT key_hash FROM reservation_holds WHERE reservation_id = ? ORDER BY depth`, reservationID)
	if err != nil {
		return nil, err
	}
	return collect(rows, func(s dbrow.Scanner) (string, error) {
		var h string
		return h, s.Scan(&h)
	})
}

// addBudgetUsage adds an amount to a guardrail budget's counters.
func (tx *Tx) addBudgetUsage(ctx context.Context, guardrailID, subject string, amount gatehouse.Money, byok bool) error {
	u, b, err := tx.budgetCounters(ctx, guardrailID, subject)
	if err != nil {
		return err
	}
	if byok {
		b = b.Add(tx.now, amount)
	} else {
		u = u.Add(tx.now, amount)
	}
	_, err = tx.ExecContext(ctx, `INSERT OR REPLACE INTO guardrail_usage (guardrail_id, subject, `+dbrow.CounterColumns+`)
		VALUES (?, ?, `+placeholders(14)+`)`, append([]any{guardrailID, subject}, append(dbrow.CounterArgs(u), dbrow.CounterArgs(b)...)...)...)
	return err
}

// Release drops a reservation without charging anything.
func (db *DB) Release(ctx context.Context, reservationID string) error {
	return db.update(ctx, func(tx *Tx) error {
		_, err := tx.ExecContext(ctx, `DELETE FROM reservations WHERE id = ?`, reservationID)
		return err
	})
}

// FindGeneration returns a ledger entry of the organization.
func (db *DB) FindGeneration(ctx context.Context, orgID, id string) (*gatehouse.Generation, error) {
	var g *gatehouse.Generation
	err := db.viewOne(ctx, func(tx *Tx) (err error) {
		g, err = dbrow.ScanGeneration(tx.QueryRowContext(ctx, `SELECT `+dbrow.GenerationColumns+` FROM generations
			WHERE id = ? AND organization_id = ?`, id, orgID))
		if errors.Is(err, sql.ErrNoRows) {
			return gatehouse.NotFound("generation", id)
		}
		return err
	})
	return g, err
}

// BudgetUsage returns the spend counted against a guardrail budget.
func (db *DB) BudgetUsage(ctx context.Context, guardrailID, subject string) (gatehouse.Usage, gatehouse.Usage, error) {
	var u, b gatehouse.Counter
	var now = db.Now()
	err := db.view(ctx, func(tx *Tx) (err error) {
		u, b, err = tx.budgetCounters(ctx, guardrailID, subject)
		now = tx.now
		return err
	})
	return u.At(now), b.At(now), err
}
