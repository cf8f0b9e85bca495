// Package observe delivers trace events to the observability destinations
// of a request's workspace, without ever slowing or failing the request.
//
// The pipeline has two stages:
//
//   - Publish puts the event on a bounded queue of events (Options.QueueSize)
//     and returns at once; when the queue is full the event is dropped and
//     counted.
//   - One dispatcher takes events off that queue, lists the workspace's
//     destinations (cached for Options.CacheTTL), decides for each one
//     (enabled, api_key_hashes, sampling_rate, filter_rules) and turns every
//     accepted destination into a delivery: one task for the worker pool.
//
// Deliveries wait in a lane per destination. Workers take them round-robin
// across lanes, and a destination never has more than
// Options.MaxInFlightPerDestination deliveries in flight, so a slow
// destination cannot hold every worker. A failed attempt that may succeed
// later (network error, timeout, 408, 429, 5xx) waits for its backoff on a
// timer, not in a worker, then goes back to its lane; a lane holds at most
// Options.MaxPendingPerDestination deliveries, beyond which new ones for that
// destination are dropped and counted. A dead destination therefore costs
// only its own backlog.
//
// A destination receives an event when it is enabled and not deleted, and:
//
//   - api_key_hashes is null or lists the generation's key (an empty list
//     selects no key);
//   - the event is sampled: the SHA-256 of the session id (or, without one,
//     of the generation id), its top 53 bits read as a number in [0, 1), is
//     below sampling_rate. A session is all or nothing, alike for every
//     destination, and what a lower rate keeps a higher one keeps too;
//   - filter_rules is null, disabled, without groups, or ANY of its groups
//     matches. A group matches when all of its rules do (logic "and", the
//     default) or any does ("or"); a group without rules matches. Numeric
//     fields (total_cost in USD, *_tokens) compare numerically with a number
//     or numeric string, everything else as text; contains, starts_with,
//     ends_with and regex (RE2, unanchored) work on the text. An absent field
//     (null or empty: session_id, user_id, finish_reason, input, output...)
//     satisfies only not_exists, not_equals and not_contains. user_id is the
//     key's creator; input is the messages as JSON.
//
// The prompt and completion are sent only where the workspace logs I/O
// (is_observability_io_logging_enabled, sampled at io_logging_sampling_rate
// as the stored content is: Workspace.LogsIO); otherwise the event has no
// text at all, for filters too, and is sent as in privacy mode. A
// destination's privacy_mode takes the input and output out of what it is
// sent (its filters still see them). Only the types in DeliveredTypes are exported over the network;
// every other destination type is stored only and its deliveries count as
// skipped.
//
// Nothing logged names a secret (configuration values, header values, URLs)
// or any prompt or completion text.
package observe

import (
	"context"
	"log/slog"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"gatehouse"
	"gatehouse/egress"

	"github.com/prometheus/client_golang/prometheus"
)

// DestinationLister lists the live destinations of a workspace, at most
// gatehouse.MaxPageSize a page, with their total, and reads the workspace
// (whether it logs I/O); gatehouse.Store is one. ENOTFOUND for an unknown
// workspace.
type DestinationLister interface {
	FindDestinations(ctx context.Context, orgID, workspaceRef string, page gatehouse.Page) ([]*gatehouse.Destination, int, error)
	FindWorkspace(ctx context.Context, orgID, ref string) (*gatehouse.Workspace, error)
}

// Options tune a Publisher; zero values take the defaults.
type Options struct {
	QueueSize   int           // events waiting for dispatch; default 10000
	Workers     int           // deliveries in flight at once; default 4
	MaxAttempts int           // attempts per delivery; default 4
	Backoff     time.Duration // wait before the 2nd attempt, doubling after, with jitter; default 200ms
	Timeout     time.Duration // per attempt, and per destination look-up; default 10s
	CacheTTL    time.Duration // how long a workspace's destination list is reused; default 1s
	// Egress is where deliveries may connect (the default client checks
	// every address it dials); nil refuses every blocked range.
	Egress *egress.Policy
	// Client sends the deliveries. The default follows no redirects, so
	// that configured headers never go to a host they were not meant for.
	Client *http.Client
	// MaxPendingPerDestination bounds the deliveries waiting for one
	// destination, retries included; default QueueSize.
	MaxPendingPerDestination int
	// MaxInFlightPerDestination bounds the deliveries to one destination in
	// flight at once; default max(1, Workers/2).
	MaxInFlightPerDestination int
	// Outbox, when set, makes deliveries durable: each is written there
	// before it is attempted and deleted after (see outbox.go). Without
	// it, deliveries live in memory only and a restart loses them.
	Outbox gatehouse.TraceOutbox
	// Instance names this process in the outbox's leases; default random.
	Instance string
	// Lease is how long the outbox holds an entry for this instance
	// without a renewal: after a crash, its entries are delivered by the
	// next instance to look once it runs out; default 30s.
	Lease time.Duration
	// ClaimInterval is how often the outbox is looked at for entries whose
	// lease ran out; default 1s.
	ClaimInterval time.Duration
	// FlushInterval is how often delivered entries are deleted from the
	// outbox and delivery counts recorded; default 50ms.
	FlushInterval time.Duration
}

