"""Laravel's ``throttle`` middleware: fixed windows counted per client IP and per API key.

phpShort: 60 requests a minute per client IP (its ``api`` group, run before authentication)
and 120 a minute per user (on the routes). phpAnalytics: 60 a minute. A window opens at the
first request and lasts ``window`` seconds of the emulator's clock, so moving the clock forward
opens a new one. Off unless configured (unit tests that don't test limits run unthrottled).
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass
from typing import Any

from airflow_provider_linkstats.emulator.clock import Clock


@dataclass(frozen=True)
class Verdict:
    allowed: bool
    limit: int
    remaining: int
    retry_after: int = 0
    reset_at: int = 0  # epoch seconds

    def headers(self) -> dict[str, str]:
        out = {"X-RateLimit-Limit": str(self.limit), "X-RateLimit-Remaining": str(self.remaining)}
        if not self.allowed:
            out.update({"Retry-After": str(self.retry_after), "X-RateLimit-Reset": str(self.reset_at)})
        return out


@dataclass
class Limits:
    """Requests per window; None turns a limit off."""

    per_ip: int | None = None
    per_key: int | None = None
    analytics: int | None = None
    window: float = 60.0

    def describe(self) -> dict[str, Any]:
        return {"per_ip": self.per_ip, "per_key": self.per_key, "analytics": self.analytics, "window": self.window}


class RateLimiter:
    def __init__(self, clock: Clock, limits: Limits | None = None) -> None:
        self.clock = clock
        self.limits = limits or Limits()
        self._lock = threading.Lock()
        self._windows: dict[tuple, tuple[float, int]] = {}  # key -> (window end, hits)

    def configure(
        self,
        limit: int | None = None,
        window: float = 60.0,
        key_limit: int | None = None,
        analytics_limit: int | None = None,
    ) -> Limits:
        """``limit`` per client IP (None: all off); the per-key limit defaults to twice it and the
        analytics limit to it, as on a real install (60, 120 and 60 a minute)."""
        for name, value in (("limit", limit), ("key_limit", key_limit), ("analytics_limit", analytics_limit)):
            if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
                raise ValueError(f"{name} must be a positive integer or null, got {value!r}")
        if not isinstance(window, (int, float)) or isinstance(window, bool) or window <= 0:
            raise ValueError(f"window must be a positive number of seconds, got {window!r}")
        with self._lock:
            if limit is None:
                self.limits = Limits(window=float(window))
            else:
                self.limits = Limits(limit, key_limit or 2 * limit, analytics_limit or limit, float(window))
            self._windows.clear()
        return self.limits

    def hit(self, bucket: tuple, limit: int | None) -> Verdict | None:
        """Count one request in ``bucket``; None when this limit is off."""
        if limit is None:
            return None
        now = self.clock.now().timestamp()
        with self._lock:
            ends, hits = self._windows.get(bucket, (0.0, 0))
            # A window ends one window after it began; one ending later than that began in a future
            # the clock was moved back from (a test or the demo travelling in time): it is over too.
            if now >= ends or ends - now > self.limits.window:
                ends, hits = now + self.limits.window, 0
            if hits >= limit:  # tooManyAttempts() looks before it counts
                self._windows[bucket] = (ends, hits)
                wait = max(1, math.ceil(ends - now))
                return Verdict(False, limit, 0, wait, math.ceil(now + wait))
            self._windows[bucket] = (ends, hits + 1)
            return Verdict(True, limit, limit - hits - 1)

    def reset(self) -> None:
        with self._lock:
            self._windows.clear()
