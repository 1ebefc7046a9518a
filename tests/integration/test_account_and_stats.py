"""The rest of the real API through the hooks and operators, against the emulator: the account and
its defaults, domains, spaces, pixels, and the statistics of links and websites."""

from __future__ import annotations

import csv
import datetime as dt

import pytest
import requests

from airflow_provider_linkstats.client import LinkstatsInputError
from airflow_provider_linkstats.client.records import parse_timestamp, record_domain_id
from tests.conftest import connection_json, fails_without_retry, run_operator

TODAY = dt.date.today()
DAYS = {"date_from": TODAY - dt.timedelta(days=7), "date_to": TODAY + dt.timedelta(days=1)}


@pytest.fixture
def links(make_hook, emu):
    return make_hook("links", retry_wait=0.01)


@pytest.fixture
def sites(make_hook, emu):
    return make_hook("analytics", retry_wait=0.01)


def click(emu, alias: str, **headers: str) -> int:
    return requests.get(f"{emu.url}/{alias}", headers=headers, allow_redirects=False, timeout=5).status_code


# -- account and its defaults ---------------------------------------------------------------------


def test_account_is_read_once_per_hook(links, emu):
    account = links.get_account()
    assert account["id"] and "default_domain" in account and "timezone" in account
    assert links.get_account() is account
    assert emu.stats.count(method="GET", path_prefix="/account") == 1


def test_ten_creates_without_a_domain_cost_one_account_request(make_hook, emu, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url, default_domain_id=None))
    emu.configure_account(default_domain=emu.store.add_domain(name="go.example")["id"])  # set in its settings
    links = make_hook("links")
    created = [links.create_link(f"https://example.com/{i}", alias=f"ten-{i}") for i in range(10)]
    assert emu.stats.count(method="GET", path_prefix="/account") == 1  # the ten creates read it once
    assert emu.stats.count(method="GET", path_prefix="/domains") == 0  # a default: its domains are not read
    account = links.get_account()
    assert {record_domain_id(link) for link in created} == {account["default_domain"]}
    assert emu.stats.count(method="POST", path_prefix="/links") == 10


def test_expires_at_is_read_in_the_accounts_time_zone_without_a_timezone_extra(make_hook, emu, monkeypatch):
    emu.store.configure_account(1, timezone="America/New_York")
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emu.url))
    links = make_hook("links")
    moment = dt.datetime(2031, 7, 1, 16, 30, tzinfo=dt.timezone.utc)
    created = links.create_link("https://example.com/tz", expires_at=moment)
    # Sent as 12:30 New York time; the service, reading it in the account's zone, stores 16:30 UTC.
    assert parse_timestamp(links.get_link(created["id"])["ends_at"]) == moment


# -- domains, spaces, pixels ------------------------------------------------------------------------


def test_domains_spaces_and_pixels(links, emu):
    domain = emu.store.add_domain(name="go.example.com")
    assert [d["name"] for d in links.list_domains()] == ["go.example.com"]
    assert links.get_domain(domain["id"])["name"] == "go.example.com"

    space = links.create_space("Spring", color=3)
    assert (space["name"], space["color"]) == ("Spring", 3)
    assert links.update_space(space["id"], color=5)["color"] == 5
    assert [s["id"] for s in links.list_spaces(search="spr")] == [space["id"]]

    pixel = links.create_pixel("Ads", "facebook", "1234567890")
    assert links.get_pixel(pixel["id"])["type"] == "facebook"
    assert links.update_pixel(pixel["id"], value="999")["value"] == "999"
    assert [p["name"] for p in links.list_pixels()] == ["Ads"]

    link = links.create_link("https://example.com/x", alias="filed", space_id=space["id"], pixel_ids=[pixel["id"]])
    assert link["space"]["id"] == space["id"] and [p["id"] for p in link["pixels"]] == [pixel["id"]]
    assert links.delete_space(space["id"]) and links.delete_pixel(pixel["id"])
    assert links.list_spaces() == [] and links.delete_pixel(pixel["id"], missing_ok=True) is False


def test_space_and_pixel_operators(emu):
    from airflow_provider_linkstats.operators.pixels import (
        LinkstatsCreatePixelOperator,
        LinkstatsDeletePixelOperator,
        LinkstatsListPixelsOperator,
    )
    from airflow_provider_linkstats.operators.spaces import (
        LinkstatsCreateSpaceOperator,
        LinkstatsGetSpaceOperator,
        LinkstatsUpdateSpaceOperator,
    )

    space, _ = run_operator(LinkstatsCreateSpaceOperator(task_id="s", name="{{ params.n }}", color=2), n="Q3")
    again, _ = run_operator(LinkstatsCreateSpaceOperator(task_id="s", name="Q3", if_exists="skip"))
    assert again["id"] == space["id"]  # a retried task makes no twin
    updated, _ = run_operator(LinkstatsUpdateSpaceOperator(task_id="u", space_id=space["id"], color="6"))
    assert updated["color"] == 6
    got, _ = run_operator(LinkstatsGetSpaceOperator(task_id="g", space_id=space["id"]))
    assert got["name"] == "Q3"
    pixel, _ = run_operator(LinkstatsCreatePixelOperator(task_id="p", name="tag", type="google-ads", value="AW-1"))
    listed, _ = run_operator(LinkstatsListPixelsOperator(task_id="l"))
    assert [p["id"] for p in listed] == [pixel["id"]]
    deleted, _ = run_operator(LinkstatsDeletePixelOperator(task_id="d", pixel_ids=[pixel["id"]]))
    assert deleted == [pixel["id"]]
    with fails_without_retry(LinkstatsInputError, match="'type': 'myspace'"):
        run_operator(LinkstatsCreatePixelOperator(task_id="p", name="x", type="myspace", value="1"))


