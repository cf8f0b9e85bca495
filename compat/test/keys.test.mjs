// API keys through the official client: GET /key, GET/POST /keys,
// GET/PATCH/DELETE /keys/{hash}; plus the wire rules of API.md §1 that every
// operation shares (error shape, authentication, input rules).
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.
// - 429 on apiKeysList/Create/Get/Update/Delete: exercised in ratelimit.test.mjs
//   (a second server with a tiny rate-limit bucket).

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  BOGUS_REGULAR_KEY,
  MGMT_KEY,
  REGULAR_KEY,
  RFC3339_UTC,
  addMember,
  api,
  assertErrorBody,
  call,
  client,
  createKey,
  defaultWorkspace,
  fails,
  failsUntyped,
  randomUUID,
  sha256hex,
  sleep,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

function assertKeyShape(d) {
  for (const f of ["hash", "name", "label", "createdAt", "workspaceId"]) {
    assert.equal(typeof d[f], "string", `key.${f} must be a string`);
  }
  assert.match(d.hash, /^[0-9a-f]{64}$/);
  assert.match(d.createdAt, RFC3339_UTC);
  if (d.updatedAt !== null) assert.match(d.updatedAt, RFC3339_UTC);
  for (const f of ["usage", "usageDaily", "usageWeekly", "usageMonthly", "byokUsage", "byokUsageDaily", "byokUsageWeekly", "byokUsageMonthly"]) {
    assert.equal(typeof d[f], "number", `key.${f} must be a number`);
  }
  assert.equal(typeof d.disabled, "boolean");
  assert.equal(typeof d.includeByokInLimit, "boolean");
}

async function workspace(sdk, fields = {}) {
  const slug = uniq("ws");
  const res = await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug, ...fields } }));
  return res.data;
}

describe("GET /key (apiKeys.getCurrentKeyMetadata)", () => {
  it("describes the bootstrap management key: is_management_key, workspace_id null, legacy fields", async () => {
    const res = await call("apiKeysGetCurrentKeyMetadata", () => ctx.bootstrap.sdk.apiKeys.getCurrentKeyMetadata());
    const d = res.data;
    assert.equal(d.isManagementKey, true);
    assert.equal(d.isProvisioningKey, true);
    assert.equal(d.isFreeTier, false);
    assert.equal(d.workspaceId, null);
    assert.deepEqual({ ...d.rateLimit }, { requests: -1, interval: "10s", note: "deprecated" });
    assert.deepEqual([...d.allowedDataRegions].sort(), ["europe", "global", "us"]);
    for (const f of ["limit", "remaining", "used"]) assert.ok(Number.isInteger(d.freeModelDailyRequests[f]));
    assert.equal(typeof d.label, "string");
    assert.match(ctx.bootstrap.mgmtKey, MGMT_KEY);
  });

  it("describes an organization's management key (made with the CLI) with its organization id", async () => {
    const res = await call("apiKeysGetCurrentKeyMetadata", () => ctx.org.sdk.apiKeys.getCurrentKeyMetadata());
    assert.equal(res.data.isManagementKey, true);
    assert.equal(res.data.workspaceId, null);
    assert.equal(res.data.organizationId, ctx.org.id);
  });

  it("describes a regular key with its workspace, label and limits", async () => {
    const ws = await defaultWorkspace(ctx.org.sdk);
    const name = uniq("current");
    const created = await createKey(ctx.org.sdk, { name, limit: 7, limitReset: "daily" });
    const res = await call("apiKeysGetCurrentKeyMetadata", () => client(ctx.server, created.key).apiKeys.getCurrentKeyMetadata());
    const d = res.data;
    assert.equal(d.isManagementKey, false);
    assert.equal(d.isProvisioningKey, false);
    assert.equal(d.workspaceId, ws.id);
    assert.equal(d.organizationId, ctx.org.id);
    assert.equal(d.label, name);
    assert.equal(d.limit, 7);
    assert.equal(d.limitRemaining, 7);
    assert.equal(d.limitReset, "daily");
    assert.equal(d.usage, 0);
  });

  it("401 for an unknown key", async () => {
    await fails("apiKeysGetCurrentKeyMetadata", 401, () => ctx.anon.apiKeys.getCurrentKeyMetadata());
  });

  it("401 for a missing or malformed Authorization header (JSON error body)", async () => {
    assertErrorBody(await api(ctx.server, "GET", "/key"), 401, "no header");
    assertErrorBody(await api(ctx.server, "GET", "/key", { headers: { Authorization: "Bearer" } }), 401, "empty bearer");
    assertErrorBody(await api(ctx.server, "GET", "/key", { headers: { Authorization: "Basic Zm9vOmJhcg==" } }), 401, "basic auth");
    assertErrorBody(await api(ctx.server, "GET", "/key", { key: "sk-gh-v1-nothex" }), 401, "malformed key");
  });
});

