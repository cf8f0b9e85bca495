// BYOK provider keys through the official client (byok.create, get, list,
// update, delete), checked against the SDK's own schemas with no field it
// does not know, and the gateway sending a workspace's key instead of the
// operator's to a provider that records what it receives (chat.send),
// metered as byok_usage. A key is never returned after it is given.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import {
  assertSdkSchema,
  BOGUS_MGMT_KEY,
  RFC3339_UTC,
  UUID,
  allPages,
  api,
  call,
  client,
  createKey,
  createOrg,
  defaultWorkspace,
  fails,
  freePort,
  models,
  randomUUID,
  startServer,
  uniq,
} from "./harness.mjs";

const OPERATOR_KEY = "sk-operator-compat-0123456789abcdef";
const ctx = { auths: [] };

// A provider that records the key of every request and answers a
// completion of 3 prompt and 5 completion tokens.
function startUpstream(port) {
  const srv = http.createServer((req, res) => {
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      ctx.auths.push(req.headers.authorization ?? "");
      let model = "";
      try {
        model = JSON.parse(body).model;
      } catch {}
      res.writeHead(200, { "Content-Type": "application/json" });
      res.end(JSON.stringify({
        id: "chatcmpl-compat", object: "chat.completion", created: 1700000000, model,
        choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "hi" } }],
        usage: { prompt_tokens: 3, completion_tokens: 5, total_tokens: 8 },
      }));
    });
  });
  return new Promise((resolve) => srv.listen(port, "127.0.0.1", () => resolve(srv)));
}

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-byok-"));
  const port = await freePort();
  ctx.upstream = await startUpstream(port);
  const providers = path.join(ctx.dir, "providers.yaml");
  fs.writeFileSync(providers, `providers:
  - id: acme
    base_url: http://127.0.0.1:${port}/v1
    api_key_env: ACME_API_KEY
    models:
      - id: chat
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
  - id: other
    base_url: http://127.0.0.1:${port}/v1
    models:
      - {id: mini, prompt_price: 0, completion_price: 0}
`);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: providers, ACME_API_KEY: OPERATOR_KEY } });
  ctx.org = await createOrg(ctx.server, uniq("acme"));
  ctx.foreign = await createOrg(ctx.server, uniq("foreign"));
  ctx.badMgmt = client(ctx.server, BOGUS_MGMT_KEY);
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  await new Promise((r) => (ctx.upstream ? ctx.upstream.close(r) : r()));
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// The raw JSON against the SDK's zod schemas: parse() checks every type, and
// every key the server sends must be one the schema has (zod would drop an
// unknown one silently). As in catalog.test.mjs.

// Every secret given in this file: none may come back in any answer.
const GIVEN = [];
const secret = (tag) => {
  const s = `sk-compat-${tag}-${randomUUID().replaceAll("-", "")}`;
  GIVEN.push(s);
  return s;
};
const masked = (s) => `********${s.slice(-4)}`;

function assertNoSecret(raw, what) {
  const text = typeof raw === "string" ? raw : JSON.stringify(raw);
  for (const s of GIVEN) assert.ok(!text.includes(s), `${what} holds a provider key`);
}

async function createBYOK(sdk, body) {
  const res = await call("byokCreate", () => sdk.byok.create({ createBYOKKeyRequest: body }));
  assertNoSecret(res, "byok.create");
  return res.data;
}

async function lastAuthAfter(fn) {
  const before = ctx.auths.length;
  await fn();
  assert.equal(ctx.auths.length, before + 1, "the provider got one request");
  return ctx.auths[ctx.auths.length - 1].replace(/^Bearer /, "");
}

const chat = (key) => client(ctx.server, key).chat.send({ chatRequest: { model: "acme/chat", messages: [{ role: "user", content: "hello" }] } });

// ---------------------------------------------------------------------------

