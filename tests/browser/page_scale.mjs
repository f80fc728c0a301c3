// The page of a job of hundreds of tasks (issue 26), in Debian's Chromium
// (playwright-core): per-role summary lines and one page of rows, never every
// task; prev/next and the role menu move through the pages; a task's change
// (a failure, then its in-place restart) updates its row where it is. Run by
// tests/e2e/test_page_scale.py, which runs the job (simulated executors):
//   node page_scale.mjs '<json>'   json: {url, app_id, n, rows, chromium, artifacts}
// Prints {"ready": true} once the paging is checked, then waits for a line on
// stdin (the caller has failed worker:0) and checks the change shows.
// Prints one JSON line; exits 1 with the reason when a check fails.
import fs from "node:fs";
import path from "node:path";
import readline from "node:readline";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 30000;
const ROWS = cfg.rows || 100;
fs.mkdirSync(cfg.artifacts, { recursive: true });

const b = await launch(cfg, { ignoreConsole: /Failed to load resource/ });
const { page } = b;
let step = "start";
const shot = (name) => page.screenshot({ path: path.join(cfg.artifacts, `page-scale-${name}.png`), fullPage: true });
const lines = readline.createInterface({ input: process.stdin })[Symbol.asyncIterator]();

const rowKeys = () => page.locator("#tasks tr.task").evaluateAll((trs) => trs.map((tr) => tr.dataset.task));
const row = (key) => page.locator(`#tasks tr.task[data-task="${key}"]`);

// the table holds exactly the page [first, first + ROWS) of worker's tasks
async function expectPage(first) {
  const last = Math.min(first + ROWS, cfg.n) - 1;
  await row(`worker:${first}`).waitFor({ timeout: T });
  await row(`worker:${last}`).waitFor({ timeout: T });
  await page.waitForFunction((n) => document.querySelectorAll("#tasks tr.task").length === n, last - first + 1,
                             { timeout: T });
  const keys = await rowKeys();
  const want = Array.from({ length: last - first + 1 }, (_, i) => `worker:${first + i}`);
  check(JSON.stringify(keys) === JSON.stringify(want), `rows ${keys[0]}..${keys[keys.length - 1]} (${keys.length})`);
  const info = await page.locator("#page-info").textContent();
  check(info === `tasks ${first + 1}–${last + 1} of ${cfg.n}`, `the pager says: ${info}`);
}

await finish(b, async () => {
  step = "open the page";
  const t0 = Date.now();
  await page.goto(cfg.url, { timeout: T });
  await page.locator("#app-id").filter({ hasText: cfg.app_id }).waitFor({ timeout: T });
  step = "the role's summary line";
  const summary = page.locator("#role-summary li", { hasText: `worker — ${cfg.n} tasks: ${cfg.n} RUNNING` });
  await summary.waitFor({ timeout: T });
  check(await page.locator("#paging").isVisible(), "the paging is hidden");
  check(await page.locator("#task-counts").textContent() === `${cfg.n}: ${cfg.n} RUNNING`,
        `the job's task count says: ${await page.locator("#task-counts").textContent()}`);
  step = "the first page";
  await expectPage(0);
  const firstRender = Date.now() - t0;
  check(await page.locator("#page-prev").isDisabled(), "prev is enabled on the first page");
  // the table's elements: a row is 11 (the timeline below lists the events, not the tasks)
  const nodes = await page.evaluate(() => document.getElementById("tasks").getElementsByTagName("*").length);
  check(nodes < 12 * ROWS + 30, `the task table has ${nodes} elements`);
  step = "next";
  await page.locator("#page-next").click();
  await expectPage(ROWS);
  step = "the last page";
  while (!(await page.locator("#page-next").isDisabled())) {
    const info = await page.locator("#page-info").textContent();
    await page.locator("#page-next").click();
    await page.waitForFunction((was) => document.getElementById("page-info").textContent !== was &&
                               !/loading/.test(document.getElementById("page-info").textContent), info, { timeout: T });
  }
  await expectPage(Math.floor((cfg.n - 1) / ROWS) * ROWS);
  step = "prev";
  await page.locator("#page-prev").click();
  await expectPage(Math.floor((cfg.n - 1) / ROWS) * ROWS - ROWS);
  step = "the role menu: worker's first page";
  await page.locator("#page-role").selectOption({ label: "worker" });
  await expectPage(0);
  await shot("paged");

  step = "a task's change, in place";
  // mark the row: a row rebuilt rather than updated loses the mark
  await row("worker:0").evaluate((tr) => { tr.dataset.mark = "kept"; });
  const attempt0 = await row("worker:0").locator("td.c-attempt").textContent();
  console.log(JSON.stringify({ ready: true }));
  await lines.next(); // the caller failed worker:0: the job restarts its tasks in place
  await page.waitForFunction(() => {
    const tr = document.querySelector('#tasks tr.task[data-task="worker:0"]');
    return tr && /^1\b/.test(tr.querySelector("td.c-attempt").textContent) && tr.dataset.state === "RUNNING";
  }, null, { timeout: T });
  check(await row("worker:0").getAttribute("data-mark") === "kept", "worker:0's row was rebuilt, not updated");
  const attempt = await page.locator("#attempt").textContent();
  check(/^1 \(1 restart\)/.test(attempt), `the job's attempt says: ${attempt}`);
  await summary.waitFor({ timeout: T });
  check((await rowKeys()).length === ROWS, "the restart brought more rows than a page");
  await shot("restarted");
  return { first_render_ms: firstRender, nodes, attempt0, attempt };
}, { step: () => step, shot });
