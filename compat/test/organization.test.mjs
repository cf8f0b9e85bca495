// Organization members: GET /organization/members through the official client
// (organization.listMembers), and our extension operations POST
// /organization/members and DELETE /organization/members/{user_id} through
// fetch (the SDK has no method for them).
//
// Typed statuses not exercised here:
// - 500: no input may cause a 500 (API.md §1); not faked.
// - 404 on organizationListMembers: the operation has no path parameter and no
//   filter, and the caller's organization always exists (a management key
//   belongs to exactly one organization), so no request can produce a 404;
//   API.md §3 lists 400 401 only.

import assert from "node:assert/strict";
import { describe, it } from "node:test";

import {
  api,
  assertErrorBody,
  call,
  client,
  createKey,
  createOrg,
  fails,
  failsUntyped,
  uniq,
  useServer,
} from "./harness.mjs";

const ctx = useServer();

describe("organization members", () => {
  let org;
  let before0;
  const added = [];

  it("setup: a dedicated organization", async () => {
    org = await createOrg(ctx.server, uniq("people"));
    const res = await call("organizationListMembers", () => org.sdk.organization.listMembers());
    before0 = res.result.totalCount;
    assert.equal(res.result.data.length, before0);
  });

  it("POST /organization/members (extension): 201 with the member; role defaults to org:member; id generated unless given", async () => {
    let res = await api(ctx.server, "POST", "/organization/members", { key: org.mgmtKey, body: { email: "ada@example.com", first_name: "Ada", last_name: "Lovelace", role: "org:admin" } });
    assert.equal(res.status, 201, res.text);
    const ada = res.json.data;
    assert.match(ada.id, /^user_/);
    assert.deepEqual({ ...ada, id: undefined }, { id: undefined, email: "ada@example.com", first_name: "Ada", last_name: "Lovelace", role: "org:admin" });
    added.push(ada);
    res = await api(ctx.server, "POST", "/organization/members", { key: org.mgmtKey, body: { email: "grace@example.com", id: "user_grace_h" } });
    assert.equal(res.status, 201, res.text);
    assert.deepEqual(res.json.data, { id: "user_grace_h", email: "grace@example.com", first_name: null, last_name: null, role: "org:member" });
    added.push(res.json.data);
    res = await api(ctx.server, "POST", "/organization/members", { key: org.mgmtKey, body: { email: "alan@example.com", role: "org:member" } });
    assert.equal(res.status, 201, res.text);
    added.push(res.json.data);
  });

  it("GET /organization/members: every member, oldest first, with total_count and paging", async () => {
    const res = await call("organizationListMembers", () => org.sdk.organization.listMembers());
    assert.equal(res.result.totalCount, before0 + 3);
    const mine = res.result.data.slice(before0);
    assert.deepEqual(mine.map((m) => ({ id: m.id, email: m.email, firstName: m.firstName, lastName: m.lastName, role: m.role })),
      added.map((m) => ({ id: m.id, email: m.email, firstName: m.first_name, lastName: m.last_name, role: m.role })));
    const page = await call("organizationListMembers", () => org.sdk.organization.listMembers({ offset: before0 + 1, limit: 1 }));
    assert.equal(page.result.totalCount, before0 + 3);
    assert.deepEqual(page.result.data.map((m) => m.id), [added[1].id]);
  });

  it("members do not leak across organizations; the same email may join another organization", async () => {
    const theirs = await call("organizationListMembers", () => ctx.foreign.sdk.organization.listMembers({ limit: 100 }));
    assert.ok(!theirs.result.data.some((m) => added.some((a) => a.id === m.id)));
    const res = await api(ctx.server, "POST", "/organization/members", { key: ctx.foreign.mgmtKey, body: { email: "ada@example.com" } });
    assert.equal(res.status, 201, res.text);
  });

  it("POST 400: email taken, id taken, malformed email, missing email, unknown role, unknown field", async () => {
    const post = (body) => api(ctx.server, "POST", "/organization/members", { key: org.mgmtKey, body });
    let e = assertErrorBody(await post({ email: "ada@example.com" }), 400, "email taken");
    assert.match(e.message, /email/);
    assertErrorBody(await post({ email: "other@example.com", id: "user_grace_h" }), 400, "id taken");
    e = assertErrorBody(await post({ email: "not-an-email" }), 400, "malformed email");
    assert.match(e.message, /email/);
    assertErrorBody(await post({ first_name: "No" }), 400, "missing email");
    e = assertErrorBody(await post({ email: "r@example.com", role: "org:owner" }), 400, "unknown role");
    assert.match(e.message, /role/);
    e = assertErrorBody(await post({ email: "f@example.com", nickname: "x" }), 400, "unknown field");
    assert.match(e.message, /nickname/);
    const res = await call("organizationListMembers", () => org.sdk.organization.listMembers());
    assert.equal(res.result.totalCount, before0 + 3, "nothing added");
  });

  it("POST 401 without a valid key; a regular key is refused (403)", async () => {
    assertErrorBody(await api(ctx.server, "POST", "/organization/members", { body: { email: "x@example.com" } }), 401, "no key");
    const regular = await createKey(org.sdk);
    assertErrorBody(await api(ctx.server, "POST", "/organization/members", { key: regular.key, body: { email: "x@example.com" } }), 403, "regular key");
  });

  it("DELETE /organization/members/{user_id} (extension): {deleted: true}; the member leaves lists, workspaces and guardrails", async () => {
    const sdk = org.sdk;
    const slug = uniq("ws");
    const ws = (await call("workspacesCreate", () => sdk.workspaces.create({ createWorkspaceRequest: { name: slug, slug } }))).data;
    await call("workspacesBulkAddMembers", () => sdk.workspaces.bulkAddMembers({ id: ws.id, bulkAddWorkspaceMembersRequest: { userIds: [added[2].id] } }));
    const g = (await call("guardrailsCreate", () => sdk.guardrails.create({ createGuardrailRequest: { name: uniq("g") } }))).data;
    await call("guardrailsBulkAssignMembers", () => sdk.guardrails.bulkAssignMembers({ id: g.id, bulkAssignMembersRequest: { memberUserIds: [added[2].id] } }));
    const res = await api(ctx.server, "DELETE", `/organization/members/${added[2].id}`, { key: org.mgmtKey });
    assert.equal(res.status, 200, res.text);
    assert.deepEqual(res.json, { deleted: true });
    const list = await call("organizationListMembers", () => sdk.organization.listMembers());
    assert.ok(!list.result.data.some((m) => m.id === added[2].id));
    const wsMembers = await call("workspacesListMembers", () => sdk.workspaces.listMembers({ id: ws.id }));
    assert.equal(wsMembers.result.totalCount, 0);
    const assigned = await call("guardrailsListGuardrailMemberAssignments", () => sdk.guardrails.listGuardrailMemberAssignments({ id: g.id }));
    assert.equal(assigned.result.totalCount, 0);
    assertErrorBody(await api(ctx.server, "DELETE", `/organization/members/${added[2].id}`, { key: org.mgmtKey }), 404, "already removed");
  });

  it("DELETE 400 while the user has an active key; allowed once it is disabled", async () => {
    const k = await createKey(org.sdk, { creatorUserId: added[1].id });
    assertErrorBody(await api(ctx.server, "DELETE", `/organization/members/${added[1].id}`, { key: org.mgmtKey }), 400, "active key");
    await call("apiKeysUpdate", () => org.sdk.apiKeys.update({ hash: k.data.hash, requestBody: { disabled: true } }));
    const res = await api(ctx.server, "DELETE", `/organization/members/${added[1].id}`, { key: org.mgmtKey });
    assert.equal(res.status, 200, res.text);
  });

  it("DELETE 404 for an unknown user or another organization's member; 401 without a valid key", async () => {
    assertErrorBody(await api(ctx.server, "DELETE", "/organization/members/user_nobody", { key: org.mgmtKey }), 404, "unknown");
    assertErrorBody(await api(ctx.server, "DELETE", `/organization/members/${added[0].id}`, { key: ctx.foreign.mgmtKey }), 404, "foreign");
    assertErrorBody(await api(ctx.server, "DELETE", `/organization/members/${added[0].id}`), 401, "no key");
    const list = await call("organizationListMembers", () => org.sdk.organization.listMembers());
    assert.ok(list.result.data.some((m) => m.id === added[0].id), "a refused delete changes nothing");
  });

  it("GET 401 without a valid key", async () => {
    await fails("organizationListMembers", 401, () => ctx.anon.organization.listMembers());
  });

  it("GET 400 for out-of-range paging; 403 for a regular key (statuses the SDK does not type for this operation)", async () => {
    await failsUntyped(400, () => org.sdk.organization.listMembers({ limit: 101 }), "limit 101");
    await failsUntyped(400, () => org.sdk.organization.listMembers({ offset: -1 }), "offset -1");
    const regular = await createKey(org.sdk);
    await failsUntyped(403, () => client(ctx.server, regular.key).organization.listMembers(), "regular key");
  });
});
