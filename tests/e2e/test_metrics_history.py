"""Per-task metrics, the coordinator's event log, TonY's .jhist history and
right-sizing, on the local backend with real processes: a task that touches
a known amount of memory shows it, the .jhist file is read back with an
independent Avro reader (fastavro) and checked against the job, and the live
endpoints answer while a job runs."""
import json
import os
import re
import signal
import subprocess
import urllib.parse
from pathlib import Path

import fastavro

from conftest import OWN_TOKENS, TONY, call, wait_for

# Tasks of a second or two are sized here (by default only runs of a minute
# or more are: tony.application.sizing-min-run-ms).
FAST = ["--conf", "tony.task.metrics-interval-ms=200", "--conf", "tony.worker.instances=1",
        "--conf", "tony.application.sizing-min-run-ms=0"]
TONY_METRICS = ["MAX_MEMORY_BYTES", "AVG_MEMORY_BYTES", "MAX_GPU_UTILIZATION", "AVG_GPU_UTILIZATION",
                "MAX_GPU_FB_MEMORY_USAGE", "AVG_GPU_FB_MEMORY_USAGE", "MAX_GPU_MAIN_MEMORY_USAGE",
                "AVG_GPU_MAIN_MEMORY_USAGE"]
MB = 1024 * 1024




def alloc_script(scripts, mb, hold_s):
    (scripts / "alloc.py").write_text(
        "import time\n"
        f"b = bytearray({mb} * 1024 * 1024)\n"
        "for i in range(0, len(b), 4096): b[i] = 1\n"
        f"time.sleep({hold_s})\n")


def history_files(home, pattern="*.jhist"):
    return sorted((home / "history").glob(f"finished/*/*/*/*/{pattern}"))


def read_jhist(path):
    with open(path, "rb") as f:
        return list(fastavro.reader(f))


def test_memory_metrics_history_and_right_sizing(tony, scripts):
    alloc_script(scripts, 200, 1.2)  # 6 intervals of 200 ms
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "alloc.py",
                    "--conf", "tony.worker.memory=8g", *FAST, "--conf", "tony.worker.instances=2")
    assert r.rc == 0, r
    st = r.status()
    app_id = st["app_id"]
    for t in st["tasks"]:
        m = t["metrics"]
        assert set(TONY_METRICS + ["MAX_CPU_PERCENT", "AVG_CPU_PERCENT"]) <= set(m), m
        assert m["MAX_MEMORY_BYTES"] >= 200 * MB, m
        assert 0 < m["AVG_MEMORY_BYTES"] <= m["MAX_MEMORY_BYTES"]
        assert m["MAX_GPU_UTILIZATION"] == -1 and m["AVG_GPU_FB_MEMORY_USAGE"] == -1  # no GPUs asked for
        assert m["MAX_CPU_PERCENT"] > 0
        assert t["requested"] == {"memory_bytes": 8192 * MB, "vcores": 1, "gpus": 0}
        ls = t["last_sample"]
        assert ls["rss_bytes"] > 0 and ls["t_ms"] >= st["started_ms"] and ls["gpu_util_percent"] is None
    # right-sizing: asked 8g, used ~210 MiB
    adv = [a for a in st["advice"] if a["role"] == "worker" and a["kind"] == "memory"]
    assert adv and adv[0]["key"] == "tony.worker.memory" and adv[0]["value"] == "512m", st["advice"]
    assert re.search(r"worker: peak memory \d+ MiB of 8 GiB requested \(\d+%\); try tony.worker.memory=512m",
                     r.out), r.out
    assert "right-sizing" in r.out

    # TonY's layout: finished/yyyy/mm/dd/<appId>/ with the renamed file and tony-final.xml
    files = history_files(tony.home)
    assert len(files) == 1, files
    f = files[0]
    assert f.parent.name == app_id
    assert re.fullmatch(r"\d{4}/\d{2}/\d{2}", "/".join(f.parent.parts[-4:-1])), f
    m = re.fullmatch(r"(application_\d+_\d+)-(\d+)-(\d+)-([a-z0-9._-]+)-(SUCCEEDED)\.jhist", f.name)
    assert m and m.group(1) == app_id, f.name
    start, end = int(m.group(2)), int(m.group(3))
    assert start <= end and abs(start - st["started_ms"]) < 5000
    assert (f.parent / "tony-final.xml").read_text().startswith("<?xml")
    assert not list((tony.home / "history" / "intermediate").iterdir())  # moved at the end

    # read back with an independent Avro reader, checked against the job
    events = read_jhist(f)
    types = [e["type"] for e in events]
    assert types[0] == "APPLICATION_INITED" and types[-1] == "APPLICATION_FINISHED", types
    assert sorted(types[1:-1]) == ["TASK_FINISHED"] * 2 + ["TASK_STARTED"] * 2, types
    for i in (0, 1):  # each task starts before it finishes
        kinds = [e["type"] for e in events if e["event"].get("taskIndex") == i]
        assert kinds == ["TASK_STARTED", "TASK_FINISHED"], kinds
    assert events[0]["event"] == {"applicationId": app_id, "numTasks": 2, "host": "127.0.0.1", "containerID": None}
    finished = [e["event"] for e in events if e["type"] == "TASK_FINISHED"]
    assert sorted(e["taskIndex"] for e in finished) == [0, 1]
    for e in finished:
        assert e["taskType"] == "worker" and e["status"] == "SUCCEEDED" and e["containerDiagnostic"] == "NA"
        names = [mm["name"] for mm in e["metrics"]]
        assert names == TONY_METRICS
        values = {mm["name"]: mm["value"] for mm in e["metrics"]}
        assert values["MAX_MEMORY_BYTES"] >= 200 * MB and values["MAX_GPU_UTILIZATION"] == -1
    assert events[-1]["event"] == {"applicationId": app_id, "finishedTasks": 2, "failedTasks": 0, "metrics": []}
    stamps = [e["timestamp"] for e in events]
    assert stamps == sorted(stamps) and start <= stamps[0] and stamps[-1] <= end + 1000

    # tony history lists it; tony history <id> shows events, metrics and advice
    h = tony.run("history", "--json", check_rc=0)
    jobs = json.loads(h.out)["jobs"]
    assert [j["app_id"] for j in jobs] == [app_id]
    assert jobs[0]["status"] == "SUCCEEDED" and jobs[0]["finished_ms"] == end and jobs[0]["duration_ms"] == end - start
    assert jobs[0]["user"] == m.group(4) and jobs[0]["file"] == str(f)
    h = tony.run("history", check_rc=0)
    assert app_id in h.out and "SUCCEEDED" in h.out and "DURATION" in h.out
    h = tony.run("history", app_id, "--json", check_rc=0)
    one = json.loads(h.out)
    assert [e["type"] for e in one["events"]] == types
    assert {t["task"] for t in one["tasks"]} == {"worker:0", "worker:1"}
    assert all(t["metrics"]["MAX_MEMORY_BYTES"] >= 200 * MB and t["metrics"]["AVG_CPU_PERCENT"] >= 0
               for t in one["tasks"])
    assert any("tony.worker.memory=512m" in a["text"] for a in one["advice"]), one["advice"]
    log_types = [e["type"] for e in one["log"]]
    assert log_types[0] == "APPLICATION_INITED" and log_types[-1] == "APPLICATION_FINISHED"
    h = tony.run("history", app_id, check_rc=0)
    assert "TASK_FINISHED" in h.out and "right-sizing" in h.out and "worker:1" in h.out


