"""Staying under the service's request budget instead of running into 429s.

Real installs count requests in fixed windows (60 a minute per client address on both services,
120 a minute per key on the links service) and say where a client stands on every answer:
``X-RateLimit-Limit`` and ``X-RateLimit-Remaining``; a 429 adds ``Retry-After`` (seconds until the
window resets) and ``X-RateLimit-Reset`` (epoch seconds).

One ``RateLimiter`` belongs to one hook (one key, one address) and is shared by all its threads
(a bulk delete's pool) or, in the triggerer, by the coroutines of one shared poller. Before each
request ``reserve()`` says how long to wait; the first half of a window's budget goes out at once
(a campaign's few creates never wait), the rest is spread over what is left of the window, so a
long job runs at the budget's pace and meets no 429. After each answer ``observe()`` corrects the
local count with the server's, which also sees other clients of the same key or address.

The window's length is learned from the server unless the caller pins it (``rate_limit_window``):
until it says otherwise a window is assumed to last a minute, as on real installs. Two things
shorten the assumption (the window is a fixed one that opens with its first request, as Laravel's):

- a 429's ``Retry-After`` (or ``X-RateLimit-Reset``) gives the end of a window whose opening we
  saw: its length is the difference;
- ``Remaining`` going up again means the server opened a new window: the time since the previous
  window opened is at most one window (the second half of a budget is spread over the window, so
  the first spread request after the server's reset shows it, and the bound closes in on the true
  length window by window).

A window assumed too short shows itself too: the server's count does not start over when ours
does, and the assumption grows again.
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING

from airflow_provider_linkstats.client.errors import LinkstatsRateLimitError
from airflow_provider_linkstats.client.settings import DEFAULT_WINDOW

if TYPE_CHECKING:
    from airflow_provider_linkstats.client.shared import SharedBudget

# A window we have not seen start is assumed to start when the answer arrives, which is after the
# server counted the request: so our window never ends before the server's. The margin covers
# clock drift between the two.
_RESET_MARGIN = 0.005  # of a window
# A learned length is a measurement between two answers on our clock: it is padded by this share
# (and at least _LEARN_PAD_MIN seconds) for latency and the rounding of Retry-After to whole seconds.
_LEARN_PAD = 0.02
_LEARN_PAD_MIN = 0.05
_SHORTEST_WINDOW = 0.2  # seconds: a shorter measurement is noise (answers reordered), not a window
_GROWTH = 1.25  # an assumed window that proved too short grows by this factor
# Seconds: under load, concurrent answers reordered by the machine have mimicked a refill 1.0-1.5 s
# after a window opened; a sooner "refill" is taken for that. A shorter window is still learnt
# from a 429's Retry-After or X-RateLimit-Reset.
_SHORTEST_REFILL = 3.0


class RateLimiter:
    """Paces the requests of one client to the server's advertised budget; thread-safe.

    ``reserve()``, ``observe()`` and ``release()`` are the whole protocol: a transport calls
    ``wait()`` (or ``await await_slot()``) before sending, then ``observe(headers, status)`` with
    the answer, or ``release()`` when no answer came.

    :param window: seconds of the server's window, pinned (never relearned); None (the default)
        learns it from the answers, assuming a minute until they say otherwise.
    """

    def __init__(self, *, window: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.pinned = window is not None
        self.window = float(window) if window is not None else DEFAULT_WINDOW
        # How the window's length is known: "pinned", "assumed", or learned from "retry-after",
        # "reset" (X-RateLimit-Reset) or "refill" (Remaining going up).
        self.learned_from = "pinned" if self.pinned else "assumed"
        self._clock = clock
        self._lock = threading.Lock()
        self.limit: int | None = None  # requests per window, once the server has said
        self._remaining: int | None = None  # what we may still send in this window (None: unknown)
        self._reset_at: float | None = None  # when the current window ends, on our clock
        self._opened_at: float | None = None  # when the server's current window opened (None: not seen)
        self._sent_in_window = 0  # requests reserved since our count of this window began
        self._floor: int | None = None  # lowest Remaining the server gave in this window
        self._floor_slack = 0  # our requests in flight when it did (they may answer higher)
        # When the last refill was seen: an answer to a request sent before it may carry the old
        # window's low Remaining, which must neither lower the new floor nor look like a refill.
        self._refilled_at: float | None = None
        self._next_send = 0.0  # earliest start of the next request while spreading
        self._in_flight = 0
        self.waited = 0.0  # total seconds callers were held back (for progress lines and benchmarks)
        self.sent = 0  # requests let go: progress lines measure what one unit of work costs from it
        self.throttled = 0  # 429 answers seen
        self.windows_seen = 0  # new server windows noticed (refills)
        # Told the seconds of each wait as it begins (from the waiting thread): a long run's
        # progress says "waiting N s for the service's rate limit" (``drivers.cleanup.Reporter``).
        self.on_wait: Callable[[float], None] | None = None
        # The deployment's budget in a shared store (``client/shared.py``), taken after this one's.
        self.shared: SharedBudget | None = None

    @property
    def _margin(self) -> float:
        return self.window * _RESET_MARGIN

    def __repr__(self) -> str:
        return (
            f"RateLimiter(limit={self.limit}, remaining={self._remaining}, window={self.window:g}, "
            f"learned_from={self.learned_from!r})"
        )

    # -- the protocol ------------------------------------------------------------------------

    def reserve(self) -> float:
        """0.0 when a request may go now (it is counted as sent), else the seconds to wait first."""
        with self._lock:
            now = self._clock()
            if self._reset_at is not None and now >= self._reset_at:
                self._new_window(remaining=self.limit)  # a new window: the whole budget again
            wait = self._delay(now)
            if wait:
                return wait
            if self._remaining is not None:  # else nothing is known yet: the first request finds out
                self._remaining -= 1
            self._in_flight += 1
            self._sent_in_window += 1
            self.sent += 1
            return 0.0

    def _delay(self, now: float) -> float:
        """The seconds the next request waits by what is left of the window (0.0: it goes now)."""
        remaining = self._remaining
        if remaining is None:
            return 0.0
        if remaining <= 0:
            if self._reset_at is None:
                self._reset_at = now + self.window
            return max(self._reset_at - now, 0.001)
        if remaining <= (self.limit or remaining) // 2 and self._reset_at is not None:
            # Spread the second half of the budget evenly over the rest of the window.
            if now < self._next_send:
                return self._next_send - now
            self._next_send = now + (self._reset_at - now) / remaining
        return 0.0

    @property
    def answered(self) -> int:
        """Requests let go whose answer (or failure) is in: what progress lines measure a unit's cost
        by (requests still out would make the first units look dearer than they are)."""
        with self._lock:
            return self.sent - self._in_flight

    def now(self) -> float:
        """The limiter's clock: a client stamps a request with it to pass as ``observe(sent_at=)``."""
        return self._clock()

    def observe(self, headers: Mapping[str, str], status: int, sent_at: float | None = None) -> None:
        """Learn from an answer's rate-limit headers (names lower-case or not).

        ``sent_at`` (``now()`` when the request left) tells a late answer of an older window.
        """
        lower = {key.lower(): value for key, value in headers.items()}
        limit = _int(lower.get("x-ratelimit-limit"))
        remaining = _int(lower.get("x-ratelimit-remaining"))
        window_before = self.window
        with self._lock:
            now = self._clock()
            others = max(0, self._in_flight - 1)  # our other requests still out
            self._in_flight = max(0, self._in_flight - 1)
            if status == 429:
                self._throttled(lower, now, remaining)
            elif limit is not None and remaining is not None:  # else no budget is advertised
                self._counted(now, limit, remaining, others, sent_at)
        if self.shared is not None:  # the limits the service announces size the deployment's windows
            self.shared.announced(limit, remaining, status)
            if self.window != window_before and self.learned_from != "assumed":
                self.shared.learned_window(self.window)

    def _throttled(self, lower: Mapping[str, str], now: float, remaining: int | None) -> None:
        """A 429: the window ends when Retry-After (or X-RateLimit-Reset) says; without either
        header the retry policy's backoff decides."""
        self.throttled += 1
        if self.shared is not None:  # Remaining above 0: the per-user limiter spoke, not the address's
            self.shared.throttled(per_key=bool(remaining))
        wait, source = parse_retry_after(lower), "retry-after"
        if wait is None:
            wait, source = _seconds_until_epoch(lower.get("x-ratelimit-reset"), self.window), "reset"
        if wait is None:
            return
        ends = now + wait
        if self._opened_at is not None:
            self._learn(ends - self._opened_at, source)
        self._remaining = 0
        self._reset_at = ends + self._margin
        self._opened_at = None  # the next window opens with our first request after it

    def _counted(self, now: float, limit: int, remaining: int, others: int, sent_at: float | None) -> None:
        """An answer that says where we stand: a refill, the first answer of a window, or a count."""
        self.limit = limit
        if sent_at is not None and self._refilled_at is not None and sent_at < self._refilled_at:
            return  # sent before the last refill: it may have been counted in the old window
        if self._refilled(now, remaining):
            self._refill(now, limit, remaining, others)
            return
        if self._floor is None:  # the first answer of a window by our count
            self._first_answer(now, limit, remaining, others)
        if self._floor is None or remaining < self._floor:
            self._floor, self._floor_slack = remaining, others
        if self._reset_at is None:
            self._reset_at = now + self.window + self._margin
        server_view = remaining - self._uncounted(others, remaining, limit)
        self._remaining = server_view if self._remaining is None else min(self._remaining, server_view)

    def _first_answer(self, now: float, limit: int, remaining: int, others: int) -> None:
        self._opened_here(now, remaining, limit)
        if self._remaining is not None and remaining < limit - self._sent_in_window - others:
            self._grow()  # we started a new window, the server did not: ours is too short

    def _refilled(self, now: float, remaining: int) -> bool:
        """Remaining went up: the server opened a new window before we thought it would."""
        too_soon = self._opened_at is not None and now - self._opened_at < _SHORTEST_REFILL
        return self._floor is not None and remaining > self._floor + self._floor_slack and not too_soon

    def _refill(self, now: float, limit: int, remaining: int, others: int) -> None:
        if self._opened_at is not None:
            self._learn(now - self._opened_at, "refill")
        self.windows_seen += 1
        self._new_window(remaining=None)
        self._sent_in_window = others + 1
        self._remaining = remaining - others
        self._opened_here(now, remaining, limit)
        self._floor, self._floor_slack = remaining, others
        self._refilled_at = now

    def release(self) -> None:
        """A reserved request got no answer (its cost to the budget is unknown; keep the count)."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)

    # -- learning the window (called with the lock held) ------------------------------------------

    def _new_window(self, remaining: int | None) -> None:
        self._remaining = remaining
        self._reset_at = None
        self._opened_at = None
        self._floor = None
        self._floor_slack = 0
        self._sent_in_window = 0
        self._next_send = 0.0

    def _opened_here(self, now: float, remaining: int, limit: int) -> None:
        """The server's window opened with one of ours if all it counted can be ours."""
        if remaining >= limit - max(self._sent_in_window, 1):
            self._opened_at = now
            self._reset_at = now + self.window + self._margin

    def _uncounted(self, others: int, remaining: int, limit: int) -> int:
        """How many of our requests still out the server has not counted yet.

        In a window that only we used, the server counted ``limit - remaining`` of the requests we
        sent in it; the rest are still to come. In one that others used too, any of ours may be.
        """
        if self._opened_at is None:
            return others
        return min(others, max(0, self._sent_in_window - (limit - remaining)))

    def _learn(self, measured: float, source: str) -> None:
        if self.pinned or measured < _SHORTEST_WINDOW:
            return
        length = measured + max(measured * _LEARN_PAD, _LEARN_PAD_MIN)
        if self.learned_from == "assumed" or length < self.window:
            self.window = length
            self.learned_from = source

    def _grow(self) -> None:
        if not self.pinned:
            self.window *= _GROWTH
            self.learned_from = "assumed"

    # -- waiting ---------------------------------------------------------------------------------

    def wait(self, max_wait: float | None = None, sleep: Callable[[float], None] = time.sleep) -> float:
        """Block until a request may go; returns the seconds waited.

        A window that resets later than ``max_wait`` from now raises ``LinkstatsRateLimitError`` at
        once instead (the client's ``max_rate_limit_wait``), as a 429 asking for that long would.
        """
        waited = 0.0
        while (delay := self.reserve()) > 0:
            sleep(self._held(delay, max_wait))
            waited += delay
        while self.shared is not None and (delay := self.shared.take()) > 0 and not self.shared.stalled(waited):
            sleep(self._held(delay, max_wait))
            waited += delay
        self._add_waited(waited)
        return waited

    async def await_slot(self, max_wait: float | None = None) -> float:
        """``wait`` for coroutines: sleeps without blocking the event loop."""
        waited = 0.0
        while (delay := self.reserve()) > 0:
            await asyncio.sleep(self._held(delay, max_wait))
            waited += delay
        while self.shared is not None and (delay := await self.shared.atake()) > 0 and not self.shared.stalled(waited):
            await asyncio.sleep(self._held(delay, max_wait))
            waited += delay
        self._add_waited(waited)
        return waited

    def _held(self, delay: float, max_wait: float | None) -> float:
        """``delay``, once it is known to fit ``max_wait`` and ``on_wait`` has been told."""
        if max_wait is not None and delay > max_wait:
            raise LinkstatsRateLimitError(
                f"the service's request budget is used up for {delay:.0f} s more, longer than "
                f"max_rate_limit_wait ({max_wait:.0f} s, a connection extra)",
                status=429,
                retry_after=delay,
            )
        if (hook := self.on_wait) is not None:
            try:
                hook(delay)
            except Exception:  # a progress line must never stop a request
                pass
        return delay

    @property
    def burst(self) -> int | None:
        """Requests that may go at once, without waiting (None while the server has not said):
        what is left of the window's first half (the second half is spread over the window)."""
        with self._lock:
            if self._remaining is None or self.limit is None:
                return None
            if self._reset_at is not None and self._clock() >= self._reset_at:
                return self.limit - self.limit // 2
            return max(0, self._remaining - self.limit // 2)

    def _add_waited(self, seconds: float) -> None:
        if seconds:
            with self._lock:
                self.waited += seconds


def parse_retry_after(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from a ``Retry-After`` header given in seconds or as an HTTP date."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    try:
        return max(0.0, float(raw.strip()))
    except ValueError:
        pass
    # Only for the rare HTTP-date form: the email package it uses is slow to import.
    from airflow_provider_linkstats.client.clock import parse_http_date

    when = parse_http_date(raw.strip())
    return None if when is None else max(0.0, when - time.time())


def _int(value: str | None) -> int | None:
    try:
        return int(str(value).strip()) if value is not None else None
    except ValueError:
        return None


def _seconds_until_epoch(value: str | None, cap: float) -> float | None:
    """``X-RateLimit-Reset`` as seconds from now, trusted only within one window (clocks differ)."""
    epoch = _int(value)
    if epoch is None:
        return None
    return min(max(epoch - time.time(), 0.0), cap)
