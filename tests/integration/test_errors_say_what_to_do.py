"""Errors that say what to do (issue 21): each names what failed, where, on which connection, and the fix.

Every test talks to a real server on 127.0.0.1 (the scripted one, or a port nobody listens on)
and checks the text a user reads in the task log at 3 a.m.
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import logging
import re
import socket

import pendulum
import pytest

from airflow_provider_linkstats.client.errors import (
    LinkstatsApiError,
    LinkstatsAuthError,
    LinkstatsConfigError,
    LinkstatsInputError,
    LinkstatsNotFoundError,
    LinkstatsResponseError,
    LinkstatsTransportError,
    is_permanent,
)
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json, fails_without_retry

pytestmark = pytest.mark.timeout(60)

CONN = "linkstats_links_default"
ENV = "AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT"
HTML_404 = "<html><head><title>404 Not Found</title></head><body><h1>Not Found</h1></body></html>"


@pytest.fixture
def links(make_hook, scripted):
    return make_hook("links", scripted.url, retry_wait=0.01, max_retries=3)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def connect(monkeypatch, conn: dict, env: str = ENV) -> None:
    monkeypatch.setenv(env, json.dumps({"password": API_KEY, **conn}))


# -- HTTP errors name the method, the full URL, the connection and the fix -------------------------


def test_html_404_says_the_base_url_is_not_the_api(links, scripted):
    scripted.add(("respond", 404, HTML_404))
    with pytest.raises(LinkstatsNotFoundError) as caught:
        links.list_links(search="promo", max_items=1)
    text = str(caught.value)
    url = f"{scripted.url}/public/api/v1/links?search=promo&per_page=100"
    assert text.startswith(f"GET {url} HTTP 404"), text  # method, root + path + query
    assert f"[connection {CONN!r}]" in text
    assert "does not answer as the Linkstats API" in text and f"check the Base URL of connection {CONN!r}" in text
    assert "HTML page '404 Not Found'" in text and API_KEY not in text
    assert caught.value.url == url and caught.value.conn_id == CONN


def test_html_page_with_200_says_the_base_url_is_not_the_api(links, scripted):
    """A site that answers every path with its home page (200) instead of a 404."""
    scripted.add(("respond", 200, HTML_404.replace("404 Not Found", "Welcome")))
    with pytest.raises(LinkstatsResponseError) as caught:
        links.get_link(2)
    text = str(caught.value)
    assert text.startswith(f"GET {scripted.url}/public/api/v1/links/2 HTTP 200: body is not valid JSON"), text
    assert f"check the Base URL of connection {CONN!r}" in text and "HTML page 'Welcome'" in text


def test_test_connection_names_the_url_and_the_fix(links, scripted):
    scripted.add(("respond", 401, {"message": "Unauthenticated."}))
    ok, message = links.test_connection()
    assert not ok and f"GET {scripted.url}/public/api/v1/links?per_page=10" in message
    assert f"the API key in the password of connection {CONN!r} was refused: copy" in message
    assert API_KEY not in message


def test_json_404_is_a_missing_record_not_a_wrong_url(links, scripted):
    scripted.add(("respond", 404, {"message": "Resource not found.", "status": 404}))
    with pytest.raises(LinkstatsNotFoundError) as caught:
        links.get_link(5)
    assert str(caught.value) == (
        f"GET {scripted.url}/public/api/v1/links/5 HTTP 404: Resource not found. [connection {CONN!r}]"
    )


def test_401_says_the_key_in_the_connection_password_was_refused(links, scripted):
    scripted.add(("respond", 401, {"message": "Unauthenticated."}))
    with pytest.raises(LinkstatsAuthError) as caught:
        links.delete_link(9)
    text = str(caught.value)
    # The fix first (which key, where to get another); what the service said after it.
    assert text.startswith(
        f"DELETE {scripted.url}/public/api/v1/links/9 HTTP 401: the API key in the password of connection "
        f"{CONN!r} was refused: copy the current key from the account's API page"
    ), text
    assert "the service answered 'Unauthenticated.'" in text
    assert "regenerating the key there revokes the old one" in text and API_KEY not in text
    assert is_permanent(caught.value) and len(scripted.requests) == 1  # not retried


def test_redirect_to_the_login_page_is_a_refused_key(links, scripted):
    scripted.add(("respond", 302, "<html><title>Redirecting</title></html>", {"Location": "https://x.test/login"}))
    with pytest.raises(LinkstatsAuthError) as caught:
        links.get_link(1)
    text = str(caught.value)
    assert "HTTP 302: the API key in the password of connection" in text and "was refused" in text
    assert "the service answered" in text and "redirected to the login page" in text


def test_other_redirect_says_where_to_point_the_connection(links, scripted):
    """http:// on a server that sends everyone to https://: redirects are not followed (the key would travel)."""
    target = "https://links.example.com/public/api/v1/links/1"
    scripted.add(("respond", 301, "<html><title>Moved</title></html>", {"Location": target}))
    with pytest.raises(LinkstatsApiError) as caught:
        links.get_link(1)
    text = str(caught.value)
    assert "HTTP 301: moved permanently" in text and "login" not in text
    assert f"The service redirects to {target}: write that address as the Base URL of connection {CONN!r}" in text


