package httpapi_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"gatehouse"
	"gatehouse/httpapi"
)

// TestOrganizationShare: while an organization holds its whole share of
// the database's connections, its next management call waits, then answers
// 503 with Retry-After, naming why; another organization's call answers at
// once meanwhile, and the first's answer once its share frees up.
func TestOrganizationShare(t *testing.T) {
	e := newEnv(t)
	shares := gatehouse.NewShares(4, 50*time.Millisecond)
	e.handler.(*httpapi.Server).SetShares(shares)
	_, otherMgmt := e.newOrg("Org B")
	var held []func()
	for range shares.PerOrganization() {
		release, err := shares.Enter(context.Background(), e.org.ID)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, release)
	}
	req := httptest.NewRequest("GET", "/api/v1/keys", nil)
	req.Header.Set("Authorization", "Bearer "+e.mgmt)
	rec := httptest.NewRecorder()
	e.handler.ServeHTTP(rec, req) // not e.do, which fails every 5xx
	r := &response{Status: rec.Code, Header: rec.Header(), Body: rec.Body.Bytes()}
	e.checker.check(t, req, r.Status, r.Header, r.Body)
	if r.Status != http.StatusServiceUnavailable || r.Header.Get("Retry-After") != "1" ||
		!strings.Contains(string(r.Body), "this organization already has 2 database operations running") {
		t.Fatalf("a call beyond the share: %d Retry-After %q %s", r.Status, r.Header.Get("Retry-After"), r.Body)
	}
	start := time.Now()
	if r := e.do("GET", "/api/v1/keys", otherMgmt, nil); r.Status != http.StatusOK || time.Since(start) > 40*time.Millisecond {
		t.Fatalf("another organization's call: %d after %s %s", r.Status, time.Since(start), r.Body)
	}
	for _, release := range held {
		release()
	}
	if r := e.do("GET", "/api/v1/keys", e.mgmt, nil); r.Status != http.StatusOK {
		t.Fatalf("once the share is free: %d %s", r.Status, r.Body)
	}
}
