// Harness of the compatibility suite: builds and starts a real Gatehouse
// server, creates organizations with the CLI, and drives it with the official
// OpenRouter client (@openrouter/sdk, pinned in package.json).
//
// Every SDK call a test makes for coverage goes through `call` (success) or
// `fails` (typed error); both record (operation, status) to a file of the run
// directory, and coverage.test.mjs checks the records against OPERATIONS.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import { createHash, randomBytes, randomUUID } from "node:crypto";
import fs from "node:fs";
import net from "node:net";
import os from "node:os";
import path from "node:path";
import { after, before } from "node:test";
import { fileURLToPath } from "node:url";

import { OpenRouter } from "@openrouter/sdk";
import * as models from "@openrouter/sdk/models";
import * as errors from "@openrouter/sdk/models/errors";
import { isUnknown } from "@openrouter/sdk/types/discriminatedUnion.js";

export { errors, isUnknown, models };

export const COMPAT_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
export const REPO_ROOT = path.resolve(COMPAT_DIR, "..");
export const SDK_DIR = path.join(COMPAT_DIR, "node_modules", "@openrouter", "sdk");

// One directory per run of the suite (node --test spawns one process per
// test file, all children of the runner): it holds the binary, built once,
// and the coverage records of every file.
export const RUN_DIR = process.env.GATEHOUSE_COMPAT_RUN_DIR
  || path.join(os.tmpdir(), `gatehouse-compat-${process.ppid}`);
export const COVERAGE_DIR = path.join(RUN_DIR, "coverage");

// The test files whose records coverage.test.mjs reads.
export const RESOURCE_TEST_FILES = [
  "keys.test.mjs",
  "oauth.test.mjs",
  "workspaces.test.mjs",
  "guardrails.test.mjs",
  "observability.test.mjs",
  "organization.test.mjs",
  "ratelimit.test.mjs",
  "gateway.test.mjs",
  "catalog.test.mjs",
  "generations.test.mjs",
  "presets.test.mjs",
  "byok.test.mjs",
  "budgets.test.mjs",
  "analytics.test.mjs",
  "embeddings.test.mjs",
  "responses.test.mjs",
  "operations.test.mjs",
];

// ---------------------------------------------------------------------------
// Operations of API.md §3 reached through the SDK: SDK function name (file
// esm/funcs/<name>.js) → success status and the error statuses the SDK types
// for it (its M.jsonErr list). coverage.test.mjs re-reads the SDK sources to
// check this table, then checks that the tests exercised every entry.
// Operations that API.md §3 does not list (those of issue #12, documented in
// the README) say so with beyondApiMd.

