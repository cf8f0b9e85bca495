// The gateway through Vercel's AI SDK (`ai`) with OpenRouter's provider
// for it (`@openrouter/ai-sdk-provider`), the most used OpenRouter client
// in JavaScript, pointed at Gatehouse unchanged: generateText and
// streamText (with usage accounting, as the provider's docs configure it),
// tools called through a step loop, embedMany, and an error. The provider
// has no Responses API model; the AI SDK's Responses client is
// @ai-sdk/openai's `responses()`, driven here against Gatehouse too. The
// upstream is cmd/fakellm. Not part of the @openrouter/sdk coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { createOpenAI } from "@ai-sdk/openai";
import { createOpenRouter } from "@openrouter/ai-sdk-provider";
import { APICallError, embedMany, generateText, stepCountIs, streamText, tool } from "ai";
import { z } from "zod";

import { api, startFakeLLM, startServer, uniq } from "./harness.mjs";

const ctx = {};

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-aisdk-"));
  ctx.fake = await startFakeLLM(ctx.dir, { responses: true });
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: ctx.fake.providers } });
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.fake?.stop();
  if (ctx.dir) fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function newKey(body = {}) {
  const res = await api(ctx.server, "POST", "/keys", { key: ctx.server.bootstrapKey, body: { name: uniq("aisdk"), ...body } });
  assert.equal(res.status, 201, res.text);
  return { key: res.json.key, hash: res.json.data.hash };
}

async function usageOf(hash) {
  const res = await api(ctx.server, "GET", `/keys/${hash}`, { key: ctx.server.bootstrapKey });
  assert.equal(res.status, 200, res.text);
  return res.json.data.usage;
}

// The provider as its README configures it, with usage accounting on.
const openrouter = (apiKey) => createOpenRouter({ apiKey, baseURL: ctx.server.apiURL });
const chatModel = (apiKey) => openrouter(apiKey).chat("fake/echo", { usage: { include: true } });

const weather = tool({
  description: "The weather in a city",
  inputSchema: z.object({ city: z.string() }),
  execute: async ({ city }) => `sunny in ${city}`,
});

describe("Vercel's AI SDK with @openrouter/ai-sdk-provider against Gatehouse", () => {
  it("generateText: the answer, its usage with the cost, and the key's usage", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const res = await generateText({ model: chatModel(key), prompt: "hello there gateway", maxRetries: 0 });
    assert.equal(res.text, "You said: hello there gateway");
    assert.equal(res.finishReason, "stop");
    // fakellm counts words: 3 prompt tokens at $0.001, 5 completion tokens at $0.002.
    assert.equal(res.usage.inputTokens, 3);
    assert.equal(res.usage.outputTokens, 5);
    assert.equal(res.providerMetadata?.openrouter?.usage?.cost, 0.013, JSON.stringify(res.providerMetadata));
    assert.equal(await usageOf(hash), 0.013);
  });

  it("streamText: the text in pieces, then the usage and its cost", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const result = streamText({ model: chatModel(key), prompt: "stream me please", maxRetries: 0 });
    let text = "";
    for await (const part of result.textStream) text += part;
    assert.equal(text, "You said: stream me please");
    const usage = await result.usage;
    assert.equal(usage.inputTokens, 3);
    assert.equal(usage.outputTokens, 5);
    const meta = await result.providerMetadata;
    assert.equal(meta?.openrouter?.usage?.cost, 0.013, JSON.stringify(meta));
    assert.equal(await usageOf(hash), 0.013);
  });

  it("tools: the model calls one, the SDK runs it, the model answers its result (whole and streamed)", async () => {
    const { key } = await newKey();
    const res = await generateText({ model: chatModel(key), prompt: "Paris", tools: { weather }, stopWhen: stepCountIs(2), maxRetries: 0 });
    assert.equal(res.steps.length, 2);
    assert.deepEqual(res.steps[0].toolCalls.map((c) => [c.toolName, c.input]), [["weather", { city: "Paris" }]]);
    assert.equal(res.text, "The tool said: sunny in Paris");

    const streamed = streamText({ model: chatModel(key), prompt: "Rome", tools: { weather }, stopWhen: stepCountIs(2), maxRetries: 0 });
    let text = "";
    for await (const part of streamed.textStream) text += part;
    assert.equal(text, "The tool said: sunny in Rome");
    assert.deepEqual((await streamed.steps)[0].toolCalls.map((c) => c.input), [{ city: "Rome" }]);
  });

  it("embedMany: one vector per value, metered", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const res = await embedMany({ model: openrouter(key).textEmbeddingModel("fake/embed"), values: ["one two", "three"], maxRetries: 0 });
    // fakellm's vector: the words, the input's length in bytes (quoted), 1.
    assert.deepEqual(res.embeddings, [[2, 9, 1], [1, 7, 1]]);
    assert.equal(res.usage.tokens, 3);
    assert.equal(await usageOf(hash), 0.003);
  });

  it("the Responses API through @ai-sdk/openai's responses(), whole, streamed and with a tool", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const openai = createOpenAI({ apiKey: key, baseURL: ctx.server.apiURL });
    const res = await generateText({ model: openai.responses("fake/echo"), prompt: "respond to me", maxRetries: 0,
      providerOptions: { openai: { store: false } } });
    assert.equal(res.text, "You said: respond to me");
    assert.equal(res.usage.inputTokens, 3);
    assert.equal(res.usage.outputTokens, 5);
    const streamed = streamText({ model: openai.responses("fake/echo"), prompt: "stream this", maxRetries: 0,
      providerOptions: { openai: { store: false } } });
    let text = "";
    for await (const part of streamed.textStream) text += part;
    assert.equal(text, "You said: stream this");
    const withTool = await generateText({ model: openai.responses("fake/echo"), prompt: "Oslo", tools: { weather }, stopWhen: stepCountIs(2),
      maxRetries: 0, providerOptions: { openai: { store: false } } });
    assert.equal(withTool.text, "The tool said: sunny in Oslo");
    assert.ok((await usageOf(hash)) > 0.02);
  });

  it("an error: the client's APICallError with Gatehouse's status and message", async () => {
    const { key } = await newKey({ limit: 0.05 });
    await assert.rejects(
      generateText({ model: openrouter(key).chat("fake/unknown"), prompt: "hi", maxRetries: 0 }),
      (err) => APICallError.isInstance(err) && err.statusCode === 400 && /unknown model/.test(err.message),
    );
    // 402: the key's limit cannot cover the worst case (100 completion
    // tokens at $0.002); a stream reports it as its error part.
    const result = streamText({ model: chatModel(key), prompt: "hi", maxRetries: 0, onError: () => {} });
    let error;
    for await (const part of result.fullStream) if (part.type === "error") error = part.error;
    assert.ok(APICallError.isInstance(error) && error.statusCode === 402 && /Key limit exceeded/.test(error.message), String(error));
  });
});
