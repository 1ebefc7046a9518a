"""The streaming cleanup against the emulator and a server whose filters cannot be trusted.

Each test reads its outcome at the server: what was deleted, how many requests of which kind.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import signal
import subprocess
import sys
import textwrap
import time
from collections import Counter

import pendulum
import pytest

from tests.conftest import REPO, connection_json, run_operator


def seed_expired(emu, alias: str, **fields):
    """A link over by its click limit (1 click of 1), in the emulator's generation's fields."""
    fields["clicks_limit" if emu.links_version == "49" else "expiration_clicks"] = 1
    return emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, clicks=1, **fields)


def seed_dated(emu, alias: str, ends: pendulum.DateTime):
    """A link whose end time is ``ends`` (past: expired by date; phpShort 49 does not list it as Expired)."""
    if emu.links_version == "49":
        fields = {
            "active_period_start_at": ends.subtract(days=30).isoformat(),
            "active_period_end_at": ends.isoformat(),
        }
    else:
        fields = {"expiration_date": ends.format("YYYY-MM-DD"), "expiration_time": ends.format("HH:mm")}
    return emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, **fields)


def cleanup(**kwargs):
    from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator

    return LinkstatsCleanupLinksOperator(task_id="cleanup", **kwargs)


def deletes_by_id(emu) -> Counter:
    return Counter(
        (int(r["path"].rsplit("/", 1)[1]), r["status"]) for r in emu.stats.requests() if r["method"] == "DELETE"
    )


def listing_gets(emu) -> list[dict]:
    return [r for r in emu.stats.requests() if r["method"] == "GET" and r["path"].endswith("/links")]


def test_cleanup_deletes_old_expired_links_only_and_returns_counts(emu_any):
    emu = emu_any
    emu.clock.set(pendulum.now("UTC").subtract(days=45))
    old = [seed_expired(emu, f"old{i}")["id"] for i in range(230)]
    # Ended by date: phpShort 49's Expired filter leaves these out, the records say they are over.
    old += [seed_dated(emu, f"dated{i}", pendulum.now("UTC").subtract(days=35))["id"] for i in range(7)]
    live_old = [emu.store.add_link(url=f"https://example.com/live{i}", alias=f"live{i}")["id"] for i in range(40)]
    emu.clock.reset()
    fresh = [seed_expired(emu, f"fresh{i}")["id"] for i in range(5)]
    emu.stats.reset()

    result, _ = run_operator(cleanup(older_than_days=30, max_share=1))

    remaining = {link["id"] for link in emu.store.links()}
    assert remaining == set(live_old) | set(fresh)
    assert deletes_by_id(emu) == Counter({(i, 200): 1 for i in old})
    assert result["deleted"] == result["matched"] == len(old)
    assert result["kept"] == (5 if emu.links_version == "44" else 45)  # 49 walks every link
    assert len(result["sample_ids"]) == 20 and set(result["sample_ids"]) <= set(old)
    assert len(json.dumps(result)) < 2000
    # Pages: the walk reads each page of the listing once (the Expired listing on 44, all links on 49),
    # and each page holding matches once more, right before its deletes (the confirming read).
    listed = len(old) + len(fresh) + (0 if emu.links_version == "44" else len(live_old))
    pages = math.ceil(listed / 100)
    walk = [r for r in listing_gets(emu) if r["query"].get("sort_by") == ["id"]]
    assert len(walk) == 2 * pages == result["pages"] and result["confirming_reads"] == pages
    numbers = Counter(int(r["query"].get("page", ["1"])[0]) for r in walk)
    assert numbers == Counter({n: 2 for n in range(1, pages + 1)})


def test_a_dry_run_deletes_nothing_and_says_what_would_go(emu):
    emu.clock.set(pendulum.now("UTC").subtract(days=45))
    old = [seed_expired(emu, f"old{i}")["id"] for i in range(12)]
    emu.clock.reset()
    seed_expired(emu, "fresh")
    emu.stats.reset()

    result, _ = run_operator(cleanup(older_than_days=30, dry_run=True, sample_size=5))

    assert emu.stats.count(method="DELETE") == 0 and len(emu.store.links()) == 13
    assert result["dry_run"] is True and result["matched"] == 12 and result["deleted"] == 0
    assert result["sample_ids"] == old[:5]
    assert result["over_ceiling"] is True  # 12 of 13 links is more than half (max_share 0.5 by default)


@pytest.mark.parametrize(
    ("limits", "said"),
    [
        ({"max_deletes": 10, "max_share": None}, "more than its ceiling of 10 (max_deletes=10)"),
        ({"max_share": 0.5}, "more than its ceiling of 20 (max_share=0.5 of 40 links)"),
    ],
)
def test_a_cleanup_over_the_ceiling_fails_before_any_delete(emu, limits, said):
    from airflow.providers.common.compat.sdk import AirflowFailException

    for i in range(25):
        seed_expired(emu, f"x{i}")
    for i in range(15):
        emu.store.add_link(url=f"https://example.com/live{i}", alias=f"live{i}")
    emu.stats.reset()
    with pytest.raises(AirflowFailException, match="Raise max_deletes or max_share") as failure:
        run_operator(cleanup(**limits))
    assert said in str(failure.value) and "before any delete: 25 links match" in str(failure.value)
    assert emu.stats.count(method="DELETE") == 0 and len(emu.store.links()) == 40
    # Within the ceiling it runs.
    result, _ = run_operator(cleanup(max_deletes=25, max_share=None))
    assert result["deleted"] == 25 and len(emu.store.links()) == 15


def test_bad_arguments_fail_before_any_request(emu):
    from airflow_provider_linkstats.client.errors import LinkstatsInputError

    emu.stats.reset()
    for kwargs, field in [
        ({"expired": False}, "expired"),
        ({"max_share": 1.5}, "max_share"),
        ({"older_than_days": "a month"}, "older_than_days"),
        ({"search_by": "domain", "search": "x"}, "search_by"),
        ({"max_workers": 0}, "max_workers"),
    ]:
        with pytest.raises(Exception, match=f"'{field}'") as failure:
            run_operator(cleanup(**kwargs))
        assert isinstance(failure.value, LinkstatsInputError) or isinstance(
            failure.value.__cause__, LinkstatsInputError
        )
    assert emu.stats.count() == 0


def test_rules_search_space_and_domain_are_checked_on_each_record(emu):
    for i in range(6):
        seed_expired(emu, f"promo-{i}", space_id=3 if i % 2 else None)
    seed_expired(emu, "other-1", space_id=3)
    emu.stats.reset()
    result, _ = run_operator(cleanup(search="promo", search_by="alias", space_id=3, max_share=None))
    assert sorted(link["alias"] for link in emu.store.links()) == ["other-1", "promo-0", "promo-2", "promo-4"]
    assert result["deleted"] == 3


# -- a server whose filters cannot be trusted -------------------------------------------------------


class FilterBlindShort:
    """A phpShort that ignores every listing filter (a bug, or a proxy dropping the query string):
    each listing page holds all links, sorted by id; DELETE removes a link."""

    def __init__(self, shape: str, total_shown: int | None = None) -> None:
        self.shape = shape
        self.records: dict[int, dict] = {}
        self.total_shown = total_shown  # a meta.total that understates the listing (links added meanwhile)

    def add(self, link_id: int, *, ended: bool) -> None:
        now = pendulum.now("UTC")
        end = now.subtract(days=3) if ended else now.add(days=30)
        created = now.subtract(days=90).format("YYYY-MM-DDTHH:mm:ss.000000Z")
        record = {"id": link_id, "alias": f"a{link_id}", "url": "https://example.com/", "title": "Example",
                  "clicks": 0, "created_at": created, "domain": {"id": 1}, "space": None}  # fmt: skip
        if self.shape == "44":
            record.update(ends_at=end.format("YYYY-MM-DDTHH:mm:ss.000000Z"), expiration_clicks=None, disabled=0)
        else:
            start = now.subtract(days=60).format("YYYY-MM-DDTHH:mm:ss.000000Z")
            record.update(active_period_start_at=start, active_period_end_at=end.format("YYYY-MM-DDTHH:mm:ss.000000Z"),
                          clicks_limit=None, targets_type=None, redirect_password=False)  # fmt: skip
        self.records[link_id] = record

    def __call__(self, request: dict) -> tuple:
        path, query = request["path"], dict(request["query"])
        if request["method"] == "DELETE":
            link_id = int(path.rsplit("/", 1)[1])
            if self.records.pop(link_id, None) is None:
                return ("respond", 404, {"message": "Resource not found.", "status": 404})
            return ("respond", 200, {"id": link_id, "object": "link", "deleted": True, "status": 200})
        if path.endswith("/links"):
            per_page, page = int(query.get("per_page", 10)), int(query.get("page", 1))
            rows = [self.records[i] for i in sorted(self.records)]
            last = max(1, math.ceil(len(rows) / per_page))
            data = rows[(page - 1) * per_page : page * per_page]
            total = len(rows) if self.total_shown is None else self.total_shown
            meta = {"current_page": page, "last_page": last, "per_page": per_page, "total": total}
            return ("respond", 200, {"data": data, "meta": meta, "status": 200})
        return ("respond", 404, {"message": "Resource not found.", "status": 404})


@pytest.mark.parametrize("shape", ["44", "49"])
def test_nothing_live_is_deleted_when_the_expired_filter_lists_live_links(scripted, monkeypatch, shape):
    server = FilterBlindShort(shape)
    for link_id in range(1, 151):
        server.add(link_id, ended=link_id % 5 == 0)  # 30 ended, 120 live, all created 90 days ago
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, api_version=shape))

    result, _ = run_operator(cleanup(older_than_days=30, max_share=1))

    assert sorted(server.records) == [i for i in range(1, 151) if i % 5]  # every live link is still there
    deleted = [int(r["path"].rsplit("/", 1)[1]) for r in scripted.requests if r["method"] == "DELETE"]
    assert sorted(deleted) == list(range(5, 151, 5))
    assert result["deleted"] == 30 and result["kept"] == 120
    # On 44 the walk asked for status=2: the 120 live links it got were a wrong filter, and it says so.
    assert result["listed_not_matching"] == (120 if shape == "44" else 0)


def test_the_default_share_guards_against_a_filter_that_lists_every_link(scripted, monkeypatch):
    """Were the records to look expired too (a clock far ahead), the share ceiling still stops it."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    server = FilterBlindShort("44")
    for link_id in range(1, 41):
        server.add(link_id, ended=True)
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))
    with pytest.raises(AirflowFailException, match="before any delete: 40 links match"):
        run_operator(cleanup())
    assert len(server.records) == 40 and not [r for r in scripted.requests if r["method"] == "DELETE"]


