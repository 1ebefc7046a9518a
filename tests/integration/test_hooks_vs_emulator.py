"""The provider's hooks against the emulator: the same calls as against the scripted server, with
the outcome checked in the emulator's own records and request counts."""

from __future__ import annotations

import datetime as dt
import math

import pytest

from airflow_provider_linkstats.client import (
    LinkstatsAuthError,
    LinkstatsNotFoundError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.client.contract import MAX_PER_PAGE, LinkStatus
from airflow_provider_linkstats.client.errors import LinkstatsOutcomeUnknownError
from airflow_provider_linkstats.client.records import link_status, parse_timestamp, record_domain_id
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json


@pytest.fixture
def links(make_hook, emu):
    return make_hook("links", retry_wait=0.01, retry_wait_max=1.0)


@pytest.fixture
def websites(make_hook, emu):
    return make_hook("analytics", retry_wait=0.01, retry_wait_max=1.0)


def test_link_methods(links, emu):
    pixel = emu.store.add_pixel(name="launch", type="facebook", value="px-1")
    rules = [{"key": "US", "value": "https://us.example.com"}]
    created = links.create_link(
        "https://example.com", alias="spring", target_type=1, country=rules, pixel_ids=[pixel["id"]]
    )
    assert created["alias"] == "spring" and record_domain_id(created) == 1  # the connection's default_domain_id
    read = links.get_link(created["id"])
    stored = emu.store.links()[0]
    assert {key: read[key] for key in stored} == stored  # a GET shows the stored record
    assert read["country"] == rules and read["expires_at"] is None  # and the vocabulary's keys (both generations)
    assert read["country_target"] == rules and [p["id"] for p in read["pixels"]] == [pixel["id"]]
    assert link_status(read) is LinkStatus.ACTIVE
    updated = links.update_link(created["id"], disabled=1)
    assert updated["disabled"] == 1  # echoed as "1" by the service, read as a number
    assert link_status(updated) is LinkStatus.DISABLED and emu.store.link_status(created["id"]) == 3
    assert [link["id"] for link in links.list_links(status=LinkStatus.DISABLED)] == [created["id"]]
    assert links.find("spring")["id"] == created["id"]
    assert links.delete_link(created["id"]) is True
    assert emu.store.links() == []
    assert links.delete_link(created["id"], missing_ok=True) is False
    with pytest.raises(LinkstatsNotFoundError):
        links.get_link(created["id"])


def test_website_methods(websites, emu):
    created = websites.create_website(
        "https://Shop.Example.com/", exclude_ips=["10.0.0.1"], exclude_params=["utm_source"]
    )
    assert created["domain"] == "shop.example.com"  # sent the way the service stores it
    assert created["exclude_ips"] == ["10.0.0.1"] and "exclude_params" not in created  # write-only there
    assert websites.get_website(created["id"])["exclude_ips"] == ["10.0.0.1"]
    assert websites.update_website(created["id"], email=1)["email"] == 1
    assert [w["domain"] for w in websites.list_websites(search="SHOP")] == ["shop.example.com"]
    assert websites.find("shop.example.com")["id"] == created["id"]
    assert websites.delete_website(created["id"]) is True and emu.store.websites() == []


def test_listing_walks_every_page_at_100(links, emu):
    for n in range(250):
        emu.store.add_link(url=f"https://e{n}.com")
    assert sorted(link["id"] for link in links.list_links()) == list(range(1, 251))
    assert emu.stats.count(method="GET", path_prefix="/links") == math.ceil(250 / MAX_PER_PAGE)
    assert {q for r in emu.stats.requests() for q in r["query"]["per_page"]} == {"100"}
    assert emu.stats.connections() == 1  # one keep-alive session for the whole walk


def test_expires_at_is_met_by_the_emulator_clock(links, emu):
    emu.clock.set(dt.datetime(2030, 1, 1, 8, 0, tzinfo=dt.timezone.utc), freeze=True)
    created = links.create_link("https://example.com", expires_at=emu.clock.now() + dt.timedelta(minutes=5))
    assert parse_timestamp(links.get_link(created["id"])["ends_at"]) == dt.datetime(
        2030, 1, 1, 8, 5, tzinfo=dt.timezone.utc
    )
    assert links.list_links(status=LinkStatus.EXPIRED) == []
    emu.clock.advance(minutes=5)
    assert links.list_links(status=LinkStatus.EXPIRED) == []  # expired once ends_at is in the past, not at it
    emu.clock.advance(seconds=1)
    assert [link["id"] for link in links.list_links(status=LinkStatus.EXPIRED)] == [created["id"]]


def test_server_validation_error_names_the_field(links, emu):
    links.create_link("https://example.com", alias="taken")
    with pytest.raises(LinkstatsValidationError) as error:
        links.create_link("https://example.com/2", alias="taken")
    assert list(error.value.errors) == ["alias"] and error.value.status == 422


def test_503_on_a_create_is_looked_for_never_sent_again(make_hook, emu):
    """A 503 on a create (maintenance mode answers before any work, a proxy's 503 may come after it):
    looked up within late_commit_window, nothing found, then "outcome unknown"; never sent again.
    The task's retry looks again first, then creates."""
    links = make_hook("links", retry_wait=0.01, retry_wait_max=1.0, late_commit_window=0.5)
    emu.faults.fail_next(count=1, status=503, retry_after=0, method="POST")
    with pytest.raises(LinkstatsOutcomeUnknownError, match="after-503"):
        links.create_link("https://example.com", alias="after-503")
    assert emu.stats.count(method="POST") == 1 and emu.stats.count(method="GET") >= 2
    assert emu.store.links() == []


def test_dropped_create_with_alias_is_reconciled_not_duplicated(links, emu):
    emu.faults.drop_next(method="POST")
    created = links.create_link("https://example.com", alias="lost-answer")
    assert [link["id"] for link in emu.store.links()] == [created["id"]]
    assert [r["method"] for r in emu.stats.requests()] == ["POST", "GET"]


def test_dropped_create_without_alias_stops_as_outcome_unknown_and_is_not_resent(links, emu):
    # Through the hook no task key is given: the service names the alias, so a lost answer cannot be
    # looked up by anything only this create holds (a URL look-up could take a sibling's link).
    emu.faults.drop_next(method="POST")
    with pytest.raises(LinkstatsOutcomeUnknownError, match="may have been created"):
        links.create_link("https://example.com")
    assert len(emu.store.links()) == 1  # the one the lost answer was for: never a second
    assert [r["method"] for r in emu.stats.requests()] == ["POST"]


def test_dropped_delete_is_retried_and_counts_as_done(links, emu):
    link = emu.store.add_link(url="https://example.com")
    emu.faults.drop_next(method="DELETE")
    assert links.delete_link(link["id"]) is True
    assert emu.store.links() == [] and emu.stats.count(method="DELETE") == 2


def test_test_connection(links, emu, monkeypatch):
    assert links.test_connection()[0] is True
    assert emu.stats.requests()[-1]["method"] == "GET"
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT",
        connection_json(emu.url).replace(API_KEY, "wrong-key-0000"),
    )
    wrong = LinkstatsLinksHook()
    ok, message = wrong.test_connection()
    assert ok is False and "wrong-key-0000" not in message and "401" in message
    with pytest.raises(LinkstatsAuthError):
        wrong.list_links()


def test_expired_listing_of_230_links_through_the_hook_in_3_requests(links, emu):
    for n in range(230):
        emu.store.add_link(url=f"https://e{n}.com", expiration_clicks=1, clicks=1)
    active = [emu.store.add_link(url=f"https://live{n}.com")["id"] for n in range(40)]
    emu.stats.reset()
    expired = links.list_links(status=LinkStatus.EXPIRED)
    assert len(expired) == 230 and not set(active) & {link["id"] for link in expired}
    assert all(link_status(link) is LinkStatus.EXPIRED for link in expired)
    # Page requests are built from the client's own parameters: the service's page URLs drop status.
    assert emu.stats.count(method="GET", path_prefix="/links") == 3
