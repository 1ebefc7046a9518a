"""Create first, reconcile on conflict (issue 26 item 2): with ``if_exists`` the create is sent
first; only the service's "already taken" answer, recognised by the field it names (alias, domain)
and never by its text, leads to one look-up by the natural key, then skip / update / fail.

Against the emulator on each generation (phpShort 44 and 49, phpAnalytics 3 and 31), the version
pinned so that the requests counted are the task's own, and a scripted server for a translated
install.
"""

from __future__ import annotations

import pytest

from airflow_provider_linkstats.client.errors import (
    LinkstatsConflictError,
    LinkstatsExistsError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator
from airflow_provider_linkstats.operators.websites import LinkstatsCreateWebsiteOperator
from tests.conftest import connection_json, fails_without_retry, run_operator

ANALYTICS_OF = {"44": "3", "49": "31"}


@pytest.fixture(params=["44", "49"])
def emu_pinned(request, emulators, monkeypatch):
    """The emulator of one generation, both connections naming its version (no probe requests)."""
    emulator = emulators(request.param)
    emulator.reset()
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(emulator.url, api_version=request.param))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(emulator.analytics_url, "linkstats_analytics", api_version=ANALYTICS_OF[request.param]),
    )
    yield emulator
    emulator.reset()


def sent(emulator) -> list[str]:
    return [f"{r['method']} {r['endpoint'].split(' ', 1)[1]}" for r in emulator.stats.requests()]


def link(**fields):
    return LinkstatsCreateLinkOperator(task_id="create", **fields)


@pytest.mark.parametrize("if_exists", ["fail", "skip", "update"])
def test_a_first_launch_sends_one_request_per_link(emu_pinned, if_exists):
    for number in range(3):
        task = link(url=f"https://example.com/{number}", alias=f"first-{number}", if_exists=if_exists)
        record, _ = run_operator(task)
        assert record["alias"] == f"first-{number}"
    assert [r["method"] for r in emu_pinned.stats.requests()] == ["POST"] * 3


def test_taken_alias_then_skip_update_fail(emu_pinned):
    first, _ = run_operator(link(url="https://example.com/1", alias="promo"))
    before = len(emu_pinned.stats.requests())

    skipped, _ = run_operator(link(url="https://example.com/1", alias="promo", if_exists="skip"))
    assert skipped["id"] == first["id"] and skipped["url"] == "https://example.com/1"
    # The create went first and was refused; then one look-up by alias.
    skip_requests = emu_pinned.stats.requests()[before:]
    assert [(r["method"], r["status"]) for r in skip_requests] == [("POST", 422), ("GET", 200)]
    assert skip_requests[1]["query"]["search"] == ["promo"]

    # "skip" never takes another long URL's link for the one asked, nor writes to it.
    another = r"alias 'promo' exists \(id=\d+\) but it is another's: url: asked 'https://example.com/2'"
    with fails_without_retry(LinkstatsConflictError, match=another):
        run_operator(link(url="https://example.com/2", alias="promo", if_exists="skip", expiration_clicks=9))
    assert emu_pinned.stats.count(method="PUT") == 0

    updated, _ = run_operator(link(url="https://example.com/3", alias="promo", if_exists="update"))
    assert updated["id"] == first["id"] and updated["url"] == "https://example.com/3"

    exists = rf"if_exists='skip'.*alias 'promo' already exists \(id={first['id']}\)"
    with fails_without_retry(LinkstatsExistsError, match=exists):
        run_operator(link(url="https://example.com/4", alias="promo"))
    assert [r["alias"] for r in emu_pinned.store.links()] == ["promo"]


def test_taken_domain_then_skip_update_fail(emu_pinned):
    first, _ = run_operator(LinkstatsCreateWebsiteOperator(task_id="w", domain="shop.example.com"))
    before = len(emu_pinned.stats.requests())
    again, _ = run_operator(
        LinkstatsCreateWebsiteOperator(task_id="w", domain="shop.example.com", if_exists="update", email_reports=1)
    )
    assert again["id"] == first["id"] and again["email"] == 1
    assert [r["method"] for r in emu_pinned.stats.requests()[before:]] == ["POST", "GET", "PUT"]
    skipped, _ = run_operator(LinkstatsCreateWebsiteOperator(task_id="w", domain="shop.example.com", if_exists="skip"))
    assert skipped["id"] == first["id"]
    with fails_without_retry(LinkstatsExistsError, match="domain 'shop.example.com' already exists"):
        run_operator(LinkstatsCreateWebsiteOperator(task_id="w", domain="shop.example.com"))
    assert len(emu_pinned.store.websites()) == 1


# -- a translated install, over a scripted server -------------------------------------------------

LINK_RECORD = {"id": 5, "alias": "promo", "url": "https://example.com/1", "domain": {"id": 1, "name": "s.test"}}


