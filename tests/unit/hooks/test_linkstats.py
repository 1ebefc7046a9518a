"""Hooks against a scripted HTTP server on 127.0.0.1: what reaches the wire and what answers mean."""

from __future__ import annotations

import datetime as dt
import time

import pendulum
import pytest

from airflow_provider_linkstats.client import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsOutcomeUnknownError,
    LinkstatsRateLimitError,
    LinkstatsServerError,
    LinkstatsValidationError,
)
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json

LINK = {"id": 7, "alias": "spring", "url": "https://example.com/spring", "clicks": 0}
WEBSITE = {"id": 3, "domain": "shop.example.com", "privacy": 1}


pytestmark = pytest.mark.usefixtures("no_key_in_logs")  # every test here also proves the key is never logged


@pytest.fixture
def links(make_hook, scripted):
    return make_hook("links", scripted.url, retry_wait=0.01, retry_wait_max=2.0)


@pytest.fixture
def websites(make_hook, scripted):
    return make_hook("analytics", scripted.url, retry_wait=0.01)


def form(request: dict) -> dict:
    return dict(request["form"])


# -- every hook method ---------------------------------------------------------------------------


def test_create_link_sends_form_with_bearer_and_returns_record(links, scripted):
    scripted.add(("respond", 201, {"data": LINK}))
    record = links.create_link("https://example.com/spring", alias="spring", domain_id=2, disabled=False)
    assert record == LINK
    (request,) = scripted.requests
    assert request["method"] == "POST" and request["path"] == "/public/api/v1/links"
    assert request["headers"]["Authorization"] == f"Bearer {API_KEY}"
    assert request["headers"]["Content-Type"] == "application/x-www-form-urlencoded"
    assert form(request) == {"url": "https://example.com/spring", "alias": "spring", "domain_id": "2", "disabled": "0"}


def test_get_update_delete_link(links, scripted):
    scripted.add(
        ("respond", 200, {"data": LINK}),
        ("respond", 200, {"data": {**LINK, "url": "https://example.com/new"}}),
        ("respond", 200, {"message": "Resource deleted."}),
    )
    assert links.get_link(7) == LINK
    updated = links.update_link("7", url="https://example.com/new", password=None)
    assert updated["url"] == "https://example.com/new"
    assert links.delete_link(7) is True
    get, put, delete = scripted.requests
    assert (get["method"], get["path"], get["headers"]["Accept"]) == (
        "GET",
        "/public/api/v1/links/7",
        "application/json",
    )
    assert (put["method"], put["path"]) == ("PUT", "/public/api/v1/links/7")
    assert put["form"] == [("url", "https://example.com/new")]  # None was not sent as ""
    assert (delete["method"], delete["path"]) == ("DELETE", "/public/api/v1/links/7")


def test_update_with_204_reads_the_record_back(links, scripted):
    scripted.add(("respond", 204, b""), ("respond", 200, {"data": {**LINK, "disabled": 1}}))
    assert links.update_link(7, disabled=1)["disabled"] == 1
    assert [r["method"] for r in scripted.requests] == ["PUT", "GET"]


def test_delete_missing_ok(links, scripted):
    scripted.add(("respond", 404, {"message": "No query results."}), ("respond", 404, {"message": "gone"}))
    assert links.delete_link(9, missing_ok=True) is False
    with pytest.raises(LinkstatsNotFoundError, match="gone"):
        links.delete_link(9)


def test_website_methods(websites, scripted):
    stored = {**WEBSITE, "privacy": 2, "password": True}  # what a create answers: the fields as sent
    scripted.add(
        ("respond", 201, {"data": stored}),
        ("respond", 200, WEBSITE),  # bare object accepted too
        ("respond", 200, {"data": {**WEBSITE, "email": 1}}),
        ("respond", 200, {"message": "deleted"}),
        ("respond", 200, {"data": [WEBSITE], "meta": {"current_page": 1, "last_page": 1}}),
    )
    created = websites.create_website(
        "shop.example.com", privacy=2, password="s3cret", exclude_params=["utm_source", "ref"], exclude_ips=["10.0.0.1"]
    )
    assert created == stored
    assert websites.get_website(3) == WEBSITE
    assert websites.update_website(3, email=1)["email"] == 1
    assert websites.delete_website(3)
    assert websites.list_websites(search="shop", sort_by="domain", sort="asc") == [WEBSITE]
    post = scripted.requests[0]
    assert post["path"] == "/public/api/v1/websites"
    assert form(post) == {
        "domain": "shop.example.com",
        "privacy": "2",
        "password": "s3cret",
        "exclude_params": "utm_source\nref",
        "exclude_ips": "10.0.0.1",
    }
    listing = scripted.requests[-1]
    assert dict(listing["query"]) == {"search": "shop", "sort_by": "domain", "sort": "asc", "per_page": "100"}


