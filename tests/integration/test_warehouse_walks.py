"""The warehouse load while the account moves under it (issue 36, items 1-3), against the emulator
and SQLite, and the link cases on a real PostgreSQL too (a private cluster, as
tests/integration/test_warehouse_postgres.py starts it): a link deleted while the listing is read
hides no other, a link deleted before its statistics are read is a link gone (not a failed load),
and a day is complete only when every answer used for it was read after it ended by the service's
clock.

The truth is the emulator's record of each click (``store.recorded_clicks``: a deleted link's clicks
go with it), per UTC day (phpShort 44 counts in UTC).
"""

from __future__ import annotations

import datetime as dt
import logging
import sqlite3
from dataclasses import dataclass
from typing import Any

import pytest

from tests.integration.test_warehouse import link_load, run, truth, warehouse  # noqa: F401 (fixture)
from tests.integration.test_warehouse_postgres import pg  # noqa: F401 (the fixture)

pytestmark = pytest.mark.xdist_group("postgres")  # one PostgreSQL cluster per worker that runs them


@dataclass
class Table:
    """Where a test loads: ``conn_id`` and table ``clicks``, its rows and its day flags."""

    conn_id: str
    read: Any  # SQL -> list of tuples

    def rows(self) -> set[tuple]:
        return {(r[0], str(r[1]), r[2], r[3]) for r in self.read("SELECT link_id, day, zone, clicks FROM clicks")}

    def flags(self) -> dict[str, int]:
        return {str(day): int(complete) for day, complete in self.read("SELECT day, complete FROM clicks_days")}

    def load(self, interval):
        return run(link_load(interval=interval, sql_conn_id=self.conn_id))


@pytest.fixture(params=["sqlite", "postgres"])
def table(request, tmp_path, monkeypatch):
    if request.param == "sqlite":
        path = request.getfixturevalue("warehouse")

        def read(sql: str) -> list[tuple]:
            with sqlite3.connect(path) as db:
                return db.execute(sql).fetchall()

        return Table("wh", read)
    hook = request.getfixturevalue("pg")
    return Table("pgwh", hook.get_records)


DAY = dt.datetime(2026, 10, 6, tzinfo=dt.timezone.utc)


def links_clicked_on_day(emu, count: int, *, skip: set[int] = frozenset()) -> list[int]:
    """``count`` links created the day before ``DAY``, each clicked once at 12:00 on ``DAY`` (but the
    indexes in ``skip``); returns their ids, oldest first."""
    emu.clock.set(DAY - dt.timedelta(hours=12), freeze=True)
    made = emu.store.seed_links(count, alias_prefix="walk-", url="https://example.com/walk")
    ids = list(range(made["first_id"], made["last_id"] + 1))
    at = (DAY + dt.timedelta(hours=12)).isoformat()
    emu.store.record_traffic([{"link_id": i, "at": at} for n, i in enumerate(ids) if n not in skip])
    return ids


def test_a_link_deleted_after_page_1_hides_no_other(emu, table):
    """150 links, newest first 100 a page; one of page 1 deleted once page 1 is answered. A walk by
    offset then starts page 2 one link further and never sees the link that moved up to page 1
    (before: 148 of the 149 clicked links loaded, the day marked complete); the load's walk reads
    the part already read at the listing's end, so every one of the 149 is seen, at 2 pages."""
    ids = links_clicked_on_day(emu, 150, skip={119})
    victim = ids[119]  # on page 1 newest first (ids 150..51), never clicked
    emu.clock.set(DAY + dt.timedelta(days=1, hours=1))  # the day is over by the service's clock
    emu.faults.after_page(page=1, delete=[victim])
    emu.stats.reset()
    report = table.load((DAY, DAY + dt.timedelta(days=1)))
    expected = truth(emu, "UTC")
    assert len(expected) == 149
    assert table.rows() == expected
    assert table.flags() == {"2026-10-06": 1}
    # The same 2 pages as a walk by offset. The table is new, so every link listed is fetched (a
    # counter of 0 may be a reset): the victim too, whose 404 is confirmed by its own (one /links more).
    assert emu.stats.count(path_prefix="/links") == 2 + 1
    assert report["gone"] == [victim]
    assert report["requests"] == report["minimum_requests"] + 1 == 2 + 150 + 1
    emu.clock.reset()


