// The OpenAI Responses API (issue #12, item 9) through the official
// client, responses.send and its old name beta.responses.send, whole and
// streamed, and through the openai Node client's responses.create, against
// a real Gatehouse serving cmd/fakellm's /v1/responses (the fake provider
// says responses: true; "plain" serves the same model without it). Metered
// like chat completions: the key's usage moves by the cost of the usage's
// input_tokens and output_tokens, and the answer (or the stream's last
// event) carries usage.cost. Providers that misbehave (a small server of
// this file answering an error status, or never answering, and an address
// where nothing listens) provoke the provider statuses the SDK types.
// Answers and events are checked against the SDK's own schemas.
//
// Typed statuses not exercised here: 500 (no input may cause it).

import assert from "node:assert/strict";
import fs from "node:fs";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { after, describe, it } from "node:test";

import OpenAI from "openai";

import {
  api, assertSdkSchema, call, client, createKey, fails, failsAsGateway, freePort, models, startFakeLLM, uniq, useServer,
} from "./harness.mjs";

// A provider that answers POST <base>/responses with the status its base
// path names (/s503/v1 → 503), or never answers (/slow/v1).
const misbehaving = {};
function startMisbehaving() {
  misbehaving.held = new Set();
  misbehaving.server = http.createServer((req, res) => {
    req.resume();
    if (req.url.startsWith("/slow/")) {
      misbehaving.held.add(res);
      return;
    }
    const m = /^\/s(\d{3})\/v1\/responses$/.exec(req.url);
    const status = m ? Number(m[1]) : 404;
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ error: { message: `provider says ${status}`, code: status } }));
  });
  return new Promise((resolve) => misbehaving.server.listen(0, "127.0.0.1", () => resolve(misbehaving.server.address().port)));
}

const STATUSES = [404, 422, 429, 503, 524, 529];
const echo = `        prompt_price: 1000\n        completion_price: 2000\n        max_completion_tokens: 100\n`;

