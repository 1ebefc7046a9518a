"""When to try a request again, and how long to wait first (built on tenacity).

Retried: requests that never reached the server, 429, and 502/503/504; a GET, PUT or DELETE
whose answer was lost (they are idempotent). Never retried: other 4xx, 500, and a POST whose
answer was lost (the client reconciles those by natural key instead, see ``api.py``).
A ``Retry-After`` is honoured up to ``max_wait``; a server that asks for longer gets the error
back at once, so the task fails clearly (and Airflow's own task retries take over) instead of
holding a worker slot.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import tenacity

from airflow_provider_linkstats.client.errors import (
    LinkstatsRateLimitError,
    LinkstatsServerError,
    LinkstatsTransportError,
)
from airflow_provider_linkstats.client.protocol import ApiRequest

RETRY_STATUSES = frozenset({502, 503, 504})


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    initial_wait: float = 0.5  # seconds before the first retry; doubles each time, with jitter
    max_wait: float = 30.0  # cap on any single wait, Retry-After included

    def should_retry(self, request: ApiRequest, error: BaseException) -> bool:
        if isinstance(error, LinkstatsTransportError):
            return not error.sent or request.idempotent
        if isinstance(error, LinkstatsRateLimitError) or (
            isinstance(error, LinkstatsServerError) and error.status in RETRY_STATUSES
        ):
            asked = getattr(error, "retry_after", None)
            return asked is None or asked <= self.max_wait
        return False

    def retrying(self, request: ApiRequest, log: logging.Logger) -> tenacity.Retrying:
        return tenacity.Retrying(**self._settings(request, log))

    def async_retrying(self, request: ApiRequest, log: logging.Logger) -> tenacity.AsyncRetrying:
        return tenacity.AsyncRetrying(**self._settings(request, log))

    def _settings(self, request: ApiRequest, log: logging.Logger) -> dict:
        backoff = tenacity.wait_exponential(multiplier=self.initial_wait, max=self.max_wait) + tenacity.wait_random(
            0, self.initial_wait
        )

        def wait(state: tenacity.RetryCallState) -> float:
            error = state.outcome.exception() if state.outcome else None
            asked = getattr(error, "retry_after", None)
            return min(float(asked), self.max_wait) if asked is not None else backoff(state)

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


def _short(error: BaseException | None) -> str:
    status = getattr(error, "status", None)
    return f"HTTP {status}" if status is not None else type(error).__name__
