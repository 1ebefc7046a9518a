"""What confirming many date ends at once costs, counted by the emulator over real HTTP.

300 links of one ``link_ids`` wait end at the same minute, interleaved among 1,500 links (every
fifth), so the All listing spreads them over 15 pages. On phpShort 44-45 the Expired listing
(``status=2``) holds links whose date passed: confirming the 300 walks it, ceil(300 / 100) = 3
pages, not the All listing down to the lowest id. On 46+ that listing holds click limits only, so
the confirmation reads the All listing and never trusts ``status=2`` for a date.
"""

from __future__ import annotations

import datetime as dt
import math

import httpx
import pytest

from tests.conftest import connection_json
from tests.support.service_clock import follow_the_emulators_clock

API = "/public/api/v1"
TOTAL, EVERY_NTH = 1500, 5
WANTED = TOTAL // EVERY_NTH  # 300


def seed(emu, version: str, end: dt.datetime) -> list[dict]:
    if version == "44":
        expiry = {"expiration_date": end.strftime("%Y-%m-%d"), "expiration_time": end.strftime("%H:%M")}
    else:
        fmt = "%Y-%m-%dT%H:%M:%S"
        expiry = {
            "active_period_start_at": (end - dt.timedelta(days=2)).strftime(fmt),
            "active_period_end_at": end.strftime(fmt),
        }
    links = []
    for i in range(TOTAL):
        values = expiry if i % EVERY_NTH == 0 else {}
        links.append(emu.store.add_link(url=f"https://example.com/c{i}", alias=f"c{i}", **values))
    return [link for i, link in enumerate(links) if i % EVERY_NTH == 0]


def confirm(emulators, monkeypatch, version: str) -> tuple[object, list[tuple[str, str, object]]]:
    """The sensor's first poke (reads every record), the clock past the end, then the poke that
    confirms: its result and the requests it sent."""
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    emu = emulators(version)
    emu.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, api_version=version))
    follow_the_emulators_clock(monkeypatch, emu)  # it jumps two days on below
    end = (dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=2)).replace(second=0, microsecond=0)
    try:
        wanted = seed(emu, version, end)
        sensor = LinkstatsLinkExpiredSensor(
            task_id="confirm", link_ids=[link["id"] for link in wanted], mode="poke", deferrable=False
        )
        sensor._watch = sensor._watch_from_inputs()  # what execute() does before the first poke
        assert not sensor.poke({})  # nothing ended yet: this poke reads every record
        emu.clock.set(end + dt.timedelta(minutes=5))
        emu.stats.reset()
        result = sensor.poke({})
        sent = [(r["method"], r["path"], r["query"].get("status")) for r in emu.stats.requests()]
    finally:
        emu.reset()
    return result, sent


def done(result: object) -> bool:
    return bool(getattr(result, "is_done", result))


def test_many_date_ends_on_44_are_confirmed_in_the_expired_listing(emulators, monkeypatch):
    result, sent = confirm(emulators, monkeypatch, "44")
    assert done(result)
    pages = math.ceil(WANTED / 100)
    assert sent == [("GET", f"{API}/links", ["2"])] * pages, sent  # not 15 pages of the All listing


@pytest.mark.parametrize("version", ["49"])
def test_many_date_ends_on_46_plus_never_trust_the_expired_listing(emulators, monkeypatch, version):
    result, sent = confirm(emulators, monkeypatch, version)
    assert done(result)
    assert sent and all(s == ("GET", f"{API}/links", ["0"]) for s in sent), sent  # the All listing only


def test_a_periodic_read_of_every_click_limited_link_spares_the_expired_walk(emulators, monkeypatch):
    """A round that reads every watched link anyway (the periodic check) decides click limits from
    the records: once a walk showed that the pending links are not in the Expired listing, it does
    not walk it on top (the fleet's periodic rounds cost the All walk plus the Expired walk
    before). Between checks the Expired listing is still what polls the clicks."""
    from airflow_provider_linkstats.sensors.links import LinkstatsLinkExpiredSensor

    emu = emulators("44")
    emu.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url))
    sent = []
    try:
        links = [
            emu.store.add_link(url=f"https://example.com/k{i}", alias=f"k{i}", expiration_clicks=5) for i in range(250)
        ]
        sensor = LinkstatsLinkExpiredSensor(
            task_id="clicks",
            link_ids=[link["id"] for link in links],
            mode="poke",
            deferrable=False,
            existence_check_every=2,
        )
        sensor._watch = sensor._watch_from_inputs()
        for poke in range(3):
            if poke == 2:  # one of the pending links reaches its limit before the periodic check
                with httpx.Client() as http:
                    for _ in range(5):
                        http.get(f"{emu.url}/{links[1]['alias']}")
            emu.stats.reset()
            assert not sensor.poke({})
            sent.append([(r["method"], r["path"], r["query"].get("status")) for r in emu.stats.requests()])
    finally:
        emu.reset()
    listing, page = ("GET", f"{API}/links", ["2"]), ("GET", f"{API}/links", ["0"])
    assert sent[0] == [listing] + [page] * 3, sent[0]  # the first read: the listing, then the records
    assert sent[1] == [listing], sent[1]  # between checks: one page of the listing
    assert sent[2] == [page] * 3, sent[2]  # the periodic check: the records alone, no Expired walk
    assert set(sensor._watch.pending) == {link["id"] for link in links[2:]} | {links[0]["id"]}  # the record decided
