package postgres_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/meter"
	"gatehouse/postgres"
	"gatehouse/sqlstore"

	"github.com/google/uuid"
)

// leaseInstance is one server's metering on a shared database: its
// instance lock, ledger, batched admission and leases.
type leaseInstance struct {
	db     *postgres.DB
	ledger *sqlstore.Ledger
	leases *meter.Leases
}

func startLeaseInstance(t *testing.T, db *postgres.DB) *leaseInstance {
	t.Helper()
	release, err := db.HoldInstance(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	stop := db.BatchReserves()
	ledger := db.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	ledger.LingerSettles()
	in := &leaseInstance{db: db, ledger: ledger, leases: meter.NewLeases(db, ledger, nil)}
	t.Cleanup(func() {
		in.leases.Close()
		stop()
		if err := ledger.Close(context.Background()); err != nil {
			t.Error(err)
		}
		release()
	})
	return in
}

// reserve admits a request of amount for key as the meter does: against a
// lease, whose hold the ledger then writes, or alone.
func (in *leaseInstance) reserve(ctx context.Context, key *gatehouse.Key, amount gatehouse.Money) (*gatehouse.Reservation, error) {
	r := callOf(key, amount)
	alone, err := in.leases.Admit(ctx, r)
	if err != nil {
		return nil, err
	}
	if !alone {
		if err := <-in.ledger.Hold(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// callOf is the reservation of a model call of amount on key.
func callOf(key *gatehouse.Key, amount gatehouse.Money) *gatehouse.Reservation {
	return &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: key.Hash, Amount: amount,
		ExpiresAt: time.Now().Add(2 * time.Minute),
		Generation: &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: key.OrganizationID,
			KeyHash: key.Hash, Model: "acme/chat", Provider: "acme"}}
}

// settle charges r at cost, as the meter does.
func (in *leaseInstance) settle(r *gatehouse.Reservation, cost gatehouse.Money) {
	g := *r.Generation
	g.Status, g.Cost = gatehouse.GenerationCompleted, cost
	in.ledger.Settle(r, &g, func(err error) { in.leases.Written(r, &cost, err) })
}

func leaseKey(t *testing.T, db *postgres.DB, limit gatehouse.Money) *gatehouse.Key {
	t.Helper()
	ctx := context.Background()
	org, err := db.CreateOrganization(ctx, "Leased")
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := db.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "hot", Limit: &limit})
	if err != nil {
		t.Fatal(err)
	}
	return k
}

