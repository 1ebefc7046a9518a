"""Listings over HTTP: the pagination envelope, every filter, every sort key and direction."""

from __future__ import annotations

from urllib.parse import parse_qs, urlsplit

import pytest
import requests

from airflow_provider_linkstats.client.contract import LINKS, PER_PAGE_CHOICES, WEBSITES, LinkStatus
from tests.test_emulator_api import Api


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


def ids(response: requests.Response) -> list[int]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


def test_default_listing_is_newest_first_ten_per_page(api, emu):
    for n in range(12):
        emu.store.add_link(url=f"https://e{n}.com")
    body = api.get("/links").json()
    assert [item["id"] for item in body["data"]] == list(range(12, 2, -1))
    assert body["meta"]["per_page"] == 10


def test_pagination_envelope_values(api, emu):
    for n in range(23):
        emu.store.add_link(url=f"https://e{n}.com")
    first = api.get("/links", per_page=10, sort="asc").json()
    assert first["meta"] == {"current_page": 1, "last_page": 3, "per_page": 10, "total": 23, "from": 1, "to": 10}
    assert first["links"]["prev"] is None
    next_query = parse_qs(urlsplit(first["links"]["next"]).query)
    assert next_query == {"per_page": ["10"], "sort": ["asc"], "page": ["2"]}
    assert parse_qs(urlsplit(first["links"]["last"]).query)["page"] == ["3"]
    assert parse_qs(urlsplit(first["links"]["first"]).query)["page"] == ["1"]

    last = api.get("/links", per_page=10, sort="asc", page=3).json()
    assert last["meta"] == {"current_page": 3, "last_page": 3, "per_page": 10, "total": 23, "from": 21, "to": 23}
    assert [item["id"] for item in last["data"]] == [21, 22, 23]
    assert last["links"]["next"] is None and parse_qs(urlsplit(last["links"]["prev"]).query)["page"] == ["2"]

    beyond = api.get("/links", per_page=10, page=4).json()
    assert beyond["data"] == [] and (beyond["meta"]["from"], beyond["meta"]["to"]) == (None, None)


def test_following_next_links_visits_every_record_once(api, emu):
    for n in range(57):
        emu.store.add_link(url=f"https://e{n}.com")
    seen, url = [], api.root + "/links?per_page=25"
    while url:
        body = api.session.get(url, timeout=10).json()
        seen += [item["id"] for item in body["data"]]
        url = body["links"]["next"]
    assert sorted(seen) == list(range(1, 58)) and len(seen) == 57


def test_empty_listing_envelope(api):
    body = api.get("/websites").json()
    assert body["data"] == []
    assert body["meta"] == {"current_page": 1, "last_page": 1, "per_page": 10, "total": 0, "from": None, "to": None}


