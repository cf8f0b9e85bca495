// The catalog of the providers file through the official client: models
// (list with its filters and pages, count, get, a key's own list), a model's
// endpoints, the ZDR endpoints and the providers. Every answer is parsed by
// the SDK itself, and its raw JSON is checked against the SDK's schemas
// with no field the SDK does not know.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.
// - 403 on the public reads (models.list, count, get, endpoints.list,
//   listZdrEndpoints): no credential is read, so nothing is forbidden.
// - 404 on models.listForUser: it names nothing but the calling key.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import * as operations from "@openrouter/sdk/models/operations";

import {
  BOGUS_REGULAR_KEY,
  api,
  assertSdkSchema,
  call,
  client,
  createKey,
  createOrg,
  fails,
  models,
  startServer,
  uniq,
} from "./harness.mjs";

const ctx = {};

// Eight text models in all, an embeddings model, and a model id holding a
// slash. Nothing is called: the base URLs answer nothing.
const PROVIDERS = `providers:
  - id: acme
    name: Acme AI
    base_url: http://127.0.0.1:9/v1
    zdr: true
    moderated: true
    privacy_policy_url: https://acme.example/privacy
    terms_of_service_url: https://acme.example/terms
    status_page_url: https://status.acme.example
    headquarters: DE
    datacenters: [DE, US]
    models:
      - id: chat
        name: Acme Chat
        prompt_price: 0.15
        completion_price: 0.60
        cache_read_price: 0.075
        cache_write_price: 0.1875
        max_completion_tokens: 16384
        context_length: 128000
        description: Acme's chat model.
        created: 2024-07-18
        hugging_face_id: acme/chat-7b
        knowledge_cutoff: 2023-10-01
        expiration_date: 2030-01-31
        tokenizer: GPT
        instruct_type: chatml
        input_modalities: [text, image]
        supported_parameters: [max_tokens, temperature, tools, tool_choice, reasoning]
        reasoning:
          mandatory: false
          default_enabled: true
          default_effort: medium
          supported_efforts: [low, medium, high]
          supports_max_tokens: true
        categories: [programming]
        quantization: fp8
        implicit_caching: true
      - id: embed
        prompt_price: 0.02
        completion_price: 0
        output_modalities: [embeddings]
  - id: local
    base_url: http://127.0.0.1:9/v1
    models:
      - {id: meta-llama/Llama-3.1-8B, prompt_price: 0, completion_price: 0}
      - {id: m1, prompt_price: 1, completion_price: 1}
      - {id: m2, prompt_price: 2, completion_price: 2}
      - {id: m3, prompt_price: 3, completion_price: 3}
      - {id: m4, prompt_price: 4, completion_price: 4}
      - {id: m5, prompt_price: 5, completion_price: 5}
      - {id: m6, prompt_price: 6, completion_price: 6}
`;
const TEXT_MODELS = ["acme/chat", "local/meta-llama/Llama-3.1-8B", "local/m1", "local/m2", "local/m3", "local/m4", "local/m5", "local/m6"];

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-catalog-"));
  const providers = path.join(ctx.dir, "providers.yaml");
  fs.writeFileSync(providers, PROVIDERS);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: providers } });
  ctx.org = await createOrg(ctx.server, uniq("acme"));
  ctx.foreign = await createOrg(ctx.server, uniq("foreign"));
  ctx.anon = client(ctx.server, BOGUS_REGULAR_KEY); // the catalog ignores credentials
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function raw(p, key) {
  const res = await api(ctx.server, "GET", p, { key });
  assert.equal(res.status, 200, `GET ${p}: ${res.status} ${res.text}`);
  return res.json;
}

// Collects every page of a page iterator, failing past maxPages (an
// iterator that never ends).
async function pages(iterator, maxPages = 20) {
  const out = [];
  let n = 0;
  for await (const page of iterator) {
    assert.ok(++n <= maxPages, `the page iterator did not end after ${maxPages} pages`);
    out.push(...page.result.data);
  }
  return { items: out, pages: n };
}

// ---------------------------------------------------------------------------