describe("POST /keys (apiKeys.create)", () => {
  it("201: plaintext shown once, hash = SHA-256 of it, fields as requested", async () => {
    const ws = await defaultWorkspace(ctx.org.sdk);
    const name = uniq("created");
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 30 * 86400_000);
    const res = await createKey(ctx.org.sdk, { name, limit: 12.5, limitReset: "monthly", includeByokInLimit: true, expiresAt });
    assert.match(res.key, REGULAR_KEY);
    const d = res.data;
    assertKeyShape(d);
    assert.equal(d.hash, sha256hex(res.key));
    assert.equal(d.name, name);
    assert.equal(d.label, name);
    assert.equal(d.disabled, false);
    assert.equal(d.limit, 12.5);
    assert.equal(d.limitRemaining, 12.5);
    assert.equal(d.limitReset, "monthly");
    assert.equal(d.includeByokInLimit, true);
    assert.equal(d.usage, 0);
    assert.equal(d.byokUsage, 0);
    assert.equal(d.workspaceId, ws.id);
    assert.equal(d.creatorUserId, null);
    assert.equal(d.externalUser, null);
    assert.ok(d.expiresAt instanceof Date);
    assert.equal(d.expiresAt.getTime(), expiresAt.getTime());
    const raw = await api(ctx.server, "GET", `/keys/${d.hash}`, { key: ctx.org.mgmtKey });
    assert.ok(!raw.text.includes(res.key), "the plaintext must not be shown again");
  });

  it("defaults: no limit, no reset, BYOK excluded, no expiry", async () => {
    const res = await createKey(ctx.org.sdk);
    const d = res.data;
    assert.equal(d.limit, null);
    assert.equal(d.limitRemaining, null);
    assert.equal(d.limitReset, null);
    assert.equal(d.includeByokInLimit, false);
    assert.ok(d.expiresAt === null || d.expiresAt === undefined);
  });

  it("links a creator who is an organization member, and a partner end user", async () => {
    const member = await addMember(ctx, ctx.org.mgmtKey, {});
    const res = await createKey(ctx.org.sdk, { creatorUserId: member.id, external: { user: "end-user-42", apiKey: "p".repeat(40) } });
    assert.equal(res.data.creatorUserId, member.id);
    assert.equal(res.data.externalUser, "end-user-42");
    const got = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: res.data.hash }));
    assert.equal(got.data.creatorUserId, member.id);
    assert.equal(got.data.externalUser, "end-user-42");
  });

  it("places a key in the workspace given by UUID or by slug", async () => {
    const ws = await workspace(ctx.org.sdk);
    const byId = await createKey(ctx.org.sdk, { workspaceId: ws.id });
    const bySlug = await createKey(ctx.org.sdk, { workspaceId: ws.slug });
    assert.equal(byId.data.workspaceId, ws.id);
    assert.equal(bySlug.data.workspaceId, ws.id);
  });

  it("400 for invalid fields, naming the field", async () => {
    const sdk = ctx.org.sdk;
    const create = (body) => () => sdk.apiKeys.create({ requestBody: { name: uniq("bad"), ...body } });
    let err = await fails("apiKeysCreate", 400, create({ name: "" }), "empty name");
    assert.match(err.error.message, /name/);
    err = await fails("apiKeysCreate", 400, create({ name: "n".repeat(201) }), "name too long");
    assert.match(err.error.message, /name/);
    err = await fails("apiKeysCreate", 400, create({ limit: -1 }), "negative limit");
    assert.match(err.error.message, /limit/);
    err = await fails("apiKeysCreate", 400, create({ limitReset: "yearly" }), "limit_reset yearly");
    assert.match(err.error.message, /limit_reset/);
    err = await fails("apiKeysCreate", 400, create({ expiresAt: new Date(Date.now() - 3600_000) }), "expires_at in the past");
    assert.match(err.error.message, /expires_at/);
    err = await fails("apiKeysCreate", 400, create({ creatorUserId: "user_not_a_member" }), "creator not a member");
    assert.match(err.error.message, /creator_user_id/);
    err = await fails("apiKeysCreate", 400, create({ external: { user: "u", apiKey: "short" } }), "external api_key < 32 chars");
    assert.match(err.error.message, /api_key/);
  });

  it("400 for bodies the SDK would never send: unknown field, wrong type, trailing data, non-object, date-only expiry", async () => {
    const key = ctx.org.mgmtKey;
    let e = assertErrorBody(await api(ctx.server, "POST", "/keys", { key, body: { name: "x", colour: "red" } }), 400, "unknown field");
    assert.match(e.message, /colour/);
    e = assertErrorBody(await api(ctx.server, "POST", "/keys", { key, body: { name: 42 } }), 400, "wrong type");
    assert.match(e.message, /name/);
    assertErrorBody(await api(ctx.server, "POST", "/keys", { key, body: '{"name":"x"} {"name":"y"}' }), 400, "trailing data");
    assertErrorBody(await api(ctx.server, "POST", "/keys", { key, body: '["name"]' }), 400, "array body");
    e = assertErrorBody(await api(ctx.server, "POST", "/keys", { key, body: { name: "x", expires_at: "2099-01-01" } }), 400, "date-only expires_at");
    assert.match(e.message, /expires_at/);
    assertErrorBody(await api(ctx.server, "POST", "/keys", { key, body: { name: "x", expires_at: "2099-01-01T00:00:00" } }), 400, "zone-less expires_at");
  });

  it("413 for a body over 1 MiB", async () => {
    const res = await api(ctx.server, "POST", "/keys", { key: ctx.org.mgmtKey, body: { name: "x".repeat(1100 * 1024) } });
    assertErrorBody(res, 413, "oversized body");
  });

  it("401 without a valid key", async () => {
    await fails("apiKeysCreate", 401, () => ctx.anon.apiKeys.create({ requestBody: { name: "x" } }));
  });

  it("403 for a regular key", async () => {
    const regular = await createKey(ctx.org.sdk);
    const err = await fails("apiKeysCreate", 403, () => client(ctx.server, regular.key).apiKeys.create({ requestBody: { name: "x" } }));
    assert.match(err.error.message, /management key/);
  });

  it("404 for an unknown workspace (a status the SDK does not type for this operation)", async () => {
    await failsUntyped(404, () => ctx.org.sdk.apiKeys.create({ requestBody: { name: "x", workspaceId: randomUUID() } }), "create key in unknown workspace");
    await failsUntyped(404, () => ctx.foreign.sdk.apiKeys.create({ requestBody: { name: "x", workspaceId: "no-such-slug" } }), "create key in unknown slug");
  });

  it("404 for another organization's workspace", async () => {
    const theirs = await defaultWorkspace(ctx.foreign.sdk);
    await failsUntyped(404, () => ctx.org.sdk.apiKeys.create({ requestBody: { name: "x", workspaceId: theirs.id } }), "foreign workspace");
  });
});

