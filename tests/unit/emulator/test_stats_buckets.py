"""Statistics bucketed and counted as each generation does it, for traffic at chosen instants near
midnight in zones far from UTC. Over HTTP only: the traffic through the redirect and the beacon
(or ``POST /__emulator__/traffic``), the answers through ``GET /stats/{id}``.

phpShort 44-45 and phpAnalytics 3.x/31 add each hit to a row of its UTC day (the server's zone);
phpShort 46+ converts its click rows to the account's zone as it is when statistics are asked."""

from __future__ import annotations

import datetime as dt
from zoneinfo import ZoneInfo

import pytest
import requests

from airflow_provider_linkstats.emulator import COUNTRY_HEADER
from tests.support.emulator_http import Api

NEW_YORK, KOLKATA = "America/New_York", "Asia/Kolkata"  # UTC-5 in winter, UTC+5:30
FIREFOX = "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0"


@pytest.fixture
def v44(emulators):
    emu = emulators("44")
    emu.reset()
    yield emu
    emu.reset()


@pytest.fixture
def v49(emulators):
    emu = emulators("49")
    emu.reset()
    yield emu
    emu.reset()


def local(zone: str, text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text).replace(tzinfo=ZoneInfo(zone))


def traffic(emu, **body) -> requests.Response:
    return requests.post(f"{emu.url}/__emulator__/traffic", json=body, timeout=10)


def redirect_at(emu, alias: str, moment: dt.datetime, **headers: str) -> None:
    emu.clock.set(moment, freeze=True)
    response = requests.get(f"{emu.url}/{alias}", headers={"User-Agent": FIREFOX, **headers}, allow_redirects=False)
    assert response.status_code == 302


def stats(emu, record_id: int, name: str, start: str, end: str, analytics: bool = False, **more) -> list[dict]:
    api = Api(emu.analytics_url if analytics else emu.url)
    response = api.get(f"/stats/{record_id}", name=name, **{"from": start, "to": end}, **more)
    assert response.status_code == 200, response.text
    body = response.json()
    return body["data"]


# -- phpShort 44: the server's UTC days -------------------------------------------------------------


@pytest.mark.parametrize(
    ("zone", "utc_day"),
    [(NEW_YORK, "2030-01-02"), (KOLKATA, "2030-01-01")],  # 23:59 and 00:01 local fall on one UTC day
)
def test_v44_counts_each_click_on_its_utc_day_whatever_the_accounts_zone(v44, zone, utc_day):
    v44.configure_account(timezone=zone)
    link = v44.store.add_link(url="https://e.com", alias="m")
    redirect_at(v44, "m", local(zone, "2030-01-01T23:59:00"))  # one real redirect ...
    late, early = local(zone, "2030-01-01T23:59:30").isoformat(), local(zone, "2030-01-02T00:01:00").isoformat()
    body = {
        "clicks": [{"link_id": link["id"], "at": late, "count": 2}, {"link_id": link["id"], "at": early, "count": 4}]
    }
    assert traffic(v44, **body).json() == {"clicks": 2, "pageviews": 0}  # ... and 6 recorded ones
    wide = stats(v44, link["id"], "clicks", "2029-12-31", "2030-01-03")
    assert wide == [{"value": utc_day, "count": "7"}]  # a SUM(): a string
    assert stats(v44, link["id"], "clicks", utc_day, utc_day) == wide  # from/to select UTC days
    v44.configure_account(timezone="Pacific/Kiritimati")  # UTC+14: the day rows do not move
    assert stats(v44, link["id"], "clicks", "2029-12-31", "2030-01-03") == wide
    assert Api(v44.url).get(f"/links/{link['id']}").json()["data"]["clicks"] == 7  # the counter moved too
    assert v44.clicks_per_day("UTC") == {(link["id"], utc_day): 7}  # the truth a loaded table is compared with
    assert sum(v44.clicks_per_day(zone).values()) == 7 and len(v44.clicks_per_day(zone)) == 2  # local: 2 days