def test_403_says_the_plan_or_the_key_lacks_access(links, scripted):
    scripted.add(("respond", 403, {"message": "You don't have access to this feature.", "status": 403}))
    with pytest.raises(LinkstatsAuthError) as caught:
        links.get_link(1)
    text = str(caught.value)
    assert f"GET {scripted.url}/public/api/v1/links/1 HTTP 403" in text and f"[connection {CONN!r}]" in text
    assert "plan has no API access, or the key lacks permission" in text


def test_async_client_errors_name_the_url_and_connection_too(links, scripted):
    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.protocol import build_get

    scripted.add(("respond", 401, {"message": "Unauthenticated."}))

    async def call():
        async with await links.get_async_client() as client:
            await client.call(build_get(LINKS, 3))

    with pytest.raises(LinkstatsAuthError) as caught:
        asyncio.run(call())
    text = str(caught.value)
    assert text.startswith(f"GET {scripted.url}/public/api/v1/links/3 HTTP 401") and f"connection {CONN!r}" in text


# -- no HTTP answer: scheme, refused, DNS --------------------------------------------------------------


def test_host_without_scheme_says_https_was_assumed_and_what_to_write(monkeypatch, scripted):
    """A plain-HTTP service behind a host written without a scheme: the TLS handshake fails, once."""
    host = scripted.url.removeprefix("http://")
    connect(monkeypatch, {"conn_type": "linkstats_links", "host": host, "extra": {"default_domain_id": 1}})
    hook = LinkstatsLinksHook(retry_wait=0.01, max_retries=3)
    with pytest.raises(LinkstatsTransportError) as caught:
        hook.get_link(1)
    hook.close()
    text = str(caught.value)
    # The first request is the hook's look for the API root (a bare URL), or the read itself.
    pattern = rf"GET https://{re.escape(host)}/public/api/v1/\S+: the TLS handshake with {host} failed"
    assert re.match(pattern, text), text
    assert f"the Base URL of connection {CONN!r} has no scheme, so https was assumed" in text
    assert f"http://{host} if the service speaks plain HTTP there, else https://{host}" in text
    assert "answer was lost" not in text
    assert scripted.connections == 1  # a handshake failure is not a transient fault: no retry
    assert is_permanent(caught.value)


def test_tls_failure_fails_the_task_without_a_retry(monkeypatch, scripted):
    from airflow_provider_linkstats.operators.links import LinkstatsGetLinkOperator
    from tests.conftest import run_operator

    connect(monkeypatch, {"conn_type": "linkstats_links", "host": scripted.url.removeprefix("http://")})
    operator = LinkstatsGetLinkOperator(task_id="get", link_id=1, retries=3)
    with fails_without_retry(LinkstatsTransportError, "https was assumed"):
        run_operator(operator)
    assert scripted.connections == 1