// reservationsLeft counts the key's reservation rows: leases and holds.
func reservationsLeft(t *testing.T, db *postgres.DB, k *gatehouse.Key) (leases, holds int) {
	t.Helper()
	ctx := context.Background()
	for _, q := range []struct {
		lease bool
		n     *int
	}{{true, &leases}, {false, &holds}} {
		if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM reservations WHERE key_hash = $1 AND lease = $2`,
			k.Hash, q.lease).Scan(q.n); err != nil {
			t.Fatal(err)
		}
	}
	return leases, holds
}

// TestLeasesAdmitExactlyWhatFits: one instance, 50 requests of $0.03 held
// at once against a $1 limit: leases serve the first ones in memory, and
// near the limit each request is checked alone against the exact
// remainder, so exactly 33 are admitted. Settled, the key's usage is what
// they cost, and once the leases are dropped no row is left.
func TestLeasesAdmitExactlyWhatFits(t *testing.T) {
	db := instances(t, 1)[0]
	in := startLeaseInstance(t, db)
	k := leaseKey(t, db, gatehouse.USD(1))
	ctx := context.Background()
	const each = 30_000_000 // $0.03
	var mu sync.Mutex
	var admitted []*gatehouse.Reservation
	errs := race(50, func(int) error {
		r, err := in.reserve(ctx, k, each)
		if err == nil {
			mu.Lock()
			admitted = append(admitted, r)
			mu.Unlock()
		}
		return err
	})
	for _, err := range errs {
		if err != nil && gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
			t.Fatalf("refused with %v, want 402", err)
		}
	}
	if len(admitted) != 33 {
		t.Fatalf("admitted %d requests of $0.03 against $1, want 33", len(admitted))
	}
	leased := 0
	for _, r := range admitted {
		if r.LeaseID != "" {
			leased++
		}
	}
	if leased == 0 {
		t.Error("no request was admitted against a lease")
	}
	for _, r := range admitted {
		in.settle(r, each)
	}
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindKey(ctx, k.OrganizationID, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if want := gatehouse.Money(33 * each); got.Usage.Total != want {
		t.Errorf("usage %s, want %s", got.Usage.Total, want)
	}
	// A lease admits until its life is over or it is full; Close retires
	// them all, and the ledger drops each once nothing of it is open.
	in.leases.Close()
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l, h := reservationsLeft(t, db, k); l != 0 || h != 0 {
		t.Errorf("%d leases and %d holds left after every request settled and the leases were retired", l, h)
	}
}

// TestLeasesTwoInstancesNeverOverspend: two instances on one database,
// 60 requests each of $0.03 at once against a $1 limit, settled as they
// are admitted: the leases of both never add up past the limit, so the
// recorded usage is at most $0.99 (and nothing is refused while plenty
// remains: the first $0.60 all pass).
func TestLeasesTwoInstancesNeverOverspend(t *testing.T) {
	dbs := instances(t, 2)
	a, b := startLeaseInstance(t, dbs[0]), startLeaseInstance(t, dbs[1])
	k := leaseKey(t, dbs[0], gatehouse.USD(1))
	ctx := context.Background()
	const each = 30_000_000
	var mu sync.Mutex
	admitted := 0
	errs := race(120, func(i int) error {
		in := a
		if i%2 == 1 {
			in = b
		}
		r, err := in.reserve(ctx, k, each)
		if err != nil {
			return err
		}
		mu.Lock()
		admitted++
		mu.Unlock()
		in.settle(r, each)
		return nil
	})
	for _, err := range errs {
		if err != nil && gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
			t.Fatalf("refused with %v, want 402", err)
		}
	}
	for _, in := range []*leaseInstance{a, b} {
		if err := in.ledger.Sync(ctx); err != nil {
			t.Fatal(err)
		}
	}
	got, err := dbs[0].FindKey(ctx, k.OrganizationID, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage.Total != gatehouse.Money(admitted*each) {
		t.Errorf("usage %s, but %d requests of $0.03 were admitted", got.Usage.Total, admitted)
	}
	t.Logf("admitted %d", admitted)
	if admitted > 33 || admitted < 20 {
		t.Errorf("admitted %d requests of $0.03 against $1, want at most 33 and every one while $0.40 remain", admitted)
	}
}

// TestLeasesOfAGoneInstance: an instance that stops without settling
// leaves a lease and holds under it; another instance charges the holds
// at what they reserved and drops the lease, so the limit is whole again
// but for those charges.
func TestLeasesOfAGoneInstance(t *testing.T) {
	dbs := instances(t, 2)
	ctx := context.Background()
	k := leaseKey(t, dbs[0], gatehouse.USD(1))
	gone := startLeaseInstance(t, dbs[0])
	r, err := gone.reserve(ctx, k, 100_000_000) // $0.10, against a lease of $0.40
	if err != nil || r.LeaseID == "" {
		t.Fatalf("reserve: %v, lease %q", err, r.LeaseID)
	}
	if l, h := reservationsLeft(t, dbs[0], k); l != 1 || h != 1 {
		t.Fatalf("%d leases, %d holds; want 1 and 1", l, h)
	}
	// The other instance cannot take what the lease holds: $0.60 remain.
	other := startLeaseInstance(t, dbs[1])
	if _, err := other.reserve(ctx, k, 700_000_000); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("$0.70 beside a $0.40 lease on $1: %v, want 402", err)
	}
	// Gone: its instance lock is free. (Its leases are not retired: a
	// crash retires nothing.)
	n, err := dbs[1].ChargeInstance(ctx, instanceOf(t, dbs[0], k))
	if err != nil || n != 1 {
		t.Fatalf("ChargeInstance: %d charged, %v; want 1", n, err)
	}
	if l, h := reservationsLeft(t, dbs[0], k); l != 0 || h != 0 {
		t.Fatalf("%d leases, %d holds left; want none", l, h)
	}
	got, err := dbs[1].FindKey(ctx, k.OrganizationID, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage.Total != 100_000_000 {
		t.Errorf("usage %s, want the hold's $0.10", got.Usage.Total)
	}
	if _, err := other.reserve(ctx, k, 900_000_000); err != nil {
		t.Errorf("$0.90 of the $0.90 left: %v", err)
	}
}

func instanceOf(t *testing.T, db *postgres.DB, k *gatehouse.Key) string {
	t.Helper()
	var id string
	if err := db.Pool().QueryRow(context.Background(), `SELECT instance_id FROM reservations WHERE key_hash = $1 LIMIT 1`,
		k.Hash).Scan(&id); err != nil {
		t.Fatal(err)
	}
	return id
}

// TestLeasesRetireOnAWrite: a management write of this process (a lower
// limit) retires the lease at once: the next request is admitted against
// the new limit, not against what the old one granted.
func TestLeasesRetireOnAWrite(t *testing.T) {
	db := instances(t, 1)[0]
	in := startLeaseInstance(t, db)
	k := leaseKey(t, db, gatehouse.USD(1))
	ctx := context.Background()
	r, err := in.reserve(ctx, k, 50_000_000) // lease of $0.20
	if err != nil || r.LeaseID == "" {
		t.Fatalf("reserve: %v, lease %q", err, r.LeaseID)
	}
	if _, err := db.UpdateKey(ctx, k.OrganizationID, k.Hash, gatehouse.KeyUpdate{Limit: gatehouse.Val(gatehouse.Money(60_000_000))}); err != nil {
		t.Fatal(err)
	}
	// $0.05 held of $0.06: another $0.05 would fit the old lease, not the limit.
	if _, err := in.reserve(ctx, k, 50_000_000); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("after lowering the limit to $0.06 with $0.05 held: %v, want 402", err)
	}
}

// TestLeaseHoldOutlivingItsLease: a hold whose settle could not be written
// outlives its lease once the lease is dropped; it then counts against the
// limit on its own until it is charged.
func TestLeaseHoldOutlivingItsLease(t *testing.T) {
	db := instances(t, 1)[0]
	in := startLeaseInstance(t, db)
	k := leaseKey(t, db, gatehouse.USD(1))
	ctx := context.Background()
	r, err := in.reserve(ctx, k, 200_000_000) // $0.20 under a lease of $0.80
	if err != nil || r.LeaseID == "" {
		t.Fatalf("reserve: %v, lease %q", err, r.LeaseID)
	}
	if _, err := db.Pool().Exec(ctx, `DELETE FROM reservations WHERE id = $1`, r.LeaseID); err != nil {
		t.Fatal(err)
	}
	if err := db.Reserve(ctx, &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 850_000_000,
		ExpiresAt: time.Now().Add(time.Minute)}); gatehouse.ErrorCode(err) != gatehouse.EPAYMENT {
		t.Fatalf("$0.85 beside a $0.20 hold whose lease is gone: %v, want 402", err)
	}
}

// TestLedgerWritersKeepEveryCharge: one instance, its ledger writing two
// batches at once, 40 clients each calling 25 times as fast as they can,
// every call settled (or, one in five, released) the moment its hold is
// written: settles race the holds that the second writer commits beside
// a batch in flight. Every settle ends its hold and charges it: the key's
// usage is what the settled calls cost, and once the leases are retired
// nothing is left open.
func TestLedgerWritersKeepEveryCharge(t *testing.T) {
	db := instances(t, 1)[0]
	in := startLeaseInstance(t, db)
	k := leaseKey(t, db, gatehouse.USD(1000))
	ctx := context.Background()
	const clients, calls, cost = 40, 25, 7_000
	var settled atomic.Int64
	errs := race(clients, func(c int) error {
		for i := range calls {
			r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 20_000,
				ExpiresAt: time.Now().Add(2 * time.Minute),
				Generation: &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: k.OrganizationID,
					KeyHash: k.Hash, Model: "acme/chat", Provider: "acme"}}
			alone, err := in.leases.Admit(ctx, r)
			if err != nil {
				return err
			}
			var held <-chan error
			if !alone {
				held = in.ledger.Hold(r)
			}
			// The call ends before its hold is written (a provider that
			// fails at once): its end is queued behind the hold.
			if (c+i)%5 == 0 {
				in.ledger.Release(r, func(err error) { in.leases.Written(r, nil, err) })
			} else {
				in.settle(r, cost)
				settled.Add(1)
			}
			if held != nil {
				if err := <-held; err != nil {
					return err
				}
			}
		}
		return nil
	})
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	got, err := db.FindKey(ctx, k.OrganizationID, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if want := gatehouse.Money(settled.Load() * cost); got.Usage.Total != want {
		t.Errorf("usage %s after %d settles of %d, want %s", got.Usage.Total, settled.Load(), cost, want)
	}
	in.leases.Close()
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l, h := reservationsLeft(t, db, k); l != 0 || h != 0 {
		t.Errorf("%d leases and %d holds left open", l, h)
	}
}

// TestLeasesWholeAnswerTakenBack: a whole answer's hold is written
// patiently: while a batch is in flight (here a settle held up on the
// key's row by another transaction) it waits, and the answer that comes
// meanwhile takes it back and is charged instead. No hold of it is ever
// written; its charge takes its cost off the lease as it adds it to the
// key, and waits, as the answer does, for the batch in flight. A patient
// hold goes at once when nothing is in flight (and is then not taken
// back), and beside the batch in flight when Sync waits. Once the leases
// are retired nothing is left open, and the key's usage is what the calls
// cost.
func TestLeasesWholeAnswerTakenBack(t *testing.T) {
	db := instances(t, 1)[0]
	in := startLeaseInstance(t, db)
	k := leaseKey(t, db, gatehouse.USD(1))
	ctx := context.Background()
	const amount = 10_000_000 // $0.01 reserved a call
	cost := gatehouse.Money(4_000_000)
	admit := func() *gatehouse.Reservation {
		t.Helper()
		r := callOf(k, amount)
		if alone, err := in.leases.Admit(ctx, r); err != nil || alone {
			t.Fatalf("admit: alone %v, %v; want admitted against a lease", alone, err)
		}
		return r
	}
	// lockKeyAndSettle holds the key's row in another transaction until
	// the returned func is called, and settles r meanwhile: that batch is then in flight,
	// waiting for the row.
	lockKeyAndSettle := func(r *gatehouse.Reservation) (unlock func()) {
		t.Helper()
		tx, err := db.Pool().Begin(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { tx.Rollback(ctx) }) // before the ledger's close, which waits for the batch
		if _, err := tx.Exec(ctx, `SELECT 1 FROM api_keys WHERE hash = $1 FOR UPDATE`, k.Hash); err != nil {
			t.Fatal(err)
		}
		in.settle(r, cost)
		for waiting := 0; waiting == 0; time.Sleep(5 * time.Millisecond) {
			if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
				WHERE NOT l.granted AND a.datname = current_database()`).Scan(&waiting); err != nil {
				t.Fatal(err)
			}
		}
		return func() { tx.Rollback(ctx) }
	}
	leaseAmount := func(id string) (amount gatehouse.Money) {
		t.Helper()
		if err := db.Pool().QueryRow(ctx, `SELECT amount FROM reservations WHERE id = $1`, id).Scan(&amount); err != nil {
			t.Fatal(err)
		}
		return amount
	}

	first, err := in.reserve(ctx, k, amount)
	if err != nil {
		t.Fatal(err)
	}
	r := admit() // before the key's row is locked: a grant would wait for it
	granted := leaseAmount(r.LeaseID)
	unlock := lockKeyAndSettle(first)
	held := in.ledger.HoldPatiently(r)
	time.Sleep(50 * time.Millisecond) // time enough for the idle writer to take a hold that was not patient
	if !in.ledger.Unhold(r) {
		t.Fatal("a whole answer's hold queued behind a batch in flight was not taken back")
	}
	g := *r.Generation
	g.Status, g.Cost = gatehouse.GenerationCompleted, cost
	r.Unheld = true
	charged := make(chan error, 1)
	go func() {
		charged <- in.ledger.Charge(ctx, r, &g, func(err error) { in.leases.Written(r, &cost, err) })
	}()
	select {
	case err := <-charged:
		t.Fatalf("the charge returned (%v) while the batch before it waited for the key's row", err)
	case <-time.After(100 * time.Millisecond):
	}
	if _, holds := reservationsLeft(t, db, k); holds != 1 {
		t.Fatalf("%d holds written, want the first call's only", holds)
	}
	unlock()
	if err := <-charged; err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-held:
		t.Fatalf("the hold taken back reported %v: it is never written", err)
	default:
	}
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if got := leaseAmount(r.LeaseID); got != granted-2*cost {
		t.Errorf("the lease holds %s after two charges of %s from %s, want %s", got, cost, granted, granted-2*cost)
	}
	var gens int
	if err := db.Pool().QueryRow(ctx, `SELECT count(*) FROM generations WHERE id IN ($1, $2) AND cost = $3`,
		first.Generation.ID, r.Generation.ID, int64(cost)).Scan(&gens); err != nil || gens != 2 {
		t.Fatalf("%d of the two calls in the ledger at their cost (%v)", gens, err)
	}

	// Nothing in flight: a patient hold goes at once, and once written it
	// is not taken back.
	second := admit()
	third := admit()
	if err := <-in.ledger.HoldPatiently(second); err != nil {
		t.Fatal(err)
	}
	if in.ledger.Unhold(second) {
		t.Fatal("a written hold was taken back")
	}
	// Sync waits: the patient hold goes beside the batch in flight.
	unlock = lockKeyAndSettle(second)
	held = in.ledger.HoldPatiently(third)
	synced := make(chan error, 1)
	go func() { synced <- in.ledger.Sync(ctx) }()
	select {
	case err := <-held:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a patient hold was not written beside the batch in flight while Sync waited")
	}
	unlock()
	if err := <-synced; err != nil {
		t.Fatal(err)
	}
	in.settle(third, cost)
	// Once every settle is written, Close drops the leases.
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	in.leases.Close()
	if err := in.ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if l, h := reservationsLeft(t, db, k); l != 0 || h != 0 {
		t.Errorf("%d leases and %d holds left open", l, h)
	}
	got, err := db.FindKey(ctx, k.OrganizationID, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if want := 4 * cost; got.Usage.Total != want {
		t.Errorf("usage %s after four calls of %s, want %s", got.Usage.Total, cost, want)
	}
}

