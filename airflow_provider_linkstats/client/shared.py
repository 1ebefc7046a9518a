"""One request budget for every host of a deployment, counted in a shared Redis (``limits``).

Each process paces itself with its own ``RateLimiter`` (``ratelimit.py``), which learns what other
clients of the key or address sent only after the fact. With a shared store configured, every
request first takes its slot in fixed windows in Redis, as the service counts them (Laravel's
``throttle`` and ``limits``' ``FixedWindowRateLimiter`` both open a window with its first request):
the address's (the whole deployment, or each host with ``address_per_host``), then the key's, so a
refusal of the first costs the key nothing. docs/many-hosts.md says how the windows are sized
(``shared_limits``), what is kept in Redis and for how long, and why a fault of the store is never
a fault of the task (``StoreHealth``). No Airflow import here: ``hooks/shared_state.py`` builds the
storages.
"""

from __future__ import annotations

import asyncio
import hashlib
import inspect
import logging
import math
import threading
import time
from collections.abc import Callable, Coroutine
from typing import Any, TypeVar

from airflow_provider_linkstats.client.shared_limits import WindowLimits

log = logging.getLogger(__name__)
T = TypeVar("T")

PREFIX = "linkstats"  # every key this provider writes starts with "linkstats:"
STORE_TIMEOUT = 0.5  # seconds a Redis command may take: well under a request's timeout
RETRY_AFTER = 5.0  # seconds after a fault before Redis is tried again
ADDRESS_LIMIT = 60  # requests per window and client address, on both services
WINDOW_TTL = 24 * 3600  # seconds a learned window length is kept
LIMITS_TTL = 3600  # seconds the learned limits are kept (an install's change is found again after it)
_WINDOW_PAD = 0.5  # seconds our window outlasts the service's
_SHORTEST_WAIT = 0.05  # Redis tells a window's end in whole seconds: a wait is at least this
_LONGEST_STALL = 2.5  # windows: a bucket still full after that long never resets (planted, no TTL)


class StoreHealth:
    """Whether the shared store may be used now; says once per process when it may not."""

    def __init__(self, where: str, clock: Callable[[], float] = time.monotonic) -> None:
        self.where = where  # "Redis at host:port/db" (no password)
        self._clock = clock
        self._down_until = 0.0
        self._warned = False
        self.faults = 0

    def usable(self) -> bool:
        return self._clock() >= self._down_until

    def failed(self, error: BaseException | str) -> None:
        self.faults += 1
        self._down_until = self._clock() + RETRY_AFTER
        if not self._warned:
            self._warned = True
            reason = error if isinstance(error, str) else f"{type(error).__name__}: {str(error)[:200]}"
            log.warning(
                "Linkstats shared state: %s is unusable (%s); this process goes on with its own rate "
                "limiter and cache, and uses it again when it answers",
                self.where,
                reason,
            )

    def answered(self) -> None:
        if self._warned and self._down_until:
            log.info("Linkstats shared state: %s answers again; back on the shared budget", self.where)
            self._down_until = 0.0


def digest(*parts: str) -> str:
    """A short one-way name for an address or a root in a key (nothing readable lands in Redis)."""
    return hashlib.sha256("\x00".join(parts).encode()).hexdigest()[:24]