def test_host_without_scheme_async_also_says_what_to_write(monkeypatch, scripted):
    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.protocol import build_get

    host = scripted.url.removeprefix("http://")
    connect(monkeypatch, {"conn_type": "linkstats_links", "host": host})
    hook = LinkstatsLinksHook(retry_wait=0.01, max_retries=3)

    async def call():
        async with await hook.get_async_client() as client:
            await client.call(build_get(LINKS, 1))

    with pytest.raises(LinkstatsTransportError, match=f"write it with its scheme: http://{host}"):
        asyncio.run(call())
    assert scripted.connections == 1


def test_connection_refused_names_host_port_and_connection(make_hook):
    port = free_port()
    hook = make_hook("links", f"http://127.0.0.1:{port}", max_retries=0)
    with pytest.raises(LinkstatsTransportError) as caught:
        hook.get_link(1)
    text = str(caught.value)
    assert f"no connection could be made to 127.0.0.1:{port}: connection refused" in text, text
    assert f"(connection {CONN!r})" in text and "check the Base URL's host and port" in text
    assert caught.value.sent is False


def test_unknown_host_name_is_named(make_hook):
    hook = make_hook("analytics", "http://linkstats-no-such-host.invalid:8080", max_retries=0)
    with pytest.raises(LinkstatsTransportError) as caught:
        hook.get_website(1)
    text = str(caught.value)
    assert "no connection could be made to linkstats-no-such-host.invalid:8080" in text, text
    assert "the host name 'linkstats-no-such-host.invalid' does not resolve" in text
    assert "(connection 'linkstats_analytics_default')" in text


# -- bad input: the real limit, and no value echoed whole -----------------------------------------------


def test_long_alias_gets_the_length_limit_not_the_alphabet(links, scripted):
    alias = "a" * 300  # only allowed characters: too long is the one fault
    with pytest.raises(LinkstatsInputError) as caught:
        links.create_link("https://example.com", alias=alias)
    text = str(caught.value)
    assert "at most 255 characters (300 given)" in text and "letters" not in text
    assert alias not in text and "(300 characters)" in text  # the echo is cut, and says so
    assert scripted.requests == []


def test_every_input_error_cuts_a_long_value():
    error = LinkstatsInputError("url", "x" * 5000, "an http(s) URL")
    assert len(str(error)) < 200 and "(5000 characters)" in str(error)
    assert "x" * 100 not in str(error)
    short = LinkstatsInputError("alias", "a b", "letters")
    assert str(short) == "Invalid value for 'alias': 'a b'. Allowed: letters."


# -- the connection itself ---------------------------------------------------------------------------


def test_links_hook_on_an_analytics_connection_fails_naming_both_types(monkeypatch, scripted):
    monkeypatch.setenv("AIRFLOW_CONN_SITES", connection_json(scripted.url, "linkstats_analytics"))
    with pytest.raises(LinkstatsConfigError) as caught:
        LinkstatsLinksHook("sites").get_link(1)
    text = str(caught.value)
    assert "Connection 'sites' is of type 'linkstats_analytics'" in text
    assert "LinkstatsLinksHook needs type 'linkstats_links'" in text
    assert scripted.requests == [] and is_permanent(caught.value)


