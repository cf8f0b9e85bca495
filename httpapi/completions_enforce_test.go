package httpapi_test

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"gatehouse"
)

// guardrail creates a guardrail from body through the API and returns its id.
func (e *chatEnv) guardrail(body map[string]any) string {
	e.t.Helper()
	if body["name"] == nil {
		body["name"] = "guardrail " + gatehouse.NewKeySecret(false)[9:17]
	}
	var out struct {
		Data struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	e.do("POST", "/api/v1/guardrails", e.mgmt, body).want(e.t, http.StatusCreated).decode(e.t, &out)
	return out.Data.ID
}

// assign assigns keys (kind "keys") or members ("members") to a guardrail.
func (e *chatEnv) assign(guardrailID, kind string, ids ...string) {
	e.t.Helper()
	field := map[string]string{"keys": "key_hashes", "members": "member_user_ids"}[kind]
	e.do("POST", "/api/v1/guardrails/"+guardrailID+"/assignments/"+kind, e.mgmt, map[string]any{field: ids}).want(e.t, http.StatusOK)
}

// configureDefault configures the default workspace's default guardrail
// with body and returns its id.
func (e *chatEnv) configureDefault(body map[string]any) string {
	e.t.Helper()
	var ws struct {
		Data struct {
			DefaultGuardrailID string `json:"default_guardrail_id"`
		} `json:"data"`
	}
	e.do("GET", "/api/v1/workspaces/default", e.mgmt, nil).want(e.t, http.StatusOK).decode(e.t, &ws)
	e.do("PATCH", "/api/v1/guardrails/"+ws.Data.DefaultGuardrailID, e.mgmt, body).want(e.t, http.StatusOK)
	return ws.Data.DefaultGuardrailID
}

// wantBlocked checks a refusal by a guardrail: 403 naming the guardrail and the rule.
func wantBlocked(t *testing.T, res *response, guardrailID, rule string) {
	t.Helper()
	res.want(t, http.StatusForbidden)
	got := res.apiError(t)
	if !strings.HasPrefix(got.Message, "Request blocked: ") || got.Metadata["guardrail_id"] != guardrailID ||
		got.Metadata["rule"] != rule || got.Metadata["guardrail_name"] == nil {
		t.Errorf("error %+v, want guardrail %s rule %s", got, guardrailID, rule)
	}
}

func TestChatCompletionGuardrailLists(t *testing.T) {
	t.Parallel()
	// Each case sets up guardrails for the environment's key (created by a
	// member), and returns the guardrail expected to refuse each model ("" = allowed).
	type setup func(e *chatEnv, member string) map[string][2]string // model -> {guardrail, rule}
	for _, c := range []struct {
		name  string
		setup setup
	}{
		{"key allow-list", func(e *chatEnv, _ string) map[string][2]string {
			g := e.guardrail(map[string]any{"allowed_models": []string{"acme/exact"}})
			e.assign(g, "keys", e.hash)
			return map[string][2]string{"acme/chat": {g, "allowed_models"}, "other/mini": {g, "allowed_models"}, "acme/exact": {}}
		}},
		{"key deny-list", func(e *chatEnv, _ string) map[string][2]string {
			g := e.guardrail(map[string]any{"ignored_providers": []string{"acme"}})
			e.assign(g, "keys", e.hash)
			return map[string][2]string{"acme/chat": {g, "ignored_providers"}, "other/mini": {}}
		}},
		{"member allow-list", func(e *chatEnv, member string) map[string][2]string {
			g := e.guardrail(map[string]any{"allowed_providers": []string{"other"}})
			e.assign(g, "members", member)
			return map[string][2]string{"acme/chat": {g, "allowed_providers"}, "other/mini": {}}
		}},
		{"member deny-list", func(e *chatEnv, member string) map[string][2]string {
			g := e.guardrail(map[string]any{"ignored_models": []string{"acme/chat"}})
			e.assign(g, "members", member)
			return map[string][2]string{"acme/chat": {g, "ignored_models"}, "acme/exact": {}}
		}},
		{"workspace default deny-list", func(e *chatEnv, _ string) map[string][2]string {
			g := e.configureDefault(map[string]any{"ignored_models": []string{"acme/chat"}})
			return map[string][2]string{"acme/chat": {g, "ignored_models"}, "acme/exact": {}}
		}},
		{"key and default lists intersect", func(e *chatEnv, _ string) map[string][2]string {
			g := e.guardrail(map[string]any{"allowed_models": []string{"acme/chat", "other/mini"}})
			e.assign(g, "keys", e.hash)
			d := e.configureDefault(map[string]any{"allowed_providers": []string{"other"}})
			return map[string][2]string{"acme/chat": {d, "allowed_providers"}, "acme/exact": {g, "allowed_models"}, "other/mini": {}}
		}},
		{"member and default lists intersect", func(e *chatEnv, member string) map[string][2]string {
			g := e.guardrail(map[string]any{"ignored_providers": []string{"other"}})
			e.assign(g, "members", member)
			d := e.configureDefault(map[string]any{"ignored_models": []string{"acme/exact"}})
			return map[string][2]string{"other/mini": {g, "ignored_providers"}, "acme/exact": {d, "ignored_models"}, "acme/chat": {}}
		}},
		{"the key's guardrail replaces the member's", func(e *chatEnv, member string) map[string][2]string {
			m := e.guardrail(map[string]any{"ignored_models": []string{"acme/chat"}})
			e.assign(m, "members", member)
			k := e.guardrail(map[string]any{"ignored_models": []string{"other/mini"}})
			e.assign(k, "keys", e.hash)
			return map[string][2]string{"acme/chat": {}, "other/mini": {k, "ignored_models"}}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newChatEnv(t, nil, nil)
			member := e.addMember(e.mgmt, "dev@example.com")
			e.hash, e.key = e.createKey(e.mgmt, map[string]any{"name": "dev key", "creator_user_id": member})
			want := c.setup(e, member)
			calls := 0
			for model, w := range want {
				if w[0] == "" {
					e.chat(e.key, chatBody(model)).want(t, http.StatusOK)
					calls++
					continue
				}
				e.unchanged(model, func() { wantBlocked(t, e.chat(e.key, chatBody(model)), w[0], w[1]) })
			}
			if n := len(e.up.requests()); n != calls {
				t.Errorf("the upstream was called %d times, want %d", n, calls)
			}
		})
	}
}

// TestChatCompletionEnforcementOrder: the key first, then the guardrails'
// lists, then the key's limit, then the guardrails' budgets.
func TestChatCompletionEnforcementOrder(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	deny := e.guardrail(map[string]any{"ignored_providers": []string{"acme"}, "limit_usd": 0.05, "reset_interval": "daily"})
	budget := e.guardrail(map[string]any{"limit_usd": 0.05, "reset_interval": "daily"})
	disabledHash, disabled := e.createKey(e.mgmt, map[string]any{"name": "disabled", "limit": 0.05})
	e.do("PATCH", "/api/v1/keys/"+disabledHash, e.mgmt, map[string]any{"disabled": true}).want(t, http.StatusOK)
	listsHash, lists := e.createKey(e.mgmt, map[string]any{"name": "lists", "limit": 0.05})
	limitHash, limit := e.createKey(e.mgmt, map[string]any{"name": "limit", "limit": 0.05, "limit_reset": "monthly"})
	budgetHash, budgetKey := e.createKey(e.mgmt, map[string]any{"name": "budget"})
	e.assign(deny, "keys", disabledHash, listsHash)
	e.assign(budget, "keys", limitHash, budgetHash)
	body := chatBody("acme/exact", "max_tokens", 100) // reserves exactly $0.10

	e.unchanged("refusals", func() {
		e.chat(disabled, body).want(t, http.StatusUnauthorized)
		wantBlocked(t, e.chat(lists, body), deny, "ignored_providers")

		res := e.chat(limit, body).want(t, http.StatusPaymentRequired)
		got := res.apiError(t)
		if !strings.HasPrefix(got.Message, "Key limit exceeded") || got.Metadata["limit_remaining"] != 0.05 ||
			got.Metadata["request_max_cost"] != 0.1 || got.Metadata["limit"] != 0.05 || got.Metadata["limit_reset"] != "monthly" {
			t.Errorf("402 %+v", got)
		}
		res = e.chat(budgetKey, body)
		wantBlocked(t, res, budget, "limit_usd")
		if got := res.apiError(t); got.Metadata["remaining"] != 0.05 || got.Metadata["limit_usd"] != 0.05 {
			t.Errorf("budget 403 %+v", got)
		}
	})
	// Within the budget, the same key goes through.
	e.chat(budgetKey, chatBody("acme/exact", "max_tokens", 50)).want(t, http.StatusOK)
	if n := len(e.up.requests()); n != 1 {
		t.Errorf("the upstream was called %d times, want once", n)
	}
}

// TestChatCompletionMemberBudget: a member's budget is shared by the
// member's keys; a key's own budget counts that key alone.
func TestChatCompletionMemberBudget(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens = 0 }, nil) // answers max_tokens tokens
	member := e.addMember(e.mgmt, "dev@example.com")
	shared := e.guardrail(map[string]any{"limit_usd": 0.2, "reset_interval": "daily"})
	own := e.guardrail(map[string]any{"limit_usd": 0.1, "reset_interval": "weekly"})
	e.assign(shared, "members", member)
	k1Hash, k1 := e.createKey(e.mgmt, map[string]any{"name": "k1", "creator_user_id": member})
	k2Hash, k2 := e.createKey(e.mgmt, map[string]any{"name": "k2", "creator_user_id": member})
	k3Hash, k3 := e.createKey(e.mgmt, map[string]any{"name": "k3", "creator_user_id": member})
	e.assign(own, "keys", k3Hash)
	body := chatBody("acme/exact", "max_tokens", 100)

	e.chat(k1, body).want(t, http.StatusOK)
	e.chat(k2, body).want(t, http.StatusOK)
	wantBlocked(t, e.chat(k1, body), shared, "limit_usd")
	wantBlocked(t, e.chat(k2, body), shared, "limit_usd")
	e.chat(k3, body).want(t, http.StatusOK) // its own budget
	wantBlocked(t, e.chat(k3, body), own, "limit_usd")

	// The next day the member's daily budget is whole again; k3's weekly one is not.
	e.clock.Set(time.Date(2027, 3, 18, 0, 0, 0, 0, time.UTC))
	e.chat(k2, body).want(t, http.StatusOK)
	wantBlocked(t, e.chat(k3, body), own, "limit_usd")
	for hash, want := range map[string]gatehouse.Money{k1Hash: 100_000_000, k2Hash: 200_000_000, k3Hash: 100_000_000} {
		if m := e.money(hash); m.Usage != want {
			t.Errorf("key %s: usage %s, want %s", hash[:8], m.Usage, want)
		}
	}
}

