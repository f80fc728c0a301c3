// The metric plots and the formatting they need, shared by the live job
// page (app.js) and the history portal (portal.js): small SVG line charts
// drawn from a task's series ({t_ms, rss_bytes, cpu_percent,
// gpu_util_percent, gpu_mem_bytes}, the coordinator's /metrics answer and
// the history's metrics.json alike). Plain JS, no dependencies.
"use strict";

function fmtDuration(ms) {
  if (ms == null || ms < 0) return "–";
  let s = Math.floor(ms / 1000);
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  if (h) return `${h}h ${String(m).padStart(2, "0")}m ${String(s).padStart(2, "0")}s`;
  if (m) return `${m}m ${String(s).padStart(2, "0")}s`;
  return `${s}s`;
}

function fmtBytes(n) {
  if (n == null || n < 0) return "–";
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < units.length - 1) { n /= 1024; i++; }
  return `${n >= 10 || i === 0 ? n.toFixed(0) : n.toFixed(1)} ${units[i]}`;
}

function fmtPercent(p) {
  return p == null || p < 0 ? "–" : `${Math.round(p)}%`;
}

// The charts of one task's series: memory and CPU always, the GPU ones when
// measured; requested resources drawn as reference lines. [] without data.
function metricCharts(m, req) {
  const t = Array.isArray(m.t_ms) ? m.t_ms : [];
  if (t.length === 0) return [];
  req = req || {};
  const charts = [];
  charts.push(lineChart("Memory (RSS)", t, [{ name: "rss", values: m.rss_bytes, cls: "s-mem" }],
                        fmtBytes, req.memory_bytes > 0 ? { value: req.memory_bytes, label: "requested" } : null));
  charts.push(lineChart("CPU", t, [{ name: "cpu", values: m.cpu_percent, cls: "s-cpu" }], fmtPercent,
                        req.vcores > 0 ? { value: req.vcores * 100, label: `${req.vcores} vcores` } : null));
  const hasGpu = (a) => Array.isArray(a) && a.some((v) => v != null);
  if (hasGpu(m.gpu_util_percent)) {
    charts.push(lineChart("GPU utilization", t, [{ name: "gpu", values: m.gpu_util_percent, cls: "s-gpu" }],
                          fmtPercent, { value: 100, label: "100%" }));
  }
  if (hasGpu(m.gpu_mem_bytes)) {
    charts.push(lineChart("GPU memory", t, [{ name: "gpumem", values: m.gpu_mem_bytes, cls: "s-gpumem" }],
                          fmtBytes, null));
  }
  return charts;
}

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs, text) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text != null) e.textContent = text;
  return e;
}

