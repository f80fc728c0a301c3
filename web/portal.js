// tony's history portal: the job list (search, sort by any column) and one
// job's page at #/jobs/<appId> (summary, what is wrong with its files,
// right-sizing, tasks with exit meanings and logs, each task's metric plots,
// the timeline, the config). Reads the portal's API (v1/jobs...); every URL
// is relative. Plain JS, no dependencies; plots.js draws the charts.
"use strict";

const LIST_REFRESH_MS = 15000; // the list rescans the history dir this often while shown

const $ = (id) => document.getElementById(id);

const P = {
  jobs: [],
  sort: { key: "started_ms", dir: -1 }, // newest first, as `tony history`
  job: null,       // the open job's answer
  task: null,      // the task whose plots show
  seq: 0,          // guards against a slow answer for a page already left
};

// ---------- small helpers ----------

function el(tag, props, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props || {})) {
    if (v == null) continue;
    if (k === "text") e.textContent = v;
    else if (k === "cls") e.className = v;
    else if (k === "data") Object.assign(e.dataset, v);
    else e.setAttribute(k, v);
  }
  for (const k of kids) if (k != null) e.append(k);
  return e;
}

function pad(n) { return String(n).padStart(2, "0"); }

function fmtWhen(ms) {
  if (!ms) return "–";
  const d = new Date(ms);
  return `${d.getFullYear()}-${pad(d.getMonth() + 1)}-${pad(d.getDate())} ` +
         `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function fmtClock(ms) {
  if (!ms) return "–";
  const d = new Date(ms);
  return `${pad(d.getHours())}:${pad(d.getMinutes())}:${pad(d.getSeconds())}`;
}

function stateClass(s) { return "st-" + String(s || "unknown").toLowerCase(); }

async function getJSON(url) {
  const r = await tonyFetch(url, { cache: "no-store" });
  let body = null;
  try { body = await r.json(); } catch (e) { /* not JSON: the status says enough */ }
  if (!r.ok) throw new Error((body && body.error) || `HTTP ${r.status}`);
  return body;
}

function showConn(msg) {
  const c = $("conn");
  c.textContent = msg;
  c.hidden = false;
}

function hideConn() { $("conn").hidden = true; }

function fillProblems(ul, items) {
  ul.replaceChildren(...items.map((p) => el("li", { text: p })));
  ul.hidden = items.length === 0;
}

// ---------- the job list ----------

async function loadJobs() {
  const seq = ++P.seq;
  try {
    const d = await getJSON("v1/jobs");
    if (seq !== P.seq) return;
    hideConn();
    P.jobs = Array.isArray(d.jobs) ? d.jobs : [];
    $("where").textContent = d.location || "";
    $("where").title = `finished: ${d.finished}\nintermediate: ${d.intermediate}`;
    fillProblems($("list-problems"), d.problems || []);
    renderList();
  } catch (e) {
    if (seq === P.seq) showConn(`Cannot read the job list: ${e.message}`);
  }
}

function searchText(j) {
  return [j.app_id, j.name, j.user, j.status, j.framework, j.queue, ...Object.keys(j.roles || {})]
    .filter((x) => x).join(" ").toLowerCase();
}

function compare(a, b, key) {
  const x = a[key], y = b[key];
  const xn = x == null || x === "", yn = y == null || y === "";
  if (xn || yn) return xn && yn ? 0 : xn ? 1 : -1; // blanks last, whichever way
  if (typeof x === "number" && typeof y === "number") return (x - y) * P.sort.dir;
  return String(x).localeCompare(String(y), undefined, { numeric: true }) * P.sort.dir;
}

function rolesText(j) {
  const r = Object.entries(j.roles || {}).map(([k, v]) => `${v} ${k}`).join(", ");
  return j.task_count != null ? `${j.task_count}${r ? ` (${r})` : ""}` : "–";
}

function renderList() {
  const words = $("search").value.toLowerCase().split(/\s+/).filter((w) => w);
  const shown = P.jobs.filter((j) => { const t = searchText(j); return words.every((w) => t.includes(w)); });
  const key = P.sort.key;
  shown.sort((a, b) => compare(a, b, key) || String(b.app_id).localeCompare(String(a.app_id)));
  for (const th of document.querySelectorAll("#jobs thead th")) {
    const on = th.dataset.key === key;
    th.classList.toggle("sorted-asc", on && P.sort.dir > 0);
    th.classList.toggle("sorted-desc", on && P.sort.dir < 0);
    th.setAttribute("aria-sort", on ? (P.sort.dir > 0 ? "ascending" : "descending") : "none");
  }
  const rows = shown.map((j) => {
    const href = `#/jobs/${encodeURIComponent(j.app_id)}`;
    const id = el("td", { cls: "c-app_id" }, el("a", { href, text: j.app_id }));
    if (j.problems && j.problems.length) id.append(el("span", { cls: "warn", title: j.problems.join("\n"), text: "⚠" }));
    const status = j.lost ? "LOST" : j.in_progress ? "RUNNING" : j.status;
    const tr = el("tr", { cls: stateClass(status), tabindex: "0", data: { app: j.app_id } },
      id,
      el("td", { cls: "c-name", text: j.name || "–" }),
      el("td", { cls: "c-framework", text: j.framework || "–" }),
      el("td", { cls: "c-user", text: j.user || "–" }),
      el("td", { cls: "c-status", text: status || "?" }),
      el("td", { cls: "c-started", text: fmtWhen(j.started_ms) }),
      el("td", { cls: "c-finished", text: j.in_progress ? "running" : fmtWhen(j.finished_ms) }),
      el("td", { cls: "c-duration", text: fmtDuration(j.duration_ms) }),
      el("td", { cls: "c-tasks", text: rolesText(j) }));
    const open = (e) => { if (!e.target.closest("a")) location.hash = href; };
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(e); });
    return tr;
  });
  $("jobs").tBodies[0].replaceChildren(...rows);
  $("job-count").textContent = words.length ? `${shown.length} of ${P.jobs.length} jobs` : `${P.jobs.length} jobs`;
  const empty = $("empty");
  empty.hidden = shown.length > 0;
  empty.textContent = P.jobs.length ? "No job matches the search." :
    "No job in this history yet: jobs write it as they run (tony.history.location).";
}

