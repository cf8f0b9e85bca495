// OAuth with PKCE through the official client: POST /auth/keys/code
// (oAuth.createAuthCode) and POST /auth/keys (oAuth.exchangeAuthCodeForAPIKey).
//
// Typed statuses not exercised here:
// - 500 on both operations: no input may cause a 500 (API.md §1); not faked.

import assert from "node:assert/strict";
import { createHash, randomBytes } from "node:crypto";
import { describe, it } from "node:test";

import {
  BOGUS_MGMT_KEY,
  REGULAR_KEY,
  RFC3339_UTC,
  addMember,
  call,
  client,
  createKey,
  defaultWorkspace,
  fails,
  failsUntyped,
  randomUUID,
  sha256hex,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

const CALLBACK = "https://app.example.com/oauth/callback";

// A client without credential: the exchange needs none.
const exchanger = () => client(ctx.server, undefined);

async function pkce(sdk) {
  // The SDK's own helper: a random verifier and BASE64URL(SHA256(verifier)).
  const pair = await sdk.oAuth.createSHA256CodeChallenge();
  assert.equal(pair.codeChallenge, createHash("sha256").update(pair.codeVerifier).digest("base64url"));
  return pair;
}

async function createCode(sdk, body = {}) {
  const res = await call("oAuthCreateAuthCode", () => sdk.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK, ...body } }));
  return res.data;
}

const exchange = (requestBody, c = exchanger()) => c.oAuth.exchangeAuthCodeForAPIKey({ requestBody });