def test_a_link_deleted_before_its_statistics_is_a_link_gone_not_a_failed_load(emu, table, caplog, capsys):
    """A link the listing showed with new clicks is deleted before its statistics are read (404).
    Before: the load failed for good (0 rows written, a permanent error). Now the load succeeds,
    names the link, and its rows of the days it was loaded for stay as they were."""
    kept, other, victim = (emu.store.add_link(url=f"https://example.com/{n}", alias=f"g{n}")["id"] for n in range(3))
    noon = DAY + dt.timedelta(hours=12)
    emu.store.record_traffic([{"link_id": i, "at": noon.isoformat()} for i in (kept, other, victim)])
    emu.clock.set(DAY + dt.timedelta(days=1, hours=1))
    table.load((DAY, DAY + dt.timedelta(days=1)))
    before = table.rows()
    assert (victim, "2026-10-06", "UTC", 1) in before

    next_noon = noon + dt.timedelta(days=1)
    emu.store.record_traffic([{"link_id": i, "at": next_noon.isoformat(), "count": 2} for i in (kept, victim)])
    emu.clock.set(DAY + dt.timedelta(days=2, hours=1))
    emu.faults.after_page(page=1, delete=[victim])  # gone once the listing is read, before its statistics
    caplog.set_level(logging.INFO)
    emu.stats.reset()
    report = table.load((DAY + dt.timedelta(days=1), DAY + dt.timedelta(days=2)))
    assert report["gone"] == [victim]
    # 1 listing page, 2 statistics requests (one a 404), the victim's GET /links/{id} (404: gone indeed).
    assert emu.stats.count(path_prefix="/links") + emu.stats.count(path_prefix="/stats") == report["requests"] == 4
    text = "\n".join(r.getMessage() for r in caplog.records) + capsys.readouterr().out
    assert f"deleted after the listing read them (their statistics answered 404): {victim};" in text
    # The gone link's rows stay as they were; every other row is the truth (which lost the victim's clicks).
    assert table.rows() == truth(emu, "UTC") | {(victim, "2026-10-06", "UTC", 1)}
    assert (kept, "2026-10-07", "UTC", 2) in table.rows()
    assert table.flags() == {"2026-10-06": 1, "2026-10-07": 1}
    emu.clock.reset()


def test_a_website_deleted_before_its_statistics_is_a_website_gone(emu, warehouse):  # noqa: F811
    """The same for websites: one deleted once the listing is read; the load succeeds and names it."""
    from airflow_provider_linkstats.operators.warehouse import LinkstatsWebsiteStatsToWarehouseOperator

    emu.clock.set(DAY - dt.timedelta(days=1), freeze=True)
    kept, victim = (emu.store.add_website(domain=f"site{n}.example.com")["id"] for n in range(2))
    noon = (DAY + dt.timedelta(hours=12)).isoformat()
    emu.store.record_traffic(pageviews=[{"website_id": i, "at": noon, "page": "/"} for i in (kept, victim)])
    emu.clock.set(DAY + dt.timedelta(days=1, hours=1))
    emu.faults.after_page(page=1, delete=[victim], path_prefix="/websites")
    report = run(
        LinkstatsWebsiteStatsToWarehouseOperator(
            task_id="sites", sql_conn_id="wh", table="sites",
            data_interval_start=DAY.isoformat(), data_interval_end=(DAY + dt.timedelta(days=1)).isoformat(),
        )
    )  # fmt: skip
    assert report["gone"] == [victim]
    with sqlite3.connect(warehouse) as db:
        assert db.execute("SELECT website_id, day, pageviews FROM sites").fetchall() == [(kept, "2026-10-06", 1)]
    emu.clock.reset()


def test_a_statistics_404_for_a_link_that_still_exists_fails_the_load(emu, table):
    """A 404 from the statistics route while the link itself answers (a proxy, a route missing) is not
    a link gone: the load fails with the service's error, rather than write the day without the link."""
    from airflow.providers.common.compat.sdk import AirflowFailException

    link = emu.store.add_link(url="https://example.com/s", alias="s404")["id"]
    emu.store.record_traffic([{"link_id": link, "at": (DAY + dt.timedelta(hours=12)).isoformat()}])
    emu.clock.set(DAY + dt.timedelta(days=1, hours=1))
    emu.faults.fail_next(status=404, path_prefix="/stats")
    with pytest.raises(AirflowFailException, match="404"):
        table.load((DAY, DAY + dt.timedelta(days=1)))
    assert table.rows() == set()
    emu.clock.reset()


