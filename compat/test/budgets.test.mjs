// Workspace budgets and organization credits through the official client:
// workspaces.setBudget, getBudget, listBudgets, deleteBudget and
// credits.getCredits, each answer parsed by the SDK and its raw JSON checked
// against the SDK's own schema with no field the SDK does not know; then
// their enforcement through chat.send against a local upstream
// (cmd/fakellm): a workspace's budget refuses with the SDK's
// ForbiddenResponseError naming the budget, credits granted with the CLI
// while the server runs refuse with PaymentRequiredResponseError.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.

import assert from "node:assert/strict";
import { execFile, spawn } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { after, before, describe, it } from "node:test";

import * as operations from "@openrouter/sdk/models/operations";

import {
  assertSdkSchema,
  REPO_ROOT,
  api,
  call,
  cli,
  client,
  createKey,
  createOrg,
  errors,
  fails,
  failsUntyped,
  freePort,
  models,
  sleep,
  uniq,
  useServer,
} from "./harness.mjs";

const execFileP = promisify(execFile);

// The upstream: fakellm answers "You said: " and the last user message,
// counting words as tokens. A request reserves its bytes (+16) at $0.001
// and 100 completion tokens at $0.002: some $0.3.
const dir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-budgets-"));
const upstreamPort = await freePort();
const providers = path.join(dir, "providers.yaml");
fs.writeFileSync(providers, `providers:
  - id: fake
    base_url: http://127.0.0.1:${upstreamPort}/v1
    models:
      - id: echo
        prompt_price: 1000
        completion_price: 2000
        max_completion_tokens: 100
`);
const ctx = useServer({ env: { GATEHOUSE_PROVIDERS_FILE: providers } });
let upstream;

