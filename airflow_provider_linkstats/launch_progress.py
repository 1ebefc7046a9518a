"""The bulk launch's counts and progress lines: what happened to each link, counted apart, and
the time left from the last minute of work.

``created 40, created by an earlier try 90, skipped 10, updated 0, failed 0: 140/300 links done
(1.0/s over the last minute, about 3 min left)``. Skipped links (one listing walk found them)
cost no request and finish at once, so the rate is that of the links that were written: created,
updated or failed, over the last minute (since the start before a minute has passed), capped by
what the budget allows per link: the rate limiter's ``limit / window`` requests a second over the
requests a written link has cost so far (the limiter's requests since the launch began, over the
links written), so a link that costs 2 requests under a budget of 1 a second is promised at 0.5
a second, never more. While work is pending a line is logged at least every ``every`` seconds, by a ticker
thread, with "waiting N s for the service's rate limit" while the limiter holds requests back
(its ``on_wait``).

Imported by the launch when it runs, not at DAG parse.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from airflow_provider_linkstats.streaming import MIN_COSTED_UNITS, duration, unit_pace

# What happened to one link; the result's counts carry these names.
CREATED, CREATED_EARLIER, SKIPPED, UPDATED, FAILED = "created", "created_earlier", "skipped", "updated", "failed"
KINDS = (CREATED, CREATED_EARLIER, SKIPPED, UPDATED, FAILED)
WORDS = {CREATED_EARLIER: "created by an earlier try"}
WRITTEN = frozenset({CREATED, UPDATED, FAILED})  # cost requests: the rate is theirs
WINDOW = 60.0  # seconds of work the rate is read from
EVERY = 10.0  # longest silence while work is pending


class LaunchProgress:
    """Thread-safe counts of a launch of ``total`` links and the lines that report them.

    ``pace``: the budget's requests a second (read at each line: learned from the answers meanwhile);
    ``requests``: the requests sent so far (the rate limiter's ``sent``), from which what one link
    costs is measured; ``clock`` is injectable for tests.
    """

    def __init__(
        self,
        total: int,
        *,
        log: Any,
        pace: Callable[[], float | None] = lambda: None,
        every: float | None = None,
        window: float = WINDOW,
        clock: Callable[[], float] = time.monotonic,
        requests: Callable[[], int | None] = lambda: None,
    ) -> None:
        self.total = total
        self.log = log
        self.pace = pace
        self.requests = requests
        self._requests_before = requests()  # the walk's pages: not the links' cost
        self.every = every if every is not None else EVERY  # read at each launch
        self.window = window
        self.clock = clock
        self.counts = dict.fromkeys(KINDS, 0)
        self.started = clock()
        self._written: deque[float] = deque()  # when each written link finished, over the window
        self._waiting_until = 0.0
        self._last_line = self.started
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @property
    def done(self) -> int:
        return sum(self.counts.values())

    def add(self, kind: str) -> None:
        """One link finished as ``kind``."""
        with self._lock:
            self.counts[kind] += 1
            if kind in WRITTEN:
                self._written.append(self.clock())

    def waiting(self, seconds: float) -> None:
        """The rate limiter holds a request back for ``seconds`` (its ``on_wait``)."""
        with self._lock:
            self._waiting_until = max(self._waiting_until, self.clock() + seconds)

    def rate(self) -> float:
        """Links written a second over the last ``window`` (since the start before that), at most the pace."""
        with self._lock:
            now = self.clock()
            while self._written and self._written[0] < now - self.window:
                self._written.popleft()
            span = min(self.window, max(now - self.started, 1.0))
            rate = len(self._written) / span
        pace = self.link_pace()
        return min(rate, pace) if pace else rate

    def per_link(self) -> float | None:
        """Requests a written link has cost so far (measured), or None before ``MIN_COSTED_UNITS``."""
        sent, before = self.requests(), self._requests_before
        written = sum(self.counts[kind] for kind in WRITTEN)
        if sent is None or before is None or written < MIN_COSTED_UNITS or sent <= before:
            return None
        return (sent - before) / written

    def link_pace(self) -> float | None:
        """Links a second the budget allows: its requests a second over the requests one link costs."""
        return unit_pace(self.pace(), self.per_link())

    def line(self) -> str:
        counts = ", ".join(f"{WORDS.get(kind, kind)} {self.counts[kind]}" for kind in KINDS)
        done, rate = self.done, self.rate()
        parts = [f"{rate:.1f}/s over the last minute"]
        left = self.total - done
        speed = rate or self.link_pace() or 0.0
        if left > 0 and speed > 0:
            parts.append(f"about {duration(left / speed)} left")
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

