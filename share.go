package gatehouse

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// Shares divides the database's connections among organizations, so that
// no organization's reads or writes wait behind another's: an operation
// of an organization's (a call of the management API, a page of the
// console) first takes one of its own share of the slots, half of them
// (at least one), then one of the slots. However many heavy reads one
// organization sends at once, at most half of the connections serve them
// and the rest queue in its own share; another organization's operation
// finds a slot free.
//
// A share is waited for at most Wait, and so is a slot: past it the
// operation answers 503 with Retry-After, never a minute of silence.
type Shares struct {
	slots chan struct{}
	per   int
	wait  time.Duration
	orgs  sync.Map // organization id -> chan struct{}: its share
}

// DefaultShareWait is how long an operation waits for its organization's
// share, and then for a slot, unless NewShares is told otherwise.
const DefaultShareWait = 2 * time.Second

// NewShares returns the shares of conns connections (at least one); wait
// bounds each wait (0: DefaultShareWait).
func NewShares(conns int, wait time.Duration) *Shares {
	conns = max(1, conns)
	if wait <= 0 {
		wait = DefaultShareWait
	}
	return &Shares{slots: make(chan struct{}, conns), per: max(1, conns/2), wait: wait}
}

// PerOrganization is the most operations of one organization that run at
// once.
func (s *Shares) PerOrganization() int { return s.per }

// Enter takes a slot of the organization's share, then one of the
// database's, and returns the function that gives both back. A nil Shares
// takes nothing.
func (s *Shares) Enter(ctx context.Context, orgID string) (release func(), err error) {
	if s == nil {
		return func() {}, nil
	}
	share := s.share(orgID)
	if err := s.take(ctx, share, func() error {
		return s.busy(fmt.Sprintf("this organization already has %d database operations running (its share of the database's connections): "+
			"send fewer at once", s.per))
	}); err != nil {
		return nil, err
	}
	if err := s.take(ctx, s.slots, func() error {
		return s.busy("every database connection is busy")
	}); err != nil {
		<-share
		return nil, err
	}
	return func() { <-s.slots; <-share }, nil
}

// take takes a token of c, waiting at most s.wait: then it returns
// full().
func (s *Shares) take(ctx context.Context, c chan struct{}, full func() error) error {
	select {
	case c <- struct{}{}:
		return nil
	default:
	}
	t := time.NewTimer(s.wait)
	defer t.Stop()
	select {
	case c <- struct{}{}:
		return nil
	case <-t.C:
		return full()
	case <-ctx.Done():
		return WrapError(ctx.Err(), EUNAVAILABLE, "the request ended while it waited for a database connection")
	}
}

// busy is the 503 of an operation that waited for its share or a slot in
// vain.
func (s *Shares) busy(why string) error {
	retry := max(1, int((s.wait+time.Second-1)/time.Second))
	return &Error{Code: EUNAVAILABLE, Message: fmt.Sprintf("%s; retry after %d s", why, retry),
		Metadata: map[string]any{"retry_after_seconds": retry}}
}

// share returns the organization's share. The shares stay for the life of
// the process: one small channel per organization that ever came.
func (s *Shares) share(orgID string) chan struct{} {
	if c, ok := s.orgs.Load(orgID); ok {
		return c.(chan struct{})
	}
	c, _ := s.orgs.LoadOrStore(orgID, make(chan struct{}, s.per))
	return c.(chan struct{})
}
