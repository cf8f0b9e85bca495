package console_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/console"
	"gatehouse/egress"
	"gatehouse/forwarded"
	"gatehouse/gateway"
	"gatehouse/httpapi"
	"gatehouse/keycache"
	"gatehouse/meter"
	"gatehouse/observe"
	"gatehouse/provider"
	"gatehouse/ratelimit"
	"gatehouse/sqlite"
	"gatehouse/sqlite/sqlitetest"
	"gatehouse/sqlstore"
	"gatehouse/sso"

	"github.com/prometheus/client_golang/prometheus"
)

// env is a real Gatehouse server as cmd/gatehouse wires it (the API, the
// gateway and the console on one handler) over a fresh SQLite store behind
// the key cache, listening on the loopback. Its clock is the test's; its
// models, fake/echo ($0.001 per prompt token, $0.002 per completion token,
// as in the README's quick start), fake/echo-mini (a fifth of that) and
// fake/echo-pro (five times), are served by cmd/fakellm.
type env struct {
	t      testing.TB
	URL    string
	store  gatehouse.Store
	clock  *clock
	ledger *sqlstore.Ledger
	org    *gatehouse.Organization
	mgmt   string // the plaintext of org's management key
	logs   *syncBuffer
	// fakeLLM is the base URL of the model provider's stand-in.
	fakeLLM string
}

// clock is the time of the env, which tests move.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}

func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// envOptions change what newEnv builds.
type envOptions struct {
	// signIns makes the sign-in budgets on the env's clock.
	signIns func(now gatehouse.Clock) console.Buckets
	proxies forwarded.Proxies
	metrics prometheus.Registerer
	// publisher: a trace publisher over the env's store (its outbox),
	// which may reach the loopback, gives the console delivery status.
	publisher bool
}

// withPublisher delivers traces, and shows delivery status, with a real
// trace publisher that may reach the loopback.
func withPublisher(o *envOptions) { o.publisher = true }

// withSignInLimit limits sign-ins as the server does (console's budgets,
// in memory), on the env's clock: nothing refills while a test runs,
// however slow the machine, unless the test moves the clock.
func withSignInLimit(o *envOptions) {
	o.signIns = console.MemoryBuckets
}

// withSignInBuckets limits sign-ins with these buckets.
func withSignInBuckets(b console.Buckets) func(*envOptions) {
	return func(o *envOptions) { o.signIns = func(gatehouse.Clock) console.Buckets { return b } }
}

// withMetrics registers the console's metrics in reg.
func withMetrics(reg prometheus.Registerer) func(*envOptions) {
	return func(o *envOptions) { o.metrics = reg }
}

// withTrustedLoopback trusts the loopback as a reverse proxy, whose
// X-Forwarded-Proto then counts.
func withTrustedLoopback(o *envOptions) {
	o.proxies = forwarded.Proxies{netip.MustParsePrefix("127.0.0.0/8")}
}

// newEnv starts a server. Its clock starts at the real time, so that the
// browser, which keeps the real one, and the server agree on cookies.
func newEnv(t testing.TB, opts ...func(*envOptions)) *env {
	t.Helper()
	o := envOptions{signIns: func(gatehouse.Clock) console.Buckets { return console.NoSignInLimits }}
	for _, opt := range opts {
		opt(&o)
	}
	c := &clock{t: time.Now().UTC().Truncate(time.Millisecond)}
	box, err := gatehouse.NewSecretBox(gatehouse.NewSecretKey())
	if err != nil {
		t.Fatal(err)
	}
	db, err := sqlite.Open(context.Background(), sqlitetest.Path(t, "gatehouse.db"), box)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	db.Now = c.Now
	store := keycache.New(db, keycache.Options{})
	e := &env{t: t, store: store, clock: c, logs: &syncBuffer{}}
	logger := slog.New(slog.NewJSONHandler(e.logs, nil))
	data := e.dataPlane(db, logger)
	var deliveries gatehouse.DeliveryMonitor
	if o.publisher {
		loopback := egress.MustParse("127.0.0.0/8")
		pub := observe.New(store, nil, logger, observe.Options{Outbox: db, Egress: loopback})
		t.Cleanup(func() {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = pub.Close(ctx)
		})
		data.Traces, deliveries = pub, pub
	}
	api := httpapi.NewHandler(store, ratelimit.Unlimited{}, logger, prometheus.NewRegistry(), c.Now, data)
	api.TrustProxies(o.proxies)
	if o.publisher {
		api.SetEgressPolicy(egress.MustParse("127.0.0.0/8"))
	}
	web := console.New(store, gatehouse.NewAccounts(store, c.Now), o.signIns(c.Now), logger, c.Now, console.Options{Proxies: o.proxies, Destinations: api.Destinations(), Deliveries: deliveries, Router: api.Router(), Metrics: o.metrics,
		// The identity providers of the tests are on the loopback, which
		// GATEHOUSE_EGRESS_ALLOW opens for a server.
		SSO: sso.New(store, sso.NewClient(egress.MustParse("127.0.0.0/8,::1/128")), c.Now)})
	web.Routes(api.Handle)
	api.HandleNotFound(web.NotFound())
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	e.URL = srv.URL
	e.org, err = store.CreateOrganization(context.Background(), "Acme")
	if err != nil {
		t.Fatal(err)
	}
	if _, e.mgmt, err = store.CreateManagementKey(context.Background(), e.org.ID, "first"); err != nil {
		t.Fatal(err)
	}
	return e
}

