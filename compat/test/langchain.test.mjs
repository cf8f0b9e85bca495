// The gateway through LangChain JS (`@langchain/openai`), pointed at
// Gatehouse as its docs point it at OpenRouter (configuration.baseURL):
// ChatOpenAI invoked and streamed, with a tool bound and its result sent
// back, through the Responses API (useResponsesApi), OpenAIEmbeddings
// (which asks for base64 vectors by default), and an error. The upstream
// is cmd/fakellm. Not part of the @openrouter/sdk coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { AIMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { tool } from "@langchain/core/tools";
import { ChatOpenAI, OpenAIEmbeddings } from "@langchain/openai";
import { z } from "zod";

import { api, startFakeLLM, startServer, uniq } from "./harness.mjs";

const ctx = {};

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-langchain-"));
  ctx.fake = await startFakeLLM(ctx.dir, { responses: true });
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: ctx.fake.providers } });
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.fake?.stop();
  if (ctx.dir) fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function newKey(body = {}) {
  const res = await api(ctx.server, "POST", "/keys", { key: ctx.server.bootstrapKey, body: { name: uniq("langchain"), ...body } });
  assert.equal(res.status, 201, res.text);
  return { key: res.json.key, hash: res.json.data.hash };
}

async function usageOf(hash) {
  const res = await api(ctx.server, "GET", `/keys/${hash}`, { key: ctx.server.bootstrapKey });
  assert.equal(res.status, 200, res.text);
  return res.json.data.usage;
}

const chat = (apiKey, more = {}) => new ChatOpenAI({ model: "fake/echo", apiKey, maxRetries: 0,
  configuration: { baseURL: ctx.server.apiURL }, ...more });

const weather = tool(async ({ city }) => `sunny in ${city}`, {
  name: "weather",
  description: "The weather in a city",
  schema: z.object({ city: z.string() }),
});

describe("LangChain JS (@langchain/openai) against Gatehouse", () => {
  it("ChatOpenAI.invoke: the answer and its usage, metered", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const res = await chat(key).invoke("hello there gateway");
    assert.equal(res.content, "You said: hello there gateway");
    assert.equal(res.usage_metadata.input_tokens, 3);
    assert.equal(res.usage_metadata.output_tokens, 5);
    assert.equal(await usageOf(hash), 0.013);
  });

  it("ChatOpenAI.stream: the pieces make the answer, the last carries the usage", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    let text = "";
    let usage;
    for await (const chunk of await chat(key, { streamUsage: true }).stream("stream me please")) {
      text += chunk.content;
      usage = chunk.usage_metadata ?? usage;
    }
    assert.equal(text, "You said: stream me please");
    assert.equal(usage?.output_tokens, 5);
    assert.equal(await usageOf(hash), 0.013);
  });

  it("bindTools: a tool call, run, and its result answered (whole and streamed)", async () => {
    const { key } = await newKey();
    const model = chat(key).bindTools([weather]);
    const call = await model.invoke([new HumanMessage("Paris")]);
    assert.deepEqual(call.tool_calls.map((c) => [c.name, c.args]), [["weather", { city: "Paris" }]]);
    const result = await weather.invoke(call.tool_calls[0]);
    const answer = await model.invoke([new HumanMessage("Paris"), call, result]);
    assert.equal(answer.content, "The tool said: sunny in Paris");
    // Streamed: the chunks' tool call pieces add up to the same call.
    let merged;
    for await (const chunk of await model.stream([new HumanMessage("Rome")])) merged = merged ? merged.concat(chunk) : chunk;
    assert.deepEqual(merged.tool_calls.map((c) => c.args), [{ city: "Rome" }]);
    assert.ok(result instanceof ToolMessage && call instanceof AIMessage);
  });

  it("the Responses API (useResponsesApi): whole, streamed and with a tool", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const model = chat(key, { useResponsesApi: true });
    const res = await model.invoke("respond to me");
    assert.equal(res.text, "You said: respond to me");
    let text = "";
    for await (const chunk of await model.stream("stream this")) text += chunk.text;
    assert.equal(text, "You said: stream this");
    const withTool = model.bindTools([weather]);
    const call = await withTool.invoke([new HumanMessage("Oslo")]);
    assert.deepEqual(call.tool_calls.map((c) => c.args), [{ city: "Oslo" }]);
    const answer = await withTool.invoke([new HumanMessage("Oslo"), call, await weather.invoke(call.tool_calls[0])]);
    assert.equal(answer.text, "The tool said: sunny in Oslo");
    assert.ok((await usageOf(hash)) > 0.02);
  });

  it("OpenAIEmbeddings: vectors from the base64 it asks for, metered", async () => {
    const { key, hash } = await newKey({ limit: 1 });
    const embeddings = new OpenAIEmbeddings({ model: "fake/embed", apiKey: key, maxRetries: 0, configuration: { baseURL: ctx.server.apiURL } });
    assert.deepEqual(await embeddings.embedDocuments(["one two", "three"]), [[2, 9, 1], [1, 7, 1]]);
    assert.deepEqual(await embeddings.embedQuery("four"), [1, 6, 1]);
    assert.equal(await usageOf(hash), 0.004);
  });

  it("an error: the status and Gatehouse's message reach the caller", async () => {
    const { key } = await newKey({ limit: 0.05 });
    await assert.rejects(chat(key, { model: "fake/unknown" }).invoke("hi"), (err) => err.status === 400 && /unknown model/.test(err.message));
    await assert.rejects(chat(key).invoke("hi"), (err) => err.status === 402 && /Key limit exceeded/.test(err.message));
  });
});
