"""The plans of waiting (airflow_provider_linkstats/waiting), run with canned answers: no server.

Each test drives a plan with a ``call`` that answers from records held in the test, as a real
install would (404 for an unknown id, the listing's status filter as phpShort 44 or 49 applies
it), and looks at the requests the plan sent and what it decided.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import itertools
import json
from urllib.parse import urlencode

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsInputError, LinkstatsServerError
from airflow_provider_linkstats.client.generations import PHPSHORT_44, PHPSHORT_46
from airflow_provider_linkstats.client.protocol import ApiRequest, ApiResponse, adrive, drive, raise_for_status
from airflow_provider_linkstats.client.records import link_status, status_listing
from airflow_provider_linkstats.waiting.feed import ExpiredFeed
from airflow_provider_linkstats.waiting.plan import LinkGoneError, Pages, read_links
from airflow_provider_linkstats.waiting.watch import Poll, Watch

NOW = dt.datetime(2026, 5, 1, 12, 0, tzinfo=dt.timezone.utc)
T0 = NOW.timestamp()


def iso(moment: dt.datetime) -> str:
    return moment.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z")


def v44(link_id: int, *, ends: dt.datetime | None = None, limit: int = 0, clicks: int = 0) -> dict:
    return {
        "id": link_id,
        "alias": f"a{link_id}",
        "disabled": 0,
        "expiration_clicks": limit,
        "clicks": clicks,
        "ends_at": iso(ends) if ends else None,
    }


def v49(link_id: int, *, start: dt.datetime | None = None, end: dt.datetime | None = None, limit=None, clicks=0):
    return {
        "id": link_id,
        "alias": f"a{link_id}",
        "targets_type": None,
        "clicks_limit": limit,
        "clicks": clicks,
        "active_period_start_at": iso(start) if start else None,
        "active_period_end_at": iso(end) if end else None,
        "expires_at": None,
    }


class Service:
    """Answers like a real install from ``records``; ``generation`` sets what status=2 lists."""

    def __init__(self, records: list[dict], generation: str = "44", now: dt.datetime = NOW) -> None:
        self.records = {r["id"]: r for r in records}
        self.generation = generation
        self.now = now
        self.sent: list[ApiRequest] = []

    def __call__(self, request: ApiRequest) -> ApiResponse:
        self.sent.append(request)
        response = self.answer(request)
        raise_for_status(request, response)  # what the client's call does
        return response

    def answer(self, request: ApiRequest) -> ApiResponse:
        parts = request.path.strip("/").split("/")
        if parts[0] == "stats":
            return _json(422 if self.generation == "44" else 404, {"message": "x", "status": 404})
        if len(parts) == 2:
            record = self.records.get(int(parts[1]))
            return _json(200, {"data": record}) if record else _json(404, {"message": "Resource not found."})
        params = dict(request.params)
        rows = sorted(self.records.values(), key=lambda r: r["id"], reverse=params.get("sort") != "asc")
        status = int(params.get("status", 0))
        if status == 2:
            rows = [r for r in rows if self._listed_expired(r)]
        if params.get("search"):
            rows = [r for r in rows if params["search"] in r["alias"]]
        page, per_page = int(params.get("page", 1)), int(params.get("per_page", 10))
        last = max(1, -(-len(rows) // per_page))
        chunk = rows[(page - 1) * per_page : page * per_page]
        next_url = "https://x/api/v1/links?" + urlencode({"page": page + 1}) if page < last else None  # no status
        return _json(
            200, {"data": chunk, "links": {"next": next_url}, "meta": {"current_page": page, "last_page": last}}
        )

    def _listed_expired(self, record: dict) -> bool:
        if self.generation == "44":
            return link_status(record, self.now).name == "EXPIRED"
        limit = record.get("clicks_limit") or 0  # v49: status=2 lists only links that reached their click limit
        return bool(limit) and record["clicks"] >= limit

    def paths(self) -> list[str]:
        return [f"{r.path}?{'&'.join(f'{k}={v}' for k, v in r.params)}" if r.params else r.path for r in self.sent]


def _json(status: int, payload: object) -> ApiResponse:
    return ApiResponse(status, {"content-type": "application/json"}, json.dumps(payload).encode())


def run_round(poll: Poll, service: Service, at: dt.datetime = NOW):
    service.now = at
    return drive(poll.round(at.timestamp()), service)


# -- the stepper and the reads ---------------------------------------------------------------------


def test_sync_and_async_drivers_send_the_same_requests_and_return_the_same():
    records = [v44(i) for i in range(1, 8)]
    sync, aio = Service(records), Service(records)

    async def acall(request):
        return aio(request)

    assert drive(read_links([2, 5, 7, 99]), sync) == asyncio.run(adrive(read_links([2, 5, 7, 99]), acall))
    assert [r.describe() for r in sync.sent] == [r.describe() for r in aio.sent]


def test_read_links_gets_a_few_and_walks_the_all_listing_oldest_first_for_more():
    service = Service([v44(i) for i in range(1, 251)])
    assert set(drive(read_links([3, 9]), service)) == {3, 9}
    assert [r.path for r in service.sent] == ["/links/3", "/links/9"]
    service.sent.clear()
    found = drive(read_links([5, 150, 160, 170, 999]), service)
    assert found[999] is None and found[150]["id"] == 150  # 999 missed by the walk, then a 404
    # Pages built from our own filters (newest first before anything is known, stopping once every
    # id was seen), never from links.next.
    assert service.paths() == [
        "/links?status=0&per_page=100&sort_by=id&sort=desc",
        "/links?status=0&per_page=100&sort_by=id&sort=desc&page=2",
        "/links?status=0&per_page=100&sort_by=id&sort=desc&page=3",
        "/links/999",
    ]


def test_a_transient_error_leaves_the_plan_to_the_caller():
    def failing(request):
        raise LinkstatsServerError("busy", status=503, method=request.method, path=request.path)

    with pytest.raises(LinkstatsServerError):
        drive(read_links([1]), failing)


# -- end times: sleep, one read at the end, records refresh what is known ------------------------------


def test_a_link_with_an_end_costs_nothing_until_the_end_then_one_read():
    ends = NOW + dt.timedelta(minutes=5)
    service = Service([v44(1, ends=ends)])
    watch = Watch.from_inputs(link_id=v44(1, ends=ends))  # a create task's record: end known, no request
    poll = Poll([watch])
    assert poll.next_end() == ends.timestamp()
    for minute in range(5):
        assert not run_round(poll, service, NOW + dt.timedelta(minutes=minute)).expired
    assert service.sent == []
    result = run_round(poll, service, ends + dt.timedelta(seconds=1))
    assert result.expired[watch][0]["id"] == 1
    assert service.paths() == ["/links/1"]


@pytest.mark.parametrize("moved", [dt.timedelta(minutes=10), dt.timedelta(minutes=-3)])
def test_a_record_read_refreshes_an_end_moved_later_or_earlier(moved):
    ends = NOW + dt.timedelta(minutes=5)
    service = Service([v44(1, ends=ends + moved)])  # the service knows the new end
    watch = Watch.from_inputs(link_id=1, existence_check_every=2, known={"1": [ends.timestamp(), False]}, verified=True)
    poll = Poll([watch])
    run_round(poll, service)
    run_round(poll, service)  # the existence check (every 2nd round) reads the record
    assert service.paths() == ["/links/1"]
    assert poll.next_end() == (ends + moved).timestamp()
    if moved < dt.timedelta(0):  # moved earlier: it ends at the new time, not the old one
        assert run_round(poll, service, ends + moved + dt.timedelta(seconds=1)).expired


@pytest.mark.parametrize("generation", ["44", "49"])
def test_ends_close_together_are_confirmed_by_one_read_for_all(generation):
    ends = NOW + dt.timedelta(minutes=1)
    make = (
        (lambda i: v44(i, ends=ends + dt.timedelta(seconds=i)))
        if generation == "44"
        else (lambda i: v49(i, end=ends + dt.timedelta(seconds=i)))
    )
    records = [make(i) for i in range(1, 21)]
    service = Service(records, generation=generation)
    poll = Poll([Watch.from_inputs(link_id=r) for r in records])
    assert not run_round(poll, service).expired and service.sent == []
    result = run_round(poll, service, ends + dt.timedelta(seconds=25))
    assert len(result.expired) == 20
    # One page of the All listing, newest first: where the watched links are, on every version
    # (phpShort 46+ never lists an ended window under Expired).
    assert service.paths() == ["/links?status=0&per_page=100&sort_by=id&sort=desc"]


def fire_all(poll: Poll, service: Service, ends: dict[int, dt.datetime], start: float) -> tuple[list[int], list[float]]:
    """Run rounds when ``poll.next_round`` says, as the shared poller does, until every watch fired:
    the requests each round sent, and how long after its end each wait fired."""
    now, costs, delays = start, [], []
    while poll.watches:
        before = len(service.sent)
        result = run_round(poll, service, dt.datetime.fromtimestamp(now, dt.timezone.utc))
        for watch, records in result.expired.items():
            poll.watches.remove(watch)
            delays.append(now - ends[records[0]["id"]].timestamp())
        costs.append(len(service.sent) - before)
        now = poll.next_round(now)
    return costs, delays


def test_the_shared_poller_batches_end_confirmations_and_each_waits_at_most_the_batch():
    # 20 links ending one every 3 s (phpShort 49 keeps seconds), rounds every 5 s at most.
    ends = {i: NOW + dt.timedelta(seconds=60 + 3 * i) for i in range(1, 21)}
    records = [v49(i, start=NOW - dt.timedelta(hours=1), end=end) for i, end in ends.items()]
    service = Service(records, generation="49")

    def poll(batch: float) -> Poll:
        return Poll([Watch.from_inputs(link_id=r, existence_check_every=0) for r in records], interval=5, batch=batch)

    alone, alone_delays = fire_all(poll(0), service, ends, T0)
    service.sent.clear()
    batched, delays = fire_all(poll(7), service, ends, T0)
    # Each end confirmed at once: a read per poke interval in which something ended.
    assert sum(alone) >= 12 and max(alone_delays) <= 5
    # Batched: an end waits (7 s at most) for the ends after it, then one page confirms them all.
    assert sum(batched) <= 7 and max(delays) <= 7
    assert all(path.startswith("/links?status=0") for path in service.paths()[1:])


def test_a_lone_end_is_confirmed_at_once_even_when_batching():
    ends = NOW + dt.timedelta(minutes=1)
    service = Service([v49(1, end=ends)], generation="49")
    poll = Poll([Watch.from_inputs(link_id=v49(1, end=ends), existence_check_every=0)], interval=5, batch=7)
    assert poll.next_end() == poll.next_round(T0) == ends.timestamp()  # no other end to wait for
    costs, delays = fire_all(poll, service, {1: ends}, T0)
    assert sum(costs) == 1 and delays == [0.0]


def test_only_click_limits_are_polled_and_by_the_expired_listing():
    service = Service([v44(1, limit=5), v44(2, ends=NOW + dt.timedelta(hours=1))])
    clicks, date = (
        Watch.from_inputs(link_id=v44(1, limit=5)),
        Watch.from_inputs(link_id=v44(2, ends=NOW + dt.timedelta(hours=1))),
    )
    poll = Poll([clicks, date])
    run_round(poll, service)
    assert service.paths() == ["/links?status=2&per_page=100&search=a1&search_by=alias"]
    assert poll.next_end() is None  # a click limit needs polling: no sleeping through
    service.records[1]["clicks"] = 5
    assert list(run_round(poll, service).expired) == [clicks]


# -- phpShort 46+: windows, decided from the record ------------------------------------------------------


def test_v49_a_window_not_started_is_not_an_end_the_wait_goes_on_to_the_window_end():
    start, end = NOW + dt.timedelta(hours=1), NOW + dt.timedelta(hours=2)
    record = v49(1, start=start, end=end)
    assert link_status(record, NOW).name == "EXPIRED"  # what the service calls it before the start
    service = Service([record], generation="49")
    watch = Watch.from_inputs(link_id=1)
    poll = Poll([watch])
    assert not run_round(poll, service).expired  # read: not ended
    assert poll.next_end() == end.timestamp()
    assert not run_round(poll, service, start + dt.timedelta(minutes=1)).expired  # inside the window
    assert run_round(poll, service, end + dt.timedelta(seconds=1)).expired[watch][0]["id"] == 1


def test_v49_a_date_expiry_the_expired_listing_never_shows_is_found_from_the_record():
    record = v49(1, start=NOW - dt.timedelta(days=2), end=NOW - dt.timedelta(days=1))
    service = Service([record], generation="49")
    watch = Watch.from_inputs(link_id=1, alias="a1")
    assert [r["id"] for r in run_round(Poll([watch]), service).expired[watch]] == [1]
    assert service.paths() == ["/links/1"]


def test_v49_click_limits_are_still_polled_by_the_expired_listing():
    service = Service([v49(1, limit=3, clicks=3)], generation="49")
    watch = Watch.from_inputs(link_id=1, alias="a1", verified=True, known={"1": [None, True]})
    assert run_round(Poll([watch]), service).expired
    assert service.paths() == ["/links?status=2&per_page=100&search=a1&search_by=alias"]


def test_a_deleted_link_ends_its_own_wait_only():
    service = Service([v44(1, limit=2)])
    gone, alive = Watch.from_inputs(link_id=9), Watch.from_inputs(link_id=1)
    result = run_round(Poll([gone, alive]), service)
    assert isinstance(result.failed[gone], LinkGoneError) and "link 9 does not exist" in str(result.failed[gone])
    assert alive not in result.failed and not result.expired


# -- listings by status, and the expiry watcher ------------------------------------------------------------


def test_status_filter_is_the_servers_up_to_45_and_decided_from_records_from_46():
    assert status_listing({"status": 2}, PHPSHORT_44) == ({"status": 2}, None)
    sent, keep = status_listing({"status": 2, "search": "x"}, PHPSHORT_46)
    assert sent == {"status": 0, "search": "x"}
    now = dt.datetime.now(dt.timezone.utc)  # a listing decides at the time it is read
    ended = v49(1, end=now - dt.timedelta(minutes=1))
    inside = v49(2, start=now - dt.timedelta(hours=1), end=now + dt.timedelta(hours=1))
    assert keep(ended) and not keep(inside)
    _, active = status_listing({"status": 1}, PHPSHORT_46)
    assert active(inside) and not active(ended)
    with pytest.raises(LinkstatsInputError, match=r"'status': 3.*phpShort 46\+"):
        status_listing({"status": 3}, PHPSHORT_46)


@pytest.mark.parametrize("dialect, generation", [(PHPSHORT_44, "44"), (PHPSHORT_46, "49")])
def test_the_expiry_watcher_reports_ended_links_on_both_generations(dialect, generation, monkeypatch):
    from airflow_provider_linkstats.waiting import plan

    monkeypatch.setattr(plan, "now", lambda: T0)
    before, after = NOW - dt.timedelta(minutes=1), NOW + dt.timedelta(hours=1)
    if generation == "44":
        ended, clicked, live = v44(1, ends=before), v44(2, limit=1, clicks=1), v44(3, ends=after)
    else:  # a window not started yet is not reported: deleting it would cancel a scheduled campaign
        ended, clicked, live = (
            v49(1, end=before),
            v49(2, limit=1, clicks=1),
            v49(3, start=after, end=after + dt.timedelta(hours=1)),
        )
    service = Service([ended, clicked, live], generation=generation)
    feed = ExpiredFeed()
    records = drive(feed.walk(dialect), service)
    assert sorted(r["id"] for r in records) == [1, 2]
    assert dict(service.sent[0].params)["status"] == ("2" if generation == "44" else "0")


def test_a_walk_starts_at_the_end_nearest_to_what_it_wants_and_a_shifted_page_costs_only_a_get():
    service = Service([v44(i) for i in range(1, 501)])
    pages = Pages()
    drive(read_links([450, 460, 470, 480], pages=pages), service)  # nothing known: newest first, 1 page
    assert [dict(r.params)["sort"] for r in service.sent] == ["desc"] and pages.newest == 500
    service.sent.clear()
    drive(read_links(range(1, 300), pages=pages), service)  # among the oldest: oldest first, learning pages
    assert [dict(r.params)["sort"] for r in service.sent] == ["asc"] * 3
    assert pages.first_ids == {1: 1, 2: 101, 3: 201}
    service.sent.clear()
    assert set(drive(read_links([210, 220, 230, 240], pages=pages), service)) == {210, 220, 230, 240}
    assert [dict(r.params).get("page") for r in service.sent] == ["2", "3"]  # one page early, for safety
    for gone in range(1, 201):  # a cleanup deleted 200 older links: the pages shifted by two
        del service.records[gone]
    service.sent.clear()
    found = drive(read_links([205, 210, 215, 220], pages=pages), service)
    assert all(found[i]["id"] == i for i in (205, 210, 215, 220))  # missed by the walk: read one by one
    assert [r.path for r in service.sent] == ["/links", "/links"] + [f"/links/{i}" for i in (205, 210, 215, 220)]
    assert pages.first_ids == {}  # relearnt from page 1 next time


# -- bounded staleness: a wait sleeping towards a known end still re-reads (docs/waiting.md) -------------


def test_the_staleness_bound_is_the_check_period_capped_and_never_under_one_interval():
    from airflow_provider_linkstats.waiting.watch import STALENESS_CAP, staleness_bound

    assert STALENESS_CAP == 3600
    assert staleness_bound(5, 10) == 50  # poke_interval x existence_check_every
    assert staleness_bound(60, 10) == 600
    assert staleness_bound(600, 10) == 3600  # capped
    assert staleness_bound(5, 0) == 3600  # no periodic check asked for: the cap alone
    assert staleness_bound(7200, 10) == 7200  # never more often than the poke interval
    assert staleness_bound(0, 10) == 3600  # no pace known (a Poll built without one): the cap


def run_until_over(poll: Poll, service: Service, start: float, change_at: float, change, limit: float):
    """Rounds when ``poll.next_round`` says (as the sensor and the shared poller pace them), the
    service's records changed by ``change()`` once the clock passes ``change_at``. Returns the time
    and the result of the round that ended the wait (or None at ``limit``) and the rounds' times."""
    now, changed, times = start, False, []
    while now <= limit:
        if not changed and now >= change_at:
            change()
            changed = True
        times.append(now)
        result = run_round(poll, service, dt.datetime.fromtimestamp(now, dt.timezone.utc))
        if result.expired or result.failed:
            return now, result, times
        now = poll.next_round(now)
    return None, None, times


