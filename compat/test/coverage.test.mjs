// Checks the coverage claim of the suite instead of asserting it by hand:
//
// 1. OPERATIONS (harness.mjs) agrees with the SDK itself: for each SDK
//    function, its method and path, its success status and the error
//    statuses it types (the M.json / M.jsonErr lists of esm/funcs/<op>.js).
// 2. Every operation of API.md §3 (but the two extensions, which the SDK does
//    not have and which organization.test.mjs calls with fetch) is in
//    OPERATIONS, and every other operation of OPERATIONS is marked
//    beyondApiMd (the client's calls that issue #12 adds).
// 3. The records the other test files wrote at run time (each successful
//    `call` and each typed `fails` appends (operation, status)) cover, for
//    every operation, the success status and every typed error status, except
//    the documented EXCLUSIONS.
//
// Run it last (npm test lists it last). If the records of some test file are
// missing (this file run alone, or first), it runs those files itself.

import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import fs from "node:fs";
import path from "node:path";
import { describe, it } from "node:test";

import {
  COMPAT_DIR,
  COVERAGE_DIR,
  EXCLUSIONS,
  OPERATIONS,
  REPO_ROOT,
  RESOURCE_TEST_FILES,
  RUN_DIR,
  SDK_DIR,
  client,
  isExcluded,
} from "./harness.mjs";

// The operations of API.md §3 reached through the SDK (method and path under
// /api/v1). If a copy of API.md is found, its tables are parsed as well.
const API_ROUTES = [
  "GET /key", "GET /keys", "POST /keys", "GET /keys/{hash}", "PATCH /keys/{hash}", "DELETE /keys/{hash}",
  "POST /auth/keys/code", "POST /auth/keys",
  "GET /workspaces", "POST /workspaces", "GET /workspaces/{id}", "PATCH /workspaces/{id}", "DELETE /workspaces/{id}",
  "GET /workspaces/{id}/members", "POST /workspaces/{id}/members/add", "POST /workspaces/{id}/members/remove",
  "GET /guardrails", "POST /guardrails", "GET /guardrails/{id}", "PATCH /guardrails/{id}", "DELETE /guardrails/{id}",
  "GET /guardrails/{id}/assignments/keys", "POST /guardrails/{id}/assignments/keys", "POST /guardrails/{id}/assignments/keys/remove",
  "GET /guardrails/{id}/assignments/members", "POST /guardrails/{id}/assignments/members", "POST /guardrails/{id}/assignments/members/remove",
  "GET /guardrails/assignments/keys", "GET /guardrails/assignments/members",
  "GET /observability/destinations", "POST /observability/destinations", "GET /observability/destinations/{id}",
  "PATCH /observability/destinations/{id}", "DELETE /observability/destinations/{id}",
  "GET /organization/members",
];

function findApiMd() {
  const candidates = [
    process.env.GATEHOUSE_API_MD,
    path.join(REPO_ROOT, "API.md"),
    path.join(REPO_ROOT, "docs", "API.md"),
    path.join(REPO_ROOT, "..", "shared", "API.md"),
  ].filter(Boolean);
  return candidates.find((p) => fs.existsSync(p));
}

function readRecords() {
  const seen = {};
  const done = new Set();
  if (!fs.existsSync(COVERAGE_DIR)) return { seen, done };
  for (const f of fs.readdirSync(COVERAGE_DIR)) {
    if (f.endsWith(".done")) done.add(f.slice(0, -".done".length));
    if (!f.endsWith(".jsonl")) continue;
    for (const line of fs.readFileSync(path.join(COVERAGE_DIR, f), "utf8").split("\n")) {
      if (!line.trim()) continue;
      const { op, status } = JSON.parse(line);
      seen[op] ??= {};
      seen[op][status] ??= new Set();
      seen[op][status].add(f.replace(/\.jsonl$/, ""));
    }
  }
  return { seen, done };
}

