package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"net/url"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"gatehouse"
	"gatehouse/console"
	"gatehouse/gateway"
	"gatehouse/httpapi"
	"gatehouse/keycache"
	"gatehouse/meter"
	"gatehouse/observe"
	"gatehouse/postgres"
	"gatehouse/provider"
	"gatehouse/ratelimit"
	"gatehouse/scim"
	"gatehouse/sqlite"
	"gatehouse/sqlstore"
	"gatehouse/sso"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"github.com/redis/go-redis/v9"
)

// serve runs the API until ctx is cancelled, then shuts down gracefully:
// the listener closes at once, in-flight requests get the grace period.
//
// The start is ordered so that a failure leaves nothing behind: the
// settings and the providers file are checked and every address is bound
// before the database is touched, and the first organization and its
// management key are created last, once nothing else can fail; the key is
// printed once the server answers on its address.
// Everything opened is closed in reverse order on the way out: traces
// delivered, rate limiter, key watch and store closed, logs flushed.
func serve(ctx context.Context, args []string, getenv func(string) string, stderr io.Writer) error {
	cfg, err := serveConfig(args, getenv, stderr)
	if err != nil {
		return err
	}
	logger, flushLog := serveLogger(cfg, stderr)
	defer flushLog()
	catalog, err := loadCatalog(cfg, getenv, logger)
	if err != nil {
		return err
	}
	lns, err := bindListeners(cfg)
	if err != nil {
		return err
	}
	defer lns.close() // those not handed to a server
	// The console's links use the port bound, when it was 0.
	cfg.PublicURL = cfg.publicURL(lns.api.Addr().String())
	unlock, err := lockServe(cfg)
	if err != nil {
		return err
	}
	var served bool
	defer func() { unlock(served) }()
	served, err = serveStore(ctx, cfg, lns, catalog, logger, stderr)
	return err
}

// serveStore opens the store and serves on lns until ctx is cancelled; it
// says whether the server got as far as serving, and closes all it opened.
func serveStore(ctx context.Context, cfg Config, lns *listeners, catalog *provider.Catalog, logger *slog.Logger, stderr io.Writer) (served bool, err error) {
	store, closeStore, err := openServeStore(ctx, cfg, logger)
	if err != nil {
		return false, err
	}
	defer closeStore()
	reportUnreadable(ctx, store, logger)
	metering, closeMetering, err := startMetering(ctx, cfg, store, logger)
	if err != nil {
		return false, err
	}
	defer closeMetering()
	pruneCtx, stopPruning := context.WithCancel(ctx)
	defer stopPruning()
	go pruneContent(pruneCtx, store, cfg.ContentRetention, logger)
	go closeListBlocks(pruneCtx, store.Store, logger)
	handler, metrics, closeHandler, err := newServeHandler(ctx, cfg, store, catalog, logger, metering)
	if err != nil {
		return false, err
	}
	defer closeHandler()
	banner, err := bootstrap(ctx, cfg, store, logger)
	if err != nil {
		return false, err
	}
	return true, serveOn(ctx, cfg, lns, handler, metrics, writeTimeout(catalog), logger, func(url string) {
		if banner != nil {
			fmt.Fprint(stderr, banner(url))
		}
	})
}

// serveConfig reads the configuration of serve: defaults, then the
// environment, then the flags; validated.
func serveConfig(args []string, getenv func(string) string, stderr io.Writer) (Config, error) {
	cfg := DefaultConfig()
	if err := cfg.fromEnv(getenv); err != nil {
		return cfg, err
	}
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Addr, "addr", cfg.Addr, "listen address (env GATEHOUSE_ADDR)")
	databaseFlag(fs, &cfg)
	fs.StringVar(&cfg.ProvidersFile, "providers", cfg.ProvidersFile, "YAML file of the providers and models to serve (env GATEHOUSE_PROVIDERS_FILE)")
	publicURLFlag(fs, &cfg)
	if err := parseFlags(fs, args); err != nil {
		return cfg, err
	}
	return cfg, cfg.Validate()
}

// serveLogger returns the server's logger and the function that flushes
// it. JSON logs are buffered and flushed every 100 ms; a terminal gets
// every line at once.
func serveLogger(cfg Config, stderr io.Writer) (*slog.Logger, func()) {
	if logFormat(cfg, stderr) != "json" {
		return newLogger(cfg, stderr), func() {}
	}
	buffered := newLogWriter(stderr)
	return newLogger(cfg, buffered), buffered.Close
}