export const OPERATIONS = {
  // API keys
  apiKeysGetCurrentKeyMetadata: { call: "apiKeys.getCurrentKeyMetadata", route: "GET /key", success: 200, errors: [401, 500] },
  apiKeysList: { call: "apiKeys.list", route: "GET /keys", success: 200, errors: [400, 401, 429, 500] },
  apiKeysCreate: { call: "apiKeys.create", route: "POST /keys", success: 201, errors: [400, 401, 403, 429, 500] },
  apiKeysGet: { call: "apiKeys.get", route: "GET /keys/{hash}", success: 200, errors: [401, 404, 429, 500] },
  apiKeysUpdate: { call: "apiKeys.update", route: "PATCH /keys/{hash}", success: 200, errors: [400, 401, 404, 429, 500] },
  apiKeysDelete: { call: "apiKeys.delete", route: "DELETE /keys/{hash}", success: 200, errors: [401, 404, 429, 500] },
  // OAuth
  oAuthCreateAuthCode: { call: "oAuth.createAuthCode", route: "POST /auth/keys/code", success: 200, errors: [400, 401, 403, 409, 500] },
  oAuthExchangeAuthCodeForAPIKey: { call: "oAuth.exchangeAuthCodeForAPIKey", route: "POST /auth/keys", success: 200, errors: [400, 403, 500] },
  // Workspaces
  workspacesList: { call: "workspaces.list", route: "GET /workspaces", success: 200, errors: [401, 500] },
  workspacesCreate: { call: "workspaces.create", route: "POST /workspaces", success: 201, errors: [400, 401, 403, 500] },
  workspacesGet: { call: "workspaces.get", route: "GET /workspaces/{id}", success: 200, errors: [401, 404, 500] },
  workspacesUpdate: { call: "workspaces.update", route: "PATCH /workspaces/{id}", success: 200, errors: [400, 401, 403, 404, 500] },
  workspacesDelete: { call: "workspaces.delete", route: "DELETE /workspaces/{id}", success: 200, errors: [400, 401, 403, 404, 500] },
  workspacesListMembers: { call: "workspaces.listMembers", route: "GET /workspaces/{id}/members", success: 200, errors: [401, 403, 404, 500] },
  workspacesBulkAddMembers: { call: "workspaces.bulkAddMembers", route: "POST /workspaces/{id}/members/add", success: 200, errors: [400, 401, 403, 404, 500] },
  workspacesBulkRemoveMembers: { call: "workspaces.bulkRemoveMembers", route: "POST /workspaces/{id}/members/remove", success: 200, errors: [400, 401, 403, 404, 500] },
  // Guardrails
  guardrailsList: { call: "guardrails.list", route: "GET /guardrails", success: 200, errors: [400, 401, 500] },
  guardrailsCreate: { call: "guardrails.create", route: "POST /guardrails", success: 201, errors: [400, 401, 403, 500] },
  guardrailsGet: { call: "guardrails.get", route: "GET /guardrails/{id}", success: 200, errors: [401, 404, 500] },
  guardrailsUpdate: { call: "guardrails.update", route: "PATCH /guardrails/{id}", success: 200, errors: [400, 401, 403, 404, 409, 500] },
  guardrailsDelete: { call: "guardrails.delete", route: "DELETE /guardrails/{id}", success: 200, errors: [401, 404, 500] },
  guardrailsListGuardrailKeyAssignments: { call: "guardrails.listGuardrailKeyAssignments", route: "GET /guardrails/{id}/assignments/keys", success: 200, errors: [401, 404, 500] },
  guardrailsBulkAssignKeys: { call: "guardrails.bulkAssignKeys", route: "POST /guardrails/{id}/assignments/keys", success: 200, errors: [400, 401, 403, 404, 500] },
  guardrailsBulkUnassignKeys: { call: "guardrails.bulkUnassignKeys", route: "POST /guardrails/{id}/assignments/keys/remove", success: 200, errors: [400, 401, 404, 500] },
  guardrailsListGuardrailMemberAssignments: { call: "guardrails.listGuardrailMemberAssignments", route: "GET /guardrails/{id}/assignments/members", success: 200, errors: [401, 404, 500] },
  guardrailsBulkAssignMembers: { call: "guardrails.bulkAssignMembers", route: "POST /guardrails/{id}/assignments/members", success: 200, errors: [400, 401, 404, 500] },
  guardrailsBulkUnassignMembers: { call: "guardrails.bulkUnassignMembers", route: "POST /guardrails/{id}/assignments/members/remove", success: 200, errors: [400, 401, 404, 500] },
  guardrailsListKeyAssignments: { call: "guardrails.listKeyAssignments", route: "GET /guardrails/assignments/keys", success: 200, errors: [401, 500] },
  guardrailsListMemberAssignments: { call: "guardrails.listMemberAssignments", route: "GET /guardrails/assignments/members", success: 200, errors: [401, 500] },
  // Observability destinations
  observabilityList: { call: "observability.list", route: "GET /observability/destinations", success: 200, errors: [400, 401, 500] },
  observabilityCreate: { call: "observability.create", route: "POST /observability/destinations", success: 201, errors: [400, 401, 403, 409, 500] },
  observabilityGet: { call: "observability.get", route: "GET /observability/destinations/{id}", success: 200, errors: [401, 404, 500] },
  observabilityUpdate: { call: "observability.update", route: "PATCH /observability/destinations/{id}", success: 200, errors: [400, 401, 403, 404, 409, 500] },
  observabilityDelete: { call: "observability.delete", route: "DELETE /observability/destinations/{id}", success: 200, errors: [401, 404, 500] },
  // Organization
  organizationListMembers: { call: "organization.listMembers", route: "GET /organization/members", success: 200, errors: [401, 404, 500] },
  // Models, endpoints and providers: the catalog of the providers file.
  // Beyond API.md §3 (issue #12), so marked beyondApiMd.
  modelsList: { call: "models.list", route: "GET /models", success: 200, errors: [400, 403, 500], beyondApiMd: true },
  modelsCount: { call: "models.count", route: "GET /models/count", success: 200, errors: [400, 403, 500], beyondApiMd: true },
  modelsGet: { call: "models.get", route: "GET /model/{author}/{slug}", success: 200, errors: [403, 404, 500], beyondApiMd: true },
  modelsListForUser: { call: "models.listForUser", route: "GET /models/user", success: 200, errors: [401, 403, 404, 500], beyondApiMd: true },
  endpointsList: { call: "endpoints.list", route: "GET /models/{author}/{slug}/endpoints", success: 200, errors: [403, 404, 500], beyondApiMd: true },
  endpointsListZdrEndpoints: { call: "endpoints.listZdrEndpoints", route: "GET /endpoints/zdr", success: 200, errors: [403, 500], beyondApiMd: true },
  providersList: { call: "providers.list", route: "GET /providers", success: 200, errors: [500], beyondApiMd: true },
  // Generations: beyond API.md §3 (issue #12), so marked beyondApiMd.
  generationsListGenerationContent: { call: "generations.listGenerationContent", route: "GET /generation/content", success: 200, errors: [401, 403, 404, 429, 500, 502, 524, 529], beyondApiMd: true },
  generationsSubmitFeedback: { call: "generations.submitFeedback", route: "POST /generation/feedback", success: 200, errors: [400, 401, 404, 429, 500], beyondApiMd: true },
  // Presets: beyond API.md §3 (issue #12), so marked beyondApiMd.
  presetsList: { call: "presets.list", route: "GET /presets", success: 200, errors: [400, 401, 500], beyondApiMd: true },
  presetsGet: { call: "presets.get", route: "GET /presets/{slug}", success: 200, errors: [400, 401, 404, 500], beyondApiMd: true },
  presetsListVersions: { call: "presets.listVersions", route: "GET /presets/{slug}/versions", success: 200, errors: [400, 401, 404, 500], beyondApiMd: true },
  presetsGetVersion: { call: "presets.getVersion", route: "GET /presets/{slug}/versions/{version}", success: 200, errors: [400, 401, 404, 500], beyondApiMd: true },
  presetsCreatePresetsChatCompletions: { call: "presets.createPresetsChatCompletions", route: "POST /presets/{slug}/chat/completions", success: 200, errors: [400, 401, 403, 404, 409, 500], beyondApiMd: true },
  presetsCreatePresetsMessages: { call: "presets.createPresetsMessages", route: "POST /presets/{slug}/messages", success: 200, errors: [400, 401, 403, 404, 409, 500], beyondApiMd: true },
  presetsCreatePresetsResponses: { call: "presets.createPresetsResponses", route: "POST /presets/{slug}/responses", success: 200, errors: [400, 401, 403, 404, 409, 500], beyondApiMd: true },
  // BYOK provider keys (byok.test.mjs), beyond API.md §3 (issue #12).
  byokList: { call: "byok.list", route: "GET /byok", success: 200, errors: [400, 401, 500], beyondApiMd: true },
  byokCreate: { call: "byok.create", route: "POST /byok", success: 201, errors: [400, 401, 403, 500], beyondApiMd: true },
  byokGet: { call: "byok.get", route: "GET /byok/{id}", success: 200, errors: [401, 404, 500], beyondApiMd: true },
  byokUpdate: { call: "byok.update", route: "PATCH /byok/{id}", success: 200, errors: [400, 401, 403, 404, 500], beyondApiMd: true },
  byokDelete: { call: "byok.delete", route: "DELETE /byok/{id}", success: 200, errors: [401, 404, 500], beyondApiMd: true },
  // Workspace budgets and credits (budgets.test.mjs). Beyond API.md §3 (issue #12).
  workspacesSetBudget: { call: "workspaces.setBudget", route: "PUT /workspaces/{workspace_ref}/budgets/{interval}", success: 200, errors: [400, 401, 404, 500], beyondApiMd: true },
  workspacesGetBudget: { call: "workspaces.getBudget", route: "GET /workspaces/{workspace_ref}/budgets/{interval}", success: 200, errors: [400, 401, 404, 500], beyondApiMd: true },
  workspacesListBudgets: { call: "workspaces.listBudgets", route: "GET /workspaces/{workspace_ref}/budgets", success: 200, errors: [401, 404, 500], beyondApiMd: true },
  workspacesDeleteBudget: { call: "workspaces.deleteBudget", route: "DELETE /workspaces/{workspace_ref}/budgets/{interval}", success: 200, errors: [400, 401, 404, 500], beyondApiMd: true },
  // Embeddings (embeddings.test.mjs), beyond API.md §3 (issue #12).
  embeddingsGenerate: { call: "embeddings.generate", route: "POST /embeddings", success: 200, errors: [400, 401, 402, 403, 404, 408, 413, 429, 500, 502, 503, 524, 529], beyondApiMd: true },
  embeddingsListModels: { call: "embeddings.listModels", route: "GET /embeddings/models", success: 200, errors: [400, 500], beyondApiMd: true },
  // The Responses API (responses.test.mjs), beyond API.md §3 (issue #12).
  // beta.responses.send is the same function under its old name (its file
  // re-exports responsesSend: aliasOf).
  responsesSend: { call: "responses.send", route: "POST /responses", success: 200, errors: [400, 401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 524, 529], beyondApiMd: true },
  betaResponsesSend: { call: "beta.responses.send", route: "POST /responses", success: 200, errors: [400, 401, 402, 403, 404, 408, 413, 422, 429, 500, 502, 503, 524, 529], beyondApiMd: true, aliasOf: "responsesSend" },
  creditsGetCredits: { call: "credits.getCredits", route: "GET /credits", success: 200, errors: [401, 403, 500], beyondApiMd: true },
  // Activity and analytics (analytics.test.mjs): beyond API.md §3 (issue #12).
  analyticsGetUserActivity: { call: "analytics.getUserActivity", route: "GET /activity", success: 200, errors: [400, 401, 403, 404, 500], beyondApiMd: true },
  analyticsGetAnalyticsMeta: { call: "analytics.getAnalyticsMeta", route: "GET /analytics/meta", success: 200, errors: [401, 403, 500], beyondApiMd: true },
  analyticsQueryAnalytics: { call: "analytics.queryAnalytics", route: "POST /analytics/query", success: 200, errors: [400, 401, 403, 408, 500], beyondApiMd: true },
};

