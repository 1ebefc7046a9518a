"""The service's clock from its answers' Date header (client/clock.py)."""

from __future__ import annotations

import datetime as dt
import logging

from airflow_provider_linkstats.client.clock import (
    SAFETY_MARGIN,
    STALE,
    STEPPED,
    ServiceClock,
    parse_http_date,
)


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
    assert clock.observe({"date": http_date(wall.value - 3600)}, wall.value - 0.05) == STEPPED
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


def test_watched_reads_keep_the_earliest_date_less_its_round_trip_stale_answers_too():
    """A warehouse load watches its answers: a step back the clock does not take yet (one answer),
    or a cached page, still says the service read that answer before the moment the first showed."""
    wall = FakeWall(1_800_000_000.0)
    clock = ServiceClock(wall=wall)
    clock.observe({"date": http_date(wall.value + 7)}, wall.value - 0.05)
    assert clock.reads_from is None  # not watching yet
    clock.watch_reads()
    wall.value += 1.0
    clock.observe({"date": http_date(wall.value + 7)}, wall.value - 0.5)
    assert clock.reads_from == int(wall.value + 7) - 0.5
    wall.value += 1.0
    clock.observe({"date": http_date(wall.value - 13)}, wall.value - 0.25)  # stepped back 20 s: stale for now
    assert abs(clock.offset - 7) < 1.5 and clock.reads_from == int(wall.value - 13) - 0.25
    clock.watch_reads()
    assert clock.reads_from is None  # a new load starts afresh


def _answer(clock: ServiceClock, wall: FakeWall, offset: float, method: str = "GET", age: str | None = None) -> str:
    """One answer of a service whose clock is ``offset`` from the worker's, 50 ms after its send."""
    sent = wall.value
    wall.value += 0.05
    headers = {"date": http_date(sent + 0.02 + offset), **({"age": age} if age else {})}
    return clock.observe(headers, sent, method=method)


def test_a_kept_offset_yields_to_a_second_answer_that_agrees_on_the_step(caplog):
    """The host's cache says +0.2 s; the service's clock was stepped 10 minutes back since. The first
    read of this process that contradicts it is a candidate step only (one proxy copy without
    ``Age`` says the same: issue 44's review, gap b): nothing moves and nothing is handed on. A
    second read, more than a second later, that agrees is the step: taken, logged and handed on."""
    wall = FakeWall(1_800_000_000.3)
    clock = ServiceClock(wall=wall)
    told: list[float] = []
    clock.stepped = lambda c: told.append(c.offset)
    assert clock.adopt_offset(0.2, 0.1, source="a task on this host")
    with caplog.at_level(logging.WARNING, logger="airflow_provider_linkstats.client.clock"):
        assert _answer(clock, wall, -600.0) == STALE  # before the review: STEPPED, and kept for the host
        assert abs(clock.offset - 0.2) < 0.01 and clock.adopted_from is not None and told == []
        wall.value += 0.5
        assert _answer(clock, wall, -600.0) == STALE  # within STEP_CONFIRM: two copies of one page may agree
        wall.value += 1.0
        assert _answer(clock, wall, -600.0) == STEPPED
    assert abs(clock.offset + 600) < 1.0 and clock.adopted_from is None
    assert len(told) == 1 and abs(told[0] + 600) < 1.0
    moved = [r.getMessage() for r in caplog.records if "moved" in r.getMessage()]
    assert len(moved) == 1 and "+0.2 s" in moved[0] and ("-599." in moved[0] or "-600." in moved[0]), moved