// lockServe makes this process the one that serves a SQLite database
// (sqlite.ServeLock), before it opens it: so a second server, such as a
// new release started beside the running one, neither migrates the
// database under it nor touches anything. The returned function releases
// the lock; after a start that failed before serving, it also removes the
// lock file if this start created it (a failed start creates nothing).
func lockServe(cfg Config) (func(served bool), error) {
	if cfg.isPostgres() {
		return func(bool) {}, nil // instances share the database; each holds an instance lock
	}
	lockFile := cfg.DatabaseURL + "-serve.lock"
	existed := fileExistsAt(lockFile)
	release, err := sqlite.ServeLock(cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	return func(served bool) {
		if !served && !existed {
			os.Remove(lockFile) // before the lock goes: no other process holds it meanwhile
		}
		release()
	}, nil
}

// openServeStore opens the store and puts the key cache in front of it.
// The returned function stops the cache's watch, then closes the store.
func openServeStore(ctx context.Context, cfg Config, logger *slog.Logger) (*keycache.Cache, func(), error) {
	db, err := openStore(ctx, cfg, logger, openMode{serve: true, secrets: true})
	if err != nil {
		return nil, nil, err
	}
	watchCtx, stopWatching := context.WithCancel(ctx)
	return cacheKeys(watchCtx, db), func() { stopWatching(); db.Close() }, nil
}

// reportUnreadable warns about the secrets at rest that the configured
// keys do not open: such destinations receive nothing, and such BYOK keys
// serve nothing, until fixed.
func reportUnreadable(ctx context.Context, store gatehouse.Store, logger *slog.Logger) {
	list, err := store.UnreadableSecrets(ctx)
	if err != nil {
		logger.Warn("could not check that the secret key opens every secret at rest", "error", err.Error())
		return
	}
	if len(list) == 0 {
		return
	}
	names := make([]string, len(list))
	for i, u := range list {
		names[i] = u.Kind + " " + u.ID
	}
	logger.Warn("the secret key does not open some secrets at rest (was it changed without gatehouse rotate-secret-key?): "+
		"those destinations receive nothing and show secrets_unreadable, those BYOK keys serve nothing, until the key they "+
		"were sealed with is given (GATEHOUSE_SECRET_KEY_PREVIOUS) or they are sent again", "secrets", names)
}

// newServeHandler builds the API's handler with its metrics, rate limiter
// and trace publisher, and starts the pruning of the logs (retention);
// metrics is what serves /metrics apart when GATEHOUSE_METRICS_ADDR is
// set. The returned function stops the pruning, delivers the queued
// traces, then closes the limiter.
func newServeHandler(ctx context.Context, cfg Config, store gatehouse.Store, catalog *provider.Catalog, logger *slog.Logger, metering httpapi.DataPlane) (http.Handler, http.Handler, func(), error) {
	registry := prometheus.NewRegistry()
	registry.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	limiter, signIns, closeLimiter, err := newLimiters(ctx, cfg, logger, registry)
	if err != nil {
		return nil, nil, nil, err
	}
	pruner, err := startRetention(ctx, cfg, store, logger, registry)
	if err != nil {
		closeLimiter()
		return nil, nil, nil, err
	}
	traces := observe.New(store, registry, logger, observe.Options{Egress: cfg.Egress, Outbox: traceOutbox(store), Lease: cfg.TraceLease})
	closeAll := func() { pruner.Stop(); closeTraces(traces, logger); closeLimiter() }
	data := metering // the ledger, and the accountant or leases
	data.Catalog, data.Upstream, data.Traces = catalog, gateway.NewClient(), traces
	handler := httpapi.NewHandler(store, limiter, logger, registry, time.Now, data)
	handler.TrustProxies(cfg.TrustedProxies)
	handler.SetAnalyticsTimeout(cfg.AnalyticsTimeout)
	shares := dbShares(store, cfg)
	handler.SetShares(shares)
	handler.SetEgressPolicy(cfg.Egress)
	handler.SetContentRetention(cfg.ContentRetention)
	handler.SetPublicURL(cfg.PublicURL)
	rp := sso.New(store, sso.NewClient(cfg.Egress), time.Now)
	handler.SetIssuerChecker(rp)
	provisioning, err := scim.NewHandler(store, limiter, logger, cfg.TrustedProxies, cfg.PublicURL)
	if err != nil {
		closeAll()
		return nil, nil, nil, err
	}
	handler.HandleService(scim.Prefix+"/", provisioning)
	web := console.New(store, gatehouse.NewAccounts(store, time.Now), signIns, logger, time.Now,
		console.Options{Proxies: cfg.TrustedProxies, PublicURL: cfg.PublicURL, Destinations: handler.Destinations(), Deliveries: traces, Router: handler.Router(), SSO: rp, Metrics: registry, Shares: shares})
	web.Routes(handler.Handle)
	handler.HandleNotFound(web.NotFound())
	var metrics http.Handler
	if cfg.MetricsAddr != "" {
		handler.ServeMetricsElsewhere()
		metrics = promhttp.HandlerFor(registry, promhttp.HandlerOpts{Registry: registry})
	}
	return handler, metrics, closeAll, nil
}

// listeners are the addresses serve binds before it touches the database.
type listeners struct {
	api, metrics, pprof net.Listener
}

// bindListeners binds the API's address and the side listeners'.
func bindListeners(cfg Config) (*listeners, error) {
	l := &listeners{}
	var err error
	if l.api, err = net.Listen("tcp", cfg.Addr); err != nil {
		return nil, fmt.Errorf("listen on %s: %w (set GATEHOUSE_ADDR or --addr to a free address)", cfg.Addr, err)
	}
	for _, side := range []struct {
		setting, addr string
		ln            *net.Listener
	}{{"GATEHOUSE_METRICS_ADDR", cfg.MetricsAddr, &l.metrics}, {"GATEHOUSE_PPROF_ADDR", cfg.PprofAddr, &l.pprof}} {
		if side.addr == "" {
			continue
		}
		if *side.ln, err = net.Listen("tcp", side.addr); err != nil {
			l.close()
			return nil, fmt.Errorf("%s %s: %w", side.setting, side.addr, err)
		}
	}
	return l, nil
}

// close closes the listeners that no server took.
func (l *listeners) close() {
	for _, ln := range []*net.Listener{&l.api, &l.metrics, &l.pprof} {
		if *ln != nil {
			(*ln).Close()
			*ln = nil
		}
	}
}

// take hands a listener to a server, which closes it.
func take(ln *net.Listener) net.Listener {
	l := *ln
	*ln = nil
	return l
}

// serveOn serves handler on the bound listeners until the server fails
// or ctx ends, then shuts down. ready runs once the API is served, with
// its URL.
func serveOn(ctx context.Context, cfg Config, lns *listeners, handler, metrics http.Handler, writeTimeout time.Duration, logger *slog.Logger, ready func(url string)) error {
	if lns.metrics != nil {
		mux := http.NewServeMux()
		mux.Handle("GET /metrics", metrics)
		serveSide(ctx, "metrics", take(&lns.metrics), mux, logger)
	}
	if lns.pprof != nil {
		serveSide(ctx, "profiler", take(&lns.pprof), pprofMux(), logger)
	}
	srv := &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logger.Handler(), slog.LevelWarn),
	}
	ln := take(&lns.api)
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	url := "http://" + ln.Addr().String() + "/api/v1"
	ready(url)
	logger.Info("listening", "addr", ln.Addr().String(), "url", url, "version", gatehouse.Build().Version)
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	return shutdown(srv, done, cfg.ShutdownTimeout, logger)
}