describe("models.list", () => {
  it("lists the text models with every description of the providers file, as the SDK's Model", async () => {
    const res = await call("modelsList", () => ctx.anon.models.list());
    assert.deepEqual(res.result.data.map((m) => m.id), TEXT_MODELS);
    assert.equal(res.result.totalCount, TEXT_MODELS.length);
    assert.equal(res.result.links.next, null);
    const chat = res.result.data[0];
    assert.equal(chat.name, "Acme Chat");
    assert.equal(chat.description, "Acme's chat model.");
    assert.equal(chat.created, Date.UTC(2024, 6, 18) / 1000);
    assert.equal(chat.huggingFaceId, "acme/chat-7b");
    assert.equal(chat.knowledgeCutoff, "2023-10-01");
    assert.equal(chat.expirationDate, "2030-01-31");
    assert.equal(chat.contextLength, 128000);
    assert.deepEqual(chat.architecture, {
      inputModalities: ["text", "image"], outputModalities: ["text"], modality: "text+image->text", tokenizer: "GPT", instructType: "chatml",
    });
    assert.deepEqual(chat.pricing, { prompt: "0.00000015", completion: "0.0000006", inputCacheRead: "0.000000075", inputCacheWrite: "0.0000001875" });
    assert.deepEqual(chat.reasoning, {
      mandatory: false, defaultEnabled: true, defaultEffort: "medium", supportedEfforts: ["low", "medium", "high"], supportsMaxTokens: true,
    });
    assert.deepEqual(chat.supportedParameters, ["max_tokens", "temperature", "tools", "tool_choice", "reasoning"]);
    assert.deepEqual(chat.topProvider, { contextLength: 128000, maxCompletionTokens: 16384, isModerated: true });
    assert.equal(chat.links.details, "/api/v1/models/acme/chat/endpoints");
    const plain = res.result.data[2];
    assert.equal(plain.reasoning, undefined);
    assert.equal(plain.architecture.tokenizer, undefined);
    assert.equal(plain.knowledgeCutoff, null);
    assertSdkSchema(models.ModelsListResponse$inboundSchema, await raw("/models?output_modalities=all"), "GET /models");
  });

  it("its page iterator with a small limit ends, and visits every model once", async () => {
    for (const limit of [1, 3, 8]) {
      const { items, pages: n } = await pages(await call("modelsList", () => ctx.anon.models.list({ limit })));
      assert.deepEqual(items.map((m) => m.id), TEXT_MODELS, `limit ${limit}`);
      assert.ok(n <= Math.ceil(TEXT_MODELS.length / limit) + 1, `limit ${limit}: ${n} pages`);
    }
    const { items } = await pages(await call("modelsList", () => ctx.anon.models.list({ limit: 2, outputModalities: "all", offset: 1 })));
    assert.deepEqual(items.map((m) => m.id), ["acme/embed", ...TEXT_MODELS.slice(1)]);
  });

  it("honours its filters and sorts", async () => {
    const ids = async (req) => (await call("modelsList", () => ctx.anon.models.list(req))).result.data.map((m) => m.id);
    assert.deepEqual(await ids({ outputModalities: "embeddings" }), ["acme/embed"]);
    assert.deepEqual(await ids({ zdr: "true", outputModalities: "all" }), ["acme/chat", "acme/embed"]);
    assert.deepEqual(await ids({ q: "LLAMA" }), ["local/meta-llama/Llama-3.1-8B"]);
    assert.deepEqual(await ids({ supportedParameters: "tools,reasoning" }), ["acme/chat"]);
    assert.deepEqual(await ids({ inputModalities: "image" }), ["acme/chat"]);
    assert.deepEqual(await ids({ category: "programming" }), ["acme/chat"]);
    assert.deepEqual(await ids({ context: 100000 }), ["acme/chat"]);
    assert.deepEqual(await ids({ minPrice: 2, maxPrice: 3.5 }), ["local/m2", "local/m3"]);
    assert.deepEqual(await ids({ maxOutputPrice: 0.6, providers: "local" }), ["local/meta-llama/Llama-3.1-8B"]);
    assert.deepEqual(await ids({ modelAuthors: "acme", arch: "gpt" }), ["acme/chat"]);
    assert.deepEqual(await ids({ region: "eu" }), ["acme/chat"]);
    assert.deepEqual(await ids({ minIntelligenceIndex: 50 }), []);
    assert.deepEqual(await ids({ sort: "pricing-high-to-low", limit: 3 }), ["local/m6", "local/m5", "local/m4"]);
    assert.deepEqual(await ids({ sort: "newest", limit: 1, offset: 7 }), ["acme/chat"]); // released long before the others were loaded
  });

  it("400 for a filter it cannot use, naming it", async () => {
    let err = await fails("modelsList", 400, () => ctx.anon.models.list({ outputModalities: "smell" }));
    assert.match(err.error.message, /^output_modalities: /);
    err = await fails("modelsList", 400, () => ctx.anon.models.list({ sort: "cheapest-first" }));
    assert.match(err.error.message, /^sort: must be one of /);
    err = await fails("modelsList", 400, () => ctx.anon.models.list({ limit: 1001 }));
    assert.match(err.error.message, /^limit: /);
    err = await fails("modelsList", 400, () => ctx.anon.models.list({ minPrice: -1 }));
    assert.match(err.error.message, /^min_price: /);
  });
});

