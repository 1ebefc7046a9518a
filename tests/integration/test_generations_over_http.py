"""The generations table and the link domain over real HTTP: the client without Airflow, the hook
and the create operator against the emulator (phpShort 44 and 49) and a scripted phpShort "50"."""

from __future__ import annotations

import dataclasses
import datetime as dt
import json

import pendulum
import pytest

from airflow_provider_linkstats.client import LINKS, LinkstatsInputError
from airflow_provider_linkstats.client import generations as table
from airflow_provider_linkstats.client.api import LinkstatsClient
from airflow_provider_linkstats.client.generations import PHPSHORT_46, VersionRange
from airflow_provider_linkstats.client.settings import ClientSettings
from airflow_provider_linkstats.hooks.linkstats import LinkstatsLinksHook
from tests.conftest import API_KEY, connection_json, run_operator

URL = "https://example.com/landing"
LATER = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) + dt.timedelta(days=30)


# -- the client without Airflow speaks the connected generation ------------------------------------


@pytest.mark.parametrize("links_version", ["44", "49"])
def test_client_without_airflow_detects_and_sends_only_what_the_generation_reads(emulators, links_version):
    """Issue 26: with no version given it sent phpShort 44's names; 49 ignored expiration_clicks."""
    emulator = emulators(links_version)
    emulator.reset()
    client = LinkstatsClient(ClientSettings(root=emulator.url + "/public/api/v1", timezone="UTC"), API_KEY)
    try:
        created = client.create(
            LINKS, {"url": URL, "alias": f"c{links_version}", "domain_id": 1, "expiration_clicks": 5}
        )
        stored = client.get(LINKS, created["id"])
    finally:
        client.close()
    assert stored["expiration_clicks"] == 5, stored  # the click limit took effect on both generations
    assert emulator.stats.count(method="GET", path_prefix="/stats/0") == 1  # detected once


def test_client_without_airflow_takes_a_version(scripted):
    scripted.set_default(("respond", 201, {"data": {"id": 3, "clicks_limit": "5"}, "status": 200}))
    client = LinkstatsClient(ClientSettings(root=scripted.url + "/api/v1"), API_KEY, generation="49")
    try:
        client.create(LINKS, {"url": URL, "domain_id": 1, "expiration_clicks": 5})
    finally:
        client.close()
    (sent,) = scripted.requests  # no probe: the version was given
    assert dict(sent["form"]) == {"url": URL, "domain_id": "1", "clicks_limit": "5"}


# -- a past expiry is refused before any request, on every generation -------------------------------


@pytest.mark.parametrize("written", ["datetime", "iso"])
def test_create_operator_refuses_a_past_expiry_before_any_write(emu_any, written):
    """Two hours past by the worker's clock may be ahead by the service's (a clock skew): the
    service's clock decides (the version probe's answer told it), the create is never sent. Past by
    more than any skew (two days) is refused before any request at all (issue 37)."""
    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator

    for hours, requests_at_most in ((2, 2), (48, 0)):
        past = dt.datetime.now(dt.timezone.utc).replace(microsecond=0) - dt.timedelta(hours=hours)
        value = past if written == "datetime" else past.isoformat()
        task = LinkstatsCreateLinkOperator(task_id="late", url=URL, alias="late", expires_at=value)
        before = emu_any.stats.count()
        with pytest.raises(Exception) as caught:
            run_operator(task)
        assert "'expires_at'" in str(caught.value) and "has passed" in str(caught.value)
        assert f"'{past.isoformat()}'" in str(caught.value)  # as written, not a Python repr
        assert emu_any.stats.count(method="POST") == 0  # no create
        assert emu_any.stats.count() - before <= requests_at_most  # 2 h: the probe, at most the clock's read


