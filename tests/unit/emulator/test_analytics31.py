"""The emulator as phpAnalytics 3.7+ ("31"), beside 3.x: domains without "www.", favorites, the
plan's website limit and API feature, the 500 of an update of a missing website, and the renamed
hourly statistics, over real HTTP (``websites_v31`` in tests/fixtures/real_service_examples.json)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import requests

from airflow_provider_linkstats.emulator import Emulator
from tests.conftest import API_KEY
from tests.support.emulator_http import Api, form

V31 = json.loads((Path(__file__).parents[2] / "fixtures" / "real_service_examples.json").read_text())["websites_v31"]
PROBE = {"name": "visitors_hour", "from": "2024-01-01", "to": "2024-01-01"}


@pytest.fixture(scope="module")
def emu31():
    with Emulator(api_keys=(API_KEY,), links_version="49", analytics_version="31") as running:
        yield running


@pytest.fixture
def emu(emu31):
    emu31.reset()
    yield emu31
    emu31.reset()


@pytest.fixture
def sites(emu):
    return Api(emu.analytics_url)


@pytest.fixture
def sites3(emulator):
    """The session's emulator: phpAnalytics 3.x (the constructor's default)."""
    emulator.reset()
    yield Api(emulator.analytics_url)
    emulator.reset()


def create(api: Api, domain: str) -> requests.Response:
    return api.post("/websites", form({"domain": domain}))


@pytest.mark.parametrize("sent, stored", [
    ("https://WWW.Shop.Example.com/", "shop.example.com"),
    ("www.www.example.org", "example.org"),
    ("http://www.a.www.example.net", "a.example.net"),  # every "www." once the domain starts with one
    ("shop.www.example.io", "shop.www.example.io"),  # prepareForValidation() only touches a leading www.
])  # fmt: skip
def test_domain_is_stored_lowercase_without_scheme_and_www(sites, sent, stored):
    response = create(sites, sent)
    assert response.status_code == 201, response.text
    assert response.json()["data"]["domain"] == stored


def test_www_stays_on_3x(sites3):
    assert create(sites3, "https://www.example.com").json()["data"]["domain"] == "www.example.com"


def test_record_adds_favorite_and_favorited_at_in_the_recorded_order(sites):
    created = create(sites, "shop.example.com").json()["data"]
    shown = sites.get(f"/websites/{created['id']}").json()["data"]
    assert list(created) == list(shown) == list(V31["show_website"]["body"]["data"])
    assert (shown["favorite"], shown["favorited_at"]) == (False, None)


def test_favorite_on_update_and_as_a_listing_filter_kept_in_page_urls(sites, emu):
    ids = [create(sites, f"site{i}.example.com").json()["data"]["id"] for i in range(3)]
    answer = sites.put(f"/websites/{ids[1]}", form({"favorite": 1})).json()["data"]
    assert answer["favorite"] is True and answer["favorited_at"].endswith("Z")  # a fresh Carbon, serialised
    shown = sites.get(f"/websites/{ids[1]}").json()["data"]
    assert shown["favorite"] is True and len(shown["favorited_at"]) == 19  # read back uncast: "Y-m-d H:i:s"
    favorites = sites.get("/websites", favorite=1).json()
    assert [w["id"] for w in favorites["data"]] == [ids[1]]
    assert "favorite=1" in favorites["links"]["first"]
    assert sorted(w["id"] for w in sites.get("/websites", favorite=0).json()["data"]) == [ids[0], ids[2]]
    assert len(sites.get("/websites", favorite="yes").json()["data"]) == 3  # not numeric: no filter
    unfavored = sites.put(f"/websites/{ids[1]}", form({"favorite": 0})).json()["data"]
    assert (unfavored["favorite"], unfavored["favorited_at"]) == (False, None)


def test_the_plans_website_limit(sites, emu):
    emu.configure_account(features={"websites": 2})
    assert create(sites, "one.example.com").status_code == 201
    assert create(sites, "two.example.com").status_code == 201
    refused = create(sites, "another.example.com")
    assert (refused.status_code, refused.json()) == (422, V31["create_limit"]["body"])
    emu.configure_account(features={"websites": -1})
    assert create(sites, "another.example.com").status_code == 201


def test_a_plan_without_the_api_feature_is_403_on_31_only(sites, sites3, emu, emulator):
    emu.configure_account(features={"api": False})
    emulator.configure_account(features={"api": False})
    try:
        refused = sites.get("/websites")
        assert (refused.status_code, refused.json()) == (
            403, {"message": "You don't have access to this feature.", "status": 403},
        )  # fmt: skip
        assert sites3.get("/websites").status_code == 200  # 3.x (3.3's code) has no such guard
    finally:
        emulator.configure_account(features={"api": True})


def test_update_of_a_missing_website_is_a_500_on_31_and_a_404_on_3x(sites, sites3):
    crashed = sites.put("/websites/999", form({"privacy": 1}))
    assert (crashed.status_code, crashed.json()) == (500, {"message": "Server Error"})
    missing = sites3.put("/websites/999", form({"privacy": 1}))
    assert (missing.status_code, missing.json()) == (
        404,
        {"message": "No query results for model [App\\Models\\Website]."},
    )


def test_version_probe_is_404_on_31_and_422_on_3x(sites, sites3):
    assert (sites.get("/stats/0", **PROBE).status_code, sites.get("/stats/0", **PROBE).json()["status"]) == (404, 404)
    old = sites3.get("/stats/0", **PROBE)
    assert (old.status_code, old.json()["message"]) == (422, {"name": ["The selected name is invalid."]})


@pytest.mark.parametrize("old, new", [("visitors_hours", "visitors_hour"), ("pageviews_hours", "pageviews_hour")])
def test_hourly_statistics_are_renamed_on_31(sites, emu, old, new):
    website = create(sites, "shop.example.com").json()["data"]
    beacon = {"page": "https://www.shop.example.com/", "visitor": "v1"}
    headers = {"User-Agent": "Mozilla/5.0 (X11; Linux x86_64) Firefox/120.0"}
    assert requests.post(f"{emu.analytics_url}/api/event", data=beacon, headers=headers, timeout=10).ok
    day = emu.clock.now().strftime("%Y-%m-%d")
    rows = sites.get(f"/stats/{website['id']}", name=new, **{"from": day, "to": day}).json()["data"]
    assert rows == [{"value": emu.clock.now().strftime("%H"), "count": "1"}]  # a SUM(): a string
    refused = sites.get(f"/stats/{website['id']}", name=old, **{"from": day, "to": day})
    assert (refused.status_code, refused.json()["message"]) == (422, {"name": ["The selected name is invalid."]})
