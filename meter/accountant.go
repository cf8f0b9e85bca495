package meter

import (
	"context"
	"gatehouse"
	"sync"
	"time"
)

// Accountant admits reservations in memory, exactly, for a process that
// owns its database (SQLite: one serving process, enforced with a lock).
// It keeps, for every key and guardrail budget in use, the spend recorded
// in the database when it was first needed plus every cost settled here
// since, and the reservations held now: a hold counts at what it reserved
// until its settle or release is written (or, for a whole answer that has
// no hold, journalled), as it would be charged after a crash. Admission takes one lock and a few
// additions, with the checks of the database path (CheckKeyLimit,
// MintedFrom, CheckBudget, in that order) and the same all-or-nothing
// result. The ledger catches up with the settled costs behind the request
// path; an account stays in memory while any of its costs is unwritten.
type Accountant struct {
	load CounterLoader
	now  gatehouse.Clock

	mu      sync.Mutex
	keys    map[string]*account
	budgets map[budgetRef]*account
}

// CounterLoader reads the recorded counters of keys and budgets: what the
// database holds once everything settled before has been written.
type CounterLoader interface {
	LoadCounters(ctx context.Context, keyHashes []string, budgets []gatehouse.Budget) (map[string]Counters, map[[2]string]Counters, error)
}

// Counters are the ordinary and BYOK spend counters of a key or budget.
type Counters struct{ Usage, BYOK gatehouse.Counter }

type budgetRef struct{ guardrailID, subject string }

// account is the spend of one key or budget as this process knows it.
type account struct {
	Counters
	held gatehouse.Reserved
	// busy counts the reservations held and the settled costs not yet
	// written: while it is not zero the account must stay in memory.
	busy int
}

// maxIdleAccounts bounds the idle accounts kept: beyond it they are
// dropped, and read again when next needed.
const maxIdleAccounts = 200_000

// NewAccountant returns an accountant that reads counters with load.
func NewAccountant(load CounterLoader, now gatehouse.Clock) *Accountant {
	if now == nil {
		now = time.Now
	}
	return &Accountant{load: load, now: now, keys: map[string]*account{}, budgets: map[budgetRef]*account{}}
}

// Admit reserves r against the key, each key it was minted from (chain,
// parent first; a nil entry is a deleted key) and each of r's budgets, or
// refuses it with the error the database path would give. The key and
// chain carry the limits to apply; their counters are the accountant's.
func (a *Accountant) Admit(ctx context.Context, key *gatehouse.Key, chain []*gatehouse.Key, r *gatehouse.Reservation) error {
	for {
		if err := a.ensure(ctx, key, chain, r.Budgets); err != nil {
			return err
		}
		a.mu.Lock()
		if a.present(key, chain, r.Budgets) {
			break // locked
		}
		a.mu.Unlock() // dropped meanwhile: load again
	}
	defer a.mu.Unlock()
	now := a.now()
	accts := make([]*account, 0, 1+len(chain)+len(r.Budgets))
	ka := a.keys[key.Hash]
	if err := gatehouse.CheckKeyLimit(ka.view(key), now, ka.held, r); err != nil {
		return err
	}
	accts = append(accts, ka)
	for _, k := range chain {
		var held gatehouse.Reserved
		var acct *account
		if k != nil {
			acct = a.keys[k.Hash]
			held, k = acct.held, acct.view(k)
		}
		if err := gatehouse.MintedFrom(k, now, held, r); err != nil {
			return err
		}
		accts = append(accts, acct)
	}
	for _, b := range r.Budgets {
		acct := a.budgets[budgetRef{b.GuardrailID, b.Subject}]
		spend := gatehouse.BudgetSpend{Usage: acct.Usage.At(now), BYOK: acct.BYOK.At(now), Reserved: acct.held}
		if err := gatehouse.CheckBudget(b, spend, r); err != nil {
			return err
		}
		accts = append(accts, acct)
	}
	for _, acct := range accts {
		addReserved(&acct.held, r, 1)
		acct.busy++
	}
	return nil
}

// Settle replaces r's hold with its cost. Meter calls it once the ledger
// has written the settle (before, a crash would leave the hold open, to be
// charged at what it reserved), or at once for an unheld reservation,
// whose charge survives a crash before its answer is delivered; then
// Written once the charge is in the database.
func (a *Accountant) Settle(r *gatehouse.Reservation, cost gatehouse.Money) {
	a.mu.Lock()
	defer a.mu.Unlock()
	now := a.now() // under the lock: settles reach the counters in the order of their instants
	for _, acct := range a.accounts(r) {
		addReserved(&acct.held, r, -1)
		c := &acct.Usage
		if r.BYOK {
			c = &acct.BYOK
		}
		*c = c.Add(now, cost)
	}
}

