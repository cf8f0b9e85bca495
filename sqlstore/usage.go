package sqlstore

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"gatehouse/meter"
	"maps"
	"math/bits"
	"slices"
	"strings"
	"time"

	"gatehouse"
)

// GuardrailsForKey returns the guardrails that govern a key, and those
// of every key it was minted from: what a minted key spends, they spend.
func (s *Store) GuardrailsForKey(ctx context.Context, key *gatehouse.Key) (_ []gatehouse.AppliedGuardrail, err error) {
	defer wrap(&err, "GuardrailsForKey")
	p, err := s.policyOf(ctx, key)
	if err != nil {
		return nil, err
	}
	return p.guardrails, nil
}

// BudgetsForKey returns the budgets a key's requests hold against besides
// its guardrails': its organization's credits and its workspace's budgets.
func (s *Store) BudgetsForKey(ctx context.Context, key *gatehouse.Key) (_ []gatehouse.Budget, err error) {
	defer wrap(&err, "BudgetsForKey")
	p, err := s.policyOf(ctx, key)
	if err != nil {
		return nil, err
	}
	return p.budgets, nil
}

// policyOf returns what governs a key's requests.
//
// Every metered request asks, so the answer is remembered until the next
// write this process commits (any of them may change it), or another
// instance's for at most policyTTL (the staleness bound of the key cache):
// the caller must not change it.
func (s *Store) policyOf(ctx context.Context, key *gatehouse.Key) (*policy, error) {
	writes, now := s.writes.Load(), time.Now()
	if v, ok := s.policies.Load(key.Hash); ok {
		if p := v.(*policy); p.writes == writes && now.Sub(p.at) < policyTTL && p.sameKey(key) {
			return p, nil
		}
	}
	p, err := s.readPolicy(ctx, key)
	if err != nil {
		return nil, err
	}
	p.writes, p.at = writes, now
	if s.policyCount.Add(1) > maxPolicies {
		s.policies.Clear()
		s.policyCount.Store(0)
	}
	s.policies.Store(key.Hash, p)
	return p, nil
}

// policy is what governs one key's requests, as policyOf remembers it.
type policy struct {
	writes     uint64
	at         time.Time
	workspace  string
	creator    *string
	parent     *string
	guardrails []gatehouse.AppliedGuardrail
	budgets    []gatehouse.Budget
	sort       string // the workspace's default_provider_sort
}

// policyTTL bounds how long another instance's change to what governs a
// key may go unseen; maxPolicies bounds the answers remembered.
const (
	policyTTL   = time.Second
	maxPolicies = 100_000
)

// sameKey reports whether the answer was for the key as it is now.
func (p *policy) sameKey(k *gatehouse.Key) bool {
	return p.workspace == k.WorkspaceID && equalPtr(p.creator, k.CreatorUserID) && equalPtr(p.parent, k.ParentKeyHash)
}

func equalPtr(a, b *string) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

// readPolicy reads, in one snapshot, the guardrails that govern a key and
// the keys it was minted from, and the budgets of their workspaces and of
// their organization.
func (s *Store) readPolicy(ctx context.Context, key *gatehouse.Key) (*policy, error) {
	return view(ctx, s, func(tx *Tx) (*policy, error) {
		p := &policy{workspace: key.WorkspaceID, creator: key.CreatorUserID, parent: key.ParentKeyHash}
		ancestors, err := tx.ancestors(ctx, key, false)
		if err != nil {
			return nil, err
		}
		keys := append([]*gatehouse.Key{key}, ancestors...)
		for _, k := range keys {
			if k == nil {
				continue // a deleted ancestor: Reserve refuses the request
			}
			applied, err := tx.keyGuardrails(ctx, k)
			if err != nil {
				return nil, err
			}
			p.guardrails = gatehouse.AppendGuardrails(p.guardrails, applied...)
		}
		if p.budgets, err = tx.keyBudgets(ctx, keys); err != nil {
			return nil, err
		}
		var sort *string
		err = tx.QueryRow(ctx, `SELECT default_provider_sort FROM workspaces WHERE id = ?`, key.WorkspaceID).Scan(&sort)
		if err != nil && !errors.Is(err, ErrNoRows) {
			return nil, err
		}
		if sort != nil {
			p.sort = *sort
		}
		return p, nil
	})
}

