// tony's live job page: polls the coordinator's JSON API (GET v1/job with an
// ETag, v1/events, a task's log and metrics) and redraws only what changed.
// Plain JS, no dependencies; every URL is relative to the page so it works
// behind YARN's web proxy.
"use strict";

const POLL_MS = 1000;          // job summary and task table
const METRICS_MS = 5000;       // the table's memory and CPU columns (executors sample every 5 s by default)
const SLOW_POLL_MS = 2000;     // events and the open task's metrics
const GONE_RETRY_MS = 5000;    // while the coordinator does not answer
const LOG_KEEP_CHARS = 512 * 1024; // the log panel keeps the newest output only
const LOG_CHUNK = 64 * 1024;   // what one log call answers at most (AM_LOG_CHUNK)
// A job of more tasks than this gets per-role summary lines and a table of
// one page of tasks (GET v1/job?offset=&limit=): the browser's layout of a
// table of thousands of rows froze the page for seconds on every update
// (bench/REPORT.md, "The job page at scale"). Smaller jobs list every task.
const PAGE_THRESHOLD = 200;
const PAGE_ROWS = 100;

const $ = (id) => document.getElementById(id);

const ui = {
  job: null,          // the last /v1/job answer, with the last metrics merged in
  etags: new Map(),   // the URL asked -> its last ETag (each shape and page of the answer has its own)
  metricsAt: 0,       // Date.now() of the last answer with metrics
  metrics: new Map(), // "role:index" -> {metrics, last_sample} from that answer
  rows: new Map(),    // "role:index" -> {tr, sig, task}
  groups: new Map(),  // role -> {tbody, head}
  lastOk: 0,          // Date.now() of the last answer
  failures: 0,
  gone: false,
  selected: null,     // {role, index} of the open panel
  log: null,          // {key, stream, attempt, next, busy, decoder}
  logAttempt: null,   // the attempt picked for the log tail; null: the task's latest
  eventsSince: 0,
  serverEvents: null, // true once v1/events answered, false once it 404ed
  localSeq: 0,
  seenStates: new Map(),
  metricsBusy: false,
  world: new Map(),   // elastic jobs: world version -> {t_ms, size}, from WORLD_CHANGED events (or seen by polls)
  // the paged table (jobs of over PAGE_THRESHOLD tasks): on once an answer says so;
  // filter: the one state whose tasks it pages ("": every task), total: how many it pages
  page: { on: false, offset: 0, total: 0, filter: "" },
  selTask: null,      // the open task as last seen: it may be on another page than the one shown
  pollTimer: 0,
  pollBusy: false,
  pollAgain: false,   // the page changed while a poll was out: poll again at once
};

// ---------- formatting ----------

// One formatter for every time shown: toLocaleTimeString with options builds
// a new one per call, which at thousands of cells was most of the script time.
const timeFormat = new Intl.DateTimeFormat([], { hour: "numeric", minute: "numeric", second: "numeric", hour12: false });

function fmtTime(ms) {
  if (!ms) return "–";
  return timeFormat.format(new Date(ms));
}

function taskKey(t) { return `${t.role}:${t.index}`; }

function stateClass(s) { return "st-" + String(s || "unknown").toLowerCase(); }

function setText(el, text) {
  if (el.textContent !== text) el.textContent = text;
}

// ---------- the job ----------

// Each second the job without its tasks' metrics (which change with every
// sample, so a job of hundreds of tasks would never be "unchanged"), and the
// metrics only every METRICS_MS: mostly bodiless 304s however many tasks.
// A paged job asks for its page of tasks only, which also brings every
// task's state counted by role (task_counts). Until the first answer the page
// asks for up to PAGE_THRESHOLD + 1 tasks: a small job's answer is then its
// whole list, a large one's says how many there are. A state filter has the
// coordinator page the tasks in that state only (its 3 failed tasks among
// thousands are one page).
function jobQuery(full) {
  const q = [];
  if (!full) q.push("metrics=0");
  if (ui.page.on) q.push(`offset=${ui.page.offset}`, `limit=${PAGE_ROWS}`);
  if (ui.page.on && ui.page.filter) q.push(`state=${encodeURIComponent(ui.page.filter)}`);
  else if (!ui.job) q.push("offset=0", `limit=${PAGE_THRESHOLD + 1}`);
  return q.length ? "v1/job?" + q.join("&") : "v1/job";
}

async function pollJob() {
  let next = POLL_MS;
  ui.pollBusy = true;
  try {
    const full = Date.now() - ui.metricsAt >= METRICS_MS;
    const url = jobQuery(full);
    const headers = { "X-Tony-UI": "1" };
    if (ui.etags.has(url)) headers["If-None-Match"] = ui.etags.get(url);
    const r = await tonyFetch(url, { headers, cache: "no-store" });
    // (a page left meanwhile: the new one is asked for with its metrics at once)
    if (full && (r.ok || r.status === 304) && url === jobQuery(full)) ui.metricsAt = Date.now();
    if (r.status === 304) {
      markAlive();
    } else if (r.ok) {
      ui.etags.set(url, r.headers.get("ETag"));
      const job = await r.json();
      markAlive();
      // an answer for a page the reader has since left is not shown
      if (url === jobQuery(full) || !ui.job) renderJob(withMetrics(job, full));
    } else if (r.status === 403) {
      // no token, or another job's: the coordinator says how to get in
      let msg = "this page needs the job's read token: open the link `tony submit` or `tony status` prints";
      try { msg = (await r.json()).error || msg; } catch (e) { /* keep ours */ }
      const err = new Error(msg);
      err.refused = true;
      throw err;
    } else {
      throw new Error(`HTTP ${r.status}`);
    }
  } catch (e) {
    markGone(e);
    next = ui.job && ui.job.state === "FINISHED" ? GONE_RETRY_MS * 2 : GONE_RETRY_MS;
  }
  ui.pollBusy = false;
  if (ui.pollAgain && !ui.gone) { ui.pollAgain = false; next = 0; }
  ui.pollTimer = setTimeout(pollJob, next);
}

