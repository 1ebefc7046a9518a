"""A time-dependent write checked by its own answer (issue 44, item 2; docs/operators.md).

A link's window is computed by the service's clock as this process measured it, and the record the
service answers with says whether that measurement held: its ``created_at`` (or ``updated_at``) is
the service's own "now" at the write. ``misclocked`` names what is wrong (a start after that moment
by more than the clock's margin, an end before it, or an end further from it than the duration
asked); the client then sends the window again (one PUT, by the clock the answer corrected:
``mend_fields``). What the user fixed (a ``starts_at``, an ``expires_at`` given as a moment) is
never judged against the write's moment, only what the client computed from its clock.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import logging
from collections.abc import Callable, Iterator, Mapping
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.generations import LOCAL_MINUTE
from airflow_provider_linkstats.client.records import link_timing, parse_timestamp
from airflow_provider_linkstats.client.validation import Fields, aware_moment, is_duration

# ``client`` below is a LinkstatsClient, not imported: api.py imports this module.
if TYPE_CHECKING:
    from airflow_provider_linkstats.client.generations import Generation
    from airflow_provider_linkstats.client.protocol import ApiRequest

log = logging.getLogger(__name__)

_ORIGIN = dt.datetime(2000, 1, 1, tzinfo=dt.timezone.utc)
# Called by the client with each request of this thread after its rate-limit slot: the request to
# send instead. A write with a duration counts it from there, not from before the wait.
AT_SEND: ContextVar[Callable[[ApiRequest], ApiRequest] | None] = ContextVar("linkstats_at_send", default=None)
_MENDING: ContextVar[bool] = ContextVar("linkstats_mending", default=False)  # a mend is not checked again


@contextlib.contextmanager
def counted_at_send(
    client: Any, fields: Mapping[str, Any], build: Callable[[Fields], ApiRequest]
) -> Iterator[list[Mapping[str, Any]]]:
    """Around one write of a link by ``client`` (a ``LinkstatsClient``): a duration's end is counted
    when its request is sent, after its rate-limit slot (``AT_SEND``), so a ``PT4M`` link lives 4
    minutes however long the wait; yields ``[the fields as last sent]``."""
    sent: list[Mapping[str, Any]] = [fields]
    if not isinstance(fields, Fields) or fields.resource is not LINKS or not fields.has_durations:
        yield sent
        return

    def rebuild(request: ApiRequest) -> ApiRequest:
        outer = AT_SEND.set(None)  # a clock read prepare may make is sent as it is
        try:
            sent[0] = client.prepare(LINKS, sent[0], fields.operation)
        finally:
            AT_SEND.reset(outer)
        return replace(request, form=build(sent[0]).form)  # type: ignore[arg-type]

    token = AT_SEND.set(rebuild)
    try:
        yield sent
    finally:
        AT_SEND.reset(token)


def checked(
    client: Any,
    operation: str,
    fields: Mapping[str, Any],
    record: dict[str, Any],
    generation: Generation | None,
    zone: str | None,
) -> dict[str, Any]:
    """``record`` (the answer to a create or update); its window mended at once (one PUT) when the
    answer shows it was computed with a wrong offset of the service's clock (``misclocked``), by the
    clock that answer corrected (its ``Date``: the answer to a write is the origin's own)."""
    if _MENDING.get() or not isinstance(fields, Fields) or fields.resource is not LINKS or "id" not in record:
        return record
    rounding = 60.0 if generation is not None and generation.expiry == LOCAL_MINUTE else 0.0
    wrong = misclocked(record, fields, client.clock.margin, operation=operation, rounding=rounding)
    if wrong is None:
        return record
    log.warning(
        "Linkstats: link id=%s was written with a wrong offset of the service's clock (%s); sending its window "
        "again by %s", record["id"], wrong, client.clock.describe(),
    )  # fmt: skip
    token = _MENDING.set(True)
    try:
        return client.update(LINKS, record["id"], mend_fields(fields), generation, zone=zone)
    finally:
        _MENDING.reset(token)


def computed_from_clock(fields: Mapping[str, Any]) -> bool:
    """Whether the write's window depends on the clock: a duration, or an end without a given start."""
    given = _given(fields)
    return given.get("expires_at") is not None and (is_duration(given["expires_at"]) or "starts_at" not in given)


def lifetime(fields: Mapping[str, Any]) -> dt.timedelta | None:
    """The duration ``expires_at`` was given as (``PT4M``), or None for a moment."""
    given = _given(fields).get("expires_at")
    if not is_duration(given):
        return None
    return aware_moment("expires_at", given, now=_ORIGIN) - _ORIGIN


def misclocked(
    record: Mapping[str, Any], fields: Mapping[str, Any], margin: float, *, operation: str, rounding: float = 0.0
) -> str | None:
    """Why ``record`` (the answer to a create or update of ``fields``) shows a window computed with a
    wrong clock offset, or None. ``margin``: the clock's (``ServiceClock.margin``); ``rounding``: the
    seconds a generation may add to an end (44-45 round it up to the minute)."""
    made = parse_timestamp(record.get("created_at" if operation == "create" else "updated_at"))
    if made is None or not computed_from_clock(fields):
        return None
    timing, slack = link_timing(record), dt.timedelta(seconds=margin + 1.0)  # whole seconds on both sides
    given = _given(fields)
    if timing.starts_at is not None and "starts_at" not in given and timing.starts_at > made + slack:
        return f"its window starts {_gap(timing.starts_at - made)} after the write, by the service's clock"
    if timing.ends_at is None:
        return None
    if timing.ends_at <= made:
        return f"its window ends {_gap(made - timing.ends_at)} before the write, by the service's clock"
    return _end_off(timing.ends_at, made, fields, slack + dt.timedelta(seconds=rounding), slack)


def _end_off(
    ends_at: dt.datetime, made: dt.datetime, fields: Mapping[str, Any], late: dt.timedelta, early: dt.timedelta
) -> str | None:
    """How far an end given as a duration lies from the write plus that duration, beyond ``late`` or ``early``."""
    duration = lifetime(fields)
    if duration is None:
        return None
    expected = made + duration
    if ends_at < expected - early or ends_at > expected + late:
        way = "after" if ends_at > expected else "before"
        return f"its end is {_gap(abs(ends_at - expected))} {way} {_given(fields)['expires_at']} from the write"
    return None


def _given(fields: Mapping[str, Any]) -> Mapping[str, Any]:
    """The fields as the user gave them (a duration not yet counted from the write)."""
    return fields.given if isinstance(fields, Fields) else fields


def mend_fields(fields: Mapping[str, Any]) -> dict[str, Any]:
    """What a PUT sends to put the window right: the end as the user gave it (a duration counts
    from the mend), and their start if they gave one (else the client's "now" is the start)."""
    given = _given(fields)
    return {k: given[k] for k in ("expires_at", "starts_at") if given.get(k) is not None}


def _gap(delta: dt.timedelta) -> str:
    seconds = abs(delta.total_seconds())
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.1f} min"