def test_live_events_and_metrics_while_running_then_killed(tony, scripts):
    alloc_script(scripts, 50, 120)
    r = tony.submit("--detach", "--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3",
                    "--executes", "alloc.py", "--conf", "tony.worker.memory=512m", *FAST)
    assert r.rc == 0, r
    job = r.job_dir()
    url = json.loads((job / "am.json").read_text())["url"]
    secret = (job / "secret").read_text().strip()

    def metrics_points():
        st, body = call(url + "/v1/tasks/worker/0/metrics")
        return body if st == 200 and len(body["t_ms"]) >= 3 else None

    series = wait_for(metrics_points, 60, what="three metric samples")
    assert series["role"] == "worker" and series["index"] == 0 and series["attempt"] == 0
    n = len(series["t_ms"])
    for k in ("rss_bytes", "cpu_percent", "gpu_util_percent", "gpu_mem_bytes"):
        assert len(series[k]) == n, k
    assert series["t_ms"] == sorted(series["t_ms"])
    assert max(series["rss_bytes"]) >= 50 * MB
    assert series["gpu_util_percent"] == [None] * n and series["gpu_mem_bytes"] == [None] * n

    st, body = call(url + "/v1/events")
    assert st == 200
    evs = body["events"]
    seqs = [e["seq"] for e in evs]
    assert seqs == sorted(seqs) and body["next"] == seqs[-1]
    types = [e["type"] for e in evs]
    assert types == ["APPLICATION_INITED", "TASK_REQUESTED", "TASK_REGISTERED", "TASK_STARTED"], types
    reg = next(e for e in evs if e["type"] == "TASK_REGISTERED")
    assert reg["task"] == "worker:0" and reg["attempt"] == 0 and reg["host"] == "127.0.0.1" and reg["port"] > 0
    assert evs[0]["task"] is None and isinstance(evs[0]["t_ms"], int)
    st, later = call(url + f"/v1/events?since={body['next']}")
    assert st == 200 and later["events"] == [] and later["next"] == body["next"]
    st, page = call(url + "/v1/events?since=1")
    assert page["events"][0]["seq"] == 2

    # the job JSON carries the latest sample while running; no advice yet
    st, jobj = call(url + "/v1/job")
    t = jobj["tasks"][0]
    assert t["last_sample"]["rss_bytes"] >= 50 * MB and t["metrics"]["MAX_MEMORY_BYTES"] >= 50 * MB
    assert jobj["advice"] == [] and jobj["history_file"].endswith(".jhist.inprogress")
    inprogress = Path(jobj["history_file"])
    assert inprogress.exists() and inprogress.parent.parent.name == "intermediate"
    # events are flushed as they happen: the running job's file reads already
    assert [e["type"] for e in read_jhist(inprogress)] == ["APPLICATION_INITED", "TASK_STARTED"]
    h = tony.run("history", "--json", check_rc=0)
    assert json.loads(h.out)["jobs"][0]["status"] == "RUNNING"

    # bad requests get clear answers and change nothing
    sample = '{"attempt":0,"t_ms":1,"rss_bytes":1,"cpu_percent":1}'
    assert call(url + "/v1/tasks/worker/0/metrics", "POST", sample)[0] == 403
    st, err = call(url + "/v1/tasks/worker/0/metrics", "POST", '{"attempt":0,"t_ms":1}', secret=secret)
    assert st == 400 and "rss_bytes" in err["error"]
    assert call(url + "/v1/tasks/worker/7/metrics")[0] == 404
    st, err = call(url + "/v1/events?since=abc")
    assert st == 400 and "since" in err["error"]
    assert call(url + "/v1/events", "POST", "{}")[0] == 405

    tony.run("kill", job.name, check_rc=0)
    files = history_files(tony.home)
    assert len(files) == 1 and files[0].name.endswith("-KILLED.jhist"), files
    log = [json.loads(line) for line in (files[0].parent / "events.jsonl").read_text().splitlines()]
    types = [e["type"] for e in log]
    assert "KILL" in types and types[-1] == "APPLICATION_FINISHED"
    fin = next(e for e in log if e["type"] == "TASK_FINISHED")
    assert fin["status"] == "FINISHED" and fin["metrics"]["MAX_MEMORY_BYTES"] >= 50 * MB