def test_every_link_listing_filter_reaches_the_wire(links, scripted):
    links.list_links(
        search="spring",
        search_by="alias",
        status=2,
        space_id=4,
        domain_id=5,
        pixel_id=6,
        sort_by="clicks",
        sort="asc",
        per_page=25,
    )
    (request,) = scripted.requests
    assert dict(request["query"]) == {
        "search": "spring",
        "search_by": "alias",
        "status": "2",
        "space_id": "4",
        "domain_id": "5",
        "pixel_id": "6",
        "sort_by": "clicks",
        "sort": "asc",
        "per_page": "25",
    }


def test_targeting_and_pixels_use_bracket_notation(links, scripted):
    scripted.add(("respond", 201, {"data": LINK}))
    links.create_link(
        "https://example.com",
        target_type=1,
        country=[{"key": "US", "value": "https://us.example.com"}, {"key": "FR", "value": "https://fr.example.com"}],
        platform=[{"key": "iOS", "value": "https://apps.apple.com/x"}],
        rotation=[{"value": "https://a.example.com"}, {"value": "https://b.example.com"}],
        pixel_ids=[1, 2],
    )
    assert scripted.requests[0]["form"] == [
        ("url", "https://example.com"),
        ("target_type", "1"),
        ("country[0][key]", "US"),
        ("country[0][value]", "https://us.example.com"),
        ("country[1][key]", "FR"),
        ("country[1][value]", "https://fr.example.com"),
        ("platform[0][key]", "iOS"),
        ("platform[0][value]", "https://apps.apple.com/x"),
        ("rotation[0][value]", "https://a.example.com"),
        ("rotation[1][value]", "https://b.example.com"),
        ("pixel_ids[]", "1"),
        ("pixel_ids[]", "2"),
        ("domain_id", "1"),  # the connection's default_domain_id
    ]


def test_expires_at_in_connection_timezone(scripted, monkeypatch):
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, timezone="America/New_York")
    )
    hook = LinkstatsLinksHook()
    scripted.add(("respond", 201, {"data": LINK}), ("respond", 200, {"data": LINK}))
    hook.create_link("https://example.com", expires_at=pendulum.datetime(2036, 7, 1, 16, 30, 20, tz="UTC"))
    hook.update_link(7, expires_at=dt.datetime(2036, 1, 10, 5, 0, tzinfo=dt.timezone.utc))
    create, update = (form(r) for r in scripted.requests)
    assert (create["expiration_date"], create["expiration_time"]) == ("2036-07-01", "12:31")  # EDT, rounded up
    assert (update["expiration_date"], update["expiration_time"]) == ("2036-01-10", "00:00")  # EST
    with pytest.raises(LinkstatsInputError, match="expires_at"):
        hook.create_link("https://example.com", expires_at=dt.datetime(2036, 1, 1))  # naive
    with pytest.raises(LinkstatsInputError, match="not both"):
        hook.create_link("https://example.com", expires_at="2036-01-01T00:00:00+00:00", expiration_date="2036-01-02")
    assert len(scripted.requests) == 2


# -- pagination ----------------------------------------------------------------------------------


