package observe

import (
	"context"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/url"
	"strings"

	"gatehouse"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/trace"
)

// The OTLP types send each generation as one span of kind CLIENT named
// "chat <model>", through the OpenTelemetry SDK's OTLP/HTTP exporter
// (protobuf), with the GenAI semantic conventions' attributes and the
// type's own.

// otlpTarget is where and how an OTLP type sends.
type otlpTarget struct {
	url      string            // the full traces URL
	headers  map[string]string // the type's, over the configured ones
	resource []attribute.KeyValue
	extra    func(e *event) []attribute.KeyValue
}

// exportOTLP sends the events' spans with the SDK's exporter. Its own
// retries are off: the Publisher retries, honouring Retry-After.
func exportOTLP(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event, t otlpTarget) outcome {
	u, err := url.Parse(t.url)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return failed(errBadURL)
	}
	headers := map[string]string{}
	for k, v := range d.Config.Headers {
		headers[k] = v
	}
	for k, v := range t.headers {
		headers[k] = v
	}
	ctx, rec := withRecording(ctx)
	// The exporter also reads the process's OTEL_EXPORTER_OTLP_* variables,
	// which are the operator's, not the destination's: every setting they
	// could change is given here (the endpoint, the headers, no compression,
	// no TLS configuration: our client's transport is used, and a
	// certificate set there would make the exporter refuse http://).
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(u.String()), otlptracehttp.WithHeaders(headers),
		otlptracehttp.WithHTTPClient(s.recording), otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}),
		otlptracehttp.WithCompression(otlptracehttp.NoCompression), otlptracehttp.WithTLSClientConfig(nil))
	if err != nil {
		return failed(errBadURL)
	}
	defer func() { _ = exp.Shutdown(context.WithoutCancel(ctx)) }()
	res := resource.NewSchemaless(append([]attribute.KeyValue{semconv.ServiceName("gatehouse")}, t.resource...)...)
	spans := make(tracetest.SpanStubs, 0, len(evs))
	for _, e := range evs {
		spans = append(spans, spanStub(e, res, t.extra))
	}
	err = exp.ExportSpans(ctx, spans.Snapshots())
	return rec.outcome(err)
}

// spanStub is an event's span.
func spanStub(e *event, res *resource.Resource, extra func(*event) []attribute.KeyValue) tracetest.SpanStub {
	var tid trace.TraceID
	var sid trace.SpanID
	_, _ = hex.Decode(tid[:], []byte(e.ids.trace))
	_, _ = hex.Decode(sid[:], []byte(e.ids.span))
	start, end := e.times()
	attrs := genAIAttributes(e)
	if extra != nil {
		attrs = append(attrs, extra(e)...)
	}
	return tracetest.SpanStub{
		Name: "chat " + e.Generation.Model,
		SpanContext: trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid,
			TraceFlags: trace.FlagsSampled}),
		SpanKind: trace.SpanKindClient, StartTime: start, EndTime: end, Attributes: attrs,
		Resource: res, InstrumentationScope: instrumentation.Scope{Name: "gatehouse"},
	}
}

var _ sdktrace.ReadOnlySpan = tracetest.SpanStub{}.Snapshot()

