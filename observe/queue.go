package observe

import (
	"sync"
	"time"

	"gatehouse"
)

// delivery is one event for one destination: a task of the worker pool.
type delivery struct {
	dest     *gatehouse.Destination
	event    *event
	deliver  deliverFunc
	entryID  string // its entry in the outbox; "" when it has none
	attempts int
	lane     *lane
}

// lane holds the deliveries of one destination.
type lane struct {
	id       string
	queue    []*delivery
	inFlight int
	waiting  int  // retries waiting for their backoff
	ready    bool // in scheduler.ready
}

// scheduler hands deliveries to workers in batches: round-robin over the
// destinations that have work, at most maxInFlight batches at once per
// destination, at most maxPending waiting per destination. A batch is what
// a destination's lane holds when a worker comes for it (up to a worker's
// maximum): one event when deliveries keep up, more when they fall behind,
// so that a busy destination is sent fewer, larger requests.
type scheduler struct {
	mu          sync.Mutex
	cond        *sync.Cond
	lanes       map[string]*lane
	ready       []*lane
	timers      map[*delivery]*time.Timer
	queued      int // in lane queues
	inFlight    int
	waiting     int // on timers
	maxPending  int
	maxInFlight int
	inputClosed bool
	aborted     bool
	onDrop      func(*delivery) // called with mu held
}

func newScheduler(maxPending, maxInFlight int, onDrop func(*delivery)) *scheduler {
	s := &scheduler{lanes: map[string]*lane{}, timers: map[*delivery]*time.Timer{},
		maxPending: maxPending, maxInFlight: maxInFlight, onDrop: onDrop}
	s.cond = sync.NewCond(&s.mu)
	return s
}

// add queues a new delivery; false when its destination's lane is full or
// the scheduler was aborted.
func (s *scheduler) add(d *delivery) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.aborted {
		return false
	}
	l := s.lanes[d.dest.ID]
	if l == nil {
		l = &lane{id: d.dest.ID}
		s.lanes[l.id] = l
	}
	if len(l.queue)+l.waiting >= s.maxPending {
		s.forget(l)
		return false
	}
	d.lane = l
	s.push(d)
	return true
}

// push appends d to its lane and wakes a worker.
func (s *scheduler) push(d *delivery) {
	l := d.lane
	l.queue = append(l.queue, d)
	s.queued++
	s.markReady(l)
	s.cond.Signal()
}

// markReady puts a lane that may run a delivery in the ready list.
func (s *scheduler) markReady(l *lane) {
	if !l.ready && len(l.queue) > 0 && l.inFlight < s.maxInFlight {
		l.ready = true
		s.ready = append(s.ready, l)
	}
}

// forget drops a lane that holds nothing.
func (s *scheduler) forget(l *lane) {
	if len(l.queue) == 0 && l.inFlight == 0 && l.waiting == 0 && s.lanes[l.id] == l {
		delete(s.lanes, l.id)
	}
}

// next waits for a batch to run: up to max deliveries of one destination,
// oldest first. It returns false once the input is closed and nothing is
// queued, in flight or waiting, or on abort.
func (s *scheduler) next(max int) ([]*delivery, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		if s.aborted {
			return nil, false
		}
		if len(s.ready) > 0 {
			l := s.ready[0]
			s.ready[0] = nil
			s.ready = s.ready[1:]
			l.ready = false
			// A batch is of one configuration of the destination: a change
			// of it while deliveries wait (the publisher reads the new one)
			// ends the batch before the first delivery made with the new.
			n := 1
			for n < min(len(l.queue), max) && l.queue[n].dest == l.queue[0].dest {
				n++
			}
			batch := make([]*delivery, n)
			copy(batch, l.queue)
			clear(l.queue[:n])
			l.queue = l.queue[n:]
			s.queued -= n
			l.inFlight++
			s.inFlight++
			s.markReady(l) // behind the other ready lanes: round-robin
			return batch, true
		}
		if s.inputClosed && s.queued == 0 && s.inFlight == 0 && s.waiting == 0 {
			return nil, false
		}
		s.cond.Wait()
	}
}

// complete ends an attempt of a batch (next's); the deliveries of retry,
// some of the batch's, go back to its lane after delay (dropped instead
// when the scheduler was aborted).
func (s *scheduler) complete(batch, retry []*delivery, delay time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l := batch[0].lane
	l.inFlight--
	s.inFlight--
	for _, d := range retry {
		if s.aborted {
			s.onDrop(d)
			continue
		}
		l.waiting++
		s.waiting++
		s.timers[d] = time.AfterFunc(delay, func() { s.requeue(d) })
	}
	s.markReady(l)
	s.forget(l)
	s.cond.Broadcast() // a worker may be waiting to see that all is done
}

// requeue puts a delivery whose backoff is over back in its lane.
func (s *scheduler) requeue(d *delivery) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.timers[d]; !ok {
		return // abort dropped it
	}
	delete(s.timers, d)
	d.lane.waiting--
	s.waiting--
	s.push(d)
}

// closeInput says no new deliveries will come: workers return once the
// rest is done.
func (s *scheduler) closeInput() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.inputClosed = true
	s.cond.Broadcast()
}

// abort drops every delivery not in flight and makes the workers return.
func (s *scheduler) abort() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.aborted = true
	for d, t := range s.timers {
		t.Stop()
		delete(s.timers, d)
		s.onDrop(d)
	}
	for _, l := range s.lanes {
		for _, d := range l.queue {
			s.onDrop(d)
		}
		l.queue, l.waiting, l.ready = nil, 0, false
	}
	s.ready, s.queued, s.waiting = nil, 0, 0
	s.cond.Broadcast()
}

// length is the number of deliveries queued or waiting to be retried.
func (s *scheduler) length() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return float64(s.queued + s.waiting)
}
