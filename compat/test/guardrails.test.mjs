// Guardrails and their key/member assignments through the official client.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  RFC3339_UTC,
  UUID,
  addMember,
  api,
  assertErrorBody,
  call,
  client,
  createKey,
  createOrg,
  defaultWorkspace,
  fails,
  failsUntyped,
  randomUUID,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

async function createGuardrail(sdk, fields = {}) {
  const res = await call("guardrailsCreate", () => sdk.guardrails.create({ createGuardrailRequest: { name: uniq("guard"), ...fields } }));
  return res.data;
}

async function createWs(sdk) {
  const slug = uniq("ws");
  return (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
}

const nul = (v) => v ?? null;

function assertGuardrailShape(g) {
  assert.match(g.id, UUID);
  assert.equal(typeof g.name, "string");
  assert.match(g.workspaceId, UUID);
  assert.equal(typeof g.includeByokInBudgets, "boolean");
  assert.match(g.createdAt, RFC3339_UTC);
  if (g.updatedAt != null) assert.match(g.updatedAt, RFC3339_UTC);
}

const GUARDRAIL_FIELDS = [
  "id", "name", "description", "workspace_id", "allowed_models", "ignored_models", "allowed_providers",
  "ignored_providers", "limit_usd", "reset_interval", "include_byok_in_budgets", "enforce_zdr",
  "enforce_zdr_anthropic", "enforce_zdr_openai", "enforce_zdr_google", "enforce_zdr_xai", "enforce_zdr_other",
  "enable_free_model_publication", "enable_free_model_training", "enable_paid_model_training",
  "allowed_data_regions", "content_filters", "content_filter_builtins", "created_at", "updated_at",
];

describe("POST /guardrails (guardrails.create)", () => {
  it("201 with every field; enforce_zdr is copied into each enforce_zdr_* not given; builtin labels are system-assigned", async () => {
    const sdk = ctx.org.sdk;
    const ws = await defaultWorkspace(sdk);
    const g = await createGuardrail(sdk, {
      name: "Production policy",
      description: "Only vetted models",
      allowedModels: ["openai/gpt-4o", "anthropic/claude-3.5-sonnet"],
      allowedProviders: ["openai", "anthropic"],
      ignoredProviders: ["together"],
      limitUsd: 50.25,
      resetInterval: "monthly",
      includeByokInBudgets: true,
      enforceZdr: true,
      enforceZdrOpenai: false,
      enableFreeModelPublication: false,
      enableFreeModelTraining: false,
      enablePaidModelTraining: true,
      allowedDataRegions: ["europe", "us"],
      contentFilters: [{ pattern: "\\bproject-(x|y)\\b", action: "redact", label: "[PROJECT]" }],
      contentFilterBuiltins: [
        { slug: "email", action: "redact", label: "ignored on input" },
        { slug: "regex-prompt-injection", action: "block", scanScope: "user_only" },
      ],
    });
    assertGuardrailShape(g);
    assert.equal(g.name, "Production policy");
    assert.equal(g.description, "Only vetted models");
    assert.equal(g.workspaceId, ws.id);
    assert.deepEqual(g.allowedModels, ["openai/gpt-4o", "anthropic/claude-3.5-sonnet"]);
    assert.deepEqual(g.allowedProviders, ["openai", "anthropic"]);
    assert.deepEqual(g.ignoredProviders, ["together"]);
    assert.equal(nul(g.ignoredModels), null);
    assert.equal(g.limitUsd, 50.25);
    assert.equal(g.resetInterval, "monthly");
    assert.equal(g.includeByokInBudgets, true);
    assert.equal(g.enforceZdr, true);
    assert.equal(g.enforceZdrAnthropic, true);
    assert.equal(g.enforceZdrOpenai, false, "an explicit enforce_zdr_* wins");
    assert.equal(g.enforceZdrGoogle, true);
    assert.equal(g.enforceZdrXai, true);
    assert.equal(g.enforceZdrOther, true);
    assert.equal(g.enableFreeModelPublication, false);
    assert.equal(g.enableFreeModelTraining, false);
    assert.equal(g.enablePaidModelTraining, true);
    assert.deepEqual(g.allowedDataRegions, ["europe", "us"]);
    assert.deepEqual(g.contentFilters.map((f) => ({ ...f })), [{ pattern: "\\bproject-(x|y)\\b", action: "redact", label: "[PROJECT]" }]);
    assert.equal(g.contentFilterBuiltins.length, 2);
    assert.equal(g.contentFilterBuiltins[0].slug, "email");
    assert.equal(g.contentFilterBuiltins[0].label, "[EMAIL]");
    assert.equal(g.contentFilterBuiltins[1].scanScope, "user_only");
    const got = await call("guardrailsGet", () => sdk.guardrails.get({ id: g.id }));
    assert.deepEqual(got.data, g);
  });

  it("201 with a name only: lists and limits are null, BYOK excluded", async () => {
    const g = await createGuardrail(ctx.org.sdk);
    for (const f of ["allowedModels", "allowedProviders", "ignoredModels", "ignoredProviders", "limitUsd", "resetInterval", "allowedDataRegions", "contentFilters", "contentFilterBuiltins", "description"]) {
      assert.equal(nul(g[f]), null, `${f} must be null`);
    }
    assert.equal(g.includeByokInBudgets, false);
  });

  it("every field of API.md's guardrail object is present in the JSON (null where unset)", async () => {
    const g = await createGuardrail(ctx.org.sdk);
    const res = await api(ctx.server, "GET", `/guardrails/${g.id}`, { key: ctx.org.mgmtKey });
    assert.equal(res.status, 200);
    const missing = GUARDRAIL_FIELDS.filter((f) => !(f in res.json.data));
    assert.deepEqual(missing, [], `fields missing from the guardrail JSON: ${missing.join(", ")}`);
  });

  it("in a workspace given by UUID or slug; the same name may be used in another workspace", async () => {
    const ws = await createWs(ctx.org.sdk);
    const name = uniq("shared-name");
    await createGuardrail(ctx.org.sdk, { name });
    const a = await createGuardrail(ctx.org.sdk, { name, workspaceId: ws.slug });
    assert.equal(a.workspaceId, ws.id);
    const b = await createGuardrail(ctx.org.sdk, { workspaceId: ws.id });
    assert.equal(b.workspaceId, ws.id);
  });

  describe("400 for invalid guardrails, naming the field", () => {
    const cases = [
      ["name taken in the workspace", "TAKEN", /name/],
      ["empty name", { name: "" }, /name/],
      ["limit without reset_interval", { limitUsd: 10 }, /limit_usd|reset_interval/],
      ["reset_interval without limit", { resetInterval: "daily" }, /limit_usd|reset_interval/],
      ["negative limit", { limitUsd: -1, resetInterval: "daily" }, /limit_usd/],
      ["unknown interval", { limitUsd: 1, resetInterval: "yearly" }, /reset_interval/],
      ["regex does not compile", { contentFilters: [{ pattern: "(unclosed", action: "block" }] }, /content_filters\[0\]/],
      ["unknown filter action", { contentFilters: [{ pattern: "ok", action: "delete" }] }, /action/],
      ["unknown builtin", { contentFilterBuiltins: [{ slug: "passport", action: "redact" }] }, /content_filter_builtins/],
      ["empty data regions", { allowedDataRegions: [] }, /allowed_data_regions/],
      ["unknown data region", { allowedDataRegions: ["mars"] }, /allowed_data_regions/],
      ["empty model list", { allowedModels: [] }, /allowed_models/],
      ["description > 1000", { description: "d".repeat(1001) }, /description/],
    ];
    for (const [what, fields, re] of cases) {
      it(what, async () => {
        const sdk = ctx.org.sdk;
        const body = fields === "TAKEN" ? { name: (await createGuardrail(sdk)).name } : fields;
        const err = await fails("guardrailsCreate", 400, () => sdk.guardrails.create({ createGuardrailRequest: { name: uniq("bad"), ...body } }), what);
        assert.match(err.error.message, re);
      });
    }
  });

  it("400 for wrong JSON types names the field as sent (raw; API.md §1 input rules)", async () => {
    for (const [body, field] of [
      [{ name: 5 }, "name"],
      [{ name: uniq("g"), enforce_zdr: "yes" }, "enforce_zdr"],
      [{ name: uniq("g"), limit_usd: "10", reset_interval: "daily" }, "limit_usd"],
      [{ name: uniq("g"), allowed_models: "openai/gpt-4o" }, "allowed_models"],
    ]) {
      const e = assertErrorBody(await api(ctx.server, "POST", "/guardrails", { key: ctx.org.mgmtKey, body }), 400, JSON.stringify(body));
      assert.ok(e.message.startsWith(`${field}:`), `the message must name the field ${field}: ${e.message}`);
      assert.equal(e.metadata?.field, field, `metadata.field for ${JSON.stringify(body)}`);
    }
  });

  it("401 without a valid key", async () => {
    await fails("guardrailsCreate", 401, () => ctx.anon.guardrails.create({ createGuardrailRequest: { name: "x" } }));
  });

  it("403 for a regular key", async () => {
    const rc = client(ctx.server, (await createKey(ctx.org.sdk)).key);
    await fails("guardrailsCreate", 403, () => rc.guardrails.create({ createGuardrailRequest: { name: uniq("x") } }));
  });

  it("404 for an unknown or foreign workspace (a status the SDK does not type for this operation)", async () => {
    await failsUntyped(404, () => ctx.org.sdk.guardrails.create({ createGuardrailRequest: { name: "x", workspaceId: randomUUID() } }), "unknown workspace");
    const theirs = await defaultWorkspace(ctx.foreign.sdk);
    await failsUntyped(404, () => ctx.org.sdk.guardrails.create({ createGuardrailRequest: { name: "x", workspaceId: theirs.id } }), "foreign workspace");
  });
});

describe("GET /guardrails (guardrails.list)", () => {
  it("lists one workspace's guardrails (the default one without workspace_id), with total_count and paging", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createGuardrail(sdk, { workspaceId: ws.id }));
    const res = await call("guardrailsList", () => sdk.guardrails.list({ workspaceId: ws.id }));
    assert.equal(res.result.totalCount, 3);
    assert.deepEqual(res.result.data.map((g) => g.id), made.map((g) => g.id));
    const page = await call("guardrailsList", () => sdk.guardrails.list({ workspaceId: ws.slug, offset: 1, limit: 1 }));
    assert.equal(page.result.totalCount, 3);
    assert.deepEqual(page.result.data.map((g) => g.id), [made[1].id]);
    const inDefault = await createGuardrail(sdk);
    const def = await call("guardrailsList", () => sdk.guardrails.list({ limit: 100 }));
    assert.ok(def.result.data.some((g) => g.id === inDefault.id));
    assert.ok(!def.result.data.some((g) => made.some((m) => m.id === g.id)), "other workspaces' guardrails are not listed");
  });

  it("never lists another organization's guardrails", async () => {
    const theirs = await createGuardrail(ctx.foreign.sdk);
    const mine = await call("guardrailsList", () => ctx.org.sdk.guardrails.list({ limit: 100 }));
    assert.ok(!mine.result.data.some((g) => g.id === theirs.id));
  });

  it("400 for out-of-range paging", async () => {
    let err = await fails("guardrailsList", 400, () => ctx.org.sdk.guardrails.list({ limit: 0 }), "limit 0");
    assert.match(err.error.message, /limit/);
    await fails("guardrailsList", 400, () => ctx.org.sdk.guardrails.list({ limit: 101 }), "limit 101");
    err = await fails("guardrailsList", 400, () => ctx.org.sdk.guardrails.list({ offset: -1 }), "offset -1");
    assert.match(err.error.message, /offset/);
  });

  it("401 without a valid key", async () => {
    await fails("guardrailsList", 401, () => ctx.anon.guardrails.list());
  });

  it("404 for an unknown workspace (a status the SDK does not type for this operation)", async () => {
    await failsUntyped(404, () => ctx.org.sdk.guardrails.list({ workspaceId: randomUUID() }), "unknown workspace");
  });
});