class SharedBudget:
    """The deployment's fixed windows for one connection: ``take()`` (sync) and ``atake()`` (async).

    :param storage: a ``limits`` storage (sync), or None; ``astorage``: a callable giving its async
        twin in the running event loop, or None.
    :param key_id: the key's fingerprint (``learned.fingerprint``); ``address_id``: which address
        bucket (``digest`` of the root and, with ``address_per_host``, the host).
    :param key_limit: requests per window for the key (None: no per-key limit, as phpAnalytics);
        ``key_limit_configured``: it is the connection's extra (never relearned). Both limits are
        starting values: ``limits`` (``WindowLimits``) follows what the service announces.
    """

    def __init__(
        self,
        *,
        health: StoreHealth,
        key_id: str,
        address_id: str,
        key_limit: int | None,
        address_limit: int = ADDRESS_LIMIT,
        key_limit_configured: bool = False,
        window: float = 60.0,
        window_pinned: bool = False,
        storage: Any = None,
        astorage: Callable[[], Any] | None = None,
    ) -> None:
        self.health = health
        self.key_id, self.address_id = key_id, address_id
        self.limits = WindowLimits(address_limit, key_limit, key_configured=key_limit_configured)
        self._limits_changed = False  # learned here, to be written back with the next take
        self.window, self.window_pinned = float(window), window_pinned
        self._storage, self._astorage_of, self._astorage = storage, astorage, None
        self._lock = threading.Lock()
        self._pending: list[tuple[str, Any]] = []  # what answers taught, written with the next take
        self._window_read = False
        self.round_trips = 0  # Redis commands sent (for the bench)

    def __repr__(self) -> str:
        return f"SharedBudget(key_limit={self.key_limit}, address_limit={self.address_limit}, window={self.window:g})"

    @property
    def address_limit(self) -> int:
        return self.limits.address

    @property
    def key_limit(self) -> int | None:
        return self.limits.key

    # -- what a window is -------------------------------------------------------------------------

    def _kinds(self) -> list[str]:
        """The windows a request takes a slot in, the address's first."""
        return ["address", "key"] if self.key_limit else ["address"]

    def _item(self, kind: str) -> tuple[Any, str]:
        """The ``limits`` item of a window (its limit now) and its key, which names the window's
        length but not its limit (a limit learned mid-window keeps the count)."""
        from limits import RateLimitItemPerSecond

        seconds = math.ceil(self.window + _WINDOW_PAD)
        limit, bucket = (self.address_limit, self.address_id) if kind == "address" else (self.key_limit, self.key_id)
        return RateLimitItemPerSecond(limit, seconds), f"LIMITER/{kind}/{bucket}/{seconds}/second"

    def _window_key(self) -> str:
        return f"{PREFIX}:window:{self.key_id[:32]}"

    def _limits_key(self) -> str:
        return f"{PREFIX}:limits:{self.key_id[:32]}"

    # -- what answers teach (any thread; written by the next take) ---------------------------------

    def learned_window(self, seconds: float) -> None:
        if not self.window_pinned and math.isfinite(seconds) and 0.2 <= seconds <= 3600:
            with self._lock:
                self._pending.append(("window", float(seconds)))

    def announced(self, limit: int | None, remaining: int | None, status: int) -> None:
        """An answer's ``X-RateLimit-Limit`` and ``Remaining`` (``shared_limits``' rules)."""
        with self._lock:
            if self.limits.announced(limit, remaining, status):
                self._limits_changed = True

    def throttled(self, per_key: bool) -> None:
        """A 429: the window that spoke is full for every host until its end."""
        with self._lock:
            self._pending.append(("full", "key" if per_key and self.key_limit else "address"))

    def _take_pending(self) -> list[tuple[str, Any]]:
        with self._lock:
            pending, self._pending = self._pending, []
        return pending

    def _key_refused(self, counted: Any) -> None:
        """The key's limiter refused while the deployment had ``counted`` requests in its window."""
        with self._lock:
            if self.limits.key_refused(int(counted or 0)):
                self._limits_changed = True

    def _changed_limits(self) -> str | None:
        """The limits to write back (once), when this process learned new ones."""
        with self._lock:
            changed, self._limits_changed = self._limits_changed, False
            return self.limits.encode() if changed else None

    def _adopt_limits(self, raw: Any) -> None:
        """The limits another host wrote (garbage is ignored: this process's stay)."""
        if raw is not None:
            with self._lock:
                self.limits.adopt(raw)

    # -- taking a slot: one body, run at once on the sync storage, awaited on the async one ------------

    def take(self) -> float:
        """0.0: the request may go (its slots are taken, or the store is unusable); else the seconds
        to wait before asking again."""
        if self._storage is None or not self.health.usable():
            return 0.0
        try:
            delay = _at_once(self._take(self._storage))
        except Exception as error:  # any fault of the store: the host's own limiter goes on
            self.health.failed(error)
            return 0.0
        self.health.answered()
        return delay

    async def atake(self) -> float:
        """``take`` for coroutines, through the async storage (the loop never blocks on Redis)."""
        if self._astorage_of is None or not self.health.usable():
            return 0.0
        try:
            if self._astorage is None:
                self._astorage = self._astorage_of()
            delay = await asyncio.wait_for(self._take(self._astorage), STORE_TIMEOUT * 4)
        except Exception as error:
            self.health.failed(error)
            return 0.0
        self.health.answered()
        return delay

    async def _take(self, storage: Any) -> float:
        """What answers taught written back, then the address's slot and the key's taken."""
        await self._exchange_learned(storage)
        for kind in self._kinds():
            if wait := await self._take_slot(storage, kind):
                return wait
        return 0.0

    async def _exchange_learned(self, storage: Any) -> None:
        """The window length other hosts learned read (once), what this process learned written."""
        redis = self._redis(storage)
        if not self._window_read:
            # Marked read only once adopted: a take that sees it read uses the adopted length (a
            # bulk delete's threads start together; one that named its window by the default
            # length while another adopted a shorter one took the default's window for a stall).
            self._adopt_window(await _answer(redis.get(self._window_key())))
            self._window_read = True
        for what, value in self._take_pending():
            await self._write_back(storage, what, value)
        if (limits := self._changed_limits()) is not None:
            await _answer(redis.set(self._limits_key(), limits, ex=LIMITS_TTL))
            self.round_trips += 1

    async def _take_slot(self, storage: Any, kind: str) -> float:
        """A slot in the ``kind`` window: 0.0 when taken, else the seconds until the window ends."""
        redis, (item, key) = self._redis(storage), self._item(kind)
        key = self._prefixed(storage, key)
        # The count and the window's age (and, with the address's, the limits): one round trip.
        pipe = redis.pipeline(transaction=False)
        if kind == "address":
            pipe.get(self._limits_key())
        await _answer(self._script(storage)(keys=[key], args=[item.get_expiry(), 1], client=pipe))
        pipe.pttl(key)
        answers = await _answer(pipe.execute())
        self.round_trips += 1
        if kind == "address":
            self._adopt_limits(answers[0])
        if not isinstance(answers[-1], int) or answers[-1] < 0:  # a key without an expiry: planted, or garbage
            await _answer(redis.expire(key, item.get_expiry()))  # nothing is left forever
            raise RuntimeError("a shared window without an expiry")
        return self._verdict(kind, answers)

    async def _write_back(self, storage: Any, what: str, value: Any) -> None:
        if what == "window":
            await _answer(self._redis(storage).set(self._window_key(), repr(value), ex=WINDOW_TTL))
            return
        if value == "key":  # the key's limiter spoke: its limit is at most what was counted
            self._key_refused(await _answer(storage.get(self._item("key")[1])))
        item, key = self._item(value)
        await _answer(storage.incr(key, item.get_expiry(), amount=item.amount))
        self.round_trips += 1 + (value == "key")

    # -- helpers -----------------------------------------------------------------------------------

    @staticmethod
    def _redis(storage: Any) -> Any:
        """The raw client under a ``limits`` storage, for the few keys that are not windows."""
        bridge = getattr(storage, "bridge", None)
        return bridge.storage if bridge is not None else storage.storage

    def _adopt_window(self, raw: Any) -> None:
        """A window length another host learned (garbage is ignored: the default stays)."""
        if self.window_pinned or raw is None:
            return
        try:
            seconds = float(raw)
        except (TypeError, ValueError):
            return
        if math.isfinite(seconds) and 0.2 <= seconds <= 3600:
            self.window = seconds

    @staticmethod
    def _prefixed(storage: Any, key: str) -> str:
        return getattr(storage, "bridge", storage).prefixed_key(key)

    @staticmethod
    def _script(storage: Any) -> Any:
        """``limits``' own script for a fixed window's count (INCRBY, and EXPIRE on the first)."""
        return getattr(storage, "bridge", storage).lua_incr_expire

    def _verdict(self, kind: str, answers: list[Any]) -> float:
        """0.0 when the slot is ours, else the seconds until the window ends.

        ``answers``: the pipeline's (its last two: the count and the window's age). A slot late in
        our window is refused too: its request could reach the service after the service's window
        (which opened a little after ours) ended, and count in the next one.
        """
        count, left_ms = answers[-2:]
        item = self._item(kind)[0]  # with the limit just adopted (``_take_slot``)
        left = left_ms / 1000
        if left > self.window * _LONGEST_STALL:
            raise RuntimeError(f"a shared window says {left:.0f} s more, longer than a window can last")
        age = item.get_expiry() - left
        if int(count) <= item.amount and age <= self.window - _WINDOW_PAD:
            return 0.0
        return max(left, _SHORTEST_WAIT)

    def stalled(self, waited: float) -> bool:
        """True (and the store set aside) when one request has waited past what any window lasts."""
        if waited > self.window * _LONGEST_STALL:
            self.health.failed(f"one request waited {waited:.0f} s for a shared window that does not reset")
            return True
        return False


async def _answer(value: Any) -> Any:
    """A storage command's answer: awaited from the async storage, taken as it is from the sync one."""
    return await value if inspect.isawaitable(value) else value


def _at_once(coroutine: Coroutine[Any, Any, T]) -> T:
    """Run a body shared with the async path (``_take``) on a sync client: it never suspends, so one
    step ends it, without an event loop."""
    try:
        coroutine.send(None)
    except StopIteration as done:
        return done.value
    coroutine.close()
    raise RuntimeError("the sync storage answered with an awaitable")
