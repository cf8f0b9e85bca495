package observe

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"gatehouse"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"github.com/google/uuid"
)

// The types that store rows or objects: ClickHouse and Snowflake over
// their HTTP SQL interfaces, S3 through the AWS SDK.

// row is a generation as a row or a JSON line: the webhook's body.
func row(e *event) WebhookPayload { return webhookPayload(e) }

// rawRequest is a request with a body as given.
func rawRequest(method, rawURL string, d *gatehouse.Destination, body []byte, contentType string, set map[string]string) (*request, error) {
	u, err := url.Parse(rawURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, errBadURL
	}
	h := http.Header{"User-Agent": {"gatehouse"}}
	for k, v := range d.Config.Headers {
		h.Set(k, v)
	}
	h.Set("Content-Type", contentType)
	for k, v := range set {
		h.Set(k, v)
	}
	return &request{method: method, url: u.String(), header: h, body: body}, nil
}

// tableMade reports whether this process made the destination's table as
// configured; markTable remembers that it did.
func (s *sender) tableMade(d *gatehouse.Destination, key string) bool {
	_, ok := s.tables.Load(d.ID + "\x00" + key)
	return ok
}

func (s *sender) markTable(d *gatehouse.Destination, key string) {
	s.tables.Store(d.ID+"\x00"+key, true)
}

// clickHouseTable is the table a ClickHouse destination fills: a
// ReplacingMergeTree keyed by the generation id, so that a generation sent
// twice is one row once merged (SELECT ... FINAL reads it so at once).
const clickHouseTable = `CREATE TABLE IF NOT EXISTS %s (
	id String, event String, organization_id String, workspace_id String, model String, provider String,
	upstream_id Nullable(String), api_key_hash String, api_key_name String, user_id Nullable(String),
	external_user Nullable(String), session_id Nullable(String), prompt_tokens Int64, completion_tokens Int64,
	total_tokens Int64, total_cost Float64, byok UInt8, streamed UInt8, status String, finish_reason Nullable(String),
	latency_ms Int64, generation_time_ms Int64, started_at String, ended_at String, created_at String,
	privacy_mode UInt8, input Nullable(String), output Nullable(String)
) ENGINE = ReplacingMergeTree ORDER BY id`

// clickHouseRow is a row as the table takes it (booleans as 0 and 1, the
// messages as their JSON text).
func clickHouseRow(e *event) map[string]any {
	p := row(e)
	b := func(v bool) int {
		if v {
			return 1
		}
		return 0
	}
	var input *string
	if p.Input != nil {
		s := string(p.Input)
		input = &s
	}
	return map[string]any{
		"id": p.ID, "event": p.Event, "organization_id": p.OrganizationID, "workspace_id": p.WorkspaceID,
		"model": p.Model, "provider": p.Provider, "upstream_id": p.UpstreamID, "api_key_hash": p.APIKeyHash,
		"api_key_name": p.APIKeyName, "user_id": p.UserID, "external_user": p.ExternalUser, "session_id": p.SessionID,
		"prompt_tokens": p.PromptTokens, "completion_tokens": p.CompletionTokens, "total_tokens": p.TotalTokens,
		"total_cost": p.TotalCost, "byok": b(p.BYOK), "streamed": b(p.Streamed), "status": p.Status,
		"finish_reason": p.FinishReason, "latency_ms": p.LatencyMS, "generation_time_ms": p.GenerationTimeMS,
		"started_at": p.StartedAt, "ended_at": p.EndedAt, "created_at": p.CreatedAt, "privacy_mode": b(p.PrivacyMode),
		"input": input, "output": p.Output,
	}
}

// deliverClickHouse inserts the events as JSONEachRow rows through the
// HTTP interface at config.host, creating the table first if this process
// has not.
func deliverClickHouse(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	table := "`" + v["database"] + "`.`" + v["table"] + "`"
	auth := map[string]string{"X-ClickHouse-User": v["username"], "X-ClickHouse-Key": v["password"]}
	host := base(d, "host") + "/"
	if !s.tableMade(d, table) {
		r, err := rawRequest(http.MethodPost, host, d, fmt.Appendf(nil, clickHouseTable, table), "text/plain; charset=utf-8", auth)
		if err != nil {
			return failed(err)
		}
		if o := s.do(ctx, r); !o.ok() {
			return o
		}
		s.markTable(d, table)
	}
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, e := range evs {
		if err := enc.Encode(clickHouseRow(e)); err != nil {
			return failed(err)
		}
	}
	q := url.Values{"query": {"INSERT INTO " + table + " FORMAT JSONEachRow"}}
	r, err := rawRequest(http.MethodPost, host+"?"+q.Encode(), d, body.Bytes(), "application/x-ndjson", auth)
	if err != nil {
		return failed(err)
	}
	return s.do(ctx, r)
}

// snowflakeTable is the table a Snowflake destination fills.
const snowflakeTable = `CREATE TABLE IF NOT EXISTS %s (GENERATION_ID STRING NOT NULL, CREATED_AT TIMESTAMP_TZ, PAYLOAD VARIANT)`

// snowflakeURL is the SQL API's statements URL of the account (or of
// baseUrl).
func snowflakeURL(d *gatehouse.Destination) string {
	b := base(d, "baseUrl")
	if b == "" {
		b = "https://" + strings.ToLower(d.Config.Values["account"]) + ".snowflakecomputing.com"
	}
	return b + "/api/v2/statements"
}

