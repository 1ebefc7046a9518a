"""LinkstatsLinksExpiredEventTrigger: the AssetWatcher trigger that reports links as they expire.

Run directly with asyncio against the emulator, as the triggerer runs it: it never ends, yields
each expired link once, and nothing while nothing changes. The run under a real triggerer, with
Airflow's asset_state_store, is in tests/system/test_deployment.py.
"""

from __future__ import annotations

import asyncio
import json
import logging

import pytest

from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from airflow_provider_linkstats.triggers import links as trigger_module
from airflow_provider_linkstats.triggers.links import LinkstatsLinksExpiredEventTrigger
from airflow_provider_linkstats.waiting.feed import ExpiredFeed
from tests.conftest import API_KEY, connection_json
from tests.unit.triggers.test_poller import click, create_links

LISTING = "/public/api/v1/links"
CLASSPATH = "airflow_provider_linkstats.triggers.links.LinkstatsLinksExpiredEventTrigger"


@pytest.fixture
def links_conn(emu, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, default_domain_id=1))
    trigger_module._REPORTED_IN_MEMORY.clear()
    yield emu
    trigger_module._REPORTED_IN_MEMORY.clear()


class Watcher:
    """Runs the trigger's generator in the background and collects its events, as the triggerer does."""

    def __init__(self, trigger: LinkstatsLinksExpiredEventTrigger) -> None:
        self.trigger = trigger
        self.events: asyncio.Queue = asyncio.Queue()
        self.task: asyncio.Task | None = None

    async def __aenter__(self) -> Watcher:
        async def pump():
            async for event in self.trigger.run():
                await self.events.put(event.payload)
            await self.events.put("ENDED")

        self.task = asyncio.create_task(pump())
        return self

    async def __aexit__(self, *exc) -> None:
        assert self.task is not None
        self.task.cancel()
        await asyncio.gather(self.task, return_exceptions=True)

    async def next(self, limit: float = 10.0) -> list[int]:
        payload = await asyncio.wait_for(self.events.get(), limit)
        assert payload != "ENDED", "an event trigger must never end"
        assert set(payload) == {"links"}
        assert API_KEY not in json.dumps(payload)
        return sorted(record["id"] for record in payload["links"])

    async def silent(self, seconds: float) -> None:
        await asyncio.sleep(seconds)
        assert self.events.empty(), f"unexpected event: {self.events.get_nowait()}"


def listing_polls(emu) -> int:
    return sum(1 for r in emu.stats.requests() if r["path"] == LISTING and r["query"].get("status") == ["2"])


def test_sequence_expired_then_only_new_then_silence_then_new_after_cleanup(links_conn):
    emu = links_conn
    a, b, c, d, active = create_links(5, "seq", expiration_clicks=1)
    asyncio.run(click(emu.url, [a["alias"], b["alias"]]))
    hook = LinkstatsLinksHook()

    async def scenario():
        async with Watcher(LinkstatsLinksExpiredEventTrigger(poke_interval=0.1)) as watcher:
            first = await watcher.next()  # the links already Expired
            await click(emu.url, [c["alias"]])
            second = await watcher.next()  # only the new one
            polls = listing_polls(emu)
            await watcher.silent(0.6)  # nothing changed: nothing yielded, though it kept polling
            quiet_polls = listing_polls(emu) - polls
            for link in (a, b, c):  # the cleanup run deletes what it was told about
                await asyncio.to_thread(hook.delete_link, link["id"])
            await watcher.silent(0.4)
            await click(emu.url, [d["alias"]])
            third = await watcher.next()
            await watcher.silent(0.4)
            return first, second, third, quiet_polls

    first, second, third, quiet_polls = asyncio.run(scenario())
    assert first == [a["id"], b["id"]]
    assert second == [c["id"]]
    assert third == [d["id"]]
    assert quiet_polls >= 3
    assert active["id"] not in first + second + third