// DefaultProviderSort returns the default_provider_sort of a key's
// workspace: how its requests' endpoints are ordered when they give no
// sort ("" for the default balance).
func (s *Store) DefaultProviderSort(ctx context.Context, key *gatehouse.Key) (_ string, err error) {
	defer wrap(&err, "DefaultProviderSort")
	p, err := s.policyOf(ctx, key)
	if err != nil {
		return "", err
	}
	return p.sort, nil
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

// insertHolds writes reservations: each with the budgets and the chain of
// keys it holds against. A call whose key was deleted since it was
// admitted still runs, and is written under the organization of its
// ledger entry, so that its settle charges it (as a reservation written
// before the deletion is: it outlives its key); a lease of a deleted key
// is left out, and so is a budget deleted meanwhile: there is nothing left
// to hold against. The reservations' keys are looked up by the insert
// itself (a round trip less for every batch of the ledger).
func (tx *Tx) insertHolds(ctx context.Context, rs []*gatehouse.Reservation) error {
	var guardrails []string
	holdsRows := false
	for _, r := range rs {
		for _, b := range r.Budgets {
			guardrails = append(guardrails, b.GuardrailID)
		}
		holdsRows = holdsRows || len(r.Budgets) > 0 || len(r.Chain) > 0
	}
	// Only reservations that hold against budgets or a chain need to know
	// which were written; the others' inserts may be held back (Tx.later).
	written, err := tx.insertReservations(ctx, rs, holdsRows)
	if err != nil || !holdsRows {
		return err
	}
	var kept []*gatehouse.Reservation
	for _, r := range rs {
		if written[r.ID] && (len(r.Budgets) > 0 || len(r.Chain) > 0) {
			kept = append(kept, r)
		}
	}
	if len(kept) == 0 {
		return nil
	}
	live, err := tx.existing(ctx, `SELECT id, id FROM budgets`, "id", guardrails)
	if err != nil {
		return err
	}
	return tx.writeHoldRows(ctx, kept, live)
}

// insertReservations writes the reservations whose keys exist, each under
// its key's organization, or (a call whose key was deleted while it ran,
// not a lease) under its ledger entry's organization if that exists; it
// returns the ids written when asked (which), and otherwise may hold its
// statements back (Tx.later).
func (tx *Tx) insertReservations(ctx context.Context, rs []*gatehouse.Reservation, which bool) (map[string]bool, error) {
	written := make(map[string]bool, len(rs))
	for len(rs) > 0 {
		n := 1 << (bits.Len(uint(min(len(rs), 512))) - 1) // a few statement texts, as insertRows
		var values strings.Builder
		var args []any
		for i, r := range rs[:n] {
			if i > 0 {
				values.WriteString(", ")
			}
			values.WriteString(reservationValues)
			g := r.Generation
			if g == nil {
				g = &gatehouse.Generation{}
			}
			var orphanOrg any
			if !r.Lease && g.OrganizationID != "" {
				orphanOrg = g.OrganizationID
			}
			args = append(args, r.ID, r.KeyHash, int64(r.Amount), r.BYOK, ms(tx.now), ms(r.ExpiresAt),
				nullIfEmpty(g.ID), nullIfEmpty(g.WorkspaceID), nullIfEmpty(g.Model), nullIfEmpty(g.Provider), g.Streamed,
				nullIfEmpty(tx.instance), r.Lease, nullIfEmpty(r.LeaseID), orphanOrg)
		}
		insert := `INSERT INTO reservations (` + reservationColumns + `)
			SELECT v.column1, COALESCE(k.organization_id, o.id), v.column2, v.column3, v.column4, v.column5, v.column6,
				v.column7, v.column8, v.column9, v.column10, v.column11, v.column12, v.column13, v.column14
			FROM (VALUES ` + values.String() + `) AS v
			LEFT JOIN api_keys k ON k.hash = v.column2
			LEFT JOIN organizations o ON k.hash IS NULL AND o.id = v.column15
			WHERE k.hash IS NOT NULL OR o.id IS NOT NULL`
		rs = rs[n:]
		if !which {
			if err := tx.later(ctx, insert, args...); err != nil {
				return nil, err
			}
			continue
		}
		rows, err := tx.Query(ctx, insert+` RETURNING id`, args...)
		ids, err := collect(rows, err, scanString)
		if err != nil {
			return nil, err
		}
		for _, id := range ids {
			written[id] = true
		}
	}
	return written, nil
}

// reservationValues is a row of insertReservations' VALUES, typed (a
// parameter in a VALUES list has no type of its own on PostgreSQL): id,
// key hash, amount, byok, created, expires, generation id, workspace,
// model, provider, streamed, instance, lease, lease id, and the
// organization of a call whose key may be gone.
const reservationValues = `(CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BIGINT), CAST(? AS BOOLEAN), CAST(? AS BIGINT), CAST(? AS BIGINT),
	CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS TEXT), CAST(? AS BOOLEAN), CAST(? AS TEXT), CAST(? AS BOOLEAN), CAST(? AS TEXT), CAST(? AS TEXT))`

// writeHolds writes reservations whose keys' organizations (orgs, by key
// hash) and live budgets (live, by id) are known; the others are left
// out.
func (tx *Tx) writeHolds(ctx context.Context, rs []*gatehouse.Reservation, keys, live map[string]string) error {
	var res [][]any
	var kept []*gatehouse.Reservation
	for _, r := range rs {
		org, ok := keys[r.KeyHash]
		if !ok {
			continue
		}
		g := r.Generation
		if g == nil {
			g = &gatehouse.Generation{}
		}
		res = append(res, []any{r.ID, org, r.KeyHash, int64(r.Amount), r.BYOK, ms(tx.now), ms(r.ExpiresAt),
			nullIfEmpty(g.ID), nullIfEmpty(g.WorkspaceID), nullIfEmpty(g.Model), nullIfEmpty(g.Provider), g.Streamed,
			nullIfEmpty(tx.instance), r.Lease, nullIfEmpty(r.LeaseID)})
		kept = append(kept, r)
	}
	for chunk := range slices.Chunk(res, 500) {
		if _, err := tx.insertRows(ctx, "reservations", reservationColumns, chunk, ""); err != nil {
			return err
		}
	}
	return tx.writeHoldRows(ctx, kept, live)
}

// writeHoldRows writes what written reservations hold against: their live
// budgets (live, by id) and the chains of keys they were minted from.
func (tx *Tx) writeHoldRows(ctx context.Context, rs []*gatehouse.Reservation, live map[string]string) error {
	var budgets, holds [][]any
	for _, r := range rs {
		for _, b := range sortedBudgets(r.Budgets) {
			if _, ok := live[b.GuardrailID]; ok {
				budgets = append(budgets, []any{r.ID, b.GuardrailID, b.Subject})
			}
		}
		for i, h := range r.Chain {
			holds = append(holds, []any{r.ID, h, i + 1})
		}
	}
	for _, t := range []struct {
		table, columns string
		rows           [][]any
	}{
		{"reservation_budgets", "reservation_id, guardrail_id, subject", budgets},
		{"reservation_holds", "reservation_id, key_hash, depth", holds},
	} {
		for chunk := range slices.Chunk(t.rows, 500) {
			if _, err := tx.insertRows(ctx, t.table, t.columns, chunk, ""); err != nil {
				return err
			}
		}
	}
	return nil
}

// reservationColumns are the columns a reservation is written with.
const reservationColumns = `id, organization_id, key_hash, amount, byok, created_at, expires_at,
	generation_id, workspace_id, model, provider, streamed, instance_id, lease, lease_id`

// existing returns, of values, those that query (selecting the value and
// one more column FROM a table) finds in column, mapped to the other column.
func (tx *Tx) existing(ctx context.Context, query, column string, values []string) (map[string]string, error) {
	out := map[string]string{}
	if len(values) == 0 {
		return out, nil
	}
	slices.Sort(values)
	cond, args := tx.in(column, slices.Compact(values))
	rows, err := tx.Query(ctx, query+` WHERE `+cond, args...)
	pairs, err := collect(rows, err, func(s Scanner) ([2]string, error) {
		var p [2]string
		return p, s.Scan(&p[0], &p[1])
	})
	for _, p := range pairs {
		out[p[0]] = p[1]
	}
	return out, err
}

// reservedForKey sums the open reservations that hold against the key:
// all of them, and the BYOK ones. They are its own and, through
// reservation_holds, those of the keys minted from it. One past its expiry
// still counts until it is charged (chargeExpired).
func (tx *Tx) reservedForKey(ctx context.Context, k *gatehouse.Key) (gatehouse.Reserved, error) {
	held, err := tx.heldByKeys(ctx, []string{k.Hash})
	return held[k.Hash], err
}

// Settle records a completed request and drops its reservation.
// ENOTFOUND when the reservation is gone.
func (s *Store) Settle(ctx context.Context, reservationID string, g *gatehouse.Generation) (err error) {
	defer wrap(&err, "Settle")
	return s.settleOne(ctx, Settlement{ReservationID: reservationID, Generation: g})
}

// Release drops a reservation without charging anything.
func (s *Store) Release(ctx context.Context, reservationID string) (err error) {
	defer wrap(&err, "Release")
	err = s.settleOne(ctx, Settlement{ReservationID: reservationID})
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		return nil
	}
	return err
}

