// Entry point of `npm test`: runs the resource test files two at a time
// (each starts a server of its own, on a database of its own; node --test
// sorts the files it is given, which would run coverage.test.mjs
// first), then coverage.test.mjs over the records they wrote, then the
// suites of other official clients (CLIENT_TEST_FILES). Both share one
// run directory (the server binary, built once, and the coverage records),
// removed at the end. Extra arguments are passed to both node --test runs,
// e.g. `npm test -- --test-reporter=spec`.

import { spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const runDir = fs.mkdtempSync(path.join(os.tmpdir(), "gatehouse-compat-run-"));
const env = { ...process.env, GATEHOUSE_COMPAT_RUN_DIR: runDir };
delete env.NODE_TEST_CONTEXT;
const extra = process.argv.slice(2);

const { RESOURCE_TEST_FILES } = await import("./test/harness.mjs");

const run = (files) => spawnSync(process.execPath, ["--test", "--test-concurrency=2", ...extra, ...files.map((f) => path.join("test", f))], {
  cwd: here,
  env,
  stdio: "inherit",
});

// Suites of other official clients against the gateway: outside the
// @openrouter/sdk coverage table, run after it.
const CLIENT_TEST_FILES = ["openai.test.mjs", "native.test.mjs", "anthropic.test.mjs", "aisdk.test.mjs", "langchain.test.mjs", "routing.test.mjs"];

let status = 0;
try {
  const resources = run(RESOURCE_TEST_FILES);
  const coverage = run(["coverage.test.mjs"]);
  const clients = run(CLIENT_TEST_FILES);
  status = resources.status || coverage.status || clients.status
    || (resources.signal || coverage.signal || clients.signal ? 1 : 0);
} finally {
  fs.rmSync(runDir, { recursive: true, force: true });
}
process.exit(status);