describe("GET /keys/{hash} (apiKeys.get)", () => {
  it("returns the key", async () => {
    const created = await createKey(ctx.org.sdk, { limit: 3 });
    const res = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: created.data.hash }));
    assertKeyShape(res.data);
    assert.equal(res.data.hash, created.data.hash);
    assert.equal(res.data.name, created.data.name);
    assert.equal(res.data.limit, 3);
  });

  it("404: unknown hash, malformed hash, a management key, another organization's key", async () => {
    const sdk = ctx.org.sdk;
    await fails("apiKeysGet", 404, () => sdk.apiKeys.get({ hash: "0".repeat(64) }), "unknown");
    await fails("apiKeysGet", 404, () => sdk.apiKeys.get({ hash: "not-a-hash" }), "malformed");
    await fails("apiKeysGet", 404, () => sdk.apiKeys.get({ hash: sha256hex(ctx.org.mgmtKey) }), "management key");
    const theirs = await createKey(ctx.foreign.sdk);
    await fails("apiKeysGet", 404, () => sdk.apiKeys.get({ hash: theirs.data.hash }), "foreign key");
  });

  it("401 without a valid key", async () => {
    const created = await createKey(ctx.org.sdk);
    await fails("apiKeysGet", 401, () => ctx.anon.apiKeys.get({ hash: created.data.hash }));
  });
});

