// The gateway through the official `openai` Node client (pinned in
// package.json): what an application that already speaks OpenAI's API
// meets when it points baseURL at Gatehouse. Chat completions, streamed and
// not, with tools; the Responses API, whole, streamed and with a tool;
// embeddings (the client asks for base64 by default, and decodes it);
// against a local OpenAI-compatible upstream (cmd/fakellm), the model
// list, and each error a client must be able to tell apart, as the
// client's own typed errors (AuthenticationError, BadRequestError, ...)
// with Gatehouse's message. Not part of the @openrouter/sdk coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import OpenAI from "openai";

import { api, startFakeLLM, startServer, uniq } from "./harness.mjs";

const ctx = {};

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-openai-"));
  ctx.fake = await startFakeLLM(ctx.dir, { responses: true });
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: ctx.fake.providers } });
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.fake?.stop();
  if (ctx.dir) fs.rmSync(ctx.dir, { recursive: true, force: true });
});

// Creates a regular key over the management API; returns its plaintext and hash.
async function newKey(body = {}) {
  const res = await api(ctx.server, "POST", "/keys", { key: ctx.server.bootstrapKey, body: { name: uniq("openai"), ...body } });
  assert.equal(res.status, 201, res.text);
  return { key: res.json.key, hash: res.json.data.hash };
}

async function usageOf(hash) {
  const res = await api(ctx.server, "GET", `/keys/${hash}`, { key: ctx.server.bootstrapKey });
  assert.equal(res.status, 200, res.text);
  return res.json.data.usage;
}

// The client as an application configures it: Gatehouse's base URL and a
// Gatehouse key; no retries, so that each error is seen as sent.
const openai = (apiKey) => new OpenAI({ apiKey, baseURL: ctx.server.apiURL, maxRetries: 0, timeout: 30_000 });