// The reader moved to another page of tasks: show it now, with its metrics.
function pollJobNow() {
  ui.metricsAt = 0;
  if (ui.pollBusy) { ui.pollAgain = true; return; }
  clearTimeout(ui.pollTimer);
  pollJob();
}

// A full answer's metrics are kept; a light one gets them back, so the
// table shows the last known memory and CPU of every task.
function withMetrics(job, full) {
  for (const t of job.tasks || []) {
    const key = taskKey(t);
    if (full) {
      ui.metrics.set(key, { metrics: t.metrics, last_sample: t.last_sample });
    } else {
      const m = ui.metrics.get(key);
      if (m) Object.assign(t, m);
    }
  }
  return job;
}

function markAlive() {
  ui.lastOk = Date.now();
  ui.failures = 0;
  if (ui.gone) {
    ui.gone = false;
    $("conn").hidden = true;
    document.body.classList.remove("gone");
  }
}

function markGone(err) {
  ui.failures++;
  // One missed poll is noise (a busy coordinator); two is a state worth saying.
  if (ui.failures < 2 && ui.job && ui.job.state !== "FINISHED") return;
  ui.gone = true;
  document.body.classList.add("gone");
  const c = $("conn");
  const j = ui.job;
  const since = ui.lastOk ? ` since ${fmtTime(ui.lastOk)}` : "";
  let msg;
  if (j && j.state === "FINISHED") {
    msg = `Job finished: ${j.final_status}. The coordinator has exited; this is its final state.`;
    c.className = "conn finished";
  } else if (j) {
    msg = `The coordinator is gone${since} (${err.message || err}). The job has most likely ended; ` +
          `\`tony status ${j.app_id}\` shows its final state. Retrying…`;
    c.className = "conn lost";
  } else if (err.refused) {
    msg = `Refused: ${err.message}`;
    c.className = "conn lost";
  } else {
    msg = `Cannot reach the coordinator (${err.message || err}). Retrying…`;
    c.className = "conn lost";
  }
  setText(c, msg);
  c.hidden = false;
}

function renderJob(job) {
  const prev = ui.job;
  ui.job = job;
  setText($("app-id"), job.app_id || "?");
  setText($("job-name"), job.name || "");
  document.title = `${job.name ? job.name + " " : ""}${job.app_id} – ${job.state} – tony`;
  const st = $("job-state");
  setText(st, job.state);
  st.className = "badge " + stateClass(job.state);
  const fs = $("final-status");
  const showFinal = job.final_status && job.final_status !== "UNDEFINED";
  setText(fs, showFinal ? job.final_status : "");
  fs.hidden = !showFinal;
  fs.className = "badge " + stateClass(job.final_status);
  // restarts after a failure, apart from an elastic world's changes (RESIZED: nothing failed)
  const ends = (job.attempts || []).filter((a) => a.attempt < job.attempt);
  const resized = ends.filter((a) => a.end === "RESIZED").length;
  const retried = job.attempt - resized;
  const parts = [];
  if (retried > 0) parts.push(`${retried} restart${retried > 1 ? "s" : ""}`);
  if (resized > 0) parts.push(`${resized} world change${resized > 1 ? "s" : ""}`);
  const restarts = parts.length ? ` (${parts.join(", ")})` : "";
  setText($("attempt"), `${job.attempt}${restarts}` + (job.retries_left != null ? `, ${job.retries_left} left` : ""));
  // an elastic job's world: its version and size, each role's count of its bounds
  $("world-box").hidden = !job.world;
  if (job.world) {
    const roles = Object.entries(job.world.roles || {}).map(([r, w]) =>
      `${r} ${w.in} of ${w.min}..${w.max}` + (w.target !== w.max ? ` (scaled to ${w.target})` : ""));
    setText($("world"), `${job.world.size} task(s), version ${job.world.version}: ${roles.join(", ")}`);
  }
  renderWorldPlot(job);
  setText($("started"), fmtTime(job.started_ms));
  setText($("backend"), job.backend || "–");
  // the framework as the user set it: a default says so
  setText($("framework"), (job.framework || "–") + (job.framework_default ? " (default)" : ""));
  // The root cause first: the first task to fail and its last words, for a
  // failed job, or while it goes on after a failed attempt. Not for one
  // that succeeded on a later attempt: its diagnostics say that.
  const cause = $("root-cause");
  const over = job.state === "FINISHED";
  const failed = over && job.final_status !== "SUCCEEDED";
  const showCause = !!(job.root_cause && job.root_cause.text && (!over || failed));
  setText(cause, showCause ? (over ? job.root_cause.text : `Last failed attempt. ${job.root_cause.text}`) : "");
  cause.hidden = !showCause;
  // the diagnostics without the root cause the box above shows already
  let d = job.diagnostics || "";
  if (showCause && d.includes(job.root_cause.text)) d = d.replace(job.root_cause.text, "").replace(/\s+$/, "");
  const diag = $("diagnostics");
  setText(diag, d);
  diag.hidden = !d;
  const tasks = job.tasks || [];
  const ntasks = job.tasks_total != null ? job.tasks_total : tasks.length;
  renderCoordinatorRestart(job.coordinator_restarted, ntasks);
  const tb = $("tb-link");
  if (job.tensorboard_url) {
    // Through the coordinator's redirect: behind YARN's proxy that serves
    // TensorBoard itself, where the task's own address may be unreachable.
    if (tb.getAttribute("href") !== "tensorboard/") tb.setAttribute("href", "tensorboard/");
    setText(tb, job.tensorboard_task ? `TensorBoard (${job.tensorboard_task})` : "TensorBoard");
    tb.title = `${job.tensorboard_url}, the TB_PORT of ${job.tensorboard_task || "its task"}`;
    tb.hidden = false;
  } else {
    tb.hidden = true;
  }
  renderAdvice(job.advice);
  renderExcludedNodes(job.excluded_nodes);
  const counts = job.task_counts || countStates(tasks);
  setPaged(ntasks > PAGE_THRESHOLD, counts, ntasks, job.tasks_matching);
  // a paged table shows one page, whatever the answer listed (the first
  // answer's PAGE_THRESHOLD + 1 tasks, or a whole list while the job grew)
  let shown = tasks;
  if (ui.page.on && job.tasks_total == null) {
    shown = tasks.filter((t) => !ui.page.filter || t.state === ui.page.filter)
      .slice(ui.page.offset, ui.page.offset + PAGE_ROWS);
  } else if (ui.page.on) {
    shown = tasks.slice(0, PAGE_ROWS);
  }
  renderTasks(shown, counts, ntasks);
  // After a restart the open task's log is the new attempt's, unless the
  // reader picked an earlier one.
  if (ui.selected) renderAttemptPicker();
  if (ui.log && ui.logAttempt == null && job.attempt !== (prev && prev.attempt) && prev) openLog(ui.log.stream);
  if (ui.serverEvents !== true) noteTransitions(prev, job);
  tick();
}