# -- statistics -------------------------------------------------------------------------------------


def test_link_stats_walk_three_pages_with_int_counts(links, emu):
    link = emu.store.add_link(url="https://example.com/s", alias="stats")
    for index in range(25):  # 25 referrers, visited 1 to 3 times each
        for _ in range(1 + index % 3):
            assert click(emu, "stats", Referer=f"https://ref{index}.example/page") == 302
    emu.stats.reset()
    rows = links.get_link_stats(link["id"], "referrer", per_page=10, **DAYS)
    assert emu.stats.count(method="GET", path_prefix="/stats") == 3  # 10 + 10 + 5
    assert len(rows) == 25 and all(isinstance(row["count"], int) for row in rows)
    assert sum(row["count"] for row in rows) == sum(1 + i % 3 for i in range(25))
    assert rows[0]["count"] == 3  # most first
    by_country = links.get_link_stats(link["id"], "country", **DAYS)
    assert by_country and all(isinstance(row["count"], int) for row in by_country)


def test_website_stats_from_tracked_visits(sites, emu):
    site = sites.create_website("shop.example.com")
    for visitor in range(30):
        response = requests.post(
            f"{emu.analytics_url}/api/event",
            data={"page": f"https://shop.example.com/p{visitor % 12}", "visitor": f"v{visitor}"},
            # A browser's User-Agent: the website excludes bots, python-requests included.
            headers={
                "X-Country": ["US", "FR", "DE"][visitor % 3],
                "User-Agent": "Mozilla/5.0 (X11; Linux) Firefox/120",
            },
            timeout=5,
        )
        assert response.status_code < 300
    pages = sites.get_website_stats(site["id"], "page", per_page=10, **DAYS)
    assert len(pages) == 12 and sum(row["count"] for row in pages) == 30
    visitors = sites.get_website_stats(site["id"], "visitors", **DAYS)
    assert sum(row["count"] for row in visitors) == 30
    countries = {row["value"]: row["count"] for row in sites.get_website_stats(site["id"], "country", **DAYS)}
    assert sorted(countries.values()) == [10, 10, 10]


@pytest.mark.parametrize(
    ("arguments", "field", "allowed"),
    [
        ({"name": "colour"}, "name", "one of the link statistics"),
        ({"name": "visitors"}, "name", "one of the link statistics"),  # a website statistic
        ({"date_from": "01/05/2026"}, "date_from", "an ISO string"),
        ({"date_to": "tomorrow"}, "date_to", "an ISO string"),
        ({"date_from": "2026-05-02", "date_to": "2026-05-01"}, "date_to", "on or after date_from"),
        ({"sort_by": "clicks"}, "sort_by", "'count', 'value'"),
    ],
)
def test_bad_stats_input_is_rejected_before_any_request(links, emu, arguments, field, allowed):
    query = {"name": "country", "date_from": "2026-05-01", "date_to": "2026-05-31", **arguments}
    emu.stats.reset()
    with pytest.raises(LinkstatsInputError) as caught:
        links.get_link_stats(1, **query)
    assert caught.value.field == field and allowed in str(caught.value)
    assert emu.stats.count() == 0


def test_stats_operators_return_rows_or_write_csv(emu, tmp_path):
    from airflow_provider_linkstats.operators.stats import LinkstatsLinkStatsOperator, LinkstatsWebsiteStatsOperator

    link = emu.store.add_link(url="https://example.com/op", alias="op")
    for country in ("US", "US", "FR"):
        click(emu, "op", **{"X-Country": country})
    task = LinkstatsLinkStatsOperator(
        task_id="by_country", link_id="{{ params.id }}", name="country", date_from="{{ ds }}", date_to="2099-01-01"
    )
    rows, _ = run_operator(task, id=link["id"])
    assert {row["value"]: row["count"] for row in rows} == {"US": 2, "FR": 1}
    path = tmp_path / "out" / "countries.csv"
    written, _ = run_operator(
        LinkstatsLinkStatsOperator(
            task_id="csv",
            link_id=link["id"],
            name="country",
            date_from="2000-01-01",
            date_to="2099-01-01",
            output_path=str(path),
        )
    )
    assert written == str(path)
    assert list(csv.DictReader(path.open())) == [{"value": "US", "count": "2"}, {"value": "FR", "count": "1"}]
    with fails_without_retry(LinkstatsInputError, match="'name': 'clicks'"):
        run_operator(
            LinkstatsWebsiteStatsOperator(
                task_id="w", website_id=1, name="clicks", date_from="2026-01-01", date_to="2026-01-02"
            )
        )