// shutdown stops srv: the listener closes at once, in-flight requests get
// the grace period. done delivers the result of srv.Serve.
func shutdown(srv *http.Server, done <-chan error, grace time.Duration, logger *slog.Logger) error {
	logger.Info("shutting down", "grace", grace.String())
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		srv.Close() // drop the connections still open, before the store closes under them
		return fmt.Errorf("shutdown: requests still in flight after the grace period of %s (GATEHOUSE_SHUTDOWN_TIMEOUT): %w", grace, err)
	}
	if err := <-done; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	logger.Info("stopped")
	return nil
}

// pprofMux serves the Go profiler, on its own listener, never on the API's
// address: profiles show internals that the API must not.
func pprofMux() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}

// serveSide serves h on a side listener until ctx ends.
func serveSide(ctx context.Context, what string, ln net.Listener, h http.Handler, logger *slog.Logger) {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	go func() {
		<-ctx.Done()
		srv.Close()
	}()
	logger.Info(what+" listening", "addr", ln.Addr().String())
}

// traceOutbox is the engine's store under the key cache: its durable
// outbox of observability deliveries (both engines have one).
func traceOutbox(store gatehouse.Store) gatehouse.TraceOutbox {
	if c, ok := store.(*keycache.Cache); ok {
		store = c.Store
	}
	o, _ := store.(gatehouse.TraceOutbox)
	return o
}

