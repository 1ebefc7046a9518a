"""Statistics are real aggregates of the traffic the emulator saw: clicks through the redirect,
visits through the tracking beacon (POST /api/event). Plain HTTP only."""

from __future__ import annotations

import datetime as dt

import pytest
import requests

from airflow_provider_linkstats.emulator import CITY_HEADER, COUNTRY_HEADER, Emulator
from tests.conftest import API_KEY
from tests.support.emulator_http import Api

CHROME_WINDOWS = "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0 Safari/537.36"
SAFARI_IPHONE = "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15 Mobile Safari/604.1"
FIREFOX_LINUX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"
COUNTRIES = "US FR DE GB ES IT NL BE CH AT PT SE NO DK FI PL CZ IE GR RO JP CN IN BR CA".split()


@pytest.fixture
def api(emu) -> Api:
    return Api(emu.url)


def click(emu, alias: str, **headers: str) -> None:
    response = requests.get(f"{emu.url}/{alias}", headers=headers, allow_redirects=False, timeout=10)
    assert response.status_code == 302


def beacon(emu, **data: str) -> requests.Response:
    headers = {"User-Agent": data.pop("agent", CHROME_WINDOWS), COUNTRY_HEADER: data.pop("country", "US")}
    return requests.post(f"{emu.analytics_url}/api/event", data=data, headers=headers, timeout=10)


def test_link_stats_over_three_pages_with_string_counts(api, emu):
    link = emu.store.add_link(url="https://e.com", alias="geo")
    for index, country in enumerate(COUNTRIES):  # 25 countries, US clicked 25 times ... CA once
        for _ in range(len(COUNTRIES) - index):
            click(emu, "geo", **{COUNTRY_HEADER: country})
    seen, url = [], f"{api.root}/stats/{link['id']}?name=country&per_page=10"
    pages = 0
    while url:
        body = api.session.get(url, timeout=10).json()
        assert body["status"] == 200 and body["total"] == 25 and body["last_page"] == 3
        assert list(body)[:3] == ["current_page", "data", "first_page_url"]
        seen += body["data"]
        url, pages = body["next_page_url"], pages + 1
    assert pages == 3
    assert [row["value"] for row in seen] == COUNTRIES  # most clicks first
    assert all(isinstance(row["count"], str) for row in seen)  # a SUM() arrives as a string
    assert [int(row["count"]) for row in seen] == list(range(25, 0, -1))
    assert sum(int(row["count"]) for row in seen) == api.get(f"/links/{link['id']}").json()["data"]["clicks"]


def test_each_link_stat_reads_its_header(api, emu):
    link = emu.store.add_link(url="https://e.com", alias="s")
    click(emu, "s", **{"User-Agent": CHROME_WINDOWS, "Referer": "https://news.example/a", "Accept-Language": "fr-FR",
                       COUNTRY_HEADER: "FR", CITY_HEADER: "Paris"})  # fmt: skip
    click(emu, "s", **{"User-Agent": SAFARI_IPHONE, "Accept-Language": "en-US", COUNTRY_HEADER: "US"})
    click(emu, "s", **{"User-Agent": SAFARI_IPHONE, "Referer": "https://news.example/b", COUNTRY_HEADER: "US"})

    def rows(name: str) -> dict:
        body = api.get(f"/stats/{link['id']}", name=name).json()
        return {row["value"]: int(row["count"]) for row in body["data"]}

    assert rows("browser") == {"Chrome": 1, "Safari": 2}
    assert rows("platform") == {"Windows": 1, "iOS": 2}
    assert rows("device") == {"desktop": 1, "mobile": 2}
    assert rows("language") == {"fr": 1, "en": 1, "": 1}  # not revealed: "" in the day rows
    assert rows("referrer") == {"news.example": 2, "": 1}  # "" is a direct visit
    assert rows("cities") == {}  # v44 lists the name but stores cities under "city"
    assert rows("country") == {"US": 2, "FR": 1}


