"""What a client error means for Airflow, decided in one place for operators, sensor and triggers.

- In a worker (operators, a sensor's poke): an error no retry can mend (bad input, 401/403, 404,
  422 and other 4xx but 429, a create whose outcome is unknown) fails the task at once with
  ``AirflowFailException``; anything else is raised as it is, for Airflow's retries.
- In the triggerer: an error becomes an event (``error_event``), and the resumed task turns the
  event back into the same outcome (``raise_for_event``), so a deferred wait fails exactly as a
  poking one would.
- A transient failure in the triggerer waits the poll interval, or the server's longer
  ``Retry-After`` up to ``MAX_RETRY_AFTER``.

Cheap to import (operators import it on every parse): Airflow's exceptions are imported on use.
"""

from __future__ import annotations

import contextlib
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
def failing_fast() -> Iterator[None]:
    """Within it, an error no retry can mend fails the task (``fail_fast``); others pass as they are."""
    try:
        yield
    except LinkstatsError as error:
        fail_fast(error)
        raise


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
    if soft_fail and (event["status"] == "timeout" or reason == "gone"):
        raise AirflowSkipException(f"{message} (soft_fail)")
    if event["status"] == "timeout":
        raise AirflowSensorTimeout(message)
    if reason == "gone":
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