// closeTraces delivers the traces still queued, for at most five seconds,
// once no request can add more.
func closeTraces(traces *observe.Publisher, logger *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := traces.Close(ctx); err != nil {
		logger.Warn("observability deliveries still queued at exit stay in the outbox: the next instance to start delivers them once their lease runs out",
			"error", err.Error())
	}
}

// loadCatalog reads the providers file, if one is set. An invalid file
// stops the start, with the error naming its line.
func loadCatalog(cfg Config, getenv func(string) string, logger *slog.Logger) (*provider.Catalog, error) {
	if cfg.ProvidersFile == "" {
		logger.Info("no providers file (GATEHOUSE_PROVIDERS_FILE): no models are served")
		return provider.NewCatalog(nil)
	}
	catalog, err := provider.LoadProviders(cfg.ProvidersFile, getenv)
	if err != nil {
		return nil, fmt.Errorf("providers file (GATEHOUSE_PROVIDERS_FILE or --providers): %w", err)
	}
	ids := make([]string, 0, len(catalog.Providers))
	for _, p := range catalog.Providers {
		ids = append(ids, p.ID)
	}
	logger.Info("providers loaded", "file", cfg.ProvidersFile, "providers", len(catalog.Providers),
		"models", len(catalog.Models()), "ids", ids)
	return catalog, nil
}

// writeTimeout bounds the writing of a response. A completion may take as
// long as its provider's timeout, so the bound leaves room for the slowest
// provider.
func writeTimeout(c *provider.Catalog) time.Duration {
	d := 60 * time.Second
	for _, p := range c.Providers {
		for _, m := range p.Models {
			d = max(d, m.CallTimeout(p)+30*time.Second)
		}
	}
	return d
}

// parseFlags parses flags, printing usage for -h.
func parseFlags(fs *flag.FlagSet, args []string) error {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return err
		}
		return usageError{err.Error()}
	}
	if fs.NArg() > 0 {
		return usageError{fmt.Sprintf("unexpected argument %q", fs.Arg(0))}
	}
	return nil
}

// openMode says what a command may do to the database it names.
type openMode struct {
	// serve: the server's open, under the serve lock (see lockServe).
	serve bool
	// existing: only a database that Gatehouse made; nothing is created.
	existing bool
	// secrets: the command reads or writes destination secrets, so it
	// needs the secret key, which is created (in the key file beside a
	// SQLite database) when there is none. Without it the configured key
	// is used when there is one, else a key of the moment that seals
	// nothing: such commands never touch a secret.
	secrets bool
}

// openStore opens the database the configuration names: PostgreSQL for a
// postgres:// URL, else a SQLite file. A key file it created is removed
// when the database does not open.
func openStore(ctx context.Context, cfg Config, logger *slog.Logger, mode openMode) (gatehouse.Store, error) {
	box, created, err := cfg.openBox(mode.secrets)
	if err != nil {
		return nil, err
	}
	if !mode.serve {
		release, err := migrateAlone(ctx, cfg)
		if err != nil {
			return nil, err
		}
		defer release()
	}
	store, err := openStoreWith(ctx, cfg, box, logger, mode.existing)
	if err != nil {
		if created != "" {
			os.Remove(created)
		}
		return nil, err
	}
	if created != "" {
		logger.Info("created secret key file; back it up with the database", "path", created)
	}
	return store, nil
}

