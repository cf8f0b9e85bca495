package observe

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"gatehouse"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"
)

// otlpCheck is what an OTLP/HTTP receiver checks: POST of protobuf to the
// path, an ExportTraceServiceRequest with spans, and the auth headers.
func otlpCheck(path string, headers map[string]string) func(r *http.Request, body []byte) error {
	return func(r *http.Request, body []byte) error {
		if err := expect(r, http.MethodPost, path, "application/x-protobuf"); err != nil {
			return err
		}
		for k, want := range headers {
			if got := r.Header.Get(k); got != want {
				return unauthorized("header %s = %q", k, got)
			}
		}
		var req coltracepb.ExportTraceServiceRequest
		if err := proto.Unmarshal(body, &req); err != nil {
			return fmt.Errorf("not an ExportTraceServiceRequest: %v", err)
		}
		if len(req.ResourceSpans) == 0 || len(req.ResourceSpans[0].ScopeSpans) == 0 || len(req.ResourceSpans[0].ScopeSpans[0].Spans) == 0 {
			return fmt.Errorf("no spans")
		}
		return nil
	}
}

func b64(s string) string { return base64.StdEncoding.EncodeToString([]byte(s)) }

var uuidRE = regexp.MustCompile(`^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$`)

// TestEveryTypeDeliversToItsStandIn sends a generation to every type,
// each pointed at a stand-in of its service's ingestion endpoint that
// checks the method, path, auth, content type and required fields as the
// service documents them, and checks the values that arrive. (S3 goes to
// an in-process S3 server: TestS3Delivery; ClickHouse also to a real
// server when one is installed: TestClickHouseServer.)
func TestEveryTypeDeliversToItsStandIn(t *testing.T) {
	cases := []struct {
		typ    string
		config func(u string) map[string]string
		check  func(r *http.Request, body []byte) error
		verify func(t *testing.T, hits []hit)
	}{
		{"otel-collector", func(u string) map[string]string { return map[string]string{"endpoint": u + "/otel"} },
			otlpCheck("/otel/v1/traces", nil), nil},
		{"langfuse", func(u string) map[string]string {
			return map[string]string{"baseUrl": u, "publicKey": "pk-lf-1", "secretKey": "sk-lf-SECRET"}
		}, otlpCheck("/api/public/otel/v1/traces", map[string]string{"Authorization": "Basic " + b64("pk-lf-1:sk-lf-SECRET")}),
			func(t *testing.T, hits []hit) {
				_, _, attrs := spanOf(t, hits[0].Body)
				if attrs["langfuse.observation.type"]["stringValue"] != "generation" {
					t.Errorf("langfuse.observation.type = %v", attrs["langfuse.observation.type"])
				}
			}},
		{"arize", func(u string) map[string]string {
			return map[string]string{"baseUrl": u, "apiKey": "ak-SECRET", "spaceKey": "space-1", "modelId": "model-1"}
		}, otlpCheck("/v1/traces", map[string]string{"space_id": "space-1", "api_key": "ak-SECRET"}),
			func(t *testing.T, hits []hit) {
				req, _, attrs := spanOf(t, hits[0].Body)
				if attrs["openinference.span.kind"]["stringValue"] != "LLM" || attrs["llm.token_count.prompt"]["intValue"] != "12" {
					t.Errorf("OpenInference attributes: %v", attrs)
				}
				if !strings.Contains(fmt.Sprint(req), "model_id") {
					t.Errorf("resource lacks model_id: %v", req)
				}
			}},
		{"braintrust", func(u string) map[string]string {
			return map[string]string{"baseUrl": u, "apiKey": "bt-SECRET", "projectId": "proj-1"}
		}, otlpCheck("/otel/v1/traces", map[string]string{"Authorization": "Bearer bt-SECRET", "x-bt-parent": "project_id:proj-1"}), nil},
		{"grafana", func(u string) map[string]string {
			return map[string]string{"baseUrl": u, "apiKey": "glc-SECRET", "instanceId": "123456"}
		}, otlpCheck("/otlp/v1/traces", map[string]string{"Authorization": "Basic " + b64("123456:glc-SECRET")}), nil},
		{"newrelic", func(u string) map[string]string {
			return map[string]string{"baseUrl": u, "licenseKey": "nr-SECRET", "region": "eu"}
		}, otlpCheck("/v1/traces", map[string]string{"api-key": "nr-SECRET"}), nil},
		{"sentry", func(u string) map[string]string {
			return map[string]string{"dsn": "https://pubkey123@o1.ingest.sentry.io/42", "otlpEndpoint": u + "/api/42/integration/otlp/v1/traces"}
		}, otlpCheck("/api/42/integration/otlp/v1/traces", map[string]string{"x-sentry-auth": "sentry sentry_key=pubkey123"}), nil},
		{"weave", func(u string) map[string]string {
			return map[string]string{"baseUrl": u, "apiKey": "wb-SECRET", "entity": "acme", "project": "chat"}
		}, otlpCheck("/otel/v1/traces", map[string]string{"Authorization": "Basic " + b64("api:wb-SECRET"), "project_id": "acme/chat"}), nil},
		{"webhook", func(u string) map[string]string { return map[string]string{"url": u + "/hook"} },
			func(r *http.Request, body []byte) error {
				if err := expect(r, http.MethodPost, "/hook", "application/json"); err != nil {
					return err
				}
				_, err := fields(body, "id", "model", "total_cost", "prompt_tokens")
				return err
			}, nil},
		{"datadog", func(u string) map[string]string {
			return map[string]string{"url": u, "apiKey": "dd-SECRET", "mlApp": "chatbot"}
		},
			func(r *http.Request, body []byte) error {
				if err := expect(r, http.MethodPost, "/api/intake/llm-obs/v1/trace/spans", "application/json"); err != nil {
					return err
				}
				if r.Header.Get("DD-API-KEY") != "dd-SECRET" {
					return &httpError{http.StatusForbidden, "bad DD-API-KEY"}
				}
				m, err := fields(body, "data.type", "data.attributes.ml_app", "data.attributes.spans[0].name",
					"data.attributes.spans[0].span_id", "data.attributes.spans[0].trace_id", "data.attributes.spans[0].start_ns",
					"data.attributes.spans[0].duration", "data.attributes.spans[0].meta.kind")
				if err != nil {
					return err
				}
				if lookup(m, "data.type") != "span" || lookup(m, "data.attributes.spans[0].meta.kind") != "llm" {
					return fmt.Errorf("data.type must be span and meta.kind llm")
				}
				return nil
			},
			func(t *testing.T, hits []hit) {
				m, _ := fields(hits[0].Body)
				if got := lookup(m, "data.attributes.spans[0].metrics.input_tokens"); got != float64(12) {
					t.Errorf("input_tokens = %v", got)
				}
				if got := lookup(m, "data.attributes.spans[0].meta.input.messages[0].content"); got != "secret prompt" {
					t.Errorf("input message = %v", got)
				}
				if got := lookup(m, "data.attributes.ml_app"); got != "chatbot" {
					t.Errorf("ml_app = %v", got)
				}
			}},
		{"langsmith", func(u string) map[string]string {
			return map[string]string{"endpoint": u, "apiKey": "ls-SECRET", "project": "prod", "workspaceId": "ws-ls"}
		}, func(r *http.Request, body []byte) error {
			if err := expect(r, http.MethodPost, "/runs/batch", "application/json"); err != nil {
				return err
			}
			if r.Header.Get("x-api-key") != "ls-SECRET" || r.Header.Get("X-Tenant-Id") != "ws-ls" {
				return unauthorized("x-api-key or X-Tenant-Id")
			}
			m, err := fields(body, "post[0].id", "post[0].trace_id", "post[0].dotted_order", "post[0].name", "post[0].run_type", "post[0].start_time")
			if err != nil {
				return err
			}
			id := lookup(m, "post[0].id").(string)
			if !uuidRE.MatchString(id) || !regexp.MustCompile(`^\d{8}T\d{6}\d{6}Z`+id+`$`).MatchString(lookup(m, "post[0].dotted_order").(string)) {
				return fmt.Errorf("id must be a UUID and dotted_order <time>Z<id>: %v", lookup(m, "post[0].dotted_order"))
			}
			return nil
		}, func(t *testing.T, hits []hit) {
			m, _ := fields(hits[0].Body)
			if lookup(m, "post[0].session_name") != "prod" || lookup(m, "post[0].run_type") != "llm" ||
				lookup(m, "post[0].outputs.usage_metadata.total_tokens") != float64(46) {
				t.Errorf("run = %s", hits[0].Body)
			}
		}},
		{"opik", func(u string) map[string]string {
			return map[string]string{"baseUrl": u + "/opik/api", "apiKey": "op-SECRET", "projectName": "proj", "workspace": "team"}
		}, func(r *http.Request, body []byte) error {
			if r.Header.Get("authorization") != "op-SECRET" || r.Header.Get("Comet-Workspace") != "team" {
				return unauthorized("authorization or Comet-Workspace")
			}
			kind := "traces"
			if strings.HasSuffix(r.URL.Path, "/spans/batch") {
				kind = "spans"
			}
			if err := expect(r, http.MethodPost, "/opik/api/v1/private/"+kind+"/batch", "application/json"); err != nil {
				return err
			}
			req := []string{kind + "[0].id", kind + "[0].start_time", kind + "[0].project_name"}
			if kind == "spans" {
				req = append(req, "spans[0].trace_id", "spans[0].type")
			}
			m, err := fields(body, req...)
			if err != nil {
				return err
			}
			if id := lookup(m, kind+"[0].id").(string); !uuidRE.MatchString(id) || id[14] != '7' {
				return fmt.Errorf("%s id %s is not a UUIDv7", kind, id)
			}
			return nil
		}, func(t *testing.T, hits []hit) {
			if len(hits) != 2 {
				t.Fatalf("opik got %d requests, want the trace then the span", len(hits))
			}
			tr, _ := fields(hits[0].Body)
			sp, _ := fields(hits[1].Body)
			if lookup(tr, "traces[0].id") != lookup(sp, "spans[0].trace_id") || lookup(sp, "spans[0].usage.prompt_tokens") != float64(12) {
				t.Errorf("trace %s\nspan %s", hits[0].Body, hits[1].Body)
			}
		}},
		{"posthog", func(u string) map[string]string { return map[string]string{"endpoint": u, "apiKey": "phc_PROJECT"} },
			func(r *http.Request, body []byte) error {
				if err := expect(r, http.MethodPost, "/batch/", "application/json"); err != nil {
					return err
				}
				m, err := fields(body, "api_key", "batch[0].event", "batch[0].distinct_id", "batch[0].properties")
				if err != nil {
					return err
				}
				if lookup(m, "api_key") != "phc_PROJECT" {
					return unauthorized("invalid api_key")
				}
				return nil
			}, func(t *testing.T, hits []hit) {
				m, _ := fields(hits[0].Body)
				for path, want := range map[string]any{"batch[0].event": "$ai_generation", "batch[0].properties.$ai_model": "openai/gpt-4o-mini",
					"batch[0].properties.$ai_input_tokens": float64(12), "batch[0].properties.$ai_output_tokens": float64(34),
					"batch[0].properties.$ai_total_cost_usd": 0.000123, "batch[0].properties.$ai_session_id": "sess-9", "batch[0].distinct_id": "user_1"} {
					if got := lookup(m, path); got != want {
						t.Errorf("%s = %v, want %v", path, got, want)
					}
				}
				if !uuidRE.MatchString(fmt.Sprint(lookup(m, "batch[0].uuid"))) {
					t.Errorf("uuid = %v", lookup(m, "batch[0].uuid"))
				}
			}},
		{"ramp", func(u string) map[string]string {
			return map[string]string{"baseUrl": u + "/developer/v1/ai-usage/openrouter", "apiKey": "rp-SECRET"}
		},
			func(r *http.Request, body []byte) error {
				if err := expect(r, http.MethodPost, "/developer/v1/ai-usage/openrouter", "application/json"); err != nil {
					return err
				}
				if r.Header.Get("Authorization") != "Bearer rp-SECRET" {
					return unauthorized("bad bearer token")
				}
				_, err := fields(body, "generations[0].id", "generations[0].model", "generations[0].total_cost")
				return err
			}, nil},
		{"clickhouse", func(u string) map[string]string {
			return map[string]string{"host": u, "database": "obs", "username": "writer", "password": "ch-SECRET"}
		}, clickHouseStandIn, func(t *testing.T, hits []hit) {
			if len(hits) != 2 || !strings.Contains(string(hits[0].Body), "CREATE TABLE IF NOT EXISTS `obs`.`OPENROUTER_TRACES`") {
				t.Fatalf("want CREATE TABLE then INSERT, got %d requests", len(hits))
			}
			var row map[string]any
			if err := json.Unmarshal(hits[1].Body, &row); err != nil || row["total_tokens"] != float64(46) || row["byok"] != float64(0) {
				t.Errorf("row %s (%v)", hits[1].Body, err)
			}
		}},
		{"snowflake", func(u string) map[string]string {
			return map[string]string{"account": "myorg-acct", "token": "sf-SECRET", "baseUrl": u}
		},
			snowflakeStandIn, func(t *testing.T, hits []hit) {
				if len(hits) != 2 {
					t.Fatalf("want CREATE TABLE then INSERT, got %d requests", len(hits))
				}
				m, _ := fields(hits[1].Body)
				var payload map[string]any
				if err := json.Unmarshal([]byte(lookup(m, "bindings.3.value").(string)), &payload); err != nil || payload["total_tokens"] != float64(46) {
					t.Errorf("payload binding %v (%v)", lookup(m, "bindings.3.value"), err)
				}
			}},
	}
	seen := map[string]bool{"s3": true}
	for _, c := range cases {
		seen[c.typ] = true
		t.Run(c.typ, func(t *testing.T) {
			si := newStandIn(t, c.check)
			d := testDest(c.typ, c.config(si.URL))
			cfg, err := (gatehouse.DestinationConfig{}).Merge(c.typ, patchOf(d.Config.Values))
			if err != nil {
				t.Fatalf("the test's configuration is not valid: %v", err)
			}
			d.Config = cfg // with the type's defaults
			deliverTo(t, d)
			hits, refused := si.got()
			if len(refused) > 0 || len(hits) == 0 {
				t.Fatalf("the stand-in accepted %d requests and refused %v", len(hits), refused)
			}
			if c.verify != nil {
				c.verify(t, hits)
			}
		})
	}
	for _, typ := range gatehouse.DestinationTypes() {
		if !seen[typ] {
			t.Errorf("type %s has no stand-in test", typ)
		}
	}
}

