// Generations through the official client (issue #12): the cost in every
// answer of chat.send (whole and streamed), attribution in
// generations.getGeneration, generations.listGenerationContent (privacy mode
// and I/O logging) and generations.submitFeedback, against a real Gatehouse
// serving cmd/fakellm. Responses are checked against the SDK's own schemas.
//
// Typed statuses not exercised here: 500 (no input may cause it); 502, 524
// and 529 of listGenerationContent (it reads the ledger, no provider is
// called; see EXCLUSIONS in harness.mjs).

import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { after, before, describe, it } from "node:test";

import {
  api,
  call,
  cli,
  client,
  createKey,
  errors,
  fails,
  failsUntyped,
  models,
  startFakeLLM,
  startServer,
  uniq,
  useServer,
} from "./harness.mjs";

// The server of this file serves fake/echo, started before it.
const fake = {};
const ctx = useServer({
  env: async () => {
    fake.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-gen-"));
    fake.upstream = await startFakeLLM(fake.dir);
    return { GATEHOUSE_PROVIDERS_FILE: fake.upstream.providers };
  },
});
after(() => {
  fake.upstream?.stop();
  if (fake.dir) fs.rmSync(fake.dir, { recursive: true, force: true });
});

// fakellm counts words: "You said: " and the message come back.
const PROMPT = "count these four words";
const COMPLETION = `You said: ${PROMPT}`;
// 4 prompt tokens at $0.001 and 6 completion tokens at $0.002.
const COST = 0.016;

// A regular key of organization A and its SDK client, with I/O logging of
// its workspace as given.
async function userKey(body = {}) {
  const key = await createKey(ctx.org.sdk, body);
  return { hash: key.data.hash, key: key.key, sdk: client(ctx.server, key.key) };
}

async function logIO(on) {
  await call("workspacesUpdate", () => ctx.org.sdk.workspaces.update({ id: "default",
    updateWorkspaceRequest: { isObservabilityIoLoggingEnabled: on } }));
}

// Parses a raw JSON body with one of the SDK's inbound schemas.
function parsesAs(schema, json, what) {
  const r = schema.safeParse(json);
  assert.ok(r.success, `${what} does not parse as the SDK's schema: ${r.error?.message}\n${JSON.stringify(json)}`);
  return r.data;
}

describe("the cost in every answer", () => {
  it("a whole answer carries usage.cost, is_byok and cost_details as metered, and a system_fingerprint", async () => {
    const u = await userKey();
    const res = await u.sdk.chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content: PROMPT }] } });
    assert.equal(res.usage.promptTokens, 4);
    assert.equal(res.usage.completionTokens, 6);
    assert.equal(res.usage.totalTokens, 10);
    assert.equal(res.usage.cost, COST);
    assert.equal(res.usage.isByok, false);
    assert.equal(res.usage.costDetails.upstreamInferencePromptCost, 0.004);
    assert.equal(res.usage.costDetails.upstreamInferenceCompletionsCost, 0.012);
    assert.equal(res.usage.costDetails.upstreamInferenceCost, null);
    assert.match(res.systemFingerprint, /^fp_gh_[0-9a-f]{10}$/);
    // The cost is the one metered: the ledger's and the key's.
    const gen = await u.sdk.generations.getGeneration({ id: res.id });
    assert.equal(gen.data.totalCost, res.usage.cost);
    const key = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: u.hash }));
    assert.equal(key.data.usage, res.usage.cost);

    // The raw answer parses as the SDK's ChatResult.
    const raw = await api(ctx.server, "POST", "/chat/completions", { key: u.key,
      body: { model: "fake/echo", messages: [{ role: "user", content: PROMPT }] } });
    assert.equal(raw.status, 200, raw.text);
    const parsed = parsesAs(models.ChatResult$inboundSchema, raw.json, "the answer");
    assert.equal(parsed.usage.cost, COST);
  });

  it("a stream's last chunk before [DONE] carries the metered cost; every chunk has a system_fingerprint", async () => {
    const u = await userKey();
    const stream = await u.sdk.chat.send({ chatRequest: { model: "fake/echo", stream: true, messages: [{ role: "user", content: PROMPT }] } });
    const chunks = [];
    for await (const chunk of stream) chunks.push(chunk);
    assert.ok(chunks.length >= 3, `chunks: ${JSON.stringify(chunks)}`);
    const withUsage = chunks.filter((c) => c.usage);
    assert.equal(withUsage.length, 1, "one chunk carries the usage");
    assert.equal(chunks.at(-1), withUsage[0], "the usage chunk is the last");
    const { usage } = withUsage[0];
    assert.equal(usage.cost, COST);
    assert.equal(usage.isByok, false);
    assert.equal(usage.costDetails.upstreamInferencePromptCost + usage.costDetails.upstreamInferenceCompletionsCost, COST);
    const fingerprints = new Set(chunks.map((c) => c.systemFingerprint));
    assert.equal(fingerprints.size, 1, `one fingerprint on every chunk: ${[...fingerprints]}`);
    assert.match([...fingerprints][0], /^fp_gh_/);
    const gen = await u.sdk.generations.getGeneration({ id: chunks[0].id });
    assert.equal(gen.data.totalCost, COST);

    // Raw: every event parses as the SDK's ChatStreamChunk, and [DONE] comes last.
    const res = await fetch(`${ctx.server.apiURL}/chat/completions`, { method: "POST",
      headers: { Authorization: `Bearer ${u.key}`, "Content-Type": "application/json" },
      body: JSON.stringify({ model: "fake/echo", stream: true, messages: [{ role: "user", content: PROMPT }] }) });
    const data = (await res.text()).split("\n").filter((l) => l.startsWith("data: ")).map((l) => l.slice(6));
    assert.equal(data.at(-1), "[DONE]");
    const parsed = data.slice(0, -1).map((d, i) => parsesAs(models.ChatStreamChunk$inboundSchema, JSON.parse(d), `chunk ${i}`));
    assert.equal(parsed.at(-1).usage.cost, COST);
  });
});