def test_click_series_by_utc_day_and_hour_whatever_the_accounts_zone(api, emu):
    emu.configure_account(timezone="Asia/Tokyo")  # UTC+9: v44's day rows are the server's UTC days
    link = emu.store.add_link(url="https://e.com", alias="t")
    emu.clock.set(dt.datetime(2030, 1, 1, 14, 30, tzinfo=dt.timezone.utc), freeze=True)  # Jan 1, 23:30 Tokyo
    click(emu, "t")
    emu.clock.advance(hours=1)  # Jan 2, 00:30 Tokyo, still Jan 1 in UTC
    click(emu, "t")
    click(emu, "t")
    emu.clock.advance(hours=10)  # Jan 2, 01:30 UTC
    click(emu, "t")
    days = api.get(f"/stats/{link['id']}", name="clicks").json()["data"]
    assert days == [{"value": "2030-01-01", "count": "3"}, {"value": "2030-01-02", "count": "1"}]  # SUM(): strings
    hours = api.get(f"/stats/{link['id']}", name="clicks_hour", sort_by="value", sort="asc").json()["data"]
    assert hours == [{"value": "01", "count": "1"}, {"value": "14", "count": "1"}, {"value": "15", "count": "2"}]
    only = api.get(f"/stats/{link['id']}", name="clicks", **{"from": "2030-01-02", "to": "2030-01-02"}).json()
    assert only["data"] == [{"value": "2030-01-02", "count": "1"}] and "from=2030-01-02" in only["first_page_url"]


def test_stats_search_sort_and_silent_fallbacks(api, emu):
    link = emu.store.add_link(url="https://e.com", alias="q")
    for country in ("US", "US", "FR", "FI"):
        click(emu, "q", **{COUNTRY_HEADER: country})
    by_value = api.get(f"/stats/{link['id']}", name="country", sort_by="value", sort="asc").json()["data"]
    assert [row["value"] for row in by_value] == ["FI", "FR", "US"]
    assert [row["value"] for row in api.get(f"/stats/{link['id']}", name="country", search="f").json()["data"]] == [
        "FI",
        "FR",
    ]
    fallback = api.get(f"/stats/{link['id']}", name="country", sort_by="nope", per_page="7").json()
    assert fallback["per_page"] == 10 and fallback["data"][0] == {"value": "US", "count": "2"}


@pytest.mark.parametrize(
    ("params", "field", "message"),
    [
        ({}, "name", "The name field is required."),
        ({"name": "visitors"}, "name", "The selected name is invalid."),  # an analytics name
        ({"name": "country", "from": "01/02/2030"}, "from", "The from field must match the format Y-m-d."),
        ({"name": "country", "from": "2030-02-02", "to": "2030-01-01"}, "to",
         "The to field must be a date after or equal to from."),
    ],
)  # fmt: skip
def test_a_bad_stats_query_is_422(api, emu, params, field, message):
    link = emu.store.add_link(url="https://e.com")
    response = api.get(f"/stats/{link['id']}", **params)
    assert response.status_code == 422 and response.json() == {"message": {field: [message]}, "status": 422}


def test_stats_of_a_missing_or_foreign_link_is_404():
    with Emulator(api_keys=(API_KEY, "other-key")) as emu:
        link = emu.store.add_link(url="https://e.com")
        assert Api(emu.url, key="other-key").get(f"/stats/{link['id']}", name="country").status_code == 404
        assert Api(emu.url).get("/stats/999", name="country").json() == {
            "message": "Resource not found.",
            "status": 404,
        }


# -- website traffic ------------------------------------------------------------------------------------