function runFiles(files) {
  return new Promise((resolve) => {
    const env = { ...process.env, GATEHOUSE_COMPAT_RUN_DIR: RUN_DIR };
    delete env.NODE_TEST_CONTEXT;
    const child = spawn(process.execPath, ["--test", "--test-concurrency=1", "--test-reporter=dot", ...files.map((f) => path.join("test", f))], {
      cwd: COMPAT_DIR,
      env,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let out = "";
    child.stdout.on("data", (d) => (out += d));
    child.stderr.on("data", (d) => (out += d));
    child.on("exit", (code) => resolve({ code, out }));
  });
}

describe("coverage of API.md §3 through the SDK", () => {
  it("OPERATIONS agrees with the SDK's own sources (route, success status, typed error statuses)", () => {
    const problems = [];
    for (const [op, spec] of Object.entries(OPERATIONS)) {
      let file = path.join(SDK_DIR, "esm", "funcs", `${op}.js`);
      if (!fs.existsSync(file)) {
        problems.push(`${op}: no ${file}`);
        continue;
      }
      if (spec.aliasOf) {
        // An alias re-exports another function: the route and statuses are its.
        const alias = fs.readFileSync(file, "utf8");
        if (!new RegExp(`export const ${op} = ${spec.aliasOf};`).test(alias)) problems.push(`${op}: not an alias of ${spec.aliasOf}`);
        file = path.join(SDK_DIR, "esm", "funcs", `${spec.aliasOf}.js`);
      }
      const src = fs.readFileSync(file, "utf8");
      const method = /method: "([A-Z]+)"/.exec(src)?.[1];
      const route = /pathToFunc\("([^"]+)"\)/.exec(src)?.[1];
      if (`${method} ${route}` !== spec.route) problems.push(`${op}: SDK route ${method} ${route}, table ${spec.route}`);
      const success = [...src.matchAll(/M\.json\((\d+),/g)].map((m) => Number(m[1]));
      if (success.length !== 1 || success[0] !== spec.success) problems.push(`${op}: SDK success ${success}, table ${spec.success}`);
      const typed = [...src.matchAll(/M\.jsonErr\((\d+),/g)].map((m) => Number(m[1])).sort();
      if (JSON.stringify(typed) !== JSON.stringify([...spec.errors].sort())) problems.push(`${op}: SDK types ${typed}, table ${spec.errors}`);
      const c = client({ apiURL: "http://127.0.0.1:1/api/v1" }, "unused");
      const parts = spec.call.split(".");
      const owner = parts.slice(0, -1).reduce((o, k) => o?.[k], c);
      if (typeof owner?.[parts.at(-1)] !== "function") problems.push(`${op}: the SDK has no method ${spec.call}`);
    }
    assert.deepEqual(problems, []);
  });

  it("every operation of API.md §3 but the two extensions is in OPERATIONS", (t) => {
    // Operations beyond §3 (beyondApiMd) are not §3's.
    const routes = new Set(Object.values(OPERATIONS).filter((s) => !s.beyondApiMd).map((s) => s.route));
    assert.deepEqual(API_ROUTES.filter((r) => !routes.has(r)), [], "operations without an SDK function in the table");
    const apiMd = findApiMd();
    if (!apiMd) {
      t.diagnostic("API.md not found; checked against the built-in list of §3 routes only");
      return;
    }
    const text = fs.readFileSync(apiMd, "utf8");
    const s3 = text.slice(text.indexOf("## 3. Operations"), text.indexOf("### Operations endpoints"));
    const parsed = [];
    for (const line of s3.split("\n")) {
      const m = /^\|[^|]*\|\s*(GET|POST|PUT|PATCH|DELETE) (\/[^\s|]+)\s*\|/.exec(line);
      if (!m) continue;
      if (/extension/.test(line)) continue;
      parsed.push(`${m[1]} ${m[2]}`);
    }
    assert.ok(parsed.length >= 30, `parsed too few routes from ${apiMd}: ${parsed.length}`);
    assert.deepEqual(parsed.filter((r) => !routes.has(r)), [], `routes of ${apiMd} §3 missing from OPERATIONS`);
    // Operations beyond §3 (issue #12: the rest of the client's calls) say so.
    const contracted = Object.values(OPERATIONS).filter((s) => !s.beyondApiMd).map((s) => s.route);
    assert.deepEqual(contracted.filter((r) => !parsed.includes(r)), [], `OPERATIONS routes not in ${apiMd} §3 (mark those beyond it beyondApiMd)`);
    assert.deepEqual(Object.values(OPERATIONS).filter((s) => s.beyondApiMd && parsed.includes(s.route)).map((s) => s.route), [],
      `OPERATIONS marked beyondApiMd that ${apiMd} §3 lists`);
  });

  it("exclusions name statuses the SDK types, each with a reason", () => {
    for (const [op, statuses] of Object.entries(EXCLUSIONS)) {
      if (op === "*") continue;
      assert.ok(OPERATIONS[op], `EXCLUSIONS names unknown operation ${op}`);
      for (const [status, reason] of Object.entries(statuses)) {
        assert.ok(OPERATIONS[op].errors.includes(Number(status)), `${op} does not type ${status}`);
        assert.ok(reason.length > 20, `${op} ${status}: give a reason`);
      }
    }
  });

  it("every operation was exercised for success and for each typed error status (but the exclusions)", { timeout: 20 * 60_000 }, async (t) => {
    let { seen, done } = readRecords();
    const missingFiles = RESOURCE_TEST_FILES.filter((f) => !done.has(f));
    if (missingFiles.length) {
      t.diagnostic(`no records of ${missingFiles.join(", ")} in ${COVERAGE_DIR}: running them now`);
      const { code, out } = await runFiles(missingFiles);
      t.diagnostic(`they exited with ${code}`);
      if (code !== 0) t.diagnostic(out.split("\n").slice(-60).join("\n"));
      ({ seen, done } = readRecords());
    }
    const rows = [];
    const missing = [];
    for (const [op, spec] of Object.entries(OPERATIONS)) {
      const cells = [];
      for (const status of [spec.success, ...spec.errors]) {
        if (seen[op]?.[status]) cells.push(`${status}`);
        else if (isExcluded(op, status)) cells.push(`(${status} excluded)`);
        else {
          cells.push(`${status} MISSING`);
          missing.push(`${op} ${status}`);
        }
      }
      rows.push(`${op.padEnd(42)} ${cells.join(" ")}`);
    }
    t.diagnostic(`coverage (operation: statuses exercised):\n${rows.join("\n")}`);
    for (const [op, statuses] of Object.entries(EXCLUSIONS)) {
      if (op === "*") continue;
      for (const status of Object.keys(statuses)) {
        if (seen[op]?.[status]) t.diagnostic(`note: ${op} ${status} is excluded but was exercised; the exclusion may be stale`);
      }
    }
    assert.deepEqual(missing, [], `operation/status pairs not exercised (a failing test upstream records nothing): ${missing.join(", ")}`);
  });
});
