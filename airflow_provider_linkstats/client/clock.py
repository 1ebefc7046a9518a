"""The service's clock, learned from the ``Date`` header of its answers.

A link expires by the install's clock (Laravel's ``now()``), not the worker's. Workers and
servers drift apart by seconds to minutes on real fleets, so every decision that compares a
moment with "now" (is this link over, is this expiry already past, when does a lifetime of two
hours end) reads ``ServiceClock.now()``.

``Date`` has a resolution of one second and is stamped at some moment while the request was
being answered. So each answer bounds the offset (service minus worker) to an interval:

    Date - received  <=  offset  <  Date + 1 - sent

The clock keeps the intersection of the intervals seen (it narrows as answers arrive), and follows
the service when its clock is stepped, as NTP does: the rules (what is a cached page, what is a
step, a candidate step) are in docs/waiting.md, "A step of the service's clock". A step makes
``observe`` say ``STEPPED``, is logged with both offsets, and ``stepped`` (the hook's) keeps the new
offset in the host's learned facts.

The estimate is the interval's middle; ``uncertainty`` is its half-width, which ``margin`` adds to
the stated ``SAFETY_MARGIN``. Until the service has answered, the worker's clock stands in
(``known`` is False): a decision that needs the service's time makes it known first
(``LinkstatsClient.ensure_clock``). Thread-safe: a cleanup's delete threads share one client.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
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
# A read's Date earlier than the known clock allows is a step back once another answer agrees on the
# same offset and was received more than this many seconds after the first was sent: two copies of
# one cached page (a fixed Date, whole seconds) then show offsets more than a second apart.
STEP_CONFIRM = 1.0
# The offsets a clock keeps from before its steps (``offset_since``): a few steps are plenty.
EARLIER_KEPT = 8
FRESH, STEPPED, STALE, NO_DATE = "fresh", "stepped", "stale", "no date"  # what ``observe`` says of an answer
_WRITES = frozenset({"POST", "PUT", "PATCH", "DELETE"})  # answers no cache keeps (RFC 9111, section 3)


@dataclass(frozen=True)
class _Answer:
    """What one answer says of the offset (service minus worker): within [low, high]."""

    low: float
    high: float
    sent: float
    received: float
    write: bool  # the answer to a write: the origin's own, whatever its Date says


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
        self._settled = float("-inf")  # when the answer that set the offset arrived (after a step)
        self._candidate: _Answer | None = None  # a read that went back, until another agrees (a step) or not
        # The offset's last evidence (the worker's moment of the latest answer agreeing with it, or
        # the measurement an adopted offset came from), and (that moment, the high bound) of each
        # offset a step replaced: records stamped before a step carry the old clock (``offset_since``).
        self._evidenced = float("-inf")
        self._earlier: list[tuple[float, float]] = []
        # Told of a step (``observe`` returned ``STEPPED``): the hook keeps the new offset in the host's cache.
        self.stepped: Callable[[ServiceClock], None] | None = None
        self.adopted_from: str | None = None  # where an offset measured elsewhere came from, if it did
        self._reads_from: float | None = None  # since ``watch_reads``: the earliest Date less its round trip
        self._watching = False

    def __repr__(self) -> str:
        if self._low is None:
            return "ServiceClock(unknown)"
        return f"ServiceClock(offset={self.offset:+.1f}s ±{self.uncertainty:.1f}s)"

    # -- learning ----------------------------------------------------------------------------------

    def stamp(self) -> float:
        """The worker's clock now: what a transport notes just before sending (``observe(sent=)``)."""
        return self._wall()

    def observe(
        self, headers: Mapping[str, str] | None, sent: float, received: float | None = None, *, method: str = "GET"
    ) -> str:
        """Learn from one answer's ``Date``; ``sent`` and ``received`` are ``stamp()`` readings around it,
        ``method`` the request's (a cache keeps no answer to a write: RFC 9111, section 3).

        Returns ``FRESH`` (learnt from), ``STEPPED`` (the offset moved to a new one: a step of the
        service's clock, or a measurement this process heard replacing one it was handed),
        ``STALE`` (a cached page: an ``Age`` header, or a ``Date`` earlier than the known clock allows
        that no other answer agrees with yet, a candidate step) or ``NO_DATE``."""
        headers = headers or {}
        date = parse_http_date(_header(headers, "date"))
        if date is None:
            return NO_DATE
        received = self._wall() if received is None else received
        self._note_read(date, sent, received)
        if _aged(headers):
            return STALE  # a cache answered: its Date is when it stored the page, not now
        answer = _Answer(date - received, date + 1.0 - min(sent, received), sent, received, method.upper() in _WRITES)
        with self._lock:
            before = self.offset if self.known else None
            verdict = self._take(answer)
            after, warn = self.offset, self._first_skew(verdict)
        self._tell(verdict, before, after, warn)
        return verdict

    def _first_skew(self, verdict: str) -> bool:
        """Whether this answer shows a large skew for the first time (under the lock)."""
        warn = verdict != STALE and abs(self.offset) >= LARGE_SKEW and not self._warned
        self._warned = self._warned or warn
        return warn

    def _tell(self, verdict: str, before: float | None, after: float, warn: bool) -> None:
        """The logs an answer calls for, and the host's learned facts told of a step (outside the lock)."""
        if verdict == STEPPED and before is not None:
            self._say_step(before, after)
        if warn:
            self._say_skew(after)
        if verdict == STEPPED and self.stepped is not None:
            self.stepped(self)  # the host's learned facts take the new offset at once

    def _note_read(self, date: float, sent: float, received: float) -> None:
        """``reads_from`` (``watch_reads``): every answer counts, a stale one too."""
        if self._watching:
            earliest = date - max(received - sent, 0.0)
            with self._lock:
                self._reads_from = earliest if self._reads_from is None else min(self._reads_from, earliest)

    def _take(self, answer: _Answer) -> str:
        """What ``answer`` (not from a cache by its headers) does to the offset's interval; under the lock."""
        if self._low is None or self._high is None:
            self._set(answer.low, answer.high)
            self._evidenced = answer.received
            return FRESH
        if answer.low <= self._high and answer.high >= self._low:  # agrees with what is known: narrows it
            self._set(max(self._low, answer.low), min(self._high, answer.high))
            self._evidenced = max(self._evidenced, answer.received)
            return FRESH
        if answer.sent < self._settled:
            return STALE  # sent before the answer that set the offset arrived: it tells of the clock before
        if answer.low > self._high or answer.write:
            # Later than the known clock allows (no cache keeps a page from the future), or the
            # answer to a write (no cache keeps one): a step.
            self._set(answer.low, answer.high, answer.received)
            return STEPPED
        return self._step_back(answer)

    def _step_back(self, answer: _Answer) -> str:
        """A read's ``Date`` earlier than the known clock allows: a cached page unless another answer,
        received more than ``STEP_CONFIRM`` after this one was sent, agrees on the same offset (a
        cached page's fixed ``Date`` falls behind with every second, so its copies never agree)."""
        seen = self._candidate
        agrees = seen is not None and answer.low <= seen.high and answer.high >= seen.low
        if agrees and seen is not None and answer.received - seen.sent > STEP_CONFIRM:
            self._set(max(answer.low, seen.low), min(answer.high, seen.high), answer.received)
            return STEPPED
        if not agrees:
            self._candidate = answer
        return STALE

    def _set(self, low: float, high: float, settled: float | None = None) -> None:
        if settled is not None:  # a step: the offset it replaces is kept with its last evidence
            if self._high is not None:
                self._earlier = [*self._earlier[-(EARLIER_KEPT - 1) :], (self._evidenced, self._high)]
            self._settled = self._evidenced = settled
        self._low, self._high = low, high
        self._candidate = None
        self.adopted_from = None  # heard by this process now

    def _say_step(self, before: float, after: float) -> None:
        log.warning(
            "The clock of %s moved: its answers now agree on an offset of %+.1f s from this worker's clock "
            "(it was %+.1f s: a step of the service's clock, or a measurement kept on this host that no longer "
            "holds); decisions about time use the new offset from now on.",
            self._name, after, before,
        )  # fmt: skip

    def _say_skew(self, offset: float) -> None:
        log.warning(
            "The clock of %s is %s %s this worker's (from the Date header of its answers); decisions about "
            "time (expiry, cleanup, durations) use the service's clock. Check NTP on this worker or the server.",
            self._name, _seconds(abs(offset)), "behind" if offset < 0 else "ahead of",
        )  # fmt: skip

    def is_fresh(self, headers: Mapping[str, str] | None, sent: float) -> bool | None:
        """Whether an answer was made after ``sent`` (a ``stamp()`` reading before its request): no
        ``Age`` header and a ``Date`` not older than the send by the clock as known. None: it has no
        ``Date`` (nothing tells). Learns nothing (``observe`` does)."""
        headers = headers or {}
        date = parse_http_date(_header(headers, "date"))
        if date is None:
            return None
        if _aged(headers):
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
            self._evidenced = self._wall() - age
            self.adopted_from = source or "measured elsewhere"
        return True

    def watch_reads(self) -> None:
        """From now on, note the service's earliest moment any answer may have been read at
        (``reads_from``): a warehouse day is complete only if every answer used for it was read
        after it ended, and a clock stepped back (which ``observe`` confirms only later, if ever)
        or a cached answer shows in its own ``Date``, not in the offset."""
        with self._lock:
            self._watching, self._reads_from = True, None

    @property
    def reads_from(self) -> float | None:
        """Since ``watch_reads``: the earliest ``Date`` of an answer less its round trip (epoch
        seconds of the service's clock), or None before an answer with a ``Date``."""
        return self._reads_from

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

    def offset_since(self, moment: float) -> float:
        """The lowest offset the service's clock may have had at some moment since ``moment`` (the
        worker's epoch seconds), each offset at its latest within its uncertainty: the current one,
        or one a step replaced whose last evidence came after ``moment``. A record the service
        stamped after ``moment`` carries a ``created_at`` of at least ``moment`` plus it, even when
        the service's clock stepped ahead since (its earlier records carry the old clock)."""
        with self._lock:
            if self._high is None:
                return 0.0
            return min([self._high, *(high for evidenced, high in self._earlier if evidenced >= moment)])

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


def _header(headers: Mapping[str, str], name: str) -> str | None:
    """A header by its lower-case name, else as sent capitalised (a plain dict's keys are as sent)."""
    return headers.get(name) or headers.get(name.capitalize())


def _aged(headers: Mapping[str, str]) -> bool:
    """An ``Age`` header above 0 (RFC 9111: the seconds a cache has held the answer): a cache's copy.
    ``Age: 0`` is a cache passing on what the origin answered just now (Varnish sends it on a miss)."""
    value = _header(headers, "age")
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
