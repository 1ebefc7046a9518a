"""The base URL found and the version detected with the same read-only probe (GET /stats/0).

Against scripted servers that answer the API at one root only and an HTML 404 page elsewhere, as
a real web server in front of one install does.
"""

from __future__ import annotations

import asyncio
import logging

import pytest

from airflow_provider_linkstats.client import LinkstatsAuthError, LinkstatsNotFoundError, LinkstatsResponseError
from airflow_provider_linkstats.client.generations import PHPANALYTICS_3, PHPANALYTICS_31, PHPSHORT_44, PHPSHORT_46
from airflow_provider_linkstats.hooks.linkstats import LinkstatsAnalyticsHook, LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json

HTML_404 = ("respond", 404, "<html><head><title>404 Not Found</title></head><body>nginx</body></html>",
            {"Content-Type": "text/html"})
V44_PROBE = ("respond", 422, {"message": {"name": ["The selected name is invalid."]}, "status": 422})
V46_PROBE = ("respond", 404, {"message": "Resource not found.", "status": 404})
CREATED = ("respond", 201, {"data": {"id": 7, "alias": "a"}, "status": 200})


def only_at(root: str, probe: tuple):
    """A server whose API lives under ``root`` only."""

    def answer(request: dict) -> tuple:
        if not request["path"].startswith(root + "/"):
            return HTML_404
        if request["path"] == root + "/stats/0":
            return probe
        if request["method"] == "POST":
            return CREATED
        return ("respond", 200, {"data": {"id": 7}, "status": 200})

    return answer


def links_hook(monkeypatch, url: str, **extra) -> LinkstatsLinksHook:
    monkeypatch.setenv("AIRFLOW_CONN_LINKSTATS_LINKS_DEFAULT", connection_json(url, probing=True, **extra))
    return LinkstatsLinksHook()


@pytest.mark.parametrize(("root", "probes"), [("/public/api/v1", 1), ("/api/v1", 2)])
def test_bare_site_url_finds_the_api_and_the_version_in_one_or_two_requests(
    scripted, monkeypatch, caplog, capsys, root, probes
):
    caplog.set_level(logging.INFO)
    scripted.set_default(only_at(root, V46_PROBE))
    hook = links_hook(monkeypatch, scripted.url, api_version="auto")
    hook.create_link("https://example.com/a", expires_at="2031-01-01T00:00:00+00:00")
    hook.get_link(7)
    paths = [(r["method"], r["path"]) for r in scripted.requests]
    tried = [("GET", "/public/api/v1/stats/0"), ("GET", "/api/v1/stats/0")][:probes]
    assert paths == [*tried, ("POST", f"{root}/links"), ("GET", f"{root}/links/7")]
    assert "active_period_end_at" in dict(scripted.requests[-2]["form"])  # spoken in 46+'s dialect
    assert hook.dialect is PHPSHORT_46 and hook.settings.root == scripted.url + root
    out, records = capsys.readouterr().out, "\n".join(r.getMessage() for r in caplog.records)
    assert max(out.count("phpShort 46+ at"), records.count("phpShort 46+ at")) == 1  # logged once (either route)
    text = out + records
    assert "Resource not found." in text and "linkstats_links_default" in text
    assert API_KEY not in text


def test_explicit_version_still_finds_the_base_url_with_one_read(scripted, monkeypatch):
    scripted.set_default(only_at("/api/v1", V44_PROBE))
    hook = links_hook(monkeypatch, scripted.url, api_version="45")
    hook.create_link("https://example.com/a", expiration_clicks=3)
    assert [r["method"] for r in scripted.requests] == ["GET", "GET", "POST"]
    assert all(r["method"] == "GET" for r in scripted.requests[:2])  # the probes write nothing
    assert hook.dialect is PHPSHORT_44


def test_url_ending_in_api_v1_and_explicit_version_cost_no_probe(scripted, monkeypatch):
    scripted.set_default(only_at("/api/v1", V46_PROBE))
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="49")
    hook.get_link(7)
    assert [r["path"] for r in scripted.requests] == ["/api/v1/links/7"]
    assert hook.dialect is PHPSHORT_46


def test_url_ending_in_api_v1_with_auto_detects_once(scripted, monkeypatch):
    scripted.set_default(only_at("/api/v1", V44_PROBE))
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="auto")
    hook.create_link("https://example.com/a")
    hook.create_link("https://example.com/b")
    assert [r["method"] for r in scripted.requests] == ["GET", "POST", "POST"]
    assert hook.dialect is PHPSHORT_44


def test_no_root_answers_names_both_urls_and_the_connection(scripted, monkeypatch):
    scripted.set_default(HTML_404)
    hook = links_hook(monkeypatch, scripted.url)
    with pytest.raises(LinkstatsNotFoundError) as caught:
        hook.get_link(1)
    text = str(caught.value)
    assert text.startswith("Check the Base URL of connection 'linkstats_links_default'")
    assert f"{scripted.url}/public/api/v1 (HTTP 404, text/html" in text
    assert f" and {scripted.url}/api/v1 (HTTP 404" in text
    assert "https://<host>/api/v1 or https://<host>/public/api/v1" in text
    assert len(scripted.requests) == 2


