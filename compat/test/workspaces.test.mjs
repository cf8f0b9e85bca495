// Workspaces and workspace members through the official client.
//
// Typed statuses not exercised here:
// - 500 on every operation: no input may cause a 500 (API.md §1); not faked.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  RFC3339_UTC,
  UUID,
  addMember,
  allPages,
  api,
  assertErrorBody,
  call,
  client,
  createKey,
  createOrg,
  defaultWorkspace,
  fails,
  randomUUID,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

async function createWs(sdk, fields = {}) {
  const slug = fields.slug ?? uniq("ws");
  const res = await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: `Team ${slug}`, slug, ...fields } }));
  return res.data;
}

function assertWorkspaceShape(w) {
  assert.match(w.id, UUID);
  assert.equal(typeof w.name, "string");
  assert.match(w.slug, /^[a-z0-9]+(?:-[a-z0-9]+)*$/);
  assert.match(w.defaultGuardrailId, UUID);
  assert.match(w.createdAt, RFC3339_UTC);
  assert.equal(typeof w.ioLoggingSamplingRate, "number");
  for (const f of ["isDataDiscountLoggingEnabled", "isObservabilityBroadcastEnabled", "isObservabilityIoLoggingEnabled"]) {
    assert.equal(typeof w[f], "boolean", f);
  }
}

const regularClient = async () => client(ctx.server, (await createKey(ctx.org.sdk)).key);

describe("GET /workspaces (workspaces.list)", () => {
  it("lists the organization's workspaces, the default one first, with total_count and offset/limit paging", async () => {
    const sdk = ctx.org.sdk;
    const first = await call("workspacesList", () => sdk.workspaces.list());
    assert.ok(first.result.totalCount >= 1);
    assert.equal(first.result.data[0].slug, "default", "the default workspace is the oldest");
    const made = [];
    for (let i = 0; i < 3; i++) made.push(await createWs(sdk));
    const all = await call("workspacesList", () => sdk.workspaces.list({ limit: 100 }));
    const total = all.result.totalCount;
    assert.equal(total, first.result.totalCount + 3);
    assert.equal(all.result.data.length, total);
    assert.deepEqual(all.result.data.slice(-3).map((w) => w.id), made.map((w) => w.id), "ordered by created_at");
    for (const w of all.result.data) assertWorkspaceShape(w);
    const page = await call("workspacesList", () => sdk.workspaces.list({ offset: total - 2, limit: 1 }));
    assert.equal(page.result.totalCount, total);
    assert.deepEqual(page.result.data.map((w) => w.id), [made[1].id]);
    const beyond = await call("workspacesList", () => sdk.workspaces.list({ offset: total + 5 }));
    assert.deepEqual(beyond.result.data, []);
    assert.equal(beyond.result.totalCount, total, "total_count does not depend on the page");
    const walked = await allPages(sdk.workspaces.list({ limit: 2 }));
    assert.deepEqual(walked.map((w) => w.id), all.result.data.map((w) => w.id), "the SDK's page iterator walks every page");
  });

  it("never lists another organization's workspaces", async () => {
    const theirs = await createWs(ctx.foreign.sdk);
    const mine = await call("workspacesList", () => ctx.org.sdk.workspaces.list({ limit: 100 }));
    assert.ok(!mine.result.data.some((w) => w.id === theirs.id));
  });

  it("400 for out-of-range paging (raw: the SDK does not type 400 here)", async () => {
    for (const q of ["limit=0", "limit=101", "offset=-1", "limit=abc"]) {
      assertErrorBody(await api(ctx.server, "GET", `/workspaces?${q}`, { key: ctx.org.mgmtKey }), 400, q);
    }
  });

  it("401 without a valid key", async () => {
    await fails("workspacesList", 401, () => ctx.anon.workspaces.list());
  });
});