describe("byok.create, get, list, update, delete", () => {
  it("a key's life: every field of the SDK's BYOKKey, the provider key never returned", async () => {
    const sdk = ctx.org.sdk;
    const ws = await defaultWorkspace(sdk);
    const key = secret("life");
    const k = await createBYOK(sdk, { provider: "acme", key, name: "team key" });
    assert.match(k.id, UUID);
    assert.match(k.createdAt, RFC3339_UTC);
    assert.deepEqual({ ...k, id: undefined, createdAt: undefined }, {
      id: undefined, createdAt: undefined, provider: "acme", name: "team key", label: masked(key), disabled: false,
      workspaceId: ws.id, allowedApiKeyHashes: null, allowedModels: null, allowedUserIds: null, declaredZdr: null,
      isByokOnly: false, isFallback: false, isRequired: false, sortOrder: 0,
    });
    const raw = await api(ctx.server, "GET", `/byok/${k.id}`, { key: ctx.org.mgmtKey });
    assertSdkSchema(models.GetBYOKKeyResponse$inboundSchema, raw.json, "GET /byok/{id}");
    assertNoSecret(raw.text, "GET /byok/{id}");

    const got = await call("byokGet", () => sdk.byok.get({ id: k.id }));
    assert.deepEqual(got.data, k);

    const regular = (await createKey(sdk, { name: uniq("allowed") })).data;
    const member = (await api(ctx.server, "POST", "/organization/members", { key: ctx.org.mgmtKey, body: { email: `${uniq("u")}@example.com` } })).json.data;
    const rotated = secret("rotated");
    const upd = await call("byokUpdate", () => sdk.byok.update({ id: k.id, updateBYOKKeyRequest: {
      key: rotated, name: null, allowedApiKeyHashes: [regular.hash], allowedModels: ["acme/chat"], allowedUserIds: [member.id],
      declaredZdr: true, isFallback: true, isRequired: true, disabled: true,
    } }));
    assertNoSecret(upd, "byok.update");
    assert.deepEqual(upd.data, { ...k, label: masked(rotated), name: null, allowedApiKeyHashes: [regular.hash], allowedModels: ["acme/chat"],
      allowedUserIds: [member.id], declaredZdr: true, isFallback: true, isRequired: true, disabled: true });

    const list = await call("byokList", () => sdk.byok.list({ provider: "acme" }));
    assert.ok(list.result.data.some((x) => x.id === k.id));
    assert.equal(list.result.totalCount, list.result.data.length);
    const rawList = await api(ctx.server, "GET", "/byok", { key: ctx.org.mgmtKey });
    assertSdkSchema(models.ListBYOKKeysResponse$inboundSchema, rawList.json, "GET /byok");
    assertNoSecret(rawList.text, "GET /byok");

    const del = await call("byokDelete", () => sdk.byok.delete({ id: k.id }));
    assert.deepEqual(del, { deleted: true });
    await fails("byokGet", 404, () => sdk.byok.get({ id: k.id }), "deleted");
    await fails("byokDelete", 404, () => sdk.byok.delete({ id: k.id }), "deleted");
  });

  it("list: by workspace and provider, and its page iterator ends", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("ws");
    const ws = (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
    const made = [];
    for (const provider of ["acme", "other", "acme"]) {
      made.push(await createBYOK(sdk, { provider, key: secret("page"), workspaceId: ws.id }));
    }
    assert.deepEqual(made.map((k) => k.sortOrder), [0, 0, 1], "sort order per provider");
    const all = await allPages(call("byokList", () => sdk.byok.list({ workspaceId: ws.id, limit: 1 })));
    assert.deepEqual(all.map((k) => k.id), made.map((k) => k.id));
    const acme = await call("byokList", () => sdk.byok.list({ workspaceId: slug, provider: "acme" }));
    assert.deepEqual(acme.result.data.map((k) => k.id), [made[0].id, made[2].id]);
    assert.equal(acme.result.totalCount, 2);
  });

  it("typed errors: 400, 401, 403, 404", async () => {
    const sdk = ctx.org.sdk;
    const k = await createBYOK(sdk, { provider: "acme", key: secret("errors") });
    const theirs = await createBYOK(ctx.foreign.sdk, { provider: "acme", key: secret("foreign") });
    const regular = client(ctx.server, (await createKey(sdk)).key);

    let e = await fails("byokCreate", 400, () => sdk.byok.create({ createBYOKKeyRequest: { provider: "mistral", key: secret("x") } }), "unknown provider");
    assert.match(e.error.message, /^provider: unknown provider "mistral"/);
    e = await fails("byokCreate", 400, () => sdk.byok.create({ createBYOKKeyRequest: { provider: "acme", key: "two words" } }), "key with a space");
    assert.match(e.error.message, /^key: /);
    e = await fails("byokCreate", 400, () => sdk.byok.create({ createBYOKKeyRequest: { provider: "acme", key: secret("y"), allowedModels: ["other/mini"] } }),
      "a model of another provider");
    assert.match(e.error.message, /^allowed_models\[0\]: /);
    await fails("byokCreate", 401, () => ctx.badMgmt.byok.create({ createBYOKKeyRequest: { provider: "acme", key: secret("z") } }));
    await fails("byokCreate", 403, () => regular.byok.create({ createBYOKKeyRequest: { provider: "acme", key: secret("z") } }), "regular key");

    await fails("byokGet", 401, () => ctx.badMgmt.byok.get({ id: k.id }));
    await fails("byokGet", 404, () => sdk.byok.get({ id: theirs.id }), "another organization's key");
    await fails("byokGet", 404, () => sdk.byok.get({ id: "not-a-uuid" }), "not an id");

    e = await fails("byokList", 400, () => sdk.byok.list({ limit: 500 }), "limit out of range");
    assert.match(e.error.message, /^limit: /);
    await fails("byokList", 400, () => sdk.byok.list({ provider: "Not A Provider" }), "provider not an id");
    await fails("byokList", 401, () => ctx.badMgmt.byok.list());

    e = await fails("byokUpdate", 400, () => sdk.byok.update({ id: k.id, updateBYOKKeyRequest: { isByokOnly: true, isFallback: true } }),
      "byok only and fallback");
    assert.match(e.error.message, /^is_byok_only: /);
    await fails("byokUpdate", 400, () => sdk.byok.update({ id: k.id, updateBYOKKeyRequest: { allowedApiKeyHashes: ["ab".repeat(32)] } }),
      "a hash of no key of the workspace");
    await fails("byokUpdate", 401, () => ctx.badMgmt.byok.update({ id: k.id, updateBYOKKeyRequest: { disabled: true } }));
    await fails("byokUpdate", 403, () => regular.byok.update({ id: k.id, updateBYOKKeyRequest: { disabled: true } }), "regular key");
    await fails("byokUpdate", 404, () => sdk.byok.update({ id: theirs.id, updateBYOKKeyRequest: { key: secret("stolen") } }), "another organization's key");

    await fails("byokDelete", 401, () => ctx.badMgmt.byok.delete({ id: k.id }));
    await fails("byokDelete", 404, () => sdk.byok.delete({ id: theirs.id }), "another organization's key");
    // Nothing of the foreign organization's changed.
    const still = await call("byokGet", () => ctx.foreign.sdk.byok.get({ id: theirs.id }));
    assert.deepEqual(still.data, theirs);
  });
});