def test_v44_clicks_hour_sums_each_utc_hour_of_day_over_the_range(v44):
    link = v44.store.add_link(url="https://e.com", alias="h")
    clicks = [{"link_id": link["id"], "at": f"2030-01-0{day}T{hour}:30:00+00:00", "count": day}
              for day in (1, 2, 3) for hour in ("00", "23")]  # fmt: skip
    traffic(v44, clicks=clicks)
    rows = stats(v44, link["id"], "clicks_hour", "2030-01-01", "2030-01-03")
    assert rows == [{"value": "00", "count": "6"}, {"value": "23", "count": "6"}]  # 1+2+3 each, not per day
    assert stats(v44, link["id"], "clicks_hour", "2030-01-02", "2030-01-02") == [
        {"value": "00", "count": "2"},
        {"value": "23", "count": "2"},
    ]
    by_day = stats(v44, link["id"], "clicks", "2030-01-01", "2030-01-03")
    assert [r["value"] for r in by_day] == ["2030-01-03", "2030-01-02", "2030-01-01"]  # by count, highest first


def test_v44_breakdowns_of_recorded_clicks(v44):
    link = v44.store.add_link(url="https://e.com", alias="b")
    at = "2030-01-01T12:00:00Z"
    traffic(v44, clicks=[{"link_id": link["id"], "at": at, "count": 3, "country": "IN", "referrer": "news.example",
                          "device": "mobile"}, {"link_id": link["id"], "at": at}])  # fmt: skip
    assert stats(v44, link["id"], "country", "2030-01-01", "2030-01-01") == [
        {"value": "IN", "count": "3"},
        {"value": "", "count": "1"},  # not revealed: "" in the day rows
    ]
    assert {r["value"]: r["count"] for r in stats(v44, link["id"], "referrer", "2030-01-01", "2030-01-01")} == {
        "news.example": "3",
        "": "1",
    }


# -- phpShort 49: the account's zone at the moment of the request ----------------------------------


def test_v49_click_days_follow_the_accounts_zone_as_it_is_when_asked(v49):
    v49.configure_account(timezone=NEW_YORK)
    v49.clock.set(local(NEW_YORK, "2030-01-03T12:00:00"), freeze=True)
    link = v49.store.add_link(url="https://e.com", alias="z")
    redirect_at(v49, "z", local(NEW_YORK, "2030-01-01T23:59:00"))
    v49.record_clicks(link["id"], local(NEW_YORK, "2030-01-01T23:59:59"))
    v49.record_clicks(link["id"], local(NEW_YORK, "2030-01-02T00:00:00"), count=3)
    assert stats(v49, link["id"], "click", "2030-01-01", "2030-01-02") == [
        {"value": "2030-01-02", "count": 3},  # COUNT(): integers, by count, highest first
        {"value": "2030-01-01", "count": 2},
    ]
    assert stats(v49, link["id"], "click", "2030-01-01", "2030-01-01") == [{"value": "2030-01-01 23", "count": 2}]
    assert stats(v49, link["id"], "country", "2030-01-01", "2030-01-01") == [{"value": None, "count": 2}]
    assert v49.clicks_per_day(NEW_YORK) == {(link["id"], "2030-01-01"): 2, (link["id"], "2030-01-02"): 3}
    v49.configure_account(timezone=KOLKATA)  # the same instants are 10:29-10:30 on Jan 2 there
    assert stats(v49, link["id"], "click", "2030-01-01", "2030-01-02") == [{"value": "2030-01-02", "count": 5}]
    assert stats(v49, link["id"], "click", "2030-01-02", "2030-01-02") == [
        {"value": "2030-01-02 10", "count": 5},
    ]
    assert stats(v49, link["id"], "country", "2030-01-01", "2030-01-01") == []


