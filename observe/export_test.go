package observe

import (
	"bytes"
	"encoding/json"
	"encoding/pem"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"gatehouse"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
)

func TestWebhookDelivery(t *testing.T) {
	rc := newReceiver(t, nil)
	post := testDest("webhook", map[string]string{"url": rc.URL + "/post"}, func(d *gatehouse.Destination) {
		d.Config.Headers = map[string]string{"X-Token": "tok-SECRET", "Content-Type": "text/plain"}
	})
	put := testDest("webhook", map[string]string{"url": rc.URL + "/put", "method": "PUT"})
	p, _ := start(t, newLister(post, put), fastOptions())
	session := "sess-42"
	ev := testEvent(withSession(session))
	p.Publish(ev)
	closeNow(t, p)

	hits := rc.got()
	if len(hits) != 2 {
		t.Fatalf("got %d requests, want 2", len(hits))
	}
	byPath := map[string]hit{}
	for _, h := range hits {
		byPath[h.Path] = h
	}
	if m := byPath["/post"].Method; m != http.MethodPost {
		t.Errorf("/post method = %s", m)
	}
	if m := byPath["/put"].Method; m != http.MethodPut {
		t.Errorf("/put method = %s", m)
	}
	h := byPath["/post"]
	for k, want := range map[string]string{"X-Token": "tok-SECRET", "Content-Type": "application/json",
		"Idempotency-Key": ev.Generation.ID} {
		if got := h.Header.Get(k); got != want {
			t.Errorf("header %s = %q, want %q", k, got, want)
		}
	}
	if !bytes.Contains(h.Body, []byte(`"total_cost":0.000123,`)) {
		t.Errorf("cost is not the exact JSON number 0.000123: %s", h.Body)
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(h.Body))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	wantKeys := []string{"api_key_hash", "api_key_name", "byok", "completion_tokens", "created_at", "ended_at",
		"event", "external_user", "finish_reason", "generation_time_ms", "id", "input", "latency_ms", "model",
		"organization_id", "output", "privacy_mode", "prompt_tokens", "provider", "session_id", "started_at",
		"status", "streamed", "total_cost", "total_tokens", "upstream_id", "user_id", "workspace_id"}
	var keys []string
	for k := range body {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	if !slices.Equal(keys, wantKeys) {
		t.Errorf("keys = %v\nwant  %v", keys, wantKeys)
	}
	for k, want := range map[string]any{
		"event": "generation", "id": ev.Generation.ID, "model": "openai/gpt-4o-mini", "provider": "openai",
		"api_key_hash": testKeyHash, "api_key_name": "ci key", "user_id": "user_1", "session_id": session,
		"prompt_tokens": json.Number("12"), "completion_tokens": json.Number("34"), "total_tokens": json.Number("46"),
		"total_cost": json.Number("0.000123"), "finish_reason": "stop", "latency_ms": json.Number("250"),
		"started_at": "2026-11-21T10:30:00.123Z", "ended_at": "2026-11-21T10:30:00.373Z",
		"organization_id": "org-1", "workspace_id": "ws-1", "status": "completed", "privacy_mode": false,
		"output": "secret completion", "external_user": nil, "upstream_id": nil,
	} {
		if diff := cmp.Diff(want, body[k]); diff != "" {
			t.Errorf("%s (-want +got):\n%s", k, diff)
		}
	}
	if msgs, ok := body["input"].([]any); !ok || len(msgs) != 1 {
		t.Errorf("input = %#v, want the messages array", body["input"])
	}
}

func TestOTLPDelivery(t *testing.T) {
	rc := newReceiver(t, nil)
	a := testDest("otel-collector", map[string]string{"endpoint": rc.URL + "/otlp"}, func(d *gatehouse.Destination) {
		d.Config.Headers = map[string]string{"X-Collector-Key": "ck-SECRET"}
	})
	b := testDest("otel-collector", map[string]string{"endpoint": rc.URL + "/full/v1/traces/"})
	p, _ := start(t, newLister(a, b), fastOptions())
	ev := testEvent(withSession("sess-7"))
	p.Publish(ev)
	closeNow(t, p)

	if got, want := rc.paths(), []string{"/full/v1/traces", "/otlp/v1/traces"}; !slices.Equal(got, want) {
		t.Fatalf("paths = %v, want %v", got, want)
	}
	var traceIDs []string
	for _, h := range rc.got() {
		if ct := h.Header.Get("Content-Type"); ct != "application/x-protobuf" || h.Method != http.MethodPost {
			t.Errorf("%s %s with Content-Type %q", h.Method, h.Path, ct)
		}
		if h.Path == "/otlp/v1/traces" && h.Header.Get("X-Collector-Key") != "ck-SECRET" {
			t.Errorf("custom header missing")
		}
		req, span, attrs := spanOf(t, h.Body)
		res := req["resourceSpans"].([]any)[0].(map[string]any)["resource"].(map[string]any)
		want := map[string]any{"key": "service.name", "value": map[string]any{"stringValue": "gatehouse"}}
		if diff := cmp.Diff(want, res["attributes"].([]any)[0]); diff != "" {
			t.Errorf("resource attribute (-want +got):\n%s", diff)
		}
		checkSpan(t, ev, span)
		traceIDs = append(traceIDs, span["traceId"].(string))
		checkGenAIAttributes(t, attrs)
	}
	if traceIDs[0] != traceIDs[1] {
		t.Errorf("one event has two trace ids: %v", traceIDs)
	}
}

// checkSpan checks the span's ids, name, kind and times.
func checkSpan(t *testing.T, ev *gatehouse.TraceEvent, span map[string]any) {
	t.Helper()
	if id, _ := span["traceId"].(string); !regexp.MustCompile(`^[0-9a-f]{32}$`).MatchString(id) {
		t.Errorf("traceId = %q", id)
	}
	if id, _ := span["spanId"].(string); !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(id) {
		t.Errorf("spanId = %q", id)
	}
	for k, want := range map[string]any{
		"name": "chat openai/gpt-4o-mini", "kind": float64(3),
		"startTimeUnixNano": strconv.FormatInt(ev.StartedAt.UnixNano(), 10),
		"endTimeUnixNano":   strconv.FormatInt(ev.EndedAt.UnixNano(), 10),
	} {
		if span[k] != want {
			t.Errorf("span %s = %#v, want %#v", k, span[k], want)
		}
	}
}

// checkGenAIAttributes checks the GenAI semantic convention attributes of
// the test event's span.
func checkGenAIAttributes(t *testing.T, attrs map[string]map[string]any) {
	t.Helper()
	str := func(s string) map[string]any { return map[string]any{"stringValue": s} }
	for k, want := range map[string]map[string]any{
		"gen_ai.operation.name":          str("chat"),
		"gen_ai.system":                  str("openai"),
		"gen_ai.provider.name":           str("openai"),
		"gen_ai.request.model":           str("openai/gpt-4o-mini"),
		"gen_ai.response.model":          str("openai/gpt-4o-mini"),
		"gen_ai.usage.input_tokens":      {"intValue": "12"},
		"gen_ai.usage.output_tokens":     {"intValue": "34"},
		"gen_ai.response.finish_reasons": {"arrayValue": map[string]any{"values": []any{str("stop")}}},
		"gatehouse.cost_usd":             {"doubleValue": 0.000123},
		"gatehouse.key_hash":             str(testKeyHash),
		"gen_ai.conversation.id":         str("sess-7"),
		"user.id":                        str("user_1"),
		"gen_ai.prompt":                  str(`[{"role":"user","content":"secret prompt"}]`),
		"gen_ai.completion":              str("secret completion"),
	} {
		if diff := cmp.Diff(want, attrs[k]); diff != "" {
			t.Errorf("attribute %s (-want +got):\n%s", k, diff)
		}
	}
	if id := attrs["gen_ai.response.id"]["stringValue"]; !strings.HasPrefix(id.(string), "gen-") {
		t.Errorf("gen_ai.response.id = %v", id)
	}
}

func TestLangfuseDelivery(t *testing.T) {
	rc := newReceiver(t, nil)
	d := testDest("langfuse", map[string]string{"baseUrl": rc.URL + "/lf/", "publicKey": "pk-lf-1", "secretKey": "sk-lf-SECRET"})
	p, _ := start(t, newLister(d), fastOptions())
	p.Publish(testEvent(withSession("sess-7")))
	closeNow(t, p)

	hits := rc.got()
	if len(hits) != 1 {
		t.Fatalf("got %d requests, want 1", len(hits))
	}
	h := hits[0]
	if h.Method != http.MethodPost || h.Path != "/lf/api/public/otel/v1/traces" {
		t.Errorf("request = %s %s", h.Method, h.Path)
	}
	r := &http.Request{Header: h.Header}
	if user, pass, ok := r.BasicAuth(); !ok || user != "pk-lf-1" || pass != "sk-lf-SECRET" {
		t.Errorf("basic auth = %q, %q, %v", user, pass, ok)
	}
	_, _, attrs := spanOf(t, h.Body)
	checkGenAIAttributes(t, attrs)
	for k, want := range map[string]string{
		"langfuse.observation.type":          "generation",
		"langfuse.observation.model.name":    "openai/gpt-4o-mini",
		"langfuse.observation.usage_details": `{"input":12,"output":34,"total":46}`,
		"langfuse.observation.cost_details":  `{"total":0.000123}`,
		"langfuse.session.id":                "sess-7",
		"langfuse.user.id":                   "user_1",
		"langfuse.observation.output":        "secret completion",
	} {
		if got := attrs[k]["stringValue"]; got != want {
			t.Errorf("attribute %s = %v, want %q", k, got, want)
		}
	}
}

func TestPrivacyMode(t *testing.T) {
	rc := newReceiver(t, nil)
	private := func(d *gatehouse.Destination) { d.PrivacyMode = true }
	p, _ := start(t, newLister(
		testDest("webhook", map[string]string{"url": rc.URL + "/hook"}, private),
		testDest("otel-collector", map[string]string{"endpoint": rc.URL + "/otel"}, private),
		testDest("langfuse", map[string]string{"baseUrl": rc.URL + "/lf", "publicKey": "pk", "secretKey": "sk"}, private),
		testDest("otel-collector", map[string]string{"endpoint": rc.URL + "/open"}),
	), fastOptions())
	p.Publish(testEvent())
	closeNow(t, p)

	hits := rc.got()
	if len(hits) != 4 {
		t.Fatalf("got %d requests, want 4", len(hits))
	}
	for _, h := range hits {
		leaks := bytes.Contains(h.Body, []byte("secret prompt")) || bytes.Contains(h.Body, []byte("secret completion"))
		if open := h.Path == "/open/v1/traces"; leaks != open {
			t.Errorf("%s: text present = %v, want %v", h.Path, leaks, open)
		}
		switch {
		case h.Path == "/hook":
			var body map[string]any
			_ = json.Unmarshal(h.Body, &body)
			if body["input"] != nil || body["output"] != nil || body["privacy_mode"] != true {
				t.Errorf("webhook in privacy mode: input %v, output %v, privacy_mode %v", body["input"], body["output"], body["privacy_mode"])
			}
		case strings.HasSuffix(h.Path, "/v1/traces") && h.Path != "/open/v1/traces":
			_, _, attrs := spanOf(t, h.Body)
			for _, k := range []string{"gen_ai.prompt", "gen_ai.completion", "langfuse.observation.input", "langfuse.observation.output"} {
				if _, ok := attrs[k]; ok {
					t.Errorf("%s: attribute %s present in privacy mode", h.Path, k)
				}
			}
			if _, ok := attrs["gen_ai.usage.input_tokens"]; !ok {
				t.Errorf("%s: usage missing in privacy mode", h.Path)
			}
		}
	}
}

// TestWorkspaceIOLogging: the prompt and completion reach destinations
// only where the workspace logs I/O, and then at its sampling rate, the
// same generations whose content the store keeps (Workspace.LogsIO). A
// workspace that does not log sends no text, not even to its filters.
func TestWorkspaceIOLogging(t *testing.T) {
	t.Run("off", func(t *testing.T) {
		rc := newReceiver(t, nil)
		lister := newLister(
			testDest("webhook", map[string]string{"url": rc.URL + "/hook"}),
			testDest("otel-collector", map[string]string{"endpoint": rc.URL + "/otel"}),
			// A filter on the text must not see it: it would tell the
			// receiver what the prompt says.
			testDest("webhook", map[string]string{"url": rc.URL + "/filtered"}, func(d *gatehouse.Destination) {
				d.FilterRules = &gatehouse.FilterRules{Groups: []gatehouse.FilterRule{{Rules: []gatehouse.Condition{
					{Field: "input", Operator: "contains", Value: "secret"}}}}}
			}),
		)
		lister.private = map[string]bool{"ws-1": true}
		p, _ := start(t, lister, fastOptions())
		p.Publish(testEvent())
		closeNow(t, p)
		hits := rc.got()
		if len(hits) != 2 {
			t.Fatalf("got %d requests, want 2 (the filter on the input matches nothing)", len(hits))
		}
		for _, h := range hits {
			if bytes.Contains(h.Body, []byte("secret prompt")) || bytes.Contains(h.Body, []byte("secret completion")) {
				t.Errorf("%s: the text of a workspace that does not log I/O was sent: %s", h.Path, h.Body)
			}
			switch h.Path {
			case "/hook":
				var body map[string]any
				_ = json.Unmarshal(h.Body, &body)
				if body["input"] != nil || body["output"] != nil || body["privacy_mode"] != true || body["total_tokens"] != 46.0 {
					t.Errorf("webhook: input %v, output %v, privacy_mode %v, total_tokens %v", body["input"], body["output"], body["privacy_mode"], body["total_tokens"])
				}
			case "/otel/v1/traces":
				_, _, attrs := spanOf(t, h.Body)
				if _, ok := attrs["gen_ai.prompt"]; ok {
					t.Error("otel: gen_ai.prompt sent for a workspace that does not log I/O")
				}
				if _, ok := attrs["gen_ai.usage.input_tokens"]; !ok {
					t.Error("otel: usage missing")
				}
			default:
				t.Errorf("unexpected request to %s", h.Path)
			}
		}
	})
	t.Run("sampled", func(t *testing.T) {
		rc := newReceiver(t, nil)
		lister := newLister(testDest("webhook", map[string]string{"url": rc.URL + "/hook"}))
		lister.ioRate = 0.5
		p, _ := start(t, lister, fastOptions())
		const n = 200
		want := map[string]bool{}
		for range n {
			ev := testEvent()
			want[ev.Generation.ID] = gatehouse.IOSampled(ev.Generation.ID, 0.5)
			p.Publish(ev)
		}
		closeNow(t, p)
		hits := rc.got()
		if len(hits) != n {
			t.Fatalf("got %d deliveries, want %d: I/O sampling must not drop events", len(hits), n)
		}
		with := 0
		for _, h := range hits {
			var body struct {
				ID          string  `json:"id"`
				Output      *string `json:"output"`
				PrivacyMode bool    `json:"privacy_mode"`
			}
			if err := json.Unmarshal(h.Body, &body); err != nil {
				t.Fatal(err)
			}
			if got := body.Output != nil; got != want[body.ID] || body.PrivacyMode == got {
				t.Errorf("%s: text sent %v, privacy_mode %v; the workspace's sampling says %v", body.ID, got, body.PrivacyMode, want[body.ID])
			}
			if body.Output != nil {
				with++
			}
		}
		if with < n/4 || with > 3*n/4 {
			t.Errorf("%d of %d sent with text at a rate of 0.5", with, n)
		}
	})
}

func TestInvalidURLFailsWithoutRetry(t *testing.T) {
	p, reg := start(t, newLister(testDest("webhook", map[string]string{"url": "ftp://x.example/hook?token=SECRET"})), fastOptions())
	p.Publish(testEvent())
	closeNow(t, p)
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "failed"); got != 1 {
		t.Errorf("failed = %v, want 1", got)
	}
	if got := metric(t, reg, "gatehouse_observability_delivery_attempts_total"); got != 0 {
		t.Errorf("attempts = %v, want 0", got)
	}
}

