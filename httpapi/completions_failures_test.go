package httpapi_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/gateway"
	"gatehouse/httpapi"
)

// The providers' failures: passed through with their status in
// OpenRouter's error shape, or 502 / 408; never charged.

func TestChatCompletionUpstreamErrors(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		status        int
		body, ct      string
		wantMessage   string
		wantRawString string // "" when raw must be absent
	}{
		{400, `{"error":{"message":"context too long","type":"invalid_request_error"}}`, "", "context too long", "invalid_request_error"},
		{401, `{"error":{"message":"bad upstream credentials"}}`, "", "bad upstream credentials", "bad upstream credentials"},
		{404, `404 page not found`, "text/plain", "the provider acme answered 404", ""},
		{422, `{"message":"unprocessable"}`, "", "unprocessable", "unprocessable"},
		{429, `{"error":{"message":"slow down","code":"rate_limit"}}`, "", "slow down", "rate_limit"},
		{500, `{"error":{"message":"upstream exploded"}}`, "", "upstream exploded", "exploded"},
		{503, `{"error":{"message":"overloaded"}}`, "", "overloaded", "overloaded"},
		{529, `{"error":{"message":"provider overloaded"}}`, "", "provider overloaded", "provider overloaded"},
	} {
		t.Run(fmt.Sprint(c.status), func(t *testing.T) {
			t.Parallel()
			e := newChatEnv(t, func(u *fakeUpstream) { u.status, u.errBody, u.errType = c.status, c.body, c.ct }, nil)
			for _, stream := range []bool{false, true} {
				res := e.chat(e.key, chatBody("acme/chat", "stream", stream)).want(t, c.status)
				if ct := res.Header.Get("Content-Type"); ct != "application/json" {
					t.Errorf("Content-Type %q", ct)
				}
				got := res.apiError(t)
				if got.Code != c.status || got.Message != c.wantMessage || got.Metadata["provider_name"] != "acme" {
					t.Errorf("stream %v: error %+v", stream, got)
				}
				raw, hasRaw := got.Metadata["raw"]
				switch rawJSON, _ := json.Marshal(raw); {
				case c.wantRawString == "" && hasRaw:
					t.Errorf("raw %s, want none", rawJSON)
				case c.wantRawString != "" && !strings.Contains(string(rawJSON), c.wantRawString):
					t.Errorf("raw %s, want the provider's body %s", rawJSON, c.body)
				}
			}
			e.wantNothingCharged(e.hash)
		})
	}
}

// TestChatCompletionProviderNonsense: an answer that is neither an error
// nor a completion (a status below 400 that is not a success, a success
// that is not JSON) is 502, with the provider named. A status other than
// 2xx is the provider's refusal, and free; a success that is not JSON is
// charged what was reserved, as every failure after the provider received
// the request is (TestProviderReceivedIsCharged).
func TestChatCompletionProviderNonsense(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name        string
		status      int
		body        string
		wantMessage string
		charged     bool
	}{
		{"304", http.StatusNotModified, "", "the provider acme answered 304", false},
		{"200 not JSON", http.StatusOK, "all good", "the provider acme sent an invalid answer: the answer is not a JSON object", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			e := newChatEnv(t, func(u *fakeUpstream) { u.status, u.errBody, u.errType = c.status, c.body, "text/plain" }, nil)
			for _, stream := range []bool{false, true} {
				got := e.chat(e.key, chatBody("acme/chat", "stream", stream)).want(t, http.StatusBadGateway).apiError(t)
				if got.Code != http.StatusBadGateway || !strings.HasPrefix(got.Message, c.wantMessage) || got.Metadata["provider_name"] != "acme" {
					t.Errorf("stream %v: error %+v", stream, got)
				}
			}
			if c.charged {
				e.wantEveryReceivedCallPaid(2, false)
			} else {
				e.wantNothingCharged(e.hash)
			}
		})
	}
}