// withDefaults fills in every zero option.
func (o Options) withDefaults() Options {
	def := func(v *int, d int) {
		if *v <= 0 {
			*v = d
		}
	}
	defDur := func(v *time.Duration, d time.Duration) {
		if *v <= 0 {
			*v = d
		}
	}
	def(&o.QueueSize, 10000)
	def(&o.Workers, 4)
	def(&o.MaxAttempts, 4)
	defDur(&o.Backoff, 200*time.Millisecond)
	defDur(&o.Timeout, 10*time.Second)
	defDur(&o.CacheTTL, time.Second)
	def(&o.MaxPendingPerDestination, o.QueueSize)
	def(&o.MaxInFlightPerDestination, max(1, o.Workers/2))
	defDur(&o.Lease, 30*time.Second)
	defDur(&o.ClaimInterval, time.Second)
	defDur(&o.FlushInterval, 50*time.Millisecond)
	if o.Instance == "" {
		o.Instance = newEntryID()[4:]
	}
	return o
}

// Publisher is the asynchronous gatehouse.TraceSink. Its methods are safe
// for concurrent use.
type Publisher struct {
	opts       Options
	store      DestinationLister
	logger     *slog.Logger
	metrics    *metrics
	client     *http.Client
	ownsClient bool
	sender     *sender
	status     *statusBook
	now        func() time.Time

	mu     sync.RWMutex // guards closed against the send in Publish
	closed bool
	events chan *gatehouse.TraceEvent

	lanes   *scheduler
	cacheMu sync.Mutex // guards cache: the dispatcher's and the claimer's
	cache   map[string]*cacheEntry
	// unreadable is when each destination whose secrets cannot be opened
	// was last warned about; the dispatcher's alone.
	unreadable map[string]time.Time
	// generation counts InvalidateDestinations calls: a cache entry read
	// under an older generation is stale.
	generation atomic.Uint64

	ctx    context.Context // cancelled when Close gives up
	cancel context.CancelFunc
	wg     sync.WaitGroup // the dispatcher and the workers
	done   chan struct{}  // closed when they have all returned

	// The outbox's side: stopClaims ends the claims (when the dispatcher
	// is done), feeders waits for the claimer, bgDone is closed when the
	// background goroutine has returned.
	stopClaims chan struct{}
	feeders    sync.WaitGroup
	bgDone     chan struct{}
	pendingMu  sync.Mutex
	deletes    []string       // entries to delete at the next flush
	attemptsOf map[string]int // attempts to record at the next flush
}

var _ gatehouse.TraceSink = (*Publisher)(nil)

// New starts a Publisher: its dispatcher and workers run until Close. Its
// metrics are registered on reg (nil: not registered), once per process.
func New(store DestinationLister, reg prometheus.Registerer, logger *slog.Logger, opts Options) *Publisher {
	opts = opts.withDefaults()
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	p := &Publisher{
		opts: opts, store: store, logger: logger, client: opts.Client, now: time.Now,
		events:     make(chan *gatehouse.TraceEvent, opts.QueueSize),
		cache:      map[string]*cacheEntry{},
		done:       make(chan struct{}),
		stopClaims: make(chan struct{}), bgDone: make(chan struct{}), attemptsOf: map[string]int{},
	}
	if p.client == nil {
		policy := opts.Egress
		if policy == nil {
			policy = &egress.Policy{}
		}
		p.client, p.ownsClient = defaultClient(opts.Workers, policy), true
	}
	p.sender = newSender(p.client)
	p.status = newStatusBook()
	p.ctx, p.cancel = context.WithCancel(context.Background())
	p.lanes = newScheduler(opts.MaxPendingPerDestination, opts.MaxInFlightPerDestination, p.abandoned)
	p.metrics = newMetrics(reg, func() float64 { return float64(len(p.events)) }, p.lanes.length)
	p.feeders.Add(1)
	go func() {
		defer close(p.bgDone)
		p.background()
	}()
	p.wg.Add(1 + opts.Workers)
	go p.dispatchLoop()
	for range opts.Workers {
		go p.work()
	}
	go func() {
		p.wg.Wait()
		close(p.done)
	}()
	return p
}

