// What an operator meets around the resources (issue #14), through the
// official client: a workspace's default_guardrail_id resolves with
// guardrails.get before and after it is configured; GET /keys honours
// limit; a destination whose secrets the server's key does not open (after
// a restart with another key) is listed and read by the client, marked,
// and fixed by sending its secret again; /healthz and /metrics say which
// build runs.
//
// It adds no operation to OPERATIONS: the calls it makes are recorded with
// the others'. Typed statuses not exercised here: 500 on every operation
// (no input may cause a 500, API.md §1; not faked).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import * as operations from "@openrouter/sdk/models/operations";

import {
  api,
  assertErrorBody,
  assertSdkSchema,
  call,
  client,
  createKey,
  createOrg,
  fails,
  isUnknown,
  models,
  startServer,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

async function createWs(sdk) {
  const slug = uniq("ws");
  return (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
}

describe("a workspace's default_guardrail_id (guardrails.get)", () => {
  it("resolves before it is configured: no rules, created with the workspace, never updated; its assignments are empty", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const res = await call("guardrailsGet", () => sdk.guardrails.get({ id: ws.defaultGuardrailId }));
    const g = res.data;
    assert.equal(g.id, ws.defaultGuardrailId);
    assert.equal(g.workspaceId, ws.id);
    assert.equal(g.name, `Workspace ${ws.id} Default`);
    assert.equal(g.createdAt, ws.createdAt);
    assert.equal(g.updatedAt ?? null, null);
    for (const rule of ["allowedModels", "allowedProviders", "ignoredModels", "ignoredProviders", "limitUsd", "resetInterval"]) {
      assert.equal(g[rule] ?? null, null, `${rule} of an unconfigured default guardrail`);
    }
    const raw = await api(ctx.server, "GET", `/guardrails/${ws.defaultGuardrailId}`, { key: ctx.org.mgmtKey });
    assert.equal(raw.status, 200);
    assertSdkSchema(models.GetGuardrailResponse$inboundSchema, raw.json, "GET /guardrails/{default_guardrail_id}");
    const keys = await call("guardrailsListGuardrailKeyAssignments", () =>
      sdk.guardrails.listGuardrailKeyAssignments({ id: ws.defaultGuardrailId }));
    assert.equal(keys.result.totalCount, 0);
    assert.deepEqual(keys.result.data, []);
  });

  it("an assignment configures it (without rules), and it is listed from then on", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const key = await createKey(sdk, { workspaceId: ws.id });
    const assigned = await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({
      id: ws.defaultGuardrailId, bulkAssignKeysRequest: { keyHashes: [key.data.hash] },
    }));
    assert.equal(assigned.assignedCount, 1);
    const g = (await call("guardrailsGet", () => sdk.guardrails.get({ id: ws.defaultGuardrailId }))).data;
    assert.ok(g.updatedAt, "a configured default guardrail has an updated_at");
    assert.equal(g.allowedProviders ?? null, null);
    const list = await call("guardrailsList", () => sdk.guardrails.list({ workspaceId: ws.id }));
    assert.deepEqual(list.result.data.map((x) => x.id), [ws.defaultGuardrailId]);
  });

  it("PATCH configures it; the README's way of setting rules on a workspace", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const res = await call("guardrailsUpdate", () => sdk.guardrails.update({
      id: ws.defaultGuardrailId, updateGuardrailRequest: { allowedProviders: ["openai"], limitUsd: 5, resetInterval: "monthly" },
    }));
    assert.deepEqual(res.data.allowedProviders, ["openai"]);
    const got = (await call("guardrailsGet", () => sdk.guardrails.get({ id: ws.defaultGuardrailId }))).data;
    assert.deepEqual(got.allowedProviders, ["openai"]);
    assert.equal(got.limitUsd, 5);
  });
});

describe("GET /keys (apiKeys.list) and limit", () => {
  it("the client reads every key of a small workspace; limit (which the client does not send) pages them", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await createKey(sdk, { workspaceId: ws.id, name: `k${i}` })).data.hash);
    const listed = await call("apiKeysList", () => sdk.apiKeys.list({ workspaceId: ws.id }));
    assert.deepEqual(listed.data.map((k) => k.hash), made);
    const page = async (q) => {
      const res = await api(ctx.server, "GET", `/keys?workspace_id=${ws.id}&${q}`, { key: ctx.org.mgmtKey });
      assert.equal(res.status, 200, `GET /keys?${q}: ${res.text}`);
      assertSdkSchema(operations.ListResponse$inboundSchema, res.json, `GET /keys?${q}`);
      return res.json.data.map((k) => k.hash);
    };
    assert.deepEqual(await page("limit=2"), made.slice(0, 2));
    assert.deepEqual(await page("limit=2&offset=2"), made.slice(2));
    for (const bad of ["limit=0", "limit=101", "limit=ten"]) {
      const e = assertErrorBody(await api(ctx.server, "GET", `/keys?${bad}`, { key: ctx.org.mgmtKey }), 400, bad);
      assert.match(e.message, /limit/);
    }
  });
});

