// Lists every key of an organization with the official client, walking the
// offsets as its paginators do (offset += the page's length until a page
// comes back empty; @openrouter/sdk 1.3.19's apiKeys.list has no page
// iterator of its own, its guardrailsList and the others walk this way),
// and prints how long the whole list and its slowest page took. Run by
// bench/depth.sh:
//
//   node compat/paginate-keys.mjs SERVER_URL MANAGEMENT_KEY [EXPECTED_KEYS]
import { OpenRouter } from "@openrouter/sdk";

const [server, apiKey, expected] = process.argv.slice(2);
if (!server || !apiKey) {
  console.error("usage: node compat/paginate-keys.mjs SERVER_URL MANAGEMENT_KEY [EXPECTED_KEYS]");
  process.exit(2);
}
const sdk = new OpenRouter({ apiKey, serverURL: server + "/api/v1", retryConfig: { strategy: "none" } });
const seen = new Set();
let offset = 0;
let pages = 0;
let slowest = 0;
const start = performance.now();
for (;;) {
  const t = performance.now();
  const page = await sdk.apiKeys.list({ offset });
  slowest = Math.max(slowest, performance.now() - t);
  if (page.data.length === 0) break;
  for (const k of page.data) seen.add(k.hash);
  offset += page.data.length;
  pages++;
}
const total = (performance.now() - start) / 1000;
if (seen.size !== offset) {
  console.error(`listed ${offset} keys but ${seen.size} distinct: a key came twice`);
  process.exit(1);
}
if (expected && Number(expected) !== seen.size) {
  console.error(`listed ${seen.size} keys, want ${expected}`);
  process.exit(1);
}
console.log(`${seen.size} keys in ${pages} pages: ${total.toFixed(1)} s, ${((total * 1000) / Math.max(pages, 1)).toFixed(1)} ms a page on average, the slowest ${slowest.toFixed(0)} ms`);