func (s *Store) settleOne(ctx context.Context, st Settlement) error {
	at, err := lock(ctx, s, func(tx *Tx) (time.Time, error) {
		done, err := tx.settle(ctx, []Settlement{st})
		if err == nil && !done[st.ReservationID] {
			err = gatehouse.NotFound("reservation", st.ReservationID)
		}
		return tx.now, err
	})
	if err == nil && st.Generation != nil {
		st.Generation.CreatedAt = at // stamped once the write has committed
	}
	return err
}

// Settlement ends a reservation: charged as Generation (its cost, stamped
// with the instant it is written), or released when Generation is nil.
type Settlement struct {
	ReservationID string
	Generation    *gatehouse.Generation
	// Unheld is the reservation when it was never written (it was admitted
	// in memory for a whole answer): the charge is written from its key,
	// chain and budgets, with no hold to end.
	Unheld *gatehouse.Reservation
}

// charge is what a batch of settlements adds to one key's or budget's
// counters.
type charge struct{ usage, byok gatehouse.Money }

func (c *charge) add(g *gatehouse.Generation) {
	if g.BYOK {
		c.byok += g.Cost
	} else {
		c.usage += g.Cost
	}
}

// settle ends the reservations of a batch of settlements, in one write:
// each charged one adds its generation to the ledger and its cost to the
// counters of its key, of the keys it was minted from and of its budgets,
// once per key and budget for the whole batch. It returns the reservations
// it ended; one already ended (settled, released or charged as expired,
// perhaps by another instance) charges nothing. Keys are locked in hash
// order, then budgets in order.
func (tx *Tx) settle(ctx context.Context, ss []Settlement) (map[string]bool, error) {
	ids := make([]string, 0, len(ss))
	var unheld []*gatehouse.Reservation
	for _, st := range ss {
		if st.Unheld != nil {
			unheld = append(unheld, st.Unheld)
		} else {
			ids = append(ids, st.ReservationID)
		}
	}
	e, err := tx.endHolds(ctx, ids)
	if err != nil {
		return nil, err
	}
	endUnheld(unheld, e)
	done, keyOf, leaseOf, holds, budgets := e.done, e.keyOf, e.leaseOf, e.holds, e.budgets
	gens := make(map[string]*gatehouse.Generation, len(ss))
	var ledger [][]any
	keys := map[string]*charge{}
	for _, st := range ss {
		if !done[st.ReservationID] || st.Generation == nil || gens[st.ReservationID] != nil {
			continue
		}
		g := *st.Generation
		g.CreatedAt = tx.now
		gens[st.ReservationID] = &g
		ledger = append(ledger, generationArgs(&g))
		chargeTo(keys, keyOf[st.ReservationID], &g)
	}
	for _, h := range holds {
		if g := gens[h[0]]; g != nil {
			chargeTo(keys, h[1], g)
		}
	}
	spent := map[[2]string]*charge{}
	for _, b := range budgets {
		if g := gens[b[0]]; g != nil {
			chargeTo(spent, [2]string{b[1], b[2]}, g)
		}
	}
	// What follows only writes: its statements may be held back to go with
	// the commit (Tx.later).
	for chunk := range slices.Chunk(ledger, 500) {
		if err := tx.insertLater(ctx, "generations", generationColumns, chunk, ""); err != nil {
			return nil, err
		}
	}
	if err := tx.storeContent(ctx, gens); err != nil {
		return nil, err
	}
	// A deleted ancestor has no row left to charge: its update changes
	// nothing.
	for _, hash := range slices.Sorted(maps.Keys(keys)) {
		query, args := tx.chargeSQL("api_keys", "hash = ?", keys[hash], hash)
		if err := tx.later(ctx, query, args...); err != nil {
			return nil, err
		}
	}
	for _, b := range slices.SortedFunc(maps.Keys(spent), func(x, y [2]string) int {
		return cmp.Or(cmp.Compare(x[0], y[0]), cmp.Compare(x[1], y[1]))
	}) {
		// A budget deleted meanwhile (its rows went with it) is not
		// charged: no counter is made for it.
		if err := tx.later(ctx, `INSERT INTO guardrail_usage (guardrail_id, subject)
			SELECT ?, ? WHERE EXISTS (SELECT 1 FROM budgets WHERE id = ?) ON CONFLICT DO NOTHING`,
			b[0], b[1], b[0]); err != nil {
			return nil, err
		}
		query, args := tx.chargeSQL("guardrail_usage", "guardrail_id = ? AND subject = ?", spent[b], b[0], b[1])
		if err := tx.later(ctx, query, args...); err != nil {
			return nil, err
		}
	}
	// What a lease's holds cost leaves the lease as it enters the counters
	// (after the keys' and budgets' rows: the order every transaction
	// locks them in).
	fromLeases := map[string]gatehouse.Money{}
	for id, lease := range leaseOf {
		if g := gens[id]; g != nil {
			fromLeases[lease] += g.Cost
		}
	}
	for _, lease := range slices.Sorted(maps.Keys(fromLeases)) {
		if err := tx.shrinkLease(ctx, lease, fromLeases[lease]); err != nil {
			return nil, err
		}
	}
	return done, nil
}

