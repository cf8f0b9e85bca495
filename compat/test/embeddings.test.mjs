// Embeddings through the official client (issue #12): embeddings.generate
// against a real Gatehouse serving cmd/fakellm's /v1/embeddings, metered
// like chat completions (the key's usage moves by the cost of the
// provider's prompt_tokens, the answer carries usage.cost), and
// embeddings.listModels. Providers that misbehave (a small server of this
// file answering an error status, or never answering, and an address where
// nothing listens) provoke the provider statuses the SDK types. Responses
// are checked against the SDK's own schemas.
//
// Typed statuses not exercised here: 500 (no input may cause it).

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";

import * as operations from "@openrouter/sdk/models/operations";

import { api, assertSdkSchema, call, client, createKey, fails, failsAsGateway, freePort, models, startFakeLLM, useServer } from "./harness.mjs";

// A provider that answers POST <base>/embeddings with the status its base
// path names (/s503/v1 → 503), or never answers (/slow/v1).
const misbehaving = {};
function startMisbehaving() {
  misbehaving.held = new Set();
  misbehaving.server = http.createServer((req, res) => {
    req.resume();
    const m = /^\/s(\d{3})\/v1\/embeddings$/.exec(req.url);
    if (req.url.startsWith("/slow/")) {
      misbehaving.held.add(res);
      return;
    }
    const status = m ? Number(m[1]) : 404;
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: { message: `provider says ${status}`, code: status } }));
  });
  return new Promise((resolve) => misbehaving.server.listen(0, "127.0.0.1", () => resolve(misbehaving.server.address().port)));
}

const STATUSES = [404, 429, 503, 524, 529];

const fake = {};
const ctx = useServer({
  env: async () => {
    fake.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-emb-"));
    const port = await startMisbehaving();
    const closed = await freePort(); // nothing listens there
    const embed = `        output_modalities: [embeddings]\n        prompt_price: 1\n`;
    let extra = STATUSES.map((s) => `  - id: s${s}\n    base_url: http://127.0.0.1:${port}/s${s}/v1\n    models:\n      - id: embed\n${embed}`).join("");
    extra += `  - id: slow\n    base_url: http://127.0.0.1:${port}/slow/v1\n    timeout: 1s\n    models:\n      - id: embed\n${embed}`;
    extra += `  - id: gone\n    base_url: http://127.0.0.1:${closed}/v1\n    models:\n      - id: embed\n${embed}`;
    fake.upstream = await startFakeLLM(fake.dir, { extraProviders: extra });
    return { GATEHOUSE_PROVIDERS_FILE: fake.upstream.providers };
  },
});
after(() => {
  fake.upstream?.stop();
  for (const res of misbehaving.held ?? []) res.destroy();
  misbehaving.server?.closeAllConnections?.();
  misbehaving.server?.close();
  if (fake.dir) fs.rmSync(fake.dir, { recursive: true, force: true });
});

async function userKey(body = {}) {
  const key = await createKey(ctx.org.sdk, body);
  return { hash: key.data.hash, key: key.key, sdk: client(ctx.server, key.key) };
}

const usage = async (hash) => (await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash }))).data.usage;

