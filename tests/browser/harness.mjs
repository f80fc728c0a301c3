// What every browser script here shares: Debian's Chromium through
// playwright-core (no browser download), the page's errors collected, and one
// way to end: a JSON line on stdout and exit 0, or the failed step, the
// page's errors, its text and a screenshot on stderr and exit 1.
import { chromium } from "playwright-core";

export function check(cond, msg) { if (!cond) throw new Error(msg); }

// ignoreConsole: console errors that the page handles itself (a refused
// poll after the job ended, an optional endpoint's 404).
export async function launch(cfg, { ignoreConsole = null } = {}) {
  const browser = await chromium.launch({
    executablePath: cfg.chromium || "/usr/bin/chromium",
    args: ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"],
  });
  const page = await browser.newPage({ viewport: { width: 1400, height: 1000 } });
  const errors = [];
  page.on("pageerror", (e) => errors.push(String(e)));
  page.on("console", (m) => {
    if (m.type() === "error" && !(ignoreConsole && ignoreConsole.test(m.text()))) errors.push("console: " + m.text());
  });
  return { browser, page, errors };
}

// Runs body(), then exits. step() names where a failure happened; shot(name)
// saves a screenshot; errors matching allowErrors do not fail the run.
export async function finish(b, body, { step, shot, allowErrors = null }) {
  let code = 0;
  try {
    const result = await body();
    const errors = allowErrors ? b.errors.filter((e) => !allowErrors.test(e)) : b.errors;
    check(errors.length === 0, `errors on the page: ${errors.join("; ")}`);
    console.log(JSON.stringify({ ok: true, ...result }));
  } catch (e) {
    code = 1;
    console.error(`FAILED at "${step()}": ${e.message}`);
    if (b.errors.length) console.error(`page errors: ${b.errors.join("; ")}`);
    try {
      await shot("failure");
      console.error(`page text:\n${(await b.page.locator("body").innerText()).slice(0, 4000)}`);
    } catch (e2) { /* the browser itself went */ }
  }
  await b.browser.close();
  process.exit(code);
}