def _pages_envelope(total: int, per_page: int = 100):
    def answer(record):
        page = int(dict(record["query"]).get("page", 1))
        last = -(-total // per_page)
        start = (page - 1) * per_page
        items = [{"id": i} for i in range(start + 1, min(total, start + per_page) + 1)]
        return (
            "respond",
            200,
            {"data": items, "links": {"next": None}, "meta": {"current_page": page, "last_page": last, "total": total}},
        )

    return answer


def _pages_bare(total: int, per_page: int = 100):
    def answer(record):
        page = int(dict(record["query"]).get("page", 1))
        start = (page - 1) * per_page
        return ("respond", 200, [{"id": i} for i in range(start + 1, min(total, start + per_page) + 1)])

    return answer


def test_iter_links_walks_envelope_pages(links, scripted):
    scripted.set_default(_pages_envelope(250))
    ids = [link["id"] for link in links.iter_links(status=2)]
    assert ids == list(range(1, 251))
    pages = [dict(r["query"]) for r in scripted.requests]
    assert [p.get("page", "1") for p in pages] == ["1", "2", "3"]
    assert all(p["per_page"] == "100" and p["status"] == "2" for p in pages)


def test_iter_links_walks_bare_list_until_short_page(links, scripted):
    scripted.set_default(_pages_bare(230))
    assert len(links.list_links()) == 230
    assert len(scripted.requests) == 3


def test_bare_list_with_exact_multiple_stops_on_empty_page(links, scripted):
    scripted.set_default(_pages_bare(300))
    assert len(links.list_links()) == 300
    assert len(scripted.requests) == 4


def test_max_items_stops_early(links, scripted):
    scripted.set_default(_pages_envelope(1000))
    assert len(links.list_links(max_items=150)) == 150
    assert len(scripted.requests) == 2


def test_links_only_envelope(links, scripted):
    scripted.add(
        ("respond", 200, {"data": [{"id": 1}], "links": {"next": "http://x/?page=2"}}),
        ("respond", 200, {"data": [{"id": 2}], "links": {"next": None}}),
    )
    assert [r["id"] for r in links.iter_links()] == [1, 2]


# -- errors and retries --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "error_type"),
    [
        (400, LinkstatsApiError),
        (401, LinkstatsAuthError),
        (403, LinkstatsAuthError),
        (404, LinkstatsNotFoundError),
        (422, LinkstatsValidationError),
        (500, LinkstatsServerError),
    ],
)
def test_error_status_mapped_with_server_message(links, scripted, status, error_type):
    scripted.add(("respond", status, {"message": f"server says {status}", "errors": {"alias": ["taken"]}}))
    with pytest.raises(error_type) as caught:
        links.get_link(1)
    assert f"server says {status}" in str(caught.value)
    assert caught.value.status == status
    assert len(scripted.requests) == 1  # 4xx and 500 are never retried
    if status == 422:
        assert caught.value.errors == {"alias": ["taken"]}


def test_429_retry_after_is_honoured(links, scripted):
    scripted.add(("respond", 429, {"message": "slow down"}, {"Retry-After": "1"}), ("respond", 200, {"data": LINK}))
    started = time.monotonic()
    assert links.get_link(7) == LINK
    assert time.monotonic() - started >= 0.95
    assert len(scripted.requests) == 2


def test_429_above_cap_fails_at_once(links, scripted):
    scripted.add(("respond", 429, {"message": "come back tomorrow"}, {"Retry-After": "86400"}))
    with pytest.raises(LinkstatsRateLimitError, match="come back tomorrow") as caught:
        links.get_link(7)
    assert caught.value.retry_after == 86400
    assert len(scripted.requests) == 1


def test_503_then_success_is_retried(links, scripted):
    scripted.add(("respond", 503, "<html>busy</html>"), ("respond", 502, b""), ("respond", 200, {"data": LINK}))
    assert links.get_link(7) == LINK
    assert len(scripted.requests) == 3


def test_retries_are_bounded(links, scripted):
    scripted.set_default(("respond", 503, {"message": "down"}))
    with pytest.raises(LinkstatsServerError, match="down"):
        links.list_links()
    assert len(scripted.requests) == 4  # 1 + max_retries (3)


def test_4xx_on_create_never_retried(links, scripted):
    scripted.add(("respond", 422, {"message": "The given data was invalid.", "errors": {"url": ["bad"]}}))
    with pytest.raises(LinkstatsValidationError, match="url: bad"):
        links.create_link("https://example.com", alias="a")
    assert len(scripted.requests) == 1


