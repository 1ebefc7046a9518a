"""LinkstatsLinkExpiredTrigger run directly with asyncio, and its httpx transport.

The trigger is what the triggerer runs for thousands of tasks in one event loop, so besides its
events these tests pin down its pacing (it sleeps the poke interval after errors too), its bounds
(consecutive failures, deadline) and that the API key stays out of its kwargs, events and logs.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import gc
import json
import logging
import os
import re
import socket
import subprocess
import sys
import time

import httpx
import pytest

from airflow_provider_linkstats.client.aio import AsyncLinkstatsClient
from airflow_provider_linkstats.client.contract import LINKS
from airflow_provider_linkstats.client.errors import LinkstatsNotFoundError, LinkstatsTransportError
from airflow_provider_linkstats.client.protocol import adrive, build_get, expired_links_request
from airflow_provider_linkstats.client.retry import RetryPolicy
from airflow_provider_linkstats.client.settings import ClientSettings
from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger
from airflow_provider_linkstats.waiting.watch import Poll, Watch
from tests.conftest import API_KEY, connection_json

LISTING = "/public/api/v1/links"
CLASSPATH = "airflow_provider_linkstats.triggers.links.LinkstatsLinkExpiredTrigger"


@pytest.fixture(autouse=True)
def logs(caplog, capfd):
    """All log text of the test (stdlib records, and Airflow 3's structlog output), checked for the key."""
    caplog.set_level(logging.DEBUG)
    seen: list[str] = []

    def text() -> str:
        out, err = capfd.readouterr()
        seen.extend([out, err])
        return "\n".join([*seen, *(r.getMessage() for r in caplog.records)])

    yield text
    assert API_KEY not in text()


def trigger(**kwargs) -> LinkstatsLinkExpiredTrigger:
    kwargs.setdefault("poke_interval", 0.1)
    return LinkstatsLinkExpiredTrigger(**kwargs)


def in_seconds(seconds: float) -> str:
    return (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=seconds)).isoformat()


async def first_event(trig: LinkstatsLinkExpiredTrigger, limit: float = 30.0) -> dict:
    async def consume():
        async for event in trig.run():
            return event.payload
        raise AssertionError("the trigger ended without an event")

    payload = await asyncio.wait_for(consume(), limit)
    assert API_KEY not in json.dumps(payload)
    return payload


def run(trig: LinkstatsLinkExpiredTrigger, limit: float = 30.0) -> dict:
    return asyncio.run(first_event(trig, limit))


def listing_polls(emu) -> int:
    return sum(1 for r in emu.stats.requests() if r["path"] == LISTING)


async def when_polled(emu, times: int, action) -> None:
    """Run ``action`` once the service has had ``times`` requests (the wait is under way)."""
    while emu.stats.count() < times:
        await asyncio.sleep(0.01)
    await action()


async def click(emu, alias: str, times: int = 1) -> None:
    async with httpx.AsyncClient(verify=False) as http:  # plain http; verify=True would read the CA bundle in the loop
        for _ in range(times):
            await http.get(f"{emu.url}/{alias}")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


# -- serialization ----------------------------------------------------------------------------------


def test_serialize_round_trip_is_json_and_holds_no_key():
    import importlib

    def import_string(dotted: str):
        module, _, name = dotted.rpartition(".")
        return getattr(importlib.import_module(module), name)

    original = LinkstatsLinkExpiredTrigger(
        linkstats_conn_id="links_prod",
        link_id=7,
        alias="spring",
        poke_interval=30,
        deadline="2030-01-01T00:00:00+00:00",
        max_transport_failures=4,
        existence_check_every=6,
        verified=True,
        service_profile={"service": "links", "root": "https://links.example.com/api/v1", "generation": "46"},
        service_clock={"offset": -600.25, "uncertainty": 0.5},
    )
    classpath, kwargs = original.serialize()
    assert classpath == CLASSPATH
    text = json.dumps(kwargs)  # plain JSON: what the triggerer table stores
    assert API_KEY not in text and API_KEY not in repr(original)
    rebuilt = import_string(classpath)(**json.loads(text))
    assert rebuilt.serialize() == (classpath, kwargs)
    assert kwargs == {
        "linkstats_conn_id": "links_prod",
        "link_id": 7,
        "alias": "spring",
        "link_ids": None,
        "poke_interval": 30.0,
        "deadline": "2030-01-01T00:00:00+00:00",
        "max_transport_failures": 4,
        "existence_check_every": 6,
        "verified": True,
        "known": None,
        "service_profile": {"service": "links", "root": "https://links.example.com/api/v1", "generation": "46"},
        "service_clock": {"offset": -600.25, "uncertainty": 0.5},
    }


