// Package httpapi serves the Gatehouse management API over HTTP: routing,
// authentication, rate limiting, request decoding and response encoding,
// logging and metrics. It maps domain errors to HTTP statuses; everything
// else lives in the domain and the stores.
package httpapi

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/netip"
	"path"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/forwarded"
	"gatehouse/meter"
	"gatehouse/provider"
	"gatehouse/ratelimit"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Server is the HTTP handler of the API.
type Server struct {
	store   gatehouse.Store
	limiter ratelimit.Limiter
	logger  *slog.Logger
	now     gatehouse.Clock
	mux     *http.ServeMux
	metrics *metrics
	data    DataPlane
	router  *provider.Router  // routes the model calls among their endpoints
	meter   *meter.Meter      // meters the model calls of the data plane
	trusted forwarded.Proxies // reverse proxies whose forwarding headers count
	// destinations changes destinations: the egress policy checked, the
	// trace publisher told (the console shares it: Destinations).
	destinations *gatehouse.Destinations
	// analyticsTimeout bounds reads of the activity and analytics; 0 is
	// DefaultAnalyticsTimeout. analyticsSlots holds a token for each such
	// read running (see analyticsRead).
	analyticsTimeout time.Duration
	analyticsSlots   chan struct{}
	analyticsShares  sync.Map // organization id -> chan struct{}: its share of analyticsSlots
	// shares divides the database's connections among organizations
	// (SetShares); nil: no division.
	shares *gatehouse.Shares
	// metricsElsewhere: /metrics is served on another listener, so this
	// one answers 404 for it.
	metricsElsewhere bool
	// contentRetention is how long the content of generations is kept and
	// shown (SetContentRetention).
	contentRetention time.Duration
	// frontend serves what no API route matches outside /api/ (the web
	// console), and frontendRoutes are the patterns it registered (Handle).
	frontend       http.Handler
	frontendRoutes map[string]bool
	// publicURL is the base of the links the API hands out (SetPublicURL).
	publicURL string
	// issuers checks the issuer of an identity provider as it is saved
	// (SetIssuerChecker); nil checks nothing.
	issuers IssuerChecker
}

// NewHandler returns the handler of the whole API. limiter bounds request
// rates per credential (or client IP); registry receives the HTTP metrics
// and is served at /metrics; now is the clock used to read usage periods;
// data serves the OpenAI-compatible endpoints (an empty catalog serves no
// model).
func NewHandler(store gatehouse.Store, limiter ratelimit.Limiter, logger *slog.Logger, registry *prometheus.Registry, now gatehouse.Clock, data DataPlane) *Server {
	if data.Catalog == nil {
		data.Catalog, _ = provider.NewCatalog(nil)
	}
	if data.Router == nil {
		data.Router = provider.NewRouter(data.Catalog)
	}
	s := &Server{
		store: store, limiter: limiter, logger: logger, now: now,
		mux:     http.NewServeMux(),
		metrics: newMetrics(registry),
		data:    data,
		router:  data.Router,

		analyticsSlots: make(chan struct{}, max(1, runtime.GOMAXPROCS(0)/2)),
	}
	s.destinations = &gatehouse.Destinations{Store: store, Egress: &egress.Policy{}, Changed: s.destinationsChanged}
	s.meter = &meter.Meter{Usage: store, Ledger: data.Ledger, Accounts: data.Accounts, Leases: data.Leases,
		BYOKKeys: store, Traces: data.Traces, Now: now, Anomaly: s.providerAnomaly}
	registry.MustRegister(circuitCollector{s.router})
	s.SetContentRetention(gatehouse.DefaultContentRetention)
	s.SetPublicURL(DefaultPublicURL)
	s.routes(promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry}))
	return s
}

// SetShares makes every management operation, and the reads of
// generations, run in their organization's share of the database's
// connections (gatehouse.Shares). Call it before serving.
func (s *Server) SetShares(sh *gatehouse.Shares) { s.shares = sh }

