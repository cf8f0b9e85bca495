package httpapi_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
)

// createDestination creates a destination and returns it.
func (e *testEnv) createDestination(key string, body map[string]any) map[string]any {
	e.t.Helper()
	return resData(e.t, e.do("POST", "/api/v1/observability/destinations", key, body).want(e.t, http.StatusCreated))
}

const destinationFields = `id workspace_id name type config enabled privacy_mode sampling_rate api_key_hashes
	filter_rules regions broadcast_generation_cost broadcast_generation_identity broadcast_generation_request_context
	created_at updated_at delivery`

// resMasked is how a secret must look in a response: asterisks and at most
// its last four characters, and nothing of it when it is shorter than 16.
func resMasked(t testing.TB, field, secret string, got any) {
	t.Helper()
	s, ok := got.(string)
	if !ok {
		t.Errorf("%s = %v, want a masked string", field, got)
		return
	}
	if r := []rune(secret); len(r) >= 16 {
		if want := "********" + string(r[len(r)-4:]); s != want {
			t.Errorf("%s = %q, want %q", field, s, want)
		}
		return
	}
	if s != "********" {
		t.Errorf("%s = %q: a secret shorter than 16 characters must be fully masked", field, s)
	}
}

// resMaskedWhole checks a header value: masked whole, however long.
func resMaskedWhole(t testing.TB, field string, got any) {
	t.Helper()
	if got != "********" {
		t.Errorf("%s = %v: header values must be masked whole", field, got)
	}
}

// storedConfig returns the plaintext configuration of a destination, as
// the store holds it.
func (e *testEnv) storedConfig(id string) gatehouse.DestinationConfig {
	e.t.Helper()
	d, err := e.db.FindDestination(context.Background(), e.org.ID, id)
	if err != nil {
		e.t.Fatalf("FindDestination: %v", err)
	}
	return d.Config
}

