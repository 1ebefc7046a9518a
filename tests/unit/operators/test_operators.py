"""Operators against the emulator: rendering, validation before any request, if_exists, bulk delete."""

from __future__ import annotations

import logging

import pendulum
import pytest

from airflow_provider_linkstats.client import LinkstatsInputError, LinkstatsNotFoundError
from airflow_provider_linkstats.operators.links import (
    LinkstatsCreateLinkOperator,
    LinkstatsDeleteLinkOperator,
    LinkstatsGetLinkOperator,
    LinkstatsListLinksOperator,
    LinkstatsShortUrlLink,
    LinkstatsUpdateLinkOperator,
)
from airflow_provider_linkstats.operators.websites import (
    LinkstatsCreateWebsiteOperator,
    LinkstatsDeleteWebsiteOperator,
    LinkstatsGetWebsiteOperator,
    LinkstatsListWebsitesOperator,
    LinkstatsUpdateWebsiteOperator,
)
from tests.conftest import API_KEY, fails_without_retry, run_operator

run = run_operator


def logged(caplog, capsys) -> str:
    """Task log text: Airflow 2 logs through stdlib logging, Airflow 3 operators through structlog to stdout."""
    return "\n".join(r.getMessage() for r in caplog.records) + "\n" + capsys.readouterr().out


def api_count(emu, method=None):
    return emu.stats.count(method=method, path_prefix="/public/api/v1")


# -- links ------------------------------------------------------------------------------------


def test_create_link_happy_path_with_targeting_and_expiry(emu):
    record, ti = run(
        LinkstatsCreateLinkOperator(
            task_id="create",
            url="https://example.com/launch",
            alias="launch",
            target_type=1,
            country=[{"key": "US", "value": "https://us.example.com"}],
            expires_at=pendulum.datetime(2027, 1, 2, 3, 4, tz="UTC"),
            expiration_clicks=5,
        )
    )
    assert record["alias"] == "launch" and record["target_type"] == 1  # the service's string echo, read as 1
    stored = emu.store.links()[0]
    assert stored["ends_at"] == "2027-01-02T03:04:00.000000Z"  # expires_at became expiration_date/time
    assert record["country_target"] == [{"key": "US", "value": "https://us.example.com"}]
    assert [link["alias"] for link in emu.store.links()] == ["launch"]
    assert ti.pushed["short_url"] == record["short_url"]


def test_every_templated_link_field_is_rendered(emu):
    space = emu.store.add_space(name="spring")
    op = LinkstatsCreateLinkOperator(
        task_id="create",
        url="{{ params.url }}",
        alias="{{ params.alias }}-{{ ds }}",
        space_id="{{ params.space }}",
        expiration_clicks="{{ params.clicks }}",
        expiration_url="{{ params.url }}/over",
        platform=[{"key": "{{ params.platform }}", "value": "{{ params.url }}/app"}],
        target_type="{{ params.target }}",
        password="{{ params.password }}",
    )
    record, _ = run(
        op,
        url="https://ex.com",
        alias="sale",
        space=str(space["id"]),
        clicks="10",
        platform="iOS",
        target="2",
        password="pa55word",
    )
    assert record["alias"] == "sale-2026-11-21"
    assert record["space"]["id"] == space["id"] and record["expiration_clicks"] == 10 and record["target_type"] == 2
    assert record["expiration_url"] == "https://ex.com/over"
    assert record["platform_target"] == [{"key": "iOS", "value": "https://ex.com/app"}]
    assert record["password"] is True  # set or not: the secret itself never comes back


def test_get_update_list_links(emu):
    created = emu.store.add_link(url="https://example.com/a", alias="a1")
    emu.store.add_link(url="https://example.com/b", alias="b1", disabled=1)
    got, _ = run(LinkstatsGetLinkOperator(task_id="get", link_id="{{ params.id }}"), id=created["id"])
    assert got["id"] == created["id"]
    emu.stats.reset()
    updated, ti = run(LinkstatsUpdateLinkOperator(task_id="upd", link_id=created["id"], url="https://example.com/new"))
    assert updated["url"] == "https://example.com/new" and updated["alias"] == "a1"
    assert emu.stats.count(method="PUT") == 1
    assert ti.pushed["short_url"].endswith("/a1")
    listed, _ = run(
        LinkstatsListLinksOperator(task_id="list", status="{{ params.status }}", sort_by="alias", sort="asc"), status=3
    )
    assert [link["alias"] for link in listed] == ["b1"]