def test_http_uri_connection_warns_and_keeps_its_scheme(monkeypatch, scripted, caplog):
    """``http://:KEY@host:port`` makes the type ``http``: the hook warns and still speaks plain HTTP."""
    host = scripted.url.removeprefix("http://")
    # The path and api_version name the API root and version: no probe before the read.
    monkeypatch.setenv("AIRFLOW_CONN_MY_SITES", f"http://:{API_KEY}@{host}/public/api/v1?api_version=3")
    caplog.set_level(logging.WARNING)
    scripted.add(("respond", 200, {"data": {"id": 1, "domain": "example.com"}, "status": 200}))
    hook = LinkstatsAnalyticsHook("my_sites")
    assert hook.get_website(1)["id"] == 1
    hook.close()
    assert hook.settings.root == f"{scripted.url}/public/api/v1" and not hook.settings.scheme_assumed
    warning = " ".join(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "Connection 'my_sites' is of type 'http', expected 'linkstats_analytics'" in warning
    assert "linkstats-analytics://" in warning and API_KEY not in warning


def test_missing_connection_says_what_to_create(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    with pytest.raises(LinkstatsConfigError) as caught:
        LinkstatsLinksHook("nowhere").get_link(1)
    text = str(caught.value)
    # What to create, for this process (tests/integration/test_first_hour.py: per context)
    assert "The Airflow connection 'nowhere' is not" in text and "--conn-type" not in text.split(":")[0]
    assert "AIRFLOW_CONN_NOWHERE=" in text and is_permanent(caught.value)


def test_missing_connection_fails_the_task_without_a_retry(monkeypatch):
    from airflow_provider_linkstats.operators.links import LinkstatsGetLinkOperator
    from tests.conftest import run_operator

    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)
    operator = LinkstatsGetLinkOperator(task_id="get", link_id=1, linkstats_conn_id="nowhere", retries=3)
    with fails_without_retry(LinkstatsConfigError, "AIRFLOW_CONN_NOWHERE="):
        run_operator(operator)


def test_missing_connection_in_the_triggerer_says_what_to_create(monkeypatch):
    monkeypatch.delenv("AIRFLOW_CONN_NOWHERE", raising=False)

    async def open_client():
        await LinkstatsLinksHook("nowhere").get_async_client()

    with pytest.raises(LinkstatsConfigError, match="'nowhere'.*AIRFLOW_CONN_NOWHERE="):
        asyncio.run(open_client())


# -- an expiry in the past ----------------------------------------------------------------------------


def test_expires_at_in_the_past_is_refused_before_any_write(links, scripted):
    """Past by more than any clock skew: refused before any request. Two hours past by the worker's
    clock: the service's clock decides, read once (the scripted server's Date is the worker's), and
    the write is never sent (issue 37: before, refused by the worker's clock alone)."""
    written = r"'2020-05-01T10:00:00\+02:00'.*2020-05-01 10:00:00 UTC\+02:00 has passed.*this worker's clock"
    with pytest.raises(LinkstatsInputError, match=written):
        links.update_link(4, expires_at="2020-05-01T10:00:00+02:00")
    assert scripted.requests == []  # no account read, no write
    scripted.add(("respond", 200, {"data": {"timezone": "UTC"}}))  # the account's zone (44-45), and the clock
    past = pendulum.now("Europe/Paris").subtract(hours=2).replace(microsecond=0)
    with pytest.raises(LinkstatsInputError) as caught:
        links.create_link("https://example.com", expires_at=past)
    text = str(caught.value)
    # The value as written (ISO text, not a Python repr), then plain words.
    assert text.startswith(f"Invalid value for 'expires_at': '{past.isoformat()}'. Allowed: a moment in the future;")
    assert f"{past:%Y-%m-%d %H:%M:%S} Europe/Paris has passed (it is now " in text, text
    assert "by the service's clock" in text
    assert "datetime" not in text and caught.value.field == "expires_at"
    assert [(r["method"], r["path"]) for r in scripted.requests] == [("GET", "/public/api/v1/account")]  # the clock


def test_expires_at_in_the_future_is_sent(links, scripted):
    scripted.add(("respond", 200, {"data": {"timezone": "UTC"}}), ("respond", 201, {"data": {"id": 1}}))
    links.create_link("https://example.com", expires_at=dt.datetime.now(dt.timezone.utc) + dt.timedelta(days=1))
    assert "expiration_date" in dict(scripted.requests[-1]["form"])  # after the account's time zone


def test_async_client_names_host_port_and_connection_when_refused(make_hook):
    from airflow_provider_linkstats.client.contract import LINKS
    from airflow_provider_linkstats.client.protocol import build_get

    port = free_port()
    hook = make_hook("links", f"http://127.0.0.1:{port}", max_retries=0)

    async def call():
        async with await hook.get_async_client() as client:
            await client.call(build_get(LINKS, 1))

    with pytest.raises(LinkstatsTransportError) as caught:
        asyncio.run(call())
    text = str(caught.value)
    assert f"GET http://127.0.0.1:{port}/public/api/v1/links/1: no connection could be made to 127.0.0.1:{port}" in text
    assert f"connection refused, nothing listens there (connection {CONN!r})" in text
