// The job page at scale (issue 26, item 2), in Debian's Chromium: driven by
// bench/scale_page.py, which runs a job of N simulated tasks (scale_harness.py)
// and passes its URL. Measures time to first render, the main thread's busy
// time over a window of live updates, the JS heap and the bytes of each poll;
// with {blank: true} the same window on an about:blank tab (the browser's floor).
//   node scale_page.mjs '<json>'  json: {url, app_id, n, seconds, profile_s, blank, chromium}
// Prints one JSON line; exits 1 with the reason when a step fails.
import { finish, launch } from "../tests/browser/harness.mjs";

const cfg = JSON.parse(process.argv[2] || "{}");
const T = cfg.timeout_ms || 300000;
const b = await launch(cfg, { ignoreConsole: /Failed to load resource/ });
const { page } = b;
let step = "start";

// Main-thread tasks over 50 ms, seen by the page itself: the longest one is
// how long an update freezes the page (clicks, scrolling wait that long).
await page.addInitScript(() => {
  window.__long = [];
  try {
    new PerformanceObserver((l) => { for (const e of l.getEntries()) window.__long.push([e.startTime, e.duration]); })
      .observe({ type: "longtask", buffered: true });
  } catch { /* no longtask timing: the figures say 0 */ }
});

// Every answer to the page's job poll: its shape (with or without metrics),
// status and body size.
const polls = [];
page.on("response", async (r) => {
  const u = new URL(r.url());
  if (!/\/v1\/job$/.test(u.pathname)) return;
  const t = Date.now();
  let bytes = 0;
  if (r.status() === 200) {
    try { bytes = (await r.body()).length; } catch { bytes = 0; }
  }
  polls.push({ t, light: u.searchParams.get("metrics") === "0", status: r.status(), bytes });
});

const cdp = await page.context().newCDPSession(page);
await cdp.send("Performance.enable");
const metrics = async () => Object.fromEntries((await cdp.send("Performance.getMetrics")).metrics
  .map((m) => [m.name, m.value]));

// The page's time from navigation to its table holding every task, painted
// (the next animation frame after the last row was added).
async function firstRender() {
  step = "open the page";
  await page.goto(cfg.url, { timeout: T });
  step = `all ${cfg.n} rows in the table (or its first page)`;
  // a paged table (web/app.js: over PAGE_THRESHOLD tasks) holds its first page only
  await page.waitForFunction((n) => {
    const paging = document.getElementById("paging");
    const rows = paging && !paging.hidden ? document.querySelectorAll("#tasks tr.task").length : 0;
    return (document.querySelectorAll("tr.task").length >= n || (rows > 0 && rows >= Math.min(n, 100))) &&
      /^\d+:/.test(document.getElementById("task-counts").textContent);
  }, cfg.n, { timeout: T, polling: "raf" });
  // A callback of the frame after next: the frame that laid out and painted
  // the rows has ended (a single rAF runs before that frame's layout).
  const [ms, nav] = await page.evaluate(() => new Promise((done) => {
    const after = () => {
      const n = performance.getEntriesByType("navigation")[0];
      done([performance.now(), n ? n.responseEnd : 0]);
    };
    requestAnimationFrame(() => requestAnimationFrame(after));
  }));
  // Where the time to first render went: the main thread's totals since
  // navigation, and when the first job poll was answered.
  const m = await metrics();
  const firstPoll = await page.evaluate(() => {
    const e = performance.getEntriesByType("resource").find((r) => /\/v1\/job(\?|$)/.test(r.name));
    return e ? e.responseEnd : 0;
  });
  const fcp = await page.evaluate(() => {
    const p = performance.getEntriesByName("first-contentful-paint")[0];
    return p ? p.startTime : 0;
  });
  return { render_ms: ms, html_ms: nav, fcp_ms: fcp, first_poll_ms: firstPoll,
           render_busy_ms: m.TaskDuration * 1000, render_script_ms: m.ScriptDuration * 1000,
           render_layout_ms: (m.LayoutDuration + m.RecalcStyleDuration) * 1000 };
}