// migrateAlone keeps a command from migrating a SQLite database beneath
// the server that serves it: a server of the release before would go on
// with a schema it does not know. When opening the database would apply
// migrations, the command takes the serve lock for the open (so no server
// starts meanwhile), and refuses, naming the server, when a server holds
// it. The returned function releases the lock.
func migrateAlone(ctx context.Context, cfg Config) (func(), error) {
	if cfg.isPostgres() {
		return func() {}, nil // the advisory lock serializes migrations; see the README's Upgrading
	}
	pending, err := sqlite.PendingMigrations(ctx, cfg.DatabaseURL)
	if err != nil || len(pending) == 0 {
		return func() {}, nil // nothing to apply, or not a Gatehouse database: the open says what
	}
	release, holder, err := sqlite.Lock(cfg.DatabaseURL, "gatehouse (applying migrations)")
	if errors.Is(err, sqlite.ErrLocked) {
		return nil, fmt.Errorf("database %s needs migrations of this release (%s), and is %s: upgrade the server first "+
			"(stop it and start this release's gatehouse serve, which applies them), then run this command; nothing was changed",
			cfg.DatabaseURL, strings.Join(pending, ", "), holder)
	}
	return release, err
}

// dbShares divides the connections of the store's database among
// organizations (gatehouse.Shares).
func dbShares(store gatehouse.Store, cfg Config) *gatehouse.Shares {
	conns := 4
	if c, ok := store.(*keycache.Cache); ok {
		store = c.Store
	}
	if c, ok := store.(interface{ ReadConns() int }); ok {
		conns = c.ReadConns()
	}
	return gatehouse.NewShares(conns, cfg.DBShareWait)
}

// openStoreWith opens the database with a given secret box, migrating it
// to this binary's schema (existing: only a database Gatehouse made), and
// logs what it applied.
func openStoreWith(ctx context.Context, cfg Config, box *gatehouse.SecretBox, logger *slog.Logger, existing bool) (gatehouse.Store, error) {
	if cfg.isPostgres() {
		if name, ok := postgres.SystemDatabase(cfg.DatabaseURL); ok {
			logger.Warn("the database URL names PostgreSQL's system database "+name+": Gatehouse's tables would sit beside "+
				"whatever else uses it. Create a database of its own (CREATE DATABASE gatehouse) and name it in the URL",
				"url", redactURL(cfg.DatabaseURL))
		}
		db, err := postgres.Open(ctx, cfg.DatabaseURL, box, postgres.Options{OpTimeout: cfg.DBTimeout, Existing: existing})
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", redactURL(cfg.DatabaseURL), err)
		}
		logger.Info("database opened", "engine", "postgres", "url", redactURL(cfg.DatabaseURL))
		logSchema(logger, db.Schema())
		return db, nil
	}
	open := sqlite.Open
	if existing {
		open = sqlite.OpenExisting
	}
	db, err := open(ctx, cfg.DatabaseURL, box)
	if errors.Is(err, os.ErrNotExist) {
		return nil, errNoDatabase(cfg.DatabaseURL)
	}
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", cfg.DatabaseURL, err)
	}
	db.SetReadTimeout(cfg.DBTimeout) // as PostgreSQL's operation timeout
	logger.Info("database opened", "engine", "sqlite", "path", cfg.DatabaseURL)
	logSchema(logger, db.Schema())
	return db, nil
}

// errNoDatabase is the error of a command that needs an existing SQLite
// database, and is given a path where there is none.
func errNoDatabase(path string) error {
	return fmt.Errorf("open database %s: it does not exist (gatehouse serve and gatehouse orgs create make one; "+
		"set GATEHOUSE_DATABASE_URL or --database to the one the server uses)", path)
}

// logSchema logs the schema version, and the migrations this start
// applied (to a new database: all of them).
func logSchema(logger *slog.Logger, s sqlstore.Schema) {
	switch {
	case len(s.Applied) == 0:
		logger.Info("database schema", "version", s.Version, "migrations", s.Migrations)
	case s.From == "":
		logger.Info("database schema created", "version", s.Version, "migrations", s.Migrations)
	default:
		logger.Info("database schema upgraded", "from", s.From, "version", s.Version, "migrations", s.Migrations, "applied", s.Applied)
	}
}

// redactURL hides the password of a database URL for logs and errors.
func redactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// cacheKeys puts the key and guardrail cache in front of the store. On
// PostgreSQL other instances write too, so the cache follows the
// database's change feed until ctx ends; on SQLite every write goes
// through this process.
func cacheKeys(ctx context.Context, db gatehouse.Store) *keycache.Cache {
	pg, ok := db.(*postgres.DB)
	if !ok {
		return keycache.New(db, keycache.Options{})
	}
	cache := keycache.New(db, keycache.Options{Feed: true})
	go pg.WatchChanges(ctx, cache)
	return cache
}

