"""Waits fire on time (issue 37, item 6): a wait whose end is known reads once at the end by the
service's clock (plus the margin) and fires on that read, never a whole ``poke_interval`` later.

On the real phpShort 49 a deferrable sensor (``poke_interval=10``) read its link 2 s after the
end, did not count it as expired and fired 12.3 s after the end. The cause: the sensor deferred
from a create task's record (the end known, no read in the worker), so no clock was handed over;
the triggerer slept to the end plus the 2 s margin by its own clock, and the read's answer, whose
``Date`` is whole seconds (floored), placed the service's clock up to a second behind the
triggerer's: the end, judged with that clock less the margin, had not passed yet. The next round
came a whole interval later. With ``poke_interval`` 60 the same wait fired a minute late, and the
poke mode's next poke could never come before ``poke_interval`` even with the end 5 s away.

Now the service's clock is known before a wait sleeps towards an end (handed over, the host's
learned facts, or one read), and a read that finds the end not passed by the clock it just
corrected is followed by one at the corrected end, not an interval on.

Against the emulator serving phpShort 49; its ``Date`` is whole seconds, as a real server's; the
second test sets its clock a fraction of a second off the worker's.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math
import time

import pytest

from tests.conftest import connection_json

API = "/public/api/v1"
FMT = "%Y-%m-%dT%H:%M:%S"
ON_TIME = 3.0  # seconds after the end by the service's clock


@pytest.fixture(params=[0.0, 0.4, -0.6], ids=["same-clock", "0.4s-ahead", "0.6s-behind"])
def emu49(emulators, monkeypatch, request):
    """phpShort 49, its clock ``param`` seconds off the worker's (its Date header whole seconds)."""
    import airflow_provider_linkstats.client.aio  # noqa: F401 - loaded before the link's seconds start
    import airflow_provider_linkstats.hooks.linkstats  # noqa: F401
    import airflow_provider_linkstats.sensors.links  # noqa: F401
    import airflow_provider_linkstats.triggers.links  # noqa: F401

    emu = emulators("49")
    emu.reset()
    if request.param:
        emu.clock.set(dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=request.param))
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version="49"))
    yield emu
    emu.reset()


def ending_record(emu, alias: str, seconds: float = 5.0) -> tuple[dict, dt.datetime]:
    """A link whose window ends ``seconds`` on by the service's clock, and its record as a create
    task's XCom holds it (the end known to the wait without a read)."""
    end = dt.datetime.fromtimestamp(math.ceil(emu.clock.now().timestamp() + seconds), dt.timezone.utc)
    window = {
        "active_period_start_at": (end - dt.timedelta(days=1)).strftime(FMT),
        "active_period_end_at": end.strftime(FMT),
    }
    emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, **window)
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    hook = LinkstatsLinksHook()
    try:
        record = hook.find(alias)
    finally:
        hook.close()
    emu.stats.reset()
    return record, end


def sensor(record: dict, interval: float = 60, **options):
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    return LinkstatsLinkExpiredSensor(task_id="wait", link_id=record, poke_interval=interval, timeout=150, **options)


def lateness(end: dt.datetime, emu) -> float:
    late = (emu.clock.now() - end).total_seconds()
    print(f"fired {late:.2f} s after the end")  # the figure, with -s
    return late


def run_trigger(kwargs: dict) -> dict:
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    trigger = LinkstatsLinkExpiredTrigger(**json.loads(json.dumps(kwargs)))

    async def first_event() -> dict:
        async for event in trigger.run():
            return event.payload
        return {}

    return asyncio.run(asyncio.wait_for(first_event(), 150))


@pytest.mark.parametrize("interval", [60, 10])
def test_poke_mode_fires_at_the_end(emu49, interval):
    record, end = ending_record(emu49, "poke")
    result = sensor(record, interval, mode="poke").execute({})
    late = lateness(end, emu49)
    assert result["id"] == record["id"]
    assert 0 <= late <= ON_TIME, f"fired {late:.1f} s after the end"  # before: 60 s (10 s) late


@pytest.mark.parametrize("interval", [60, 10])
def test_deferrable_mode_fires_at_the_end(emu49, interval):
    """The sensor defers from a create task's record: no read of the link in the worker; the clock
    it hands over is read first (one GET /account), and the trigger's read at the end fires."""
    from airflow.providers.common.compat.sdk import TaskDeferred

    record, end = ending_record(emu49, "deferred")
    wait = sensor(record, interval, deferrable=True)
    with pytest.raises(TaskDeferred) as deferred:
        wait.execute({})
    kwargs = deferred.value.trigger.serialize()[1]
    assert kwargs["service_clock"] is not None  # measured before deferring
    event = run_trigger(kwargs)
    late = lateness(end, emu49)
    assert event["status"] == "success", event
    assert 0 <= late <= ON_TIME, f"fired {late:.1f} s after the end"  # before: 60 s (10 s) late
    assert emu49.stats.count(path_prefix=f"/links/{record['id']}") == 1  # the one read, at the end


@pytest.mark.parametrize("interval", [60, 10])
def test_a_trigger_handed_no_clock_fires_at_the_end(emu49, interval):
    """start_from_trigger, or a sensor of an older version: no clock handed, the end known. The
    shared poller reads the service's clock before sleeping towards the end."""
    record, end = ending_record(emu49, "unhanded")
    kwargs = {"link_id": record["id"], "alias": record["alias"], "poke_interval": interval, "verified": True,
              "known": {str(record["id"]): [end.timestamp(), False]}}  # fmt: skip
    event = run_trigger(kwargs)
    late = lateness(end, emu49)
    assert event["status"] == "success", event
    assert 0 <= late <= ON_TIME, f"fired {late:.1f} s after the end"  # before: about 2 + interval s late


@pytest.mark.parametrize("interval", [60, 10])
def test_reschedule_mode_fires_at_the_end(emu49, interval):
    """Each poke a new sensor (process); rescheduled to the end by the service's clock."""
    record, end = ending_record(emu49, "reschedule")
    started, pokes = time.monotonic(), 0
    while True:
        wait = sensor(record, interval, mode="reschedule")
        wait._current_watch()
        try:
            done = wait.poke({"task_reschedule_count": pokes})
            pokes += 1
            if done:
                break
            pause = wait._get_next_poke_interval(started, lambda: time.monotonic() - started, pokes)
        finally:
            wait.hook.close()
        assert pokes < 10 and time.monotonic() - started < 120, "the wait did not end"
        time.sleep(pause)
    late = lateness(end, emu49)
    assert done.xcom_value["id"] == record["id"]
    assert 0 <= late <= ON_TIME + 1.0, f"fired {late:.1f} s after the end"  # + the Date's second a new process adds
