// Chat completions and the Responses API through the official `openai`
// Node client to providers of type anthropic and gemini: fakellm speaks
// Anthropic's Messages API and the Gemini API (strictly, as
// internal/standin describes), and Gatehouse translates. Each call is
// charged what the usage fakellm reported costs at the configured prices,
// cache reads and writes included. fakellm counts words as tokens, so the
// expected counts are written here. Not part of the @openrouter/sdk
// coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import OpenAI from "openai";

import { api, startFakeLLM, startServer, uniq } from "./harness.mjs";

const ctx = {};

// Prices per million tokens: prompt $1000, completion $2000, cache reads
// $100, cache writes $1250 (so a token is $0.001, $0.002, $0.0001,
// $0.00125).
const models = `    models:
      - id: chat
        prompt_price: 1000
        completion_price: 2000
        cache_read_price: 100
        cache_write_price: 1250
        max_completion_tokens: 100
`;

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-native-"));
  // fakellm's address is known once it started: the providers are added after.
  ctx.fake = await startFakeLLM(ctx.dir);
  const base = `http://127.0.0.1:${ctx.fake.port}`;
  fs.appendFileSync(ctx.fake.providers, `  - id: claude
    type: anthropic
    base_url: ${base}
    api_key_env: NATIVE_TEST_KEY
${models}  - id: google
    type: gemini
    base_url: ${base}
    api_key_env: NATIVE_TEST_KEY
${models}`);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: ctx.fake.providers, NATIVE_TEST_KEY: "native-key" } });
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.fake?.stop();
  if (ctx.dir) fs.rmSync(ctx.dir, { recursive: true, force: true });
});

async function newKey() {
  const res = await api(ctx.server, "POST", "/keys", { key: ctx.server.bootstrapKey, body: { name: uniq("native"), limit: 10 } });
  assert.equal(res.status, 201, res.text);
  return { key: res.json.key, hash: res.json.data.hash };
}

async function usageOf(hash) {
  const res = await api(ctx.server, "GET", `/keys/${hash}`, { key: ctx.server.bootstrapKey });
  assert.equal(res.status, 200, res.text);
  return res.json.data.usage;
}

const openai = (apiKey) => new OpenAI({ apiKey, baseURL: ctx.server.apiURL, maxRetries: 0, timeout: 30_000 });
const round = (x) => Math.round(x * 1e9) / 1e9;

for (const provider of ["claude", "google"]) {
  describe(`the openai client to a ${provider === "claude" ? "anthropic" : "gemini"} provider`, () => {
    it("chat.completions.create, whole and streamed: the answer and its exact cost", async () => {
      const { key, hash } = await newKey();
      const res = await openai(key).chat.completions.create({
        model: `${provider}/chat`,
        messages: [{ role: "system", content: "Be brief." }, { role: "user", content: "hello there gateway" }],
      });
      assert.equal(res.choices[0].message.content, "You said: hello there gateway");
      assert.equal(res.choices[0].finish_reason, "stop");
      // 5 prompt words, 5 completion words.
      assert.deepEqual({ p: res.usage.prompt_tokens, c: res.usage.completion_tokens }, { p: 5, c: 5 });
      const stream = await openai(key).chat.completions.create({
        model: `${provider}/chat`, stream: true, stream_options: { include_usage: true },
        messages: [{ role: "user", content: "stream me please" }],
      });
      let text = "";
      let usage = null;
      for await (const chunk of stream) {
        text += chunk.choices[0]?.delta?.content ?? "";
        if (chunk.usage) usage = chunk.usage;
      }
      assert.equal(text, "You said: stream me please");
      assert.deepEqual({ p: usage.prompt_tokens, c: usage.completion_tokens }, { p: 3, c: 5 });
      assert.equal(await usageOf(hash), round(5 * 0.001 + 5 * 0.002 + 3 * 0.001 + 5 * 0.002));
    });

    it("tools: the call, streamed, and the answer to its result", async () => {
      const { key } = await newKey();
      const tools = [{ type: "function", function: { name: "weather", description: "The weather in a city",
        parameters: { type: "object", properties: { city: { type: "string" } }, required: ["city"] } } }];
      const runner = openai(key).chat.completions.stream({
        model: `${provider}/chat`, tools, tool_choice: "required",
        messages: [{ role: "user", content: "Paris" }],
      });
      const final = await runner.finalChatCompletion();
      const call = final.choices[0].message.tool_calls[0];
      assert.equal(final.choices[0].finish_reason, "tool_calls");
      assert.equal(call.function.name, "weather");
      assert.deepEqual(JSON.parse(call.function.arguments), { city: "Paris" });
      const res = await openai(key).chat.completions.create({
        model: `${provider}/chat`, tools,
        messages: [{ role: "user", content: "Paris" },
          { role: "assistant", content: null, tool_calls: [{ id: call.id, type: "function", function: call.function }] },
          { role: "tool", tool_call_id: call.id, content: "sunny" }],
      });
      assert.match(res.choices[0].message.content, /^The tool said: .*sunny/);
    });

    it("caching: the cache reads (and Anthropic's writes) priced at their prices", async () => {
      const { key, hash } = await newKey();
      const system = provider === "claude"
        ? { role: "system", content: [{ type: "text", text: "a long shared document of eight words here", cache_control: { type: "ephemeral" } }] }
        : { role: "system", content: "a long shared document of eight words here" };
      const body = { model: `${provider}/chat`, messages: [system, { role: "user", content: uniq("question") }] };
      const first = await openai(key).chat.completions.create(body);
      body.messages[1].content = uniq("another");
      const second = await openai(key).chat.completions.create(body);
      assert.equal(first.usage.prompt_tokens, 9);
      assert.equal(second.usage.prompt_tokens_details.cached_tokens, 8);
      if (provider === "claude") {
        // The first call writes the 8 system words, the second reads them.
        assert.equal(first.usage.prompt_tokens_details.cache_write_tokens, 8);
        assert.equal(await usageOf(hash), round(8 * 0.00125 + 1 * 0.001 + 3 * 0.002 + 8 * 0.0001 + 1 * 0.001 + 3 * 0.002));
      } else {
        // Gemini caches implicitly: the second call reads the system turn.
        assert.equal(await usageOf(hash), round(9 * 0.001 + 3 * 0.002 + 8 * 0.0001 + 1 * 0.001 + 3 * 0.002));
      }
    });

    it("responses.create, whole and streamed, translated", async () => {
      const { key, hash } = await newKey();
      const res = await openai(key).responses.create({ model: `${provider}/chat`, input: "hello there" });
      assert.equal(res.output_text, "You said: hello there");
      assert.equal(res.usage.input_tokens, 2);
      // Another input: Gemini would read a repeated one from its cache.
      const stream = await openai(key).responses.create({ model: `${provider}/chat`, input: "hello there again", stream: true });
      let text = "";
      let completed = null;
      for await (const ev of stream) {
        if (ev.type === "response.output_text.delta") text += ev.delta;
        if (ev.type === "response.completed") completed = ev.response;
      }
      assert.equal(text, "You said: hello there again");
      assert.equal(completed.usage.output_tokens, 5);
      assert.equal(await usageOf(hash), round(2 * 0.001 + 4 * 0.002 + 3 * 0.001 + 5 * 0.002));
    });
  });
}