def test_a_kept_offset_yields_at_once_to_a_write_or_a_later_date_and_never_to_copies_of_a_page():
    """Against a kept offset a write's answer and a Date later than it allows are steps at once;
    copies of one cached page without ``Age`` (a fixed Date) never agree, so never move it."""
    wall = FakeWall(1_800_000_000.3)
    clock = ServiceClock(wall=wall)
    assert clock.adopt_offset(0.2, 0.1, source="a task on this host")
    kept = http_date(wall.value - 600)
    for _ in range(5):
        assert clock.observe({"date": kept}, wall.value - 0.05) == STALE
        wall.value += 1.5
    assert abs(clock.offset - 0.2) < 0.01 and clock.adopted_from is not None
    assert _answer(clock, wall, -600.0, method="POST") == STEPPED and abs(clock.offset + 600) < 1.0
    ahead = ServiceClock(wall=wall)
    assert ahead.adopt_offset(0.2, 0.1, source="a task on this host")
    assert _answer(ahead, wall, 600.0) == STEPPED and abs(ahead.offset - 600) < 1.0


def test_the_answer_to_a_write_is_a_step_at_once_a_read_needs_another_that_agrees():
    wall = FakeWall(1_800_000_000.3)
    clock = ServiceClock(wall=wall)
    for _ in range(3):
        assert _answer(clock, wall, 0.2) != STALE
        wall.value += 0.4
    # A read 10 minutes back: a cached page or a step, nothing tells yet.
    assert _answer(clock, wall, -600.0) == STALE
    assert abs(clock.offset - 0.2) < 1.0
    # A create's answer (no cache keeps one) says the same: taken at once, not 2 s later.
    wall.value += 0.1
    assert _answer(clock, wall, -600.0, method="POST") == STEPPED
    assert abs(clock.offset + 600) < 1.0
    # An answer to a read sent before that step arrived, stamped before it: in flight, it moves nothing.
    late = clock.observe({"date": http_date(wall.value - 0.04 + 0.2)}, wall.value - 0.2)
    assert late == STALE and abs(clock.offset + 600) < 1.0
    # Stepped ahead again: later than the clock allows, taken at once.
    wall.value += 0.5
    assert _answer(clock, wall, 0.0) == STEPPED and abs(clock.offset) < 1.0


def test_copies_of_a_cached_page_never_move_the_offset_however_many():
    """A proxy's copy without Age: its Date is fixed, so the offsets of its copies fall apart by a
    second a second and never agree; with Age it is stale at once. Fresh answers agree at once."""
    wall = FakeWall(1_800_000_000.3)
    clock = ServiceClock(wall=wall)
    _answer(clock, wall, 0.2)
    kept = http_date(wall.value - 300)
    for _ in range(20):
        wall.value += 0.7
        assert clock.observe({"date": kept}, wall.value - 0.05) == STALE
        assert _answer(clock, wall, 0.2 - 300, age="300") == STALE
    assert abs(clock.offset - 0.2) < 1.0
    # A real step back: a second read more than STEP_CONFIRM after the first agrees.
    assert _answer(clock, wall, -600.0) == STALE
    wall.value += 1.2
    assert _answer(clock, wall, -600.0) == STEPPED and abs(clock.offset + 600) < 1.0


def test_the_offset_since_a_moment_is_the_lowest_the_clock_had_since_a_step_ahead_included():
    """Records the service stamped before its clock stepped ahead carry the old clock: a moment before
    the step is on the service's clock by the lowest offset in effect since it (issue 44: a launch
    killed before a step ahead, its retry after it)."""
    wall = FakeWall(1_800_000_000.3)
    clock = ServiceClock(wall=wall)
    assert clock.offset_since(wall.value) == 0.0  # unknown: the worker's clock stands in
    assert clock.adopt_offset(-600.0, 0.1, age=5.0, source="a task on this host")  # measured 5 s ago
    first_try = wall.value - 60
    assert abs(clock.offset_since(first_try) + 600) < 1.0
    wall.value += 1.0
    assert _answer(clock, wall, 0.0) == STEPPED and abs(clock.offset) < 1.0  # stepped 10 minutes ahead
    assert abs(clock.offset_since(first_try) + 600) < 1.0  # -600 was in effect after the first try began
    assert abs(clock.offset_since(wall.value - 2)) < 1.5  # not since the kept offset's measurement
    wall.value += 1.0
    assert _answer(clock, wall, -300.0, method="POST") == STEPPED  # a step back: the current one is lowest
    assert abs(clock.offset_since(wall.value) + 300) < 1.0