async function window_(seconds) {
  step = `a window of ${seconds} s`;
  const before = await metrics();
  const from = Date.now();
  const pageFrom = await page.evaluate(() => performance.now());
  await page.waitForTimeout(seconds * 1000);
  const after = await metrics();
  const d = (k) => after[k] - before[k];
  const long = await page.evaluate((t0) => (window.__long || []).filter(([s]) => s >= t0).map(([, x]) => x),
                                   pageFrom);
  const w = polls.filter((p) => p.t >= from);
  const of = (xs) => ({ n: xs.length, n304: xs.filter((p) => p.status === 304).length,
                        bytes: xs.reduce((a, p) => a + p.bytes, 0),
                        largest: Math.max(0, ...xs.map((p) => p.bytes)) });
  return {
    seconds,
    busy_s: d("TaskDuration"),
    script_s: d("ScriptDuration"),
    layout_s: d("LayoutDuration") + d("RecalcStyleDuration"),
    heap_mb: after.JSHeapUsedSize / (1 << 20),
    heap_total_mb: after.JSHeapTotalSize / (1 << 20),
    dom_nodes: after.Nodes,
    long_n: long.length,
    long_max_ms: Math.max(0, ...long),
    long_sum_ms: long.reduce((a, x) => a + x, 0),
    polls: of(w),
    light: of(w.filter((p) => p.light)),
    full: of(w.filter((p) => !p.light)),
  };
}

// Where the main thread's time goes: a sampling profile's self time by
// function (top 12), over profile_s seconds of live updates.
async function profile(seconds) {
  step = "profile";
  await cdp.send("Profiler.enable");
  await cdp.send("Profiler.setSamplingInterval", { interval: 200 });
  await cdp.send("Profiler.start");
  await page.waitForTimeout(seconds * 1000);
  const { profile: p } = await cdp.send("Profiler.stop");
  const dt = new Map();
  for (let i = 0; i < p.samples.length; i++) dt.set(p.samples[i], (dt.get(p.samples[i]) || 0) + (p.timeDeltas[i] || 0));
  const self = new Map();
  for (const node of p.nodes) {
    const f = node.callFrame;
    if (["(idle)", "(program)", "(root)"].includes(f.functionName)) continue;
    const where = f.url ? `${f.url.split("/").pop().split("?")[0]}:${f.lineNumber + 1}` : "native";
    const key = `${f.functionName || "(anonymous)"} ${where}`;
    self.set(key, (self.get(key) || 0) + (dt.get(node.id) || 0) / 1000);
  }
  return [...self.entries()].sort((a, c) => c[1] - a[1]).slice(0, 12).map(([fn, ms]) => ({ fn, ms: +ms.toFixed(1) }));
}

// What one cell's change costs the next layout: a running task's Duration
// cell changes its text, then a forced layout; and the whole table's layout
// from scratch; medians of 3, with the table as the page styles it, then with
// `table-layout: fixed` (column widths from the first row, not from every
// cell) and with `border-collapse: separate`, for comparison.
async function layoutProbe() {
  step = "layout probe";
  return page.evaluate(() => {
    const table = document.getElementById("tasks");
    const cell = document.querySelector("tr.task td.c-duration");
    const once = () => {
      const t0 = performance.now();
      cell.textContent = cell.textContent + " ";
      void table.offsetHeight;
      return performance.now() - t0;
    };
    // the whole table laid out from scratch (hidden, then shown), as after its first render
    const whole = () => {
      table.style.display = "none";
      void table.offsetHeight;
      const t0 = performance.now();
      table.style.display = "";
      void table.offsetHeight;
      return performance.now() - t0;
    };
    const median = (f) => { const xs = [1, 2, 3].map(f).sort((a, b) => a - b); return xs[1]; };
    const out = {};
    for (const [name, prop, value] of [["auto", "", ""], ["fixed", "tableLayout", "fixed"],
                                       ["separate", "borderCollapse", "separate"]]) {
      if (prop) table.style[prop] = value;
      void table.offsetHeight;
      out[`${name}_ms`] = median(once);
      out[`${name}_whole_ms`] = median(whole);
      if (prop) table.style[prop] = "";
    }
    void table.offsetHeight;
    return out;
  });
}

async function main() {
  if (cfg.blank) {
    await page.goto("about:blank");
    return { blank: await window_(cfg.seconds || 30) };
  }
  const first = await firstRender();
  const heapAtRender = (await metrics()).JSHeapUsedSize / (1 << 20);
  const w = await window_(cfg.seconds || 30);
  const prof = cfg.profile_s ? await profile(cfg.profile_s) : null;
  const probe = await layoutProbe();
  return { ...first, heap_render_mb: heapAtRender, window: w, profile: prof, layout_probe: probe };
}

const shot = (name) => (cfg.artifacts ? page.screenshot({ path: `${cfg.artifacts}/scale-page-${name}.png` }) : null);
await finish(b, main, { step: () => step, shot });
