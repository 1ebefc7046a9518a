"""When to try a request again, and how long to wait first (built on tenacity).

Retried: what ``errors.is_transient`` calls transient, except a write whose outcome is unknown: a
create or update (POST, PUT) answered 502, 503 or 504 by a gateway, or whose answer was lost. A
gateway's answer may come after the service did the work (a 504 usually does: the PHP request ran
to the end), so the client reconciles those before any resend (``creating.py``, ``updating.py``: the record looked up
and compared with what was asked). A 429 always comes before any work and is retried; a DELETE
and the reads are retried on any transient failure (a DELETE's 404 on a retry is success).
A ``Retry-After`` is honoured up to ``max_rate_limit_wait`` (real installs ask for 30-60 s after
a 429); a server that asks for longer gets a clear error at once, so Airflow's own task retries
take over instead of a worker slot being held for minutes.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, TypeVar

import tenacity

from airflow_provider_linkstats.client.errors import (
    RETRY_STATUSES,
    LinkstatsApiError,
    LinkstatsRateLimitError,
    LinkstatsTransportError,
    is_transient,
)
from airflow_provider_linkstats.client.protocol import ApiRequest
from airflow_provider_linkstats.client.settings import (
    DEFAULT_MAX_RATE_LIMIT_WAIT,
    DEFAULT_MAX_RETRIES,
    DEFAULT_RETRY_WAIT,
    DEFAULT_RETRY_WAIT_MAX,
    ClientSettings,
)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = DEFAULT_MAX_RETRIES
    initial_wait: float = DEFAULT_RETRY_WAIT  # seconds before the first retry; doubles each time, with jitter
    max_wait: float = DEFAULT_RETRY_WAIT_MAX  # cap on one backoff wait
    max_rate_limit_wait: float = DEFAULT_MAX_RATE_LIMIT_WAIT  # longest Retry-After honoured

    @classmethod
    def from_settings(cls, settings: ClientSettings) -> RetryPolicy:
        return cls(
            max_retries=settings.max_retries,
            initial_wait=settings.retry_wait,
            max_wait=settings.retry_wait_max,
            max_rate_limit_wait=settings.max_rate_limit_wait,
        )

    def should_retry(self, request: ApiRequest, error: BaseException) -> bool:
        if not is_transient(error):
            return False
        if is_unknown_outcome(request, error):
            return False  # the caller reconciles (creating.py, updating.py), never a blind resend
        return not self.asks_too_long(error)

    def pause(self, tries: int, error: BaseException | None = None) -> float:
        """Seconds to let pass before reconciling a write whose outcome is unknown (its ``tries``-th):
        the server's ``Retry-After`` when it fits ``max_rate_limit_wait``, else the backoff."""
        asked = error.retry_after if isinstance(error, LinkstatsApiError) else None
        if asked is not None and asked <= self.max_rate_limit_wait:
            return float(asked)
        return min(self.max_wait, self.initial_wait * 2 ** max(0, tries - 1))

    def asks_too_long(self, error: BaseException) -> bool:
        """Whether the server asked for a longer pause than this policy will sit through."""
        asked = error.retry_after if isinstance(error, LinkstatsApiError) else None
        return asked is not None and asked > self.max_rate_limit_wait

    def explain(self, error: LinkstatsApiError) -> LinkstatsApiError:
        """The error to raise when a Retry-After was too long: it says what to change."""
        if not (isinstance(error, LinkstatsRateLimitError) and self.asks_too_long(error)):
            return error
        return error.reworded(
            f"{error.message}; the service asked to wait {error.retry_after:.0f} s, more than "
            f"max_rate_limit_wait ({self.max_rate_limit_wait:.0f} s, a connection extra)"
        )

    def run(self, request: ApiRequest, attempt: Callable[[Any], T], log: logging.Logger) -> T:
        """``attempt(tenacity's attempt)`` under this policy: its result, or the last error raised."""
        try:
            for tried in tenacity.Retrying(**self._settings(request, log)):
                with tried:
                    return attempt(tried)
        except LinkstatsApiError as error:
            if self.asks_too_long(error):
                raise self.explain(error) from error
            raise
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    async def arun(self, request: ApiRequest, attempt: Callable[[Any], Awaitable[T]], log: logging.Logger) -> T:
        """``run`` for coroutines: the waits between attempts do not block the event loop."""
        try:
            async for tried in tenacity.AsyncRetrying(**self._settings(request, log)):
                with tried:
                    return await attempt(tried)
        except LinkstatsApiError as error:
            if self.asks_too_long(error):
                raise self.explain(error) from error
            raise
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def _settings(self, request: ApiRequest, log: logging.Logger) -> dict:
        backoff = tenacity.wait_exponential(multiplier=self.initial_wait, max=self.max_wait) + tenacity.wait_random(
            0, self.initial_wait
        )

        def wait(state: tenacity.RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            asked = error.retry_after if isinstance(error, LinkstatsApiError) else None
            return float(asked) if asked is not None else backoff(state)

        def before_sleep(state: tenacity.RetryCallState) -> None:
            error = state.outcome.exception() if state.outcome else None
            log.warning(
                "Linkstats %s failed (%s); retry %d of %d in %.2f s",
                request.describe(),
                _short(error),
                state.attempt_number,
                self.max_retries,
                state.next_action.sleep if state.next_action else 0.0,
            )

        return {
            "retry": tenacity.retry_if_exception(lambda e: self.should_retry(request, e)),
            "stop": tenacity.stop_after_attempt(self.max_retries + 1),
            "wait": wait,
            "before_sleep": before_sleep,
            "reraise": True,
        }


WRITES = frozenset({"POST", "PUT", "PATCH"})


def is_unknown_outcome(request: ApiRequest, error: BaseException) -> bool:
    """A create or update that may have been done though it did not answer success: its answer was
    lost after sending, or a gateway answered 502/503/504 (``RETRY_STATUSES``) in its place."""
    if request.method not in WRITES:
        return False
    if isinstance(error, LinkstatsTransportError):
        return error.sent
    return isinstance(error, LinkstatsApiError) and error.status in RETRY_STATUSES


def _short(error: BaseException | None) -> str:
    status = getattr(error, "status", None)
    return f"HTTP {status}" if status is not None else type(error).__name__