func patchOf(values map[string]string) gatehouse.ConfigPatch {
	p := gatehouse.ConfigPatch{Values: map[string]*string{}}
	for k, v := range values {
		p.Values[k] = &v
	}
	return p
}

// clickHouseStandIn checks what ClickHouse's HTTP interface does: POST,
// the user and key headers, a CREATE TABLE in the body, or an INSERT ...
// FORMAT JSONEachRow in the query with one JSON object a line.
func clickHouseStandIn(r *http.Request, body []byte) error {
	if r.Method != http.MethodPost || r.URL.Path != "/" {
		return &httpError{http.StatusNotFound, "not found"}
	}
	if r.Header.Get("X-ClickHouse-User") != "writer" || r.Header.Get("X-ClickHouse-Key") != "ch-SECRET" {
		return &httpError{516, "Code: 516. Authentication failed"}
	}
	q := r.URL.Query().Get("query")
	if q == "" {
		if !strings.HasPrefix(string(body), "CREATE TABLE IF NOT EXISTS `obs`.`OPENROUTER_TRACES`") {
			return fmt.Errorf("Code: 62. Syntax error")
		}
		return nil
	}
	if q != "INSERT INTO `obs`.`OPENROUTER_TRACES` FORMAT JSONEachRow" {
		return fmt.Errorf("Code: 62. Syntax error: %s", q)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(body)), "\n") {
		if _, err := fields([]byte(line), "id", "created_at", "model", "total_tokens"); err != nil {
			return fmt.Errorf("Code: 117. Cannot parse JSONEachRow: %v", err)
		}
	}
	return nil
}

