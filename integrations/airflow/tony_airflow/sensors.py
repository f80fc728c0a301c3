"""TonyJobSensor: waits for a tony job submitted elsewhere (by id, templated,
e.g. from another task's XCom). It succeeds when the job SUCCEEDED and fails,
with the job's root cause, when the job ended any other way."""

from __future__ import annotations

from typing import Any, Sequence

try:
    from airflow.sdk import BaseSensorOperator
except ImportError:  # pragma: no cover - Airflow 2
    from airflow.sensors.base import BaseSensorOperator

from tony_airflow.hooks import TonyHook, TonyJobError, failure_message, job_finished, job_succeeded
from tony_airflow.triggers import TonyJobTrigger


class TonyJobSensor(BaseSensorOperator):
    """:param application_id: the job's id (templated)
    :param conf_file: a tony.xml (wins over the connection's)
    :param tony_conn_id: the `tony` connection
    :param deferrable: wait in the triggerer (TonyJobTrigger) instead of poking"""

    template_fields: Sequence[str] = ("application_id", "conf_file")

    def __init__(self, *, application_id: str, conf_file: str | None = None,
                 tony_conn_id: str = TonyHook.default_conn_name, deferrable: bool = False, **kwargs) -> None:
        super().__init__(**kwargs)
        self.application_id = application_id
        self.conf_file = conf_file
        self.tony_conn_id = tony_conn_id
        self.deferrable = deferrable

    def _hook(self) -> TonyHook:
        return TonyHook(self.tony_conn_id, conf_file=self.conf_file)

    def execute(self, context) -> Any:
        if not self.deferrable:
            return super().execute(context)
        hook = self._hook()
        self.defer(trigger=TonyJobTrigger(self.application_id, hook.tony_binary, hook.conf_file, self.poke_interval),
                   method_name="execute_complete")

    def poke(self, context) -> bool:
        job = self._hook().status(self.application_id)
        if not job_finished(job):
            return False
        if not job_succeeded(job):
            message = failure_message(self.application_id, job)
            self.log.error("%s", message)
            raise TonyJobError(message)
        return True

    def execute_complete(self, context, event: dict[str, Any]) -> None:
        if event["status"] != "success":
            self.log.error("%s", event["message"])
            raise TonyJobError(event["message"])
        self.log.info("%s", event["message"])
