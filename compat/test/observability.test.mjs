// Observability destinations through the official client.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.
// - 409 on observabilityUpdate (PATCH /observability/destinations/{id}): the
//   only 409 of destinations is the per-type limit (a sixth live destination of
//   a type in a workspace), reached on create. An update cannot change `type`
//   or `workspace_id` (API.md §3), so it never adds a live destination of a
//   type; API.md lists 400 401 404 for update. The server never answers 409
//   there by design.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  RFC3339_UTC,
  UUID,
  api,
  assertErrorBody,
  call,
  client,
  createKey,
  defaultWorkspace,
  fails,
  failsUntyped,
  isUnknown,
  models,
  randomUUID,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

// One valid config per type (API.md §2), secrets long enough (16 or more
// characters) to be masked as asterisks + their last 4.
const CONFIGS = {
  arize: { apiKey: "arize-api-key-0123456789", spaceKey: "space-1", modelId: "model-1" },
  braintrust: { apiKey: "bt-api-key-0123456789ab", projectId: "proj-1" },
  clickhouse: { host: "https://clickhouse.example.com:8443", database: "traces", username: "writer", password: "clickhouse-password-42" },
  datadog: { apiKey: "dd-api-key-0123456789abcdef", mlApp: "gatehouse" },
  grafana: { apiKey: "glc-grafana-key-0123456789", instanceId: "123456" },
  langfuse: { publicKey: "pk-lf-public-0001", secretKey: "sk-lf-secret-abcdefghij", baseUrl: "https://cloud.langfuse.com" },
  langsmith: { apiKey: "lsv2-langsmith-key-012345", project: "compat" },
  newrelic: { licenseKey: "nr-license-key-0123456789", region: "eu" },
  opik: { apiKey: "opik-api-key-0123456789", projectName: "compat", workspace: "team" },
  "otel-collector": { endpoint: "https://otel.example.com/v1/traces", headers: { Authorization: "Bearer otel-token-0123456789" } },
  posthog: { apiKey: "phc-posthog-key-0123456789" },
  ramp: { apiKey: "ramp-api-key-0123456789" },
  s3: { accessKeyId: "AKIAEXAMPLE0001", secretAccessKey: "s3-secret-access-key-0123456789", bucketName: "traces-bucket", region: "eu-west-1" },
  sentry: { dsn: "https://publickey0123456789@o1.ingest.sentry.io/42", otlpEndpoint: "https://o1.ingest.sentry.io/api/42/otlp" },
  snowflake: { account: "xy12345", token: "snowflake-token-0123456789" },
  weave: { apiKey: "weave-api-key-0123456789", entity: "team", project: "compat" },
  webhook: { url: "https://hooks.example.com/openrouter", method: "PUT", headers: { "X-Hook-Token": "hook-secret-value-123456" } },
};

const SECRET_KEYS = new Set(["apiKey", "secretKey", "password", "token", "licenseKey", "secretAccessKey", "sessionToken"]);
const mask = (s) => (s.length < 16 ? "********" : `********${s.slice(-4)}`);
const HEADER_MASK = "********"; // header values are masked whole

const SCHEMA_NAMES = {
  arize: "Arize", braintrust: "Braintrust", clickhouse: "Clickhouse", datadog: "Datadog", grafana: "Grafana",
  langfuse: "Langfuse", langsmith: "Langsmith", newrelic: "Newrelic", opik: "Opik", "otel-collector": "OtelCollector",
  posthog: "Posthog", ramp: "Ramp", s3: "S3", sentry: "Sentry", snowflake: "Snowflake", weave: "Weave", webhook: "Webhook",
};

// The SDK decodes destinations with a discriminated union that silently
// falls back to {type: "UNKNOWN", isUnknown: true, raw} when the JSON does
// not match the variant of its `type`. Asserts the typed variant, and on
// failure shows why the variant's schema rejected the JSON.
function assertTyped(d, type) {
  if (isUnknown(d) || d?.isUnknown === true || d?.type === "UNKNOWN") {
    const schema = models[`Observability${SCHEMA_NAMES[type]}Destination$inboundSchema`];
    const r = schema?.safeParse(d.raw);
    assert.fail(`the SDK decoded a ${type} destination as its unknown fallback variant.\n` +
      `schema issues: ${r && !r.success ? JSON.stringify(r.error.issues) : "(none: discriminator mismatch)"}\nraw: ${JSON.stringify(d.raw)}`);
  }
  assert.equal(d.type, type);
  assert.match(d.id, UUID);
  assert.match(d.workspaceId, UUID);
  assert.match(d.createdAt, RFC3339_UTC);
  assert.match(d.updatedAt, RFC3339_UTC);
}