// Release drops r's hold, once the ledger has dropped it too (or at once,
// for an unheld reservation); then Written.
func (a *Accountant) Release(r *gatehouse.Reservation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, acct := range a.accounts(r) {
		addReserved(&acct.held, r, -1)
	}
}

// Written records that the database holds what Settle or Release did to
// r: its accounts may be dropped once idle.
func (a *Accountant) Written(r *gatehouse.Reservation) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, acct := range a.accounts(r) {
		acct.busy--
	}
	if len(a.keys)+len(a.budgets) > maxIdleAccounts {
		a.dropIdle()
	}
}

// accounts returns r's accounts: its key's, its chain's (Admit made sure
// they exist) and its budgets'.
func (a *Accountant) accounts(r *gatehouse.Reservation) []*account {
	out := make([]*account, 0, 1+len(r.Chain)+len(r.Budgets))
	out = append(out, a.keys[r.KeyHash])
	for _, h := range r.Chain {
		out = append(out, a.keys[h])
	}
	for _, b := range r.Budgets {
		out = append(out, a.budgets[budgetRef{b.GuardrailID, b.Subject}])
	}
	return out
}

// dropIdle forgets the accounts with nothing held or unwritten.
func (a *Accountant) dropIdle() {
	for h, acct := range a.keys {
		if acct.busy == 0 {
			delete(a.keys, h)
		}
	}
	for b, acct := range a.budgets {
		if acct.busy == 0 {
			delete(a.budgets, b)
		}
	}
}

// Seed sets what the accountant knows of a key (guardrailID empty) or of a
// budget: its recorded counters and what is held against it. It is for an
// accountant that lives for one database transaction, over figures read
// under lock (the database's batched admission); one built with a nil
// loader knows only what was seeded.
func (a *Accountant) Seed(keyHash, guardrailID, subject string, c Counters, held gatehouse.Reserved) {
	a.mu.Lock()
	defer a.mu.Unlock()
	acct := &account{Counters: c, held: held}
	if guardrailID == "" {
		a.keys[keyHash] = acct
	} else {
		a.budgets[budgetRef{guardrailID, subject}] = acct
	}
}

// present reports whether the accounts of a reservation are in memory.
func (a *Accountant) present(key *gatehouse.Key, chain []*gatehouse.Key, budgets []gatehouse.Budget) bool {
	for _, k := range append([]*gatehouse.Key{key}, chain...) {
		if k != nil && a.keys[k.Hash] == nil {
			return false
		}
	}
	for _, b := range budgets {
		if a.budgets[budgetRef{b.GuardrailID, b.Subject}] == nil {
			return false
		}
	}
	return true
}

// ensure loads the accounts of a reservation that are not in memory. An
// account is absent only when nothing of it is unwritten, so the database
// has its whole spend.
func (a *Accountant) ensure(ctx context.Context, key *gatehouse.Key, chain []*gatehouse.Key, budgets []gatehouse.Budget) error {
	var hashes []string
	var refs []gatehouse.Budget
	a.mu.Lock()
	for _, k := range append([]*gatehouse.Key{key}, chain...) {
		if k != nil && a.keys[k.Hash] == nil {
			hashes = append(hashes, k.Hash)
		}
	}
	for _, b := range budgets {
		if a.budgets[budgetRef{b.GuardrailID, b.Subject}] == nil {
			refs = append(refs, b)
		}
	}
	a.mu.Unlock()
	if len(hashes) == 0 && len(refs) == 0 {
		return nil
	}
	if a.load == nil {
		return gatehouse.Errorf(gatehouse.EUNAVAILABLE, "metering: the figures of a key or budget were not read")
	}
	keys, bs, err := a.load.LoadCounters(ctx, hashes, refs)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, h := range hashes {
		if a.keys[h] == nil { // else loaded meanwhile, and perhaps used since
			a.keys[h] = &account{Counters: keys[h]}
		}
	}
	for _, b := range refs {
		ref := budgetRef{b.GuardrailID, b.Subject}
		if a.budgets[ref] == nil {
			a.budgets[ref] = &account{Counters: bs[[2]string{b.GuardrailID, b.Subject}]}
		}
	}
	return nil
}

// view returns k with the account's counters.
func (acct *account) view(k *gatehouse.Key) *gatehouse.Key {
	v := *k
	v.Usage, v.BYOKUsage = acct.Usage, acct.BYOK
	return &v
}

// addReserved adds (sign 1) or removes (sign -1) r's amount to h.
func addReserved(h *gatehouse.Reserved, r *gatehouse.Reservation, sign gatehouse.Money) {
	h.All += sign * r.Amount
	if r.BYOK {
		h.BYOK += sign * r.Amount
	}
}