def test_links_that_come_to_match_during_the_run_stop_it_before_the_delete_past_the_ceiling(scripted, monkeypatch):
    """The first page said 8 links: within max_deletes=10, so no counting walk; 25 match after all."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    server = FilterBlindShort("44", total_shown=8)
    for link_id in range(1, 26):
        server.add(link_id, ended=True)
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))
    with pytest.raises(AirflowFailException, match="stopped after 10 deletes, before the next") as failure:
        run_operator(cleanup(max_deletes=10, max_share=None))
    assert "more than its ceiling of 10 (max_deletes=10)" in str(failure.value)
    assert len([r for r in scripted.requests if r["method"] == "DELETE"]) == 10 and len(server.records) == 15


# -- a worker killed mid-run, then the retry ----------------------------------------------------------

RUNNER = textwrap.dedent(
    """
    import json, sys
    from airflow_provider_linkstats.operators.cleanup import LinkstatsCleanupLinksOperator
    from tests.conftest import run_operator

    result, _ = run_operator(LinkstatsCleanupLinksOperator(task_id="cleanup", max_share=1, max_workers=4))
    print(json.dumps(result))
    """
)


@pytest.mark.slow
def test_a_cleanup_killed_mid_run_and_retried_deletes_each_link_once(emu, tmp_path):
    expired = [seed_expired(emu, f"k{i}")["id"] for i in range(400)]
    live = [emu.store.add_link(url=f"https://example.com/live{i}", alias=f"live{i}")["id"] for i in range(50)]
    emu.stats.reset()
    emu.faults.set_latency(0.02)  # about 200 deletes a second on 4 threads: a kill lands mid-way
    env = {**os.environ, "PYTHONPATH": str(REPO), "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT": connection_json(emu.url)}
    try:
        worker = subprocess.Popen(
            [sys.executable, "-c", RUNNER], cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
            start_new_session=True,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while emu.stats.count(method="DELETE", status=200) < 100 and time.monotonic() < deadline:
            assert worker.poll() is None, worker.communicate()
            time.sleep(0.01)
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait()
        killed_at = emu.stats.count(method="DELETE", status=200)
        assert 100 <= killed_at < 400
        time.sleep(0.2)  # deletes the server still had in hand are answered into the void
        retry = subprocess.run(
            [sys.executable, "-c", RUNNER], cwd=REPO, env=env, capture_output=True, text=True, timeout=120
        )
    finally:
        emu.faults.set_latency(0)
    assert retry.returncode == 0, retry.stderr[-3000:]
    result = json.loads(retry.stdout.strip().splitlines()[-1])
    deletes = deletes_by_id(emu)
    answered = Counter(link_id for (link_id, status), n in deletes.items() if status == 200 for _ in range(n))
    assert answered == Counter({i: 1 for i in expired})  # each link deleted once
    assert not [key for key in deletes if key[1] not in (200, None)]  # no 404: nothing answered was re-sent
    assert {link["id"] for link in emu.store.links()} == set(live)
    # The retry deleted what was left: all but what the killed try had answered (up to 4 were in flight).
    assert 400 - killed_at - 4 <= result["deleted"] <= 400 - killed_at


# -- the service's clock decides, on fresh evidence (issue 31) ----------------------------------------


def log_text(caplog, capsys) -> str:
    """The task's log lines: Airflow 3 logs through structlog to stdout, Airflow 2 through logging."""
    return "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().out