def test_each_poll_walks_the_expired_listing_once_with_the_filters(links_conn):
    emu = links_conn
    create_links(150, "walk", expiration_clicks=1)
    asyncio.run(click(emu.url, [f"walk{i}" for i in range(150)]))
    create_links(3, "other", expiration_clicks=1)
    asyncio.run(click(emu.url, ["other0", "other1", "other2"]))
    emu.stats.reset()

    async def scenario():
        trigger = LinkstatsLinksExpiredEventTrigger(poke_interval=0.1, search="walk", search_by="alias")
        async with Watcher(trigger) as watcher:
            first = await watcher.next()
            await watcher.silent(0.35)
            return first

    first = asyncio.run(scenario())
    assert len(first) == 150
    requests = emu.stats.requests()
    assert {r["path"] for r in requests} == {LISTING}  # api_version 44: no probe
    assert all(r["query"]["search"] == ["walk"] and r["query"]["search_by"] == ["alias"] for r in requests)
    pages = [r["query"].get("page", ["1"])[0] for r in requests]
    # ceil(150 / 100) = 2 requests a poll (the last poll may have been cut short by the cancel)
    assert len(pages) >= 4 and pages == (["1", "2"] * len(pages))[: len(pages)]


def test_kwargs_are_deterministic_plain_json_without_the_key():
    import airflow
    from airflow.triggers.base import BaseTrigger

    def build():
        return LinkstatsLinksExpiredEventTrigger(
            linkstats_conn_id="links_prod", poke_interval=300, search="spring", search_by="alias", domain_id=1
        )

    classpath, kwargs = build().serialize()
    assert classpath == CLASSPATH
    assert kwargs == {
        "linkstats_conn_id": "links_prod",
        "poke_interval": 300.0,
        "search": "spring",
        "search_by": "alias",
        "domain_id": 1,
        "space_id": None,
    }
    assert build().serialize() == (classpath, kwargs)  # no time stamps: Airflow's dedup sees one trigger
    assert LinkstatsLinksExpiredEventTrigger(**json.loads(json.dumps(kwargs))).serialize()[1] == kwargs
    assert API_KEY not in repr(build()) + json.dumps(kwargs)
    if airflow.__version__.startswith("2."):  # no asset watchers: a plain trigger, still importable
        assert isinstance(build(), BaseTrigger)
        return
    from airflow.triggers.base import BaseEventTrigger

    assert isinstance(build(), BaseEventTrigger)
    assert BaseEventTrigger.hash(classpath, kwargs) == BaseEventTrigger.hash(*build().serialize())


def test_a_restarted_run_in_the_same_process_repeats_nothing(links_conn):
    emu = links_conn
    a, b = create_links(2, "again", expiration_clicks=1)
    asyncio.run(click(emu.url, [a["alias"]]))

    async def scenario():
        async with Watcher(LinkstatsLinksExpiredEventTrigger(poke_interval=0.1)) as watcher:
            first = await watcher.next()
        # Airflow builds the trigger again from its kwargs (a run() that ended is started again).
        async with Watcher(LinkstatsLinksExpiredEventTrigger(poke_interval=0.1)) as watcher:
            await watcher.silent(0.4)
            await click(emu.url, [b["alias"]])
            second = await watcher.next()
        return first, second

    assert asyncio.run(scenario()) == ([a["id"]], [b["id"]])


class DictStateStore:
    """The accessor protocol Airflow 3.3 gives a watcher (``aget``/``aset``), kept in a dict.

    The real one (over the triggerer's supervisor channel) is exercised by the deployment test.
    """

    def __init__(self) -> None:
        self.values: dict = {}

    async def aget(self, key, default=None):
        return self.values.get(key, default)

    async def aset(self, key, value):
        assert value is not None
        self.values[key] = json.loads(json.dumps(value))  # what the metadata database keeps


