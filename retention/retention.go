// Package retention prunes the append-only logs of Gatehouse (the usage
// ledger and the audit log) in the background, as GATEHOUSE_LEDGER_RETENTION
// and GATEHOUSE_AUDIT_RETENTION say: every pass deletes what has grown older
// than its log's retention, in small batches with pauses between them, so
// that the writes of requests are never held up for long behind it.
package retention

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"gatehouse"

	"github.com/prometheus/client_golang/prometheus"
)

// Options tune the pruner; the zero value is what serving uses.
type Options struct {
	// Interval is the time between passes; default one minute, or a
	// quarter of the shortest retention if that is shorter (at least a
	// second).
	Interval time.Duration
	// Batch is the most entries one transaction deletes; default 500.
	Batch int
	// MinPause is the least pause between two batches; default 10 ms. A
	// pause is also at least as long as the batch before it took, so the
	// pruner holds the database's writer at most half of the time while it
	// works through a backlog, and requests' writes queue behind one batch
	// at most.
	MinPause time.Duration
	// Now is the clock; default time.Now.
	Now func() time.Time
	// Registerer receives gatehouse_retention_deleted_total; nil: none.
	Registerer prometheus.Registerer
}

// Pruner runs passes until Stop.
type Pruner struct {
	store   gatehouse.LogPruner
	policy  gatehouse.Retention
	logger  *slog.Logger
	opts    Options
	deleted *prometheus.CounterVec
	cancel  context.CancelFunc
	done    sync.WaitGroup
}

// target is one of the logs a pass prunes.
type target struct {
	name   string // as in the metric and the log lines
	keep   time.Duration
	delete func(ctx context.Context, before time.Time, limit int) (int, error)
}

// Start runs a first pass at once and then one every interval, in the
// background, until Stop. With a policy that keeps everything it starts
// nothing.
func Start(ctx context.Context, store gatehouse.LogPruner, policy gatehouse.Retention, logger *slog.Logger, opts Options) *Pruner {
	p := &Pruner{store: store, policy: policy, logger: logger, opts: withDefaults(opts, policy)}
	p.deleted = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "gatehouse_retention_deleted_total",
		Help: "Entries deleted from the append-only logs because they were older than their retention, by log (generations, audit_log).",
	}, []string{"log"})
	if p.opts.Registerer != nil {
		p.opts.Registerer.MustRegister(p.deleted)
	}
	ctx, p.cancel = context.WithCancel(ctx)
	if policy.Keeps() {
		return p
	}
	logger.Info("retention: pruning the logs in the background",
		"ledger_retention", describe(policy.Ledger), "audit_retention", describe(policy.Audit),
		"interval", p.opts.Interval.String(), "batch", p.opts.Batch)
	p.done.Add(1)
	go p.loop(ctx)
	return p
}

// Stop ends the pruner and waits for a batch in progress to finish, so
// that the store can be closed after it.
func (p *Pruner) Stop() {
	p.cancel()
	p.done.Wait()
}

func withDefaults(o Options, policy gatehouse.Retention) Options {
	if o.Interval <= 0 {
		o.Interval = time.Minute
		for _, keep := range []time.Duration{policy.Ledger, policy.Audit} {
			if keep > 0 && keep/4 < o.Interval {
				o.Interval = max(keep/4, time.Second)
			}
		}
	}
	if o.Batch <= 0 {
		o.Batch = 500
	}
	if o.MinPause <= 0 {
		o.MinPause = 10 * time.Millisecond
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

func (p *Pruner) loop(ctx context.Context) {
	defer p.done.Done()
	logs := []target{
		{"generations", p.policy.Ledger, p.store.PruneGenerations},
		{"audit_log", p.policy.Audit, p.store.PruneAuditLog},
	}
	t := time.NewTicker(p.opts.Interval)
	defer t.Stop()
	for {
		for _, l := range logs {
			if l.keep > 0 {
				p.prune(ctx, l)
			}
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// prune deletes the entries of one log older than its retention, a batch
// at a time, until none is left or ctx ends. A failure is logged and the
// rest left to the next pass.
func (p *Pruner) prune(ctx context.Context, l target) {
	before := p.opts.Now().Add(-l.keep)
	total := 0
	for ctx.Err() == nil {
		start := time.Now()
		n, err := l.delete(ctx, before, p.opts.Batch)
		total += n
		p.deleted.WithLabelValues(l.name).Add(float64(n))
		if err != nil {
			if ctx.Err() == nil {
				p.logger.Warn("retention: pruning failed; the next pass tries again", "log", l.name, "error", err.Error())
			}
			break
		}
		if n < p.opts.Batch {
			break
		}
		select {
		case <-ctx.Done():
		case <-time.After(max(time.Since(start), p.opts.MinPause)):
		}
	}
	if total > 0 {
		p.logger.Info("retention: pruned old entries", "log", l.name, "deleted", total,
			"older_than", before.UTC().Format(time.RFC3339))
	}
}

// describe renders a retention for the log: "keep" for none.
func describe(d time.Duration) string {
	if d <= 0 {
		return "keep"
	}
	return d.String()
}