def timed_lines(caplog, capsys) -> list[tuple[float, str]]:
    """(epoch seconds, text) of the task's log lines, in order."""
    import datetime as dt
    import re

    lines = [(record.created, record.getMessage()) for record in caplog.records]
    lines += [
        (dt.datetime.fromisoformat(line.split()[0].replace("Z", "+00:00")).timestamp(), line)
        for line in capsys.readouterr().out.splitlines()
        if re.match(r"^\d{4}-\d\d-\d\dT\S+ ", line)
    ]
    return sorted(lines)


@pytest.fixture
def emu49(emulators, monkeypatch):
    """The phpShort 49 emulator: its Expired filter misses links ended by date, so the walk covers all
    links and the records decide (where the clock matters)."""
    emulator = emulators("49")
    emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version="49"))
    yield emulator
    emulator.reset()


def test_links_live_by_the_services_clock_are_kept_when_it_is_behind(emu49, caplog, capsys):
    """The service's clock is 10 min behind the worker's: 5 links end in 5 min by its clock (5 min ago
    by the worker's). Before: deleted, 5 of 5 (the worker's clock decided). Now: kept."""
    import logging

    emu = emu49
    caplog.set_level(logging.INFO)
    service_now = pendulum.now("UTC").subtract(minutes=10)
    emu.clock.set(service_now)
    live = [seed_dated(emu, f"soon{i}", service_now.add(minutes=5))["id"] for i in range(5)]
    ended = [seed_dated(emu, f"over{i}", service_now.subtract(minutes=1))["id"] for i in range(3)]
    emu.stats.reset()

    result, _ = run_operator(cleanup(max_share=None))

    assert {link["id"] for link in emu.store.links()} == set(live)
    assert sorted(i for (i, _status) in deletes_by_id(emu)) == sorted(ended)
    assert result["deleted"] == 3 and result["kept"] == 5
    assert "10.0 min behind this worker's" in result["clock"]
    assert "'now' is the service's clock (10.0 min behind this worker's" in log_text(caplog, capsys)


