"""A real account without a default domain (issue 32 item 5), against the emulator started as a
fresh real account: ``default_domain`` null, ``GET /domains`` listing only the account's own
domains (never the install's global domain 1, which every account may use).

The connection names no ``default_domain_id`` and the creates no ``domain_id``: with no domain of
its own the account can use only the install's domain (used, and said in the log); with one of its
own it can use several, and the task fails before any create naming them.
"""

from __future__ import annotations

import logging

import pytest

from airflow_provider_linkstats.client.errors import LinkstatsInputError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from airflow_provider_linkstats.operators.launch import LinkstatsBulkCreateLinksOperator
from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
from tests.conftest import connection_json, run_operator


@pytest.fixture(params=["44", "49"])
def fresh(request, emulators, monkeypatch):
    """The emulator of one generation as a fresh account, the connection without default_domain_id."""
    emulator = emulators(request.param)
    emulator.reset()
    assert emulator.store.users()[0]["default_domain"] is None  # as a fresh real account
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT",
        connection_json(emulator.url, api_version=request.param, timezone="UTC", default_domain_id=None),
    )
    yield emulator
    emulator.reset()


def several(emulator) -> int:
    """The account gets a domain of its own: it can now use two (its own and the install's)."""
    return emulator.store.add_domain(user_id=1, name="go.example.com")["id"]


def logged(caplog, capsys) -> str:
    return capsys.readouterr().out + "\n".join(r.getMessage() for r in caplog.records)


def posts(emulator) -> int:
    return emulator.stats.count(method="POST", path_prefix="/links")


def test_readme_hook_example_uses_the_only_domain_and_says_so(fresh, caplog, capsys):
    caplog.set_level(logging.INFO)
    links = LinkstatsLinksHook()
    first = links.create_link("https://example.com/spring", alias="spring-sale", expires_at="P7D")
    second = links.create_link("https://example.com/summer", alias="summer-sale")
    assert [link["domain"]["id"] for link in fresh.store.links()] == [1, 1]
    assert first["short_url"].endswith("/spring-sale") and second["id"]
    # The account and its domains are read once for the hook's life.
    assert fresh.stats.count(method="GET", path_prefix="/account") == 1
    assert fresh.stats.count(method="GET", path_prefix="/domains") == 1
    assert "goes to domain 1, the only domain the account can use" in logged(caplog, capsys)
    links.delete_link(first["id"])


def test_readme_hook_example_with_several_domains_fails_before_any_create(fresh):
    own = several(fresh)
    with pytest.raises(LinkstatsInputError) as caught:
        LinkstatsLinksHook().create_link("https://example.com/spring", alias="spring-sale")
    text = str(caught.value)
    assert "'domain_id'" in text and "default_domain_id extra of connection 'linkstats_links_default'" in text
    assert f"{own} (go.example.com)" in text and "1 (the install's global domain" in text
    assert posts(fresh) == 0


def test_an_account_default_domain_wins_and_its_domains_are_not_read(fresh):
    own = several(fresh)
    fresh.configure_account(default_domain=own)
    LinkstatsLinksHook().create_link("https://example.com/a", alias="a")
    assert [link["domain"]["id"] for link in fresh.store.links()] == [own]
    assert fresh.stats.count(method="GET", path_prefix="/domains") == 0


def test_create_operator_on_a_fresh_account(fresh):
    value, _ = run_operator(LinkstatsCreateLinkOperator(task_id="create", url="https://example.com/a", alias="a"))
    assert value["id"] == fresh.store.links()[0]["id"] and fresh.store.links()[0]["domain"]["id"] == 1


def test_create_operator_with_several_domains_fails_before_any_create(fresh):
    own = several(fresh)
    operator = LinkstatsCreateLinkOperator(task_id="create", url="https://example.com/a", alias="a")
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the operator may wrap it (no retry)
        run_operator(operator)
    error = caught.value.__cause__ or caught.value
    assert isinstance(error, LinkstatsInputError), repr(error)
    assert f"{own} (go.example.com)" in str(error) and "default_domain_id extra" in str(error)
    assert posts(fresh) == 0


def campaign(n: int) -> list[dict]:
    return [{"url": f"https://example.com/p/{i}", "alias": f"fresh-{i:03d}"} for i in range(n)]


def test_bulk_launch_on_a_fresh_account(fresh):
    value, _ = run_operator(LinkstatsBulkCreateLinksOperator(task_id="launch", links=campaign(5)))
    assert value["created"] == 5 and value["failed"] == 0
    assert {link["domain"]["id"] for link in fresh.store.links()} == {1}
    assert posts(fresh) == 5  # one create per link, plus one read of the account and one of its domains
    assert fresh.stats.count(method="GET", path_prefix="/domains") == 1


def test_bulk_launch_with_several_domains_fails_before_any_create(fresh):
    own = several(fresh)
    with pytest.raises(Exception) as caught:  # noqa: PT011 - the operator may wrap it (no retry)
        run_operator(LinkstatsBulkCreateLinksOperator(task_id="launch", links=campaign(5)))
    text = str(caught.value) + str(caught.value.__cause__ or "")
    assert "domain_id" in text and "default_domain_id extra" in text and f"{own} (go.example.com)" in text
    assert posts(fresh) == 0 and fresh.store.links() == []
