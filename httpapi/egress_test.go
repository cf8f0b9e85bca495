package httpapi_test

import (
	"net/http"
	"strings"
	"testing"

	"gatehouse/egress"
	"gatehouse/httpapi"
)

// TestDestinationEgress: a destination that points at the server itself, a
// private network or a cloud metadata service is refused when configured,
// naming the field, and nothing is stored; the operator can open a range.
func TestDestinationEgress(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	webhook := func(url string) map[string]any {
		return map[string]any{"name": "hook", "type": "webhook", "config": map[string]any{"url": url}}
	}
	for _, c := range []struct {
		body  map[string]any
		field string
	}{
		{webhook("http://127.0.0.1:8080/api/v1/keys"), "config.url"},
		{webhook("http://169.254.169.254/latest/meta-data/iam/security-credentials/"), "config.url"},
		{webhook("http://[fd00:ec2::254]/latest/meta-data/"), "config.url"},
		{webhook("http://metadata.google.internal/computeMetadata/v1/"), "config.url"},
		{webhook("http://2852039166/latest/meta-data/"), "config.url"},
		{webhook("http://0x7f.1:6379/"), "config.url"},
		{webhook("http://10.0.0.5/"), "config.url"},
		{webhook("http://localhost:5432/"), "config.url"},
		{map[string]any{"name": "lf", "type": "langfuse", "config": map[string]any{"publicKey": "pk", "secretKey": "sk-0123456789abcdef", "baseUrl": "http://192.168.1.10:3000"}}, "config.baseUrl"},
		{map[string]any{"name": "ch", "type": "clickhouse", "config": map[string]any{"host": "http://[::1]:8123", "database": "d", "username": "u", "password": "p"}}, "config.host"},
	} {
		e.unchanged("egress "+c.field, func() {
			res := e.do("POST", "/api/v1/observability/destinations", e.mgmt, c.body)
			if res.Status != http.StatusBadRequest || !strings.Contains(res.errorMessage(t), c.field) || !strings.Contains(res.errorMessage(t), "GATEHOUSE_EGRESS_ALLOW") {
				t.Errorf("%v: %d %s; want 400 naming %s", c.body["config"], res.Status, res.Body, c.field)
			}
		})
	}
	// An update cannot move a destination there either.
	d := e.createDestination(e.mgmt, webhook("https://hooks.example.com/in"))
	e.do("PATCH", "/api/v1/observability/destinations/"+d["id"].(string), e.mgmt,
		map[string]any{"config": map[string]any{"url": "http://169.254.169.254/"}}).want(t, http.StatusBadRequest)
	// The operator opens a range for a local receiver.
	e.handler.(*httpapi.Server).SetEgressPolicy(egress.MustParse("127.0.0.0/8"))
	e.do("POST", "/api/v1/observability/destinations", e.mgmt, webhook("http://127.0.0.1:3000/hook")).want(t, http.StatusCreated)
	e.do("POST", "/api/v1/observability/destinations", e.mgmt, webhook("http://169.254.169.254/")).want(t, http.StatusBadRequest)
}
