"""The deferrable half of ``LinkstatsLinkExpiredSensor``, and the expiry watcher's trigger.

Their arguments are plain JSON and never hold the API key: the connection is read when polling
starts. This module imports no HTTP library and not the hooks module (DAG files import it for the
expiry watcher): the hook and the async client are loaded when a trigger runs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import inspect
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Any

from airflow.triggers.base import BaseTrigger, TriggerEvent

try:  # common-compat: BaseEventTrigger on Airflow 3, BaseTrigger on Airflow 2 (no asset watchers there)
    from airflow.providers.common.compat.triggers import BaseEventTrigger
except ImportError:  # a common-compat without that module: the same fallback, by hand
    try:
        from airflow.triggers.base import BaseEventTrigger  # type: ignore[no-redef]
    except ImportError:
        BaseEventTrigger = BaseTrigger  # type: ignore[misc,assignment]

from airflow_provider_linkstats.client.errors import LinkstatsError, LinkstatsInputError, is_transient
from airflow_provider_linkstats.client.settings import DEFAULT_EXISTENCE_CHECK_EVERY, DEFAULT_MAX_TRANSPORT_FAILURES
from airflow_provider_linkstats.hooks.connection import CONNECTION_TYPES
from airflow_provider_linkstats.hooks.outcomes import describe, error_event, retry_wait

JsonDict = dict[str, Any]
_FILTERS = ("search", "search_by", "domain_id", "space_id")  # the watcher's listing filters

DEFAULT_CONN_ID = CONNECTION_TYPES["linkstats_links"][2]  # LinkstatsLinksHook.default_conn_name
__all__ = ["LinkstatsLinkExpiredTrigger", "LinkstatsLinksExpiredEventTrigger"]


class _Arguments:
    """The kwargs are exactly the arguments of ``__init__``; the repr never shows the key."""

    _shown: tuple[str, ...] = ()

    def serialize(self) -> tuple[str, dict[str, Any]]:
        names = list(inspect.signature(type(self).__init__).parameters)[1:]  # after self
        return f"{type(self).__module__}.{type(self).__qualname__}", {n: getattr(self, n) for n in names}

    def __repr__(self) -> str:
        shown = (f"{n}={v!r}" for n in ("linkstats_conn_id", *self._shown) if (v := getattr(self, n)) is not None)
        return f"{type(self).__name__}({', '.join(shown)})"


class LinkstatsLinkExpiredTrigger(_Arguments, BaseTrigger):
    """Fires when the watched link (or every link of ``link_ids``) is in the Expired listing.

    ``linkstats_conn_id``, ``link_id``, ``alias``, ``link_ids``, ``poke_interval``,
    ``max_transport_failures`` and ``existence_check_every`` are the sensor's
    (``LinkstatsLinkExpiredSensor``), as it hands them over. Besides:

    :param deadline: ISO-8601 time (with offset) at which to give up with a ``timeout`` event;
        None leaves the limit to Airflow's trigger timeout.
    :param verified: the sensor already checked that the link exists (skips the first check).
    :param known: what the sensor learnt from the links' records, ``{"<id>": [end epoch or None,
        click limit set]}``, so the trigger sleeps until an end without reading it first.
    :param service_profile: where the sensor's hook found the API and its version (``{"service",
        "root", "generation"}``, no secret), so the triggerer need not look the root up. Used only
        if the root is one the connection's base URL gives and the version matches its
        ``api_version`` extra; otherwise the triggerer finds them out as without it.
    :param service_clock: the service's clock as the sensor measured it from the ``Date`` of its
        answers (``{"offset": seconds the service is ahead of the worker, "uncertainty": seconds}``),
        so the triggerer sleeps towards an end by the service's clock before its first answer
        (which then corrects it). None: the triggerer's clock stands in until then.

    Events: ``{"status": "success", "links": [...]}``, ``{"status": "timeout", "message", "pending"}``
    or ``{"status": "error", "reason": "gone"|"input"|"api"|"transport"|"connection"|"poller", "message", ...}``.
    """

    _shown = ("link_id", "alias", "link_ids")

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
        known: dict[str, Any] | None = None,  # a default: triggers stored by earlier versions have none
        service_profile: dict[str, Any] | None = None,
        service_clock: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        # Named like the sensor's template fields: start_from_trigger renders them here (3.3+).
        self.linkstats_conn_id = linkstats_conn_id
        self.link_id = link_id
        self.alias = alias
        self.link_ids = link_ids
        self.poke_interval = float(poke_interval)
        self.deadline = deadline
        self.max_transport_failures = int(max_transport_failures)
        self.existence_check_every = existence_check_every
        self.verified = bool(verified)
        self.known = known
        self.service_profile = service_profile
        self.service_clock = service_clock

    async def run(self) -> AsyncIterator[TriggerEvent]:
        try:
            from airflow_provider_linkstats.client.checks import check_max_transport_failures, check_number
            from airflow_provider_linkstats.triggers.poller import SharedPoller, Subscription
            from airflow_provider_linkstats.waiting.watch import Watch

            inputs = ("link_id", "alias", "link_ids", "existence_check_every", "verified", "known")
            watch = Watch.from_inputs(**{name: getattr(self, name) for name in inputs})
            deadline = _deadline(self.deadline)
            check_number("poke_interval", self.poke_interval)
            check_max_transport_failures(self.max_transport_failures)
        except LinkstatsInputError as error:
            yield TriggerEvent(error_event(error))
            return

        self.log.info("Waiting for %s to expire (poke every %.1f s)", watch.describe(), self.poke_interval)
        subscription = Subscription(
            watch, interval=self.poke_interval, handed=self.service_profile, clock=_handed_clock(self.service_clock)
        )
        poller = SharedPoller.join(self.linkstats_conn_id, subscription)
        try:
            event = await self._event(subscription, deadline)
        finally:
            poller.leave(subscription)
        if event["status"] == "success":
            self.log.info("%s expired", watch.describe())
        yield TriggerEvent(event)

    async def _event(self, subscription: Any, deadline: float | None) -> JsonDict:
        """The poller's event, a timeout at the deadline, or an error once the failed polls in a row
        reach ``max_transport_failures``."""
        watch = subscription.watch
        while True:
            remaining = None if deadline is None else deadline - time.time()
            try:
                if remaining is not None and remaining <= 0:
                    raise asyncio.TimeoutError
                note = await asyncio.wait_for(subscription.notes.get(), remaining)
            except asyncio.TimeoutError:
                message = f"{watch.describe()} did not expire before the sensor's timeout ({self.deadline})"
                return {"status": "timeout", "message": message, "pending": list(watch.pending)}
            if note.event is not None:
                return note.event
            failure, failures, budget = note.error, note.failures, self.max_transport_failures
            if failures >= budget:
                message = f"{failures} polls in a row failed, the last with: {failure}"
                return {**error_event(failure), "message": message}
            self.log.warning("Poll %d of %d failed (%s); next try in %.1f s", failures, budget, failure, note.wait)


def _handed_clock(value: Any) -> tuple[float, float] | None:
    """``service_clock`` as (offset, uncertainty), or None for anything else."""
    if not isinstance(value, dict):
        return None
    offset, uncertainty = value.get("offset"), value.get("uncertainty", 0.0)
    numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (offset, uncertainty))
    return (float(offset), max(float(uncertainty), 0.0)) if numbers else None  # type: ignore[arg-type]


def _deadline(value: Any) -> float | None:
    """The deadline as epoch seconds, from an ISO-8601 string with offset (or epoch seconds)."""
    if value in (None, ""):
        return None
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        moment = dt.datetime.fromisoformat(str(value))
    except ValueError:
        moment = dt.datetime.min  # no offset: refused below, as a naive one is
    if moment.utcoffset() is None:
        raise LinkstatsInputError("deadline", value, "an ISO-8601 date-time with a UTC offset")
    return moment.timestamp()


# Reported links of event triggers without an asset_state_store (Airflow < 3.3), by the trigger's
# kwargs: a run() started again in the same process does not report them twice.
_REPORTED_IN_MEMORY: dict[str, JsonDict] = {}


class LinkstatsLinksExpiredEventTrigger(_Arguments, BaseEventTrigger):
    """Reports links as they expire, for an ``AssetWatcher`` (event-driven scheduling, Airflow 3).

    It never ends on its own. Each poll walks the Expired listing (ceil(expired / 100) requests)
    and yields ``TriggerEvent({"links": [records]})`` with the links not reported before; nothing
    while nothing changes. The first event reports the links already Expired. What was reported
    is kept in the watched asset's ``asset_state_store`` (Airflow >= 3.3), so a triggerer restart
    repeats nothing; elsewhere in memory, so a restart reports the links still Expired once more
    (deleting with ``missing_ok`` makes that harmless).

    :param linkstats_conn_id: connection of type ``linkstats_links``.
    :param poke_interval: seconds between polls.
    :param search: only links whose ``search_by`` field contains this text.
    :param search_by: ``title`` (the service's default), ``alias`` or ``url``.
    :param domain_id: only links on this domain.
    :param space_id: only links in this space.

    Its kwargs are exactly these arguments (no time stamps): Airflow recognises the same trigger
    across DAG parses by them.
    """

    _shown = _FILTERS

    def __init__(
        self,
        *,
        linkstats_conn_id: str = DEFAULT_CONN_ID,
        poke_interval: float = 60.0,
        search: str | None = None,
        search_by: str | None = None,
        domain_id: int | None = None,
        space_id: int | None = None,
    ) -> None:
        super().__init__()
        self.linkstats_conn_id = linkstats_conn_id
        self.poke_interval = float(poke_interval)
        self.search = search
        self.search_by = search_by
        self.domain_id = domain_id
        self.space_id = space_id

    @property
    def _state_key(self) -> str:
        return "linkstats_reported_expired_links:" + json.dumps(self.serialize()[1], sort_keys=True)

    async def run(self) -> AsyncIterator[TriggerEvent]:
        from airflow_provider_linkstats.client.protocol import adrive
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
        from airflow_provider_linkstats.waiting.feed import ExpiredFeed

        interval = max(self.poke_interval, 0.0)
        try:
            feed = ExpiredFeed({name: getattr(self, name) for name in _FILTERS})
        except LinkstatsInputError as error:
            # A watcher's run() that ends is started again a second later: report, then idle.
            while True:
                self.log.error("Not watching for expired links: %s", error)
                await asyncio.sleep(max(interval, 60.0))
        feed.load(await self._state("aget", self._state_key))
        self.log.info("Watching the Expired listing for new links (poll every %.1f s)", interval)
        hook, client, dialect = LinkstatsLinksHook(self.linkstats_conn_id), None, None
        try:
            while True:
                wait = interval
                try:
                    if client is None:
                        client = await hook.get_polling_client(interval, max_connections=1)
                    if dialect is None:  # the api_version extra, or one probe (kept by the hook)
                        dialect = await hook.aget_dialect(client)
                    records = await adrive(feed.walk(dialect, client.clock), client.call)
                except Exception as error:
                    wait = self._failed(error, interval)
                else:
                    if fresh := feed.news(records):
                        self.log.info("%d links expired since the last poll", len(fresh))
                        # Yielded before the memory is saved: a crash in between repeats, never loses.
                        yield TriggerEvent({"links": fresh})
                    if feed.changed:
                        await self._state("aset", self._state_key, feed.dump())
                await asyncio.sleep(wait)
        finally:
            if client is not None:
                await client.aclose()

    def _failed(self, error: Exception, interval: float) -> float:
        """Log a failed poll; the seconds until the next."""
        if not isinstance(error, LinkstatsError):  # connection missing or unusable: say which, never its content
            self.log.error("Connection %r is unusable (%s); next try in %.1f s", self.linkstats_conn_id,
                           describe(error), interval)  # fmt: skip
            return interval
        wait = retry_wait(error, interval)
        level = logging.WARNING if is_transient(error) else logging.ERROR
        self.log.log(level, "Poll of the Expired listing failed (%s); next try in %.1f s", error, wait)
        return wait

    async def _state(self, method: str, *args: Any) -> Any:
        """The memory in the watcher's asset_state_store (Airflow >= 3.3), else in this process."""
        store = getattr(self, "asset_state_store", None)
        if store is not None:
            try:
                return await getattr(store, method)(*args)
            except Exception as error:  # e.g. one trigger watching several assets: no single store
                self.log.warning("asset_state_store unusable (%s): remembering reported links in memory", error)
                self.asset_state_store = None
        if method == "aget":
            return _REPORTED_IN_MEMORY.get(args[0])
        _REPORTED_IN_MEMORY[args[0]] = args[1]
        return None