// ended is what a batch of settlements ends: the reservations (done),
// their keys, leases, the keys they hold against up their chains (pairs
// of reservation and key, parent first) and their budgets (reservation,
// guardrail, subject).
type ended struct {
	done           map[string]bool
	keyOf, leaseOf map[string]string
	holds          [][2]string
	budgets        [][3]string
}

// endHolds deletes the reservations of ids that are still open, and
// returns what they held against. One already ended (settled, released or
// charged as expired, perhaps by another instance) is not in the result.
func (tx *Tx) endHolds(ctx context.Context, ids []string) (*ended, error) {
	e := &ended{done: map[string]bool{}, keyOf: map[string]string{}, leaseOf: map[string]string{}}
	if len(ids) == 0 {
		return e, nil
	}
	if tx.d.DeletesInWith() {
		return tx.endHoldsInOne(ctx, ids, e)
	}
	cond, args := tx.in("reservation_id", ids)
	rows, err := tx.Query(ctx, `SELECT reservation_id, key_hash FROM reservation_holds WHERE `+cond+` ORDER BY depth`, args...)
	if e.holds, err = collect(rows, err, scanPair); err != nil {
		return nil, err
	}
	rows, err = tx.Query(ctx, `SELECT reservation_id, guardrail_id, subject FROM reservation_budgets WHERE `+cond, args...)
	e.budgets, err = collect(rows, err, func(s Scanner) ([3]string, error) {
		var b [3]string
		return b, s.Scan(&b[0], &b[1], &b[2])
	})
	if err != nil {
		return nil, err
	}
	cond, args = tx.in("id", ids)
	rows, err = tx.Query(ctx, `DELETE FROM reservations WHERE `+cond+` RETURNING id, key_hash, COALESCE(lease_id, '')`, args...)
	deleted, err := collect(rows, err, func(s Scanner) ([3]string, error) {
		var d [3]string
		return d, s.Scan(&d[0], &d[1], &d[2])
	})
	if err != nil {
		return nil, err
	}
	for _, d := range deleted {
		e.done[d[0]], e.keyOf[d[0]] = true, d[1]
		if d[2] != "" {
			e.leaseOf[d[0]] = d[2]
		}
	}
	return e, nil
}

