"""A link's fields, from what the caller wrote to what the connected generation takes.

Checked once for every caller, on every generation alike, before any request (``check_link``: a
past expiry is refused everywhere), then only transformed (``for_generation``): ``expires_at``
becomes 44-45's expiration_date and expiration_time in the account's zone, rounded up to the
minute, or 46+'s window in UTC from ``starts_at`` (default: now); a create without ``domain_id``
gets the default domain.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Mapping
from typing import Any

from airflow_provider_linkstats.client.clock import PLAUSIBLE_SKEW
from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.generations import LOCAL_MINUTE, UTC_WINDOW, Generation
from airflow_provider_linkstats.client.validation import Fields, is_duration, validate_fields

log = logging.getLogger(__name__)


def check_link(fields: Mapping[str, Any], operation: str, *, now: dt.datetime | None = None) -> Fields:
    """The link's fields checked once, on every generation alike, before any request.

    ``now``: the service's "now" (``LinkstatsClient.ensure_clock().now()``). Without it (no request
    made yet) the worker's clock stands in, and an expiry is refused only when it is past by more
    than any clock skew explains (``PLAUSIBLE_SKEW``); the client checks again by the service's clock
    before the write. A ``Fields`` already checked for ``operation`` is returned as it is.
    """
    checked = isinstance(fields, Fields) and fields.resource is LINKS and fields.operation == operation
    if checked and not fields.has_durations:
        values = fields
    else:  # a duration counts from this write: read again from what the caller gave, at ``now``
        values = validate_fields(LINKS, operation, fields.given if checked else fields, now=now)
    if values.get("expires_at") is not None:
        _check_end(values, values["expires_at"], values.get("starts_at"), now)
    return values


def _check_end(values: Fields, end: dt.datetime, start: dt.datetime | None, now: dt.datetime | None) -> None:
    """The expiry after the start, else after ``now``, else after the worker's clock by more than any skew."""
    if start is not None:
        if end <= start:
            raise _not_after(values, "starts_at", start)
        return
    if now is not None:
        if end <= now.replace(microsecond=0):
            raise _not_after(values, "now", now.replace(microsecond=0))
        return
    worker = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
    if is_duration(values.given.get("expires_at")) and end <= worker:
        raise _not_after(values, "now", worker)  # a lifetime of 0 or less: past by any clock
    if end <= worker - dt.timedelta(seconds=PLAUSIBLE_SKEW):
        raise _not_after(values, "now", worker, by_worker=True)


def _not_after(values: Fields, what: str, moment: dt.datetime, *, by_worker: bool = False) -> LinkstatsInputError:
    """The expiry is not after the link's start: the value as the user wrote it, in plain words."""
    given = values.given.get("expires_at", values["expires_at"])
    shown = given.isoformat() if isinstance(given, dt.datetime) else given
    end = values["expires_at"]
    # An IANA name where the moment carries one (pendulum, zoneinfo), else its offset name ("UTC+02:00").
    zone = getattr(end.tzinfo, "name", None) or getattr(end.tzinfo, "key", None) or end.tzname() or "UTC"
    start = moment.astimezone(end.tzinfo)
    if what == "now":
        whose = (
            f"by this worker's clock, more than {PLAUSIBLE_SKEW / 3600:.0f} h after it, so by any service's clock too"
            if by_worker
            else "by the service's clock"
        )
        allowed = (
            f"a moment in the future; {end:%Y-%m-%d %H:%M:%S} {zone} has passed (it is now "
            f"{start:%Y-%m-%d %H:%M:%S} {zone} {whose}), so the link would be dead from the start"
        )
    else:
        allowed = f"a moment after starts_at ({start:%Y-%m-%d %H:%M:%S} {zone}): the link would never redirect"
    return LinkstatsInputError("expires_at", shown, allowed)


def needs_zone(values: Mapping[str, Any], generation: Generation, timezone: str | None) -> bool:
    """Whether preparing ``values`` needs the account's time zone: an end written as a local date and time."""
    return values.get("expires_at") is not None and generation.expiry == LOCAL_MINUTE and not timezone


def for_generation(
    values: Fields,
    generation: Generation,
    *,
    timezone: str | None = None,
    default_domain_id: int | None = None,
    now: dt.datetime | None = None,
) -> Fields:
    """``values`` (from ``check_link``) as ``generation`` takes them; fields it lacks are refused."""
    generation.check_fields(LINKS, values)
    if values.get("expires_at") is not None:
        values = _end_for(values, values["expires_at"], generation, timezone, now)
    if values.operation == "create" and values.get("domain_id") is None and default_domain_id is not None:
        values = values.changed(domain_id=default_domain_id)
    return values.changed(ready_for=generation.name)


def _end_for(
    values: Fields, end: dt.datetime, generation: Generation, timezone: str | None, now: dt.datetime | None
) -> Fields:
    """The expiry as ``generation`` takes it: 44-45's date and time in the zone, 46+'s window from now."""
    if generation.expiry == LOCAL_MINUTE:
        date, time = local_minute(end, timezone or "UTC")
        if end.second or end.microsecond:
            log.info(
                "expires_at %s rounded up to %s %s (%s): %s expires links on the minute",
                end.isoformat(), date, time, timezone, generation.label,
            )  # fmt: skip
        return values.changed(drop=("expires_at",), expiration_date=date, expiration_time=time)
    if generation.expiry == UTC_WINDOW and values.get("starts_at") is None:
        return values.changed(starts_at=(now or dt.datetime.now(dt.timezone.utc)).replace(microsecond=0))
    return values


def local_minute(moment: dt.datetime, timezone: str) -> tuple[str, str]:
    """(date, time) of an aware moment in ``timezone``, rounded up to the minute."""
    import pendulum

    local = pendulum.instance(moment).in_timezone(pendulum.timezone(timezone))
    if local.second or local.microsecond:
        local = local.replace(second=0, microsecond=0).add(minutes=1)
    return local.strftime("%Y-%m-%d"), local.strftime("%H:%M")