describe("GET /guardrails/{id} (guardrails.get)", () => {
  it("returns the guardrail", async () => {
    const g = await createGuardrail(ctx.org.sdk, { allowedProviders: ["openai"] });
    const res = await call("guardrailsGet", () => ctx.org.sdk.guardrails.get({ id: g.id }));
    assert.equal(res.data.id, g.id);
    assert.deepEqual(res.data.allowedProviders, ["openai"]);
  });

  it("404: unknown, not a UUID, another organization's, another organization's workspace's default guardrail", async () => {
    const sdk = ctx.org.sdk;
    await fails("guardrailsGet", 404, () => sdk.guardrails.get({ id: randomUUID() }), "unknown");
    await fails("guardrailsGet", 404, () => sdk.guardrails.get({ id: "not-a-uuid" }), "not a uuid");
    const theirs = await createGuardrail(ctx.foreign.sdk);
    await fails("guardrailsGet", 404, () => sdk.guardrails.get({ id: theirs.id }), "foreign");
    // A workspace's own default guardrail resolves, configured or not
    // (operations.test.mjs); another organization's does not.
    const theirWs = await createWs(ctx.foreign.sdk);
    await fails("guardrailsGet", 404, () => sdk.guardrails.get({ id: theirWs.defaultGuardrailId }), "foreign default guardrail");
  });

  it("401 without a valid key", async () => {
    await fails("guardrailsGet", 401, () => ctx.anon.guardrails.get({ id: randomUUID() }));
  });
});

