"""The streaming cleanup's progress lines: every ``LOG_EVERY`` seconds from a thread of its own,
and the rate limiter's waits as they begin."""

from __future__ import annotations

import threading
import time
from typing import Any

from airflow_provider_linkstats.drivers.progress import Progress, duration, thousands


class Reporter:
    """The lines, from a thread of its own: the walking thread may be held by the rate limiter."""

    def __init__(self, cleanup: Any, outcome: Any, reader: Any) -> None:
        self.cleanup = cleanup
        self.outcome = outcome
        self.reader = reader
        self.limiter = getattr(cleanup.client, "limiter", None)
        self.progress = Progress(limiter=self.limiter)
        self.waiting_until = 0.0  # the limiter holds a request until then (monotonic)
        self.held = 0.0  # seconds some request was held by the limiter (overlapping waits once)
        self.held_said = 0.0  # of which told in a line already
        self.last_line = time.monotonic()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._loop, name="linkstats-cleanup-progress", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=5)

    def on_wait(self, seconds: float) -> None:
        """The rate limiter holds a request for ``seconds`` (called from the waiting thread)."""
        now = time.monotonic()
        until = now + seconds
        if until > self.waiting_until:
            self.held += until - max(now, self.waiting_until)
            self.waiting_until = until
        if seconds >= self.cleanup.LOG_EVERY and now - self.last_line >= 1.0:
            self.line()  # a long wait is said when it begins, not 10 s into it

    def _loop(self) -> None:
        while not self._stop.wait(max(0.5, self.cleanup.LOG_EVERY - (time.monotonic() - self.last_line))):
            if time.monotonic() - self.last_line >= self.cleanup.LOG_EVERY - 0.05:
                self.line()

    def line(self) -> None:
        with self._lock:  # the reporter's thread and a waiting one may both tell
            self._line()

    def _done(self) -> int:
        outcome = self.outcome
        return outcome.matched if outcome.dry_run else outcome.deleted + outcome.already_gone + outcome.failed

    def tell(self) -> None:
        """A unit is done: the progress samples every unit, so its last minute is read exactly."""
        self.progress.update(self._done())

    def _line(self) -> None:
        self.last_line = time.monotonic()
        outcome = self.outcome
        dry = outcome.dry_run
        done = self._done()
        self.progress.update(done)
        examined = outcome.matched + outcome.kept + outcome.unconfirmed
        walk = getattr(self.cleanup, "_current", None)
        listed = getattr(walk, "total", None)
        parts = [f"{self.progress.rate:.1f}/s"]
        if listed:
            share = outcome.matched / examined if examined else 1.0
            remaining = max(0, listed - examined) * share + (0 if dry else outcome.matched - done)
            seconds = self.progress.seconds_left(remaining)
            if seconds is not None and remaining > 0:
                parts.append(f"about {duration(seconds)} left")
        wait = self.waiting_until - time.monotonic()
        if wait >= 0.5:
            parts.append(f"waiting {wait:.0f} s for the service's rate limit")
        elif self.held - self.held_said >= 0.5:
            parts.append(f"waited {self.held - self.held_said:.0f} s for the service's rate limit since the last line")
        self.held_said = self.held
        self.cleanup.log.info(
            "%s %s of %s matching links, %s of %s listed examined, %s listing request(s) (%s)",
            "would delete" if dry else "deleted", f"{done:,}", f"{outcome.matched:,}", f"{examined:,}",
            thousands(listed), f"{self.reader.pages_read:,}", ", ".join(parts),
        )  # fmt: skip
