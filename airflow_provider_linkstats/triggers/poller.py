"""One poller per connection in a triggerer: every waiting ``LinkstatsLinkExpiredTrigger`` shares it.

Each trigger joins the poller of its connection id in its event loop (the triggerer runs all its
triggers in one loop) and waits for a note addressed to it. The poller owns one HTTP client (one
pool of at most ``MAX_CONNECTIONS`` connections, one rate limiter) and runs ``client.fleet``
rounds at the pace of the smallest ``poke_interval`` among its triggers. A round's results go to
every trigger, and each trigger still yields its own event, logs its own warnings and keeps its
own deadline and failure budget.

Sharing is only an economy: a trigger alone in its triggerer (or moved to another one) has a
poller of its own, which sends what the trigger sent before this existed: one filtered request
per poke for a link with a known alias, one walk of the listing for a list.

A trigger that still has to learn its link's alias or id gets its first poke on its own (the
sensor's plan, through the shared client), then joins the fleet. A cancelled trigger leaves in
its ``finally``; the poller closes its client and ends when no trigger is left.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import weakref
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.client.aio import KEEP_ALIVE_MAX_IDLE, AsyncLinkstatsClient
from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsError,
    LinkstatsInputError,
    is_transient,
)
from airflow_provider_linkstats.client.expiry import ExpiryWatch, LinkGoneError, adrive
from airflow_provider_linkstats.client.fleet import Fleet, RoundResult, Waiter
from airflow_provider_linkstats.client.ratelimit import RateLimiter
from airflow_provider_linkstats.client.retry import RetryPolicy

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 2  # the pool of a poller: enough for first pokes beside a round, never one per link
MAX_RETRY_AFTER = 600.0  # seconds: the longest server-requested pause honoured before polling again


@dataclass
class Note:
    """What the poller tells one trigger: its final event, or that a poll failed."""

    event: dict[str, Any] | None = None
    error: LinkstatsError | None = None
    failures: int = 0  # failed polls in a row, this one included
    wait: float = 0.0  # seconds until the next poll


class Subscription:
    """One trigger's membership: its watch, its pace, and the notes addressed to it."""

    def __init__(self, watch: ExpiryWatch, *, interval: float) -> None:
        self.watch = watch
        self.interval = interval
        self.waiter: Waiter | None = None  # set once the watch knows its ids and alias
        self.failures = 0
        self.notes: asyncio.Queue[Note] = asyncio.Queue()
        if not watch.single or (watch.link_ids and watch.alias):
            self.waiter = _waiter(watch)

    @property
    def pending(self) -> list[int]:
        return self.waiter.pending if self.waiter is not None else list(self.watch.link_ids)


# Pollers of each running event loop, by connection id. A loop that ends takes its pollers along.
_POLLERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SharedPoller]] = weakref.WeakKeyDictionary()


def pollers() -> dict[str, SharedPoller]:
    """The running loop's pollers by connection id (a copy)."""
    return dict(_POLLERS.get(asyncio.get_running_loop(), {}))