function sortBy(key) {
  if (P.sort.key === key) P.sort.dir = -P.sort.dir;
  else P.sort = { key, dir: key.endsWith("_ms") || key === "task_count" ? -1 : 1 };
  renderList();
}

// ---------- one job ----------

async function openJob(id) {
  const seq = ++P.seq;
  $("list-view").hidden = true;
  $("job-view").hidden = false;
  $("crumb").textContent = ` / ${id}`;
  $("job-id").textContent = id;
  $("job-status").textContent = "loading…";
  $("job-status").className = "badge";
  try {
    const job = await getJSON(`v1/jobs/${encodeURIComponent(id)}`);
    if (seq !== P.seq) return;
    hideConn();
    P.job = job;
    document.title = `${job.app_id} – ${job.status} – tony history`;
    renderSummary(job);
    renderTasks(job);
    renderEvents(job);
    renderConfig(job);
    // the plots of the first task that has some, a failed one first
    const tasks = job.tasks || [];
    const withSeries = tasks.filter((t) => (t.series_attempts || []).length);
    const pick = withSeries.find((t) => t.status === "FAILED") || withSeries[0] || tasks[0];
    selectTask(pick || null);
  } catch (e) {
    if (seq !== P.seq) return;
    $("job-status").textContent = "not found";
    showConn(`Cannot show job ${id}: ${e.message}`);
  }
}

function fact(label, value, href) {
  const dd = el("dd");
  if (href) dd.append(el("a", { href: tonyLink(href), target: "_blank", rel: "noopener", text: value }));
  else dd.textContent = value;
  return el("div", {}, el("dt", { text: label }), dd);
}

function renderSummary(job) {
  const st = $("job-status");
  const status = job.lost ? "LOST" : job.in_progress ? "RUNNING" : job.status;
  st.textContent = status;
  st.className = "badge " + stateClass(status);
  const facts = [
    fact("User", job.user || "–"),
    fact("Started", fmtWhen(job.started_ms)),
    fact("Completed", job.in_progress ? "still running, or its coordinator died" : fmtWhen(job.finished_ms)),
    fact("Duration", fmtDuration(job.duration_ms)),
    fact("Name", job.name || "–"),
    fact("Framework", (job.framework || "–") + (job.framework_default ? " (default)" : "")),
    fact("Tasks", rolesText(job)),
  ];
  if (job.queue) facts.push(fact("Queue", job.queue));
  if (job.am_log) facts.push(fact("Coordinator", "am.log", job.am_log));
  facts.push(fact("History", job.file || job.dir || "–"));
  $("job-facts").replaceChildren(...facts);
  $("job-name").textContent = job.name || "";
  // a failed job's root cause first, above the advice
  const cause = $("root-cause");
  const text = job.root_cause && job.root_cause.text;
  cause.textContent = text || "";
  cause.hidden = !text;
  fillProblems($("job-problems"), job.problems || []);
  const advice = Array.isArray(job.advice) ? job.advice : [];
  $("advice").replaceChildren(...advice.map((a) => el("li", { text: a.text || "" })));
  $("advice").hidden = advice.length === 0;
}

