"""phpAnalytics 3.7+/31 (issue 18 item 5): its statistics names, its domain normalisation (every
``www.`` removed), ``favorite``, the plan's website limit and 403, and the 500 it answers for an
update of a missing website. Against tests/support/scripted_server.py answering as REAL_SERVICE.md says.
"""

from __future__ import annotations

import datetime as dt

import pytest

from airflow_provider_linkstats.client import LinkstatsAuthError, LinkstatsInputError, LinkstatsNotFoundError
from airflow_provider_linkstats.client.errors import LinkstatsOutcomeUnknownError, LinkstatsValidationError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook
from airflow_provider_linkstats.operators.websites import LinkstatsCreateWebsiteOperator
from tests.conftest import connection_json, run_operator

SITE = {"id": 7, "domain": "shop.example.com", "favorite": False, "favorited_at": None}


def analytics(scripted, monkeypatch, version: str) -> LinkstatsAnalyticsHook:
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(scripted.url + "/api/v1", "linkstats_analytics", api_version=version),
    )
    return LinkstatsAnalyticsHook(retry_wait=0.01)


@pytest.mark.parametrize(
    ("version", "name", "wire"),
    [("31", "visitors_hours", "visitors_hour"), ("3.7", "pageviews_hours", "pageviews_hour"),
     ("3", "visitors_hour", "visitors_hours"), ("31", "visitors", "visitors")],
)
def test_statistics_names(scripted, monkeypatch, version, name, wire):
    scripted.add(("respond", 200, {"data": [], "last_page": 1, "current_page": 1, "status": 200}))
    analytics(scripted, monkeypatch, version).get_website_stats(7, name, "2025-01-01", "2025-01-02")
    assert dict(scripted.requests[0]["query"])["name"] == wire