async function createDest(sdk, type, fields = {}) {
  const res = await call("observabilityCreate", () => sdk.observability.create({
    createObservabilityDestinationRequest: { name: uniq(type), type, config: CONFIGS[type], ...fields },
  }));
  assertTyped(res.data, type);
  return res.data;
}

async function createWs(sdk) {
  const slug = uniq("ws");
  return (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
}

const DEST_FIELDS = [
  "id", "workspace_id", "name", "type", "config", "enabled", "privacy_mode", "sampling_rate", "api_key_hashes",
  "filter_rules", "regions", "broadcast_generation_cost", "broadcast_generation_identity",
  "broadcast_generation_request_context", "created_at", "updated_at",
];

describe("POST /observability/destinations (observability.create)", () => {
  for (const type of Object.keys(CONFIGS)) {
    it(`201: a ${type} destination decodes as the SDK's typed variant; secrets come back masked`, async () => {
      const ws = await defaultWorkspace(ctx.org.sdk);
      const d = await createDest(ctx.org.sdk, type);
      assert.equal(d.workspaceId, ws.id);
      assert.equal(d.enabled, true);
      assert.equal(d.privacyMode, false);
      assert.equal(d.samplingRate, 1);
      assert.equal(d.apiKeyHashes, null);
      assert.equal(d.filterRules, null);
      assert.deepEqual(d.regions, ["global"]);
      assert.equal(d.broadcastGenerationCost, false);
      for (const [k, v] of Object.entries(CONFIGS[type])) {
        if (k === "headers") {
          for (const [h, hv] of Object.entries(v)) {
            assert.equal(d.config.headers?.[h], HEADER_MASK, `header ${h} must be masked whole`);
          }
        } else if (SECRET_KEYS.has(k)) {
          assert.equal(d.config[k], mask(v), `config.${k} must be masked`);
        } else if (k === "dsn") {
          assert.ok(!d.config.dsn.includes("publickey0123456789"), `the DSN's credentials must be masked: ${d.config.dsn}`);
        } else {
          assert.equal(d.config[k], v, `config.${k} is not a secret and comes back as sent`);
        }
      }
      const got = await call("observabilityGet", () => ctx.org.sdk.observability.get({ id: d.id }));
      assertTyped(got.data, type);
      assert.deepEqual(got.data, d);
      const raw = JSON.stringify((await api(ctx.server, "GET", `/observability/destinations/${d.id}`, { key: ctx.org.mgmtKey })).json);
      for (const [k, v] of Object.entries(CONFIGS[type])) {
        if (SECRET_KEYS.has(k)) assert.ok(!raw.includes(v), `the plaintext of config.${k} must never be returned`);
      }
    });
  }

  it("every common field is present in the JSON (API.md: all required)", async () => {
    const d = await createDest(ctx.org.sdk, "webhook");
    const res = await api(ctx.server, "GET", `/observability/destinations/${d.id}`, { key: ctx.org.mgmtKey });
    const missing = DEST_FIELDS.filter((f) => !(f in res.json.data));
    assert.deepEqual(missing, [], `fields missing from the destination JSON: ${missing.join(", ")}`);
  });

  it("201 with every optional field; region `eu` is read as `europe`", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const key = (await createKey(sdk, { workspaceId: ws.id })).data;
    const filterRules = {
      enabled: true,
      groups: [{ logic: "or", rules: [{ field: "model", operator: "starts_with", value: "openai/" }, { field: "total_cost", operator: "gt", value: 0.5 }, { field: "user_id", operator: "exists" }] }],
    };
    const d = await createDest(sdk, "langfuse", {
      name: "Langfuse EU",
      workspaceId: ws.slug,
      enabled: false,
      privacyMode: true,
      samplingRate: 0.25,
      apiKeyHashes: [key.hash],
      filterRules,
      regions: ["eu", "us"],
      broadcastGenerationCost: true,
      broadcastGenerationIdentity: true,
      broadcastGenerationRequestContext: true,
    });
    assert.equal(d.name, "Langfuse EU");
    assert.equal(d.workspaceId, ws.id);
    assert.equal(d.enabled, false);
    assert.equal(d.privacyMode, true);
    assert.equal(d.samplingRate, 0.25);
    assert.deepEqual(d.apiKeyHashes, [key.hash]);
    assert.deepEqual(JSON.parse(JSON.stringify(d.filterRules)), filterRules);
    assert.deepEqual(d.regions, ["europe", "us"]);
    assert.equal(d.broadcastGenerationCost, true);
    assert.equal(d.broadcastGenerationIdentity, true);
    assert.equal(d.broadcastGenerationRequestContext, true);
  });

  it("400 for invalid destinations, naming the field", async () => {
    const sdk = ctx.org.sdk;
    const bad = (body, what, re) => fails("observabilityCreate", 400, () => sdk.observability.create({ createObservabilityDestinationRequest: { name: "bad", type: "webhook", config: CONFIGS.webhook, ...body } }), what)
      .then((err) => re && assert.match(err.error.message, re));
    await bad({ type: "langfuse", config: { publicKey: "pk-lf-1" } }, "missing required config key", /secretKey/);
    await bad({ config: { ...CONFIGS.webhook, colour: "red" } }, "unknown config key", /colour/);
    await bad({ type: "splunk", config: {} }, "unknown type", /type/);
    await bad({ config: { url: "/relative/path" } }, "relative URL", /url/);
    await bad({ config: { url: "ftp://files.example.com/x" } }, "non-http URL", /url/);
    await bad({ config: { url: "https://hooks.example.com", method: "DELETE" } }, "webhook method", /method/);
    await bad({ samplingRate: 0 }, "sampling rate 0", /sampling_rate/);
    await bad({ samplingRate: 1.5 }, "sampling rate 1.5", /sampling_rate/);
    await bad({ regions: ["mars"] }, "unknown region", /regions/);
    await bad({ filterRules: { groups: [{ rules: [{ field: "colour", operator: "equals", value: "x" }] }] } }, "unknown filter field", /filter_rules/);
    await bad({ filterRules: { groups: [{ rules: [{ field: "model", operator: "equals" }] }] } }, "filter value missing", /filter_rules/);
  });

  it("400 for wrong JSON types names the field as sent (raw; API.md §1 input rules)", async () => {
    const base = { name: "d", type: "webhook", config: CONFIGS.webhook };
    for (const [body, field] of [
      [{ ...base, name: 5 }, "name"],
      [{ ...base, sampling_rate: "0.5" }, "sampling_rate"],
      [{ ...base, privacy_mode: 1 }, "privacy_mode"],
      [{ ...base, regions: "eu" }, "regions"],
      [{ ...base, api_key_hashes: "all" }, "api_key_hashes"],
    ]) {
      const e = assertErrorBody(await api(ctx.server, "POST", "/observability/destinations", { key: ctx.org.mgmtKey, body }), 400, JSON.stringify(body).slice(0, 80));
      assert.ok(e.message.startsWith(`${field}:`), `the message must name the field ${field}: ${e.message}`);
      assert.equal(e.metadata?.field, field, `metadata.field for ${field}`);
    }
  });

  it("401 without a valid key", async () => {
    await fails("observabilityCreate", 401, () => ctx.anon.observability.create({ createObservabilityDestinationRequest: { name: "x", type: "webhook", config: CONFIGS.webhook } }));
  });

  it("403 for a regular key", async () => {
    const rc = client(ctx.server, (await createKey(ctx.org.sdk)).key);
    await fails("observabilityCreate", 403, () => rc.observability.create({ createObservabilityDestinationRequest: { name: "x", type: "webhook", config: CONFIGS.webhook } }));
  });

  it("409 for a sixth live destination of one type in a workspace; a soft-deleted one frees its place", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const made = [];
    for (let i = 0; i < 5; i++) made.push(await createDest(sdk, "webhook", { workspaceId: ws.id }));
    const sixth = () => sdk.observability.create({ createObservabilityDestinationRequest: { name: "sixth", type: "webhook", config: CONFIGS.webhook, workspaceId: ws.id } });
    await fails("observabilityCreate", 409, sixth);
    // Other types and other workspaces are not affected.
    await createDest(sdk, "datadog", { workspaceId: ws.id });
    await createDest(sdk, "webhook", { workspaceId: (await createWs(sdk)).id });
    await call("observabilityDelete", () => sdk.observability.delete({ id: made[0].id }));
    const res = await call("observabilityCreate", sixth);
    assertTyped(res.data, "webhook");
    await fails("observabilityCreate", 409, sixth, "full again");
  });

  it("404 for an unknown or foreign workspace (a status the SDK does not type for this operation)", async () => {
    await failsUntyped(404, () => ctx.org.sdk.observability.create({ createObservabilityDestinationRequest: { name: "x", type: "webhook", config: CONFIGS.webhook, workspaceId: randomUUID() } }), "unknown workspace");
    const theirs = await defaultWorkspace(ctx.foreign.sdk);
    await failsUntyped(404, () => ctx.org.sdk.observability.create({ createObservabilityDestinationRequest: { name: "x", type: "webhook", config: CONFIGS.webhook, workspaceId: theirs.id } }), "foreign workspace");
  });
});

