package observe

import "github.com/prometheus/client_golang/prometheus"

// metrics are the Publisher's Prometheus metrics.
//
//   - gatehouse_observability_events_total{result}: queued (accepted by
//     Publish) or dropped (the queue was full or closed, or Close gave up
//     before the event was dispatched).
//   - gatehouse_observability_deliveries_total{result}: per destination and
//     event, delivered; failed (attempts exhausted, or an error that is
//     not retried); skipped (a stored-only type); filtered (api_key_hashes,
//     sampling_rate or filter_rules left it out); dropped (the destination's
//     backlog was full, or Close gave up on it).
//   - gatehouse_observability_delivery_attempts_total: attempts, one per
//     batch of a destination's events sent (see scheduler).
//
// None is labelled by tenant, destination or destination type: /metrics
// needs no credential, and a counter per destination (or per type, on a
// quiet system) would tell anyone whether a given destination's deliveries
// succeed.
//   - gatehouse_observability_queue_length{queue}: events waiting for
//     dispatch (queue="events"), deliveries waiting to run or to be retried
//     (queue="deliveries").
//   - gatehouse_observability_lookup_errors_total: events lost because the
//     workspace's destinations could not be listed.
type metrics struct {
	events       *prometheus.CounterVec
	deliveries   *prometheus.CounterVec
	attempts     prometheus.Counter
	lookupErrors prometheus.Counter
	outboxErrors prometheus.Counter
}

func newMetrics(reg prometheus.Registerer, events, deliveries func() float64) *metrics {
	m := &metrics{
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_observability_events_total",
			Help: "Trace events published, by result: queued or dropped.",
		}, []string{"result"}),
		deliveries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_observability_deliveries_total",
			Help: "Trace deliveries by result: delivered, failed, skipped (destination gone before its delivery), filtered or dropped (its destination's queue full, or abandoned by a shutdown).",
		}, []string{"result"}),
		attempts: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_observability_delivery_attempts_total",
			Help: "Attempts to deliver traces: one per batch of a destination's events sent.",
		}),
		lookupErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_observability_lookup_errors_total",
			Help: "Trace events not delivered because the workspace's destinations could not be listed.",
		}),
		outboxErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "gatehouse_observability_outbox_errors_total",
			Help: "Writes and reads of the durable outbox of deliveries (and of delivery status) that failed.",
		}),
	}
	m.events.WithLabelValues("queued")
	m.events.WithLabelValues("dropped")
	if reg == nil {
		return m
	}
	gauge := func(queue string, f func() float64) prometheus.Collector {
		return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name:        "gatehouse_observability_queue_length",
			Help:        "Trace events waiting for dispatch (queue=events) and deliveries waiting to run or be retried (queue=deliveries).",
			ConstLabels: prometheus.Labels{"queue": queue},
		}, f)
	}
	reg.MustRegister(m.events, m.deliveries, m.attempts, m.lookupErrors, m.outboxErrors,
		gauge("events", events), gauge("deliveries", deliveries))
	return m
}
