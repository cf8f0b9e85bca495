// Activity and analytics through the official client: analytics.getUserActivity
// (GET /activity), analytics.getAnalyticsMeta (GET /analytics/meta) and
// analytics.queryAnalytics (POST /analytics/query), over usage made with
// chat.send against a local OpenAI-compatible upstream (cmd/fakellm). Every
// answer is parsed by the SDK (its own zod schemas), and the raw JSON is
// checked against the key sets of those schemas: the SDK would silently drop
// a field it does not know.
//
// Typed statuses not exercised here:
// - 500: no input may cause a 500 (API.md §1); not faked.
//
// The SDK 1.3.19 types the rows of queryAnalytics as empty objects and
// strips their fields; the rows' content is checked on the raw answer.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import * as operations from "@openrouter/sdk/models/operations";

import {
  REPO_ROOT,
  api,
  call,
  client,
  createKey,
  fails,
  freePort,
  models,
  sleep,
  startServer,
  uniq,
  useServer,
} from "./harness.mjs";

const execFileP = promisify(execFile);

// The upstream starts before the server: useServer runs prepare first
// (Node may run a file's before hooks concurrently) and adds what it
// returns to the server's environment.
const upstream = {};
async function prepare() {
  const env = {};
  upstream.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-analytics-"));
  const bin = path.join(upstream.dir, "fakellm");
  await execFileP("go", ["build", "-o", bin, "./cmd/fakellm"], { cwd: REPO_ROOT });
  const port = await freePort();
  upstream.proc = spawn(bin, ["--addr", `127.0.0.1:${port}`], { stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/v1/models`)).ok) break;
    } catch {}
    if (i > 200) throw new Error("fakellm did not start");
    await sleep(50);
  }
  env.GATEHOUSE_PROVIDERS_FILE = path.join(upstream.dir, "providers.yaml");
  fs.writeFileSync(env.GATEHOUSE_PROVIDERS_FILE, `providers:
  - id: fake
    base_url: http://127.0.0.1:${port}/v1
    models:
      - id: echo
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
`);
  return env;
}
const ctx = useServer({ prepare });
after(() => {
  upstream.proc?.kill("SIGTERM");
  if (upstream.dir) fs.rmSync(upstream.dir, { recursive: true, force: true });
});

// The keys of the object schema inside an SDK inbound schema (an object
// piped into a renaming transform).
const schemaKeys = (schema) => Object.keys((schema.in ?? schema).shape).sort();
const today = () => new Date().toISOString().slice(0, 10);

// Org A's usage: a key of the default workspace says "hello there gateway"
// (3 prompt tokens at $0.001, "You said: hello there gateway" 5 completion
// tokens at $0.002: $0.013), a key of workspace team says "again" (1 + 3
// tokens: $0.007).
const world = {};
async function makeUsage() {
  if (world.ready) return world;
  const sdk = ctx.org.sdk;
  world.team = (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: "Team", slug: uniq("team") } }))).data;
  world.k1 = await createKey(sdk);
  world.k2 = await createKey(sdk, { workspaceId: world.team.id });
  const send = (key, content) => client(ctx.server, key).chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content }] } });
  const first = await send(world.k1.key, "hello there gateway");
  assert.equal(first.usage.completionTokens, 5);
  await send(world.k2.key, "again");
  world.ready = true;
  return world;
}

describe("analytics.getUserActivity (GET /activity)", () => {
  it("usage by UTC day, model and endpoint, readable right after the calls, in the SDK's ActivityResponse", async () => {
    await makeUsage();
    const res = await call("analyticsGetUserActivity", () => ctx.org.sdk.analytics.getUserActivity());
    assert.deepEqual(res.data, [{
      date: today(), model: "fake/echo", modelPermaslug: "fake/echo", endpointId: "fake", providerName: "fake",
      usage: 0.02, byokUsageInference: 0, requests: 2, promptTokens: 4, completionTokens: 8, reasoningTokens: 0,
    }]);
    const raw = await api(ctx.server, "GET", "/activity", { key: ctx.org.mgmtKey });
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(Object.keys(raw.json).sort(), ["data"]);
    assert.deepEqual(Object.keys(raw.json.data[0]).sort(), schemaKeys(models.ActivityItem$inboundSchema).filter((k) => k !== "workspace_id"));
    assert.ok(models.ActivityResponse$inboundSchema.safeParse(raw.json).success);
  });

  it("filters by key, workspace and date, and splits by workspace", async () => {
    const { k1, k2, team } = await makeUsage();
    const sdk = ctx.org.sdk;
    let res = await call("analyticsGetUserActivity", () => sdk.analytics.getUserActivity({ apiKeyHash: k1.data.hash }));
    assert.deepEqual(res.data.map((i) => [i.usage, i.requests]), [[0.013, 1]]);
    res = await call("analyticsGetUserActivity", () => sdk.analytics.getUserActivity({ workspaceId: team.id }));
    assert.deepEqual(res.data.map((i) => [i.usage, i.requests]), [[0.007, 1]]);
    res = await call("analyticsGetUserActivity", () => sdk.analytics.getUserActivity({ date: today() }));
    assert.equal(res.data[0].requests, 2);
    res = await call("analyticsGetUserActivity", () => sdk.analytics.getUserActivity({ groupBy: "workspace" }));
    const byWorkspace = Object.fromEntries(res.data.map((i) => [i.workspaceId, i.usage]));
    assert.equal(byWorkspace[team.id], 0.007);
    assert.equal(byWorkspace[k1.data.workspaceId], 0.013);
    assert.equal(res.data.length, 2);
    res = await call("analyticsGetUserActivity", () => sdk.analytics.getUserActivity({ apiKeyHash: k2.data.hash, workspaceId: "default" }));
    assert.deepEqual(res.data, [], "the team key's calls are not in the default workspace");
  });

  it("another organization sees none of it", async () => {
    await makeUsage();
    const res = await call("analyticsGetUserActivity", () => ctx.foreign.sdk.analytics.getUserActivity());
    assert.deepEqual(res.data, []);
  });

  it("typed errors: 400 bad date or key hash, 401 unknown key, 403 regular key, 404 workspace of another organization", async () => {
    const { k1, team } = await makeUsage();
    const sdk = ctx.org.sdk;
    let err = await fails("analyticsGetUserActivity", 400, () => sdk.analytics.getUserActivity({ date: "2000-01-01" }), "date out of the window");
    assert.match(err.error.message, /^date: /);
    err = await fails("analyticsGetUserActivity", 400, () => sdk.analytics.getUserActivity({ date: "01/02/2026" }), "date not YYYY-MM-DD");
    assert.match(err.error.message, /YYYY-MM-DD/);
    await fails("analyticsGetUserActivity", 400, () => sdk.analytics.getUserActivity({ apiKeyHash: "abc123" }), "not a key hash");
    await fails("analyticsGetUserActivity", 401, () => ctx.badMgmt.analytics.getUserActivity());
    await fails("analyticsGetUserActivity", 403, () => client(ctx.server, k1.key).analytics.getUserActivity());
    await fails("analyticsGetUserActivity", 404, () => ctx.foreign.sdk.analytics.getUserActivity({ workspaceId: team.id }), "another organization's workspace");
    await fails("analyticsGetUserActivity", 404, () => sdk.analytics.getUserActivity({ workspaceId: "no-such-workspace" }), "unknown slug");
  });
});

describe("analytics.getAnalyticsMeta (GET /analytics/meta)", () => {
  it("lists metrics, dimensions, operators and granularities in the SDK's shape", async () => {
    const res = await call("analyticsGetAnalyticsMeta", () => ctx.org.sdk.analytics.getAnalyticsMeta());
    const names = (list) => list.map((x) => x.name);
    assert.ok(names(res.data.metrics).includes("request_count"));
    assert.ok(names(res.data.metrics).includes("total_usage"));
    assert.deepEqual(names(res.data.granularities), ["minute", "hour", "day", "week", "month"]);
    assert.deepEqual(names(res.data.operators).sort(), ["eq", "gt", "gte", "in", "lt", "lte", "neq", "not_in"]);
    for (const m of res.data.metrics) {
      assert.ok(["number", "currency", "latency", "throughput"].includes(m.displayFormat), `${m.name}: ${m.displayFormat}`);
      assert.equal(typeof m.isRate, "boolean");
    }
    const raw = await api(ctx.server, "GET", "/analytics/meta", { key: ctx.org.mgmtKey });
    const d = raw.json.data;
    assert.deepEqual(Object.keys(d).sort(), schemaKeys(operations.GetAnalyticsMetaData$inboundSchema));
    assert.deepEqual(Object.keys(d.metrics[0]).sort(), schemaKeys(operations.Metric$inboundSchema));
    assert.deepEqual(Object.keys(d.dimensions[0]).sort(), schemaKeys(operations.Dimension$inboundSchema));
    assert.deepEqual(Object.keys(d.granularities[0]).sort(), schemaKeys(operations.Granularity$inboundSchema));
    assert.deepEqual(Object.keys(d.operators[0]).sort(), schemaKeys(operations.Operator$inboundSchema));
  });

  it("typed errors: 401 unknown key, 403 regular key", async () => {
    const { k1 } = await makeUsage();
    await fails("analyticsGetAnalyticsMeta", 401, () => ctx.badMgmt.analytics.getAnalyticsMeta());
    await fails("analyticsGetAnalyticsMeta", 403, () => client(ctx.server, k1.key).analytics.getAnalyticsMeta());
  });
});

describe("analytics.queryAnalytics (POST /analytics/query)", () => {
  const hour = 3600_000;
  const body = (extra = {}) => ({ requestBody: { metrics: ["request_count", "total_usage"], ...extra } });

  it("metrics by dimension and day: the SDK parses the answer; the raw rows hold the values", async () => {
    const { k1 } = await makeUsage();
    const sdk = ctx.org.sdk;
    const timeRange = { start: new Date(Date.now() - hour), end: new Date(Date.now() + hour) };
    const res = await call("analyticsQueryAnalytics", () => sdk.analytics.queryAnalytics(body({ dimensions: ["model"], granularity: "day", timeRange })));
    assert.equal(res.data.data.length, 1);
    assert.deepEqual({ ...res.data.metadata, queryTimeMs: 0 }, { queryTimeMs: 0, rowCount: 1, truncated: false });
    assert.deepEqual(res.data.warnings, []);

    const wire = { metrics: ["request_count", "total_usage"], dimensions: ["api_key_id"], granularity: "day",
      time_range: { start: timeRange.start.toISOString(), end: timeRange.end.toISOString() },
      filters: [{ field: "model", operator: "eq", value: "fake/echo" }], order_by: { field: "total_usage", direction: "desc" } };
    const raw = await api(ctx.server, "POST", "/analytics/query", { key: ctx.org.mgmtKey, body: wire });
    assert.equal(raw.status, 200, raw.text);
    assert.deepEqual(Object.keys(raw.json.data).sort(), ["data", "metadata", "warnings"]);
    assert.deepEqual(Object.keys(raw.json.data.metadata).sort(), schemaKeys(operations.Metadata$inboundSchema));
    assert.ok(operations.QueryAnalyticsResponse$inboundSchema.safeParse(raw.json).success);
    assert.deepEqual(raw.json.data.data[0], { date__day: today(), api_key_id: k1.data.hash, request_count: 1, total_usage: 0.013 });
    assert.equal(raw.json.data.data.length, 2);
  });

  it("limits, warnings, and another organization's view", async () => {
    await makeUsage();
    const sdk = ctx.org.sdk;
    let res = await call("analyticsQueryAnalytics", () => sdk.analytics.queryAnalytics(body({ dimensions: ["api_key_id"], limit: 1 })));
    assert.deepEqual([res.data.data.length, res.data.metadata.truncated], [1, true]);
    res = await call("analyticsQueryAnalytics", () => sdk.analytics.queryAnalytics(body({
      filters: [{ field: "api_key_id", operator: "in", value: ["not-a-hash"] }] })));
    assert.equal(res.data.warnings.length, 1);
    assert.match(res.data.warnings[0], /not-a-hash/);
    const raw = await api(ctx.server, "POST", "/analytics/query", { key: ctx.foreign.mgmtKey, body: { metrics: ["request_count"] } });
    assert.deepEqual(raw.json.data.data, [{ request_count: 0 }]);
  });

  it("typed errors: 400 bad query, 401 unknown key, 403 regular key", async () => {
    const { k1 } = await makeUsage();
    const sdk = ctx.org.sdk;
    let err = await fails("analyticsQueryAnalytics", 400, () => sdk.analytics.queryAnalytics(body({ metrics: ["p99_latency"] })), "unknown metric");
    assert.match(err.error.message, /^metrics\[0\]: /);
    err = await fails("analyticsQueryAnalytics", 400, () => sdk.analytics.queryAnalytics(body({ dimensions: ["model", "provider", "user"] })), "three dimensions");
    assert.match(err.error.message, /^dimensions: /);
    err = await fails("analyticsQueryAnalytics", 400, () => sdk.analytics.queryAnalytics(body({ classifierDimensions: { classifierId: "c" } })), "classifiers");
    assert.match(err.error.message, /^classifier_dimensions: /);
    await fails("analyticsQueryAnalytics", 401, () => ctx.badMgmt.analytics.queryAnalytics(body()));
    await fails("analyticsQueryAnalytics", 403, () => client(ctx.server, k1.key).analytics.queryAnalytics(body()));
  });

  it("408 once a query outlives GATEHOUSE_ANALYTICS_TIMEOUT", async () => {
    const server = await startServer({ env: { GATEHOUSE_ANALYTICS_TIMEOUT: "1ns" } });
    try {
      const err = await fails("analyticsQueryAnalytics", 408, () => client(server, server.bootstrapKey).analytics.queryAnalytics(body()), "timeout");
      assert.match(err.error.message, /GATEHOUSE_ANALYTICS_TIMEOUT/);
    } finally {
      await server.stop();
    }
  });
});