before(async () => {
  const fakellm = path.join(dir, "fakellm");
  await execFileP("go", ["build", "-o", fakellm, "./cmd/fakellm"], { cwd: REPO_ROOT });
  upstream = spawn(fakellm, ["--addr", `127.0.0.1:${upstreamPort}`], { stdio: "ignore" });
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${upstreamPort}/v1/models`)).ok) break;
    } catch {}
    if (i > 200) throw new Error("fakellm did not start");
    await sleep(50);
  }
}, { timeout: 10 * 60_000 });

after(() => {
  upstream?.kill("SIGTERM");
  fs.rmSync(dir, { recursive: true, force: true });
});

// ---------------------------------------------------------------------------
// The raw JSON against the SDK's own zod schemas: parse() checks every type,
// and every key the server sends must be one the schema has (zod would drop
// an unknown one silently).

async function assertRaw(schema, method, p, key, body) {
  const res = await api(ctx.server, method, p, { key, body });
  assert.equal(res.status, 200, `${method} ${p}: ${res.status} ${res.text}`);
  assertSdkSchema(schema, res.json, `${method} ${p}`);
  return res.json;
}

const newWorkspace = async (org) => (await call("workspacesCreate", () =>
  org.sdk.workspaces.create({ createWorkspaceRequest: { name: "Budgeted", slug: uniq("budgeted") } }))).data;

const setBudget = (org, workspaceRef, interval, body) => call("workspacesSetBudget", () =>
  org.sdk.workspaces.setBudget({ workspaceRef, interval, upsertWorkspaceBudgetRequest: body }));

// ---------------------------------------------------------------------------

describe("workspace budgets", () => {
  it("setBudget creates and updates; getBudget and listBudgets read them; every answer is the SDK's type", async () => {
    const ws = await newWorkspace(ctx.org);
    const monthly = await setBudget(ctx.org, ws.slug, "monthly", { limitUsd: 50 });
    assert.equal(monthly.data.limitUsd, 50);
    assert.equal(monthly.data.resetInterval, "monthly");
    assert.equal(monthly.data.workspaceId, ws.id);
    assert.equal(monthly.includeByokInBudgets, false);
    assert.equal(monthly.data.createdAt, monthly.data.updatedAt);

    const lifetime = await setBudget(ctx.org, ws.id, "lifetime", { limitUsd: 100.25, includeByokInBudgets: true });
    assert.equal(lifetime.data.resetInterval, null, "a lifetime budget has no reset interval");
    assert.equal(lifetime.data.limitUsd, 100.25);
    assert.equal(lifetime.includeByokInBudgets, true);

    const updated = await setBudget(ctx.org, ws.slug, "monthly", { limitUsd: 60 });
    assert.equal(updated.data.id, monthly.data.id, "an update keeps the budget's id");
    assert.equal(updated.data.limitUsd, 60);
    assert.equal(updated.includeByokInBudgets, true, "include_byok_in_budgets is the workspace's, for every budget");

    const got = await call("workspacesGetBudget", () => ctx.org.sdk.workspaces.getBudget({ workspaceRef: ws.slug, interval: "monthly" }));
    assert.deepEqual(got, updated);
    await setBudget(ctx.org, ws.slug, "daily", { limitUsd: 1 });
    const list = await call("workspacesListBudgets", () => ctx.org.sdk.workspaces.listBudgets({ workspaceRef: ws.id }));
    assert.deepEqual(list.data.map((b) => b.resetInterval), ["daily", "monthly", null], "narrowest first");
    assert.equal(list.includeByokInBudgets, true);
    assert.equal((await call("workspacesGet", () => ctx.org.sdk.workspaces.get({ id: ws.id }))).data.includeByokInBudgets, true);

    const key = ctx.org.mgmtKey;
    const base = `/workspaces/${ws.slug}/budgets`;
    await assertRaw(models.UpsertWorkspaceBudgetResponse$inboundSchema, "PUT", `${base}/weekly`, key, { limit_usd: 5, include_byok_in_budgets: false });
    await assertRaw(models.GetWorkspaceBudgetResponse$inboundSchema, "GET", `${base}/lifetime`, key);
    const raw = await assertRaw(models.ListWorkspaceBudgetsResponse$inboundSchema, "GET", base, key);
    assert.deepEqual(raw.data.map((b) => b.reset_interval), ["daily", "weekly", "monthly", null]);
    assert.equal(raw.include_byok_in_budgets, false);
    await assertRaw(models.DeleteWorkspaceBudgetResponse$inboundSchema, "DELETE", `${base}/weekly`, key);
  });

  it("deleteBudget answers deleted: true whether or not there was a budget; getBudget then 404", async () => {
    const ws = await newWorkspace(ctx.org);
    await setBudget(ctx.org, ws.id, "weekly", { limitUsd: 7 });
    for (let i = 0; i < 2; i++) {
      const res = await call("workspacesDeleteBudget", () => ctx.org.sdk.workspaces.deleteBudget({ workspaceRef: ws.id, interval: "weekly" }));
      assert.deepEqual(res, { deleted: true });
    }
    const err = await fails("workspacesGetBudget", 404, () => ctx.org.sdk.workspaces.getBudget({ workspaceRef: ws.id, interval: "weekly" }), "no weekly budget");
    assert.equal(err.error.message, "the workspace has no weekly budget");
    assert.deepEqual((await call("workspacesListBudgets", () => ctx.org.sdk.workspaces.listBudgets({ workspaceRef: ws.slug }))).data, []);
  });

  it("400: an interval other than daily, weekly, monthly or lifetime; limits out of order; a limit of 0", async () => {
    const ws = await newWorkspace(ctx.org);
    const sdk = ctx.org.sdk;
    let err = await fails("workspacesSetBudget", 400, () => sdk.workspaces.setBudget({ workspaceRef: ws.id, interval: "yearly",
      upsertWorkspaceBudgetRequest: { limitUsd: 5 } }), "yearly");
    assert.equal(err.error.message, "interval: must be one of daily, weekly, monthly or lifetime");
    err = await fails("workspacesGetBudget", 400, () => sdk.workspaces.getBudget({ workspaceRef: ws.id, interval: "Daily" }), "Daily");
    assert.match(err.error.message, /^interval: /);
    err = await fails("workspacesDeleteBudget", 400, () => sdk.workspaces.deleteBudget({ workspaceRef: ws.id, interval: "hourly" }), "hourly");
    assert.match(err.error.message, /^interval: /);

    await setBudget(ctx.org, ws.id, "weekly", { limitUsd: 10 });
    err = await fails("workspacesSetBudget", 400, () => sdk.workspaces.setBudget({ workspaceRef: ws.id, interval: "daily",
      upsertWorkspaceBudgetRequest: { limitUsd: 10 } }), "daily = weekly");
    assert.match(err.error.message, /^limit_usd: must be less than the workspace's weekly budget of \$10/);
    err = await fails("workspacesSetBudget", 400, () => sdk.workspaces.setBudget({ workspaceRef: ws.id, interval: "monthly",
      upsertWorkspaceBudgetRequest: { limitUsd: 0 } }), "zero");
    assert.equal(err.error.message, "limit_usd: must be greater than 0");
    const list = await call("workspacesListBudgets", () => sdk.workspaces.listBudgets({ workspaceRef: ws.id }));
    assert.deepEqual(list.data.map((b) => [b.resetInterval, b.limitUsd]), [["weekly", 10]], "a refused set changes nothing");
  });

  it("404: an unknown workspace, and another organization's, by id or slug", async () => {
    const ws = await newWorkspace(ctx.foreign);
    await setBudget(ctx.foreign, ws.id, "daily", { limitUsd: 3 });
    const sdk = ctx.org.sdk;
    for (const workspaceRef of [ws.id, ws.slug, "no-such-workspace"]) {
      await fails("workspacesSetBudget", 404, () => sdk.workspaces.setBudget({ workspaceRef, interval: "daily",
        upsertWorkspaceBudgetRequest: { limitUsd: 1 } }), workspaceRef);
      await fails("workspacesGetBudget", 404, () => sdk.workspaces.getBudget({ workspaceRef, interval: "daily" }), workspaceRef);
      await fails("workspacesListBudgets", 404, () => sdk.workspaces.listBudgets({ workspaceRef }), workspaceRef);
      await fails("workspacesDeleteBudget", 404, () => sdk.workspaces.deleteBudget({ workspaceRef, interval: "daily" }), workspaceRef);
    }
    const theirs = await call("workspacesGetBudget", () => ctx.foreign.sdk.workspaces.getBudget({ workspaceRef: ws.id, interval: "daily" }));
    assert.equal(theirs.data.limitUsd, 3, "the other organization's budget is untouched");
  });

  it("401 for an unknown key; a regular key is refused (403)", async () => {
    await fails("workspacesSetBudget", 401, () => ctx.badMgmt.workspaces.setBudget({ workspaceRef: "default", interval: "daily",
      upsertWorkspaceBudgetRequest: { limitUsd: 1 } }));
    await fails("workspacesGetBudget", 401, () => ctx.badMgmt.workspaces.getBudget({ workspaceRef: "default", interval: "daily" }));
    await fails("workspacesListBudgets", 401, () => ctx.anon.workspaces.listBudgets({ workspaceRef: "default" }));
    await fails("workspacesDeleteBudget", 401, () => ctx.anon.workspaces.deleteBudget({ workspaceRef: "default", interval: "daily" }));
    const regular = client(ctx.server, (await createKey(ctx.org.sdk)).key);
    const e = await failsUntyped(403, () => regular.workspaces.listBudgets({ workspaceRef: "default" }), "regular key");
    assert.equal(e.message, "only management keys can perform this operation");
  });
});

describe("credits", () => {
  it("getCredits: an organization without credits is unlimited; the CLI's grants set them", async () => {
    const org = await createOrg(ctx.server, uniq("credited"));
    let res = await call("creditsGetCredits", () => org.sdk.credits.getCredits());
    assert.deepEqual(res.data, { totalCredits: 1_000_000_000, totalUsage: 0 });
    assert.equal(await cli(ctx.server, ["credits", "grant", "--org", org.id, "--amount", "12.5"]), "12.5");
    res = await call("creditsGetCredits", () => org.sdk.credits.getCredits());
    assert.deepEqual(res.data, { totalCredits: 12.5, totalUsage: 0 });
    const raw = await assertRaw(operations.GetCreditsResponse$inboundSchema, "GET", "/credits", org.mgmtKey);
    assert.deepEqual(raw, { data: { total_credits: 12.5, total_usage: 0 } });
    // A management key grants its organization credits through the API too.
    const grant = await api(ctx.server, "POST", "/credits/grants", { key: org.mgmtKey, body: { amount: -2.5 } });
    assert.equal(grant.status, 201, grant.text);
    assert.equal(grant.json.data.total_credits, 10);
    assert.deepEqual((await call("creditsGetCredits", () => org.sdk.credits.getCredits())).data, { totalCredits: 10, totalUsage: 0 });
    // Another organization's credits are its own.
    assert.equal((await call("creditsGetCredits", () => ctx.foreign.sdk.credits.getCredits())).data.totalCredits, 1_000_000_000);
  });

  it("401 for an unknown key; 403 for a regular key", async () => {
    await fails("creditsGetCredits", 401, () => ctx.badMgmt.credits.getCredits());
    const regular = client(ctx.server, (await createKey(ctx.org.sdk)).key);
    const err = await fails("creditsGetCredits", 403, () => regular.credits.getCredits());
    assert.equal(err.error.message, "only management keys can perform this operation");
  });
});

describe("enforcement through chat.send", () => {
  const send = (sdk) => sdk.chat.send({ chatRequest: { model: "fake/echo", messages: [{ role: "user", content: "hello budget" }] } });

  it("a workspace's budget refuses its keys' requests with ForbiddenResponseError naming the budget", async () => {
    const org = await createOrg(ctx.server, uniq("budgeted"));
    const ws = await newWorkspace(org);
    const user = client(ctx.server, (await createKey(org.sdk, { workspaceId: ws.id })).key);
    const outside = client(ctx.server, (await createKey(org.sdk)).key);
    const budget = await setBudget(org, ws.id, "daily", { limitUsd: 0.1 }); // below one request's worst case
    await assert.rejects(send(user), (err) => {
      assert.ok(err instanceof errors.ForbiddenResponseError, `want ForbiddenResponseError, got ${err}`);
      assert.equal(err.statusCode, 403);
      assert.match(err.error.message, /^Workspace daily budget of \$0\.1 exceeded: this request may cost up to \$0\.\d+ and \$0\.1 of it remain until the daily reset/);
      assert.equal(err.error.metadata.budget_id, budget.data.id);
      assert.equal(err.error.metadata.workspace_id, ws.id);
      return true;
    });
    const res = await send(outside); // another workspace's key
    assert.equal(res.choices[0].message.content, "You said: hello budget");
    await setBudget(org, ws.id, "daily", { limitUsd: 1 });
    assert.equal((await send(user)).choices[0].message.content, "You said: hello budget");
  });

  it("credits the CLI grants while the server runs refuse requests past them with PaymentRequiredResponseError", async () => {
    const org = await createOrg(ctx.server, uniq("prepaid"));
    const user = client(ctx.server, (await createKey(org.sdk)).key);
    await send(user); // 2 prompt and 4 completion tokens: $0.01
    assert.deepEqual((await call("creditsGetCredits", () => org.sdk.credits.getCredits())).data, { totalCredits: 1_000_000_000, totalUsage: 0.01 });
    assert.equal(await cli(ctx.server, ["credits", "grant", "--org", org.id, "--amount", "0.1"]), "0.1");
    // Another process's write reaches a server within a second.
    let err;
    for (let i = 0; i < 40; i++) {
      try {
        await send(user);
      } catch (e) {
        err = e;
        break;
      }
      await sleep(100);
    }
    assert.ok(err instanceof errors.PaymentRequiredResponseError, `want PaymentRequiredResponseError, got ${err}`);
    assert.equal(err.statusCode, 402);
    assert.match(err.error.message, /^Insufficient credits: /);
    const spent = (await call("creditsGetCredits", () => org.sdk.credits.getCredits())).data;
    assert.equal(spent.totalCredits, 0.1);
    assert.ok(spent.totalUsage >= 0.01 && spent.totalUsage < 0.1, `usage ${spent.totalUsage}`);
    assert.equal(await cli(ctx.server, ["credits", "grant", "--org", org.id, "--amount", "5"]), "5.1");
    let ok = false;
    for (let i = 0; i < 40 && !ok; i++) {
      try {
        await send(user);
        ok = true;
      } catch {
        await sleep(100);
      }
    }
    assert.ok(ok, "the request passes once more credits are granted");
  });
});
