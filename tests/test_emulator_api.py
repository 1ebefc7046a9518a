"""The emulator's ten API endpoints over real HTTP: shapes, defaults, validation, auth, 404s."""

from __future__ import annotations

from typing import Any

import pytest
import requests

from airflow_provider_linkstats.client.contract import API_PREFIX, LINKS, WEBSITES
from airflow_provider_linkstats.client.encoding import encode_form
from tests.conftest import API_KEY


class Api:
    """A keep-alive session on the emulator's API root; form values are sent as given."""

    def __init__(self, url: str, key: str = API_KEY) -> None:
        self.root = url + API_PREFIX
        self.session = requests.Session()
        self.session.headers.update({"Authorization": f"Bearer {key}", "Accept": "application/json"})

    def get(self, path: str, **params: Any) -> requests.Response:
        return self.session.get(self.root + path, params=params, timeout=10)

    def post(self, path: str, data: Any = None) -> requests.Response:
        return self.session.post(self.root + path, data=data, timeout=10)

    def put(self, path: str, data: Any = None) -> requests.Response:
        return self.session.put(self.root + path, data=data, timeout=10)

    def delete(self, path: str) -> requests.Response:
        return self.session.delete(self.root + path, timeout=10)

    def create(self, resource: str, **values: Any) -> dict:
        """Create through the client's own form encoding (bracket notation, lines)."""
        response = self.post(f"/{resource}", encode_form(values))
        assert response.status_code == 201, response.text
        return response.json()["data"]


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


CAMPAIGN = {
    "url": "https://example.com/spring",
    "alias": "spring",
    "domain_id": 3,
    "password": "link-pass-123",
    "space_id": 4,
    "pixel_ids": [5, 6],
    "disabled": 0,
    "privacy": 2,
    "privacy_password": "stats-pass-456",
    "expiration_url": "https://example.com/over",
    "expiration_date": "2099-12-31",
    "expiration_time": "23:59",
    "expiration_clicks": 100,
    "target_type": 1,
    "country": [{"key": "US", "value": "https://us.example.com"}, {"key": "FR", "value": "https://fr.example.com"}],
    "platform": [{"key": "iOS", "value": "https://ios.example.com"}],
    "language": [{"key": "de", "value": "https://de.example.com"}],
    "rotation": [{"value": "https://a.example.com"}, {"value": "https://b.example.com"}],
}


# -- links: create, read, update, delete ---------------------------------------------------------


def test_link_create_returns_201_with_every_field_and_no_password(api, emu):
    response = api.post("/links", encode_form(CAMPAIGN))
    assert response.status_code == 201
    link = response.json()["data"]
    public = {k: v for k, v in CAMPAIGN.items() if k not in LINKS.secret_fields}
    assert {k: link[k] for k in public} == public
    assert link["short_url"] == f"{emu.url}/spring"
    assert (link["clicks"], link["status"], link["title"]) == (0, 1, "example.com")
    assert link["created_at"].endswith("Z") and link["created_at"] == link["updated_at"]
    assert "link-pass-123" not in response.text and "stats-pass-456" not in response.text
    assert not set(LINKS.secret_fields) & set(link)


def test_link_defaults_come_from_the_contract(api, emu):
    link = api.create("links", url="https://example.org/page")
    for spec in LINKS.fields:
        if spec.default_on_create is not None:
            assert link[spec.name] == spec.default_on_create, spec.name
    assert (link["pixel_ids"], link["country"], link["rotation"], link["space_id"]) == ([], [], [], None)
    assert len(link["alias"]) == 6 and link["alias"].isalnum()
    assert link["short_url"] == f"{emu.url}/{link['alias']}"
    assert link["title"] == "example.org"


def test_domain_is_accepted_as_domain_id_on_link_create(api):
    assert api.create("links", url="https://example.com", domain=9)["domain_id"] == 9


def test_link_read_update_delete(api):
    link = api.create("links", **CAMPAIGN)
    path = f"/links/{link['id']}"
    read = api.get(path)
    assert read.status_code == 200 and read.json()["data"] == link

    updated = api.put(path, {"url": "https://example.com/summer", "disabled": "1", "rotation": ""})
    assert updated.status_code == 200
    record = updated.json()["data"]
    assert (record["url"], record["disabled"], record["status"], record["rotation"]) == (
        "https://example.com/summer",
        1,
        3,
        [],
    )
    assert record["alias"] == "spring" and record["country"] == CAMPAIGN["country"]  # untouched
    assert api.get(path).json()["data"] == record

    deleted = api.delete(path)
    assert deleted.status_code == 200 and deleted.json()["message"]
    assert api.get(path).status_code == 404