def test_failed_detection_says_what_was_asked_and_what_to_set(scripted, monkeypatch):
    scripted.set_default(("respond", 500, {"message": "Server Error"}))
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="auto")
    with pytest.raises(Exception) as caught:
        hook.create_link("https://example.com/a")
    text = str(caught.value)
    assert f"GET {scripted.url}/api/v1/stats/0?name=click" in text
    assert "'linkstats_links_default'" in text and "api_version" in text
    assert all(r["method"] == "GET" for r in scripted.requests)  # no create was sent


def test_a_refused_key_at_the_probe_is_reported_as_such(scripted, monkeypatch):
    scripted.set_default(("respond", 401, {"message": "Unauthenticated."}))
    hook = links_hook(monkeypatch, scripted.url, api_version="auto")
    refused = "the API key in the password of connection 'linkstats_links_default' was refused: copy"
    with pytest.raises(LinkstatsAuthError, match=refused):
        hook.create_link("https://example.com/a")
    assert len(scripted.requests) == 1  # a JSON 401: the API is here, no second root tried


@pytest.mark.parametrize(("probe", "expected"), [(V44_PROBE, PHPANALYTICS_3), (V46_PROBE, PHPANALYTICS_31)])
def test_analytics_generation_detected(scripted, monkeypatch, probe, expected):
    scripted.set_default(only_at("/api/v1", probe))
    monkeypatch.setenv(
        "AIRFLOW_CONN_LINKSTATS_ANALYTICS_DEFAULT",
        connection_json(scripted.url, "linkstats_analytics", api_version="auto", probing=True),
    )
    hook = LinkstatsAnalyticsHook()
    assert hook.dialect is expected
    assert dict(scripted.requests[0]["query"])["name"] == "visitors_hour"


def test_async_client_finds_the_root_and_the_trigger_detects_through_it(scripted, monkeypatch):
    scripted.set_default(only_at("/api/v1", V46_PROBE))
    hook = links_hook(monkeypatch, scripted.url, api_version="auto")

    async def run():
        client = await hook.get_async_client()
        async with client:
            return client.root, await hook.aget_dialect(client)

    root, dialect = asyncio.run(run())
    assert root == scripted.url + "/api/v1" and dialect is PHPSHORT_46
    assert len(scripted.requests) == 2  # the two roots' probes; the second also told the version


def test_async_detection_at_a_known_root(scripted, monkeypatch):
    scripted.set_default(only_at("/api/v1", V44_PROBE))
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="auto")

    async def run():
        async with await hook.get_async_client() as client:
            first = await hook.aget_dialect(client)
            return first, await hook.aget_dialect(client)

    assert asyncio.run(run()) == (PHPSHORT_44, PHPSHORT_44)
    assert len(scripted.requests) == 1  # cached


@pytest.mark.parametrize("value", ["43", "fifty", "2.9"])
def test_bad_api_version_extra_refused_before_any_request(scripted, monkeypatch, value):
    hook = links_hook(monkeypatch, scripted.url, api_version=value)
    with pytest.raises(ValueError, match=r"api_version.*auto, or a version: 44 to 45 \(phpShort 44-45\), 46 to 49"):
        hook.get_link(1)
    assert scripted.requests == []


def test_json_answer_that_tells_no_version_is_an_error(scripted, monkeypatch):
    scripted.set_default(("respond", 200, {"data": []}))
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="auto")
    with pytest.raises(LinkstatsResponseError, match="api_version"):
        _ = hook.dialect


@pytest.mark.parametrize(("probe", "expected"), [(V44_PROBE, PHPSHORT_44), (V46_PROBE, PHPSHORT_46)])
def test_identify_plan_runs_through_the_raw_sender(scripted, monkeypatch, probe, expected):
    """``drive(identify(...), client.probe)``: the 422 and the 404 arrive as answers and tell the version."""
    from airflow_provider_linkstats.client.detection import identify
    from airflow_provider_linkstats.client.protocol import drive

    scripted.set_default(only_at("/api/v1", probe))
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="44")
    assert drive(identify("links"), hook.client.probe)[0] is expected
    assert len(scripted.requests) == 1


def test_identify_plan_refuses_an_html_page(scripted, monkeypatch):
    from airflow_provider_linkstats.client.detection import NotTheApi, identify
    from airflow_provider_linkstats.client.protocol import drive

    scripted.set_default(HTML_404)
    hook = links_hook(monkeypatch, scripted.url + "/api/v1", api_version="44")
    with pytest.raises(NotTheApi, match="HTTP 404, text/html"):
        drive(identify("links"), hook.client.probe)


def test_probe_error_never_shows_the_key(scripted, monkeypatch):
    scripted.set_default(("respond", 403, {"message": f"key {API_KEY} has no access", "status": 403}))
    hook = links_hook(monkeypatch, scripted.url, api_version="auto")
    with pytest.raises(LinkstatsAuthError) as caught:
        hook.get_link(1)
    assert API_KEY not in str(caught.value) and "***" in str(caught.value)
    assert API_KEY not in repr(vars(hook))