describe("a destination whose secrets the server's key does not open", () => {
  let server;
  let org;
  let dest;
  before(async () => {
    const first = await startServer();
    org = await createOrg(first);
    const created = await call("observabilityCreate", () => client(first, org.mgmtKey).observability.create({
      createObservabilityDestinationRequest: {
        name: uniq("traces"), type: "langfuse",
        config: { publicKey: "pk-lf-public-0001", secretKey: "sk-lf-secret-abcdefghij", headers: { "X-Team": "ml-platform-team" } },
      },
    }));
    dest = created.data;
    // The key file lost, or the wrong GATEHOUSE_SECRET_KEY: another key.
    server = await first.restart({ secretKey: Buffer.alloc(32, 7).toString("base64") });
  }, { timeout: 10 * 60_000 });
  after(async () => {
    await server?.stop();
  });

  it("is listed and read by the client (its typed variant), marked secrets_unreadable, its secret masked", async () => {
    const sdk = client(server, org.mgmtKey);
    const list = await call("observabilityList", () => sdk.observability.list({}));
    const d = list.result.data.find((x) => x.id === dest.id);
    assert.ok(d && !isUnknown(d) && d.type === "langfuse", `listed as ${JSON.stringify(d)}`);
    assert.equal(d.config.publicKey, "pk-lf-public-0001");
    assert.equal(d.config.secretKey, "********");
    assert.equal(d.config.headers, undefined);
    const got = await call("observabilityGet", () => sdk.observability.get({ id: dest.id }));
    assert.ok(!isUnknown(got.data) && got.data.type === "langfuse");
    for (const p of ["/observability/destinations", `/observability/destinations/${dest.id}`]) {
      const raw = await api(server, "GET", p, { key: org.mgmtKey });
      assert.equal(raw.status, 200, `GET ${p}: ${raw.text}`);
      const item = Array.isArray(raw.json.data) ? raw.json.data.find((x) => x.id === dest.id) : raw.json.data;
      assert.equal(item.secrets_unreadable, true, `GET ${p}: ${raw.text}`);
    }
    // The client's schema takes it (the extra field aside, which it drops).
    const one = (await api(server, "GET", `/observability/destinations/${dest.id}`, { key: org.mgmtKey })).json;
    assert.doesNotThrow(() => models.GetObservabilityDestinationResponse$inboundSchema.parse(one));
  });

  it("an update of other fields keeps it; a config change must send the secret again in clear", async () => {
    const sdk = client(server, org.mgmtKey);
    const off = await call("observabilityUpdate", () => sdk.observability.update({
      id: dest.id, updateObservabilityDestinationRequest: { enabled: false },
    }));
    assert.equal(off.data.enabled, false);
    const err = await fails("observabilityUpdate", 400, () => sdk.observability.update({
      id: dest.id, updateObservabilityDestinationRequest: { config: { publicKey: "pk-lf-public-0001", secretKey: "********" } },
    }), "masked secret of an unreadable destination");
    assert.match(err.error.message, /cannot be opened/);
    const fixed = await call("observabilityUpdate", () => sdk.observability.update({
      id: dest.id, updateObservabilityDestinationRequest: { config: { secretKey: "sk-lf-resent-0123456789" }, enabled: true },
    }));
    assert.equal(fixed.data.config.secretKey, "********6789");
    const raw = await api(server, "GET", `/observability/destinations/${dest.id}`, { key: org.mgmtKey });
    assert.equal(raw.json.data.secrets_unreadable, undefined, raw.text);
  });
});

describe("/healthz and /metrics say which build runs", () => {
  it("version and revision, the same in both", async () => {
    const res = await api(ctx.server, "GET", "/healthz");
    assert.equal(res.status, 200);
    const h = res.json;
    assert.equal(h.status, "ok");
    assert.equal(typeof h.version, "string");
    assert.ok(h.version.length > 0);
    assert.ok(h.revision === null || /^[0-9a-f]{40}$/.test(h.revision), `revision ${h.revision}`);
    assert.match(h.go_version, /^go\d/);
    const metrics = await api(ctx.server, "GET", "/metrics");
    const line = metrics.text.split("\n").find((l) => l.startsWith("gatehouse_build_info{"));
    assert.ok(line, "no gatehouse_build_info metric");
    assert.ok(line.includes(`version="${h.version}"`) && line.includes(`revision="${h.revision ?? ""}"`) && line.endsWith(" 1"), line);
  });
});
