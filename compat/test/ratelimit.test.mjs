// Rate limiting (API.md §1): a second server on its own database with a tiny
// token bucket (GATEHOUSE_RATE_LIMIT_RPS=0.001, GATEHOUSE_RATE_LIMIT_BURST=2),
// so a credential is out of tokens after two requests for the rest of the run.
// Shows the SDK surfaces TooManyRequestsResponseError on the five key
// operations that type 429, with Retry-After and X-RateLimit-* headers, and
// that a 429 changes nothing.
//
// Typed statuses not exercised here: 500 (no input may cause it).

import assert from "node:assert/strict";
import { after, before, describe, it } from "node:test";

import {
  BOGUS_REGULAR_KEY,
  api,
  assertErrorBody,
  call,
  cli,
  client,
  createOrg,
  errors,
  fails,
  sha256hex,
  startServer,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer({ env: { GATEHOUSE_RATE_LIMIT_RPS: "0.001", GATEHOUSE_RATE_LIMIT_BURST: "2" } });

function assertRateLimitHeaders(headers, what) {
  const retryAfter = headers.get("retry-after");
  assert.match(retryAfter ?? "", /^\d+$/, `${what}: Retry-After must be whole seconds, got ${retryAfter}`);
  assert.ok(Number(retryAfter) >= 1, `${what}: Retry-After must be at least 1 second`);
  for (const h of ["x-ratelimit-limit", "x-ratelimit-remaining", "x-ratelimit-reset"]) {
    assert.match(headers.get(h) ?? "", /^\d+(\.\d+)?$/, `${what}: ${h} must be present and numeric, got ${headers.get(h)}`);
  }
  assert.equal(headers.get("x-ratelimit-remaining"), "0", `${what}: X-RateLimit-Remaining`);
}

const newMgmtKey = async (orgId) => cli(ctx.server, ["mgmt-keys", "create", "--org", orgId, "--name", uniq("rl")]);

describe("429 Too Many Requests", () => {
  it("the SDK surfaces TooManyRequestsResponseError on every key operation once a credential's bucket is empty; a 429 changes nothing", async () => {
    const org = await createOrg(ctx.server, uniq("limited"));
    const sdk = client(ctx.server, await newMgmtKey(org.id));
    // Two tokens: one create, one get.
    const created = await call("apiKeysCreate", () => sdk.apiKeys.create({ requestBody: { name: "survivor" } }));
    const hash = created.data.hash;
    await call("apiKeysGet", () => sdk.apiKeys.get({ hash }));
    // The bucket is empty now.
    let err = await fails("apiKeysList", 429, () => sdk.apiKeys.list());
    assertRateLimitHeaders(err.headers, "apiKeys.list");
    err = await fails("apiKeysCreate", 429, () => sdk.apiKeys.create({ requestBody: { name: "never" } }));
    assertRateLimitHeaders(err.headers, "apiKeys.create");
    err = await fails("apiKeysGet", 429, () => sdk.apiKeys.get({ hash }));
    assertRateLimitHeaders(err.headers, "apiKeys.get");
    err = await fails("apiKeysUpdate", 429, () => sdk.apiKeys.update({ hash, requestBody: { name: "renamed", disabled: true } }));
    assertRateLimitHeaders(err.headers, "apiKeys.update");
    err = await fails("apiKeysDelete", 429, () => sdk.apiKeys.delete({ hash }));
    assertRateLimitHeaders(err.headers, "apiKeys.delete");
    assert.ok(err instanceof errors.TooManyRequestsResponseError);

    // Another credential of the same organization has its own bucket: it sees
    // that nothing changed.
    const other = client(ctx.server, await newMgmtKey(org.id));
    const got = await call("apiKeysGet", () => other.apiKeys.get({ hash }));
    assert.equal(got.data.name, "survivor", "the 429'd update changed nothing");
    assert.equal(got.data.disabled, false);
    const list = await call("apiKeysList", () => other.apiKeys.list({ includeDisabled: true }));
    assert.deepEqual(list.data.map((k) => k.hash), [hash], "the 429'd create and delete changed nothing");
  });

  it("a raw 429 carries the JSON error body", async () => {
    const org = await createOrg(ctx.server, uniq("limited-raw"));
    const key = await newMgmtKey(org.id);
    for (let i = 0; i < 2; i++) assert.equal((await api(ctx.server, "GET", "/keys", { key })).status, 200);
    const res = await api(ctx.server, "GET", "/keys", { key });
    assertErrorBody(res, 429, "third request");
    assertRateLimitHeaders(res.headers, "raw GET /keys");
  });

  it("requests whose credential is rejected, and the code exchange, are limited per client IP, in separate buckets", async () => {
    // The per-IP bucket holds two tokens too.
    assertErrorBody(await api(ctx.server, "GET", "/key", { key: BOGUS_REGULAR_KEY }), 401, "first rejected credential");
    assertErrorBody(await api(ctx.server, "GET", "/key", { key: BOGUS_REGULAR_KEY }), 401, "second rejected credential");
    const res = await api(ctx.server, "GET", "/key", { key: BOGUS_REGULAR_KEY });
    assertErrorBody(res, 429, "third rejected credential");
    assertRateLimitHeaders(res.headers, "rejected credential");
    // A flood of bogus tokens does not starve the code exchange: it has
    // buckets of its own, per address, which hold two tokens too.
    for (let i = 0; i < 2; i++) {
      assertErrorBody(await api(ctx.server, "POST", "/auth/keys", { body: { code: "ghc_unknown" } }), 403, `code exchange ${i + 1} after the flood`);
    }
    const ex = await api(ctx.server, "POST", "/auth/keys", { body: { code: "ghc_unknown" } });
    assertErrorBody(ex, 429, "third code exchange from the same IP");
    // A valid credential has its own bucket.
    const org = await createOrg(ctx.server, uniq("still-ok"));
    assert.equal((await api(ctx.server, "GET", "/key", { key: org.mgmtKey })).status, 200);
    // The bootstrap management key was never used here: its bucket is full.
    assert.equal((await api(ctx.server, "GET", "/key", { key: ctx.bootstrap.mgmtKey })).status, 200);
    assert.notEqual(sha256hex(org.mgmtKey), sha256hex(ctx.bootstrap.mgmtKey));
  });
});

describe("GATEHOUSE_RATE_LIMIT_RPS=0 turns limiting off", () => {
  let server;
  before(async () => {
    server = await startServer({ env: { GATEHOUSE_RATE_LIMIT_RPS: "0", GATEHOUSE_RATE_LIMIT_BURST: "1" } });
  });
  after(async () => server?.stop());

  it("many requests of one credential all succeed", async () => {
    for (let i = 0; i < 10; i++) {
      const res = await api(server, "GET", "/key", { key: server.bootstrapKey });
      assert.equal(res.status, 200, `request ${i + 1}: ${res.status} ${res.text}`);
    }
  });
});