// A small line chart: x is time since the first sample, y starts at 0 and
// reaches the larger of the data and the reference line (what was asked for).
function lineChart(title, t, series, fmt, ref) {
  const W = 360, H = 150, L = 64, R = 8, T = 22, B = 22;
  const fig = document.createElement("figure");
  fig.className = "plot";
  fig.dataset.title = title;
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  let ymax = ref ? ref.value : 0;
  let points = 0;
  for (const s of series) for (const v of s.values || []) if (v != null && v >= 0) ymax = Math.max(ymax, v);
  if (ymax <= 0) ymax = 1;
  ymax *= 1.08;
  const t0 = t[0], t1 = Math.max(t[t.length - 1], t0 + 1);
  const x = (v) => L + ((v - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / ymax) * (H - T - B);
  svg.append(svgEl("text", { x: 4, y: 14, class: "p-title" }, title));
  for (const frac of [0, 0.5, 1]) {
    const v = (ymax / 1.08) * frac;
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "p-grid" }));
    svg.append(svgEl("text", { x: L - 4, y: y(v) + 4, class: "p-axis", "text-anchor": "end" }, fmt(v)));
  }
  svg.append(svgEl("text", { x: L, y: H - 6, class: "p-axis" }, "0s"));
  svg.append(svgEl("text", { x: W - R, y: H - 6, class: "p-axis", "text-anchor": "end" },
                   fmtDuration(t1 - t0)));
  if (ref) {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(ref.value), y2: y(ref.value), class: "p-ref" }));
    svg.append(svgEl("text", { x: W - R - 2, y: y(ref.value) - 3, class: "p-axis", "text-anchor": "end" },
                     ref.label));
  }
  for (const s of series) {
    let d = "";
    let pen = false;
    (s.values || []).forEach((v, i) => {
      if (v == null || v < 0 || i >= t.length) { pen = false; return; }
      d += `${pen ? "L" : "M"}${x(t[i]).toFixed(1)},${y(v).toFixed(1)}`;
      pen = true;
      points++;
    });
    if (d) svg.append(svgEl("path", { d, class: "p-line " + s.cls }));
    // the latest sample as a dot: visible even when it is the only one
    const vals = s.values || [];
    for (let i = Math.min(vals.length, t.length) - 1; i >= 0; i--) {
      if (vals[i] == null || vals[i] < 0) continue;
      svg.append(svgEl("circle", { cx: x(t[i]).toFixed(1), cy: y(vals[i]).toFixed(1), r: 2.5, class: "p-dot " + s.cls }));
      break;
    }
  }
  fig.dataset.points = String(points);
  const cap = document.createElement("figcaption");
  const vals = series[0].values || [];
  const seen = vals.filter((v) => v != null && v >= 0);
  // the last sample and the peak: a finished task's last sample is often
  // its executor alone, after the user's process is gone
  cap.textContent = points ? `last ${fmt(seen[seen.length - 1])}, peak ${fmt(Math.max(...seen))}, ${points} samples`
                           : "no samples";
  fig.dataset.peak = seen.length ? String(Math.max(...seen)) : "";
  fig.append(svg, cap);
  return fig;
}

// A step chart (an elastic job's world size over time): values[i] holds
// from t[i] until t[i+1], the last one until tEnd; y from 0 to ymax (the
// plan's size) or the largest value. Its figure carries the steps in
// data-steps ("size,size,...") for people's tools and tests.
function stepChart(title, t, values, tEnd, ymax) {
  const W = 720, H = 130, L = 40, R = 8, T = 32, B = 22;
  const fig = document.createElement("figure");
  fig.className = "plot plot-wide";
  fig.dataset.title = title;
  fig.dataset.steps = values.join(",");
  const svg = svgEl("svg", { viewBox: `0 0 ${W} ${H}`, role: "img", "aria-label": title });
  const top = Math.max(ymax || 0, ...values, 1);
  const t0 = t[0], t1 = Math.max(tEnd, t[t.length - 1], t0 + 1);
  const x = (v) => L + ((v - t0) / (t1 - t0)) * (W - L - R);
  const y = (v) => T + (1 - v / top) * (H - T - B);
  svg.append(svgEl("text", { x: 4, y: 14, class: "p-title" }, title));
  for (const v of [0, top]) {
    svg.append(svgEl("line", { x1: L, x2: W - R, y1: y(v), y2: y(v), class: "p-grid" }));
    svg.append(svgEl("text", { x: L - 4, y: y(v) + 4, class: "p-axis", "text-anchor": "end" }, String(v)));
  }
  svg.append(svgEl("text", { x: L, y: H - 6, class: "p-axis" }, "0s"));
  svg.append(svgEl("text", { x: W - R, y: H - 6, class: "p-axis", "text-anchor": "end" }, fmtDuration(t1 - t0)));
  let d = "";
  values.forEach((v, i) => {
    const xa = x(t[i]).toFixed(1), xb = x(i + 1 < t.length ? t[i + 1] : t1).toFixed(1), ya = y(v).toFixed(1);
    d += `${i ? "L" : "M"}${xa},${ya}L${xb},${ya}`;
    svg.append(svgEl("text", { x: Number(xa) + 2, y: Number(ya) - 3, class: "p-axis" }, String(v)));
  });
  svg.append(svgEl("path", { d, class: "p-line s-world" }));
  const cap = document.createElement("figcaption");
  cap.textContent = `now ${values[values.length - 1]}, ${values.length - 1} change${values.length === 2 ? "" : "s"}`;
  fig.append(svg, cap);
  return fig;
}
