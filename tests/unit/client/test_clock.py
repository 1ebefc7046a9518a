"""The service's clock from its answers' Date header (client/clock.py)."""

from __future__ import annotations

import datetime as dt
import logging

from airflow_provider_linkstats.client.clock import SAFETY_MARGIN, ServiceClock, parse_http_date


class FakeWall:
    """The worker's clock, moved by hand."""

    def __init__(self, start: float) -> None:
        self.value = start

    def __call__(self) -> float:
        return self.value


def http_date(epoch: float) -> str:
    from email.utils import formatdate

    return formatdate(epoch, usegmt=True)


def test_parse_http_date_reads_rfc_7231_and_refuses_junk():
    assert (
        parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT")
        == dt.datetime(1994, 11, 6, 8, 49, 37, tzinfo=dt.timezone.utc).timestamp()
    )
    assert parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT") is not None  # RFC 850, still legal to receive
    for junk in (None, "", "yesterday", "Sun, 99 Nov 1994 08:49:37 GMT"):
        assert parse_http_date(junk) is None


def test_unknown_until_the_service_answers_then_the_worker_clock_is_corrected():
    wall = FakeWall(1_800_000_000.0)
    clock = ServiceClock(wall=wall)
    assert not clock.known and clock.offset == 0.0
    assert clock.time() == wall.value  # the worker's clock stands in
    # The service is 600 s behind; its Date is stamped to the second.
    sent = clock.stamp()
    wall.value += 0.2
    clock.observe({"date": http_date(wall.value - 600)}, sent)
    assert clock.known
    assert -601.5 < clock.offset < -599.0
    assert abs(clock.now().timestamp() - (wall.value - 600)) < 1.5


def test_answers_narrow_the_offset_and_a_stepped_clock_starts_afresh():
    wall = FakeWall(1_800_000_000.0)
    clock = ServiceClock(wall=wall)
    true_offset = -600.25
    for _ in range(6):  # answers at different fractions of a second narrow the interval
        wall.value += 1.37
        sent = wall.value
        wall.value += 0.05
        clock.observe({"Date": http_date(int(sent + 0.02 + true_offset))}, sent)
    assert clock.uncertainty < 0.5
    assert abs(clock.offset - true_offset) <= clock.uncertainty + 0.06
    # The server's clock was stepped forward by an hour: the old interval no longer overlaps.
    wall.value += 2
    clock.observe({"date": http_date(wall.value + 3600)}, wall.value - 0.1)
    assert abs(clock.offset - 3600) < 1.5


def test_the_margin_is_the_stated_one_plus_what_is_not_known():
    wall = FakeWall(1_800_000_000.5)
    clock = ServiceClock(wall=wall)
    assert clock.margin == SAFETY_MARGIN
    clock.observe({"date": http_date(wall.value)}, wall.value - 3.0)  # a slow answer: a wide interval
    assert clock.margin > SAFETY_MARGIN + 1.5
    assert clock.settled_now() < clock.now() - dt.timedelta(seconds=SAFETY_MARGIN)


def test_a_large_skew_is_logged_once(caplog):
    wall = FakeWall(1_800_000_000.0)
    clock = ServiceClock(wall=wall, name="connection 'links'")
    with caplog.at_level(logging.WARNING, logger="airflow_provider_linkstats.client.clock"):
        for _ in range(3):
            clock.observe({"date": http_date(wall.value - 600)}, wall.value)
    warnings = [r.getMessage() for r in caplog.records]
    assert len(warnings) == 1
    assert "connection 'links'" in warnings[0] and "behind" in warnings[0] and "10.0 min" in warnings[0]
    assert "behind" in clock.describe()


def test_answers_without_a_usable_date_teach_nothing():
    clock = ServiceClock()
    clock.observe({}, 0.0)
    clock.observe({"date": "not a date"}, 0.0)
    clock.observe(None, 0.0)
    assert not clock.known


# -- issue 37: a cache's copy is a stale page, not a clock step; an offset measured elsewhere --------


def test_a_cached_copy_teaches_nothing_and_is_stale_while_a_confirmed_step_back_is_taken():
    from airflow_provider_linkstats.client.clock import FRESH, STALE

    wall = FakeWall(1_800_000_000.3)
    clock = ServiceClock(wall=wall)
    assert clock.observe({"date": http_date(wall.value)}, wall.value - 0.05) == FRESH
    offset = clock.offset
    # A proxy serves a page it kept 5 minutes: before, the clock "stepped back" five minutes.
    kept = http_date(wall.value - 300)
    wall.value += 1.0
    assert clock.is_fresh({"date": kept}, wall.value) is False
    assert clock.observe({"date": kept}, wall.value - 0.05) == STALE
    assert clock.offset == offset
    # An Age header says the same, whatever the Date.
    assert clock.observe({"date": http_date(wall.value), "age": "12"}, wall.value) == STALE
    assert clock.is_fresh({"date": http_date(wall.value), "age": "12"}, wall.value) is False
    assert clock.is_fresh({"date": http_date(wall.value), "age": "0"}, wall.value - 0.05) is True  # a cache's miss
    assert clock.is_fresh({}, wall.value) is None  # no Date: nothing tells
    # The server's clock really went back an hour: two answers 3 s apart agree, so it is taken.
    wall.value += 1.0
    assert clock.observe({"date": http_date(wall.value - 3600)}, wall.value - 0.05) == STALE
    wall.value += 3.0
    assert clock.observe({"date": http_date(wall.value - 3600)}, wall.value - 0.05) == FRESH
    assert abs(clock.offset + 3600) < 1.5


def test_a_fresh_answer_within_the_same_second_is_not_taken_for_stale():
    wall = FakeWall(1_800_000_000.1)
    clock = ServiceClock(wall=wall)
    clock.observe({"date": http_date(wall.value)}, wall.value - 0.02)
    wall.value += 0.5  # same whole second: the same Date, and fresh
    assert clock.is_fresh({"date": http_date(wall.value)}, wall.value - 0.02) is True


def test_an_offset_measured_elsewhere_is_widened_by_its_age_and_yields_to_the_first_answer():
    from airflow_provider_linkstats.client.clock import DRIFT

    wall = FakeWall(1_800_000_000.0)
    clock = ServiceClock(wall=wall)
    assert clock.adopt_offset(-600.0, 0.3, age=1000.0, source="a task on this host")
    assert clock.known and clock.offset == -600.0
    assert abs(clock.uncertainty - (0.3 + DRIFT * 1000)) < 1e-9
    assert not clock.adopt_offset(5.0, 0.1)  # one measurement at a time
    assert not ServiceClock(wall=wall).adopt_offset(float("nan"), 0.1)