@pytest.mark.parametrize("batch", [0.0, 7.0])  # a sensor's poll, the shared poller's
@pytest.mark.parametrize("change", ["earlier", "later", "deleted"])
def test_a_wait_sleeping_towards_a_far_end_notices_a_change_within_the_bound(change, batch):
    interval, every = 5.0, 10  # the bound: 50 s
    old_end = NOW + dt.timedelta(days=2)
    service = Service([v49(1, start=NOW - dt.timedelta(days=1), end=old_end)], generation="49")
    watch = Watch.from_inputs(link_id=dict(service.records[1]), existence_check_every=every)  # a create's record
    poll = Poll([watch], interval=interval, batch=batch)
    assert poll.bound() == 50
    change_at = T0 + 1234.5  # while it sleeps, between two reads
    new_end = {"earlier": NOW + dt.timedelta(seconds=1240), "later": old_end + dt.timedelta(days=1)}.get(change)

    def apply() -> None:
        if change == "deleted":
            del service.records[1]
        else:
            service.records[1]["active_period_end_at"] = iso(new_end)

    at, result, times = run_until_over(poll, service, T0, change_at, apply, limit=T0 + 5 * 86400)
    # It never slept longer than the bound, and read once per bound: about 3,456 reads in 2 days
    # (what keeps a wait of days from being noticed only at its end).
    assert max(b - a for a, b in itertools.pairwise(times)) <= 50
    if change == "earlier":
        assert list(result.expired) == [watch] and at <= change_at + 50
    elif change == "deleted":
        assert isinstance(result.failed[watch], LinkGoneError) and at <= change_at + 50
    else:  # moved later: the old end passes without firing, and it fires at the new end
        assert list(result.expired) == [watch] and new_end.timestamp() <= at <= new_end.timestamp() + 50
    reads_per_day = sum(1 for t in times if t < T0 + 86400)
    assert reads_per_day <= 86400 / 50 + 2