@pytest.mark.parametrize("written", ["iso duration", "timedelta"])
def test_an_expiry_given_as_a_duration_counts_from_the_create(emu_any, written):
    """A lifetime is resolved when the task sends the create, not when the DAG (or an upstream task
    that planned the links) ran: a create that waited in the queue still gets the whole lifetime."""
    from airflow_provider_linkstats.client.records import link_timing
    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator

    value = "PT2H" if written == "iso duration" else dt.timedelta(hours=2)
    task = LinkstatsCreateLinkOperator(task_id="lifetime", url=URL, alias="lifetime", expires_at=value)
    sent = dt.datetime.now(dt.timezone.utc)
    record, _ = run_operator(task)
    ends_at = link_timing(LinkstatsLinksHook().get_link(record["id"])).ends_at
    assert ends_at is not None, record
    # 44-45 round up to the minute in the account's zone; 46+ keep the second.
    assert sent + dt.timedelta(hours=2) - dt.timedelta(seconds=1) <= ends_at <= sent + dt.timedelta(hours=2, minutes=2)


@pytest.mark.parametrize(
    ("value", "allowed"),
    [
        (dt.timedelta(hours=-1), "has passed"),  # a lifetime that ended before the create
        ("P1M", "weeks, days, hours, minutes or seconds"),  # a month has no fixed length
        (pendulum.duration(months=1), "weeks, days, hours, minutes or seconds"),  # nor as a pendulum Duration
        ("PT5Q", "such as PT90M"),  # not a duration
    ],
)
def test_a_bad_duration_is_refused_before_any_request(emu_any, value, allowed):
    from airflow_provider_linkstats.operators.links import LinkstatsCreateLinkOperator

    task = LinkstatsCreateLinkOperator(task_id="bad_lifetime", url=URL, alias="bad-lifetime", expires_at=value)
    before = emu_any.stats.count()
    with pytest.raises(Exception) as caught:
        run_operator(task)
    assert "'expires_at'" in str(caught.value) and allowed in str(caught.value), caught.value
    assert emu_any.stats.count() == before


# -- finding the API root is never fooled -----------------------------------------------------------

WEB_APP_404 = ("respond", 404, {"message": "This link does not exist or is disabled."})
API_404 = ("respond", 404, {"message": "Resource not found.", "status": 404})


def test_a_json_404_from_outside_the_api_is_not_the_api(scripted, monkeypatch):
    """Issue 28: /pubilc/api/v1 (a typo) answered the web app's JSON 404, read as phpShort 46+."""
    scripted.set_default(WEB_APP_404)
    base = scripted.url + "/pubilc/api/v1"
    monkeypatch.setenv("AIRFLOW_CONN_LINKS_TYPO", connection_json(base, api_version="auto"))
    hook = LinkstatsLinksHook("links_typo")
    with pytest.raises(Exception) as caught:
        hook.list_links(status=2)
    text = str(caught.value)
    assert text.startswith("Check the Base URL of connection 'links_typo': no Linkstats links API answered"), text
    assert f"{base} (HTTP 404, JSON from outside the API" in text
    assert "https://<host>/api/v1 or https://<host>/public/api/v1" in text
    assert all(r["method"] == "GET" and r["path"].endswith("/stats/0") for r in scripted.requests)
    ok, message = hook.test_connection()  # what `airflow connections test` prints
    assert not ok and "connection 'links_typo'" in message


def test_a_base_url_ending_in_api_tries_sensible_roots(scripted, monkeypatch):
    def answer(request):
        if request["path"] == "/api/v1/stats/0":
            return API_404
        if request["path"] == "/api/v1/links":
            return ("respond", 200, {"data": [], "status": 200})
        return WEB_APP_404

    scripted.set_default(answer)
    conn = connection_json(scripted.url + "/api", api_version="auto", probing=True)
    monkeypatch.setenv("AIRFLOW_CONN_LINKS_API", conn)
    hook = LinkstatsLinksHook("links_api")
    assert hook.list_links() == []
    assert hook.settings.root == scripted.url + "/api/v1"
    assert [r["path"] for r in scripted.requests] == ["/api/v1/stats/0", "/api/v1/links"]