class SharedPoller:
    """Polls for every subscription of one connection; build it with ``join``."""

    def __init__(self, conn_id: str) -> None:
        self.conn_id = conn_id
        self.fleet = Fleet()
        self.subscriptions: dict[Subscription, None] = {}  # an ordered set
        self._by_waiter: dict[Waiter, Subscription] = {}
        self._changed = asyncio.Event()
        self._first_pokes = asyncio.Semaphore(MAX_CONNECTIONS)  # no more at once than the pool holds
        self._closing = False
        # What it cost so far (for logs and benchmarks): rounds, requests, the most requests one
        # round sent, and link-polls (links waited on, summed over rounds).
        self.rounds = 0
        self.requests = 0
        self.max_round_requests = 0
        self.link_polls = 0
        self.limiter: RateLimiter | None = None  # the client's: one budget for all the triggers
        # An empty context: the poller's task must not inherit the first trigger's log context
        # (Airflow binds a trigger's ids to it), or its lines would land in that task's log.
        loop = asyncio.get_running_loop()
        self.task = contextvars.Context().run(loop.create_task, self._run())

    def __repr__(self) -> str:
        return f"SharedPoller(conn_id={self.conn_id!r}, triggers={len(self.subscriptions)})"

    @classmethod
    def join(cls, conn_id: str, subscription: Subscription) -> SharedPoller:
        loop = asyncio.get_running_loop()
        by_conn = _POLLERS.setdefault(loop, {})
        poller = by_conn.get(conn_id)
        if poller is None or poller._closing:
            poller = by_conn[conn_id] = cls(conn_id)
        poller.subscriptions[subscription] = None
        if subscription.waiter is not None:
            poller._enrol(subscription)
        poller._changed.set()
        return poller

    def leave(self, subscription: Subscription) -> None:
        self.subscriptions.pop(subscription, None)
        if subscription.waiter is not None:
            self.fleet.remove(subscription.waiter)
            self._by_waiter.pop(subscription.waiter, None)
        self._changed.set()

    def min_interval(self) -> float:
        return min((s.interval for s in self.subscriptions), default=0.0)

    # -- the loop ------------------------------------------------------------------------------

    async def _run(self) -> None:
        await asyncio.sleep(0)  # triggers started together join before the first round
        try:
            client = await self._open_client()
        except Exception as error:  # connection missing or unusable: say which, never its content
            self._close()
            message = f"connection {self.conn_id!r} is unusable: {describe_error(error)}"
            for subscription in list(self.subscriptions):
                self._finish(subscription, _error("connection", message))
            return
        self.limiter = client.limiter
        async with client:
            try:
                await self._poll(client)
            except Exception as error:  # a bug here must not leave every trigger waiting for its deadline
                log.exception("The shared poller of connection %r failed", self.conn_id)
                self._close()
                event = _error("poller", f"the shared poller failed: {type(error).__name__}: {error}")
                for subscription in list(self.subscriptions):
                    self._finish(subscription, event)

    async def _poll(self, client: AsyncLinkstatsClient) -> None:
        """Rounds at the pace of the smallest poke_interval, until no trigger is left."""
        loop = asyncio.get_running_loop()
        last: float | None = None
        extra_wait = 0.0
        while True:
            if not self.subscriptions:
                self._close()
                return
            if last is not None:
                delay = last + max(self.min_interval(), extra_wait) - loop.time()
                if delay > 0:
                    self._changed.clear()
                    try:
                        await asyncio.wait_for(self._changed.wait(), delay)
                    except asyncio.TimeoutError:
                        pass
                    continue  # woken early: a trigger came or went, so the pace may have changed
            last = loop.time()
            extra_wait = await self._round(client)

    async def _open_client(self) -> AsyncLinkstatsClient:
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

        return await LinkstatsLinksHook(self.conn_id).get_async_client(
            # One attempt per poll: the poll loop is the retry, paced by poke_interval.
            retry=RetryPolicy(max_retries=0),
            keep_alive=self.min_interval() <= KEEP_ALIVE_MAX_IDLE,
            max_connections=MAX_CONNECTIONS,
        )

    def _close(self) -> None:
        self._closing = True
        loop = asyncio.get_running_loop()
        by_conn = _POLLERS.get(loop, {})
        if by_conn.get(self.conn_id) is self:
            del by_conn[self.conn_id]

    async def _round(self, client: AsyncLinkstatsClient) -> float:
        """One round for the fleet, then the first pokes of newcomers; the extra wait asked for."""
        self.rounds += 1
        requests_before = self.requests
        newcomers = [s for s in self.subscriptions if s.waiter is None]
        members = [s for s in self.subscriptions if s.waiter is not None]
        self.link_polls += len(self.subscriptions)
        extra_wait = 0.0
        if members:
            try:
                result = await adrive(self.fleet.round(), client.call)
            except LinkstatsError as error:
                extra_wait = self._failed(error, members)
            else:
                self.requests += result.requests
                self._deliver(result, members)
                log.debug(
                    "Round %d (%s): %d requests for %d waits", self.rounds, result.mode, result.requests, len(members)
                )
        if newcomers:
            waits = await asyncio.gather(*(self._first_poke(client, s) for s in newcomers))
            extra_wait = max(extra_wait, *waits)
        self.max_round_requests = max(self.max_round_requests, self.requests - requests_before)
        return extra_wait

    async def _first_poke(self, client: AsyncLinkstatsClient, subscription: Subscription) -> float:
        """The sensor's own poke, for a watch that still lacks its link's id or alias."""
        try:
            async with self._first_pokes:
                outcome = await adrive(subscription.watch.poke(), client.call)
        except LinkstatsError as error:
            return self._failed(error, [subscription])
        self.requests += outcome.requests
        if subscription not in self.subscriptions:
            return 0.0  # it left while the poke was under way
        subscription.failures = 0
        if outcome.done:
            self._finish(subscription, {"status": "success", "links": outcome.expired})
        else:
            subscription.waiter = _waiter(subscription.watch)
            self._enrol(subscription)
        return 0.0

    def _enrol(self, subscription: Subscription) -> None:
        assert subscription.waiter is not None
        self.fleet.add(subscription.waiter)
        self._by_waiter[subscription.waiter] = subscription

    def _deliver(self, result: RoundResult, members: list[Subscription]) -> None:
        for subscription in members:
            subscription.failures = 0
        for waiter, records in result.expired.items():
            if (member := self._by_waiter.get(waiter)) is not None:
                self._finish(member, {"status": "success", "links": records})
        for waiter, (link_id, message) in result.gone.items():
            if (member := self._by_waiter.get(waiter)) is not None:
                self._finish(member, _error("gone", message, link_id=link_id))
        for waiter, message in result.wrong_alias.items():
            if (member := self._by_waiter.get(waiter)) is not None:
                self._finish(member, _error("input", message))

    def _failed(self, error: LinkstatsError, subscriptions: list[Subscription]) -> float:
        """A poll failed for these triggers: end their waits, or tell them and wait longer."""
        if isinstance(error, LinkGoneError):
            for subscription in subscriptions:
                self._finish(subscription, _error("gone", str(error), link_id=error.link_id))
            return 0.0
        if isinstance(error, LinkstatsInputError):
            for subscription in subscriptions:
                self._finish(subscription, _error("input", str(error)))
            return 0.0
        if not is_transient(error):
            event = _error("api", str(error), http_status=getattr(error, "status", None))
            for subscription in subscriptions:
                self._finish(subscription, event)
            return 0.0
        wait = self.min_interval()
        asked = error.retry_after if isinstance(error, LinkstatsApiError) else None
        if asked is not None:
            wait = max(wait, min(float(asked), MAX_RETRY_AFTER))
        for subscription in subscriptions:
            subscription.failures += 1
            subscription.notes.put_nowait(Note(error=error, failures=subscription.failures, wait=wait))
        return wait

    def _finish(self, subscription: Subscription, event: dict[str, Any]) -> None:
        """The trigger's wait is over: it leaves the fleet now, and yields ``event``."""
        self.leave(subscription)
        subscription.notes.put_nowait(Note(event=event))


def _waiter(watch: ExpiryWatch) -> Waiter:
    aliases = {watch.link_ids[0]: watch.alias} if watch.single and watch.alias and watch.link_ids else {}
    return Waiter(
        list(watch.link_ids),
        aliases,
        existence_check_every=watch.existence_check_every,
        verified=watch.verified,
        alias_given=bool(aliases),
    )


def _error(reason: str, message: str, **extra: Any) -> dict[str, Any]:
    return {"status": "error", "reason": reason, "message": message, **extra}


def describe_error(error: BaseException) -> str:
    """Our errors and "connection not defined" are safe to show; others may quote the connection."""
    if isinstance(error, LinkstatsError) or type(error).__name__ == "AirflowNotFoundException":
        return str(error)
    return type(error).__name__
