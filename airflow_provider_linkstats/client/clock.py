"""The service's clock, learned from the ``Date`` header of its answers.

A link expires by the install's clock (Laravel's ``now()``), not the worker's. Workers and
servers drift apart by seconds to minutes on real fleets, so every decision that compares a
moment with "now" (is this link over, is this expiry already past, when does a lifetime of two
hours end) reads ``ServiceClock.now()``.

``Date`` has a resolution of one second and is stamped at some moment while the request was
being answered. So each answer bounds the offset (service minus worker) to an interval:

    Date - received  <=  offset  <  Date + 1 - sent

The clock keeps the intersection of the intervals seen (it narrows as answers arrive). An answer
whose interval lies wholly after the known one (its ``Date`` is later than the service's clock
allows) means the service's clock was stepped forward: it starts afresh from it. One whose interval
lies wholly before (its ``Date`` is older than its send, by the clock as known) is most often a
page a proxy kept (a cache), not a step back: it teaches nothing, and ``observe`` says it is stale;
only when a second answer, sent at least ``STEP_CONFIRM`` seconds later, shows the same earlier
clock is it taken as a step back. An answer with an ``Age`` above 0 came from a cache: stale too.

The estimate is the interval's middle; ``uncertainty`` is its half-width, which ``margin`` adds to
the stated ``SAFETY_MARGIN``. Until the service has answered, the worker's clock stands in
(``known`` is False): a decision that needs the service's time makes it known first
(``LinkstatsClient.ensure_clock``: an answer this process has, the host's learned facts, or one
cheap read). Thread-safe: a cleanup's delete threads share one client.
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
# What a wait adds instead (it deletes nothing; it reports that a link is over): an end counts as
# passed once the service's clock, at its earliest as measured, is past it by this much, so a wait
# fires 1-2 s after the end by the service's clock (a Date header is whole seconds).
WAIT_MARGIN = 1.0
# A skew past this is logged once per clock (a warning): it changes what "now" means for this task.
LARGE_SKEW = 30.0
# No clock skew explains an expiry past by more than this by the worker's clock (a day covers a
# server whose clock runs in another zone's time): only such an expiry is refused before any request.
PLAUSIBLE_SKEW = 86400.0
# How fast two clocks may drift apart (a worker without NTP: 100 ppm): an offset measured by another
# process some time ago (the host's learned facts) is widened by this much per second of its age.
DRIFT = 1e-4
# A Date earlier than the known clock allows is a step back only if an answer sent this many seconds
# later shows it too; a cached page's fixed Date falls further behind with every second.
STEP_CONFIRM = 2.0
FRESH, STALE, NO_DATE = "fresh", "stale", "no date"  # what ``observe`` says of an answer


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
        self._step: tuple[float, float, float] | None = None  # (low, high, sent) of an answer that went back
        self.adopted_from: str | None = None  # where an offset measured elsewhere came from, if it did

    def __repr__(self) -> str:
        if self._low is None:
            return "ServiceClock(unknown)"
        return f"ServiceClock(offset={self.offset:+.1f}s ±{self.uncertainty:.1f}s)"

    # -- learning ----------------------------------------------------------------------------------

    def stamp(self) -> float:
        """The worker's clock now: what a transport notes just before sending (``observe(sent=)``)."""
        return self._wall()

    def observe(self, headers: Mapping[str, str] | None, sent: float, received: float | None = None) -> str:
        """Learn from one answer's ``Date``; ``sent`` and ``received`` are ``stamp()`` readings around it.

        Returns ``FRESH`` (learnt from), ``STALE`` (an ``Age`` header, or a ``Date`` older than its
        send by the clock as known: a cached page, which teaches nothing) or ``NO_DATE``."""
        if not headers:
            return NO_DATE
        date = parse_http_date(headers.get("date") or headers.get("Date"))
        if date is None:
            return NO_DATE
        if _aged(headers):
            return STALE  # a cache answered: its Date is when it stored the page, not now
        received = self._wall() if received is None else received
        low, high = date - received, date + 1.0 - min(sent, received)
        with self._lock:
            if self._low is not None and self._high is not None and high < self._low:
                # Older than the known clock allows: a stale page, unless a later answer confirms a step back.
                step = self._step
                if step is None or not (low <= step[1] and high >= step[0]) or sent - step[2] < STEP_CONFIRM:
                    if step is None or not (low <= step[1] and high >= step[0]):
                        self._step = (low, high, sent)
                    return STALE
                low, high = max(low, step[0]), min(high, step[1])
                self._low = None  # confirmed: the service's clock went back
            self._step = None
            if self._low is None or self._high is None or low > self._high:
                self._low, self._high = low, high  # first answer, or the clock was stepped forward: start afresh
            else:
                self._low, self._high = max(self._low, low), min(self._high, high)
            self.adopted_from = None  # heard by this process now
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
        return FRESH

    def is_fresh(self, headers: Mapping[str, str] | None, sent: float) -> bool | None:
        """Whether an answer was made after ``sent`` (a ``stamp()`` reading before its request): no
        ``Age`` header and a ``Date`` not older than the send by the clock as known. None: it has no
        ``Date`` (nothing tells). Learns nothing (``observe`` does)."""
        date = parse_http_date((headers or {}).get("date") or (headers or {}).get("Date"))
        if date is None:
            return None
        if _aged(headers or {}):
            return False
        low = self._low
        # The earliest the service's clock can have read at the send is sent + low; an answer made
        # after the send has a Date (floored to the second) later than a second before that.
        return low is None or date + 1.0 > sent + low

    def adopt_offset(self, offset: float, uncertainty: float, *, age: float = 0.0, source: str = "") -> bool:
        """Start from an offset measured elsewhere (another process's clock of the same service on
        this host), ``age`` seconds ago: widened by what the clocks may have drifted since
        (``DRIFT``). Ignored once this clock has heard the service itself; True when taken."""
        if not (abs(offset) < 10 * PLAUSIBLE_SKEW and 0 <= uncertainty < 3600 and 0 <= age < 10 * PLAUSIBLE_SKEW):
            return False
        widened = uncertainty + DRIFT * age
        with self._lock:
            if self._low is not None:
                return False
            self._low, self._high = offset - widened, offset + widened
            self.adopted_from = source or "measured elsewhere"
        return True

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

    @property
    def wait_margin(self) -> float:
        """``margin`` for a wait: ``WAIT_MARGIN`` plus the measurement's uncertainty."""
        return WAIT_MARGIN + self.uncertainty

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


