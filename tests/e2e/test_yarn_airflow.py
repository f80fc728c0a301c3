"""One Airflow DAG run against the YARN test cluster (issue 25: "also one DAG
run on the YARN test cluster"): the same real Airflow 3 and DAG as
test_airflow.py (TonySubmitOperator, then a task reading the id from XCom,
and TonyJobSensor), its `tony` connection naming the yarn backend. Marked
`hadoop` and `airflow`: `make test-hadoop` runs it, once, against its
cluster (`make test-airflow` runs only test_airflow.py, without one)."""
import json

import pytest

from conftest import TONY
from test_airflow import DagRun, airflow_env  # noqa: F401 - the fixture
from test_yarn_jobs import yarn  # noqa: F401 - the fixture

pytestmark = [pytest.mark.hadoop, pytest.mark.airflow]


def test_dag_on_yarn_succeeds_and_pushes_the_id(airflow_env, yarn, tmp_path):  # noqa: F811
    run = DagRun(airflow_env, yarn.tony, tmp_path, executes='sh -c "echo $E2E_GREETING"',
                 conf={"tony.worker.instances": "1", "tony.worker.memory": "256m", "tony.am.memory": "256m"})
    run.env["HADOOP_CONF_DIR"] = yarn.cluster.conf_dir
    run.env["AIRFLOW_CONN_TONY_DEFAULT"] = json.dumps(
        {"conn_type": "tony", "extra": {"tony_binary": TONY, "backend": "yarn"}})
    run.run(timeout=240)
    assert run.state == "success", run.log[-6000:]
    # one job, submitted to YARN (`tony list` shows its last state seen
    # here; the RM's own record below is the final one)
    jobs = run.jobs()
    assert len(jobs) == 1 and jobs[0]["backend"] == "yarn", jobs
    app_id = jobs[0]["app_id"]
    assert app_id.startswith("application_"), jobs
    assert run.report() == {"returned": app_id, "pulled": app_id}
    assert run.task_state("watch") == "success"
    # YARN ran it: the RM's own record, and the worker's container log
    assert yarn.cluster.wait_app(app_id)["finalStatus"] == "SUCCEEDED"
    assert "hello from airflow" in yarn.task_log(app_id, "worker", 0)
