"""The client's contract and the emulator check each other (issue 19 item 2): every value the
contract allows (each enum, each targeting type and key set, each pixel type, each statistic) is
posted through the hook to the emulator, in each generation the emulator serves, and must be
accepted. The values refused are compared with a short explicit list of known differences, so a
fix on either side makes this test fail until the list is updated.
"""

from __future__ import annotations

import pytest

from airflow_provider_linkstats.client import LinkstatsError, Platform, Privacy, TargetType
from airflow_provider_linkstats.client.contract import LINK_STATS, SPACE_COLORS, WEBSITE_STATS, PixelType, Toggle
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json

URL = "https://example.com/x"
# value -> why the emulator refuses it. Nothing else may be refused.
# What the client itself refuses on a generation (before any request), by design.
INTENDED_DIFFERENCES = {
    "44": {"target_type 5", "target_type 6", "target_type 7", "sensitive_content"},  # phpShort 46+ only
    "49": {"link statistic clicks_hour", "disabled"},  # no counterpart on phpShort 46+
}
KNOWN_DIFFERENCES: dict[str, dict[str, str]] = {
    # None today: the emulator took "twitter" instead of "x" as a pixel type until it was fixed.
    "44": {},
    "49": {},
}
RULES = {
    TargetType.GEOGRAPHIC: ("country", [{"key": "US", "value": URL}]),
    TargetType.PLATFORM: ("platform", [{"key": p.value, "value": URL} for p in Platform]),
    TargetType.LANGUAGE: ("language", [{"key": "fr", "value": URL}]),
    TargetType.ROTATION: ("rotation", [{"value": URL}, {"value": URL + "2"}]),
    TargetType.CONTINENT: ("continent", [{"key": c, "value": URL} for c in ("AF", "AN", "AS", "EU", "NA", "OC", "SA")]),
    TargetType.BROWSER: ("browser", [{"key": "Firefox", "value": URL}, {"key": "Samsung Internet", "value": URL}]),
    TargetType.DEVICE: (
        "device",
        [{"key": d, "value": URL} for d in ("desktop", "mobile", "tablet", "watch", "television")],
    ),
}


@pytest.fixture(scope="module")
def emulator_49():
    """The emulator serving phpShort 49 and phpAnalytics 31."""
    from airflow_provider_linkstats.emulator import Emulator

    with Emulator(api_keys=(API_KEY,), links_version="49", analytics_version="31") as running:
        yield running


@pytest.fixture(params=["44", "49"])
def generation(request, monkeypatch):
    """The emulator in one generation, both default connections naming that version."""
    links_version = request.param
    emulator = request.getfixturevalue("emulator" if links_version == "44" else "emulator_49")
    emulator.reset()
    analytics_version = {"44": "3", "49": "31"}[links_version]
    links_conn = connection_json(emulator.url, api_version=links_version)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", links_conn)
    analytics_conn = connection_json(emulator.analytics_url, "linkstats_analytics", api_version=analytics_version)
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT", analytics_conn)
    yield links_version
    emulator.reset()


def _try(refused: dict, label: str, action, *args, **kwargs) -> None:
    try:
        action(*args, **kwargs)
    except LinkstatsError as error:
        refused[label] = str(error)


def test_every_contract_value_is_accepted(generation):
    links, analytics = LinkstatsLinksHook(), LinkstatsAnalyticsHook()
    dialect = links.generation
    refused: dict[str, str] = {}
    n = iter(range(10_000))
    create = links.create_link
    for privacy in Privacy:
        extra = {"privacy_password": "stats-pw"} if privacy is Privacy.PASSWORD else {}
        _try(refused, f"privacy {int(privacy)}", create, URL, alias=f"p{next(n)}", privacy=privacy, **extra)
    skipped: set[str] = set()
    for switch in ("disabled", "sensitive_content"):
        try:
            dialect.check_fields(links.resource, {switch: 1})
        except LinkstatsError:
            skipped.add(switch)
            continue
        for toggle in Toggle:
            _try(refused, f"{switch} {int(toggle)}", create, URL, alias=f"d{next(n)}", **{switch: toggle})
    for kind in TargetType:
        if kind is TargetType.NONE:
            _try(refused, "target_type 0", create, URL, alias=f"t{next(n)}", target_type=0)
            continue
        name, rules = RULES[kind]
        try:
            dialect.check_fields(links.resource, {"target_type": int(kind), name: rules})
        except LinkstatsError:
            skipped.add(f"target_type {int(kind)}")
            continue  # not in this generation: refused before any request (tests/integration/test_dialect.py)
        _try(refused, f"target_type {int(kind)}", create, URL, alias=f"t{next(n)}", target_type=kind, **{name: rules})
    for pixel in PixelType:
        _try(refused, f"pixel type {pixel.value}", links.create_pixel, f"px-{pixel.value}", pixel.value, "abc123")
    for color in SPACE_COLORS:
        _try(refused, f"space color {color}", links.create_space, f"space-{color}", color=color)
    link = create(URL, alias="stats-target")
    for name in LINK_STATS.names:
        try:
            dialect.stat_name(name)
        except LinkstatsError:
            skipped.add(f"link statistic {name}")
            continue  # no counterpart on this generation
        _try(refused, f"link statistic {name}", links.get_link_stats, link["id"], name, "2025-01-01", "2025-01-02")
    site_create = analytics.create_website
    for privacy in Privacy:
        extra = {"password": "stats-pw"} if privacy is Privacy.PASSWORD else {}
        _try(
            refused,
            f"website privacy {int(privacy)}",
            site_create,
            f"p{int(privacy)}.example.com",
            privacy=privacy,
            **extra,
        )
    for toggle in Toggle:
        _try(refused, f"website email {int(toggle)}", site_create, f"e{int(toggle)}.example.com", email=toggle)
        _try(
            refused,
            f"website exclude_bots {int(toggle)}",
            site_create,
            f"b{int(toggle)}.example.com",
            exclude_bots=toggle,
        )
    site = site_create("stats.example.com")
    for name in WEBSITE_STATS.names:
        _try(
            refused,
            f"website statistic {name}",
            analytics.get_website_stats,
            site["id"],
            name,
            "2025-01-01",
            "2025-01-02",
        )
    assert skipped == INTENDED_DIFFERENCES[generation]
    assert set(refused) == set(KNOWN_DIFFERENCES.get(generation, {})), refused
    assert API_KEY not in repr(refused)
    links.close()
    analytics.close()