describe("models.count", () => {
  it("counts what models.list would list with the same filter", async () => {
    let res = await call("modelsCount", () => ctx.anon.models.count());
    assert.deepEqual(res, { data: { count: TEXT_MODELS.length } });
    res = await call("modelsCount", () => ctx.anon.models.count({ outputModalities: "all" }));
    assert.equal(res.data.count, TEXT_MODELS.length + 1);
    assertSdkSchema(models.ModelsCountResponse$inboundSchema, await raw("/models/count?output_modalities=embeddings"), "GET /models/count");
  });

  it("400 for an unknown modality", async () => {
    const err = await fails("modelsCount", 400, () => ctx.anon.models.count({ outputModalities: "text,pdf" }));
    assert.match(err.error.message, /^output_modalities: "pdf" is not one of /);
  });
});

describe("models.get", () => {
  it("returns one model; a model id holding a slash is sent percent-encoded by the client", async () => {
    const res = await call("modelsGet", () => ctx.anon.models.get({ author: "acme", slug: "chat" }));
    assert.equal(res.data.id, "acme/chat");
    assert.equal(res.data.reasoning.defaultEffort, "medium");
    const llama = await call("modelsGet", () => ctx.anon.models.get({ author: "local", slug: "meta-llama/Llama-3.1-8B" }));
    assert.equal(llama.data.id, "local/meta-llama/Llama-3.1-8B");
    assertSdkSchema(models.ModelResponse$inboundSchema, await raw("/model/acme/chat"), "GET /model/acme/chat");
  });

  it("404 for a model that is not served", async () => {
    for (const [author, slug] of [["acme", "gpt-5"], ["nobody", "chat"], ["acme", "chat:free"]]) {
      const err = await fails("modelsGet", 404, () => ctx.anon.models.get({ author, slug }));
      assert.match(err.error.message, /^model not found/);
    }
  });
});

describe("endpoints.list", () => {
  it("returns the model and its one endpoint", async () => {
    const res = await call("endpointsList", () => ctx.anon.endpoints.list({ author: "acme", slug: "chat" }));
    assert.equal(res.data.id, "acme/chat");
    assert.equal(res.data.architecture.tokenizer, "GPT");
    assert.equal(res.data.endpoints.length, 1);
    const e = res.data.endpoints[0];
    assert.equal(e.name, "Acme AI | acme/chat");
    assert.equal(e.providerName, "Acme AI");
    assert.equal(e.tag, "acme/fp8");
    assert.equal(e.quantization, "fp8");
    assert.equal(e.contextLength, 128000);
    assert.equal(e.maxCompletionTokens, 16384);
    assert.equal(e.supportsImplicitCaching, true);
    assert.deepEqual(e.supportsToolChoice, { auto: true, function: true, none: true, required: true });
    assert.equal(e.pricing.inputCacheRead, "0.000000075");
    assert.equal(e.uptimeLast30m, null);
    const plain = await call("endpointsList", () => ctx.anon.endpoints.list({ author: "local", slug: "m1" }));
    assert.equal(plain.data.architecture.tokenizer, null);
    assert.equal(plain.data.endpoints[0].providerName, "local");
    assertSdkSchema(operations.ListEndpointsResponse$inboundSchema,
      await raw("/models/acme/chat/endpoints"), "GET /models/acme/chat/endpoints");
  });

  it("404 for a model that is not served", async () => {
    const err = await fails("endpointsList", 404, () => ctx.anon.endpoints.list({ author: "acme", slug: "nope" }));
    assert.match(err.error.message, /^model not found/);
  });
});