const PUBLIC_CATALOG = "the catalog is public: no credential is read (one sent is ignored), so nothing a caller sends is forbidden (README: Models, endpoints and providers)";

// Typed statuses the suite does not provoke, with the reason. Each is also
// stated in a comment at the top of the test file of its resource.
export const EXCLUSIONS = {
  "*": {
    500: "no input may cause a 500 (API.md §1); it cannot be provoked honestly and is not faked",
  },
  organizationListMembers: {
    404: "GET /organization/members has no path parameter and no filter; the caller's organization always exists (API.md §3 lists 400 401 only)",
  },
  observabilityUpdate: {
    409: "the only 409 of destinations is the per-type limit on create; update cannot change `type` or `workspace_id`, so it never adds a live destination of a type (API.md §3 lists 400 401 404)",
  },
  // The catalog's reads (catalog.test.mjs).
  modelsList: { 403: PUBLIC_CATALOG },
  modelsCount: { 403: PUBLIC_CATALOG },
  modelsGet: { 403: PUBLIC_CATALOG },
  endpointsList: { 403: PUBLIC_CATALOG },
  endpointsListZdrEndpoints: { 403: PUBLIC_CATALOG },
  modelsListForUser: {
    404: "GET /models/user has no path id and names nothing: the calling key exists (else 401), and a key with no usable model gets an empty list",
  },
  generationsListGenerationContent: {
    502: "GET /generation/content reads the ledger only: no provider is called, so no provider's failure (bad gateway) can reach it",
    524: "GET /generation/content reads the ledger only: no provider is called, so no edge or provider timeout can reach it",
    529: "GET /generation/content reads the ledger only: no provider is called, so no provider can be overloaded for it",
  },
  presetsGet: {
    400: "the SDK sends only the slug, in the path; a value that cannot be a slug is 404 like any malformed id (API.md §1), so no input of the SDK is a 400",
  },
  presetsGetVersion: {
    400: "the SDK sends only the slug and the version, in the path; values that cannot be ids are 404 (API.md §1), so no input of the SDK is a 400",
  },
  presetsCreatePresetsChatCompletions: {
    409: "only two writers racing on one preset can meet a 409 (PostgreSQL's serialization failures are retried first, SQLite has one writer); it cannot be provoked deterministically",
  },
  presetsCreatePresetsMessages: {
    409: "only two writers racing on one preset can meet a 409 (PostgreSQL's serialization failures are retried first, SQLite has one writer); it cannot be provoked deterministically",
  },
  presetsCreatePresetsResponses: {
    409: "only two writers racing on one preset can meet a 409 (PostgreSQL's serialization failures are retried first, SQLite has one writer); it cannot be provoked deterministically",
  },
};