const fake = {};
const ctx = useServer({
  env: async () => {
    fake.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-resp-"));
    const port = await startMisbehaving();
    const closed = await freePort(); // nothing listens there
    const provider = (id, base, more = "") => `  - id: ${id}\n    base_url: ${base}\n    responses: true\n${more}    models:\n      - id: echo\n${echo}`;
    let extra = STATUSES.map((s) => provider(`s${s}`, `http://127.0.0.1:${port}/s${s}/v1`)).join("");
    extra += provider("slow", `http://127.0.0.1:${port}/slow/v1`, "    timeout: 1s\n");
    extra += provider("gone", `http://127.0.0.1:${closed}/v1`);
    fake.upstream = await startFakeLLM(fake.dir, { responses: true, extraProviders: extra });
    // The same fakellm, without responses: true.
    fs.appendFileSync(fake.upstream.providers, `  - id: plain\n    base_url: http://127.0.0.1:${fake.upstream.port}/v1\n    models:\n      - id: echo\n${echo}`);
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

// The two names of the call, each with its operation for the coverage table.
const SENDS = [
  ["responsesSend", (sdk, responsesRequest) => sdk.responses.send({ responsesRequest })],
  ["betaResponsesSend", (sdk, responsesRequest) => sdk.beta.responses.send({ responsesRequest })],
];

// The events of a raw Responses stream: [{event, data}], data parsed.
function sseEvents(text) {
  return text.trim().split("\n\n").map((block) => {
    const lines = block.split("\n");
    const event = lines.find((l) => l.startsWith("event: "))?.slice(7) ?? null;
    const data = lines.filter((l) => l.startsWith("data: ")).map((l) => l.slice(6)).join("\n");
    return { event, data: JSON.parse(data) };
  });
}

// The SDK's schema of each kind of event fakellm sends.
const EVENT_SCHEMAS = {
  "response.created": models.OpenResponsesCreatedEvent$inboundSchema,
  "response.in_progress": models.OpenResponsesInProgressEvent$inboundSchema,
  "response.output_item.added": models.StreamEventsResponseOutputItemAdded$inboundSchema,
  "response.content_part.added": models.ContentPartAddedEvent$inboundSchema,
  "response.output_text.delta": models.TextDeltaEvent$inboundSchema,
  "response.output_text.done": models.TextDoneEvent$inboundSchema,
  "response.content_part.done": models.ContentPartDoneEvent$inboundSchema,
  "response.output_item.done": models.StreamEventsResponseOutputItemDone$inboundSchema,
  "response.completed": models.StreamEventsResponseCompleted$inboundSchema,
  "response.incomplete": models.StreamEventsResponseIncomplete$inboundSchema,
};

describe("responses.send and beta.responses.send", () => {
  it("answer through fakellm in the SDK's shape, charging the usage's input and output tokens", async () => {
    const user = await userKey({ limit: 1 });
    let spent = 0;
    for (const [op, send] of SENDS) {
      const res = await call(op, () => send(user.sdk, { model: "fake/echo", input: "hello there gateway" }));
      assert.match(res.id, /^gen-/);
      assert.equal(res.object, "response");
      assert.equal(res.model, "fake/echo");
      assert.equal(res.status, "completed");
      assert.equal(res.output[0].content[0].text, "You said: hello there gateway");
      // fakellm counts words: 3 input tokens at $0.001, 5 output tokens at $0.002.
      assert.equal(res.usage.inputTokens, 3);
      assert.equal(res.usage.outputTokens, 5);
      assert.equal(res.usage.totalTokens, 8);
      assert.equal(res.usage.cost, 0.013);
      assert.equal(res.usage.isByok, false);
      assert.deepEqual(res.usage.costDetails, { upstreamInferenceCost: null, upstreamInferenceInputCost: 0.003, upstreamInferenceOutputCost: 0.01 });
      spent += 0.013;
      assert.equal(await usage(user.hash), Number(spent.toFixed(3)));
      const gen = await user.sdk.generations.getGeneration({ id: res.id });
      assert.equal(gen.data.model, "fake/echo");
      assert.equal(gen.data.tokensPrompt, 3);
      assert.equal(gen.data.tokensCompletion, 5);
      assert.equal(gen.data.totalCost, 0.013);
    }

    // The raw answer, field by field, against the SDK's schema; cut at max_output_tokens.
    const raw = await api(ctx.server, "POST", "/responses", { key: user.key, body: { model: "fake/echo", instructions: "Be brief.", input: "one two three", max_output_tokens: 2 } });
    assert.equal(raw.status, 200, raw.text);
    assertSdkSchema(models.OpenResponsesResult$inboundSchema, raw.json, "POST /responses");
    assert.equal(raw.json.status, "incomplete");
    assert.deepEqual(raw.json.incomplete_details, { reason: "max_output_tokens" });
    assert.equal(raw.json.output[0].content[0].text, "You said:");
    assert.equal(raw.json.usage.input_tokens, 5);
    assert.equal(raw.json.usage.output_tokens, 2);
  });

  it("stream the Responses events; the last carries the cost, and comes once the call is metered", async () => {
    const user = await userKey({ limit: 1 });
    for (const [op, send] of SENDS) {
      const before = await usage(user.hash);
      const stream = await call(op, () => send(user.sdk, { model: "fake/echo", input: "stream me please", stream: true }));
      let text = "";
      const types = [];
      let last;
      for await (const ev of stream) {
        types.push(ev.type);
        if (ev.type === "response.output_text.delta") text += ev.delta;
        last = ev;
      }
      assert.equal(text, "You said: stream me please");
      assert.equal(types[0], "response.created");
      assert.equal(last.type, "response.completed");
      assert.match(last.response.id, /^gen-/);
      assert.equal(last.response.model, "fake/echo");
      assert.equal(last.response.usage.inputTokens, 3);
      assert.equal(last.response.usage.outputTokens, 5);
      assert.equal(last.response.usage.cost, 0.013);
      assert.equal(Number((await usage(user.hash) - before).toFixed(3)), 0.013);
      const gen = await user.sdk.generations.getGeneration({ id: last.response.id });
      assert.equal(gen.data.streamed, true);
    }

    // The raw events against the SDK's schema of each, in their order.
    const res = await fetch(`${ctx.server.apiURL}/responses`, {
      method: "POST",
      headers: { Authorization: `Bearer ${user.key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ model: "fake/echo", input: "a b c d e", stream: true, max_output_tokens: 4 }),
    });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/event-stream");
    const events = sseEvents(await res.text());
    events.forEach(({ event, data }, i) => {
      assert.equal(event, data.type, "each event line names its data's type");
      assert.equal(data.sequence_number, i);
      assert.ok(EVENT_SCHEMAS[data.type], `an event of an unexpected type: ${data.type}`);
      assertSdkSchema(EVENT_SCHEMAS[data.type], data, `event ${data.type}`);
    });
    const final = events.at(-1).data;
    assert.equal(final.type, "response.incomplete");
    assert.equal(final.response.usage.output_tokens, 4);
    assert.equal(final.response.usage.cost, 0.013); // 5 input tokens at $0.001, 4 output tokens at $0.002
  });

  it("apply a preset of the responses type before anything else", async () => {
    const slug = uniq("resp");
    await call("presetsCreatePresetsResponses", () => ctx.org.sdk.presets.createPresetsResponses({
      slug, responsesRequest: { model: "fake/echo", instructions: "Answer in few words.", maxOutputTokens: 3 },
    }));
    const user = await userKey();
    const res = await call("responsesSend", () => user.sdk.responses.send({ responsesRequest: { model: `@preset/${slug}`, input: "hello again" } }));
    // The preset's system prompt counts as input (4 + 2 words); its cap cuts the answer.
    assert.equal(res.usage.inputTokens, 6);
    assert.equal(res.usage.outputTokens, 3);
    assert.equal(res.status, "incomplete");
  });

  it("refuse what they cannot meter, naming the field, and change nothing", async () => {
    const user = await userKey();
    const cases = [
      [{ model: "fake/echo", input: "hi", previousResponseId: "resp_1" }, /previous_response_id: .*stored/],
      [{ model: "fake/echo", input: "hi", background: true }, /^background: /],
      [{ model: "fake/echo", input: "hi", tools: [{ type: "web_search" }] }, /^tools\[0\]\.type: /],
      [{ model: "fake/echo", input: [{ role: "user", content: [{ type: "input_image", imageUrl: "https://example.com/a.png", detail: "auto" }] }] }, /^input\[0\]\.content\[0\]\.type: /],
      [{ model: "plain/echo", input: "hi" }, /does not offer the Responses API/],
      [{ model: "fake/echo", input: "hi", serviceTier: "priority" }, /^service_tier: /],
    ];
    for (const [op, send] of SENDS) {
      for (const [request, message] of cases) {
        const err = await fails(op, 400, () => send(user.sdk, request), JSON.stringify(request).slice(0, 80));
        assert.match(err.error.message, message);
      }
    }
    assert.equal(await usage(user.hash), 0);
  });

  it("refuse who may not call and what the key cannot pay for, before the provider", async () => {
    const poor = await userKey({ limit: 0.01 });
    const g = await call("guardrailsCreate", () => ctx.org.sdk.guardrails.create({ createGuardrailRequest: { name: uniq("no-echo"), allowedProviders: ["elsewhere"] } }));
    const blocked = await userKey();
    await call("guardrailsBulkAssignKeys", () => ctx.org.sdk.guardrails.bulkAssignKeys({ id: g.data.id, bulkAssignKeysRequest: { keyHashes: [blocked.hash] } }));
    for (const [op, send] of SENDS) {
      await fails(op, 401, () => send(ctx.anon, { model: "fake/echo", input: "hi" }));
      let err = await fails(op, 403, () => send(ctx.org.sdk, { model: "fake/echo", input: "hi" }), "a management key");
      assert.match(err.error.message, /management keys cannot call models/);
      err = await failsAsGateway(op, 403, () => send(blocked.sdk, { model: "fake/echo", input: "hi" }));
      assert.match(err.error.message, /^Request blocked: /);
      // The worst case: the body's bytes (+16) as input and 100 output tokens, more than $0.01.
      err = await failsAsGateway(op, 402, () => send(poor.sdk, { model: "fake/echo", input: "hi" }));
      assert.match(err.error.message, /^Key limit exceeded: /);
      await fails(op, 413, () => send(poor.sdk, { model: "fake/echo", input: "x".repeat(11 << 20) }));
    }
    assert.equal(await usage(poor.hash), 0);
    assert.equal(await usage(blocked.hash), 0);
  });

  it("pass a provider's refusal through with its status and charge nothing; charge a call it received and never answered in time", async () => {
    const user = await userKey();
    let charged = 0;
    for (const [op, send] of SENDS) {
      for (const status of STATUSES) {
        const err = await fails(op, status, () => send(user.sdk, { model: `s${status}/echo`, input: "hi" }));
        assert.equal(err.error.metadata?.provider_name, `s${status}`);
      }
      assert.equal(await usage(user.hash), charged, "a provider's refusal is free");
      let err = await fails(op, 408, () => send(user.sdk, { model: "slow/echo", input: "hi" }), "a provider past its timeout");
      assert.equal(err.error.metadata?.provider_name, "slow");
      const now = await usage(user.hash);
      assert.ok(err.error.metadata?.cost > 0 && Math.abs(now - charged - err.error.metadata.cost) < 1e-9,
        `the provider had the request: usage ${charged} -> ${now}, the error says ${err.error.metadata?.cost}`);
      charged = now;
      err = await fails(op, 502, () => send(user.sdk, { model: "gone/echo", input: "hi" }), "an unreachable provider");
      assert.equal(err.error.metadata?.provider_name, "gone");
      assert.equal(await usage(user.hash), charged, "a provider that never had the request charges nothing");
    }
  });
});

describe("the openai Node client's responses.create against Gatehouse", () => {
  const openai = (apiKey) => new OpenAI({ apiKey, baseURL: ctx.server.apiURL, maxRetries: 0, timeout: 30_000 });

  it("answers whole, with the client's output_text and the usage as metered", async () => {
    const user = await userKey({ limit: 1 });
    const res = await openai(user.key).responses.create({ model: "fake/echo", input: "hello there gateway" });
    assert.match(res.id, /^gen-/);
    assert.equal(res.output_text, "You said: hello there gateway");
    assert.equal(res.usage.input_tokens, 3);
    assert.equal(res.usage.output_tokens, 5);
    assert.equal(res.usage.cost, 0.013);
    assert.equal(await usage(user.hash), 0.013);
  });

  it("streams events, and the stream helper assembles the final response", async () => {
    const user = await userKey({ limit: 1 });
    const stream = await openai(user.key).responses.create({ model: "fake/echo", input: "stream me please", stream: true });
    let text = "";
    let completed;
    for await (const ev of stream) {
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") completed = ev.response;
    }
    assert.equal(text, "You said: stream me please");
    assert.equal(completed.usage.cost, 0.013);
    const final = await openai(user.key).responses.stream({ model: "fake/echo", input: "assemble this" }).finalResponse();
    assert.equal(final.output[0].content[0].text, "You said: assemble this");
    assert.equal(final.usage.cost, 0.01); // 2 input tokens at $0.001, 4 output tokens at $0.002
    assert.equal(await usage(user.hash), 0.023);
  });

  it("errors arrive as the client's typed errors", async () => {
    const user = await userKey();
    await assert.rejects(openai(user.key).responses.create({ model: "fake/echo", input: "hi", previous_response_id: "resp_1" }),
      (err) => err instanceof OpenAI.BadRequestError && /previous_response_id/.test(err.message));
    await assert.rejects(openai(user.key).responses.create({ model: "plain/echo", input: "hi" }),
      (err) => err instanceof OpenAI.BadRequestError && /Responses API/.test(err.message));
    await assert.rejects(openai("sk-gh-v1-" + "0".repeat(64)).responses.create({ model: "fake/echo", input: "hi" }),
      (err) => err instanceof OpenAI.AuthenticationError);
    await assert.rejects(openai(ctx.server.bootstrapKey).responses.create({ model: "fake/echo", input: "hi" }),
      (err) => err instanceof OpenAI.PermissionDeniedError);
  });
});
