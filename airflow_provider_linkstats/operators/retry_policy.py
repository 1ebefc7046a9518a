"""The provider's retry policy for Airflow 3.3+ (AIP-105 ``retry_policy=``): retries that know the service.

An error no retry can mend fails the task at once; a 429 or 503 with ``Retry-After`` is retried when
the service said; any other provider error keeps the task's ``retry_delay``; other errors are left
to Airflow. The rule is ``hooks.outcomes.retry_advice``; the reason is logged and stored with the try.

Every Linkstats operator uses it on Airflow 3.3+ unless the DAG gives a ``retry_policy`` of its own.
To add rules and keep these: ``ChainRetryPolicy([your_policy, LinkstatsRetryPolicy()])``. Before
3.3 building this class raises ``RuntimeError``.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

try:
    from airflow.providers.common.compat.sdk import RetryDecision, RetryPolicy

    AVAILABLE = True
except (ImportError, AttributeError):  # Airflow before 3.3 (or a common-compat provider before retry policies)
    RetryPolicy = object  # type: ignore[assignment,misc]
    AVAILABLE = False

__all__ = ["LinkstatsRetryPolicy"]


class LinkstatsRetryPolicy(RetryPolicy):  # type: ignore[misc,valid-type]
    """Fail what no retry can mend, retry a 429 or 503 after the service's ``Retry-After``, say why."""

    def __init__(self) -> None:
        if not AVAILABLE:
            raise RuntimeError(
                "LinkstatsRetryPolicy needs Airflow 3.3 or later (retry_policy=); on older versions the "
                "Linkstats operators fail errors no retry can mend themselves"
            )

    def evaluate(
        self,
        exception: BaseException,
        try_number: int,
        max_tries: int,
        context: Any = None,
    ) -> RetryDecision:
        from airflow_provider_linkstats.hooks.outcomes import retry_advice

        advice = retry_advice(exception)
        if advice is None:
            return RetryDecision.default()
        action, seconds, reason = advice
        if action == "fail":
            return RetryDecision.fail(reason)
        return RetryDecision.retry(dt.timedelta(seconds=seconds) if seconds is not None else None, reason)

    def serialize(self) -> dict[str, Any]:
        return {"__type": "LinkstatsRetryPolicy"}  # no settings: the rule is the provider's

    @classmethod
    def deserialize(cls, data: dict[str, Any]) -> LinkstatsRetryPolicy:
        return cls()

    def __repr__(self) -> str:
        return "LinkstatsRetryPolicy()"
