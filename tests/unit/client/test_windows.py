"""A time-dependent write checked by its own answer (client/windows.py)."""

from __future__ import annotations

import datetime as dt

from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.validation import validate_fields
from airflow_provider_linkstats.client.windows import computed_from_clock, lifetime, mend_fields, misclocked

CREATED = dt.datetime(2030, 1, 1, 12, 0, 0, tzinfo=dt.timezone.utc)
FMT = "%Y-%m-%dT%H:%M:%S.000000Z"


def fields(**given):
    return validate_fields(LINKS, "create", {"url": "https://example.com/a", **given})


def record(start_offset: float | None, end_offset: float, *, key: str = "active_period_end_at") -> dict:
    end = CREATED + dt.timedelta(seconds=end_offset)
    out = {"id": 7, "created_at": CREATED.strftime(FMT), key: end.strftime(FMT)}
    if start_offset is not None:
        out["active_period_start_at"] = (CREATED + dt.timedelta(seconds=start_offset)).strftime(FMT)
    return out


def test_a_window_computed_with_the_right_offset_passes():
    asked = fields(expires_at="PT4M")
    assert misclocked(record(-2, 240), asked, 2.5, operation="create") is None
    assert misclocked(record(-3, 241), asked, 2.5, operation="create") is None


def test_a_window_ten_minutes_off_either_way_is_named():
    asked = fields(expires_at="PT4M")
    late = misclocked(record(600, 840), asked, 2.5, operation="create")  # the service stepped back
    assert late is not None and "starts 10.0 min after the write" in late
    dead = misclocked(record(-600, -360), asked, 2.5, operation="create")  # stepped ahead
    assert dead is not None and "ends 6.0 min before the write" in dead
    short = misclocked(record(-30, 210), asked, 2.5, operation="create")  # counted before a 30 s wait
    assert short is not None and "30 s before PT4M" in short


def test_what_the_user_fixed_is_not_judged_and_44_rounds_to_the_minute():
    start = (CREATED + dt.timedelta(days=1)).isoformat()
    given = fields(starts_at=start, expires_at=(CREATED + dt.timedelta(days=2)).isoformat())
    assert not computed_from_clock(given)
    assert misclocked(record(86400, 172800), given, 2.5, operation="create") is None  # a scheduled campaign
    asked = fields(expires_at="PT4M")
    rounded = record(None, 240 + 50, key="ends_at")  # 44-45: up to the minute
    assert misclocked(rounded, asked, 2.5, operation="create", rounding=60) is None
    assert misclocked(rounded, asked, 2.5, operation="create") is not None


def test_the_mend_sends_the_end_as_given_and_a_duration_counts_again():
    asked = fields(expires_at="PT4M", alias="a")
    assert lifetime(asked) == dt.timedelta(minutes=4)
    assert mend_fields(asked) == {"expires_at": "PT4M"}
    assert misclocked({"id": 7}, asked, 2.5, operation="create") is None  # no created_at: nothing tells