def test_update_with_empty_value_clears_an_optional_field(api):
    link = api.create("links", url="https://example.com", expiration_date="2099-01-01", pixel_ids=[1])
    record = api.put(f"/links/{link['id']}", {"expiration_date": "", "pixel_ids": ""}).json()["data"]
    assert (record["expiration_date"], record["pixel_ids"]) == (None, [])


def test_update_ignores_fields_it_does_not_accept(api):
    link = api.create("links", url="https://example.com", domain_id=2)
    record = api.put(f"/links/{link['id']}", {"domain_id": "7", "alias": "renamed"}).json()["data"]
    assert (record["domain_id"], record["alias"]) == (2, "renamed")


# -- websites ------------------------------------------------------------------------------------


def test_website_crud_and_defaults(api):
    created = api.post(
        "/websites",
        [
            ("domain", "shop.example.com"),
            ("password", "site-pass"),
            ("exclude_params", "utm_source\nref"),
            ("exclude_ips", "10.0.0.1\n2001:db8::1"),
        ],
    )
    assert created.status_code == 201 and "site-pass" not in created.text
    site = created.json()["data"]
    for spec in WEBSITES.fields:
        if spec.default_on_create is not None:
            assert site[spec.name] == spec.default_on_create, spec.name
    assert site["exclude_params"] == ["utm_source", "ref"]
    assert site["exclude_ips"] == ["10.0.0.1", "2001:db8::1"]
    assert "password" not in site

    path = f"/websites/{site['id']}"
    assert api.get(path).json()["data"] == site
    updated = api.put(path, {"email": "1", "exclude_bots": "0", "domain": "other.example.com"}).json()["data"]
    assert (updated["email"], updated["exclude_bots"], updated["domain"]) == (1, 0, "shop.example.com")
    assert api.delete(path).status_code == 200
    assert api.get(path).status_code == 404


# -- validation: Laravel-style 422 naming the field ---------------------------------------------

BAD_INPUT = [
    ("POST", "/links", {"alias": "x"}, "url"),
    ("POST", "/links", {"url": ""}, "url"),
    ("POST", "/links", {"url": "ftp://example.com"}, "url"),
    ("POST", "/links", {"url": "https://e.com", "disabled": "2"}, "disabled"),
    ("POST", "/links", {"url": "https://e.com", "privacy": "5"}, "privacy"),
    ("POST", "/links", {"url": "https://e.com", "target_type": "3"}, "target_type"),
    (
        "POST",
        "/links",
        {"url": "https://e.com", "platform[0][key]": "BeOS", "platform[0][value]": "https://b.com"},
        "platform.0.key",
    ),
    ("POST", "/links", {"url": "https://e.com", "country[0][key]": "US"}, "country.0.value"),
    ("POST", "/links", {"url": "https://e.com", "expiration_date": "2099-02-30"}, "expiration_date"),
    ("POST", "/links", {"url": "https://e.com", "expiration_date": "31/12/2099"}, "expiration_date"),
    ("POST", "/links", {"url": "https://e.com", "expiration_time": "24:00"}, "expiration_time"),
    ("POST", "/links", {"url": "https://e.com", "expiration_time": "9:30"}, "expiration_time"),
    ("POST", "/links", {"url": "https://e.com", "expiration_clicks": "0"}, "expiration_clicks"),
    ("POST", "/links", {"url": "https://e.com", "expiration_clicks": "ten"}, "expiration_clicks"),
    ("POST", "/links", {"url": "https://e.com", "expiration_url": "not a url"}, "expiration_url"),
    ("POST", "/links", {"url": "https://e.com", "space_id": "abc"}, "space_id"),
    ("POST", "/links", {"url": "https://e.com", "domain_id": "-1"}, "domain_id"),
    ("POST", "/links", {"url": "https://e.com", "pixel_ids[]": "x"}, "pixel_ids"),
    ("PUT", "/links/{id}", {"url": ""}, "url"),
    ("PUT", "/links/{id}", {"alias": ""}, "alias"),
    ("PUT", "/links/{id}", {"privacy": "3"}, "privacy"),
    ("POST", "/websites", {"privacy": "1"}, "domain"),
    ("POST", "/websites", {"domain": "https://shop.example.com/"}, "domain"),
    ("POST", "/websites", {"domain": "e.com", "privacy": "9"}, "privacy"),
    ("POST", "/websites", {"domain": "e.com", "email": "2"}, "email"),
    ("POST", "/websites", {"domain": "e.com", "exclude_bots": "yes"}, "exclude_bots"),
    ("POST", "/websites", {"domain": "e.com", "exclude_ips": "10.0.0.1\n999.1.1.1"}, "exclude_ips"),
    ("PUT", "/websites/{id}", {"email": "7"}, "email"),
]