def test_list_trigger_round_trip():
    classpath, kwargs = LinkstatsLinkExpiredTrigger(link_ids=[3, 1, 2]).serialize()
    assert LinkstatsLinkExpiredTrigger(**json.loads(json.dumps(kwargs))).serialize()[1]["link_ids"] == [3, 1, 2]


# -- success, both ways to expire ----------------------------------------------------------------------


def test_fires_when_clicks_expire_the_link(emu):
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=3)

    async def scenario():
        clicker = asyncio.create_task(when_polled(emu, 3, lambda: click(emu, "spring", 3)))
        payload = await first_event(trigger(link_id=link["id"]))
        await clicker
        return payload

    payload = asyncio.run(scenario())
    assert payload["status"] == "success"
    assert [r["id"] for r in payload["links"]] == [link["id"]]
    assert payload["links"][0]["clicks"] == 3
    requests = [(r["path"], r["query"].get("search")) for r in emu.stats.requests()]
    assert requests[0] == (f"{LISTING}/{link['id']}", None)  # the alias, read once
    assert {(path, str(search)) for path, search in requests[1:]} <= {
        (LISTING, "['spring']"),
        (f"{LISTING}/{link['id']}", "None"),
    }


def test_fires_when_the_date_passes(emu):
    # The emulator's clock moves four hours on while the trigger sleeps: it learns so from the Date
    # header of its next read (the periodic check), and the record read then tells the end passed.
    moment = emu.clock.now() + dt.timedelta(hours=3)
    link = emu.store.add_link(
        url="https://example.com/a",
        alias="spring",
        expiration_date=moment.strftime("%Y-%m-%d"),
        expiration_time=moment.strftime("%H:%M"),
    )

    async def advance():
        emu.clock.advance(hours=4)

    async def scenario():
        mover = asyncio.create_task(when_polled(emu, 2, advance))
        payload = await first_event(trigger(link_id=link["id"], alias="spring", verified=True))
        await mover
        return payload

    assert asyncio.run(scenario())["links"][0]["id"] == link["id"]
    # The end time was learnt with one read and never polled for: reads only (the learning one,
    # existence checks every 10 intervals while sleeping, and the one that saw the end passed).
    assert {r["path"] for r in emu.stats.requests()} == {f"{LISTING}/{link['id']}"}


def test_a_list_fires_only_when_all_expired_and_costs_ceil_n_over_100_per_poke(emu):
    ids = [
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"gone{i}", expiration_clicks=1, clicks=1)["id"]
        for i in range(249)
    ]
    last = emu.store.add_link(url="https://example.com/last", alias="last", expiration_clicks=1)

    async def scenario():
        clicker = asyncio.create_task(when_polled(emu, 9, lambda: click(emu, "last")))
        payload = await first_event(trigger(link_ids=[*ids, last["id"]], poke_interval=0.2, existence_check_every=0))
        await clicker
        return payload

    payload = asyncio.run(scenario())
    assert [r["id"] for r in payload["links"]] == [*ids, last["id"]]
    listings = listing_polls(emu)
    gets = emu.stats.count() - listings
    assert gets == 1  # the one pending link's existence, checked once (first waiting poke)
    assert listings % 3 == 0 and listings >= 9  # every poke: 3 pages for 250 expired links


def test_steady_state_poke_with_an_alias_is_one_request(emu):
    emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)
    # 1.5 s of polls every 0.1 s: a loaded CI machine (Airflow 2.11 under xdist) spent most of a
    # 0.55 s window starting the trigger and polled twice; at most one request per interval either way.
    payload = run(trigger(link_id=1, alias="spring", verified=True, existence_check_every=0, deadline=in_seconds(1.5)))
    assert payload["status"] == "timeout"
    first, *requests = emu.stats.requests()
    assert first["path"] == f"{LISTING}/1"  # the end time and click limit, read once
    assert 3 <= len(requests) <= 16
    assert all(r["path"] == LISTING and r["query"]["search"] == ["spring"] for r in requests)


# -- pacing and bounds -----------------------------------------------------------------------------------