func TestChatCompletionUnreachable(t *testing.T) {
	t.Parallel()
	gone := httptest.NewServer(http.NotFoundHandler())
	gone.Close()
	e := newEnv(t, withDataPlane(httpapi.DataPlane{Catalog: testCatalog(t, gone.URL, 5*time.Second), Upstream: gateway.NewClient()}))
	ce := &chatEnv{testEnv: e}
	ce.hash, ce.key = e.createKey(e.mgmt, map[string]any{"name": "k", "limit": 1})
	res := ce.chat(ce.key, chatBody("acme/chat")).want(t, http.StatusBadGateway)
	if got := res.apiError(t); got.Metadata["provider_name"] != "acme" || !strings.Contains(got.Message, "could not be reached") {
		t.Errorf("error %+v", got)
	}
	ce.wantNothingCharged(ce.hash)
	if m := ce.money(ce.hash); m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1) {
		t.Errorf("limit_remaining %v", m.LimitRemaining)
	}
	// The log says why, which the client is not told.
	if logs := ce.logs.String(); !strings.Contains(logs, "upstream acme: unreachable") || !strings.Contains(logs, "connection refused") {
		t.Errorf("the log does not say why the provider could not be reached:\n%s", logs)
	}
}

// TestChatCompletionTimeout: a provider that does not answer in time is a
// 408, its call canceled; the provider had the request, so it is charged
// what was reserved.
func TestChatCompletionTimeout(t *testing.T) {
	t.Parallel()
	e := newChatEnvTimeout(t, func(u *fakeUpstream) { u.delay = time.Minute }, map[string]any{"limit": 1}, 200*time.Millisecond)
	for _, stream := range []bool{false, true} {
		start := time.Now()
		res := e.chat(e.key, chatBody("acme/chat", "stream", stream)).want(t, http.StatusRequestTimeout)
		if took := time.Since(start); took > 10*time.Second {
			t.Errorf("the timeout took %s", took)
		}
		if got := res.apiError(t); got.Metadata["provider_name"] != "acme" || !strings.Contains(got.Message, "did not answer") {
			t.Errorf("error %+v", got)
		}
	}
	select {
	case <-e.up.canceled:
	case <-time.After(10 * time.Second):
		t.Error("the upstream call was not canceled")
	}
	e.wantEveryReceivedCallPaid(2, false)
	if m := e.money(e.hash); m.LimitRemaining == nil || *m.LimitRemaining != gatehouse.USD(1)-m.Usage {
		t.Errorf("limit_remaining %v", m.LimitRemaining)
	}
}

// TestChatCompletionProviderText: text from the provider that one engine
// cannot store (NUL) is cleaned, so that the request is still metered, the
// same on both engines.
func TestChatCompletionProviderText(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.answerID, u.finishReason = "chatcmpl-\x00up", "st\x00op" }, nil)
	for _, stream := range []bool{false, true} {
		var answer struct {
			ID string `json:"id"`
		}
		res := e.chat(e.key, chatBody("acme/chat", "stream", stream)).want(t, http.StatusOK)
		if !stream {
			res.decode(t, &answer)
		}
		statuses, _, held := e.ledger(e.hash)
		if len(statuses) == 0 || statuses[len(statuses)-1] != "completed" || held != 0 {
			t.Fatalf("stream %v: ledger %v, %d reservations; the request was not metered", stream, statuses, held)
		}
		if stream {
			continue
		}
		var gen struct {
			Data struct {
				UpstreamID   string `json:"upstream_id"`
				FinishReason string `json:"finish_reason"`
			} `json:"data"`
		}
		e.do("GET", "/api/v1/generation?id="+answer.ID, e.key, nil).want(t, http.StatusOK).decode(t, &gen)
		if gen.Data.UpstreamID != "chatcmpl-up" || gen.Data.FinishReason != "stop" {
			t.Errorf("generation %+v", gen.Data)
		}
	}
	if m := e.money(e.hash); m.Usage != 2*chatCost(11, 7) {
		t.Errorf("usage %s, want %s", m.Usage, 2*chatCost(11, 7))
	}
}

// TestChatCompletionNegativeUsage: a provider reporting negative token
// counts is charged the reservation, never credited.
func TestChatCompletionNegativeUsage(t *testing.T) {
	t.Parallel()
	e := newChatEnv(t, func(u *fakeUpstream) { u.promptTokens, u.completionTokens = -1_000_000, -5 }, nil)
	e.chat(e.key, chatBody("acme/exact", "max_tokens", 100)).want(t, http.StatusOK)
	statuses, costs, _ := e.ledger(e.hash)
	if len(statuses) != 1 || statuses[0] != "partial" || costs[0] != 100_000_000 {
		t.Errorf("ledger %v %v, want one partial entry at the reservation ($0.10)", statuses, costs)
	}
}