class RedatingShort(FilterBlindShort):
    """FilterBlindShort whose links in ``redate`` get an end 30 days later right after the first read
    of their page is answered: the walk's read shows them ended, the confirming read does not."""

    def __init__(self, redate: set[int]) -> None:
        super().__init__("49")
        self.redate = redate
        self.reads: Counter = Counter()

    def __call__(self, request: dict) -> tuple:
        answer = copy.deepcopy(super().__call__(request))  # the answer as it was, before any re-dating
        if request["method"] == "GET" and request["path"].endswith("/links"):
            page = int(dict(request["query"]).get("page", 1))
            self.reads[page] += 1
            if self.reads[page] == 1:
                later = pendulum.now("UTC").add(days=30).format("YYYY-MM-DDTHH:mm:ss.000000Z")
                for link_id in self.redate & {r["id"] for r in answer[2]["data"]}:
                    self.records[link_id]["active_period_end_at"] = later
        return answer


def test_a_link_re_dated_after_its_page_was_read_is_kept_and_named(scripted, monkeypatch, caplog, capsys):
    """Before: deleted, 5 of 5 (the delete was decided from the walk's read). Now: kept, named."""
    import logging

    caplog.set_level(logging.INFO)
    redated = {7, 19, 120, 133, 150}
    server = RedatingShort(redated)
    for link_id in range(1, 151):
        server.add(link_id, ended=True)
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, api_version="49"))

    result, _ = run_operator(cleanup(max_share=None))

    assert sorted(server.records) == sorted(redated)  # the re-dated links are all still there
    deleted = sorted(int(r["path"].rsplit("/", 1)[1]) for r in scripted.requests if r["method"] == "DELETE")
    assert deleted == sorted(set(range(1, 151)) - redated)
    assert result["deleted"] == 145 and result["kept"] == result["changed"] == 5
    assert server.reads == Counter({1: 2, 2: 2})  # each page: the walk's read and one confirming read
    text = log_text(caplog, capsys)
    for link_id in redated:
        assert f"kept link {link_id} ('a{link_id}'): it matched when listed, but no longer" in text


