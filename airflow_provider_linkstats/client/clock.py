"""The service's clock, learned from the ``Date`` header of its answers.

A link expires by the install's clock (Laravel's ``now()``), not the worker's. Workers and
servers drift apart by seconds to minutes on real fleets, so every decision that compares a
moment with "now" (is this link over, is this expiry already past, when does a lifetime of two
hours end) reads ``ServiceClock.now()``.

``Date`` has a resolution of one second and is stamped at some moment while the request was
being answered. So each answer bounds the offset (service minus worker) to an interval:

    Date - received  <=  offset  <  Date + 1 - sent

The clock keeps the intersection of the intervals seen (it narrows as answers arrive) and starts
afresh from the newest answer when they stop overlapping (one of the clocks was stepped). The
estimate is the interval's middle; ``uncertainty`` is its half-width, which ``margin`` adds to
the stated ``SAFETY_MARGIN``. Until the service has answered, the worker's clock stands in
(``known`` is False). Thread-safe: a cleanup's delete threads share one client.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Mapping
from email.utils import parsedate_to_datetime

log = logging.getLogger(__name__)

# Added to the measurement's own uncertainty wherever a decision must not come early (a delete of
# an "expired" link): the service may evaluate "now" a moment after it stamped its Date header.
SAFETY_MARGIN = 2.0
# A skew past this is logged once per clock (a warning): it changes what "now" means for this task.
LARGE_SKEW = 30.0


def parse_http_date(value: str | None) -> float | None:
    """Epoch seconds of an HTTP ``Date`` header (RFC 7231 IMF-fixdate or its obsolete forms), or None."""
    if not value:
        return None
    try:
        moment = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if moment is None:
        return None
    if moment.tzinfo is None:  # RFC 7231: an HTTP date is always GMT
        moment = moment.replace(tzinfo=dt.timezone.utc)
    return moment.timestamp()


class ServiceClock:
    """The service's "now": the worker's clock corrected by the offset its answers' ``Date`` shows.

    ``wall`` (epoch seconds) is the worker's clock, injectable for tests.
    """

    def __init__(self, *, wall: Callable[[], float] = time.time, name: str = "the service") -> None:
        self._wall = wall
        self._name = name
        self._lock = threading.Lock()
        self._low: float | None = None  # bounds of the offset, service minus worker, in seconds
        self._high: float | None = None
        self._warned = False

    def __repr__(self) -> str:
        if self._low is None:
            return "ServiceClock(unknown)"
        return f"ServiceClock(offset={self.offset:+.1f}s ±{self.uncertainty:.1f}s)"

    # -- learning ----------------------------------------------------------------------------------

    def stamp(self) -> float:
        """The worker's clock now: what a transport notes just before sending (``observe(sent=)``)."""
        return self._wall()

    def observe(self, headers: Mapping[str, str] | None, sent: float, received: float | None = None) -> None:
        """Learn from one answer's ``Date``; ``sent`` and ``received`` are ``stamp()`` readings around it."""
        if not headers:
            return
        date = parse_http_date(headers.get("date") or headers.get("Date"))
        if date is None:
            return
        received = self._wall() if received is None else received
        low, high = date - received, date + 1.0 - min(sent, received)
        with self._lock:
            if self._low is None or self._high is None or low > self._high or high < self._low:
                self._low, self._high = low, high  # first answer, or the clocks were stepped: start afresh
            else:
                self._low, self._high = max(self._low, low), min(self._high, high)
            offset = (self._low + self._high) / 2
            warn = abs(offset) >= LARGE_SKEW and not self._warned
            self._warned = self._warned or warn
        if warn:
            log.warning(
                "The clock of %s is %s %s this worker's (from the Date header of its answers); decisions about "
                "time (expiry, cleanup, durations) use the service's clock. Check NTP on this worker or the server.",
                self._name,
                _seconds(abs(offset)),
                "behind" if offset < 0 else "ahead of",
            )

    def adopt_offset(self, offset: float, uncertainty: float) -> None:
        """Start from an offset measured elsewhere (another process's clock of the same service)."""
        with self._lock:
            if self._low is None:
                self._low, self._high = offset - uncertainty, offset + uncertainty

    # -- reading -----------------------------------------------------------------------------------

    @property
    def known(self) -> bool:
        """Whether the service has told its time yet (else the worker's clock stands in)."""
        return self._low is not None

    @property
    def offset(self) -> float:
        """Seconds to add to the worker's clock to read the service's (0.0 while unknown)."""
        low, high = self._low, self._high
        return 0.0 if low is None or high is None else (low + high) / 2

    @property
    def uncertainty(self) -> float:
        """Half the width of the offset's interval (0.0 while unknown: then the margin alone applies)."""
        low, high = self._low, self._high
        return 0.0 if low is None or high is None else (high - low) / 2

    @property
    def margin(self) -> float:
        """Seconds by which a moment must be past before it counts as past for a destructive decision."""
        return SAFETY_MARGIN + self.uncertainty

    def time(self) -> float:
        """The service's time, epoch seconds."""
        return self._wall() + self.offset

    def now(self) -> dt.datetime:
        """The service's time, an aware UTC datetime."""
        return dt.datetime.fromtimestamp(self.time(), dt.timezone.utc)

    def settled_now(self) -> dt.datetime:
        """``now()`` less the margin: a moment earlier than this has passed by the service's clock,
        whichever way the measurement errs. Use it to decide that something is over."""
        return dt.datetime.fromtimestamp(self.time() - self.margin, dt.timezone.utc)

    def to_worker(self, service_epoch: float) -> float:
        """The worker's epoch second at which the service's clock reads ``service_epoch``."""
        return service_epoch - self.offset

    def describe(self) -> str:
        """One phrase for logs: ``the service's clock (12.0 s behind this worker's, ±0.5 s)``."""
        if not self.known:
            return "this worker's clock (the service has not told its time yet)"
        offset = self.offset
        if abs(offset) < 0.5 + self.uncertainty:
            return f"the service's clock (within {_seconds(0.5 + self.uncertainty)} of this worker's)"
        way = "behind" if offset < 0 else "ahead of"
        return f"the service's clock ({_seconds(abs(offset))} {way} this worker's, ±{_seconds(self.uncertainty)})"


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"
