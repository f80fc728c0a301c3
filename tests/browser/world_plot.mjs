// An elastic job's page after `tony scale`, in Debian's Chromium
// (playwright-core): the timeline's step plot of the world's size shows the
// plan's size then the scaled one, and the summary counts the change as a
// world change, not a restart. Run by tests/e2e/test_elastic.py, which
// starts the job and scales it:
//   node world_plot.mjs '<json>'   json: {url, app_id, steps: "3,2", chromium, artifacts}
// Prints one JSON line; exits 1 with the reason when a check fails.
import fs from "node:fs";
import path from "node:path";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 60000;
fs.mkdirSync(cfg.artifacts, { recursive: true });

const b = await launch(cfg, { ignoreConsole: /Failed to load resource/ });
const { page } = b;
let step = "start";
const shot = (name) => page.screenshot({ path: path.join(cfg.artifacts, `world-${name}.png`), fullPage: true });

await finish(b, async () => {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  await page.locator("#app-id").filter({ hasText: cfg.app_id }).waitFor({ timeout: T });
  step = `the world plot's steps ${cfg.steps}`;
  const fig = page.locator(`#world-plot figure[data-steps="${cfg.steps}"]`);
  await fig.waitFor({ timeout: T });
  check(await page.locator("#world-plot").isVisible(), "the world plot is hidden");
  step = "the step line";
  const d = await fig.locator("path.s-world").getAttribute("d");
  // one horizontal run per world: M/L pairs at two heights
  const ys = new Set([...d.matchAll(/[ML][\d.]+,([\d.]+)/g)].map((m) => m[1]));
  check(ys.size === new Set(cfg.steps.split(",")).size, `the step line has ${ys.size} level(s): ${d}`);
  step = "the attempt's count";
  const attempt = await page.locator("#attempt").textContent();
  check(/world change/.test(attempt) && !/restart/.test(attempt), `the attempt says: ${attempt}`);
  await shot("scaled");
  return { steps: await fig.getAttribute("data-steps"), attempt };
}, { step: () => step, shot });