describe("attribution", () => {
  it("the referer, title, user agent and the body's user are the generation's; its app is the OAuth application of the referer's origin", async () => {
    const u = await userKey();
    const sdk = client(ctx.server, u.key); // sends HTTP-Referer https://compat.gatehouse.test and its title
    const res = await sdk.chat.send({ chatRequest: { model: "fake/echo", user: "end-user-7", messages: [{ role: "user", content: PROMPT }] } });
    let gen = (await sdk.generations.getGeneration({ id: res.id })).data;
    assert.equal(gen.httpReferer, "https://compat.gatehouse.test");
    assert.equal(gen.origin, "https://compat.gatehouse.test");
    assert.equal(gen.externalUser, "end-user-7");
    assert.match(gen.userAgent, /@openrouter\/sdk/);
    assert.equal(gen.appId, null, "no application of that origin yet");
    const raw = await api(ctx.server, "GET", `/generation?id=${res.id}`, { key: u.key });
    assert.equal(raw.json.data.app_title, "gatehouse compat suite");

    const code = await call("oAuthCreateAuthCode", () => ctx.org.sdk.oAuth.createAuthCode({ requestBody: {
      callbackUrl: "https://compat.gatehouse.test/oauth/callback" } }));
    gen = (await sdk.generations.getGeneration({ id: res.id })).data;
    assert.equal(gen.appId, code.data.appId);

    // A bad user is refused with the SDK's typed 400, naming the field.
    await assert.rejects(
      sdk.chat.send({ chatRequest: { model: "fake/echo", user: "x".repeat(201), messages: [{ role: "user", content: PROMPT }] } }),
      (err) => err instanceof errors.BadRequestResponseError && /^user: /.test(err.error.message),
    );
  });
});

describe("generations.listGenerationContent", () => {
  it("privacy mode (I/O logging off, the default) is a typed 403; with logging on, the prompt and completion come back", async () => {
    const u = await userKey();
    const messages = [{ role: "system", content: "Be terse." }, { role: "user", content: PROMPT }];
    const privateGen = await u.sdk.chat.send({ chatRequest: { model: "fake/echo", messages } });
    const err = await fails("generationsListGenerationContent", 403, () => u.sdk.generations.listGenerationContent({ id: privateGen.id }), "privacy mode");
    assert.match(err.error.message, /is_observability_io_logging_enabled/);

    await logIO(true);
    try {
      const res = await u.sdk.chat.send({ chatRequest: { model: "fake/echo", messages } });
      const content = await call("generationsListGenerationContent", () => u.sdk.generations.listGenerationContent({ id: res.id }));
      assert.deepEqual(content.data.input, { messages });
      assert.equal(content.data.output.completion, COMPLETION);
      assert.equal(content.data.output.reasoning, null);
      assert.equal(content.data.error, null);
      // The management key of the organization reads it too.
      await call("generationsListGenerationContent", () => ctx.org.sdk.generations.listGenerationContent({ id: res.id }));
      // A stream's content is its text, put together.
      const stream = await u.sdk.chat.send({ chatRequest: { model: "fake/echo", stream: true, messages } });
      let id;
      for await (const chunk of stream) id ??= chunk.id;
      const streamed = await call("generationsListGenerationContent", () => u.sdk.generations.listGenerationContent({ id }));
      assert.equal(streamed.data.output.completion, COMPLETION);

      // Raw: the body parses as the SDK's GenerationContentResponse.
      const raw = await api(ctx.server, "GET", `/generation/content?id=${res.id}`, { key: u.key });
      parsesAs(models.GenerationContentResponse$inboundSchema, raw.json, "the content");

      // The call made while private stays without content.
      await fails("generationsListGenerationContent", 404, () => u.sdk.generations.listGenerationContent({ id: privateGen.id }), "made while private");
      // Another key of the organization, another organization, an unknown id: 404.
      const sibling = await userKey();
      await fails("generationsListGenerationContent", 404, () => sibling.sdk.generations.listGenerationContent({ id: res.id }), "another key");
      await fails("generationsListGenerationContent", 404, () => ctx.foreign.sdk.generations.listGenerationContent({ id: res.id }), "another organization");
      await fails("generationsListGenerationContent", 404, () => u.sdk.generations.listGenerationContent({ id: "gen-unknown" }), "unknown id");
      await fails("generationsListGenerationContent", 401, () => ctx.anon.generations.listGenerationContent({ id: res.id }), "unknown key");

      // Turning logging off hides what was kept.
      await logIO(false);
      await fails("generationsListGenerationContent", 403, () => u.sdk.generations.listGenerationContent({ id: res.id }), "logging turned off");
    } finally {
      await logIO(false);
    }
  });
});

