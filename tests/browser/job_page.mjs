// Drives Debian's Chromium (playwright-core, no browser download) through a
// live tony job's page and checks what a person reads there. Run by
// tests/e2e/test_web_ui.py, which starts the job:
//   node job_page.mjs '<json>'   json: {url, app_id, artifacts, mode, expect_metrics, chromium,
//                                      release_dir: where tasks wait for release-* files}
// mode "full" follows the whole job (states, exit code, log tail, plots,
// timeline, the end); mode "proxy" loads the page under a path prefix and
// checks that everything it fetched stayed under it; mode "restart" follows a
// job whose first attempt fails: the task rows count the starts, and the log
// tail shows the earlier attempt's output when picked; mode "hang" follows a
// job that tony.task.progress-timeout finds hung: the hung task's row links
// its stacks, and the link serves them; mode "adopted" opens the page of a
// coordinator that replaced a lost one (YARN) and reads how many tasks it
// took back, the tasks still RUNNING; mode "token" opens the link `tony
// submit` printed (with the job's read token), checks that the page renders
// the job from the token it keeps for its origin (sessionStorage, no
// cookie), with the token gone from its address, and that a browser
// without it is refused. Exits 1 with the reason.
import fs from "node:fs";
import path from "node:path";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 60000;
fs.mkdirSync(cfg.artifacts, { recursive: true });

const b = await launch(cfg, { ignoreConsole: /Failed to load resource/ });
const { page } = b;
const requests = [];
page.on("request", (r) => requests.push(r.url()));
const release = (name) => fs.writeFileSync(path.join(cfg.release_dir, name), "");

let step = "start";
async function shot(name) {
  await page.screenshot({ path: path.join(cfg.artifacts, `${cfg.mode}-${name}.png`), fullPage: true });
}
const row = (task) => page.locator(`tr.task[data-task="${task}"]`);
const cell = (task, col) => row(task).locator(`td.c-${col}`);

async function waitText(locator, re, what) {
  step = what;
  await locator.filter({ hasText: re }).first().waitFor({ timeout: T });
}

async function full() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  await waitText(page.locator("#app-id"), new RegExp(cfg.app_id), "the app id in the header");
  await waitText(page.locator("#job-state"), /RUNNING/, "job state RUNNING");
  for (const k of ["backend", "framework", "elapsed"]) check((await page.locator("#" + k).textContent()) !== "–", `${k} is empty`);
  const e1 = await page.locator("#elapsed").textContent();
  // the tasks, grouped by role with counts
  await waitText(cell("chief:0", "state"), /RUNNING/, "chief:0 RUNNING");
  await waitText(cell("worker:0", "state"), /RUNNING/, "worker:0 RUNNING");
  const heads = await page.locator("tr.role-head th").allTextContents();
  check(heads.some((h) => /^worker — 2 tasks/.test(h)), `no worker group header with a count: ${heads}`);
  check(heads.some((h) => /^ps — 1 task/.test(h)), `no ps group header: ${heads}`);
  check(/127\.0\.0\.1:\d+/.test(await cell("chief:0", "addr").textContent()), "chief has no host:port");
  await waitText(cell("worker:1", "state"), /RUNNING/, "worker:1 RUNNING");
  await shot("running");
  release("release-workers");
  // the failed worker, in words
  await waitText(cell("worker:1", "state"), /FAILED/, "worker:1 FAILED");
  await waitText(cell("worker:1", "exit"), /exit code 3/, "worker:1 shows exit code 3");
  // its ECC error line (the default exclude-node log policy): a bad node, here the only one
  await waitText(page.locator("#excluded-nodes li"), /node localhost bad, not excluded \(.*only node\): worker:1 in attempt 0: .*uncorrectable ECC error/,
                 "the bad node listed");
  await waitText(cell("worker:0", "state"), /SUCCEEDED/, "worker:0 RUNNING -> SUCCEEDED");
  check((await page.locator("#elapsed").textContent()) !== e1, "the elapsed time does not tick");
  // the log tail of a task, both streams
  step = "open chief:0";
  await row("chief:0").click();
  await waitText(page.locator("#panel-title"), /chief:0/, "the task panel");
  await waitText(page.locator("#log"), /chief says hello/, "chief:0's stdout line in the log tail");
  await waitText(page.locator("#log"), /chief step 3/, "the log tail grows while the task runs");
  await page.locator('.tabs button[data-stream="stderr"]').click();
  await waitText(page.locator("#log"), /chief warns on stderr/, "chief:0's stderr line");
  await page.locator('.tabs button[data-stream="stdout"]').click();
  await waitText(page.locator("#log"), /chief says hello/, "back on stdout");
  // metrics plots
  if (cfg.expect_metrics) {
    step = "memory and CPU plots with lines of 3 or more samples";
    await page.waitForFunction(() => {
      const f = [...document.querySelectorAll("figure.plot")];
      return f.length >= 2 && f.every((x) => Number(x.dataset.points) >= 3 && x.querySelector("path.p-line"));
    }, null, { timeout: T });
  } else {
    await waitText(page.locator("#plots"), /no metrics yet|samples/, "the plots area");
  }
  // the timeline
  step = "timeline entries";
  await page.waitForFunction(() => document.querySelectorAll("#events li").length >= 3, null, { timeout: T });
  const evs = await page.locator("#events li").allTextContents();
  check(evs.some((e) => /worker:1/.test(e)), `no timeline entry for worker:1: ${evs.join(" | ")}`);
  await shot("task-panel");
  release("release-chief");
  // the end: the page says so and keeps what it showed
  await waitText(page.locator("#job-state, #conn"), /FINISHED|finished|gone/, "the job's end on the page");
  await waitText(page.locator("#conn"), /finished|gone/i, "the coordinator-gone banner after the end");
  const banner = await page.locator("#conn").textContent();
  check((await row("chief:0").count()) === 1, "the task table vanished after the end");
  check(/chief says hello/.test(await page.locator("#log").textContent()), "the log tail was lost after the end");
  await shot("finished");
  return { banner, final: await page.locator("#final-status").textContent(), events: evs.length };
}

