"""The deferred wait's handover: the sensor hands the triggerer where its hook found the API.

Over real HTTP against the phpShort 49 emulator, with the connection giving the bare site URL (so
the API root must be found: ``GET /public/api/v1/stats/0``) and ``api_version`` 49. The worker's
sensor finds it before deferring; the trigger, built from the JSON kwargs the sensor deferred
with, sends no look-up of its own. A handed profile that is not the connection's (a root on
another server, another version than the extra) is ignored: nothing is sent to that other
address, and the triggerer finds the root as without it. One an answer contradicts is dropped.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import math

import pytest

from tests.conftest import API_KEY, connection_json
from tests.support.scripted_server import ScriptedServer

API = "/public/api/v1"
LOOKUP = f"{API}/stats/0"
FMT = "%Y-%m-%dT%H:%M:%S"


@pytest.fixture
def emu49(emulators, monkeypatch):
    import airflow_provider_linkstats.client.aio  # noqa: F401 - what a running triggerer has loaded
    import airflow_provider_linkstats.hooks.linkstats  # noqa: F401
    from airflow_provider_linkstats.client import known
    from airflow_provider_linkstats.triggers import poller

    emu = emulators("49")
    emu.reset()
    monkeypatch.setattr(poller, "BATCH", 0.5)
    monkeypatch.setattr(known, "_CONTRADICTED", set())
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, probing=True, api_version="49"))
    yield emu
    emu.reset()


def ending_link(emu, alias: str, seconds: int = 3) -> dict:
    """A link whose window ends ``seconds`` (whole seconds, as phpShort 49 keeps them) from now."""
    end = dt.datetime.fromtimestamp(math.ceil(emu.clock.now().timestamp()) + seconds, dt.timezone.utc)
    window = {
        "active_period_start_at": (end - dt.timedelta(hours=1)).strftime(FMT),
        "active_period_end_at": end.strftime(FMT),
    }
    return emu.store.add_link(url=f"https://example.com/{alias}", alias=alias, **window)


def run_trigger(kwargs: dict) -> dict:
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger

    trigger = LinkstatsLinkExpiredTrigger(**json.loads(json.dumps(kwargs)))  # as the triggerer table stores them

    async def first_event() -> dict:
        async for event in trigger.run():
            return event.payload
        return {}

    return asyncio.run(asyncio.wait_for(first_event(), 30))


def paths(emu) -> list[str]:
    return [r["path"] for r in emu.stats.requests()]


def test_the_deferred_wait_sends_no_look_up_when_handed_the_sensors_profile(emu49):
    from airflow.providers.common.compat.sdk import TaskDeferred

    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    link = ending_link(emu49, "handed")
    wait = LinkstatsLinkExpiredSensor(
        task_id="wait", link_id=link["id"], deferrable=True, poke_interval=0.5, timeout=30
    )
    emu49.stats.reset()
    with pytest.raises(TaskDeferred) as deferred:
        wait.execute({})
    assert paths(emu49).count(LOOKUP) == 1  # the worker found the root before deferring
    kwargs = deferred.value.trigger.serialize()[1]
    assert kwargs["service_profile"] == {"service": "links", "root": emu49.url + API, "generation": "46"}
    assert API_KEY not in json.dumps(kwargs)

    emu49.stats.reset()
    event = run_trigger(kwargs)
    assert event["status"] == "success" and event["links"][0]["id"] == link["id"], event
    sent = paths(emu49)
    assert sent and LOOKUP not in sent, sent  # the triggerer asked nothing about the service
    assert all(p.startswith(API + "/") for p in sent), sent


def test_without_the_profile_the_triggerer_looks_the_root_up_once(emu49):
    link = ending_link(emu49, "plain")
    emu49.stats.reset()
    event = run_trigger({"link_id": link["id"], "poke_interval": 0.5, "verified": False})
    assert event["status"] == "success", event
    assert paths(emu49).count(LOOKUP) == 1


@pytest.mark.parametrize("elsewhere", ["other server", "other version"])
def test_a_profile_not_of_the_connection_is_ignored_and_the_root_found_as_usual(emu49, elsewhere):
    link = ending_link(emu49, "ignored" + elsewhere.split()[1])
    with ScriptedServer() as other:
        other.set_default(("respond", 200, {"data": [], "meta": {"current_page": 1, "last_page": 1}}))
        if elsewhere == "other server":  # a root the base URL never yields: the key must not go there
            handed = {"service": "links", "root": other.url + API, "generation": "46"}
        else:  # the connection's root, but not the version its api_version extra names
            handed = {"service": "links", "root": emu49.url + API, "generation": "44"}
        emu49.stats.reset()
        event = run_trigger({"link_id": link["id"], "poke_interval": 0.5, "service_profile": handed})
        assert other.requests == []
        assert other.connections == 0
    assert event["status"] == "success" and event["links"][0]["id"] == link["id"], event
    assert paths(emu49).count(LOOKUP) == 1  # discovery as without a profile


HTML_404 = ("respond", 404, "<html><body>404 Not Found</body></html>", {"Content-Type": "text/html"})
RECORD_46 = {"id": 7, "alias": "a", "url": "https://example.com/a", "clicks_limit": None, "targets_type": None}


def api_only_at_public(request: dict) -> tuple:
    """A web server in front of one install: the API under /public/api/v1 only, a page elsewhere."""
    if not request["path"].startswith(API + "/"):
        return HTML_404
    if request["path"] == LOOKUP:
        return ("respond", 404, {"message": "Resource not found.", "status": 404})  # phpShort 46+
    if request["path"] == API + "/links":
        return ("respond", 200, {"data": [], "meta": {"current_page": 1, "last_page": 1}, "status": 200})
    return ("respond", 200, {"data": RECORD_46, "status": 200})


def test_a_handed_profile_an_answer_contradicts_is_dropped(monkeypatch):
    # One of the connection's roots (the bare site's /api/v1), where this install has no API: the
    # poll's 404 page contradicts it and ends the wait; the same handover started again (a
    # triggerer that runs the trigger anew) is refused, and the root is looked up.
    from airflow_provider_linkstats.client import known

    monkeypatch.setattr(known, "_CONTRADICTED", set())
    with ScriptedServer() as site:
        site.set_default(api_only_at_public)
        monkeypatch.setenv(
            "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(site.url, probing=True, api_version="49")
        )
        wrong = {"service": "links", "root": site.url + "/api/v1", "generation": "46"}
        kwargs = {"link_id": 7, "poke_interval": 0.5, "service_profile": wrong}
        first = run_trigger(kwargs)
        sent = [r["path"] for r in site.requests]
        assert first["status"] == "error", first
        assert sent and all(p.startswith("/api/v1/") for p in sent), sent  # no look-up: the profile was used

        site.reset()
        site.set_default(api_only_at_public)
        deadline = dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=2)
        second = run_trigger({**kwargs, "deadline": deadline.isoformat()})
        sent = [r["path"] for r in site.requests]
    assert second["status"] == "timeout", second  # the link never expires: the wait ran to its deadline
    assert sent.count(LOOKUP) == 1 and not any(p.startswith("/api/v1/") for p in sent), sent
