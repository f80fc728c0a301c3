// A failed job explains itself in Chromium (issue 21): its name in the
// header, the root cause above the advice, the task another's failure
// stopped saying so. Run by tests/e2e/test_first_hour.py:
//   node first_hour.mjs '<json>'  json: {mode, url, name, cause, stopped, release, artifacts, chromium}
// mode "live": the coordinator's page of a running job; it writes the file
// release (which makes the job fail) once the page shows the job, then
// waits for the failure. mode "portal": the portal's page of a job that failed.
import fs from "node:fs";
import path from "node:path";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 60000;
fs.mkdirSync(cfg.artifacts, { recursive: true });
// the live page's polls are refused once the coordinator is gone
const b = await launch(cfg, { ignoreConsole: /Failed to load resource|ERR_CONNECTION_REFUSED/ });
const { page } = b;
let step = "start";
const shot = (name) => page.screenshot({ path: path.join(cfg.artifacts, `first-hour-${cfg.mode}-${name}.png`),
                                         fullPage: true });

async function run() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  step = "the job's name in the header";
  await page.locator("#job-name").filter({ hasText: cfg.name }).waitFor({ timeout: T });
  if (cfg.release) fs.writeFileSync(cfg.release, "");
  step = "the root cause";
  const cause = page.locator("#root-cause");
  await cause.filter({ hasText: cfg.cause }).waitFor({ state: "visible", timeout: T });
  const text = await cause.innerText();
  check(/Root cause: /.test(text), `the root cause does not say so: ${text}`);
  // above everything else of the job: the facts, the advice, the tasks
  const top = (await cause.boundingBox()).y;
  for (const other of ["#tasks", "dl"]) {
    const box = await page.locator(other).first().boundingBox();
    check(box && top < box.y, `the root cause is not above ${other}`);
  }
  step = "the stopped task";
  await page.locator("#tasks tbody").filter({ hasText: cfg.stopped }).waitFor({ timeout: T });
  await shot("failed");
  return { cause: text };
}

await finish(b, run, { step: () => step, shot });