describe("POST /workspaces (workspaces.create)", () => {
  it("201 with defaults; default_guardrail_id is derived from the id", async () => {
    const slug = uniq("ws");
    const w = await createWs(ctx.org.sdk, { slug, name: "Research" });
    assertWorkspaceShape(w);
    assert.equal(w.name, "Research");
    assert.equal(w.slug, slug);
    assert.equal(w.description, null);
    assert.equal(w.defaultTextModel, null);
    assert.equal(w.defaultImageModel, null);
    assert.equal(w.defaultProviderSort, null);
    assert.equal(w.ioLoggingApiKeyIds, null);
    assert.equal(w.ioLoggingSamplingRate, 1);
    assert.equal(w.isDataDiscountLoggingEnabled, false);
    assert.equal(w.isObservabilityBroadcastEnabled, false);
    assert.equal(w.isObservabilityIoLoggingEnabled, false);
    const again = await call("workspacesGet", () => ctx.org.sdk.workspaces.get({ id: w.id }));
    assert.equal(again.data.defaultGuardrailId, w.defaultGuardrailId);
    const other = await createWs(ctx.org.sdk);
    assert.notEqual(other.defaultGuardrailId, w.defaultGuardrailId);
  });

  it("201 with every optional field", async () => {
    const w = await createWs(ctx.org.sdk, {
      description: "Models for the research team",
      defaultTextModel: "openai/gpt-4o",
      defaultImageModel: "openai/dall-e-3",
      defaultProviderSort: "price",
      disabledServerTools: ["openrouter:web_search"],
      ioLoggingApiKeyIds: [1, 2],
      ioLoggingSamplingRate: 0.25,
      isDataDiscountLoggingEnabled: true,
      isObservabilityBroadcastEnabled: true,
      isObservabilityIoLoggingEnabled: true,
    });
    assert.equal(w.description, "Models for the research team");
    assert.equal(w.defaultTextModel, "openai/gpt-4o");
    assert.equal(w.defaultImageModel, "openai/dall-e-3");
    assert.equal(w.defaultProviderSort, "price");
    assert.deepEqual(w.disabledServerTools, ["openrouter:web_search"]);
    assert.deepEqual(w.ioLoggingApiKeyIds, [1, 2]);
    assert.equal(w.ioLoggingSamplingRate, 0.25);
    assert.equal(w.isDataDiscountLoggingEnabled, true);
    assert.equal(w.isObservabilityBroadcastEnabled, true);
    assert.equal(w.isObservabilityIoLoggingEnabled, true);
  });

  it("400: slug taken, malformed slug, empty name, sampling rate out of range", async () => {
    const sdk = ctx.org.sdk;
    const taken = await createWs(sdk);
    const bad = (body, what) => fails("workspacesCreate", 400, () => sdk.workspaces.create({ createWorkspaceRequest: { name: "x", slug: uniq("ws"), ...body } }), what);
    let err = await bad({ slug: taken.slug }, "slug taken");
    assert.match(err.error.message, /slug/);
    err = await bad({ slug: "Not A Slug" }, "malformed slug");
    assert.match(err.error.message, /slug/);
    await bad({ slug: "default" }, "the default slug is taken");
    await bad({ slug: "a--b" }, "double hyphen");
    await bad({ slug: "s".repeat(51) }, "slug > 50");
    err = await bad({ name: "" }, "empty name");
    assert.match(err.error.message, /name/);
    await bad({ name: "n".repeat(101) }, "name > 100");
    err = await bad({ ioLoggingSamplingRate: 2 }, "sampling rate 2");
    assert.match(err.error.message, /io_logging_sampling_rate/);
    await bad({ description: "d".repeat(501) }, "description > 500");
    // Another organization may use the same slug.
    await createWs(ctx.foreign.sdk, { slug: taken.slug });
  });

  it("401 without a valid key", async () => {
    await fails("workspacesCreate", 401, () => ctx.anon.workspaces.create({ createWorkspaceRequest: { name: "x", slug: uniq("ws") } }));
  });

  it("403 for a regular key", async () => {
    const rc = await regularClient();
    await fails("workspacesCreate", 403, () => rc.workspaces.create({ createWorkspaceRequest: { name: "x", slug: uniq("ws") } }));
  });
});

describe("GET /workspaces/{id} (workspaces.get)", () => {
  it("by UUID or by slug", async () => {
    const w = await createWs(ctx.org.sdk);
    const byId = await call("workspacesGet", () => ctx.org.sdk.workspaces.get({ id: w.id }));
    const bySlug = await call("workspacesGet", () => ctx.org.sdk.workspaces.get({ id: w.slug }));
    assert.deepEqual(byId.data, bySlug.data);
    assert.equal(byId.data.name, w.name);
    const def = await defaultWorkspace(ctx.org.sdk);
    assert.equal(def.slug, "default");
  });

  it("404: unknown UUID, unknown slug, malformed id, another organization's workspace", async () => {
    const sdk = ctx.org.sdk;
    await fails("workspacesGet", 404, () => sdk.workspaces.get({ id: randomUUID() }), "unknown uuid");
    await fails("workspacesGet", 404, () => sdk.workspaces.get({ id: "no-such-workspace" }), "unknown slug");
    await fails("workspacesGet", 404, () => sdk.workspaces.get({ id: "Not A Slug!" }), "malformed");
    const theirs = await createWs(ctx.foreign.sdk);
    await fails("workspacesGet", 404, () => sdk.workspaces.get({ id: theirs.id }), "foreign by id");
    await fails("workspacesGet", 404, () => sdk.workspaces.get({ id: theirs.slug }), "foreign by slug");
  });

  it("401 without a valid key", async () => {
    await fails("workspacesGet", 401, () => ctx.anon.workspaces.get({ id: "default" }));
  });
});