def test_a_check_rides_on_the_confirmation_page_that_holds_every_pending_link():
    # 20 waits ending one every 3 s from 60 s on (phpShort 49 keeps seconds), paced as the shared
    # poller paces them (5 s, batches of 7 s, bound 50 s): the bound forces one read before the
    # first end; every confirmation after it reads the page that holds all the pending links, so it
    # is the periodic check too and no round wakes for a check alone.
    ends = {i: NOW + dt.timedelta(seconds=60 + 3 * i) for i in range(1, 21)}
    records = [v49(i, start=NOW - dt.timedelta(hours=1), end=end) for i, end in ends.items()]
    service = Service(records, generation="49")
    poll = Poll([Watch.from_inputs(link_id=dict(r)) for r in records], interval=5, batch=7)
    costs, delays = fire_all(poll, service, ends, T0)
    assert sum(costs) <= 8 and max(delays) <= 7
    assert costs[1] == 1  # the round at the bound (50 s): one page for all 20
    assert all(path.startswith("/links?status=0") for path in service.paths())


def test_the_bound_counts_from_the_last_read_of_every_pending_link_not_from_the_last_round():
    ends = NOW + dt.timedelta(days=1)
    service = Service([v44(1, limit=5), v44(2, ends=ends)])
    clicks = Watch.from_inputs(link_id=v44(1, limit=5), existence_check_every=10)
    date = Watch.from_inputs(link_id=v44(2, ends=ends), existence_check_every=10)
    poll = Poll([clicks, date], interval=5)
    now, reads = T0, []
    while now < T0 + 200:  # the click limit is polled every 5 s; the records are read every 50 s
        before = len(service.sent)
        run_round(poll, service, dt.datetime.fromtimestamp(now, dt.timezone.utc))
        reads += [now - T0 for r in service.sent[before:] if r.path == "/links" and dict(r.params)["status"] == "0"]
        reads += [now - T0 for r in service.sent[before:] if r.path.startswith("/links/")]
        now = poll.next_round(now)
    assert sorted(set(reads)) == [50, 100, 150]


def test_an_end_before_the_interval_is_over_is_read_at_the_end_not_an_interval_on():
    """Issue 37: with poke_interval 60 the next round came 60 s after the last one even when the
    end was 5 s away; and a read that found the end not passed by its corrected clock waited a
    whole interval again."""
    from airflow_provider_linkstats.waiting.watch import END_GAP, Poll, Watch

    watch = Watch([7], single=True, verified=True, known={7: (1_000.0, False)})
    poll = Poll([watch], interval=60.0)
    assert poll.next_round(995.0) == 1_000.0  # the end (no clock: the worker's), not 1055
    assert poll.next_round(999.8) == 999.8 + END_GAP  # just read and not passed yet: a second on
    far = Poll([Watch([8], single=True, verified=True, known={8: (5_000.0, False)})], interval=60.0)
    assert far.next_round(995.0) == 5_000.0  # an end past the interval: slept towards, as before