// handlerFunc is a handler that returns its error instead of writing it, so
// that no handler can forget to stop after an error.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// ServeHTTP runs one request: request id, panic recovery, routing, one log
// line and the metrics.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	id := newRequestID()
	rec := &recorder{ResponseWriter: w}
	rec.Header().Set("X-Request-Id", id)
	ctx := gatehouse.WithRequestID(r.Context(), id) // stores write it into the audit log
	clientID := clientRequestID(r)
	if clientID != "" {
		ctx = gatehouse.WithClientRequestID(ctx, clientID)
	}
	r = r.WithContext(ctx)
	func() {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.logger.Error("panic", "request_id", id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if !rec.wrote {
					writeError(rec, fmt.Errorf("panic: %v", v))
				}
			}
		}()
		if !canonicalPath(r.URL.Path) {
			// ServeMux would answer a redirect to the cleaned path, which a
			// client following it would replay, a DELETE included, on
			// another route.
			writeError(rec, gatehouse.Errorf(gatehouse.ENOTFOUND,
				"no such route: %s %s (a path must not have empty, . or .. segments)", r.Method, r.URL.Path))
			return
		}
		s.mux.ServeHTTP(rec, r)
	}()
	route := r.Pattern
	if route == "" || route == "/" {
		route = "unmatched"
	}
	status := rec.status
	if status == 0 {
		status = http.StatusOK
	}
	elapsed := time.Since(start)
	s.metrics.observe(route, r.Method, status, elapsed)
	level := slog.LevelInfo
	if status >= 500 {
		level = slog.LevelError
	}
	var room [11]slog.Attr // every attribute below: no growing on the heap
	attrs := append(room[:0],
		slog.String("request_id", id), slog.String("method", r.Method), slog.String("route", route),
		slog.String("path", redactPath(r)), slog.Int("status", status), slog.Int64("bytes", rec.bytes),
		slog.Float64("duration_ms", float64(elapsed.Microseconds())/1000), slog.String("remote", s.clientIP(r)),
	)
	if clientID != "" {
		attrs = append(attrs, slog.String("client_request_id", clientID))
	}
	if rec.keyHash != "" {
		attrs = append(attrs, slog.String("key_hash", rec.keyHash))
	}
	if rec.err != nil {
		attrs = append(attrs, slog.String("error", rec.err.Error()))
	}
	s.logRequest(ctx, level, attrs)
}

// logRequest writes the request's log line. It builds the record itself,
// without the caller's program counter that Logger.LogAttrs looks up on
// every call (5% of a cached read's CPU): the line never shows its source.
func (s *Server) logRequest(ctx context.Context, level slog.Level, attrs []slog.Attr) {
	h := s.logger.Handler()
	if !h.Enabled(ctx, level) {
		return
	}
	r := slog.NewRecord(time.Now(), level, "request", 0)
	r.AddAttrs(attrs...)
	_ = h.Handle(ctx, r)
}

// serve adapts a handlerFunc: an error is rendered as the JSON error body,
// and internal errors are kept for the log line.
func (s *Server) serve(h handlerFunc) http.HandlerFunc { return s.serveAs(h, writeError) }

// serveAs is serve with the errors rendered by write: the shape of
// another API's errors (see writeMessagesError).
func (s *Server) serveAs(h handlerFunc, write func(http.ResponseWriter, error)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			if rec, ok := w.(*recorder); ok && logsError(err) {
				rec.err = err
			}
			write(w, err)
		}
	}
}

// logsError reports whether the request's log line shows err: our faults
// and our dependencies' (5xx), a provider's failure whatever its status,
// and any error that carries a cause (what a database said), which the
// client never reads.
func logsError(err error) bool {
	var e *gatehouse.Error
	var ue *provider.UpstreamError
	return errorStatus(err) >= 500 || errors.As(err, &ue) || errors.As(err, &e) && e.Err != nil
}

// redactPath returns the request's path for the log, without the secrets
// a path may hold: the {token} of a route (the web console's invitation
// links), and a plaintext key that a client put in a URL by mistake (such
// as /keys/sk-gh-v1-… instead of the key's hash).
func redactPath(r *http.Request) string {
	path := r.URL.Path
	if token := r.PathValue("token"); token != "" {
		path = strings.ReplaceAll(path, token, "[redacted]")
	}
	lower := strings.ToLower(path)
	if !strings.Contains(lower, "sk-") && !strings.Contains(lower, "invite") {
		return path
	}
	parts := strings.Split(path, "/")
	afterInvite := false
	for i, p := range parts {
		switch {
		case afterInvite && p != "":
			parts[i] = "[redacted]" // a link's token, on a route that did not match (/invite/TOKEN/)
		case strings.Contains(strings.ToLower(p), "sk-"):
			parts[i] = "[redacted]" // a key, wherever it is in the segment (/keys:sk-…, /keys/%20sk-…)
		case strings.EqualFold(p, "invite"):
			afterInvite = true
		}
	}
	return strings.Join(parts, "/")
}

// recorder captures what the log line and the metrics need.
type recorder struct {
	http.ResponseWriter
	status  int
	bytes   int64
	wrote   bool
	keyHash string // the authenticated key, for the log
	err     error  // an internal error, for the log
}

func (r *recorder) WriteHeader(status int) {
	if !r.wrote {
		r.status, r.wrote = status, true
	}
	r.ResponseWriter.WriteHeader(status)
}