// newLimiters returns the rate limiter of the API and the buckets of the
// console's failed sign-ins: per-process buckets, or shared buckets in
// Redis when GATEHOUSE_REDIS_URL is set (falling back to per-process
// buckets, with a warning and a metric, while Redis is down). The API's
// is none when its rate is 0; sign-ins are always limited.
func newLimiters(ctx context.Context, cfg Config, logger *slog.Logger, reg *prometheus.Registry) (api ratelimit.Limiter, signIns console.Buckets, closeAll func(), err error) {
	api, signIns = ratelimit.Unlimited{}, console.MemoryBuckets(nil)
	if cfg.RateLimit.RPS > 0 {
		api = ratelimit.NewMemory(cfg.RateLimit, nil)
	}
	if cfg.RedisURL == "" {
		return api, signIns, func() {}, nil
	}
	client, onFallback, err := redisLimiterClient(ctx, cfg, logger, reg)
	if err != nil {
		return nil, nil, nil, err
	}
	if cfg.RateLimit.RPS > 0 {
		api = ratelimit.NewRedis(client, cfg.RateLimit, "gatehouse:ratelimit:", api, onFallback)
	}
	signIns = console.SharedBuckets(client, "gatehouse:signin:", onFallback)
	return api, signIns, func() { client.Close() }, nil
}

// redisLimiterClient connects to the Redis of the rate limits, and returns
// what to call when it does not answer.
func redisLimiterClient(ctx context.Context, cfg Config, logger *slog.Logger, reg *prometheus.Registry) (*redis.Client, func(error), error) {
	opts, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, nil, fmt.Errorf("GATEHOUSE_REDIS_URL: %v (want e.g. redis://127.0.0.1:6379/0)", err)
	}
	opts.DialTimeout, opts.ReadTimeout, opts.WriteTimeout = 250*time.Millisecond, 250*time.Millisecond, 250*time.Millisecond
	opts.MaxRetries = -1 // a slow Redis must not hold requests: fall back instead
	redis.SetLogger(redisLogger{logger})
	client := redis.NewClient(opts)
	fallbacks := prometheus.NewCounter(prometheus.CounterOpts{
		Name: "gatehouse_ratelimit_redis_fallbacks_total",
		Help: "Times Redis could not answer and rate limiting fell back to per-process buckets.",
	})
	reg.MustRegister(fallbacks)
	var lastWarning atomic.Int64
	onFallback := func(err error) {
		fallbacks.Inc()
		if now := time.Now().UnixNano(); now-lastWarning.Load() > int64(10*time.Second) {
			lastWarning.Store(now)
			logger.Warn("redis unavailable: rate limits are per process until it is back", "error", err.Error())
		}
	}
	if err := client.Ping(ctx).Err(); err != nil {
		onFallback(err)
	} else {
		logger.Info("rate limits shared through redis", "addr", opts.Addr)
	}
	return client, onFallback, nil
}

// redisLogger sends the Redis client's own messages to the structured log at
// debug level; the warning that matters is logged by newLimiter, at most
// every ten seconds.
type redisLogger struct{ logger *slog.Logger }

func (l redisLogger) Printf(ctx context.Context, format string, v ...any) {
	l.logger.DebugContext(ctx, "redis client: "+fmt.Sprintf(format, v...))
}