describe("PATCH /workspaces/{id} (workspaces.update)", () => {
  it("updates the given fields only; null clears; by slug too", async () => {
    const sdk = ctx.org.sdk;
    const w = await createWs(sdk, { description: "before", defaultTextModel: "openai/gpt-4o" });
    let res = await call("workspacesUpdate", () => sdk.workspaces.update({ id: w.id, updateWorkspaceRequest: { name: "Renamed", isObservabilityBroadcastEnabled: true } }));
    assert.equal(res.data.name, "Renamed");
    assert.equal(res.data.isObservabilityBroadcastEnabled, true);
    assert.equal(res.data.description, "before", "absent = unchanged");
    assert.equal(res.data.defaultTextModel, "openai/gpt-4o");
    assert.equal(res.data.slug, w.slug);
    res = await call("workspacesUpdate", () => sdk.workspaces.update({ id: w.slug, updateWorkspaceRequest: { description: null, defaultTextModel: null } }));
    assert.equal(res.data.description, null);
    assert.equal(res.data.defaultTextModel, null);
    const slug = uniq("moved");
    res = await call("workspacesUpdate", () => sdk.workspaces.update({ id: w.id, updateWorkspaceRequest: { slug } }));
    assert.equal(res.data.slug, slug);
    const got = await call("workspacesGet", () => sdk.workspaces.get({ id: slug }));
    assert.equal(got.data.id, w.id);
    assert.equal(got.data.name, "Renamed");
    assert.match(got.data.updatedAt, RFC3339_UTC);
    const same = await call("workspacesUpdate", () => sdk.workspaces.update({ id: w.id, updateWorkspaceRequest: {} }));
    assert.equal(same.data.name, "Renamed");
  });

  it("400: malformed slug, slug taken, sampling rate out of range, empty name", async () => {
    const sdk = ctx.org.sdk;
    const a = await createWs(sdk);
    const b = await createWs(sdk);
    const upd = (body, what) => fails("workspacesUpdate", 400, () => sdk.workspaces.update({ id: a.id, updateWorkspaceRequest: body }), what);
    await upd({ slug: "Bad Slug" }, "malformed slug");
    await upd({ slug: b.slug }, "slug taken");
    await upd({ ioLoggingSamplingRate: 0 }, "sampling rate 0");
    await upd({ name: "" }, "empty name");
    const got = await call("workspacesGet", () => sdk.workspaces.get({ id: a.id }));
    assert.equal(got.data.slug, a.slug, "rejected updates change nothing");
  });

  it("401 without a valid key", async () => {
    await fails("workspacesUpdate", 401, () => ctx.anon.workspaces.update({ id: "default", updateWorkspaceRequest: { name: "x" } }));
  });

  it("403 for a regular key", async () => {
    const rc = await regularClient();
    await fails("workspacesUpdate", 403, () => rc.workspaces.update({ id: "default", updateWorkspaceRequest: { name: "x" } }));
  });

  it("404: unknown, another organization's", async () => {
    await fails("workspacesUpdate", 404, () => ctx.org.sdk.workspaces.update({ id: randomUUID(), updateWorkspaceRequest: { name: "x" } }), "unknown");
    const theirs = await createWs(ctx.foreign.sdk);
    await fails("workspacesUpdate", 404, () => ctx.org.sdk.workspaces.update({ id: theirs.id, updateWorkspaceRequest: { name: "hijacked" } }), "foreign");
    const still = await call("workspacesGet", () => ctx.foreign.sdk.workspaces.get({ id: theirs.id }));
    assert.equal(still.data.name, theirs.name);
  });
});

