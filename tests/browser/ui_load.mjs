// The live page on a job with hundreds of tasks, in Debian's Chromium
// (playwright-core). Used by tests/e2e/test_web_ui.py (mode "check": every
// task row appears, follows its state and ends SUCCEEDED) and by
// bench/web_ui_scale.py (mode "measure": what keeping the page open costs
// the browser and the wire). The job's tasks wait on a lock held by the
// process cfg.gate_pid; killing it releases them all at once.
//   node ui_load.mjs '<json>'   json: {url, app_id, n, mode, chromium, artifacts, gate_pid, seconds}
// Prints one JSON line; exits 1 with the reason when a check fails.
import fs from "node:fs";
import path from "node:path";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 180000;
if (cfg.artifacts) fs.mkdirSync(cfg.artifacts, { recursive: true });

const b = await launch(cfg, { ignoreConsole: /Failed to load resource/ });
const { page } = b;

// Every answer to the page's job poll: its status and body size.
const polls = [];
page.on("response", async (r) => {
  if (!/\/v1\/job$/.test(new URL(r.url()).pathname)) return;
  let bytes = 0;
  if (r.status() === 200) {
    try { bytes = (await r.body()).length; } catch { bytes = 0; }
  }
  polls.push({ t: Date.now(), status: r.status(), bytes });
});

let step = "start";

// Rows of the task table in state `state` (data-state is set with the row).
async function rowsIn(state) {
  return page.locator(`tr.task[data-state="${state}"]`).count();
}

async function waitRows(state, n, what) {
  step = what;
  const end = Date.now() + T;
  for (;;) {
    const have = await rowsIn(state);
    if (have === n) return;
    if (Date.now() > end) throw new Error(`${have} of ${n} rows ${state}`);
    await page.waitForTimeout(250);
  }
}

async function openAndWaitRunning() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  await page.locator("#app-id").filter({ hasText: cfg.app_id }).waitFor({ timeout: T });
  await waitRows("RUNNING", cfg.n, `all ${cfg.n} rows RUNNING`);
  step = "the role header";
  const head = await page.locator("tr.role-head th").first().textContent();
  check(new RegExp(`^worker — ${cfg.n} tasks: ${cfg.n} RUNNING$`).test(head), `role header: ${head}`);
}

// Main-thread time the page spent (scripts, layout, style) over a window.
async function measureWindow(seconds) {
  const cdp = await page.context().newCDPSession(page);
  await cdp.send("Performance.enable");
  const metric = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics.map((m) => [m.name, m.value]));
  const before = await metric();
  const from = Date.now();
  // the bench samples the coordinator's CPU time between this line and the result
  console.log(JSON.stringify({ window: "start" }));
  await page.waitForTimeout(seconds * 1000);
  const after = await metric();
  const window = polls.filter((p) => p.t >= from);
  return {
    seconds,
    busy_s: after.TaskDuration - before.TaskDuration,
    script_s: after.ScriptDuration - before.ScriptDuration,
    layout_s: after.LayoutDuration - before.LayoutDuration + after.RecalcStyleDuration - before.RecalcStyleDuration,
    heap_mb: after.JSHeapUsedSize / (1 << 20),
    dom_nodes: after.Nodes,
    polls: window.length,
    polls_304: window.filter((p) => p.status === 304).length,
    bytes: window.reduce((a, p) => a + p.bytes, 0),
    largest_body: Math.max(0, ...window.map((p) => p.bytes)),
  };
}

async function check_mode() {
  await openAndWaitRunning();
  await shot("running");
  step = "release the tasks";
  process.kill(cfg.gate_pid, "SIGTERM");
  await waitRows("SUCCEEDED", cfg.n, `all ${cfg.n} rows SUCCEEDED`);
  step = "job SUCCEEDED";
  await page.locator("#final-status").filter({ hasText: "SUCCEEDED" }).waitFor({ timeout: T });
  const counts = await page.locator("#task-counts").textContent();
  check(counts === `${cfg.n}: ${cfg.n} SUCCEEDED`, `task counts: ${counts}`);
  await shot("done");
  const rows = await page.locator("tr.task").count();
  check(rows === cfg.n, `${rows} rows for ${cfg.n} tasks`);
  return { rows, polls: polls.length };
}

async function measure_mode() {
  await openAndWaitRunning();
  return await measureWindow(cfg.seconds || 30);
}

const shot = (name) => (cfg.artifacts ? page.screenshot({ path: path.join(cfg.artifacts, `many-${name}.png`) }) : null);
await finish(b, () => (cfg.mode === "measure" ? measure_mode() : check_mode()), { step: () => step, shot });