def point_at(scripted, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/api/v1"))


def test_taken_is_recognised_by_the_field_not_the_text(scripted, monkeypatch):
    point_at(scripted, monkeypatch)
    scripted.add(
        ("respond", 422, {"message": {"alias": ["Der Alias ist bereits vergeben."]}, "status": 422}),
        ("respond", 200, {"data": [LINK_RECORD], "meta": {"current_page": 1, "last_page": 1}}),
    )
    record, _ = run_operator(link(url="https://example.com/1", alias="promo", if_exists="skip"))
    assert record["id"] == 5
    assert [r["method"] for r in scripted.requests] == ["POST", "GET"]


def test_taken_by_a_link_the_key_cannot_see(scripted, monkeypatch):
    """The alias is taken on that domain by another account: the error says to choose another."""
    point_at(scripted, monkeypatch)
    scripted.add(
        ("respond", 422, {"message": {"alias": ["El alias ya ha sido tomado."]}, "status": 422}),
        ("respond", 200, {"data": [], "meta": {"current_page": 1, "last_page": 1}}),
    )
    with fails_without_retry(LinkstatsValidationError, match="choose another alias; 'promo' is taken, but by no link"):
        run_operator(link(url="https://example.com/1", alias="promo", if_exists="skip"))
    assert [r["method"] for r in scripted.requests] == ["POST", "GET"]


def test_a_422_naming_another_field_is_not_reconciled(scripted, monkeypatch):
    """Only the natural key's field means "taken": any other 422 is the task's error, with no look-up."""
    point_at(scripted, monkeypatch)
    scripted.add(("respond", 422, {"message": {"url": ["Die URL ist ungültig."]}, "status": 422}))
    with fails_without_retry(LinkstatsValidationError, match="url: Die URL"):
        run_operator(link(url="https://example.com/1", alias="promo", if_exists="skip"))
    assert [r["method"] for r in scripted.requests] == ["POST"]


# -- the client without Airflow reconciles alike (client/reconcile.py) ------------------------------


@pytest.mark.parametrize("links_version", ["44", "49"])
def test_client_without_airflow_creates_or_reconciles(emulators, links_version):
    from airflow_provider_linkstats.client import LINKS, WEBSITES
    from airflow_provider_linkstats.client.api import LinkstatsClient
    from airflow_provider_linkstats.client.settings import ClientSettings
    from tests.conftest import API_KEY

    emulator = emulators(links_version)
    emulator.reset()
    links = LinkstatsClient(
        ClientSettings(root=emulator.url + "/public/api/v1", timezone="UTC", default_domain_id=1),
        API_KEY,
        generation=links_version,
    )
    sites = LinkstatsClient(
        ClientSettings(root=emulator.analytics_url + "/public/api/v1"), API_KEY, generation=ANALYTICS_OF[links_version]
    )
    try:
        first, outcome = links.create_or_reconcile(LINKS, {"url": "https://example.com/1", "alias": "promo"})
        assert outcome == "created" and sent(emulator) == ["POST /links"]

        skipped, outcome = links.create_or_reconcile(LINKS, {"url": "https://example.com/1", "alias": "promo"}, "skip")
        assert (outcome, skipped["id"], skipped["url"]) == ("skipped", first["id"], "https://example.com/1")
        assert sent(emulator)[1:] == ["POST /links", "GET /links"]  # refused as taken, then one look-up
        with pytest.raises(LinkstatsConflictError, match="another's: url: asked 'https://example.com/2'"):
            links.create_or_reconcile(LINKS, {"url": "https://example.com/2", "alias": "promo"}, "skip")

        updated, outcome = links.create_or_reconcile(
            LINKS, {"url": "https://example.com/3", "alias": "promo"}, if_exists="update"
        )
        assert (outcome, updated["id"]) == ("updated", first["id"])
        assert links.get(LINKS, first["id"])["url"] == "https://example.com/3"

        with pytest.raises(LinkstatsExistsError, match=r"set if_exists='skip'.*alias 'promo' already exists") as caught:
            links.create_or_reconcile(LINKS, {"url": "https://example.com/4", "alias": "promo"})
        assert caught.value.record_id == first["id"]
        assert [link["alias"] for link in emulator.store.links()] == ["promo"]

        # A website given with "www." is found again as the connected version stored it (31 drops it).
        site, outcome = sites.create_or_reconcile(WEBSITES, {"domain": "www.shop.example.com"})
        again, second = sites.create_or_reconcile(WEBSITES, {"domain": "www.shop.example.com"}, "skip")
        assert (outcome, second, again["id"]) == ("created", "skipped", site["id"])
    finally:
        links.close()
        sites.close()


# -- "skip" never writes to another's record (issue 31 item 6) --------------------------------------


def test_skip_fills_in_unset_fields_only_on_a_link_this_run_made(emu_pinned):
    import datetime as dt

    key = "clicks_limit" if emu_pinned.links_version == "49" else "expiration_clicks"
    older, _ = run_operator(link(url="https://example.com/1", alias="older"))  # before the run, no click limit
    # The service's clock runs 10 s ahead from here (the hooks learn it from Date). The run started 5 s
    # ago by the worker's clock: 5 s after "older" and 5 s before "ours" by the service's. Not the
    # worker's "now": on the service's clock that is the second "ours" is made in (created_at keeps
    # whole seconds), which is rightly not taken as certainly this run's.
    started = dt.datetime.now(dt.timezone.utc) - dt.timedelta(seconds=5)
    emu_pinned.clock.advance(10)
    ours, _ = run_operator(link(url="https://example.com/2", alias="ours"), run_started=started)  # the first try
    for alias, url in (("older", "https://example.com/1"), ("ours", "https://example.com/2")):
        task = link(url=url, alias=alias, if_exists="skip", expiration_clicks=9)
        run_operator(task, run_started=started)  # a try of the run that started at ``started``
    stored = {row["alias"]: row for row in emu_pinned.store.links()}
    assert int(stored["ours"][key] or 0) == 9  # this run's link: the field the service left unset is filled in
    assert int(stored["older"][key] or 0) == 0  # someone's link as it was: not written to
    assert emu_pinned.stats.count(method="PUT") == 1