describe("embeddings.generate", () => {
  it("embeds through fakellm, charges the provider's prompt tokens, and answers in the SDK's shape", async () => {
    const user = await userKey({ limit: 1 });
    const res = await call("embeddingsGenerate", () => user.sdk.embeddings.generate({
      requestBody: { model: "fake/embed", input: ["one two three", "four"], encodingFormat: "float" },
    }));
    assert.equal(typeof res, "object");
    assert.match(res.id, /^gen-/);
    assert.equal(res.object, "list");
    assert.equal(res.model, "fake/embed");
    assert.equal(res.data.length, 2);
    assert.deepEqual(res.data.map((d) => d.object), ["embedding", "embedding"]);
    // fakellm counts words: 4 prompt tokens at $0.001.
    assert.equal(res.usage.promptTokens, 4);
    assert.equal(res.usage.totalTokens, 4);
    assert.equal(res.usage.cost, 0.004);
    assert.equal(res.usage.isByok, false);
    assert.equal(await usage(user.hash), 0.004);

    const gen = await user.sdk.generations.getGeneration({ id: res.id });
    assert.equal(gen.data.model, "fake/embed");
    assert.equal(gen.data.tokensPrompt, 4);
    assert.equal(gen.data.totalCost, 0.004);

    // The raw answer, field by field, against the SDK's schema.
    const raw = await api(ctx.server, "POST", "/embeddings", { key: user.key, body: { model: "fake/embed", input: [[1, 2, 3]] } });
    assert.equal(raw.status, 200, raw.text);
    assertSdkSchema(operations.CreateEmbeddingsResponseBody$inboundSchema, raw.json, "POST /embeddings");
    assert.equal(raw.json.usage.prompt_tokens, 3);
    assert.equal(await usage(user.hash), 0.007);
  });

  it("refuses what it cannot meter, and who may not call, changing nothing", async () => {
    const user = await userKey();
    let err = await fails("embeddingsGenerate", 400, () => user.sdk.embeddings.generate({ requestBody: { model: "fake/echo", input: "hi" } }), "a chat model");
    assert.match(err.error.message, /not an embedding model/);
    err = await fails("embeddingsGenerate", 400, () => user.sdk.embeddings.generate({
      requestBody: { model: "fake/embed", input: [{ content: [{ type: "image_url", imageUrl: { url: "https://example.com/a.png" } }] }] },
    }), "an image");
    assert.match(err.error.message, /input\[0\]\.content\[0\]/);
    await fails("embeddingsGenerate", 401, () => client(ctx.server, "sk-gh-v1-" + "0".repeat(64)).embeddings.generate({ requestBody: { model: "fake/embed", input: "hi" } }));
    err = await fails("embeddingsGenerate", 403, () => ctx.org.sdk.embeddings.generate({ requestBody: { model: "fake/embed", input: "hi" } }), "a management key");
    assert.match(err.error.message, /management keys cannot call models/);
    await fails("embeddingsGenerate", 413, () => user.sdk.embeddings.generate({ requestBody: { model: "fake/embed", input: "x".repeat(11 << 20) } }));
    assert.equal(await usage(user.hash), 0);
  });

  it("a key whose limit cannot cover the worst case gets 402, and nothing reaches the provider", async () => {
    const user = await userKey({ limit: 0.01 });
    // The worst case: as many tokens as the body has bytes (+16) at $0.001, more than $0.01.
    const err = await failsAsGateway("embeddingsGenerate", 402, () => user.sdk.embeddings.generate({ requestBody: { model: "fake/embed", input: "a few words here" } }));
    assert.match(err.error.message, /^Key limit exceeded: /);
    assert.ok(err.error.metadata?.request_max_cost > 0.01, JSON.stringify(err.error.metadata));
    assert.equal(await usage(user.hash), 0);
  });

  it("a provider's refusal passes through with its status and charges nothing; a call it received and never answered in time is charged", async () => {
    const user = await userKey();
    for (const status of STATUSES) {
      const err = await fails("embeddingsGenerate", status, () => user.sdk.embeddings.generate({ requestBody: { model: `s${status}/embed`, input: "hi" } }));
      assert.equal(err.error.metadata?.provider_name, `s${status}`);
    }
    assert.equal(await usage(user.hash), 0, "a provider's refusal is free");
    let err = await fails("embeddingsGenerate", 408, () => user.sdk.embeddings.generate({ requestBody: { model: "slow/embed", input: "hi" } }), "a provider past its timeout");
    assert.equal(err.error.metadata?.provider_name, "slow");
    const charged = await usage(user.hash);
    assert.ok(charged > 0 && Math.abs(charged - err.error.metadata?.cost) < 1e-9, `the provider had the request: charged ${charged}, the error says ${err.error.metadata?.cost}`);
    err = await fails("embeddingsGenerate", 502, () => user.sdk.embeddings.generate({ requestBody: { model: "gone/embed", input: "hi" } }), "an unreachable provider");
    assert.equal(err.error.metadata?.provider_name, "gone");
    assert.equal(await usage(user.hash), charged, "a provider that never had the request charges nothing");
  });
});

describe("embeddings.listModels", () => {
  const ALL = ["fake/embed", "gone/embed", "s404/embed", "s429/embed", "s503/embed", "s524/embed", "s529/embed", "slow/embed"];

  it("lists the embedding models only, in the SDK's ModelsListResponse", async () => {
    const res = await call("embeddingsListModels", () => ctx.anon.embeddings.listModels());
    assert.deepEqual(res.result.data.map((m) => m.id).sort(), ALL);
    assert.ok(res.result.data.every((m) => m.architecture.outputModalities.includes("embeddings")));
    const raw = await api(ctx.server, "GET", "/embeddings/models", {});
    assert.equal(raw.status, 200, raw.text);
    assertSdkSchema(models.ModelsListResponse$inboundSchema, raw.json, "GET /embeddings/models");
  });

  it("the page iterator walks every page with a small limit and ends; a bad limit is 400", async () => {
    const seen = [];
    let pages = 0;
    for await (const page of await call("embeddingsListModels", () => ctx.anon.embeddings.listModels({ limit: 3 }))) {
      assert.ok(++pages <= 5, "the page iterator did not end");
      assert.equal(page.result.totalCount, ALL.length);
      seen.push(...page.result.data.map((m) => m.id));
    }
    assert.equal(pages, 3);
    assert.deepEqual(seen.sort(), ALL);
    await fails("embeddingsListModels", 400, () => ctx.anon.embeddings.listModels({ limit: 0 }));
  });
});