def test_failed_task_in_events_and_history(tony, scripts):
    (scripts / "fail.py").write_text("import sys, time\ntime.sleep(0.3)\nsys.exit(3)\n")
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "fail.py",
                    *FAST)
    assert r.rc == 1, r
    files = history_files(tony.home)
    assert len(files) == 1 and files[0].name.endswith("-FAILED.jhist"), files
    fin = [e["event"] for e in read_jhist(files[0]) if e["type"] == "TASK_FINISHED"]
    assert fin[0]["status"] == "FAILED" and "exit code 3" in fin[0]["containerDiagnostic"]
    log = [json.loads(line) for line in (files[0].parent / "events.jsonl").read_text().splitlines()]
    ev = next(e for e in log if e["type"] == "TASK_FINISHED")
    assert ev["text"].startswith("worker:0 failed: exit code 3"), ev
    assert ev["exit_status"] == 3 and ev["status"] == "FAILED"


def test_gpu_metrics_through_nvidia_smi(tony, scripts, tmp_path):
    # No GPU here: a stand-in nvidia-smi that insists on being asked about
    # the task's own GPU and answers as a real one does.
    smi = tmp_path / "bin" / "nvidia-smi"
    smi.parent.mkdir()
    smi.write_text('#!/bin/sh\n[ "$3 $4" = "-i $CUDA_VISIBLE_DEVICES" ] || exit 7\n'
                   'echo "63, 2048, 16384"\n')
    smi.chmod(0o755)
    alloc_script(scripts, 10, 1.0)
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "alloc.py",
                    "--conf", "tony.local.gpus=2", "--conf", "tony.worker.gpus=1",
                    "--conf", f"tony.gpu-exec-path={smi.parent}", *FAST)
    assert r.rc == 0, r
    t = r.task("worker", 0)
    assert t["metrics"]["MAX_GPU_UTILIZATION"] == 63 and t["metrics"]["AVG_GPU_UTILIZATION"] == 63
    assert t["metrics"]["MAX_GPU_FB_MEMORY_USAGE"] == 12.5
    assert t["metrics"]["MAX_GPU_MAIN_MEMORY_USAGE"] == -1  # BAR1: not in nvidia-smi's CSV query
    assert t["last_sample"]["gpu_mem_bytes"] == 2048 * MB and t["last_sample"]["gpu_util_percent"] == 63
    # turned off: nvidia-smi is not even run
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "alloc.py",
                    "--conf", "tony.local.gpus=2", "--conf", "tony.worker.gpus=1",
                    "--conf", "tony.task.gpu-metrics.enabled=false",
                    "--conf", f"tony.gpu-exec-path={smi.parent}", *FAST)
    assert r.rc == 0, r
    assert r.task("worker", 0)["metrics"]["MAX_GPU_UTILIZATION"] == -1
    assert any("GPU use was not measured" in a["text"] for a in r.status()["advice"])


