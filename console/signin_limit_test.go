package console_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/console"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// signIn posts the password form and returns the status.
func (c *client) signIn(email, password string) int {
	c.t.Helper()
	return c.do("POST", "/sign-in", url.Values{"email": {email}, "password": {password}}, "Origin", c.e.URL).StatusCode
}

// TestSignInAttackDoesNotLockOutOwner: strangers at several addresses
// sending wrong passwords for an account never keep its owner out: the
// owner, at an address that has not failed, may still mistype and then
// sign in. Each attacking address is refused once it used its own budget
// on the account, and once the account is under attack a new address gets
// only a few guesses (so the attack slows down), while the owner's are
// untouched. (Before, one bucket per account answered the owner 429.)
func TestSignInAttackDoesNotLockOutOwner(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, withSignInLimit, withMetrics(reg))
	ada := e.member("ada@example.com", "", "correct horse battery")
	guesses := 0
	for i, attacker := range []string{"127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5", "127.0.0.6"} {
		c := e.clientFrom(attacker)
		// The first two addresses use the account's budget of failures
		// (two pair budgets of 10); the next find it under attack and
		// get the tighter budget of 3.
		budget := console.SignInPairLimit.Burst
		if i >= 2 {
			budget = console.SignInAttackedLimit.Burst
		}
		for n := 0; ; n++ {
			status := c.signIn("ada@example.com", fmt.Sprintf("guess %d from %s", n, attacker))
			if status == http.StatusTooManyRequests {
				if n != budget {
					t.Fatalf("%s: refused after %d wrong passwords, want after %d", attacker, n, budget)
				}
				break
			}
			if status != http.StatusUnauthorized {
				t.Fatalf("%s: guess %d answered %d", attacker, n, status)
			}
			guesses++
		}
		// Refused even with the right password: this address failed.
		if status := c.signIn("ada@example.com", "correct horse battery"); status != http.StatusTooManyRequests {
			t.Fatalf("%s: the right password after its budget answered %d, want 429", attacker, status)
		}
	}
	if want := 2*console.SignInPairLimit.Burst + 3*console.SignInAttackedLimit.Burst; guesses != want {
		t.Errorf("the attack made %d guesses, want %d", guesses, want)
	}
	// The owner, elsewhere, mistypes once and signs in, during the attack.
	owner := e.clientFrom("127.0.0.9")
	if status := owner.signIn("ada@example.com", "correct horse batery"); status != http.StatusUnauthorized {
		t.Fatalf("the owner's typo during the attack answered %d, want 401 (checked, not refused)", status)
	}
	if status := owner.signIn("ada@example.com", "correct horse battery"); status != http.StatusSeeOther {
		t.Fatalf("the owner's right password during the attack answered %d, want 303\n%s", status, owner.page)
	}

	// Every attempt is counted, and the lock-outs.
	for _, c := range []struct {
		labels []string
		want   float64
	}{
		{[]string{"password", "failure"}, float64(guesses + 1)},
		{[]string{"password", "throttled"}, 10},
		{[]string{"password", "success"}, 1},
	} {
		if got := metric(t, reg, "gatehouse_console_signin_attempts_total", c.labels...); got != c.want {
			t.Errorf("attempts %v = %v, want %v", c.labels, got, c.want)
		}
	}
	if got := metric(t, reg, "gatehouse_console_signin_lockouts_total", "pair"); got != 5 {
		t.Errorf("pair lock-outs = %v, want 5 (each attacking address)", got)
	}
	if got := metric(t, reg, "gatehouse_console_signin_lockouts_total", "account"); got != 1 {
		t.Errorf("account lock-outs = %v, want 1 (the attack began)", got)
	}

	// The organization's audit log has the attempts, by a visitor, on
	// ada, with the addresses; and the lock-outs.
	entries := e.waitAudit(func(entries []*gatehouse.AuditEntry) bool {
		return count(entries, gatehouse.OpSessionCreate, gatehouse.AuditResultFailure) == guesses+1 &&
			count(entries, gatehouse.OpSessionCreate, gatehouse.AuditResultThrottled) == 5 &&
			count(entries, gatehouse.OpSessionLockout, gatehouse.AuditResultSuccess) == 6
	})
	scopes := map[string]int{}
	for _, en := range entries {
		if en.ResourceType != gatehouse.ResourceMember || (en.Operation != gatehouse.OpSessionCreate && en.Operation != gatehouse.OpSessionLockout) {
			continue
		}
		if en.ActorSystem == nil || *en.ActorSystem != gatehouse.ActorVisitor || en.ActorKeyHash != nil || en.ActorUserID != nil {
			t.Errorf("%s %s: actor %v %v %v, want the visitor", en.Operation, en.Result, en.ActorSystem, en.ActorKeyHash, en.ActorUserID)
		}
		if len(en.ResourceIDs) != 1 || en.ResourceIDs[0] != ada.ID || !regexp.MustCompile(`^127\.0\.0\.[2-9]$`).MatchString(fmt.Sprint(en.Details["address"])) {
			t.Errorf("%s %s: resources %v, details %v", en.Operation, en.Result, en.ResourceIDs, en.Details)
		}
		if en.Operation == gatehouse.OpSessionLockout {
			scopes[fmt.Sprint(en.Details["scope"])]++
			if secs, _ := en.Details["retry_after_seconds"].(float64); secs < 1 {
				t.Errorf("a lock-out without its length: %v", en.Details)
			}
		}
	}
	if scopes[gatehouse.SignInLockoutAddress] != 5 || scopes[gatehouse.SignInLockoutAccount] != 1 {
		t.Errorf("lock-out scopes %v, want 5 address and 1 account", scopes)
	}
}