describe("POST /auth/keys/code (oAuth.createAuthCode)", () => {
  it("creates a code: {id, app_id (integer), created_at}; the code carries >= 128 bits", async () => {
    const { codeChallenge } = await pkce(ctx.org.sdk);
    const d = await createCode(ctx.org.sdk, { codeChallenge, codeChallengeMethod: "S256" });
    assert.equal(typeof d.id, "string");
    assert.ok(d.id.length >= 22, `code too short for 128 bits: ${d.id}`);
    assert.ok(Number.isInteger(d.appId));
    assert.match(d.createdAt, RFC3339_UTC);
    const other = await createCode(ctx.org.sdk, {});
    assert.notEqual(other.id, d.id);
  });

  it("app_id is stable per organization and callback origin", async () => {
    const a = await createCode(ctx.org.sdk, { callbackUrl: "https://stable.example.com/a" });
    const b = await createCode(ctx.org.sdk, { callbackUrl: "https://stable.example.com/b?x=1" });
    const c = await createCode(ctx.org.sdk, { callbackUrl: "https://other.example.com/a" });
    assert.equal(a.appId, b.appId);
    assert.notEqual(a.appId, c.appId);
  });

  it("accepts http callbacks on localhost and 127.0.0.1, any port", async () => {
    await createCode(ctx.org.sdk, { callbackUrl: "http://localhost:3000/cb" });
    await createCode(ctx.org.sdk, { callbackUrl: "http://127.0.0.1:8765/cb" });
    await createCode(ctx.org.sdk, { callbackUrl: "http://localhost/cb" });
  });

  it("any valid key may create a code: a regular key's code yields a key of that key's creator", async () => {
    const member = await addMember(ctx, ctx.org.mgmtKey, {});
    const regular = await createKey(ctx.org.sdk, { creatorUserId: member.id });
    const rc = client(ctx.server, regular.key);
    const { codeChallenge, codeVerifier } = await pkce(rc);
    const code = await createCode(rc, { codeChallenge });
    const res = await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "S256" }));
    assert.equal(res.userId, member.id);
    const got = await call("apiKeysGet", () => ctx.org.sdk.apiKeys.get({ hash: sha256hex(res.key) }));
    assert.equal(got.data.creatorUserId, member.id);
  });

  it("403 when a regular key asks for a code in another workspace of its organization", async () => {
    const ws = await call("workspacesCreate", () => ctx.org.sdk.workspaces.create({ createWorkspaceRequest: { name: "Other", slug: uniq("other") } }));
    const regular = await createKey(ctx.org.sdk, {});
    const rc = client(ctx.server, regular.key);
    const err = await fails("oAuthCreateAuthCode", 403, () => rc.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK, workspaceId: ws.data.id } }));
    assert.match(err.error.message, /own workspace/);
    // Its own workspace is fine, named or implied; a management key may name any workspace.
    const own = await defaultWorkspace(ctx.org.sdk);
    await createCode(rc, { workspaceId: own.id });
    await createCode(rc, {});
    await createCode(ctx.org.sdk, { workspaceId: ws.data.id });
  });

  it("400 for invalid fields, naming the field", async () => {
    const sdk = ctx.org.sdk;
    const bad = (body, what, field) => fails("oAuthCreateAuthCode", 400, () => sdk.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK, ...body } }), what)
      .then((err) => assert.match(err.error.message, field));
    await bad({ callbackUrl: "http://app.example.com/cb" }, "plain http off localhost", /callback_url/);
    await bad({ callbackUrl: "" }, "empty callback_url", /callback_url/);
    await bad({ callbackUrl: "not a url" }, "callback_url not a URL", /callback_url/);
    const { codeChallenge } = await pkce(sdk);
    await bad({ codeChallenge, codeChallengeMethod: "S512" }, "unknown challenge method", /code_challenge_method/);
    await bad({ usageLimitType: "yearly" }, "usage_limit_type yearly", /usage_limit_type/);
    await bad({ limit: -1 }, "negative limit", /limit/);
    await bad({ keyLabel: "l".repeat(101) }, "key_label > 100", /key_label/);
    await bad({ expiresAt: new Date(Date.now() - 60_000) }, "expires_at in the past", /expires_at/);
  });

  it("401 without a valid key", async () => {
    await fails("oAuthCreateAuthCode", 401, () => ctx.anon.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK } }));
    await fails("oAuthCreateAuthCode", 401, () => client(ctx.server, BOGUS_MGMT_KEY).oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK } }), "unknown management key");
  });

  it("409 when a pending code of the organization already uses the challenge", async () => {
    const { codeChallenge, codeVerifier } = await pkce(ctx.org.sdk);
    const first = await createCode(ctx.org.sdk, { codeChallenge });
    const err = await fails("oAuthCreateAuthCode", 409, () => ctx.org.sdk.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK, codeChallenge } }));
    assert.match(err.error.message, /code_challenge|challenge/);
    // Once the first code is exchanged it is no longer pending: the challenge may be reused.
    await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: first.id, codeVerifier, codeChallengeMethod: "S256" }));
    await createCode(ctx.org.sdk, { codeChallenge });
    // Another organization is not affected by this organization's codes.
    const again = await pkce(ctx.org.sdk);
    await createCode(ctx.org.sdk, { codeChallenge: again.codeChallenge });
    await createCode(ctx.foreign.sdk, { codeChallenge: again.codeChallenge });
  });

  it("404 for an unknown or foreign workspace (a status the SDK does not type for this operation)", async () => {
    await failsUntyped(404, () => ctx.org.sdk.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK, workspaceId: randomUUID() } }), "unknown workspace");
    const theirs = await defaultWorkspace(ctx.foreign.sdk);
    await failsUntyped(404, () => ctx.org.sdk.oAuth.createAuthCode({ requestBody: { callbackUrl: CALLBACK, workspaceId: theirs.id } }), "foreign workspace");
  });
});