def test_history_bad_input(tony, tmp_path):
    r = tony.run("history", "application_1_0001")
    assert r.rc == 2 and "no job application_1_0001 in the history" in r.err, r
    r = tony.run("history", "--location", str(tmp_path / "nope"))
    assert r.rc == 2 and "no such directory" in r.err, r
    r = tony.run("history", "a", "b")
    assert r.rc == 2 and "usage" in r.err, r
    r = tony.run("history", "--json", "--location", str(tmp_path), check_rc=0)
    assert json.loads(r.out)["jobs"] == []
    # a corrupt history file is named, not a crash
    d = tmp_path / "finished" / "2024" / "01" / "02" / "application_5_0001"
    d.mkdir(parents=True)
    (d / "application_5_0001-1-2-bob-FAILED.jhist").write_text("not avro")
    r = tony.run("history", "--location", str(tmp_path), check_rc=0)
    assert "application_5_0001" in r.out and "FAILED" in r.out
    r = tony.run("history", "application_5_0001", "--location", str(tmp_path))
    assert r.rc == 3 and "application_5_0001-1-2-bob-FAILED.jhist" in r.err, r


def test_history_and_portal_take_the_location_from_conf(tony, tmp_path):
    hist = tmp_path / "hist"
    r = tony.submit("--executes", "true", "--conf", f"tony.history.location={hist}", *FAST)
    assert r.rc == 0, r
    app_id = r.job_dir().name
    assert app_id not in tony.run("history", check_rc=0).out  # the default location has none
    h = tony.run("history", "--conf", f"tony.history.location={hist}", check_rc=0)
    assert app_id in h.out and "SUCCEEDED" in h.out, h
    conf = tmp_path / "tony.xml"
    conf.write_text(f"<configuration><property><name>tony.history.location</name><value>{hist}</value>"
                    "</property></configuration>")
    h = tony.run("history", "--conf_file", str(conf), check_rc=0)
    assert app_id in h.out, h
    h = tony.run("history", app_id, "--conf_file", str(conf), check_rc=0)
    assert "APPLICATION_FINISHED" in h.out, h
    # --location still wins over the configuration
    h = tony.run("history", app_id, "--conf_file", str(conf), "--location", str(tmp_path))
    assert h.rc == 2 and f"no job {app_id}" in h.err, h
    p = subprocess.Popen([TONY, "portal", "--port", "0", "--conf_file", str(conf)], env=tony.env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline()
        assert line.startswith("tony: portal at ") and f"(history under {hist})" in line, line
        # the printed link carries the portal's token; call() sends it as the owner's reads do
        url, _, token = line.split()[3].partition("?token=")
        OWN_TOKENS[urllib.parse.urlsplit(url).netloc] = token
        code, d = call(url + "v1/jobs")
        assert code == 200 and [j["app_id"] for j in d["jobs"]] == [app_id], d
    finally:
        p.send_signal(signal.SIGTERM)
        out, err = p.communicate(timeout=20)
    assert p.returncode == 0, err


def test_no_right_sizing_from_a_failed_start_or_a_brief_run(tony, scripts):
    """Advice that is wrong is worse than none: a task whose command never
    started (exit 127) measured only the executor, and one of a few seconds
    is sampled too rarely to see its peak; by default neither is sized."""
    r = tony.submit("--executes", "no-such-interpreter train.py", "--conf", "tony.task.metrics-interval-ms=200",
                    "--conf", "tony.chief.instances=1", "--conf", "tony.chief.memory=2g")
    assert r.rc != 0, r
    assert r.status()["advice"] == [] and "right-sizing" not in r.text, r
    alloc_script(scripts, 200, 1.2)
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "alloc.py",
                    "--conf", "tony.worker.memory=8g", "--conf", "tony.task.metrics-interval-ms=200",
                    "--conf", "tony.worker.instances=1")
    assert r.rc == 0, r
    assert r.task("worker", 0)["metrics"]["MAX_MEMORY_BYTES"] >= 200 * MB  # measured, and shown as such
    assert r.status()["advice"] == [] and "right-sizing" not in r.text, r
    h = tony.run("history", r.status()["app_id"], "--json")
    assert h.rc == 0 and json.loads(h.out)["advice"] == [], h