// TestSignInCountsFailuresOnly: a member who signs in correctly, again and
// again from one address, is never throttled: only failures count. (Before,
// the eleventh sign-in answered 429.)
func TestSignInCountsFailuresOnly(t *testing.T) {
	e := newEnv(t, withSignInLimit)
	e.member("ada@example.com", "", "correct horse battery")
	c := e.clientFrom("127.0.0.2")
	for i := range 3 * console.SignInPairLimit.Burst {
		if status := c.signIn("ada@example.com", "correct horse battery"); status != http.StatusSeeOther {
			t.Fatalf("sign-in %d answered %d, want 303", i, status)
		}
	}
	for i := range 3 * console.SignInPairLimit.Burst {
		resp := c.do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", e.URL)
		if resp.StatusCode != http.StatusSeeOther {
			t.Fatalf("key sign-in %d answered %d, want 303", i, resp.StatusCode)
		}
	}
}

// TestSignInConcurrentGuesses: guesses sent all at once never get more
// checks than the budget: each takes its token before the password is
// checked.
func TestSignInConcurrentGuesses(t *testing.T) {
	e := newEnv(t, withSignInLimit)
	e.member("ada@example.com", "", "correct horse battery")
	statuses := make([]int, 3*console.SignInPairLimit.Burst)
	var wg sync.WaitGroup
	for i := range statuses {
		wg.Go(func() { statuses[i] = e.clientFrom("127.0.0.2").signIn("ada@example.com", fmt.Sprint("guess ", i)) })
	}
	wg.Wait()
	checked := 0
	for _, s := range statuses {
		switch s {
		case http.StatusUnauthorized:
			checked++
		case http.StatusTooManyRequests:
		default:
			t.Fatalf("a guess answered %d", s)
		}
	}
	if checked != console.SignInPairLimit.Burst {
		t.Errorf("%d concurrent guesses were checked, want the budget, %d", checked, console.SignInPairLimit.Burst)
	}
}