// A list of the job panel (advice, bad nodes), redrawn only when it changed:
// one <li> per item, a bold head then the text.
function renderList(ul, items, item) {
  const sig = JSON.stringify(items);
  if (ul.dataset.sig === sig) return;
  ul.dataset.sig = sig;
  ul.replaceChildren(...items.map((x) => {
    const [head, text] = item(x);
    const li = document.createElement("li");
    const b = document.createElement("b");
    b.textContent = head;
    li.append(b, document.createTextNode(text));
    return li;
  }));
  ul.hidden = items.length === 0;
}

// Bad nodes: those the job keeps its containers off, and those it found bad
// but could not exclude (the cap), each with its task and reason.
function renderExcludedNodes(nodes) {
  renderList($("excluded-nodes"), Array.isArray(nodes) ? nodes : [], (e) => [
    e.excluded ? `node ${e.node} excluded: ` : `node ${e.node} bad, not excluded (${e.refused}): `,
    `${e.task} in attempt ${e.attempt}: ${e.reason}`,
  ]);
}

// The coordinator was lost and this one replaced it (YARN's next AM
// attempt): while its tasks come back, then how many did.
function renderCoordinatorRestart(cr, ntasks) {
  const el = $("coordinator-restart");
  const text = !cr ? ""
    : cr.waiting ? "Coordinator restarted: waiting for the tasks of the lost one to come back."
    : `Coordinator restarted: ${cr.adopted} of ${ntasks} task${ntasks === 1 ? "" : "s"} taken back` +
      (cr.adopted === ntasks ? " without a restart." : ".");
  setText(el, text);
  el.hidden = !text;
}

function renderAdvice(advice) {
  renderList($("advice"), Array.isArray(advice) ? advice : [], (a) => {
    const text = a.text || "";
    // the advice may already start with its role's name
    return [a.role && !text.startsWith(`${a.role}:`) ? `${a.role}: ` : "", text];
  });
}

// ---------- the task table: one tbody per role, rows redrawn only on change ----------

const COLS = ["task", "addr", "state", "exit", "attempt", "start", "end", "duration", "mem", "cpu"];

// The kernel's peak (reported when the task ends) where there is one, else the samples' maximum.
function peakBytes(m) {
  return m.PEAK_MEMORY_BYTES != null && m.PEAK_MEMORY_BYTES >= 0 ? m.PEAK_MEMORY_BYTES : m.MAX_MEMORY_BYTES;
}

function taskCells(t, job) {
  const m = t.metrics || {};
  const s = t.last_sample || null;
  const req = t.requested || {};
  let mem = s && s.rss_bytes != null ? fmtBytes(s.rss_bytes) : fmtBytes(peakBytes(m));
  if (mem !== "–" && req.memory_bytes > 0) mem += ` / ${fmtBytes(req.memory_bytes)}`;
  const cpu = s && s.cpu_percent != null ? fmtPercent(s.cpu_percent) : fmtPercent(m.AVG_CPU_PERCENT);
  // stopped because another task failed first: that, not its SIGTERM
  const exit = t.stopped_by ? `stopped: ${t.stopped_by} failed first`
    : t.exit_status != null ? t.exit_meaning || `exit status ${t.exit_status}` : "";
  const attempt = String(t.attempt != null ? t.attempt : job.attempt);
  const starts = t.starts || 0;
  return {
    task: `${t.role}:${t.index}` + (t.chief ? " (chief)" : ""),
    addr: t.host ? `${t.host}:${t.port}` : "–",
    state: t.state || "?",
    exit: exit || "–",
    diag: t.diagnostics || "",
    attempt: starts > 1 ? `${attempt} (started ${starts}×)` : attempt,
    runs: runsSummary(t.runs),
    start: fmtTime(t.started_ms),
    end: fmtTime(t.finished_ms),
    mem,
    cpu,
    log: t.log_url || "",
    stacks: t.stacks || "",
  };
}