async function proxy() {
  step = "open the page under the prefix";
  await page.goto(cfg.url, { timeout: T });
  await waitText(page.locator("#app-id"), new RegExp(cfg.app_id), "the app id through the proxy");
  await waitText(cell("worker:0", "state"), /RUNNING/, "worker:0 RUNNING through the proxy");
  await row("worker:0").click();
  await waitText(page.locator("#log"), /worker 0 says hello/, "the log tail through the proxy");
  await page.waitForTimeout(2500); // let events and metrics polls run too
  const prefix = new URL(cfg.url);
  const outside = requests.filter((u) => !new URL(u).pathname.startsWith(prefix.pathname) || new URL(u).host !== prefix.host);
  check(outside.length === 0, `the page fetched outside ${prefix.pathname}: ${outside.join(", ")}`);
  for (const want of ["ui/app.js", "ui/style.css", "v1/job", "/log?"])
    check(requests.some((u) => u.includes(want)), `no request for ${want} under the prefix`);
  await shot("proxied");
  return { requests: requests.length };
}

async function restart() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  await waitText(cell("worker:0", "state"), /RUNNING/, "worker:0 RUNNING in attempt 0");
  check((await cell("worker:0", "attempt").textContent()) === "0", "attempt 0 shows more than its number");
  await row("worker:0").click();
  await waitText(page.locator("#log"), /attempt 0 of worker:0/, "attempt 0's log");
  check(await page.locator("#log-attempt-pick").isHidden(), "an attempt menu with one attempt to pick");
  release("release-fail");
  // the job restarts; the row counts the task's starts and the tail follows
  await waitText(page.locator("#attempt"), /^1 \(1 restart\)/, "the job's attempt 1");
  // why attempt 0 failed: its first failed task, the exit in words, its stderr
  await waitText(page.locator("#root-cause"), /Root cause: worker:0 failed first in attempt 0.*exit code 7 \(the script's own error\)/,
                 "the root cause of attempt 0");
  check(/worker 0 fails in attempt 0/.test(await page.locator("#root-cause").textContent()), "the root cause without its stderr");
  await waitText(cell("worker:0", "attempt"), /^1 \(started 2×\)$/, "worker:0 started twice");
  await waitText(cell("worker:1", "attempt"), /^1 \(started 2×\)$/, "worker:1 started twice");
  await waitText(cell("worker:0", "state"), /RUNNING/, "worker:0 RUNNING again");
  const tip = await cell("worker:0", "attempt").getAttribute("title");
  check(/attempt 0: FAILED, exit code 7/.test(tip) && /attempt 1: RUNNING/.test(tip), `attempt tooltip: ${tip}`);
  await waitText(page.locator("#log"), /attempt 1 of worker:0/, "the log tail on the new attempt");
  check(!/attempt 0 of/.test(await page.locator("#log").textContent()), "attempt 0's output mixed into attempt 1's");
  await waitText(page.locator("#panel-info"), /attempt 1/, "the panel names attempt 1");
  // the earlier attempt, both streams
  step = "pick attempt 0";
  await page.locator("#log-attempt").selectOption("0");
  await waitText(page.locator("#log"), /attempt 0 of worker:0/, "attempt 0's stdout when picked");
  await waitText(page.locator("#panel-info"), /attempt 0/, "the panel names attempt 0");
  await page.locator('.tabs button[data-stream="stderr"]').click();
  await waitText(page.locator("#log"), /worker 0 fails in attempt 0/, "attempt 0's stderr");
  await shot("earlier-attempt");
  // other tasks' earlier attempts too, then back to the latest
  step = "worker:1's attempt 0";
  await row("worker:1").click();
  await page.locator('.tabs button[data-stream="stdout"]').click();
  await waitText(page.locator("#log"), /attempt 1 of worker:1/, "worker:1 opens on its latest attempt");
  await page.locator("#log-attempt").selectOption("0");
  await waitText(page.locator("#log"), /attempt 0 of worker:1/, "worker:1's attempt 0");
  await page.locator("#log-attempt").selectOption("");
  await waitText(page.locator("#log"), /attempt 1 of worker:1/, "back on the latest attempt");
  release("release-end");
  await waitText(page.locator("#final-status"), /SUCCEEDED/, "the job SUCCEEDED in attempt 1");
  await waitText(cell("worker:0", "state"), /SUCCEEDED/, "worker:0 SUCCEEDED");
  await shot("restarted");
  return { tip };
}