// snowflakeStatement runs one statement through the SQL API; requestID
// makes a re-sent statement run once.
func snowflakeStatement(ctx context.Context, s *sender, d *gatehouse.Destination, stmt string, bindings map[string]any, requestID string) outcome {
	v := d.Config.Values
	body := map[string]any{"statement": stmt, "timeout": 60, "database": v["database"], "schema": v["schema"],
		"warehouse": v["warehouse"]}
	if len(bindings) > 0 {
		body["bindings"] = bindings
	}
	r, err := newRequest(http.MethodPost, snowflakeURL(d)+"?"+url.Values{"requestId": {requestID}}.Encode(), d, body,
		map[string]string{"Authorization": "Bearer " + v["token"], "X-Snowflake-Authorization-Token-Type": "PROGRAMMATIC_ACCESS_TOKEN",
			"Accept": "application/json"})
	if err != nil {
		return failed(err)
	}
	return s.do(ctx, r)
}

// deliverSnowflake inserts one row an event (the generation id, when it
// was made, and the webhook's body as a VARIANT) with bound values,
// creating the table first if this process has not.
func deliverSnowflake(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	table := v["database"] + "." + v["schema"] + "." + v["table"]
	if !s.tableMade(d, table) {
		if o := snowflakeStatement(ctx, s, d, fmt.Sprintf(snowflakeTable, table), nil, uuid.NewString()); !o.ok() {
			return o
		}
		s.markTable(d, table)
	}
	bindings := map[string]any{}
	values := make([]string, 0, len(evs))
	ids := ""
	for i, e := range evs {
		payload, err := json.Marshal(row(e))
		if err != nil {
			return failed(err)
		}
		for j, val := range []string{e.Generation.ID, timestamp(e.Generation.CreatedAt), string(payload)} {
			bindings[fmt.Sprint(3*i+j+1)] = map[string]string{"type": "TEXT", "value": val}
		}
		values = append(values, "(?, ?, ?)")
		ids += e.Generation.ID + " "
	}
	stmt := "INSERT INTO " + table + " (GENERATION_ID, CREATED_AT, PAYLOAD) SELECT column1, TO_TIMESTAMP_TZ(column2), PARSE_JSON(column3) FROM VALUES " +
		strings.Join(values, ", ")
	return snowflakeStatement(ctx, s, d, stmt, bindings, uuid.NewSHA1(idNamespace, []byte(d.ID+" "+ids)).String())
}

// s3Key is where a batch goes: pathTemplate with its placeholders filled
// (the time is the first event's end, UTC), then the first generation's id.
func s3Key(d *gatehouse.Destination, evs []*event) string {
	v := d.Config.Values
	_, end := evs[0].times()
	end = end.UTC()
	tmpl := v["pathTemplate"]
	if tmpl == "" {
		tmpl = "{prefix}/{date}"
	}
	key := strings.NewReplacer("{prefix}", v["prefix"], "{date}", end.Format(time.DateOnly),
		"{year}", end.Format("2006"), "{month}", end.Format("01"), "{day}", end.Format("02"), "{hour}", end.Format("15"),
		"{workspace_id}", evs[0].Generation.WorkspaceID, "{destination_id}", d.ID).Replace(tmpl)
	key = strings.Trim(strings.ReplaceAll(key, "//", "/"), "/")
	return key + "/" + batchID(evs) + ".jsonl"
}

// deliverS3 puts one JSON Lines object a batch with the AWS SDK's S3
// client (SigV4), path-style when an endpoint is configured (S3-compatible
// stores). The key derives from the batch, so a re-sent batch overwrites
// its object.
func deliverS3(ctx context.Context, s *sender, d *gatehouse.Destination, evs []*event) outcome {
	v := d.Config.Values
	var body bytes.Buffer
	enc := json.NewEncoder(&body)
	for _, e := range evs {
		if err := enc.Encode(row(e)); err != nil {
			return failed(err)
		}
	}
	region := v["region"]
	if region == "" {
		region = "us-east-1"
	}
	cfg := aws.Config{Region: region, HTTPClient: s.recording, RetryMaxAttempts: 1,
		Credentials: credentials.NewStaticCredentialsProvider(v["accessKeyId"], v["secretAccessKey"], v["sessionToken"])}
	client := s3.NewFromConfig(cfg, func(o *s3.Options) {
		if ep := v["endpoint"]; ep != "" {
			o.BaseEndpoint = aws.String(ep)
			o.UsePathStyle = true
		}
	})
	ctx, rec := withRecording(ctx)
	_, err := client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(v["bucketName"]), Key: aws.String(s3Key(d, evs)),
		Body: bytes.NewReader(body.Bytes()), ContentType: aws.String("application/x-ndjson"),
	})
	o := rec.outcome(err)
	if err != nil {
		var re *smithyhttp.ResponseError
		if errors.As(err, &re) {
			o.status = re.HTTPStatusCode()
		}
		o.err = errors.New(describeS3(err))
	}
	return o
}

// describeS3 is the S3 client's error without the request's URL.
func describeS3(err error) string {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return fmt.Sprintf("S3 answered %d: %v", re.HTTPStatusCode(), re.Err)
	}
	return describe(err)
}