// snowflakeStandIn checks what the SQL API does: POST /api/v2/statements
// with a requestId, a bearer token and its type, JSON both ways, a
// statement, and a binding for every ? of it.
func snowflakeStandIn(r *http.Request, body []byte) error {
	if err := expect(r, http.MethodPost, "/api/v2/statements", "application/json"); err != nil {
		return err
	}
	if r.Header.Get("Authorization") != "Bearer sf-SECRET" || r.Header.Get("X-Snowflake-Authorization-Token-Type") != "PROGRAMMATIC_ACCESS_TOKEN" {
		return unauthorized("390303: Invalid OAuth access token")
	}
	if r.Header.Get("Accept") != "application/json" {
		return &httpError{http.StatusNotAcceptable, "Accept must be application/json"}
	}
	if !uuidRE.MatchString(r.URL.Query().Get("requestId")) && !regexp.MustCompile(`^[0-9a-f-]{36}$`).MatchString(r.URL.Query().Get("requestId")) {
		return fmt.Errorf("requestId must be a UUID")
	}
	m, err := fields(body, "statement", "database", "schema", "warehouse")
	if err != nil {
		return err
	}
	stmt := lookup(m, "statement").(string)
	want := strings.Count(stmt, "?")
	b, _ := lookup(m, "bindings").(map[string]any)
	if len(b) != want {
		return &httpError{http.StatusUnprocessableEntity, fmt.Sprintf("%d bindings for %d placeholders", len(b), want)}
	}
	return nil
}
