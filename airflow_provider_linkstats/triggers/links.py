"""The deferrable half of ``LinkstatsLinkExpiredSensor``: the same pokes, sent from the triggerer.

Its arguments are plain JSON and never hold the API key: the connection is read (with
common-compat's async helper) when polling starts. The polling itself is shared: every trigger of
one connection in one triggerer joins one ``SharedPoller`` (``triggers/poller.py``), which walks
the Expired listing once per interval for all of them (``client.fleet``), over one httpx client,
with nothing that blocks the event loop. Each trigger still yields its own event.

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

from airflow.triggers.base import BaseTrigger, TriggerEvent

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.expiry import (
    DEFAULT_EXISTENCE_CHECK_EVERY,
    DEFAULT_MAX_TRANSPORT_FAILURES,
    ExpiryWatch,
)
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from airflow_provider_linkstats.triggers.poller import MAX_RETRY_AFTER, SharedPoller, Subscription

DEFAULT_CONN_ID = LinkstatsLinksHook.default_conn_name
__all__ = ["MAX_RETRY_AFTER", "LinkstatsLinkExpiredTrigger"]


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
        except LinkstatsInputError as error:
            yield _error("input", str(error))
            return

        self.log.info("Waiting for %s to expire (poke every %.1f s)", watch.describe(), self.poke_interval)
        # Every trigger of this connection in this triggerer polls through one shared poller.
        subscription = Subscription(watch, interval=self.poke_interval)
        poller = SharedPoller.join(self.linkstats_conn_id, subscription)
        try:
            while True:
                remaining = None if deadline is None else deadline - time.time()
                try:
                    if remaining is not None and remaining <= 0:
                        raise asyncio.TimeoutError
                    note = await asyncio.wait_for(subscription.notes.get(), remaining)
                except asyncio.TimeoutError:
                    message = f"{watch.describe()} did not expire before the sensor's timeout ({self.deadline})"
                    yield TriggerEvent({"status": "timeout", "message": message, "pending": subscription.pending})
                    return
                if note.event is not None:
                    if note.event["status"] == "success":
                        self.log.info("%s expired", watch.describe())
                    yield TriggerEvent(note.event)
                    return
                error = note.error
                if note.failures >= self.max_transport_failures:
                    yield _error(
                        "transport",
                        f"{note.failures} polls in a row failed, the last with: {error}",
                        http_status=getattr(error, "status", None),
                    )
                    return
                self.log.warning(
                    "Poll %d of %d failed (%s); next try in %.1f s",
                    note.failures,
                    self.max_transport_failures,
                    error,
                    note.wait,
                )
        finally:
            poller.leave(subscription)


def _error(reason: str, message: str, **extra: Any) -> TriggerEvent:
    return TriggerEvent({"status": "error", "reason": reason, "message": message, **extra})


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