describe("GET /observability/destinations (observability.list)", () => {
  it("lists one workspace's destinations (the default one without workspace_id) as typed variants, with total_count and paging", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const types = ["webhook", "langfuse", "datadog", "otel-collector", "s3"];
    const made = [];
    for (const t of types) made.push(await createDest(sdk, t, { workspaceId: ws.id }));
    const res = await call("observabilityList", () => sdk.observability.list({ workspaceId: ws.id }));
    assert.equal(res.result.totalCount, 5);
    assert.deepEqual(res.result.data.map((d) => d.id), made.map((d) => d.id));
    res.result.data.forEach((d, i) => assertTyped(d, types[i]));
    const page = await call("observabilityList", () => sdk.observability.list({ workspaceId: ws.slug, offset: 2, limit: 2 }));
    assert.equal(page.result.totalCount, 5);
    assert.deepEqual(page.result.data.map((d) => d.id), made.slice(2, 4).map((d) => d.id));
    const inDefault = await createDest(sdk, "posthog");
    const def = await call("observabilityList", () => sdk.observability.list({ limit: 100 }));
    assert.ok(def.result.data.some((d) => d.id === inDefault.id));
    assert.ok(!def.result.data.some((d) => made.some((m) => m.id === d.id)));
    for (const d of def.result.data) assertTyped(d, d.type);
  });

  it("never lists another organization's destinations", async () => {
    const theirs = await createDest(ctx.foreign.sdk, "webhook");
    const mine = await call("observabilityList", () => ctx.org.sdk.observability.list({ limit: 100 }));
    assert.ok(!mine.result.data.some((d) => d.id === theirs.id));
  });

  it("400 for out-of-range paging", async () => {
    await fails("observabilityList", 400, () => ctx.org.sdk.observability.list({ limit: 101 }), "limit 101");
    await fails("observabilityList", 400, () => ctx.org.sdk.observability.list({ offset: -3 }), "offset -3");
  });

  it("401 without a valid key", async () => {
    await fails("observabilityList", 401, () => ctx.anon.observability.list());
  });

  it("404 for an unknown workspace (a status the SDK does not type for this operation)", async () => {
    await failsUntyped(404, () => ctx.org.sdk.observability.list({ workspaceId: randomUUID() }), "unknown workspace");
  });
});