class PagingShort(FilterBlindShort):
    """FilterBlindShort whose listing sends ``data`` only (no meta), and with ``ignore_page`` the first
    page whatever ``page`` asks (a proxy that drops it)."""

    def __init__(
        self, *, ignore_page: bool = False, meta: dict | None = None, page_size: int | None = None, keep_meta=False
    ) -> None:
        super().__init__("44")
        self.keep_meta = keep_meta  # the meta of its own paging, as it is
        self.ignore_page = ignore_page
        self.meta = meta
        self.page_size = page_size  # its own page size, whatever per_page asks

    def __call__(self, request: dict) -> tuple:
        if request["method"] == "GET" and request["path"].endswith("/links"):
            query = [(k, v) for k, v in request["query"] if not (k == "page" and self.ignore_page)]
            if self.page_size:
                query = [(k, str(self.page_size) if k == "per_page" else v) for k, v in query]
            request = {**request, "query": query}
        verb, status, body = super().__call__(request)
        if isinstance(body, dict) and "meta" in body and not self.keep_meta:
            body = {"data": body["data"], **({"meta": self.meta} if self.meta else {})}
        return verb, status, body


def listing_requests(scripted) -> list[dict]:
    return [r for r in scripted.requests if r["method"] == "GET" and r["path"].endswith("/links")]


@pytest.mark.parametrize("kwargs", [{"dry_run": True}, {"max_deletes": 1000, "max_share": None}])
def test_a_listing_without_meta_ends(scripted, monkeypatch, kwargs):
    """Before: the dry run and the counting walk before a ceiling read page 1 again and again."""
    server = PagingShort()
    for link_id in range(1, 251):
        server.add(link_id, ended=link_id % 5 != 0)  # 200 ended, 50 live
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))

    result, _ = run_operator(cleanup(**kwargs))

    assert result["matched"] == 200
    walks = 1 if kwargs.get("dry_run") else 2  # the count before the ceiling, then the deletes
    assert len(listing_requests(scripted)) <= walks * 2 * math.ceil(250 / 100) + 1
    if not kwargs.get("dry_run"):
        assert result["deleted"] == 200 and len(server.records) == 50


@pytest.mark.parametrize(
    "shape",
    [
        {"meta": {"current_page": 1, "last_page": 1_000_000, "per_page": 100, "total": 250}},  # a lying last_page
        {"meta": {"current_page": 1, "last_page": 1, "per_page": 100, "total": 250}},  # one that says too few
        {"page_size": 250},  # more rows than per_page asks, no meta
        {"page_size": 15, "keep_meta": True},  # fewer, with the meta of its own page size
    ],
    ids=["last_page-too-high", "last_page-too-low", "more-than-per_page", "fewer-than-per_page"],
)
def test_a_listing_whose_paging_is_off_is_walked_to_its_end_within_the_bound(scripted, monkeypatch, shape):
    server = PagingShort(**shape)
    for link_id in range(1, 251):
        server.add(link_id, ended=link_id % 5 != 0)  # 200 ended, 50 live
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))

    result, _ = run_operator(cleanup(max_share=None))

    assert result["deleted"] == 200 and sorted(server.records) == list(range(5, 251, 5))
    size = shape.get("page_size", 100)
    assert len(listing_requests(scripted)) <= 2 * (math.ceil(250 / size) + 2)