// A link beside the task's name that opens elsewhere (the row itself
// opens the panel).
function appendLink(td, href, className, title, text) {
  const a = document.createElement("a");
  a.className = className;
  a.href = href;
  a.target = "_blank";
  a.rel = "noopener";
  a.title = title;
  a.textContent = text;
  a.addEventListener("click", (e) => e.stopPropagation());
  td.append(" ", a);
}

// A YARN task on a node with a web UI: its NodeManager's page of the
// container's logs.
function renderLogLink(td, url) {
  if (!url || !/^https?:\/\//.test(url)) return;
  appendLink(td, url, "nm-log", "this task's container logs on its NodeManager", "logs ↗");
}

// Hang diagnosis: the task's stacks, once a progress timeout collected them
// (the coordinator serves them as text; relative, so YARN's proxy works).
function renderStacksLink(td, url) {
  if (!url) return;
  appendLink(td, tonyLink(url.replace(/^\//, "")), "stacks",
             "the stacks of this task's processes, collected when the attempt hung (tony.task.progress-timeout)",
             "stacks ↗");
}

// Each attempt the task ran in, for the Attempt cell's tooltip.
function runsSummary(runs) {
  if (!Array.isArray(runs)) return "";
  return runs.map((r) => `attempt ${r.attempt}: ${r.state}` + (r.exit_meaning ? `, ${r.exit_meaning}` : "") +
                  (r.started ? "" : " (not started)")).join("\n");
}

// The attempts whose logs the task has, newest last.
function taskAttempts(t) {
  const list = Array.isArray(t.runs) ? t.runs.map((r) => r.attempt) : [];
  const cur = t.attempt != null ? t.attempt : ui.job ? ui.job.attempt : 0;
  if (!list.includes(cur)) list.push(cur);
  return list;
}

function taskDuration(t) {
  if (!t.started_ms) return null;
  const end = t.finished_ms || (ui.job && ui.job.finished_ms) || (ui.gone ? ui.lastOk : Date.now());
  return end - t.started_ms;
}

function groupFor(role) {
  let g = ui.groups.get(role);
  if (g) return g;
  const tbody = document.createElement("tbody");
  tbody.className = "role-group";
  tbody.dataset.role = role;
  const head = document.createElement("tr");
  head.className = "role-head";
  const th = document.createElement("th");
  th.colSpan = COLS.length;
  head.append(th);
  tbody.append(head);
  $("tasks").append(tbody);
  g = { tbody, head: th };
  ui.groups.set(role, g);
  return g;
}

function newRow(t) {
  const tr = document.createElement("tr");
  tr.className = "task";
  tr.tabIndex = 0;
  tr.dataset.task = taskKey(t);
  for (const c of COLS) {
    const td = document.createElement("td");
    td.className = "c-" + c;
    tr.append(td);
  }
  const open = () => selectTask(t.role, t.index);
  tr.addEventListener("click", open);
  tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(); });
  return tr;
}

// {role: {state: n}} of a list of tasks, as the coordinator's task_counts.
function countStates(tasks) {
  const counts = {};
  for (const t of tasks) {
    const c = counts[t.role] || (counts[t.role] = {});
    c[t.state] = (c[t.state] || 0) + 1;
  }
  return counts;
}

function statesSummary(states) {
  return Object.entries(states || {}).map(([s, n]) => `${n} ${s}`).join(", ");
}

function roleTotal(states) {
  return Object.values(states || {}).reduce((a, n) => a + n, 0);
}

function roleLine(role, states) {
  const n = roleTotal(states);
  return `${role} — ${n} task${n > 1 ? "s" : ""}: ${statesSummary(states)}`;
}

// tasks: the rows to show (every task, or one page of them); counts: every
// task's state by role; ntasks: how many tasks the job has.
function renderTasks(tasks, counts, ntasks) {
  const byRole = new Map();
  const seen = new Set();
  for (const t of tasks) {
    if (!byRole.has(t.role)) byRole.set(t.role, []);
    byRole.get(t.role).push(t);
  }
  for (const [role, list] of byRole) {
    const g = groupFor(role);
    setText(g.head, roleLine(role, counts[role] || countStates(list)[role]));
    for (const t of list) {
      const key = taskKey(t);
      seen.add(key);
      let row = ui.rows.get(key);
      if (!row) {
        row = { tr: newRow(t), sig: "" };
        g.tbody.append(row.tr);
        ui.rows.set(key, row);
        watchRow(row.tr);
      }
      row.task = t;
      if (isSelected(t)) ui.selTask = t;
      const cells = taskCells(t, ui.job);
      const sig = JSON.stringify(cells);
      if (sig === row.sig) continue; // unchanged: leave the DOM alone
      row.sig = sig;
      // in place, and each cell only where it changed: a change costs the
      // layout of what changed, not a rebuilt row
      const tds = row.tr.children;
      COLS.forEach((c, i) => { if (c in cells && c !== "exit" && c !== "task") setText(tds[i], cells[c]); });
      const at = tds[COLS.indexOf("attempt")];
      if (at.title !== cells.runs) at.title = cells.runs;
      const starts = String(t.starts || 0);
      if (at.dataset.starts !== starts) at.dataset.starts = starts;
      renderTaskCell(tds[COLS.indexOf("task")], cells);
      renderExit(tds[COLS.indexOf("exit")], cells.exit, cells.diag);
      const cls = "task " + stateClass(t.state) + (isSelected(t) ? " selected" : "");
      if (row.tr.className !== cls) row.tr.className = cls;
      if (row.tr.dataset.state !== t.state) row.tr.dataset.state = t.state;
    }
  }
  for (const [key, row] of ui.rows) {
    if (!seen.has(key)) { unwatchRow(row.tr); row.tr.remove(); ui.rows.delete(key); }
  }
  for (const [role, g] of ui.groups) {
    if (!byRole.has(role)) { g.tbody.remove(); ui.groups.delete(role); }
  }
  const total = {};
  for (const states of Object.values(counts)) {
    for (const [st, n] of Object.entries(states)) total[st] = (total[st] || 0) + n;
  }
  setText($("task-counts"), `${ntasks}: ${statesSummary(total)}`);
}

// The task's name and its links, rebuilt only when one of them changed.
function renderTaskCell(td, cells) {
  const sig = `${cells.task}\n${cells.log}\n${cells.stacks}`;
  if (td.dataset.sig === sig) return;
  td.dataset.sig = sig;
  td.textContent = cells.task;
  renderLogLink(td, cells.log);
  renderStacksLink(td, cells.stacks);
}

// ---------- the paged table: per-role summary lines, prev/next, a role's first page ----------

// matching: how many tasks the answer's filter took (tasks_matching).
function setPaged(on, counts, ntasks, matching) {
  ui.page.on = on;
  if (!on) ui.page.filter = "";
  ui.page.total = !on ? 0 : matching != null ? matching : filteredTotal(counts, ui.page.filter);
  if (!on) ui.page.offset = 0;
  else if (ui.page.offset >= ui.page.total) ui.page.offset = Math.max(0, Math.floor((ui.page.total - 1) / PAGE_ROWS) * PAGE_ROWS);
  $("paging").hidden = !on;
  if (on) renderPaging(counts);
}

// How many of a role's tasks the filter takes ("": all of them).
function filteredCount(states, filter) {
  return filter ? (states || {})[filter] || 0 : roleTotal(states);
}

function filteredTotal(counts, filter) {
  return Object.values(counts).reduce((a, states) => a + filteredCount(states, filter), 0);
}

// Each role's first task's offset among those the filter takes: the job
// lists its tasks by role, in the plan's order, which task_counts keeps.
function roleOffsets(counts, filter) {
  const out = [];
  let at = 0;
  for (const [role, states] of Object.entries(counts)) {
    const n = filteredCount(states, filter);
    out.push({ role, offset: at, size: n });
    at += n;
  }
  return out;
}

// A role's summary line, each of its state counts a button that pages the
// tasks in that state from that role's first one.
function roleSummaryItem(role, states) {
  const li = document.createElement("li");
  li.dataset.role = role;
  const n = roleTotal(states);
  li.append(`${role} — ${n} task${n > 1 ? "s" : ""}: `);
  Object.entries(states || {}).forEach(([st, k], i) => {
    const b = document.createElement("button");
    b.type = "button";
    b.className = "state-link " + stateClass(st) + (st === ui.page.filter ? " on" : "");
    b.dataset.state = st;
    b.title = `show ${role}'s ${st} tasks (the state filter)`;
    b.textContent = `${k} ${st}`;
    b.addEventListener("click", () => filterTo(st, role));
    li.append(i ? ", " : "", b);
  });
  return li;
}

// The state menu: every task, or one state present in the job (and the one
// filtered on, when none is left in it), with its count.
function renderStateMenu(counts) {
  const total = {};
  for (const states of Object.values(counts)) {
    for (const [st, n] of Object.entries(states)) total[st] = (total[st] || 0) + n;
  }
  const f = ui.page.filter;
  if (f && !(f in total)) total[f] = 0;
  const all = filteredTotal(counts, "");
  const opts = [["", `all (${all})`], ...Object.entries(total).map(([st, n]) => [st, `${st} (${n})`])];
  const sel = $("page-state");
  const sig = JSON.stringify(opts);
  if (sel.dataset.sig !== sig) {
    sel.dataset.sig = sig;
    sel.replaceChildren(...opts.map(([v, label]) => new Option(label, v)));
  }
  if (sel.value !== f) sel.value = f;
}

function renderPaging(counts) {
  const f = ui.page.filter;
  const roles = roleOffsets(counts, f).filter((r) => !f || r.size > 0);
  const ul = $("role-summary");
  const sig = JSON.stringify([counts, f]);
  if (ul.dataset.sig !== sig) {
    ul.dataset.sig = sig;
    ul.replaceChildren(...Object.entries(counts).map(([role, states]) => roleSummaryItem(role, states)));
  }
  renderStateMenu(counts);
  const sel = $("page-role");
  const rsig = roles.map((r) => `${r.role}@${r.offset}`).join(",");
  if (sel.dataset.sig !== rsig) {
    sel.dataset.sig = rsig;
    sel.replaceChildren(...roles.map((r) => new Option(r.role, String(r.offset))));
  }
  const { offset, total } = ui.page;
  const here = roles.filter((r) => r.offset <= offset).pop();
  if (here) sel.value = String(here.offset);
  $("page-prev").disabled = offset === 0;
  $("page-next").disabled = offset + PAGE_ROWS >= total;
  const range = `tasks ${offset + 1}–${Math.min(offset + PAGE_ROWS, total)} of ${total}`;
  setText($("page-info"), !f ? range : total ? `${f}: ${range}` : `no ${f} task now`);
}

function goPage(offset) {
  const max = Math.max(0, ui.page.total - 1);
  ui.page.offset = Math.max(0, Math.min(offset, max));
  setText($("page-info"), `loading tasks ${ui.page.offset + 1}–…`);
  // an ETag of this page from an earlier visit would answer 304 and leave the table on the page left
  ui.etags.clear();
  pollJobNow();
}

// Pages the tasks in one state ("": every task), from the role's first one
// among them (none: the first page).
function filterTo(state, role) {
  const counts = (ui.job && ui.job.task_counts) || {};
  ui.page.filter = state;
  ui.page.total = filteredTotal(counts, state);
  const r = roleOffsets(counts, state).filter((x) => x.role === role)[0];
  renderPaging(counts);
  goPage(r ? r.offset : 0);
}

// The exit status in words, then the backend's diagnostics (often long:
// paths, stack traces) on a clamped line whose full text is the tooltip.
function renderExit(td, meaning, diag) {
  const sig = `${meaning}\n${diag}`;
  if (td.dataset.sig === sig) return;
  td.dataset.sig = sig;
  const main = document.createElement("span");
  main.textContent = meaning;
  if (!diag) {
    td.replaceChildren(main);
    return;
  }
  const d = document.createElement("div");
  d.className = "diag-line";
  d.textContent = diag;
  d.title = diag;
  td.replaceChildren(main, d);
}

// The open task as last seen: its row's, or as it was when it left the page.
function selectedTask() {
  if (!ui.selected) return null;
  const row = ui.rows.get(`${ui.selected.role}:${ui.selected.index}`);
  return row ? row.task : ui.selTask;
}

function isSelected(t) {
  return ui.selected && ui.selected.role === t.role && ui.selected.index === t.index;
}

// What ticks without new data: the job's elapsed time, running tasks' durations.
// Rows on screen: the durations ticking every second are redrawn only there,
// so a job of hundreds of tasks costs a screenful of text changes a second,
// not a relayout of the whole table. A row coming into view is brought up
// to date at once.
const visibleRows = new Set();
const rowObserver = "IntersectionObserver" in window
  ? new IntersectionObserver((entries) => {
    for (const e of entries) {
      if (e.isIntersecting) {
        visibleRows.add(e.target);
        const row = ui.rows.get(e.target.dataset.task);
        if (row) updateDuration(row);
      } else {
        visibleRows.delete(e.target);
      }
    }
  })
  : null;

function watchRow(tr) { if (rowObserver) rowObserver.observe(tr); }
function unwatchRow(tr) {
  if (rowObserver) rowObserver.unobserve(tr);
  visibleRows.delete(tr);
}

function updateDuration(row) {
  setText(row.tr.children[COLS.indexOf("duration")], fmtDuration(taskDuration(row.task)));
}

function tick() {
  const j = ui.job;
  if (!j) return;
  const end = j.finished_ms || (ui.gone ? ui.lastOk : Date.now());
  setText($("elapsed"), fmtDuration(end - j.started_ms));
  for (const row of ui.rows.values()) {
    if (!rowObserver || visibleRows.has(row.tr)) updateDuration(row);
  }
}

// ---------- the task panel: log tail and metrics ----------

function selectTask(role, index) {
  ui.selected = { role, index };
  const row = ui.rows.get(`${role}:${index}`);
  ui.selTask = row ? row.task : null;
  for (const row of ui.rows.values()) row.tr.classList.toggle("selected", isSelected(row.task));
  const panel = $("task-panel");
  const wasHidden = panel.hidden;
  panel.hidden = false;
  setText($("panel-title"), `${role}:${index}`);
  ui.logAttempt = null;
  renderAttemptPicker();
  // Beside the table on wide screens; below it otherwise, so bring it in view.
  if (wasHidden && panel.getBoundingClientRect().top > window.innerHeight) panel.scrollIntoView({ block: "start" });
  openLog(currentStream());
  $("plots").replaceChildren(note("loading metrics…"));
  pollMetrics();
}

function currentStream() {
  const b = document.querySelector(".tabs button.active");
  return b ? b.dataset.stream : "stdout";
}

// The log tail's attempt menu: every attempt the open task ran in, the
// latest first ("latest" follows restarts).
function renderAttemptPicker() {
  const sel = $("log-attempt");
  const task = selectedTask();
  const attempts = task ? taskAttempts(task) : [];
  const sig = attempts.join(",");
  if (sel.dataset.sig !== sig) {
    sel.dataset.sig = sig;
    const latest = attempts[attempts.length - 1];
    const opts = [new Option(`latest (${latest})`, "")];
    for (const a of attempts.slice(0, -1).reverse()) opts.push(new Option(String(a), String(a)));
    sel.replaceChildren(...opts);
  }
  sel.value = ui.logAttempt == null ? "" : String(ui.logAttempt);
  $("log-attempt-pick").hidden = attempts.length < 2;
}

function openLog(stream) {
  const { role, index } = ui.selected;
  const t = selectedTask();
  const latest = t && t.attempt != null ? t.attempt : ui.job ? ui.job.attempt : 0;
  const attempt = ui.logAttempt != null ? ui.logAttempt : latest;
  ui.log = { key: `${role}:${index}`, role, index, stream, attempt, next: 0, busy: false, first: true,
             decoder: null };
  $("log").textContent = "";
  setText($("panel-info"), `${stream} of attempt ${attempt}`);
  pollLog();
}

async function pollLog() {
  const L = ui.log;
  if (!L || L.busy) return;
  L.busy = true;
  try {
    // Several rounds when the task wrote more than one call answers.
    for (let round = 0; round < 8 && ui.log === L; round++) {
      const q = `stream=${L.stream}&offset=${L.next}&attempt=${L.attempt}`;
      const r = await tonyFetch(`v1/tasks/${encodeURIComponent(L.role)}/${L.index}/log?${q}`, { cache: "no-store" });
      if (ui.log !== L) return;
      if (r.status === 400 && L.next > 0) {
        // Past the log's end: the log cap (tony.task.log-max-size) cut it
        // under us. On from near its new end, as for a long log.
        L.next = 0;
        L.first = true;
        appendLog(`\n… the log was cut here (tony.task.log-max-size) …\n`);
        continue;
      }
      if (!r.ok) {
        let msg = `HTTP ${r.status}`;
        try { msg = (await r.json()).error || msg; } catch (e) { /* keep the status */ }
        setText($("panel-info"), `${L.stream} of attempt ${L.attempt}: ${msg}`);
        return;
      }
      const d = await r.json();
      if (ui.log !== L) return;
      if (L.first && d.size - d.next > 2 * LOG_CHUNK) {
        // A long log: start near its end rather than page through all of it.
        L.first = false;
        L.next = Math.max(0, d.size - LOG_CHUNK);
        appendLog(`… ${fmtBytes(L.next)} earlier output not shown …\n`);
        continue;
      }
      L.first = false;
      if (d.data) appendLog(d.data);
      const moved = d.next !== L.next;
      L.next = d.next;
      const where = d.exists === false ? "no output yet" : `${fmtBytes(d.size)}`;
      setText($("panel-info"), `${L.stream} of attempt ${L.attempt} — ${where}`);
      if (!moved || d.next >= d.size) break;
    }
  } catch (e) {
    // The coordinator is gone: the job poll says so; the log keeps what it has.
  } finally {
    L.busy = false;
  }
}

function appendLog(text) {
  const pre = $("log");
  const atBottom = pre.scrollTop + pre.clientHeight >= pre.scrollHeight - 4;
  pre.append(document.createTextNode(text));
  if (pre.textContent.length > LOG_KEEP_CHARS) {
    pre.textContent = pre.textContent.slice(-LOG_KEEP_CHARS);
  }
  if ($("follow").checked || atBottom) pre.scrollTop = pre.scrollHeight;
}

async function pollMetrics() {
  const sel = ui.selected;
  if (!sel || ui.metricsBusy) return;
  ui.metricsBusy = true;
  try {
    const r = await tonyFetch(`v1/tasks/${encodeURIComponent(sel.role)}/${sel.index}/metrics`, { cache: "no-store" });
    if (ui.selected !== sel) return;
    if (r.status === 404 || r.status === 405) {
      $("plots").replaceChildren(note("no metrics yet"));
      return;
    }
    if (!r.ok) throw new Error(`HTTP ${r.status}`);
    const m = await r.json();
    if (ui.selected === sel) renderPlots(m, selectedTask());
  } catch (e) {
    if (ui.selected === sel && !$("plots").querySelector("svg")) $("plots").replaceChildren(note("no metrics yet"));
  } finally {
    ui.metricsBusy = false;
  }
}

function note(text) {
  const p = document.createElement("p");
  p.className = "muted";
  p.textContent = text;
  return p;
}

function renderPlots(m, task) {
  const plots = $("plots");
  const req = (task && task.requested) || {};
  const charts = metricCharts(m, req);
  plots.replaceChildren(...(charts.length ? charts : [note("no metrics yet")]));
}

// ---------- the timeline ----------

// An elastic job's world size over time, as a step plot above the events:
// version 0 is every task of the plan (each role's max) from the job's
// start; each WORLD_CHANGED event (its t_ms and world_size) a step. A
// change the page saw only through the job's JSON (no event log, or its
// event not read yet) steps at the time the page saw it.
function renderWorldPlot(job) {
  const box = $("world-plot");
  if (!job.world) { box.hidden = true; return; }
  if (!ui.world.has(0)) {
    const max = Object.values(job.world.roles || {}).reduce((n, r) => n + (r.max || 0), 0);
    ui.world.set(0, { t_ms: job.started_ms || Date.now(), size: max });
  }
  if (!ui.world.has(job.world.version)) ui.world.set(job.world.version, { t_ms: Date.now(), size: job.world.size, seen: true });
  const pts = [...ui.world.entries()].sort((a, b) => a[0] - b[0]).map(([, p]) => p);
  const end = job.finished_ms || Date.now();
  const sig = pts.map((p) => `${p.t_ms}:${p.size}`).join(",") + "/" + Math.floor(end / 5000);
  if (box.dataset.sig === sig) return;
  box.dataset.sig = sig;
  const max = Object.values(job.world.roles || {}).reduce((n, r) => n + (r.max || 0), 0);
  box.replaceChildren(stepChart("World size (tasks)", pts.map((p) => p.t_ms), pts.map((p) => p.size), end, max));
  box.hidden = false;
}

function noteWorldEvent(e) {
  if (e.type !== "WORLD_CHANGED" || typeof e.world_version !== "number") return;
  const p = ui.world.get(e.world_version);
  // the event's own time wins over when a poll happened to see the change
  if (!p || p.seen) ui.world.set(e.world_version, { t_ms: e.t_ms, size: e.world_size });
  if (ui.job) renderWorldPlot(ui.job);
}

async function pollEvents() {
  if (ui.serverEvents === false || ui.gone) return;
  try {
    const r = await tonyFetch(`v1/events?since=${ui.eventsSince}`, { cache: "no-store" });
    if (r.status === 404) {
      ui.serverEvents = false;
      const n = $("events-note");
      n.textContent = "This coordinator keeps no event log; the timeline shows the changes this page has seen.";
      n.hidden = false;
      return;
    }
    if (!r.ok) return;
    const d = await r.json();
    if (ui.serverEvents !== true) {
      ui.serverEvents = true;
      $("events").replaceChildren(); // the server's log replaces what the page noted
    }
    const events = d.events || [];
    addEvents(events);
    for (const e of events) noteWorldEvent(e);
    if (typeof d.next === "number") ui.eventsSince = d.next;
  } catch (e) {
    // gone: the job poll reports it
  }
}

// Without the server's events: what this page saw change between polls.
function noteTransitions(prev, job) {
  if (!prev) {
    addEvent({ t_ms: Date.now(), type: "JOB", text: `page opened: job ${job.state}` });
  } else if (prev.state !== job.state) {
    addEvent({ t_ms: Date.now(), type: "JOB", text: `job ${prev.state} → ${job.state}` +
               (job.final_status !== "UNDEFINED" ? ` (${job.final_status})` : "") });
  }
  const seen = [];
  for (const t of job.tasks || []) {
    const key = `${taskKey(t)}@${t.attempt != null ? t.attempt : job.attempt}`;
    const was = ui.seenStates.get(key);
    if (was !== t.state) {
      ui.seenStates.set(key, t.state);
      if (prev) {
        const extra = t.exit_status != null && t.state !== "RUNNING" ? `: ${t.exit_meaning || t.exit_status}` : "";
        seen.push({ t_ms: t.finished_ms || Date.now(), type: "TASK", task: taskKey(t), text: `${t.state}${extra}` });
      }
    }
  }
  addEvents(seen);
}

const EVENTS_KEPT = 2000;

function addEvent(e) { addEvents([e]); }

// Events in one batch: one layout read and one insertion whatever their
// number (a job of thousands of tasks answers its first v1/events with
// thousands; one at a time, each read of the list's scroll position laid the
// growing list out again, seconds at 1,000 tasks).
function addEvents(events) {
  if (!events.length) return;
  const ol = $("events");
  const atBottom = ol.scrollTop + ol.clientHeight >= ol.scrollHeight - 4;
  const frag = document.createDocumentFragment();
  for (const e of events.slice(-EVENTS_KEPT)) frag.append(eventItem(e));
  ol.append(frag);
  for (let extra = ol.children.length - EVENTS_KEPT; extra > 0; extra--) ol.firstElementChild.remove();
  if (atBottom) ol.scrollTop = ol.scrollHeight; // follow the newest, unless the reader scrolled up
}

function eventItem(e) {
  const li = document.createElement("li");
  li.className = "ev " + stateClass(e.type);
  const time = document.createElement("time");
  time.textContent = fmtTime(e.t_ms);
  const type = document.createElement("span");
  type.className = "ev-type";
  type.textContent = e.type || "";
  const task = document.createElement("span");
  task.className = "ev-task";
  task.textContent = e.task ? e.task + (e.attempt != null ? ` #${e.attempt}` : "") : "";
  const text = document.createElement("span");
  text.className = "ev-text";
  text.textContent = e.text || "";
  li.append(time, type, task, text);
  return li;
}

// ---------- wiring ----------

function slowPoll() {
  pollEvents();
  if (ui.selected && !ui.gone) pollMetrics();
}

function start() {
  document.querySelectorAll(".tabs button").forEach((b) => b.addEventListener("click", () => {
    document.querySelectorAll(".tabs button").forEach((o) => o.classList.toggle("active", o === b));
    if (ui.selected) openLog(b.dataset.stream);
  }));
  $("log-attempt").addEventListener("change", (e) => {
    ui.logAttempt = e.target.value === "" ? null : Number(e.target.value);
    if (ui.selected) openLog(currentStream());
  });
  $("panel-close").addEventListener("click", () => {
    ui.selected = null;
    ui.selTask = null;
    ui.log = null;
    $("task-panel").hidden = true;
    for (const row of ui.rows.values()) row.tr.classList.remove("selected");
  });
  $("page-prev").addEventListener("click", () => goPage(ui.page.offset - PAGE_ROWS));
  $("page-next").addEventListener("click", () => goPage(ui.page.offset + PAGE_ROWS));
  $("page-role").addEventListener("change", (e) => goPage(Number(e.target.value)));
  $("page-state").addEventListener("change", (e) => filterTo(e.target.value, null));
  pollJob();
  setInterval(tick, 1000);
  setInterval(() => { if (!ui.gone) pollLog(); }, POLL_MS);
  setInterval(slowPoll, SLOW_POLL_MS);
  slowPoll();
}

start();