async function hang() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  await waitText(cell("worker:0", "state"), /RUNNING/, "worker:0 RUNNING");
  check((await row("worker:0").locator("a.stacks").count()) === 0, "a stacks link before any hang");
  release("release-hang");
  await waitText(page.locator("#final-status"), /FAILED/, "the hung job FAILED");
  step = "the stacks link";
  const link = row("worker:0").locator("td.c-task a.stacks");
  await link.waitFor({ timeout: T });
  const href = await link.getAttribute("href");
  check(!href.startsWith("/"), `the stacks link is not relative: ${href}`);
  const r = await page.request.get(new URL(href, page.url()).toString());
  const text = await r.text();
  check(r.status() === 200 && /wait_silently \(task\.py/.test(text), `the stacks link served ${r.status()}: ${text}`);
  await shot("hung");
  return { href, stacks: text.length };
}

async function adopted() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  await waitText(page.locator("#coordinator-restart"), new RegExp(cfg.expect), "the coordinator restart line");
  for (const t of cfg.running || []) await waitText(cell(t, "state"), /RUNNING/, `${t} RUNNING`);
  check((await page.locator("#attempt").textContent()).startsWith("0"), "the attempt is not 0");
  await shot("adopted");
  return { line: await page.locator("#coordinator-restart").textContent() };
}

async function token() {
  step = "open the printed link";
  await page.goto(cfg.url, { timeout: T });
  await waitText(page.locator("#app-id"), new RegExp(cfg.app_id), "the app id in the header");
  await waitText(cell("worker:0", "state"), /RUNNING/, "worker:0 RUNNING");
  await row("worker:0").click();
  await waitText(page.locator("#log"), new RegExp(cfg.expect), "the task's output in the log tail");
  step = "the token left the address, the page keeps it for its origin, no cookie holds it";
  const at = new URL(page.url());
  check(!at.searchParams.has("token") && !at.hash.includes("token"), `the token is still in the address: ${page.url()}`);
  const cookies = await page.context().cookies();
  check(cookies.length === 0, `cookies set: ${JSON.stringify(cookies)}`);
  const kept = await page.evaluate(() => sessionStorage.getItem("tony_token"));
  check(kept && new RegExp(`token=${kept}`).test(cfg.url), "the page does not keep the link's token");
  await shot("token");
  step = "a browser without the token";
  const ctx = await b.browser.newContext();
  const other = await ctx.newPage();
  const r = await other.goto(`${at.origin}/`, { timeout: T });
  await other.locator("#conn").filter({ hasText: /read token/ }).waitFor({ timeout: T });
  const text = await other.locator("body").innerText();
  await ctx.close();
  check(r.status() === 200 && !new RegExp(cfg.expect).test(text), `not refused: ${r.status()} ${text}`);
  return { address: page.url(), refused: text };
}

await finish(b, () => (cfg.mode === "proxy" ? proxy() : cfg.mode === "restart" ? restart()
                       : cfg.mode === "hang" ? hang() : cfg.mode === "adopted" ? adopted()
                       : cfg.mode === "token" ? token() : full()),
             { step: () => step, shot });