def test_server_errors_make_it_sleep_the_interval_then_it_succeeds(emu, logs):
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=1, clicks=1)
    emu.faults.fail_next(3, 503)
    started = time.monotonic()
    payload = run(trigger(link_id=link["id"], alias="spring", verified=True, poke_interval=0.3))
    elapsed = time.monotonic() - started
    assert payload["status"] == "success"
    # Exactly one request per poke: 3 failed, 1 answered; no tight loop and no hidden retries.
    assert emu.stats.count() == 4
    assert elapsed >= 3 * 0.3
    assert elapsed < 3 * 0.3 + 2
    warnings = re.findall(r"Poll (\d) of 5 failed \((.*?)\); next try in 0.3 s", logs())
    assert {n for n, _ in warnings} == {"1", "2", "3"} and "HTTP 503" in warnings[0][1]


def test_retry_after_longer_than_the_interval_is_honoured(emu):
    emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=1, clicks=1)
    emu.faults.fail_next(1, 429, retry_after=1)
    started = time.monotonic()
    assert run(trigger(link_id=1, alias="spring", verified=True, poke_interval=0.05))["status"] == "success"
    assert time.monotonic() - started >= 1.0
    assert emu.stats.count() == 2


def test_gives_up_after_max_transport_failures_in_a_row(monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(f"http://127.0.0.1:{free_port()}"))
    started = time.monotonic()
    payload = run(trigger(link_id=1, alias="spring", verified=True, poke_interval=0.2, max_transport_failures=3))
    elapsed = time.monotonic() - started
    assert payload["status"] == "error" and payload["reason"] == "transport"
    assert "3 polls in a row failed" in payload["message"] and "no connection could be made" in payload["message"]
    assert 2 * 0.2 <= elapsed < 5  # slept between the attempts


def test_failures_must_be_consecutive(emu):
    emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)
    emu.faults.fail_next(2, 502)

    async def scenario():
        async def then_more():
            emu.faults.fail_next(2, 504)

        helper = asyncio.create_task(when_polled(emu, 4, then_more))
        payload = await first_event(
            trigger(link_id=1, alias="spring", verified=True, max_transport_failures=3, deadline=in_seconds(1.2))
        )
        await helper
        return payload

    assert asyncio.run(scenario())["status"] == "timeout"  # 2 + 2 failures never made 3 in a row


def test_deadline_yields_a_timeout_event(emu):
    emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)
    started = time.monotonic()
    payload = run(trigger(link_id=1, alias="spring", poke_interval=0.2, deadline=in_seconds(0.7)))
    elapsed = time.monotonic() - started
    assert payload["status"] == "timeout" and payload["pending"] == [1]
    assert "did not expire before the sensor's timeout" in payload["message"]
    assert 0.6 <= elapsed < 2


# -- failures that end the wait at once ----------------------------------------------------------------------


def test_deleted_link_yields_gone_fast(emu):
    link = emu.store.add_link(url="https://example.com/a", alias="spring", expiration_clicks=5)

    async def delete():
        emu.store.delete(LINKS, link["id"])

    async def scenario():
        deleter = asyncio.create_task(when_polled(emu, 2, delete))
        payload = await first_event(trigger(link_id=link["id"], alias="spring", existence_check_every=2))
        await deleter
        return payload

    started = time.monotonic()
    payload = asyncio.run(scenario())
    assert payload["status"] == "error" and payload["reason"] == "gone" and payload["link_id"] == link["id"]
    assert "does not exist" in payload["message"]
    assert time.monotonic() - started < 3


def test_unknown_id_yields_gone_at_the_first_poke(emu):
    payload = run(trigger(link_id=404))
    assert (payload["reason"], emu.stats.count()) == ("gone", 1)


def test_rejected_key_ends_at_once_without_showing_it(emu, monkeypatch):
    conn = json.loads(connection_json(emu.url))
    conn["password"] = "wrong-" + API_KEY
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", json.dumps(conn))
    payload = run(trigger(link_id=1, alias="spring", verified=True))
    assert payload["status"] == "error" and payload["reason"] == "api" and payload["http_status"] == 401
    assert emu.stats.count() == 1
    assert "wrong-" not in json.dumps(payload)


@pytest.mark.parametrize(
    "kwargs, field",
    [({"link_id": "abc"}, "link_id"), ({"link_ids": []}, "link_ids"), ({"link_id": 1, "deadline": "soon"}, "deadline")],
)
def test_bad_inputs_yield_an_input_error_before_any_request(emu, kwargs, field):
    payload = run(trigger(**kwargs))
    assert payload["status"] == "error" and payload["reason"] == "input"
    assert f"'{field}'" in payload["message"]
    assert emu.stats.count() == 0


