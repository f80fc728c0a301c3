"""The Airflow provider (integrations/airflow, issue 25) run by a real Airflow 3
from PyPI, in its own cached venv (scripts/airflow-venv), with SQLite metadata
in a temporary AIRFLOW_HOME: each test writes a DAG using TonySubmitOperator
and runs it with dag.test() in that venv's Python, against the real tony
binary on the local backend. Run by `make test-airflow` (marker `airflow`)."""
import json
import os
import re
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import REPO, TONY, alive, wait_for

pytestmark = pytest.mark.airflow

PROVIDER = REPO / "integrations" / "airflow" / "tony_airflow"

# What runs a DAG file's DAG once, printing its task and run states.
RUN = '''
if __name__ == "__main__":
    dr = dag.test()
    for ti in dr.get_task_instances():
        print("TASK_STATE", ti.task_id, ti.state)
    print("DAGRUN_STATE", dr.state)
'''


# The DAG every test runs, filled from a params.json beside it. `report`
# writes what it pulled from XCom, so the id is read back the way a
# downstream task would. CrashFirstTry stands for a worker lost after the
# submit: its first try fails once the job runs, the retry must adopt it.
DAG = '''
import json, sys, datetime
from pathlib import Path
from airflow.sdk import DAG, task
from tony_airflow.operators import TonySubmitOperator
from tony_airflow.sensors import TonyJobSensor

P = json.loads((Path(__file__).parent / "params.json").read_text())


class CrashFirstTry(TonySubmitOperator):
    def execute(self, context):
        self.try_number = context["ti"].try_number
        return super().execute(context)

    def wait(self, app_id):
        if self.try_number == 1:
            raise RuntimeError("worker lost (simulated) while waiting for " + app_id)
        return super().wait(app_id)


with DAG("tony_e2e", schedule=None, start_date=datetime.datetime(2026, 1, 1)) as dag:
    op = CrashFirstTry if P.get("crash_first_try") else TonySubmitOperator
    train = op(task_id="train", executes=P["executes"], poll_interval=0.3, deferrable=P.get("deferrable", False),
               retries=P.get("retries", 0), retry_delay=datetime.timedelta(seconds=0),
               shell_env={"E2E_GREETING": "hello from airflow"},
               conf={"tony.local.vcores": "16", "tony.local.memory": "16g", **P.get("conf", {})})

    @task
    def report(app_id, ti=None):
        pulled = ti.xcom_pull(task_ids="train", key="application_id")
        Path(P["out"]).write_text(json.dumps({"returned": app_id, "pulled": pulled}))

    report(train.output)
    # a sensor on the job another task submitted, by the id in XCom
    train >> TonyJobSensor(task_id="watch", poke_interval=0.3,
                           application_id="{{ ti.xcom_pull(task_ids='train', key='application_id') }}")
''' + RUN


@pytest.fixture(scope="session")
def airflow_env(tmp_path_factory):
    """The venv (built once, cached under /var/cache/tony/venvs) and a fresh
    AIRFLOW_HOME whose SQLite database is migrated once for the session."""
    made = subprocess.run([str(REPO / "scripts" / "airflow-venv")], capture_output=True, text=True, timeout=1800)
    assert made.returncode == 0, f"scripts/airflow-venv failed:\n{made.stderr}"
    venv = Path(made.stdout.strip().splitlines()[-1])
    home = tmp_path_factory.mktemp("airflow-home")
    env = dict(os.environ, AIRFLOW_HOME=str(home), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               # the connection type this provider adds, naming the tony under test
               AIRFLOW_CONN_TONY_DEFAULT=json.dumps({"conn_type": "tony", "extra": {"tony_binary": TONY}}))
    env.pop("HADOOP_CONF_DIR", None)
    env.pop("PYTHONPATH", None)
    db = subprocess.run([str(venv / "bin" / "airflow"), "db", "migrate"], env=env, capture_output=True, text=True,
                        timeout=300)
    assert db.returncode == 0, db.stdout + db.stderr
    return venv, env