describe("PATCH /guardrails/{id} (guardrails.update)", () => {
  it("absent = unchanged, null clears, arrays are replaced whole", async () => {
    const sdk = ctx.org.sdk;
    const g = await createGuardrail(sdk, { description: "d", allowedModels: ["openai/gpt-4o", "openai/gpt-4o-mini"], limitUsd: 5, resetInterval: "daily" });
    const upd = (body) => call("guardrailsUpdate", () => sdk.guardrails.update({ id: g.id, updateGuardrailRequest: body }));
    const name = uniq("renamed");
    let res = await upd({ name, allowedModels: ["mistralai/mistral-large"] });
    assert.equal(res.data.name, name);
    assert.deepEqual(res.data.allowedModels, ["mistralai/mistral-large"]);
    assert.equal(res.data.description, "d");
    assert.equal(res.data.limitUsd, 5);
    res = await upd({ description: null, allowedModels: null });
    assert.equal(nul(res.data.description), null);
    assert.equal(nul(res.data.allowedModels), null);
    res = await upd({ limitUsd: 9.5, resetInterval: "weekly" });
    assert.equal(res.data.limitUsd, 9.5);
    assert.equal(res.data.resetInterval, "weekly");
    res = await upd({ limitUsd: null, resetInterval: null });
    assert.equal(nul(res.data.limitUsd), null);
    assert.equal(nul(res.data.resetInterval), null);
    res = await upd({ enforceZdr: false, enforceZdrXai: true });
    assert.equal(res.data.enforceZdrAnthropic, false);
    assert.equal(res.data.enforceZdrXai, true);
    res = await upd({});
    assert.equal(res.data.name, name);
    const got = await call("guardrailsGet", () => sdk.guardrails.get({ id: g.id }));
    assert.equal(got.data.name, name);
    assert.equal(got.data.enforceZdrXai, true);
  });

  it("PATCH on a workspace's default_guardrail_id materializes it; it cannot be renamed (400)", async () => {
    const sdk = ctx.org.sdk;
    const ws = await createWs(sdk);
    const res = await call("guardrailsUpdate", () => sdk.guardrails.update({ id: ws.defaultGuardrailId, updateGuardrailRequest: { allowedProviders: ["openai"] } }));
    assert.equal(res.data.id, ws.defaultGuardrailId);
    assert.equal(res.data.name, `Workspace ${ws.id} Default`);
    assert.equal(res.data.workspaceId, ws.id);
    assert.deepEqual(res.data.allowedProviders, ["openai"]);
    const got = await call("guardrailsGet", () => sdk.guardrails.get({ id: ws.defaultGuardrailId }));
    assert.deepEqual(got.data.allowedProviders, ["openai"]);
    await fails("guardrailsUpdate", 400, () => sdk.guardrails.update({ id: ws.defaultGuardrailId, updateGuardrailRequest: { name: "Something else" } }), "rename the default guardrail");
  });

  it("400 for invalid changes; nothing changes", async () => {
    const sdk = ctx.org.sdk;
    const g = await createGuardrail(sdk, { limitUsd: 5, resetInterval: "daily" });
    const bad = (body, what, re) => fails("guardrailsUpdate", 400, () => sdk.guardrails.update({ id: g.id, updateGuardrailRequest: body }), what)
      .then((err) => re && assert.match(err.error.message, re));
    await bad({ resetInterval: null }, "limit left without reset_interval", /limit_usd|reset_interval/);
    await bad({ contentFilters: [{ pattern: "[", action: "flag" }] }, "bad regex", /content_filters\[0\]/);
    await bad({ allowedDataRegions: [] }, "empty regions", /allowed_data_regions/);
    await bad({ name: "" }, "empty name", /name/);
    await bad({ ignoredProviders: [] }, "empty provider list", /ignored_providers/);
    const got = await call("guardrailsGet", () => sdk.guardrails.get({ id: g.id }));
    assert.equal(got.data.resetInterval, "daily");
  });

  it("409 when renamed to a name taken in its workspace (not when taken elsewhere)", async () => {
    const sdk = ctx.org.sdk;
    const a = await createGuardrail(sdk);
    const b = await createGuardrail(sdk);
    const err = await fails("guardrailsUpdate", 409, () => sdk.guardrails.update({ id: b.id, updateGuardrailRequest: { name: a.name } }));
    assert.match(err.error.message, /name/);
    const ws = await createWs(sdk);
    const elsewhere = await createGuardrail(sdk, { workspaceId: ws.id });
    const res = await call("guardrailsUpdate", () => sdk.guardrails.update({ id: elsewhere.id, updateGuardrailRequest: { name: a.name } }));
    assert.equal(res.data.name, a.name);
  });

  it("401 without a valid key", async () => {
    await fails("guardrailsUpdate", 401, () => ctx.anon.guardrails.update({ id: randomUUID(), updateGuardrailRequest: { name: "x" } }));
  });

  it("403 for a regular key", async () => {
    const g = await createGuardrail(ctx.org.sdk);
    const rc = client(ctx.server, (await createKey(ctx.org.sdk)).key);
    await fails("guardrailsUpdate", 403, () => rc.guardrails.update({ id: g.id, updateGuardrailRequest: { name: "x" } }));
  });

  it("404: unknown, another organization's (unchanged), another organization's workspace default", async () => {
    const sdk = ctx.org.sdk;
    await fails("guardrailsUpdate", 404, () => sdk.guardrails.update({ id: randomUUID(), updateGuardrailRequest: { name: "x" } }), "unknown");
    const theirs = await createGuardrail(ctx.foreign.sdk);
    await fails("guardrailsUpdate", 404, () => sdk.guardrails.update({ id: theirs.id, updateGuardrailRequest: { name: "hijacked" } }), "foreign");
    const still = await call("guardrailsGet", () => ctx.foreign.sdk.guardrails.get({ id: theirs.id }));
    assert.equal(still.data.name, theirs.name);
    const theirWs = await defaultWorkspace(ctx.foreign.sdk);
    await fails("guardrailsUpdate", 404, () => sdk.guardrails.update({ id: theirWs.defaultGuardrailId, updateGuardrailRequest: { allowedProviders: ["openai"] } }), "foreign default guardrail");
  });
});

