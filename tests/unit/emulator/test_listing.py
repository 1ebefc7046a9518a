"""Listings over plain HTTP, one test per listing rule of REAL_SERVICE.md."""

from __future__ import annotations

import datetime as dt
from urllib.parse import parse_qsl, urlsplit

import pytest
import requests

from tests.support.emulator_http import Api


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


def ids(response: requests.Response) -> list[int]:
    assert response.status_code == 200, response.text
    return [item["id"] for item in response.json()["data"]]


def query_of(url: str) -> list[tuple[str, str]]:
    return parse_qsl(urlsplit(url).query, keep_blank_values=True)


def test_default_listing_is_newest_first_ten_per_page(api, emu):
    for n in range(12):
        emu.store.add_link(url=f"https://e{n}.com")
    body = api.get("/links").json()
    assert [item["id"] for item in body["data"]] == list(range(12, 2, -1))
    assert (body["meta"]["per_page"], body["meta"]["last_page"], body["meta"]["total"]) == (10, 2, 12)


def test_pages_are_page_n_with_from_to_and_prev_next(api, emu):
    for n in range(23):
        emu.store.add_link(url=f"https://e{n}.com")
    last = api.get("/links", per_page=10, sort="asc", page=3).json()
    meta = last["meta"]
    assert (meta["current_page"], meta["last_page"], meta["from"], meta["to"], meta["total"]) == (3, 3, 21, 23, 23)
    assert [item["id"] for item in last["data"]] == [21, 22, 23]
    assert last["links"]["next"] is None and dict(query_of(last["links"]["prev"]))["page"] == "2"
    beyond = api.get("/links", page=9).json()
    assert beyond["data"] == [] and (beyond["meta"]["from"], beyond["meta"]["to"]) == (None, None)
    assert ids(api.get("/links", page="abc", per_page=10, sort="asc"))[:1] == [1]  # a bad page is page 1


def test_expired_listing_of_230_links_in_3_requests_without_an_active_link(api, emu):
    now = emu.clock.now()
    for n in range(100):  # expired by date
        emu.store.add_link(url=f"https://date{n}.com", expiration_date="2020-01-01", expiration_time="00:00")
    for n in range(130):  # expired by clicks
        emu.store.add_link(url=f"https://clicks{n}.com", expiration_clicks=3, clicks=3 + n % 2)
    for n in range(40):  # active: limit not reached, date ahead, or no expiry at all
        later = (now + dt.timedelta(days=30)).date().isoformat()
        emu.store.add_link(url=f"https://active{n}.com", expiration_clicks=5, clicks=4, expiration_date=later)
    emu.stats.reset()
    seen: list[dict] = []
    for page in (1, 2, 3):
        body = api.get("/links", status=2, per_page=100, page=page).json()
        seen += body["data"]
        assert body["meta"]["last_page"] == 3 and body["meta"]["total"] == 230
    assert emu.stats.count("GET", "/links") == 3
    assert len(seen) == len({item["id"] for item in seen}) == 230
    assert not [item for item in seen if item["url"].startswith("https://active")]


def test_status_filters_apply_the_services_rules(api, emu):
    active = emu.store.add_link(url="https://active.com")
    by_clicks = emu.store.add_link(url="https://clicks.com", expiration_clicks=2, clicks=2)
    by_date = emu.store.add_link(url="https://date.com", expiration_date="2020-01-01", expiration_time="10:00")
    disabled = emu.store.add_link(url="https://off.com", disabled=1)
    both = emu.store.add_link(url="https://both.com", disabled=1, expiration_date="2020-01-01")
    unlimited = emu.store.add_link(url="https://zero.com", expiration_clicks=0, clicks=9)  # 0: no click limit
    assert sorted(ids(api.get("/links", status=1))) == [active["id"], unlimited["id"]]
    assert sorted(ids(api.get("/links", status=2))) == [by_clicks["id"], by_date["id"], both["id"]]
    assert sorted(ids(api.get("/links", status=3))) == [disabled["id"], both["id"]]  # Expired and Disabled overlap
    assert sorted(ids(api.get("/links", status=7))) == [disabled["id"], both["id"]]  # any other value: Disabled
    assert len(ids(api.get("/links", status=0))) == 6
    statuses = [emu.store.link_status(link["id"]) for link in (active, by_clicks, by_date, disabled, both, unlimited)]
    assert statuses == [1, 2, 2, 3, 3, 1]  # one value for tests: Disabled ranks first
    assert "status" not in api.get("/links", status=2).json()["data"][0]


