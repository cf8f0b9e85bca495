package console

import (
	"context"
	"log/slog"
	"net/http"
	"time"

	"gatehouse"
	"gatehouse/forwarded"
	"gatehouse/ratelimit"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// The budgets of failed sign-ins. Only failures count: an attempt takes
// its tokens before the password is checked (so that concurrent guesses
// never spend more than a bucket holds) and gives them back when it
// succeeds. No budget is an account's alone: a stranger's failures
// never refuse its owner at another address.
var (
	// SignInPairLimit is what one address (an IPv6 /64) may fail on one
	// account: ten at once, then one every 20 seconds. Past it that
	// address is refused for that account (429).
	SignInPairLimit = ratelimit.Config{RPS: 1.0 / 20, Burst: 10}
	// SignInAddressLimit is what one address may fail over every account,
	// management key and invitation link: 30 at once, then one every 10
	// seconds. Past it the address is refused (429).
	SignInAddressLimit = ratelimit.Config{RPS: 1.0 / 10, Burst: 30}
	// SignInAccountLimit is what all addresses together may fail on one
	// account before it is under attack: 20 at once, then one a minute.
	// Past it nobody is refused, but each address gets the tighter
	// SignInAttackedLimit on that account.
	SignInAccountLimit = ratelimit.Config{RPS: 1.0 / 60, Burst: 20}
	// SignInAttackedLimit is what one address may fail on an account
	// under attack: three, then one every five minutes. An address that
	// has not failed there has its three, so the owner signs in.
	SignInAttackedLimit = ratelimit.Config{RPS: 1.0 / 300, Burst: 3}
	// signInAuditLimit writes the audit entry of a throttled attempt at
	// most once a minute per account and address: refusals cost an
	// attacker nothing, and must not fill the database.
	signInAuditLimit = ratelimit.Config{RPS: 1.0 / 60, Burst: 1}
)

// Buckets makes the limiter of one kind of sign-in budget: name tells the
// kinds apart (the server prefixes their keys with it), cfg is its rate.
// The server makes them in Redis when GATEHOUSE_REDIS_URL is set, so that
// every instance counts the same failures.
type Buckets func(name string, cfg ratelimit.Config) ratelimit.Refunder

// MemoryBuckets makes buckets in this process, on the clock now (nil:
// time.Now).
func MemoryBuckets(now gatehouse.Clock) Buckets {
	return func(_ string, cfg ratelimit.Config) ratelimit.Refunder { return ratelimit.NewMemory(cfg, now) }
}

// SharedBuckets makes buckets in Redis under prefix, shared by every
// instance, each falling back to one in this process while Redis does not
// answer (onFallback hears of it; see ratelimit.NewRedis).
func SharedBuckets(client redis.Scripter, prefix string, onFallback func(error)) Buckets {
	return func(name string, cfg ratelimit.Config) ratelimit.Refunder {
		return ratelimit.NewRedis(client, cfg, prefix+name+":", ratelimit.NewMemory(cfg, nil), onFallback)
	}
}

// NoSignInLimits limits nothing (the benchmarks, and tests that sign in
// often).
func NoSignInLimits(string, ratelimit.Config) ratelimit.Refunder { return ratelimit.Unlimited{} }

// signInLimits are the budgets of failed sign-ins, and what records them:
// metrics, the log, and the audit log of the account's organization.
type signInLimits struct {
	pair, address, account, attacked ratelimit.Refunder
	audited                          ratelimit.Limiter
	store                            gatehouse.AccountService
	logger                           *slog.Logger
	now                              gatehouse.Clock // the buckets' clock, for how long a lock-out lasts
	attempts                         *prometheus.CounterVec
	lockouts                         *prometheus.CounterVec
}

func newSignInLimits(buckets Buckets, store gatehouse.AccountService, logger *slog.Logger, reg prometheus.Registerer, now gatehouse.Clock) *signInLimits {
	if buckets == nil {
		buckets = NoSignInLimits
	}
	l := &signInLimits{
		pair: buckets("pair", SignInPairLimit), address: buckets("address", SignInAddressLimit),
		account: buckets("account", SignInAccountLimit), attacked: buckets("attacked", SignInAttackedLimit),
		audited: buckets("audited", signInAuditLimit), store: store, logger: logger, now: now,
		attempts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_console_signin_attempts_total",
			Help: "Console sign-in attempts, by method (password, key, invitation) and result (success, failure, throttled).",
		}, []string{"method", "result"}),
		lockouts: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "gatehouse_console_signin_lockouts_total",
			Help: "Failed console sign-ins that used up a budget, by scope: pair (an address on one account), address (an address on every account), account (an account under attack: each address gets a tighter budget).",
		}, []string{"scope"}),
	}
	if reg != nil {
		reg.MustRegister(l.attempts, l.lockouts)
	}
	return l
}

// bucket is a budget an attempt took a token from.
type bucket struct {
	limiter ratelimit.Refunder
	cfg     ratelimit.Config
	key     string
	scope   string // the lock-out's metric label
	res     ratelimit.Result
	// enforced: a used-up bucket refuses (the tighter budget only while
	// the account is under attack).
	enforced bool
}

// signInAttempt is one sign-in between its check and its outcome: it holds
// the tokens it took until it knows whether they count.
type signInAttempt struct {
	l       *signInLimits
	ctx     context.Context
	method  string // password, key, invitation
	email   string // "" for a key or a link
	address string
	taken   []bucket
}