def test_memory_goes_to_the_asset_state_store_and_survives_a_restart(links_conn):
    emu = links_conn
    a, b, c = create_links(3, "store", expiration_clicks=1)
    asyncio.run(click(emu.url, [a["alias"], b["alias"]]))
    store = DictStateStore()

    def watcher() -> Watcher:
        trigger = LinkstatsLinksExpiredEventTrigger(poke_interval=0.1)
        trigger.asset_state_store = store  # as the triggerer injects it before run()
        return Watcher(trigger)

    async def scenario():
        async with watcher() as first_run:
            first = await first_run.next()
        trigger_module._REPORTED_IN_MEMORY.clear()  # a new triggerer process: only the store remains
        async with watcher() as second_run:
            await second_run.silent(0.4)
            await click(emu.url, [c["alias"]])
            second = await second_run.next()
        return first, second

    assert asyncio.run(scenario()) == ([a["id"], b["id"]], [c["id"]])
    (value,) = store.values.values()
    assert value == {"listed": sorted([a["id"], b["id"], c["id"]]), "missed_once": []}
    assert trigger_module._REPORTED_IN_MEMORY == {}  # the store was used, not the process memory


def test_without_a_store_a_new_process_reports_the_still_expired_links_once_more(links_conn):
    emu = links_conn
    (a,) = create_links(1, "mem", expiration_clicks=1)
    asyncio.run(click(emu.url, [a["alias"]]))

    async def run_once():
        async with Watcher(LinkstatsLinksExpiredEventTrigger(poke_interval=0.1)) as watcher:
            return await watcher.next()

    assert asyncio.run(run_once()) == [a["id"]]
    trigger_module._REPORTED_IN_MEMORY.clear()  # the triggerer restarted (documented: one repeat)
    assert asyncio.run(run_once()) == [a["id"]]


def logged(caplog, capfd) -> str:
    """Log text of the test: stdlib records, and Airflow 3's structlog output (on stdout/stderr)."""
    out, err = capfd.readouterr()
    return "\n".join([out, err, *(r.getMessage() for r in caplog.records)])


def test_errors_are_logged_and_it_keeps_polling(links_conn, caplog, capfd):
    caplog.set_level(logging.WARNING)
    emu = links_conn
    (a,) = create_links(1, "err", expiration_clicks=1)
    asyncio.run(click(emu.url, [a["alias"]]))
    emu.faults.fail_next(2, 503)

    async def scenario():
        async with Watcher(LinkstatsLinksExpiredEventTrigger(poke_interval=0.1)) as watcher:
            return await watcher.next()

    assert asyncio.run(scenario()) == [a["id"]]
    text = logged(caplog, capfd)
    failures = {line for line in text.splitlines() if "Poll of the Expired listing failed" in line}
    assert failures and all("HTTP 503" in line for line in failures)
    assert emu.stats.count() >= 3  # two failed polls, then the one that answered
    assert API_KEY not in text


def test_a_bad_filter_is_reported_before_any_request_and_the_trigger_idles(links_conn, caplog, capfd):
    caplog.set_level(logging.ERROR)

    async def scenario():
        async with Watcher(LinkstatsLinksExpiredEventTrigger(poke_interval=0.1, search_by="colour")) as watcher:
            await watcher.silent(0.3)

    asyncio.run(scenario())
    text = logged(caplog, capfd)
    assert "Not watching for expired links" in text and "'search_by'" in text
    assert links_conn.stats.count() == 0


def test_a_link_missed_by_one_walk_is_not_reported_twice():
    feed = ExpiredFeed()
    assert [r["id"] for r in feed.news([{"id": 1}, {"id": 2}, {"id": 3}])] == [1, 2, 3]
    # A page shifted under the walk (a cleanup deleted earlier links meanwhile): 2 was skipped.
    assert feed.news([{"id": 1}, {"id": 3}]) == []
    assert feed.news([{"id": 1}, {"id": 2}, {"id": 3}]) == []  # back: still remembered
    assert feed.news([{"id": 3}]) == [] and feed.news([{"id": 3}]) == []  # 1 and 2 deleted: forgotten
    assert feed.dump() == {"listed": [3], "missed_once": []}  # only what is still Expired
    restored = ExpiredFeed()
    restored.load(feed.dump())
    assert restored.news([{"id": 3}, {"id": 4}]) == [{"id": 4}]