class DagRun:
    def __init__(self, airflow_env, tony, tmp_path, source=None, **params):
        venv, env = airflow_env
        self.dags = tmp_path / "dags"
        self.dags.mkdir()
        self.out = tmp_path / "report.json"
        (self.dags / "tony_e2e.py").write_text(source or DAG)
        (self.dags / "params.json").write_text(json.dumps({"out": str(self.out), **params}))
        self.env = dict(env, AIRFLOW__CORE__DAGS_FOLDER=str(self.dags), TONY_HOME=str(tony.home))
        self.cmd = [str(venv / "bin" / "python"), str(self.dags / "tony_e2e.py")]
        self.tony = tony

    def run(self, timeout=120):
        p = subprocess.run(self.cmd, env=self.env, capture_output=True, text=True, timeout=timeout)
        self.log = p.stdout + p.stderr
        return self

    def popen(self, log):
        # to a file, not a pipe: Airflow logs more than a pipe holds while
        # the test waits, and a blocked write would hold off the signal
        return subprocess.Popen(self.cmd, env=self.env, stdout=log, stderr=subprocess.STDOUT)

    @property
    def state(self):
        m = re.search(r"^DAGRUN_STATE (\S+)", self.log, re.M)
        assert m, f"dag.test() did not finish:\n{self.log[-6000:]}"
        return m.group(1)

    def task_state(self, task_id):
        m = re.search(rf"^TASK_STATE {task_id} (\S+)", self.log, re.M)
        return m and m.group(1)

    def jobs(self):
        out = self.tony.run("list", "--json", check_rc=0).out
        return json.loads(out)["jobs"]

    def report(self):
        return json.loads(self.out.read_text())


def test_contract_names_match_tony():
    """The names the provider reads from tony's JSON are tony's own
    (src/common/jobjson.h, src/conf/keys.h): a rename there fails here."""
    header = (REPO / "src" / "common" / "jobjson.h").read_text() + (REPO / "src" / "conf" / "keys.h").read_text()
    defined = dict(re.findall(r'#define (\w+) "([^"]*)"', header))
    ns = {}
    exec((PROVIDER / "jobjson.py").read_text(), ns)
    checked = 0
    for name, value in ns.items():
        c_name = "TONY_KEY_APP_NAME" if name == "KEY_APP_NAME" else name
        if name.startswith(("JOB_", "KEY_")):
            assert defined.get(c_name) == value, f"{name} = {value!r} but tony says {defined.get(c_name)!r}"
            checked += 1
    assert checked >= 10