// begin takes the attempt's tokens: the address's, and for an account
// (email not "") the account's, the pair's and, when the account is under
// attack, the tighter one. ERATELIMIT when a budget that applies is used
// up; the attempt then holds nothing.
func (l *signInLimits) begin(ctx context.Context, r *http.Request, proxies forwarded.Proxies, method, email string) (*signInAttempt, error) {
	a := &signInAttempt{l: l, ctx: ctx, method: method, email: email, address: proxies.ClientIP(r)}
	addr := forwarded.AddressBucket(a.address)
	account, pair := "", ""
	if email != "" {
		account = gatehouse.SignInBucket(email)
		pair = account + ":" + addr
	}
	if err := a.take(bucket{limiter: l.address, cfg: SignInAddressLimit, key: addr, scope: "address", enforced: true}); err != nil {
		return nil, a.throttled(err, pair)
	}
	if email == "" {
		return a, nil
	}
	underAttack := a.take(bucket{limiter: l.account, cfg: SignInAccountLimit, key: account, scope: "account"}) != nil
	if err := a.take(bucket{limiter: l.pair, cfg: SignInPairLimit, key: pair, scope: "pair", enforced: true}); err != nil {
		return nil, a.throttled(err, pair)
	}
	if err := a.take(bucket{limiter: l.attacked, cfg: SignInAttackedLimit, key: pair, scope: "pair", enforced: underAttack}); err != nil && underAttack {
		return nil, a.throttled(err, pair)
	}
	return a, nil
}

// take takes a token from b, and returns ERATELIMIT when b has none (which
// refuses the attempt when b is enforced). A limiter that fails does not
// stop sign-ins: it is logged.
func (a *signInAttempt) take(b bucket) error {
	res, err := b.limiter.Allow(a.ctx, b.key)
	if err != nil {
		a.l.logger.Warn("sign-in rate limiter failed; attempt allowed", "error", err.Error())
		return nil
	}
	b.res = res
	a.taken = append(a.taken, b)
	if res.Allowed {
		return nil
	}
	secs := max(int64(res.RetryAfter.Seconds()+0.999), 1)
	return &gatehouse.Error{Code: gatehouse.ERATELIMIT,
		Message:  "Too many failed sign-ins from your address. For your account's safety, wait before trying again.",
		Metadata: map[string]any{"retry_after_seconds": secs}}
}

// refund gives back every token the attempt took.
func (a *signInAttempt) refund() {
	for _, b := range a.taken {
		if !b.res.Allowed {
			continue
		}
		if err := b.limiter.Refund(a.ctx, b.key); err != nil {
			a.l.logger.Warn("sign-in rate limiter failed to give a token back", "error", err.Error())
		}
	}
	a.taken = nil
}

// throttled ends a refused attempt: its tokens go back (a refusal is no
// failure), it is counted, and for an account its audit entry is written
// at most once a minute per address (pair names the two).
func (a *signInAttempt) throttled(err error, pair string) error {
	a.refund()
	a.l.attempts.WithLabelValues(a.method, gatehouse.AuditResultThrottled).Inc()
	if pair != "" {
		if res, aerr := a.l.audited.Allow(a.ctx, pair); aerr == nil && res.Allowed {
			a.record(gatehouse.SignInEvent{Email: a.email, Result: gatehouse.AuditResultThrottled, Address: a.address})
		}
	}
	return err
}

// succeeded ends an attempt that signed in: nothing it took counts.
func (a *signInAttempt) succeeded() {
	a.refund()
	a.l.attempts.WithLabelValues(a.method, gatehouse.AuditResultSuccess).Inc()
}

// abandon ends an attempt that could not be checked (the database, say):
// it is no guess, so nothing counts.
func (a *signInAttempt) abandon() { a.refund() }

// failed ends an attempt that failed: its tokens stay spent. The
// enforced budgets it used up, and the account's, are lock-outs: logged,
// counted, and for a password written into the audit log of the account's
// organization with the failure.
func (a *signInAttempt) failed() {
	a.l.attempts.WithLabelValues(a.method, gatehouse.AuditResultFailure).Inc()
	var address, account []gatehouse.SignInLockout
	for _, b := range a.taken {
		if !b.res.Allowed || b.res.Remaining > 0 || (!b.enforced && b.scope != "account") {
			continue
		}
		retry := nextToken(b.cfg, b.res, a.l.now())
		a.l.lockouts.WithLabelValues(b.scope).Inc()
		a.l.logger.Warn("console sign-in lock-out", "scope", b.scope, "method", a.method, "address", a.address,
			"retry_after", retry.Round(time.Second).String())
		switch {
		case b.scope == "account":
			account = append(account, gatehouse.SignInLockout{Scope: gatehouse.SignInLockoutAccount, RetryAfter: retry})
		case len(address) == 0:
			address = append(address, gatehouse.SignInLockout{Scope: gatehouse.SignInLockoutAddress, RetryAfter: retry})
		default:
			address[0].RetryAfter = max(address[0].RetryAfter, retry)
		}
	}
	a.taken = nil
	if a.email != "" {
		a.record(gatehouse.SignInEvent{Email: a.email, Result: gatehouse.AuditResultFailure, Address: a.address,
			Lockouts: append(address, account...)})
	}
}

// record writes ev into the audit log after the answer is on its way: an
// unknown email writes nothing, and a write the answer waited for would
// tell, by its time, which emails are members'.
func (a *signInAttempt) record(ev gatehouse.SignInEvent) {
	ctx := context.WithoutCancel(a.ctx)
	go func() {
		ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
		if err := a.l.store.RecordSignIn(ctx, ev); err != nil {
			a.l.logger.Warn("could not write a refused sign-in into the audit log", "error", err.Error())
		}
	}()
}

// nextToken is how long after now an allowed answer that left no token
// the bucket admits one again.
func nextToken(cfg ratelimit.Config, res ratelimit.Result, now time.Time) time.Duration {
	interval := time.Duration(float64(time.Second) / cfg.RPS)
	return max(res.ResetAt.Sub(now)-time.Duration(cfg.Burst-1)*interval, 0)
}
