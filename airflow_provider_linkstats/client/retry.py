"""When to try a request again, and how long to wait first (built on tenacity).

Retried: what ``errors.is_transient`` calls transient, except a POST whose answer was lost (the
client reconciles those by natural key instead, see ``api.py``). A ``Retry-After`` is honoured up
to ``max_rate_limit_wait`` (real installs ask for 30-60 s after a 429); a server that asks for
longer gets a clear error at once, so Airflow's own task retries take over instead of a worker
slot being held for minutes.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import tenacity

from airflow_provider_linkstats.client.errors import (
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
        if isinstance(error, LinkstatsTransportError):
            return not error.sent or request.idempotent
        return not self.asks_too_long(error)

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


def _short(error: BaseException | None) -> str:
    status = getattr(error, "status", None)
    return f"HTTP {status}" if status is not None else type(error).__name__