// TestSignInIPv6Prefix: behind a trusted proxy, the addresses of one IPv6
// /64 share a budget (one subscriber holds it whole), while another /64,
// the owner's, is untouched.
func TestSignInIPv6Prefix(t *testing.T) {
	e := newEnv(t, withSignInLimit, withTrustedLoopback)
	e.member("ada@example.com", "", "correct horse battery")
	c := e.client()
	from := func(addr, password string) int {
		return c.do("POST", "/sign-in", url.Values{"email": {"ada@example.com"}, "password": {password}},
			"Origin", e.URL, "X-Forwarded-For", addr).StatusCode
	}
	for i := range console.SignInPairLimit.Burst {
		if status := from(fmt.Sprintf("2001:db8:1:2::%x", i+1), "guess"); status != http.StatusUnauthorized {
			t.Fatalf("guess %d answered %d", i, status)
		}
	}
	if status := from("2001:db8:1:2:ffff::1", "correct horse battery"); status != http.StatusTooManyRequests {
		t.Errorf("another address of the attacking /64 answered %d, want 429", status)
	}
	if status := from("2001:db8:1:3::1", "correct horse battery"); status != http.StatusSeeOther {
		t.Errorf("the owner in another /64 answered %d, want 303", status)
	}
}

// TestSignInOtherFormsLimited: wrong management keys and guessed invitation
// links count against the address (then 429 even for the right key), and
// never against another address.
func TestSignInOtherFormsLimited(t *testing.T) {
	e := newEnv(t, withSignInLimit)
	c := e.clientFrom("127.0.0.2")
	for i := range console.SignInAddressLimit.Burst {
		path, form := "/sign-in/key", url.Values{"key": {"sk-gh-mgmt-v1-" + fmt.Sprint(i)}}
		want := http.StatusUnauthorized
		if i%2 == 1 {
			path, form, want = "/invite/"+gatehouse.NewAccountToken(), url.Values{"password": {"long enough password"}, "password_again": {"long enough password"}}, http.StatusNotFound
		}
		if resp := c.do("POST", path, form, "Origin", e.URL); resp.StatusCode != want {
			t.Fatalf("guess %d (%s) answered %d, want %d", i, path, resp.StatusCode, want)
		}
	}
	resp := c.do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", e.URL)
	c.wantStatus(resp, http.StatusTooManyRequests)
	resp = c.do("POST", "/invite/"+gatehouse.NewAccountToken(), url.Values{"password": {"x"}}, "Origin", e.URL)
	c.wantStatus(resp, http.StatusTooManyRequests)
	other := e.clientFrom("127.0.0.3")
	other.wantStatus(other.do("POST", "/sign-in/key", url.Values{"key": {e.mgmt}}, "Origin", e.URL), http.StatusSeeOther)
}

// TestSignInNoOracle: the answers to a known and an unknown email are the
// same, throttled or not, and the unknown email leaves nothing in the audit
// log; the known one's entries are written after the answer.
func TestSignInNoOracle(t *testing.T) {
	e := newEnv(t, withSignInLimit)
	e.member("ada@example.com", "", "correct horse battery")
	csrf := regexp.MustCompile(`name="csrf" value="[^"]+"`)
	pages := map[string][]string{}
	for _, email := range []string{"ada@example.com", "nobody@example.com"} {
		c := e.clientFrom("127.0.0.2")
		for i := 0; i <= console.SignInPairLimit.Burst; i++ {
			resp := c.do("POST", "/sign-in", url.Values{"email": {email}, "password": {"wrong password"}}, "Origin", e.URL)
			// (the wait said may be a second shorter for the second
			// email: the budgets refill meanwhile)
			page := strings.ReplaceAll(csrf.ReplaceAllString(c.page, ""), email, "EMAIL")
			page = regexp.MustCompile(`Try again in \d+s`).ReplaceAllString(page, "Try again in Ns")
			pages[email] = append(pages[email], fmt.Sprint(resp.StatusCode, " ", resp.Header.Get("Retry-After") != "", " ", page))
		}
	}
	for i := range pages["ada@example.com"] {
		known, unknown := pages["ada@example.com"][i], pages["nobody@example.com"][i]
		if known != unknown {
			t.Fatalf("attempt %d: a member's email and an unknown one were answered differently:\n%s\n---\n%s", i, known, unknown)
		}
	}
	e.waitAudit(func(entries []*gatehouse.AuditEntry) bool {
		return count(entries, gatehouse.OpSessionCreate, gatehouse.AuditResultFailure) == console.SignInPairLimit.Burst &&
			count(entries, gatehouse.OpSessionCreate, gatehouse.AuditResultThrottled) == 1
	})
}