@pytest.mark.parametrize("per_page", PER_PAGE_CHOICES)
def test_each_page_size(api, emu, per_page):
    for n in range(101):
        emu.store.add_website(domain=f"site{n}.example.com")
    body = api.get("/websites", per_page=per_page).json()
    assert len(body["data"]) == per_page and body["meta"]["last_page"] == -(-101 // per_page)


BAD_PARAMS = [
    ("links", {"per_page": "20"}, "per_page"),
    ("links", {"per_page": "ten"}, "per_page"),
    ("links", {"status": "4"}, "status"),
    ("links", {"status": "active"}, "status"),
    ("links", {"search_by": "domain"}, "search_by"),
    ("links", {"sort_by": "created_at"}, "sort_by"),
    ("links", {"sort": "up"}, "sort"),
    ("links", {"space_id": "x"}, "space_id"),
    ("links", {"domain_id": "0"}, "domain_id"),
    ("links", {"pixel_id": "-3"}, "pixel_id"),
    ("links", {"page": "0"}, "page"),
    ("websites", {"search_by": "title"}, "search_by"),
    ("websites", {"sort_by": "clicks"}, "sort_by"),
    ("websites", {"per_page": "1000"}, "per_page"),
    ("websites", {"page": "two"}, "page"),
]


@pytest.mark.parametrize(("resource", "params", "field"), BAD_PARAMS)
def test_bad_listing_parameter_is_422_naming_it(api, resource, params, field):
    response = api.get(f"/{resource}", **params)
    assert response.status_code == 422
    assert list(response.json()["errors"]) == [field]


def test_every_bad_listing_parameter_reported_at_once(api):
    response = api.get("/links", per_page="7", sort="sideways", status="9")
    assert set(response.json()["errors"]) == {"per_page", "sort", "status"}


# -- filters ---------------------------------------------------------------------------------------


def test_search_is_a_case_insensitive_substring_of_the_chosen_field(api, emu):
    emu.store.add_link(url="https://shop.example.com/sale", alias="Spring-Sale", title="Big Spring Event")
    emu.store.add_link(url="https://blog.example.com/spring", alias="post", title="Notes")
    emu.store.add_link(url="https://other.org", alias="misc", title="springboard")
    assert ids(api.get("/links", search="SPRING")) == [3, 1]  # default: by title
    assert ids(api.get("/links", search="spring", search_by="title")) == [3, 1]
    assert ids(api.get("/links", search="sale", search_by="alias")) == [1]
    assert ids(api.get("/links", search="BLOG.example", search_by="url")) == [2]
    assert ids(api.get("/links", search="", search_by="url")) == [3, 2, 1]  # empty: no filter


def test_space_domain_and_pixel_filters(api, emu):
    emu.store.add_link(url="https://a.com", space_id=1, domain_id=10, pixel_ids=[7, 8])
    emu.store.add_link(url="https://b.com", space_id=2, domain_id=10, pixel_ids=[8])
    emu.store.add_link(url="https://c.com", space_id=1, domain_id=20)
    assert ids(api.get("/links", space_id=1)) == [3, 1]
    assert ids(api.get("/links", domain_id=10)) == [2, 1]
    assert ids(api.get("/links", pixel_id=8)) == [2, 1]
    assert ids(api.get("/links", pixel_id=7, space_id=1, domain_id=10)) == [1]
    assert ids(api.get("/links", pixel_id=99)) == []


def test_status_filter_follows_the_status_rules(api, emu):
    active = emu.store.add_link(url="https://a.com")["id"]
    disabled = emu.store.add_link(url="https://b.com", disabled=1)["id"]
    by_clicks = emu.store.add_link(url="https://c.com", expiration_clicks=5, clicks=5)["id"]
    by_date = emu.store.add_link(url="https://d.com", expiration_date="2000-01-01")["id"]
    disabled_and_expired = emu.store.add_link(url="https://e.com", disabled=1, expiration_clicks=1, clicks=3)["id"]
    assert ids(api.get("/links", status=LinkStatus.ALL.value, sort="asc")) == [1, 2, 3, 4, 5]
    assert ids(api.get("/links", status=LinkStatus.ACTIVE.value)) == [active]
    assert ids(api.get("/links", status=LinkStatus.EXPIRED.value, sort="asc")) == [
        by_clicks,
        by_date,
        disabled_and_expired,
    ]
    assert ids(api.get("/links", status=LinkStatus.DISABLED.value, sort="asc")) == [disabled, disabled_and_expired]
    statuses = {link["id"]: link["status"] for link in api.get("/links").json()["data"]}
    assert statuses == {active: 1, disabled: 3, by_clicks: 2, by_date: 2, disabled_and_expired: 3}


def test_website_search_by_domain(api, emu):
    for domain in ("shop.example.com", "blog.example.com", "Shop.other.org"):
        emu.store.add_website(domain=domain)
    assert ids(api.get("/websites", search="shop")) == [3, 1]
    assert ids(api.get("/websites", search="example", search_by="domain", sort="asc")) == [1, 2]


# -- sorting ---------------------------------------------------------------------------------------

LINK_ROWS = [  # ties in clicks and title show the id tiebreak
    {"url": "https://b.example.com", "alias": "delta", "title": "beta", "clicks": 5},
    {"url": "https://A.example.com", "alias": "Alpha", "title": "Alpha", "clicks": 9},
    {"url": "https://c.example.com", "alias": "charlie", "title": "beta", "clicks": 5},
    {"url": "https://d.example.com", "alias": "bravo", "title": "gamma", "clicks": 0},
]


def _sort_choices(resource) -> tuple:
    return next(p for p in resource.list_params if p.name == "sort_by").choices


@pytest.mark.parametrize("direction", ["asc", "desc"])
@pytest.mark.parametrize("sort_by", _sort_choices(LINKS))
def test_every_link_sort_key_and_direction_with_id_tiebreak(api, emu, sort_by, direction):
    for row in LINK_ROWS:
        emu.store.add_link(**row)
    records = emu.store.links()

    def key(r):
        value = r[sort_by]
        return (value.lower() if isinstance(value, str) else value, r["id"])

    expected = [r["id"] for r in sorted(records, key=key, reverse=direction == "desc")]
    assert ids(api.get("/links", sort_by=sort_by, sort=direction)) == expected


def test_sorting_is_stable_across_pages(api, emu):
    for n in range(30):
        emu.store.add_link(url=f"https://e{n}.com", clicks=n % 3)
    pages = [ids(api.get("/links", sort_by="clicks", sort="desc", per_page=10, page=p)) for p in (1, 2, 3)]
    flat = [i for page in pages for i in page]
    assert sorted(flat) == list(range(1, 31))
    clicks = {link["id"]: link["clicks"] for link in emu.store.links()}
    assert flat == sorted(flat, key=lambda i: (clicks[i], i), reverse=True)


@pytest.mark.parametrize("direction", ["asc", "desc"])
@pytest.mark.parametrize("sort_by", _sort_choices(WEBSITES))
def test_every_website_sort_key_and_direction(api, emu, sort_by, direction):
    for domain in ("m.example.com", "a.example.com", "z.example.com"):
        emu.store.add_website(domain=domain)
    records = emu.store.websites()
    expected = [r["id"] for r in sorted(records, key=lambda r: r[sort_by], reverse=direction == "desc")]
    assert ids(api.get("/websites", sort_by=sort_by, sort=direction)) == expected