@pytest.mark.parametrize("meta", [None, {"current_page": 1, "last_page": 3, "per_page": 100, "total": 250}])
def test_a_listing_whose_pages_repeat_stops_naming_the_url(scripted, monkeypatch, meta):
    from airflow.providers.common.compat.sdk import AirflowFailException

    server = PagingShort(ignore_page=True, meta=meta)
    for link_id in range(1, 251):
        server.add(link_id, ended=False)
    scripted.set_default(server)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))
    with pytest.raises(AirflowFailException, match="the same 100 rows as page") as failure:
        run_operator(cleanup(dry_run=True))
    assert f"{scripted.url}/public/api/v1/links?" in str(failure.value)
    # At most: page 1, and without a total, the count of all links for max_share (a small page, then
    # the walk's first two pages), or the walk's page 3 and page 2.
    assert len(listing_requests(scripted)) <= 4 and not [r for r in scripted.requests if r["method"] == "DELETE"]


def test_the_clients_listing_walk_ends_on_pages_that_repeat(scripted, make_hook):
    from airflow_provider_linkstats.client import LINKS
    from airflow_provider_linkstats.client.paging import UntrustedListingError

    server = PagingShort(ignore_page=True)
    for link_id in range(1, 251):
        server.add(link_id, ended=False)
    scripted.set_default(server)
    hook = make_hook("links", scripted.url)
    with pytest.raises(UntrustedListingError, match="answered page 2 with the same 100 rows as page 1"):
        hook.client.list(LINKS)
    assert len(listing_requests(scripted)) == 2


def test_requests_stay_within_two_percent_of_the_minimum(emu):
    expired = [seed_expired(emu, f"m{i}")["id"] for i in range(450)]
    emu.stats.reset()
    result, _ = run_operator(cleanup(max_share=None))
    minimum = len(expired) + math.ceil(len(expired) / 100)
    assert result["deleted"] == 450 and emu.stats.count() <= minimum * 1.02
    assert emu.stats.count(method="DELETE") == 450 and result["confirming_reads"] == 5


def test_under_the_rate_limit_deletes_wait_no_longer_than_their_evidence_allows(
    emu, make_hook, monkeypatch, caplog, capsys
):
    """10 requests per 2 s, evidence at most 1 s old: the limiter holds deletes longer than that, so
    pages are read again before the rest; every link is deleted once, and the waits are told."""
    import logging

    from airflow_provider_linkstats.drivers.cleanup import StreamingCleanup

    monkeypatch.setattr(StreamingCleanup, "LOG_EVERY", 1.0)
    caplog.set_level(logging.INFO)
    expired = [seed_expired(emu, f"r{i}")["id"] for i in range(30)]
    emu.stats.reset()
    task = cleanup(max_share=None, evidence_max_age=1, max_workers=4)
    task.hook = make_hook("links", rate_limit_window=2.0)
    emu.limiter.configure(10, 2.0)
    try:
        result, _ = run_operator(task)
    finally:
        emu.limiter.configure(None)
    assert deletes_by_id(emu) == Counter({(i, 200): 1 for i in expired})
    assert result["deleted"] == 30 and result["evidence_age_max"] <= 1.0
    assert result["confirming_reads"] > 1  # the page was read again for the deletes held past 1 s
    lines = timed_lines(caplog, capsys)
    assert any("for the service's rate limit" in text for _, text in lines)
    # A progress line at least every LOG_EVERY (1 s here) while work is pending, from start to finish.
    said = ("cleanup of links matching", "matching links,", "cleanup finished in")
    stamps = [at for at, text in lines if any(phrase in text for phrase in said)]
    gaps = [later - earlier for earlier, later in itertools.pairwise(stamps)]
    assert len(stamps) >= 5 and max(gaps) <= 2.5, gaps  # 1 s apart, with room for a loaded machine