// TestChatCompletionBYOK: BYOK usage is counted apart and counts against
// the key's limit only with include_byok_in_limit.
func TestChatCompletionBYOK(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, map[string]any{"limit": 0.00001})
	e.chat(e.key, chatBody("other/mini")).want(t, http.StatusOK)
	cost := gatehouse.Money(11*1000 + 7*2000) // $1 and $2 per million tokens
	m := e.money(e.hash)
	if m.Usage != 0 || m.BYOKUsage != cost || m.LimitRemaining == nil || *m.LimitRemaining != 10_000 {
		t.Errorf("money %+v, want byok %s", m, cost)
	}
	e.do("PATCH", "/api/v1/keys/"+e.hash, e.mgmt, map[string]any{"include_byok_in_limit": true}).want(t, http.StatusOK)
	e.chat(e.key, chatBody("other/mini")).want(t, http.StatusPaymentRequired)
}

// TestChatCompletionOverspend fires 50 concurrent requests over real HTTP
// at a key with a $1.00 limit. Each costs exactly what it reserves ($0.10:
// acme/exact has free prompts and 100 completion tokens cost $0.10, and the
// upstream answers max_tokens tokens), so exactly 10 succeed and the others
// get 402; the recorded spend is exactly $1.00, in the key's usage and in
// the ledger.
func TestChatCompletionOverspend(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.delay = 0, 20*time.Millisecond },
		map[string]any{"limit": 1, "limit_reset": "daily"})
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	data, _ := json.Marshal(chatBody("acme/exact", "max_tokens", 100))

	const n = 50
	statuses := make([]int, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			req, _ := http.NewRequest("POST", srv.URL+"/api/v1/chat/completions", bytes.NewReader(data))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+e.key)
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			defer res.Body.Close()
			body, _ := io.ReadAll(res.Body)
			statuses[i] = res.StatusCode
			check := httptest.NewRequest("POST", "/api/v1/chat/completions", nil)
			e.checker.check(t, check, res.StatusCode, res.Header, body)
		})
	}
	close(start)
	wg.Wait()
	counts := map[int]int{}
	for _, s := range statuses {
		counts[s]++
	}
	t.Logf("%s: 50 concurrent $0.10 requests against a $1.00 limit: %v", testEngine, counts)
	if counts[http.StatusOK] != 10 || counts[http.StatusPaymentRequired] != 40 {
		t.Errorf("statuses %v, want 10 × 200 and 40 × 402", counts)
	}
	m := e.money(e.hash)
	if m.Usage != gatehouse.USD(1) || m.UsageDaily != gatehouse.USD(1) || m.LimitRemaining == nil || *m.LimitRemaining != 0 {
		t.Errorf("usage %s daily %s remaining %v; want exactly $1 spent", m.Usage, m.UsageDaily, m.LimitRemaining)
	}
	ledger, costs, held := e.ledger(e.hash)
	var sum gatehouse.Money
	for _, c := range costs {
		sum += c
	}
	if len(ledger) != 10 || sum != gatehouse.USD(1) || held != 0 {
		t.Errorf("ledger: %d entries summing to %s, %d reservations; want 10 summing to 1", len(ledger), sum, held)
	}
	if calls := len(e.up.requests()); calls != 10 {
		t.Errorf("the upstream was called %d times, want 10", calls)
	}
}