@pytest.mark.parametrize(
    ("start", "end", "value"),
    [
        ("2030-03-15", "2030-03-15", "2030-03-15 23"),  # under a day: hours
        ("2030-03-15", "2030-03-16", "2030-03-15"),  # one day apart: days
        ("2030-01-01", "2030-03-31", "2030-03-15"),  # 89 days apart: still days
        ("2030-01-01", "2030-04-01", "2030-03"),  # 90: months
        ("2029-01-01", "2030-12-31", "2030-03"),  # 729: months
        ("2029-01-01", "2031-01-01", "2030"),  # 730: years
    ],
)
def test_v49_click_buckets_by_the_span_of_from_and_to(v49, start, end, value):
    v49.configure_account(timezone=KOLKATA)
    v49.clock.set(local(KOLKATA, "2030-03-20T12:00:00"), freeze=True)
    link = v49.store.add_link(url="https://e.com")
    v49.record_clicks(link["id"], "2030-03-15T18:00:00+00:00", count=2)  # 23:30 on Mar 15 in Kolkata
    assert stats(v49, link["id"], "click", start, end) == [{"value": value, "count": 2}]


def test_v49_shifts_by_the_offset_of_the_moment_asked_as_convert_tz_does(v49):
    v49.configure_account(timezone=NEW_YORK)
    v49.clock.set(local(NEW_YORK, "2030-01-10T12:00:00"), freeze=True)  # winter: -05:00
    link = v49.store.add_link(url="https://e.com")
    v49.record_clicks(link["id"], local(NEW_YORK, "2030-07-01T23:30:00"))  # summer, -04:00: 03:30 UTC Jul 2
    assert stats(v49, link["id"], "click", "2030-07-01", "2030-07-01") == [{"value": "2030-07-01 22", "count": 1}]
    v49.clock.set(local(NEW_YORK, "2030-07-10T12:00:00"), freeze=True)  # asked in summer: the true hour
    assert stats(v49, link["id"], "click", "2030-07-01", "2030-07-01") == [{"value": "2030-07-01 23", "count": 1}]


def test_v49_a_from_after_to_becomes_to(v49):
    link = v49.store.add_link(url="https://e.com")
    v49.record_clicks(link["id"], "2030-01-05T10:00:00Z", country="FR")
    v49.record_clicks(link["id"], "2030-01-04T10:00:00Z", country="DE")
    assert stats(v49, link["id"], "country", "2030-01-09", "2030-01-05") == [{"value": "FR", "count": 1}]


# -- phpAnalytics 3.x and 31: the server's UTC days --------------------------------------------------


def beacon(emu, moment: dt.datetime, page: str, referrer: str | None = None, **data: str) -> None:
    emu.clock.set(moment, freeze=True)
    sent = {"page": page, **({"referrer": referrer} if referrer else {}), **data}
    answer = requests.post(f"{emu.analytics_url}/api/event", data=sent, headers={"User-Agent": FIREFOX}, timeout=10)
    assert answer.status_code == 200