export function isExcluded(op, status) {
  return Boolean(EXCLUSIONS["*"]?.[status] || EXCLUSIONS[op]?.[status]);
}

// ---------------------------------------------------------------------------
// Small utilities.

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
export const sha256hex = (s) => createHash("sha256").update(s).digest("hex");
export const uniq = (prefix = "t") => `${prefix}-${randomBytes(4).toString("hex")}`;
export const newManagementKey = () => "sk-gh-mgmt-v1-" + randomBytes(32).toString("hex");
export const BOGUS_REGULAR_KEY = "sk-gh-v1-" + "0".repeat(64);
export const BOGUS_MGMT_KEY = "sk-gh-mgmt-v1-" + "0".repeat(64);
export const RFC3339_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?Z$/;
export const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
export const REGULAR_KEY = /^sk-gh-v1-[0-9a-f]{64}$/;
export const MGMT_KEY = /^sk-gh-mgmt-v1-[0-9a-f]{64}$/;
export { randomUUID };

function execFileP(file, args, opts) {
  return new Promise((resolve, reject) => {
    execFile(file, args, { maxBuffer: 64 << 20, ...opts }, (err, stdout, stderr) => {
      if (err) {
        err.message += `\n--- stdout ---\n${stdout}\n--- stderr ---\n${stderr}`;
        reject(err);
      } else {
        resolve({ stdout, stderr });
      }
    });
  });
}

function pidAlive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    return e.code === "EPERM";
  }
}

// Removes run directories of earlier runs whose runner is gone.
function cleanupStaleRunDirs() {
  let names = [];
  try {
    names = fs.readdirSync(os.tmpdir());
  } catch {
    return;
  }
  for (const name of names) {
    const m = /^gatehouse-compat-(\d+)$/.exec(name);
    if (!m) continue;
    const dir = path.join(os.tmpdir(), name);
    if (dir === RUN_DIR || pidAlive(Number(m[1]))) continue;
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

// ---------------------------------------------------------------------------
// Building the server: `go build -o <run dir>/gatehouse ./cmd/gatehouse` from
// the repository root, once per run (a lock directory serializes builders).
// GATEHOUSE_BIN, when set, names a prebuilt binary instead.

export async function gatehouseBinary() {
  if (process.env.GATEHOUSE_BIN) return process.env.GATEHOUSE_BIN;
  const bin = path.join(RUN_DIR, "gatehouse");
  if (fs.existsSync(bin)) return bin;
  fs.mkdirSync(RUN_DIR, { recursive: true });
  const lock = path.join(RUN_DIR, "build.lock");
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      fs.mkdirSync(lock);
      break;
    } catch (e) {
      if (e.code !== "EEXIST") throw e;
    }
    if (fs.existsSync(bin)) return bin;
    try {
      if (Date.now() - fs.statSync(lock).mtimeMs > 10 * 60_000) fs.rmSync(lock, { recursive: true, force: true });
    } catch {}
    if (Date.now() > deadline) throw new Error(`timed out waiting for another process to build ${bin}`);
    await sleep(200);
  }
  try {
    if (fs.existsSync(bin)) return bin;
    cleanupStaleRunDirs();
    const tmp = `${bin}.tmp-${process.pid}`;
    try {
      await execFileP("go", ["build", "-o", tmp, "./cmd/gatehouse"], { cwd: REPO_ROOT });
    } catch (e) {
      throw new Error(`go build ./cmd/gatehouse failed (cwd ${REPO_ROOT}):\n${e.message}`);
    }
    fs.renameSync(tmp, bin);
    return bin;
  } finally {
    fs.rmSync(lock, { recursive: true, force: true });
  }
}

