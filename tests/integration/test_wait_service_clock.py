"""The waits decide by the service's clock (issue 31): a link ends at its end time by the clock of
the install that serves it, which the waits learn from the ``Date`` header of its answers.

Against the emulator serving phpShort 49 (end times to the second), its clock set ten minutes
behind the worker's, then ten minutes ahead (the ``Date`` header follows it, as a real install's
follows its server's clock). A link ends a few seconds on by the service's clock. Before, the
waits compared that end with the worker's clock: behind, they fired at the first read, ten
minutes early by the service's clock (the link still redirected); ahead, they slept ten minutes
too long (here the sensor's 60 s timeout would end them). Now each mode fires within a few
seconds after the end by the service's clock, with the reads it made before (the one that
learnt the end, the one that confirmed it), and says once per process that the clocks differ.

The modes are driven as Airflow drives them, without a scheduler: poke mode through
``execute`` (Airflow's own loop), reschedule mode a new sensor (process) per poke, deferrable
mode ``execute`` until it defers, then the trigger built from its JSON kwargs, run in an event
loop as the triggerer runs it.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import math
import time

import pytest

from airflow_provider_linkstats.client.clock import LARGE_SKEW, SAFETY_MARGIN
from tests.conftest import connection_json

API = "/public/api/v1"
FMT = "%Y-%m-%dT%H:%M:%S"
SKEWS = {"behind": dt.timedelta(minutes=-10), "ahead": dt.timedelta(minutes=10)}
AHEAD = 4  # seconds from the service's now to the link's end
# A wait fires once the end is past by the margin (2 s, and the second a Date header leaves open),
# plus what a loaded machine adds to a sleep: far under the ten minutes of the skew either way.
LATE = SAFETY_MARGIN + 1.0 + 4.0
CLOCK_LOGGER = "airflow_provider_linkstats.client.clock"


@pytest.fixture(params=sorted(SKEWS))
def skewed(emulators, monkeypatch, request):
    """The phpShort 49 emulator with its clock ten minutes behind (or ahead of) the worker's."""
    import airflow_provider_linkstats.client.aio  # noqa: F401 - loaded before the link's seconds start
    import airflow_provider_linkstats.hooks.linkstats  # noqa: F401
    import airflow_provider_linkstats.sensors.links  # noqa: F401
    import airflow_provider_linkstats.triggers.links  # noqa: F401

    emu = emulators("49")
    emu.reset()
    emu.clock.set(dt.datetime.now(dt.timezone.utc) + SKEWS[request.param])
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    yield emu, SKEWS[request.param]
    emu.reset()


def ending_link(emu, alias: str, seconds: float = AHEAD) -> tuple[dict, dt.datetime]:
    """A link whose window ends ``seconds`` from now by the service's clock (a whole second)."""
    end = dt.datetime.fromtimestamp(math.ceil(emu.clock.now().timestamp() + seconds), dt.timezone.utc)
    window = {
        "active_period_start_at": (end - dt.timedelta(days=1)).strftime(FMT),
        "active_period_end_at": end.strftime(FMT),
    }
    return emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, **window), end


def sensor(link: dict, **options):
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    return LinkstatsLinkExpiredSensor(task_id="wait", link_id=link["id"], poke_interval=1, timeout=60, **options)


def reads(emu, link: dict) -> int:
    return emu.stats.count(path_prefix=f"{API}/links/{link['id']}")


