"""The deferrable half of ``LinkstatsLinkExpiredSensor``: the same pokes, sent from the triggerer.

Its arguments are plain JSON and never hold the API key: the trigger reads the connection itself
(common-compat's async helper) when it starts. It polls with ``client.expiry`` (the sensor's own
plan) over ``client.aio`` (httpx), one HTTP client per trigger run and nothing that blocks the
event loop.

Failures are bounded: a transient one (no answer, 429, 502/503/504) makes the trigger sleep the
poke interval (or the server's longer ``Retry-After``) and try again, never in a tight loop, and
``max_transport_failures`` of them in a row end the wait with an error event; anything else (a
deleted link, a rejected key, a malformed answer) ends it at once. At the deadline it yields a
timeout event.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.providers.common.compat.connection import get_async_connection
from airflow.triggers.base import BaseTrigger, TriggerEvent
from asgiref.sync import sync_to_async

from airflow_provider_linkstats.client.aio import DEFAULT_CONNECT_TIMEOUT, AsyncLinkstatsClient, adrive
from airflow_provider_linkstats.client.errors import (
    LinkstatsError,
    LinkstatsInputError,
    LinkstatsRateLimitError,
    LinkstatsServerError,
    LinkstatsTransportError,
)
from airflow_provider_linkstats.client.expiry import DEFAULT_EXISTENCE_CHECK_EVERY, ExpiryWatch, LinkGoneError
from airflow_provider_linkstats.client.retry import RETRY_STATUSES, RetryPolicy
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

DEFAULT_CONN_ID = "linkstats_links_default"
DEFAULT_MAX_TRANSPORT_FAILURES = 5
MAX_RETRY_AFTER = 600.0  # seconds: the longest server-requested pause honoured before polling again


class LinkstatsLinkExpiredTrigger(BaseTrigger):
    """Fires when the watched link (or every link of ``link_ids``) is in the Expired listing.

    :param linkstats_conn_id: connection of type ``linkstats_links``.
    :param link_id: the link's id (or its record); with ``alias`` too, a poke is one request.
    :param alias: the link's alias, when known.
    :param link_ids: a list of link ids that must all be expired.
    :param poke_interval: seconds between pokes, failed ones included.
    :param deadline: ISO-8601 time (with offset) at which to give up with a ``timeout`` event;
        None leaves the limit to Airflow's trigger timeout.
    :param max_transport_failures: transient failures in a row after which the wait fails.
    :param existence_check_every: also check that the link still exists every this many pokes
        (0: only when the alias is learnt).
    :param verified: the sensor already checked that the link exists (skips the first check).

    Events: ``{"status": "success", "links": [...]}``, ``{"status": "timeout", "message", "pending"}``
    or ``{"status": "error", "reason": "gone"|"input"|"api"|"transport", "message", ...}``.
    """

    def __init__(
        self,
        *,
        linkstats_conn_id: str = DEFAULT_CONN_ID,
        link_id: Any = None,
        alias: str | None = None,
        link_ids: Any = None,
        poke_interval: float = 60.0,
        deadline: str | None = None,
        max_transport_failures: int = DEFAULT_MAX_TRANSPORT_FAILURES,
        existence_check_every: int = DEFAULT_EXISTENCE_CHECK_EVERY,
        verified: bool = False,
    ) -> None:
        super().__init__()
        # Named like the sensor's template fields: on Airflow >= 3.3, start_from_trigger renders
        # them here, in the triggerer, before run().
        self.linkstats_conn_id = linkstats_conn_id
        self.link_id = link_id
        self.alias = alias
        self.link_ids = link_ids
        self.poke_interval = float(poke_interval)
        self.deadline = deadline
        self.max_transport_failures = int(max_transport_failures)
        self.existence_check_every = existence_check_every
        self.verified = bool(verified)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (
            f"{type(self).__module__}.{type(self).__qualname__}",
            {
                "linkstats_conn_id": self.linkstats_conn_id,
                "link_id": self.link_id,
                "alias": self.alias,
                "link_ids": self.link_ids,
                "poke_interval": self.poke_interval,
                "deadline": self.deadline,
                "max_transport_failures": self.max_transport_failures,
                "existence_check_every": self.existence_check_every,
                "verified": self.verified,
            },
        )

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(linkstats_conn_id={self.linkstats_conn_id!r}, link_id={self.link_id!r}, "
            f"alias={self.alias!r}, link_ids={self.link_ids!r})"
        )

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            watch = ExpiryWatch.from_inputs(
                link_id=self.link_id,
                alias=self.alias,
                link_ids=self.link_ids,
                existence_check_every=self.existence_check_every,
                verified=self.verified,
            )
            deadline = _deadline(self.deadline)
            if self.poke_interval < 0 or self.max_transport_failures < 1:
                raise LinkstatsInputError(
                    "poke_interval" if self.poke_interval < 0 else "max_transport_failures",
                    self.poke_interval if self.poke_interval < 0 else self.max_transport_failures,
                    "a non-negative number of seconds" if self.poke_interval < 0 else "a whole number >= 1",
                )
            client = await self._open_client()
        except LinkstatsInputError as error:
            yield _error("input", str(error))
            return
        except Exception as error:  # connection missing or unusable: say which, never its content
            yield _error("connection", f"connection {self.linkstats_conn_id!r} is unusable: {_describe(error)}")
            return

        self.log.info("Waiting for %s to expire (poke every %.1f s)", watch.describe(), self.poke_interval)
        failures = 0
        pending = list(watch.link_ids)
        async with client:
            while True:
                wait = self.poke_interval
                try:
                    outcome = await adrive(watch.poke(), client.call)
                except LinkGoneError as error:
                    yield _error("gone", str(error), link_id=error.link_id)
                    return
                except LinkstatsInputError as error:
                    yield _error("input", str(error))
                    return
                except LinkstatsError as error:
                    if not _transient(error):
                        yield _error("api", str(error), http_status=getattr(error, "status", None))
                        return
                    failures += 1
                    if failures >= self.max_transport_failures:
                        yield _error(
                            "transport",
                            f"{failures} polls in a row failed, the last with: {error}",
                            http_status=getattr(error, "status", None),
                        )
                        return
                    asked = getattr(error, "retry_after", None)
                    if asked is not None:
                        wait = max(wait, min(float(asked), MAX_RETRY_AFTER))
                    self.log.warning(
                        "Poll %d of %d failed (%s); next try in %.1f s",
                        failures,
                        self.max_transport_failures,
                        error,
                        wait,
                    )
                else:
                    failures = 0
                    if outcome.done:
                        self.log.info("%s expired", watch.describe())
                        yield TriggerEvent({"status": "success", "links": outcome.expired})
                        return
                    pending = outcome.pending
                    self.log.debug("%d of %d links not expired yet", len(pending), len(watch.link_ids))
                if deadline is not None:
                    remaining = deadline - time.time()
                    if remaining <= 0:
                        message = f"{watch.describe()} did not expire before the sensor's timeout ({self.deadline})"
                        yield TriggerEvent({"status": "timeout", "message": message, "pending": pending})
                        return
                    wait = min(wait, remaining)
                await asyncio.sleep(wait)

    async def _open_client(self) -> AsyncLinkstatsClient:
        connection = await get_async_connection(self.linkstats_conn_id, hook=LinkstatsLinksHook)
        # The hook parses the connection (base URL, extras, API key present) exactly as in poke mode.
        hook = LinkstatsLinksHook(self.linkstats_conn_id)
        hook.use_connection(connection)
        # Parsing reads conn.extra_dejson, which on Airflow 3.0 masks the extras with a synchronous
        # call to the triggerer's supervisor; on the event loop's thread that raises RuntimeError.
        settings = await sync_to_async(lambda: hook.settings)()
        client = await AsyncLinkstatsClient.open(
            settings["root"],
            str(connection.password),
            verify_ssl=settings["verify_ssl"],
            read_timeout=float(settings["timeout"]),
            connect_timeout=min(DEFAULT_CONNECT_TIMEOUT, float(settings["timeout"])),
            # One attempt per poke: the poll loop is the retry, paced by poke_interval.
            retry=RetryPolicy(max_retries=0),
            keep_alive=self.poke_interval <= 20.0,
        )
        return client


def _transient(error: LinkstatsError) -> bool:
    if isinstance(error, (LinkstatsTransportError, LinkstatsRateLimitError)):
        return True
    return isinstance(error, LinkstatsServerError) and error.status in RETRY_STATUSES


def _error(reason: str, message: str, **extra: Any) -> TriggerEvent:
    return TriggerEvent({"status": "error", "reason": reason, "message": message, **extra})


def _describe(error: BaseException) -> str:
    """Our errors and "connection not defined" are safe to show; others may quote the connection."""
    if isinstance(error, LinkstatsError) or type(error).__name__ == "AirflowNotFoundException":
        return str(error)
    return type(error).__name__


def _deadline(value: Any) -> float | None:
    """The deadline as epoch seconds, from an ISO-8601 string with offset (or epoch seconds)."""
    if value is None or value == "":
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        moment = None
    if moment is None or moment.utcoffset() is None:
        raise LinkstatsInputError("deadline", value, "an ISO-8601 date-time with a UTC offset")
    return moment.timestamp()
