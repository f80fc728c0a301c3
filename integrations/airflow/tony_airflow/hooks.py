"""TonyHook: how the provider runs the tony command line. A connection of type
`tony` says which tony binary, which tony.xml (conf file) and which backend;
without one (the default id `tony_default` missing) tony is taken from PATH with
its own defaults. Everything goes through tony's machine-readable commands
(`tony list --json`, `tony status --json`), never through its prose."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess

from airflow.exceptions import AirflowException, AirflowNotFoundException

try:  # Airflow 3: the Task SDK's hook
    from airflow.sdk import BaseHook
except ImportError:  # pragma: no cover - Airflow 2
    from airflow.hooks.base import BaseHook

from tony_airflow import jobjson as J


STDERR_TAIL_LINES = 20
# tony's submit prints the coordinator's page with its access token; a task
# log is read by more people than the job's owner, so the token stays out.
TOKEN = re.compile(r"token=[0-9A-Za-z]+")


class TonyJobError(AirflowException):
    """A tony job that ended in anything but SUCCEEDED; the message holds its
    root cause as tony reported it."""


def job_finished(job: dict) -> bool:
    return job.get(J.JOB_STATE) in (J.JOB_STATE_FINISHED, J.JOB_STATE_LOST)


def job_succeeded(job: dict) -> bool:
    return job.get(J.JOB_STATE) == J.JOB_STATE_FINISHED and job.get(J.JOB_FINAL_STATUS) == J.JOB_FINAL_STATUS_SUCCEEDED


def failure_message(app_id: str, job: dict) -> str:
    """One message for a job that did not succeed: its status and the root
    cause tony found (the failed task, its exit and its stderr's tail)."""
    state = job.get(J.JOB_STATE)
    status = job.get(J.JOB_FINAL_STATUS) if state == J.JOB_STATE_FINISHED else state
    msg = f"tony job {app_id} ended {status}"
    cause = (job.get(J.JOB_ROOT_CAUSE) or {}).get(J.JOB_CAUSE_TEXT)
    diag = job.get(J.JOB_DIAGNOSTICS)
    if cause:
        msg += f"\n{cause}"
    else:
        if diag:
            msg += f"\n{diag}"
        # No root cause (a job killed, or a tony from before single-node
        # runs had one): the failed task's own stderr, where it is readable
        # from here (the local backend).
        for task in job.get(J.JOB_TASKS) or []:
            path = task.get(J.JOB_TASK_STDERR)
            if task.get(J.JOB_TASK_STATE) in J.TASK_FAILED_STATES and path and os.access(path, os.R_OK):
                with open(path, errors="replace") as f:
                    tail = f.read().splitlines()[-STDERR_TAIL_LINES:]
                if tail:
                    msg += f"\nThe end of {path}:\n" + "\n".join("    " + line for line in tail)
    return msg + f"\n(more: `tony logs {app_id}`)"


class TonyHook(BaseHook):
    """Runs tony. Connection extras (all optional): `tony_binary` (path of
    tony, default: `tony` on PATH), `conf_file` (a tony.xml), `backend`
    (local, yarn or slurm). Arguments given here win over the connection's."""

    conn_name_attr = "tony_conn_id"
    default_conn_name = "tony_default"
    conn_type = "tony"
    hook_name = "tony"

    @classmethod
    def get_ui_field_behaviour(cls) -> dict:
        return {
            "hidden_fields": ["host", "schema", "port", "login", "password"],
            "relabeling": {},
            "placeholders": {"extra": '{"tony_binary": "/usr/bin/tony", "conf_file": "/etc/tony/tony.xml", "backend": "yarn"}'},
        }

    def __init__(self, tony_conn_id: str = default_conn_name, tony_binary: str | None = None,
                 conf_file: str | None = None, backend: str | None = None, **kwargs) -> None:
        super().__init__(**kwargs)
        self.tony_conn_id = tony_conn_id
        extra: dict = {}
        try:
            extra = self.get_connection(tony_conn_id).extra_dejson or {}
        except AirflowNotFoundException:
            if tony_conn_id != self.default_conn_name:
                raise
        self.tony_binary = tony_binary or extra.get("tony_binary") or "tony"
        self.conf_file = conf_file or extra.get("conf_file")
        self.backend = backend or extra.get("backend")
        if not shutil.which(self.tony_binary):
            raise AirflowException(
                f"tony binary '{self.tony_binary}' not found: install tony (pip install tony-ml) or set "
                f"tony_binary in the extras of connection '{tony_conn_id}'")

    # The flags every command that reads the job's conf takes.
    def conf_args(self) -> list[str]:
        return ["--conf_file", self.conf_file] if self.conf_file else []

    def status_cmd(self, app_id: str) -> list[str]:
        return [self.tony_binary, "status", app_id, "--json", *self.conf_args()]

    def _run(self, args: list[str], what: str) -> subprocess.CompletedProcess:
        self.log.debug("running %s", args)
        p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        if p.returncode != 0:
            raise AirflowException(f"{what} failed (exit {p.returncode}): {p.stderr.strip() or p.stdout.strip()}")
        return p

    def list_jobs(self) -> list[dict]:
        out = self._run([self.tony_binary, "list", "--json", *self.conf_args()], "tony list").stdout
        return json.loads(out).get(J.LIST_JOBS, [])

    def find_active(self, name: str) -> str | None:
        """The id of a job of this name that has not finished (the newest if
        several): what a retried task re-attaches to."""
        live = [j for j in self.list_jobs() if j.get(J.JOB_NAME) == name and not job_finished(j)]
        return max(live, key=lambda j: j[J.JOB_APP_ID])[J.JOB_APP_ID] if live else None

    def submit(self, flags: list[str], name: str) -> str:
        """Starts the job (`tony submit --detach`) and returns its id: the one
        job of this name that was not there before."""
        before = {j[J.JOB_APP_ID] for j in self.list_jobs()}
        args = [self.tony_binary, "submit", "--detach", *flags]
        if self.backend and "--backend" not in flags:
            args += ["--backend", self.backend]
        if self.conf_file and "--conf_file" not in flags:
            args += ["--conf_file", self.conf_file]
        self.log.info("submitting: %s", " ".join(args))
        p = subprocess.run(args, capture_output=True, text=True, stdin=subprocess.DEVNULL)
        for line in (p.stderr + p.stdout).splitlines():
            self.log.info("tony: %s", TOKEN.sub("token=(hidden)", line.removeprefix("tony: ")))
        new = [j for j in self.list_jobs() if j[J.JOB_APP_ID] not in before and j.get(J.JOB_NAME) == name]
        if p.returncode != 0 and not new:
            raise AirflowException(f"tony submit failed (exit {p.returncode}): {p.stderr.strip()}")
        if not new:
            raise AirflowException(f"tony submit exited 0 but no new job named '{name}' is in `tony list`")
        return max(new, key=lambda j: j[J.JOB_APP_ID])[J.JOB_APP_ID]

    def status(self, app_id: str) -> dict:
        return json.loads(self._run(self.status_cmd(app_id), f"tony status {app_id}").stdout)

    def kill(self, app_id: str) -> None:
        p = subprocess.run([self.tony_binary, "kill", app_id, *self.conf_args()], capture_output=True, text=True,
                           stdin=subprocess.DEVNULL)
        self.log.info("tony kill %s (exit %d): %s", app_id, p.returncode, (p.stdout + p.stderr).strip())
