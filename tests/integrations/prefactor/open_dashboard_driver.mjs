// Runs the open dashboard's own sync engine (server/sync.mjs, copied beside this file)
// against an agentfolio server until it has paged back everything, then prints its
// snapshot and every warning it logged as one JSON object into OUT.
//
//   node open_dashboard_driver.mjs URL TOKEN DATA_DIR OUT
import { writeFileSync } from "node:fs";
import { createSync } from "./server/sync.mjs";

const [url, token, dataDir, out] = process.argv.slice(2);
const warnings = [];
const logged = [];
console.warn = (...args) => warnings.push(args.map(String).join(" "));
console.log = (...args) => logged.push(args.map(String).join(" "));

const sync = createSync({ getToken: () => token, getHost: () => url, dataDir });
const everything = { start: "1970-01-01T00:00:00.000Z", end: "9999-12-31T23:59:59.999Z", agentId: "all" };

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
let rounds = 0;
let snapshot = sync.snapshot(everything);
for (; rounds < 40; rounds++) {
  const before = snapshot.meta.lastSyncAt;
  sync.onConfigChanged();
  const deadline = Date.now() + 120_000;
  while (sync.snapshot(everything).meta.lastSyncAt === before && Date.now() < deadline) await sleep(20);
  await sleep(1100); // lastSyncAt has millisecond resolution: never read one round's stamp as the next's
  snapshot = sync.snapshot(everything);
  const finished = snapshot.instances.filter((i) => i.status !== "active").length;
  if (snapshot.meta.historyComplete && snapshot.meta.detailChecked >= finished && snapshot.alerts !== null) break;
}
writeFileSync(out, JSON.stringify({ rounds: rounds + 1, warnings, logged, snapshot }));
process.exit(0);