// endHoldsInOne is endHolds in one statement: the reservations deleted,
// with the chains and budgets they held against (which the statement
// reads as they were before the delete, its cascade included).
func (tx *Tx) endHoldsInOne(ctx context.Context, ids []string, e *ended) (*ended, error) {
	cond, args := tx.in("id", ids)
	rows, err := tx.Query(ctx, `WITH d AS (DELETE FROM reservations WHERE `+cond+` RETURNING id, key_hash, COALESCE(lease_id, '') AS lease_id)
		SELECT 0, id, key_hash, lease_id, 0 FROM d
		UNION ALL SELECT 1, h.reservation_id, h.key_hash, '', h.depth FROM reservation_holds h JOIN d ON d.id = h.reservation_id
		UNION ALL SELECT 2, b.reservation_id, b.guardrail_id, b.subject, 0 FROM reservation_budgets b JOIN d ON d.id = b.reservation_id`, args...)
	type row struct {
		kind    int
		a, b, c string
		depth   int
	}
	got, err := collect(rows, err, func(s Scanner) (row, error) {
		var r row
		return r, s.Scan(&r.kind, &r.a, &r.b, &r.c, &r.depth)
	})
	if err != nil {
		return nil, err
	}
	// The holds parent first, as endHolds reads them.
	slices.SortStableFunc(got, func(x, y row) int { return cmp.Compare(x.depth, y.depth) })
	for _, r := range got {
		switch r.kind {
		case 0:
			e.done[r.a], e.keyOf[r.a] = true, r.b
			if r.c != "" {
				e.leaseOf[r.a] = r.c
			}
		case 1:
			e.holds = append(e.holds, [2]string{r.a, r.b})
		case 2:
			e.budgets = append(e.budgets, [3]string{r.a, r.b, r.c})
		}
	}
	return e, nil
}