describe("DELETE /guardrails/{id} (guardrails.delete)", () => {
  it("{deleted: true}; then get → 404, list omits it, delete again → 404", async () => {
    const sdk = ctx.org.sdk;
    const g = await createGuardrail(sdk);
    const res = await call("guardrailsDelete", () => sdk.guardrails.delete({ id: g.id }));
    assert.deepEqual({ ...res }, { deleted: true });
    await fails("guardrailsGet", 404, () => sdk.guardrails.get({ id: g.id }), "deleted");
    const list = await call("guardrailsList", () => sdk.guardrails.list({ limit: 100 }));
    assert.ok(!list.result.data.some((x) => x.id === g.id));
    await fails("guardrailsDelete", 404, () => sdk.guardrails.delete({ id: g.id }), "already deleted");
    // Its name is free again.
    await createGuardrail(sdk, { name: g.name });
  });

  it("404: unknown, not a UUID, another organization's (which survives)", async () => {
    await fails("guardrailsDelete", 404, () => ctx.org.sdk.guardrails.delete({ id: randomUUID() }), "unknown");
    await fails("guardrailsDelete", 404, () => ctx.org.sdk.guardrails.delete({ id: "nope" }), "not a uuid");
    const theirs = await createGuardrail(ctx.foreign.sdk);
    await fails("guardrailsDelete", 404, () => ctx.org.sdk.guardrails.delete({ id: theirs.id }), "foreign");
    await call("guardrailsGet", () => ctx.foreign.sdk.guardrails.get({ id: theirs.id }));
  });

  it("401 without a valid key", async () => {
    await fails("guardrailsDelete", 401, () => ctx.anon.guardrails.delete({ id: randomUUID() }));
  });
});

