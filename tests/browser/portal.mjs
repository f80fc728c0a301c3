// Drives Debian's Chromium (playwright-core) through `tony portal` and checks
// what a person reads there. Run by tests/e2e/test_portal.py, which ran the
// jobs and started the portal:
//   node portal.mjs '<json>'   json: {url, ok, fail, mem, damaged: app ids, artifacts, chromium}
// The job list shows the jobs; searching filters it; a column header sorts
// it both ways; a failed job's page shows its events, config, the failed
// task's exit meaning and log links; the memory job's page plots its series;
// a damaged job's page says what is wrong. Exits 1 with the reason.
import fs from "node:fs";
import path from "node:path";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 30000;
// the portal's address without the printed link's token: the page keeps that
// token (sessionStorage) once the link is opened
const home = cfg.url.split("?")[0];
fs.mkdirSync(cfg.artifacts, { recursive: true });

const b = await launch(cfg);
const { page } = b;
const requests = [];
page.on("request", (r) => requests.push(r.url()));

let step = "start";
async function shot(name) {
  await page.screenshot({ path: path.join(cfg.artifacts, `portal-${name}.png`), fullPage: true });
}
async function waitText(locator, re, what) {
  step = what;
  await locator.filter({ hasText: re }).first().waitFor({ timeout: T });
}
const rows = () => page.locator("#jobs tbody tr");
const ids = async () => (await page.locator("#jobs tbody td.c-app_id a").allTextContents());
const colText = async (col) => page.locator(`#jobs tbody td.c-${col}`).allTextContents();
function sortedCopy(a, dir) {
  const s = [...a].sort((x, y) => x.localeCompare(y, undefined, { numeric: true }));
  return dir > 0 ? s : s.reverse();
}

