"""Issue 20: a link create without domain_id reads GET /account for the default domain. When that
read fails, the create still speaks for itself: its 422 on domain_id (with what to set), or its 401.
"""

from __future__ import annotations

import re

import pytest

from airflow_provider_linkstats.client import LinkstatsAuthError, LinkstatsValidationError
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json

DOMAIN_REQUIRED = ("respond", 422, {"message": {"domain_id": ["The Domain field is required."]}, "status": 422})
PROXY_404 = ("respond", 404, "<html><title>404 Not Found</title></html>", {"Content-Type": "text/html"})
NO_ACCESS = ("respond", 403, {"message": "You don't have access to this feature.", "status": 403})
UNAUTHENTICATED = ("respond", 401, {"message": "Unauthenticated."})


@pytest.fixture
def hook(scripted, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url, default_domain_id=None))
    made = LinkstatsLinksHook(retry_wait=0.01)
    yield made
    made.close()


@pytest.mark.parametrize("account_answer", [PROXY_404, NO_ACCESS], ids=["proxy-404", "no-account-access-403"])
def test_failed_account_read_lets_the_creates_422_speak_with_what_to_set(scripted, hook, account_answer):
    scripted.add(account_answer, DOMAIN_REQUIRED)
    with pytest.raises(LinkstatsValidationError) as caught:
        hook.create_link("https://example.com/a")
    text = str(caught.value)
    assert re.match(r"POST \S+/links HTTP 422", text), text
    assert "domain_id" in text and "default_domain_id extra" in text and re.search(r"GET \S+/account HTTP 40[34]", text)
    assert text.count("The Domain field is required.") == 1, text  # the field's message said once
    error = caught.value
    assert error.errors == {"domain_id": ["The Domain field is required."]}
    assert (error.status, error.method, error.path, error.conn_id) == (422, "POST", "/links", "linkstats_links_default")
    assert error.url.startswith(scripted.url) and error.url.endswith("/links")
    assert [r["method"] for r in scripted.requests] == ["GET", "POST"]
    assert "domain_id" not in dict(scripted.requests[1]["form"])


def test_failed_account_read_and_a_service_default_domain_creates_the_link(scripted, hook):
    scripted.add(PROXY_404, ("respond", 201, {"data": {"id": 9, "domain": {"id": 1}}, "status": 200}))
    assert hook.create_link("https://example.com/a")["id"] == 9


def test_a_wrong_key_is_reported_as_the_creates_401(scripted, hook):
    scripted.add(UNAUTHENTICATED, UNAUTHENTICATED)
    with pytest.raises(LinkstatsAuthError) as caught:
        hook.create_link("https://example.com/a")
    assert caught.value.method == "POST" and caught.value.path == "/links" and caught.value.status == 401
    assert API_KEY not in str(caught.value)


def test_account_read_once_for_many_creates(scripted, hook):
    created = ("respond", 201, {"data": {"id": 9}, "status": 200})
    scripted.add(("respond", 200, {"data": {"id": 1, "default_domain": 4}, "status": 200}), created, created)
    hook.create_link("https://example.com/a")
    hook.create_link("https://example.com/b")
    assert [r["method"] for r in scripted.requests] == ["GET", "POST", "POST"]
    assert dict(scripted.requests[2]["form"])["domain_id"] == "4"


def test_failed_account_read_for_the_time_zone_names_the_timezone_extra(scripted, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(scripted.url))  # no timezone extra
    scripted.add(PROXY_404)
    with pytest.raises(Exception, match=r"GET \S+/account HTTP 404.*set the timezone extra of connection") as caught:
        LinkstatsLinksHook().create_link("https://example.com/a", expires_at="2031-01-01T10:00:00+00:00")
    assert "Not Found" in str(caught.value) or "404" in str(caught.value)
    assert [r["method"] for r in scripted.requests] == ["GET"]  # no create was sent