// endUnheld adds to e the reservations that were never written, with the
// chains, budgets and leases they carry. The ledger keeps a call whose key was
// deleted while it ran (it was served); the counters of a deleted key or
// budget are not charged.
func endUnheld(rs []*gatehouse.Reservation, e *ended) {
	for _, r := range rs {
		if e.done[r.ID] {
			continue
		}
		e.done[r.ID], e.keyOf[r.ID] = true, r.KeyHash
		if r.LeaseID != "" {
			e.leaseOf[r.ID] = r.LeaseID // its cost leaves the lease that admitted it
		}
		for _, h := range r.Chain {
			e.holds = append(e.holds, [2]string{r.ID, h})
		}
		for _, b := range r.Budgets {
			e.budgets = append(e.budgets, [3]string{r.ID, b.GuardrailID, b.Subject})
		}
	}
}

// shrinkLease takes amount off a lease (no lower than nothing); its
// statement may be held back (Tx.later).
func (tx *Tx) shrinkLease(ctx context.Context, id string, amount gatehouse.Money) error {
	return tx.later(ctx, `UPDATE reservations SET amount = CASE WHEN amount > ? THEN amount - ? ELSE 0 END
		WHERE id = ? AND lease = TRUE`, int64(amount), int64(amount), id)
}

// chargeTo adds a generation's cost to the charge of one key or budget.
func chargeTo[K comparable](m map[K]*charge, k K, g *gatehouse.Generation) {
	c := m[k]
	if c == nil {
		c = &charge{}
		m[k] = c
	}
	c.add(g)
}

// addCharge adds a charge to the counters of the row of table that where
// selects with its args, in one statement (it was a locking read and an
// update: a round trip less for every key and budget a ledger batch
// charges). Each period's spend grows when the row's period is the
// current one, starts again at the charge when the row's is older, and is
// left alone when the row's is newer (another instance's clock ahead), as
// gatehouse.Counter.Add does; the periods' starts are computed here, the
// same for every row. ErrNoRows when there is no row.
func (tx *Tx) addCharge(ctx context.Context, table, where string, c *charge, args ...any) error {
	query, args := tx.chargeSQL(table, where, c, args...)
	n, err := tx.Exec(ctx, query, args...)
	if err == nil && n == 0 {
		return ErrNoRows
	}
	return err
}