describe("POST /auth/keys (oAuth.exchangeAuthCodeForAPIKey)", () => {
  it("S256: yields a working key with the code's settings; a second exchange of the code → 403", async () => {
    const sdk = ctx.org.sdk;
    const ws = await defaultWorkspace(sdk);
    const me = await call("apiKeysGetCurrentKeyMetadata", () => sdk.apiKeys.getCurrentKeyMetadata());
    const { codeChallenge, codeVerifier } = await pkce(sdk);
    const expiresAt = new Date(Math.floor(Date.now() / 1000) * 1000 + 7 * 86400_000);
    const code = await createCode(sdk, { codeChallenge, codeChallengeMethod: "S256", limit: 5, usageLimitType: "weekly", keyLabel: "my oauth app", expiresAt });
    const res = await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "S256" }));
    assert.match(res.key, REGULAR_KEY);
    assert.equal(res.userId, me.data.creatorUserId ?? null);
    const current = await call("apiKeysGetCurrentKeyMetadata", () => client(ctx.server, res.key).apiKeys.getCurrentKeyMetadata());
    assert.equal(current.data.isManagementKey, false);
    assert.equal(current.data.label, "my oauth app");
    assert.equal(current.data.limit, 5);
    assert.equal(current.data.limitReset, "weekly");
    assert.equal(current.data.workspaceId, ws.id);
    assert.equal(current.data.expiresAt.getTime(), expiresAt.getTime());
    const listed = await call("apiKeysGet", () => sdk.apiKeys.get({ hash: sha256hex(res.key) }));
    assert.equal(listed.data.name, "my oauth app");
    await fails("oAuthExchangeAuthCodeForAPIKey", 403, () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "S256" }), "second exchange");
  });

  it("the key lands in the code's workspace; default label \"OAuth key\"", async () => {
    const sdk = ctx.org.sdk;
    const slug = uniq("ws");
    const ws = (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
    const code = await createCode(sdk, { workspaceId: ws.slug });
    const res = await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id }));
    const got = await call("apiKeysGet", () => sdk.apiKeys.get({ hash: sha256hex(res.key) }));
    assert.equal(got.data.workspaceId, ws.id);
    assert.equal(got.data.name, "OAuth key");
    assert.equal(got.data.limit, null);
  });

  it("plain method: the verifier equals the challenge", async () => {
    const verifier = randomBytes(40).toString("base64url");
    const code = await createCode(ctx.org.sdk, { codeChallenge: verifier, codeChallengeMethod: "plain" });
    const res = await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id, codeVerifier: verifier, codeChallengeMethod: "plain" }));
    assert.match(res.key, REGULAR_KEY);
  });

  it("the method defaults to S256 when a challenge is given", async () => {
    const { codeChallenge, codeVerifier } = await pkce(ctx.org.sdk);
    const code = await createCode(ctx.org.sdk, { codeChallenge });
    await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id, codeVerifier }));
  });

  it("a credential sent with the exchange is ignored", async () => {
    const code = await createCode(ctx.org.sdk, {});
    await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id }, client(ctx.server, BOGUS_MGMT_KEY)));
  });

  it("400: empty code, malformed verifier, unknown method, a method that differs from the code's", async () => {
    const { codeChallenge, codeVerifier } = await pkce(ctx.org.sdk);
    const code = await createCode(ctx.org.sdk, { codeChallenge, codeChallengeMethod: "S256" });
    let err = await fails("oAuthExchangeAuthCodeForAPIKey", 400, () => exchange({ code: "" }), "empty code");
    assert.match(err.error.message, /code/);
    err = await fails("oAuthExchangeAuthCodeForAPIKey", 400, () => exchange({ code: code.id, codeVerifier: "too-short" }), "malformed verifier");
    assert.match(err.error.message, /code_verifier/);
    err = await fails("oAuthExchangeAuthCodeForAPIKey", 400, () => exchange({ code: code.id, codeVerifier: "x".repeat(43) + "!" }), "verifier with a reserved character");
    err = await fails("oAuthExchangeAuthCodeForAPIKey", 400, () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "S512" }), "unknown method");
    assert.match(err.error.message, /code_challenge_method/);
    await fails("oAuthExchangeAuthCodeForAPIKey", 400, () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "plain" }), "method differs from the code's");
    // None of these consumed the code.
    await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "S256" }));
  });

  it("403: unknown code, wrong verifier, missing verifier; a failed exchange does not consume the code", async () => {
    await fails("oAuthExchangeAuthCodeForAPIKey", 403, () => exchange({ code: "ghc_" + randomBytes(24).toString("base64url") }), "unknown code");
    const { codeChallenge, codeVerifier } = await pkce(ctx.org.sdk);
    const code = await createCode(ctx.org.sdk, { codeChallenge });
    const wrong = randomBytes(32).toString("base64url");
    await fails("oAuthExchangeAuthCodeForAPIKey", 403, () => exchange({ code: code.id, codeVerifier: wrong, codeChallengeMethod: "S256" }), "wrong verifier");
    await fails("oAuthExchangeAuthCodeForAPIKey", 403, () => exchange({ code: code.id }), "missing verifier");
    await call("oAuthExchangeAuthCodeForAPIKey", () => exchange({ code: code.id, codeVerifier, codeChallengeMethod: "S256" }));
  });

  it("after 5 failed verifier attempts the code is burned", async () => {
    const { codeChallenge, codeVerifier } = await pkce(ctx.org.sdk);
    const code = await createCode(ctx.org.sdk, { codeChallenge });
    for (let i = 0; i < 5; i++) {
      await fails("oAuthExchangeAuthCodeForAPIKey", 403, () => exchange({ code: code.id, codeVerifier: randomBytes(32).toString("base64url") }), `wrong verifier #${i + 1}`);
    }
    await fails("oAuthExchangeAuthCodeForAPIKey", 403, () => exchange({ code: code.id, codeVerifier }), "burned code");
  });

  it("concurrent exchanges of one code yield exactly one key", async () => {
    const { codeChallenge, codeVerifier } = await pkce(ctx.org.sdk);
    const code = await createCode(ctx.org.sdk, { codeChallenge });
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => exchange({ code: code.id, codeVerifier })));
    const won = results.filter((r) => r.status === "fulfilled");
    assert.equal(won.length, 1, `exactly one exchange must win: ${JSON.stringify(results.map((r) => r.status === "fulfilled" ? "ok" : r.reason?.statusCode))}`);
    for (const r of results.filter((r) => r.status === "rejected")) assert.equal(r.reason?.statusCode, 403);
    const keys = await ctx.org.sdk.apiKeys.list({ includeDisabled: true });
    assert.equal(keys.data.filter((k) => k.hash === sha256hex(won[0].value.key)).length, 1);
  });
});

