package sqlstore_test

import (
	"context"
	"io"
	"log/slog"
	"sync"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlite"

	"github.com/google/uuid"
)

// TestLedgerWritesBehind: holds, settles and releases written behind the
// request path land in the database (Sync waits for them); one operation
// that cannot be written fails alone, while the others of its batch are
// written; Close writes what is still queued; and a reservation left open
// is charged at what it reserved by ChargeOpen.
func TestLedgerWritesBehind(t *testing.T) {
	ctx := context.Background()
	db, org, k := openWithKey(t, "ledger.db")
	var mu sync.Mutex
	var written []string
	ledger := db.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), func(hashes []string) {
		mu.Lock()
		written = append(written, hashes...)
		mu.Unlock()
	})
	ledger.LingerSettles()
	reservation := func(amount gatehouse.Money) *gatehouse.Reservation {
		return &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: amount, ExpiresAt: time.Now().Add(time.Hour),
			Generation: &gatehouse.Generation{ID: gatehouse.NewGenerationID(), WorkspaceID: k.WorkspaceID, Model: "m", Provider: "p"}}
	}
	generation := func(r *gatehouse.Reservation, orgID string, cost gatehouse.Money) *gatehouse.Generation {
		g := *r.Generation
		g.OrganizationID, g.KeyHash, g.Cost, g.Status = orgID, k.Hash, cost, gatehouse.GenerationCompleted
		return &g
	}
	// Three holds, made durable before anything else is written.
	rs := []*gatehouse.Reservation{reservation(100), reservation(200), reservation(400)}
	for _, r := range rs {
		if err := <-ledger.Hold(r); err != nil {
			t.Fatalf("Hold: %v", err)
		}
	}
	// One settle names an organization that does not exist: its ledger
	// entry breaks a foreign key, and it alone fails.
	results := make([]chan error, 3)
	for i := range results {
		results[i] = make(chan error, 1)
	}
	ledger.Settle(rs[0], generation(rs[0], org.ID, 60), func(err error) { results[0] <- err })
	ledger.Settle(rs[1], generation(rs[1], "no-such-organization", 70), func(err error) { results[1] <- err })
	ledger.Release(rs[2], func(err error) { results[2] <- err })
	if err := ledger.Sync(ctx); err != nil {
		t.Fatalf("Sync: %v", err)
	}
	for i, want := range []bool{true, false, true} {
		if err := <-results[i]; (err == nil) != want {
			t.Errorf("operation %d: error %v, want success %v", i, err, want)
		}
	}
	got, err := db.FindKeyByHash(ctx, k.Hash)
	if err != nil {
		t.Fatal(err)
	}
	if u := got.Usage.At(time.Now()).Total; u != 60 {
		t.Errorf("usage %d after the settles, want 60 (the failed one charges nothing yet)", u)
	}
	mu.Lock()
	if len(written) == 0 {
		t.Error("the written hook heard of no key")
	}
	mu.Unlock()

	// A settle queued at Close is written before Close returns.
	r := reservation(1000)
	if err := <-ledger.Hold(r); err != nil {
		t.Fatal(err)
	}
	ledger.Settle(r, generation(r, org.ID, 5), nil)
	if err := ledger.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got, _ = db.FindKeyByHash(ctx, k.Hash); got.Usage.At(time.Now()).Total != 65 {
		t.Errorf("usage %d after Close, want 65", got.Usage.At(time.Now()).Total)
	}
	// The hold whose settle failed is still open: charged at what it reserved.
	n, err := db.ChargeOpen(ctx, time.Time{})
	if err != nil || n != 1 {
		t.Fatalf("ChargeOpen: %d, %v; want 1 charged", n, err)
	}
	if got, _ = db.FindKeyByHash(ctx, k.Hash); got.Usage.At(time.Now()).Total != 265 {
		t.Errorf("usage %d after charging the open hold, want 265", got.Usage.At(time.Now()).Total)
	}
	g, err := db.FindGeneration(ctx, org.ID, rs[1].Generation.ID)
	if err != nil || g.Status != gatehouse.GenerationPartial || g.Cost != 200 {
		t.Errorf("charged generation %+v, %v; want partial at 200 under the id its client saw", g, err)
	}
}

// openWithKey opens a fresh SQLite store with an organization and a key.
func openWithKey(t *testing.T, name string) (*sqlite.DB, *gatehouse.Organization, *gatehouse.Key) {
	t.Helper()
	ctx := context.Background()
	db := openSQLite(t, name)
	org, err := db.CreateOrganization(ctx, "Acme")
	if err != nil {
		t.Fatal(err)
	}
	k, _, err := db.CreateKey(ctx, org.ID, gatehouse.KeyCreate{Name: "k"})
	if err != nil {
		t.Fatal(err)
	}
	return db, org, k
}

// TestLedgerHoldAfterKeyDeleted: a call admitted in memory whose key is
// deleted before the ledger writes its hold is still charged when it
// settles: the hold is written under the organization of its ledger entry,
// and the settle writes the entry and charges the workspace's budget.
func TestLedgerHoldAfterKeyDeleted(t *testing.T) {
	ctx := context.Background()
	db, org, k := openWithKey(t, "deleted.db")
	if _, err := db.SetWorkspaceBudget(ctx, org.ID, k.WorkspaceID, gatehouse.Monthly,
		gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(1))}); err != nil {
		t.Fatal(err)
	}
	budgets, err := db.BudgetsForKey(ctx, k)
	if err != nil || len(budgets) != 1 {
		t.Fatalf("BudgetsForKey: %v, %v", budgets, err)
	}
	ledger := db.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 500, Budgets: budgets, ExpiresAt: time.Now().Add(time.Hour),
		Generation: &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: org.ID, WorkspaceID: k.WorkspaceID, KeyHash: k.Hash,
			Model: "m", Provider: "p"}}
	if err := db.DeleteKey(ctx, org.ID, k.Hash); err != nil {
		t.Fatal(err)
	}
	if err := <-ledger.Hold(r); err != nil {
		t.Fatalf("Hold: %v", err)
	}
	g := *r.Generation
	g.Cost, g.Status = 300, gatehouse.GenerationCompleted
	settled := make(chan error, 1)
	ledger.Settle(r, &g, func(err error) { settled <- err })
	if err := ledger.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-settled; err != nil {
		t.Fatalf("Settle: %v", err)
	}
	if stored, err := db.FindGeneration(ctx, org.ID, g.ID); err != nil || stored.Cost != 300 {
		t.Fatalf("ledger entry %+v, %v; want one of 300", stored, err)
	}
	u, _, err := db.BudgetUsage(ctx, budgets[0].GuardrailID, budgets[0].Subject)
	if err != nil || u.Total != 300 {
		t.Fatalf("workspace budget usage %+v, %v; want 300", u, err)
	}
}