// TestChargeGoneInstances: instances register their names, and each looks
// among the others for those whose lock is free. One that stopped with a
// hold open has it charged and is forgotten; a live one keeps its hold
// and its name, whoever looks.
func TestChargeGoneInstances(t *testing.T) {
	dbs := instances(t, 3)
	ctx := context.Background()
	k := leaseKey(t, dbs[0], gatehouse.USD(1))
	hold := func(db *postgres.DB, amount gatehouse.Money) {
		t.Helper()
		ledger := db.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
		defer ledger.Close(ctx)
		if err := <-ledger.Hold(callOf(k, amount)); err != nil {
			t.Fatal(err)
		}
	}
	registered := func() int {
		t.Helper()
		var n int
		if err := dbs[0].Pool().QueryRow(ctx, `SELECT count(*) FROM instances`).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	var releases []func()
	for i, db := range dbs {
		release, err := db.HoldInstance(ctx)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(release)
		releases = append(releases, release)
		hold(db, gatehouse.Money(100_000_000*(i+1))) // $0.10, $0.20, $0.30
	}
	if n := registered(); n != 3 {
		t.Fatalf("%d instances registered, want 3", n)
	}
	// All alive: nothing to charge, from either side.
	for _, db := range dbs {
		if n, err := db.ChargeGoneInstances(ctx); err != nil || n != 0 {
			t.Fatalf("ChargeGoneInstances with every instance alive: %d, %v; want 0", n, err)
		}
	}
	releases[0]() // the first stops without settling its hold
	if n, err := dbs[1].ChargeGoneInstances(ctx); err != nil || n != 1 {
		t.Fatalf("ChargeGoneInstances after one stopped: %d, %v; want 1", n, err)
	}
	if n := registered(); n != 2 {
		t.Errorf("%d instances registered after one was charged, want 2", n)
	}
	if _, h := reservationsLeft(t, dbs[0], k); h != 2 {
		t.Errorf("%d holds left, want the two live instances'", h)
	}
	got, err := dbs[2].FindKey(ctx, k.OrganizationID, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if got.Usage.Total != 100_000_000 {
		t.Errorf("usage %s, want the gone instance's $0.10", got.Usage.Total)
	}
	// The one that looked is not charged by another, nor the gone one again.
	if n, err := dbs[2].ChargeGoneInstances(ctx); err != nil || n != 0 {
		t.Errorf("ChargeGoneInstances again: %d, %v; want 0", n, err)
	}
	// One that stops with nothing open is forgotten all the same.
	releases[2]()
	if _, err := dbs[2].Pool().Exec(ctx, `DELETE FROM reservations WHERE amount = 300000000`); err != nil { // its hold, settled
		t.Fatal(err)
	}
	if n, err := dbs[1].ChargeGoneInstances(ctx); err != nil || n != 0 {
		t.Errorf("ChargeGoneInstances of one with nothing open: %d, %v; want 0", n, err)
	}
	if n := registered(); n != 1 {
		t.Errorf("%d instances registered, want the one alive", n)
	}
}
