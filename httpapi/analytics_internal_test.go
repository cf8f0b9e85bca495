package httpapi

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"gatehouse"
)

// TestAnalyticsReadSlots: analytics reads run a few at a time; one that
// waits for a slot past the timeout is a 408 without running, one whose
// read outlives it is a 408 whatever the read returned, and a slot is
// given back whatever the read did.
func TestAnalyticsReadSlots(t *testing.T) {
	s := &Server{analyticsSlots: make(chan struct{}, 1), analyticsTimeout: 50 * time.Millisecond}
	ctx := context.Background()
	ran := 0
	read := func(ctx context.Context) error { ran++; return nil }

	s.analyticsSlots <- struct{}{} // another read holds the only slot
	err := s.analyticsRead(ctx, "org", read)
	if gatehouse.ErrorCode(err) != gatehouse.ETIMEOUT || ran != 0 || !strings.Contains(gatehouse.ErrorMessage(err), "GATEHOUSE_ANALYTICS_TIMEOUT") {
		t.Fatalf("waiting for a busy slot: %v, ran %d times", err, ran)
	}
	<-s.analyticsSlots

	if err := s.analyticsRead(ctx, "org", read); err != nil || ran != 1 {
		t.Fatalf("a free slot: %v, ran %d times", err, ran)
	}
	slow := func(ctx context.Context) error { <-ctx.Done(); return errors.New("interrupted") }
	if err := s.analyticsRead(ctx, "org", slow); gatehouse.ErrorCode(err) != gatehouse.ETIMEOUT {
		t.Fatalf("a read past the timeout: %v", err)
	}
	failed := errors.New("the database is gone")
	if err := s.analyticsRead(ctx, "org", func(context.Context) error { return failed }); !errors.Is(err, failed) || gatehouse.ErrorCode(err) == gatehouse.ETIMEOUT {
		t.Fatalf("a failed read: %v", err)
	}
	if len(s.analyticsSlots) != 0 {
		t.Fatalf("%d slots still taken", len(s.analyticsSlots))
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	s.analyticsSlots <- struct{}{}
	if err := s.analyticsRead(gone, "org", read); !errors.Is(err, context.Canceled) || gatehouse.ErrorCode(err) == gatehouse.ETIMEOUT {
		t.Fatalf("a client gone while waiting: %v", err)
	}
}

// TestAnalyticsShares: one organization's reads never take every slot: with
// two slots, an organization whose read runs waits with its next one, while
// another organization's read takes the free slot at once.
func TestAnalyticsShares(t *testing.T) {
	s := &Server{analyticsSlots: make(chan struct{}, 2), analyticsTimeout: time.Second}
	ctx := context.Background()
	release, running := make(chan struct{}), make(chan struct{})
	go s.analyticsRead(ctx, "heavy", func(context.Context) error { close(running); <-release; return nil })
	<-running
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	ran := false
	if err := s.analyticsRead(short, "heavy", func(context.Context) error { ran = true; return nil }); err == nil || ran {
		t.Fatalf("a second read of the same organization ran beside the first (%v)", err)
	}
	// Under a deadline long before the first read gives its slot back: it
	// runs only if a slot is free for it.
	other, cancelOther := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancelOther()
	if err := s.analyticsRead(other, "other", func(context.Context) error { return nil }); err != nil {
		t.Fatalf("another organization's read, beside the first: %v", err)
	}
	close(release)
}
