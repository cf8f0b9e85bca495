package httpapi

import (
	"time"

	"gatehouse/provider"

	"github.com/prometheus/client_golang/prometheus"
)

// endpointMetrics count what the calls to each endpoint (provider/model
// address) came to: by the class of their outcome, how long their answers
// took to begin, and how many tokens a second they brought. Endpoints are
// the operator's configuration: the labels stay few.
type endpointMetrics struct {
	calls      *prometheus.CounterVec
	firstByte  *prometheus.HistogramVec
	throughput *prometheus.HistogramVec
}

func newEndpointMetrics(reg prometheus.Registerer) endpointMetrics {
	m := endpointMetrics{
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_endpoint_calls_total",
			Help: "Calls to each endpoint (provider and model), by outcome: ok, rate_limited, server_error, unreachable, timeout, bad_answer, refused.",
		}, []string{"endpoint", "provider", "outcome"}),
		firstByte: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_endpoint_first_byte_seconds",
			Help:    "How long each endpoint's answers took to begin (a whole answer: to end).",
			Buckets: []float64{.05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 180, 600},
		}, []string{"endpoint"}),
		throughput: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_endpoint_tokens_per_second",
			Help:    "Completion tokens a second of each endpoint's streamed answers, from their first byte.",
			Buckets: []float64{5, 10, 20, 40, 60, 80, 120, 200, 400, 1000},
		}, []string{"endpoint"}),
	}
	reg.MustRegister(m.calls, m.firstByte, m.throughput)
	return m
}

// endpointCall counts one call to an endpoint.
func (m *metrics) endpointCall(e provider.Endpoint, o provider.Outcome) {
	addr := e.Address()
	m.endpoints.calls.WithLabelValues(addr, e.Provider.ID, string(o.Class)).Inc()
	if o.Class == provider.OK {
		m.endpoints.firstByte.WithLabelValues(addr).Observe(o.FirstByte.Seconds())
		if gen := o.Total - o.FirstByte; o.Tokens > 0 && gen > time.Millisecond {
			m.endpoints.throughput.WithLabelValues(addr).Observe(float64(o.Tokens) / gen.Seconds())
		}
	}
}

// circuitCollector reports each endpoint's circuit at every scrape:
// gatehouse_endpoint_circuit_state{endpoint, state} is 1 for its state.
type circuitCollector struct{ router *provider.Router }

var circuitDesc = prometheus.NewDesc("gatehouse_endpoint_circuit_state",
	"The circuit breaker of each endpoint this instance called: 1 for its state (closed, open, half_open).",
	[]string{"endpoint", "state"}, nil)

func (c circuitCollector) Describe(ch chan<- *prometheus.Desc) { ch <- circuitDesc }

func (c circuitCollector) Collect(ch chan<- prometheus.Metric) {
	for _, addr := range c.router.Health.Addresses() {
		state := c.router.Health.Stats(addr).State
		for _, st := range []provider.CircuitState{provider.CircuitClosed, provider.CircuitOpen, provider.CircuitHalfOpen} {
			v := 0.0
			if st == state {
				v = 1
			}
			ch <- prometheus.MustNewConstMetric(circuitDesc, prometheus.GaugeValue, v, addr, string(st))
		}
	}
}
