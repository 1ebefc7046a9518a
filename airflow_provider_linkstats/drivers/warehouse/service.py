"""What the warehouse load reads of the service besides the statistics: its clock (now, the
moment before which no answer was read, the days' completeness once every answer is in), whether
a record that answered 404 is gone, and the account's zone read again after the answers."""

from __future__ import annotations

import dataclasses
import datetime as dt
import time
from typing import Any

UTC = dt.timezone.utc


class ServiceClock:
    """The hook's client's clock (learned from the services' Date headers); the worker's without one."""

    def __init__(self, hook: Any) -> None:
        self.hook = hook
        self.clock = getattr(hook.client, "clock", None)

    @property
    def known(self) -> bool:
        return bool(getattr(self.clock, "known", False))

    def now(self) -> dt.datetime:
        worker_now = dt.datetime.now(UTC)
        now = getattr(self.clock, "now", None)
        try:
            return now() if callable(now) else worker_now
        except Exception:  # a clock that learned nothing yet
            return worker_now

    def watch_reads(self) -> float:
        """From here the client's clock notes the earliest answer read; returns the worker's moment now."""
        watch = getattr(self.clock, "watch_reads", None)
        if callable(watch):
            watch()
        return time.time()

    def read_after(self, worker_moment: float, listing: Any = None) -> dt.datetime:
        """The service's moment before which no answer this load uses was read, less the clock's
        margin, so an answer read before a day ended never makes it complete: the listing's first
        page's ``Date`` less the round trip (``GaplessListing.read_from``), else ``worker_moment``
        (epoch seconds before the first request) on the service's clock."""
        from airflow_provider_linkstats.client.clock import SAFETY_MARGIN

        margin = dt.timedelta(seconds=SAFETY_MARGIN)
        read_from = getattr(listing, "read_from", None)
        if read_from is not None:
            return read_from - margin
        if not self.known:
            return dt.datetime.fromtimestamp(worker_moment, UTC) - margin
        return dt.datetime.fromtimestamp(worker_moment + self.clock.offset - self.clock.margin, UTC)

    def earliest_read(self, began: float, listing: Any, clock_known: bool) -> dt.datetime:
        """The earliest moment the service may have read an answer of this load, once all are in: the
        first request's moment (``began``) on its clock as known now, or the earliest ``Date`` of any
        answer less its round trip, if earlier (a clock stepped back during the load shows there)."""
        from airflow_provider_linkstats.client.clock import SAFETY_MARGIN

        read_after = self.read_after(began)
        if listing is not None or clock_known:
            read_after = min(read_after, self.read_after(began, listing))
        reads_from = getattr(self.clock, "reads_from", None)
        if isinstance(reads_from, (int, float)):  # every answer's own Date, a stepped or cached one too
            read_after = min(read_after, dt.datetime.fromtimestamp(reads_from - SAFETY_MARGIN, UTC))
        return read_after


def confirm_gone(hook: Any, record_id: int, error: Exception) -> int:
    """A statistics 404 counts as the record deleted only if the record answers 404 too (not a proxy's
    404 for statistics): else ``error`` is raised. Returns the requests made (1)."""
    from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError

    try:
        hook.get_record(record_id)
    except LinkstatsNotFoundError:
        return 1
    raise error


def confirm_zone(hook: Any, log: Any, planned_in: str | None, plan: Any) -> tuple[Any, bool]:
    """The plan, and whether the zone the days were planned in (``planned_in``, the account's) went
    unconfirmed when read again after the answers: it may have changed during the run, or before it
    while the host's learned facts held the old one. Then every day is written incomplete."""
    if planned_in is None or set(plan.dates) <= set(plan.incomplete):
        return plan, False
    from airflow_provider_linkstats.client.errors import LinkstatsError

    every_day = dataclasses.replace(plan, incomplete=frozenset(plan.dates))
    days = ", ".join(map(str, plan.dates))
    try:
        zone = hook.client.account().get("timezone") or "UTC"
    except LinkstatsError as error:  # unconfirmed: nothing is lost by loading the days again
        log.warning(
            "the account's time zone could not be read again after the statistics (%s): days %s are written "
            "INCOMPLETE, and the next run loads them again", error, days,
        )  # fmt: skip
        return every_day, True
    if zone == planned_in:
        return plan, False
    hook.forget_learned(f"the account's time zone is now {zone}, not {planned_in}")
    log.warning(
        "the account's time zone is %s, not %s as this run planned its days with (it changed during the run, or "
        "just before it while this host's learned facts still held the old zone): days %s are written "
        "INCOMPLETE, and the next run loads them again in %s", zone, planned_in, days, zone,
    )  # fmt: skip
    return every_day, True  # the counters' moments were read in another zone's days too