@pytest.mark.parametrize(("method", "path", "form", "field"), BAD_INPUT)
def test_each_rule_answers_422_naming_the_field(api, emu, method, path, form, field):
    record = emu.store.add_link(url="https://e.com") if "links" in path else emu.store.add_website(domain="s.com")
    before = emu.store.links() + emu.store.websites()
    response = api.session.request(method, api.root + path.format(id=record["id"]), data=form, timeout=10)
    assert response.status_code == 422
    body = response.json()
    assert list(body["errors"]) == [field]
    assert body["errors"][field] and all(isinstance(m, str) for m in body["errors"][field])
    assert body["message"] == body["errors"][field][0]
    assert emu.store.links() + emu.store.websites() == before  # nothing written


def test_every_bad_field_is_reported_at_once(api):
    response = api.post("/links", {"disabled": "9", "expiration_time": "noon", "target_type": "7"})
    assert response.status_code == 422
    errors = response.json()["errors"]
    assert set(errors) == {"url", "disabled", "expiration_time", "target_type"}
    assert "(and 3 more errors)" in response.json()["message"]


def test_alias_is_unique_per_domain(api):
    api.create("links", url="https://e.com", alias="sale", domain_id=1)
    twin = api.post("/links", {"url": "https://e.com/2", "alias": "sale", "domain_id": "1"})
    assert twin.status_code == 422 and list(twin.json()["errors"]) == ["alias"]
    other = api.create("links", url="https://e.com/3", alias="sale", domain_id=2)
    renamed = api.put(f"/links/{other['id']}", {"alias": "sale"})
    assert renamed.status_code == 200  # its own alias is no clash
    moved = api.create("links", url="https://e.com/4", alias="spring", domain_id=1)
    clash = api.put(f"/links/{moved['id']}", {"alias": "sale"})
    assert clash.status_code == 422 and list(clash.json()["errors"]) == ["alias"]
    assert api.get(f"/links/{moved['id']}").json()["data"]["alias"] == "spring"
    assert api.create("links", url="https://e.com/5", alias="spring", domain_id=2)["alias"] == "spring"


def test_website_domain_is_unique_ignoring_case(api):
    api.create("websites", domain="shop.example.com")
    twin = api.post("/websites", {"domain": "SHOP.example.com"})
    assert twin.status_code == 422 and list(twin.json()["errors"]) == ["domain"]


# -- 404 and 401 ---------------------------------------------------------------------------------


@pytest.mark.parametrize("resource", ["links", "websites"])
@pytest.mark.parametrize("method", ["GET", "PUT", "DELETE"])
@pytest.mark.parametrize("record_id", ["999", "abc"])
def test_unknown_id_is_404_with_a_message(api, resource, method, record_id):
    response = api.session.request(method, f"{api.root}/{resource}/{record_id}", data={"privacy": "1"}, timeout=10)
    assert response.status_code == 404
    assert response.json()["message"]


ENDPOINTS = [
    (method, f"/{resource}{suffix}")
    for resource in ("links", "websites")
    for method, suffix in (("GET", ""), ("POST", ""), ("GET", "/1"), ("PUT", "/1"), ("DELETE", "/1"))
]


@pytest.mark.parametrize(("method", "path"), ENDPOINTS)
@pytest.mark.parametrize("header", [None, "Bearer wrong-key", f"Basic {API_KEY}", f"Bearer{API_KEY}"])
def test_missing_or_wrong_key_is_401_on_every_endpoint(emu, method, path, header):
    emu.store.add_link(url="https://e.com")
    emu.store.add_website(domain="e.com")
    headers = {"Authorization": header} if header else {}
    response = requests.request(method, emu.url + API_PREFIX + path, headers=headers, data={"url": "https://x.com"})
    assert response.status_code == 401
    assert response.json() == {"message": "Unauthenticated."}
    assert API_KEY not in response.text
    assert len(emu.store.links()) == len(emu.store.websites()) == 1


def test_unknown_route_and_method_answer_json(api):
    missing = api.get("/pixels")
    assert missing.status_code == 404 and missing.json() == {"message": "Not Found"}
    not_allowed = api.session.patch(api.root + "/links/1", timeout=10)
    assert not_allowed.status_code == 405 and not_allowed.json()["message"]
