"""What 20 deferred waits for links ending close together cost, counted by the emulator.

The plan behind ``benchmarks/end_times.py`` (docs/waiting.md, "Cost per mode"), at a tenth of its
time scale so that it runs in seconds: 20 ``LinkstatsLinkExpiredTrigger``s of one connection in
one event loop, as a triggerer runs them, handed their links' end times as the sensor hands them
over when it defers from a create task's record (with the service profile its hook found),
``poke_interval`` 0.5 s and
``existence_check_every`` 10 (a staleness bound of 5 s), the shared poller's batch 1 s instead
of 7 s (phpShort 49 keeps whole seconds: ends a second apart share a read). The connection gives
the bare site URL, as the benchmark's does. The requests the emulator got must be exactly the
plan's kinds and no more than its count:

- no look-up of the API root: the bare site URL's root was found by the sensor in the worker and
  handed over (``service_profile``), so the triggerer asks nothing about the service,
- one page of the All listing when the bound passes before the first end (a read of every
  pending link: the periodic check),
- one page of the All listing per batch of ends (each is the periodic check too),
- never a request per link: no ``GET /links/{id}``, no Expired listing (nothing has a click limit),
- one read of the service's clock (``GET /account``): no sensor handed one over; none when the
  triggers come from the sensors' own deferral (the last test), which hands the clock the look-up's
  answer told: what ``benchmarks/end_times.py`` models, 8 requests there on phpShort 49 (its 9th was
  that read: the benchmark handed the trigger the profile but not the clock).

Not a timed test: a slow machine can only merge batches (fewer requests), never add one.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import math

import pytest

from airflow_provider_linkstats.client.clock import SAFETY_MARGIN
from tests.conftest import connection_json

API = "/public/api/v1"
WAITS = 20
INTERVAL, EVERY, BATCH = 0.5, 10, 1.0  # bound: 5 s; ends a second apart share a read
LOOKUP = f"{API}/stats/0"
PAGE = f"{API}/links"
# An end counts as passed at most this long after it by the service's clock: the stated margin, and
# the second a Date header (whole seconds) leaves open.
MARGIN = SAFETY_MARGIN + 1.0


def planned(ends: list[float], start: float) -> int:
    """The plan's figure: a read each time the bound passes before the first end counts as passed
    (``MARGIN`` after it by the service's clock, which ``start`` reads), and one page per batch (the
    first pending end, and every end within ``BATCH`` seconds of it); no look-up."""
    batches, pending = 0, sorted(ends)
    while pending:
        first = pending[0]
        pending = [e for e in pending if e > first + BATCH]
        batches += 1
    bound_reads = max(0, math.ceil((min(ends) + MARGIN - start) / (INTERVAL * EVERY)) - 1)
    return bound_reads + batches


def run_waits(emu, links: list[dict], ends: list[float], generation: str) -> dict:
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    async def scenario() -> list[dict]:
        triggers = [
            LinkstatsLinkExpiredTrigger(
                link_id=link["id"],
                alias=link["alias"],
                poke_interval=INTERVAL,
                existence_check_every=EVERY,
                verified=True,  # as the sensor defers from a create task's record
                known={str(link["id"]): [end, False]},
                service_profile={"service": "links", "root": emu.url + API, "generation": generation},
            )
            for link, end in zip(links, ends, strict=True)
        ]

        async def first_event(trigger) -> dict:
            async for event in trigger.run():
                return event.payload
            return {}

        return await asyncio.wait_for(asyncio.gather(*(first_event(t) for t in triggers)), 60)

    events = asyncio.run(scenario())
    return {"events": events, "requests": emu.stats.requests()}


@pytest.fixture
def fast_batches(monkeypatch):
    # What a running triggerer has loaded already: the first round comes well before the bound.
    import airflow_provider_linkstats.client.aio  # noqa: F401
    import airflow_provider_linkstats.hooks.linkstats  # noqa: F401
    from airflow_provider_linkstats.triggers import poller

    monkeypatch.setattr(poller, "BATCH", BATCH)


def check(result: dict, links: list[dict], ends: list[float], start: float) -> None:
    assert [e["status"] for e in result["events"]] == ["success"] * WAITS, result["events"]
    assert [e["links"][0]["id"] for e in result["events"]] == [link["id"] for link in links]
    sent = [(r["method"], r["path"], r["query"].get("status")) for r in result["requests"]]
    lookups = [s for s in sent if s[1] == LOOKUP]
    pages = [s for s in sent if s[1] == PAGE]
    assert lookups == [], sent  # the root was handed over by the sensor: no look-up in the triggerer
    # No clock was handed (these triggers are built without ``service_clock``): the poller reads the
    # service's clock once before it sleeps towards the ends (issue 37), one request per poller.
    clock = [s for s in sent if s[1] == f"{API}/account"]
    assert len(clock) == 1, sent
    assert all(s[2] == ["0"] for s in pages), sent  # the All listing only: no Expired walk
    assert len(lookups) + len(pages) + len(clock) == len(sent), sent  # nothing else: no GET per link
    assert len(pages) <= planned(ends, start), (len(pages), planned(ends, start), sent)


def test_20_waits_ending_a_second_apart_on_49_cost_the_plans_requests(emulators, monkeypatch, fast_batches):
    emu = emulators("49")
    emu.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, probing=True, api_version="49")
    )
    # phpShort 49 keeps seconds: 20 ends over 7 whole seconds, the first 5-6 s ahead (counted as
    # passed 7-9 s on), so the bound (5 s) passes once before it. Planned: the bound's read, 4
    # batches (two seconds each) = 5.
    start = emu.clock.now().timestamp()
    first = math.ceil(start) + 5
    ends = [float(first + i // 3) for i in range(WAITS)]
    fmt = "%Y-%m-%dT%H:%M:%S"
    links = []
    for i, end in enumerate(ends):
        moment = dt.datetime.fromtimestamp(end, dt.timezone.utc)
        window = {
            "active_period_start_at": (moment - dt.timedelta(hours=1)).strftime(fmt),
            "active_period_end_at": moment.strftime(fmt),
        }
        links.append(emu.store.add_link(url=f"https://example.com/{i}", alias=f"w{i}", **window))
    assert planned(ends, start) == 5
    emu.stats.reset()
    try:
        result = run_waits(emu, links, ends, "46")
    finally:
        emu.reset()
    check(result, links, ends, start)


def test_20_waits_ending_at_one_minute_on_44_cost_the_plans_requests(emulators, monkeypatch, fast_batches):
    emu = emulators("44")
    emu.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, probing=True, api_version="44")
    )
    # phpShort 44 keeps minutes: the emulator's clock is set 6 s before a whole minute (a service a
    # minute or two ahead of the worker), and the waits read its clock from the Date header of its
    # answers: before the first one (the bound's read) the worker's clock stands in, the end is
    # minutes away, and nothing is read. Planned: the bound's read, one batch = 2.
    minute = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(minutes=2)).replace(second=0, microsecond=0)
    emu.clock.set(minute - dt.timedelta(seconds=6))
    start = emu.clock.now().timestamp()
    ends = [minute.timestamp()] * WAITS
    expiry = {"expiration_date": minute.strftime("%Y-%m-%d"), "expiration_time": minute.strftime("%H:%M")}
    links = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"m{i}", **expiry) for i in range(WAITS)]
    assert planned(ends, start) == 2
    emu.stats.reset()
    try:
        result = run_waits(emu, links, ends, "44")
    finally:
        emu.reset()
    check(result, links, ends, start)


def test_20_sensors_deferring_on_49_hand_over_what_the_triggerer_needs_and_cost_the_plans_pages(
    emulators, monkeypatch, fast_batches
):
    """The benchmark's case end to end: each ``LinkstatsLinkExpiredSensor(deferrable=True)`` is given
    its link's record (a create task's XCom) on a connection with the bare site URL, defers, and its
    trigger runs with the kwargs the sensor built; the 20 triggers share one poller. What the
    sensors sent in the worker is not counted. The triggerer asks nothing but pages of the All
    listing: no look-up of the root (``service_profile``), no read of the clock (``service_clock``;
    without it, one ``GET /account`` more), at most the plan's count."""
    from airflow.providers.common.compat.sdk import TaskDeferred

    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    emu = emulators("49")
    emu.reset()
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, probing=True, api_version="49")
    )
    # Ends over 7 whole seconds, the first far enough ahead that no sensor sees it pass before deferring.
    first = math.ceil(emu.clock.now().timestamp()) + 8
    ends = [float(first + i // 3) for i in range(WAITS)]
    fmt = "%Y-%m-%dT%H:%M:%S"
    for i, end in enumerate(ends):
        moment = dt.datetime.fromtimestamp(end, dt.timezone.utc)
        window = {
            "active_period_start_at": (moment - dt.timedelta(hours=1)).strftime(fmt),
            "active_period_end_at": moment.strftime(fmt),
        }
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"d{i}", **window)
    try:
        hook = LinkstatsLinksHook()
        try:
            links = sorted(hook.list_links(), key=lambda record: record["id"])  # the create tasks' records
        finally:
            hook.close()
        kwargs = []
        for link in links:
            sensor = LinkstatsLinkExpiredSensor(
                task_id=f"wait_{link['id']}", link_id=link, poke_interval=INTERVAL,
                existence_check_every=EVERY, deferrable=True,
            )  # fmt: skip
            with pytest.raises(TaskDeferred) as deferred:
                sensor.execute({})
            kwargs.append(deferred.value.trigger.serialize()[1])
        assert all(k["service_profile"] and k["service_clock"] for k in kwargs), kwargs[0]
        emu.stats.reset()
        start = emu.clock.now().timestamp()

        async def scenario() -> list[dict]:
            async def first_event(trigger) -> dict:
                async for event in trigger.run():
                    return event.payload
                return {}

            triggers = [LinkstatsLinkExpiredTrigger(**k) for k in kwargs]
            return await asyncio.wait_for(asyncio.gather(*(first_event(t) for t in triggers)), 60)

        events = asyncio.run(scenario())
        sent = [(r["method"], r["path"], r["query"].get("status")) for r in emu.stats.requests()]
    finally:
        emu.reset()
    assert [e["status"] for e in events] == ["success"] * WAITS, events
    assert [e["links"][0]["id"] for e in events] == [link["id"] for link in links]
    assert all(s[:2] == ("GET", PAGE) and s[2] == ["0"] for s in sent), sent  # no look-up, no clock, no GET each
    assert len(sent) <= planned(ends, start), (len(sent), planned(ends, start), sent)