function taskDuration(t) {
  return t.started_ms && t.finished_ms ? t.finished_ms - t.started_ms : null;
}

function logCell(t) {
  const td = el("td", { cls: "c-logs" });
  const logs = Array.isArray(t.logs) ? t.logs : [];
  const last = t.attempt != null ? t.attempt : 0;
  for (const l of logs) {
    const label = l.attempt === last ? l.stream : `${l.stream} #${l.attempt}`;
    td.append(el("a", { href: tonyLink(l.url), target: "_blank", rel: "noopener", title: `${fmtBytes(l.bytes)}`, text: label }));
  }
  if (!logs.length && t.container) {
    const app = P.job ? P.job.app_id : "";
    td.append(el("code", { title: `on ${t.host || "its node"}; YARN keeps it in the container's log dir, ` +
                                   `or aggregated: yarn logs -applicationId ${app} -containerId ${t.container}`,
                           text: t.container }));
  }
  if (!td.childNodes.length) td.textContent = "–";
  return td;
}

function renderTasks(job) {
  const tasks = Array.isArray(job.tasks) ? job.tasks : [];
  const rows = tasks.map((t) => {
    const m = t.metrics || {};
    const req = t.requested || {};
    // the kernel's peak where the task reported one, else the samples' maximum
    let mem = fmtBytes(m.PEAK_MEMORY_BYTES != null && m.PEAK_MEMORY_BYTES >= 0 ? m.PEAK_MEMORY_BYTES : m.MAX_MEMORY_BYTES);
    if (mem !== "–" && req.memory_bytes > 0) mem += ` / ${fmtBytes(req.memory_bytes)}`;
    // stopped because another task failed first: that, not its SIGTERM
    const exit = el("td", { cls: "c-exit" }, el("span", { text: t.stopped_by ? `stopped: ${t.stopped_by} failed first`
      : t.exit_meaning || (t.exit_status != null ? `exit status ${t.exit_status}` : "–") }));
    if (t.diagnostics) exit.append(el("div", { cls: "diag-line", title: t.diagnostics, text: t.diagnostics }));
    const tr = el("tr", { cls: "task " + stateClass(t.status), tabindex: "0", data: { task: t.task } },
      el("td", { cls: "c-task", text: t.task + (t.chief ? " (chief)" : "") }),
      el("td", { cls: "c-addr", text: t.host ? (t.port ? `${t.host}:${t.port}` : t.host) : "–" }),
      el("td", { cls: "c-state", text: t.status || "?" }),
      exit,
      el("td", { cls: "c-attempt", text: t.attempt != null ? String(t.attempt) : "–" }),
      el("td", { cls: "c-start", text: fmtClock(t.started_ms) }),
      el("td", { cls: "c-end", text: fmtClock(t.finished_ms) }),
      el("td", { cls: "c-duration", text: fmtDuration(taskDuration(t)) }),
      el("td", { cls: "c-mem", text: mem }),
      el("td", { cls: "c-cpu", text: fmtPercent(m.AVG_CPU_PERCENT) }),
      logCell(t));
    const open = (e) => { if (!e.target.closest("a")) selectTask(t); };
    tr.addEventListener("click", open);
    tr.addEventListener("keydown", (e) => { if (e.key === "Enter") open(e); });
    return tr;
  });
  $("tasks").tBodies[0].replaceChildren(...rows);
  $("no-tasks").hidden = tasks.length > 0;
}

function note(text) { return el("p", { cls: "muted", text }); }

function selectTask(t, attempt) {
  P.task = t;
  for (const tr of $("tasks").tBodies[0].rows) tr.classList.toggle("selected", !!t && tr.dataset.task === t.task);
  const plots = $("plots");
  const tabs = $("plot-attempts");
  tabs.replaceChildren();
  if (!t) {
    $("plots-task").textContent = "";
    plots.replaceChildren(note("No task to plot."));
    return;
  }
  const attempts = t.series_attempts || [];
  $("plots-task").textContent = t.task;
  if (!attempts.length) {
    const why = P.job && P.job.in_progress ? "metric series are written to the history when the job ends"
      : "this job's history keeps no metric series for it";
    plots.replaceChildren(note(`No metrics for ${t.task}: ${why}.`));
    return;
  }
  const a = attempt != null ? attempt : attempts[attempts.length - 1];
  if (attempts.length > 1) {
    for (const x of attempts) {
      const b = el("button", { type: "button", cls: x === a ? "active" : "", text: `attempt ${x}` });
      b.addEventListener("click", () => selectTask(t, x));
      tabs.append(b);
    }
  }
  plots.replaceChildren(note("loading metrics…"));
  loadPlots(t, a);
}

