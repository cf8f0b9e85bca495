package gatehouse

import (
	"context"
	"testing"
	"time"
)

// TestShares: an organization runs at most half of the slots at once, its
// next operation waits for one of them and is refused 503 with a time to
// come back when none frees up; another organization's runs meanwhile;
// when every slot is taken, a third organization's waits the same way.
func TestShares(t *testing.T) {
	ctx := context.Background()
	s := NewShares(4, 30*time.Millisecond)
	if s.PerOrganization() != 2 {
		t.Fatalf("PerOrganization = %d, want 2", s.PerOrganization())
	}
	enter := func(org string) func() {
		t.Helper()
		release, err := s.Enter(ctx, org)
		if err != nil {
			t.Fatalf("%s: %v", org, err)
		}
		return release
	}
	refused := func(org, prefix string) {
		t.Helper()
		start := time.Now()
		_, err := s.Enter(ctx, org)
		e, ok := err.(*Error)
		if !ok || e.Code != EUNAVAILABLE || e.Metadata["retry_after_seconds"] != 1 || len(e.Message) < len(prefix) || e.Message[:len(prefix)] != prefix {
			t.Fatalf("%s: %v, want a 503 starting %q with retry_after_seconds 1", org, err, prefix)
		}
		if time.Since(start) < 30*time.Millisecond {
			t.Fatalf("%s: refused after %s, before the wait", org, time.Since(start))
		}
	}
	a1, a2 := enter("a"), enter("a")
	refused("a", "this organization already has 2 database operations running")
	b1 := enter("b")
	b2 := enter("b")
	refused("c", "every database connection is busy")
	b2()
	c1 := enter("c")
	// A waiting operation enters as soon as its share frees up.
	done := make(chan error, 1)
	go func() {
		release, err := s.Enter(ctx, "a")
		if err == nil {
			release()
		}
		done <- err
	}()
	time.Sleep(5 * time.Millisecond)
	c1()
	a1()
	if err := <-done; err != nil {
		t.Fatalf("a, after one of its own ended: %v", err)
	}
	a2()
	b1()
	var none *Shares
	release, err := none.Enter(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	release()
}
