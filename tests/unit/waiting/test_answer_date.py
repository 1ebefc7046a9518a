"""A wait decides by the answer in hand (issue 44, item 1): a record read says its link ended only
if its own answer's ``Date`` is at or after the end, whatever the clock as measured says; an end
the clock says has passed that the answers contradict keeps the wait at its interval (or, once, the
end by their own Date when sooner), logged."""

from __future__ import annotations

import datetime as dt
import logging
from email.utils import formatdate

from airflow_provider_linkstats.client.generations import PHPSHORT_46
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, drive
from airflow_provider_linkstats.waiting.feed import ExpiredFeed
from airflow_provider_linkstats.waiting.watch import END_GAP, Poll, Watch
from tests.unit.waiting.test_plans import NOW, Service, v49

T0 = NOW.timestamp()


class Dated(Service):
    """Every answer carries a ``Date`` ``behind`` seconds behind the round's time (a service whose
    clock was stepped back, or a proxy's old copy)."""

    def __init__(self, records: list[dict], behind: float) -> None:
        super().__init__(records, generation="49")
        self.behind = behind

    def answer(self, request: ApiRequest) -> ApiResponse:
        response = super().answer(request)
        date = formatdate(self.now.timestamp() - self.behind, usegmt=True)
        return ApiResponse(response.status, {**response.headers, "date": date}, response.body)


def watched(end: dt.datetime) -> Poll:
    record = v49(1, start=end - dt.timedelta(days=1), end=end)
    return Poll([Watch.from_inputs(link_id=record, existence_check_every=0)], interval=60)


def test_a_read_whose_date_is_before_the_end_does_not_fire_and_the_pace_stays_the_interval(caplog):
    end = NOW - dt.timedelta(seconds=10)  # passed by the clock the poll has (the worker's)
    poll, service = watched(end), Dated([v49(1, start=end - dt.timedelta(days=1), end=end)], behind=600)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_linkstats.waiting.watch"):
        result = drive(poll.round(T0), service)
        assert not result.expired  # before: fired, 590 s before the end by the answer's own Date
        assert len(service.sent) == 1 and poll.doubted
        assert poll.next_round(T0) == T0 + 60  # before: T0 + END_GAP, a read a second
        drive(poll.round(T0 + 30), service)  # within the minute: not said again
    said = [r.getMessage() for r in caplog.records if "not taken as ended" in r.getMessage()]
    assert len(said) == 1 and "link 1 first" in said[0] and "every 60 s" in said[0], said


def test_a_read_whose_date_is_at_the_end_fires():
    end = NOW - dt.timedelta(seconds=10)
    poll, service = watched(end), Dated([v49(1, start=end - dt.timedelta(days=1), end=end)], behind=5)
    result = drive(poll.round(T0), service)
    assert [r["id"] for w in result.expired for r in result.expired[w]] == [1]
    assert not poll.doubted and END_GAP < 60


def test_the_feed_decides_each_page_by_its_own_date():
    end = NOW - dt.timedelta(seconds=10)
    records = [v49(1, start=end - dt.timedelta(days=1), end=end)]
    assert drive(ExpiredFeed().walk(PHPSHORT_46), Dated(records, behind=600)) == []
    assert [r["id"] for r in drive(ExpiredFeed().walk(PHPSHORT_46), Dated(records, behind=0))] == [1]


def test_a_read_whose_date_puts_the_end_soon_is_followed_by_one_at_that_end_once(caplog):
    """Review of issue 44, gap b: the clock (here the worker's) says the end passed 10 s ago, the
    answer's own Date says it comes in 5 s (a clock stepped back 15 s, which one read does not
    prove). The next read is at the end by that Date, not an interval on; a second answer with the
    same fixed Date (a cached copy) gets no such read: the interval again, never a read a second."""
    end = NOW - dt.timedelta(seconds=10)
    poll, service = watched(end), Dated([v49(1, start=end - dt.timedelta(days=1), end=end)], behind=15)
    with caplog.at_level(logging.WARNING, logger="airflow_provider_linkstats.waiting.watch"):
        assert not drive(poll.round(T0), service).expired
        assert poll.doubted and poll.next_round(T0) == T0 + 5  # before: T0 + 60, the interval
        assert not drive(poll.round(T0 + 5), service).expired  # the same Date: nothing moved on
        assert poll.doubted and poll.next_round(T0 + 5) == T0 + 65
    said = [r.getMessage() for r in caplog.records if "not taken as ended" in r.getMessage()]
    assert len(said) == 1 and "reading again in 5 s (its end by that Date), then every 60 s" in said[0], said