// oAuth.createAuthorizationUrl makes no request: it builds the URL of the
// page where a user authorizes an application, as new URL("/auth",
// serverURL), so the page is /auth at the origin of the serverURL given to
// the client (the API's base, .../api/v1), whatever path that base has.
// Gatehouse's page lives there (issue #13, the web console).
describe("oAuth.createAuthorizationUrl (builds the /auth URL; no request)", () => {
  it("builds <origin>/auth?callback_url=… with the PKCE challenge and limit for a Gatehouse base URL", async () => {
    const sdk = client(ctx.server, undefined);
    const { codeChallenge } = await sdk.oAuth.createSHA256CodeChallenge();
    const built = await sdk.oAuth.createAuthorizationUrl({ callbackUrl: CALLBACK, codeChallenge, codeChallengeMethod: "S256", limit: 5 });
    const url = new URL(built);
    assert.equal(ctx.server.apiURL, `${ctx.server.baseURL}/api/v1`, "the client is given the API's base URL");
    assert.equal(url.origin, new URL(ctx.server.baseURL).origin, "the page is on the Gatehouse server's origin");
    assert.equal(url.pathname, "/auth");
    assert.deepEqual([...url.searchParams.keys()], ["callback_url", "code_challenge", "code_challenge_method", "limit"]);
    assert.equal(url.searchParams.get("callback_url"), CALLBACK);
    assert.equal(url.searchParams.get("code_challenge"), codeChallenge);
    assert.equal(url.searchParams.get("code_challenge_method"), "S256");
    assert.equal(url.searchParams.get("limit"), "5");
    assert.equal(built, `${ctx.server.baseURL}/auth?callback_url=${encodeURIComponent(CALLBACK)}&code_challenge=${codeChallenge}&code_challenge_method=S256&limit=5`);

    const plain = new URL(await sdk.oAuth.createAuthorizationUrl({ callbackUrl: CALLBACK }));
    assert.equal(plain.pathname, "/auth");
    assert.deepEqual([...plain.searchParams.keys()], ["callback_url"]);

    // The URL reaches the console's authorization page: a visitor who is
    // not signed in is sent to sign in first, and comes back to it after.
    const visit = await fetch(built, { redirect: "manual" });
    assert.equal(visit.status, 303, "GET of the built URL");
    const next = new URL(visit.headers.get("location"), ctx.server.baseURL);
    assert.equal(next.pathname, "/sign-in");
    assert.equal(next.searchParams.get("next"), `${url.pathname}${url.search}`, "back to the authorization page after signing in");
    const signIn = await fetch(next);
    assert.equal(signIn.status, 200);
    assert.match(signIn.headers.get("content-type"), /^text\/html/);
    assert.match(await signIn.text(), /<form[^>]+action="\/sign-in"/);
  });

  it("drops any path of the base URL: behind a proxy under a prefix, /auth is at the origin's root", async () => {
    for (const base of ["https://gatehouse.example.com/api/v1", "https://gatehouse.example.com/api/v1/", "https://example.com/gatehouse/api/v1"]) {
      const sdk = new (client(ctx.server, undefined).constructor)({ serverURL: base });
      const url = new URL(await sdk.oAuth.createAuthorizationUrl({ callbackUrl: CALLBACK }));
      assert.equal(`${url.origin}${url.pathname}`, `${new URL(base).origin}/auth`, base);
    }
  });
});
