"""The warehouse load's progress lines, in requests (daily, days asked alone, breakdowns alike, so the
time left is that of every request still to send): one every ``PROGRESS_EVERY`` seconds while some
are pending, and a last one once all are answered (if a line was told)."""

from __future__ import annotations

import time
from typing import Any

PROGRESS_EVERY = 30.0  # seconds between progress lines of a long load


class Progress:
    """Done, total, rate and time left (``drivers.progress.Progress``); ``total`` may grow as the load
    learns of more work."""

    def __init__(self, log: Any, total: int, what: str, limiter: Any = None) -> None:
        from airflow_provider_linkstats.drivers.progress import Progress as Window

        self.log, self.total, self.what = log, total, what
        self.window = Window(limiter=limiter)
        self.last = time.monotonic()
        self.told = False  # whether a line was told: then the end is told too

    def step(self, done: int, total: int | None = None) -> None:
        from airflow_provider_linkstats.drivers.progress import duration

        self.total = max(self.total if total is None else total, done)
        self.window.update(done)
        now = time.monotonic()
        if done >= self.total:
            if self.told:
                self.log.info("%d of %d %s (%.1f/s): done", done, self.total, self.what, self.window.rate)
                self.told = False
            return
        if now - self.last < PROGRESS_EVERY:
            return
        self.last, self.told = now, True
        left = self.window.seconds_left(self.total - done)
        after = f", about {duration(left)} left" if left is not None else ""
        self.log.info("%d of %d %s (%.1f/s%s)", done, self.total, self.what, self.window.rate, after)
