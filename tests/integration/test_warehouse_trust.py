"""When the links' counters cannot be trusted, and what a long load tells while it runs (issue 43,
item 2), against the emulator.

An account-wide counter reset (as the upgrade to phpShort 46 does: every counter back to 0) makes
the counters say nothing that run: a link clicked as often since as its counter read at the last
load reads the same again, yet its new clicks are on the days to load. And a breakdown load's
progress counts its breakdown requests too: its last line comes after its last request.
"""

from __future__ import annotations

import datetime as dt
import re

from tests.integration.test_warehouse import link_load, rows, run, warehouse  # noqa: F401 - the fixture

UTC = dt.timezone.utc
DAY = dt.datetime(2026, 10, 6, tzinfo=UTC)  # weeks before the tests' real now


def at(days: float, hours: float = 0) -> dt.datetime:
    return DAY + dt.timedelta(days=days, hours=hours)


def interval(first: int, count: int = 1) -> tuple[dt.datetime, dt.datetime]:
    return at(first), at(first + count)


def test_an_account_wide_counter_reset_distrusts_every_counter(emu, warehouse):  # noqa: F811
    """Five links clicked once, seven three times; loaded. Every counter reset to 0, then one click
    each for the five: their counters read 1 again, what the last load saw. Their clicks are loaded."""
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-1), freeze=True)
    once = [emu.store.add_link(url=f"https://example.com/o{i}", alias=f"once{i}") for i in range(5)]
    often = [emu.store.add_link(url=f"https://example.com/t{i}", alias=f"often{i}") for i in range(7)]
    for link in once:
        emu.record_clicks(link["id"], at=at(0, 3), count=1)
    for link in often:
        emu.record_clicks(link["id"], at=at(0, 3), count=3)
    emu.clock.set(at(1, 0.5), freeze=True)
    first = run(link_load(interval=interval(0)))
    assert first["fetched"] == 12

    assert emu.reset_counters()["count"] == 12  # the upgrade: every counter 0, the statistics kept
    for link in once:
        emu.record_clicks(link["id"], at=at(1, 3), count=1)
    assert {int(link["clicks"]) for link in emu.store.links() if link["alias"].startswith("once")} == {1}
    emu.clock.set(at(2, 0.5), freeze=True)
    second = run(link_load(interval=interval(1)))
    loaded = {row for row in rows(warehouse) if row[1] == "2026-10-07"}
    assert loaded == {(link["id"], "2026-10-07", "UTC", 1) for link in once}  # before: empty (the five skipped)
    assert second["fetched"] == 12  # no counter trusted this run: every link listed
    assert second["requests"] == second["minimum_requests"] == 13  # the listing page and a request per link

    # The next run trusts the counters again: nothing moved, nothing fetched.
    emu.clock.set(at(3, 0.5), freeze=True)
    third = run(link_load(interval=interval(2)))
    assert third["fetched"] == 0


def test_a_breakdown_loads_last_progress_line_comes_after_its_last_request(emu, warehouse, monkeypatch):  # noqa: F811
    """Four links clicked on two days, loaded by country with a line at every step: the last line
    is told once every request was answered, and counts them all."""
    from airflow_provider_linkstats.drivers.warehouse import progress as progress_module

    monkeypatch.setattr(progress_module, "PROGRESS_EVERY", 0.0)
    emu.configure_account(timezone="UTC")
    emu.clock.set(at(-1), freeze=True)
    made = [emu.store.add_link(url=f"https://example.com/b{i}", alias=f"bd{i}") for i in range(4)]
    for link in made:
        for day in (0, 1):
            emu.record_clicks(link["id"], at=at(day, 3), count=2, country="US")
    emu.clock.set(at(2, 0.5), freeze=True)
    emu.stats.reset()

    told: list[tuple[str, int]] = []  # each progress line, with the service's requests answered by then

    class Recording:
        def __init__(self, log):
            self.log = log

        def info(self, message, *args):
            text = message % args
            if re.match(r"\d+ of \d+ ", text):
                told.append((text, emu.stats.count()))
            self.log.info(message, *args)

        def __getattr__(self, name):
            return getattr(self.log, name)

    from airflow_provider_linkstats.drivers.warehouse import LinkStatsLoad

    class RecordingLoad(LinkStatsLoad):
        def __init__(self, hook, log):
            super().__init__(hook, Recording(log))

    operator = link_load("by_country", interval=interval(0, 2), breakdown="country")
    operator.driver_class = lambda: RecordingLoad
    result = run(operator)
    assert result["requests"] == 1 + 4 + 8  # the page, a daily request per link, a breakdown per link and day
    assert told, "no progress line"
    last, answered = told[-1]
    assert answered == emu.stats.count() == result["requests"]  # before: 5 (the breakdowns came after it)
    assert last.startswith("12 of 12 requests")
