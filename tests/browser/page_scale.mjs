// The page of a job of hundreds of tasks (issue 26), in Debian's Chromium
// (playwright-core): per-role summary lines and one page of rows, never every
// task; prev/next and the role menu move through the pages; a task's change
// (a failure, then its in-place restart) updates its row where it is. Run by
// tests/e2e/test_page_scale.py, which runs the job (simulated executors):
//   node page_scale.mjs '<json>'   json: {url, app_id, n, rows, chromium, artifacts}
// Prints {"ready": true} once the paging is checked, then waits for a line on
// stdin (the caller has failed worker:0) and checks the change shows; prints
// {"restarted": true} and waits for another (worker:0 failed again: the job
// waits to restart, worker:0 FAILED and the 299 others FINISHED) and checks
// the state filter: the summary line's "1 FAILED" shows exactly that task,
// "299 FINISHED" pages those, "all" every task again.
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
// [from, to) (under a state filter: those it takes), and the pager says so
async function expectPage(first, { from = 0, to = cfg.n, filter = "" } = {}) {
  const n = to - from;
  const last = Math.min(first + ROWS, n) - 1;
  await row(`worker:${from + first}`).waitFor({ timeout: T });
  await row(`worker:${from + last}`).waitFor({ timeout: T });
  await page.waitForFunction((k) => document.querySelectorAll("#tasks tr.task").length === k, last - first + 1,
                             { timeout: T });
  const keys = await rowKeys();
  const want = Array.from({ length: last - first + 1 }, (_, i) => `worker:${from + first + i}`);
  check(JSON.stringify(keys) === JSON.stringify(want), `rows ${keys[0]}..${keys[keys.length - 1]} (${keys.length})`);
  const info = await page.locator("#page-info").textContent();
  const range = `tasks ${first + 1}–${last + 1} of ${n}`;
  check(info === (filter ? `${filter}: ${range}` : range), `the pager says: ${info}`);
  const state = await page.locator("#page-state").inputValue();
  check(state === filter, `the state menu says '${state}', not '${filter}'`);
}

// next, until the pager's text changed and is no longer loading
async function next() {
  const info = await page.locator("#page-info").textContent();
  await page.locator("#page-next").click();
  await page.waitForFunction((was) => document.getElementById("page-info").textContent !== was &&
                             !/loading/.test(document.getElementById("page-info").textContent), info, { timeout: T });
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
  while (!(await page.locator("#page-next").isDisabled())) await next();
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

  step = "the state filter: a failure's count is a link";
  // worker:0's panel is open: it stays open while a filter leaves its row out
  await row("worker:0").click();
  await page.locator("#panel-title").filter({ hasText: "worker:0" }).waitFor({ timeout: T });
  console.log(JSON.stringify({ restarted: true }));
  await lines.next(); // worker:0 failed again: the job waits (backoff) with its tasks as the attempt left them
  await page.locator("#role-summary li", { hasText: `worker — ${cfg.n} tasks: 1 FAILED, ${cfg.n - 1} FINISHED` })
    .waitFor({ timeout: T });
  const failed = page.locator('#role-summary button.state-link[data-state="FAILED"]');
  check(await failed.textContent() === "1 FAILED", `the FAILED link says: ${await failed.textContent()}`);
  step = "the state filter: 1 FAILED";
  await failed.click();
  await expectPage(0, { from: 0, to: 1, filter: "FAILED" });
  check(await page.locator("#page-next").isDisabled() && await page.locator("#page-prev").isDisabled(),
        "prev or next is enabled on the only page of FAILED tasks");
  await shot("filtered");
  step = "the state filter: FINISHED, paged";
  await page.locator('#role-summary button.state-link[data-state="FINISHED"]').click();
  await expectPage(0, { from: 1, to: cfg.n, filter: "FINISHED" });
  await next();
  await expectPage(ROWS, { from: 1, to: cfg.n, filter: "FINISHED" });
  while (!(await page.locator("#page-next").isDisabled())) await next();
  await expectPage(Math.floor((cfg.n - 2) / ROWS) * ROWS, { from: 1, to: cfg.n, filter: "FINISHED" });
  check(!(await page.locator("#task-panel").isHidden()) &&
        await page.locator("#panel-title").textContent() === "worker:0", "worker:0's panel closed under the filter");
  step = "the state filter: all";
  await page.locator("#page-state").selectOption("");
  await expectPage(0);
  return { first_render_ms: firstRender, nodes, attempt0, attempt };
}, { step: () => step, shot });