def test_evidence_max_age_is_checked_before_any_request(emu):
    from airflow_provider_linkstats.client.errors import LinkstatsInputError

    emu.stats.reset()
    for bad in (0, 4000, "soon"):
        with pytest.raises(Exception, match="'evidence_max_age'.*seconds from 1 to 3600") as failure:
            run_operator(cleanup(evidence_max_age=bad))
        assert isinstance(failure.value, LinkstatsInputError) or isinstance(
            failure.value.__cause__, LinkstatsInputError
        )
    assert emu.stats.count() == 0


def test_links_deleted_by_someone_else_during_the_walk_hide_no_expired_link(emu):
    """600 links, every other one expired (the Expired listing: 3 pages); while the cleanup walks it
    (oldest first, the last page first), someone else (a second cleanup) deletes expired links on
    pages already read and pages to come, which shifts the listing. Every expired link is gone at the
    end (none hidden by the shift), no live link is touched, and the walk's deletes are each sent once."""
    links = [seed_expired(emu, f"x{i}") if i % 2 else emu.store.add_link(url="https://example.com/l", alias=f"l{i}")
             for i in range(600)]  # fmt: skip
    live = {link["id"] for link in links[::2]}
    expired = [link["id"] for link in links[1::2]]
    foreign = {1: expired[:3] + expired[250:252], 3: expired[120:122], 2: expired[10:12] + expired[280:282]}
    for page, gone in foreign.items():
        emu.faults.after_page(page=page, delete=gone, sort="asc")
    emu.stats.reset()
    result, _ = run_operator(cleanup(max_share=None))
    left = {int(link["id"]) for link in emu.store.links()}
    assert left == live  # every expired link gone, every live one kept
    assert result["deleted"] == len(expired) - sum(map(len, foreign.values())) == 289
    assert all(n == 1 for n in deletes_by_id(emu).values())
    assert emu.faults.describe()["after_page"] == []  # every foreign delete happened during the walk


@pytest.mark.parametrize("dry_run", [False, True])
def test_a_link_that_moves_onto_page_1_while_the_walk_reads_the_others_is_still_deleted(emu49, dry_run):
    """phpShort 49 (the walk covers all links): 100 live links, then 150 expired. Once the first read
    (page 1) is answered, someone deletes 3 of its live links: the first 3 expired links move onto page 1.
    The backward walk reads page 3, then 2 (which no longer holds them), and ends with page 1: before,
    the first read's page 1 stood in for it (no match there, so no confirming read) and the 3 were left
    (a dry run counted 147 of 150); now page 1 is read again at the end (its confirming read, or afresh
    in a dry run: one request more), and every expired link is deleted (counted)."""
    live = [emu49.store.add_link(url="https://example.com/l", alias=f"live{i}")["id"] for i in range(100)]
    for i in range(150):
        seed_expired(emu49, f"gone{i}")
    emu49.faults.after_page(page=1, delete=live[:3], sort="asc")
    emu49.stats.reset()
    result, _ = run_operator(cleanup(max_share=None, dry_run=dry_run))
    assert emu49.faults.describe()["after_page"] == []
    if dry_run:
        assert result["matched"] == 150
        return
    left = {int(link["id"]) for link in emu49.store.links()}
    assert left == set(live[3:])  # before: the first 3 expired links left
    assert result["deleted"] == 150


@pytest.mark.parametrize("dry_run", [False, True])
def test_the_progress_is_told_every_unit_not_only_at_each_line(emu, monkeypatch, dry_run):
    """The rate is the units of the last minute over that minute: exact only when every unit is
    told. Before, the cleanup told its progress only at each line (every 10 s), so the minute could
    take in up to 10 s of work more (1.17/s for 1.0/s): here, with no line but the first and the
    last, the progress heard 0 and 30 only; now every count from 1 to 30."""
    from airflow_provider_linkstats.drivers import cleanup as driver
    from airflow_provider_linkstats.drivers import cleanup_progress

    told: list[int] = []

    class Recording(cleanup_progress.Progress):
        def update(self, done: int) -> None:
            told.append(done)
            super().update(done)

    monkeypatch.setattr(cleanup_progress, "Progress", Recording)
    monkeypatch.setattr(driver.StreamingCleanup, "LOG_EVERY", 3600.0)
    for i in range(30):
        seed_expired(emu, f"p{i}")
    result, _ = run_operator(cleanup(max_share=None, dry_run=dry_run))
    assert result["matched"] == 30
    assert set(range(1, 31)) <= set(told) and told == sorted(told)
