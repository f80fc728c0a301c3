// The job owner's browser (Debian's Chromium through playwright-core) in
// issue 33's attack, run by tests/e2e/test_web_trust.py:
//   node web_trust.mjs '<json>'  json: {notebook, page, app_id, attacker, artifacts, chromium}
// It opens the notebook link `tony notebook` printed and uses Jupyter from
// its own origin as a person does (a kernel over REST, its channels over a
// WebSocket), opens the job page's link, then an ordinary page another
// local user serves on another port of the same host, and waits until that
// page's script says it is done. Prints what it saw; exits 1 with the reason.
import fs from "node:fs";
import path from "node:path";
import { check, finish, launch } from "./harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 60000;
fs.mkdirSync(cfg.artifacts, { recursive: true });

// the other user's page fails on purpose: its errors are its own
const b = await launch(cfg, { ignoreConsole: /./ });
const { page } = b;
let step = "start";
async function shot(name) {
  await page.screenshot({ path: path.join(cfg.artifacts, `trust-${name}.png`), fullPage: true });
}

async function run() {
  step = "open the notebook link";
  await page.goto(cfg.notebook, { timeout: T });
  const folder = new URL(page.url()).pathname.match(/^\/notebook\/[0-9a-f]+\//);
  step = "Jupyter from its own origin: a kernel, its channels";
  const own = await page.evaluate(async () => {
    const r = await fetch("api/kernels", { method: "POST", body: "{}", headers: { "Content-Type": "application/json" } });
    const k = r.ok ? await r.json() : null;
    let ws = "no kernel";
    if (k) {
      const u = new URL(`api/kernels/${k.id}/channels`, location.href);
      u.protocol = "ws:";
      ws = await new Promise((res) => {
        const s = new WebSocket(u);
        s.onopen = () => { s.close(); res("open"); };
        s.onerror = () => res("error");
      });
      await fetch(`api/kernels/${k.id}`, { method: "DELETE" });
    }
    return { kernel: r.status, ws };
  });
  step = "open the job page's link";
  await page.goto(cfg.page, { timeout: T });
  await page.locator("#app-id").filter({ hasText: new RegExp(cfg.app_id) }).waitFor({ timeout: T });
  step = "the other user's page";
  await page.goto(cfg.attacker, { timeout: T });
  await page.locator("#done").waitFor({ timeout: T });
  await shot("attacker");
  const cookies = await page.context().cookies();
  return { folder: folder && folder[0], own, cookies: cookies.map((c) => `${c.name} ${c.path}`), address: page.url() };
}

await finish(b, run, { step: () => step, shot });