describe("assignments", () => {
  // A dedicated organization, so the organization-wide assignment lists are exact.
  let org, sdk, g1, g2, k1, k2, kOther, m1, m2;

  it("setup: guardrails, keys and members", async () => {
    org = await createOrg(ctx.server, uniq("assign-org"));
    sdk = org.sdk;
    g1 = await createGuardrail(sdk, { name: "g1" });
    g2 = await createGuardrail(sdk, { name: "g2" });
    k1 = (await createKey(sdk, { name: "k1" })).data;
    k2 = (await createKey(sdk, { name: "k2" })).data;
    const ws = await createWs(sdk);
    kOther = (await createKey(sdk, { name: "k-other", workspaceId: ws.id })).data;
    m1 = await addMember(ctx, org.mgmtKey, {});
    m2 = await addMember(ctx, org.mgmtKey, {});
  });

  it("GET /guardrails/assignments/... is not captured by /guardrails/{id}", async () => {
    const keys = await call("guardrailsListKeyAssignments", () => sdk.guardrails.listKeyAssignments());
    assert.equal(keys.result.totalCount, 0);
    assert.deepEqual(keys.result.data, []);
    const members = await call("guardrailsListMemberAssignments", () => sdk.guardrails.listMemberAssignments());
    assert.equal(members.result.totalCount, 0);
  });

  it("assign keys: counts changes only; a key holds one guardrail (assigning moves it)", async () => {
    let res = await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: g1.id, bulkAssignKeysRequest: { keyHashes: [k1.hash, k2.hash] } }));
    assert.equal(res.assignedCount, 2);
    res = await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: g1.id, bulkAssignKeysRequest: { keyHashes: [k1.hash] } }));
    assert.equal(res.assignedCount, 0, "re-assigning to the same guardrail counts 0");
    let list = await call("guardrailsListGuardrailKeyAssignments", () => sdk.guardrails.listGuardrailKeyAssignments({ id: g1.id }));
    assert.equal(list.result.totalCount, 2);
    assert.deepEqual(list.result.data.map((a) => a.keyHash).sort(), [k1.hash, k2.hash].sort());
    for (const a of list.result.data) {
      assert.match(a.id, UUID);
      assert.equal(a.guardrailId, g1.id);
      assert.equal(a.keyName, a.keyHash === k1.hash ? "k1" : "k2");
      assert.equal(a.keyLabel, a.keyName);
      assert.match(a.createdAt, RFC3339_UTC);
      assert.ok(a.assignedBy === null || typeof a.assignedBy === "string");
    }
    res = await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: g2.id, bulkAssignKeysRequest: { keyHashes: [k1.hash] } }));
    assert.equal(res.assignedCount, 1);
    list = await call("guardrailsListGuardrailKeyAssignments", () => sdk.guardrails.listGuardrailKeyAssignments({ id: g1.id }));
    assert.deepEqual(list.result.data.map((a) => a.keyHash), [k2.hash], "the key moved");
    list = await call("guardrailsListGuardrailKeyAssignments", () => sdk.guardrails.listGuardrailKeyAssignments({ id: g2.id }));
    assert.deepEqual(list.result.data.map((a) => a.keyHash), [k1.hash]);
    const all = await call("guardrailsListKeyAssignments", () => sdk.guardrails.listKeyAssignments());
    assert.equal(all.result.totalCount, 2);
    const page = await call("guardrailsListKeyAssignments", () => sdk.guardrails.listKeyAssignments({ offset: 1, limit: 1 }));
    assert.equal(page.result.totalCount, 2);
    assert.equal(page.result.data.length, 1);
  });

  it("assign keys 400: a key of another workspace, an unknown key, an empty list; nothing assigned", async () => {
    const assign = (keyHashes, what) => fails("guardrailsBulkAssignKeys", 400, () => sdk.guardrails.bulkAssignKeys({ id: g1.id, bulkAssignKeysRequest: { keyHashes } }), what);
    let err = await assign([kOther.hash], "key of another workspace");
    assert.ok(JSON.stringify(err.error.metadata ?? {}).includes(kOther.hash), `metadata must name the key: ${JSON.stringify(err.error)}`);
    const unknown = "a".repeat(64);
    err = await assign([k2.hash, unknown], "unknown key");
    assert.ok(JSON.stringify(err.error.metadata ?? {}).includes(unknown), `metadata must name the key: ${JSON.stringify(err.error)}`);
    await assign([], "empty list");
    const theirs = (await createKey(ctx.foreign.sdk)).data;
    await assign([theirs.hash], "another organization's key");
    const list = await call("guardrailsListGuardrailKeyAssignments", () => sdk.guardrails.listGuardrailKeyAssignments({ id: g1.id }));
    assert.deepEqual(list.result.data.map((a) => a.keyHash), [k2.hash]);
  });

  it("unassign keys: counts removals only", async () => {
    let res = await call("guardrailsBulkUnassignKeys", () => sdk.guardrails.bulkUnassignKeys({ id: g1.id, bulkUnassignKeysRequest: { keyHashes: [k2.hash, k1.hash] } }));
    assert.equal(res.unassignedCount, 1, "k1 is assigned to g2, not g1");
    res = await call("guardrailsBulkUnassignKeys", () => sdk.guardrails.bulkUnassignKeys({ id: g1.id, bulkUnassignKeysRequest: { keyHashes: [k2.hash] } }));
    assert.equal(res.unassignedCount, 0);
    const list = await call("guardrailsListGuardrailKeyAssignments", () => sdk.guardrails.listGuardrailKeyAssignments({ id: g1.id }));
    assert.equal(list.result.totalCount, 0);
    await fails("guardrailsBulkUnassignKeys", 400, () => sdk.guardrails.bulkUnassignKeys({ id: g1.id, bulkUnassignKeysRequest: { keyHashes: [] } }), "empty list");
  });

  it("deleting a key removes its assignment", async () => {
    const k3 = (await createKey(sdk)).data;
    await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: g1.id, bulkAssignKeysRequest: { keyHashes: [k3.hash] } }));
    await call("apiKeysDelete", () => sdk.apiKeys.delete({ hash: k3.hash }));
    const list = await call("guardrailsListGuardrailKeyAssignments", () => sdk.guardrails.listGuardrailKeyAssignments({ id: g1.id }));
    assert.ok(!list.result.data.some((a) => a.keyHash === k3.hash));
  });

  it("assign members: counts changes only; a member holds one guardrail", async () => {
    let res = await call("guardrailsBulkAssignMembers", () => sdk.guardrails.bulkAssignMembers({ id: g1.id, bulkAssignMembersRequest: { memberUserIds: [m1.id, m2.id] } }));
    assert.equal(res.assignedCount, 2);
    res = await call("guardrailsBulkAssignMembers", () => sdk.guardrails.bulkAssignMembers({ id: g1.id, bulkAssignMembersRequest: { memberUserIds: [m2.id] } }));
    assert.equal(res.assignedCount, 0);
    let list = await call("guardrailsListGuardrailMemberAssignments", () => sdk.guardrails.listGuardrailMemberAssignments({ id: g1.id }));
    assert.equal(list.result.totalCount, 2);
    assert.deepEqual(list.result.data.map((a) => a.userId).sort(), [m1.id, m2.id].sort());
    for (const a of list.result.data) {
      assert.match(a.id, UUID);
      assert.equal(a.guardrailId, g1.id);
      assert.equal(a.organizationId, org.id);
      assert.match(a.createdAt, RFC3339_UTC);
    }
    res = await call("guardrailsBulkAssignMembers", () => sdk.guardrails.bulkAssignMembers({ id: g2.id, bulkAssignMembersRequest: { memberUserIds: [m1.id] } }));
    assert.equal(res.assignedCount, 1);
    list = await call("guardrailsListGuardrailMemberAssignments", () => sdk.guardrails.listGuardrailMemberAssignments({ id: g1.id }));
    assert.deepEqual(list.result.data.map((a) => a.userId), [m2.id]);
    const all = await call("guardrailsListMemberAssignments", () => sdk.guardrails.listMemberAssignments());
    assert.equal(all.result.totalCount, 2);
    const page = await call("guardrailsListMemberAssignments", () => sdk.guardrails.listMemberAssignments({ offset: 1, limit: 1 }));
    assert.equal(page.result.data.length, 1);
  });

  it("assign members 400: a non-member (named in metadata), an empty list; nothing assigned", async () => {
    const stranger = `user_${uniq("stranger")}`;
    const err = await fails("guardrailsBulkAssignMembers", 400, () => sdk.guardrails.bulkAssignMembers({ id: g1.id, bulkAssignMembersRequest: { memberUserIds: [m1.id, stranger] } }), "non-member");
    assert.ok(JSON.stringify(err.error.metadata ?? {}).includes(stranger), `metadata must name the user: ${JSON.stringify(err.error)}`);
    await fails("guardrailsBulkAssignMembers", 400, () => sdk.guardrails.bulkAssignMembers({ id: g1.id, bulkAssignMembersRequest: { memberUserIds: [] } }), "empty list");
    const list = await call("guardrailsListGuardrailMemberAssignments", () => sdk.guardrails.listGuardrailMemberAssignments({ id: g2.id }));
    assert.deepEqual(list.result.data.map((a) => a.userId), [m1.id], "m1 was not moved");
  });

  it("unassign members: counts removals only", async () => {
    let res = await call("guardrailsBulkUnassignMembers", () => sdk.guardrails.bulkUnassignMembers({ id: g1.id, bulkUnassignMembersRequest: { memberUserIds: [m2.id, m1.id] } }));
    assert.equal(res.unassignedCount, 1);
    res = await call("guardrailsBulkUnassignMembers", () => sdk.guardrails.bulkUnassignMembers({ id: g1.id, bulkUnassignMembersRequest: { memberUserIds: [m2.id] } }));
    assert.equal(res.unassignedCount, 0);
    await fails("guardrailsBulkUnassignMembers", 400, () => sdk.guardrails.bulkUnassignMembers({ id: g1.id, bulkUnassignMembersRequest: { memberUserIds: [] } }), "empty list");
  });

  it("deleting a guardrail removes its assignments", async () => {
    await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: g2.id, bulkAssignKeysRequest: { keyHashes: [k2.hash] } }));
    await call("guardrailsDelete", () => sdk.guardrails.delete({ id: g2.id }));
    const keys = await call("guardrailsListKeyAssignments", () => sdk.guardrails.listKeyAssignments());
    assert.equal(keys.result.totalCount, 0);
    const members = await call("guardrailsListMemberAssignments", () => sdk.guardrails.listMemberAssignments());
    assert.equal(members.result.totalCount, 0);
  });

  it("401 without a valid key, on every assignment operation", async () => {
    const a = ctx.anon.guardrails;
    const id = g1.id;
    await fails("guardrailsListGuardrailKeyAssignments", 401, () => a.listGuardrailKeyAssignments({ id }));
    await fails("guardrailsListGuardrailMemberAssignments", 401, () => a.listGuardrailMemberAssignments({ id }));
    await fails("guardrailsListKeyAssignments", 401, () => a.listKeyAssignments());
    await fails("guardrailsListMemberAssignments", 401, () => a.listMemberAssignments());
    await fails("guardrailsBulkAssignKeys", 401, () => a.bulkAssignKeys({ id, bulkAssignKeysRequest: { keyHashes: [k1.hash] } }));
    await fails("guardrailsBulkUnassignKeys", 401, () => a.bulkUnassignKeys({ id, bulkUnassignKeysRequest: { keyHashes: [k1.hash] } }));
    await fails("guardrailsBulkAssignMembers", 401, () => a.bulkAssignMembers({ id, bulkAssignMembersRequest: { memberUserIds: [m1.id] } }));
    await fails("guardrailsBulkUnassignMembers", 401, () => a.bulkUnassignMembers({ id, bulkUnassignMembersRequest: { memberUserIds: [m1.id] } }));
  });

  it("403 for a regular key (typed on bulk assign keys; generic elsewhere)", async () => {
    const rc = client(ctx.server, (await createKey(sdk)).key);
    await fails("guardrailsBulkAssignKeys", 403, () => rc.guardrails.bulkAssignKeys({ id: g1.id, bulkAssignKeysRequest: { keyHashes: [k1.hash] } }));
    await failsUntyped(403, () => rc.guardrails.listKeyAssignments(), "regular key lists assignments");
    await failsUntyped(403, () => rc.guardrails.bulkAssignMembers({ id: g1.id, bulkAssignMembersRequest: { memberUserIds: [m1.id] } }), "regular key assigns members");
  });

  it("404: unknown guardrail, not a UUID, another organization's guardrail", async () => {
    const theirs = await createGuardrail(ctx.foreign.sdk);
    for (const id of [randomUUID(), "not-a-uuid", theirs.id]) {
      await fails("guardrailsListGuardrailKeyAssignments", 404, () => sdk.guardrails.listGuardrailKeyAssignments({ id }));
      await fails("guardrailsListGuardrailMemberAssignments", 404, () => sdk.guardrails.listGuardrailMemberAssignments({ id }));
      await fails("guardrailsBulkAssignKeys", 404, () => sdk.guardrails.bulkAssignKeys({ id, bulkAssignKeysRequest: { keyHashes: [k1.hash] } }));
      await fails("guardrailsBulkUnassignKeys", 404, () => sdk.guardrails.bulkUnassignKeys({ id, bulkUnassignKeysRequest: { keyHashes: [k1.hash] } }));
      await fails("guardrailsBulkAssignMembers", 404, () => sdk.guardrails.bulkAssignMembers({ id, bulkAssignMembersRequest: { memberUserIds: [m1.id] } }));
      await fails("guardrailsBulkUnassignMembers", 404, () => sdk.guardrails.bulkUnassignMembers({ id, bulkUnassignMembersRequest: { memberUserIds: [m1.id] } }));
    }
  });

  it("400 for out-of-range paging of assignment lists (raw: the SDK does not type 400 here)", async () => {
    assertErrorBody(await api(ctx.server, "GET", "/guardrails/assignments/keys?limit=101", { key: org.mgmtKey }), 400, "all keys limit=101");
    assertErrorBody(await api(ctx.server, "GET", "/guardrails/assignments/members?offset=-1", { key: org.mgmtKey }), 400, "all members offset=-1");
    assertErrorBody(await api(ctx.server, "GET", `/guardrails/${g1.id}/assignments/keys?limit=0`, { key: org.mgmtKey }), 400, "keys limit=0");
    assertErrorBody(await api(ctx.server, "GET", `/guardrails/${g1.id}/assignments/members?limit=x`, { key: org.mgmtKey }), 400, "members limit=x");
  });
});
