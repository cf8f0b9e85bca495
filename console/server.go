package console

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"runtime/debug"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/forwarded"
	"gatehouse/provider"
	"gatehouse/sso"

	"github.com/prometheus/client_golang/prometheus"
)

// Server is the web console: its routes, sessions, forms and pages.
type Server struct {
	store    gatehouse.Store
	accounts *gatehouse.Accounts
	signIns  *signInLimits
	logger   *slog.Logger
	now      gatehouse.Clock
	opts     Options
	pages    *pages
	mux      *http.ServeMux
	routes   []route
	// past caches the usage of completed days (see pastCache).
	past *pastCache
}

// Options are the console's settings.
type Options struct {
	// Proxies are the trusted reverse proxies (GATEHOUSE_TRUSTED_PROXIES):
	// their word decides the client's address (sign-in limits) and whether
	// it came over HTTPS (Secure cookies, the origin of forms).
	Proxies forwarded.Proxies
	// Destinations changes observability destinations as the API does
	// (httpapi.Server.Destinations: its egress policy, its trace
	// publisher); nil: the default egress policy, and no publisher.
	Destinations *gatehouse.Destinations
	// Deliveries tells a destination's delivery status and sends its test
	// event (the trace publisher); nil: the page shows neither.
	Deliveries gatehouse.DeliveryMonitor
	// PublicURL is where browsers reach the server (GATEHOUSE_PUBLIC_URL),
	// the base of the invitation and reset links the console shows; ""
	// takes the origin the admin's browser used.
	PublicURL string
	// SSO signs members in through their organization's identity
	// providers; nil: one over the store, with the console's clock.
	SSO *sso.RelyingParty
	// Router is the model catalog and the endpoints' health that the API
	// routes model calls with (httpapi.Server.Router), shown on the
	// providers page; nil shows no providers.
	Router *provider.Router
	// Metrics registers the console's metrics (sign-in attempts and
	// lock-outs); nil registers none.
	Metrics prometheus.Registerer
	// Shares divides the database's connections among organizations, the
	// API's (httpapi.Server.SetShares): each signed-in page runs in its
	// organization's share; nil divides nothing.
	Shares *gatehouse.Shares
}

// route is one registered route.
type route struct {
	pattern string
	handler http.Handler
}

// New returns the console over the store and the sign-in policy of
// accounts (made over the same store). signIns makes the budgets of failed
// sign-ins (see SignInPairLimit; nil limits nothing); now is the clock of
// its pages' periods.
func New(store gatehouse.Store, accounts *gatehouse.Accounts, signIns Buckets, logger *slog.Logger, now gatehouse.Clock, opts Options) *Server {
	if opts.SSO == nil {
		opts.SSO = sso.New(store, nil, now)
	}
	if opts.Destinations == nil {
		opts.Destinations = &gatehouse.Destinations{Store: store, Egress: &egress.Policy{}}
	}
	s := &Server{store: store, accounts: accounts, signIns: newSignInLimits(signIns, store, logger, opts.Metrics, now), logger: logger, now: now, opts: opts,
		pages: mustParsePages(), mux: http.NewServeMux(), past: newPastCache()}
	s.register()
	s.mux.Handle("/", s.wrap(s.notFound))
	return s
}

// Routes calls add with every route of the console, for the server to
// mount beside the API (httpapi.Server.Handle).
func (s *Server) Routes(add func(pattern string, h http.Handler)) {
	for _, r := range s.routes {
		add(r.pattern, r.handler)
	}
}

// NotFound answers the requests that match no route of the console nor of
// the API (httpapi.Server.HandleNotFound).
func (s *Server) NotFound() http.Handler { return s.wrap(s.notFound) }

// ServeHTTP serves the console alone, without the API (its tests).
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// handle registers a route whose handler writes its own answer.
func (s *Server) handle(pattern string, h handlerFunc) {
	wrapped := s.wrap(h)
	s.routes = append(s.routes, route{pattern, wrapped})
	s.mux.Handle(pattern, wrapped)
}

// handlerFunc serves a request and returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// wrap adapts a handlerFunc: the security headers on every answer, the
// origin check of every state change, errors rendered as pages, and a
// panic as a 500 page.
func (s *Server) wrap(h handlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		rec := &written{ResponseWriter: w}
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.logger.Error("panic in the console", "path", r.URL.Path, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
				if !rec.wrote {
					s.fail(rec, r, errors.New("panic"))
				}
			}
		}()
		err := s.checkOrigin(r)
		if err == nil {
			err = h(rec, r)
		}
		if err != nil {
			if rec.wrote {
				s.logger.Error("console error after the answer began", "path", r.URL.Path, "error", err.Error())
				return
			}
			s.fail(rec, r, err)
		}
	})
}

// written records whether the answer has begun.
type written struct {
	http.ResponseWriter
	wrote bool
}

func (w *written) WriteHeader(status int) { w.wrote = true; w.ResponseWriter.WriteHeader(status) }
func (w *written) Write(b []byte) (int, error) {
	w.wrote = true
	return w.ResponseWriter.Write(b)
}

// Unwrap lets http.ResponseController reach the underlying writer.
func (w *written) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// notFound answers a path the console does not serve: 405 when the path
// is served under another method, else 404.
func (s *Server) notFound(w http.ResponseWriter, r *http.Request) error {
	for _, m := range []string{http.MethodGet, http.MethodPost} {
		probe := &http.Request{Method: m, URL: r.URL, Host: r.Host}
		if _, pattern := s.mux.Handler(probe); pattern != "" && pattern != "/" && m != r.Method {
			w.Header().Set("Allow", m)
			return errMethod
		}
	}
	return gatehouse.Errorf(gatehouse.ENOTFOUND, "There is no page at %s.", r.URL.Path)
}

// errMethod is the error of a method a page does not take.
var errMethod = errors.New("method not allowed")

// setSecurityHeaders sets the headers every answer of the console
// carries: a strict Content-Security-Policy (our own scripts and styles
// only, no inline script, no framing), no sniffing, no referrer to other
// origins, and no caching (pages show secrets once).
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy(""))
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "same-origin")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// contentSecurityPolicy is the console's policy; formTarget, when set, is
// one more origin its forms may lead to (the application that the
// authorization page sends the browser back to: a form's redirect is held
// to form-action too).
func contentSecurityPolicy(formTarget string) string {
	formAction := "'self'"
	if formTarget != "" {
		formAction += " " + formTarget
	}
	return "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; " +
		"object-src 'none'; base-uri 'none'; form-action " + formAction + "; frame-ancestors 'none'"
}