// genAIAttributes are the span's attributes per the OpenTelemetry GenAI
// semantic conventions (gen_ai.*), plus gatehouse.*; the messages are
// gen_ai.input.messages and gen_ai.output.messages, and also the older
// gen_ai.prompt and gen_ai.completion that many receivers still read;
// none of them in privacy mode.
func genAIAttributes(e *event) []attribute.KeyValue {
	g := e.Generation
	a := []attribute.KeyValue{
		semconv.GenAIOperationNameChat,
		attribute.String("gen_ai.system", g.Provider),
		semconv.GenAIProviderNameKey.String(g.Provider),
		semconv.GenAIRequestModel(g.Model),
		semconv.GenAIResponseModel(g.Model),
		semconv.GenAIResponseID(g.ID),
		semconv.GenAIUsageInputTokensKey.Int64(g.PromptTokens),
		semconv.GenAIUsageOutputTokensKey.Int64(g.CompletionTokens),
		attribute.Float64("gatehouse.cost_usd", usd(g.Cost)),
		attribute.String("gatehouse.key_hash", g.KeyHash),
		attribute.String("gatehouse.key_name", e.KeyName),
		attribute.String("gatehouse.organization_id", g.OrganizationID),
		attribute.String("gatehouse.workspace_id", g.WorkspaceID),
		attribute.String("gatehouse.status", g.Status),
		attribute.Bool("gatehouse.byok", g.BYOK),
		attribute.Bool("gatehouse.streamed", g.Streamed),
	}
	if g.FinishReason != nil {
		a = append(a, semconv.GenAIResponseFinishReasons(*g.FinishReason))
	}
	if g.SessionID != nil && *g.SessionID != "" {
		a = append(a, semconv.GenAIConversationID(*g.SessionID), semconv.SessionID(*g.SessionID))
	}
	if e.UserID != nil {
		a = append(a, semconv.UserID(*e.UserID))
	}
	if g.ExternalUser != nil {
		a = append(a, attribute.String("gatehouse.external_user", *g.ExternalUser))
	}
	if g.UpstreamID != nil {
		a = append(a, attribute.String("gatehouse.upstream_id", *g.UpstreamID))
	}
	if !e.privacy {
		if len(e.Input) > 0 {
			a = append(a, semconv.GenAIInputMessagesKey.String(string(e.Input)), attribute.String("gen_ai.prompt", string(e.Input)))
		}
		a = append(a, semconv.GenAIOutputMessagesKey.String(outputMessages(e)), attribute.String("gen_ai.completion", e.Output))
	}
	return a
}

// outputMessages is the completion as GenAI output messages.
func outputMessages(e *event) string {
	msg := map[string]any{"role": "assistant", "parts": []map[string]string{{"type": "text", "content": e.Output}}}
	if r := e.Generation.FinishReason; r != nil {
		msg["finish_reason"] = *r
	}
	b, _ := json.Marshal([]any{msg})
	return string(b)
}

// tracesURL appends /v1/traces to an endpoint unless it ends so already.
func tracesURL(endpoint string) string {
	endpoint = strings.TrimRight(endpoint, "/")
	if !strings.HasSuffix(endpoint, "/v1/traces") {
		endpoint += "/v1/traces"
	}
	return endpoint
}

func basic(user, pass string) string {
	return "Basic " + base64.StdEncoding.EncodeToString([]byte(user+":"+pass))
}

func base(d *gatehouse.Destination, key string) string {
	return strings.TrimRight(d.Config.Values[key], "/")
}

// deliverOTelCollector sends to config.endpoint, with /v1/traces appended
// unless it is already there, and the configured headers.
func deliverOTelCollector(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	return exportOTLP(ctx, s, d, evs, otlpTarget{url: tracesURL(d.Config.Values["endpoint"])})
}

// deliverLangfuse sends to Langfuse's OTLP endpoint with Basic auth of the
// public and secret keys and Langfuse's own attributes.
func deliverLangfuse(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	return exportOTLP(ctx, s, d, evs, otlpTarget{
		url:     base(d, "baseUrl") + "/api/public/otel/v1/traces",
		headers: map[string]string{"Authorization": basic(v["publicKey"], v["secretKey"]), "x-langfuse-ingestion-version": "4"},
		extra:   langfuseAttributes,
	})
}

// langfuseAttributes are Langfuse's own attributes for a generation.
func langfuseAttributes(e *event) []attribute.KeyValue {
	g := e.Generation
	usage, _ := json.Marshal(map[string]int64{"input": g.PromptTokens, "output": g.CompletionTokens,
		"total": g.PromptTokens + g.CompletionTokens})
	cost, _ := json.Marshal(map[string]gatehouse.Money{"total": g.Cost})
	a := []attribute.KeyValue{
		attribute.String("langfuse.observation.type", "generation"),
		attribute.String("langfuse.observation.model.name", g.Model),
		attribute.String("langfuse.observation.usage_details", string(usage)),
		attribute.String("langfuse.observation.cost_details", string(cost)),
		attribute.String("langfuse.trace.name", "chat "+g.Model),
	}
	if g.SessionID != nil && *g.SessionID != "" {
		a = append(a, attribute.String("langfuse.session.id", *g.SessionID))
	}
	if e.UserID != nil {
		a = append(a, attribute.String("langfuse.user.id", *e.UserID))
	}
	if !e.privacy {
		if len(e.Input) > 0 {
			a = append(a, attribute.String("langfuse.observation.input", string(e.Input)))
		}
		a = append(a, attribute.String("langfuse.observation.output", e.Output))
	}
	return a
}

