package httpapi_test

import (
	"encoding/json"
	"io"
	"maps"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/egress"
	"gatehouse/httpapi"
	"gatehouse/provider"
)

// TestDestinationTestAction: POST /observability/destinations/{id}/test
// sends a test event through the trace publisher and answers what the
// service answered, with the destination's secrets taken out of it; every
// read of a destination carries its delivery status.
func TestDestinationTestAction(t *testing.T) {
	var refuse atomic.Bool
	refuse.Store(true)
	var got atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		got.Store(string(body))
		if refuse.Load() {
			// A service that echoes the credential it refuses.
			http.Error(w, `{"error":"bad token `+r.Header.Get("X-Token")+`"}`, http.StatusUnauthorized)
			return
		}
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte(`{"ok":true}`))
	}))
	t.Cleanup(srv.Close)
	e := newEnv(t, withPublisher("127.0.0.0/8"))
	e.handler.(*httpapi.Server).SetEgressPolicy(egress.MustParse("127.0.0.0/8"))
	d := e.createDestination(e.mgmt, map[string]any{"name": "hook", "type": "webhook", "enabled": false,
		"config": map[string]any{"url": srv.URL + "/in", "headers": map[string]any{"X-Token": "tok-SECRET-0123456789"}}})
	path := "/api/v1/observability/destinations/" + d["id"].(string) + "/test"

	res := resData(t, e.do("POST", path, e.mgmt, nil).want(t, http.StatusOK))
	if res["delivered"] != false || res["status"] != 401.0 || res["error"] == nil {
		t.Errorf("refused test = %v", res)
	}
	if a := res["answer"].(string); strings.Contains(a, "tok-SECRET") || !strings.Contains(a, "bad token ********") {
		t.Errorf("answer %q: want the service's answer with the secret taken out", a)
	}
	if b, _ := got.Load().(string); !strings.Contains(b, `"model":"gatehouse/test"`) || !strings.Contains(b, res["event_id"].(string)) {
		t.Errorf("the service received %s", b)
	}

	refuse.Store(false)
	res = resData(t, e.do("POST", path, e.mgmt, nil).want(t, http.StatusOK))
	if res["delivered"] != true || res["status"] != 202.0 || res["error"] != nil || res["answer"] != `{"ok":true}` {
		t.Errorf("accepted test = %v", res)
	}

	read := resData(t, e.do("GET", "/api/v1/observability/destinations/"+d["id"].(string), e.mgmt, nil).want(t, http.StatusOK))
	if del, ok := read["delivery"].(map[string]any); !ok || del["sent"] != 0.0 || del["last_error"] != nil {
		t.Errorf("delivery = %v: a test event is not a delivery", read["delivery"])
	}
	e.do("POST", "/api/v1/observability/destinations/00000000-0000-4000-8000-000000000000/test", e.mgmt, nil).want(t, http.StatusNotFound)
}

// TestDeliveredTextFollowsIOLogging: a workspace's destinations are sent
// the prompt and completion of exactly the calls whose content it keeps
// (is_observability_io_logging_enabled at io_logging_sampling_rate): none
// while it does not log I/O, and at a sampling rate of one half the same
// generations, in the store and in the deliveries.
func TestDeliveredTextFollowsIOLogging(t *testing.T) {
	type delivered struct {
		ID          string  `json:"id"`
		Output      *string `json:"output"`
		PrivacyMode bool    `json:"privacy_mode"`
	}
	var mu sync.Mutex
	got := map[string]delivered{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var d delivered
		if err := json.NewDecoder(r.Body).Decode(&d); err == nil {
			mu.Lock()
			got[d.ID] = d
			mu.Unlock()
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	t.Cleanup(srv.Close)
	e := newUpstreamEnv(t, nil, nil, func(base string) *provider.Catalog { return testCatalog(t, base, 10*time.Second) },
		withPublisher("127.0.0.0/8"))
	e.handler.(*httpapi.Server).SetEgressPolicy(egress.MustParse("127.0.0.0/8"))
	e.createDestination(e.mgmt, map[string]any{"name": "hook", "type": "webhook", "config": map[string]any{"url": srv.URL + "/in"}})

	call := func() string {
		var answer struct {
			ID string `json:"id"`
		}
		e.chat(e.key, chatBody("acme/chat")).want(t, http.StatusOK).decode(t, &answer)
		return answer.ID
	}
	arrived := func(ids []string) map[string]delivered {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			mu.Lock()
			n := 0
			for _, id := range ids {
				if _, ok := got[id]; ok {
					n++
				}
			}
			out := maps.Clone(got)
			mu.Unlock()
			if n == len(ids) {
				return out
			}
			if time.Now().After(deadline) {
				t.Fatalf("%d of %d deliveries arrived", n, len(ids))
			}
			time.Sleep(20 * time.Millisecond)
		}
	}

	// Off (the default): no text is sent.
	off := []string{call(), call()}
	for _, id := range off {
		if d := arrived(off)[id]; d.Output != nil || !d.PrivacyMode {
			t.Errorf("%s, I/O logging off: output %v, privacy_mode %v", id, d.Output, d.PrivacyMode)
		}
	}

	e.do("PATCH", "/api/v1/workspaces/default", e.mgmt, map[string]any{"is_observability_io_logging_enabled": true,
		"io_logging_sampling_rate": 0.5}).want(t, http.StatusOK)
	var on []string
	for range 16 {
		on = append(on, call())
	}
	deliveries := arrived(on)
	kept := 0
	for _, id := range on {
		d := deliveries[id]
		res := e.contentOf(e.key, id)
		stored := res.Status == http.StatusOK
		if !stored && res.Status != http.StatusNotFound {
			t.Fatalf("content of %s: %d %s", id, res.Status, res.Body)
		}
		if sent := d.Output != nil; sent != stored || sent != gatehouse.IOSampled(id, 0.5) || d.PrivacyMode == sent {
			t.Errorf("%s: text sent %v (privacy_mode %v), content stored %v, sampled %v", id, sent, d.PrivacyMode, stored, gatehouse.IOSampled(id, 0.5))
		}
		if stored {
			kept++
		}
	}
	if kept == 0 || kept == len(on) {
		t.Errorf("%d of %d calls logged at a sampling rate of 0.5", kept, len(on))
	}
}
