#!/usr/bin/env python3
"""Issue 26, item 2: the job's web page at scale, in headless Chromium.

For each N: a real local job of N tasks whose executors are simulated by
bench/scale_harness.py (heartbeats at 1 Hz, metrics every 5 s: the page's
table changes as in a real job), its page opened by bench/scale_page.mjs:
time to first render (navigation -> every task row in the table, painted),
the main thread's busy time over a window of live updates (Chromium's
Performance metrics: TaskDuration, ScriptDuration, layout and style), the
longest main-thread task (how long the page freezes on an update), the JS
heap, and the bytes of each job poll. Baselines from the same run: the same
page on a 1-task job, and an about:blank tab over the same window. The
largest N also gets a sampling profile (where the main thread's time goes).

usage: build/pyenv/bin/python bench/scale_page.py [--tasks 100,1000,2000] [--seconds 30]
Writes its section of bench/REPORT.md (or --out) and prints it.
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from report import replace_section  # noqa: E402
from scale_harness import REPO, ScaleJob  # noqa: E402

HERE = Path(__file__).resolve().parent
BROWSER_DIR = REPO / "tests" / "browser"
SECTION = "The job page at scale (issue 26)"


def browser(cfg, timeout):
    p = subprocess.run(["node", str(HERE / "scale_page.mjs"), json.dumps(cfg)], cwd=BROWSER_DIR,
                       capture_output=True, text=True, timeout=timeout)
    if p.returncode != 0:
        raise RuntimeError(f"scale_page.mjs failed:\n{p.stderr[-4000:]}")
    return json.loads(p.stdout.strip().splitlines()[-1])


def one_n(tony, n, seconds, profile_s, chromium):
    with tempfile.TemporaryDirectory(prefix="tony-scalepage-") as tmp:
        j = ScaleJob(tony, n, tmp, workers=max(1, min(4, n // 1000)))
        try:
            j.submit()
            j.wait_all("go", 0, 600)
            time.sleep(8)  # past the started calls and every task's first metrics sample
            load0 = os.getloadavg()[0]
            r = browser({"url": f"{j.url}/?token={j.token}", "app_id": j.app_id, "n": n, "seconds": seconds,
                         "profile_s": profile_s, "chromium": chromium}, timeout=seconds + profile_s + 600)
            r["load"] = (load0 + os.getloadavg()[0]) / 2
            r["job_kb"] = len(j.get("/v1/job")[0]) / 1024
        finally:
            j.close()
    r["n"], r["profile_s"] = n, profile_s
    return r


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", default="100,1000,2000")
    ap.add_argument("--seconds", type=int, default=30)
    ap.add_argument("--profile", type=int, default=10, help="seconds of CPU profile on the largest N (0: none)")
    ap.add_argument("--tony", default=str(REPO / "build" / "bin" / "tony"))
    ap.add_argument("--chromium", default=os.environ.get("TONY_CHROMIUM", "/usr/bin/chromium"))
    ap.add_argument("--out", default=str(HERE / "REPORT.md"))
    ap.add_argument("--json", default=None, help="also write the raw figures here")
    ap.add_argument("--from-json", default=None,
                    help="write the section from figures --json saved (and its optional \"note\"), running nothing")
    a = ap.parse_args()
    if a.from_json:
        saved = json.loads(Path(a.from_json).read_text())
        blank, rows, note = saved["blank"], saved["rows"], saved.get("note", "")
    else:
        ns = [int(x) for x in a.tasks.split(",")]
        load0 = os.getloadavg()[0]
        blank = browser({"blank": True, "seconds": a.seconds, "chromium": a.chromium}, timeout=a.seconds + 120)
        blank["load"] = (load0 + os.getloadavg()[0]) / 2
        rows, note = [], ""
        for n in [1] + ns:
            try:
                r = one_n(a.tony, n, a.seconds, a.profile if n == max(ns) else 0, a.chromium)
            except (RuntimeError, TimeoutError) as e:  # a gang lost to a loaded machine: once more
                print(f"N={n}: {str(e)[:300]}; again", file=sys.stderr, flush=True)
                r = one_n(a.tony, n, a.seconds, a.profile if n == max(ns) else 0, a.chromium)
            print(json.dumps(r), flush=True)
            rows.append(r)
        if a.json:
            Path(a.json).write_text(json.dumps({"blank": blank, "rows": rows}, indent=1))
    text = render(blank, rows, rows[-1]["window"]["seconds"], note)
    replace_section(a.out, SECTION, text)
    print(text)


def render(blank, rows, seconds, note):
    b = blank["blank"]

    def pct(w, k):
        return w[k] / w["seconds"] * 100

    def rest(w):
        return (w["busy_s"] - w["script_s"] - w["layout_s"]) / w["seconds"] * 100

    def probe(r, what):
        p = r.get("layout_probe", {})
        keys = (f"{v}{what}_ms" for v in ("auto", "fixed", "separate"))
        return " / ".join(f"{p[k]:.1f}" if k in p else "–" for k in keys)

    def per_poll(p):
        return p["bytes"] / p["n"] / 1024 if p["n"] else 0.0

    cols = ["about:blank"] + [f"{r['n']:,} task{'s' if r['n'] > 1 else ''}" for r in rows]
    head = "| | " + " | ".join(cols) + " |\n| --- |" + " ---: |" * len(cols)

    def line(name, blank_cell, fmt):
        return f"| {name} | {blank_cell} | " + " | ".join(fmt(r) for r in rows) + " |"
    table = "\n".join([
        head,
        line("time to first render: navigation -> every row painted (ms)", "–", lambda r: f"{r['render_ms']:.0f}"),
        line("of which: first job poll answered (ms)", "–", lambda r: f"{r['first_poll_ms']:.0f}"),
        line("of which: main thread busy until then (ms)", "–", lambda r: f"{r['render_busy_ms']:.0f}"),
        line("of which: scripts / layout and style (ms)", "–",
             lambda r: f"{r['render_script_ms']:.0f} / {r['render_layout_ms']:.0f}"),
        line("main thread busy, live (% of a core)", f"{pct(b, 'busy_s'):.1f}",
             lambda r: f"{pct(r['window'], 'busy_s'):.1f}"),
        line("of which scripts (%)", f"{pct(b, 'script_s'):.1f}", lambda r: f"{pct(r['window'], 'script_s'):.1f}"),
        line("of which layout and style (%)", f"{pct(b, 'layout_s'):.1f}",
             lambda r: f"{pct(r['window'], 'layout_s'):.1f}"),
        line("of which the rest: paint, GC, parsing, uncounted script (%)", f"{rest(b):.1f}",
             lambda r: f"{rest(r['window']):.1f}"),
        line("longest main-thread task (ms)", f"{b['long_max_ms']:.0f}",
             lambda r: f"{r['window']['long_max_ms']:.0f}"),
        line("tasks over 50 ms in the window", f"{b['long_n']}", lambda r: f"{r['window']['long_n']}"),
        line("one Duration cell's change -> forced layout (ms): as styled / `table-layout: fixed` / "
             "`border-collapse: separate`", "–", lambda r: probe(r, "")),
        line("the whole table laid out from scratch (ms), the same three", "–", lambda r: probe(r, "_whole")),
        line("JS heap used (MiB)", f"{b['heap_mb']:.1f}", lambda r: f"{r['window']['heap_mb']:.1f}"),
        line("DOM nodes", f"{b['dom_nodes']:.0f}", lambda r: f"{r['window']['dom_nodes']:.0f}"),
        line("job polls in the window (304: unchanged)", "–",
             lambda r: f"{r['window']['polls']['n']} ({r['window']['polls']['n304']})"),
        line("bytes per poll, all (KiB)", "–", lambda r: f"{per_poll(r['window']['polls']):.1f}"),
        line("bytes per light poll, `?metrics=0` (KiB)", "–", lambda r: f"{per_poll(r['window']['light']):.1f}"),
        line("bytes per full poll, with metrics (KiB)", "–", lambda r: f"{per_poll(r['window']['full']):.1f}"),
        line("job polls, KiB/s", "–",
             lambda r: f"{r['window']['polls']['bytes'] / 1024 / r['window']['seconds']:.0f}"),
        line("load average (1 min) during the run", f"{blank['load']:.1f}", lambda r: f"{r['load']:.1f}"),
    ])
    prof = next((r for r in reversed(rows) if r.get("profile")), None)
    ptext = ""
    if prof:
        ptext = (f"\nWhere the main thread's script time goes at {prof['n']:,} tasks (sampling profile, self time, "
                 f"over the next {prof['profile_s']} s of live updates):\n\n"
                 "| function (file:line) | ms |\n| --- | ---: |\n" +
                 "\n".join(f"| `{e['fn']}` | {e['ms']:.0f} |" for e in prof["profile"]) + "\n")
    tasks = ",".join(str(r["n"]) for r in rows[1:])
    return f"""# {SECTION}

The job's page (web/app.js) open in Debian's Chromium (headless, playwright-core) on a real coordinator with N
simulated executors (`bench/scale_harness.py`: heartbeats at 1 Hz, a metrics sample every 5 s, so the table
changes as in a live job). Time to first render: navigation to the table holding every task, laid out
and painted (the second animation frame after the last row was added). Busy: Chromium's Performance metrics
(TaskDuration, ScriptDuration, Layout + RecalcStyle) over {seconds} s of live updates after the first render;
long tasks: the page's own PerformanceObserver.
Baselines from the same run: an about:blank tab over the same window, and the page on a 1-task job. This
machine: {os.cpu_count()} CPUs shared with other work, the harness and the coordinator beside the browser (load
average in the last line). Produced by `bench/scale_page.py --tasks {tasks}`.{" " + note if note else ""}

{table}
{ptext}"""


if __name__ == "__main__":
    main()