def test_provider_is_registered(airflow_env):
    """Airflow finds the provider by its entry point: the hook, its `tony`
    connection type and the operator module are in its provider registry."""
    venv, env = airflow_env
    code = ("from airflow.providers_manager import ProvidersManager as P; import json; p = P();"
            "i = p.providers['tony-airflow'].data;"
            "print(json.dumps({'conn': i['connection-types'], 'ops': i['operators']}))")
    p = subprocess.run([str(venv / "bin" / "python"), "-W", "ignore", "-c", code], env=env, capture_output=True,
                       text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    info = json.loads(p.stdout.strip().splitlines()[-1])
    assert info["conn"] == [{"hook-class-name": "tony_airflow.hooks.TonyHook", "connection-type": "tony"}]
    assert info["ops"][0]["python-modules"] == ["tony_airflow.operators"]


def test_dag_succeeds_and_pushes_the_id(airflow_env, tony, tmp_path):
    run = DagRun(airflow_env, tony, tmp_path, executes='sh -c "echo $E2E_GREETING"').run()
    assert run.state == "success", run.log[-6000:]
    jobs = run.jobs()
    assert len(jobs) == 1 and jobs[0]["final_status"] == "SUCCEEDED", jobs
    app_id = jobs[0]["app_id"]
    assert run.report() == {"returned": app_id, "pulled": app_id}
    assert run.task_state("watch") == "success"
    # the job ran with the operator's shell_env; its name says which task instance
    assert jobs[0]["name"].startswith("airflow-tony_e2e-train-manual__")
    out = (Path(jobs[0]["job_dir"]) / "attempts" / "0" / "am" / "stdout").read_text()
    assert "hello from airflow" in out
    # the coordinator's token is not written into the task log
    assert "token=(hidden)" in run.log and not re.search(r"token=[0-9a-f]{16}", run.log)


def test_failed_job_fails_the_task_with_its_root_cause(airflow_env, tony, tmp_path):
    run = DagRun(airflow_env, tony, tmp_path, executes='sh -c "echo the-data-is-corrupt >&2; exit 7"',
                 conf={"tony.worker.instances": "1"}).run()
    assert run.state == "failed", run.log[-6000:]
    jobs = run.jobs()
    assert len(jobs) == 1 and jobs[0]["final_status"] == "FAILED"
    # in the task's log (error record) and in the exception Airflow reports
    assert re.search(r"TonyJobError: tony job \S+ ended FAILED", run.log), run.log[-6000:]
    assert "Root cause: worker:0 failed first" in run.log
    # (the command, with these words, is in the log too: match the cause's own lines)
    assert "exit code 7" in run.log and re.search(r"The end of its stderr:\n\s+the-data-is-corrupt", run.log)
    assert not run.out.exists()  # the downstream task did not run
    assert run.task_state("train") == "failed"


def test_the_docs_dag_runs(airflow_env, tony, tmp_path):
    """docs/workflows.md's DAG, as a reader copies it (2 workers, deferrable)."""
    doc = (REPO / "docs" / "workflows.md").read_text()
    source = re.search(r"^```python\n(.*?)^```$", doc, re.M | re.S).group(1)
    run = DagRun(airflow_env, tony, tmp_path, source=source + RUN)
    run.env["TONY_CONF_DIR"] = str(tmp_path)  # this machine's 2 cores: room for 2 workers
    (tmp_path / "tony-site.xml").write_text(
        "<configuration><property><name>tony.local.vcores</name><value>16</value></property>"
        "<property><name>tony.local.memory</name><value>16g</value></property></configuration>")
    run.run()
    assert run.state == "success", run.log[-6000:]
    app_id = run.jobs()[0]["app_id"]
    assert "Pausing task as DEFERRED" in run.log
    assert f"model trained by tony job {app_id}" in run.log, run.log[-6000:]


def test_on_kill_kills_the_job(airflow_env, tony, tmp_path):
    """A task killed by Airflow (SIGTERM to the task's process, what the
    supervisor sends) calls on_kill, which kills the job: nothing is left."""
    pidfile = tmp_path / "user.pid"
    run = DagRun(airflow_env, tony, tmp_path, executes=f'sh -c "echo $$ > {pidfile}; exec sleep 300"')
    log = tmp_path / "dag.log"
    with open(log, "wb") as f:
        proc = run.popen(f)
    try:
        wait_for(lambda: pidfile.exists() and pidfile.read_text().strip(), timeout=90, what="the job's process")
        user_pid = int(pidfile.read_text())
        proc.send_signal(signal.SIGTERM)
        proc.wait(timeout=90)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    run.log = out = log.read_text(errors="replace")
    assert run.state == "failed", out[-6000:]
    assert "task killed: killing tony job" in out, out[-6000:]
    jobs = run.jobs()
    assert len(jobs) == 1 and jobs[0]["final_status"] == "KILLED", (jobs, out[-4000:])
    wait_for(lambda: not alive(user_pid), timeout=10, what=f"the job's process {user_pid} to end")
    # the `tony` fixture then checks that no process of the job is left at all


def test_deferrable_completes_in_the_trigger(airflow_env, tony, tmp_path):
    """deferrable=True: the task gives its slot back (DEFERRED; in dag.test
    the trigger then runs in line, in a real deployment in the triggerer) and
    the trigger's event finishes it, from `tony status --json`."""
    run = DagRun(airflow_env, tony, tmp_path, executes='sh -c "sleep 2"', deferrable=True).run()
    assert run.state == "success", run.log[-6000:]
    assert "Pausing task as DEFERRED" in run.log and "running trigger in line" in run.log, run.log[-6000:]
    jobs = run.jobs()
    app_id = jobs[0]["app_id"]
    assert f"tony job {app_id} SUCCEEDED" in run.log
    assert run.report() == {"returned": app_id, "pulled": app_id}


def test_deferrable_failure_shows_the_stderr(airflow_env, tony, tmp_path):
    """A job failing while the trigger waits fails the task with the cause:
    a single-node job's too (am:0), with its stderr's end."""
    run = DagRun(airflow_env, tony, tmp_path, executes='sh -c "echo no-such-table >&2; exit 3"',
                 deferrable=True).run()
    assert run.state == "failed", run.log[-6000:]
    assert "running trigger in line" in run.log
    assert re.search(r"TonyJobError: tony job \S+ ended FAILED", run.log), run.log[-6000:]
    assert re.search(r"Root cause: am:0 failed first .*exit code 3.*The end of its stderr:\n\s+no-such-table", run.log,
                     re.S), run.log[-6000:]


def test_retry_reattaches_to_the_running_job(airflow_env, tony, tmp_path):
    run = DagRun(airflow_env, tony, tmp_path, executes='sh -c "sleep 4"', crash_first_try=True, retries=1).run()
    assert run.state == "success", run.log[-6000:]
    assert "worker lost (simulated)" in run.log
    jobs = run.jobs()
    assert len(jobs) == 1, f"a retry submitted again: {jobs}"
    app_id = jobs[0]["app_id"]
    assert f"re-attaching to tony job {app_id}" in run.log, run.log[-6000:]
    assert jobs[0]["final_status"] == "SUCCEEDED"
    assert run.report() == {"returned": app_id, "pulled": app_id}


def test_dist_wheel_installs_the_provider(airflow_env, tmp_path):
    """The wheel scripts/make-dist builds beside tony's: pip installs it and
    Airflow's entry point names get_provider_info in it."""
    venv, env = airflow_env
    sys_path = str(REPO / "scripts")
    code = ("import importlib.machinery, sys, pathlib;"
            f"m = importlib.machinery.SourceFileLoader('make_dist', {sys_path!r} + '/make-dist').load_module();"
            "print(m.airflow_wheel(pathlib.Path(sys.argv[1])))")
    made = subprocess.run(["python3", "-c", code, str(tmp_path)], capture_output=True, text=True, timeout=60)
    assert made.returncode == 0, made.stderr
    whl = made.stdout.strip()
    target = tmp_path / "site"
    pip = subprocess.run([str(venv / "bin" / "pip"), "install", "-q", "--no-deps", "--no-index", "--target",
                          str(target), whl], capture_output=True, text=True, timeout=120)
    assert pip.returncode == 0, pip.stderr
    check = ("import importlib.metadata as md, sys;"
             "d = md.distribution('tony-airflow');"
             "ep = [e for e in d.entry_points if e.group == 'apache_airflow_provider'][0];"
             "info = ep.load()(); assert d.locate_file('tony_airflow/operators.py').exists();"
             "print(ep.value, info['package-name'], str(d.locate_file('')))")
    p = subprocess.run([str(venv / "bin" / "python"), "-c", check], env=dict(env, PYTHONPATH=str(target)),
                       capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split()[:2] == ["tony_airflow:get_provider_info", "tony-airflow"]
    assert p.stdout.split()[2].startswith(str(target))
