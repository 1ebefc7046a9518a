"""Clicks: ``GET /{alias}`` redirects, counts, targets, and honours disabled, expiry and passwords."""

from __future__ import annotations

import datetime as dt

import pytest
import requests

from airflow_provider_linkstats.emulator import COUNTRY_HEADER
from tests.support.emulator_http import Api


def click(emu, alias: str, headers: dict | None = None, **params: str) -> requests.Response:
    return requests.get(f"{emu.url}/{alias}", headers=headers or {}, params=params, allow_redirects=False, timeout=10)


def clicks_of(emu, link_id: int) -> int:
    return next(link["clicks"] for link in emu.store.links() if link["id"] == link_id)


def status_of(emu, link_id: int) -> int:
    """1 Active or 2 Expired, as the listing's status filter sees the link (records have no status)."""
    api = Api(emu.url)
    found = [s for s in (1, 2) if link_id in [x["id"] for x in api.get("/links", status=s).json()["data"]]]
    assert len(found) == 1, found
    return found[0]


def test_click_redirects_and_counts(emu):
    link = emu.store.add_link(url="https://example.com/landing?x=1", alias="go")
    for expected in (1, 2):
        response = click(emu, "go")
        assert response.status_code == 302
        assert response.headers["location"] == "https://example.com/landing?x=1"
        assert clicks_of(emu, link["id"]) == expected


def test_short_url_is_followable(emu):
    link = emu.store.add_link(url="https://example.com/", alias="été-2024")
    response = requests.get(link["short_url"], allow_redirects=False, timeout=10)
    assert response.status_code == 302 and clicks_of(emu, link["id"]) == 1


def test_unknown_alias_is_404(emu):
    response = click(emu, "nothing-here")
    assert response.status_code == 404 and response.json()["message"]


def test_geographic_targeting_from_the_country_header(emu):
    emu.store.add_link(
        url="https://example.com",
        alias="geo",
        target_type=1,
        country=[{"key": "US", "value": "https://us.example.com"}, {"key": "FR", "value": "https://fr.example.com"}],
    )
    assert click(emu, "geo", {COUNTRY_HEADER: "US"}).headers["location"] == "https://us.example.com"
    assert click(emu, "geo", {COUNTRY_HEADER: "fr"}).headers["location"] == "https://fr.example.com"
    assert click(emu, "geo", {COUNTRY_HEADER: "DE"}).headers["location"] == "https://example.com"
    assert click(emu, "geo").headers["location"] == "https://example.com"


AGENTS = {
    "iOS": "Mozilla/5.0 (iPhone; CPU iPhone OS 17_0 like Mac OS X) AppleWebKit/605.1.15",
    "Android": "Mozilla/5.0 (Linux; Android 14; Pixel 8) AppleWebKit/537.36 Chrome/120.0 Mobile",
    "Windows": "Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 Chrome/120.0",
    "OS X": "Mozilla/5.0 (Macintosh; Intel Mac OS X 14_1) AppleWebKit/605.1.15 Safari/605.1.15",
    "Linux": "Mozilla/5.0 (X11; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
    "Ubuntu": "Mozilla/5.0 (X11; Ubuntu; Linux x86_64; rv:120.0) Gecko/20100101 Firefox/120.0",
    "Chrome OS": "Mozilla/5.0 (X11; CrOS x86_64 15633.69.0) AppleWebKit/537.36 Chrome/119.0",
}


def host_of(platform: str) -> str:
    return f"https://{platform.replace(' ', '').lower()}.example.com"


def test_platform_targeting_from_the_user_agent(emu):
    rules = [{"key": p, "value": host_of(p)} for p in AGENTS]  # the seven platforms of the docs
    emu.store.add_link(url="https://example.com", alias="app", target_type=2, platform=rules)
    for platform, agent in AGENTS.items():
        location = click(emu, "app", {"User-Agent": agent}).headers["location"]
        assert location == host_of(platform), platform
    assert click(emu, "app", {"User-Agent": "curl/8.0"}).headers["location"] == "https://example.com"


def test_targeting_rules_of_another_type_are_not_applied(emu):
    emu.store.add_link(
        url="https://example.com",
        alias="mixed",
        target_type=2,
        country=[{"key": "US", "value": "https://us.example.com"}],
    )
    assert click(emu, "mixed", {COUNTRY_HEADER: "US"}).headers["location"] == "https://example.com"


