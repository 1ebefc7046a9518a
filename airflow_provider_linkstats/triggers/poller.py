"""One poller per connection in a triggerer: every waiting ``LinkstatsLinkExpiredTrigger`` shares it.

The poller owns one HTTP client (one rate limiter) and runs ``waiting.watch.Poll`` rounds at the
pace of the smallest ``poke_interval``; each trigger waits for notes addressed to it, and keeps its
own event, deadline and failure budget.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import logging
import weakref
from dataclasses import KW_ONLY, dataclass, field
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.errors import LinkstatsError, is_transient
from airflow_provider_linkstats.client.protocol import adrive
from airflow_provider_linkstats.hooks.outcomes import describe, error_event, retry_wait
from airflow_provider_linkstats.waiting import plan
from airflow_provider_linkstats.waiting.watch import Poll, Watch

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
    from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse
    from airflow_provider_linkstats.client.ratelimit import RateLimiter

log = logging.getLogger(__name__)

MAX_CONNECTIONS = 2  # the pool of a poller: never one connection per link
BATCH = 7.0  # seconds an end may wait for the next ones, so one read confirms them all (Poll.confirm_at)


@dataclass
class Note:
    """What the poller tells one trigger: its final event, or that a poll failed."""

    event: dict[str, Any] | None = None
    error: LinkstatsError | None = None
    failures: int = 0  # failed polls in a row, this one included
    wait: float = 0.0  # seconds until the next poll


@dataclass(eq=False)
class Subscription:
    """One trigger's membership: its watch, its pace, and the notes addressed to it."""

    watch: Watch
    _: KW_ONLY
    interval: float
    handed: dict[str, Any] | None = None  # the service profile the sensor handed over, if any
    clock: tuple[float, float] | None = None  # the service's clock as the sensor measured it: (offset, uncertainty)
    failures: int = 0
    notes: asyncio.Queue[Note] = field(default_factory=asyncio.Queue)


# Pollers of each running event loop, by connection id. A loop that ends takes its pollers along.
_POLLERS: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, SharedPoller]] = weakref.WeakKeyDictionary()


def pollers() -> dict[str, SharedPoller]:
    """The running loop's pollers by connection id (a copy)."""
    return dict(_POLLERS.get(asyncio.get_running_loop(), {}))