// dataPlane serves fake/echo from cmd/fakellm, metered as the server does
// on SQLite: a ledger behind the request path, admission in memory.
func (e *env) dataPlane(db *sqlite.DB, logger *slog.Logger) httpapi.DataPlane {
	base := startFakeLLM(e.t)
	e.fakeLLM = base
	catalog, err := provider.NewCatalog([]*provider.Provider{{ID: "fake", BaseURL: base + "/v1", Timeout: 30 * time.Second,
		Models: []*provider.Model{
			{ID: "echo", Name: "Echo", PromptPrice: gatehouse.USD(1000), CompletionPrice: gatehouse.USD(2000), MaxCompletionTokens: 100},
			{ID: "echo-mini", Name: "Echo Mini", PromptPrice: gatehouse.USD(200), CompletionPrice: gatehouse.USD(400), MaxCompletionTokens: 100},
			{ID: "echo-pro", Name: "Echo Pro", PromptPrice: gatehouse.USD(5000), CompletionPrice: gatehouse.USD(10000), MaxCompletionTokens: 100},
		}}})
	if err != nil {
		e.t.Fatal(err)
	}
	cache := e.store.(*keycache.Cache)
	e.ledger = db.NewLedger(logger, func(hashes []string) {
		for _, h := range hashes {
			cache.UsageChanged(h)
		}
	})
	e.t.Cleanup(func() { e.ledger.Close(context.Background()) })
	return httpapi.DataPlane{Catalog: catalog, Upstream: gateway.NewClient(), Ledger: e.ledger,
		Accounts: meter.NewAccountant(db, e.clock.Now)}
}

var fakeLLM struct {
	once sync.Once
	path string
	err  error
}

// startFakeLLM builds cmd/fakellm (once per test binary) and starts it on
// a free loopback port for the test; it returns its base URL.
func startFakeLLM(t testing.TB) string {
	t.Helper()
	fakeLLM.once.Do(func() {
		dir, err := os.MkdirTemp("", "gatehouse-fakellm-")
		if err != nil {
			fakeLLM.err = err
			return
		}
		fakeLLM.path = filepath.Join(dir, "fakellm")
		out, err := exec.Command("go", "build", "-o", fakeLLM.path, "gatehouse/cmd/fakellm").CombinedOutput()
		if err != nil {
			fakeLLM.err = fmt.Errorf("go build cmd/fakellm: %v\n%s", err, out)
		}
	})
	if fakeLLM.err != nil {
		t.Fatal(fakeLLM.err)
	}
	cmd := exec.Command(fakeLLM.path, "--addr", "127.0.0.1:0")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	lines := bufio.NewScanner(stderr)
	for lines.Scan() {
		if _, addr, ok := strings.Cut(lines.Text(), "listening on "); ok {
			go io.Copy(io.Discard, stderr)
			return strings.TrimSuffix(strings.Fields(addr)[0], "/v1")
		}
	}
	t.Fatal("fakellm did not say where it listens")
	return ""
}

// api calls the JSON API with a key and decodes the answer into out (when
// not nil); it returns the status.
func (e *env) api(method, path, key string, body, out any) int {
	e.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			e.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, e.URL+"/api/v1"+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if out != nil && resp.StatusCode < 300 {
		if err := json.Unmarshal(b, out); err != nil {
			e.t.Fatalf("%s %s: %v in %s", method, path, err, b)
		}
	}
	return resp.StatusCode
}

// chat makes a real chat completion of fake/echo through the gateway with
// a key, and waits until the ledger has it. It returns the status.
func (e *env) chat(key, prompt string) int {
	e.t.Helper()
	return e.chatWith(key, "fake/echo", prompt)
}

// chatWith is chat with another model.
func (e *env) chatWith(key, model, prompt string) int {
	e.t.Helper()
	status := e.api("POST", "/chat/completions", key, map[string]any{"model": model,
		"messages": []map[string]string{{"role": "user", "content": prompt}}}, nil)
	if err := e.ledger.Sync(context.Background()); err != nil {
		e.t.Fatal(err)
	}
	return status
}

// member makes a member of the organization with a password, through an
// invitation accepted as the console does; it returns the member.
func (e *env) member(email, role, password string) *gatehouse.Member {
	e.t.Helper()
	ctx := context.Background()
	_, token, err := e.store.CreateInvitation(ctx, e.org.ID, gatehouse.InvitationCreate{Email: email, Role: role})
	if err != nil {
		e.t.Fatal(err)
	}
	m, err := gatehouse.NewAccounts(e.store, e.clock.Now).AcceptInvitation(ctx, token, password)
	if err != nil {
		e.t.Fatal(err)
	}
	return m
}

// syncBuffer is a log that goroutines write together.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
