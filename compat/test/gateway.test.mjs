// The gateway through the official client: chat.send against a real
// Gatehouse serving a local OpenAI-compatible upstream (cmd/fakellm), then the
// key's usage moving (apiKeys.get), the generation (generations.getGeneration)
// and the model list (models.list). These operations are beyond API.md §3, so
// they are not part of the coverage table.

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import { call, client, createKey, errors, startFakeLLM, startServer } from "./harness.mjs";

const ctx = {};

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-gw-"));
  ctx.upstream = await startFakeLLM(ctx.dir);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: ctx.upstream.providers } });
  ctx.sdk = client(ctx.server, ctx.server.bootstrapKey);
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.upstream?.stop();
  fs.rmSync(ctx.dir, { recursive: true, force: true });
});

describe("chat completions through the SDK", () => {
  it("a completion moves usage, usage_daily and limit_remaining exactly, and its generation is readable", async () => {
    const key = await createKey(ctx.sdk, { limit: 1, limitReset: "daily" });
    const before = (await call("apiKeysGet", () => ctx.sdk.apiKeys.get({ hash: key.data.hash }))).data;
    assert.equal(before.usage, 0);
    assert.equal(before.limitRemaining, 1);

    const user = client(ctx.server, key.key);
    const res = await user.chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content: "hello there gateway" }] } });
    assert.match(res.id, /^gen-/);
    assert.equal(res.model, "fake/echo");
    // fakellm counts words: 3 prompt tokens at $0.001, "You said: hello there gateway" = 5 completion tokens at $0.002.
    assert.equal(res.usage.promptTokens, 3);
    assert.equal(res.usage.completionTokens, 5);

    const afterOne = (await call("apiKeysGet", () => ctx.sdk.apiKeys.get({ hash: key.data.hash }))).data;
    assert.equal(afterOne.usage, 0.013);
    assert.equal(afterOne.usageDaily, 0.013);
    assert.equal(afterOne.limitRemaining, 0.987);

    await user.chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content: "again" }] } });
    const afterTwo = (await call("apiKeysGet", () => ctx.sdk.apiKeys.get({ hash: key.data.hash }))).data;
    // "again": 1 prompt token; "You said: again": 3 completion tokens → $0.007.
    assert.equal(afterTwo.usage, 0.02);
    assert.equal(afterTwo.usageDaily, 0.02);
    assert.equal(afterTwo.limitRemaining, 0.98);

    const gen = await user.generations.getGeneration({ id: res.id });
    assert.equal(gen.data.id, res.id);
    assert.equal(gen.data.model, "fake/echo");
    assert.equal(gen.data.tokensPrompt, 3);
    assert.equal(gen.data.tokensCompletion, 5);
    assert.equal(gen.data.totalCost, 0.013);
  });

  it("a streamed completion is metered from its usage chunk", async () => {
    const key = await createKey(ctx.sdk, { limit: 1 });
    const user = client(ctx.server, key.key);
    const stream = await user.chat.send({ chatRequest: { model: "fake/echo", stream: true, messages: [{ role: "user", content: "stream me" }] } });
    let text = "";
    let usage;
    for await (const chunk of stream) {
      assert.match(chunk.id, /^gen-/);
      text += chunk.choices?.[0]?.delta?.content ?? "";
      if (chunk.usage) usage = chunk.usage;
    }
    assert.equal(text, "You said: stream me");
    assert.equal(usage.completionTokens, 4);
    const got = (await call("apiKeysGet", () => ctx.sdk.apiKeys.get({ hash: key.data.hash }))).data;
    assert.equal(got.usage, 0.01); // 2 × $0.001 + 4 × $0.002
  });

  it("a key at its limit gets the SDK's PaymentRequiredResponseError", async () => {
    const key = await createKey(ctx.sdk, { limit: 0.05 });
    const user = client(ctx.server, key.key);
    // The worst case of one request (its bytes + 100 completion tokens at $0.002) exceeds $0.05.
    await assert.rejects(
      user.chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content: "hi" }] } }),
      (err) => err instanceof errors.PaymentRequiredResponseError && err.statusCode === 402,
    );
  });

  it("the model list parses as the SDK's ModelsListResponse", async () => {
    const res = await ctx.sdk.models.list();
    const models = res.result?.data ?? res.data;
    assert.ok(Array.isArray(models), "the SDK parsed a model list");
    const echo = models.find((m) => m.id === "fake/echo");
    assert.ok(echo, "fake/echo is listed");
    assert.equal(echo.pricing.prompt, "0.001");
    assert.equal(echo.pricing.completion, "0.002");
  });
});
