package sqlstore_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/sqlstore"

	"github.com/google/uuid"
)

// TestChargeJournal: the charges of whole answers go to the journal and
// from it to the database behind; a process killed before writing some
// leaves them in the journal, and the next start writes exactly those
// (not the ones already written, nor a torn last record) to the key, its
// budgets and the ledger; a clean stop leaves no file behind.
func TestChargeJournal(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, org, k := openWithKey(t, "journal.db")
	if _, err := db.SetWorkspaceBudget(ctx, org.ID, k.WorkspaceID, gatehouse.Daily,
		gatehouse.WorkspaceBudgetSet{LimitUSD: gatehouse.Val(gatehouse.USD(100))}); err != nil {
		t.Fatal(err)
	}
	budgets, err := db.BudgetsForKey(ctx, k)
	if err != nil || len(budgets) != 1 {
		t.Fatalf("BudgetsForKey: %v, %v; want the workspace's daily budget", budgets, err)
	}
	logger := slog.New(slog.NewTextHandler(io.Discard, nil))
	path := filepath.Join(dir, "journal.db-charges")
	charge := func(cost gatehouse.Money) (*gatehouse.Reservation, *gatehouse.Generation) {
		g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: org.ID, WorkspaceID: k.WorkspaceID,
			KeyHash: k.Hash, Model: "m", Provider: "p", Cost: cost, Status: gatehouse.GenerationCompleted, PromptTokens: 3}
		return &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 1000, Budgets: budgets,
			Generation: g, Unheld: true}, g
	}
	usage := func() (key, budget gatehouse.Money) {
		t.Helper()
		got, err := db.FindKeyByHash(ctx, k.Hash)
		if err != nil {
			t.Fatal(err)
		}
		u, _, err := db.BudgetUsage(ctx, budgets[0].GuardrailID, budgets[0].Subject)
		if err != nil {
			t.Fatal(err)
		}
		return got.Usage.At(time.Now()).Total, u.Total
	}
	files := func() []string {
		names, _ := filepath.Glob(path + ".*")
		return names
	}

	first := db.NewLedger(logger, nil)
	first.LingerSettles()
	if n, err := first.UseJournal(ctx, path); err != nil || n != 0 {
		t.Fatalf("UseJournal on no journal: %d, %v", n, err)
	}
	var written []*gatehouse.Generation
	for _, cost := range []gatehouse.Money{10, 20, 30} {
		r, g := charge(cost)
		if err := first.Charge(ctx, r, g, nil); err != nil {
			t.Fatalf("Charge: %v", err)
		}
		written = append(written, g)
	}
	if err := first.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	if key, budget := usage(); key != 60 || budget != 60 {
		t.Fatalf("usage %d, budget %d after three charges; want 60, 60", key, budget)
	}
	// Killed with two charges journalled and not written, in the middle of
	// appending a third.
	var lost []*gatehouse.Generation
	for _, cost := range []gatehouse.Money{40, 80} {
		r, g := charge(cost)
		if err := first.JournalOnly(r, g); err != nil {
			t.Fatal(err)
		}
		lost = append(lost, g)
	}
	f, err := os.OpenFile(path+".1", os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatalf("the journal's segment: %v (files %v)", err, files())
	}
	if _, err := f.Write([]byte{200, 0, 0, 0, 1, 2, 3, 4, '{', '"'}); err != nil {
		t.Fatal(err)
	}
	f.Close()

	second := db.NewLedger(logger, nil)
	n, err := second.UseJournal(ctx, path)
	if err != nil || n != 2 {
		t.Fatalf("UseJournal after the kill: %d written, %v; want the 2 charges the database lacked", n, err)
	}
	if key, budget := usage(); key != 180 || budget != 180 {
		t.Errorf("usage %d, budget %d after the restart; want 180, 180 (each charge once)", key, budget)
	}
	for _, g := range append(written, lost...) {
		got, err := db.FindGeneration(ctx, org.ID, g.ID)
		if err != nil || got.Cost != g.Cost || got.PromptTokens != 3 {
			t.Errorf("generation %s: %+v, %v; want its cost %d", g.ID, got, err, g.Cost)
		}
	}
	// The next segment is a new file; a clean stop removes it.
	r, g := charge(5)
	if err := second.Charge(ctx, r, g, nil); err != nil {
		t.Fatal(err)
	}
	if names := files(); len(names) != 1 || names[0] != path+".2" {
		t.Errorf("journal files %v, want only %s.2", names, path)
	}
	if err := second.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if names := files(); len(names) != 0 {
		t.Errorf("journal files %v left after a clean stop", names)
	}
	if key, _ := usage(); key != 185 {
		t.Errorf("usage %d after the clean stop, want 185", key)
	}
	third := db.NewLedger(logger, nil)
	if n, err := third.UseJournal(ctx, path); err != nil || n != 0 {
		t.Errorf("UseJournal after a clean stop: %d, %v; want nothing to write", n, err)
	}
	third.Close(ctx)
}

