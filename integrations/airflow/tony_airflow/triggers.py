"""TonyJobTrigger: waits for a tony job in Airflow's triggerer, so a deferred
TonySubmitOperator (or TonyJobSensor) holds no worker slot while the job
trains. It polls `tony status --json` with an asyncio subprocess and fires one
event when the job is over (or when its status cannot be read any more)."""

from __future__ import annotations

import asyncio
import json
from typing import Any, AsyncIterator

from airflow.triggers.base import BaseTrigger, TriggerEvent

from tony_airflow import jobjson as J
from tony_airflow.hooks import failure_message, job_finished, job_succeeded

# Reads of the status that may fail in a row (a job dir being rewritten, a
# busy machine) before the trigger gives up and fails the task.
MAX_STATUS_ERRORS = 5


class TonyJobTrigger(BaseTrigger):
    """Fires {"status": "success"|"error", "app_id", "message"} once the job
    is over. It gets the resolved command (tony binary, conf file) rather than
    a connection id: the triggerer need not read connections."""

    def __init__(self, app_id: str, tony_binary: str, conf_file: str | None = None,
                 poll_interval: float = 10.0) -> None:
        super().__init__()
        self.app_id = app_id
        self.tony_binary = tony_binary
        self.conf_file = conf_file
        self.poll_interval = poll_interval

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return ("tony_airflow.triggers.TonyJobTrigger",
                {"app_id": self.app_id, "tony_binary": self.tony_binary, "conf_file": self.conf_file,
                 "poll_interval": self.poll_interval})

    async def _status(self) -> dict:
        args = [self.tony_binary, "status", self.app_id, "--json"]
        if self.conf_file:
            args += ["--conf_file", self.conf_file]
        proc = await asyncio.create_subprocess_exec(*args, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await proc.communicate()
        if proc.returncode != 0:
            raise RuntimeError(f"tony status {self.app_id} failed (exit {proc.returncode}): {err.decode().strip()}")
        return json.loads(out)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        errors = 0
        while True:
            try:
                job = await self._status()
                errors = 0
            except (RuntimeError, ValueError) as e:
                errors += 1
                if errors >= MAX_STATUS_ERRORS:
                    yield TriggerEvent({"status": "error", "app_id": self.app_id, "message": str(e)})
                    return
                job = {}
            if job and job_finished(job):
                if job_succeeded(job):
                    yield TriggerEvent({"status": "success", "app_id": self.app_id,
                                        "message": f"tony job {self.app_id} SUCCEEDED"})
                else:
                    yield TriggerEvent({"status": "error", "app_id": self.app_id,
                                        "message": failure_message(self.app_id, job),
                                        "final_status": job.get(J.JOB_FINAL_STATUS)})
                return
            await asyncio.sleep(self.poll_interval)
