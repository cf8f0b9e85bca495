package sqlstore

import (
	"cmp"
	"context"
	"errors"
	"slices"
	"time"

	"gatehouse"
)

// GuardrailsForKey returns the guardrails that govern a key, and those
// of every key it was minted from: what a minted key spends, they spend.
func (s *Store) GuardrailsForKey(ctx context.Context, key *gatehouse.Key) (_ []gatehouse.AppliedGuardrail, err error) {
	defer wrap(&err, "GuardrailsForKey")
	return view(ctx, s, func(tx *Tx) ([]gatehouse.AppliedGuardrail, error) {
		ancestors, err := tx.ancestors(ctx, key, false)
		if err != nil {
			return nil, err
		}
		var out []gatehouse.AppliedGuardrail
		for _, k := range append([]*gatehouse.Key{key}, ancestors...) {
			if k == nil {
				continue // a deleted ancestor: Reserve refuses the request
			}
			applied, err := tx.keyGuardrails(ctx, k)
			if err != nil {
				return nil, err
			}
			out = gatehouse.AppendGuardrails(out, applied...)
		}
		return out, nil
	})
}

// keyGuardrails returns the guardrails that govern one key by itself.
func (tx *Tx) keyGuardrails(ctx context.Context, key *gatehouse.Key) ([]gatehouse.AppliedGuardrail, error) {
	rows, err := tx.Query(ctx, `SELECT `+prefixed("g.", guardrailColumns)+` FROM key_assignments a
		JOIN guardrails g ON g.id = a.guardrail_id WHERE a.key_hash = ?`, key.Hash)
	own, err := collect(rows, err, scanGuardrail)
	if err != nil {
		return nil, err
	}
	var member []*gatehouse.Guardrail
	if len(own) == 0 && key.CreatorUserID != nil {
		rows, err := tx.Query(ctx, `SELECT `+prefixed("g.", guardrailColumns)+` FROM member_assignments a
			JOIN guardrails g ON g.id = a.guardrail_id WHERE a.organization_id = ? AND a.user_id = ?`,
			key.OrganizationID, *key.CreatorUserID)
		if member, err = collect(rows, err, scanGuardrail); err != nil {
			return nil, err
		}
	}
	def, err := scanGuardrail(tx.QueryRow(ctx, `SELECT `+guardrailColumns+` FROM guardrails WHERE id = ?`,
		gatehouse.DefaultGuardrailID(key.WorkspaceID)))
	if errors.Is(err, ErrNoRows) {
		def, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return gatehouse.KeyGuardrails(key, own, member, def), nil
}

// ancestors returns the keys a key was minted from, parent first; a nil
// entry is a deleted key, and ends the chain. Reserve locks them, from the
// key up: the one order every transaction takes them in.
func (tx *Tx) ancestors(ctx context.Context, k *gatehouse.Key, forUpdate bool) ([]*gatehouse.Key, error) {
	var out []*gatehouse.Key
	for k.ParentKeyHash != nil && len(out) < gatehouse.MaxMintDepth {
		parent, err := tx.lockKey(ctx, *k.ParentKeyHash, forUpdate)
		if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
			return append(out, nil), nil
		}
		if err != nil {
			return nil, err
		}
		out, k = append(out, parent), parent
	}
	return out, nil
}

// lockKey reads any key by hash, locking its row when forUpdate.
func (tx *Tx) lockKey(ctx context.Context, hash string, forUpdate bool) (*gatehouse.Key, error) {
	query := keyByHash // a constant: authentication's read builds no string
	if forUpdate {
		query += tx.d.ForUpdate()
	}
	return found("key", hash, scanKey, tx.QueryRow(ctx, query, hash))
}

const keyByHash = `SELECT ` + keyColumns + ` FROM api_keys WHERE hash = ?`