// TestChargeJournalSegments: the journal moves to a new segment past its
// size, and removes an older one once its charges are written.
func TestChargeJournalSegments(t *testing.T) {
	defer sqlstore.SetJournalSegmentBytes(1000)()
	ctx := context.Background()
	db, org, k := openWithKey(t, "segments.db")
	path := filepath.Join(t.TempDir(), "charges")
	ledger := db.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if _, err := ledger.UseJournal(ctx, path); err != nil {
		t.Fatal(err)
	}
	for range 20 {
		g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: org.ID, WorkspaceID: k.WorkspaceID,
			KeyHash: k.Hash, Model: "m", Provider: "p", Cost: 1, Status: gatehouse.GenerationCompleted}
		r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 1, Generation: g, Unheld: true}
		if err := ledger.Charge(ctx, r, g, nil); err != nil {
			t.Fatal(err)
		}
	}
	names, _ := filepath.Glob(path + ".*")
	if len(names) < 3 {
		t.Fatalf("journal files %v after 20 charges of about 400 bytes, want a segment for every few", names)
	}
	if err := ledger.Sync(ctx); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		names, _ = filepath.Glob(path + ".*")
		if len(names) == 1 || time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(names) != 1 {
		t.Errorf("journal files %v once every charge was written, want the newest segment alone", names)
	}
	if err := ledger.Close(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestChargeRefusedWhenLedgerFull: past the bound of operations waiting
// for the database, a whole answer's charge is refused (the answer is a
// 503) and nothing is journalled, rather than queued without end.
func TestChargeRefusedWhenLedgerFull(t *testing.T) {
	defer sqlstore.SetLedgerQueueBound(0)()
	ctx := context.Background()
	db, org, k := openWithKey(t, "full.db")
	path := filepath.Join(t.TempDir(), "charges")
	ledger := db.NewLedger(slog.New(slog.NewTextHandler(io.Discard, nil)), nil)
	if _, err := ledger.UseJournal(ctx, path); err != nil {
		t.Fatal(err)
	}
	g := &gatehouse.Generation{ID: gatehouse.NewGenerationID(), OrganizationID: org.ID, WorkspaceID: k.WorkspaceID,
		KeyHash: k.Hash, Model: "m", Provider: "p", Cost: 7, Status: gatehouse.GenerationCompleted}
	r := &gatehouse.Reservation{ID: uuid.NewString(), KeyHash: k.Hash, Amount: 7, Generation: g, Unheld: true}
	var heard error
	err := ledger.Charge(ctx, r, g, func(err error) { heard = err })
	if gatehouse.ErrorCode(err) != gatehouse.EUNAVAILABLE || !strings.Contains(err.Error(), "not keeping up") {
		t.Errorf("Charge past the bound: %v, want unavailable, saying why", err)
	}
	if heard == nil {
		t.Error("the written callback did not hear of the refusal")
	}
	if err := ledger.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.FindKeyByHash(ctx, k.Hash); got.Usage.At(time.Now()).Total != 0 {
		t.Errorf("usage %d after a refused charge, want 0", got.Usage.At(time.Now()).Total)
	}
	if names, _ := filepath.Glob(path + ".*"); len(names) != 0 {
		t.Errorf("journal files %v after a refused charge and a clean stop", names)
	}
}
