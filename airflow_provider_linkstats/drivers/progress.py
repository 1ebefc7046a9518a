"""The one progress every long job tells: rates and time left from the last minute of work,
never above what the service's budget allows per unit.

``Progress`` counts a job's units (the cleanup's, the bulk deletes', the warehouse load's);
``LaunchProgress`` counts what happened to each link of a bulk launch and tells its ``Progress``
the links written (skipped ones cost no request, so they make no rate), with the same ``duration``
words. Imported by the jobs' drivers when a task runs, not at DAG parse.
"""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from typing import Any

# -- progress: the rate of the last minute, never above the budget ----------------------------------

PROGRESS_WINDOW = 60.0  # seconds of work the rate is measured over


@contextlib.contextmanager
def waits_told(limiter: Any, on_wait: Callable[[float], None]) -> Iterator[None]:
    """Meanwhile, the rate limiter's (if any) holding a request back is told to ``on_wait``."""
    if limiter is None:
        yield
        return
    told, limiter.on_wait = getattr(limiter, "on_wait", None), on_wait
    try:
        yield
    finally:
        limiter.on_wait = told


def budget_pace(limiter: Any) -> float | None:
    """Requests a second the service's budget allows (``limit / window``), or None while unknown."""
    limit, window = getattr(limiter, "limit", None), getattr(limiter, "window", None)
    if not limit or not window:
        return None
    return float(limit) / float(window)


def requests_sent(limiter: Any) -> int | None:
    """Requests the rate limiter has heard back from so far (``RateLimiter.answered``), or None."""
    sent = getattr(limiter, "answered", None)
    return sent if isinstance(sent, int) and not isinstance(sent, bool) else None


# Units done before what one costs is read from the requests answered: until then the threads'
# answers that arrived before their units were counted (up to one per thread) would make the
# first units look several times dearer than they are.
MIN_COSTED_UNITS = 20


def unit_pace(pace: float | None, per_unit: float | None) -> float | None:
    """Units a second the budget allows: its requests a second over the requests one unit costs."""
    if not pace:
        return None
    return pace / per_unit if per_unit else pace


class Progress:
    """Rate and time left of a long run, in its own units, from a sliding window of its last minute.

    Over the last ``window`` seconds, not since the start: a slow first page or a burst does not
    colour every later line. Capped by the budget per unit: the limiter's requests a second over
    the requests one unit has cost so far (2 requests a link under 1 a second: 0.5 links a second).
    Work within the limiter's ``burst`` is not slowed to the pace, so 3 deletes on an untouched
    budget do not say "about 2 s left" and finish at once. Without a ``limiter``, ``pace`` (a
    number or a callable) and ``requests`` (a callable) stand in for it. Thread-safe.
    """

    def __init__(
        self,
        *,
        pace: float | Callable[[], float | None] | None = None,
        window: float = PROGRESS_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        limiter: Any = None,
        requests: Callable[[], int | None] | None = None,
    ) -> None:
        self._pace = pace
        self.limiter = limiter
        self.window = window
        self.clock = clock
        self._requests = requests
        self._lock = threading.RLock()
        # (when, units done by then); the first one at or before the window's start holds the count
        # the window starts from.
        self.samples: deque[tuple[float, int]] = deque()
        self.samples.append((clock(), 0))
        self._sent_before = self._sent()  # requests of earlier work (a listing): not this run's units

    @property
    def pace(self) -> float | None:
        learned = budget_pace(self.limiter)  # None without a limiter
        return learned or (self._pace() if callable(self._pace) else self._pace)

    def _sent(self) -> int | None:
        return self._requests() if self._requests is not None else requests_sent(self.limiter)

    def update(self, done: int) -> None:
        with self._lock:
            now = self.clock()
            self.samples.append((now, done))
            self._forget(now)

    def _forget(self, now: float) -> None:
        # Keep the last sample at or before the window's start: the window counts from it.
        while len(self.samples) > 1 and self.samples[1][0] <= now - self.window:
            self.samples.popleft()

    @property
    def measured(self) -> float:
        """Units a second over the window up to now, uncapped; 0.0 until time has passed."""
        with self._lock:
            now = self.clock()
            self._forget(now)
            (first_at, first_done), last_done = self.samples[0], self.samples[-1][1]
            elapsed = now - max(first_at, now - self.window)
            return (last_done - first_done) / elapsed if elapsed > 0 else 0.0

    @property
    def per_unit(self) -> float | None:
        """Requests one unit has cost so far (measured), or None before ``MIN_COSTED_UNITS`` units or
        without a limiter (then the budget's request pace caps the rate, as if a unit cost one)."""
        sent, done = self._sent(), self.samples[-1][1]
        if sent is None or self._sent_before is None or done < MIN_COSTED_UNITS or sent <= self._sent_before:
            return None
        return (sent - self._sent_before) / done

    @property
    def unit_pace(self) -> float | None:
        """Units a second the budget allows (``pace`` over ``per_unit``; the pace itself until measured)."""
        return unit_pace(self.pace, self.per_unit)

    @property
    def rate(self) -> float:
        """Units a second over the window, at most ``unit_pace``; 0.0 until time has passed."""
        pace = self.unit_pace
        return min(self.measured, pace) if pace else self.measured

    def seconds_left(self, remaining: float, burst: int | None = None) -> float | None:
        """Time for ``remaining`` more units: the first ``burst`` (requests the limiter lets go at once;
        the limiter's own when not given) at the measured rate, the rest at ``rate`` (the budget's pace
        while no rate is known)."""
        if remaining <= 0:
            return 0.0
        if burst is None:
            burst = getattr(self.limiter, "burst", None)
        rate = self.rate or self.unit_pace
        if burst and self.measured > (rate or 0):
            quick = min(remaining, burst / (self.per_unit or 1.0))  # the burst is requests, not units
            rest = remaining - quick
            return quick / self.measured + (rest / rate if rate else 0.0)
        return remaining / rate if rate else None

    def line(self, done: int, total: int, failed: int, noun: str) -> str:
        """``deleted 300/1200 links (5.0/s, about 3 min left)``."""
        parts = [f"{self.rate:.1f}/s"]
        left = self.seconds_left(total - done)
        if done < total and left is not None:
            parts.append(f"about {duration(left)} left")
        if failed:
            parts.append(f"{failed} failed")
        return f"deleted {done - failed}/{total} {noun} ({', '.join(parts)})"