// TestSignInLimitsSharedThroughRedis: two servers whose buckets are in one
// Redis count the same failures: an address refused by one is refused by
// the other, and the owner elsewhere signs in on both.
func TestSignInLimitsSharedThroughRedis(t *testing.T) {
	u := os.Getenv("GATEHOUSE_TEST_REDIS_URL")
	if u == "" {
		t.Skip("GATEHOUSE_TEST_REDIS_URL is not set: skipping the Redis tests (set it to e.g. redis://127.0.0.1:6379/0)")
	}
	opts, err := redis.ParseURL(u)
	if err != nil {
		t.Fatal(err)
	}
	client := redis.NewClient(opts)
	t.Cleanup(func() { client.Close() })
	b := make([]byte, 6)
	rand.Read(b)
	prefix := "gatehouse-test:" + hex.EncodeToString(b) + ":"
	t.Cleanup(func() {
		if keys, err := client.Keys(context.Background(), prefix+"*").Result(); err == nil && len(keys) > 0 {
			client.Del(context.Background(), keys...)
		}
	})
	buckets := console.SharedBuckets(client, prefix, func(err error) { t.Errorf("redis fell back: %v", err) })
	one, two := newEnv(t, withSignInBuckets(buckets)), newEnv(t, withSignInBuckets(buckets))
	one.member("ada@example.com", "", "correct horse battery")
	two.member("ada@example.com", "", "correct horse battery")
	// Redis keeps the time: a slow machine may see a token come back
	// (one every 20 s) while it guesses.
	start, guesses := time.Now(), 0
	for ; ; guesses++ {
		status := []*env{one, two}[guesses%2].clientFrom("127.0.0.2").signIn("ada@example.com", "guess")
		if status == http.StatusTooManyRequests {
			break
		}
		if status != http.StatusUnauthorized || guesses > 2*console.SignInPairLimit.Burst {
			t.Fatalf("guess %d answered %d", guesses, status)
		}
	}
	refilled := int(time.Since(start) / (20 * time.Second))
	if guesses < console.SignInPairLimit.Burst || guesses > console.SignInPairLimit.Burst+refilled+1 {
		t.Errorf("the two instances took %d guesses in %v, want their shared budget, %d", guesses, time.Since(start), console.SignInPairLimit.Burst)
	}
	for _, e := range []*env{one, two} {
		if status := e.clientFrom("127.0.0.2").signIn("ada@example.com", "correct horse battery"); status != http.StatusTooManyRequests {
			t.Errorf("the attacking address answered %d, want 429 on every instance", status)
		}
		if status := e.clientFrom("127.0.0.3").signIn("ada@example.com", "correct horse battery"); status != http.StatusSeeOther {
			t.Errorf("the owner answered %d, want 303 on every instance", status)
		}
	}
}

// metric returns the value of a counter registered in reg with these
// label values (in the order of their names), 0 when it has none.
func metric(t *testing.T, reg *prometheus.Registry, name string, labels ...string) float64 {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			match := len(m.GetLabel()) == len(labels)
			for i, l := range m.GetLabel() {
				match = match && l.GetValue() == labels[i]
			}
			if match {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// waitAudit waits until the organization's audit log satisfies done (the
// entries of refused sign-ins are written after the answer), and returns
// it.
func (e *env) waitAudit(done func([]*gatehouse.AuditEntry) bool) []*gatehouse.AuditEntry {
	e.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		entries, _, err := e.store.FindAuditEntries(context.Background(), e.org.ID, gatehouse.AuditFilter{Page: gatehouse.Page{Limit: 1000}})
		if err != nil {
			e.t.Fatal(err)
		}
		if done(entries) {
			return entries
		}
		if time.Now().After(deadline) {
			summary := map[string]int{}
			for _, en := range entries {
				summary[en.Operation+" "+en.Result]++
			}
			e.t.Fatalf("the audit log does not have what it should: %v", summary)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// count counts the entries of an operation with a result.
func count(entries []*gatehouse.AuditEntry, op, result string) int {
	n := 0
	for _, en := range entries {
		if en.Operation == op && en.Result == result {
			n++
		}
	}
	return n
}