async function run() {
  step = "open the portal";
  await page.goto(cfg.url, { timeout: T });
  for (const id of [cfg.ok, cfg.fail, cfg.mem, cfg.damaged])
    await waitText(page.locator("#jobs tbody td.c-app_id"), new RegExp(id), `job ${id} in the list`);
  const total = await rows().count();
  check(total >= 6, `only ${total} rows`);
  const failRow = page.locator(`#jobs tbody tr[data-app="${cfg.fail}"]`);
  check(/FAILED/.test(await failRow.locator("td.c-status").textContent()), "the failed job is not FAILED");
  check(/portal-fail/.test(await failRow.locator("td.c-name").textContent()), "no name on the failed job");
  check(/2 \(2 worker\)/.test(await failRow.locator("td.c-tasks").textContent()), "no task counts");
  check(await page.locator(`#jobs tbody tr[data-app="${cfg.damaged}"] .warn`).count() === 1,
        "the damaged job has no warning mark");
  // newest first to begin with
  const started = (await colText("started")).filter((s) => s !== "–");
  check(JSON.stringify(started) === JSON.stringify(sortedCopy(started, -1)), `not newest first: ${started}`);
  await shot("list");

  step = "search";
  await page.fill("#search", "portal-fail");
  await page.waitForFunction(() => document.querySelectorAll("#jobs tbody tr").length === 1, null, { timeout: T });
  check((await ids())[0] === cfg.fail, "the search kept the wrong job");
  check(/1 of \d+ jobs/.test(await page.locator("#job-count").textContent()), "no match count");
  await page.fill("#search", "pytorch");
  await page.waitForFunction(() => document.querySelectorAll("#jobs tbody tr").length === 1, null, { timeout: T });
  check((await ids())[0] === cfg.mem, "searching by framework kept the wrong job");
  await page.fill("#search", "succeeded portal");
  await page.waitForFunction(() => document.querySelectorAll("#jobs tbody tr").length === 3, null, { timeout: T });
  check((await colText("status")).every((s) => s === "SUCCEEDED"), "a search for succeeded shows others");
  check(!(await ids()).includes(cfg.fail), "a search for succeeded shows the failed job");
  await shot("search");
  await page.fill("#search", "no-such-job-anywhere");
  await waitText(page.locator("#empty"), /No job matches/, "the no-match message");
  await page.fill("#search", "");
  await page.waitForFunction((n) => document.querySelectorAll("#jobs tbody tr").length === n, total, { timeout: T });

  step = "sort by app id, both ways";
  await page.click('#jobs thead th[data-key="app_id"]');
  let got = await ids();
  check(JSON.stringify(got) === JSON.stringify(sortedCopy(got, 1)), `not ascending by app id: ${got}`);
  check(await page.locator('#jobs thead th[data-key="app_id"].sorted-asc').count() === 1, "no ascending mark");
  await page.click('#jobs thead th[data-key="app_id"]');
  got = await ids();
  check(JSON.stringify(got) === JSON.stringify(sortedCopy(got, -1)), `not descending by app id: ${got}`);
  await page.click('#jobs thead th[data-key="status"]');
  const statuses = await colText("status");
  check(JSON.stringify(statuses) === JSON.stringify(sortedCopy(statuses, 1)), `not sorted by status: ${statuses}`);
  check(statuses[0] !== statuses[statuses.length - 1], "sorting by status did not reorder anything");

  step = "open the failed job";
  await failRow.click();
  await waitText(page.locator("#job-status"), /FAILED/, "the failed job's status badge");
  check(page.url().endsWith(`#/jobs/${cfg.fail}`), `the address is not the job's: ${page.url()}`);
  step = "the failed job's timeline";
  await page.waitForFunction(() => document.querySelectorAll("#events li").length >= 8, null, { timeout: T });
  const evs = await page.locator("#events li").allTextContents();
  check(evs.some((e) => /TASK_FINISHED/.test(e) && /worker:1/.test(e) && /exit code 3/.test(e)),
        `no TASK_FINISHED of worker:1 with its exit code: ${evs.join(" | ")}`);
  check(/APPLICATION_FINISHED/.test(evs[evs.length - 1]), "the timeline does not end with the job's end");
  step = "the failed task's exit meaning and logs";
  const w1 = page.locator('#tasks tbody tr[data-task="worker:1"]');
  check(/FAILED/.test(await w1.locator("td.c-state").textContent()), "worker:1 is not FAILED");
  check(/exit code 3/.test(await w1.locator("td.c-exit").textContent()), "worker:1 has no exit meaning");
  const links = await w1.locator("td.c-logs a").evaluateAll((as) => as.map((a) => [a.textContent, a.href]));
  check(links.some(([t]) => t === "stderr") && links.some(([t]) => t === "stdout"), `log links: ${links}`);
  const stderr = await page.request.get(links.find(([t]) => t === "stderr")[1]);
  check(/worker 1 fails on purpose/.test(await stderr.text()), "the stderr link does not give the task's stderr");
  step = "the failed job's config";
  const nameRow = page.locator('#config tbody tr[data-key="tony.application.name"]');
  check(/portal-fail/.test(await nameRow.textContent()), "no tony.application.name in the config table");
  const configRows = await page.locator("#config tbody tr").count();
  check(configRows > 20, `only ${configRows} config rows`);
  await page.fill("#config-filter", "application.name");
  await page.waitForFunction(() => [...document.querySelectorAll("#config tbody tr")].filter((r) => !r.hidden).length === 1,
                             null, { timeout: T });
  await page.fill("#config-filter", "");
  step = "the failed job's plots";
  await page.waitForFunction(() => {
    const f = [...document.querySelectorAll("#plots figure.plot")];
    return f.length >= 2 && f.every((x) => Number(x.dataset.points) >= 1);
  }, null, { timeout: T });
  await shot("failed-job");

  step = "back to the list, then the memory job";
  await page.click("header a.home");
  await page.waitForFunction((n) => document.querySelectorAll("#jobs tbody tr").length === n, total, { timeout: T });
  await page.locator(`#jobs tbody tr[data-app="${cfg.mem}"] td.c-app_id a`).click();
  await waitText(page.locator("#job-status"), /SUCCEEDED/, "the memory job's status");
  step = "memory and CPU plots with data";
  await page.waitForFunction(() => {
    const f = [...document.querySelectorAll("#plots figure.plot")];
    return f.length >= 2 && f.every((x) => Number(x.dataset.points) >= 3 && x.querySelector("path.p-line"));
  }, null, { timeout: T });
  const memCap = await page.locator('#plots figure.plot[data-title="Memory (RSS)"] figcaption').textContent();
  const memPeak = Number(await page.locator('#plots figure.plot[data-title="Memory (RSS)"]').getAttribute("data-peak"));
  check(memPeak >= 200 * 1024 * 1024 && /peak (\d{3}|\d\.\d) (MiB|GiB)/.test(memCap),
        `the memory plot does not reach 200 MiB: ${memCap}`);
  step = "another task's plots";
  await page.locator('#tasks tbody tr[data-task="worker:1"]').click();
  await waitText(page.locator("#plots-task"), /worker:1/, "the plots follow the chosen task");
  await page.waitForFunction(() => document.querySelectorAll("#plots figure.plot path.p-line").length >= 2, null,
                             { timeout: T });
  await waitText(page.locator("#advice"), /tony\.worker\.memory=/, "right-sizing advice");
  await shot("memory-plots");

  step = "the damaged job";
  await page.goto(`${home}#/jobs/${cfg.damaged}`);
  await waitText(page.locator("#job-problems"), /is damaged/, "the damaged job says its .jhist is damaged");
  await waitText(page.locator("#job-problems"), /tony-final\.xml/, "and that its config is broken");
  await waitText(page.locator("#events"), /No events could be read/, "an empty timeline said in words");
  await shot("damaged");

  step = "an unknown job";
  await page.goto(`${home}#/jobs/application_404_0404`);
  await waitText(page.locator("#conn"), /no job application_404_0404/, "an unknown job said in words");

  // everything the page fetched stayed under the portal's address
  const base = new URL(cfg.url);
  const outside = requests.filter((u) => { const x = new URL(u); return x.host !== base.host || !x.pathname.startsWith(base.pathname); });
  check(outside.length === 0, `requests outside the portal: ${outside}`);
  return { rows: total, events: evs.length };
}

// the unknown job's 404 is the one error expected on the console
await finish(b, run, { step: () => step, shot, allowErrors: /status of 404/ });