def adopt_profile_clock(clock: ServiceClock, profile: object) -> bool:
    """Start ``clock`` from the offset a ``ServiceProfile`` of the host's learned facts carries (an
    earlier task on this host measured it), unless it has heard the service itself."""
    offset, uncertainty = getattr(profile, "clock_offset", None), getattr(profile, "clock_uncertainty", None)
    measured = getattr(profile, "clock_at", 0.0) or 0.0
    if offset is None or uncertainty is None or not measured or clock.known:
        return False
    age = max(0.0, time.time() - measured)
    return clock.adopt_offset(offset, uncertainty, age=age, source=f"measured {age:.0f} s ago by a task on this host")


def _aged(headers: Mapping[str, str]) -> bool:
    """An ``Age`` header above 0 (RFC 9111: the seconds a cache has held the answer): a cache's copy.
    ``Age: 0`` is a cache passing on what the origin answered just now (Varnish sends it on a miss)."""
    value = headers.get("age") or headers.get("Age")
    if value is None:
        return False
    try:
        return int(str(value).strip()) > 0
    except ValueError:
        return True  # a cache said something unreadable: not taken for the origin's own answer


def _seconds(value: float) -> str:
    if value < 120:
        return f"{value:.1f} s"
    if value < 7200:
        return f"{value / 60:.1f} min"
    return f"{value / 3600:.1f} h"