@pytest.mark.parametrize("links_version", ["44", "49"])  # phpAnalytics 3.x, then 31
def test_analytics_days_and_hours_are_utc_and_visitors_are_external_referrals(emulators, links_version):
    emu = emulators(links_version)
    emu.reset()
    hourly = "pageviews_hours" if links_version == "44" else "pageviews_hour"
    emu.configure_account(timezone=KOLKATA)  # plays no part
    site = emu.store.add_website(domain="shop.example.com")
    night = local(KOLKATA, "2030-01-02T05:29:00")  # 23:59 UTC on Jan 1
    beacon(emu, night, "https://shop.example.com/?utm_campaign=spring", "https://search.example/q")  # a visit
    beacon(emu, night, "https://shop.example.com/shoes", "https://www.shop.example.com/")  # inside the site
    beacon(emu, night + dt.timedelta(minutes=2), "https://shop.example.com/cart")  # 00:01 UTC Jan 2, direct: a visit
    beacon(emu, night + dt.timedelta(minutes=3), "https://shop.example.com/cart", **{"event[name]": "buy"})
    inside = {"website_id": site["id"], "at": "2030-01-02T23:10:00Z", "count": 4, "page": "/cart",
              "referrer": "shop.example.com"}  # fmt: skip
    body = {
        "pageviews": [
            inside,
            {"website_id": site["id"], "at": "2030-01-03T23:50:00Z", "referrer": "https://m.example/"},
        ]
    }
    assert traffic(emu, **body).status_code == 200

    def rows(name: str, start: str = "2030-01-01", end: str = "2030-01-03") -> dict:
        data = stats(emu, site["id"], name, start, end, analytics=True)
        assert all(isinstance(r["count"], str) for r in data)  # SUM(): strings, series included
        return {r["value"]: r["count"] for r in data}

    assert rows("pageviews") == {"2030-01-01": "2", "2030-01-02": "5", "2030-01-03": "1"}
    truth = emu.pageviews_per_day("UTC", site["id"])
    assert truth == {(site["id"], day): int(count) for day, count in rows("pageviews").items()}
    assert sum(emu.pageviews_per_day("UTC", visits=True).values()) == 3
    assert rows("visitors") == {"2030-01-01": "1", "2030-01-02": "1", "2030-01-03": "1"}
    assert rows(hourly) == {"23": "7", "00": "1"}  # pageviews, each hour of day summed over the days
    assert rows(hourly.replace("pageviews", "visitors")) == {"23": "2", "00": "1"}
    assert rows("referrer") == {"search.example": "1", "": "1", "m.example": "1"}
    assert rows("landing_page") == {"/?utm_campaign=spring": "1", "/cart": "1", "/": "1"}
    assert rows("page") == {"/cart": "5", "/?utm_campaign=spring": "1", "/shoes": "1", "/": "1"}
    assert rows("event") == {"buy::": "1"}  # was a 500
    assert rows("pageviews", "2030-01-02", "2030-01-02") == {"2030-01-02": "5"}
    first = stats(emu, site["id"], "pageviews", "2030-01-01", "2030-01-03", analytics=True)
    assert [r["value"] for r in first] == ["2030-01-02", "2030-01-01", "2030-01-03"]  # by count, then value
    if links_version == "49":  # 31: from after to selects nothing (no 422)
        assert stats(emu, site["id"], "pageviews", "2030-01-03", "2030-01-01", analytics=True) == []
    emu.reset()


# -- recording traffic in bulk ---------------------------------------------------------------------


def test_recorded_traffic_is_all_or_nothing_and_a_bad_item_is_a_422_naming_it(v44):
    link = v44.store.add_link(url="https://e.com")
    good = {"link_id": link["id"], "at": "2030-01-01T00:00:00Z", "count": 5}
    for bad, words in [
        ({"link_id": 999}, "no link 999"),
        ({"link_id": link["id"], "at": "2030-01-01T00:00:00"}, "offset"),
        ({"link_id": link["id"], "count": 0}, "count must be a positive integer"),
        ({"link_id": link["id"], "colour": "red"}, "unknown click attributes ['colour']"),
    ]:
        answer = traffic(v44, clicks=[good, bad])
        assert answer.status_code == 422 and words in answer.json()["message"], answer.text
    assert traffic(v44, visits=[]).status_code == 422
    assert Api(v44.url).get(f"/links/{link['id']}").json()["data"]["clicks"] == 0
    assert stats(v44, link["id"], "clicks", "2030-01-01", "2030-01-01") == []


def test_ten_thousand_clicks_in_one_request(v44):
    v44.store.seed_links(200, alias_prefix="bulk-", url="https://e.com")
    ids = [row["id"] for row in v44.store.links()]
    clicks = [{"link_id": i, "at": f"2030-01-0{1 + n % 5}T23:59:59-05:00", "count": 1 + n % 3, COUNTRY_HEADER: "x"}
              for n, i in enumerate(ids)]  # fmt: skip
    assert traffic(v44, clicks=clicks).status_code == 422  # X-Country is a header, not an attribute
    clicks = [{k: v for k, v in c.items() if k != COUNTRY_HEADER} for c in clicks] * 50
    assert traffic(v44, clicks=clicks).json() == {"clicks": 10_000, "pageviews": 0}
    listed = Api(v44.url).get("/links", per_page=100).json()
    assert listed["meta"]["total"] == 200 and sum(r["clicks"] for r in listed["data"]) > 0
    total = sum(int(r["count"]) for r in stats(v44, ids[0], "clicks", "2030-01-01", "2030-01-09"))
    assert total == 50 * 1  # link 0: 50 times one click