func (r *recorder) Write(b []byte) (int, error) {
	if !r.wrote {
		r.WriteHeader(http.StatusOK)
	}
	n, err := r.ResponseWriter.Write(b)
	r.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (r *recorder) Unwrap() http.ResponseWriter { return r.ResponseWriter }

// clientRequestID returns the caller's X-Request-Id when it is short and
// plain, else "". It is logged and audited beside the server's own id, never
// in its place: a client must not be able to pose as another request.
func clientRequestID(r *http.Request) string {
	if id := r.Header.Get("X-Request-Id"); id != "" && len(id) <= 64 && isPlainToken(id) {
		return id
	}
	return ""
}

// newRequestID returns a new random request id.
func newRequestID() string {
	var b [12]byte
	_, _ = rand.Read(b[:])
	var id [24]byte
	hex.Encode(id[:], b[:])
	return string(id[:])
}

func isPlainToken(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// ServeMetricsElsewhere makes this handler answer 404 for /metrics, which
// the caller serves on a listener of its own. Call it before serving.
func (s *Server) ServeMetricsElsewhere() { s.metricsElsewhere = true }

// SetEgressPolicy sets what destination addresses are accepted; the
// default refuses every loopback, private, link-local and metadata address.
func (s *Server) SetEgressPolicy(p *egress.Policy) { s.destinations.Egress = p }

// Destinations is how the API changes destinations (its egress policy, its
// trace publisher), for the web console to change them the same way.
func (s *Server) Destinations() *gatehouse.Destinations { return s.destinations }

// Router returns the router of the model calls: the catalog, and the
// endpoints' health this instance measured (for the console's providers
// page).
func (s *Server) Router() *provider.Router { return s.router }

// TrustProxies names the reverse proxies whose X-Forwarded-For and
// Forwarded headers say who the client is. Call it before serving; with
// none (the default) those headers are ignored, since a client could forge
// them.
func (s *Server) TrustProxies(prefixes []netip.Prefix) { s.trusted = prefixes }

// clientIP returns the address the request came from (see
// forwarded.Proxies.ClientIP).
func (s *Server) clientIP(r *http.Request) string { return s.trusted.ClientIP(r) }

// addressBucket names the rate-limit bucket of a client address.
func addressBucket(ip string) string { return forwarded.AddressBucket(ip) }

// Handle serves the pattern (outside /api/v1) with h, a route of a user
// interface beside the API (the web console), which writes its own answers
// and errors; the request is logged and counted like the API's. Call it
// before serving. It panics on a pattern that conflicts with another.
func (s *Server) Handle(pattern string, h http.Handler) {
	if s.frontendRoutes == nil {
		s.frontendRoutes = map[string]bool{}
	}
	s.frontendRoutes[pattern] = true
	s.mux.Handle(pattern, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if looksLikeAPICall(r) { // a client whose base URL lacks /api/v1, calling POST /keys say
			s.serve(s.notUnderAPI)(w, r)
			return
		}
		h.ServeHTTP(w, r)
	}))
}

// HandleService serves the pattern (outside /api/v1) with h, an API for
// programs beside Gatehouse's own (SCIM provisioning), which writes its
// own answers and errors: unlike Handle's routes, requests that look like
// API calls are its to answer. The request is logged and counted like the
// API's. Call it before serving.
func (s *Server) HandleService(pattern string, h http.Handler) {
	if s.frontendRoutes == nil {
		s.frontendRoutes = map[string]bool{}
	}
	s.frontendRoutes[pattern] = true
	s.mux.Handle(pattern, h)
}

// HandleNotFound sends h the requests that match no route, outside /api/
// and the API's own paths (/healthz, /metrics...): the web console's pages
// answer them. Without it they get the API's JSON 404 (or 405).
func (s *Server) HandleNotFound(h http.Handler) { s.frontend = h }

// notFound answers requests that match no route: 405 with Allow when the
// path exists under another method, else 404; both in the JSON error shape.
// A path outside the API goes to the frontend, if there is one.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	var allowed []string
	apiPath := strings.HasPrefix(r.URL.Path, "/api/")
	for _, m := range []string{http.MethodGet, http.MethodPost, http.MethodPatch, http.MethodPut, http.MethodDelete} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host}
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" {
			allowed = append(allowed, m)
			apiPath = apiPath || !s.frontendRoutes[pattern]
		}
	}
	if s.frontend != nil && !apiPath && (len(allowed) > 0 || !looksLikeAPICall(r)) {
		s.frontend.ServeHTTP(w, r)
		return nil
	}
	if len(allowed) > 0 {
		if slices.Contains(allowed, http.MethodGet) {
			allowed = slices.Insert(allowed, 1, http.MethodHead) // ServeMux answers HEAD with the GET route
		}
		w.Header().Set("Allow", strings.Join(allowed, ", "))
		return writeJSON(w, http.StatusMethodNotAllowed, errorBody{Error: errorDetail{
			Code:    http.StatusMethodNotAllowed,
			Message: "method " + r.Method + " is not allowed here; use " + strings.Join(allowed, ", ")}})
	}
	if p := r.URL.Path; p != "/api/v1" && !strings.HasPrefix(p, "/api/v1/") && (strings.HasPrefix(p, "/api/") || looksLikeAPICall(r)) {
		return s.notUnderAPI(w, r)
	}
	return gatehouse.Errorf(gatehouse.ENOTFOUND, "no such route: %s %s", r.Method, r.URL.Path)
}