describe("GET /observability/destinations/{id} (observability.get)", () => {
  it("returns the destination", async () => {
    const d = await createDest(ctx.org.sdk, "s3");
    const res = await call("observabilityGet", () => ctx.org.sdk.observability.get({ id: d.id }));
    assertTyped(res.data, "s3");
    assert.equal(res.data.config.bucketName, "traces-bucket");
  });

  it("404: unknown, not a UUID, another organization's", async () => {
    await fails("observabilityGet", 404, () => ctx.org.sdk.observability.get({ id: randomUUID() }), "unknown");
    await fails("observabilityGet", 404, () => ctx.org.sdk.observability.get({ id: "not-a-uuid" }), "not a uuid");
    const theirs = await createDest(ctx.foreign.sdk, "webhook");
    await fails("observabilityGet", 404, () => ctx.org.sdk.observability.get({ id: theirs.id }), "foreign");
  });

  it("401 without a valid key", async () => {
    await fails("observabilityGet", 401, () => ctx.anon.observability.get({ id: randomUUID() }));
  });
});

describe("PATCH /observability/destinations/{id} (observability.update)", () => {
  it("updates fields; config merges key by key; a masked secret sent back means unchanged", async () => {
    const sdk = ctx.org.sdk;
    const d = await createDest(sdk, "langfuse");
    const upd = async (body) => {
      const res = await call("observabilityUpdate", () => sdk.observability.update({ id: d.id, updateObservabilityDestinationRequest: body }));
      assertTyped(res.data, "langfuse");
      return res.data;
    };
    let u = await upd({ name: "Renamed", enabled: false, samplingRate: 0.5, privacyMode: true, regions: ["us"] });
    assert.equal(u.name, "Renamed");
    assert.equal(u.enabled, false);
    assert.equal(u.samplingRate, 0.5);
    assert.equal(u.privacyMode, true);
    assert.deepEqual(u.regions, ["us"]);
    assert.equal(u.type, "langfuse");
    assert.equal(u.workspaceId, d.workspaceId);
    // Moving a destination needs its secrets again, in clear.
    await fails("observabilityUpdate", 400, () => sdk.observability.update({ id: d.id, updateObservabilityDestinationRequest: { config: { baseUrl: "https://attacker.example" } } }), "a move without its secrets");
    u = await upd({ config: { baseUrl: "https://eu.cloud.langfuse.com", secretKey: CONFIGS.langfuse.secretKey } });
    assert.equal(u.config.baseUrl, "https://eu.cloud.langfuse.com");
    assert.equal(u.config.publicKey, CONFIGS.langfuse.publicKey, "keys not sent are kept");
    assert.equal(u.config.secretKey, mask(CONFIGS.langfuse.secretKey), "the secret is kept");
    u = await upd({ config: { secretKey: u.config.secretKey, publicKey: "pk-lf-public-0002" } });
    assert.equal(u.config.secretKey, mask(CONFIGS.langfuse.secretKey), "a masked value sent back leaves the secret unchanged");
    assert.equal(u.config.publicKey, "pk-lf-public-0002");
    u = await upd({ config: { secretKey: "sk-lf-rotated-zyxwvutsrq" } });
    assert.equal(u.config.secretKey, mask("sk-lf-rotated-zyxwvutsrq"));
    u = await upd({ filterRules: { groups: [{ rules: [{ field: "model", operator: "equals", value: "openai/gpt-4o" }] }] } });
    assert.equal(u.filterRules.enabled, true);
    assert.equal(u.filterRules.groups[0].logic, "and");
    u = await upd({ filterRules: null, apiKeyHashes: null });
    assert.equal(u.filterRules, null);
    assert.equal(u.apiKeyHashes, null);
    u = await upd({});
    assert.equal(u.name, "Renamed");
    const got = await call("observabilityGet", () => sdk.observability.get({ id: d.id }));
    assert.deepEqual(got.data, u);
  });

  it("400 for invalid changes; nothing changes", async () => {
    const sdk = ctx.org.sdk;
    const d = await createDest(sdk, "webhook");
    const bad = (body, what, re) => fails("observabilityUpdate", 400, () => sdk.observability.update({ id: d.id, updateObservabilityDestinationRequest: body }), what)
      .then((err) => re && assert.match(err.error.message, re));
    await bad({ samplingRate: 2 }, "sampling rate 2", /sampling_rate/);
    await bad({ config: { colour: "red" } }, "unknown config key", /colour/);
    await bad({ config: { url: "not-a-url" } }, "bad URL", /url/);
    await bad({ regions: ["mars"] }, "unknown region", /regions/);
    const got = await call("observabilityGet", () => sdk.observability.get({ id: d.id }));
    assert.deepEqual(got.data, d);
  });

  it("400 for fields that cannot change: type, workspace_id (raw)", async () => {
    const d = await createDest(ctx.org.sdk, "ramp");
    assertErrorBody(await api(ctx.server, "PATCH", `/observability/destinations/${d.id}`, { key: ctx.org.mgmtKey, body: { type: "datadog" } }), 400, "type");
    assertErrorBody(await api(ctx.server, "PATCH", `/observability/destinations/${d.id}`, { key: ctx.org.mgmtKey, body: { workspace_id: randomUUID() } }), 400, "workspace_id");
  });

  it("401 without a valid key", async () => {
    await fails("observabilityUpdate", 401, () => ctx.anon.observability.update({ id: randomUUID(), updateObservabilityDestinationRequest: { name: "x" } }));
  });

  it("403 for a regular key", async () => {
    const d = await createDest(ctx.org.sdk, "posthog");
    const rc = client(ctx.server, (await createKey(ctx.org.sdk)).key);
    await fails("observabilityUpdate", 403, () => rc.observability.update({ id: d.id, updateObservabilityDestinationRequest: { name: "x" } }));
  });

  it("404: unknown, another organization's (unchanged)", async () => {
    await fails("observabilityUpdate", 404, () => ctx.org.sdk.observability.update({ id: randomUUID(), updateObservabilityDestinationRequest: { name: "x" } }), "unknown");
    const theirs = await createDest(ctx.foreign.sdk, "webhook");
    await fails("observabilityUpdate", 404, () => ctx.org.sdk.observability.update({ id: theirs.id, updateObservabilityDestinationRequest: { name: "hijacked" } }), "foreign");
    const still = await call("observabilityGet", () => ctx.foreign.sdk.observability.get({ id: theirs.id }));
    assert.equal(still.data.name, theirs.name);
  });
});

