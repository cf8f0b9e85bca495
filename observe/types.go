package observe

import (
	"context"
	"errors"
	"slices"
	"time"

	"gatehouse"
)

// The registry of destination types: for each type, how it delivers and
// what it sends. Its configuration keys, defaults and label are the
// domain's table (gatehouse.DestinationConfigKeys, DestinationTypeLabel),
// which the API's validation reads: the root package cannot import this
// one, so the two tables are kept as one by TestRegistryCoversEveryType,
// which fails when the domain accepts a type that has no delivery here
// (or the reverse), and by the tests that check the OpenAPI enum and the
// README's table against Types.

// Type is a destination type as the registry holds it.
type Type struct {
	Name  string // as the API names it: "datadog"
	Label string // for people: "Datadog"
	// Required and Optional are its configuration keys; Defaults the
	// values of optional keys left out; Secret the keys sealed at rest and
	// masked in answers.
	Required, Optional []string
	Defaults           map[string]string
	Secret             []string
	// Sends says, for the README, what a generation becomes and where.
	Sends   string
	deliver deliverFunc
}

// deliverFunc makes one attempt to deliver a batch of events (one
// destination's) and says how it went.
type deliverFunc func(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome

// outcome is how an attempt went.
type outcome struct {
	status     int           // the service's HTTP status; 0 for none (network error, or nothing sent)
	retryAfter time.Duration // what the service asked to wait
	err        error
	permanent  bool   // err cannot change by trying again (a bad configuration)
	answer     string // the start of the service's answer, for the test action
	// delivered is, when the attempt failed, how many of the batch's
	// first events were received nonetheless, and oneByOne that the
	// type sends a request an event (the one after them failed, those
	// after it were not sent); 0 and false for a type that sends the batch
	// in one request.
	delivered int
	oneByOne  bool
}

func (o outcome) ok() bool { return o.err == nil && o.status >= 200 && o.status < 300 }

// failed is the outcome of a delivery that cannot be made as configured.
func failed(err error) outcome { return outcome{err: err, permanent: true} }

// registry holds, for every type, its delivery and what it sends.
var registry = map[string]struct {
	sends   string
	deliver deliverFunc
}{
	"arize":          {"OTLP/HTTP (protobuf) span with OpenInference and GenAI attributes to `{baseUrl}/v1/traces`, headers `space_id` and `api_key`, resource `model_id`", deliverArize},
	"braintrust":     {"OTLP/HTTP span with GenAI attributes to `{baseUrl}/otel/v1/traces`, `Authorization: Bearer`, `x-bt-parent: project_id:{projectId}`", deliverBraintrust},
	"clickhouse":     {"rows `INSERT INTO {database}.{table} FORMAT JSONEachRow` over the HTTP interface at `host` (table created if missing), `X-ClickHouse-User`/`X-ClickHouse-Key`; a ReplacingMergeTree keyed by the generation id, so a re-sent row merges into one", deliverClickHouse},
	"datadog":        {"LLM Observability spans (`kind: llm`) to `{url}/api/intake/llm-obs/v1/trace/spans`, `DD-API-KEY`, `ml_app`", deliverDatadog},
	"grafana":        {"OTLP/HTTP span with GenAI attributes to `{baseUrl}/otlp/v1/traces`, Basic `instanceId:apiKey`", deliverGrafana},
	"langfuse":       {"OTLP/HTTP span with GenAI and `langfuse.*` attributes to `{baseUrl}/api/public/otel/v1/traces`, Basic `publicKey:secretKey`", deliverLangfuse},
	"langsmith":      {"an `llm` run (`post`) to `{endpoint}/runs/batch`, `x-api-key`, `X-Tenant-Id` = `workspaceId`, `session_name` = `project`", deliverLangSmith},
	"newrelic":       {"OTLP/HTTP span with GenAI attributes to `otlp.nr-data.net` (`region` us) or `otlp.eu01.nr-data.net` (eu), port 4318, or `{baseUrl}/v1/traces`, header `api-key`", deliverNewRelic},
	"opik":           {"a trace and its `llm` span to `{baseUrl}/v1/private/traces/batch` and `/spans/batch` (UUIDv7 ids), `authorization` = `apiKey`, `Comet-Workspace`", deliverOpik},
	"otel-collector": {"OTLP/HTTP (protobuf) span with GenAI attributes to `{endpoint}/v1/traces`", deliverOTelCollector},
	"posthog":        {"`$ai_generation` events to `{endpoint}/batch/` (`api_key` in the body, `uuid` for deduplication)", deliverPostHog},
	"ramp":           {"the generation as JSON (the webhook's body, in `generations`) to `baseUrl`, `Authorization: Bearer`", deliverRamp},
	"s3":             {"a JSON Lines object (one webhook body a line) under `pathTemplate`, with the AWS SDK (SigV4); `endpoint` for S3-compatible stores (path-style)", deliverS3},
	"sentry":         {"OTLP/HTTP span with GenAI attributes to `otlpEndpoint`, `x-sentry-auth: sentry sentry_key=` the DSN's public key", deliverSentry},
	"snowflake":      {"`INSERT` of rows (a VARIANT `PAYLOAD`) through the SQL API `/api/v2/statements` at `https://{account}.snowflakecomputing.com` or `baseUrl` (table created if missing), `Authorization: Bearer` (programmatic access token), `requestId` for deduplication", deliverSnowflake},
	"weave":          {"OTLP/HTTP span with GenAI attributes to `{baseUrl}/otel/v1/traces`, Basic `api:apiKey`, header `project_id: {entity}/{project}`", deliverWeave},
	"webhook":        {"the webhook's JSON body (below), POST or PUT to `url`, `Idempotency-Key` = the generation id", deliverWebhook},
}

// Types returns every destination type, sorted by name.
func Types() []Type {
	var out []Type
	for _, name := range gatehouse.DestinationTypes() {
		r, ok := registry[name]
		if !ok {
			continue // TestRegistryCoversEveryType fails
		}
		req, opt, def, _ := gatehouse.DestinationConfigKeys(name)
		t := Type{Name: name, Label: gatehouse.DestinationTypeLabel(name), Required: req, Optional: opt,
			Defaults: def, Sends: r.sends, deliver: r.deliver}
		for _, k := range slices.Concat(req, opt) {
			if gatehouse.IsSecretConfigKey(k) {
				t.Secret = append(t.Secret, k)
			}
		}
		out = append(out, t)
	}
	return out
}

// deliverer returns the delivery of a type; nil for a type without one.
func deliverer(typ string) deliverFunc { return registry[typ].deliver }

// DeliveredTypes returns the destination types whose events are delivered,
// sorted: since every type delivers, gatehouse.DestinationTypes().
func DeliveredTypes() []string {
	var out []string
	for _, t := range Types() {
		out = append(out, t.Name)
	}
	return out
}

// errBadURL stands for any invalid configured URL: the URL itself may hold
// a credential, so no error names it.
var errBadURL = errors.New("the configured URL is not an absolute http(s) URL")
