package httpapi_test

import (
	"bytes"
	"context"
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

// smuggled are chat bodies that Go's decoder and a case-sensitive provider
// could read differently, or that multiply the cost past what is reserved.
// Each asks Gatehouse for 1 token and the provider for many.
var smuggled = []struct {
	name, body, field string
}{
	{"case-folded cap beside the real one", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":1000,"Max_Completion_Tokens":1}`, "Max_Completion_Tokens"},
	{"Unicode-folded cap", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":1000,"max_completion_tokenſ":1}`, "max_completion_tokenſ"},
	{"escaped duplicate cap", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":1000,"max\u005ftokens":1}`, "max_tokens"},
	{"plain duplicate cap", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"max_tokens":1000}`, "max_tokens"},
	{"conflicting caps", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_completion_tokens":1,"max_tokens":1000}`, "max_completion_tokens"},
	{"several completions", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":100,"n":10}`, "n"},
	{"an unknown field the provider may honour", `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":1,"max_output_tokens":1000}`, "max_output_tokens"},
	{"an image part", `{"model":"acme/exact","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}],"max_tokens":1}`, "messages[0].content[0]"},
	{"duplicate message content", `{"model":"acme/exact","messages":[{"role":"user","content":"hi","Content":"a much longer text"}],"max_tokens":1}`, "messages[0].Content"},
}

// TestChatSmugglingRefused: every ambiguous or cost-multiplying body is a
// 400 naming the field, and nothing reaches the provider.
func TestChatSmugglingRefused(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.uncapped = 0, 4096 }, nil)
	for _, c := range smuggled {
		t.Run(c.name, func(t *testing.T) {
			r := e.chatRaw(e.key, c.body)
			if r.Status != http.StatusBadRequest || !strings.Contains(r.errorMessage(t), c.field) {
				t.Errorf("status %d %s; want 400 naming %s", r.Status, r.Body, c.field)
			}
		})
	}
	if n := len(e.up.requests()); n != 0 {
		t.Errorf("the provider was called %d times", n)
	}
}

// TestChatOverspendAdversarial fires 50 concurrent requests at a $1.00
// limit (the key's, or a guardrail budget's), mixing honest requests with
// the smuggled bodies and a provider that bills past the cap. The spend and
// the ledger never pass the limit, and every body the provider received
// carries exactly the reserved cap under both names.
func TestChatOverspendAdversarial(t *testing.T) {
	t.Parallel()
	t.Run("key limit", func(t *testing.T) {
		t.Parallel()
		newChatEnv(t, adversarialUpstream, map[string]any{"limit": 1, "limit_reset": "daily"}).overspend(t)
	})
	t.Run("guardrail budget", func(t *testing.T) {
		t.Parallel()
		e := newChatEnv(t, adversarialUpstream, nil)
		e.assign(e.guardrail(map[string]any{"limit_usd": 1, "reset_interval": "daily"}), "keys", e.hash)
		e.overspend(t)
	})
}

// adversarialUpstream bills like a provider that honours only the exact
// max_tokens, n completions, and 400 tokens past the cap.
func adversarialUpstream(u *fakeUpstream) {
	u.completionTokens, u.uncapped, u.overbill, u.delay = 0, 4096, 400, 20*time.Millisecond
}

// honestChat is a request that asks for exactly 100 tokens.
const honestChat = `{"model":"acme/exact","messages":[{"role":"user","content":"hi"}],"max_tokens":100}`

// chatConcurrently sends n chat completions at once over a real server,
// request i with key(i) and body(i), and returns how many got each status.
func (e *chatEnv) chatConcurrently(t *testing.T, n int, key, body func(i int) string) map[int]int {
	return e.postConcurrently(t, n, "/api/v1/chat/completions", key, body)
}

// postConcurrently is chatConcurrently for the model endpoint at path.
func (e *chatEnv) postConcurrently(t *testing.T, n int, path string, key, body func(i int) string) map[int]int {
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	var wg sync.WaitGroup
	var mu sync.Mutex
	statuses := map[int]int{}
	for i := range n {
		wg.Go(func() {
			req, _ := http.NewRequest("POST", srv.URL+path, strings.NewReader(body(i)))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Authorization", "Bearer "+key(i))
			res, err := srv.Client().Do(req)
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, res.Body)
			res.Body.Close()
			mu.Lock()
			statuses[res.StatusCode]++
			mu.Unlock()
		})
	}
	wg.Wait()
	return statuses
}

func (e *chatEnv) overspend(t *testing.T) {
	e.chatConcurrently(t, 50, func(int) string { return e.key }, func(i int) string {
		if i%2 == 1 {
			return smuggled[(i/2)%len(smuggled)].body
		}
		return honestChat
	})
	m := e.money(e.hash)
	if m.Usage > gatehouse.USD(1) {
		t.Errorf("spent %s of a $1 limit", m.Usage)
	}
	_, costs, _ := e.ledger(e.hash)
	var sum gatehouse.Money
	for _, c := range costs {
		sum += c
	}
	if sum > gatehouse.USD(1) {
		t.Errorf("the ledger holds %s for a $1 limit", sum)
	}
	for _, b := range e.up.requests() {
		if b["max_tokens"] != float64(100) || b["max_completion_tokens"] != float64(100) || b["n"] != nil {
			t.Errorf("the provider received %v, want exactly the reserved cap 100 under both names", b)
		}
	}
}

// TestChatChargeCappedAtReservation: a provider that reports more tokens
// than the cap it was sent is paid no more than the reservation, and the
// anomaly is counted.
func TestChatChargeCappedAtReservation(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.overbill = 0, 900 }, nil)
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 100)).want(t, http.StatusOK)
	if m := e.money(e.hash); m.Usage != gatehouse.Money(gatehouse.NanosPerUSD/10) {
		t.Errorf("charged %s for 1000 tokens reported against a cap of 100 ($0.10 reserved)", m.Usage)
	}
	metrics := string(e.do("GET", "/metrics", "", nil).Body)
	if !strings.Contains(metrics, `gatehouse_provider_anomalies_total{kind="usage_over_reservation",provider="acme"} 1`) {
		t.Errorf("anomaly not counted:\n%s", grepLines(metrics, "anomalies"))
	}
}

