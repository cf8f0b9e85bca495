package postgres

import (
	"context"
	"errors"
	"sort"
	"strings"

	"gatehouse"
	"gatehouse/dbrow"

	"github.com/jackc/pgx/v5"
)

// GuardrailsForKey returns the guardrails that govern a key, and those
// of every key it was minted from: what a minted key spends, they spend.
func (db *DB) GuardrailsForKey(ctx context.Context, key *gatehouse.Key) ([]gatehouse.AppliedGuardrail, error) {
	var out []gatehouse.AppliedGuardrail
	err := db.view(ctx, func(tx *Tx) error {
		out = nil
		ancestors, err := tx.ancestors(ctx, key, "")
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
	rows, err := tx.Query(ctx, `SELECT `+prefixed("g.", dbrow.GuardrailColumns)+` FROM key_assignments a
		JOIN guardrails g ON g.id = a.guardrail_id WHERE a.key_hash = $1`, key.Hash)
	own, err := collect(rows, err, dbrow.ScanGuardrail)
	if err != nil {
		return nil, err
	}
	var member []*gatehouse.Guardrail
	if len(own) == 0 && key.CreatorUserID != nil {
		rows, err := tx.Query(ctx, `SELECT `+prefixed("g.", dbrow.GuardrailColumns)+` FROM member_assignments a
			JOIN guardrails g ON g.id = a.guardrail_id WHERE a.organization_id = $1 AND a.user_id = $2`,
			key.OrganizationID, *key.CreatorUserID)
		if member, err = collect(rows, err, dbrow.ScanGuardrail); err != nil {
			return nil, err
		}
	}
	def, err := dbrow.ScanGuardrail(tx.QueryRow(ctx, `SELECT `+dbrow.GuardrailColumns+` FROM guardrails WHERE id = $1`,
		gatehouse.DefaultGuardrailID(key.WorkspaceID)))
	if errors.Is(err, pgx.ErrNoRows) {
		def, err = nil, nil
	}
	if err != nil {
		return nil, err
	}
	return gatehouse.KeyGuardrails(key, own, member, def), nil
}

// ancestors returns the keys a key was minted from, parent first; a nil
// entry is a deleted key, and ends the chain. lock is "" or " FOR UPDATE":
// Reserve locks them from the key up, the one order every transaction
// takes them in.
func (tx *Tx) ancestors(ctx context.Context, k *gatehouse.Key, lock string) ([]*gatehouse.Key, error) {
	var out []*gatehouse.Key
	for k.ParentKeyHash != nil && len(out) < gatehouse.MaxMintDepth {
		parent, err := dbrow.ScanKey(tx.QueryRow(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = $1`+lock, *k.ParentKeyHash))
		if errors.Is(err, pgx.ErrNoRows) {
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

// Reserve holds a request's worst-case cost against every limit. The key's
// row and each budget's row are locked (in a fixed order, so that
// transactions never deadlock), so concurrent reservations on one key or
// one budget take turns and each sees the others' holds.
func (db *DB) Reserve(ctx context.Context, r *gatehouse.Reservation) error {
	budgets := sortedBudgets(r.Budgets)
	return db.run(ctx, readCommitted, func(tx *Tx) error {
		k, err := dbrow.ScanKey(tx.QueryRow(ctx, `SELECT `+dbrow.KeyColumns+` FROM api_keys WHERE hash = $1 FOR UPDATE`, r.KeyHash))
		if errors.Is(err, pgx.ErrNoRows) {
			return gatehouse.NotFound("key", r.KeyHash)
		}
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM reservations WHERE key_hash = $1 AND expires_at <= $2`, r.KeyHash, dbrow.MS(tx.now)); err != nil {
			return err
		}
		reserved, err := tx.reservedForKey(ctx, k)
		if err != nil {
			return err
		}
		if err := gatehouse.CheckKeyLimit(k, tx.now, reserved, r); err != nil {
			return err
		}
		ancestors, err := tx.ancestors(ctx, k, " FOR UPDATE")
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
		for _, b := range budgets {
			spent, err := tx.budgetSpend(ctx, b)
			if err != nil {
				return err
			}
			if err := gatehouse.CheckBudget(b, spent, r); err != nil {
				return err
			}
		}
		if _, err := tx.Exec(ctx, `INSERT INTO reservations (id, organization_id, key_hash, amount, byok, created_at, expires_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7)`, r.ID, k.OrganizationID, r.KeyHash, int64(r.Amount), r.BYOK,
			dbrow.MS(tx.now), dbrow.MS(r.ExpiresAt)); err != nil {
			return err
		}
		for _, b := range budgets {
			if _, err := tx.Exec(ctx, `INSERT INTO reservation_budgets (reservation_id, guardrail_id, subject) VALUES ($1, $2, $3)`,
				r.ID, b.GuardrailID, b.Subject); err != nil {
				return err
			}
		}
		for i, a := range ancestors {
			if _, err := tx.Exec(ctx, `INSERT INTO reservation_holds (reservation_id, key_hash, depth) VALUES ($1, $2, $3)`,
				r.ID, a.Hash, i+1); err != nil {
				return err
			}
		}
		return nil
	})
}

// sortedBudgets orders budgets by guardrail and subject: the lock order.
func sortedBudgets(in []gatehouse.Budget) []gatehouse.Budget {
	out := append([]gatehouse.Budget(nil), in...)
	sort.Slice(out, func(i, j int) bool {
		if out[i].GuardrailID != out[j].GuardrailID {
			return out[i].GuardrailID < out[j].GuardrailID
		}
		return out[i].Subject < out[j].Subject
	})
	return out
}

// lockBudget makes sure a budget's counter row exists and locks it.
func (tx *Tx) lockBudget(ctx context.Context, guardrailID, subject string) (gatehouse.Counter, gatehouse.Counter, error) {
	if _, err := tx.Exec(ctx, `INSERT INTO guardrail_usage (guardrail_id, subject) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
		guardrailID, subject); err != nil {
		return gatehouse.Counter{}, gatehouse.Counter{}, err
	}
	return dbrow.ScanCounters(tx.QueryRow(ctx, `SELECT `+dbrow.CounterColumns+` FROM guardrail_usage
		WHERE guardrail_id = $1 AND subject = $2 FOR UPDATE`, guardrailID, subject))
}

// budgetSpend locks a budget's counters and returns what counts against it.
func (tx *Tx) budgetSpend(ctx context.Context, b gatehouse.Budget) (gatehouse.BudgetSpend, error) {
	var s gatehouse.BudgetSpend
	u, byok, err := tx.lockBudget(ctx, b.GuardrailID, b.Subject)
	if err != nil {
		return s, err
	}
	s.Usage, s.BYOK = u.At(tx.now), byok.At(tx.now)
	err = tx.QueryRow(ctx, `SELECT COALESCE(SUM(r.amount), 0), COALESCE(SUM(CASE WHEN r.byok THEN r.amount ELSE 0 END), 0)
		FROM reservation_budgets rb JOIN reservations r ON r.id = rb.reservation_id
		WHERE rb.guardrail_id = $1 AND rb.subject = $2 AND r.expires_at > $3`,
		b.GuardrailID, b.Subject, dbrow.MS(tx.now)).Scan(&s.Reserved.All, &s.Reserved.BYOK)
	return s, err
}

// Settle records a completed request and drops its reservation. It takes
// the key's row lock first, as Reserve does, then the budgets' rows in
// order, so that the two never wait on each other in a cycle.
func (db *DB) Settle(ctx context.Context, reservationID string, g *gatehouse.Generation) error {
	return db.run(ctx, readCommitted, func(tx *Tx) error {
		var keyHash string
		err := tx.QueryRow(ctx, `SELECT key_hash FROM reservations WHERE id = $1`, reservationID).Scan(&keyHash)
		if errors.Is(err, pgx.ErrNoRows) {
			return gatehouse.NotFound("reservation", reservationID)
		}
		if err != nil {
			return err
		}
		if _, err := tx.addKeyUsage(ctx, keyHash, g.Cost, g.BYOK); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT key_hash FROM reservation_holds WHERE reservation_id = $1 ORDER BY depth`, reservationID)
		holds, err := collect(rows, err, func(s dbrow.Scanner) (string, error) {
			var h string
			return h, s.Scan(&h)
		})
		if err != nil {
			return err
		}
		for _, hash := range holds {
			// A deleted ancestor has nothing left to charge.
			if _, err := tx.addKeyUsage(ctx, hash, g.Cost, g.BYOK); err != nil && gatehouse.ErrorCode(err) != gatehouse.ENOTFOUND {
				return err
			}
		}
		rows, err = tx.Query(ctx, `SELECT guardrail_id, subject FROM reservation_budgets WHERE reservation_id = $1
			ORDER BY guardrail_id, subject`, reservationID)
		budgets, err := collect(rows, err, func(s dbrow.Scanner) ([2]string, error) {
			var b [2]string
			return b, s.Scan(&b[0], &b[1])
		})
		if err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `DELETE FROM reservations WHERE id = $1`, reservationID)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 { // settled or released meanwhile
			return gatehouse.NotFound("reservation", reservationID)
		}
		g.CreatedAt = tx.now
		args, err := dbrow.GenerationArgs(g)
		if err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO generations (`+dbrow.GenerationColumns+`) VALUES (`+placeholders(len(args))+`)`, args...); err != nil {
			return err
		}
		for _, b := range budgets {
			if err := tx.addBudgetUsage(ctx, b[0], b[1], g.Cost, g.BYOK); err != nil {
				return err
			}
		}
		return nil
	})
}

// addBudgetUsage adds an amount to a guardrail budget's counters.
func (tx *Tx) addBudgetUsage(ctx context.Context, guardrailID, subject string, amount gatehouse.Money, byok bool) error {
	u, b, err := tx.lockBudget(ctx, guardrailID, subject)
	if err != nil {
		return err
	}
	prefix, c := "usage", &u
	if byok {
		prefix, c = "byok", &b
	}
	*c = c.Add(tx.now, amount)
	_, err = tx.Exec(ctx, `UPDATE guardrail_usage SET `+dbrow.CounterAssignments(prefix, dollar)+`
		WHERE guardrail_id = $8 AND subject = $9`, append(dbrow.CounterArgs(*c), guardrailID, subject)...)
	return err
}

// Release drops a reservation without charging anything.
func (db *DB) Release(ctx context.Context, reservationID string) error {
	return db.run(ctx, readCommitted, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `DELETE FROM reservations WHERE id = $1`, reservationID)
		return err
	})
}

// FindGeneration returns a ledger entry of the organization.
func (db *DB) FindGeneration(ctx context.Context, orgID, id string) (*gatehouse.Generation, error) {
	var g *gatehouse.Generation
	err := db.view(ctx, func(tx *Tx) (err error) {
		g, err = dbrow.ScanGeneration(tx.QueryRow(ctx, `SELECT `+dbrow.GenerationColumns+` FROM generations
			WHERE id = $1 AND organization_id = $2`, id, orgID))
		if errors.Is(err, pgx.ErrNoRows) {
			return gatehouse.NotFound("generation", id)
		}
		return err
	})
	return g, err
}

// BudgetUsage returns the spend counted against a guardrail budget.
func (db *DB) BudgetUsage(ctx context.Context, guardrailID, subject string) (gatehouse.Usage, gatehouse.Usage, error) {
	var u, b gatehouse.Counter
	now := db.Now()
	err := db.view(ctx, func(tx *Tx) error {
		now = tx.now
		var err error
		u, b, err = dbrow.ScanCounters(tx.QueryRow(ctx, `SELECT `+dbrow.CounterColumns+` FROM guardrail_usage
			WHERE guardrail_id = $1 AND subject = $2`, guardrailID, subject))
		if errors.Is(err, pgx.ErrNoRows) {
			u, b, err = gatehouse.Counter{}, gatehouse.Counter{}, nil
		}
		return err
	})
	return u.At(now), b.At(now), err
}
