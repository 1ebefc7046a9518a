"""The shared poller: many LinkstatsLinkExpiredTriggers of one connection, one poll per interval.

The triggers run in one event loop, as in a triggerer, against the emulator over real HTTP.
Requests are counted by the emulator; links are created and clicked over HTTP as a user would.
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
import time

import httpx
import pytest

from airflow_provider_linkstats.emulator import Emulator
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger
from airflow_provider_linkstats.triggers.poller import pollers
from tests.conftest import API_KEY, connection_json

LISTING = "/public/api/v1/links"


@pytest.fixture
def links_conn(emu, monkeypatch):
    """The default links connection, with the real global domain as default (id 1)."""
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, default_domain_id=1))
    return emu


@pytest.fixture(autouse=True)
def quiet(caplog):
    # httpx logs every request at INFO; hundreds of triggers would bury the output.
    caplog.set_level(logging.WARNING)


def create_links(count: int, prefix: str, conn_id: str = "linkstats_links_default", **fields) -> list[dict]:
    hook = LinkstatsLinksHook(conn_id)
    try:
        return [
            hook.create_link(f"https://example.com/{prefix}/{i}", alias=f"{prefix}{i}", **fields) for i in range(count)
        ]
    finally:
        hook.close()


async def click(base_url: str, aliases: list[str]) -> None:
    async with httpx.AsyncClient(verify=False) as http:
        for alias in aliases:
            answer = await http.get(f"{base_url}/{alias}")
            assert answer.status_code in (302, 404)


def api_requests(emu) -> list[dict]:
    return [r for r in emu.stats.requests() if r["path"].startswith(LISTING)]


def waiting(link: dict, poke_interval: float, **kwargs) -> LinkstatsLinkExpiredTrigger:
    """A trigger as the sensor defers it: id and alias known (``verified``: the worker checked it exists)."""
    kwargs.setdefault("verified", True)
    return LinkstatsLinkExpiredTrigger(link_id=link["id"], alias=link["alias"], poke_interval=poke_interval, **kwargs)


async def consume(trigger: LinkstatsLinkExpiredTrigger) -> list[dict]:
    """Every event the trigger yields until its run() ends (a deferral trigger yields exactly one)."""
    return [event.payload async for event in trigger.run()]


async def until(predicate, limit: float = 20.0) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + limit
    while not predicate():
        assert loop.time() < deadline, "timed out waiting"
        await asyncio.sleep(0.01)


def test_300_triggers_share_one_poll_and_each_fires_once(links_conn):
    emu = links_conn
    links = create_links(300, "fleet", expiration_clicks=1)
    emu.stats.reset()
    waves = [links[i::3] for i in range(3)]

    async def scenario():
        # No periodic check in this test (its bound, 0.3 s x 100, is longer than the test)
        triggers = [waiting(link, 0.3, existence_check_every=100) for link in links]
        tasks = [asyncio.create_task(consume(t)) for t in triggers]
        await until(lambda: "linkstats_links_default" in pollers())
        poller = pollers()["linkstats_links_default"]
        assert len(poller.subscriptions) == 300
        for wave in waves:  # a third of the links expire after each of a few rounds
            target = poller.rounds + 2
            await until(lambda: poller.rounds >= target)  # noqa: B023 - awaited before the loop moves on
            await click(emu.url, [link["alias"] for link in wave])
        events = await asyncio.wait_for(asyncio.gather(*tasks), 30)
        await until(lambda: poller.task.done())
        return events, poller

    started = time.monotonic()
    events, poller = asyncio.run(scenario())
    elapsed = time.monotonic() - started
    # Each trigger yielded exactly one event: success, with its own link.
    assert all(len(e) == 1 for e in events)
    assert [e[0]["status"] for e in events] == ["success"] * 300
    assert [e[0]["links"][0]["id"] for e in events] == [link["id"] for link in links]
    requests = api_requests(emu)
    # One walk of the Expired listing per round (at most 3 pages for 300 expired links), and once
    # the 3 pages of the All listing (at most 2 a round) to learn the links' end times (the sensor
    # hands them over when it defers; these triggers were built without): never one per trigger.
    assert len(requests) == poller.requests
    assert all(r["path"] == LISTING for r in requests)
    assert [r["query"]["status"] for r in requests].count(["0"]) == 3
    # (on a loaded machine a straggler or three may be asked for by alias: cheaper than a walk)
    assert sum("search" in r["query"] for r in requests) <= 6
    # Two rounds per wave at least; clicking 100 links takes a few 0.3 s rounds more (11-16 seen on
    # an idle 2-core machine, 28-74 beside other suites, where the clicks take longer): the rounds keep
    # the 0.3 s pace, however long the test takes, and stay far below one round per trigger.
    assert poller.rounds <= elapsed / 0.3 + 2, (poller.rounds, elapsed)
    assert poller.rounds < 150
    assert len(requests) <= poller.rounds * math.ceil(300 / 100) + 6
    assert emu.stats.connections() <= 2  # one pool for the whole fleet
    # The poller ended with its last trigger, and left the registry.
    assert poller.subscriptions == {}


def test_a_cancelled_trigger_leaves_and_the_poller_stops_with_the_last_one(links_conn):
    emu = links_conn
    links = create_links(2, "cancel", expiration_clicks=5)

    async def scenario():
        tasks = [asyncio.create_task(consume(waiting(link, 0.1))) for link in links]
        await until(lambda: "linkstats_links_default" in pollers())
        poller = pollers()["linkstats_links_default"]
        await until(lambda: poller.rounds >= 2)
        tasks[0].cancel()  # the triggerer cancels a trigger: its task was cleared or marked failed
        await asyncio.gather(tasks[0], return_exceptions=True)
        assert len(poller.subscriptions) == 1 and len(poller.poll.watches) == 1
        # A round under way at the cancel still walks for both links: let it finish before counting.
        rounds = poller.rounds
        await until(lambda: poller.rounds >= rounds + 1)
        emu.stats.reset()

        def listed() -> list:
            return [r["query"].get("search", [None])[0] for r in api_requests(emu) if r["path"] == LISTING]

        # Counted as the emulator received them (a round is counted when it starts, before its
        # request: waiting on three rounds once saw only two requests on a loaded machine).
        await until(lambda: len(listed()) >= 3)
        searched = listed()
        for task in tasks[1:]:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        await asyncio.wait_for(poller.task, 5)  # no trigger left: the poller ends (and closes its client)
        return searched, poller

    searched, poller = asyncio.run(scenario())
    # Two links cost one walk (one page) a round; once one left, the other's one filtered request.
    assert len(searched) >= 3 and set(searched) == {links[1]["alias"]}
    assert poller.subscriptions == {} and poller.poll.watches == []


def test_two_connections_are_polled_apart(emu, monkeypatch):
    other_key = "other-key-77d1"
    with Emulator(api_keys=(other_key,)) as second:
        monkeypatch.setenv("AIRFLOW_CONN_LINKS_A", connection_json(emu.url, default_domain_id=1))
        conn_b = json.loads(connection_json(second.url, default_domain_id=1))
        conn_b["password"] = other_key
        monkeypatch.setenv("AIRFLOW_CONN_LINKS_B", json.dumps(conn_b))
        a = create_links(2, "same", conn_id="links_a", expiration_clicks=1)
        b = create_links(2, "same", conn_id="links_b", expiration_clicks=1)
        assert [link["id"] for link in a] == [link["id"] for link in b]  # same ids on both services
        emu.stats.reset()
        second.stats.reset()

        async def scenario():
            def trig(conn_id: str, link: dict) -> LinkstatsLinkExpiredTrigger:
                return LinkstatsLinkExpiredTrigger(
                    linkstats_conn_id=conn_id, link_id=link["id"], alias=link["alias"], poke_interval=0.1, verified=True
                )

            tasks_a = [asyncio.create_task(consume(trig("links_a", link))) for link in a]
            tasks_b = [asyncio.create_task(consume(trig("links_b", link))) for link in b]
            await until(lambda: {"links_a", "links_b"} <= set(pollers()))
            both = pollers()
            assert both["links_a"] is not both["links_b"]
            await until(lambda: both["links_a"].rounds >= 2 and both["links_b"].rounds >= 2)
            await click(emu.url, [link["alias"] for link in a])  # only service A's links expire
            events_a = await asyncio.wait_for(asyncio.gather(*tasks_a), 10)
            await asyncio.sleep(0.5)  # several more rounds of B
            assert not any(task.done() for task in tasks_b)
            await click(second.url, [link["alias"] for link in b])
            events_b = await asyncio.wait_for(asyncio.gather(*tasks_b), 10)
            return events_a, events_b, both

        events_a, events_b, both = asyncio.run(scenario())
        assert [e[0]["links"][0]["id"] for e in events_a] == [link["id"] for link in a]
        assert [e[0]["links"][0]["id"] for e in events_b] == [link["id"] for link in b]
        # Each service saw only its own poller's requests, over its own pool.
        assert len(api_requests(emu)) == both["links_a"].requests > 0
        assert len(api_requests(second)) == both["links_b"].requests > 0
        assert emu.stats.connections() <= 2 and second.stats.connections() <= 2


def test_few_links_with_aliases_cost_one_filtered_request_each_when_that_is_cheaper(links_conn):
    emu = links_conn
    create_links(250, "old", expiration_clicks=1)
    asyncio.run(click(emu.url, [f"old{i}" for i in range(250)]))  # 250 expired: a walk costs 3 pages
    watched = create_links(2, "new", expiration_clicks=1)
    emu.stats.reset()

    async def scenario():
        # no periodic read of the records during the test (bound 0.1 s x 100): only the listing's cost
        tasks = [asyncio.create_task(consume(waiting(link, 0.1, existence_check_every=100))) for link in watched]
        await until(lambda: "linkstats_links_default" in pollers())
        poller = pollers()["linkstats_links_default"]
        await until(lambda: poller.rounds >= 4)
        await click(emu.url, [link["alias"] for link in watched])
        return await asyncio.wait_for(asyncio.gather(*tasks), 10)

    events = asyncio.run(scenario())
    assert [e[0]["status"] for e in events] == ["success", "success"]
    queries = [r["query"] for r in api_requests(emu)]
    assert queries[:2] == [{}, {}]  # the end times and click limits, read once (one GET each)
    walks = [q for q in queries[2:] if "search" not in q]
    filtered = [q for q in queries if "search" in q]
    # The first round walks (2 links, cost of a walk unknown: 1 page assumed) and learns it costs
    # 3 pages; from then on each round asks for the two aliases: 2 requests instead of 3.
    assert len(walks) == 3 and {w.get("page", ["1"])[0] for w in walks} == {"1", "2", "3"}
    assert len(filtered) >= 6 and {q["search"][0] for q in filtered} == {"new0", "new1"}
    assert all(q["search_by"] == ["alias"] and q["status"] == ["2"] for q in filtered)


def test_existence_is_checked_for_the_whole_fleet_and_only_the_deleted_links_wait_ends(links_conn):
    emu = links_conn
    links = create_links(40, "ex", expiration_clicks=1)
    deleted = links[7]
    LinkstatsLinksHook().delete_link(deleted["id"])
    emu.stats.reset()

    async def scenario():
        # Not verified: the fleet checks that the links exist on its first round (and not again
        # during the test: the periodic check's bound, 0.1 s x 100, is longer than the test).
        triggers = [waiting(link, 0.1, verified=False, existence_check_every=100) for link in links]
        tasks = [asyncio.create_task(consume(trigger)) for trigger in triggers]
        gone = await asyncio.wait_for(tasks[7], 10)
        poller = pollers()["linkstats_links_default"]
        await click(emu.url, [link["alias"] for i, link in enumerate(links) if i != 7])
        rest = await asyncio.wait_for(asyncio.gather(*(t for i, t in enumerate(tasks) if i != 7)), 10)
        return gone, rest, poller

    gone, rest, poller = asyncio.run(scenario())
    assert gone == [
        {
            "status": "error",
            "reason": "gone",
            "message": f"Check link_id {deleted['id']}, or whether the link was deleted: link {deleted['id']} "
            f"does not exist on connection 'linkstats_links_default' "
            f"(GET {emu.url}/public/api/v1/links/{deleted['id']} answered 404)",
            "link_id": deleted["id"],
        }
    ]
    assert [e[0]["status"] for e in rest] == ["success"] * 39
    requests = api_requests(emu)
    gets = [r for r in requests if r["path"] != LISTING]
    all_listing = [r for r in requests if r["path"] == LISTING and r["query"]["status"] == ["0"]]
    # 40 links were checked with one page of the All listing, and only the one it missed was read.
    assert len(all_listing) == 1 and all_listing[0]["query"]["sort"] == ["desc"]  # newest first: nothing known yet
    assert [r["path"] for r in gets] == [f"{LISTING}/{deleted['id']}"]
    assert len(requests) == poller.requests


def test_the_smallest_poke_interval_sets_the_pace(links_conn):
    slow, fast = create_links(2, "pace", expiration_clicks=5)

    async def scenario():
        loop = asyncio.get_running_loop()
        slow_task = asyncio.create_task(consume(waiting(slow, 30)))
        await until(lambda: "linkstats_links_default" in pollers())
        poller = pollers()["linkstats_links_default"]
        await until(lambda: poller.rounds >= 1)
        fast_task = asyncio.create_task(consume(waiting(fast, 0.2)))
        started, rounds = loop.time(), poller.rounds
        await asyncio.sleep(1.1)
        paced = poller.rounds - rounds
        fast_task.cancel()
        await asyncio.gather(fast_task, return_exceptions=True)
        rounds = poller.rounds
        await asyncio.sleep(0.6)
        after = poller.rounds - rounds
        slow_task.cancel()
        await asyncio.gather(slow_task, return_exceptions=True)
        return paced, after, loop.time() - started

    paced, after, _ = asyncio.run(scenario())
    assert 4 <= paced <= 7  # a newcomer with a 0.2 s interval wakes the poller from its 30 s sleep
    assert after == 0  # back to the 30 s pace once it left


def test_no_key_in_the_poller_repr(links_conn):
    (link,) = create_links(1, "repr", expiration_clicks=5)

    async def scenario():
        task = asyncio.create_task(consume(waiting(link, 5)))
        await until(lambda: "linkstats_links_default" in pollers())
        text = repr(pollers()) + repr(vars(pollers()["linkstats_links_default"]))
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        return text

    assert API_KEY not in asyncio.run(scenario())


def test_a_failed_poll_counts_against_each_triggers_own_failure_budget(links_conn):
    emu = links_conn
    links = create_links(4, "budget", expiration_clicks=1)
    asyncio.run(click(emu.url, [link["alias"] for link in links]))  # all expired: the first answered poll ends them
    emu.stats.reset()
    emu.faults.fail_next(2, 503)

    async def scenario():
        strict = [waiting(link, 0.1, max_transport_failures=2) for link in links[:2]]
        patient = [waiting(link, 0.1, max_transport_failures=5) for link in links[2:]]
        return await asyncio.wait_for(asyncio.gather(*(consume(t) for t in strict + patient)), 10)

    events = asyncio.run(scenario())
    strict, patient = events[:2], events[2:]
    # One shared poll failed twice: the triggers allowing 2 failures in a row gave up, the others
    # went on and fired on the third poll, which answered all four links' question at once.
    assert [e[0]["reason"] for e in strict] == ["transport", "transport"]
    assert all("2 polls in a row failed" in e[0]["message"] and "HTTP 503" in e[0]["message"] for e in strict)
    assert [e[0]["status"] for e in patient] == ["success", "success"]
    assert [e[0]["links"][0]["id"] for e in patient] == [link["id"] for link in links[2:]]
    # 2 failed polls (a read of the four records from the All listing), then the two links left
    # read one by one: their records answered (no listing needed).
    assert [r["path"] for r in emu.stats.requests()][2:] == [f"{LISTING}/{link['id']}" for link in links[2:]]


def test_a_fleet_wide_existence_check_costs_pages_not_links(links_conn):
    emu = links_conn
    links = create_links(250, "spread", expiration_clicks=5)
    deleted = links[-1]
    LinkstatsLinksHook().delete_link(deleted["id"])
    emu.stats.reset()

    async def scenario():
        # Not verified: the fleet checks that all 250 links exist, in one read.
        tasks = [asyncio.create_task(consume(waiting(link, 0.1, verified=False))) for link in links]
        gone = await asyncio.wait_for(tasks[-1], 10)
        poller = pollers()["linkstats_links_default"]
        rounds = poller.rounds
        for task in tasks[:-1]:
            task.cancel()
        await asyncio.gather(*tasks[:-1], return_exceptions=True)
        return gone, poller, rounds

    gone, poller, rounds = asyncio.run(scenario())
    assert gone[0]["reason"] == "gone" and gone[0]["link_id"] == deleted["id"]
    requests = api_requests(emu)
    all_pages = [r["query"].get("page", ["1"])[0] for r in requests if r["query"].get("status") == ["0"]]
    gets = [r["path"] for r in requests if r["path"] != LISTING]
    assert all_pages == ["1", "2", "3"]  # 249 links: 3 pages of the All listing, once
    assert gets == [f"{LISTING}/{deleted['id']}"]  # only the link the listing did not show
    # the first round read them all (the records answer it: no Expired listing); on a loaded
    # machine the next round may have started before this test's task resumed
    assert rounds <= 2