def test_a_listing_over_the_service_midnight_keeps_the_day_incomplete(emu, table):
    """The scheduler a little ahead: the run starts at 23:59:30 by the service's clock and its listing
    (150 links, 2 pages) ends a minute later. The newest link, read on page 1 at 23:59:30 with 0 clicks,
    is clicked 4 times at 23:59:45, after its page was read. Before: the day was marked complete from the
    time after the listing, so the next run never reloaded it (4 clicks lost for good). Now a day is
    complete only if every answer used for it was read after it ended: it is kept incomplete, the next
    run reloads it, and the table equals the truth."""
    ids = links_clicked_on_day(emu, 150, skip=set(range(1, 150)))  # only the oldest clicked, at noon
    early, late = ids[0], ids[-1]
    emu.clock.set(DAY + dt.timedelta(hours=23, minutes=59, seconds=30))
    emu.faults.after_page(page=1, advance=60)  # the listing runs over the service's midnight
    first = table.load((DAY, DAY + dt.timedelta(days=1)))
    assert first["days"] == ["2026-10-06"]
    assert table.flags() == {"2026-10-06": 0}  # before: 1 (complete)
    # The 4 clicks came at 23:59:45: after the listing read the link's counter, before midnight.
    at = (DAY + dt.timedelta(hours=23, minutes=59, seconds=45)).isoformat()
    emu.store.record_traffic([{"link_id": late, "at": at, "count": 4}])
    emu.clock.set(DAY + dt.timedelta(days=2, hours=1))
    second = table.load((DAY + dt.timedelta(days=1), DAY + dt.timedelta(days=2)))
    assert second["days"] == ["2026-10-06", "2026-10-07"]  # the incomplete day again
    assert table.rows() == truth(emu, "UTC") == {(early, "2026-10-06", "UTC", 1), (late, "2026-10-06", "UTC", 4)}
    assert table.flags() == {"2026-10-06": 1, "2026-10-07": 1}
    emu.clock.reset()


