"""The CLI as a user meets it: TonY's flags in both spellings, --dry-run,
status / kill / logs / list on live and finished jobs, and clear errors for
bad input (naming the key, file or flag) with a non-zero exit."""
import json
import os
import signal
import subprocess
import time

import pytest

from conftest import SHIPMENT_SEEN, TONY, job_processes, shipment, wait_for

SMALL = ["--conf", "tony.worker.memory=256m", "--conf", "tony.ps.memory=256m"]


def test_single_dash_flags_and_equals_form(tony):
    r = tony.submit("-executes", "echo $GREETING", "-shell_env", "GREETING=hi", "--conf=tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 0).strip() == "hi"


def test_task_params_and_python_binary(tony, scripts):
    (scripts / "args.py").write_text("import sys; print('args', sys.argv[1:])\n")
    r = tony.submit("--src_dir", str(scripts), "--python_binary_path", "/usr/bin/python3", "--executes", "args.py",
                    "--task_params", "--lr 0.1", "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 0).strip() == "args ['--lr', '0.1']"


def test_relative_interpreter_without_venv_is_the_one_beside_the_user(tony, tmp_path, scripts):
    """docs/submitting.md's first job names build/pyenv/bin/python from the
    checkout: with no --python_venv to resolve it in, it is that file (as
    an absolute path), not one looked for in each task's work dir."""
    (scripts / "which.py").write_text("import sys; print('interpreter', sys.executable)\n")
    here = tmp_path / "checkout"
    (here / "env" / "bin").mkdir(parents=True)
    (here / "env" / "bin" / "python").symlink_to("/usr/bin/python3")
    base = ["submit", "--conf", "tony.local.vcores=16", "--conf", "tony.local.memory=16g"]
    proc = subprocess.run([TONY, *base, "--src_dir", str(scripts), "--python_binary_path", "env/bin/python",
                           "--executes", "which.py", "--conf", "tony.worker.instances=1", *SMALL],
                          cwd=here, env=tony.env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    job = sorted((tony.home / "jobs").iterdir())[-1]
    out = (job / "attempts" / "0" / "worker-0" / "stdout").read_text()
    assert out.strip() == f"interpreter {here / 'env' / 'bin' / 'python'}", out


def test_dry_run_prints_plan_and_runs_nothing(tony):
    r = tony.submit("--dry-run", "--executes", "python train.py", "--conf", "tony.worker.instances=2",
                    "--conf", "tony.ps.instances=1", "--conf", "tony.worker.gpus=0", "--shell_env", "A=1", *SMALL)
    assert r.rc == 0, r
    assert "role worker: 2 instance(s), memory 256m, vcores 1, gpus 0, tracked" in r.out
    assert "role ps: 1 instance(s)" in r.out and "untracked" in r.out
    assert "TF_CONFIG=" in r.out and '"task":{"type":"worker","index":1}' in r.out.replace(" ", "")
    assert "A=1" in r.out
    assert "TONY_SECRET" not in r.out
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())


# TonY's ordinary job, asking more vcores than this machine has cores: chief
# + ps + 2 workers of `nproc` vcores each.
CORES = os.cpu_count()
USUAL_JOB = ["--conf", "tony.chief.instances=1", "--conf", "tony.ps.instances=1", "--conf", "tony.worker.instances=2",
             "--conf", f"tony.worker.vcores={CORES}", "--conf", "tony.chief.memory=256m", *SMALL]


def machine_memory_gib():
    return os.sysconf("SC_PHYS_PAGES") * os.sysconf("SC_PAGE_SIZE") // 1024 ** 3


def nothing_staged(tony):
    jobs = tony.home / "jobs"
    return not jobs.exists() or not any(jobs.iterdir())


def test_vcores_oversubscribe_the_cpus_unless_capped(tony):
    # tony.run, not tony.submit: no tony.local.vcores, the machine's own pool
    r = tony.run("submit", "--dry-run", "--executes", "true", *USUAL_JOB)
    assert r.rc == 0, r
    assert f"machine:    {CORES} cores" in r.out
    assert f"asks {2 + 2 * CORES} vcores at once and this machine has {CORES} cores" in r.err, r
    r = tony.run("submit", "--executes", "sh -c 'echo ran $JOB_NAME:$TASK_INDEX'", *USUAL_JOB)
    assert r.rc == 0, r
    assert "oversubscribed (set tony.local.vcores to cap)" in r.err, r
    assert r.status()["final_status"] == "SUCCEEDED"
    # every task ran; the gang barrier released them all at once
    assert r.log("chief", 0).strip() == "ran chief:0"
    assert r.log("worker", 1).strip() == "ran worker:1"
    # capped explicitly: the pool is a hard limit again, named
    r = tony.run("submit", "--executes", "true", *USUAL_JOB, "--conf", f"tony.local.vcores={CORES}")
    assert r.rc == 2, r
    assert f"tony.local.vcores={CORES}" in r.err and "vcores at once" in r.err, r
    assert "oversubscribed" not in r.err
    assert len(list((tony.home / "jobs").iterdir())) == 1  # only the first job was staged


def test_dry_run_of_a_job_too_big_prints_the_plan_then_what_does_not_fit(tony):
    too_much = f"{machine_memory_gib() + 100}g"
    r = tony.run("submit", "--dry-run", "--executes", "python train.py", *USUAL_JOB,
                 "--conf", f"tony.worker.memory={too_much}")
    assert r.rc == 2, r
    # the whole plan, every role
    for role in ("chief", "ps", "worker"):
        assert f"role {role}:" in r.out, r
    assert "worker:1 env:" in r.out
    # then what does not fit, naming the key to change
    assert "tony.worker.memory=" in r.err and "more than this machine's" in r.err, r
    assert nothing_staged(tony)
    # with vcores capped too, both are named
    r = tony.run("submit", "--dry-run", "--executes", "python train.py", *USUAL_JOB,
                 "--conf", f"tony.worker.memory={too_much}", "--conf", "tony.local.vcores=1")
    assert r.rc == 2, r
    assert "role worker:" in r.out and "1 vcores (tony.local.vcores)" in r.out
    assert "tony.worker.memory=" in r.err and "tony.local.vcores=1" in r.err, r
    assert nothing_staged(tony)


def test_conf_file_and_precedence(tony, tmp_path):
    conf = tmp_path / "tony.xml"
    conf.write_text("""<configuration>
      <property><name>tony.worker.instances</name><value>3</value></property>
      <property><name>tony.containers.envs</name><value>FROM_FILE=1</value></property>
      <property><name>tony.worker.memory</name><value>256m</value></property>
    </configuration>""")
    site = tmp_path / "site"
    site.mkdir()
    (site / "tony-site.xml").write_text("""<configuration>
      <property><name>tony.worker.instances</name><value>2</value></property>
    </configuration>""")
    tony.env["TONY_CONF_DIR"] = str(site)
    r = tony.submit("--conf_file", str(conf), "--executes", "echo $FROM_FILE $FROM_CLI",
                    "--container_env", "FROM_CLI=2")
    assert r.rc == 0, r
    # tony-site.xml overrides the conf file; --container_env appended to the file's envs
    assert [t["index"] for t in r.status()["tasks"]] == [0, 1]
    assert r.log("worker", 1).strip() == "1 2"
    final = (r.job_dir() / "tony-final.xml").read_text()
    assert "FROM_FILE=1,FROM_CLI=2" in final


def test_detach_status_logs_kill(tony):
    r = tony.submit("--detach", "--executes", 'echo "started $TASK_INDEX"; sleep 300',
                    "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc == 0, r
    job_id = r.job_dir().name
    assert job_id in r.out

    def running():
        s = tony.run("status", job_id, "--json")
        return s.rc == 0 and json.loads(s.out)["tasks"][1]["state"] == "RUNNING"
    wait_for(running, 60, what="both workers running")
    s = tony.run("status", job_id)
    assert "RUNNING: worker [0, 1]" in s.out, s
    wait_for(lambda: "started 1" in tony.run("logs", job_id, "--task", "worker:1").out, 30, what="log line")
    lst = tony.run("list")
    assert job_id in lst.out and "RUNNING" in lst.out
    k = tony.run("kill", job_id)
    assert k.rc == 0, k
    assert "KILLED" in k.out
    s = tony.run("status", job_id, "--json")
    st = json.loads(s.out)
    assert st["final_status"] == "KILLED"
    assert {t["state"] for t in st["tasks"]} == {"FINISHED"}


def test_kill_signals_a_coordinator_that_does_not_answer(tony):
    """A coordinator too busy (here: stopped) to take the kill request over its
    API is sent SIGTERM, its other way to be asked; the kill completes once
    it runs again, and says what happened."""
    r = tony.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=2", *SMALL)
    assert r.rc == 0, r
    job_id = r.job_dir().name

    def running():
        s = tony.run("status", job_id, "--json")
        return s.rc == 0 and {t["state"] for t in json.loads(s.out)["tasks"]} == {"RUNNING"}
    wait_for(running, 60, what="both workers running")
    am_pid = json.loads((r.job_dir() / "am.json").read_text())["pid"]
    os.kill(am_pid, signal.SIGSTOP)
    try:
        k = tony.popen("kill", job_id)
        time.sleep(7)  # past the 5 s the client gives the API
        assert k.poll() is None, "kill returned before the coordinator could act"
    finally:
        os.kill(am_pid, signal.SIGCONT)
    out, err = k.communicate(timeout=60)
    assert k.returncode == 0, out + err
    assert f"the coordinator (pid {am_pid}) did not take the kill request" in err and "sent it SIGTERM" in err, err
    assert "KILLED" in out, out
    st = json.loads(tony.run("status", job_id, "--json").out)
    assert st["final_status"] == "KILLED" and {t["state"] for t in st["tasks"]} == {"FINISHED"}, st


def test_logs_unknown_task_and_job(tony):
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1", *SMALL)
    job_id = r.job_dir().name
    bad = tony.run("logs", job_id, "--task", "worker:7")
    assert bad.rc != 0 and "no task worker:7" in bad.err
    bad = tony.run("logs", job_id, "--task", "worker")
    assert bad.rc != 0 and "ROLE:INDEX" in bad.err
    bad = tony.run("status", "application_1_0001")
    assert bad.rc != 0 and "no job 'application_1_0001'" in bad.err


def test_venv_and_resources_localized(tony, tmp_path, scripts):
    r = tony.submit(*shipment(tmp_path, scripts), "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    assert r.log("worker", 0).split("\n")[:3] == SHIPMENT_SEEN


@pytest.mark.parametrize("args,expect", [
    (["--conf", "tony.worker.instances=abc"], "tony.worker.instances"),
    (["--conf", "tony.worker.instances=-1"], "tony.worker.instances"),
    (["--conf", "tony.worker.instances=1", "--conf", "tony.worker.memory=lots"], "tony.worker.memory"),
    (["--conf", "tony.worker.instances=1", "--conf", "tony.application.framework=tensorflw"], "did you mean 'tensorflow'"),
    (["--conf", "tony.worker.instances=1", "--conf", "tony.application.framework=standalone",
      "--conf", "tony.ps.instances=1"], "exactly one"),
    (["--conf", "tony.worker.instances=3", "--conf", "tony.task.max-total-instances=2"], "tony.task.max-total-instances"),
    (["--conf", "tony.worker.instances=2", "--conf", "tony.worker.gpus=1",
      "--conf", "tony.task.max-total-gpus=1"], "max-total-gpus"),
    (["--conf", "tony.worker.instances=1", "--conf", "tony.worker.gpus=1", "--conf", "tony.local.gpus=0"], "no GPU"),
    (["--conf", "tony.worker.instances=64", "--conf", "tony.local.vcores=4"], "vcores"),
    (["--conf", "tony.worker.instances=2", "--conf", "tony.worker.memory=900g"], "memory"),
    # ps keeps running through the training stage: both must fit together
    (["--conf", "tony.ps.instances=1", "--conf", "tony.chief.instances=1", "--conf", "tony.chief.vcores=2",
      "--conf", "tony.application.prepare-stage=ps", "--conf", "tony.local.vcores=2"], "3 vcores at once"),
    (["--conf", "tony.application.distributed-mode=SOMETIMES", "--conf", "tony.worker.instances=1"],
     "tony.application.distributed-mode"),
    (["--conf", "tony.application.prepare-stage=nosuch", "--conf", "tony.worker.instances=1"], "prepare-stage"),
    (["--src_dir", "/nonexistent/src", "--conf", "tony.worker.instances=1"], "--src_dir"),
    (["--conf_file", "/nonexistent/tony.xml"], "/nonexistent/tony.xml"),
    (["--srcdir", "x"], "did you mean --src_dir"),
    (["--backend", "k8s"], "unknown backend 'k8s' (--backend k8s); use local or slurm or yarn"),
    (["--conf", "tony.containers.resources=/nonexistent/file.bin", "--conf", "tony.worker.instances=1"],
     "/nonexistent/file.bin"),
])
def test_bad_input_gives_clear_error(tony, args, expect):
    r = tony.submit("--executes", "true", *args)
    assert r.rc == 2, r
    assert expect in r.err, r
    assert "Segmentation" not in r.err
    # nothing staged or started
    jobs = tony.home / "jobs"
    assert not jobs.exists() or not any(jobs.iterdir())


def test_no_command_for_role(tony):
    r = tony.submit("--conf", "tony.worker.instances=1")
    assert r.rc == 2, r
    assert "tony.worker.command" in r.err and "--executes" in r.err


def test_malformed_conf_file(tony, tmp_path):
    bad = tmp_path / "tony.xml"
    bad.write_text("<configuration><property><name>x</name><value>1</value></property>\n<oops")
    r = tony.submit("--conf_file", str(bad), "--executes", "true")
    assert r.rc == 2, r
    assert str(bad) in r.err


def test_yarn_backend_chosen_from_hadoop_conf_dir(tony, tmp_path):
    (tmp_path / "yarn-site.xml").write_text("<configuration/>")
    tony.env["HADOOP_CONF_DIR"] = str(tmp_path)
    r = tony.submit("--executes", "true", "--conf", "tony.worker.instances=1", *SMALL)
    assert "using the yarn backend" in r.err and "yarn-site.xml" in r.err
    assert r.rc != 0


def test_unknown_verb_and_help(tony):
    r = tony.run("frobnicate")
    assert r.rc == 2 and "unknown verb" in r.err
    r = tony.run("submit", "--help")
    assert r.rc == 0 and "--src_dir" in r.out
    assert "local, yarn or slurm" in r.out
    # `tony help VERB` is `tony VERB --help`, for every verb the usage lists
    for verb in ("submit", "status", "kill", "logs", "list", "history", "portal"):
        assert tony.run("help", verb).out == tony.run(verb, "--help").out, verb
    r = tony.run("help", "frobnicate")
    assert r.rc == 2 and "unknown verb 'frobnicate'" in r.err


def conf_xml(path, **keys):
    props = "".join(f"<property><name>{k}</name><value>{v}</value></property>" for k, v in keys.items())
    path.write_text(f"<configuration>{props}</configuration>")
    return path


def test_day_to_day_verbs_take_conf_like_submit(tony, tmp_path):
    root = tmp_path / "elsewhere"
    r = tony.submit("--conf", f"tony.local.root={root}", "--executes", "echo from-root",
                    "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    job_id = next((root / "jobs").iterdir()).name
    assert job_id not in tony.run("list", check_rc=0).out  # TONY_HOME's jobs: not there
    assert job_id in tony.run("list", "--conf", f"tony.local.root={root}", check_rc=0).out
    conf = conf_xml(tmp_path / "tony.xml", **{"tony.local.root": root})
    assert job_id in tony.run("list", "--conf_file", str(conf), check_rc=0).out
    s = tony.run("status", job_id, "--conf_file", str(conf), check_rc=0)
    assert "SUCCEEDED" in s.out, s
    lg = tony.run("logs", job_id, "--task", "worker:0", "--conf", f"tony.local.root={root}", check_rc=0)
    assert "from-root" in lg.out, lg
    k = tony.run("kill", job_id, "--conf=tony.local.root=" + str(root), check_rc=0)
    assert "SUCCEEDED" in k.out, k
    # --conf wins over the file, --root over both
    assert tony.run("status", job_id, "--conf_file", str(conf), "--conf", f"tony.local.root={tmp_path}").rc == 2
    r = tony.run("status", job_id, "--root", str(tony.home), "--conf", f"tony.local.root={root}")
    assert r.rc == 2 and f"no job '{job_id}' under {tony.home}/jobs" in r.err, r


@pytest.mark.parametrize("verb", [["status", "app"], ["kill", "app"], ["logs", "app"], ["list"], ["history"],
                                  ["portal", "--port", "0"], ["submit", "--executes", "true"]])
def test_malformed_conf_is_refused_naming_the_flag(tony, tmp_path, verb):
    r = tony.run(*verb, "--conf", "foo")
    assert r.rc == 2, r
    assert "--conf foo: expected KEY=VALUE" in r.err, r
    r = tony.run(*verb, "--conf_file", str(tmp_path / "missing.xml"))
    assert r.rc == 2 and str(tmp_path / "missing.xml") in r.err, r


def test_logs_follow_streams_until_the_job_ends(tony):
    r = tony.submit("--detach", "--executes", 'for i in 1 2 3; do echo "line $i"; sleep 0.5; done',
                    "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    job_id = r.job_dir().name
    f = tony.run("logs", job_id, "--task", "worker:0", "-f", timeout=60)
    assert f.rc == 0, f
    assert f.out.split("\n")[:3] == ["line 1", "line 2", "line 3"]
    assert tony.run("status", job_id).out.count("SUCCEEDED") >= 1
    bad = tony.run("logs", job_id, "-f")
    assert bad.rc == 2 and "--follow needs --task" in bad.err


def test_kill_never_signals_a_process_that_reused_the_pid(tony):
    """The coordinator is gone and another process has its pid since: `tony
    kill` must tell, from when that process started, that it is not the
    coordinator, and leave it alone (it used to send it SIGTERM when the
    coordinator's API did not answer). `tony status` does not take it for
    the coordinator either."""
    r = tony.submit("--detach", "--executes", "sleep 300", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.worker.memory=256m")
    assert r.rc == 0, r
    job = r.job_dir()
    info = json.loads((job / "am.json").read_text())
    wait_for(lambda: json.loads((job / "status.json").read_text())["tasks"][0]["state"] == "RUNNING", 60,
             what="running")
    for pid in job_processes(tony.home):
        os.kill(pid, signal.SIGKILL)
    wait_for(lambda: not job_processes(tony.home), 10, what="the job's processes gone")
    # an unrelated process now holds the pid am.json names
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        info["pid"] = bystander.pid
        (job / "am.json").write_text(json.dumps(info))
        k = tony.run("kill", job.name, timeout=60)
        time.sleep(0.5)
        assert bystander.poll() is None, f"tony kill signalled pid {bystander.pid}, not the coordinator:\n{k}"
        assert "SIGTERM" not in k.err and "is not running" in k.err, k
        st = tony.run("status", job.name)
        assert "coordinator not running" in st.out, st
    finally:
        bystander.kill()
        bystander.wait()


def test_job_dirs_are_private(tony, tmp_path, scripts):
    """A job dir holds its config, logs and staged sources (a file
    symlinked into src_dir is packed by content): only its user may read
    it. Job dirs and every dir in them are 0700, the files in them 0600 (a
    staged script keeps its user's exec bit); what the task's work dir holds
    (its unpacked sources, what the user's code writes) is the user's, in a
    0700 dir."""
    (scripts / "train.sh").write_text("echo trained\n")
    (scripts / "train.sh").chmod(0o755)
    (tmp_path / "data.txt").write_text("payload\n")
    (tmp_path / "data.txt").chmod(0o644)
    r = tony.submit("--src_dir", str(scripts), "--executes", "bash train.sh", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.worker.memory=256m", "--conf", f"tony.containers.resources={tmp_path / 'data.txt'}")
    assert r.rc == 0, r
    job = r.job_dir()
    assert r.log("worker", 0).strip() == "trained"
    open_to_others = []
    for p in [job, *job.rglob("*")]:
        if p.is_symlink() or "work" in p.relative_to(job).parts[:-1]:
            continue
        mode = p.stat().st_mode & 0o777
        if mode & 0o077 or (p.is_dir() and mode != 0o700):
            open_to_others.append(f"{oct(mode)} {p.relative_to(job.parent)}")
    assert not open_to_others, "\n".join(open_to_others)
    for name in ("tony-final.xml", "status.json", "am.json", "am.log", "secret",
                 "attempts/0/worker-0/stdout", "attempts/0/worker-0/stderr", "attempts/0/worker-0/executor.log"):
        assert (job / name).stat().st_mode & 0o777 == 0o600, name


def test_submit_refuses_what_would_fail_later(tony):
    """Bad input is refused at submit (exit 2, naming the key), not left to
    fail the coordinator or an executor: --conf values that are not UTF-8
    text (tony-final.xml cannot carry them), and job type names longer than
    63 characters. A name of 63 runs."""
    base = ["--executes", "echo hi", "--conf", "tony.worker.memory=256m"]
    for value in ("bad\udcffbyte", "ctrl\x01char"):
        r = tony.submit(*base, "--conf", "tony.worker.instances=1", "--conf", f"tony.application.name={value}")
        assert r.rc == 2, r
        assert "tony.application.name (from --conf)" in r.err and "not UTF-8 text" in r.err, r
    assert not (tony.home / "jobs").exists() or not list((tony.home / "jobs").iterdir())
    long = "a" * 64
    r = tony.submit(*base, "--conf", f"tony.{long}.instances=1", "--conf", f"tony.{long}.memory=256m")
    assert r.rc == 2 and f"tony.{long}.instances" in r.err and "at most 63 characters" in r.err, r
    ok = "b" * 63
    r = tony.submit(*base, "--conf", f"tony.{ok}.instances=1", "--conf", f"tony.{ok}.memory=256m")
    assert r.rc == 0, r
    assert r.log(ok, 0).strip() == "hi"


@pytest.mark.parametrize("dry_run", [False, True])
def test_misspelled_keys_are_refused_with_the_key_meant(tony, tmp_path, dry_run):
    """A typo in a key used to run the wrong job (tony.worker.instance=2 ran
    one worker and SUCCEEDED): now it stops everything, in --conf and in a
    tony.xml alike, and names the key meant."""
    extra = ["--dry-run"] if dry_run else []
    r = tony.submit(*extra, "--executes", "echo hi", "--conf", "tony.worker.instance=2", *SMALL)
    assert r.rc == 2, r
    assert "unknown key tony.worker.instance (from --conf): did you mean tony.worker.instances?" in r.err, r
    xml = conf_xml(tmp_path / "tony.xml", **{"tony.worker.instances": "2",
                                              "tony.application.python-exec-path": "/usr/bin/python3"})
    r = tony.submit(*extra, "--conf_file", str(xml), "--executes", "echo hi", *SMALL)
    assert r.rc == 2, r
    assert f"tony.application.python-exec-path (from {xml}): did you mean tony.python-exec-path?" in r.err, r
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())
    # keys for the user's own code live outside tony.*; a resource of
    # TonY's tony.<type>.<resource> is let through, and named
    r = tony.submit(*extra, "--executes", "echo hi", "--conf", "my.own.key=1", "--conf", "tony.worker.fpga=0",
                    "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 0, r
    assert "tony.worker.fpga (from --conf) is no key tony reads" in r.err and "my.own.key" not in r.err, r


def test_role_sizing_keys_of_a_role_without_instances_are_warned_about(tony, tmp_path):
    """tony.worker.gpus=1 without tony.worker.instances ran a single-node
    job and the key silently did nothing: the job still runs (it may be the
    one wanted), with a warning naming the key, the instances key to set and
    the coordinator's key that sizes a single-node command."""
    r = tony.submit("--executes", "echo single", "--conf", "tony.worker.gpus=1", "--conf", "tony.am.memory=512m")
    assert r.rc == 0, r
    assert (r.job_dir() / "attempts/0/am/stdout").read_text().strip() == "single"
    assert ("tony: warning: tony.worker.gpus=1 (from --conf) does nothing: no tony.worker.instances is set, so the "
            "job runs single-node") in r.err, r
    assert "set tony.worker.instances to run worker tasks, or use tony.am.gpus" in r.err, r
    assert "tony.am.memory" not in r.err.split("sized by")[0], r  # the coordinator's own key is no role's
    # a job with tasks: a role's sizing keys without its instances (from a
    # file too, named); a role turned off with instances=0 keeps its keys quietly
    xml = conf_xml(tmp_path / "roles.xml", **{"tony.ps.vcores": "2"})
    r = tony.submit("--dry-run", "--conf_file", str(xml), "--executes", "true", "--conf", "tony.worker.instances=1",
                    "--conf", "tony.evaluator.memory=1g", "--conf", "tony.chief.instances=0",
                    "--conf", "tony.chief.memory=1g", "--conf", "tony.local.memory=8g")
    assert r.rc == 0, r
    warned = [l for l in r.err.splitlines() if l.startswith("tony: warning:")]
    assert sorted(warned) == [
        "tony: warning: tony.evaluator.memory=1g (from --conf) does nothing: no tony.evaluator.instances is set, so "
        "the job runs no evaluator task; set tony.evaluator.instances to run some, or leave the key out",
        f"tony: warning: tony.ps.vcores=2 (from {xml}) does nothing: no tony.ps.instances is set, so the job runs no "
        "ps task; set tony.ps.instances to run some, or leave the key out"], r


def test_entry_point_missing_from_src_dir_is_refused_at_submit(tony, scripts):
    """Every task would fail at once with "No such file" (after a queue's
    wait, on a cluster): the submit says so, naming the flag and the dir."""
    (scripts / "train.py").write_text("print('trained')\n")
    r = tony.submit("--src_dir", str(scripts), "--executes", "tarin.py", "--python_binary_path", "/usr/bin/python3",
                    "--conf", "tony.worker.instances=1", *SMALL)
    assert r.rc == 2, r
    assert f"--executes tarin.py: no such file in --src_dir {scripts}" in r.err, r
    assert not (tony.home / "jobs").exists() or not any((tony.home / "jobs").iterdir())
    # a shell command, or a script shipped otherwise, is the user's business
    r = tony.submit("--src_dir", str(scripts), "--executes", "python3 train.py", "--conf", "tony.worker.instances=1",
                    *SMALL)
    assert r.rc == 0 and r.log("worker", 0).strip() == "trained", r