// notUnderAPI answers a program's call outside /api/v1 with a JSON 404
// that says where the API is.
func (s *Server) notUnderAPI(w http.ResponseWriter, r *http.Request) error {
	return gatehouse.Errorf(gatehouse.ENOTFOUND, "no such route: %s %s. The API is under /api/v1: make /api/v1 on this server your client's base URL (%s %s)",
		r.Method, r.URL.Path, r.Method, apiPath(r.URL.Path))
}

// looksLikeAPICall reports whether a request outside /api/v1 is a
// program's rather than a browser's (which the console's pages answer): it
// sends or accepts JSON, carries a bearer credential, or its path starts
// with /v1/, the base URL of OpenAI's and OpenRouter's APIs without
// Gatehouse's /api in front (a common mistake). The console sends no such
// request: its pages are navigations and urlencoded forms.
func looksLikeAPICall(r *http.Request) bool {
	if r.URL.Path == "/v1" || strings.HasPrefix(r.URL.Path, "/v1/") {
		return true
	}
	if auth := r.Header.Get("Authorization"); len(auth) > 7 && strings.EqualFold(auth[:7], "bearer ") {
		return true
	}
	if isJSONMediaType(r.Header.Get("Content-Type")) {
		return true
	}
	accept := r.Header.Get("Accept")
	return !strings.Contains(accept, "text/html") && slices.ContainsFunc(strings.Split(accept, ","), isJSONMediaType)
}

// isJSONMediaType reports whether a Content-Type or Accept item names JSON
// (application/json, or a +json type), whatever its parameters.
func isJSONMediaType(v string) bool {
	mt, _, _ := strings.Cut(v, ";")
	mt = strings.ToLower(strings.TrimSpace(mt))
	return mt == "application/json" || strings.HasPrefix(mt, "application/") && strings.HasSuffix(mt, "+json")
}

// apiPath returns the path under /api/v1 that a path outside it was
// probably meant to be.
func apiPath(p string) string {
	switch {
	case p == "/v1" || strings.HasPrefix(p, "/v1/"):
		return "/api" + p
	case strings.HasPrefix(p, "/api/"):
		return "/api/v1" + strings.TrimPrefix(p, "/api")
	}
	return "/api/v1" + p
}

// metrics are the HTTP metrics, labelled by route pattern, method and status.
type metrics struct {
	requests  *prometheus.CounterVec
	duration  *prometheus.HistogramVec
	anomalies *prometheus.CounterVec
	endpoints endpointMetrics
}

func newMetrics(reg prometheus.Registerer) *metrics {
	m := &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_http_requests_total",
			Help: "HTTP requests served, by route pattern, method and status.",
		}, []string{"route", "method", "status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "gatehouse_http_request_duration_seconds",
			Help:    "Time to serve HTTP requests, by route pattern, method and status.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"route", "method", "status"}),
		anomalies: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_provider_anomalies_total",
			Help: "Answers whose reported usage cost more than was reserved (charged the reservation), by provider and kind.",
		}, []string{"provider", "kind"}),
	}
	b := gatehouse.Build()
	build := prometheus.NewGauge(prometheus.GaugeOpts{
		Name: "gatehouse_build_info",
		Help: "Always 1; its labels say which Gatehouse is running (module version, VCS revision, Go version).",
		ConstLabels: prometheus.Labels{"version": b.Version, "revision": b.Revision,
			"modified": strconv.FormatBool(b.Modified), "goversion": b.GoVersion},
	})
	build.Set(1)
	reg.MustRegister(m.requests, m.duration, m.anomalies, build)
	m.endpoints = newEndpointMetrics(reg)
	return m
}

func (m *metrics) observe(route, method string, status int, d time.Duration) {
	code := strconv.Itoa(status)
	switch method {
	case http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete, http.MethodOptions:
	default:
		method = "other" // clients choose methods freely; keep label cardinality bounded
	}
	m.requests.WithLabelValues(route, method, code).Inc()
	m.duration.WithLabelValues(route, method, code).Observe(d.Seconds())
}

// canonicalPath reports whether p is as ServeMux matches it: rooted, with
// no empty, . or .. segment (a trailing slash is kept).
func canonicalPath(p string) bool {
	if p == "" || p[0] != '/' {
		return false
	}
	c := path.Clean(p)
	if strings.HasSuffix(p, "/") && c != "/" {
		c += "/"
	}
	return c == p
}
