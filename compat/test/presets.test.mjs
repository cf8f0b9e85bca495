// Presets through the official client: presets.list, get, listVersions,
// getVersion and the three create calls (from a chat-completions, a messages
// and a responses body), on a server that serves a local model
// (cmd/fakellm), then chat.send with model "@preset/slug" through it.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.
// - 400 on presets.get and presets.getVersion: the SDK sends only path
//   parameters, and values that cannot be ids are 404 (API.md §1).
// - 409 on the three create calls: only two writers racing on one preset can
//   meet one; not provoked deterministically.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, describe, it } from "node:test";

import {
  REPO_ROOT,
  RFC3339_UTC,
  UUID,
  allPages,
  api,
  call,
  client,
  createKey,
  defaultWorkspace,
  errors,
  fails,
  freePort,
  models,
  sha256hex,
  sleep,
  uniq,
  useServer,
} from "./harness.mjs";

const execFileP = promisify(execFile);

// The server serves fakellm's models (fake/echo, fake/other), started by
// useServer's prepare before the server.
const upstream = {};
async function startUpstream() {
  upstream.dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-presets-"));
  const fakellm = path.join(upstream.dir, "fakellm");
  await execFileP("go", ["build", "-o", fakellm, "./cmd/fakellm"], { cwd: REPO_ROOT });
  const port = await freePort();
  upstream.proc = spawn(fakellm, ["--addr", `127.0.0.1:${port}`], { stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/v1/models`)).ok) break;
    } catch {}
    if (i > 200) throw new Error("fakellm did not start");
    await sleep(50);
  }
  const providers = path.join(upstream.dir, "providers.yaml");
  fs.writeFileSync(providers, `providers:
  - id: fake
    base_url: http://127.0.0.1:${port}/v1
    models:
      - id: echo
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
      - id: other
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
`);
  return { GATEHOUSE_PROVIDERS_FILE: providers };
}
after(() => {
  upstream.proc?.kill("SIGTERM");
  if (upstream.dir) fs.rmSync(upstream.dir, { recursive: true, force: true });
});

const ctx = useServer({ prepare: startUpstream });

const PRESET_FIELDS = [
  "created_at", "creator_user_id", "description", "designated_version_id", "id", "name", "slug", "status",
  "status_updated_at", "updated_at", "workspace_id",
];
const VERSION_FIELDS = ["config", "created_at", "creator_id", "id", "preset_id", "system_prompt", "updated_at", "version"];

const keysOf = (o) => Object.keys(o).sort();

// Checks a raw preset object (snake_case, as sent) against the SDK's own
// schema and the fields OpenRouter's answers carry.
function assertRawPreset(raw, { withVersion }) {
  const fields = withVersion ? [...PRESET_FIELDS, "designated_version"].sort() : PRESET_FIELDS;
  assert.deepEqual(keysOf(raw), fields);
  const schema = withVersion ? models.PresetWithDesignatedVersion$inboundSchema : models.Preset$inboundSchema;
  const parsed = schema.parse(raw);
  assert.match(parsed.id, UUID);
  assert.match(parsed.createdAt, RFC3339_UTC);
  assert.match(parsed.updatedAt, RFC3339_UTC);
  assert.equal(parsed.status, "active");
  if (withVersion) {
    assert.deepEqual(keysOf(raw.designated_version), VERSION_FIELDS);
    assert.equal(parsed.designatedVersionId, parsed.designatedVersion.id);
  }
  return parsed;
}

const system = (content) => ({ role: "system", content });
const user = (content) => ({ role: "user", content });

async function createFromChat(sdk, slug, chatRequest) {
  return call("presetsCreatePresetsChatCompletions", () => sdk.presets.createPresetsChatCompletions({ slug, chatRequest }));
}

describe("creating presets (presets.createPresetsChatCompletions, createPresetsMessages, createPresetsResponses)", () => {
  it("a chat-completions body makes version 1: its configuration kept, its system message the system prompt, the rest ignored", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("bot");
    const res = await createFromChat(sdk, slug, {
      model: "fake/echo", temperature: 0.5, maxTokens: 50, topP: 0.9, stop: ["END"], stream: false,
      provider: { only: ["fake"], maxPrice: { prompt: "2000" } },
      messages: [system("Be brief."), user("this message is not kept")],
    });
    const p = res.data;
    assert.equal(p.slug, slug);
    assert.equal(p.name, slug);
    assert.equal(p.status, "active");
    assert.equal(p.description, null);
    assert.equal(p.workspaceId, (await defaultWorkspace(sdk)).id);
    const v = p.designatedVersion;
    assert.equal(v.version, 1);
    assert.equal(v.presetId, p.id);
    assert.equal(p.designatedVersionId, v.id);
    assert.equal(v.systemPrompt, "Be brief.");
    assert.equal(v.creatorId, sha256hex(ctx.org.mgmtKey), "a management key without a user: its hash made the version");
    assert.deepEqual(v.config, {
      model: "fake/echo", temperature: 0.5, max_tokens: 50, top_p: 0.9, stop: ["END"],
      provider: { only: ["fake"], max_price: { prompt: 2000 } },
    });

    const got = await call("presetsGet", () => sdk.presets.get({ slug }));
    assert.deepEqual(got.data, p);
    const raw = await api(ctx.server, "GET", `/presets/${slug}`, { key: ctx.org.mgmtKey });
    assert.equal(raw.status, 200);
    assert.deepEqual(keysOf(raw.json), ["data"]);
    assert.deepEqual(assertRawPreset(raw.json.data, { withVersion: true }), p);
  });

  it("a messages and a responses body make the next versions, in the Chat Completions form; the same body again makes none", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("bot");
    await createFromChat(sdk, slug, { model: "fake/echo", messages: [user("hi")] });
    let res = await call("presetsCreatePresetsMessages", () => sdk.presets.createPresetsMessages({
      slug,
      messagesRequest: {
        model: "fake/other", maxTokens: 1024, system: "Answer in French.", messages: [{ role: "user", content: "hi" }],
        stopSequences: ["\n\nHuman:"], thinking: { type: "enabled", budgetTokens: 2048 },
        tools: [{ name: "lookup", description: "Look up", inputSchema: { type: "object", properties: {} } }],
        toolChoice: { type: "any" },
      },
    }));
    assert.equal(res.data.designatedVersion.version, 2);
    assert.equal(res.data.designatedVersion.systemPrompt, "Answer in French.");
    assert.deepEqual(res.data.designatedVersion.config, {
      model: "fake/other", max_tokens: 1024, stop: ["\n\nHuman:"], reasoning: { max_tokens: 2048 }, tool_choice: "required",
      tools: [{ type: "function", function: { name: "lookup", description: "Look up", parameters: { type: "object", properties: {} } } }],
    });

    const responsesRequest = {
      model: "fake/echo", instructions: "Be kind.", input: "not kept", maxOutputTokens: 200, temperature: 0.2,
      reasoning: { effort: "low" }, text: { format: { type: "json_object" }, verbosity: "low" },
    };
    res = await call("presetsCreatePresetsResponses", () => sdk.presets.createPresetsResponses({ slug, responsesRequest }));
    const v3 = res.data.designatedVersion;
    assert.equal(v3.version, 3);
    assert.equal(v3.systemPrompt, "Be kind.");
    assert.deepEqual(v3.config, {
      model: "fake/echo", max_tokens: 200, temperature: 0.2, reasoning: { effort: "low" },
      response_format: { type: "json_object" }, verbosity: "low",
    });
    const again = await call("presetsCreatePresetsResponses", () => sdk.presets.createPresetsResponses({ slug, responsesRequest }));
    assert.equal(again.data.designatedVersion.id, v3.id, "the same configuration adds no version");
  });

  it("400 for what a preset cannot hold, 401 without a valid key, 403 for a regular key, 404 for a slug that cannot be one", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("bot");
    const msgs = [user("hi")];
    let err = await fails("presetsCreatePresetsChatCompletions", 400,
      () => sdk.presets.createPresetsChatCompletions({ slug, chatRequest: { model: "fake/missing", messages: msgs } }), "unknown model");
    assert.match(err.error.message, /unknown model "fake\/missing"/);
    err = await fails("presetsCreatePresetsMessages", 400, () => sdk.presets.createPresetsMessages({
      slug, messagesRequest: { model: "fake/echo", messages: msgs, tools: [{ type: "web_search_20250305", name: "web_search" }] },
    }), "a server tool");
    assert.match(err.error.message, /^tools\[0\]\.type:/);
    err = await fails("presetsCreatePresetsResponses", 400, () => sdk.presets.createPresetsResponses({
      slug, responsesRequest: { model: "fake/missing" },
    }), "unknown model");
    assert.match(err.error.message, /unknown model "fake\/missing"/);

    const regular = client(ctx.server, (await createKey(sdk)).key);
    await fails("presetsCreatePresetsChatCompletions", 403, () => regular.presets.createPresetsChatCompletions({ slug, chatRequest: { messages: msgs } }));
    await fails("presetsCreatePresetsMessages", 403, () => regular.presets.createPresetsMessages({ slug, messagesRequest: { model: "fake/echo", messages: msgs } }));
    await fails("presetsCreatePresetsResponses", 403, () => regular.presets.createPresetsResponses({ slug, responsesRequest: {} }));
    for (const [op, fn] of [
      ["presetsCreatePresetsChatCompletions", (c, s) => c.presets.createPresetsChatCompletions({ slug: s, chatRequest: { messages: msgs } })],
      ["presetsCreatePresetsMessages", (c, s) => c.presets.createPresetsMessages({ slug: s, messagesRequest: { model: "fake/echo", messages: msgs } })],
      ["presetsCreatePresetsResponses", (c, s) => c.presets.createPresetsResponses({ slug: s, responsesRequest: {} })],
    ]) {
      await fails(op, 401, () => fn(ctx.anon, slug));
      err = await fails(op, 404, () => fn(sdk, "Not_A_Slug"), "a slug that cannot be one");
      assert.match(err.error.message, /no preset can be named "Not_A_Slug"/);
    }
    // Nothing of the refused calls was kept.
    await fails("presetsGet", 404, () => sdk.presets.get({ slug }), "after refused creates");
  });
});

describe("reading presets (presets.list, get, listVersions, getVersion)", () => {
  it("lists most recently updated first, in pages the SDK's iterator walks, without versions", async () => {
    const sdk = ctx.foreign.sdk; // an organization of its own presets only
    const slugs = [uniq("a"), uniq("b"), uniq("c")];
    for (const slug of slugs) {
      await createFromChat(sdk, slug, { temperature: 0.1, messages: [user("hi")] });
      await sleep(5); // distinct update times
    }
    await createFromChat(sdk, slugs[0], { temperature: 0.9, messages: [user("hi")] }); // now the most recent
    const listed = await allPages(call("presetsList", () => sdk.presets.list({ limit: 2 })));
    assert.deepEqual(listed.map((p) => p.slug), [slugs[0], slugs[2], slugs[1]]);
    const raw = await api(ctx.server, "GET", "/presets?limit=1&offset=1", { key: ctx.foreign.mgmtKey });
    assert.deepEqual(keysOf(raw.json), ["data", "total_count"]);
    assert.equal(raw.json.total_count, 3);
    assert.equal(raw.json.data.length, 1);
    assertRawPreset(raw.json.data[0], { withVersion: false });
    assert.deepEqual(models.ListPresetsResponse$inboundSchema.parse(raw.json).data.map((p) => p.slug), [slugs[2]]);
  });

  it("lists the versions oldest first, in pages, and gets each; get answers the latest", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("bot");
    for (const t of [0.1, 0.2, 0.3]) {
      await createFromChat(sdk, slug, { model: "fake/echo", temperature: t, messages: [user("hi")] });
    }
    const versions = await allPages(call("presetsListVersions", () => sdk.presets.listVersions({ slug, limit: 2 })));
    assert.deepEqual(versions.map((v) => [v.version, v.config.temperature]), [[1, 0.1], [2, 0.2], [3, 0.3]]);
    const raw = await api(ctx.server, "GET", `/presets/${slug}/versions`, { key: ctx.org.mgmtKey });
    assert.deepEqual(keysOf(raw.json.data[0]), VERSION_FIELDS);
    assert.deepEqual(models.ListPresetVersionsResponse$inboundSchema.parse(raw.json).data, versions);
    for (const v of versions) {
      const got = await call("presetsGetVersion", () => sdk.presets.getVersion({ slug, version: String(v.version) }));
      assert.deepEqual(got.data, v);
    }
    const latest = await call("presetsGet", () => sdk.presets.get({ slug }));
    assert.deepEqual(latest.data.designatedVersion, versions[2]);
  });

  it("400 for a bad page, 401 without a valid key, 404 for an unknown preset or version and for another organization's", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("bot");
    await createFromChat(sdk, slug, { temperature: 0.5, messages: [system("Our secret prompt."), user("hi")] });
    await fails("presetsList", 400, () => sdk.presets.list({ limit: 1000 }));
    await fails("presetsListVersions", 400, () => sdk.presets.listVersions({ slug, offset: -1 }));
    for (const [op, fn] of [
      ["presetsList", (c) => c.presets.list()],
      ["presetsGet", (c) => c.presets.get({ slug })],
      ["presetsListVersions", (c) => c.presets.listVersions({ slug })],
      ["presetsGetVersion", (c) => c.presets.getVersion({ slug, version: "1" })],
    ]) {
      await fails(op, 401, () => fn(ctx.anon));
    }
    let err = await fails("presetsGet", 404, () => sdk.presets.get({ slug: uniq("none") }));
    assert.equal(err.error.message, "preset not found");
    await fails("presetsListVersions", 404, () => sdk.presets.listVersions({ slug: uniq("none") }));
    err = await fails("presetsGetVersion", 404, () => sdk.presets.getVersion({ slug, version: "2" }));
    assert.match(err.error.message, /has no version 2 \(its latest is 1\)/);
    await fails("presetsGetVersion", 404, () => sdk.presets.getVersion({ slug, version: "zero" }));
    // Another organization sees none of it.
    const theirs = ctx.foreign.sdk;
    await fails("presetsGet", 404, () => theirs.presets.get({ slug }), "another organization's preset");
    await fails("presetsListVersions", 404, () => theirs.presets.listVersions({ slug }), "another organization's preset");
    await fails("presetsGetVersion", 404, () => theirs.presets.getVersion({ slug, version: "1" }), "another organization's preset");
    const listed = await allPages(call("presetsList", () => theirs.presets.list()));
    assert.ok(!listed.some((p) => p.slug === slug), "another organization lists the preset");
  });
});

describe("chat.send with a preset", () => {
  it("@preset/slug calls the preset's model with its system prompt and cap; @N pins a version", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("bot");
    await createFromChat(sdk, slug, { model: "fake/echo", maxTokens: 2, messages: [system("Be very brief."), user("ignored")] });
    const key = await createKey(sdk);
    const chat = client(ctx.server, key.key);
    const res = await chat.chat.send({ chatRequest: { model: `@preset/${slug}`, messages: [user("hello there")] } });
    assert.equal(res.model, "fake/echo");
    // fakellm counts words: the preset's system prompt (3) and the user's (2);
    // the preset's cap of 2 cuts "You said: hello there" to two words.
    assert.equal(res.usage.promptTokens, 5);
    assert.equal(res.usage.completionTokens, 2);
    assert.equal(res.choices[0].finishReason, "length");
    assert.equal(res.choices[0].message.content, "You said:");

    await createFromChat(sdk, slug, { model: "fake/echo", maxTokens: 4, messages: [user("no system prompt now")] });
    const latest = await chat.chat.send({ chatRequest: { model: `@preset/${slug}`, messages: [user("hello there")] } });
    assert.equal(latest.usage.promptTokens, 2);
    assert.equal(latest.choices[0].message.content, "You said: hello there");
    const pinned = await chat.chat.send({ chatRequest: { model: `@preset/${slug}@1`, messages: [user("hello there")] } });
    assert.equal(pinned.usage.promptTokens, 5);
    const own = await chat.chat.send({ chatRequest: { model: `fake/other@preset/${slug}@1`, messages: [user("hello there")] } });
    assert.equal(own.model, "fake/other");

    await assert.rejects(chat.chat.send({ chatRequest: { model: `@preset/${uniq("none")}`, messages: [user("hi")] } }),
      (err) => err instanceof errors.BadRequestResponseError && /unknown preset/.test(err.error.message));
  });

  it("a preset naming a model the key's guardrail denies is refused exactly like the model itself", async () => {
    const sdk = ctx.org.sdk;
    const key = await createKey(sdk);
    const g = await call("guardrailsCreate", () => sdk.guardrails.create({ createGuardrailRequest: { name: uniq("only-echo"), allowedModels: ["fake/echo"] } }));
    await call("guardrailsBulkAssignKeys", () => sdk.guardrails.bulkAssignKeys({ id: g.data.id, bulkAssignKeysRequest: { keyHashes: [key.data.hash] } }));
    const slug = uniq("wide");
    await createFromChat(sdk, slug, { model: "fake/other", messages: [user("hi")] });
    const chat = client(ctx.server, key.key);
    const refusal = async (model) => {
      try {
        await chat.chat.send({ chatRequest: { model, messages: [user("hi")] } });
      } catch (err) {
        assert.ok(err instanceof errors.ForbiddenResponseError, `${model}: ${err}`);
        return { message: err.error.message, metadata: err.error.metadata };
      }
      assert.fail(`${model} was served`);
    };
    const direct = await refusal("fake/other");
    assert.match(direct.message, /^Request blocked: model "fake\/other" is not in the allowed_models list/);
    assert.deepEqual(await refusal(`@preset/${slug}`), direct);
    const got = (await call("apiKeysGet", () => sdk.apiKeys.get({ hash: key.data.hash }))).data;
    assert.equal(got.usage, 0, "refused requests charge nothing");
    // What the guardrail allows passes.
    const ok = await chat.chat.send({ chatRequest: { model: `fake/echo@preset/${slug}`, messages: [user("hi")] } });
    assert.equal(ok.model, "fake/echo");
  });
});