// Reserve holds a request's worst-case cost against every limit, in one
// locking write: the key's row, its ancestors' and each budget's row are
// locked (always in that order, budgets sorted, so that transactions never
// wait on each other in a cycle), so concurrent reservations on one key or
// one budget take turns and each sees the others' holds.
func (s *Store) Reserve(ctx context.Context, r *gatehouse.Reservation) (err error) {
	defer wrap(&err, "Reserve")
	budgets := sortedBudgets(r.Budgets)
	return s.execLocked(ctx, func(tx *Tx) error {
		k, err := tx.lockKey(ctx, r.KeyHash, true)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM reservations WHERE key_hash = ? AND expires_at <= ?`, r.KeyHash, ms(tx.now)); err != nil {
			return err
		}
		ancestors, err := tx.ancestors(ctx, k, true)
		if err != nil {
			return err
		}
		if err := tx.checkLimits(ctx, k, ancestors, budgets, r); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reservations (id, organization_id, key_hash, amount, byok, created_at, expires_at)
			VALUES (?, ?, ?, ?, ?, ?, ?)`, r.ID, k.OrganizationID, r.KeyHash, int64(r.Amount), r.BYOK,
			ms(tx.now), ms(r.ExpiresAt)); err != nil {
			return err
		}
		for _, b := range budgets {
			if _, err := tx.Exec(ctx, `INSERT INTO reservation_budgets (reservation_id, guardrail_id, subject) VALUES (?, ?, ?)`,
				r.ID, b.GuardrailID, b.Subject); err != nil {
				return err
			}
		}
		for i, a := range ancestors {
			if _, err := tx.Exec(ctx, `INSERT INTO reservation_holds (reservation_id, key_hash, depth) VALUES (?, ?, ?)`,
				r.ID, a.Hash, i+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// checkLimits checks a reservation against the key's limit, the chain of
// keys it was minted from, and every budget, in the domain's order.
func (tx *Tx) checkLimits(ctx context.Context, k *gatehouse.Key, ancestors []*gatehouse.Key, budgets []gatehouse.Budget, r *gatehouse.Reservation) error {
	reserved, err := tx.reservedForKey(ctx, k)
	if err != nil {
		return err
	}
	if err := gatehouse.CheckKeyLimit(k, tx.now, reserved, r); err != nil {
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
	for _, b := range budgets {
		spent, err := tx.budgetSpend(ctx, b)
		if err != nil {
			return err
		}
		if err := gatehouse.CheckBudget(b, spent, r); err != nil {
			return err
		}
	}
	return nil
}

// sortedBudgets orders budgets by guardrail and subject: the lock order.
func sortedBudgets(in []gatehouse.Budget) []gatehouse.Budget {
	out := slices.Clone(in)
	slices.SortFunc(out, func(a, b gatehouse.Budget) int {
		return cmp.Or(cmp.Compare(a.GuardrailID, b.GuardrailID), cmp.Compare(a.Subject, b.Subject))
	})
	return out
}

// reservedForKey sums the live reservations that hold against the key:
// all of them, and the BYOK ones. They are its own and, through
// reservation_holds, those of the keys minted from it.
func (tx *Tx) reservedForKey(ctx context.Context, k *gatehouse.Key) (gatehouse.Reserved, error) {
	var r gatehouse.Reserved
	err := tx.QueryRow(ctx, `SELECT COALESCE(SUM(amount), 0), COALESCE(SUM(CASE WHEN byok THEN amount ELSE 0 END), 0) FROM (
		SELECT amount, byok FROM reservations WHERE key_hash = ? AND expires_at > ?
		UNION ALL
		SELECT r.amount, r.byok FROM reservation_holds h JOIN reservations r ON r.id = h.reservation_id
		WHERE h.key_hash = ? AND r.expires_at > ?) held`, k.Hash, ms(tx.now), k.Hash, ms(tx.now)).Scan(&r.All, &r.BYOK)
	return r, err
}

// lockBudget makes sure a budget's counter row exists and locks it.
func (tx *Tx) lockBudget(ctx context.Context, guardrailID, subject string) (gatehouse.Counter, gatehouse.Counter, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO guardrail_usage (guardrail_id, subject) VALUES (?, ?) ON CONFLICT DO NOTHING`,
		guardrailID, subject); err != nil {
		return gatehouse.Counter{}, gatehouse.Counter{}, err
	}
	return scanCounters(tx.QueryRow(ctx, `SELECT `+counterColumns+` FROM guardrail_usage
		WHERE guardrail_id = ? AND subject = ?`+tx.d.ForUpdate(), guardrailID, subject))
}

// budgetSpend locks a budget's counters and returns what counts against
// it: the recorded spend of its subject and its live reservations.
func (tx *Tx) budgetSpend(ctx context.Context, b gatehouse.Budget) (gatehouse.BudgetSpend, error) {
	var s gatehouse.BudgetSpend
	u, byok, err := tx.lockBudget(ctx, b.GuardrailID, b.Subject)
	if err != nil {
		return s, err
	}
	s.Usage, s.BYOK = u.At(tx.now), byok.At(tx.now)
	err = tx.QueryRow(ctx, `SELECT COALESCE(SUM(r.amount), 0), COALESCE(SUM(CASE WHEN r.byok THEN r.amount ELSE 0 END), 0)
		FROM reservation_budgets rb JOIN reservations r ON r.id = rb.reservation_id
		WHERE rb.guardrail_id = ? AND rb.subject = ? AND r.expires_at > ?`,
		b.GuardrailID, b.Subject, ms(tx.now)).Scan(&s.Reserved.All, &s.Reserved.BYOK)
	return s, err
}

// Settle records a completed request and drops its reservation. It takes
// the key's row lock first, as Reserve does, then its ancestors', then the
// budgets' rows in order, so that the two never wait on each other in a
// cycle.
func (s *Store) Settle(ctx context.Context, reservationID string, g *gatehouse.Generation) (err error) {
	defer wrap(&err, "Settle")
	at, err := lock(ctx, s, func(tx *Tx) (time.Time, error) {
		var keyHash string
		err := tx.QueryRow(ctx, `SELECT key_hash FROM reservations WHERE id = ?`, reservationID).Scan(&keyHash)
		if errors.Is(err, ErrNoRows) {
			return time.Time{}, gatehouse.NotFound("reservation", reservationID)
		}
		if err != nil {
			return time.Time{}, err
		}
		if _, err := tx.addKeyUsage(ctx, keyHash, g.Cost, g.BYOK); err != nil {
			return time.Time{}, err
		}
		rows, err := tx.Query(ctx, `SELECT key_hash FROM reservation_holds WHERE reservation_id = ? ORDER BY depth`, reservationID)
		holds, err := collect(rows, err, scanString)
		if err != nil {
			return time.Time{}, err
		}
		for _, hash := range holds {
			// A deleted ancestor has nothing left to charge.
			if _, err := tx.addKeyUsage(ctx, hash, g.Cost, g.BYOK); err != nil && gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
				return time.Time{}, err
			}
		}
		rows, err = tx.Query(ctx, `SELECT guardrail_id, subject FROM reservation_budgets WHERE reservation_id = ?
			ORDER BY guardrail_id, subject`, reservationID)
		budgets, err := collect(rows, err, func(s Scanner) ([2]string, error) {
			var b [2]string
			return b, s.Scan(&b[0], &b[1])
		})
		if err != nil {
			return time.Time{}, err
		}
		n, err := tx.Exec(ctx, `DELETE FROM reservations WHERE id = ?`, reservationID)
		if err != nil {
			return time.Time{}, err
		}
		if n == 0 { // settled or released meanwhile
			return time.Time{}, gatehouse.NotFound("reservation", reservationID)
		}
		gen := *g
		gen.CreatedAt = tx.now
		if err := tx.insert(ctx, "generations", generationColumns, generationArgs(&gen)); err != nil {
			return time.Time{}, err
		}
		for _, b := range budgets {
			if err := tx.addBudgetUsage(ctx, b[0], b[1], g.Cost, g.BYOK); err != nil {
				return time.Time{}, err
			}
		}
		return tx.now, nil
	})
	if err == nil {
		g.CreatedAt = at // stamped once the run that wrote it has committed
	}
	return err
}

// addBudgetUsage adds an amount to a guardrail budget's counters.
func (tx *Tx) addBudgetUsage(ctx context.Context, guardrailID, subject string, amount gatehouse.Money, byok bool) error {
	u, b, err := tx.lockBudget(ctx, guardrailID, subject)
	if err != nil {
		return err
	}
	return tx.addUsage(ctx, "guardrail_usage", "guardrail_id = ? AND subject = ?", &u, &b, amount, byok, guardrailID, subject)
}

// addUsage adds an amount to the counters u (or b, when byok) of the
// locked row of table that where selects with its args, and writes them
// back.
func (tx *Tx) addUsage(ctx context.Context, table, where string, u, b *gatehouse.Counter, amount gatehouse.Money, byok bool, args ...any) error {
	prefix, c := "usage", u
	if byok {
		prefix, c = "byok", b
	}
	*c = c.Add(tx.now, amount)
	_, err := tx.Exec(ctx, `UPDATE `+table+` SET `+counterAssignments(prefix)+` WHERE `+where, append(counterArgs(*c), args...)...)
	return err
}

// Release drops a reservation without charging anything.
func (s *Store) Release(ctx context.Context, reservationID string) (err error) {
	defer wrap(&err, "Release")
	return s.execLocked(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM reservations WHERE id = ?`, reservationID)
		return err
	})
}

// FindGeneration returns a ledger entry of the organization.
func (s *Store) FindGeneration(ctx context.Context, orgID, id string) (_ *gatehouse.Generation, err error) {
	defer wrap(&err, "FindGeneration")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Generation, error) {
		return found("generation", id, scanGeneration, tx.QueryRow(ctx, `SELECT `+generationColumns+` FROM generations
			WHERE id = ? AND organization_id = ?`, id, orgID))
	})
}

// BudgetUsage returns the spend counted against a guardrail budget.
func (s *Store) BudgetUsage(ctx context.Context, guardrailID, subject string) (_, _ gatehouse.Usage, err error) {
	defer wrap(&err, "BudgetUsage")
	type usage struct{ u, b gatehouse.Usage }
	got, err := view(ctx, s, func(tx *Tx) (usage, error) {
		u, b, err := scanCounters(tx.QueryRow(ctx, `SELECT `+counterColumns+` FROM guardrail_usage
			WHERE guardrail_id = ? AND subject = ?`, guardrailID, subject))
		if errors.Is(err, ErrNoRows) {
			return usage{}, nil
		}
		return usage{u.At(tx.now), b.At(tx.now)}, err
	})
	return got.u, got.b, err
}
