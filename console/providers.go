package console

import (
	"cmp"
	"fmt"
	"net/http"
	"strings"
	"time"

	"gatehouse"
	"gatehouse/provider"
)

// providersData is the data of the providers page: each provider of the
// providers file with its endpoints, and what this instance measured of
// each (see provider.Health).
type providersData struct {
	Providers []providerRow
	// Configured is false when the server has no providers file.
	Configured bool
}

type providerRow struct {
	ID, Name, Type string
	Endpoints      []endpointRow
}

// endpointRow is one endpoint (a model of a provider) and its health.
type endpointRow struct {
	Address, Slug string
	// State is the circuit's: closed (calls go through), open (none until
	// Until), half_open (one call probes it).
	State provider.CircuitState
	Until string // when an open circuit is probed, or a Retry-After ends ("" when neither)
	// Calls is how many calls were made; OK how many succeeded; Failures
	// the others, by class ("3 rate limited, 1 timeout").
	Calls, OK int64
	Failures  string
	// Uptime5m, Uptime30m, Uptime1d are shares of successful calls ("" when
	// there were none); LatencyP50, LatencyP99 in ms to the first byte,
	// ThroughputP50 in tokens a second ("" when none was measured).
	Uptime5m, Uptime30m, Uptime1d         string
	LatencyP50, LatencyP99, ThroughputP50 string
}

// failureClasses are the outcome classes that count as failures, in the
// order the page lists them, with their words.
var failureClasses = []struct {
	class provider.Class
	word  string
}{
	{provider.RateLimited, "rate limited"},
	{provider.ServerError, "server error"},
	{provider.Unreachable, "unreachable"},
	{provider.TimedOut, "timed out"},
	{provider.BadAnswer, "bad answer"},
}

// providers shows the providers the server routes model calls to, and the
// health of each endpoint as this instance measured it: its circuit
// breaker, its calls and failures, uptime, latency and throughput. Every
// signed-in person may look: it is what GET /api/v1/models/.../endpoints
// tells any key.
func (s *Server) providers(w http.ResponseWriter, r *http.Request, sess *gatehouse.Session) error {
	var data providersData
	if rt := s.opts.Router; rt != nil && rt.Catalog != nil {
		data.Configured = len(rt.Catalog.Providers) > 0
		for _, p := range rt.Catalog.Providers {
			row := providerRow{ID: p.ID, Name: p.DisplayName(), Type: cmp.Or(p.Type, "openai")}
			for _, m := range p.Models {
				row.Endpoints = append(row.Endpoints, endpointRowOf(m, rt.Health.Stats(m.Address()), s.now()))
			}
			data.Providers = append(data.Providers, row)
		}
	}
	return s.render(w, r, sess, http.StatusOK, "providers", "Providers", data)
}

func endpointRowOf(m *provider.Model, st provider.EndpointStats, now time.Time) endpointRow {
	row := endpointRow{Address: m.Address(), Slug: m.Slug(), State: st.State}
	if !st.Until.IsZero() && st.Until.After(now) {
		row.Until = st.Until.UTC().Format("15:04:05") + " UTC"
	}
	var failures []string
	for class, n := range st.Counts {
		row.Calls += n
		if class == provider.OK {
			row.OK += n
		}
	}
	for _, f := range failureClasses {
		if n := st.Counts[f.class]; n > 0 {
			failures = append(failures, fmt.Sprintf("%d %s", n, f.word))
		}
	}
	row.Failures = strings.Join(failures, ", ")
	row.Uptime5m, row.Uptime30m, row.Uptime1d = share(st.Uptime5m), share(st.Uptime30m), share(st.Uptime1d)
	if p := st.Latency; p != nil {
		row.LatencyP50, row.LatencyP99 = fmt.Sprintf("%.0f ms", p[0]), fmt.Sprintf("%.0f ms", p[3])
	}
	if p := st.Throughput; p != nil {
		row.ThroughputP50 = fmt.Sprintf("%.0f tok/s", p[0])
	}
	return row
}

// share renders a share as a percentage with one decimal ("" for none).
func share(x *float64) string {
	if x == nil {
		return ""
	}
	return fmt.Sprintf("%.1f%%", *x*100)
}
