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
	err := s.analyticsRead(ctx, read)
	if gatehouse.ErrorCode(err) != gatehouse.ETIMEOUT || ran != 0 || !strings.Contains(gatehouse.ErrorMessage(err), "GATEHOUSE_ANALYTICS_TIMEOUT") {
		t.Fatalf("waiting for a busy slot: %v, ran %d times", err, ran)
	}
	<-s.analyticsSlots

	if err := s.analyticsRead(ctx, read); err != nil || ran != 1 {
		t.Fatalf("a free slot: %v, ran %d times", err, ran)
	}
	slow := func(ctx context.Context) error { <-ctx.Done(); return errors.New("interrupted") }
	if err := s.analyticsRead(ctx, slow); gatehouse.ErrorCode(err) != gatehouse.ETIMEOUT {
		t.Fatalf("a read past the timeout: %v", err)
	}
	failed := errors.New("the database is gone")
	if err := s.analyticsRead(ctx, func(context.Context) error { return failed }); !errors.Is(err, failed) || gatehouse.ErrorCode(err) == gatehouse.ETIMEOUT {
		t.Fatalf("a failed read: %v", err)
	}
	if len(s.analyticsSlots) != 0 {
		t.Fatalf("%d slots still taken", len(s.analyticsSlots))
	}
	gone, cancel := context.WithCancel(ctx)
	cancel()
	s.analyticsSlots <- struct{}{}
	if err := s.analyticsRead(gone, read); !errors.Is(err, context.Canceled) || gatehouse.ErrorCode(err) == gatehouse.ETIMEOUT {
		t.Fatalf("a client gone while waiting: %v", err)
	}
}
