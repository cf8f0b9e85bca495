// The Messages API through Anthropic's official Node SDK (@anthropic-ai/sdk,
// pinned in package.json): what an application that speaks Anthropic's API
// meets when it points baseURL at Gatehouse (http://HOST:PORT/api, the SDK
// adds /v1/messages). Whole and streamed messages, with tools, through an
// OpenAI-compatible upstream (cmd/fakellm), and prompt caching on a tool
// through an upstream of type anthropic (fakellm's stand-in of Anthropic's
// API): the answer in Anthropic's shapes, and the metered cost exactly the
// upstream's usage at the configured prices, cache writes and reads
// included. Errors as the SDK's typed errors. Not part of the
// @openrouter/sdk coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import Anthropic from "@anthropic-ai/sdk";

import { api, startFakeLLM, startServer, uniq } from "./harness.mjs";

const ctx = {};

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-anthropic-"));
  ctx.fake = await startFakeLLM(ctx.dir);
  // A provider of type anthropic too, served by fakellm's strict stand-in of
  // Anthropic's API, whose model prices its cache: per million tokens,
  // prompt $1000, completion $2000, cache reads $100, cache writes $1250.
  fs.appendFileSync(ctx.fake.providers, `  - id: claude
    type: anthropic
    base_url: http://127.0.0.1:${ctx.fake.port}
    api_key_env: ANTHROPIC_TEST_KEY
    models:
      - id: chat
        prompt_price: 1000
        completion_price: 2000
        cache_read_price: 100
        cache_write_price: 1250
        max_completion_tokens: 100
`);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: ctx.fake.providers, ANTHROPIC_TEST_KEY: "anthropic-key" } });
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.fake?.stop();
  if (ctx.dir) fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function newKey(body = {}) {
  const res = await api(ctx.server, "POST", "/keys", { key: ctx.server.bootstrapKey, body: { name: uniq("anthropic"), ...body } });
  assert.equal(res.status, 201, res.text);
  return { key: res.json.key, hash: res.json.data.hash };
}

async function usageOf(hash) {
  const res = await api(ctx.server, "GET", `/keys/${hash}`, { key: ctx.server.bootstrapKey });
  assert.equal(res.status, 200, res.text);
  return res.json.data.usage;
}

// The client as an application configures it: Gatehouse's base URL (the
// SDK adds /v1/messages) and a Gatehouse key, which the SDK sends as
// x-api-key; no retries, so that each error is seen as sent.
const anthropic = (apiKey) => new Anthropic({ apiKey, baseURL: `${ctx.server.baseURL}/api`, maxRetries: 0, timeout: 30_000 });

// fakellm's prices (harness.mjs): $0.001 a prompt token, $0.002 a
// completion token. Money is compared in nano-dollars, as Gatehouse keeps it.
const nano = (usd) => Math.round(usd * 1e9);
const costOf = (u) => nano(u.input_tokens * 0.001 + u.output_tokens * 0.002);

const weather = {
  name: "weather",
  description: "The weather in a city",
  input_schema: { type: "object", properties: { city: { type: "string" } }, required: ["city"] },
};