def test_dropped_post_is_reconciled_by_alias_not_resent(links, scripted):
    import datetime as dt

    made = {**LINK, "created_at": dt.datetime.now(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000000Z")}
    scripted.add(("drop",), ("respond", 200, {"data": [{**LINK, "alias": "spring-sale"}, made]}))
    record = links.create_link("https://example.com/spring", alias="spring")
    assert record == made
    assert [r["method"] for r in scripted.requests] == ["POST", "GET"]
    lookup = dict(scripted.requests[1]["query"])
    assert (lookup["search_by"], lookup["search"]) == ("alias", "spring")


def test_dropped_post_not_found_is_looked_for_within_the_window_never_sent_again(make_hook, scripted):
    from airflow_provider_linkstats.client.errors import LinkstatsOutcomeUnknownError

    links = make_hook("links", scripted.url, retry_wait=0.01, retry_wait_max=2.0, late_commit_window=1)
    scripted.add(("drop",))  # then every look-up finds nothing (the default answer)
    with pytest.raises(LinkstatsOutcomeUnknownError, match=r"looked up by alias 'spring' \d+ time\(s\) over 1 s"):
        links.create_link("https://example.com/spring", alias="spring")
    sent = [r["method"] for r in scripted.requests]
    assert sent[0] == "POST" and sent.count("POST") == 1 and sent.count("GET") >= 2


def test_dropped_post_without_alias_is_never_looked_up_nor_sent_again(links, scripted):
    """The service would have named the alias: nothing to look up by (the URL is no one's own), so
    "outcome unknown" at once, never a resend (issue 44: the URL look-up is gone)."""
    scripted.add(("drop",))
    with pytest.raises(LinkstatsOutcomeUnknownError, match="without a alias it cannot be looked up"):
        links.create_link("https://example.com/spring")
    assert [r["method"] for r in scripted.requests] == ["POST"]


def test_dropped_post_with_the_tasks_key_is_found_by_it(links, scripted):
    """A create run by a task carries the task's own key as alias: its lost answer is looked up by that
    key alone, and the record under it is this task's (whenever it was made)."""
    from airflow_provider_linkstats.client.ownership import Claim

    key = "bcd0123456789fgh"
    made = {**LINK, "alias": key, "created_at": "2026-01-01T00:00:00.000000Z"}  # a time is no matter: the key is
    scripted.add(("drop",), ("respond", 200, {"data": [made]}))
    claim = Claim(key=key, first_try=dt.datetime.now(dt.timezone.utc), known=True)
    record, outcome = links.create_or_reconcile({"url": "https://example.com/spring"}, claim=claim)
    assert record["id"] == 7 and outcome == "created"
    assert [r["method"] for r in scripted.requests] == ["POST", "GET"]
    query = dict(scripted.requests[1]["query"])
    assert (query["search_by"], query["search"]) == ("alias", key)


def test_dropped_post_and_a_failed_look_up_fails_clearly(links, scripted):
    scripted.add(("drop",), *[("respond", 500, {"message": "boom"})] * 3)
    with pytest.raises(LinkstatsOutcomeUnknownError, match="may have been created, and looking it up by alias"):
        links.create_link("https://example.com/spring", alias="spring")
    assert [r["method"] for r in scripted.requests].count("POST") == 1


def test_delete_lost_then_404_counts_as_done(links, scripted):
    # A real install's answer for a record that is gone (a bare "not found" reads as a route miss).
    scripted.add(("drop",), ("respond", 404, {"message": "Resource not found.", "status": 404}))
    assert links.delete_link(7) is True
    assert [r["method"] for r in scripted.requests] == ["DELETE", "DELETE"]


def test_connection_refused_is_a_transport_error_after_retries(monkeypatch):
    import socket

    from airflow_provider_linkstats.client import LinkstatsTransportError

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(f"http://127.0.0.1:{port}"))
    hook = LinkstatsLinksHook(retry_wait=0.01)
    with pytest.raises(LinkstatsTransportError, match="no connection could be made") as caught:
        hook.create_link("https://example.com")
    assert caught.value.sent is False
    assert API_KEY not in str(caught.value)


def test_key_absent_from_errors_and_reprs(links, scripted):
    scripted.add(("respond", 401, {"message": f"bad token Bearer {API_KEY}", "errors": {"auth": [API_KEY]}}))
    with pytest.raises(LinkstatsAuthError) as caught:
        links.list_links()
    assert API_KEY not in str(caught.value) and API_KEY not in repr(caught.value)
    assert "***" in str(caught.value)
    assert API_KEY not in repr(links) and API_KEY not in repr(links.client)
    assert API_KEY not in str(links.settings)


def test_one_connection_reused_across_50_calls(links, scripted):
    scripted.set_default(("respond", 200, {"data": LINK}))
    for _ in range(50):
        links.get_link(7)
    assert len(scripted.requests) == 50
    assert scripted.connections == 1


# -- input validation happens before any request -------------------------------------------------


@pytest.mark.parametrize(
    ("call", "field"),
    [
        (lambda h: h.create_link("not-a-url"), "url"),
        (lambda h: h.create_link("https://x.com", privacy=5), "privacy"),
        (lambda h: h.create_link("https://x.com", expiration_date="2026-13-01"), "expiration_date"),
        (lambda h: h.create_link("https://x.com", expiration_time="25:00"), "expiration_time"),
        (lambda h: h.create_link("https://x.com", expiration_clicks=0), "expiration_clicks"),
        (
            lambda h: h.create_link("https://x.com", platform=[{"key": "BeOS", "value": "https://x.com"}]),
            "platform[0].key",
        ),
        (lambda h: h.create_link("https://x.com", colour="red"), "colour"),
        (lambda h: h.update_link(1, domain_id=3), "domain_id"),
        (lambda h: h.list_links(per_page=20), "per_page"),
        (lambda h: h.list_links(sort_by="views"), "sort_by"),
        (lambda h: h.get_link(-1), "link_id"),
    ],
)
def test_bad_input_rejected_before_any_request(links, scripted, call, field):
    with pytest.raises(LinkstatsInputError) as caught:
        call(links)
    assert caught.value.field == field
    assert "Allowed:" in str(caught.value)
    assert scripted.requests == []


def test_secret_value_not_echoed(links, scripted):
    with pytest.raises(LinkstatsInputError) as caught:
        links.create_link("https://x.com", password=12345)
    assert "12345" not in str(caught.value)


# -- test_connection -------------------------------------------------------------------------------


def test_test_connection_is_one_get(links, scripted):
    ok, message = links.test_connection()
    assert ok is True and "OK" in message
    assert [(r["method"], r["path"]) for r in scripted.requests] == [("GET", "/public/api/v1/links")]


def test_test_connection_reports_failure_without_key(links, scripted):
    scripted.add(("respond", 401, {"message": "Unauthenticated."}))
    ok, message = links.test_connection()
    assert ok is False and "Unauthenticated" in message and API_KEY not in message


def test_base_url_forms(monkeypatch, scripted):
    host, port = scripted.url.removeprefix("http://").split(":")
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT",
        f"linkstats-links://:{API_KEY}@{host}:{port}/http?timeout=5&max_retries=0",
    )
    hook = LinkstatsLinksHook()
    assert hook.settings.read_timeout == 5.0 and hook.settings.max_retries == 0
    scripted.add(("respond", 422, {"message": {"name": ["The selected name is invalid."]}, "status": 422}))
    assert hook.test_connection()[0] is True  # the probe found the API at the first root
    assert hook.settings.root == f"http://{host}:{port}/public/api/v1"
    assert [r["path"] for r in scripted.requests] == ["/public/api/v1/stats/0", "/public/api/v1/links"]
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url + "/public/api/v1/"))
    assert LinkstatsLinksHook().settings.root == scripted.url + "/public/api/v1"


