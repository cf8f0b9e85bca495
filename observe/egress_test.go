package observe

import (
	"net/url"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/egress"
)

// TestDeliveryDialCheck: the delivery client checks the address it actually
// dials, so a destination whose name resolves to a blocked address when the
// delivery runs (DNS rebinding, or a row written past the API's check) gets
// nothing, while the same destination is reached once the operator opens it.
func TestDeliveryDialCheck(t *testing.T) {
	rc := newReceiver(t, nil)
	u, _ := url.Parse(rc.URL)
	byName := "http://localhost:" + u.Port() + "/hook" // a name, resolved at dial time to loopback
	for _, c := range []struct {
		name    string
		policy  *egress.Policy
		reached bool
	}{
		{"default policy", nil, false},
		{"loopback opened", egress.MustParse("127.0.0.0/8,::1/128"), true},
		{"only another range opened", egress.MustParse("10.0.0.0/8"), false},
	} {
		t.Run(c.name, func(t *testing.T) {
			before := len(rc.got())
			opts := fastOptions()
			opts.Egress, opts.MaxAttempts = c.policy, 1
			p, _ := start(t, newLister(testDest("webhook", map[string]string{"url": byName})), opts)
			p.Publish(testEvent())
			closeNow(t, p)
			if got := len(rc.got()) - before; (got > 0) != c.reached {
				t.Errorf("the receiver got %d deliveries; reached should be %v", got, c.reached)
			}
		})
	}
}

// TestInvalidateDestinations: after this instance changes a destination,
// the next delivery uses the change, however long the cache would last.
func TestInvalidateDestinations(t *testing.T) {
	rc := newReceiver(t, nil)
	d := testDest("webhook", map[string]string{"url": rc.URL + "/hook"})
	l := newLister(d)
	opts := fastOptions()
	opts.CacheTTL = time.Hour
	p, _ := start(t, l, opts)
	p.Publish(testEvent())
	rc.wait(t, 1)
	off := *d
	off.Enabled = false
	l.mu.Lock()
	l.dests["ws-1"] = []*gatehouse.Destination{&off}
	l.mu.Unlock()
	p.InvalidateDestinations()
	p.Publish(testEvent())
	closeNow(t, p)
	if n := len(rc.got()); n != 1 {
		t.Errorf("%d deliveries; the disabled destination got the second event", n)
	}
}