// resDestinationTypes gives a valid configuration for every type: plain
// values, and secrets (which responses mask).
var resDestinationTypes = []struct {
	typ     string
	plain   map[string]string
	secrets map[string]string
}{
	{"arize", map[string]string{"spaceKey": "space-1", "modelId": "model-1"}, map[string]string{"apiKey": "arize-api-key-0123456789"}},
	{"braintrust", map[string]string{"projectId": "proj-1", "baseUrl": "https://bt.example.com"}, map[string]string{"apiKey": "bt-key-0123456789abcdef"}},
	{"clickhouse", map[string]string{"host": "https://ch.example.com:8443", "database": "db", "username": "u", "table": "t"}, map[string]string{"password": "ch-password-0123456789"}},
	{"datadog", map[string]string{"mlApp": "app", "url": "https://api.datadoghq.eu"}, map[string]string{"apiKey": "dd-api-key-0123456789"}},
	{"grafana", map[string]string{"instanceId": "123456"}, map[string]string{"apiKey": "glc_0123456789abcdef"}},
	{"langfuse", map[string]string{"publicKey": "pk-lf-0123456789abcdef"}, map[string]string{"secretKey": "sk-lf-0123456789abcdef"}},
	{"langsmith", map[string]string{"project": "p", "workspaceId": "ws-1"}, map[string]string{"apiKey": "lsv2_pt_0123456789abcdef"}},
	{"newrelic", map[string]string{"region": "eu"}, map[string]string{"licenseKey": "eu01xx0123456789abcdefNRAL"}},
	{"opik", map[string]string{"projectName": "p", "workspace": "w"}, map[string]string{"apiKey": "opik-0123456789abcdef"}},
	{"otel-collector", map[string]string{"endpoint": "http://collector.internal:4318/v1/traces"}, map[string]string{}},
	{"posthog", map[string]string{"endpoint": "https://eu.i.posthog.com"}, map[string]string{"apiKey": "phc_0123456789abcdef"}},
	{"ramp", map[string]string{}, map[string]string{"apiKey": "ramp-0123456789abcdef"}},
	{"s3", map[string]string{"accessKeyId": "AKIAEXAMPLE", "bucketName": "traces", "region": "eu-west-1", "endpoint": "https://s3.example.com", "prefix": "p", "pathTemplate": "{prefix}/{date}/x"},
		map[string]string{"secretAccessKey": "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "sessionToken": "short"}},
	{"sentry", map[string]string{"otlpEndpoint": "https://o1.ingest.sentry.io/api/1/otlp"}, map[string]string{"dsn": "https://abcdef0123456789@o1.ingest.sentry.io/42"}},
	{"snowflake", map[string]string{"account": "acct-1", "warehouse": "WH"}, map[string]string{"token": "snowflake-token-0123456789"}},
	{"weave", map[string]string{"entity": "e", "project": "p"}, map[string]string{"apiKey": "weave-0123456789abcdef"}},
	{"webhook", map[string]string{"url": "https://example.com/hook", "method": "PUT"}, map[string]string{}},
}

func TestDestinationCreate(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	def := e.workspace(e.mgmt, "default")["id"].(string)

	for _, tt := range resDestinationTypes {
		t.Run(tt.typ, func(t *testing.T) {
			e := e.sub(t)
			config := map[string]any{}
			for k, v := range tt.plain {
				config[k] = v
			}
			for k, v := range tt.secrets {
				config[k] = v
			}
			config["headers"] = map[string]any{"Authorization": "Bearer hdr-0123456789abcdef", "X-Short": "abc"}
			d := e.createDestination(e.mgmt, map[string]any{"name": tt.typ + " sink", "type": tt.typ, "config": config})
			resWantFields(t, "destination", d, destinationFields)
			want := map[string]any{
				"id": d["id"], "workspace_id": def, "name": tt.typ + " sink", "type": tt.typ, "config": d["config"],
				"enabled": true, "privacy_mode": false, "sampling_rate": 1.0, "api_key_hashes": nil, "filter_rules": nil,
				"regions": []any{"global"}, "broadcast_generation_cost": false, "broadcast_generation_identity": false,
				"broadcast_generation_request_context": false, "created_at": e.now(), "updated_at": e.now(),
				"delivery": map[string]any{"sent": 0.0, "failed": 0.0, "dropped": 0.0, "last_success_at": nil, "last_error_at": nil, "last_error": nil},
			}
			if diff := cmp.Diff(want, d); diff != "" {
				t.Errorf("created (-want +got):\n%s", diff)
			}
			checkConfig := func(what string, d map[string]any) {
				t.Helper()
				cfg := d["config"].(map[string]any)
				for k, v := range tt.plain {
					if cfg[k] != v {
						t.Errorf("%s: config.%s = %v, want %q", what, k, cfg[k], v)
					}
				}
				for k, v := range tt.secrets {
					resMasked(t, what+": config."+k, v, cfg[k])
				}
				h, _ := cfg["headers"].(map[string]any)
				resMaskedWhole(t, what+": config.headers.Authorization", h["Authorization"])
				resMaskedWhole(t, what+": config.headers.X-Short", h["X-Short"])
				if body := fmt.Sprint(d); strings.Contains(body, "0123456789abcdef") && tt.typ != "langfuse" {
					t.Errorf("%s: a secret shows in %s", what, body)
				}
			}
			checkConfig("create", d)
			id := d["id"].(string)
			got := resData(t, e.do("GET", "/api/v1/observability/destinations/"+id, e.mgmt, nil).want(t, http.StatusOK))
			if diff := cmp.Diff(d, got); diff != "" {
				t.Errorf("GET (-want +got):\n%s", diff)
			}
			checkConfig("get", got)
			// The store holds the plaintext.
			stored := e.storedConfig(id)
			for k, v := range tt.secrets {
				if stored.Values[k] != v {
					t.Errorf("stored config.%s = %q, want the plaintext", k, stored.Values[k])
				}
			}
			if stored.Headers["Authorization"] != "Bearer hdr-0123456789abcdef" {
				t.Errorf("stored header = %q", stored.Headers["Authorization"])
			}
		})
	}

	t.Run("list masks secrets", func(t *testing.T) {
		e := e.sub(t)
		r := e.do("GET", "/api/v1/observability/destinations?limit=100", e.mgmt, nil).want(t, http.StatusOK)
		items, total := resList(t, r)
		if total != len(resDestinationTypes) {
			t.Errorf("total_count %d, want %d", total, len(resDestinationTypes))
		}
		for _, tt := range resDestinationTypes {
			for k, v := range tt.secrets {
				if strings.Contains(string(r.Body), v) {
					t.Errorf("list shows the plaintext of %s config.%s", tt.typ, k)
				}
			}
		}
		for _, it := range items {
			h := it["config"].(map[string]any)["headers"].(map[string]any)
			resMaskedWhole(t, "list: headers.Authorization", h["Authorization"])
		}
	})

	t.Run("defaults filled", func(t *testing.T) {
		e := e.sub(t)
		d := e.createDestination(e.mgmt, map[string]any{"name": "hook", "type": "webhook",
			"config": map[string]any{"url": "https://example.com/a"}})
		if diff := cmp.Diff(map[string]any{"url": "https://example.com/a", "method": "POST"}, d["config"]); diff != "" {
			t.Errorf("webhook config (-want +got):\n%s", diff)
		}
		d = e.createDestination(e.mgmt, map[string]any{"name": "lf", "type": "langfuse",
			"config": map[string]any{"publicKey": "pk", "secretKey": "sk"}})
		if cfg := d["config"].(map[string]any); cfg["baseUrl"] != "https://us.cloud.langfuse.com" || cfg["publicKey"] != "pk" {
			t.Errorf("langfuse config = %v", cfg)
		}
	})

	t.Run("every field", func(t *testing.T) {
		e := e.sub(t)
		team := e.createWorkspace(e.mgmt, "team")
		k, _ := e.createKey(e.mgmt, map[string]any{"name": "k"})
		rules := map[string]any{"enabled": false, "groups": []any{
			map[string]any{"logic": "or", "rules": []any{
				map[string]any{"field": "model", "operator": "starts_with", "value": "openai/"},
				map[string]any{"field": "total_cost", "operator": "gt", "value": 0.5},
				map[string]any{"field": "user_id", "operator": "exists"},
			}},
		}}
		body := map[string]any{
			"name": "everything", "type": "webhook", "workspace_id": team,
			"config":  map[string]any{"url": "https://hooks.example.com/hook"},
			"enabled": false, "privacy_mode": true, "sampling_rate": 0.0001, "api_key_hashes": []any{k},
			"filter_rules": rules, "regions": []any{"eu", "us"},
			"broadcast_generation_cost": true, "broadcast_generation_identity": true, "broadcast_generation_request_context": true,
		}
		d := e.createDestination(e.mgmt, body)
		want := resCopy(body)
		want["id"], want["created_at"], want["updated_at"] = d["id"], e.now(), e.now()
		want["config"] = map[string]any{"url": "https://hooks.example.com/hook", "method": "POST"}
		want["regions"] = []any{"europe", "us"}
		want["delivery"] = map[string]any{"sent": 0.0, "failed": 0.0, "dropped": 0.0, "last_success_at": nil, "last_error_at": nil, "last_error": nil}
		if diff := cmp.Diff(want, d); diff != "" {
			t.Errorf("created (-want +got):\n%s", diff)
		}
		items, total := resList(t, e.do("GET", "/api/v1/observability/destinations?workspace_id="+team, e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff([]map[string]any{d}, items); diff != "" || total != 1 {
			t.Errorf("team list (total %d, want 1) (-want +got):\n%s", total, diff)
		}
	})

	t.Run("filter rule defaults", func(t *testing.T) {
		e := e.sub(t)
		d := e.createDestination(e.mgmt, map[string]any{"name": "f", "type": "otel-collector",
			"config": map[string]any{"endpoint": "https://otel.example.com"},
			"filter_rules": map[string]any{"groups": []any{map[string]any{"rules": []any{
				map[string]any{"field": "provider", "operator": "equals", "value": "openai"}}}}}})
		want := map[string]any{"enabled": true, "groups": []any{map[string]any{"logic": "and", "rules": []any{
			map[string]any{"field": "provider", "operator": "equals", "value": "openai"}}}}}
		if diff := cmp.Diff(want, d["filter_rules"]); diff != "" {
			t.Errorf("filter_rules (-want +got):\n%s", diff)
		}
	})

	t.Run("refused", func(t *testing.T) {
		e := e.sub(t)
		hook := func(extra map[string]any) map[string]any {
			b := map[string]any{"name": "x", "type": "webhook", "config": map[string]any{"url": "https://example.com"}}
			for k, v := range extra {
				b[k] = v
			}
			return b
		}
		rule := func(r map[string]any) map[string]any {
			return map[string]any{"groups": []any{map[string]any{"rules": []any{r}}}}
		}
		for _, c := range []struct {
			name  string
			body  map[string]any
			field string
		}{
			{"unknown config key", hook(map[string]any{"config": map[string]any{"url": "https://e.com", "bogus": "x"}}), "config.bogus"},
			{"key of another type", hook(map[string]any{"config": map[string]any{"url": "https://e.com", "apiKey": "x"}}), "config.apiKey"},
			{"missing required", map[string]any{"name": "x", "type": "langfuse", "config": map[string]any{"publicKey": "pk"}}, "config.secretKey"},
			{"blank required", map[string]any{"name": "x", "type": "datadog", "config": map[string]any{"apiKey": " ", "mlApp": "a"}}, "config.apiKey"},
			{"empty config", hook(map[string]any{"config": map[string]any{}}), "config.url"},
			{"ftp url", hook(map[string]any{"config": map[string]any{"url": "ftp://example.com/x"}}), "config.url"},
			{"relative url", hook(map[string]any{"config": map[string]any{"url": "example.com/hook"}}), "config.url"},
			{"javascript url", hook(map[string]any{"config": map[string]any{"url": "javascript:alert(1)"}}), "config.url"},
			{"bad endpoint", map[string]any{"name": "x", "type": "otel-collector", "config": map[string]any{"endpoint": "collector:4318"}}, "config.endpoint"},
			{"bad method", hook(map[string]any{"config": map[string]any{"url": "https://e.com", "method": "GET"}}), "config.method"},
			{"bad newrelic region", map[string]any{"name": "x", "type": "newrelic", "config": map[string]any{"licenseKey": "k", "region": "ap"}}, "config.region"},
			{"bad header name", hook(map[string]any{"config": map[string]any{"url": "https://e.com", "headers": map[string]any{"Bad Header": "x"}}}), "config.headers"},
			{"header line break", hook(map[string]any{"config": map[string]any{"url": "https://e.com", "headers": map[string]any{"X-A": "a\r\nb"}}}), "config.headers.X-A"},
			{"unknown type", map[string]any{"name": "x", "type": "splunk", "config": map[string]any{}}, "type"},
			{"no type", map[string]any{"name": "x", "config": map[string]any{"url": "https://e.com"}}, "type"},
			{"no config", map[string]any{"name": "x", "type": "webhook"}, "config"},
			{"no name", map[string]any{"type": "webhook", "config": map[string]any{"url": "https://e.com"}}, "name"},
			{"sampling 0", hook(map[string]any{"sampling_rate": 0}), "sampling_rate"},
			{"sampling above 1", hook(map[string]any{"sampling_rate": 1.5}), "sampling_rate"},
			{"sampling negative", hook(map[string]any{"sampling_rate": -1}), "sampling_rate"},
			{"empty regions", hook(map[string]any{"regions": []any{}}), "regions"},
			{"unknown region", hook(map[string]any{"regions": []any{"asia"}}), "regions[0]"},
			{"bad key hash", hook(map[string]any{"api_key_hashes": []any{"abc"}}), "api_key_hashes[0]"},
			{"bad operator", hook(map[string]any{"filter_rules": rule(map[string]any{"field": "model", "operator": "like", "value": "x"})}), "filter_rules.groups[0].rules[0].operator"},
			{"bad field", hook(map[string]any{"filter_rules": rule(map[string]any{"field": "colour", "operator": "equals", "value": "x"})}), "filter_rules.groups[0].rules[0].field"},
			{"missing value", hook(map[string]any{"filter_rules": rule(map[string]any{"field": "model", "operator": "equals"})}), "filter_rules.groups[0].rules[0].value"},
			{"object value", hook(map[string]any{"filter_rules": rule(map[string]any{"field": "model", "operator": "equals", "value": map[string]any{}})}), "filter_rules.groups[0].rules[0].value"},
			{"bad regex value", hook(map[string]any{"filter_rules": rule(map[string]any{"field": "model", "operator": "regex", "value": "("})}), "filter_rules.groups[0].rules[0].value"},
			{"bad logic", hook(map[string]any{"filter_rules": map[string]any{"groups": []any{map[string]any{"logic": "xor", "rules": []any{}}}}}), "filter_rules.groups[0].logic"},
			{"no groups", hook(map[string]any{"filter_rules": map[string]any{"enabled": true}}), "filter_rules.groups"},
			{"name 201", hook(map[string]any{"name": strings.Repeat("n", 201)}), "name"},
		} {
			e.runUnchanged(t, c.name, func(t *testing.T, e *testEnv) {
				resWantError(t, e.do("POST", "/api/v1/observability/destinations", e.mgmt, c.body), http.StatusBadRequest, c.field)
			})
		}
		e.unchanged("unknown workspace", func() {
			resWantError(t, e.do("POST", "/api/v1/observability/destinations", e.mgmt, hook(map[string]any{"workspace_id": "nope"})),
				http.StatusNotFound, "workspace")
		})
	})
}

func TestDestinationList(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	team := e.createWorkspace(e.mgmt, "team")
	var names []string
	for i := range 4 {
		e.tick()
		name := fmt.Sprintf("d%d", i)
		e.createDestination(e.mgmt, map[string]any{"name": name, "type": "webhook", "config": map[string]any{"url": "https://e.com"}})
		names = append(names, name)
	}
	e.createDestination(e.mgmt, map[string]any{"name": "team", "type": "webhook", "workspace_id": team,
		"config": map[string]any{"url": "https://e.com"}})
	for _, p := range []struct {
		query string
		want  []string
	}{
		{"", names},
		{"limit=2", names[:2]},
		{"offset=2&limit=1", names[2:3]},
		{"offset=4", []string{}},
		{"limit=100&offset=0", names},
	} {
		items, total := resList(t, e.do("GET", "/api/v1/observability/destinations?"+p.query, e.mgmt, nil).want(t, http.StatusOK))
		if diff := cmp.Diff(p.want, resField(items, "name")); diff != "" || total != 4 {
			t.Errorf("?%s (total %d, want 4) (-want +got):\n%s", p.query, total, diff)
		}
	}
	items, total := resList(t, e.do("GET", "/api/v1/observability/destinations?workspace_id="+team, e.mgmt, nil).want(t, http.StatusOK))
	if total != 1 || items[0]["name"] != "team" {
		t.Errorf("team list = %v", resField(items, "name"))
	}
	for _, q := range []string{"offset=-1", "limit=0", "limit=101", "limit=z"} {
		resWantError(t, e.do("GET", "/api/v1/observability/destinations?"+q, e.mgmt, nil), http.StatusBadRequest, strings.Split(q, "=")[0])
	}
	resWantError(t, e.do("GET", "/api/v1/observability/destinations?workspace_id=00000000-0000-4000-8000-000000000000", e.mgmt, nil),
		http.StatusNotFound, "workspace")
}

func TestDestinationLimitPerType(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	hook := map[string]any{"name": "h", "type": "webhook", "config": map[string]any{"url": "https://e.com"}}
	var ids []string
	for range 5 {
		ids = append(ids, e.createDestination(e.mgmt, hook)["id"].(string))
	}
	e.unchanged("sixth", func() {
		resWantError(t, e.do("POST", "/api/v1/observability/destinations", e.mgmt, hook), http.StatusConflict, "webhook")
	})
	// Other types and other workspaces have their own count.
	e.createDestination(e.mgmt, map[string]any{"name": "o", "type": "otel-collector", "config": map[string]any{"endpoint": "https://o.com"}})
	e.createWorkspace(e.mgmt, "team")
	e.createDestination(e.mgmt, with(hook, "workspace_id", "team"))
	// A disabled destination still counts; a deleted one does not.
	e.do("PATCH", "/api/v1/observability/destinations/"+ids[0], e.mgmt, map[string]any{"enabled": false}).want(t, http.StatusOK)
	e.unchanged("sixth with one disabled", func() {
		resWantError(t, e.do("POST", "/api/v1/observability/destinations", e.mgmt, hook), http.StatusConflict, "webhook")
	})
	resWantDeleted(t, e.do("DELETE", "/api/v1/observability/destinations/"+ids[1], e.mgmt, nil))
	e.createDestination(e.mgmt, hook)
	e.unchanged("sixth again", func() {
		resWantError(t, e.do("POST", "/api/v1/observability/destinations", e.mgmt, hook), http.StatusConflict, "webhook")
	})
}

// TestDestinationURLRules: a destination's URL is stored and shown as
// given, so one holding credentials is refused (they belong in a header,
// sealed and masked), and so is a port out of range; nothing is created.
func TestDestinationURLRules(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for url, want := range map[string]string{
		"https://hookuser:secret@hooks.example.com/x": "must not hold credentials",
		"https://token@hooks.example.com/x":           "must not hold credentials",
		"https://hooks.example.com:99999/x":           "port",
		"https://hooks.example.com:0/x":               "port",
	} {
		e.unchanged(url, func() {
			res := e.do("POST", "/api/v1/observability/destinations", e.mgmt, map[string]any{"name": "hook", "type": "webhook",
				"config": map[string]any{"url": url}})
			if msg := resWantError(t, res, http.StatusBadRequest, "config.url"); !strings.Contains(msg.Message, want) {
				t.Errorf("%s: %q, want it to say %q", url, msg.Message, want)
			}
		})
	}
}