// TestUnreadableSecretsDeliverNothing: a destination whose secrets the
// server cannot open receives nothing (sending without them would reach
// it unauthenticated); each event counts as failed, and the log names the
// destination once a minute, not once an event.
func TestUnreadableSecretsDeliverNothing(t *testing.T) {
	rc := newReceiver(t, nil)
	sealed := testDest("webhook", map[string]string{"url": rc.URL + "/sealed"}, func(d *gatehouse.Destination) { d.SecretsUnreadable = true })
	open := testDest("webhook", map[string]string{"url": rc.URL + "/open"})
	var logs syncBuffer
	reg := prometheus.NewRegistry()
	p := New(newLister(sealed, open), reg, slog.New(slog.NewJSONHandler(&logs, nil)), fastOptions())
	for range 3 {
		p.Publish(testEvent())
	}
	closeNow(t, p)
	if got := rc.paths(); len(got) != 3 || slices.Contains(got, "/sealed") {
		t.Errorf("requests to %v, want 3 to /open only", got)
	}
	if got := metric(t, reg, "gatehouse_observability_deliveries_total", "result", "failed"); got != 3 {
		t.Errorf("failed = %v, want 3", got)
	}
	if n := strings.Count(logs.String(), sealed.ID); n != 1 {
		t.Errorf("the log names the destination %d times, want once:\n%s", n, logs.String())
	}
}