class SharedPoller:
    """Polls for every subscription of one connection; build it with ``join``."""

    def __init__(self, conn_id: str) -> None:
        self.conn_id = conn_id
        self.poll = Poll(batch=BATCH)
        self.subscriptions: dict[Watch, Subscription] = {}  # by watch, in the order they joined
        self._changed = asyncio.Event()
        self._closing = False
        # What it cost so far (for logs and benchmarks): rounds, requests, the most requests one
        # round sent, and link-polls (links waited on, summed over rounds).
        self.rounds = self.requests = self.max_round_requests = self.link_polls = 0
        self.limiter: RateLimiter | None = None  # the client's: one budget for all the triggers
        # An empty context: the poller's task must not inherit the first trigger's log context
        # (Airflow binds a trigger's ids to it), or its lines would land in that task's log.
        loop = asyncio.get_running_loop()
        self.task = contextvars.Context().run(loop.create_task, self._run())

    def __repr__(self) -> str:
        return f"SharedPoller(conn_id={self.conn_id!r}, triggers={len(self.subscriptions)})"

    @classmethod
    def join(cls, conn_id: str, subscription: Subscription) -> SharedPoller:
        by_conn = _POLLERS.setdefault(asyncio.get_running_loop(), {})
        poller = by_conn.get(conn_id)
        if poller is None or poller._closing:
            poller = by_conn[conn_id] = cls(conn_id)
        poller.subscriptions[subscription.watch] = subscription
        poller.poll.watches = list(poller.subscriptions)
        poller._changed.set()
        return poller

    def leave(self, subscription: Subscription) -> None:
        self.subscriptions.pop(subscription.watch, None)
        self.poll.watches = list(self.subscriptions)
        self._changed.set()

    def handed(self) -> dict[str, Any] | None:
        """The first service profile a trigger was handed."""
        return next((s.handed for s in self.subscriptions.values() if s.handed), None)

    def min_interval(self) -> float:
        return min((s.interval for s in self.subscriptions.values()), default=0.0)

    async def _run(self) -> None:
        from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

        await asyncio.sleep(0)  # triggers started together join before the first round
        try:
            hook = LinkstatsLinksHook(self.conn_id)
            client = await hook.get_polling_client(self.min_interval(), MAX_CONNECTIONS, handed=self.handed())
        except Exception as error:  # connection missing or unusable: say which, never its content
            return self._end_all("connection", f"connection {self.conn_id!r} is unusable: {describe(error)}")
        self.limiter = client.limiter
        self.poll.clock = client.clock  # ends are the service's: its answers tell its time
        async with client:
            try:
                await self._poll(client)
            except Exception as error:  # a bug here must not leave every trigger waiting for its deadline
                log.exception("The shared poller of connection %r failed", self.conn_id)
                self._end_all("poller", f"the shared poller failed: {error!r}")

    def _end_all(self, reason: str, message: str) -> None:
        self._close()
        for subscription in list(self.subscriptions.values()):
            self._finish(subscription, {"status": "error", "reason": reason, "message": message})

    async def _poll(self, client: AsyncLinkstatsClient) -> None:
        """Rounds when ``Poll.next_round`` says, or later after a failure, until no trigger is left."""
        loop = asyncio.get_running_loop()
        started, last = 0.0, None  # the last round, on the loop's clock and on the waits' clock
        extra_wait = 0.0
        while self.subscriptions:
            self.poll.interval = self.min_interval()
            await self._adopt_clock(client)  # before the ends are converted to this loop's sleeps
            if last is not None:  # the time to the next round, counted on the loop's clock from the last one
                wake = started + max(self.poll.next_round(last) - last, extra_wait)
                if wake > loop.time():
                    self._changed.clear()
                    with contextlib.suppress(asyncio.TimeoutError):
                        await asyncio.wait_for(self._changed.wait(), wake - loop.time())
                    continue  # woken early: a trigger came or went, so the pace may have changed
            started, last = loop.time(), plan.now()
            extra_wait = await self._round(client, last)
        self._close()

    def _close(self) -> None:
        self._closing = True
        by_conn = _POLLERS.get(asyncio.get_running_loop(), {})
        if by_conn.get(self.conn_id) is self:
            del by_conn[self.conn_id]

    async def _round(self, client: AsyncLinkstatsClient, now: float) -> float:
        """One round for every subscription; the extra wait a failure asks for."""
        self.rounds += 1
        members = list(self.subscriptions.values())
        self.link_polls += len(members)
        before = self.requests

        async def call(request: ApiRequest) -> ApiResponse:
            self.requests += 1
            return await client.call(request)

        try:
            result = await adrive(self.poll.round(now), call)
        except LinkstatsError as error:
            return self._failed(error, members)
        finally:
            self.max_round_requests = max(self.max_round_requests, self.requests - before)
        log.debug("Round %d: %d requests", self.rounds, self.requests - before)
        for subscription in members:
            subscription.failures = 0
        events = {watch: {"status": "success", "links": records} for watch, records in result.expired.items()}
        events.update((watch, error_event(error)) for watch, error in result.failed.items())  # never both
        for watch, event in events.items():
            if (member := self.subscriptions.get(watch)) is not None:
                self._finish(member, event)
        return 0.0

    async def _adopt_clock(self, client: AsyncLinkstatsClient) -> None:
        """Before the service has answered this poller, the clock a deferring sensor measured stands
        in for it (the first answer replaces it where they disagree). With none handed, and an end
        to sleep towards, the clock is read first, so the read at the end counts it as passed."""
        if client.clock.known:
            return
        handed = next((s.clock for s in self.subscriptions.values() if s.clock is not None), None)
        if handed is not None:
            client.clock.adopt_offset(*handed, source="handed by the sensor that deferred")
        if not client.clock.known and self.poll.end_wake() is not None:
            try:
                await client.ensure_clock()
            except LinkstatsError as error:  # the round says what is wrong; the worker's clock stands in
                log.info("Reading the service's clock failed (%s); the first read corrects it", error)

    def _failed(self, error: LinkstatsError, subscriptions: list[Subscription]) -> float:
        """A poll failed for these triggers: end their waits, or tell them and wait longer."""
        if not is_transient(error):
            for subscription in subscriptions:
                self._finish(subscription, error_event(error))
            return 0.0
        wait = retry_wait(error, self.min_interval())
        for subscription in subscriptions:
            subscription.failures += 1
            subscription.notes.put_nowait(Note(error=error, failures=subscription.failures, wait=wait))
        return wait

    def _finish(self, subscription: Subscription, event: dict[str, Any]) -> None:
        """The trigger's wait is over: it leaves now, and yields ``event``."""
        self.leave(subscription)
        subscription.notes.put_nowait(Note(event=event))