// bootstrap prepares the database for serving, in one transaction: with
// GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY it makes sure that key exists for the
// first organization; otherwise, when there is no organization, it creates
// one with a management key, and returns the banner that shows the key,
// to print once the server answers (nil when there is nothing to show).
func bootstrap(ctx context.Context, cfg Config, store gatehouse.Store, logger *slog.Logger) (func(url string) string, error) {
	b := gatehouse.Bootstrap{OrganizationName: "Default organization", Key: cfg.BootstrapKey,
		KeyName: "Bootstrap management key", Always: cfg.BootstrapKey != ""}
	if b.Key == "" {
		b.Key, b.KeyName = gatehouse.NewKeySecret(true), "First management key"
	}
	got, err := store.Bootstrap(ctx, b)
	if err != nil && cfg.BootstrapKey != "" {
		return nil, fmt.Errorf("GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: %s", gatehouse.ErrorMessage(err))
	}
	if err != nil {
		return nil, fmt.Errorf("create the first organization: %w", err)
	}
	org := got.Organization
	if got.Created {
		logger.Info("created the first organization", "organization_id", org.ID)
	}
	if cfg.BootstrapKey != "" {
		logger.Info("bootstrap management key is present", "organization_id", org.ID, "key_hash", got.Key.Hash)
		return nil, nil
	}
	if got.Key == nil {
		return nil, nil
	}
	return func(url string) string {
		return fmt.Sprintf("\nGatehouse created organization %q (%s) and its first management key,\n"+
			"and serves %s. The key is shown only this once; store it somewhere safe now:\n\n    %s\n\n"+
			"Use it as: Authorization: Bearer <key>, or sign in with it to the web console at %s\n"+
			"More keys: gatehouse mgmt-keys create --org %s\n"+
			"(A lost key is replaced the same way; gatehouse orgs list shows the organizations.)\n\n",
			org.Name, org.ID, url, b.Key, cfg.PublicURL+"/", org.ID)
	}, nil
}

// startMetering starts the metering of this process off the request path
// (meter.Start): the ledger, and what admits requests in memory. The
// returned function writes what is queued, then stops.
func startMetering(ctx context.Context, cfg Config, cache *keycache.Cache, logger *slog.Logger) (httpapi.DataPlane, func(), error) {
	db := cache.Store.(interface {
		meter.Engine
		NewLedger(logger *slog.Logger, written func(keyHashes []string)) *sqlstore.Ledger
	})
	plane, err := meter.Start(ctx, meter.Config{Engine: db, UsageChanged: cache.UsageChanged, Logger: logger,
		SyncCommit: cfg.MeteringCommit == "sync",
		NewWriter:  func(written func([]string)) meter.Writer { return db.NewLedger(logger, written) }})
	if err != nil {
		return httpapi.DataPlane{}, nil, err
	}
	return httpapi.DataPlane{Ledger: plane.Ledger, Accounts: plane.Accounts, Leases: plane.Leases}, plane.Close, nil
}

// pruneEvery is how often the content of generations past the retention is
// deleted, and pruneBatch how much one write deletes.
const (
	pruneEvery = time.Minute
	pruneBatch = 500
)

// closeEvery is how often the last blocks of the long lists are closed
// (sqlstore.CloseListBlocks), and closeAfter how old their rows must be.
const (
	closeEvery = time.Minute
	closeAfter = time.Minute
)

// closeListBlocks places, at start and then every closeEvery, the anchors
// of the long lists (the keys, the audit log, the members) in the rows
// made since, which lets a page deep in them be found by their blocks. Every instance
// does; they close each list one after the other.
func closeListBlocks(ctx context.Context, store gatehouse.Store, logger *slog.Logger) {
	closer, ok := store.(interface {
		CloseListBlocks(ctx context.Context, horizon time.Time, size int) (int, error)
	})
	if !ok {
		return
	}
	t := time.NewTicker(closeEvery)
	defer t.Stop()
	for {
		n, err := closer.CloseListBlocks(ctx, time.Now().Add(-closeAfter), sqlstore.BlockSize)
		if err != nil && ctx.Err() == nil {
			logger.Warn("closing the blocks of the long lists failed; retrying", "error", err.Error())
		}
		if n > 0 {
			logger.Debug("closed blocks of the long lists", "anchors", n)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// pruneContent deletes, at start and then every pruneEvery, the content of
// generations older than the retention (reads refuse it already). Every
// instance prunes; they delete the same rows harmlessly.
func pruneContent(ctx context.Context, store gatehouse.Store, retention time.Duration, logger *slog.Logger) {
	t := time.NewTicker(pruneEvery)
	defer t.Stop()
	for {
		n, err := gatehouse.PruneContent(ctx, store, gatehouse.ContentCutoff(time.Now(), retention), pruneBatch)
		if err != nil && ctx.Err() == nil {
			logger.Warn("deleting the content of generations past the retention failed; retrying", "error", err.Error())
		}
		if n > 0 {
			logger.Info("deleted the content of generations past the retention", "generations", n, "retention", retention.String())
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