// TestOTLPIgnoresTheProcessEnvironment: the OpenTelemetry SDK's exporter
// reads the OTEL_EXPORTER_OTLP_* variables of the process, which an
// operator may set for something else. None of them may change what a
// destination receives or where: not the operator's headers (they would
// leak to every destination), not its compression, not its certificate
// (with an http:// endpoint the exporter refuses to run at all).
func TestOTLPIgnoresTheProcessEnvironment(t *testing.T) {
	tlsSrv := httptest.NewTLSServer(http.NotFoundHandler())
	defer tlsSrv.Close()
	certFile := filepath.Join(t.TempDir(), "ca.pem")
	pemBytes := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: tlsSrv.Certificate().Raw})
	if err := os.WriteFile(certFile, pemBytes, 0o600); err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{
		"OTEL_EXPORTER_OTLP_HEADERS":            "x-operator-token=op-SECRET",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS":     "x-operator-traces=op-SECRET",
		"OTEL_EXPORTER_OTLP_COMPRESSION":        "gzip",
		"OTEL_EXPORTER_OTLP_TRACES_COMPRESSION": "gzip",
		"OTEL_EXPORTER_OTLP_CERTIFICATE":        certFile,
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT":    "http://127.0.0.1:1/elsewhere",
	} {
		t.Setenv(k, v)
	}
	rc := newReceiver(t, nil)
	p, _ := start(t, newLister(testDest("otel-collector", map[string]string{"endpoint": rc.URL + "/otlp"})), fastOptions())
	p.Publish(testEvent())
	closeNow(t, p)
	hits := rc.got()
	if len(hits) != 1 || hits[0].Path != "/otlp/v1/traces" {
		t.Fatalf("requests %v; want one to /otlp/v1/traces", rc.paths())
	}
	h := hits[0]
	for name := range h.Header {
		if strings.HasPrefix(strings.ToLower(name), "x-operator") {
			t.Errorf("the operator's header %s reached a destination", name)
		}
	}
	if enc := h.Header.Get("Content-Encoding"); enc != "" {
		t.Errorf("Content-Encoding %q: the process's compression setting changed the request", enc)
	}
	spanOf(t, h.Body) // a plain protobuf export
}