def test_bad_extra_named(monkeypatch, scripted):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, timeout="soon"))
    with pytest.raises(LinkstatsInputError, match="timeout"):
        LinkstatsLinksHook().get_link(1)
    assert scripted.requests == []


@pytest.mark.parametrize(
    ("connection", "root"),
    [
        ({"host": "https://links.example.com/api/v1"}, "https://links.example.com/api/v1"),  # web root = public/
        ({"host": "https://links.example.com/public/api/v1/"}, "https://links.example.com/public/api/v1"),
        ({"host": "https://links.example.com/public"}, "https://links.example.com/public/api/v1"),
        # a bare site URL: both roots are probed, the docs' form first (what a bare URL meant before)
        ({"host": "https://links.example.com"}, "https://links.example.com/public/api/v1 https://links.example.com/api/v1"),
        ({"uri": "linkstats-links://:k@links.example.com/api/v1"}, "https://links.example.com/api/v1"),
        ({"uri": "linkstats-links://:k@127.0.0.1:8765/http"}, "http://127.0.0.1:8765/public/api/v1 http://127.0.0.1:8765/api/v1"),
        ({"uri": "linkstats-links://:k@https%3A%2F%2Fsho.rt%2Fapi%2Fv1"}, "https://sho.rt/api/v1"),
    ],
)
def test_base_url_with_or_without_public(connection, root):
    from airflow.models.connection import Connection

    from airflow_provider_linkstats.hooks.connection import api_roots_of as _api_roots

    conn = Connection(**connection) if "uri" in connection else Connection(conn_type="linkstats_links", **connection)
    assert " ".join(_api_roots(conn)) == root


