"""Honest right-sizing (issue 21, item 3), on the local backend with real
processes: a task's peak memory comes from the kernel, not from samples
seconds apart, so a 4 s task that touches 256 MiB between two samples
reports what the kernel counted for the same script run bare; a task whose
command never started gets no advice even where every run is sized; and
advice never suggests less than the measured peak plus headroom."""
import json
import re
import subprocess
import sys

MB = 1024 * 1024
PYTHON = "/usr/bin/python3"
HEADROOM = 1.5  # TONY_SIZING_HEADROOM


def burst_script(scripts, mb):
    """~4 s: touches mb MiB for half a second in the middle, so that the
    executor's samples (5 s apart by default) fall before and after it."""
    (scripts / "burst.py").write_text(
        "import time\n"
        "time.sleep(1.5)\n"
        f"b = bytearray({mb} * 1024 * 1024)\n"
        "for i in range(0, len(b), 4096): b[i] = 1\n"
        "time.sleep(0.5)\n"
        "del b\n"
        "time.sleep(2)\n")
    return scripts / "burst.py"


def kernel_peak_bare(script):
    """The same script run bare: its peak RSS as the kernel counted it
    (getrusage of the reaped child, in bytes)."""
    probe = ("import resource, subprocess, sys\n"
             "subprocess.run(sys.argv[1:], check=True)\n"
             "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024)\n")
    out = subprocess.run([sys.executable, "-c", probe, PYTHON, str(script)], capture_output=True, text=True,
                         check=True, timeout=60).stdout
    return int(out.split()[-1])


def value_bytes(v):
    """"512m", "3g" in bytes."""
    m = re.fullmatch(r"(\d+)([mg])", v)
    assert m, v
    return int(m.group(1)) * (1024 * MB if m.group(2) == "g" else MB)


def test_peak_of_a_short_task_is_the_kernels(tony, scripts):
    script = burst_script(scripts, 256)
    bare = kernel_peak_bare(script)
    assert bare >= 256 * MB, bare
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", PYTHON, "--executes", "burst.py",
                    "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=2g")
    assert r.rc == 0, r
    m = r.task("worker", 0)["metrics"]
    peak = m["PEAK_MEMORY_BYTES"]
    assert abs(peak - bare) <= 0.2 * bare, (peak, bare, m)
    assert peak >= m["MAX_MEMORY_BYTES"], m  # never below the samples
    # a 4 s run is under tony.application.sizing-min-run-ms (a minute by default): no advice
    assert r.status()["advice"] == [] and "right-sizing" not in r.text, r
    # and history keeps the peak (metrics.json), shows it, and the event log says it
    app_id = r.status()["app_id"]
    h = tony.run("history", app_id, "--json", check_rc=0)
    (t,) = json.loads(h.out)["tasks"]
    assert t["metrics"]["PEAK_MEMORY_BYTES"] == peak, t
    h = tony.run("history", app_id, check_rc=0)
    row = re.search(r"worker:0\s+SUCCEEDED\s+(\d+) MiB", h.out)
    assert row and abs(int(row.group(1)) * MB - peak) <= MB, h.out
    (events,) = (tony.home / "history").glob(f"finished/*/*/*/{app_id}/events.jsonl")
    fin = next(e for e in map(json.loads, events.read_text().splitlines()) if e["type"] == "TASK_FINISHED")
    said = re.search(r"peak memory (\d+) MiB", fin["text"])
    assert said and abs(int(said.group(1)) * MB - peak) <= MB, fin


def test_no_advice_for_a_task_that_never_started(tony):
    # every run is sized here, however short: only the failed start keeps it from advice
    r = tony.submit("--executes", "no-such-interpreter train.py", "--conf", "tony.chief.instances=1",
                    "--conf", "tony.chief.memory=2g", "--conf", "tony.application.sizing-min-run-ms=0")
    assert r.rc != 0, r
    (t,) = r.status()["tasks"]
    assert t["exit_status"] == 127, t
    assert r.status()["advice"] == [] and "right-sizing" not in r.text, r
    h = tony.run("history", r.status()["app_id"], "--json", check_rc=0)
    assert json.loads(h.out)["advice"] == [], h


def test_advice_never_below_the_peak(tony, scripts):
    """400 MiB for half a second: the samples saw a few MiB, which would
    make 512m look ample; the kernel's peak makes it 1g."""
    script = burst_script(scripts, 400)
    bare = kernel_peak_bare(script)
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", PYTHON, "--executes", "burst.py",
                    "--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=4g",
                    "--conf", "tony.application.sizing-min-run-ms=1000")
    assert r.rc == 0, r
    peak = r.task("worker", 0)["metrics"]["PEAK_MEMORY_BYTES"]
    assert abs(peak - bare) <= 0.2 * bare, (peak, bare)
    (adv,) = [a for a in r.status()["advice"] if a["kind"] == "memory"]
    assert adv["key"] == "tony.worker.memory" and value_bytes(adv["value"]) >= peak * HEADROOM, adv
    assert adv["value"] == "1g", adv
    said = re.search(r"worker: peak memory (\d+) MiB of 4 GiB requested", adv["text"])
    assert said and int(said.group(1)) * MB >= peak, adv
    assert f"try tony.worker.memory={adv['value']}" in r.out, r.out
    # tony history sizes it the same, from what history kept
    h = tony.run("history", r.status()["app_id"], "--json", check_rc=0)
    assert [a for a in json.loads(h.out)["advice"] if a["kind"] == "memory"] == [adv], h.out