// chargeSQL is addCharge's statement.
func (tx *Tx) chargeSQL(table, where string, c *charge, args ...any) (string, []any) {
	var set strings.Builder
	var vals []any
	for _, part := range []struct {
		prefix string
		amount gatehouse.Money
	}{{"usage", c.usage}, {"byok", c.byok}} {
		p, a := part.prefix, int64(part.amount)
		if set.Len() > 0 {
			set.WriteString(", ")
		}
		set.WriteString(p + `_total = ` + p + `_total + ?`)
		vals = append(vals, a)
		for _, period := range []struct {
			name     string
			interval gatehouse.Interval
		}{{"day", gatehouse.Daily}, {"week", gatehouse.Weekly}, {"month", gatehouse.Monthly}} {
			col, start := p+"_"+period.name, ms(period.interval.Start(tx.now))
			set.WriteString(`, ` + col + ` = CASE WHEN ` + col + `_start = ? THEN ` + col + ` + ? WHEN ` + col + `_start > ? THEN ` + col + ` ELSE ? END`)
			set.WriteString(`, ` + col + `_start = CASE WHEN ` + col + `_start > ? THEN ` + col + `_start ELSE ? END`)
			vals = append(vals, start, a, start, a, start, start)
		}
	}
	return `UPDATE ` + table + ` SET ` + set.String() + ` WHERE ` + where, append(vals, args...)
}

// scanPair scans a row of two text columns.
func scanPair(s Scanner) ([2]string, error) {
	var p [2]string
	return p, s.Scan(&p[0], &p[1])
}

// ChargeOpen charges the reservations that a crash left open at what they
// reserved, as partial generations under the ids their calls were given:
// every open one (before, zero: at the start of the one process that owns
// a SQLite database) or those that expired before before (PostgreSQL,
// where other instances' reservations are live until they expire). The
// answers their clients may have received are paid for; the ledger cannot
// say what they cost, so the worst case is charged. It returns how many it
// charged.
func (s *Store) ChargeOpen(ctx context.Context, before time.Time) (_ int, err error) {
	defer wrap(&err, "ChargeOpen")
	if before.IsZero() {
		return s.chargeOpen(ctx, `1 = 1`)
	}
	return s.chargeOpen(ctx, `expires_at <= ?`, ms(before))
}

// ChargeInstance charges the reservations a process left open, as
// ChargeOpen does, once it is known to be gone.
func (s *Store) ChargeInstance(ctx context.Context, instance string) (_ int, err error) {
	defer wrap(&err, "ChargeInstance")
	return s.chargeOpen(ctx, `instance_id = ?`, instance)
}