describe("DELETE /workspaces/{id} (workspaces.delete)", () => {
  it("{deleted: true}; then get → 404 and list omits it", async () => {
    const sdk = ctx.org.sdk;
    const w = await createWs(sdk);
    const res = await call("workspacesDelete", () => sdk.workspaces.delete({ id: w.slug }));
    assert.deepEqual({ ...res }, { deleted: true });
    await fails("workspacesGet", 404, () => sdk.workspaces.get({ id: w.id }), "deleted");
    const list = await call("workspacesList", () => sdk.workspaces.list({ limit: 100 }));
    assert.ok(!list.result.data.some((x) => x.id === w.id));
    await fails("workspacesDelete", 404, () => sdk.workspaces.delete({ id: w.id }), "already deleted");
  });

  it("deleting a workspace removes its guardrails and memberships and soft-deletes its destinations", async () => {
    const sdk = ctx.org.sdk;
    const w = await createWs(sdk);
    const member = await addMember(ctx, ctx.org.mgmtKey, {});
    await call("workspacesBulkAddMembers", () => sdk.workspaces.bulkAddMembers({ id: w.id, bulkAddWorkspaceMembersRequest: { userIds: [member.id] } }));
    const g = (await call("guardrailsCreate", () => sdk.guardrails.create({ createGuardrailRequest: { name: uniq("g"), workspaceId: w.id } }))).data;
    const d = (await call("observabilityCreate", () => sdk.observability.create({ createObservabilityDestinationRequest: { name: "hook", type: "webhook", config: { url: "https://hooks.example.com/x" }, workspaceId: w.id } }))).data;
    await call("workspacesDelete", () => sdk.workspaces.delete({ id: w.id }));
    await fails("guardrailsGet", 404, () => sdk.guardrails.get({ id: g.id }), "guardrail of a deleted workspace");
    await fails("observabilityGet", 404, () => sdk.observability.get({ id: d.id }), "destination of a deleted workspace");
    await fails("workspacesListMembers", 404, () => sdk.workspaces.listMembers({ id: w.id }), "members of a deleted workspace");
    const members = await call("organizationListMembers", () => sdk.organization.listMembers({ limit: 100 }));
    assert.ok(members.result.data.some((m) => m.id === member.id), "the user stays an organization member");
  });

  it("400 while the workspace holds an active key; allowed once the key is disabled", async () => {
    const sdk = ctx.org.sdk;
    const w = await createWs(sdk);
    const k = await createKey(sdk, { workspaceId: w.id });
    const err = await fails("workspacesDelete", 400, () => sdk.workspaces.delete({ id: w.id }), "active key");
    assert.ok(err.error.message.length > 0);
    await call("workspacesGet", () => sdk.workspaces.get({ id: w.id }));
    await call("apiKeysUpdate", () => sdk.apiKeys.update({ hash: k.data.hash, requestBody: { disabled: true } }));
    await call("workspacesDelete", () => sdk.workspaces.delete({ id: w.id }));
  });

  it("400 for the default workspace without confirm_default_workspace_deletion", async () => {
    const err = await fails("workspacesDelete", 400, () => ctx.org.sdk.workspaces.delete({ id: "default" }), "default workspace");
    assert.match(err.error.message, /confirm_default_workspace_deletion|default/);
    await fails("workspacesDelete", 400, () => ctx.org.sdk.workspaces.delete({ id: "default", confirmDefaultWorkspaceDeletion: false }), "confirm=false");
    await call("workspacesGet", () => ctx.org.sdk.workspaces.get({ id: "default" }));
  });

  it("401 without a valid key", async () => {
    await fails("workspacesDelete", 401, () => ctx.anon.workspaces.delete({ id: randomUUID() }));
  });

  it("403 for a regular key", async () => {
    const w = await createWs(ctx.org.sdk);
    const rc = await regularClient();
    await fails("workspacesDelete", 403, () => rc.workspaces.delete({ id: w.id }));
    await call("workspacesGet", () => ctx.org.sdk.workspaces.get({ id: w.id }));
  });

  it("404: unknown, another organization's (which survives)", async () => {
    await fails("workspacesDelete", 404, () => ctx.org.sdk.workspaces.delete({ id: randomUUID() }), "unknown");
    const theirs = await createWs(ctx.foreign.sdk);
    await fails("workspacesDelete", 404, () => ctx.org.sdk.workspaces.delete({ id: theirs.id }), "foreign");
    await call("workspacesGet", () => ctx.foreign.sdk.workspaces.get({ id: theirs.id }));
  });
});