describe("PATCH /keys/{hash} (apiKeys.update)", () => {
  it("renames: label follows name", async () => {
    const created = await createKey(ctx.org.sdk);
    const name = uniq("renamed");
    const res = await call("apiKeysUpdate", () => ctx.org.sdk.apiKeys.update({ hash: created.data.hash, requestBody: { name } }));
    assert.equal(res.data.name, name);
    assert.equal(res.data.label, name);
    const got = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: created.data.hash }));
    assert.equal(got.data.label, name);
    const current = await call("apiKeysGetCurrentKeyMetadata", () => client(ctx.server, created.key).apiKeys.getCurrentKeyMetadata());
    assert.equal(current.data.label, name);
  });

  it("limit and limit_reset round-trip; null clears; limit_remaining follows", async () => {
    const sdk = ctx.org.sdk;
    const { data } = await createKey(sdk);
    const upd = (requestBody) => call("apiKeysUpdate", () => sdk.apiKeys.update({ hash: data.hash, requestBody }));
    let res = await upd({ limit: 20, limitReset: "weekly" });
    assert.equal(res.data.limit, 20);
    assert.equal(res.data.limitRemaining, 20);
    assert.equal(res.data.limitReset, "weekly");
    assert.equal((await sdk.apiKeys.get({ hash: data.hash })).data.limitReset, "weekly");
    res = await upd({ limitReset: "daily" });
    assert.equal(res.data.limitReset, "daily");
    assert.equal(res.data.limit, 20, "absent limit stays unchanged");
    res = await upd({ limitReset: null });
    assert.equal(res.data.limitReset, null);
    assert.equal(res.data.limit, 20);
    res = await upd({ limit: null });
    assert.equal(res.data.limit, null);
    assert.equal(res.data.limitRemaining, null);
    res = await upd({ includeByokInLimit: true });
    assert.equal(res.data.includeByokInLimit, true);
    const got = await call("apiKeysGet", () => sdk.apiKeys.get({ hash: data.hash }));
    assert.equal(got.data.limit, null);
    assert.equal(got.data.limitReset, null);
    assert.equal(got.data.includeByokInLimit, true);
  });

  it("{} is valid and changes nothing", async () => {
    const { data } = await createKey(ctx.org.sdk, { limit: 4, limitReset: "monthly" });
    const res = await call("apiKeysUpdate", () => ctx.org.sdk.apiKeys.update({ hash: data.hash, requestBody: {} }));
    for (const f of ["name", "label", "disabled", "limit", "limitRemaining", "limitReset", "includeByokInLimit", "workspaceId", "createdAt", "creatorUserId"]) {
      assert.deepEqual(res.data[f], data[f], `${f} must be unchanged`);
    }
  });

  it("disabling a key: GET /key then answers 401; list hides it unless include_disabled; enabling restores it", async () => {
    const sdk = ctx.org.sdk;
    const created = await createKey(sdk);
    const res = await call("apiKeysUpdate", () => sdk.apiKeys.update({ hash: created.data.hash, requestBody: { disabled: true } }));
    assert.equal(res.data.disabled, true);
    await fails("apiKeysGetCurrentKeyMetadata", 401, () => client(ctx.server, created.key).apiKeys.getCurrentKeyMetadata(), "disabled key");
    const visible = await call("apiKeysList", () => sdk.apiKeys.list());
    assert.ok(!visible.data.some((k) => k.hash === created.data.hash), "a disabled key is hidden by default");
    const all = await call("apiKeysList", () => sdk.apiKeys.list({ includeDisabled: true }));
    const listed = all.data.find((k) => k.hash === created.data.hash);
    assert.ok(listed, "include_disabled=true lists it");
    assert.equal(listed.disabled, true);
    await call("apiKeysUpdate", () => sdk.apiKeys.update({ hash: created.data.hash, requestBody: { disabled: false } }));
    await call("apiKeysGetCurrentKeyMetadata", () => client(ctx.server, created.key).apiKeys.getCurrentKeyMetadata());
  });

  it("400 for invalid fields", async () => {
    const { data } = await createKey(ctx.org.sdk);
    const upd = (requestBody) => () => ctx.org.sdk.apiKeys.update({ hash: data.hash, requestBody });
    let err = await fails("apiKeysUpdate", 400, upd({ limitReset: "yearly" }), "limit_reset yearly");
    assert.match(err.error.message, /limit_reset/);
    err = await fails("apiKeysUpdate", 400, upd({ name: "" }), "empty name");
    assert.match(err.error.message, /name/);
    err = await fails("apiKeysUpdate", 400, upd({ limit: -5 }), "negative limit");
    assert.match(err.error.message, /limit/);
    const after = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: data.hash }));
    assert.equal(after.data.name, data.name, "a rejected update changes nothing");
  });

  it("404: unknown key, another organization's key", async () => {
    await fails("apiKeysUpdate", 404, () => ctx.org.sdk.apiKeys.update({ hash: "f".repeat(64), requestBody: { name: "x" } }), "unknown");
    const theirs = await createKey(ctx.foreign.sdk);
    await fails("apiKeysUpdate", 404, () => ctx.org.sdk.apiKeys.update({ hash: theirs.data.hash, requestBody: { name: "x" } }), "foreign");
    const still = await call("apiKeysGet", () => ctx.foreign.sdk.apiKeys.get({ hash: theirs.data.hash }));
    assert.equal(still.data.name, theirs.data.name);
  });

  it("401 without a valid key", async () => {
    const { data } = await createKey(ctx.org.sdk);
    await fails("apiKeysUpdate", 401, () => ctx.anon.apiKeys.update({ hash: data.hash, requestBody: { name: "x" } }));
  });
});