// deliverArize sends to Arize's OTLP endpoint, headers space_id and
// api_key, the model id as the resource's model_id and project name, and
// the OpenInference attributes Arize reads.
func deliverArize(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	return exportOTLP(ctx, s, d, evs, otlpTarget{
		url:     tracesURL(base(d, "baseUrl")),
		headers: map[string]string{"space_id": v["spaceKey"], "api_key": v["apiKey"]},
		resource: []attribute.KeyValue{attribute.String("model_id", v["modelId"]),
			attribute.String("openinference.project.name", v["modelId"])},
		extra: openInferenceAttributes,
	})
}

// openInferenceAttributes are the OpenInference conventions of an LLM span.
func openInferenceAttributes(e *event) []attribute.KeyValue {
	g := e.Generation
	a := []attribute.KeyValue{
		attribute.String("openinference.span.kind", "LLM"),
		attribute.String("llm.model_name", g.Model),
		attribute.String("llm.provider", g.Provider),
		attribute.Int64("llm.token_count.prompt", g.PromptTokens),
		attribute.Int64("llm.token_count.completion", g.CompletionTokens),
		attribute.Int64("llm.token_count.total", g.PromptTokens+g.CompletionTokens),
		attribute.Float64("llm.cost.total", usd(g.Cost)),
	}
	if !e.privacy {
		if len(e.Input) > 0 {
			a = append(a, attribute.String("input.value", string(e.Input)), attribute.String("input.mime_type", "application/json"))
		}
		a = append(a, attribute.String("output.value", e.Output), attribute.String("output.mime_type", "text/plain"))
	}
	return a
}

// deliverBraintrust sends to Braintrust's OTLP endpoint into the project.
func deliverBraintrust(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	return exportOTLP(ctx, s, d, evs, otlpTarget{
		url:     base(d, "baseUrl") + "/otel/v1/traces",
		headers: map[string]string{"Authorization": "Bearer " + v["apiKey"], "x-bt-parent": "project_id:" + v["projectId"]},
	})
}

// deliverGrafana sends to a Grafana Cloud OTLP gateway, Basic auth of the
// instance id and the access policy token.
func deliverGrafana(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	return exportOTLP(ctx, s, d, evs, otlpTarget{
		url:     base(d, "baseUrl") + "/otlp/v1/traces",
		headers: map[string]string{"Authorization": basic(v["instanceId"], v["apiKey"])},
	})
}

// newRelicEndpoints are New Relic's OTLP endpoints by region.
var newRelicEndpoints = map[string]string{"us": "https://otlp.nr-data.net:4318", "eu": "https://otlp.eu01.nr-data.net:4318"}

// deliverNewRelic sends to New Relic's OTLP endpoint of the region (or
// baseUrl), with the license key as api-key.
func deliverNewRelic(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	endpoint := v["baseUrl"]
	if endpoint == "" {
		endpoint = newRelicEndpoints[v["region"]]
	}
	return exportOTLP(ctx, s, d, evs, otlpTarget{url: tracesURL(endpoint), headers: map[string]string{"api-key": v["licenseKey"]}})
}

// deliverSentry sends to the project's OTLP endpoint, authenticated with
// the DSN's public key.
func deliverSentry(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	dsn, err := url.Parse(v["dsn"])
	if err != nil || dsn.User == nil || dsn.User.Username() == "" {
		return failed(errBadDSN)
	}
	return exportOTLP(ctx, s, d, evs, otlpTarget{url: tracesURL(v["otlpEndpoint"]),
		headers: map[string]string{"x-sentry-auth": "sentry sentry_key=" + dsn.User.Username()}})
}

// deliverWeave sends to W&B Weave's OTLP endpoint, into entity/project.
func deliverWeave(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	return exportOTLP(ctx, s, d, evs, otlpTarget{
		url:     base(d, "baseUrl") + "/otel/v1/traces",
		headers: map[string]string{"Authorization": basic("api", v["apiKey"]), "project_id": v["entity"] + "/" + v["project"]},
	})
}