describe("endpoints.listZdrEndpoints", () => {
  it("lists the endpoints of the providers marked zdr", async () => {
    const res = await call("endpointsListZdrEndpoints", () => ctx.anon.endpoints.listZdrEndpoints());
    assert.deepEqual(res.data.map((e) => e.modelId), ["acme/chat", "acme/embed"]);
    assertSdkSchema(operations.ListEndpointsZdrResponse$inboundSchema, await raw("/endpoints/zdr"), "GET /endpoints/zdr");
  });
});

describe("providers.list", () => {
  it("lists the providers of the providers file", async () => {
    const res = await call("providersList", () => ctx.anon.providers.list());
    assert.deepEqual(res.data, [
      { name: "Acme AI", slug: "acme", privacyPolicyUrl: "https://acme.example/privacy", termsOfServiceUrl: "https://acme.example/terms",
        statusPageUrl: "https://status.acme.example", headquarters: "DE", datacenters: ["DE", "US"] },
      { name: "local", slug: "local", privacyPolicyUrl: null, termsOfServiceUrl: null, statusPageUrl: null, headquarters: null, datacenters: null },
    ]);
    assertSdkSchema(operations.ListProvidersResponse$inboundSchema, await raw("/providers"), "GET /providers");
  });
});

describe("models.listForUser", () => {
  it("lists the models the key's guardrails let through, and pages to the end", async () => {
    const sdk = ctx.org.sdk;
    const key = await createKey(sdk);
    const user = client(ctx.server, key.key);
    const list = async (req) => (await call("modelsListForUser", () => user.models.listForUser({ bearer: key.key }, req))).result.data.map((m) => m.id);
    assert.deepEqual(await list(), TEXT_MODELS);
    const guard = await call("guardrailsCreate", () => sdk.guardrails.create({ createGuardrailRequest: {
      name: uniq("catalog"), allowedProviders: ["local"], ignoredModels: ["local/m6"] } }));
    await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: guard.data.id, bulkAssignKeysRequest: { keyHashes: [key.data.hash] } }));
    const allowed = TEXT_MODELS.filter((id) => id.startsWith("local/") && id !== "local/m6");
    assert.deepEqual(await list(), allowed);
    assert.deepEqual(await list({ outputModalities: "all" }), allowed);
    const { items } = await pages(await call("modelsListForUser", () => user.models.listForUser({ bearer: key.key }, { limit: 2 })));
    assert.deepEqual(items.map((m) => m.id), allowed);
    const res = await api(ctx.server, "GET", "/models/user?limit=2", { key: key.key });
    assert.equal(res.json.total_count, allowed.length);
    assertSdkSchema(models.ModelsListResponse$inboundSchema, res.json, "GET /models/user");

    // Another organization's key is not governed by this one's guardrails.
    const foreignKey = await createKey(ctx.foreign.sdk);
    const foreign = client(ctx.server, foreignKey.key);
    const theirs = await call("modelsListForUser", () => foreign.models.listForUser({ bearer: foreignKey.key }));
    assert.deepEqual(theirs.result.data.map((m) => m.id), TEXT_MODELS);
  });

  it("401 for an unknown key, 403 for a management key (which cannot call models)", async () => {
    await fails("modelsListForUser", 401, () => ctx.anon.models.listForUser({ bearer: BOGUS_REGULAR_KEY }));
    const err = await fails("modelsListForUser", 403, () => ctx.org.sdk.models.listForUser({ bearer: ctx.org.mgmtKey }));
    assert.match(err.error.message, /management keys cannot call models/);
  });
});