// TestChatClientCancelIsMetered: a client that leaves before a whole answer
// arrives still pays for it: the call goes on and is metered from its usage.
func TestChatClientCancelIsMetered(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.completionTokens, u.delay = 0, 300*time.Millisecond }, nil)
	srv := httptest.NewServer(e.handler)
	t.Cleanup(srv.Close)
	// The client leaves once the provider has the request: not before
	// (on a loaded machine admission alone may take a while), nor after.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		for ctx.Err() == nil {
			e.up.mu.Lock()
			n := len(e.up.bodies)
			e.up.mu.Unlock()
			if n > 0 {
				cancel()
				return
			}
			time.Sleep(5 * time.Millisecond)
		}
	}()
	data, _ := json.Marshal(chatBody("acme/exact", "max_tokens", 30))
	req, _ := http.NewRequestWithContext(ctx, "POST", srv.URL+"/api/v1/chat/completions", bytes.NewReader(data))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+e.key)
	if res, err := srv.Client().Do(req); err == nil {
		res.Body.Close()
		t.Fatal("the request was answered before the client left")
	}
	deadline := time.Now().Add(5 * time.Second)
	for e.money(e.hash).Usage != gatehouse.Money(3*gatehouse.NanosPerUSD/100) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if m := e.money(e.hash); m.Usage != gatehouse.Money(3*gatehouse.NanosPerUSD/100) {
		t.Errorf("usage %s after the client left; want the answer's $0.03", m.Usage)
	}
}

func grepLines(s, sub string) string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if strings.Contains(l, sub) {
			out = append(out, l)
		}
	}
	return strings.Join(out, "\n")
}

// chatRaw sends a raw chat completion body.
func (e *chatEnv) chatRaw(key, body string) *response {
	req := httptest.NewRequest("POST", "/api/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer "+key)
	return e.send(req)
}

// TestChatContentPartSpelling: a misspelt field of a text part is named as
// such, while a part of another kind is refused as unpriceable.
func TestChatContentPartSpelling(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, nil, nil)
	for body, want := range map[string]string{
		`{"model":"acme/chat","messages":[{"role":"user","content":[{"Type":"text","text":"hi"}]}]}`:                       "messages[0].content[0].Type",
		`{"model":"acme/chat","messages":[{"role":"user","content":[{"type":"text","text":"a","text":"b"}]}]}`:             "messages[0].content[0].text",
		`{"model":"acme/chat","messages":[{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"x"}}]}]}`: "only text content parts",
	} {
		r := e.chatRaw(e.key, body)
		if r.Status != http.StatusBadRequest || !strings.Contains(r.errorMessage(t), want) {
			t.Errorf("%s: %d %s; want 400 with %q", body, r.Status, r.Body, want)
		}
	}
	e.chatRaw(e.key, `{"model":"acme/chat","messages":[{"role":"user","content":[{"type":"text","text":"hi"}]}]}`).want(t, http.StatusOK)
}

// TestOAuthMintedKeysShareCreatorLimit: keys minted through OAuth from one
// $1 key each get a $1 limit, but together they spend at most the $1: 50
// concurrent requests spread over five minted keys. Before minted keys
// charged their creator, they spent up to $5.
func TestOAuthMintedKeysShareCreatorLimit(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, adversarialUpstream, map[string]any{"limit": 1})
	var minted []string
	for range 5 {
		code := e.createCode(e.key, map[string]any{"callback_url": "https://app.example.com/cb"})
		minted = append(minted, e.exchange(map[string]any{"code": code.ID}).Key)
	}
	statuses := e.chatConcurrently(t, 50, func(i int) string { return minted[i%len(minted)] },
		func(int) string { return honestChat })
	var sum gatehouse.Money
	for _, k := range minted {
		sum += e.money(gatehouse.HashKey(k)).Usage
	}
	if sum > gatehouse.USD(1) || statuses[http.StatusPaymentRequired] == 0 {
		t.Errorf("five keys minted from a $1 key spent %s (statuses %v)", sum, statuses)
	}
	if creator := e.money(e.hash).Usage; creator != sum {
		t.Errorf("the creator's usage is %s, want what its minted keys spent, %s", creator, sum)
	}
}