describe("generations.submitFeedback", () => {
  it("a management key submits feedback on its organization's generations: recorded, audited, listed", async () => {
    const u = await userKey();
    const res = await u.sdk.chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content: PROMPT }] } });
    const ok = await call("generationsSubmitFeedback", () => ctx.org.sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: res.id, category: "incorrect_response", comment: "it only echoes" } }));
    assert.deepEqual(ok, { data: { success: true } });

    const list = await api(ctx.server, "GET", `/generation/feedback?id=${res.id}`, { key: ctx.org.mgmtKey });
    assert.equal(list.status, 200, list.text);
    assert.equal(list.json.total_count, 1);
    assert.equal(list.json.data[0].category, "incorrect_response");
    assert.equal(list.json.data[0].comment, "it only echoes");
    const audit = await api(ctx.server, "GET", `/audit-log?resource_id=${res.id}`, { key: ctx.org.mgmtKey });
    assert.equal(audit.json.data[0].operation, "generation.feedback");
    assert.ok(!audit.text.includes("it only echoes"), "the audit log holds no comment");

    let err = await fails("generationsSubmitFeedback", 400, () => ctx.org.sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: res.id, category: "other", comment: "x".repeat(4001) } }), "long comment");
    assert.match(err.error.message, /^comment: /);
    await fails("generationsSubmitFeedback", 404, () => ctx.org.sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: "gen-unknown", category: "other" } }), "unknown generation");
    await fails("generationsSubmitFeedback", 404, () => ctx.foreign.sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: res.id, category: "other" } }), "another organization");
    await fails("generationsSubmitFeedback", 401, () => ctx.badMgmt.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: res.id, category: "other" } }), "unknown key");
    // A regular key may not: 403, which the SDK does not type for this call.
    const e = await failsUntyped(403, () => u.sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: res.id, category: "other" } }), "regular key");
    assert.equal(e.message, "only management keys can perform this operation");
    // Nothing of the refused ones was recorded.
    const after = await api(ctx.server, "GET", `/generation/feedback?id=${res.id}`, { key: ctx.org.mgmtKey });
    assert.equal(after.json.total_count, 1);
  });
});

describe("429 on the generation calls", () => {
  let server;
  before(async () => {
    server = await startServer({ env: { GATEHOUSE_RATE_LIMIT_RPS: "0.001", GATEHOUSE_RATE_LIMIT_BURST: "2" } });
  });
  after(async () => server?.stop());

  it("a credential out of tokens gets the SDK's TooManyRequestsResponseError", async () => {
    const org = await cli(server, ["orgs", "create", "--name", uniq("limited")]);
    const key = await cli(server, ["mgmt-keys", "create", "--org", org]);
    for (let i = 0; i < 2; i++) assert.equal((await api(server, "GET", "/key", { key })).status, 200);
    const sdk = client(server, key);
    const err = await fails("generationsListGenerationContent", 429, () => sdk.generations.listGenerationContent({ id: "gen-any" }));
    assert.match(err.headers.get("retry-after") ?? "", /^\d+$/);
    await fails("generationsSubmitFeedback", 429, () => sdk.generations.submitFeedback({
      submitGenerationFeedbackRequest: { generationId: "gen-any", category: "other" } }));
  });
});
