package httpapi_test

import (
	"net/http"
	"testing"
)

func TestSmoke(t *testing.T) {
	e := newEnv(t)
	e.do("GET", "/api/v1/key", e.mgmt, nil).want(t, http.StatusOK)
	hash, key := e.createKey(e.mgmt, map[string]any{"name": "k", "limit": 2.5, "limit_reset": "daily"})
	e.do("GET", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/keys", key, nil).want(t, http.StatusForbidden)
	e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, map[string]any{"name": "renamed"}).want(t, http.StatusOK)
	e.do("GET", "/api/v1/workspaces", e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/guardrails", e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/observability/destinations", e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/api/v1/organization/members", e.mgmt, nil).want(t, http.StatusOK)
	e.do("GET", "/healthz", "", nil).want(t, http.StatusOK)
	e.do("GET", "/readyz", "", nil).want(t, http.StatusOK)
	e.do("GET", "/nope", "", nil).want(t, http.StatusNotFound)
	e.do("DELETE", "/api/v1/keys", e.mgmt, nil).want(t, http.StatusMethodNotAllowed)
	e.unchanged("bad patch", func() {
		e.do("PATCH", "/api/v1/keys/"+hash, e.mgmt, `{"limit": "x"}`).want(t, http.StatusBadRequest)
	})
	e.do("DELETE", "/api/v1/keys/"+hash, e.mgmt, nil).want(t, http.StatusOK)
}
