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
"""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable, Mapping

from airflow_provider_linkstats.client.errors import LinkstatsRateLimitError
from airflow_provider_linkstats.client.settings import DEFAULT_WINDOW

# A window we have not seen start is assumed to start when the answer arrives, which is after the
# server counted the request: so our window never ends before the server's. The margin covers
# clock drift between the two.
_RESET_MARGIN = 0.005  # of a window


class RateLimiter:
    """Paces the requests of one client to the server's advertised budget; thread-safe.

    ``reserve()``, ``observe()`` and ``release()`` are the whole protocol: a transport calls
    ``wait()`` (or ``await await_slot()``) before sending, then ``observe(headers, status)`` with
    the answer, or ``release()`` when no answer came.
    """

    def __init__(self, *, window: float = DEFAULT_WINDOW, clock: Callable[[], float] = time.monotonic) -> None:
        self.window = float(window)
        self._clock = clock
        self._lock = threading.Lock()
        self.limit: int | None = None  # requests per window, once the server has said
        self._remaining: int | None = None  # what we may still send in this window (None: unknown)
        self._reset_at: float | None = None  # when the current window ends, on our clock
        self._next_send = 0.0  # earliest start of the next request while spreading
        self._in_flight = 0
        self.waited = 0.0  # total seconds callers were held back (for progress lines and benchmarks)
        self.throttled = 0  # 429 answers seen

    @property
    def _margin(self) -> float:
        return self.window * _RESET_MARGIN

    def __repr__(self) -> str:
        return f"RateLimiter(limit={self.limit}, remaining={self._remaining}, window={self.window})"

    # -- the protocol ------------------------------------------------------------------------

    def reserve(self) -> float:
        """0.0 when a request may go now (it is counted as sent), else the seconds to wait first."""
        with self._lock:
            now = self._clock()
            if self._reset_at is not None and now >= self._reset_at:
                self._remaining = self.limit  # a new window: the whole budget again
                self._reset_at = None
            remaining = self._remaining
            if remaining is None:  # nothing known yet: the first request finds out
                self._in_flight += 1
                return 0.0
            if remaining <= 0:
                if self._reset_at is None:
                    self._reset_at = now + self.window
                return max(self._reset_at - now, 0.001)
            limit = self.limit or remaining
            if remaining <= limit // 2 and self._reset_at is not None:
                # Spread the second half of the budget evenly over the rest of the window.
                spacing = (self._reset_at - now) / remaining
                if now < self._next_send:
                    return self._next_send - now
                self._next_send = now + spacing
            self._remaining = remaining - 1
            self._in_flight += 1
            return 0.0

    def observe(self, headers: Mapping[str, str], status: int) -> None:
        """Learn from an answer's rate-limit headers (names lower-case or not)."""
        lower = {key.lower(): value for key, value in headers.items()}
        limit = _int(lower.get("x-ratelimit-limit"))
        remaining = _int(lower.get("x-ratelimit-remaining"))
        with self._lock:
            now = self._clock()
            self._in_flight = max(0, self._in_flight - 1)
            if status == 429:
                self.throttled += 1
                wait = parse_retry_after(lower)
                if wait is None:
                    wait = _seconds_until_epoch(lower.get("x-ratelimit-reset"), self.window)
                if wait is not None:  # without either header the retry policy's backoff decides
                    self._remaining = 0
                    self._reset_at = now + wait + self._margin
                return
            if limit is None or remaining is None:
                return  # this server (or proxy) does not advertise a budget
            self.limit = limit
            if self._reset_at is None:
                self._reset_at = now + self.window + self._margin
            # Other requests of ours may be in flight and not yet counted: assume none of them were.
            server_view = remaining - self._in_flight
            self._remaining = server_view if self._remaining is None else min(self._remaining, server_view)

    def release(self) -> None:
        """A reserved request got no answer (its cost to the budget is unknown; keep the count)."""
        with self._lock:
            self._in_flight = max(0, self._in_flight - 1)

    # -- waiting ---------------------------------------------------------------------------------

    def wait(self, max_wait: float | None = None, sleep: Callable[[float], None] = time.sleep) -> float:
        """Block until a request may go; returns the seconds waited.

        A window that resets later than ``max_wait`` from now raises ``LinkstatsRateLimitError`` at
        once instead (the client's ``max_rate_limit_wait``), as a 429 asking for that long would.
        """
        waited = 0.0
        while (delay := self.reserve()) > 0:
            self._check_wait(delay, max_wait)
            sleep(delay)
            waited += delay
        self._add_waited(waited)
        return waited

    async def await_slot(self, max_wait: float | None = None) -> float:
        """``wait`` for coroutines: sleeps without blocking the event loop."""
        waited = 0.0
        while (delay := self.reserve()) > 0:
            self._check_wait(delay, max_wait)
            await asyncio.sleep(delay)
            waited += delay
        self._add_waited(waited)
        return waited

    def _check_wait(self, delay: float, max_wait: float | None) -> None:
        if max_wait is not None and delay > max_wait:
            raise LinkstatsRateLimitError(
                f"the service's request budget is used up for {delay:.0f} s more, longer than "
                f"max_rate_limit_wait ({max_wait:.0f} s, a connection extra)",
                status=429,
                retry_after=delay,
            )

    def _add_waited(self, seconds: float) -> None:
        if seconds:
            with self._lock:
                self.waited += seconds


def parse_retry_after(headers: Mapping[str, str], now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header given in seconds or as an HTTP date."""
    raw = headers.get("retry-after")
    if raw is None:
        return None
    raw = raw.strip()
    try:
        return max(0.0, float(raw))
    except ValueError:
        pass
    import email.utils  # only for the rare HTTP-date form; the email package is slow to import

    try:
        when = email.utils.parsedate_to_datetime(raw)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


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