describe("the Anthropic Node SDK against Gatehouse's Messages API", () => {
  it("messages.create: the message, its usage, and the key charged the upstream's usage at its prices", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const msg = await anthropic(key).messages.create({
      model: "fake/echo",
      max_tokens: 50,
      system: "Be brief.",
      messages: [{ role: "user", content: "hello there gateway" }],
    });
    assert.match(msg.id, /^msg_gen-/);
    assert.equal(msg.type, "message");
    assert.equal(msg.role, "assistant");
    assert.equal(msg.model, "fake/echo");
    assert.deepEqual(msg.content, [{ type: "text", text: "You said: hello there gateway" }]);
    assert.equal(msg.stop_reason, "end_turn");
    assert.equal(msg.stop_sequence, null);
    // fakellm counts words: 2 of the system prompt and 3 of the user's, 5 of the answer.
    assert.equal(msg.usage.input_tokens, 5);
    assert.equal(msg.usage.output_tokens, 5);
    assert.equal(msg.usage.cache_read_input_tokens, 0);
    assert.equal(msg.usage.cache_creation_input_tokens, 0);
    assert.equal(nano(msg.usage.cost), costOf(msg.usage));
    assert.equal(nano(await usageOf(hash)), costOf(msg.usage));
    // The generation is found under the message's id.
    const gen = await api(ctx.server, "GET", `/generation?id=${msg.id}`, { key });
    assert.equal(gen.status, 200, gen.text);
    assert.equal(nano(gen.json.data.total_cost), costOf(msg.usage));
    // max_tokens cuts the answer: stop_reason max_tokens.
    const cut = await anthropic(key).messages.create({ model: "fake/echo", max_tokens: 2, messages: [{ role: "user", content: "one two three" }] });
    assert.equal(cut.stop_reason, "max_tokens");
    assert.equal(cut.usage.output_tokens, 2);
  });

  it("messages.create with stream: Anthropic's events in order, and the usage as metered at the end", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const stream = await anthropic(key).messages.create({
      model: "fake/echo",
      max_tokens: 50,
      stream: true,
      messages: [{ role: "user", content: "stream me please" }],
    });
    const types = [];
    let text = "";
    let usage;
    let stop;
    for await (const ev of stream) {
      types.push(ev.type);
      if (ev.type === "content_block_delta" && ev.delta.type === "text_delta") text += ev.delta.text;
      if (ev.type === "message_delta") [usage, stop] = [ev.usage, ev.delta.stop_reason];
    }
    assert.equal(types[0], "message_start");
    assert.equal(types.at(-1), "message_stop");
    assert.equal(types.at(-2), "message_delta");
    assert.ok(types.includes("content_block_start") && types.includes("content_block_stop"), types.join(" "));
    assert.equal(text, "You said: stream me please");
    assert.equal(stop, "end_turn");
    assert.deepEqual([usage.input_tokens, usage.output_tokens], [3, 5]);
    assert.equal(nano(await usageOf(hash)), costOf(usage));
  });

  it("messages.stream: the SDK's helper assembles the message, its usage merged from message_delta", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const runner = anthropic(key).messages.stream({ model: "fake/echo", max_tokens: 50, messages: [{ role: "user", content: "assemble this" }] });
    let deltas = "";
    runner.on("text", (t) => { deltas += t; });
    const final = await runner.finalMessage();
    assert.equal(deltas, "You said: assemble this");
    assert.deepEqual(final.content, [{ type: "text", text: "You said: assemble this" }]);
    assert.deepEqual([final.usage.input_tokens, final.usage.output_tokens], [2, 4]);
    assert.equal(nano(await usageOf(hash)), costOf(final.usage));
  });

  it("tools: a tool_use, whole and streamed, and the answer to its tool_result, each charged its usage", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const messages = [{ role: "user", content: "Paris" }];
    const first = await anthropic(key).messages.create({ model: "fake/echo", max_tokens: 50, tools: [weather], messages });
    assert.equal(first.stop_reason, "tool_use");
    assert.equal(first.content.length, 1);
    const call = first.content[0];
    assert.equal(call.type, "tool_use");
    assert.equal(call.name, "weather");
    assert.deepEqual(call.input, { city: "Paris" });
    assert.ok(call.id);
    const answer = await anthropic(key).messages.create({
      model: "fake/echo",
      max_tokens: 50,
      tools: [weather],
      tool_choice: { type: "auto" },
      messages: [...messages, { role: "assistant", content: first.content },
        { role: "user", content: [{ type: "tool_result", tool_use_id: call.id, content: "sunny" }] }],
    });
    assert.deepEqual(answer.content, [{ type: "text", text: "The tool said: sunny" }]);
    // Streamed: the call's arguments arrive as input_json_delta, which the helper parses.
    const runner = anthropic(key).messages.stream({ model: "fake/echo", max_tokens: 50, tools: [weather],
      tool_choice: { type: "tool", name: "weather" }, messages });
    let json = "";
    runner.on("inputJson", (delta) => { json += delta; });
    const final = await runner.finalMessage();
    assert.equal(final.stop_reason, "tool_use");
    assert.equal(final.content[0].type, "tool_use");
    assert.deepEqual(final.content[0].input, { city: "Paris" });
    assert.deepEqual(JSON.parse(json), { city: "Paris" });
    const total = costOf(first.usage) + costOf(answer.usage) + costOf(final.usage);
    assert.equal(nano(await usageOf(hash)), total);
  });

  it("prompt caching: a tool's cache_control reaches an Anthropic provider; the next call reads what the first wrote, each charged at the cache prices", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const cachedCost = (u) => nano(u.input_tokens * 0.001 + u.cache_creation_input_tokens * 0.00125 +
      u.cache_read_input_tokens * 0.0001 + u.output_tokens * 0.002);
    const ask = (content) => anthropic(key).messages.create({ model: "claude/chat", max_tokens: 50,
      tools: [{ ...weather, cache_control: { type: "ephemeral" } }], tool_choice: { type: "none" },
      messages: [{ role: "user", content }] });
    const first = await ask(uniq("first"));
    const second = await ask(uniq("second"));
    // The tools come first in Anthropic's prompt: the first call writes them
    // to the cache, the second reads them.
    assert.ok(first.usage.cache_creation_input_tokens > 0, JSON.stringify(first.usage));
    assert.equal(first.usage.cache_read_input_tokens, 0);
    assert.equal(second.usage.cache_read_input_tokens, first.usage.cache_creation_input_tokens);
    assert.equal(second.usage.cache_creation_input_tokens, 0);
    assert.equal(nano(first.usage.cost), cachedCost(first.usage));
    assert.equal(nano(second.usage.cost), cachedCost(second.usage));
    assert.equal(nano(await usageOf(hash)), cachedCost(first.usage) + cachedCost(second.usage));
  });

  it("errors arrive as the SDK's typed errors, in Anthropic's shape, with a request id", async () => {
    const expectError = async (promise, Type, status, type, message) => {
      await assert.rejects(promise, (err) => {
        assert.ok(err instanceof Type, `${err?.constructor?.name} (${err?.status}: ${err?.message}), want ${Type.name}`);
        assert.equal(err.status, status);
        assert.equal(err.error?.type, "error");
        assert.equal(err.error?.error?.type, type);
        assert.match(err.error?.error?.message, message);
        assert.ok(err.requestID, "the request id is there to quote");
        return true;
      });
    };
    const create = (key, body) => anthropic(key).messages.create({ model: "fake/echo", max_tokens: 10, messages: [{ role: "user", content: "hi" }], ...body });

    await expectError(create("sk-gh-v1-" + "0".repeat(64)), Anthropic.AuthenticationError, 401, "authentication_error", /key/i);
    await expectError(create(ctx.server.bootstrapKey), Anthropic.PermissionDeniedError, 403, "permission_error", /management key/i);
    const { key, hash } = await newKey();
    await expectError(create(key, { model: "fake/unknown" }), Anthropic.BadRequestError, 400, "invalid_request_error", /unknown model/);
    await expectError(create(key, { frequency_penalty: 1 }), Anthropic.BadRequestError, 400, "invalid_request_error", /frequency_penalty: unknown field/);
    await expectError(create(key, { messages: [{ role: "user", content: [{ type: "image", source: { type: "url", url: "https://example.com/a.png" } }] }] }),
      Anthropic.BadRequestError, 400, "invalid_request_error", /messages\[0\]\.content\[0\]\.type: "image" blocks are not accepted/);
    const poor = await newKey({ limit: 0.005 });
    await expectError(create(poor.key), Anthropic.APIError, 402, "billing_error", /limit/i);
    assert.equal(await usageOf(hash), 0);
  });
});