def test_language_targeting_from_accept_language(emu):
    """target_type 3 (in the service's code, not its docs); the first two letters of Accept-Language."""
    emu.store.add_link(
        url="https://example.com",
        alias="lang",
        target_type=3,
        language=[
            {"key": "fr", "value": "https://fr.example.com"},
            {"key": "pt", "value": "https://pt.example.com"},
        ],
    )
    assert click(emu, "lang", {"Accept-Language": "fr-CH, fr;q=0.9, en;q=0.8"}).headers["location"] == (
        "https://fr.example.com"
    )
    assert click(emu, "lang", {"Accept-Language": "pt-br"}).headers["location"] == "https://pt.example.com"
    assert click(emu, "lang", {"Accept-Language": "de-DE,fr;q=0.5"}).headers["location"] == "https://example.com"


def test_rotation_serves_values_in_turn(emu):
    values = ["https://a.example.com", "https://b.example.com", "https://c.example.com"]
    link = emu.store.add_link(
        url="https://example.com", alias="spin", target_type=4, rotation=[{"value": v} for v in values]
    )
    served = [click(emu, "spin").headers["location"] for _ in range(7)]
    assert served == values * 2 + values[:1]
    assert clicks_of(emu, link["id"]) == 7


def test_disabled_link_is_404_and_not_counted(emu):
    link = emu.store.add_link(url="https://example.com", alias="off", disabled=1)
    assert click(emu, "off").status_code == 404
    assert clicks_of(emu, link["id"]) == 0


def test_expiry_by_clicks(emu):
    link = emu.store.add_link(
        url="https://example.com", alias="two", expiration_clicks=2, expiration_url="https://example.com/over"
    )
    assert [click(emu, "two").headers["location"] for _ in range(2)] == ["https://example.com"] * 2
    assert status_of(emu, link["id"]) == 2 == emu.store.link_status(link["id"])
    after = click(emu, "two")
    assert (after.status_code, after.headers["location"]) == (302, "https://example.com/over")
    assert clicks_of(emu, link["id"]) == 2  # a visit to an expired link is not a click


def test_expired_without_expiration_url_is_404(emu):
    emu.store.add_link(url="https://example.com", alias="once", expiration_clicks=1)
    assert click(emu, "once").status_code == 302
    assert click(emu, "once").status_code == 404


def test_expiry_by_date_follows_the_emulator_clock(emu):
    emu.clock.set(dt.datetime(2030, 5, 1, 12, 0, tzinfo=dt.timezone.utc), freeze=True)
    link = emu.store.add_link(
        url="https://example.com",
        alias="may",
        expiration_date="2030-05-01",
        expiration_time="12:30",
        expiration_url="https://example.com/over",
    )
    assert click(emu, "may").headers["location"] == "https://example.com"
    assert status_of(emu, link["id"]) == 1
    emu.clock.advance(seconds=30 * 60)
    assert status_of(emu, link["id"]) == 1  # 12:30 exactly: ends_at < now is not yet true
    emu.clock.advance(seconds=1)
    assert status_of(emu, link["id"]) == 2
    assert click(emu, "may").headers["location"] == "https://example.com/over"


def test_date_without_time_expires_at_midnight(emu):
    emu.clock.set(dt.datetime(2030, 5, 1, 23, 59, tzinfo=dt.timezone.utc), freeze=True)
    link = emu.store.add_link(url="https://example.com", expiration_date="2030-05-02")
    assert link["ends_at"] == "2030-05-02T00:00:00.000000Z"
    assert status_of(emu, link["id"]) == 1
    emu.clock.advance(minutes=1, seconds=1)
    assert status_of(emu, link["id"]) == 2


@pytest.mark.parametrize(("given", "status"), [(None, 401), ("wrong", 403), ("s3cret pass", 302)])
def test_password_protected_link(emu, given, status):
    link = emu.store.add_link(url="https://example.com", alias="locked", password="s3cret pass")
    params = {} if given is None else {"password": given}
    response = click(emu, "locked", **params)
    assert response.status_code == status
    assert "s3cret" not in response.text
    assert clicks_of(emu, link["id"]) == (1 if status == 302 else 0)


def test_the_alias_on_the_global_domain_wins_unless_the_host_names_another_domain(emu):
    emu.store.add_link(url="https://on-domain.example.com", alias="same", domain_id=4)
    assert click(emu, "same").headers["location"] == "https://on-domain.example.com"
    emu.store.add_link(url="https://default.example.com", alias="same")
    assert click(emu, "same").headers["location"] == "https://default.example.com"
    on_host = click(emu, "same", {"Host": "d4.example.test"})  # the seeded domain 4's name
    assert on_host.headers["location"] == "https://on-domain.example.com"