// RegisterInstance writes this process's name (SetInstance) among the
// instances, before it writes any reservation: the others look for the
// gone ones there (OpenInstances).
func (s *Store) RegisterInstance(ctx context.Context) (err error) {
	defer wrap(&err, "RegisterInstance")
	return s.exec(ctx, func(tx *Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO instances (id, started_at) VALUES (?, ?)`, tx.instance, ms(tx.now))
		return err
	})
}

// OpenInstances returns the registered processes other than this one:
// those that may hold open reservations.
func (s *Store) OpenInstances(ctx context.Context) (_ []string, err error) {
	defer wrap(&err, "OpenInstances")
	return read(ctx, s, func(tx *Tx) ([]string, error) {
		rows, err := tx.Query(ctx, `SELECT id FROM instances WHERE id <> ? ORDER BY id`, tx.instance)
		return collect(rows, err, scanString)
	})
}

// ForgetInstance deletes a gone process from the instances once none of
// its reservations is left open, and says whether it did.
func (s *Store) ForgetInstance(ctx context.Context, instance string) (_ bool, err error) {
	defer wrap(&err, "ForgetInstance")
	return update(ctx, s, func(tx *Tx) (bool, error) {
		n, err := tx.Exec(ctx, `DELETE FROM instances WHERE id = ?
			AND NOT EXISTS (SELECT 1 FROM reservations WHERE instance_id = ?)`, instance, instance)
		return n > 0, err
	})
}

// chargeOpen charges the open reservations that where selects, in batches.
func (s *Store) chargeOpen(ctx context.Context, where string, args ...any) (int, error) {
	total := 0
	for {
		got, err := lock(ctx, s, func(tx *Tx) ([2]int, error) {
			rows, err := tx.Query(ctx, `SELECT id, organization_id, key_hash, amount, byok, generation_id, workspace_id,
				model, provider, streamed, lease FROM reservations WHERE `+where+` ORDER BY id LIMIT 500`, args...)
			open, err := collect(rows, err, scanOpenReservation)
			if err != nil || len(open) == 0 {
				return [2]int{}, err
			}
			done, err := tx.settle(ctx, open)
			charged := 0
			for _, st := range open {
				if done[st.ReservationID] && st.Generation != nil {
					charged++ // a lease is dropped, not charged
				}
			}
			return [2]int{len(done), charged}, err
		})
		total += got[1]
		if err != nil || got[0] == 0 {
			return total, err
		}
	}
}

// scanOpenReservation scans a reservation as the settlement that charges
// it at its amount, or, for a lease, drops it: what its instance spent
// under it is in the ledger or in holds charged on their own.
func scanOpenReservation(s Scanner) (Settlement, error) {
	var g gatehouse.Generation
	var id string
	var genID, workspace, model, provider sql.NullString
	var lease bool
	if err := s.Scan(&id, &g.OrganizationID, &g.KeyHash, &g.Cost, &g.BYOK, &genID, &workspace, &model, &provider,
		&g.Streamed, &lease); err != nil {
		return Settlement{}, err
	}
	if lease {
		return Settlement{ReservationID: id}, nil
	}
	g.ID, g.WorkspaceID, g.Model, g.Provider = genID.String, workspace.String, model.String, provider.String
	if g.ID == "" { // reserved before reservations named their generation
		g.ID, g.Model, g.Provider = gatehouse.NewGenerationID(), "unknown", "unknown"
	}
	g.Status = gatehouse.GenerationPartial
	return Settlement{ReservationID: id, Generation: &g}, nil
}

// FindGeneration returns a ledger entry of the organization.
func (s *Store) FindGeneration(ctx context.Context, orgID, id string) (_ *gatehouse.Generation, err error) {
	defer wrap(&err, "FindGeneration")
	return read(ctx, s, func(tx *Tx) (*gatehouse.Generation, error) {
		g, err := found("generation", id, scanGeneration, tx.QueryRow(ctx, `SELECT `+generationColumns+` FROM generations
			WHERE id = ? AND organization_id = ?`, id, orgID))
		if err == nil {
			g.AppID, err = tx.appID(ctx, orgID, g.HTTPReferer)
		}
		return g, err
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

// LoadCounters reads the counters of keys and budgets in one snapshot; a
// key or budget that has none (deleted, or never charged) reads as zero.
func (s *Store) LoadCounters(ctx context.Context, keyHashes []string, budgets []gatehouse.Budget) (_ map[string]meter.Counters, _ map[[2]string]meter.Counters, err error) {
	defer wrap(&err, "LoadCounters")
	type loaded struct {
		keys    map[string]meter.Counters
		budgets map[[2]string]meter.Counters
	}
	got, err := view(ctx, s, func(tx *Tx) (loaded, error) {
		l := loaded{map[string]meter.Counters{}, map[[2]string]meter.Counters{}}
		if len(keyHashes) > 0 {
			cond, args := tx.in("hash", keyHashes)
			rows, err := tx.Query(ctx, `SELECT hash, `+counterColumns+` FROM api_keys WHERE `+cond, args...)
			if err != nil {
				return l, err
			}
			for rows.Next() {
				var hash string
				var c meter.Counters
				if err := rows.Scan(append([]any{&hash}, append(counterDest(&c.Usage), counterDest(&c.BYOK)...)...)...); err != nil {
					rows.Close()
					return l, err
				}
				l.keys[hash] = c
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return l, err
			}
		}
		for _, b := range budgets {
			u, byok, err := scanCounters(tx.QueryRow(ctx, `SELECT `+counterColumns+` FROM guardrail_usage
				WHERE guardrail_id = ? AND subject = ?`, b.GuardrailID, b.Subject))
			if err != nil && !errors.Is(err, ErrNoRows) {
				return l, err
			}
			l.budgets[[2]string{b.GuardrailID, b.Subject}] = meter.Counters{Usage: u, BYOK: byok}
		}
		return l, nil
	})
	return got.keys, got.budgets, err
}

// Ancestors returns the keys a key was minted from, parent first; a nil
// entry is a deleted key, and ends the chain.
func (s *Store) Ancestors(ctx context.Context, key *gatehouse.Key) (_ []*gatehouse.Key, err error) {
	defer wrap(&err, "Ancestors")
	if key.ParentKeyHash == nil {
		return nil, nil
	}
	return view(ctx, s, func(tx *Tx) ([]*gatehouse.Key, error) { return tx.ancestors(ctx, key, false) })
}