describe("the openai Node client against Gatehouse", () => {
  it("chat.completions.create: the answer, its usage and the key's usage", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const res = await openai(key).chat.completions.create({
      model: "fake/echo",
      messages: [{ role: "user", content: "hello there gateway" }],
    });
    assert.match(res.id, /^gen-/);
    assert.equal(res.object, "chat.completion");
    assert.equal(res.model, "fake/echo");
    assert.equal(res.choices.length, 1);
    assert.equal(res.choices[0].message.role, "assistant");
    assert.equal(res.choices[0].message.content, "You said: hello there gateway");
    assert.equal(res.choices[0].finish_reason, "stop");
    // fakellm counts words: 3 prompt tokens at $0.001, 5 completion tokens at $0.002.
    assert.deepEqual(
      { p: res.usage.prompt_tokens, c: res.usage.completion_tokens, t: res.usage.total_tokens },
      { p: 3, c: 5, t: 8 },
    );
    assert.equal(await usageOf(hash), 0.013);
    // The raw response carries Gatehouse's request id.
    const { response } = await openai(key).chat.completions
      .create({ model: "fake/echo", messages: [{ role: "user", content: "again" }] })
      .withResponse();
    assert.ok(response.headers.get("x-request-id"), "X-Request-Id on the answer");
  });

  it("chat.completions.create with stream: chunks in order, the usage chunk last, metered once", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const stream = await openai(key).chat.completions.create({
      model: "fake/echo",
      stream: true,
      stream_options: { include_usage: true },
      messages: [{ role: "user", content: "stream me please" }],
    });
    let text = "";
    let usage = null;
    let chunks = 0;
    let id;
    for await (const chunk of stream) {
      chunks++;
      id ??= chunk.id;
      assert.equal(chunk.id, id, "every chunk has the completion's id");
      assert.equal(chunk.object, "chat.completion.chunk");
      text += chunk.choices[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    assert.match(id, /^gen-/);
    assert.ok(chunks > 2, `${chunks} chunks`);
    assert.equal(text, "You said: stream me please");
    assert.equal(usage.prompt_tokens, 3);
    assert.equal(usage.completion_tokens, 5);
    assert.equal(await usageOf(hash), 0.013);
  });

  it("the stream helper (chat.completions.stream) assembles the same answer", async () => {
    const { key } = await newKey();
    const runner = openai(key).chat.completions.stream({
      model: "fake/echo",
      messages: [{ role: "user", content: "assemble this" }],
    });
    const final = await runner.finalChatCompletion();
    assert.equal(final.choices[0].message.content, "You said: assemble this");
  });

  it("tools: a tool call, whole and streamed, and the answer to its result", async () => {
    const { key } = await newKey();
    const tools = [{ type: "function", function: { name: "weather", description: "The weather in a city",
      parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
    const messages = [{ role: "user", content: "Paris" }];
    const first = await openai(key).chat.completions.create({ model: "fake/echo", messages, tools });
    const call = first.choices[0].message.tool_calls[0];
    assert.equal(first.choices[0].finish_reason, "tool_calls");
    assert.deepEqual([call.function.name, JSON.parse(call.function.arguments)], ["weather", { city: "Paris" }]);
    const answer = await openai(key).chat.completions.create({ model: "fake/echo", tools, messages: [...messages,
      first.choices[0].message, { role: "tool", tool_call_id: call.id, content: "sunny" }] });
    assert.equal(answer.choices[0].message.content, "The tool said: sunny");
    // Streamed, through the client's runner, which assembles the call.
    const runner = openai(key).chat.completions.stream({ model: "fake/echo", messages, tools });
    const final = await runner.finalChatCompletion();
    assert.deepEqual(JSON.parse(final.choices[0].message.tool_calls[0].function.arguments), { city: "Paris" });
  });

  it("responses.create: whole, streamed and with a tool, metered", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const whole = await openai(key).responses.create({ model: "fake/echo", input: "respond to me" });
    assert.equal(whole.output_text, "You said: respond to me");
    assert.equal(whole.usage.input_tokens, 3);
    assert.equal(whole.usage.output_tokens, 5);
    const stream = await openai(key).responses.create({ model: "fake/echo", input: "stream this", stream: true });
    let text = "";
    let completed;
    for await (const ev of stream) {
      if (ev.type === "response.output_text.delta") text += ev.delta;
      if (ev.type === "response.completed") completed = ev.response;
    }
    assert.equal(text, "You said: stream this");
    assert.equal(completed.usage.output_tokens, 4);
    const tools = [{ type: "function", name: "weather", parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } }];
    const called = await openai(key).responses.create({ model: "fake/echo", input: "Oslo", tools });
    const call = called.output[0];
    assert.equal(call.type, "function_call");
    const answered = await openai(key).responses.create({ model: "fake/echo", tools, input: [{ role: "user", content: "Oslo" }, call,
      { type: "function_call_output", call_id: call.call_id, output: "snowing" }] });
    assert.equal(answered.output_text, "The tool said: snowing");
    assert.ok((await usageOf(hash)) > 0.026);
  });

  it("embeddings.create: vectors decoded from the base64 the client asks for by default, and as floats", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const res = await openai(key).embeddings.create({ model: "fake/embed", input: ["one two", "three"] });
    assert.deepEqual(res.data.map((d) => Array.from(d.embedding)), [[2, 9, 1], [1, 7, 1]]);
    assert.equal(res.usage.prompt_tokens, 3);
    const floats = await openai(key).embeddings.create({ model: "fake/embed", input: "four", encoding_format: "float" });
    assert.deepEqual(floats.data[0].embedding, [1, 6, 1]);
    assert.equal(await usageOf(hash), 0.004);
  });

  it("models.list: the served models, each with the fields the client reads", async () => {
    const { key } = await newKey();
    const ids = [];
    for await (const m of openai(key).models.list()) ids.push(m.id);
    assert.deepEqual(ids, ["fake/echo"]); // embedding models are listed at /embeddings/models
  });

  it("errors arrive as the client's typed errors, with status, Gatehouse's message and a request id", async () => {
    const expectError = async (promise, Type, status, message) => {
      await assert.rejects(promise, (err) => {
        assert.ok(err instanceof Type, `${err?.constructor?.name} (${err?.status}: ${err?.message}), want ${Type.name}`);
        assert.equal(err.status, status);
        assert.match(err.message, message);
        assert.equal(err.error?.code, status, "error.code is the status, as an integer");
        assert.ok(err.requestID ?? err.headers?.get?.("x-request-id"), "the request id is there to quote");
        return true;
      });
    };
    const chat = (key, body) => openai(key).chat.completions.create({ model: "fake/echo", messages: [{ role: "user", content: "hi" }], ...body });

    // 401: a key Gatehouse does not know.
    await expectError(chat("sk-gh-v1-" + "0".repeat(64)), OpenAI.AuthenticationError, 401, /key/i);
    // 403: a management key cannot call models.
    await expectError(chat(ctx.server.bootstrapKey), OpenAI.PermissionDeniedError, 403, /management key/i);
    const { key } = await newKey();
    // 400: an unknown model, and a parameter that could multiply the cost.
    await expectError(chat(key, { model: "fake/unknown" }), OpenAI.BadRequestError, 400, /unknown model/);
    await expectError(chat(key, { n: 2 }), OpenAI.BadRequestError, 400, /\bn\b/);
    // 402: the key's limit cannot cover the worst case (100 completion tokens at $0.002).
    const poor = await newKey({ limit: 0.05 });
    await expectError(chat(poor.key), OpenAI.APIError, 402, /Key limit exceeded/);
    // The same for a streamed request: refused before any chunk.
    await expectError(chat(poor.key, { stream: true }), OpenAI.APIError, 402, /Key limit exceeded/);
  });

  it("a guardrail's deny list is a 403 PermissionDeniedError naming the rule", async () => {
    const { key, hash } = await newKey();
    const g = await api(ctx.server, "POST", "/guardrails", {
      key: ctx.server.bootstrapKey,
      body: { name: uniq("no-fake"), allowed_providers: ["elsewhere"] },
    });
    assert.equal(g.status, 201, g.text);
    const assign = await api(ctx.server, "POST", `/guardrails/${g.json.data.id}/assignments/keys`, {
      key: ctx.server.bootstrapKey,
      body: { key_hashes: [hash] },
    });
    assert.equal(assign.status, 200, assign.text);
    await assert.rejects(
      openai(key).chat.completions.create({ model: "fake/echo", messages: [{ role: "user", content: "hi" }] }),
      (err) => err instanceof OpenAI.PermissionDeniedError && err.status === 403 && /Request blocked/.test(err.message),
    );
  });
});