// Builds and starts cmd/fakellm (an OpenAI-compatible stand-in that answers
// "You said: " and the last user message, counting words as tokens) on a
// free port, and writes a providers file serving it as fake/echo at $0.001
// per prompt token and $0.002 per completion token. Returns the file's path
// and a function that stops the server.
// extraProviders (YAML list items, indented as under providers:) are
// appended to the providers file, such as providers at other addresses.
// responses: true says the fake provider offers the Responses API too.
export async function startFakeLLM(dir, { extraProviders = "", responses = false } = {}) {
  const bin = path.join(dir, "fakellm");
  await execFileP("go", ["build", "-o", bin, "./cmd/fakellm"], { cwd: REPO_ROOT });
  const port = await freePort();
  const proc = spawn(bin, ["--addr", `127.0.0.1:${port}`], { stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      const res = await fetch(`http://127.0.0.1:${port}/v1/models`);
      if (res.ok) break;
    } catch {}
    if (i > 200) throw new Error("fakellm did not start");
    await sleep(50);
  }
  const providers = path.join(dir, "providers.yaml");
  fs.writeFileSync(providers, `providers:
  - id: fake
    base_url: http://127.0.0.1:${port}/v1
    responses: ${responses}
    models:
      - id: echo
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
      - id: embed
        prompt_price: 1000
        output_modalities: [embeddings]
${extraProviders}`);
  return { providers, port, stop: () => proc.kill("SIGTERM") };
}

