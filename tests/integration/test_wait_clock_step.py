"""A wait fires only on an answer whose own ``Date`` says the link ended (issue 44, item 1).

The service's clock was stepped ten minutes back after the worker learned it (offset about 0: what
a sensor hands its trigger, what the host's learned facts hold). Before, a deferrable wait with
``poke_interval=60`` fired at its first read, ten minutes before the link's end by the service's
clock, on a read whose ``Date`` said otherwise; a wait whose every answer was a cached copy read
at the budget's pace (one request a second) in silence. Now the first answer corrects the clock,
the wait fires within 3 s after the end by the service's clock with its usual two reads, and a
wait that cannot tell keeps to its poke interval and says so in its log.

Against the phpShort 49 emulator (windows to the second); the trigger runs as the triggerer runs
it (from its JSON kwargs, in an event loop), the sensor through ``execute`` in poke mode.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import math
import time
import urllib.request

import pytest

from tests.conftest import API_KEY, connection_json
from tests.support.caching_proxy import CachingProxy

API = "/public/api/v1"
FMT = "%Y-%m-%dT%H:%M:%S"
BACK = dt.timedelta(minutes=-10)
AUTH = {"Authorization": f"Bearer {API_KEY}", "Accept": "application/json"}
ON_TIME = 3.0  # seconds after the end by the service's clock


@pytest.fixture
def stepped(emulators, monkeypatch):
    """The phpShort 49 emulator, its clock stepped ten minutes back from the worker's."""
    import airflow_provider_linkstats.sensors.links  # noqa: F401 - loaded before the link's seconds start
    import airflow_provider_linkstats.triggers.links  # noqa: F401

    emu = emulators("49")
    emu.reset()
    emu.clock.set(dt.datetime.now(dt.timezone.utc) + BACK)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", "off")
    yield emu
    emu.reset()


def ending_link(emu, alias: str, seconds: float) -> tuple[dict, dt.datetime]:
    """A link whose window ends ``seconds`` from now by the service's clock (a whole second)."""
    end = dt.datetime.fromtimestamp(math.ceil(emu.clock.now().timestamp() + seconds), dt.timezone.utc)
    window = {
        "active_period_start_at": (end - dt.timedelta(days=1)).strftime(FMT),
        "active_period_end_at": end.strftime(FMT),
    }
    return emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, **window), end


def waiting(link: dict, end: dt.datetime, **extra):
    """The trigger a sensor deferred with before the step: the end it read, the clock it measured."""
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    kwargs = {
        "link_id": link["id"], "alias": link["alias"], "poke_interval": 60, "verified": True,
        "known": {str(link["id"]): [end.timestamp(), False]},
        "service_clock": {"offset": 0.2, "uncertainty": 0.3},  # measured before the step
        **extra,
    }  # fmt: skip
    return LinkstatsLinkExpiredTrigger(**json.loads(json.dumps(kwargs)))


def first_event(trigger, timeout: float) -> dict | None:
    async def run() -> dict | None:
        async for event in trigger.run():
            return event.payload
        return None

    try:
        return asyncio.run(asyncio.wait_for(run(), timeout))
    except (asyncio.TimeoutError, TimeoutError):
        return None


def reads(emu, link: dict) -> int:
    return emu.stats.count(path_prefix=f"{API}/links/{link['id']}")


def assert_on_time(fired: dt.datetime, end: dt.datetime) -> None:
    early = (end - fired).total_seconds()
    assert end <= fired, f"fired {early:.1f} s before the end by the service's clock"  # before: 594 s early
    assert (fired - end).total_seconds() <= ON_TIME, f"fired {-early:.1f} s after the end"


def test_a_deferred_wait_follows_the_step_and_fires_at_the_end(stepped):
    emu = stepped
    link, end = ending_link(emu, "deferred", seconds=6)
    event = first_event(waiting(link, end), 40)
    fired = emu.clock.now()
    assert event is not None and event["status"] == "success", event
    assert_on_time(fired, end)
    assert reads(emu, link) == 2  # the read that corrected the clock, the one at the end