def test_events_feed_website_stats(emu):
    site = emu.store.add_website(domain="shop.example.com")
    analytics = Api(emu.analytics_url)
    # Two visitors: one lands from a search engine on a campaign page and reads two more pages;
    # the other comes directly from an iPhone in France and triggers a custom event.
    # A visit is a pageview whose referrer is not the site itself (no visitor id): a, b and c.
    first = beacon(emu, page="https://shop.example.com/?utm_campaign=spring", referrer="https://search.example/q",
                   screen_resolution="1920x1080")  # fmt: skip
    assert (first.status_code, first.text, first.headers["content-type"][:9]) == (200, "200", "text/html")
    beacon(emu, page="https://shop.example.com/shoes", referrer="https://www.shop.example.com/")  # a's next page
    beacon(emu, page="https://www.shop.example.com/cart", referrer="https://shop.example.com/shoes")
    beacon(emu, page="https://shop.example.com/shoes", agent=SAFARI_IPHONE, country="FR",
           screen_resolution="390x844")  # fmt: skip  # b, direct
    beacon(emu, page="https://shop.example.com/shoes", country="FR", **{"event[name]": "add_to_cart"})
    paid = {"event[name]": "pay:now", "event[value]": "19.5", "event[unit]": "EUR"}
    beacon(emu, page="https://shop.example.com/shoes", country="FR", **paid)
    assert beacon(emu, page="https://shop.example.com/shoes", **{"event[value]": "3"}).text == ""  # no name: nothing
    beacon(emu, page="https://shop.example.com/cart", country="ZZ", agent="Mozilla/5.0", referrer="https://m.example/")

    def rows(name: str) -> dict:
        body = analytics.get(f"/stats/{site['id']}", name=name).json()
        assert body["status"] == 200, body
        return {row["value"]: row["count"] for row in body["data"]}

    today = emu.clock.now().astimezone(dt.timezone.utc).date().isoformat()
    assert rows("visitors") == {today: "3"} and rows("pageviews") == {today: "5"}  # SUM(): strings
    assert rows("page") == {"/shoes": "2", "/?utm_campaign=spring": "1", "/cart": "2"}  # the query stays
    assert rows("landing_page") == {"/?utm_campaign=spring": "1", "/shoes": "1", "/cart": "1"}
    assert rows("referrer") == {"search.example": "1", "": "1", "m.example": "1"}  # not the site's own pages
    assert rows("campaign") == {"spring": "1"}
    assert rows("country") == {"US": "1", "FR": "1", "ZZ": "1"}
    assert rows("continent") == {"North America": "1", "Europe": "1", "": "1"}  # unknown: ""
    assert rows("os") == {"Windows": "1", "iOS": "1", "": "1"} and rows("device") == {"desktop": "2", "mobile": "1"}
    assert rows("resolution") == {"1920x1080": "1", "390x844": "1", "": "1"}
    assert rows("event") == {"add_to_cart::": "1", "pay now:19.5:EUR": "1"}  # name:value:unit
    assert emu.stats.endpoints()["POST /analytics/api/event"] == {"200": 8}


def test_events_honour_the_websites_exclusions_and_need_a_tracked_site(emu):
    site = emu.store.add_website(domain="e.com", exclude_ips="10.9.9.9\n127.0.0.1")
    other = emu.store.add_website(domain="f.com", exclude_bots=1)
    assert beacon(emu, page="https://e.com/").text == "403"  # this client's IP is excluded on e.com
    assert beacon(emu, page="https://f.com/", agent="Googlebot/2.1 (+http://www.google.com/bot.html)").text == "403"
    beacon(emu, page="https://f.com/", agent=FIREFOX_LINUX)
    analytics = Api(emu.analytics_url)
    assert analytics.get(f"/stats/{site['id']}", name="pageviews").json()["total"] == 0
    assert analytics.get(f"/stats/{other['id']}", name="browser").json()["data"] == [{"value": "Firefox", "count": "1"}]
    unknown = beacon(emu, page="https://unknown.example/")
    assert (unknown.status_code, unknown.text) == (200, "404")  # always HTTP 200: the body says it
    assert analytics.get(f"/stats/{site['id']}", name="clicks").status_code == 422  # a links-service name


def test_the_beacon_is_served_without_a_key_on_the_analytics_port(emu):
    with Emulator(api_keys=(API_KEY,), analytics_port=0) as split:
        site = split.store.add_website(domain="e.com")
        browser = {"User-Agent": FIREFOX_LINUX}
        posted = requests.post(f"{split.analytics_url}/api/event", json={"page": "https://e.com/a"}, headers=browser)
        assert posted.status_code == 200
        body = Api(split.analytics_url).get(f"/stats/{site['id']}", name="page").json()
        assert body["data"] == [{"value": "/a", "count": "1"}]
        assert requests.post(f"{split.url}/api/event", json={"page": "https://e.com/a"}, timeout=10).status_code != 200