export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.on("error", reject);
    srv.listen(0, "127.0.0.1", () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// ---------------------------------------------------------------------------
// The raw JSON against the SDK's own zod schemas: parse() checks every type,
// and every key the server sends must be one the schema has (zod would drop
// an unknown one silently).

function unwrap(schema) {
  for (;;) {
    const def = schema?._zod?.def;
    if (!def) return schema;
    if (def.type === "pipe") schema = def.in;
    else if (["optional", "nullable", "default", "prefault", "readonly", "nonoptional"].includes(def.type)) schema = def.innerType;
    else if (def.type === "lazy") schema = def.getter();
    else return schema;
  }
}

function unknownKeys(schema, value, where, out) {
  const s = unwrap(schema);
  const def = s?._zod?.def;
  if (value === null || value === undefined || !def) return out;
  if (def.type === "array" && Array.isArray(value)) {
    value.forEach((v, i) => unknownKeys(def.element, v, `${where}[${i}]`, out));
  } else if (def.type === "object" && typeof value === "object") {
    for (const [k, v] of Object.entries(value)) {
      if (!(k in def.shape)) out.push(`${where}.${k}`);
      else unknownKeys(def.shape[k], v, `${where}.${k}`, out);
    }
  }
  return out;
}

export function assertSdkSchema(schema, raw, what) {
  assert.doesNotThrow(() => schema.parse(raw), `${what}: the SDK's schema refuses ${JSON.stringify(raw).slice(0, 500)}`);
  assert.deepEqual(unknownKeys(schema, raw, what, []), [], `${what}: fields the SDK's schema does not have`);
}

// ---------------------------------------------------------------------------
// Starting a server: `<bin> serve` with its own address, database and
// bootstrap management key; ready when GET /healthz answers 200.

const liveServers = new Set();
process.on("exit", () => {
  for (const p of liveServers) {
    try {
      p.kill("SIGKILL");
    } catch {}
  }
});

// The engine the servers run on: GATEHOUSE_COMPAT_ENGINE=postgres gives each
// server a fresh database on the PostgreSQL server of
// GATEHOUSE_TEST_POSTGRES_URL (created and dropped with psql); otherwise a
// SQLite file in a temporary directory.
export const ENGINE = process.env.GATEHOUSE_COMPAT_ENGINE || "sqlite";

async function newDatabase(dir) {
  if (ENGINE !== "postgres") return { url: path.join(dir, "gatehouse.db"), drop: async () => {} };
  const server = process.env.GATEHOUSE_TEST_POSTGRES_URL;
  if (!server) throw new Error("GATEHOUSE_COMPAT_ENGINE=postgres needs GATEHOUSE_TEST_POSTGRES_URL");
  const name = "gatehouse_compat_" + randomBytes(6).toString("hex");
  await execFileP("psql", [server, "-v", "ON_ERROR_STOP=1", "-q", "-c", `CREATE DATABASE ${name}`]);
  const u = new URL(server);
  u.pathname = "/" + name;
  return {
    url: u.toString(),
    drop: () => execFileP("psql", [server, "-q", "-c", `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`]),
  };
}

export async function startServer({ env = {}, timeoutMs = 30_000 } = {}) {
  const bin = await gatehouseBinary();
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-srv-"));
  const database = await newDatabase(dir);
  // One secret key per server, shared with its CLI runs (PostgreSQL needs it given).
  const secretKey = randomBytes(32).toString("base64");
  return launch({ bin, dir, database, secretKey, bootstrapKey: newManagementKey(), env, timeoutMs });
}

// launch starts `<bin> serve` on a database and returns the server. Its
// restart() stops it and starts another process on the same database
// (with other settings, such as another secret key), returned as a new
// server; stop() stops it and drops the database.
async function launch({ bin, dir, database, secretKey, bootstrapKey, env, timeoutMs }) {
  const databaseURL = database.url;
  const port = await freePort();
  const serverEnv = {
    ...process.env,
    GATEHOUSE_SECRET_KEY: secretKey,
    // The main servers must not rate-limit the suite itself; ratelimit.test.mjs
    // starts its own server with a tiny bucket.
    GATEHOUSE_RATE_LIMIT_RPS: "100000",
    GATEHOUSE_RATE_LIMIT_BURST: "100000",
    ...env,
    GATEHOUSE_ADDR: `127.0.0.1:${port}`,
    GATEHOUSE_DATABASE_URL: databaseURL,
    GATEHOUSE_BOOTSTRAP_MANAGEMENT_KEY: bootstrapKey,
  };
  const proc = spawn(bin, ["serve"], { env: serverEnv, stdio: ["ignore", "pipe", "pipe"] });
  liveServers.add(proc);
  let output = "";
  const keep = (d) => {
    output += d;
    if (output.length > 1 << 20) output = output.slice(-(1 << 19));
  };
  proc.stdout.on("data", keep);
  proc.stderr.on("data", keep);
  let exited = null;
  const exitPromise = new Promise((resolve) => {
    proc.on("exit", (code, signal) => {
      exited = { code, signal };
      liveServers.delete(proc);
      resolve(exited);
    });
    proc.on("error", (err) => {
      exited = { error: err };
      liveServers.delete(proc);
      resolve(exited);
    });
  });
  const baseURL = `http://127.0.0.1:${port}`;
  const deadline = Date.now() + timeoutMs;
  let lastProblem = "no answer yet";
  for (;;) {
    if (exited) {
      throw new Error(`gatehouse serve exited (${JSON.stringify(exited)}) before /healthz answered 200.\n--- server output ---\n${output}`);
    }
    try {
      const res = await fetch(`${baseURL}/healthz`, { signal: AbortSignal.timeout(2000) });
      await res.arrayBuffer();
      if (res.status === 200) break;
      lastProblem = `GET /healthz answered ${res.status}`;
    } catch (e) {
      lastProblem = String(e?.cause?.code ?? e?.message ?? e);
    }
    if (Date.now() > deadline) {
      proc.kill("SIGKILL");
      throw new Error(`gatehouse serve did not answer GET /healthz with 200 within ${timeoutMs} ms (${lastProblem}).\n--- server output ---\n${output}`);
    }
    await sleep(50);
  }
  const halt = async () => {
    if (!exited) {
      proc.kill("SIGTERM");
      const t = setTimeout(() => proc.kill("SIGKILL"), 5000);
      await exitPromise;
      clearTimeout(t);
    }
  };
  const server = {
    bin,
    dir,
    port,
    baseURL,
    apiURL: `${baseURL}/api/v1`,
    databaseURL,
    secretKey,
    bootstrapKey,
    proc,
    output: () => output,
    async restart({ env: more = {}, secretKey: key = secretKey } = {}) {
      await halt();
      return launch({ bin, dir, database, secretKey: key, bootstrapKey, env: { ...env, ...more }, timeoutMs });
    },
    async stop() {
      await halt();
      await database.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
  return server;
}

// ---------------------------------------------------------------------------
// CLI: runs `<bin> args...` against the server's database; returns the last
// line of stdout.

export async function cli(server, args) {
  const { stdout } = await execFileP(server.bin, args, {
    env: { ...process.env, GATEHOUSE_DATABASE_URL: server.databaseURL, GATEHOUSE_SECRET_KEY: server.secretKey },
    timeout: 60_000,
  });
  const lines = stdout.split("\n").map((l) => l.trim()).filter(Boolean);
  assert.ok(lines.length > 0, `gatehouse ${args.join(" ")} printed nothing on stdout`);
  return lines[lines.length - 1];
}

// Creates an organization and a management key for it, with the CLI.
export async function createOrg(server, name = uniq("org")) {
  const id = await cli(server, ["orgs", "create", "--name", name]);
  const mgmtKey = await cli(server, ["mgmt-keys", "create", "--org", id, "--name", `${name} admin`]);
  assert.match(mgmtKey, MGMT_KEY, "mgmt-keys create must print a management key");
  return { id, name, mgmtKey, sdk: client(server, mgmtKey) };
}

// ---------------------------------------------------------------------------
// Clients.

export function client(server, apiKey) {
  return new OpenRouter({
    apiKey,
    serverURL: server.apiURL,
    retryConfig: { strategy: "none" },
    httpReferer: "https://compat.gatehouse.test",
    appTitle: "gatehouse compat suite",
    appCategories: "cli-agent",
  });
}

// Raw HTTP with fetch. path is relative to the server root ("/healthz") or,
// without a leading "/api", to /api/v1 ("/keys").
export async function api(server, method, p, { key, body, headers = {} } = {}) {
  const h = { ...headers };
  if (key) h.Authorization = `Bearer ${key}`;
  let payload;
  if (body !== undefined) {
    h["Content-Type"] ??= "application/json";
    payload = typeof body === "string" ? body : JSON.stringify(body);
  }
  const url = p.startsWith("/api/") || p === "/healthz" || p === "/readyz" || p === "/metrics"
    ? server.baseURL + p
    : server.apiURL + p;
  const res = await fetch(url, { method, headers: h, body: payload });
  const text = await res.text();
  let json;
  try {
    json = JSON.parse(text);
  } catch {}
  return { status: res.status, headers: res.headers, json, text };
}

// Checks the error body shape of API.md §1 on a raw response.
export function assertErrorBody(res, status, what = "") {
  assert.equal(res.status, status, `${what}: expected HTTP ${status}, got ${res.status}: ${res.text}`);
  assert.ok(res.json && typeof res.json === "object", `${what}: error body must be JSON, got ${res.text}`);
  assert.equal(res.json.error?.code, status, `${what}: error.code must be the integer ${status}: ${res.text}`);
  assert.equal(typeof res.json.error.message, "string", `${what}: error.message must be a string`);
  assert.ok(res.json.error.message.length > 0, `${what}: error.message must not be empty`);
  return res.json.error;
}

// ---------------------------------------------------------------------------
// Coverage records.

function testFileName() {
  const main = process.argv.find((a) => a.endsWith(".test.mjs"));
  return main ? path.basename(main) : `pid-${process.pid}`;
}

export function record(op, status) {
  assert.ok(OPERATIONS[op], `unknown operation ${op} (add it to OPERATIONS in harness.mjs)`);
  fs.mkdirSync(COVERAGE_DIR, { recursive: true });
  fs.appendFileSync(path.join(COVERAGE_DIR, `${testFileName()}.jsonl`), JSON.stringify({ op, status }) + "\n");
}

function markDone() {
  fs.mkdirSync(COVERAGE_DIR, { recursive: true });
  fs.writeFileSync(path.join(COVERAGE_DIR, `${testFileName()}.done`), new Date().toISOString());
}

// Describes an error thrown by the SDK for assertion messages.
export function describeError(err) {
  if (!err) return String(err);
  let s = `${err.name ?? "Error"}: ${err.message}`;
  if (typeof err.pretty === "function") {
    try {
      s += `\n${err.pretty()}`;
    } catch {}
  }
  if (err.statusCode !== undefined) s += `\nHTTP ${err.statusCode}`;
  if (err.body !== undefined) s += `\nbody: ${String(err.body).slice(0, 2000)}`;
  if (err.rawValue !== undefined) s += `\nraw: ${JSON.stringify(err.rawValue)?.slice(0, 2000)}`;
  return s;
}

const ERROR_CLASSES = {
  400: errors.BadRequestResponseError,
  401: errors.UnauthorizedResponseError,
  402: errors.PaymentRequiredResponseError,
  403: errors.ForbiddenResponseError,
  404: errors.NotFoundResponseError,
  408: errors.RequestTimeoutResponseError,
  409: errors.ConflictResponseError,
  413: errors.PayloadTooLargeResponseError,
  422: errors.UnprocessableEntityResponseError,
  429: errors.TooManyRequestsResponseError,
  500: errors.InternalServerResponseError,
  502: errors.BadGatewayResponseError,
  503: errors.ServiceUnavailableResponseError,
  524: errors.EdgeNetworkTimeoutResponseError,
  529: errors.ProviderOverloadedResponseError,
};
export const errorClassFor = (status) => ERROR_CLASSES[status];

// Runs an SDK call expected to succeed; records (op, success status).
export async function call(op, fn) {
  assert.ok(OPERATIONS[op], `unknown operation ${op}`);
  let value;
  try {
    value = await fn();
  } catch (err) {
    assert.fail(`${op} (${OPERATIONS[op].route}) should succeed with ${OPERATIONS[op].success}, but the SDK threw ${describeError(err)}`);
  }
  record(op, OPERATIONS[op].success);
  return value;
}

// Runs an SDK call expected to fail with a typed error of the status;
// asserts the class, statusCode, error.code and message; records (op,
// status). Returns the error.
export async function fails(op, status, fn, what = "") {
  assert.ok(OPERATIONS[op], `unknown operation ${op}`);
  const Class = ERROR_CLASSES[status];
  assert.ok(Class, `no typed error class for ${status}`);
  assert.ok(OPERATIONS[op].errors.includes(status), `${op} does not type ${status}`);
  const label = `${op} (${OPERATIONS[op].route})${what ? ` [${what}]` : ""}`;
  let err;
  let value;
  try {
    value = await fn();
  } catch (e) {
    err = e;
  }
  if (!err) assert.fail(`${label}: expected ${Class.name} (HTTP ${status}) but the call succeeded: ${JSON.stringify(value)?.slice(0, 1000)}`);
  if (!(err instanceof Class)) assert.fail(`${label}: expected ${Class.name} (HTTP ${status}) but got ${describeError(err)}`);
  assert.equal(err.statusCode, status, `${label}: statusCode`);
  assert.equal(err.error?.code, status, `${label}: error.code must equal the status`);
  assert.equal(typeof err.error.message, "string");
  assert.ok(err.error.message.length > 0, `${label}: error.message must not be empty`);
  // The SDK returned the typed error with the right code: that is what the
  // coverage claim is about, so it is recorded before the finer checks.
  record(op, status);
  assert.ok(!/^[A-Z][a-z]/.test(err.error.message), `${label}: error.message must be lower-case (API.md §1): ${err.error.message}`);
  assert.ok(!/\b(?:[A-Z][A-Za-z0-9]*|json|sql|strconv|runtime)\.[A-Za-z_]/.test(err.error.message), `${label}: error.message must not show internal (Go) names: ${err.error.message}`);
  return err;
}

// fails for the gateway's refusals, which word their messages as
// OpenRouter's do ("Key limit exceeded: ...", "Request blocked: ..."), not
// in the lower case of the management API's (API.md §1): the typed error,
// its status and code, a message; recorded.
export async function failsAsGateway(op, status, fn) {
  const Class = errorClassFor(status);
  let err;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof Class, `${op}: want ${Class.name}, got ${describeError(err)}`);
  assert.equal(err.statusCode, status);
  assert.equal(err.error?.code, status);
  assert.ok(err.error.message.length > 0);
  record(op, status);
  return err;
}

// Runs an SDK call expected to fail with a status the SDK does not type for
// the operation (so it surfaces as a generic OpenRouterDefaultError); checks
// the status and the JSON error body. Not recorded for coverage.
export async function failsUntyped(status, fn, what = "") {
  let err;
  try {
    await fn();
  } catch (e) {
    err = e;
  }
  assert.ok(err, `${what}: expected HTTP ${status} but the call succeeded`);
  if (!(err instanceof errors.OpenRouterError) || err.statusCode !== status) {
    assert.fail(`${what}: expected an HTTP ${status} error but got ${describeError(err)}`);
  }
  let body;
  try {
    body = JSON.parse(err.body);
  } catch {
    assert.fail(`${what}: error body is not JSON: ${err.body}`);
  }
  assert.equal(body?.error?.code, status, `${what}: error.code must be ${status}: ${err.body}`);
  assert.equal(typeof body.error.message, "string");
  return body.error;
}

// Collects every page of an SDK list (the SDK's page iterator).
export async function allPages(pagePromise) {
  const out = [];
  for await (const page of await pagePromise) {
    const items = page.result?.data ?? page.data ?? [];
    out.push(...items);
  }
  return out;
}

// ---------------------------------------------------------------------------
// Per-file setup: one server, two fresh organizations (A: the one tested,
// B: a foreign one for tenancy checks), both made with the CLI. env is the
// server's extra environment, or an async function that prepares and
// returns it; prepare, if given, runs first and returns more environment
// (Node runs the before hooks of a file concurrently, so a hook of the test
// file could not be relied on to finish before the server starts).

export function useServer({ env, orgs = true, prepare } = {}) {
  const ctx = {};
  before(async () => {
    const more = prepare ? await prepare() : {};
    const server = await startServer({ env: { ...(typeof env === "function" ? await env() : env), ...more } });
    Object.assign(ctx, server, { server });
    ctx.bootstrap = { mgmtKey: server.bootstrapKey, sdk: client(server, server.bootstrapKey) };
    ctx.anon = client(server, BOGUS_REGULAR_KEY);
    ctx.badMgmt = client(server, BOGUS_MGMT_KEY);
    if (orgs) {
      ctx.org = await createOrg(server, uniq("acme"));
      ctx.foreign = await createOrg(server, uniq("foreign"));
    }
  }, { timeout: 15 * 60_000 });
  after(async () => {
    markDone();
    await ctx.server?.stop();
  });
  return ctx;
}

// Adds an organization member with the extension endpoint (the SDK has no
// method for it).
export async function addMember(ctx, mgmtKey, { email, ...rest } = {}) {
  const body = { email: email ?? `${uniq("user")}@example.com`, ...rest };
  const res = await api(ctx.server, "POST", "/organization/members", { key: mgmtKey, body });
  assert.equal(res.status, 201, `POST /organization/members: ${res.status} ${res.text}`);
  assert.ok(res.json?.data?.id, `POST /organization/members: no data.id in ${res.text}`);
  return res.json.data;
}

// Creates a regular key through the SDK (records apiKeysCreate success).
export async function createKey(sdk, body = {}) {
  return call("apiKeysCreate", () => sdk.apiKeys.create({ requestBody: { name: uniq("key"), ...body } }));
}

// Looks up the default workspace through the SDK.
export async function defaultWorkspace(sdk) {
  const res = await call("workspacesGet", () => sdk.workspaces.get({ id: "default" }));
  return res.data;
}