def test_a_poke_wait_whose_host_clock_is_stale_fires_at_the_end(stepped, monkeypatch, tmp_path):
    """The host's learned facts hold the offset from before the step; a poke-mode sensor with
    poke_interval=60 on a create's record."""
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    emu = stepped
    monkeypatch.setenv("AIRFLOW__LINKSTATS__CACHE_DIR", str(tmp_path))
    emu.clock.reset()
    learner = LinkstatsLinksHook()
    learner.create_link("https://example.com/learn", alias="learn", expires_at="PT4M")  # the host learns ~0
    learner.close()
    emu.clock.set(dt.datetime.now(dt.timezone.utc) + BACK)
    link, end = ending_link(emu, "poked", seconds=6)
    emu.stats.reset()
    sensor = LinkstatsLinkExpiredSensor(
        task_id="wait", link_id={**link, "active_period_end_at": end.strftime(FMT) + "Z"}, poke_interval=60,
        timeout=40, mode="poke",
    )  # fmt: skip
    record = sensor.execute({})
    fired = emu.clock.now()
    assert record["id"] == link["id"]
    assert_on_time(fired, end)
    assert reads(emu, link) == 2


class Said(logging.Handler):
    """What the waits log, caught on their own logger (Airflow's logging setup may not propagate)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


def test_a_wait_that_cannot_tell_keeps_its_pace_and_says_so(stepped, monkeypatch):
    """Every answer is a cached copy (with Age) from before the end, and the handed clock says the
    end passed long ago: nothing tells whether it did. The wait does not fire, reads at its poke
    interval (5 s), not once a second, and says why at its first round."""
    emu = stepped
    link, end = ending_link(emu, "cached", seconds=120)
    said, logger = Said(), logging.getLogger("airflow_provider_linkstats.waiting.watch")
    logger.addHandler(said)
    try:
        with CachingProxy(emu.url) as proxy:
            page = f"{proxy.url}{API}/links/{link['id']}"
            urllib.request.urlopen(urllib.request.Request(page, headers=AUTH), timeout=10).read()  # kept
            time.sleep(1.1)
            monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(proxy.url, api_version="49"))
            started = time.monotonic()
            event = first_event(waiting(link, end, poke_interval=5), 12)
            took = time.monotonic() - started
            asked = [r for r in proxy.requests if f"/links/{link['id']}" in r[1]][1:]  # the trigger's
    finally:
        logger.removeHandler(said)
    assert event is None, event  # before: fired at once, 120 s before the end by the service's clock
    assert 1 <= len(asked) <= math.ceil(took / 5) + 1, len(asked)  # before: one a second
    assert [m for m in said.messages if "not taken as ended" in m], said.messages


def launched(emu, count: int = 60, seconds: float = 6) -> tuple[list[dict], dt.datetime]:
    """``count`` links whose windows end within the same second, ``seconds`` on by the service's clock."""
    links = [ending_link(emu, f"launch-{n:02d}", seconds) for n in range(count)]
    return [link for link, _ in links], max(end for _, end in links)


def listings(emu) -> int:
    return emu.stats.count(method="GET", path_prefix=f"{API}/links")


@pytest.mark.parametrize("mode", ["deferrable", "poke"])
def test_a_wait_for_sixty_links_fires_at_their_end_with_its_usual_reads(stepped, mode):
    """The issue's launch: 60 links, a wait on them all (``poke_interval=60``) whose clock is from
    before the step. Before: still deferred long after the end, reading about 58 times a minute."""
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    emu = stepped
    links, end = launched(emu)
    ids = [link["id"] for link in links]
    emu.stats.reset()
    if mode == "deferrable":
        from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

        kwargs = {"link_ids": ids, "poke_interval": 60, "service_clock": {"offset": 0.2, "uncertainty": 0.3}}
        event = first_event(LinkstatsLinkExpiredTrigger(**kwargs), 40)
        assert event is not None and event["status"] == "success", event
    else:
        LinkstatsLinkExpiredSensor(task_id="wait", link_ids=ids, poke_interval=60, timeout=40, mode="poke").execute({})
    fired = emu.clock.now()
    assert_on_time(fired, end)
    assert listings(emu) <= 3, emu.stats.endpoints()  # the read that learnt the ends, the one at the end