def test_missing_connection_yields_an_error_event():
    payload = run(trigger(linkstats_conn_id="linkstats_does_not_exist", link_id=1))
    assert payload["status"] == "error" and payload["reason"] == "connection"
    assert "linkstats_does_not_exist" in payload["message"]


# -- many triggers, one loop, nothing blocking ----------------------------------------------------------------


@pytest.fixture
def emulator_process(monkeypatch):
    """The emulator in its own process, as the service is for a triggerer: nothing else holds our GIL."""
    process = subprocess.Popen(
        [sys.executable, "-m", "airflow_provider_linkstats.emulator", "--port", "0", "--api-version", "44"],
        env={**os.environ, "LINKSTATS_EMULATOR_API_KEY": API_KEY},
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        ready = process.stdout.readline()
        url = re.search(r"links (http://\S+),", ready).group(1)
        monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(url))
        yield url
    finally:
        process.terminate()
        process.wait(10)


HELD = 1.0  # seconds a blocking call in a trigger would hold the loop: its poke interval, an answer's latency


def test_many_triggers_share_a_loop_without_blocking_it(emulator_process, caplog):
    # Quiet: httpx logs every request at INFO, and writing thousands of lines to pytest's capture
    # (a file) would be this test holding the loop, not the triggers.
    caplog.set_level(logging.WARNING)
    url = emulator_process
    with httpx.Client(base_url=url + "/public/api/v1", headers={"Authorization": f"Bearer {API_KEY}"}) as api:
        links = [
            api.post(
                "/links",
                data={"url": f"https://example.com/{i}", "alias": f"l{i}", "expiration_clicks": 1, "domain_id": 1},
            )
            .json()["data"]
            for i in range(41)
        ]
        api.get(f"{url}/l40")
    warm, links = links[-1], links[:-1]
    # A first run loads what a running triggerer has loaded already (Airflow's connection and
    # secrets machinery is imported on first use); what is measured below is the steady state.
    assert run(trigger(link_id=warm["id"], alias="l40"))["status"] == "success"
    # Every answer takes a second from here (the triggers' reads and the visitors' clicks): a blocking
    # HTTP call in run() would hold the loop that long, as a blocking sleep of the poke interval would.
    httpx.post(f"{url}/__emulator__/faults/latency", json={"seconds": HELD}).raise_for_status()

    async def heartbeat(stop: asyncio.Event) -> float:
        """The longest the loop was held: how late a 10 ms sleep woke up."""
        loop, worst = asyncio.get_running_loop(), 0.0
        while not stop.is_set():
            started = loop.time()
            await asyncio.sleep(0.01)
            worst = max(worst, loop.time() - started - 0.01)
        return worst

    async def click_all_later():
        await asyncio.sleep(1.0)
        async with httpx.AsyncClient(verify=False) as http:
            await asyncio.gather(*(http.get(f"{url}/{link['alias']}") for link in links))

    async def scenario():
        stop = asyncio.Event()
        beat = asyncio.create_task(heartbeat(stop))
        clicker = asyncio.create_task(click_all_later())
        triggers = [trigger(link_id=link["id"], poke_interval=HELD) for link in links]
        payloads = await asyncio.gather(*(first_event(t) for t in triggers))
        await clicker
        stop.set()
        return payloads, await beat

    # The test process's own heap (Airflow, earlier tests) is moved out of the collector's sight:
    # a full collection of it can take longer than the threshold and is not the triggers' doing.
    gc.collect()
    gc.freeze()
    try:
        payloads, worst = asyncio.run(scenario())
    finally:
        gc.unfreeze()
    assert [p["links"][0]["id"] for p in payloads] == [link["id"] for link in links]
    # A blocking sleep (or a blocking HTTP call) in run() would hold the loop for a poke interval
    # (or an answer's second); otherwise a garbage collection pass of this test process is the most
    # seen idle (~0.1 s), and a machine loaded by two suites at once woke a 10 ms sleep 0.38 s late
    # (the limit was 0.25 s against a 0.3 s poke interval then).
    assert worst < HELD * 0.75, f"the loop was held for {worst:.3f} s"


# -- the httpx transport ---------------------------------------------------------------------------------------


