"""What the sync client (``api``) and the async one (``aio``) share: one connection's state and how
each attempt is sent and read, so the deferrable sensor cannot drift from the poking one.

Every request takes the limiter's slot before its send, gives it back when nothing was sent, and
each answer's headers tell the limiter (``ratelimit``) and the service's clock (``clock``) what the
service said; the retry policy (``retry``) runs the attempts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from airflow_provider_linkstats.client import windows
from airflow_provider_linkstats.client.auth import ApiKey
from airflow_provider_linkstats.client.clock import ServiceClock
from airflow_provider_linkstats.client.errors import TRANSIENT_STATUSES, LinkstatsNotFoundError
from airflow_provider_linkstats.client.learned import contradiction
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, raise_for_status
from airflow_provider_linkstats.client.ratelimit import RateLimiter
from airflow_provider_linkstats.client.retry import RetryPolicy
from airflow_provider_linkstats.client.settings import ClientSettings

log = logging.getLogger("airflow_provider_linkstats.client.api")

# Called with each request of this thread (or task) after the rate limiter let it go and just
# before it is sent; raising keeps it unsent. The cleanup sets it around a delete so that a delete
# held by the limiter past the freshness of its evidence is not sent (``client.cleanup``).
BEFORE_SEND: ContextVar[Callable[[ApiRequest], None] | None] = ContextVar("linkstats_before_send", default=None)


class SendingClient:
    """The settings, key, rate limiter, retry policy and service's clock of one connection (the
    hooks read and set them on the client), and the reading of each attempt's answer."""

    def __init__(
        self,
        settings: ClientSettings,
        api_key: ApiKey | str,
        *,
        limiter: RateLimiter | None = None,
        retry: RetryPolicy | None = None,
    ) -> None:
        self.settings = settings
        self.root = settings.root
        self.retry = retry or RetryPolicy.from_settings(settings)
        self.limiter = limiter or RateLimiter(window=settings.rate_limit_window)
        # The service's time, from the Date header of every answer: the clock every "now" reads.
        self.clock = ServiceClock(name=f"connection {settings.conn_id!r}" if settings.conn_id else "the service")
        self._auth = api_key if isinstance(api_key, ApiKey) else ApiKey(api_key)
        # Told when an answer contradicts what discovery learned (the hook drops it from its cache).
        self.contradicted: Callable[[str], None] | None = None
        # Where a clock measured elsewhere comes from, and where one measured here goes (the hook's
        # ``KnownService.recall_clock`` and ``remember_clock``: the host's learned facts); None: nowhere.
        self.clock_source: Callable[[ServiceClock], bool] | None = None
        self.clock_measured: Callable[[ServiceClock], None] | None = None

    def _checked(self, request: ApiRequest, response: ApiResponse, attempt: Any) -> ApiResponse:
        """``call``'s reading: the 2xx answer, else its error raised."""
        contradicted = self.contradicted
        if contradicted is not None and (reason := contradiction(response.status, response.body)):
            contradicted(reason)
        try:
            raise_for_status(request, response, redact_key=self._auth.redact)
        except LinkstatsNotFoundError:
            # A DELETE whose earlier attempt was lost may have done its work already.
            if request.method == "DELETE" and attempt.retry_state.attempt_number > 1:
                log.info("Linkstats %s: gone on retry, counted as deleted", request.describe())
                return ApiResponse(200, {}, b"")
            raise
        return response

    def _raw(self, request: ApiRequest, response: ApiResponse, attempt: Any) -> ApiResponse:
        """``probe``'s reading: the answer whatever its status, but a 429 or 502-504 is waited out."""
        if response.status in TRANSIENT_STATUSES:
            raise_for_status(request, response, redact_key=self._auth.redact)
        return response

    def _at_send(self, request: ApiRequest) -> ApiRequest:
        """The request to send now that the limiter let it go (``BEFORE_SEND``, ``windows.AT_SEND``);
        the slot is given back when it is not sent."""
        try:
            if (check := BEFORE_SEND.get()) is not None:
                check(request)  # e.g. the cleanup's evidence for a delete is still fresh, after the wait
            if (rebuild := windows.AT_SEND.get()) is not None:
                request = rebuild(request)  # a duration's end counted from now
        except BaseException:
            self.limiter.release()
            raise
        return request

    def _observed(self, request: ApiRequest, response: ApiResponse, sent_at: float, sent_wall: float) -> ApiResponse:
        """``response``, after the limiter and the clock learnt from its headers (``sent_*``: the stamps
        of ``limiter.now()`` and ``clock.stamp()`` when it left)."""
        self.limiter.observe(response.headers, response.status, sent_at)
        self.clock.observe(response.headers, sent_wall, method=request.method)
        return response
