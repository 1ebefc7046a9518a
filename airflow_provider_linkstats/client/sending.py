"""Sending and pacing: one request at a time, after the rate limiter lets it go, under the retry policy.

Every request of a ``LinkstatsClient`` goes through its ``Sender``: the limiter's slot is taken
before the send and given back when nothing was sent, and each answer's headers tell the limiter
(``ratelimit``) and the service's clock (``clock``) what the service said.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

from airflow_provider_linkstats.client import windows
from airflow_provider_linkstats.client.errors import TRANSIENT_STATUSES, LinkstatsApiError, LinkstatsNotFoundError
from airflow_provider_linkstats.client.learned import contradiction
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, raise_for_status

Answer = Callable[[ApiRequest, ApiResponse, Any], ApiResponse]  # an attempt's answer read, or raised
log = logging.getLogger("airflow_provider_linkstats.client.api")

# Called with each request of this thread (or task) after the rate limiter let it go and just
# before it is sent; raising keeps it unsent. The cleanup sets it around a delete so that a delete
# held by the limiter past the freshness of its evidence is not sent (``client.cleanup``).
BEFORE_SEND: ContextVar[Callable[[ApiRequest], None] | None] = ContextVar("linkstats_before_send", default=None)


class Sender:
    """Sends the requests of one client through its limiter, retry policy, clock and transport
    (``client`` is the ``LinkstatsClient``, which holds them: the hooks read and set them there)."""

    def __init__(self, client: Any) -> None:
        self.client = client

    def call(self, request: ApiRequest) -> ApiResponse:
        """Send ``request`` under the retry policy and return its 2xx response, or raise."""
        return self._retried(request, self._checked)

    def probe(self, request: ApiRequest) -> ApiResponse:
        """The raw answer whatever its status (discovery reads 404 and 422), after waiting out a 429
        or a 502-504 under the retry policy like any request."""
        return self._retried(request, self._raw)

    def _retried(self, request: ApiRequest, answer: Answer) -> ApiResponse:
        """``answer(request, response, attempt)`` of each attempt, under the retry policy."""
        retry = self.client.retry
        try:
            for attempt in retry.retrying(request, log):
                with attempt:
                    return answer(request, self.send_paced(request), attempt)
        except LinkstatsApiError as error:
            if retry.asks_too_long(error):
                raise retry.explain(error) from error
            raise
        raise AssertionError("unreachable: tenacity re-raises the last error")  # pragma: no cover

    def _checked(self, request: ApiRequest, response: ApiResponse, attempt: Any) -> ApiResponse:
        contradicted = self.client.contradicted
        if contradicted is not None and (reason := contradiction(response.status, response.body)):
            contradicted(reason)
        try:
            raise_for_status(request, response, redact_key=self.client._auth.redact)
        except LinkstatsNotFoundError:
            # A DELETE whose earlier attempt was lost may have done its work already.
            if request.method == "DELETE" and attempt.retry_state.attempt_number > 1:
                log.info("Linkstats %s: gone on retry, counted as deleted", request.describe())
                return ApiResponse(200, {}, b"")
            raise
        return response

    def _raw(self, request: ApiRequest, response: ApiResponse, attempt: Any) -> ApiResponse:
        if response.status in TRANSIENT_STATUSES:
            raise_for_status(request, response, redact_key=self.client._auth.redact)
        return response

    def send_paced(self, request: ApiRequest) -> ApiResponse:
        """One attempt, after the rate limiter allows it; the answer's headers update the limiter."""
        limiter, clock = self.client.limiter, self.client.clock
        limiter.wait(self.client.settings.max_rate_limit_wait)
        try:
            if (check := BEFORE_SEND.get()) is not None:
                check(request)  # e.g. the cleanup's evidence for a delete is still fresh, after the wait
            if (rebuild := windows.AT_SEND.get()) is not None:
                request = rebuild(request)  # a duration's end counted from now
        except BaseException:
            limiter.release()
            raise
        sent_at, sent_wall = limiter.now(), clock.stamp()
        try:
            response = self.client._transport.send(request)
        except BaseException:
            limiter.release()
            raise
        limiter.observe(response.headers, response.status, sent_at)
        clock.observe(response.headers, sent_wall, method=request.method)
        return response