def test_update_sends_only_given_fields(emu):
    created = emu.store.add_link(url="https://example.com/a", alias="keep", expiration_clicks=9)
    emu.stats.reset()
    run(LinkstatsUpdateLinkOperator(task_id="upd", link_id=created["id"], disabled=1))
    assert emu.stats.count(method="PUT") == 1
    after = emu.store.links()[0]
    assert (after["alias"], after["expiration_clicks"], after["disabled"]) == ("keep", 9, 1)


def test_update_with_nothing_to_change_fails_before_request(emu):
    with fails_without_retry(LinkstatsInputError, match="at least one field"):
        run(LinkstatsUpdateLinkOperator(task_id="upd", link_id=1))
    assert api_count(emu) == 0


def test_list_links_max_items_and_count_logged(emu, caplog, capsys):
    for i in range(30):
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"l{i}")
    caplog.set_level(logging.INFO)
    records, _ = run(LinkstatsListLinksOperator(task_id="list", per_page=10, max_items=25))
    assert len(records) == 25
    assert api_count(emu, "GET") == 3
    text = logged(caplog, capsys)
    assert "listed 25 links" in text
    assert "https://example.com/3" not in text


# -- if_exists and retries --------------------------------------------------------------------


def test_if_exists_fail_skip_update(emu):
    from airflow.providers.common.compat.sdk import AirflowFailException

    first, _ = run(LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/1", alias="promo"))
    with pytest.raises(AirflowFailException, match="already exists"):
        run(LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/2", alias="promo"))
    skipped, _ = run(
        LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/1", alias="promo", if_exists="skip")
    )
    assert skipped["id"] == first["id"] and skipped["url"] == "https://example.com/1"
    with pytest.raises(AirflowFailException, match="another's: url: asked 'https://example.com/2'"):
        run(LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/2", alias="promo", if_exists="skip"))
    updated, _ = run(
        LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/3", alias="promo", if_exists="update")
    )
    assert updated["id"] == first["id"] and updated["url"] == "https://example.com/3"
    assert len(emu.store.links()) == 1


def test_if_exists_for_websites_keyed_on_domain(emu):
    first, _ = run(LinkstatsCreateWebsiteOperator(task_id="w", domain="shop.example.com"))
    again, _ = run(
        LinkstatsCreateWebsiteOperator(task_id="w", domain="shop.example.com", if_exists="update", email_reports=1)
    )
    assert again["id"] == first["id"] and again["email"] == 1
    assert len(emu.store.websites()) == 1


def test_retried_task_does_not_duplicate(emu):
    """The first try's create is committed but its answer is lost; the retry finds it by alias."""
    emu.faults.drop_next(count=1, method="POST")
    record, _ = run(
        LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/x", alias="retry-me", if_exists="skip")
    )
    assert record["alias"] == "retry-me"
    again, _ = run(
        LinkstatsCreateLinkOperator(task_id="c", url="https://example.com/x", alias="retry-me", if_exists="skip")
    )
    assert again["id"] == record["id"]
    assert [link["alias"] for link in emu.store.links()] == ["retry-me"]
    # The retry's create went first and was refused (alias taken), then the look-up found the link.
    assert api_count(emu, "POST") == 2


# -- delete -----------------------------------------------------------------------------------


def test_delete_missing_ok_both_ways(emu):
    created = emu.store.add_link(url="https://example.com/a", alias="gone")
    deleted, _ = run(LinkstatsDeleteLinkOperator(task_id="d", link_id=created["id"]))
    assert deleted == created["id"] and emu.store.links() == []
    again, _ = run(LinkstatsDeleteLinkOperator(task_id="d", link_id=created["id"], missing_ok=True))
    assert again == created["id"]
    with fails_without_retry(LinkstatsNotFoundError):
        run(LinkstatsDeleteLinkOperator(task_id="d", link_id=created["id"]))


def test_bulk_delete_of_250_expired_links_leaves_none(emu, caplog, capsys):
    caplog.set_level(logging.INFO)
    for i in range(250):
        emu.store.add_link(url=f"https://example.com/{i}", alias=f"old{i}", expiration_clicks=1, clicks=1)
    for i in range(20):
        emu.store.add_link(url=f"https://example.com/live{i}", alias=f"live{i}")
    expired, _ = run(LinkstatsListLinksOperator(task_id="list", status=2))
    assert len(expired) == 250
    deleted, _ = run(LinkstatsDeleteLinkOperator(task_id="del", link_ids=[r["id"] for r in expired], max_workers=8))
    assert len(deleted) == 250
    remaining = emu.store.links()
    assert len(remaining) == 20 and all(link["alias"].startswith("live") for link in remaining)
    assert api_count(emu, "DELETE") == 250
    import re

    progress = re.findall(r"deleted (\d+)/250 links", logged(caplog, capsys))
    assert progress[-1] == "250" and len(progress) >= 5


def test_bulk_delete_reports_failures_after_trying_every_id(emu):
    from airflow.providers.common.compat.sdk import AirflowException

    ids = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"x{i}")["id"] for i in range(5)]
    with pytest.raises(AirflowException, match="1 of 6 links could not be deleted"):
        run(LinkstatsDeleteLinkOperator(task_id="del", link_ids=[*ids, 9999]))
    assert emu.store.links() == []


def test_bulk_delete_accepts_rendered_string_list(emu):
    ids = [emu.store.add_link(url=f"https://example.com/{i}", alias=f"s{i}")["id"] for i in range(3)]
    deleted, _ = run(LinkstatsDeleteLinkOperator(task_id="del", link_ids="{{ params.ids }}"), ids=ids)
    assert deleted == sorted(ids) and emu.store.links() == []


# -- websites ---------------------------------------------------------------------------------


def test_website_crud(emu):
    created, _ = run(
        LinkstatsCreateWebsiteOperator(
            task_id="c",
            domain="{{ params.domain }}",
            privacy=2,
            password="site-pass-1",
            exclude_ips=["10.1.2.3", "2001:db8::1"],
            exclude_params=["utm_source"],
        ),
        domain="blog.example.com",
    )
    assert created["domain"] == "blog.example.com" and created["exclude_ips"] == ["10.1.2.3", "2001:db8::1"]
    got, _ = run(LinkstatsGetWebsiteOperator(task_id="g", website_id=created["id"]))
    assert got["privacy"] == 2
    updated, _ = run(LinkstatsUpdateWebsiteOperator(task_id="u", website_id=created["id"], exclude_bots=0))
    assert updated["exclude_bots"] == 0 and "exclude_params" not in updated  # accepted, never returned
    listed, _ = run(LinkstatsListWebsitesOperator(task_id="l", search="blog"))
    assert [w["id"] for w in listed] == [created["id"]]
    deleted, _ = run(LinkstatsDeleteWebsiteOperator(task_id="d", website_id=created["id"]))
    assert deleted == created["id"] and emu.store.websites() == []


# -- bad input: see tests/integration/test_bad_input.py (one table for every operator and the sensor) ---------


# -- secrets and the extra link ----------------------------------------------------------------


def test_passwords_are_masked_once_rendered(emu):
    from airflow.providers.common.compat.sdk import redact

    op = LinkstatsCreateLinkOperator(
        task_id="c", url="https://x.com", password="{{ params.pw }}", privacy=2, privacy_password="stats-secret-9"
    )
    run(op, pw="rendered-secret-7")
    assert "rendered-secret-7" not in str(redact("pw is rendered-secret-7"))
    assert "stats-secret-9" not in str(redact("stats-secret-9 here"))
    assert API_KEY not in repr(op.hook) and API_KEY not in repr(op.__dict__.get("hook"))


def test_short_url_extra_link_registered():
    op = LinkstatsCreateLinkOperator(task_id="c", url="https://x.com")
    assert any(isinstance(link, LinkstatsShortUrlLink) for link in op.operator_extra_links)
    assert LinkstatsShortUrlLink.name == "Short URL"


def test_docs_come_from_the_contract():
    assert ":param expiration_clicks: Click count at which the link expires." in LinkstatsCreateLinkOperator.__doc__
    assert ":param domain_id:" not in LinkstatsUpdateLinkOperator.__doc__
    assert ":param email_reports:" in LinkstatsCreateWebsiteOperator.__doc__
    assert "'iOS'" in LinkstatsCreateLinkOperator.__doc__
