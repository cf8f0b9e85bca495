// The gateway through the official `openai` Node client (pinned in
// package.json): what an application that already speaks OpenAI's API
// meets when it points baseURL at Gatehouse. Chat completions, streamed and
// not, against a local OpenAI-compatible upstream (cmd/fakellm), the model
// list, and each error a client must be able to tell apart, as the
// client's own typed errors (AuthenticationError, BadRequestError, ...)
// with Gatehouse's message. Not part of the @openrouter/sdk coverage table.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";
import { promisify } from "node:util";

import OpenAI from "openai";

import { REPO_ROOT, api, freePort, sleep, startServer, uniq } from "./harness.mjs";

const execFileP = promisify(execFile);
const ctx = {};

before(async () => {
  ctx.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-openai-"));
  const fakellm = path.join(ctx.dir, "fakellm");
  await execFileP("go", ["build", "-o", fakellm, "./cmd/fakellm"], { cwd: REPO_ROOT });
  const port = await freePort();
  ctx.upstream = spawn(fakellm, ["--addr", `127.0.0.1:${port}`], { stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/models`);
      if (res.ok) break;
    } catch {}
    if (i > 200) throw new Error("fakellm did not start");
    await sleep(50);
  }
  const providers = path.join(ctx.dir, "providers.yaml");
  fs.writeFileSync(providers, `providers:
  - id: fake
    base_url: http://127.0.0.1:${port}/v1
    models:
      - id: echo
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
`);
  ctx.server = await startServer({ env: { GATEHOUSE_PROVIDERS_FILE: providers } });
}, { timeout: 10 * 60_000 });

after(async () => {
  await ctx.server?.stop();
  ctx.upstream?.kill("SIGTERM");
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

  it("models.list: the served models, each with the fields the client reads", async () => {
    const { key } = await newKey();
    const ids = [];
    for await (const m of openai(key).models.list()) ids.push(m.id);
    assert.deepEqual(ids, ["fake/echo"]);
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