describe("DELETE /keys/{hash} (apiKeys.delete)", () => {
  it("{deleted: true}; afterwards get → 404, list omits it, the key no longer authenticates, delete again → 404", async () => {
    const sdk = ctx.org.sdk;
    const created = await createKey(sdk);
    const res = await call("apiKeysDelete", () => sdk.apiKeys.delete({ hash: created.data.hash }));
    assert.deepEqual({ ...res }, { deleted: true });
    const raw = await api(ctx.server, "DELETE", `/keys/${sha256hex(BOGUS_REGULAR_KEY)}`, { key: ctx.org.mgmtKey });
    assertErrorBody(raw, 404, "raw delete of an unknown key");
    await fails("apiKeysGet", 404, () => sdk.apiKeys.get({ hash: created.data.hash }), "deleted");
    const list = await call("apiKeysList", () => sdk.apiKeys.list({ includeDisabled: true }));
    assert.ok(!list.data.some((k) => k.hash === created.data.hash));
    await fails("apiKeysGetCurrentKeyMetadata", 401, () => client(ctx.server, created.key).apiKeys.getCurrentKeyMetadata(), "deleted key");
    await fails("apiKeysDelete", 404, () => sdk.apiKeys.delete({ hash: created.data.hash }), "already deleted");
  });

  it("the raw body of a delete is exactly {\"deleted\":true} with status 200", async () => {
    const created = await createKey(ctx.org.sdk);
    const res = await api(ctx.server, "DELETE", `/keys/${created.data.hash}`, { key: ctx.org.mgmtKey });
    assert.equal(res.status, 200);
    assert.deepEqual(res.json, { deleted: true });
  });

  it("404 for another organization's key, which survives", async () => {
    const theirs = await createKey(ctx.foreign.sdk);
    await fails("apiKeysDelete", 404, () => ctx.org.sdk.apiKeys.delete({ hash: theirs.data.hash }), "foreign");
    await call("apiKeysGet", () => ctx.foreign.sdk.apiKeys.get({ hash: theirs.data.hash }));
  });

  it("401 without a valid key", async () => {
    const created = await createKey(ctx.org.sdk);
    await fails("apiKeysDelete", 401, () => ctx.anon.apiKeys.delete({ hash: created.data.hash }));
  });
});