def test_the_complete_walk_over_http_misses_no_link_whatever_is_deleted_between_pages(emu):
    """350 links, 100 a page; after each page some links are deleted, among the pages read and those
    to come. The complete walk yields every link left at its end, each once, in the 4 pages a walk by
    offset reads; the same deletes during a walk by offset (newest first) hide links from it."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    def deletes_during(walk) -> tuple[list[int], set[int]]:
        emu.reset()
        made = emu.store.seed_links(350, alias_prefix="w-", url="https://example.com/w")
        first = made["first_id"]
        emu.faults.after_page(page=1, delete=[first + 300, first + 349, first + 10])  # read, read, to come
        emu.faults.after_page(page=3, delete=[first + 5, first + 320], sort="asc")
        emu.faults.after_page(page=2, delete=[first + 150, first + 1], sort="asc")
        emu.faults.after_page(page=2, delete=[first + 120, first + 260], sort="desc")
        emu.stats.reset()
        seen = [int(link["id"]) for link in walk(LinkstatsLinksHook())]
        return seen, {int(link["id"]) for link in emu.store.links()}

    seen, left = deletes_during(lambda hook: hook.iter_records({}, complete=True))
    assert left <= set(seen) and len(seen) == len(set(seen))
    assert emu.stats.count(path_prefix="/links") == 4
    by_offset, left = deletes_during(lambda hook: hook.iter_links())
    assert len(left - set(by_offset)) >= 2  # the walk by offset missed links that were there throughout


def moves_instead_of_deletes(emu, monkeypatch, moves: dict[int, dict]) -> None:
    """The emulator's ``after_page`` fault deletes records; for the ids in ``moves`` it writes the
    given fields instead (a link moved into or out of a space, its alias edited), as a person would
    through the API while the walk reads the pages."""
    from airflow_provider_linkstats.emulator.store_base import _as_form

    user, delete = emu.store.users()[0], emu.store.delete

    def move_instead(table, user_or_id, record_id=None):
        if table == "links" and isinstance(user_or_id, int) and user_or_id in moves:  # the fault's delete
            return emu.store.update("links", user, str(user_or_id), _as_form(moves[user_or_id]))
        return delete(table, user_or_id, record_id)

    monkeypatch.setattr(emu.store, "delete", move_instead)


def test_the_complete_walk_over_http_misses_no_link_whatever_enters_or_leaves_the_selection(emu, monkeypatch):
    """403 links with aliases ``w-0`` to ``w-402``, the walk filtered by ``search=w-`` (by alias).
    Three have their alias edited to ``x-...`` before the walk (400 in the selection) and back to
    ``w-...`` during it: one once the newest-first page 1 is answered, two together once
    oldest-first page 3 is; one more leaves once page 2 is. Each entering pushes the links above
    it a place, one of them past a page boundary onto a page read already: the walk of before
    missed 3 links that were there throughout (4 pages); the complete walk sees every one, each
    once: a page more for each of the 2 reads after which the selection grew (the page above read
    again), and one for the link leaving while page 3 was read again (a link pushed up may have
    gone back onto page 2, read before: read again too): 4 + 2 + 1."""
    from airflow_provider_linkstats.emulator.store_base import _as_form
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    made = emu.store.seed_links(403, alias_prefix="w-", url="https://example.com/w")
    ids = list(range(made["first_id"], made["last_id"] + 1))
    entering, leaving = [ids[5], ids[50], ids[120]], ids[30]
    user = emu.store.users()[0]
    for i in entering:
        emu.store.update("links", user, str(i), _as_form({"alias": f"x-{i}"}))
    moves = {i: {"alias": f"w-back-{i}"} for i in entering} | {leaving: {"alias": "x-gone"}}
    moves_instead_of_deletes(emu, monkeypatch, moves)
    emu.faults.after_page(page=1, delete=[ids[5]], sort="desc")
    emu.faults.after_page(page=3, delete=[ids[50], ids[120]], sort="asc")
    emu.faults.after_page(page=2, delete=[leaving], sort="asc")
    emu.stats.reset()
    walk = LinkstatsLinksHook().iter_records({"search": "w-", "search_by": "alias"}, complete=True)
    seen = [int(link["id"]) for link in walk]
    throughout = set(ids) - set(entering) - {leaving}
    assert sorted(throughout - set(seen)) == []  # before: 3 links
    assert len(seen) == len(set(seen))
    assert emu.stats.count(path_prefix="/links") == walk.pages == 4 + 2 + 1  # before: 4


def test_a_listing_without_a_total_says_that_a_link_entering_the_selection_can_hide_another(
    scripted, monkeypatch, caplog, capsys
):
    """A proxy strips ``meta`` (and ``links``): nothing tells that the listing grew, so the walk
    cannot see a link entering the selection push another past the pages read. It still finds the
    end and reads every link, and says so in its log, once (before: no word)."""
    from tests.conftest import connection_json

    links = {i: {"id": i, "alias": f"a{i}", "url": "https://example.com/", "clicks": 0} for i in range(1, 351)}

    def no_meta(request: dict) -> tuple:
        query = dict(request["query"])
        if request["method"] != "GET" or not request["path"].endswith("/links"):
            return ("respond", 404, {"message": "Resource not found.", "status": 404})
        size, page = int(query.get("per_page", 10)), int(query.get("page", 1))
        ordered = sorted(links, reverse=query.get("sort", "desc") == "desc")
        return ("respond", 200, {"data": [links[i] for i in ordered[(page - 1) * size : page * size]]})

    scripted.set_default(no_meta)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    with caplog.at_level(logging.WARNING):
        walk = LinkstatsLinksHook().iter_records({}, complete=True)
        seen = sorted(int(link["id"]) for link in walk)
    assert seen == list(range(1, 351)) and walk.walk.blind
    # Airflow 3 logs through structlog to stdout, 2.11 through logging (and prints): each counted alone
    phrase = "without a total (a proxy stripped 'meta'?)"
    logged = [r.getMessage() for r in caplog.records if phrase in r.getMessage()]
    printed = [line for line in capsys.readouterr().out.splitlines() if phrase in line]
    said = logged or printed
    assert max(len(logged), len(printed)) == 1 and "a record that entered the selection during it" in said[0]