describe("the gateway sends the workspace's key", () => {
  it("instead of the operator's, counted as byok_usage; not when disabled, nor for another organization", async () => {
    const sdk = ctx.org.sdk;
    // A fresh workspace: no BYOK key of the tests above applies.
    const slug = uniq("gw");
    const ws = (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
    const created = await createKey(sdk, { name: uniq("caller"), workspaceId: ws.id });
    assert.equal(await lastAuthAfter(() => chat(created.key)), OPERATOR_KEY);

    const byokKey = secret("gateway");
    const k = await createBYOK(sdk, { provider: "acme", key: byokKey, workspaceId: ws.id });
    let answer;
    assert.equal(await lastAuthAfter(async () => (answer = await chat(created.key))), byokKey);
    assertNoSecret(answer, "chat.send");
    const usage = (await call("apiKeysGet", () => sdk.apiKeys.get({ hash: created.data.hash }))).data;
    assert.equal(usage.usage, 0.013, "the operator-key request");
    assert.equal(usage.byokUsage, 0.013, "the BYOK request: 3 × $0.001 + 5 × $0.002");
    const gen = await client(ctx.server, created.key).generations.getGeneration({ id: answer.id });
    assert.equal(gen.data.isByok, true);

    // Another organization's key, in a workspace of its own without BYOK
    // keys: the operator's.
    const fslug = uniq("fws");
    const fws = (await call("workspacesCreate", () => ctx.foreign.sdk.workspaces.create({ createWorkspaceRequest: { name: fslug, slug: fslug } }))).data;
    const foreignKey = await createKey(ctx.foreign.sdk, { name: uniq("foreign"), workspaceId: fws.id });
    assert.equal(await lastAuthAfter(() => chat(foreignKey.key)), OPERATOR_KEY);

    await call("byokUpdate", () => sdk.byok.update({ id: k.id, updateBYOKKeyRequest: { disabled: true } }));
    assert.equal(await lastAuthAfter(() => chat(created.key)), OPERATOR_KEY, "a disabled key is not used");
    await call("byokUpdate", () => sdk.byok.update({ id: k.id, updateBYOKKeyRequest: { disabled: false } }));
    assert.equal(await lastAuthAfter(() => chat(created.key)), byokKey);
    await call("byokDelete", () => sdk.byok.delete({ id: k.id }));
    assert.equal(await lastAuthAfter(() => chat(created.key)), OPERATOR_KEY, "a deleted key is not used");
  });
});