describe("GET /keys (apiKeys.list)", () => {
  it("lists the organization's keys of a workspace oldest first, paginates with offset, never lists management keys", async () => {
    const sdk = ctx.org.sdk;
    const ws = await workspace(sdk);
    const made = [];
    for (let i = 0; i < 3; i++) made.push((await createKey(sdk, { name: `list-${i}`, workspaceId: ws.id })).data.hash);
    const page = await call("apiKeysList", () => sdk.apiKeys.list({ workspaceId: ws.id }));
    assert.deepEqual(page.data.map((k) => k.hash), made);
    for (const k of page.data) assertKeyShape(k);
    const rest = await call("apiKeysList", () => sdk.apiKeys.list({ workspaceId: ws.id, offset: 1 }));
    assert.deepEqual(rest.data.map((k) => k.hash), made.slice(1));
    const none = await call("apiKeysList", () => sdk.apiKeys.list({ workspaceId: ws.slug, offset: 3 }));
    assert.deepEqual(none.data, []);
    const all = await call("apiKeysList", () => sdk.apiKeys.list());
    for (const h of made) assert.ok(all.data.some((k) => k.hash === h), "the unfiltered list includes every workspace");
    assert.ok(!all.data.some((k) => k.hash === sha256hex(ctx.org.mgmtKey)), "management keys are not listed");
    assert.ok(all.data.length <= 100);
  });

  it("never lists another organization's keys", async () => {
    const theirs = await createKey(ctx.foreign.sdk);
    const mine = await call("apiKeysList", () => ctx.org.sdk.apiKeys.list({ includeDisabled: true }));
    assert.ok(!mine.data.some((k) => k.hash === theirs.data.hash));
  });

  it("returns at most 100 keys", async () => {
    const sdk = ctx.org.sdk;
    const ws = await workspace(sdk);
    for (let i = 0; i < 102; i += 6) {
      await Promise.all(Array.from({ length: Math.min(6, 102 - i) }, (_, j) => sdk.apiKeys.create({ requestBody: { name: `bulk-${i + j}`, workspaceId: ws.id } })));
    }
    const page = await call("apiKeysList", () => sdk.apiKeys.list({ workspaceId: ws.id }));
    assert.equal(page.data.length, 100);
    const rest = await call("apiKeysList", () => sdk.apiKeys.list({ workspaceId: ws.id, offset: 100 }));
    assert.equal(rest.data.length, 2);
  });

  it("400 for a negative offset", async () => {
    const err = await fails("apiKeysList", 400, () => ctx.org.sdk.apiKeys.list({ offset: -1 }));
    assert.match(err.error.message, /offset/);
  });

  it("400 for a non-integer offset or include_disabled (raw)", async () => {
    assertErrorBody(await api(ctx.server, "GET", "/keys?offset=abc", { key: ctx.org.mgmtKey }), 400, "offset=abc");
    assertErrorBody(await api(ctx.server, "GET", "/keys?offset=1.5", { key: ctx.org.mgmtKey }), 400, "offset=1.5");
    assertErrorBody(await api(ctx.server, "GET", "/keys?include_disabled=maybe", { key: ctx.org.mgmtKey }), 400, "include_disabled=maybe");
  });

  it("401 without a valid key", async () => {
    await fails("apiKeysList", 401, () => ctx.anon.apiKeys.list());
  });

  it("403 for a regular key; 404 for an unknown workspace (statuses the SDK does not type for this operation)", async () => {
    const regular = await createKey(ctx.org.sdk);
    const e = await failsUntyped(403, () => client(ctx.server, regular.key).apiKeys.list(), "regular key lists keys");
    assert.match(e.message, /management key/);
    await failsUntyped(404, () => ctx.org.sdk.apiKeys.list({ workspaceId: randomUUID() }), "unknown workspace");
  });
});

