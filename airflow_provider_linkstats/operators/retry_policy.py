"""The provider's retry policy for Airflow 3.3+ (AIP-105 ``retry_policy=``): retries that know the service.

- An error no retry can mend (bad input, a refused key 401/403, 404, a 422, a create whose answer
  was lost) fails the task at once.
- A 429 or 503 that carries ``Retry-After`` is retried when the service said it would take
  requests again, not after the task's fixed ``retry_delay``.
- Any other provider error (a 502/504, no answer, a 500) keeps the task's own ``retry_delay``.
- An error that is not the provider's is left to Airflow (and to the task's ``retries``).

The reason is Airflow's: logged as "Retry policy decision" in the try's log, and stored with the
try (``retry_reason``) when it retries. The rule itself is ``outcomes.retry_advice``.

Every Linkstats operator uses it on Airflow 3.3+ unless the DAG gives a ``retry_policy`` of its own
(set when the task runs, so a DAG parse does not pay for this module). To add rules of your own and
keep these, chain them: ``ChainRetryPolicy([your_policy, LinkstatsRetryPolicy()])``. On Airflow
before 3.3 the operators fail such errors with ``AirflowFailException`` themselves, and building
this class raises ``RuntimeError``.
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