class Warnings(logging.Handler):
    """The clock's warnings, caught on its own logger (Airflow's logging setup may not propagate)."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.messages.append(record.getMessage())


@pytest.fixture
def skew_warnings():
    handler, logger = Warnings(), logging.getLogger(CLOCK_LOGGER)
    logger.addHandler(handler)
    yield handler.messages
    logger.removeHandler(handler)


def assert_fired_by_the_service_clock(fired: dt.datetime, end: dt.datetime) -> None:
    assert end <= fired, f"fired {(end - fired).total_seconds():.1f} s before the end by the service's clock"
    assert (fired - end).total_seconds() <= LATE, f"fired {(fired - end).total_seconds():.1f} s after the end"


def test_poke_mode_fires_at_the_end_by_the_service_clock(skewed, skew_warnings):
    emu, skew = skewed
    link, end = ending_link(emu, "poke")
    record = sensor(link, mode="poke").execute({})  # Airflow's loop: poke, sleep, poke
    fired = emu.clock.now()
    assert record["id"] == link["id"]
    assert_fired_by_the_service_clock(fired, end)
    assert reads(emu, link) == 2  # the one that learnt the end (and the clock), the one that confirmed it
    [warning] = skew_warnings  # once, however many answers told it
    assert ("behind" if skew.total_seconds() < 0 else "ahead of") in warning and "10.0 min" in warning


def test_reschedule_mode_fires_at_the_end_by_the_service_clock(skewed, skew_warnings):
    """Each poke runs in a new process: a new client, whose clock the worker's stands in for until
    that poke's read corrects it; the previous poke rescheduled it by the service's clock."""
    emu, skew = skewed
    link, end = ending_link(emu, "reschedule")
    started, pokes = time.monotonic(), 0
    while True:
        wait = sensor(link, mode="reschedule")
        wait._current_watch()  # what execute() does before the poke
        try:
            done = wait.poke({"task_reschedule_count": pokes})
            pokes += 1
            if done:
                break
            # what Airflow's execute() does in reschedule mode: the next poke's date
            pause = wait._get_next_poke_interval(started, lambda: time.monotonic() - started, pokes)
        finally:
            wait.hook.close()
        assert pokes < 20 and time.monotonic() - started < 60, "the wait did not end"
        time.sleep(pause)
    fired = emu.clock.now()
    assert done.xcom_value["id"] == link["id"]
    assert_fired_by_the_service_clock(fired, end)
    assert pokes == 2 and reads(emu, link) == 2  # rescheduled once, to the end by the service's clock
    assert len(skew_warnings) == pokes  # once per process


def run_trigger(kwargs: dict) -> tuple[dict, dt.datetime]:
    """The trigger as the triggerer builds it (from its stored JSON kwargs), until its event."""
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    trigger = LinkstatsLinkExpiredTrigger(**json.loads(json.dumps(kwargs)))

    async def first_event() -> dict:
        async for event in trigger.run():
            return event.payload
        return {}

    return asyncio.run(asyncio.wait_for(first_event(), 60)), dt.datetime.now(dt.timezone.utc)


def test_deferrable_mode_hands_the_measured_clock_to_its_trigger(skewed, skew_warnings):
    """The sensor's poke learnt the end and the service's clock; the trigger, handed both, sleeps to
    the end by the service's clock and confirms with one read (without the clock it would have
    slept to the worker's idea of the end: ten minutes early or late)."""
    from airflow.providers.common.compat.sdk import TaskDeferred

    emu, skew = skewed
    link, end = ending_link(emu, "deferred")
    wait = sensor(link, deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        wait.execute({})
    kwargs = deferred.value.trigger.serialize()[1]
    handed = kwargs["service_clock"]
    assert set(handed) == {"offset", "uncertainty"} and abs(handed["offset"] - skew.total_seconds()) <= 1.5
    assert reads(emu, link) == 1
    event, _ = run_trigger(kwargs)
    fired = emu.clock.now()
    assert event["status"] == "success", event
    assert wait.execute_complete({}, event)["id"] == link["id"]
    assert_fired_by_the_service_clock(fired, end)
    assert reads(emu, link) == 2  # the trigger's one read confirmed the end
    assert len(skew_warnings) == 2  # once in the worker, once in the triggerer


def test_a_trigger_without_a_handed_clock_is_corrected_by_its_first_read(skewed):
    """A trigger started without a sensor's poke (start_from_trigger, or deferred by an older
    version): the triggerer's clock stands in until its first read, which learns the end too."""
    emu, _ = skewed
    link, end = ending_link(emu, "unhanded")
    event, _ = run_trigger({"link_id": link["id"], "poke_interval": 1})
    fired = emu.clock.now()
    assert event["status"] == "success", event
    assert_fired_by_the_service_clock(fired, end)
    assert reads(emu, link) == 2


def test_the_expiry_watcher_reports_a_link_once_ended_by_the_service_clock(skewed):
    """phpShort 46+ lists no date-ended link under Expired: the watcher decides each record. One
    link ended an hour ago, one ends a few seconds on (by the service's clock; ten minutes ago, or
    in ten minutes, by the worker's): the first event reports only the first, the second event
    the other, once it has ended by the service's clock."""
    from airflow_provider_linkstats.triggers import links as trigger_module
    from airflow_provider_linkstats.triggers.links import LinkstatsLinksExpiredEventTrigger

    emu, _ = skewed
    old, _ = ending_link(emu, "old", seconds=-3600)
    soon, end = ending_link(emu, "soon")
    trigger_module._REPORTED_IN_MEMORY.clear()

    async def scenario() -> tuple[dict, dict, dt.datetime]:
        watcher = LinkstatsLinksExpiredEventTrigger(poke_interval=0.5).run()
        try:
            first = (await asyncio.wait_for(watcher.__anext__(), 30)).payload
            second = (await asyncio.wait_for(watcher.__anext__(), 30)).payload
            return first, second, emu.clock.now()
        finally:
            await watcher.aclose()
            trigger_module._REPORTED_IN_MEMORY.clear()

    first, second, fired = asyncio.run(scenario())
    assert [r["alias"] for r in first["links"]] == ["old"]
    assert [r["alias"] for r in second["links"]] == ["soon"]
    assert_fired_by_the_service_clock(fired, end)


def test_no_warning_while_the_clocks_agree(emulators, monkeypatch, skew_warnings):
    emu = emulators("49")
    emu.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    link, end = ending_link(emu, "agreed", seconds=1)
    sensor(link, mode="poke").execute({})
    assert_fired_by_the_service_clock(emu.clock.now(), end)
    assert skew_warnings == [] and LARGE_SKEW > 1


def test_a_trigger_joining_a_poller_that_has_not_heard_the_service_sleeps_by_its_handed_clock(skewed):
    """The shared poller's client has not had an answer yet (its one trigger sleeps towards an end
    a day away); a deferred sensor's trigger joins with the clock the sensor measured: the poller
    takes it up before it plans its next sleep, and confirms the new end with one read at it."""
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    emu, _ = skewed
    far, far_end = ending_link(emu, "far", seconds=86400)
    soon, end = ending_link(emu, "soon")

    def waiting(link: dict, end: dt.datetime, **handed) -> LinkstatsLinkExpiredTrigger:
        kwargs = {"link_id": link["id"], "alias": link["alias"], "poke_interval": 1, "existence_check_every": 0}
        kwargs["verified"] = True
        kwargs["known"] = {str(link["id"]): [end.timestamp(), False]}  # as a sensor defers from a record
        return LinkstatsLinkExpiredTrigger(**json.loads(json.dumps({**kwargs, **handed})))

    async def scenario() -> tuple[dict, dt.datetime]:
        sleeper = asyncio.create_task(waiting(far, far_end).run().__anext__())
        # The poller's first round: nothing due but the service's clock (issue 37). Waited for, not a
        # fixed 0.5 s: the process's first poller builds its hook and HTTP client first, which took
        # 0.3-0.6 s on a loaded machine (then the request had not come yet: 0 requests, failed).
        deadline = time.monotonic() + 20
        while emu.stats.count() == 0 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.5)  # its answer is in and the poller sleeps towards the far end
        assert emu.stats.count() == emu.stats.count(path_prefix="/account") == 1
        measured = {"offset": emu.clock.now().timestamp() - time.time(), "uncertainty": 0.5}
        event = (await asyncio.wait_for(waiting(soon, end, service_clock=measured).run().__anext__(), 60)).payload
        fired = emu.clock.now()
        sleeper.cancel()
        return event, fired

    event, fired = asyncio.run(scenario())
    assert event["status"] == "success", event
    assert_fired_by_the_service_clock(fired, end)
    assert reads(emu, soon) == 1 and reads(emu, far) == 0
