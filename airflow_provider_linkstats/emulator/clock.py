"""The emulator's notion of "now", which tests move to expire links by date without waiting."""

from __future__ import annotations

import datetime as dt
import threading


class Clock:
    """Real UTC time plus an offset, or a frozen instant.

    ``set`` and ``advance`` keep time flowing from the new instant (a demo keeps running), unless
    ``freeze=True`` pins it so a test can assert exact timestamps.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offset = dt.timedelta(0)
        self._frozen: dt.datetime | None = None

    def now(self) -> dt.datetime:
        frozen = self._frozen
        if frozen is not None:
            return frozen
        return dt.datetime.now(dt.timezone.utc) + self._offset

    def state(self) -> tuple:
        """What ``now()`` is computed from: it changes with every ``set``, ``advance`` or ``reset``."""
        return (self._offset, self._frozen)

    @property
    def frozen(self) -> bool:
        return self._frozen is not None

    def set(self, moment: dt.datetime, *, freeze: bool = False) -> dt.datetime:
        if not isinstance(moment, dt.datetime) or moment.utcoffset() is None:
            raise ValueError("the clock needs a time-zone-aware datetime")
        moment = moment.astimezone(dt.timezone.utc)
        with self._lock:
            self._frozen = moment if freeze else None
            self._offset = moment - dt.datetime.now(dt.timezone.utc)
        return moment

    def advance(self, seconds: float = 0, **delta: float) -> dt.datetime:
        """Move forward by ``seconds`` (and/or timedelta keywords: minutes=, hours=, days=)."""
        step = dt.timedelta(seconds=seconds, **delta)
        with self._lock:
            if self._frozen is not None:
                self._frozen += step
            else:
                self._offset += step
        return self.now()

    def reset(self) -> None:
        """Back to real time."""
        with self._lock:
            self._offset = dt.timedelta(0)
            self._frozen = None