async def _client(url: str, read_timeout: float = 30.0, **kwargs) -> AsyncLinkstatsClient:
    kwargs.setdefault("retry", RetryPolicy(max_retries=0))
    settings = ClientSettings(root=url + "/public/api/v1", read_timeout=read_timeout)
    return await AsyncLinkstatsClient.open(settings, API_KEY, **kwargs)


def test_async_client_sends_bearer_and_shares_protocol_with_the_sync_one(scripted):
    scripted.add(("respond", 200, {"data": [{"id": 5}], "meta": {"current_page": 1, "last_page": 1}}))

    async def scenario():
        async with await _client(scripted.url) as client:
            watch = Watch.from_inputs(link_id=5, alias="spring", verified=True, known={"5": [None, True]})
            return watch, await adrive(Poll([watch]).round(), client.call)

    watch, result = asyncio.run(scenario())
    assert watch in result.expired
    (request,) = scripted.requests
    assert request["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert request["headers"]["Accept"] == "application/json"
    assert request["path"] == LISTING
    assert request["query"] == list(expired_links_request("spring").params)


def test_async_client_maps_network_failures(scripted):
    scripted.add(("drop",), ("hang", 2))

    async def scenario():
        errors = []
        for url in (f"http://127.0.0.1:{free_port()}", scripted.url, scripted.url):
            async with await _client(url, read_timeout=0.3) as client:
                try:
                    await client.call(build_get(LINKS, 1))
                except LinkstatsTransportError as error:
                    errors.append(error)
        return errors

    refused, dropped, timed_out = asyncio.run(scenario())
    assert (refused.sent, dropped.sent, timed_out.sent) == (False, True, True)
    assert "no connection could be made" in str(refused) and "ReadTimeout" in str(timed_out)
    assert all(API_KEY not in str(e) for e in (refused, dropped, timed_out))


def test_async_client_retries_under_the_policy_and_maps_statuses(scripted):
    scripted.add(("respond", 503, "<html>busy</html>"), ("respond", 404, {"message": "Not found."}))

    async def scenario():
        async with await _client(scripted.url, retry=RetryPolicy(max_retries=2, initial_wait=0.01)) as client:
            await client.call(build_get(LINKS, 1))

    with pytest.raises(LinkstatsNotFoundError) as caught:
        asyncio.run(scenario())
    assert str(caught.value).startswith(f"GET {scripted.url}/public/api/v1/links/1 HTTP 404: Not found.")
    assert len(scripted.requests) == 2



def test_async_client_is_built_from_the_same_settings_as_the_sync_one(emu):
    """The trigger's client: the connection fetched without blocking, parsed by the same code as in a worker."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    emu.store.add_link(url="https://example.com/a", alias="a")
    sync_hook = LinkstatsLinksHook()
    async_hook = LinkstatsLinksHook()

    async def scenario():
        async with await async_hook.get_async_client() as client:
            page = await client.call(expired_links_request())
            return client.settings, client.limiter, page.status

    settings, limiter, status = asyncio.run(scenario())
    assert settings == sync_hook.settings and settings.root == emu.url + "/public/api/v1"
    assert settings.default_domain_id == 1 and status == 200
    assert limiter is not sync_hook.client.limiter  # each client paces itself; the triggerer's share one per poller
    assert API_KEY not in repr(vars(async_hook)) and API_KEY not in repr(settings)


def test_hook_fetches_the_connection_asynchronously_for_the_trigger(emu, monkeypatch):
    """The triggerer's loop must not block on a connection lookup: get_async_client never looks it
    up synchronously on the loop's thread (Airflow 3 asks the supervisor asynchronously; Airflow 2's
    common-compat runs the synchronous lookup in a worker thread)."""
    import threading

    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    loop_thread = threading.current_thread()  # asyncio.run() runs the loop on this thread
    lookup = LinkstatsLinksHook.get_connection

    def off_the_loop_only(cls, conn_id):
        if threading.current_thread() is loop_thread:
            raise AssertionError("the hook fetched the connection synchronously on the event loop")
        return lookup(conn_id)

    monkeypatch.setattr(LinkstatsLinksHook, "get_connection", classmethod(off_the_loop_only))
    hook = LinkstatsLinksHook()

    async def scenario():
        async with await hook.get_async_client() as client:
            return client.root

    assert asyncio.run(scenario()) == emu.url + "/public/api/v1"
    assert hook.settings.root == emu.url + "/public/api/v1"
    assert API_KEY not in repr(vars(hook))