describe("key expiry", () => {
  it("a key past expires_at is rejected with 401", async () => {
    const expiresAt = new Date(Math.ceil(Date.now() / 1000) * 1000 + 2000);
    const created = await createKey(ctx.org.sdk, { expiresAt });
    const c = client(ctx.server, created.key);
    await call("apiKeysGetCurrentKeyMetadata", () => c.apiKeys.getCurrentKeyMetadata());
    await sleep(Math.max(0, expiresAt.getTime() - Date.now()) + 600);
    await fails("apiKeysGetCurrentKeyMetadata", 401, () => c.apiKeys.getCurrentKeyMetadata(), "expired key");
    const got = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: created.data.hash }));
    assert.equal(got.data.expiresAt.getTime(), expiresAt.getTime());
  });
});

describe("wire rules (API.md §1)", () => {
  it("unknown routes answer a JSON 404; a wrong method a JSON 405", async () => {
    assertErrorBody(await api(ctx.server, "GET", "/no-such-route", { key: ctx.org.mgmtKey }), 404, "unknown route");
    assertErrorBody(await api(ctx.server, "PUT", "/keys", { key: ctx.org.mgmtKey, body: {} }), 405, "PUT /keys");
  });

  it("client headers HTTP-Referer, X-OpenRouter-Title, X-Title, X-OpenRouter-Categories are accepted and ignored", async () => {
    const res = await api(ctx.server, "GET", "/keys", {
      key: ctx.org.mgmtKey,
      headers: { "HTTP-Referer": "https://app.example.com", "X-OpenRouter-Title": "App", "X-Title": "App", "X-OpenRouter-Categories": "cli-agent,programming" },
    });
    assert.equal(res.status, 200, res.text);
  });

  it("responses are JSON with RFC 3339 UTC timestamps", async () => {
    const created = await createKey(ctx.org.sdk);
    const res = await api(ctx.server, "GET", `/keys/${created.data.hash}`, { key: ctx.org.mgmtKey });
    assert.match(res.headers.get("content-type") ?? "", /^application\/json/);
    assert.match(res.json.data.created_at, RFC3339_UTC);
  });

  it("operations endpoints need no credential", async () => {
    assert.equal((await api(ctx.server, "GET", "/healthz")).status, 200);
    assert.equal((await api(ctx.server, "GET", "/readyz")).status, 200);
    assert.equal((await api(ctx.server, "GET", "/metrics")).status, 200);
    const spec = await api(ctx.server, "GET", "/api/v1/openapi.json");
    assert.equal(spec.status, 200);
    assert.match(String(spec.json?.openapi), /^3\.1/);
  });
});
