"""TonySubmitOperator: runs a tony job as an Airflow task. Its keyword
arguments are `tony submit`'s flags; the job's id goes to XCom (key
`application_id`, and the return value) as soon as the job is submitted; a
killed task kills the job; with deferrable=True the wait runs in the
triggerer (TonyJobTrigger); a retried task re-attaches to the job its earlier
try left running instead of submitting another."""

from __future__ import annotations

import time
from typing import Any, Sequence


try:
    from airflow.sdk import BaseOperator
except ImportError:  # pragma: no cover - Airflow 2
    from airflow.models import BaseOperator

from airflow.exceptions import AirflowException

from tony_airflow import jobjson as J
from tony_airflow.hooks import TonyHook, TonyJobError, failure_message, job_finished, job_succeeded
from tony_airflow.triggers import TonyJobTrigger

XCOM_APP_ID = "application_id"


class TonySubmitOperator(BaseOperator):
    """Submits a tony job and waits for it.

    :param executes: the command of every task (--executes)
    :param src_dir: directory or archive shipped to each task (--src_dir)
    :param task_params: arguments appended to the command (--task_params)
    :param python_venv: zipped virtualenv (--python_venv)
    :param python_binary_path: the interpreter (--python_binary_path)
    :param shell_env: environment of the user's process, a dict (--shell_env K=V)
    :param container_env: environment of the container, a dict (--container_env K=V)
    :param conf: tony.* keys, a dict (--conf K=V)
    :param conf_file: a tony.xml (--conf_file); wins over the connection's
    :param backend: local, yarn or slurm (--backend); wins over the connection's
    :param tony_conn_id: the `tony` connection (tony binary, conf file, backend)
    :param deferrable: wait in the triggerer instead of a worker slot
    :param poll_interval: seconds between two reads of the job's status
    :param reattach: a retry adopts the job still running from an earlier try
    """

    template_fields: Sequence[str] = ("executes", "src_dir", "task_params", "python_venv", "python_binary_path",
                                      "shell_env", "container_env", "conf", "conf_file")
    ui_color = "#f4d6a1"

    def __init__(self, *, executes: str | None = None, src_dir: str | None = None, task_params: str | None = None,
                 python_venv: str | None = None, python_binary_path: str | None = None,
                 shell_env: dict[str, Any] | None = None, container_env: dict[str, Any] | None = None,
                 conf: dict[str, Any] | None = None, conf_file: str | None = None, backend: str | None = None,
                 tony_conn_id: str = TonyHook.default_conn_name, deferrable: bool = False,
                 poll_interval: float = 10.0, reattach: bool = True, **kwargs) -> None:
        super().__init__(**kwargs)
        self.executes = executes
        self.src_dir = src_dir
        self.task_params = task_params
        self.python_venv = python_venv
        self.python_binary_path = python_binary_path
        self.shell_env = shell_env or {}
        self.container_env = container_env or {}
        self.conf = conf or {}
        self.conf_file = conf_file
        self.backend = backend
        self.tony_conn_id = tony_conn_id
        self.deferrable = deferrable
        self.poll_interval = poll_interval
        self.reattach = reattach
        self._app_id: str | None = None
        self._name: str | None = None
        self._killed = False
        self._hook: TonyHook | None = None

    @property
    def hook(self) -> TonyHook:
        if self._hook is None:
            self._hook = TonyHook(self.tony_conn_id, conf_file=self.conf_file, backend=self.backend)
        return self._hook

    def job_name(self, context) -> str:
        """The job's tony.application.name: the user's, else one naming this
        task instance, which is how a retry finds the job again."""
        if J.KEY_APP_NAME in self.conf:
            return str(self.conf[J.KEY_APP_NAME])
        ti = context["ti"]
        name = f"airflow-{ti.dag_id}-{ti.task_id}-{ti.run_id}"
        map_index = getattr(ti, "map_index", -1)
        return name if map_index is None or map_index < 0 else f"{name}-{map_index}"

    def submit_flags(self, name: str) -> list[str]:
        flags: list[str] = []
        for flag in ("executes", "src_dir", "task_params", "python_venv", "python_binary_path", "conf_file",
                     "backend"):
            value = getattr(self, flag)
            if value not in (None, ""):
                flags += [f"--{flag}", str(value)]
        for flag in ("shell_env", "container_env"):
            for k, v in getattr(self, flag).items():
                flags += [f"--{flag}", f"{k}={v}"]
        conf = {**self.conf, J.KEY_APP_NAME: name}
        for k, v in conf.items():
            flags += ["--conf", f"{k}={v}"]
        return flags

    def execute(self, context) -> str:
        hook = self.hook
        name = self._name = self.job_name(context)
        app_id = hook.find_active(name) if self.reattach else None
        if app_id:
            self.log.info("re-attaching to tony job %s (%s), left running by an earlier try", app_id, name)
        else:
            app_id = hook.submit(self.submit_flags(name), name)
            self.log.info("submitted tony job %s (%s)", app_id, name)
        self._app_id = app_id
        if self._killed:
            # killed while the submit ran, before the id was known
            hook.kill(app_id)
            raise AirflowException(f"task killed while submitting: tony job {app_id} killed")
        context["ti"].xcom_push(key=XCOM_APP_ID, value=app_id)
        if self.deferrable:
            self.defer(trigger=TonyJobTrigger(app_id, hook.tony_binary, hook.conf_file, self.poll_interval),
                       method_name="execute_complete")
        return self.wait(app_id)

    def wait(self, app_id: str) -> str:
        hook = self.hook
        url_said = False
        while True:
            job = hook.status(app_id)
            if not url_said and job.get(J.JOB_URL):
                self.log.info("tony job %s: %s", app_id, job[J.JOB_URL])
                url_said = True
            if job_finished(job):
                break
            time.sleep(self.poll_interval)
        if not job_succeeded(job):
            message = failure_message(app_id, job)
            self.log.error("%s", message)
            raise TonyJobError(message)
        self.log.info("tony job %s SUCCEEDED", app_id)
        return app_id

    def execute_complete(self, context, event: dict[str, Any]) -> str:
        app_id = event["app_id"]
        self._app_id = app_id
        if event["status"] != "success":
            self.log.error("%s", event["message"])
            raise TonyJobError(event["message"])
        self.log.info("%s", event["message"])
        return app_id

    def on_kill(self) -> None:
        self._killed = True
        # The kill may come while `tony submit` runs: the job may exist with
        # its id not yet returned (found by its name), or not yet exist
        # (execute kills it once the submit returns, seeing _killed).
        app_id = self._app_id or (self._name and self.hook.find_active(self._name))
        if app_id:
            self.log.info("task killed: killing tony job %s", app_id)
            self.hook.kill(app_id)


__all__ = ["TonySubmitOperator", "XCOM_APP_ID"]