def test_page_urls_drop_status_but_keep_the_other_parameters(api, emu):
    emu.store.add_space(name="S")
    for n in range(30):
        emu.store.add_link(url=f"https://promo{n}.com", expiration_clicks=1, clicks=1, space_id=1)
    body = api.get("/links", status=2, search="promo", search_by="url", space_id=1, domain_id=1,
                   sort_by="clicks", sort="asc", per_page=10).json()  # fmt: skip
    expected = [("search", "promo"), ("search_by", "url"), ("domain_id", "1"), ("space_id", "1"),
                ("sort_by", "clicks"), ("sort", "asc"), ("per_page", "10"), ("page", "2")]  # fmt: skip
    assert query_of(body["links"]["next"]) == expected
    assert urlsplit(body["links"]["next"]).path == "/public/api/v1/links"
    for item in body["meta"]["links"]:
        assert item["url"] is None or "status" not in dict(query_of(item["url"]))


@pytest.mark.parametrize(
    "bad",
    [{"per_page": "7"}, {"per_page": "1000"}, {"per_page": "ten"}, {"sort_by": "secret"}, {"sort": "sideways"},
     {"search_by": "password", "search": "e"}, {"page": "-3"}],
)  # fmt: skip
def test_invalid_listing_parameters_silently_fall_back_to_defaults(api, emu, bad):
    for n in range(12):
        emu.store.add_link(url=f"https://e{n}.com", title=f"e{n}")
    response = api.get("/links", **bad)
    assert response.status_code == 200
    body = response.json()
    assert body["meta"]["per_page"] == 10 and ids(response)[:3] == [12, 11, 10]
    assert ("search_by", "title") in query_of(body["links"]["first"]) and ("sort", "desc") in query_of(
        body["links"]["first"]
    )


def test_search_is_a_case_insensitive_substring_match_like_sql_like(api, emu):
    emu.store.add_link(url="https://a.com", title="Spring SALE 2025")
    emu.store.add_link(url="https://b.com", title="autumn", alias="Spring-b")
    emu.store.add_link(url="https://c.com", title="spring_cleanup")
    assert len(ids(api.get("/links", search="sale"))) == 1
    assert len(ids(api.get("/links", search="SPRING"))) == 2  # title by default
    assert len(ids(api.get("/links", search="ring-", search_by="alias"))) == 1
    assert len(ids(api.get("/links", search="ng_s"))) == 1  # "_" is any one character: "ng s" of "Spring SALE"
    assert len(ids(api.get("/links", search="ng_"))) == 2
    assert len(ids(api.get("/links", search="b.COM", search_by="url"))) == 1


def test_space_id_zero_lists_the_links_without_a_space(api, emu):
    emu.store.add_space(name="S")
    spaced = emu.store.add_link(url="https://s.com", space_id=1)
    loose = [emu.store.add_link(url=f"https://l{n}.com")["id"] for n in range(2)]
    assert sorted(ids(api.get("/links", space_id=0))) == loose
    assert ids(api.get("/links", space_id=1)) == [spaced["id"]]


def test_domain_and_pixel_filters(api, emu):
    emu.store.add_pixel(name="P", type="facebook", value="1")
    other = emu.store.add_domain(name="go.example")
    on_other = emu.store.add_link(url="https://o.com", domain_id=other["id"])
    with_pixel = emu.store.add_link(url="https://p.com", pixel_ids=[1])
    assert ids(api.get("/links", domain_id=other["id"])) == [on_other["id"]]
    assert ids(api.get("/links", pixel_id=1)) == [with_pixel["id"]]


@pytest.mark.parametrize("key", ["id", "clicks", "title", "alias", "url"])
def test_every_sort_key_and_direction(api, emu, key):
    for n, (title, clicks) in enumerate([("b", 5), ("C", 1), ("a", 3)]):
        emu.store.add_link(url=f"https://{title}.com/{n}", alias=f"x{title}{n}", title=title, clicks=clicks)
    rows = api.get("/links", sort_by=key, sort="asc").json()["data"]
    values = [str(r[key]).lower() if isinstance(r[key], str) else r[key] for r in rows]
    assert values == sorted(values)
    assert ids(api.get("/links", sort_by=key, sort="desc")) == ids(api.get("/links", sort_by=key, sort="asc"))[::-1]


def test_many_pages_are_shortened_with_dots_as_laravel_does(api, emu):
    for n in range(200):
        emu.store.add_link(url=f"https://e{n}.com")
    labels = [item["label"] for item in api.get("/links", page=10).json()["meta"]["links"]]
    assert labels == ["&laquo; Previous", "1", "2", "...", "7", "8", "9", "10", "11", "12", "13", "...", "19", "20",
                      "Next &raquo;"]  # fmt: skip


def test_website_listing_keeps_its_parameters_in_page_urls(api, emu):
    for n in range(12):
        emu.store.add_website(domain=f"site{n}.example.com")
    body = api.get("/websites", search="SITE", per_page=10, sort_by="domain", sort="asc").json()
    assert body["meta"]["total"] == 12 and body["data"][0]["domain"] == "site0.example.com"
    assert query_of(body["links"]["next"]) == [("search", "SITE"), ("search_by", "domain"), ("sort_by", "domain"),
                                               ("sort", "asc"), ("per_page", "10"), ("page", "2")]  # fmt: skip
