package httpapi_test

import (
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"gatehouse/egress"
	"gatehouse/httpapi"
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