def progress_line(done: int, total: int, elapsed: float, failed: int, noun: str, *, pace: float | None = None) -> str:
    """``deleted 300/1200 links (1.0/s, about 15 min left)`` for a run that did ``done`` in ``elapsed``
    seconds at an even rate: one window spanning the whole run, capped by the budget's ``pace``."""
    now = [0.0]
    progress = Progress(pace=pace, window=max(elapsed, 1.0), clock=lambda: now[0])
    now[0] = elapsed
    progress.update(done)
    return progress.line(done, total, failed, noun)


def duration(seconds: float) -> str:
    """A time left in words, rounded up below 90 s (never "about 0 s left" for work still pending)."""
    if seconds < 90:
        return f"{math.ceil(seconds)} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def thousands(number: int | None, unknown: str = "?") -> str:
    """``12,345``, or ``unknown`` for a number not known."""
    return unknown if number is None else f"{number:,}"


def counted(number: int, noun: str) -> str:
    """``1 day``, ``3 days``: a count and its noun, singular for one."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


# -- the bulk launch's counts and lines ---------------------------------------------------------

# What happened to one link; the result's counts carry these names.
CREATED, CREATED_EARLIER, SKIPPED, UPDATED, FAILED = "created", "created_earlier", "skipped", "updated", "failed"
KINDS = (CREATED, CREATED_EARLIER, SKIPPED, UPDATED, FAILED)
WORDS = {CREATED_EARLIER: "created by an earlier try"}
WRITTEN = frozenset({CREATED, UPDATED, FAILED})  # cost requests: the rate is theirs
EVERY = 10.0  # longest silence while work is pending


class LaunchProgress:
    """Thread-safe counts of a launch of ``total`` links and their lines; the rate and the time left
    are its ``Progress``'s, over the links written. ``pace`` and ``requests`` are read at each line
    (the budget is learned from the answers meanwhile)."""

    def __init__(
        self,
        total: int,
        *,
        log: Any,
        pace: Callable[[], float | None] = lambda: None,
        every: float | None = None,
        window: float = PROGRESS_WINDOW,
        clock: Callable[[], float] = time.monotonic,
        requests: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.total = total
        self.log = log
        self.every = every if every is not None else EVERY  # read at each launch
        self.clock = clock
        # The walk's pages were sent before: not the links' cost (``Progress`` reads ``requests`` now).
        self.progress = Progress(pace=pace, window=window, clock=clock, requests=requests)
        self.counts = dict.fromkeys(KINDS, 0)
        self.started = clock()
        self._waiting_until = 0.0
        self._last_line = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def add(self, kind: str) -> None:
        with self._lock:
            self.counts[kind] += 1
            if kind in WRITTEN:
                self.progress.update(sum(self.counts[written] for written in WRITTEN))

    def waiting(self, seconds: float) -> None:
        """The rate limiter holds a request back for ``seconds`` (its ``on_wait``)."""
        with self._lock:
            self._waiting_until = max(self._waiting_until, self.clock() + seconds)

    def rate(self) -> float:
        return self.progress.rate

    def per_link(self) -> float | None:
        return self.progress.per_unit

    def link_pace(self) -> float | None:
        return self.progress.unit_pace

    def line(self) -> str:
        counts = ", ".join(f"{WORDS.get(kind, kind)} {self.counts[kind]}" for kind in KINDS)
        done, rate = self.done, self.rate()
        parts = [f"{rate:.1f}/s over the last minute"]
        left = self.total - done
        seconds = self.progress.seconds_left(left)  # 0.0 when none is left
        if seconds:
            parts.append(f"about {duration(seconds)} left")
        wait = self._waiting_until - self.clock()
        if left > 0 and wait >= 0.5:
            parts.append(f"waiting {math.ceil(wait)} s for the service's rate limit")
        return f"{counts}: {done}/{self.total} links done ({', '.join(parts)})"

    def report(self) -> None:
        with self._lock:
            self._last_line = self.clock()
        self.log.info("%s", self.line())

    # -- the ticker: a line at least every ``every`` seconds while work is pending -----------------

    def __enter__(self) -> LaunchProgress:
        self._ticker = threading.Thread(target=self._tick, name="linkstats-launch-progress", daemon=True)
        self._ticker.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=5)

    def _tick(self) -> None:
        while not self._stop.wait(min(1.0, self.every / 2)):
            if self.done < self.total and self.clock() - self._last_line >= self.every:
                self.report()
