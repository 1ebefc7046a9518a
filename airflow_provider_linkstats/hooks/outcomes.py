"""What a client error means for Airflow, decided in one place for operators, sensor and triggers.

- In a worker: an error no retry can mend (bad input, 401/403, 404, 422 and other 4xx but 429, a
  create whose outcome is unknown) fails the task at once with ``AirflowFailException``; on Airflow
  3.3+ an operator's retry policy decides instead (``retry_advice``). This module never imports the
  operators: they are a higher room.
- In the triggerer: an error becomes an event (``error_event``), which the resumed task turns back
  into the same outcome (``raise_for_event``); a transient failure waits the poll interval, or a
  longer ``Retry-After`` up to ``MAX_RETRY_AFTER``.

Cheap to import (operators import it on every parse): Airflow's exceptions are imported on use.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator, Mapping
from typing import Any

from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    is_permanent,
    is_transient,
)

MAX_RETRY_AFTER = 600.0  # seconds: the longest server-requested pause honoured before polling again
STOPPED = ". Stopped waiting for it to expire."


def fail_fast(error: LinkstatsError) -> None:
    """Raise ``AirflowFailException`` (chained to ``error``) when no retry can mend it; else return."""
    if not is_permanent(error):
        return
    from airflow.providers.common.compat.sdk import AirflowFailException

    suffix = STOPPED if _is_gone(error) else ""
    raise AirflowFailException(f"{type(error).__name__}: {error}{suffix}") from error


@contextlib.contextmanager
def failing_fast(policy_decides: bool = False) -> Iterator[None]:
    """Within it, an error no retry can mend fails the task (``fail_fast``); with ``policy_decides``
    (Airflow 3.3+) every error passes as it is: the task's retry policy decides."""
    try:
        yield
    except LinkstatsError as error:
        if not policy_decides:
            fail_fast(error)
        raise


# What a task retry can do about each permanent error: why none is worth it.
PERMANENT_WHY = {
    "LinkstatsInputError": "bad input, refused before any request",
    "LinkstatsConfigError": "the Airflow connection is missing or not set up for this hook",
    "LinkstatsOutcomeUnknownError": "a create's answer was lost and sending it again could make a twin",
    "LinkstatsExistsError": "the record exists and if_exists is 'fail'",
    "LinkstatsAuthError": "the API key was refused or lacks permission",
    "LinkstatsNotFoundError": "the service has no such record",
    "LinkstatsRouteMissError": "the connection's Base URL or path leads outside the service's API",
    "LinkstatsValidationError": "the service rejected the input",
    "LinkstatsWriteMismatchError": "the service ignored a field of the pinned api_version",
    "LinkstatsTransportError": "the TLS handshake failed",
}


def retry_advice(error: BaseException) -> tuple[str, float | None, str] | None:
    """``("fail", None, reason)`` or ``("retry", seconds, reason)`` (``seconds``: the service's
    ``Retry-After``, or None for the task's ``retry_delay``); None when no provider error is in
    ``error``'s causes. The one rule for ``LinkstatsRetryPolicy``, pure so every Airflow version tests it."""
    found = _provider_error(error)
    if found is None:
        return None
    status = getattr(found, "status", None)
    label = f"HTTP {status} ({type(found).__name__})" if status is not None else type(found).__name__
    if is_permanent(found):
        why = next(
            (PERMANENT_WHY[kind.__name__] for kind in type(found).__mro__ if kind.__name__ in PERMANENT_WHY),
            "the service refused the request",
        )
        return "fail", None, f"{label}: {why}; a retry would meet the same answer, so the task fails now"
    asked = found.retry_after if isinstance(found, LinkstatsApiError) else None
    if asked is not None:
        seconds = float(max(1, math.ceil(asked)))
        return "retry", seconds, f"{label}: the service asked to wait {seconds:.0f} s (Retry-After); retrying then"
    what = "may pass" if not is_transient(found) else "the service or the network was briefly unavailable"
    return "retry", None, f"{label}: {what}; retrying after the task's retry_delay"


def _provider_error(error: BaseException) -> LinkstatsError | None:
    """``error`` or the first provider error it was raised from (``raise ... from``)."""
    seen: set[int] = set()
    item: BaseException | None = error
    while item is not None and id(item) not in seen:
        if isinstance(item, LinkstatsError):
            return item
        seen.add(id(item))
        item = item.__cause__
    return None


def error_event(error: BaseException) -> dict[str, Any]:
    """The trigger event that ends a wait with ``error``."""
    if isinstance(error, LinkstatsInputError):
        return _event("input", str(error))
    if _is_gone(error):
        return _event("gone", str(error), link_id=getattr(error, "link_id", None))
    if isinstance(error, LinkstatsError):
        reason = "transport" if is_transient(error) else "api"
        return _event(reason, str(error), http_status=getattr(error, "status", None))
    return _event("connection", describe(error))


def raise_for_event(event: Any, *, soft_fail: bool = False) -> list[dict[str, Any]]:
    """The records of a success event; for any other, the failure the worker would have raised."""
    from airflow.providers.common.compat.sdk import (
        AirflowException,
        AirflowFailException,
        AirflowSensorTimeout,
        AirflowSkipException,
    )

    if not isinstance(event, Mapping) or "status" not in event:
        raise AirflowException(f"the trigger ended without a usable event: {event!r}")
    message = str(event.get("message", ""))
    if event["status"] == "success":
        return list(event.get("links") or [])
    reason = event.get("reason")
    if event["status"] == "timeout" or reason == "gone":
        if soft_fail:
            raise AirflowSkipException(f"{message} (soft_fail)")
        if event["status"] == "timeout":
            raise AirflowSensorTimeout(message)
        raise AirflowFailException(f"{message}{STOPPED}")
    status = event.get("http_status")
    if reason == "input" or (reason == "api" and isinstance(status, int) and 400 <= status < 500 and status != 429):
        raise AirflowFailException(message)
    raise AirflowException(f"waiting for the link(s) to expire failed ({reason}): {message}")


def retry_wait(error: BaseException, interval: float) -> float:
    """Seconds before the next poll after a failed one: the interval, or a longer ``Retry-After``."""
    asked = error.retry_after if isinstance(error, LinkstatsApiError) else None
    return max(interval, min(float(asked), MAX_RETRY_AFTER)) if asked is not None else interval


def describe(error: BaseException) -> str:
    """Our errors and "connection not defined" are safe to show; others may quote the connection."""
    if isinstance(error, LinkstatsError) or type(error).__name__ == "AirflowNotFoundException":
        return str(error)
    return type(error).__name__


def _is_gone(error: BaseException) -> bool:
    return isinstance(error, LinkstatsNotFoundError) and hasattr(error, "link_id")


def _event(reason: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"status": "error", "reason": reason, "message": message, **extra}
