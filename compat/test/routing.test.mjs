// Routing through the official client: chat.send with OpenRouter's routing
// fields (provider: order, only, allow_fallbacks; models) against a real
// Gatehouse serving one model from two providers, each its own cmd/fakellm
// that fails on command. The generation says which provider served and
// every attempt (providerResponses). Not part of the coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { call, client, createKey, startFakeLLM, startServer } from "./harness.mjs";

const ctx = {};
const LLAMA = "meta-llama/llama-3.1-70b-instruct";

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-routing-"));
  fs.mkdirSync(path.join(ctx.dir, "a"));
  fs.mkdirSync(path.join(ctx.dir, "b"));
  ctx.alpha = await startFakeLLM(path.join(ctx.dir, "a"));
  ctx.beta = await startFakeLLM(path.join(ctx.dir, "b"));
  const providers = path.join(ctx.dir, "providers.yaml");
  fs.writeFileSync(providers, `providers:
  - id: alpha
    base_url: http://127.0.0.1:${ctx.alpha.port}/v1
    models:
      - id: echo
        slug: ${LLAMA}
        prompt_price: 1000
        completion_price: 1000
        max_completion_tokens: 100
  - id: beta
    base_url: http://127.0.0.1:${ctx.beta.port}/v1
    models:
      - id: echo
        slug: ${LLAMA}
        prompt_price: 2000
        completion_price: 2000
        max_completion_tokens: 100
      - id: other
        prompt_price: 2000
        completion_price: 2000
        max_completion_tokens: 100
`);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: providers } });
  ctx.sdk = client(ctx.server, ctx.server.bootstrapKey);
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.alpha?.stop();
  ctx.beta?.stop();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

// fail makes a fakellm fail as told ({status, retry_after, cut, count}),
// or answer again (null).
async function fail(upstream, how) {
  const res = await fetch(`http://127.0.0.1:${upstream.port}/fakellm/failure`, how === null
    ? { method: "DELETE" }
    : { method: "POST", headers: { "Content-Type": "application/json" }, body: JSON.stringify(how) });
  assert.ok(res.ok, `fakellm failure command: ${res.status}`);
}

async function callsOf(upstream) {
  const res = await fetch(`http://127.0.0.1:${upstream.port}/fakellm/calls`);
  return (await res.json()).calls;
}

let turn = 0;
const send = (sdk, fields) => sdk.chat.send({ chatRequest: {
  messages: [{ role: "user", content: `route me ${++turn}` }], ...fields } });

// attempts returns who served a generation and every attempt, as
// "provider:status".
async function attempts(sdk, id) {
  const gen = await sdk.generations.getGeneration({ id });
  return { served: gen.data.providerName, tried: gen.data.providerResponses.map((r) => `${r.providerName}:${r.status}`) };
}

describe("routing through the official client", () => {
  it("provider.order and provider.only choose the endpoint of a model served twice", async () => {
    const key = await createKey(ctx.sdk, { limit: 1 });
    const user = client(ctx.server, key.key);
    let res = await send(user, { model: LLAMA, provider: { order: ["beta", "alpha"] } });
    assert.equal(res.model, LLAMA);
    assert.deepEqual(await attempts(user, res.id), { served: "beta", tried: ["beta:200"] });
    res = await send(user, { model: LLAMA, provider: { only: ["alpha"] } });
    assert.deepEqual(await attempts(user, res.id), { served: "alpha", tried: ["alpha:200"] });
  });

  it("a failing endpoint falls back to the next; with allow_fallbacks false the failure is the answer", async () => {
    const key = await createKey(ctx.sdk, { limit: 1 });
    const user = client(ctx.server, key.key);
    await fail(ctx.alpha, { status: 503, count: 2 });
    const res = await send(user, { model: LLAMA, provider: { order: ["alpha", "beta"] } });
    assert.deepEqual(await attempts(user, res.id), { served: "beta", tried: ["alpha:503", "beta:200"] });
    await assert.rejects(send(user, { model: LLAMA, provider: { order: ["alpha"], allowFallbacks: false } }),
      (err) => err.statusCode === 503);
    await fail(ctx.alpha, null);
  });

  it("models falls back across models once the first model's endpoints fail", async () => {
    const key = await createKey(ctx.sdk, { limit: 1 });
    const user = client(ctx.server, key.key);
    await fail(ctx.alpha, { status: 500, count: 1 });
    const res = await send(user, { model: "alpha/echo", models: ["beta/other"] });
    assert.equal(res.model, "beta/other");
    assert.deepEqual(await attempts(user, res.id), { served: "beta", tried: ["alpha:500", "beta:200"] });
  });

  it("a dead endpoint opens its circuit: it receives nothing more while its clients are served elsewhere", async () => {
    const key = await createKey(ctx.sdk, { limit: 1 });
    const user = client(ctx.server, key.key);
    await fail(ctx.alpha, { cut: true });
    for (let i = 0; i < 3; i++) {
      const res = await send(user, { model: LLAMA, provider: { order: ["alpha", "beta"] } });
      assert.equal((await attempts(user, res.id)).served, "beta");
    }
    const before = await callsOf(ctx.alpha);
    for (let i = 0; i < 5; i++) {
      const res = await send(user, { model: LLAMA, provider: { order: ["alpha", "beta"] } });
      assert.deepEqual(await attempts(user, res.id), { served: "beta", tried: ["beta:200"] });
    }
    assert.equal(await callsOf(ctx.alpha), before, "the open circuit let calls through");
    const eps = await call("endpointsList", () => user.endpoints.list({ author: "meta-llama", slug: "llama-3.1-70b-instruct" }));
    const alpha = eps.data.endpoints.find((e) => e.tag === "alpha");
    assert.equal(alpha.status, -1, "the endpoint list shows alpha's open circuit");
    await fail(ctx.alpha, null);
  });
});