describe("workspace members", () => {
  let org; // a dedicated organization, so member counts are exact
  const members = [];

  it("setup: an organization with three members (one admin)", async () => {
    org = await createOrg(ctx.server, uniq("members-org"));
    members.push(await addMember(ctx, org.mgmtKey, { role: "org:admin", first_name: "Ada", last_name: "Lovelace" }));
    members.push(await addMember(ctx, org.mgmtKey, {}));
    members.push(await addMember(ctx, org.mgmtKey, { role: "org:member" }));
  });

  it("GET members of the default workspace lists every organization member", async () => {
    const res = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: "default" }));
    assert.equal(res.result.totalCount, 3);
    assert.deepEqual(res.result.data.map((m) => m.userId).sort(), members.map((m) => m.id).sort());
    const def = await defaultWorkspace(org.sdk);
    for (const m of res.result.data) {
      assert.match(m.id, UUID);
      assert.equal(m.workspaceId, def.id);
      assert.match(m.createdAt, RFC3339_UTC);
      assert.equal(m.role, m.userId === members[0].id ? "admin" : "member");
    }
    const page = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: def.id, offset: 1, limit: 1 }));
    assert.equal(page.result.totalCount, 3);
    assert.deepEqual(page.result.data.map((m) => m.userId), [res.result.data[1].userId]);
  });

  it("bulk add: added_count counts new memberships; data lists the memberships of all requested ids; roles follow the organization role", async () => {
    const w = await createWs(org.sdk);
    let res = await call("workspacesBulkAddMembers", () => org.sdk.workspaces.bulkAddMembers({ id: w.id, bulkAddWorkspaceMembersRequest: { userIds: [members[0].id, members[1].id] } }));
    assert.equal(res.addedCount, 2);
    assert.equal(res.data.length, 2);
    for (const m of res.data) {
      assert.equal(m.workspaceId, w.id);
      assert.match(m.id, UUID);
      assert.equal(m.role, m.userId === members[0].id ? "admin" : "member");
    }
    res = await call("workspacesBulkAddMembers", () => org.sdk.workspaces.bulkAddMembers({ id: w.slug, bulkAddWorkspaceMembersRequest: { userIds: [members[1].id, members[2].id, members[2].id] } }));
    assert.equal(res.addedCount, 1, "already-members are not counted; duplicates count once");
    assert.deepEqual(res.data.map((m) => m.userId).sort(), [members[1].id, members[2].id].sort());
    const list = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: w.id }));
    assert.equal(list.result.totalCount, 3);
    assert.deepEqual(list.result.data.map((m) => m.userId).sort(), members.map((m) => m.id).sort());
  });

  it("bulk add to the default workspace is a no-op counted 0", async () => {
    const res = await call("workspacesBulkAddMembers", () => org.sdk.workspaces.bulkAddMembers({ id: "default", bulkAddWorkspaceMembersRequest: { userIds: [members[0].id] } }));
    assert.equal(res.addedCount, 0);
  });

  it("bulk add 400: a non-member (metadata.user_ids, nothing added), an empty list, more than 100 ids, an empty id", async () => {
    const w = await createWs(org.sdk);
    const stranger = "user_stranger_" + uniq("x");
    const add = (userIds, what) => fails("workspacesBulkAddMembers", 400, () => org.sdk.workspaces.bulkAddMembers({ id: w.id, bulkAddWorkspaceMembersRequest: { userIds } }), what);
    const err = await add([members[0].id, stranger], "non-member");
    assert.deepEqual(err.error.metadata?.user_ids, [stranger]);
    const list = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: w.id }));
    assert.equal(list.result.totalCount, 0, "nothing added");
    await add([], "empty list");
    await add(Array.from({ length: 101 }, (_, i) => `${members[0].id}-${i}`), "101 ids");
    await add([""], "empty id");
    // A member of another organization is not a member here.
    const theirs = await addMember(ctx, ctx.foreign.mgmtKey, {});
    const e2 = await add([theirs.id], "foreign member");
    assert.deepEqual(e2.error.metadata?.user_ids, [theirs.id]);
  });

  it("bulk remove: members holding an active key in the workspace block the whole call (400, metadata.user_ids, nobody removed)", async () => {
    const w = await createWs(org.sdk);
    const ids = members.map((m) => m.id);
    await call("workspacesBulkAddMembers", () => org.sdk.workspaces.bulkAddMembers({ id: w.id, bulkAddWorkspaceMembersRequest: { userIds: ids } }));
    const k = await createKey(org.sdk, { workspaceId: w.id, creatorUserId: members[1].id });
    const err = await fails("workspacesBulkRemoveMembers", 400, () => org.sdk.workspaces.bulkRemoveMembers({ id: w.id, bulkRemoveWorkspaceMembersRequest: { userIds: [members[0].id, members[1].id] } }), "active key");
    assert.deepEqual(err.error.metadata?.user_ids, [members[1].id]);
    let list = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: w.id }));
    assert.equal(list.result.totalCount, 3, "all or nothing: nobody removed");
    // Once the key is disabled the member may go.
    await call("apiKeysUpdate", () => org.sdk.apiKeys.update({ hash: k.data.hash, requestBody: { disabled: true } }));
    const res = await call("workspacesBulkRemoveMembers", () => org.sdk.workspaces.bulkRemoveMembers({ id: w.slug, bulkRemoveWorkspaceMembersRequest: { userIds: [members[0].id, members[1].id, members[1].id, "user_not_a_member"] } }));
    assert.equal(res.removedCount, 2, "non-members are skipped; duplicates count once");
    list = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: w.id }));
    assert.deepEqual(list.result.data.map((m) => m.userId), [members[2].id]);
    const again = await call("workspacesBulkRemoveMembers", () => org.sdk.workspaces.bulkRemoveMembers({ id: w.id, bulkRemoveWorkspaceMembersRequest: { userIds: [members[0].id] } }));
    assert.equal(again.removedCount, 0);
  });

  it("bulk remove 400: from the default workspace, an empty list, more than 100 ids, an empty id", async () => {
    const rm = (id, userIds, what) => fails("workspacesBulkRemoveMembers", 400, () => org.sdk.workspaces.bulkRemoveMembers({ id, bulkRemoveWorkspaceMembersRequest: { userIds } }), what);
    await rm("default", [members[2].id], "default workspace");
    const list = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: "default" }));
    assert.equal(list.result.totalCount, 3);
    const w = await createWs(org.sdk);
    await rm(w.id, [], "empty list");
    await rm(w.id, Array.from({ length: 101 }, (_, i) => `user_${i}`), "101 ids");
    await rm(w.id, [""], "empty id");
  });

  it("401 without a valid key", async () => {
    await fails("workspacesListMembers", 401, () => ctx.anon.workspaces.listMembers({ id: "default" }));
    await fails("workspacesBulkAddMembers", 401, () => ctx.anon.workspaces.bulkAddMembers({ id: "default", bulkAddWorkspaceMembersRequest: { userIds: ["u"] } }));
    await fails("workspacesBulkRemoveMembers", 401, () => ctx.anon.workspaces.bulkRemoveMembers({ id: "default", bulkRemoveWorkspaceMembersRequest: { userIds: ["u"] } }));
  });

  it("403 for a regular key", async () => {
    const rc = client(ctx.server, (await createKey(org.sdk)).key);
    const w = await createWs(org.sdk);
    await fails("workspacesListMembers", 403, () => rc.workspaces.listMembers({ id: w.id }));
    await fails("workspacesBulkAddMembers", 403, () => rc.workspaces.bulkAddMembers({ id: w.id, bulkAddWorkspaceMembersRequest: { userIds: [members[0].id] } }));
    await fails("workspacesBulkRemoveMembers", 403, () => rc.workspaces.bulkRemoveMembers({ id: w.id, bulkRemoveWorkspaceMembersRequest: { userIds: [members[0].id] } }));
    const list = await call("workspacesListMembers", () => org.sdk.workspaces.listMembers({ id: w.id }));
    assert.equal(list.result.totalCount, 0, "a 403 changes nothing");
  });

  it("404: unknown workspace, another organization's workspace", async () => {
    const theirs = await createWs(ctx.foreign.sdk);
    for (const id of [randomUUID(), theirs.id, theirs.slug]) {
      await fails("workspacesListMembers", 404, () => org.sdk.workspaces.listMembers({ id }));
      await fails("workspacesBulkAddMembers", 404, () => org.sdk.workspaces.bulkAddMembers({ id, bulkAddWorkspaceMembersRequest: { userIds: [members[0].id] } }));
      await fails("workspacesBulkRemoveMembers", 404, () => org.sdk.workspaces.bulkRemoveMembers({ id, bulkRemoveWorkspaceMembersRequest: { userIds: [members[0].id] } }));
    }
  });

  it("400 for out-of-range paging of members (raw)", async () => {
    assertErrorBody(await api(ctx.server, "GET", "/workspaces/default/members?limit=101", { key: org.mgmtKey }), 400, "limit=101");
  });
});