def test_domain_sent_as_31_stores_it_so_a_lost_create_is_found(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    # Made by this create: its created_at (the service's clock, the scripted server's Date) follows the send.
    made = {**SITE, "created_at": (dt.datetime.now(dt.timezone.utc) + dt.timedelta(seconds=3)).isoformat()}
    scripted.add(("drop",), ("respond", 200, {"data": [made], "meta": {"current_page": 1, "last_page": 1}}))
    record = hook.create_website("https://WWW.Shop.www.Example.com/")
    assert record["id"] == 7
    post, lookup = scripted.requests
    assert dict(post["form"])["domain"] == "shop.example.com"
    assert dict(lookup["query"])["search"] == "shop.example.com"


def test_domain_unchanged_on_3x(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "3.3")
    scripted.add(("respond", 201, {"data": {**SITE, "domain": "www.shop.example.com"}, "status": 200}))
    hook.create_website("https://www.shop.example.com")
    assert dict(scripted.requests[0]["form"])["domain"] == "www.shop.example.com"


def test_if_exists_finds_the_website_31_stored_without_www(scripted, monkeypatch):
    analytics(scripted, monkeypatch, "31")
    taken = {"message": {"domain": ["The domain has already been taken."]}, "status": 422}
    scripted.add(
        ("respond", 422, taken), ("respond", 200, {"data": [SITE], "meta": {"current_page": 1, "last_page": 1}})
    )
    task = LinkstatsCreateWebsiteOperator(task_id="t", domain="www.shop.example.com", if_exists="skip")
    record, _ = run_operator(task)
    # The create goes first; the service's "taken" leads to one look-up by the domain 31 stores.
    assert record["id"] == 7 and [r["method"] for r in scripted.requests] == ["POST", "GET"]
    assert dict(scripted.requests[1]["query"])["search"] == "shop.example.com"


def test_favorite_on_update_and_as_a_filter(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(("respond", 200, {"data": {**SITE, "favorite": True}, "status": 200}))
    assert hook.update_website(7, favorite=1)["favorite"] is True
    assert dict(scripted.requests[0]["form"]) == {"favorite": "1"}
    hook.list_websites(favorite=1)
    assert dict(scripted.requests[1]["query"])["favorite"] == "1"


def test_favorite_refused_on_3x_before_any_request(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "3.6")
    with pytest.raises(LinkstatsInputError, match=r"'favorite'.*phpAnalytics 3.0-3.6.*only phpAnalytics 3.7\+ \(31\)"):
        hook.update_website(7, favorite=1)
    with pytest.raises(LinkstatsInputError, match="favorite"):
        hook.list_websites(favorite=0)
    with pytest.raises(LinkstatsInputError, match="favorite"):
        hook.create_website("shop.example.com", favorite=1)
    assert scripted.requests == []


def test_plan_website_limit_reported_with_what_to_do(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(("respond", 422, {"message": {"domain": ["You created too many websites."]}, "status": 422}))
    with pytest.raises(LinkstatsValidationError, match="too many websites.*plan allows no more websites"):
        hook.create_website("another.example.com")


def test_plan_without_api_reported_as_such(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(("respond", 403, {"message": "You don't have access to this feature.", "status": 403}))
    with pytest.raises(LinkstatsAuthError, match="plan has no API access.*upgrade the plan"):
        hook.create_website("another.example.com")


def test_update_of_a_missing_website_is_not_found_after_a_read(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(
        ("respond", 500, {"message": "Server Error"}),
        ("respond", 404, {"message": "Resource not found.", "status": 404}),
    )
    with pytest.raises(LinkstatsNotFoundError, match="no website 99.*GET confirmed"):
        hook.update_website(99, privacy=1)
    assert [r["method"] for r in scripted.requests] == ["PUT", "GET"]  # the 500 was not retried


def test_a_500_on_an_existing_website_stays_a_server_error(scripted, monkeypatch):
    from airflow_provider_linkstats.client import LinkstatsServerError

    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(("respond", 500, {"message": "Server Error"}), ("respond", 200, {"data": SITE, "status": 200}))
    with pytest.raises(LinkstatsServerError):
        hook.update_website(7, privacy=1)


def test_lost_create_without_lookup_says_so(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(("drop",), ("respond", 500, {"message": "Server Error"}))
    with pytest.raises(LinkstatsOutcomeUnknownError):
        hook.create_website("www.shop.example.com")


WEBSITE_CASES = [
    # (case, create arguments, update arguments, what the record reads back)
    ("domain", {"domain": "https://WWW.Every.Example.com/"}, {}, None),  # checked per generation below
    ("privacy", {"privacy": 0}, {}, {"privacy": 0}),
    ("password", {"privacy": 2, "password": "site-pw-1"}, {}, {"privacy": 2, "password": True}),
    ("email", {"email": 1}, {}, {"email": 1}),
    ("exclude_bots", {"exclude_bots": 0}, {}, {"exclude_bots": 0}),
    ("exclude_ips", {"exclude_ips": ["10.0.0.1", "2001:db8::1"]}, {}, {"exclude_ips": ["10.0.0.1", "2001:db8::1"]}),
    ("favorite", {}, {"favorite": 1}, {"favorite": True}),
]


@pytest.mark.parametrize("version", ["3", "31"])
def test_every_website_argument_reaches_each_generation_or_is_refused(emulator, monkeypatch, version):
    """Against the emulator in each phpAnalytics generation: read back equal, or refused before any request.

    ``exclude_params`` is left out: the service accepts it and never returns it (REAL_SERVICE.md).
    """
    from airflow_provider_linkstats.emulator import Emulator
    from tests.conftest import API_KEY

    context = Emulator(api_keys=(API_KEY,), analytics_version="31") if version == "31" else None
    running = context.__enter__() if context else emulator
    try:
        running.reset()
        monkeypatch.setenv(
            "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
            connection_json(running.analytics_url, "linkstats_analytics", api_version="auto"),
        )
        hook = LinkstatsAnalyticsHook()
        refused = set()
        for index, (case, create_args, update_args, expected) in enumerate(WEBSITE_CASES):
            create_args = dict(create_args)
            domain = create_args.pop("domain", f"site{index}.example.com")
            before = running.stats.count()
            try:
                site = hook.create_website(domain, **create_args)
                before = running.stats.count()
                if update_args:
                    hook.update_website(site["id"], **update_args)
            except LinkstatsInputError as error:
                assert running.stats.count() == before and hook.dialect.label in str(error)
                refused.add(case)
                continue
            record = hook.get_website(site["id"])
            if case == "domain":
                expected = {"domain": "every.example.com" if version == "31" else "www.every.example.com"}
            assert {key: record.get(key) for key in expected} == expected, (case, record)
        assert refused == ({"favorite"} if version == "3" else set())
        hook.close()
    finally:
        if context:
            context.__exit__(None, None, None)


def test_a_refused_key_stays_the_plain_401(scripted, monkeypatch):
    hook = analytics(scripted, monkeypatch, "31")
    scripted.add(("respond", 401, {"message": "Unauthenticated."}))
    with pytest.raises(LinkstatsAuthError) as caught:
        hook.create_website("another.example.com")
    assert caught.value.status == 401 and "plan" not in str(caught.value) and caught.value.__cause__ is None