// defaultClient follows no redirects, keeps a connection per worker, and
// checks every address it dials against the egress policy, through no
// proxy (egress.Policy.Transport).
func defaultClient(workers int, policy *egress.Policy) *http.Client {
	t := policy.Transport()
	t.MaxIdleConnsPerHost = max(workers, 2)
	return &http.Client{
		Transport:     t,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// Publish queues ev for delivery and returns at once: when the queue is
// full, or the Publisher closed, ev is dropped and counted. The Publisher
// keeps ev; the caller must not change it afterwards.
func (p *Publisher) Publish(ev *gatehouse.TraceEvent) {
	if ev == nil || ev.Generation == nil {
		return
	}
	p.mu.RLock()
	defer p.mu.RUnlock()
	if p.closed {
		p.metrics.events.WithLabelValues("dropped").Inc()
		return
	}
	select {
	case p.events <- ev:
		p.metrics.events.WithLabelValues("queued").Inc()
	default:
		p.metrics.events.WithLabelValues("dropped").Inc()
	}
}

// Close stops accepting events and delivers what is queued, retries
// included, until ctx ends; then it abandons the rest (counted as dropped),
// cancels the deliveries in flight and returns ctx's error. Either way every
// goroutine of the Publisher has returned when Close does.
func (p *Publisher) Close(ctx context.Context) error {
	p.mu.Lock()
	if !p.closed {
		p.closed = true
		close(p.events)
	}
	p.mu.Unlock()
	var err error
	select {
	case <-p.done:
	case <-ctx.Done():
		err = ctx.Err()
		p.cancel()
		p.lanes.abort()
		<-p.done
	}
	<-p.bgDone
	fctx, cancel := context.WithTimeout(context.Background(), p.opts.Timeout)
	p.flush(fctx) // the last deletions and counts
	cancel()
	p.cancel()
	if p.ownsClient {
		p.client.CloseIdleConnections()
	}
	return err
}

// dispatchBatch is the most events the dispatcher turns into deliveries
// at once: one write of the outbox.
const dispatchBatch = 256

// dispatchLoop turns events into deliveries until the queue is closed:
// the events waiting, up to dispatchBatch, at a time, written to the
// outbox in one write before they are queued.
func (p *Publisher) dispatchLoop() {
	defer p.wg.Done()
	defer func() {
		close(p.stopClaims)
		p.feeders.Wait() // no claim adds a delivery after closeInput
		p.lanes.closeInput()
	}()
	var dls []*delivery
	for ev := range p.events {
		dls = p.dispatch(ev, dls[:0])
	more:
		for len(dls) < dispatchBatch {
			select {
			case next, ok := <-p.events:
				if !ok {
					break more
				}
				dls = p.dispatch(next, dls)
			default:
				break more
			}
		}
		p.persist(dls)
		for _, dl := range dls {
			if !p.lanes.add(dl) {
				p.droppedNew(dl)
			}
		}
		clear(dls)
	}
}

// dispatch decides which destinations receive ev and appends a delivery
// for each of them to dls.
func (p *Publisher) dispatch(ev *gatehouse.TraceEvent, dls []*delivery) []*delivery {
	if p.ctx.Err() != nil {
		p.metrics.events.WithLabelValues("dropped").Inc()
		return dls
	}
	g := ev.Generation
	targets, ws, err := p.targets(g.OrganizationID, g.WorkspaceID)
	if err != nil {
		p.metrics.lookupErrors.Inc()
		p.logger.Warn("observability: cannot list destinations; the event is not delivered",
			"workspace_id", g.WorkspaceID, "generation_id", g.ID, "error", describe(err))
		return dls
	}
	private := ws == nil || !ws.LogsIO(g.ID)
	if private && (ev.Input != nil || ev.Output != "") {
		cp := *ev
		cp.Input, cp.Output = nil, ""
		ev = &cp
	}
	var ids *spanIDs // shared by every OTLP destination of the event
	for _, t := range targets {
		d := t.dest
		if !d.Enabled || d.DeletedAt != nil {
			continue
		}
		if !t.accepts(ev) {
			p.metrics.deliveries.WithLabelValues("filtered").Inc()
			continue
		}
		if d.SecretsUnreadable {
			p.metrics.deliveries.WithLabelValues("failed").Inc()
			p.warnUnreadable(d)
			continue
		}
		deliver := deliverer(d.Type)
		if deliver == nil {
			p.metrics.deliveries.WithLabelValues("skipped").Inc()
			continue
		}
		if ids == nil {
			ids = newSpanIDs()
		}
		dls = append(dls, &delivery{dest: d, event: view(ev, d.PrivacyMode || private, ids), deliver: deliver})
	}
	return dls
}

// warnUnreadable logs, at most once a minute per destination, that a
// destination receives nothing because its secrets cannot be opened:
// sending without them would reach the receiver unauthenticated, or with
// a header missing. Called by the dispatcher alone.
func (p *Publisher) warnUnreadable(d *gatehouse.Destination) {
	now := p.now()
	if last, seen := p.unreadable[d.ID]; seen && now.Sub(last) < time.Minute {
		return
	}
	if p.unreadable == nil || len(p.unreadable) >= maxCacheEntries {
		p.unreadable = map[string]time.Time{}
	}
	p.unreadable[d.ID] = now
	p.logger.Warn("observability: the secrets of this destination cannot be opened with the server's secret key; "+
		"nothing is delivered to it until they are sent again or the key they were sealed with is given (GATEHOUSE_SECRET_KEY_PREVIOUS)",
		"destination_id", d.ID, "workspace_id", d.WorkspaceID)
}

// droppedNew counts a delivery its destination's full queue refused: its
// entry is deleted, and the drop counted in the destination's status,
// which writes an audit entry.
func (p *Publisher) droppedNew(d *delivery) {
	p.metrics.deliveries.WithLabelValues("dropped").Inc()
	p.status.record(d.dest, 0, 0, 1, outcome{}, p.now())
	p.finished(d)
}

// abandoned counts a delivery that Close gave up on. With an outbox its
// entry stays, and is delivered after the next start once its lease runs
// out; without one it is lost, and counted as dropped.
func (p *Publisher) abandoned(d *delivery) {
	p.metrics.deliveries.WithLabelValues("dropped").Inc()
	if p.opts.Outbox == nil || d.entryID == "" {
		p.status.record(d.dest, 0, 0, 1, outcome{}, p.now())
	}
}

// work runs deliveries until there are none left to run.
func (p *Publisher) work() {
	defer p.wg.Done()
	for {
		batch, ok := p.lanes.next(maxBatch)
		if !ok {
			return
		}
		retry, delay := p.run(batch)
		p.lanes.complete(batch, retry, delay)
	}
}

// cacheEntry is a workspace's destination list, ready for decisions.
type cacheEntry struct {
	targets    []*target
	workspace  *gatehouse.Workspace // nil when gone
	expires    time.Time
	generation uint64
}

// InvalidateDestinations makes the next delivery of every workspace read
// its destinations afresh: this instance's changes apply at once (other
// instances' within CacheTTL).
func (p *Publisher) InvalidateDestinations() { p.generation.Add(1) }

// maxCacheEntries is the cache size past which expired entries are swept.
const maxCacheEntries = 1024

// targets returns the destinations of a workspace and the workspace (nil
// when it is gone), from the cache when it is fresh. When the store fails,
// a stale list is used for another TTL.
func (p *Publisher) targets(orgID, workspaceID string) ([]*target, *gatehouse.Workspace, error) {
	p.cacheMu.Lock()
	defer p.cacheMu.Unlock()
	key := orgID + "/" + workspaceID
	now := p.now()
	gen := p.generation.Load()
	e, ok := p.cache[key]
	if ok && now.Before(e.expires) && e.generation == gen {
		return e.targets, e.workspace, nil
	}
	ws, dests, err := p.list(orgID, workspaceID)
	if gatehouse.ErrorCode(err) == gatehouse.ENOTFOUND {
		ws, dests, err = nil, nil, nil // the workspace is gone: nothing to deliver to
	}
	if err != nil {
		if ok {
			e.expires = now.Add(p.opts.CacheTTL)
			p.logger.Warn("observability: cannot refresh destinations; using the previous list",
				"workspace_id", workspaceID, "error", describe(err))
			return e.targets, e.workspace, nil
		}
		return nil, nil, err
	}
	if len(p.cache) >= maxCacheEntries {
		for k, old := range p.cache {
			if !now.Before(old.expires) {
				delete(p.cache, k)
			}
		}
	}
	ts := make([]*target, 0, len(dests))
	for _, d := range dests {
		ts = append(ts, newTarget(d, p.logger))
	}
	p.cache[key] = &cacheEntry{targets: ts, workspace: ws, expires: now.Add(p.opts.CacheTTL), generation: gen}
	return ts, ws, nil
}

// list reads a workspace (when it has destinations) and every page of its
// destinations.
func (p *Publisher) list(orgID, workspaceID string) (*gatehouse.Workspace, []*gatehouse.Destination, error) {
	ctx, cancel := context.WithTimeout(p.ctx, p.opts.Timeout)
	defer cancel()
	var all []*gatehouse.Destination
	for {
		page, total, err := p.store.FindDestinations(ctx, orgID, workspaceID,
			gatehouse.Page{Offset: len(all), Limit: gatehouse.MaxPageSize})
		if err != nil {
			return nil, nil, err
		}
		all = append(all, page...)
		if len(page) == 0 || len(all) >= total {
			break
		}
	}
	if len(all) == 0 {
		return nil, nil, nil
	}
	ws, err := p.store.FindWorkspace(ctx, orgID, workspaceID)
	return ws, all, err
}
