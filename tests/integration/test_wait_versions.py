"""Status and expiry on phpShort 46+ (where the Expired listing misses date expiry), over real HTTP.

A scripted server on 127.0.0.1 answers as phpShort 49 does (REAL_SERVICE.md, "Current versions"):
the version probe is a 404, ``status=2`` lists only links that reached their click limit, and
``status=3`` filters nothing. The same tests against phpShort 44 answers show the server's filter
is used as it is there.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json

import pytest

from airflow_provider_linkstats.client.clock import WAIT_MARGIN
from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.client.protocol import ApiRequest
from tests.conftest import connection_json, run_operator
from tests.unit.waiting.test_plans import Service, v44, v49

PREFIX = "/public/api/v1"
NOW = dt.datetime.now(dt.timezone.utc).replace(microsecond=0)
HOUR = dt.timedelta(hours=1)


def serve(scripted, service: Service) -> Service:
    """The scripted server answers every request from ``service`` (records and a generation)."""

    def answer(record):
        request = ApiRequest(record["method"], record["path"].removeprefix(PREFIX), params=tuple(record["query"]))
        response = service.answer(request)
        return ("respond", response.status, json.loads(response.body))

    service.now = dt.datetime.now(dt.timezone.utc)
    scripted.set_default(answer)
    return service


def v49_account() -> list[dict]:
    return [
        v49(1, start=NOW - 3 * HOUR, end=NOW - 2 * HOUR),  # its window closed: Expired, never in status=2
        v49(2, limit=3, clicks=3),  # reached its click limit: in status=2
        v49(3, start=NOW - HOUR, end=NOW + HOUR),  # inside its window: Active
        v49(4, start=NOW + HOUR, end=NOW + 2 * HOUR),  # not started: Expired (the service's rule)
        v49(5),  # no limit at all: Active
    ]


def queries(scripted) -> list[dict]:
    return [dict(r["query"]) for r in scripted.requests if r["path"] == f"{PREFIX}/links"]


def auto(monkeypatch, url: str) -> None:
    """The default links connection with api_version auto: the version is asked (once per hook)."""
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(url, api_version="auto"))


def test_v49_list_links_by_status_is_decided_from_the_records_in_one_walk(scripted, make_hook, monkeypatch):
    serve(scripted, Service(v49_account(), generation="49"))
    auto(monkeypatch, scripted.url)
    hook = make_hook("links")
    assert [r["id"] for r in hook.list_links(status=2)] == [4, 2, 1]  # newest first, as asked
    assert [r["id"] for r in hook.list_links(status=1, sort="asc")] == [3, 5]
    assert [r["id"] for r in hook.iter_links(status=2, max_items=1)] == [4]
    # The version was asked once for the hook; each listing walked the All listing once.
    assert [r["path"] for r in scripted.requests].count(f"{PREFIX}/stats/0") == 1
    assert [q["status"] for q in queries(scripted)] == ["0", "0", "0"]


def test_v49_status_3_is_refused_naming_status_and_version_before_any_listing(scripted, make_hook, monkeypatch):
    serve(scripted, Service(v49_account(), generation="49"))
    auto(monkeypatch, scripted.url)
    hook = make_hook("links")
    with pytest.raises(LinkstatsInputError, match=r"'status': 3.*phpShort 46\+") as error:
        hook.list_links(status=3)
    assert error.value.field == "status"
    assert queries(scripted) == []  # never "every link"


def test_v44_status_filter_is_the_servers(scripted, make_hook, monkeypatch):
    serve(scripted, Service([v44(1, ends=NOW - HOUR), v44(2, ends=NOW + HOUR), v44(3, limit=1, clicks=1)]))
    auto(monkeypatch, scripted.url)
    hook = make_hook("links")
    assert [r["id"] for r in hook.list_links(status=2)] == [3, 1]
    assert [q["status"] for q in queries(scripted)] == ["2"]


def test_v49_list_operator_finds_date_expired_links(scripted, monkeypatch):
    from airflow_provider_linkstats.operators.links import LinkstatsListLinksOperator

    serve(scripted, Service(v49_account(), generation="49"))
    auto(monkeypatch, scripted.url)
    records, _ = run_operator(LinkstatsListLinksOperator(task_id="list", status=2, sort_by="id", sort="asc"))
    assert [r["id"] for r in records] == [1, 2, 4]


def test_v49_api_version_extra_skips_the_probe(scripted, monkeypatch):
    from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook

    serve(scripted, Service(v49_account(), generation="49"))
    monkeypatch.setenv("AIRFLOW_CONN_LINKS_V49", connection_json(scripted.url, api_version="49"))
    hook = LinkstatsLinksHook("links_v49")
    try:
        assert [r["id"] for r in hook.list_links(status=2)] == [4, 2, 1]
    finally:
        hook.close()
    assert [r["path"] for r in scripted.requests] == [f"{PREFIX}/links"]


def test_v49_sensor_finds_a_date_expired_link_with_one_read(scripted, monkeypatch):
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    serve(scripted, Service(v49_account(), generation="49"))
    auto(monkeypatch, scripted.url)
    done = LinkstatsLinkExpiredSensor(task_id="w", link_id=1, alias="a1").poke({})
    assert done.is_done and done.xcom_value["id"] == 1
    inside = LinkstatsLinkExpiredSensor(task_id="w2", link_id=3, alias="a3", poke_interval=60)
    assert inside.poke({}) is False  # a link inside its window is never expired
    # The next look is at its end by the service's clock (the scripted server's Date: the worker's
    # own, to the second), once surely past it by the wait's margin: 1 s, and the second a Date leaves open.
    assert 0 <= inside._poll.next_end() - (NOW + HOUR).timestamp() - WAIT_MARGIN <= 1.1
    assert [r["path"] for r in scripted.requests] == [f"{PREFIX}/links/1", f"{PREFIX}/links/3"]


def test_v49_expiry_watcher_reports_date_expired_links(scripted, monkeypatch):
    from airflow_provider_linkstats.triggers import links as trigger_module
    from airflow_provider_linkstats.triggers.links import LinkstatsLinksExpiredEventTrigger

    serve(scripted, Service(v49_account(), generation="49"))
    auto(monkeypatch, scripted.url)
    monkeypatch.setattr(trigger_module, "_REPORTED_IN_MEMORY", {})

    async def first():
        async for event in LinkstatsLinksExpiredEventTrigger(poke_interval=0.1).run():
            return event.payload

    payload = asyncio.run(asyncio.wait_for(first(), 10))
    assert sorted(r["id"] for r in payload["links"]) == [1, 2]  # not 4: it has not started, let alone ended
    assert queries(scripted)[0]["status"] == "0"


# -- against the emulator serving phpShort 49 ------------------------------------------------------------


@pytest.fixture(scope="module")
def emulator49():
    from airflow_provider_linkstats.emulator import Emulator
    from tests.conftest import API_KEY

    with Emulator(api_keys=(API_KEY,), links_version="49") as running:
        yield running


@pytest.fixture
def emu49(emulator49, monkeypatch):
    emulator49.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator49.url, api_version="auto"))
    yield emulator49
    emulator49.reset()


def window(start: dt.datetime, end: dt.datetime) -> dict[str, str]:
    fmt = "%Y-%m-%dT%H:%M:%S"
    return {"active_period_start_at": start.strftime(fmt), "active_period_end_at": end.strftime(fmt)}


def seed49(emu) -> dict[str, dict]:
    now = emu.clock.now()
    return {
        "ended": emu.store.add_link(url="https://example.com/1", alias="ended", **window(now - 3 * HOUR, now - HOUR)),
        "clicked": emu.store.add_link(url="https://example.com/2", alias="clicked", clicks_limit=1, clicks=1),
        "inside": emu.store.add_link(url="https://example.com/3", alias="inside", **window(now - HOUR, now + HOUR)),
    }


def test_emulator49_its_expired_listing_misses_the_ended_window_and_list_links_finds_it(emu49, make_hook):
    links = seed49(emu49)
    hook = make_hook("links")
    raw = hook.client.list(hook.resource, {"status": 2})  # the server's own filter, as it is on 49
    assert [r["id"] for r in raw] == [links["clicked"]["id"]]
    assert sorted(r["alias"] for r in hook.list_links(status=2)) == ["clicked", "ended"]
    assert [r["alias"] for r in hook.list_links(status=1)] == ["inside"]  # inside its window: never expired
    with pytest.raises(LinkstatsInputError, match=r"'status': 3"):
        hook.list_links(status=3)


def test_emulator49_cleanup_dag_unchanged_deletes_old_date_expired_links(emu49, airflow_db):
    import pendulum

    from tests.support.example_dags import load

    emu49.clock.set(pendulum.now("UTC").subtract(days=45))
    old = seed49(emu49)  # created 45 days ago: "ended" ended then, "inside" is still inside its window... then
    emu49.clock.reset()  # back to now: "inside" (one hour either side of 45 days ago) has ended too
    kept = emu49.store.add_link(
        url="https://example.com/new", alias="new", **window(emu49.clock.now() - HOUR, emu49.clock.now() + HOUR)
    )
    run = load("linkstats_cleanup_expired").test(run_conf={"older_than_days": 30, "max_share": 1})
    assert run.state == "success"
    assert [link["alias"] for link in emu49.store.links()] == [kept["alias"]]
    summary = run.get_task_instance("summary").xcom_pull(task_ids="summary")
    assert summary == {"matched": len(old), "deleted": len(old), "already_gone": 0, "kept": 1}


def test_emulator49_a_deferred_wait_sleeps_to_the_window_end_and_the_watcher_reports_it(emu49, monkeypatch):
    import time

    from airflow_provider_linkstats.triggers import links as trigger_module
    from airflow_provider_linkstats.triggers.links import LinkstatsLinkExpiredTrigger, LinkstatsLinksExpiredEventTrigger

    monkeypatch.setattr(trigger_module, "_REPORTED_IN_MEMORY", {})
    seed49(emu49)
    now = emu49.clock.now().replace(microsecond=0)
    soon = emu49.store.add_link(
        url="https://example.com/s", alias="soon", **window(now - HOUR, now + dt.timedelta(seconds=3))
    )
    ends = now.timestamp() + 3

    async def scenario():
        watcher = LinkstatsLinksExpiredEventTrigger(poke_interval=0.2).run()
        first = (await watcher.__anext__()).payload
        emu49.stats.reset()
        wait = LinkstatsLinkExpiredTrigger(link_id=soon["id"], alias="soon", poke_interval=0.2, existence_check_every=0)
        done = (await asyncio.wait_for(wait.run().__anext__(), 15)).payload
        fired = time.time()
        gets = emu49.stats.count(path_prefix=f"{PREFIX}/links/{soon['id']}")
        second = (await asyncio.wait_for(watcher.__anext__(), 10)).payload
        await watcher.aclose()
        return first, done, fired, gets, second

    first, done, fired, gets, second = asyncio.run(scenario())
    assert sorted(r["alias"] for r in first["links"]) == ["clicked", "ended"]  # not "inside", not "soon"
    assert done["status"] == "success" and done["links"][0]["alias"] == "soon"
    assert ends + WAIT_MARGIN <= fired < ends + WAIT_MARGIN + 2  # woke at the end (and the margin), not before
    assert gets == 2  # one read learnt the end, one confirmed it: nothing polled in between
    assert [r["alias"] for r in second["links"]] == ["soon"]