describe("DELETE /observability/destinations/{id} (observability.delete)", () => {
  it("soft delete: {deleted: true}; afterwards get, update and delete → 404 and list omits it", async () => {
    const sdk = ctx.org.sdk;
    const d = await createDest(sdk, "otel-collector");
    const res = await call("observabilityDelete", () => sdk.observability.delete({ id: d.id }));
    assert.deepEqual({ ...res }, { deleted: true });
    await fails("observabilityGet", 404, () => sdk.observability.get({ id: d.id }), "deleted");
    await fails("observabilityUpdate", 404, () => sdk.observability.update({ id: d.id, updateObservabilityDestinationRequest: { name: "x" } }), "deleted");
    await fails("observabilityDelete", 404, () => sdk.observability.delete({ id: d.id }), "deleted");
    const list = await call("observabilityList", () => sdk.observability.list({ limit: 100 }));
    assert.ok(!list.result.data.some((x) => x.id === d.id));
  });

  it("raw: an empty JSON body may be sent, no body is fine too; the answer is exactly {\"deleted\":true}", async () => {
    const a = await createDest(ctx.org.sdk, "sentry");
    const b = await createDest(ctx.org.sdk, "datadog");
    const withBody = await api(ctx.server, "DELETE", `/observability/destinations/${a.id}`, { key: ctx.org.mgmtKey, body: {} });
    assert.equal(withBody.status, 200, withBody.text);
    assert.deepEqual(withBody.json, { deleted: true });
    const without = await api(ctx.server, "DELETE", `/observability/destinations/${b.id}`, { key: ctx.org.mgmtKey });
    assert.equal(without.status, 200, without.text);
    assert.deepEqual(without.json, { deleted: true });
  });

  it("404: unknown, not a UUID, another organization's (which survives)", async () => {
    await fails("observabilityDelete", 404, () => ctx.org.sdk.observability.delete({ id: randomUUID() }), "unknown");
    await fails("observabilityDelete", 404, () => ctx.org.sdk.observability.delete({ id: "nope" }), "not a uuid");
    const theirs = await createDest(ctx.foreign.sdk, "webhook");
    await fails("observabilityDelete", 404, () => ctx.org.sdk.observability.delete({ id: theirs.id }), "foreign");
    await call("observabilityGet", () => ctx.foreign.sdk.observability.get({ id: theirs.id }));
  });

  it("401 without a valid key", async () => {
    await fails("observabilityDelete", 401, () => ctx.anon.observability.delete({ id: randomUUID() }));
  });
});