# -- a made-up generation, registered in the table alone, over HTTP ---------------------------------

PHPSHORT_50 = dataclasses.replace(
    PHPSHORT_46,
    name="50",
    label="phpShort 50",
    form_fields={**PHPSHORT_46.form_fields, "alias": "slug"},
    record_keys={**PHPSHORT_46.record_keys, "alias": "slug"},
    record_marks=("slug",),
)


@pytest.fixture
def phpshort_50(monkeypatch):
    monkeypatch.setattr(table, "VERSIONS", (*table.VERSIONS, VersionRange("50", "50", PHPSHORT_50)))
    return PHPSHORT_50


class SlugOnly:
    """A phpShort 50 that knows ``slug`` and ignores ``alias``, as installs ignore names they do not know."""

    def __init__(self) -> None:
        self.links: dict[int, dict] = {}

    def __call__(self, request: dict) -> tuple:
        path, form = request["path"], dict(request["form"])
        if path == "/api/v1/stats/0":
            return API_404
        if request["method"] == "POST" and path == "/api/v1/links":
            record = {
                "id": len(self.links) + 1,
                "url": form.get("url"),
                "slug": form.get("slug") or "random1",
                "targets_type": form.get("targets_type"),
                "clicks_limit": form.get("clicks_limit"),
                "active_period_start_at": form.get("active_period_start_at"),
                "active_period_end_at": form.get("active_period_end_at"),
            }
            self.links[record["id"]] = record
            return ("respond", 201, {"data": record, "status": 200})
        if request["method"] == "GET" and path.startswith("/api/v1/links/"):
            return ("respond", 200, {"data": self.links[int(path.rsplit("/", 1)[1])], "status": 200})
        return WEB_APP_404


def test_requests_and_records_follow_a_generation_added_to_the_table(phpshort_50, scripted, monkeypatch):
    scripted.set_default(SlugOnly())
    monkeypatch.setenv("AIRFLOW_CONN_LINKS_50", connection_json(scripted.url + "/api/v1", api_version="50"))
    hook = LinkstatsLinksHook("links_50")
    created = hook.create_link(URL, alias="spring", expires_at=LATER, expiration_clicks=5)
    # The window starts at the service's "now": the service's clock is read first (GET /account).
    assert [r["method"] for r in scripted.requests] == ["GET", "POST"]
    form = dict(scripted.requests[1]["form"])
    assert form["slug"] == "spring" and "alias" not in form and form["clicks_limit"] == "5"
    assert created["alias"] == "spring" and hook.get_link(created["id"])["alias"] == "spring"
    assert hook.generation is phpshort_50
    client = LinkstatsClient(ClientSettings(root=scripted.url + "/api/v1"), API_KEY, generation="50")
    try:
        assert client.create(LINKS, {"url": URL, "alias": "summer", "domain_id": 1})["alias"] == "summer"
    finally:
        client.close()
    assert json.loads(json.dumps(hook.service_profile().to_json()))["generation"] == "50"


def test_detection_says_plainly_which_generations_it_cannot_tell_apart(phpshort_50, scripted, monkeypatch):
    scripted.set_default(SlugOnly())
    monkeypatch.setenv("AIRFLOW_CONN_LINKS_50", connection_json(scripted.url + "/api/v1", api_version="auto"))
    plainly = "cannot tell phpShort 46\\+ from phpShort 50.*set the connection's api_version"
    with pytest.raises(Exception, match=plainly):
        LinkstatsLinksHook("links_50").create_link(URL, alias="spring")
    assert [r["method"] for r in scripted.requests] == ["GET"]  # the probe only, no create


def test_a_new_generation_without_its_row_is_refused(scripted, monkeypatch):
    monkeypatch.setenv("AIRFLOW_CONN_LINKS_50", connection_json(scripted.url + "/api/v1", api_version="50"))
    with pytest.raises(LinkstatsInputError, match="api_version"):
        LinkstatsLinksHook("links_50").create_link(URL, alias="spring")
    assert scripted.requests == []