@pytest.mark.parametrize(
    ("extra", "value", "allowed"),
    [
        ("default_domain_id", "abc", "a whole number >= 1"),
        ("default_domain_id", 0, "a whole number >= 1"),
        ("max_rate_limit_wait", "soon", "a non-negative number"),
    ],
)
def test_bad_extra_is_a_clear_error_naming_it(monkeypatch, scripted, extra, value, allowed):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, **{extra: value}))
    with pytest.raises(LinkstatsInputError) as caught:
        LinkstatsLinksHook().settings  # noqa: B018
    assert caught.value.field == extra and repr(value) in str(caught.value) and allowed in str(caught.value)
    assert scripted.requests == []


def test_default_domain_id_fills_creates_that_name_none(links, scripted):
    scripted.add(("respond", 201, {"data": LINK}), ("respond", 201, {"data": LINK}))
    links.create_link("https://example.com/a")
    links.create_link("https://example.com/b", domain_id=7)
    forms = [dict(request["form"]) for request in scripted.requests]
    assert [form["domain_id"] for form in forms] == ["1", "7"]  # the connection's, then the call's own


def test_without_any_domain_the_create_is_sent_and_the_422_names_the_field(monkeypatch, scripted):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, default_domain_id=None))
    scripted.add(
        ("respond", 200, {"data": {"id": 1, "default_domain": None}, "status": 200}),  # GET /account
        ("respond", 404, {"message": "Resource not found.", "status": 404}),  # GET /domains: not there
        ("respond", 422, {"message": {"domain_id": ["The domain id field is required."]}, "status": 422}),
    )
    with pytest.raises(LinkstatsValidationError, match=r"domain_id: The domain id field is required\.") as caught:
        LinkstatsLinksHook().create_link("https://example.com/a")
    # The hint docs/versions.md promises: what to give, and which extra to set.
    assert "give domain_id, or set the default_domain_id extra of connection 'linkstats_links_default'" in str(
        caught.value
    )
    paths = [r["path"] for r in scripted.requests]
    assert paths == ["/public/api/v1/account", "/public/api/v1/domains", "/public/api/v1/links"]
    assert "domain_id" not in dict(scripted.requests[2]["form"])


def test_credentials_in_the_base_url_are_refused_before_any_request_and_never_shown(monkeypatch, scripted):
    # A user:password in the host would travel with the URL into logs, errors, the learned-service
    # cache and a deferred wait's trigger kwargs.
    with_credentials = scripted.url.replace("http://", "http://proxyuser:proxy-s3cret@") + "/api/v1"
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(with_credentials))
    with pytest.raises(LinkstatsInputError, match="'host'") as caught:
        LinkstatsLinksHook().get_link(1)
    assert "proxy-s3cret" not in str(caught.value) and "proxyuser" not in str(caught.value)
    assert "***@127.0.0.1" in str(caught.value) and "password field" in str(caught.value)
    assert scripted.requests == []
