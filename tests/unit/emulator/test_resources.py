"""phpShort's account, domains, spaces and pixels, and phpAnalytics' account, over plain HTTP."""

from __future__ import annotations

import pytest
import requests

from tests.support.emulator_http import Api, form


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


def test_links_account_has_the_defaults_and_the_plan(api, emu):
    response = api.get("/account")
    assert response.status_code == 200 and response.json()["status"] == 200
    account = response.json()["data"]
    # A fresh real account: no default domain, and its /domains omits the install's global domain 1.
    assert (account["default_domain"], account["default_space"], account["timezone"]) == (None, None, "UTC")
    assert account["plan"]["features"]["api"] is True and account["plan_id"] == account["plan"]["id"]
    assert api.get("/domains").json()["data"] == [] and api.get("/domains/1").status_code == 404
    created = api.post("/links", data={"url": "https://example.com/a", "domain_id": "1"})
    assert created.status_code == 201 and created.json()["data"]["domain"]["id"] == 1
    emu.configure_account(timezone="America/New_York", default_domain=emu.store.add_domain(name="go.example")["id"])
    account = api.get("/account").json()["data"]
    assert (account["timezone"], account["default_domain"]) == ("America/New_York", 2)


def test_an_emulator_told_a_default_domain_gives_it_to_every_account():
    from airflow_provider_linkstats.emulator.server import Emulator

    with Emulator(api_keys=("k1", "k2"), default_domain=1) as told:
        assert [account["default_domain"] for account in told.store.users()] == [1, 1]


def test_analytics_account_on_its_own_mount(emu):
    account = Api(emu.analytics_url).get("/account").json()["data"]
    assert account["id"] == 1 and "default_domain" not in account and account["timezone"] == "UTC"


def test_account_settings_over_the_admin_route(emu):
    changed = requests.post(f"{emu.url}/__emulator__/accounts/1", json={"timezone": "Asia/Tokyo"}, timeout=5)
    assert changed.status_code == 200 and changed.json()["data"]["timezone"] == "Asia/Tokyo"
    bad = requests.post(f"{emu.url}/__emulator__/accounts/1", json={"timezone": "Mars/Base"}, timeout=5)
    assert bad.status_code == 422
    assert requests.post(f"{emu.url}/__emulator__/accounts/9", json={}, timeout=5).status_code == 422


@pytest.mark.parametrize(
    ("resource", "values", "change", "object_name"),
    [
        ("spaces", {"name": "Marketing", "color": "2"}, {"name": "Sales"}, "space"),
        ("pixels", {"name": "FB", "type": "facebook", "value": "123"}, {"value": "456"}, "pixel"),
        ("domains", {"name": "Go.Example", "index_page": "https://example.com/"}, {"not_found_page": "https://e.com/404"},
         "domain"),
    ],
)  # fmt: skip
def test_crud(api, resource, values, change, object_name):
    created = api.post(f"/{resource}", values)
    assert created.status_code == 201 and created.json()["status"] == 200
    record = created.json()["data"]
    assert all(record[k] == v for k, v in values.items() if k != "name" or resource != "domains")
    path = f"/{resource}/{record['id']}"
    shown = api.get(path).json()["data"]
    assert shown["user_id"] == 1 and shown["created_at"].endswith(".000000Z")
    updated = api.put(path, change)
    assert updated.status_code == 200 and all(updated.json()["data"][k] == v for k, v in change.items())
    listing = api.get(f"/{resource}").json()
    assert [x["id"] for x in listing["data"]] == [record["id"]] and listing["status"] == 200
    assert api.delete(path).json() == {"id": record["id"], "object": object_name, "deleted": True, "status": 200}
    assert api.get(path).json() == {"message": "Resource not found.", "status": 404}


def test_domain_names_are_stored_lowercase_and_the_global_domain_is_not_listed(api):
    created = api.post("/domains", {"name": "Go.Example"}).json()["data"]
    assert created["name"] == "go.example" and created["id"] == 2
    assert [d["id"] for d in api.get("/domains").json()["data"]] == [2]  # only the account's own
    assert api.get("/domains/1").status_code == 404  # the global domain belongs to no account
    assert api.post("/domains", {"name": "go.example"}).json()["message"] == {
        "name": ["The Name has already been taken."]
    }


@pytest.mark.parametrize(
    ("resource", "values", "field", "message"),
    [
        ("spaces", {}, "name", "The Name field is required."),
        ("spaces", {"name": "S", "color": "9"}, "color", "The Color field must be between 1 and 6."),
        ("pixels", {"name": "P", "type": "myspace", "value": "1"}, "type", "The selected Type is invalid."),
        ("pixels", {"name": "P", "type": "facebook"}, "value", "The Value field is required."),
        ("domains", {"name": "not a domain"}, "name", "The Name field format is invalid."),
    ],
)
def test_validation(api, resource, values, field, message):
    response = api.post(f"/{resource}", values)
    assert response.status_code == 422 and response.json() == {"message": {field: [message]}, "status": 422}


def test_spaces_pixels_and_domains_are_used_by_links_and_their_deletion_reaches_the_links(api):
    space = api.create("spaces", name="S")
    pixel = api.create("pixels", name="P", type="x", value="9")
    domain = api.create("domains", name="go.example")
    link = api.create("links", url="https://e.com", space_id=space["id"], pixel_ids=[pixel["id"]],
                      domain_id=domain["id"], alias="promo")  # fmt: skip
    expected = ("S", "x", "http://go.example/promo")
    assert (link["space"]["name"], link["pixels"][0]["type"], link["short_url"]) == expected
    assert api.get("/links", space_id=space["id"]).json()["meta"]["total"] == 1
    api.delete(f"/spaces/{space['id']}")
    api.delete(f"/pixels/{pixel['id']}")
    after = api.get(f"/links/{link['id']}").json()["data"]
    assert (after["space"], after["pixels"]) == (None, [])
    api.delete(f"/domains/{domain['id']}")
    assert api.get(f"/links/{link['id']}").status_code == 404


def test_listings_search_and_paginate_like_the_others(api):
    for n in range(12):
        api.post("/spaces", form({"name": f"Team {n}"}))
    body = api.get("/spaces", search="team 1", per_page=10).json()
    assert sorted(x["name"] for x in body["data"]) == ["Team 1", "Team 10", "Team 11"]
    page = api.get("/spaces", per_page=10, page=2).json()
    assert page["meta"]["total"] == 12 and len(page["data"]) == 2