async function loadPlots(t, attempt) {
  const job = P.job;
  const url = `v1/jobs/${encodeURIComponent(job.app_id)}/tasks/${encodeURIComponent(t.role)}/${t.index}` +
              `/metrics?attempt=${attempt}`;
  try {
    const m = await getJSON(url);
    if (P.task !== t || P.job !== job) return;
    const charts = metricCharts(m, t.requested);
    $("plots").replaceChildren(...(charts.length ? charts : [note("no samples")]));
  } catch (e) {
    if (P.task === t) $("plots").replaceChildren(note(`No metrics: ${e.message}`));
  }
}

// The timeline: the event log when there is one (fuller, in words), else
// TonY's events from the .jhist.
function jhistText(ev) {
  const e = ev.event || {};
  const parts = [];
  if (ev.type === "APPLICATION_INITED") parts.push(`${e.numTasks} task(s), coordinator on ${e.host || "?"}`);
  if (e.host && ev.type !== "APPLICATION_INITED") parts.push(`on ${e.host}`);
  if (e.containerID) parts.push(`container ${e.containerID}`);
  if (e.status) parts.push(e.status);
  if (e.containerDiagnostic && e.containerDiagnostic !== "NA") parts.push(e.containerDiagnostic);
  if (ev.type === "APPLICATION_FINISHED") parts.push(`${e.finishedTasks} finished, ${e.failedTasks} failed`);
  return parts.join(" ");
}

function renderEvents(job) {
  const log = Array.isArray(job.log) ? job.log : [];
  const items = log.length ? log.map((e) => ({ t_ms: e.t_ms, type: e.type, task: e.task, attempt: e.attempt, text: e.text }))
    : (job.events || []).map((ev) => {
      const e = ev.event || {};
      return { t_ms: ev.timestamp, type: ev.type, task: e.taskType != null ? `${e.taskType}:${e.taskIndex}` : null,
               text: jhistText(ev) };
    });
  $("events-source").textContent = log.length ? "events.jsonl" : items.length ? ".jhist" : "";
  const t0 = job.started_ms || (items[0] && items[0].t_ms) || 0;
  const lis = items.map((e) => {
    const off = t0 && e.t_ms ? ` (+${((e.t_ms - t0) / 1000).toFixed(1)}s)` : "";
    return el("li", { cls: "ev " + stateClass(e.type) },
      el("time", { title: fmtWhen(e.t_ms) + off, text: fmtClock(e.t_ms) }),
      el("span", { cls: "ev-type", text: e.type || "" }),
      el("span", { cls: "ev-task", text: e.task ? e.task + (e.attempt != null ? ` #${e.attempt}` : "") : "" }),
      el("span", { cls: "ev-text", text: e.text || "" }));
  });
  $("events").replaceChildren(...(lis.length ? lis : [el("li", { cls: "ev muted", text: "No events could be read." })]));
}

function renderConfig(job) {
  const rows = (job.config || []).map((c) => el("tr", { data: { key: c.key } },
    el("td", { cls: "c-key", text: c.key }), el("td", { cls: "c-value", text: c.value }),
    el("td", { cls: "c-source", text: c.source || "" })));
  $("config").tBodies[0].replaceChildren(...rows);
  filterConfig();
}

function filterConfig() {
  const q = $("config-filter").value.toLowerCase();
  for (const tr of $("config").tBodies[0].rows) tr.hidden = q !== "" && !tr.textContent.toLowerCase().includes(q);
}

// ---------- wiring ----------

function showList() {
  $("job-view").hidden = true;
  $("list-view").hidden = false;
  $("crumb").textContent = "";
  document.title = "tony history";
  P.job = null;
  P.task = null;
  loadJobs();
}

function route() {
  const m = location.hash.match(/^#\/jobs\/([^/?#]+)/);
  if (m) openJob(decodeURIComponent(m[1]));
  else showList();
}

function start() {
  for (const th of document.querySelectorAll("#jobs thead th")) th.addEventListener("click", () => sortBy(th.dataset.key));
  $("search").addEventListener("input", renderList);
  $("config-filter").addEventListener("input", filterConfig);
  $("rescan").addEventListener("click", route);
  window.addEventListener("hashchange", route);
  setInterval(() => { if (!$("list-view").hidden && !document.hidden) loadJobs(); }, LIST_REFRESH_MS);
  route();
}

start();
